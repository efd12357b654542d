"""Score items for a pointwise rerank of what `links --names 3` read (issue 46): for each dev
question, each of the ten chunks read is shown to the model alone with the question, and the
model's answer "yes" or "no" to "does it help answer the question?" is weighed. Items come in
pairs (yes, then no) sharing one prompt, so the model reads each passage once.

usage: python3 rerank_items.py RUN:QUESTIONS:CORPUS [...]   (writes items.jsonl and index.jsonl)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ranking-dev"))
import ranking  # noqa: E402

SYSTEM = "You judge whether a passage helps answer a question. Reply with yes or no."
USER = (
    "Question: {question}\n\nPassage ({title}): {text}\n\n"
    "Does this passage give a fact needed to answer the question, either directly or as a "
    "step towards the answer (for example, who or what the question refers to)? "
    "Reply yes or no."
)


def main():
    per_run = []
    for arg in sys.argv[1:]:
        run, questions, corpus = arg.split(":")
        texts = {}
        for line in open(corpus):
            d = json.loads(line)
            texts[d["id"]] = (d["title"], d["text"][:1500])
        asked = {json.loads(l)["id"]: json.loads(l)["question"] for l in open(questions)}
        rows = []
        for e in ranking.load(run, questions):
            read = ranking.orders(e)["current (lead k-1, hop's first)"]
            rows.append([(run, e["id"], asked[e["id"]], h, texts[h["doc_id"]]) for h in read])
        per_run.append(rows)
    items = open("items.jsonl", "w")
    index = open("index.jsonl", "w")
    # The runs' questions in turn, so that a run stopped early covers each set alike.
    for question_rows in (row for rows in zip(*per_run) for row in rows):
        for run, qid, question, hit, (title, text) in question_rows:
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": USER.format(question=question, title=title, text=text)},
            ]
            for answer in ("yes", "no"):
                items.write(json.dumps({"messages": messages, "continuation": answer}) + "\n")
            index.write(json.dumps({"run": run, "id": qid, "chunk_id": hit["chunk_id"], "doc_id": hit["doc_id"]}) + "\n")


if __name__ == "__main__":
    main()
