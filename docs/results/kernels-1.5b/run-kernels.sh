#!/bin/bash
# issue 68: 1.5B and 0.5B beside llama.cpp, alternating, same run. 2 threads.
W=/work/runs/walkrag-q8   # release build; models crate as main at 7b015f9
L=/work/shared/baselines/llama-bench.sh
M=~/.cache/walkrag/models
cd /work/runs/bench68
lscpu | grep -E "Model name" > cpu.txt
for round in 1 2; do
  for m in qwen2.5-coder-1.5b qwen2.5-coder-0.5b; do
    g=$(ls $M/$m/*.gguf)
    echo "== $round $m walkrag" ; $W bench llm --model local:$m --json >> walkrag-$m.jsonl
    echo "== $round $m llama" ; $L $g 2 512 >> llama-$m.jsonl
  done
done
echo "== 1.5b avx2"; WALKRAG_CPU=avx2 $W bench llm --model local:qwen2.5-coder-1.5b --json >> walkrag-avx2-1.5b.jsonl
echo done
