#!/bin/bash
# issue 68: Q4_K kept at 4 bits (walkrag-q4k) against Q4_K as Q8_0 (walkrag-q8), alternating, 2 threads.
L=/work/shared/baselines/llama-bench.sh
M=~/.cache/walkrag/models
cd /work/runs/bench-q4k
for round in 1 2; do
  for m in qwen2.5-coder-1.5b qwen2.5-coder-0.5b; do
    for b in q8 q4k; do
      echo "== $round $m $b"; /work/runs/walkrag-$b bench llm --model local:$m --json >> $b-$m.jsonl
    done
  done
done
for m in qwen2.5-coder-1.5b qwen2.5-coder-0.5b; do echo "== llama $m"; $L $(ls $M/$m/*.gguf) 2 512 >> llama-$m.jsonl; done
echo done
