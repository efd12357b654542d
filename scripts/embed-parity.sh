#!/usr/bin/env bash
# Parity of `--embedder openai:MODEL` with the local embedder (outside CI: needs torch).
#
#   scripts/embed-parity.sh [DATA_DIR]      (default ../shared/data/hotpotqa-100)
#
# Serves MiniLM over HTTP with sentence-transformers (../shared/baselines/st-server.py, in the
# venv st-bench.sh makes: $ST_HOME, default ~/.cache/walkrag-baselines/st-venv), indexes the
# corpus twice, with `minilm` and with `openai:all-MiniLM-L6-v2` from that server, and checks
# (1) every chunk's two vectors have cosine >= 0.9999, (2) every question's top 5 is the same
# chunks in the same order. Prints one JSON line; exits 1 if either check fails.
# WALKRAG names the binary (default target/debug/walkrag); PORT the server's (default 8089).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/hotpotqa-100}
walkrag=${WALKRAG:-target/debug/walkrag}
venv=${ST_HOME:-$HOME/.cache/walkrag-baselines/st-venv}
port=${PORT:-8089}
model_dir=${WALKRAG_MODELS:-$HOME/.cache/walkrag/models}/minilm
[ -x "$walkrag" ] || { echo "no $walkrag: cargo build -p walkrag first" >&2; exit 2; }
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run ../shared/baselines/st-bench.sh once" >&2; exit 2; }

work=$(mktemp -d)
"$venv/bin/python" ../shared/baselines/st-server.py "$model_dir" --port "$port" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 1
done
export WALKRAG_EMBED_BASE_URL="http://127.0.0.1:$port/v1"
unset OPENAI_API_KEY

"$walkrag" index "$data/corpus.jsonl" --index "$work/local" --json >"$work/local.json"
"$walkrag" index "$data/corpus.jsonl" --index "$work/remote" --embedder openai:all-MiniLM-L6-v2 \
    --json >"$work/remote.json"

# Each question's top 5 chunk ids from both indexes, one line per question.
"$venv/bin/python" - "$data/questions.jsonl" >"$work/questions.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["question"])
PY
while IFS= read -r q; do
    a=$("$walkrag" search "$q" --index "$work/local" -k 5 --json | "$venv/bin/python" -c \
        'import json,sys; print(" ".join(json.loads(l)["chunk_id"] for l in sys.stdin))')
    b=$("$walkrag" search "$q" --index "$work/remote" -k 5 --json | "$venv/bin/python" -c \
        'import json,sys; print(" ".join(json.loads(l)["chunk_id"] for l in sys.stdin))')
    printf '%s\t%s\n' "$a" "$b"
done <"$work/questions.txt" >"$work/top5.tsv"

"$venv/bin/python" - "$work" <<'PY'
import json, os, sys
import numpy as np
work = sys.argv[1]
def load(name):
    gen = open(os.path.join(work, name, "CURRENT")).read().strip()
    d = os.path.join(work, name, gen)
    manifest = json.load(open(os.path.join(d, "manifest.json")))
    v = np.fromfile(os.path.join(d, "vectors.f32"), dtype="<f4").reshape(-1, manifest["embedder"]["dim"])
    ids = [json.loads(l)["doc"]["id"] for l in open(os.path.join(d, "docs.jsonl"))]
    return manifest, v, ids
ml, vl, il = load("local")
mr, vr, ir = load("remote")
assert il == ir and vl.shape == vr.shape, "the two indexes hold different documents or chunks"
cos = (vl * vr).sum(1) / np.linalg.norm(vl, axis=1) / np.linalg.norm(vr, axis=1)
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "top5.tsv"))]
same = sum(a == b for a, b in rows)
same_set = sum(set(a.split()) == set(b.split()) for a, b in rows)
out = {
    "chunks": int(len(cos)), "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
    "chunks_below_0.9999": int((cos < 0.9999).sum()),
    "questions": len(rows), "same_top5_in_order": same, "same_top5_as_a_set": same_set,
    "local": ml["embedder"]["id"], "remote": mr["embedder"]["id"],
}
print(json.dumps(out))
sys.exit(0 if out["chunks_below_0.9999"] == 0 and same == len(rows) else 1)
PY
