import json, collections
D = {json.loads(l)['id']: json.loads(l) for l in open('../shared/data/hotpotqa-100/corpus.jsonl')}
lines = open('docs/data/whichof-blind/questions.jsonl', encoding='utf-8').read().splitlines()
assert len(lines) == 40, len(lines)
rows = [json.loads(l) for l in lines]
keys = ["id","question","answer","answer_aliases","supporting_ids","kind","level","values","direction"]
assert all(list(r.keys()) == keys for r in rows)
assert len({r['id'] for r in rows}) == 40 and [r['id'] for r in rows] == [f"wo{i:02d}" for i in range(1, 41)]
pos = collections.Counter(); use = collections.Counter(); pairs = set(); dirs = collections.Counter()
for r in rows:
    a, b = list(r['values'])
    assert r['question'].endswith(f"{a} or {b}?"), r['id']
    assert r['answer'] in (a, b) and r['answer'] in r['question']
    pos['first' if r['answer'] == a else 'second'] += 1
    ia, ib = r['supporting_ids']; assert ia != ib
    for side, pid in ((a, ia), (b, ib)):
        assert r['values'][side] in D[pid]['text'], (r['id'], side)
        use[pid] += 1
    p = frozenset((ia, ib)); assert p not in pairs; pairs.add(p)
    assert r['direction'] in ("earlier","later","larger","smaller"); dirs[r['direction']] += 1
    assert r['kind'] == 'comparison' and r['level'] == 'medium'
assert max(use.values()) <= 2, [k for k, v in use.items() if v > 2]
print("OK: 40 rows;", dict(pos), dict(dirs), "passages:", len(use), "used twice:", sorted(k for k, v in use.items() if v == 2))
