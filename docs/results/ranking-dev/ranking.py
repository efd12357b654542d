"""Replays the `links --names N` ranking from eval traces and compares orders of what was read.

Each trace holds the question's search (cycle 1) and the hop's searches (cycle 2: the links'
list, then one list per name). The hop reads the lists interleaved by rank, up to k. What is
compared here is only the order of the ten chunks read, so recall@5 moves and recall@10 does
not. The answer's citations are not replayed: they reorder within the five shown, which
recall@5 does not see.

usage: python3 ranking.py RUN:QUESTIONS [RUN:QUESTIONS ...]
"""
import collections
import json
import os
import sys


def load(run, questions):
    supporting = {}
    for line in open(questions):
        q = json.loads(line)
        supporting[q["id"]] = set(q["supporting_ids"])
    results = {}
    for line in open(os.path.join(run, "results.jsonl")):
        r = json.loads(line)
        results[r["id"]] = r
    out = []
    for qid, r in sorted(results.items()):
        trace = json.load(open(os.path.join(run, "traces", "links", qid + ".json")))
        searches = [s for s in trace["steps"] if s["step"] == "retrieve"]
        question = [h for s in searches if s["cycle"] == 1 for h in s["hits"]]
        hop = [(s["origin"], s["hits"]) for s in searches if s["cycle"] == 2]
        out.append(dict(id=qid, supporting=supporting[qid], question=question, hop=hop, result=r))
    return out


def interleave(lists):
    merged = []
    for rank in range(max((len(l) for l in lists), default=0)):
        for l in lists:
            if rank < len(l) and l[rank]["chunk_id"] not in [x["chunk_id"] for x in merged]:
                merged.append(l[rank])
    return merged


def dedup(hits):
    seen, out = set(), []
    for h in hits:
        if h["chunk_id"] not in seen:
            seen.add(h["chunk_id"])
            out.append(h)
    return out


def recall(ranked, supporting, n):
    return len({h["doc_id"] for h in ranked[:n]} & supporting) / len(supporting)


def orders(e, k=5):
    q = e["question"]
    link_lists = [l for o, l in e["hop"] if o == "link"]
    name_lists = [l for o, l in e["hop"] if o == "name"]
    hop = interleave(link_lists + name_lists)[:k]
    names_first = interleave(name_lists + link_lists)[:k]
    firsts = sorted([l[0] for l in name_lists + link_lists if l], key=lambda h: -h["score"])
    found_by = collections.Counter(h["chunk_id"] for l in link_lists + name_lists for h in l)
    agreed = sorted(hop, key=lambda h: -found_by[h["chunk_id"]])
    links_only = [h for l in link_lists for h in l]
    return {
        # walk::rank: the question's first k-1, the hop's first, the rest.
        "current (lead k-1, hop's first)": dedup(q[: k - 1] + hop[:1] + q + hop),
        "the question's k first": dedup(q + hop),
        "lead k-1, the links' first": dedup(q[: k - 1] + links_only[:1] + q + hop),
        "lead k-1, names before links": dedup(q[: k - 1] + names_first[:1] + q + hop),
        "lead k-1, best-scored first": dedup(q[: k - 1] + firsts[:1] + q + hop),
        "lead k-1, most-found first": dedup(q[: k - 1] + agreed[:1] + q + hop),
        "lead k-2, hop's two first": dedup(q[: k - 2] + hop[:2] + q + hop),
        "lead k-2, two best-scored": dedup(q[: k - 2] + firsts[:2] + q + hop),
    }


def main():
    total = collections.defaultdict(list)
    for arg in sys.argv[1:]:
        run, questions = arg.split(":")
        per = collections.defaultdict(list)
        for e in load(run, questions):
            replayed = orders(e)
            shown = {h["doc_id"] for h in replayed["current (lead k-1, hop's first)"][:5]}
            if shown != set(e["result"]["ranked_docs"][:5]):
                print(f"replay differs from the run on {e['id']}", file=sys.stderr)
            for name, ranked in replayed.items():
                per[name].append(recall(ranked, e["supporting"], 5))
                total[name].append(recall(ranked, e["supporting"], 5))
        print(f"\n{run} ({len(next(iter(per.values())))} questions), recall@5")
        for name, values in per.items():
            print(f"  {name:34} {sum(values) / len(values):.3f}")
    if len(sys.argv) > 2:
        print(f"\nall ({len(next(iter(total.values())))} questions), recall@5")
        for name, values in total.items():
            print(f"  {name:34} {sum(values) / len(values):.3f}")


if __name__ == "__main__":
    main()
