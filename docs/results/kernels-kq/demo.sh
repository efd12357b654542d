#!/bin/bash
# The demo walk's first 3 questions and one 1.5B answer step (links, HotpotQA first 10), the final code (walkrag-kqz) and main's (walkrag-a2g) alternating, two rounds.
cd /work/runs
out=/work/runs/kq-demo.jsonl
D=/work/shared/data
for round in 1 2; do for b in kqz a2g; do
  rm -rf /tmp/w/demo-$b
  ./walkrag-$b eval --corpus /work/main/demo/sp800-63 --questions /work/main/docs/data/demo/sp800-63.questions.jsonl --index ix-demo --strategies walk --limit 3 -k 5 --out /tmp/w/demo-$b >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/demo-$b/results.jsonl')]
print(json.dumps({'round': $round, 'demo': '$b', 'questions': len(rs), 'mean_s': sum(r['elapsed_ms'] for r in rs)/len(rs)/1000, 'answers': [r['answer'] for r in rs]}))
" >> $out
  rm -rf /tmp/w/ans-$b
  ./walkrag-$b eval --corpus $D/hotpotqa-100/corpus.jsonl --questions hp-first50.jsonl --strategies links --limit 10 -k 5 --index ix-hp --out /tmp/w/ans-$b >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/ans-$b/results.jsonl')]
print(json.dumps({'round': $round, 'answer_step': '$b', 'questions': len(rs), 'mean_s': sum(r['elapsed_ms'] for r in rs)/len(rs)/1000, 'answers': [r['answer'] for r in rs]}))
" >> $out
done; done
echo done
