"""Counts what the model calls of walkrag eval traces said, per strategy and purpose.

    python3 calls.py TRACES_DIR [--limit N]

TRACES_DIR is an eval --traces folder (traces/STRATEGY/ID.json). For each strategy and call
purpose: calls, calls whose reply was constrained and enforced, tokens forced, and what
the strategies made of the replies:
- read (walk): read steps, steps naming at least one next source (`nextSource` in the
  reply), steps saying the facts suffice, text the reader could not read (`unread` steps),
  facts whose source is not a shown passage;
- pick (toc), navigate (roam), plan (docs): replies that are not one JSON object, and
  notes about ids that name nothing;
- answer: replies without an `Answer:` line.
Only the first N question ids in sorted order are read with --limit.
"""
import json
import os
import sys
from collections import Counter, defaultdict


def main():
    root = sys.argv[1]
    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
    out = {}
    for strategy in sorted(os.listdir(root)):
        folder = os.path.join(root, strategy)
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))[:limit]
        c = defaultdict(Counter)
        for name in names:
            trace = json.load(open(os.path.join(folder, name)))
            trace = trace.get("trace", trace)
            c["questions"]["n"] += 1
            for step in trace["steps"]:
                kind = step.get("step")
                if kind == "llm":
                    p = c[step["purpose"]]
                    p["calls"] += 1
                    if step.get("constraint") and not step.get("unconstrained"):
                        p["constrained"] += 1
                    p["forced_tokens"] += step.get("usage", {}).get("forced_tokens", 0)
                    p["completion_tokens"] += step.get("usage", {}).get("completion_tokens", 0)
                    text = step.get("completion", "")
                    if step.get("finish") == "length":
                        p["cut_at_max_tokens"] += 1
                    if step["purpose"] == "read":
                        p["with_next_source"] += '"nextSource"' in text
                        p["sufficient_true"] += '"sufficient": true' in text or '"sufficient":true' in text
                    elif step["purpose"] == "answer":
                        p["no_answer_line"] += "Answer:" not in text
                    else:
                        try:
                            json.loads(text.strip())
                        except ValueError:
                            p["not_one_json_object"] += 1
                elif kind == "unread":
                    c["read"]["unread_text"] += 1
                elif kind == "note":
                    m = step.get("message", "")
                    if "is not a passage the model was shown" in m:
                        c["read"]["fact_source_not_shown"] += 1
                    if "not in the table of contents" in m or "unknown sections" in m or "no document has the field" in m:
                        c["notes"]["unknown_ids"] += 1
        out[strategy] = {k: dict(v) for k, v in c.items()}
    json.dump(out, sys.stdout, indent=1)
    print()


main()
