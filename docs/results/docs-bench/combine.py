import json
first=[json.loads(l) for l in open('docs/results/docs-bench/constrained/results.jsonl')]
rest=[json.loads(l) for l in open('docs/results/docs-bench/constrained-11-30/results.jsonl')]
rows=first+rest
for strat in ['single','docs']:
    rs=[r for r in rows if r['strategy']==strat]
    def m(k): return sum((r['metrics'].get(k) or 0) for r in rs)/len(rs)
    calls=sum(r['usage']['llm_calls'] for r in rs)/len(rs)
    secs=sum(r.get('elapsed_ms',0) for r in rs)/len(rs)/1000
    print(strat, len(rs), {k: round(m(k),3) for k in ['recall@5','em','f1']}, 'calls',round(calls,2),'s/q',round(secs,1))
