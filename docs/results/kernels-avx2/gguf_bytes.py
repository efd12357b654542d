import struct, sys
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
# ggml types: 0 F32, 1 F16, 8 Q8_0, 6 Q5_0, 12 Q4_K, 14 Q6_K, 3 Q4_1
BITS_FILE = {0:32, 1:16, 8:8.5, 6:5.5, 12:4.5, 14:6.5625, 3:5, 2:4.5, 13:5.5}
NAMES = {0:'F32',1:'F16',8:'Q8_0',6:'Q5_0',12:'Q4_K',14:'Q6_K',3:'Q4_1',13:'Q5_K'}
by = {}
tot_file = 0
for _ in range(nt):
    name = s(); nd, = r('I'); dims = r('Q' * nd); t, = r('I'); off, = r('Q')
    n = 1
    for d in dims: n *= d
    if nd < 2: continue
    key = NAMES.get(t, t)
    by.setdefault(key, [0, []]); by[key][0] += n; by[key][1].append(name)
for k, (n, names) in by.items():
    print(k, f'{n/1e6:.1f} M weights', len(names), 'matrices', sorted(set(x.split('.')[-2] if x.startswith('blk') else x for x in names)))
