"""Means of eval metrics per strategy over the question ids two or more results.jsonl share.

    python3 compare.py LABEL=RESULTS.jsonl[:STRATEGY,...] ...

Each argument names a run; only the ids that every named run answered for every named
strategy are counted, so rows compare the same questions.
"""
import json
import sys

runs = []
for arg in sys.argv[1:]:
    label, rest = arg.split("=", 1)
    path, _, wanted = rest.partition(":")
    rows = [json.loads(line) for line in open(path) if line.strip()]
    strategies = wanted.split(",") if wanted else sorted({r["strategy"] for r in rows})
    for s in strategies:
        runs.append((f"{label} {s}", {r["id"]: r for r in rows if r["strategy"] == s}))

common = set.intersection(*(set(by_id) for _, by_id in runs))
print(f"{len(common)} questions: {', '.join(sorted(common))}")
keys = ["recall@2", "recall@5", "em", "f1", "contains"]
print("| run | " + " | ".join(keys) + " | calls | s/q |")
print("|---" * (len(keys) + 3) + "|")
for name, by_id in runs:
    rows = [by_id[i] for i in sorted(common)]
    mean = lambda f: sum(f(r) for r in rows) / len(rows)
    cells = [f"{mean(lambda r: r['metrics'].get(k, 0.0)):.3f}" for k in keys]
    calls = mean(lambda r: r["usage"]["llm_calls"])
    secs = mean(lambda r: r["elapsed_ms"] / 1000)
    print(f"| {name} | " + " | ".join(cells) + f" | {calls:.2f} | {secs:.1f} |")
