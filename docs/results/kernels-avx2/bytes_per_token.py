"""Bytes a generated token reads from a Qwen2.5 GGUF's matrices: walkrag's one-token pass
(a projection stacked wholly of Q4_K at 6 bits, wholly of Q5_0 at 5.5, anything else as Q8_0
at 8.5; the output matrix as Q8_0) against the file's own widths (what llama.cpp reads).
Usage: bytes_per_token.py MODEL.gguf"""
import struct, sys, re
f = open(sys.argv[1], 'rb')
def r(fmt): return struct.unpack('<' + fmt, f.read(struct.calcsize('<' + fmt)))
def s(): n, = r('Q'); return f.read(n).decode('utf-8', 'replace')
SZ = {0:1,1:1,2:2,3:2,4:4,5:4,6:4,7:1,10:8,11:8,12:8}
def val(t):
    if t == 8: return s()
    if t == 9:
        at, = r('I'); n, = r('Q')
        if at == 8:
            for _ in range(n): s()
        else: f.read(SZ[at] * n)
        return None
    return f.read(SZ[t])
magic, ver = r('4sI'); nt, nkv = r('QQ')
for _ in range(nkv):
    k = s(); t, = r('I'); val(t)
T = {}
for _ in range(nt):
    name = s(); nd, = r('I'); dims = r('Q' * nd); t, = r('I'); off, = r('Q')
    n = 1
    for d in dims: n *= d
    T[name] = (t, n)
Q4K, Q6K = 12, 14
walk = 0.0; file = 0.0
FILEBITS = {Q4K: 4.5, Q6K: 6.5625, 8: 8.5, 6: 5.5, 0: 32}
def group(names):
    global walk, file
    ts = [T[n] for n in names]
    allq4 = all(t == Q4K for t, _ in ts)
    for t, n in ts:
        file += n * FILEBITS[t] / 8
        walk += n * (6 if allq4 else (5.5 if t == 6 and all(tt == 6 for tt,_ in ts) else 8.5)) / 8
layers = sorted({int(m.group(1)) for k in T for m in [re.match(r'blk\.(\d+)\.', k)] if m})
for i in layers:
    b = f'blk.{i}.'
    group([b+'attn_q.weight', b+'attn_k.weight', b+'attn_v.weight'])
    group([b+'attn_output.weight'])
    group([b+'ffn_gate.weight', b+'ffn_up.weight'])
    group([b+'ffn_down.weight'])
out = 'output.weight' if 'output.weight' in T else 'token_embd.weight'
t, n = T[out]; file += n * FILEBITS[t] / 8; walk += n * 8.5 / 8
print(f'per generated token: walkrag {walk/1e9:.3f} GB, file widths {file/1e9:.3f} GB')
