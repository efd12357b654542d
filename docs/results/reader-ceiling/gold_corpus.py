"""A data set's supporting passages only (those its questions' `supporting_ids` name): the
corpus of the reader-ceiling runs.
Usage: gold_corpus.py ../shared/data/hotpotqa-100 > corpus.jsonl"""
import json
import sys

root = sys.argv[1]
docs = {}
for line in open(f"{root}/corpus.jsonl"):
    docs[json.loads(line)["id"]] = line
seen = []
for line in open(f"{root}/questions.jsonl"):
    for doc in json.loads(line)["supporting_ids"]:
        if doc not in seen:
            seen.append(doc)
for doc in seen:
    sys.stdout.write(docs[doc])
