"""The spans weighed in an eval run's traces, one line per question: its id, the answer the
run gave, and each weighed span with its weight (the written answer first).
Usage: extract.py RUN STRATEGY > spans.jsonl"""
import glob
import json
import os
import re
import sys

run, strategy = sys.argv[1], sys.argv[2]
answers = {}
for line in open(f"{run}/results.jsonl"):
    r = json.loads(line)
    answers[r["id"]] = r["answer"]
for path in sorted(glob.glob(f"{run}/traces/{strategy}/*.json")):
    qid = os.path.basename(path)[:-5]
    steps = json.load(open(path))["steps"]
    weighed = [s for s in steps if s["step"] == "score" and s["purpose"] == "answer: spans"]
    spans = []
    if weighed:
        s = weighed[-1]
        texts = [re.match(r"Answer: (.*)\nSources:", i["continuation"], re.S).group(1) for i in s["items"]]
        spans = [[t, round(w, 3)] for t, w in zip(texts, s["scores"])]
        ms = s["ms"]
    else:
        ms = 0
    print(json.dumps({"id": qid, "answer": answers.get(qid, ""), "spans": spans, "ms": ms}))
