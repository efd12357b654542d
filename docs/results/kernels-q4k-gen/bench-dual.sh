#!/bin/bash
# Q4_K read at 4 bits by one-token passes (walkrag-dual) against Q8_0 for every pass (walkrag-yes, main's kernels) and llama.cpp, alternating.
cd /work/runs
M=~/.cache/walkrag/models
declare -A G=([0.5b]=$M/qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [1.5b]=$(ls $M/qwen2.5-coder-1.5b/*.gguf | head -1))
out=/work/runs/bench-dual.jsonl
D=/work/shared/data
for round in 1 2; do
 for m in 0.5b 1.5b; do
   for b in yes dual; do
     r=$(./walkrag-$b bench llm --model local:qwen2.5-coder-$m --prompt-tokens 512 --json 2>/dev/null)
     echo "{\"round\": $round, \"binary\": \"$b\", \"size\": \"$m\", \"report\": $r}" >> $out
   done
   r=$(bash /work/shared/baselines/llama-bench.sh ${G[$m]} 2 512 2>/dev/null)
   echo "{\"round\": $round, \"binary\": \"llama.cpp\", \"size\": \"$m\", \"report\": $r}" >> $out
 done
 for b in yes dual; do
  rm -rf /tmp/w/ans-$b-$round /tmp/w/demo-$b-$round
  ./walkrag-$b eval --corpus $D/hotpotqa-100/corpus.jsonl --questions hp-last50.jsonl --strategies links --limit 10 -k 5 --index ix-hp --out /tmp/w/ans-$b-$round >/dev/null 2>&1
  ./walkrag-$b eval --corpus /work/main/demo/sp800-63 --questions /work/main/docs/data/demo/sp800-63.questions.jsonl --strategies walk --limit 2 --index ix-demo --out /tmp/w/demo-$b-$round >/dev/null 2>&1
  for s in ans demo; do python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/$s-$b-$round/results.jsonl')]
print(json.dumps({'round': $round, 'binary': '$b', 'step': '$s', 'n': len(rs), 'mean_s': sum(r['elapsed_ms'] for r in rs)/len(rs)/1000, 'prompt_tokens': sum(r['usage']['prompt_tokens'] for r in rs)/len(rs), 'completion_tokens': sum(r['usage']['completion_tokens'] for r in rs)/len(rs), 'answers': [r['answer'] for r in rs]}))
" >> $out; done
 done
done
echo done
