#!/bin/bash
cd "$(git rev-parse --show-toplevel)"
for m in qwen2.5-coder-0.5b qwen2.5-coder-1.5b smollm2-135m; do
  ./walkrag-tiles bench llm --model local:$m --runs 1 --prompt-tokens 16 --gen-tokens 4 --perplexity docs/data/structured/llama-cpp-server.md --perplexity-tokens 1024 --json > ppl-tiles-$m.json 2>/dev/null; echo "$m rc=$?"
done
for m in smollm2-135m; do for cpu in avx2 scalar; do
  WALKRAG_CPU=$cpu ./walkrag-tiles bench llm --model local:$m --runs 1 --prompt-tokens 16 --gen-tokens 4 --perplexity docs/data/structured/llama-cpp-server.md --perplexity-tokens 1024 --json > ppl-$m-$cpu.json 2>/dev/null; echo "$m $cpu rc=$?"
done; done
./walkrag-before bench llm --model local:smollm2-135m --runs 1 --prompt-tokens 16 --gen-tokens 4 --perplexity docs/data/structured/llama-cpp-server.md --perplexity-tokens 1024 --json > ppl-smollm2-135m-avx512.json 2>/dev/null
