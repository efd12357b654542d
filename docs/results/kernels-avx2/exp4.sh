#!/bin/bash
# AVX2 kernels forced: 1.5B and 0.5B prompt speed, Q8_0 copy for prompts (today) vs the 4-bit Q4_K copy for every pass; alternating, 2 rounds.
cd /work/runs
out=/work/runs/exp4.jsonl
for round in 1 2; do
 for m in 1.5b 0.5b; do
  for v in q8 q4; do
   if [ $v = q4 ]; then export WALKRAG_EXP_Q4=1; else unset WALKRAG_EXP_Q4; fi
   r=$(WALKRAG_CPU=avx2 ./walkrag-exp4 bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --gen-tokens 16 --runs 3 --json 2>/dev/null)
   echo "{\"round\": $round, \"v\": \"$v\", \"size\": \"$m\", \"report\": $r}" >> $out
  done
 done
done
echo done
