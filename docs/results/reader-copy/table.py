"""Summarises eval result files: python3 table.py QUESTIONS.jsonl[,MORE] RUN/results.jsonl[:STRATEGY[:FIRST_N]] ...

One row per file (and strategy): questions, gold in context, right, reader efficiency (right
when in context), EM, F1, comparison questions right, abstained on absent questions, seconds
per question. Questions files give each question's kind."""
import json, sys

kinds = {}
for path in sys.argv[1].split(','):
    for line in open(path):
        q = json.loads(line)
        kinds[q['id']] = q.get('kind')
print('| run | strategy | n | in context | right | reader efficiency | EM | F1 | comparisons right | absent abstained | s/question |')
print('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
for arg in sys.argv[2:]:
    path, *rest = arg.split(':')
    want = rest[0] if rest else None
    first = int(rest[1]) if len(rest) > 1 else None
    rows = [json.loads(l) for l in open(path)]
    for strategy in sorted({r['strategy'] for r in rows}):
        if want and strategy != want:
            continue
        got = [r for r in rows if r['strategy'] == strategy and not r.get('error')]
        got.sort(key=lambda r: r['id'])
        if first:
            got = got[:first]
        n = len(got)
        if not n:
            continue
        mean = lambda k: sum((r['metrics'].get(k) or 0) for r in got) / n
        ctx = [r for r in got if r['metrics'].get('in_context') == 1]
        eff = sum(r['metrics'].get('right') or 0 for r in ctx) / len(ctx) if ctx else float('nan')
        comp = [r for r in got if kinds.get(r['id']) == 'comparison']
        comp_right = f"{sum(r['metrics'].get('right') or 0 for r in comp):.0f} of {len(comp)}" if comp else '–'
        absent = [r for r in got if kinds.get(r['id']) == 'absent']
        abstained = f"{sum(1 for r in absent if not r.get('found')):.0f} of {len(absent)}" if absent else '–'
        secs = sum(r['elapsed_ms'] for r in got) / n / 1000
        run = path.rsplit('/', 2)[-2]
        print(f"| {run} | {strategy} | {n} | {mean('in_context'):.2f} | {mean('right'):.2f} | {eff:.2f} | {mean('em'):.3f} | {mean('f1'):.3f} | {comp_right} | {abstained} | {secs:.1f} |")
