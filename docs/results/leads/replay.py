"""Replays toc's traces with other orders of sections and scores each by section recall@5
against the gold sections: the model's picks as they are, the leads in the search's order
(no model), the search's first lead then the model's picks, and the reciprocal rank fusion
(k = 60) of the picks and the leads.

    python3 replay.py QUESTIONS RUN_DIR ...

An approximation of eval's count: each section stands for itself, where eval counts the
distinct sections of the passages shown, subsections of a section picked whole among them.
"""
import json
import glob
import os
import sys

from picks import leads_of, picks_of


def distinct(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def fused(*orders, k=60):
    score = {}
    for order in orders:
        for rank, item in enumerate(order):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda item: -score[item])


def recall_at_5(order, paths, gold):
    if not gold:
        return 1.0
    top = [paths[s] for s in order[:5] if s in paths]
    return sum(any(p[: len(g)] == g for p in top) for g in gold) / len(gold)


def section_paths(steps, row):
    """Section id -> heading path, from the trace's searches and the row's ranked passages."""
    paths = {}
    for step in steps:
        if step["step"] == "retrieve":
            for hit in step["hits"]:
                paths.setdefault(hit["chunk_id"].split(".")[0], hit["section_path"])
    for chunk, path in zip(row["ranked"], row["ranked_sections"]):
        paths.setdefault(chunk.split(".")[0], path)
    return paths


def main():
    gold = {q["id"]: q["sections"] for q in map(json.loads, open(sys.argv[1]))}
    for run in sys.argv[2:]:
        rows = {
            r["id"]: r
            for r in map(json.loads, open(os.path.join(run, "results.jsonl")))
            if r["strategy"] == "toc"
        }
        scores = {}
        for path in sorted(glob.glob(os.path.join(run, "traces", "toc", "*.json"))):
            qid = os.path.basename(path)[:-5]
            steps = json.load(open(path))["steps"]
            paths = section_paths(steps, rows[qid])
            leads, picks = leads_of(steps), distinct(picks_of(steps))
            orders = {
                "picks": picks,
                "leads": leads,
                "lead 1, then picks": distinct(leads[:1] + picks),
                "fused": fused(picks, leads),
            }
            scores.setdefault("measured", []).append(rows[qid]["metrics"]["recall@5"])
            for name, order in orders.items():
                scores.setdefault(name, []).append(recall_at_5(order, paths, gold[qid]))
        cells = ", ".join(f"{name} {sum(v) / len(v):.3f}" for name, v in scores.items())
        print(f"{run} ({len(rows)} questions): {cells}")


if __name__ == "__main__":
    main()
