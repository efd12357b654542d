#!/bin/bash
# AVX2 forced, 0.5B and 1.5B: main (rev) vs panels (a2p) vs panels + 5-bit groups for one token (a2q), alternating, two rounds; perplexity token by token for a2q.
cd /work/runs
out=/work/runs/a2q.jsonl
for round in 1 2; do
 for m in 0.5b 1.5b; do
  for b in rev a2p a2q; do
   r=$(WALKRAG_CPU=avx2 ./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --gen-tokens 128 --runs 3 --json 2>/dev/null)
   echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
  done
 done
done
T=/work/main/docs/data/structured/llama-cpp-server.md
for m in 0.5b 1.5b; do
 for w in 128 1; do
   r=$(WALKRAG_CPU=avx2 ./walkrag-a2q bench llm --model local:qwen2.5-coder-$m --prompt-tokens 16 --gen-tokens 4 --runs 1 --perplexity $T --perplexity-window $w --json 2>/dev/null)
   echo "{\"binary\": \"a2q\", \"size\": \"$m\", \"window\": $w, \"ppl\": true, \"report\": $r}" >> $out
 done
done
echo done
