"""Where toc's and roam's picks come from: for each trace, the place of every picked section
among the leads (the distinct sections of the leads' search, nearest first), or '-' for a
section that was not a lead.

    python3 picks.py RUN_DIR [STRATEGY ...]      (default: toc roam)

Reads RUN_DIR/traces/STRATEGY/*.json as `walkrag eval --traces` writes them.
"""
import glob
import json
import os
import sys


def leads_of(steps):
    """The lead sections in order: the first search of the trace is the leads' search."""
    for step in steps:
        if step["step"] == "retrieve" and step["origin"] == "question":
            seen = []
            for hit in step["hits"]:
                section = hit["chunk_id"].split(".")[0]
                if section not in seen:
                    seen.append(section)
            return seen
    return []


def picks_of(steps):
    """toc: the ids of the pick's reply; roam: the ids of every expand_sections."""
    out = []
    for step in steps:
        if step["step"] == "llm" and step["purpose"] == "pick":
            try:
                out.extend(json.loads(step["completion"]).get("sections", []))
            except json.JSONDecodeError:
                pass
        if step["step"] == "retrieve" and step["query"].startswith("expand_sections "):
            out.extend(step["query"].split()[1:])
    return out


def main():
    run = sys.argv[1]
    strategies = sys.argv[2:] or ["toc", "roam"]
    for strategy in strategies:
        places = []
        for path in sorted(glob.glob(os.path.join(run, "traces", strategy, "*.json"))):
            steps = json.load(open(path))["steps"]
            leads = leads_of(steps)
            picked = picks_of(steps)
            at = [str(leads.index(p) + 1) if p in leads else "-" for p in picked]
            places.append(at)
            print(f"{strategy} {os.path.basename(path)[:-5]}: picks at lead {' '.join(at) or '(none)'}")
        flat = [p for at in places for p in at]
        if flat:
            leads = sum(p != "-" for p in flat)
            first = sum(at[:1] == ["1"] for at in places)
            print(
                f"{strategy}: {len(flat)} picks in {len(places)} questions, {leads} of them leads; "
                f"first pick the first lead in {first}"
            )


if __name__ == "__main__":
    main()
