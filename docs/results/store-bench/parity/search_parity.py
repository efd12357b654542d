"""Single-shot retrieval from the folder store and the Postgres store, question by question.

For every question of a set, runs `walkrag search QUESTION -k K --json` against a folder
index and against a Postgres store holding the same corpus, and compares the chunk ids
returned and the recall@K of the supporting documents. Prints a JSON summary.

    python3 search_parity.py WALKRAG QUESTIONS FOLDER_INDEX POSTGRES_URL [K]
"""
import json
import subprocess
import sys


def search(walkrag, question, k, target):
    out = subprocess.run(
        [walkrag, "search", question, "-k", str(k), "--json", *target],
        capture_output=True, text=True, check=False,
    )
    if out.returncode not in (0, 1):
        sys.exit(f"walkrag search failed: {out.stderr}")
    hits = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if len(hits) == 1 and isinstance(hits[0], list):
        hits = hits[0]
    return hits


def recall(hits, supporting, k):
    docs = []
    for hit in hits:
        if hit["doc_id"] not in docs:
            docs.append(hit["doc_id"])
    return sum(1 for s in supporting if s in docs[:k]) / max(len(supporting), 1)


def main():
    walkrag, questions, folder, url = sys.argv[1:5]
    k = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    same = 0
    recalls = {"folder": 0.0, "postgres": 0.0}
    rows = []
    for line in open(questions):
        q = json.loads(line)
        a = search(walkrag, q["question"], k, ["--index", folder])
        b = search(walkrag, q["question"], k, ["--store", url])
        ids_a = [h["chunk_id"] for h in a]
        ids_b = [h["chunk_id"] for h in b]
        same += ids_a == ids_b
        ra, rb = recall(a, q["supporting_ids"], k), recall(b, q["supporting_ids"], k)
        recalls["folder"] += ra
        recalls["postgres"] += rb
        if ids_a != ids_b:
            rows.append({"id": q["id"], "folder": ids_a, "postgres": ids_b})
    n = same + len(rows)
    print(json.dumps({
        "questions": n,
        "k": k,
        "same_chunks_in_same_order": same,
        f"recall@{k}": {s: round(r / n, 4) for s, r in recalls.items()},
        "differences": rows,
    }, indent=1))


main()
