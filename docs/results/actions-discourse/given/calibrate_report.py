import json, math
cases=json.load(open('docs/results/actions-discourse/given/calibration-cases.json'))
def lse(a,b): return max(a,b)+math.log1p(math.exp(-abs(a-b)))
def auc(gs,ls):
    pos=[g for g,l in zip(gs,ls) if l]; neg=[g for g,l in zip(gs,ls) if not l]
    s=sum((p>n)+0.5*(p==n) for p in pos for n in neg); return s/len(pos)/len(neg)
# (scores file, items per case, column: 0 the summed log-probability, 1 the first token's)
for d,n,col in [('yesno',4,0),('read',2,0),('read-whole',2,0),('read-first',2,1),('read-1.5b',2,0)]:
    try: sc=[float(x.split()[col]) for x in open(f'docs/results/actions-discourse/given/calibration-scores-{d}.txt')]
    except: continue
    if len(sc)<n*len(cases): print(d,'partial',len(sc)); continue
    gs=[]
    for i in range(len(cases)):
        s=sc[i*n:(i+1)*n]
        gs.append(s[0]-s[1] if n==2 else lse(s[0],s[1])-lse(s[2],s[3]))
    ls=[c['label'] for c in cases]
    print(d,'AUC',round(auc(gs,ls),3))
    best=max(((sum((g>=t)==bool(l) for g,l in zip(gs,ls)),t) for t in sorted(set(gs))))
    print(' best threshold acc',best[0]/len(cases), 'at', round(best[1],2))
    for t in [-5,-4.5,-4,-3.5,-3,-2,-1,0]:
        tp=sum(g>=t and l for g,l in zip(gs,ls)); tn=sum(g<t and not l for g,l in zip(gs,ls))
        reqs={}
        for g,c in zip(gs,cases): reqs[c['id']]=reqs.get(c['id'],True) and ((g>=t)==bool(c['label']))
        print(f'  t={t}: kept given {tp}/{sum(ls)}, caught not-given {tn}/{len(ls)-sum(ls)}, requests with every value right {sum(reqs.values())}/{len(reqs)}')
