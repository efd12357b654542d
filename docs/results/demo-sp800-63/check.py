"""Per question and strategy: the answer, whether it holds the gold (or an alias), and whether
the cited passages include a gold section (or a subsection of one)."""
import json, sys, re
qs = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[2])}
def norm(s): return re.sub(r"[^a-z0-9 ]", " ", s.lower()).split()
def holds(answer, golds):
    a = " " + " ".join(norm(answer)) + " "
    return any(" " + " ".join(norm(g)) + " " in a for g in golds)
def under(sec, gold): return sec[:len(gold)] == gold
tot = {}
for l in open(sys.argv[1] + "/results.jsonl"):
    r = json.loads(l); q = qs[r["id"]]
    golds = [q["answer"]] + q["answer_aliases"]
    ok = holds(r["answer"], golds)
    cited = r["ranked_sections"][:len(r["citations"])]
    cites = any(under(s, g) for s in cited for g in q["sections"])
    t = tot.setdefault(r["strategy"], [0, 0, 0])
    t[0] += 1; t[1] += ok; t[2] += ok and cites
    print(f'{r["id"]} {r["strategy"]:6} {"OK " if ok else "-- "}{"cited" if cites else "     "} {r["answer"][:70]!r} (gold {q["answer"]!r})')
for s, (n, ok, both) in tot.items():
    print(f"{s}: {ok}/{n} hold the answer, {both}/{n} also cite a gold section")
