#!/bin/bash
# Tiled attention: main's kernels (walkrag-ppl, before) against the tiles (walkrag-tiles) and llama.cpp, alternating.
cd /work/runs
M=~/.cache/walkrag/models
declare -A G=([0.5b]=$M/qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [1.5b]=$(ls $M/qwen2.5-coder-1.5b/*.gguf | head -1))
out=/work/runs/bench-tiles.jsonl
for round in 1 2; do
 for m in 0.5b 1.5b; do
  for p in 512 2048; do
   for b in ppl tiles; do
     r=$(./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens $p --json 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
   done
   if [ $round = 1 ]; then
     r=$(bash /work/shared/baselines/llama-bench.sh ${G[$m]} 2 $p 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"$m\", \"report\": $r}" >> $out
   fi
  done
 done
done
echo done
