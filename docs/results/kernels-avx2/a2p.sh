#!/bin/bash
# AVX2 kernels forced (WALKRAG_CPU=avx2): main (walkrag-rev, 01ed2ec: Q8_0 groups for prompts) against 4-/5-bit panels read by vpmaddubsw (walkrag-a2p), alternating, two rounds per model; llama.cpp (native, AVX-512) once per model in round 1; then perplexity on the AVX2 path, windows of 128 and token by token.
cd /work/runs
M=~/.cache/walkrag/models
declare -A G=([0.5b]=$M/qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [1.5b]=$(ls $M/qwen2.5-coder-1.5b/*.gguf | head -1))
out=/work/runs/a2p.jsonl
for round in 1 2; do
 for m in 1.5b 0.5b; do
  for b in rev a2p; do
   r=$(WALKRAG_CPU=avx2 ./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --gen-tokens 128 --runs 3 --json 2>/dev/null)
   echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
  done
  if [ $round -eq 1 ]; then
   r=$(bash /work/shared/baselines/llama-bench.sh ${G[$m]} 2 512 2>/dev/null)
   echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"$m\", \"report\": $r}" >> $out
  fi
 done
done
T=/work/main/docs/data/structured/llama-cpp-server.md
for m in 0.5b 1.5b; do
 for w in 128 1; do
  for b in rev a2p; do
   r=$(WALKRAG_CPU=avx2 ./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 4 --runs 1 --perplexity $T --perplexity-window $w --json 2>/dev/null)
   echo "{\"binary\": \"$b\", \"size\": \"$m\", \"window\": $w, \"ppl\": true, \"report\": $r}" >> $out
  done
 done
done
echo done
