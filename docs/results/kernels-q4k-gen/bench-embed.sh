#!/bin/bash
# bench embed against sentence-transformers, alternating, two rounds, on this CPU.
cd /work/runs
C=/work/shared/data/hotpotqa-100/corpus.jsonl
out=/work/runs/bench-embed.jsonl
for round in 1 2; do
  r=$(bash /work/shared/baselines/st-bench.sh ~/.cache/walkrag/models/minilm $C 2>/dev/null)
  echo "{\"round\": $round, \"binary\": \"sentence-transformers\", \"report\": $r}" >> $out
  r=$(./walkrag-final4 bench embed --corpus $C --json 2>/dev/null)
  echo "{\"round\": $round, \"binary\": \"walkrag\", \"report\": $r}" >> $out
done
echo done
