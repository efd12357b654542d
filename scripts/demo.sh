#!/usr/bin/env bash
# The walkrag demo, from a fresh clone: fetch the default models (skipped when present), build,
# and show what walkrag does today on the sample in demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh
# The dev profile optimises every dependency (see Cargo.toml), so the demo shares the test build.
cargo build -p walkrag
walkrag=target/debug/walkrag

echo; echo "== installed models"
$walkrag models list

echo; echo "== embedding demo/passages.jsonl with all-MiniLM-L6-v2 (first values of each vector)"
$walkrag embed --input demo/passages.jsonl | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
for r in rows:
    print(f"{r[\"id\"]:>12}  dim={len(r[\"embedding\"])}  [{\", \".join(f\"{x:+.3f}\" for x in r[\"embedding\"][:4])}, ...]")
q = rows[0]["embedding"]
print("\ncosine similarity to", rows[0]["id"])
for r in rows[1:]:
    print(f"{r[\"id\"]:>12}  {sum(a*b for a, b in zip(q, r[\"embedding\"])):.3f}")
'

echo; echo "== embedding throughput on the demo passages"
$walkrag bench embed --corpus demo/passages.jsonl --runs 1
