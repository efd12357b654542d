"""Bytes a generated token reads from a Qwen2.5 GGUF's matrices: walkrag's one-token pass on
the AVX-512 kernels (a projection stacked wholly of Q4_K at 6 bits; anything else, Q5_0
included, in panels of bytes with f16 scales, 8.5 bits; the output matrix so too) against
the file's own widths (what llama.cpp reads).
Usage: bytes_per_token.py MODEL.gguf"""
import re
import sys

from gguf_bytes import tensors

Q4_K = 12
FILE_BITS = {0: 32, 6: 5.5, 8: 8.5, 12: 4.5, 14: 6.5625}

T = tensors(sys.argv[1])
walkrag = file = 0.0


def stack(names):
    """Adds one projection, its matrices stacked as walkrag loads them."""
    global walkrag, file
    types = [T[n][0] for n in names]
    bits = 6 if all(t == Q4_K for t in types) else 8.5
    for name in names:
        t, n, _ = T[name]
        file += n * FILE_BITS[t] / 8
        walkrag += n * bits / 8


layers = sorted({int(m.group(1)) for k in T for m in [re.match(r"blk\.(\d+)\.", k)] if m})
for i in layers:
    b = f"blk.{i}."
    stack([b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight"])
    stack([b + "attn_output.weight"])
    stack([b + "ffn_gate.weight", b + "ffn_up.weight"])
    stack([b + "ffn_down.weight"])
out = "output.weight" if "output.weight" in T else "token_embd.weight"
t, n, _ = T[out]
file += n * FILE_BITS[t] / 8
walkrag += n * 8.5 / 8
print(f"per generated token: walkrag {walkrag / 1e9:.3f} GB, file widths {file / 1e9:.3f} GB")
