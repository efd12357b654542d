"""Control for ceiling.py: of the supporting documents the question's first 5 missed, how many
are in its results 6-10 (what `single -k 10` or any search that adds the question's next best
would bring)."""
import json, subprocess, sys
W, INDEX, DATA = sys.argv[1:4]
qs = [json.loads(l) for l in open(f"{DATA}/questions.jsonl")]
missed = deeper = 0
for q in qs:
    out = subprocess.run([W, "search", q["question"], "-k", "10", "--json", "--index", INDEX], capture_output=True, text=True).stdout
    hits = [json.loads(l)["doc_id"] for l in out.splitlines() if l.strip()]
    for s in q["supporting_ids"]:
        if s not in hits[:5]:
            missed += 1
            deeper += s in hits[5:10]
print(f"{missed} missed in the first 5; {deeper} of them in the question's results 6-10")
