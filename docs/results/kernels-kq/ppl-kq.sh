#!/bin/bash
# Perplexity on the first 1,024 tokens of a committed document, token by token (the generation path: K-quant rows as stored), both Qwen models, AVX-512 and AVX2, walkrag-kq2.
cd /work/runs
T=/work/main/docs/data/structured/llama-cpp-server.md
out=/work/runs/ppl-kq.jsonl
for m in 0.5b 1.5b; do for cpu in avx512 avx2; do for w in 1; do
  r=$(WALKRAG_CPU=$cpu ./walkrag-kq2 bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 4 --runs 1 --perplexity $T --perplexity-window $w --json 2>/dev/null)
  echo "{\"size\": \"$m\", \"cpu\": \"$cpu\", \"window\": $w, \"report\": $r}" >> $out
done; done; done
echo done
