#!/usr/bin/env python3
"""Supporting documents found first by each origin, from eval traces and results.

Traces written since searches carry an `origin` are read as they are. Older ones (this
folder's links and walk runs were started before) are read by their queries: the question's
own search, the links' fixed query, a descriptor whose next source is the question (the
walk's fallback), a hint, or else a model's descriptor.

    python3 origins.py OUT_DIR QUESTIONS.jsonl
"""
import json
import sys
from collections import Counter
from pathlib import Path

LINKS = "named in the passages read (links)"
MEMORY = "remembered from earlier questions (memory)"


def origin_of(step, question, descriptors):
    if "origin" in step:
        return step["origin"]
    query = step["query"]
    if query == question:
        return "question"
    if query == LINKS:
        return "link"
    if query == MEMORY:
        return "memory"
    d = descriptors.get(query)
    if d is None:
        return "model"
    return "fallback" if d["next_source"] == question else "model"


def found_by(trace, read):
    question = trace["question"]
    descriptors = {}
    for step in trace["steps"]:
        if step["step"] == "descriptor":
            info = step.get("expected_info", "")
            q = f'{step["next_source"]}: {info}' if info else step["next_source"]
            descriptors[q] = step
    found = {}
    for step in trace["steps"]:
        if step["step"] != "retrieve":
            continue
        origin = origin_of(step, question, descriptors)
        for hit in step["hits"]:
            if hit["chunk_id"] in read:
                found.setdefault(hit["doc_id"], origin)
    return found


def main():
    out, questions = Path(sys.argv[1]), sys.argv[2]
    supporting = {}
    for line in open(questions):
        q = json.loads(line)
        supporting[q["id"]] = q["supporting_ids"]
    counts = {}
    for line in open(out / "results.jsonl"):
        r = json.loads(line)
        path = out / "traces" / r["strategy"] / f'{r["id"]}.json'
        if not path.exists():
            continue
        found = found_by(json.load(open(path)), set(r["ranked"]))
        c = counts.setdefault(r["strategy"], Counter())
        for doc in supporting[r["id"]]:
            if doc in found:
                c[found[doc]] += 1
    for strategy, c in counts.items():
        print(strategy, dict(c))


if __name__ == "__main__":
    main()
