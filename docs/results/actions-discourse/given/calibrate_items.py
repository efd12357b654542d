import json, re, sys
def load_spec(p):
    d=json.load(open(p)); ops={}
    for path,item in d['paths'].items():
        for m,op in item.items():
            if not isinstance(op,dict) or 'operationId' not in op: continue
            ins={}
            for prm in item.get('parameters',[])+op.get('parameters',[]):
                if '$ref' in prm:
                    ref=prm['$ref'].split('/')[-1]; prm=d['components']['parameters'][ref]
                ins[prm['name']]=prm.get('description') or prm.get('schema',{}).get('description')
            rb=op.get('requestBody',{}).get('content',{})
            for ct,c in rb.items():
                sch=c.get('schema',{})
                if '$ref' in sch: sch=d['components']['schemas'][sch['$ref'].split('/')[-1]]
                for k,v in sch.get('properties',{}).items():
                    ins.setdefault(k, v.get('description') if isinstance(v,dict) else None)
            ops[op['operationId']]=(op.get('summary'),ins)
    return ops
def desc(d):
    if not d: return ""
    d=" ".join(d.split())[:160]
    return ": "+d
cases=[]
for spec,reqs,maxid in [('docs/data/actions/discourse.openapi.json','docs/data/actions/discourse-requests.jsonl',42),('docs/data/actions/intercom.openapi.json','docs/data/actions/intercom-requests.jsonl',30)]:
    ops=load_spec(spec)
    for l in open(reqs):
        r=json.loads(l)
        if int(r['id'][1:])>maxid: continue
        summ,ins=ops.get(r['operation_id'],(None,{}))
        req=r['request']
        for name,v in r['required_params'].items():
            if v is None:
                words=[w.strip('.,?!:;"\'') for w in req.split()]
                words=[w for w in words if w]
                given=[str(x) for x in r['required_params'].values() if x is not None]
                step=max(1,len(words)//6)
                for w in words[::step][:6]:
                    cases.append(dict(id=r['id'],op=r['operation_id'],summary=summ,name=name,desc=ins.get(name),value=w,label=0,req=req))
            elif isinstance(v,(str,int,float)) and not isinstance(v,bool) and str(v).lower() in req.lower():
                cases.append(dict(id=r['id'],op=r['operation_id'],summary=summ,name=name,desc=ins.get(name),value=v,label=1,req=req))
A=open('/tmp/given-items-yesno.jsonl','w'); B=open('/tmp/given-items-read.jsonl','w')
for c in cases:
    shown = f'"{c["value"]}"' if isinstance(c['value'],str) else str(c['value'])
    what = f' ({c["summary"]})' if c['summary'] else ''
    qa=(f'The user said:\n"{c["req"]}"\n\nThe request {c["op"]}{what} needs `{c["name"]}`{desc(c["desc"])}. It would be '
        f'sent with {shown}.\n\nDid the user give {shown} as `{c["name"]}`? Answer yes or no.')
    ma=[{"role":"system","content":"You check whether a user gave the values an API request needs."},{"role":"user","content":qa}]
    for a in ["Yes","yes","No","no"]:
        A.write(json.dumps({"messages":ma,"continuation":a})+"\n")
    qb=(f'The user said:\n"{c["req"]}"\n\nThe request {c["op"]}{what} needs `{c["name"]}`{desc(c["desc"])}.\n\n'
        f'What did the user give as `{c["name"]}`? Reply with the value exactly as the user wrote it, or with NONE if the user did not give it.')
    mb=[{"role":"system","content":"You read the values an API request needs out of what a user wrote."},{"role":"user","content":qb}]
    # the value's first word, as given.rs weighs it (str(c['value']) for the whole value)
    first = c['value'].split()[0] if isinstance(c['value'], str) else str(c['value'])
    for a in [first,"NONE"]:
        B.write(json.dumps({"messages":mb,"continuation":a})+"\n")
json.dump(cases,open('docs/results/actions-discourse/given/calibration-cases.json','w'))
print(len(cases), sum(c['label'] for c in cases))
