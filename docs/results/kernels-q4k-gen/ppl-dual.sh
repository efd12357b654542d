#!/bin/bash
# Perplexity of both Qwen models on the first 1,024 tokens of a committed document, in windows of 128 (the prompt path: Q8_0) and token by token (the generation path: Q4_K at 4 bits), on AVX-512 and AVX2.
cd /work/runs
T=/work/main/docs/data/structured/llama-cpp-server.md
out=/work/runs/ppl-dual.jsonl
for m in 0.5b 1.5b; do for cpu in avx512 avx2; do for w in 128 1; do
  r=$(WALKRAG_CPU=$cpu ./walkrag-final4 bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 4 --runs 1 --perplexity $T --perplexity-window $w --json 2>/dev/null)
  echo "{\"size\": \"$m\", \"cpu\": \"$cpu\", \"window\": $w, \"report\": $r}" >> $out
done; done; done
echo done
