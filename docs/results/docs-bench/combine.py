"""Joins a run of docs-bench's first 10 questions with a run of questions 11-30 and prints
each strategy's means over all of them.

    python3 docs/results/docs-bench/combine.py [FIRST REST]

FIRST and REST are run folders under docs/results/docs-bench (default: constrained
constrained-11-30; unconstrained unconstrained-11-30 for the runs without constraints).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(run):
    with open(os.path.join(HERE, run, "results.jsonl")) as f:
        return [json.loads(line) for line in f]


def main():
    first, rest = sys.argv[1:3] if len(sys.argv) == 3 else ("constrained", "constrained-11-30")
    every = rows(first) + rows(rest)
    for strategy in ["single", "docs"]:
        rs = [r for r in every if r["strategy"] == strategy]
        mean = lambda key: sum(r["metrics"].get(key) or 0 for r in rs) / len(rs)
        calls = sum(r["usage"]["llm_calls"] for r in rs) / len(rs)
        seconds = sum(r.get("elapsed_ms", 0) for r in rs) / len(rs) / 1000
        scores = {key: round(mean(key), 3) for key in ["recall@5", "em", "f1"]}
        print(strategy, len(rs), scores, "calls", round(calls, 2), "s/q", round(seconds, 1))


if __name__ == "__main__":
    main()
