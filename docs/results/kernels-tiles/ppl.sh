#!/bin/bash
cd "$(git rev-parse --show-toplevel)"
for m in qwen2.5-coder-0.5b qwen2.5-coder-1.5b; do
for cpu in avx512 avx2 scalar; do
  WALKRAG_CPU=$cpu ./walkrag-before bench llm --model local:$m --runs 1 --prompt-tokens 16 --gen-tokens 4 --perplexity docs/data/structured/llama-cpp-server.md --perplexity-tokens 1024 --json > ppl-$m-$cpu.json 2>/work/runs/ppl-$m-$cpu.err; echo "$m $cpu rc=$?"
done; done
