"""Before/after of the yes margin from one eval run with --traces: the answer the model wrote
(the answer step's completion) against the final answer, per strategy and question subset."""
import json, glob, os, sys
run, qfile = sys.argv[1], sys.argv[2]
qs = {json.loads(l)['id']: json.loads(l) for l in open(qfile)}
res = {}
for l in open(f'{run}/results.jsonl'):
    r = json.loads(l); res[(r['strategy'], r['id'])] = r
subsets = {'blind 40 (dev, tuned here)': lambda i: i.startswith('yn'),
           'HotpotQA first 50, yes/no (dev)': lambda i: i.startswith('hpq') and int(i[3:]) < 50,
           'HotpotQA last 50, yes/no (untuned)': lambda i: i.startswith('hpq') and int(i[3:]) >= 50}
print('| strategy | questions | gold yes / no | written right | after the margin | yes written → no |')
print('|---|---|---:|---:|---:|---:|')
for s in ['single', 'links', 'walk']:
    for name, f in subsets.items():
        ids = [i for i in qs if f(i)]
        w = a = flips = 0
        for i in ids:
            gold = qs[i]['answer'].lower()
            t = json.load(open(f'{run}/traces/{s}/{i}.json'))
            answers = [x for x in t['steps'] if x.get('step') == 'llm' and x.get('purpose') == 'answer']
            written = answers[-1]['completion'].split('\n')[0].removeprefix('Answer: ').strip().lower() if answers else ''
            final = res[(s, i)]['answer'].lower()
            w += written == gold; a += final == gold; flips += written != final
        yes = sum(qs[i]['answer'].lower() == 'yes' for i in ids)
        print(f'| {s} | {name} | {yes} / {len(ids)-yes} | {w} | {a} | {flips} |')
