#!/bin/bash
# Generation only (16-token prompt, 128 generated, 5 runs each): Q4_K at 4 bits with f32 scales per block (walkrag-final4) against Q4_K's own scales in the AVX-512 panels (walkrag-ks), alternating four times per model; then llama.cpp tg128 twice per model.
cd /work/runs
M=~/.cache/walkrag/models
declare -A G=([0.5b]=$M/qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [1.5b]=$(ls $M/qwen2.5-coder-1.5b/*.gguf | head -1))
out=/work/runs/bench-ks.jsonl
for m in 1.5b 0.5b; do
 for round in 1 2 3 4; do
   for b in final4 ks; do
     r=$(./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 128 --runs 5 --json 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
   done
   if [ $round -le 2 ]; then
     r=$(bash /work/shared/baselines/llama-bench.sh ${G[$m]} 2 512 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"$m\", \"report\": $r}" >> $out
   fi
 done
done
echo done
