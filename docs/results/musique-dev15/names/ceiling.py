"""The ceiling of next sources taken from the passages' unread names, with no model: for each
question, the first search's 5 passages; for each supporting document it missed, whether the
unread names of those passages (a port of walker/src/names.rs, titles mentioned included)
hold one whose search ("NAME: QUESTION", 5 unread chunks) finds it, and where that name sits
in the list offered."""
import json, re, subprocess, sys
W, INDEX, DATA, LIMIT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
corpus = {}
for l in open(f"{DATA}/corpus.jsonl"):
    d = json.loads(l); corpus[d["id"]] = d
titles = sorted({re.sub(r" \(.*\)$", "", d["title"]) for d in corpus.values()}, key=len, reverse=True)
titles = [t for t in titles if len(t) >= 4 and t[0].isupper()]
def search(q, k):
    out = subprocess.run([W, "search", q, "-k", str(k), "--json", "--index", INDEX], capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]
OPEN, CLOSE = "(\"“'[", ",.;:)\"”']!?"
def initial(w):
    return len(w) >= 2 and len(w) % 2 == 0 and all(w[i].isupper() and w[i+1] == "." for i in range(0, len(w), 2))
def written(text):
    lower = {w for w in re.split(r"\W+", text) if w[:1].islower()}
    names, run, start = [], [], True
    def flush():
        while run and run[-1] == "of": run.pop()
        if run and len(run) <= 6: names.append(" ".join(run))
        run.clear()
    for raw in text.split():
        opens = raw[:1] in OPEN
        word = raw.lstrip(OPEN); bare = word.rstrip(CLOSE)
        for s in ("'s", "’s"):
            if bare.endswith(s): bare = bare[:-2]
        ini = initial(word)
        cap = bare[:1].isupper()
        common = start and bare.lower() in lower
        if opens: flush()
        if cap and not common: run.append(word if ini else bare)
        elif bare == "of" and run: run.append("of")
        else: flush()
        if not ini and len(bare) < len(word): flush()
        start = not ini and word.endswith((".", "!", "?"))
    flush()
    return names
def mentioned(text):
    out = []
    for t in titles:
        if re.search(r"(?<!\w)" + re.escape(t) + r"(?!\w)", text) and t not in out:
            out.append(t)
    return out
qs = [json.loads(l) for l in open(f"{DATA}/questions.jsonl")][:LIMIT]
missed = named = found = 0
positions = []
for q in qs:
    first = search(q["question"], 5)
    read = {h["chunk_id"] for h in first}
    got = {h["doc_id"] for h in first}
    miss = [s for s in q["supporting_ids"] if s not in got]
    if not miss:
        continue
    ql = q["question"].lower()
    readt = {h["title"].lower() for h in first}
    names = []
    for h in first:
        for n in mentioned(h["text"]):
            if n.lower() not in ql and n.lower() not in readt and n.lower() not in [x.lower() for x in names]: names.append(n)
    for h in first:
        for n in written(h["text"]):
            if len(n) >= 3 and n.lower() not in ql and n.lower() not in readt and n.lower() not in [x.lower() for x in names]: names.append(n)
    names = names[:24]
    missed += len(miss)
    hits = {}
    for i, n in enumerate(names):
        res = [h for h in search(f"{n}: {q['question']}", 10) if h["chunk_id"] not in read][:5]
        for h in res:
            if h["doc_id"] in miss: hits.setdefault(h["doc_id"], []).append((i + 1, n))
    for s in miss:
        if s in hits:
            found += 1; positions.append(hits[s][0][0])
        print(q["id"], corpus[s]["title"], "<-", hits.get(s, [])[:3], f"({len(names)} names)", flush=True)
print(f"{len(qs)} questions: {missed} supporting documents missed by the question's search; "
      f"{found} found by searching one of the names offered (best name's place in the list: {sorted(positions)})")
