"""Plain MiniLM similarity over the operation cards: recall@5 of a request set.

Usage: python3 minilm_recall.py WALKRAG INDEX REQUESTS.jsonl
Each request's text is searched (`walkrag search -k 10 --json`) in an index that `walkrag
eval --spec` built (its operation records); the expected operation (or an acceptable one)
among the first 5 distinct operations counts as found.
"""
import json
import subprocess
import sys

walkrag, index, requests = sys.argv[1:4]
found = 0
rows = [json.loads(line) for line in open(requests) if line.strip()]
for row in rows:
    out = subprocess.run(
        [walkrag, "search", row["request"], "--index", index, "-k", "10", "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    ops = []
    for line in out.splitlines():
        op = json.loads(line)["doc_id"]
        if op not in ops:
            ops.append(op)
    wanted = {row["operation_id"], *row.get("also_acceptable", [])}
    found += bool(wanted & set(ops[:5]))
print(f"{requests}: plain MiniLM recall@5 {found / len(rows):.3f} ({found} of {len(rows)})")
