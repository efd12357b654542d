#!/usr/bin/env python3
"""What the walk's model did, from eval traces: read steps that named a next source, next
sources that only repeat the title of a passage already read, verdicts, facts, and where the
time went (model time per call purpose, the rest).

    python3 walks.py OUT_DIR [STRATEGY]      # STRATEGY defaults to walk
"""
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path


def main():
    out = Path(sys.argv[1])
    strategy = sys.argv[2] if len(sys.argv) > 2 else "walk"
    traces = sorted((out / "traces" / strategy).glob("*.json"))
    c = Counter()
    ms = defaultdict(int)
    for path in traces:
        t = json.load(open(path))
        c["questions"] += 1
        read_titles = set()
        read_with_descriptor = set()
        for s in t["steps"]:
            kind = s["step"]
            if kind == "retrieve":
                ms["search"] += s.get("ms", 0)
                for h in s["hits"]:
                    read_titles.add(h["title"].lower())
            elif kind == "llm":
                ms[s["purpose"]] += s.get("ms", 0)
                c[f'{s["purpose"]} calls'] += 1
            elif kind == "descriptor" and s.get("origin") == "model":
                c["model next sources"] += 1
                read_with_descriptor.add(s["cycle"])
                if s["next_source"].strip().lower() in read_titles:
                    c["... the title of a passage already retrieved"] += 1
            elif kind == "sufficient":
                c[f'verdict {"sufficient" if s["sufficient"] else "not yet"}'] += 1
            elif kind == "fact":
                c["facts"] += 1
                c["facts trusted"] += bool(s.get("trusted"))
            elif kind == "terminate":
                c[f'ended: {s["reason"]}'] += 1
        c["read steps with a model next source"] += len(read_with_descriptor)
        ms["total"] += t.get("elapsed_ms", 0) or 0
    for key, value in sorted(c.items()):
        print(f"{key}: {value}")
    n = max(c["questions"], 1)
    print("seconds per question by step:", {k: round(v / 1000 / n, 1) for k, v in ms.items()})


if __name__ == "__main__":
    main()
