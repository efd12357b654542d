"""Compares two eval runs' results.jsonl line by line, every field but the seconds.

usage: python3 compare.py BEFORE/results.jsonl AFTER/results.jsonl
"""
import json
import sys


def lines(path):
    out = {}
    for line in open(path):
        row = json.loads(line)
        row.pop("elapsed_ms", None)
        out[(row["id"], row["strategy"])] = row
    return out


before, after = lines(sys.argv[1]), lines(sys.argv[2])
same = 0
for key in sorted(before):
    if before[key] == after.get(key):
        same += 1
    else:
        fields = [f for f in before[key] if before[key][f] != after.get(key, {}).get(f)]
        print(f"{key[0]} {key[1]}: differs in {', '.join(fields)}")
print(f"{same} of {len(before)} lines identical but for elapsed_ms ({len(after)} after)")
