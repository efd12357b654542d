import json, sys

exec(open('docs/results/actions-discourse/given/calibrate_items.py').read().split("cases=[]")[0])  # load_spec, desc
def load_required(p):
    d=json.load(open(p)); req={}
    for path,item in d['paths'].items():
        for m,op in item.items():
            if not isinstance(op,dict) or 'operationId' not in op: continue
            r=set()
            for prm in item.get('parameters',[])+op.get('parameters',[]):
                if '$ref' in prm: prm=d['components']['parameters'][prm['$ref'].split('/')[-1]]
                if prm.get('required') or prm.get('in')=='path': r.add(prm['name'])
                if prm.get('schema',{}).get('enum'): r.discard(prm['name'])
            for ct,c in op.get('requestBody',{}).get('content',{}).items():
                sch=c.get('schema',{})
                if '$ref' in sch: sch=d['components']['schemas'][sch['$ref'].split('/')[-1]]
                for k in sch.get('required',[]):
                    v=sch.get('properties',{}).get(k,{})
                    if not (isinstance(v,dict) and v.get('enum')): r.add(k)
            req[op['operationId']]=r
    return req
mode=sys.argv[1]; spec=sys.argv[2]; results=sys.argv[3]; requests=sys.argv[4]; tag=sys.argv[5]
ops=load_spec(spec); reqd=load_required(spec)
exp={json.loads(l)['id']:json.loads(l) for l in open(requests)}
rows=[json.loads(l) for l in open(results)]
judged=[]
for r in rows:
    op=r['picked']; params=r['params'] or {}
    if not op or op not in ops: continue
    summ,ins=ops[op]
    for name,v in params.items():
        if name not in reqd.get(op,()): continue
        if isinstance(v,bool) or not isinstance(v,(str,int,float)): continue
        if isinstance(v,str) and " ".join(v.split()) not in " ".join(r['request'].split()): continue
        if not isinstance(v,str) and str(v) not in r['request']: continue
        judged.append((r['id'],op,summ,name,ins.get(name),v,r['request']))
if mode=='items':
    out=open(f'/tmp/given-items-{tag}.jsonl','w')
    for (rid,op,summ,name,d,v,req) in judged:
        what=f' ({summ.strip()})' if summ else ''
        q=(f'The user said:\n"{req.strip()}"\n\nThe request {op}{what} needs `{name}`{desc(d)}.\n\n'
           f'What did the user give as `{name}`? Reply with the value exactly as the user wrote it, or with NONE if the user did not give it.')
        m=[{"role":"system","content":"You read the values an API request needs out of what a user wrote."},{"role":"user","content":q}]
        first=v.split()[0] if isinstance(v,str) else str(v)
        for c in [first,"NONE"]: out.write(json.dumps({"messages":m,"continuation":c})+"\n")
    print(len(judged),'values')
else:
    # replay-scores-TAG.txt: the value's first word, as given.rs weighs it; with a 7th
    # argument FILE, another scores file whose last column is read (replay-first-token-TAG.txt)
    f=sys.argv[7] if len(sys.argv)>7 else f'docs/results/actions-discourse/given/replay-scores-{tag}.txt'
    sc=[float(x.split()[-1]) for x in open(f)]
    norm=lambda s: s.lower().replace('_','').replace('-','')
    taken={}
    for i,j in enumerate(judged):
        g=sc[2*i]-sc[2*i+1]
        if g < float(sys.argv[6]): taken.setdefault(j[0],[]).append((j[3],j[5],round(g,2)))
    before=after=0
    for r in rows:
        e=exp[r['id']]; missing={norm(x) for x in e['missing_required']}
        asked={norm(x) for x in r['asked']}
        ok_b = bool(r['metrics']['ask'])
        t=taken.get(r['id'],[])
        if t:
            new={norm(x[0]) for x in t}|asked
            ok_a = (new==missing) if missing else False
        else: ok_a=ok_b
        before+=ok_b; after+=ok_a
        if t or ok_a!=ok_b: print(r['id'], 'missing',sorted(missing),'taken',t,'ask',ok_b,'->',ok_a, '|', r['request'][:90])
    print(f'ask accuracy {before/len(rows):.3f} -> {after/len(rows):.3f} ({len(rows)} requests)')
