"""How many answers would be right if the likeliest weighed span replaced the written answer
wherever it is more than a margin (nats) likelier, for several margins; with -g, the misses
where a right span was weighed, and how far behind it lay.
Usage: margins.py SPANS.jsonl QUESTIONS.jsonl [-g]"""
import json
import string
import sys

spans_file, questions_file = sys.argv[1], sys.argv[2]
questions = {}
for line in open(questions_file):
    q = json.loads(line)
    questions[q["id"]] = q


def norm(text):
    text = text.lower()
    text = "".join(c for c in text if c not in string.punctuation and c not in "‘’“”–—…«»")
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def right(answer, q):
    """The gold or an alias, normalised, held word-aligned by the answer (eval's `right`,
    less its initials rule)."""
    a = f" {norm(answer)} "
    golds = [q["answer"]] + q.get("answer_aliases", [])
    return any(norm(g) and f" {norm(g)} " in a for g in golds)


rows = [json.loads(line) for line in open(spans_file)]
margins = [0, 0.5, 1, 2, 4, float("inf")]
print("| margin (nats) | " + " | ".join("never" if m == float("inf") else str(m) for m in margins) + " |")
print("|---|" + "---:|" * len(margins))
cells = []
for m in margins:
    n = 0
    for r in rows:
        answer = r["answer"]
        if r["spans"]:
            w = [s[1] for s in r["spans"]]
            best = max(range(len(w)), key=lambda i: w[i])
            if best != 0 and w[best] - w[0] > m:
                answer = r["spans"][best][0]
        n += right(answer, questions[r["id"]])
    cells.append(str(n))
print(f"| right of {len(rows)} | " + " | ".join(cells) + " |")
weighed = [r for r in rows if r["spans"]]
first = sum(1 for r in weighed if max(s[1] for s in r["spans"]) == r["spans"][0][1])
print(f"\nweighed on {len(weighed)} questions; the written answer was the likeliest span on {first}; "
      f"{sum(len(r['spans']) for r in weighed) / len(weighed):.1f} spans and "
      f"{sum(r['ms'] for r in weighed) / len(weighed) / 1000:.1f} s per weighed question")
if "-g" in sys.argv:
    print("\n| question | written | weight | right span weighed | weight | rank |")
    print("|---|---|---:|---|---:|---:|")
    for r in weighed:
        q = questions[r["id"]]
        if right(r["spans"][0][0], q):
            continue
        good = [s for s in r["spans"] if right(s[0], q)]
        if not good:
            continue
        g = max(good, key=lambda s: s[1])
        rank = sorted((s[1] for s in r["spans"]), reverse=True).index(g[1]) + 1
        print(f"| {r['id']} | {r['spans'][0][0]} | {r['spans'][0][1]} | {g[0]} | {g[1]} | {rank} of {len(r['spans'])} |")
