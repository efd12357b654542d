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
show_similarities=$(cat <<'PY'
import json, sys
rows = [json.loads(line) for line in sys.stdin]
for r in rows:
    head = ", ".join(f"{x:+.3f}" for x in r["embedding"][:4])
    print(f"{r['id']:>14}  dim={len(r['embedding'])}  [{head}, ...]")
query = rows[0]
print(f"\ncosine similarity to '{query['id']}' (vectors are unit length, so a dot product):")
scores = [(sum(a * b for a, b in zip(query["embedding"], r["embedding"])), r["id"]) for r in rows[1:]]
for score, name in sorted(scores, reverse=True):
    print(f"{name:>14}  {score:.3f}")
PY
)
$walkrag embed --input demo/passages.jsonl | python3 -c "$show_similarities"

index=$(mktemp -d)/index
trap 'rm -rf "$(dirname "$index")"' EXIT
echo; echo "== indexing demo/ (a Markdown report and a small corpus) into $index"
$walkrag index demo --index "$index"

echo; echo "== the report's abridged outline (deeper sections collapsed behind their ids)"
$walkrag outline demo/report.md --index "$index"

echo; echo "== search: how much electricity does the solar roof make?"
$walkrag search "how much electricity does the solar roof make?" --index "$index" -k 3

echo; echo "== show the section of the top hit"
section=$($walkrag search "how much electricity does the solar roof make?" --index "$index" -k 1 --json \
  | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["section_id"])')
$walkrag show "$section" --index "$index"

echo; echo "== a local chat model (Qwen2.5-Coder-0.5B on candle) answers, streaming"
$walkrag chat --max-tokens 48 -v \
  --prompt "In one sentence: why do dairy cooperatives pool their milk in one creamery?"

echo; echo "== embedding throughput on the demo passages"
$walkrag bench embed --corpus demo/passages.jsonl --runs 1
