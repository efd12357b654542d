#!/bin/bash
# Final AVX2 figures: per model and round, llama.cpp (native build, AVX-512 on this CPU), walkrag with the AVX2 kernels forced before (walkrag-rev, main 01ed2ec) and after (walkrag-a2f, 719ce4e), alternating, two rounds; then the after binary on its default AVX-512 kernels once per model.
cd /work/runs
M=~/.cache/walkrag/models
declare -A G=([0.5b]=$M/qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [1.5b]=$(ls $M/qwen2.5-coder-1.5b/*.gguf | head -1))
out=/work/runs/a2f.jsonl
for round in 1 2; do
 for m in 1.5b 0.5b; do
  r=$(bash /work/shared/baselines/llama-bench.sh ${G[$m]} 2 512 2>/dev/null)
  echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"$m\", \"report\": $r}" >> $out
  for b in a2f rev; do
   r=$(WALKRAG_CPU=avx2 ./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --gen-tokens 128 --runs 3 --json 2>/dev/null)
   echo "{\"round\": $round, \"binary\": \"$b-avx2\", \"size\": \"$m\", \"report\": $r}" >> $out
  done
 done
done
for m in 1.5b 0.5b; do
 r=$(./walkrag-a2f bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --gen-tokens 128 --runs 3 --json 2>/dev/null)
 echo "{\"round\": 3, \"binary\": \"a2f-avx512\", \"size\": \"$m\", \"report\": $r}" >> $out
done
echo done
