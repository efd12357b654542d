#!/bin/bash
# AVX2 forced, end to end: one 1.5B answer step (links on HotpotQA's first 10: one retrieval, one answer call) and the demo walk's first 3 questions, before (walkrag-rev) and after (walkrag-a2g, the panel walk shared), alternating.
cd /work/runs
D=/work/shared/data
export WALKRAG_CPU=avx2
for round in 1 2; do for b in rev a2g; do
  rm -rf /tmp/w/ans-$b-$round
  ./walkrag-$b eval --corpus $D/hotpotqa-100/corpus.jsonl --questions hp-first50.jsonl --strategies links --limit 10 -k 5 --index ix-hp --out /tmp/w/ans-$b-$round >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/ans-$b-$round/results.jsonl')]
print('answer $round $b', len(rs), 'mean s %.2f' % (sum(r['elapsed_ms'] for r in rs)/len(rs)/1000), 'prompt tokens %.0f' % (sum(r['usage']['prompt_tokens'] for r in rs)/len(rs)), [r['answer'] for r in rs][:10])
"
done; done
for b in rev a2g; do
  rm -rf /tmp/w/demo-$b
  ./walkrag-$b eval --corpus /work/main/demo/sp800-63 --questions /work/main/docs/data/demo/sp800-63.questions.jsonl --index ix-demo --strategies walk --limit 3 -k 5 --out /tmp/w/demo-$b >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/demo-$b/results.jsonl')]
print('demo $b', len(rs), 'mean s %.2f' % (sum(r['elapsed_ms'] for r in rs)/len(rs)/1000), [r['answer'][:40] for r in rs])
"
done

# The folded panel walk (a2g) against a2f, pp512 of the 1.5B, AVX2 and AVX-512, alternating once.
for cpu in avx2 avx512; do for b in a2f a2g; do
  r=$(WALKRAG_CPU=$cpu ./walkrag-$b bench llm --model local:qwen2.5-coder-1.5b --prompt-tokens 512 --gen-tokens 32 --runs 3 --json 2>/dev/null)
  echo "{\"binary\": \"$b\", \"cpu\": \"$cpu\", \"report\": $r}" >> a2g.jsonl
done; done
for t in 1 2; do /tmp/w/bw/bw 2048 $t 5; done
echo done2
