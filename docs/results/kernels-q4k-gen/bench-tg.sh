#!/bin/bash
# Generation only (16-token prompt, 128 generated, 5 runs each), Q8_0 everywhere (walkrag-yes) against 4-bit one-token passes (walkrag-dual), alternating four times per model.
cd /work/runs
out=/work/runs/bench-tg.jsonl
for m in 1.5b 0.5b; do
 for round in 1 2 3 4; do
   for b in yes dual; do
     r=$(./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 128 --runs 5 --json 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
   done
 done
done
echo done
