#!/bin/bash
# One 1.5B answer step (links: one retrieval, one answer call), before and after the tiles, alternating.
cd /work/runs
D=/work/shared/data
for round in 1 2; do for b in ppl tiles; do
  rm -rf /tmp/w/ans-$b-$round
  ./walkrag-$b eval --corpus $D/hotpotqa-100/corpus.jsonl --questions hp-last50.jsonl --strategies links --limit 10 -k 5 --index ix-hp --out /tmp/w/ans-$b-$round >/dev/null 2>&1
  python3 -c "
import json
rs=[json.loads(l) for l in open('/tmp/w/ans-$b-$round/results.jsonl')]
print('$round $b', len(rs), 'mean s %.2f' % (sum(r['elapsed_ms'] for r in rs)/len(rs)/1000), 'prompt tokens %.0f' % (sum(r['usage']['prompt_tokens'] for r in rs)/len(rs)), [r['answer'] for r in rs][:10])
"
done; done
