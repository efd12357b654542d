"""Reranks what `links --names 3` read by the model's yes/no judgment of each passage
(rerank_items.py, scored by score_items.rs) and compares recall@5 with the ranking as it is.

usage: python3 rerank.py index.jsonl scores.txt RUN:QUESTIONS [...]
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ranking-dev"))
import ranking  # noqa: E402


def main():
    index_path, scores_path = sys.argv[1:3]
    index = [json.loads(l) for l in open(index_path)]
    scores = [float(l) for l in open(scores_path)]
    margin = {}
    for i, x in enumerate(index):
        if 2 * i + 1 < len(scores):
            margin[(x["run"], x["id"], x["chunk_id"])] = scores[2 * i] - scores[2 * i + 1]
    totals = collections.defaultdict(list)
    for arg in sys.argv[3:]:
        run, questions = arg.split(":")
        per = collections.defaultdict(list)
        for e in ranking.load(run, questions):
            now = ranking.orders(e)["current (lead k-1, hop's first)"]
            m = [margin.get((run, e["id"], h["chunk_id"])) for h in now]
            if any(x is None for x in m):
                continue  # not scored (yet)
            by = dict(zip((h["chunk_id"] for h in now), m))
            best = lambda hits: sorted(hits, key=lambda h: -by[h["chunk_id"]])
            variants = {
                "now": now,
                "all ten by the model": best(now),
                "question's first 3, then by the model": now[:3] + best(now[3:]),
                "first 4, fifth by the model": now[:4] + best(now[4:]),
                "first 4, fifth: the question's or the hop's, by the model": now[:4]
                + best([x for x in now[4:] if x in e["question"]][:1] + now[4:5])
                + now[5:],
            }
            for name, ranked in variants.items():
                r = ranking.recall(ranked, e["supporting"], 5)
                per[name].append(r)
                totals[name].append(r)
        if per:
            print(f"\n{run} ({len(per['now'])} questions scored), recall@5")
            for name, v in per.items():
                print(f"  {name:58} {sum(v) / len(v):.3f}")
    if totals:
        print(f"\nall ({len(totals['now'])} questions), recall@5")
        for name, v in totals.items():
            print(f"  {name:58} {sum(v) / len(v):.3f}")
    # How well the margin tells supporting passages from the rest (AUC).
    pos, neg = [], []
    for arg in sys.argv[3:]:
        run, questions = arg.split(":")
        for e in ranking.load(run, questions):
            for h in e["question"] + [x for _, l in e["hop"] for x in l]:
                key = (run, e["id"], h["chunk_id"])
                if key in margin:
                    (pos if h["doc_id"] in e["supporting"] else neg).append(margin[key])
    if pos and neg:
        auc = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
        print(f"\nyes-minus-no margin, supporting against not: AUC {auc:.3f} "
              f"({len(pos)} supporting, {len(neg)} not)")


if __name__ == "__main__":
    main()
