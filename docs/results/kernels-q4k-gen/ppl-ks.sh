#!/bin/bash
# Perplexity token by token (the one-token path, Q4_K's own scales in the AVX-512 panels) for both Qwen models.
cd /work/runs
T=/work/main/docs/data/structured/llama-cpp-server.md
out=/work/runs/ppl-ks.jsonl
for m in 0.5b 1.5b; do
  r=$(./walkrag-ks bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 4 --runs 1 --perplexity $T --perplexity-window 1 --json 2>/dev/null)
  echo "{\"size\": \"$m\", \"cpu\": \"avx512\", \"window\": 1, \"report\": $r}" >> $out
done
echo done
