#!/bin/bash
# One-token passes on K-quant rows as stored (walkrag-kq) against the panels (walkrag-a2g, main's kernels) and llama.cpp's tg128, 1.5B, alternating.
cd /work/runs
G=$(ls ~/.cache/walkrag/models/qwen2.5-coder-1.5b/*.gguf | head -1)
out=/work/runs/${OUT:-rounds}.jsonl
for round in $(seq 1 ${ROUNDS:-4}); do
  for b in ${BINS:-kq a2g}; do
    r=$(./walkrag-$b bench llm --model local:qwen2.5-coder-1.5b --prompt-tokens 16 --gen-tokens 128 --runs 3 --json 2>/dev/null)
    echo "{\"round\": $round, \"binary\": \"$b\", \"report\": $r}" >> $out
  done
  if [ -z "$NOLLAMA" ]; then
    r=$(bash /work/shared/baselines/llama-bench.sh $G 2 512 2>/dev/null)
    echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"report\": $r}" >> $out
  fi
done
echo done
