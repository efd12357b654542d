"""Written against computed answers of "which of A or B" questions, from one eval run with
--traces: the answer the model wrote (the answer step's completion), the final answer, and the
comparison's notes (how the sides were compared, each side's value)."""
import json, sys

run, qfile = sys.argv[1], sys.argv[2]
strategy = sys.argv[3] if len(sys.argv) > 3 else 'links'
qs = {json.loads(l)['id']: json.loads(l) for l in open(qfile)}
res = {}
for l in open(f'{run}/results.jsonl'):
    r = json.loads(l)
    res[(r['strategy'], r['id'])] = r


def norm(text):
    """Lower case letters and digits, single-spaced (eval's containment ignores punctuation)."""
    return ' '.join(''.join(c if c.isalnum() else ' ' for c in text.lower()).split())


def right(answer, q):
    a = norm(answer)
    golds = [norm(g) for g in [q['answer']] + q.get('answer_aliases', [])]
    if golds[0] in ('yes', 'no'):
        return a == golds[0]
    return any(g in a for g in golds)


n = w = f = computed = 0
rows = []
for i, q in qs.items():
    if (strategy, i) not in res:
        continue
    t = json.load(open(f'{run}/traces/{strategy}/{i}.json'))
    steps = t['steps']
    answers = [x for x in steps if x.get('step') == 'llm' and x.get('purpose') == 'answer']
    written = answers[-1]['completion'].split('\n')[0].removeprefix('Answer: ').strip() if answers else ''
    final = res[(strategy, i)]['answer']
    notes = [x['message'] for x in steps if x.get('step') == 'note']
    kind = [x for x in steps if x.get('step') == 'score' and x.get('purpose', '').startswith('compare: how')]
    how = ''
    if len(kind) == 2:
        # The weight after the question less the weight after the question that says nothing.
        a, b = kind[0]['scores'], kind[1]['scores']
        best = max(range(len(a)), key=lambda k: a[k] - b[k])
        how = kind[0]['items'][best]['continuation']
    note = next((m for m in notes if m.startswith('computed') or 'stands' in m), '')
    n += 1
    w += right(written, q)
    f += right(final, q)
    computed += note.startswith('computed')
    rows.append(f"| {i} | {q.get('direction', '')} | {how} | {written} | {final} | {int(right(written, q))} → {int(right(final, q))} | {note[:160]} |")
print(f'{strategy}: {n} questions, written right {w}, final right {f}, computed {computed}')
print('| id | gold direction | weighed | written | final | right | note |')
print('|---|---|---|---|---|---|---|')
print('\n'.join(rows))
