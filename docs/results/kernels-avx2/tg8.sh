#!/bin/bash
# Generation of the 1.5B on AVX-512, the final kernels (walkrag-a2g) beside llama.cpp's tg128, alternating, eight rounds (walkrag: 16-token prompt, 128 tokens, median of 5).
cd /work/runs
G=$(ls ~/.cache/walkrag/models/qwen2.5-coder-1.5b/*.gguf | head -1)
out=/work/runs/tg8.jsonl
for round in 1 2 3 4 5 6 7 8; do
  r=$(./walkrag-a2g bench llm --model local:qwen2.5-coder-1.5b --prompt-tokens 16 --gen-tokens 128 --runs 5 --json 2>/dev/null)
  echo "{\"round\": $round, \"binary\": \"walkrag\", \"report\": $r}" >> $out
  r=$(bash /work/shared/baselines/llama-bench.sh $G 2 512 2>/dev/null)
  echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"report\": $r}" >> $out
done
echo done
