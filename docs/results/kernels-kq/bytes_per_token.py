"""Bytes a generated token reads from the weight matrices: the file's own widths (what llama.cpp
reads) against walkrag's one-token pass since this change (Q4_K kept at 148 bytes a super-block
of 256, Q6_K at the file's 210; the token embeddings only looked up; other types counted at the file's widths, which
walkrag does not read them at: the 1.5B has none, the 0.5B's Q5_0 and Q8_0 take the panels).
Usage: bytes_per_token.py MODEL.gguf"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels-avx2"))
import gguf_bytes  # noqa: E402

FILE_BITS = {"Q4_K": 4.5, "Q6_K": 6.5625, "Q5_0": 5.5, "Q8_0": 8.5}
KEPT_BITS = {"Q4_K": 148 * 8 / 256, "Q6_K": 6.5625}
file_bytes = kept = 0.0
for name, (ty, values, dims) in gguf_bytes.tensors(sys.argv[1]).items():
    if dims != 2 or name == "token_embd.weight":
        continue
    kind = gguf_bytes.NAMES.get(ty, ty)
    file_bytes += values * FILE_BITS[kind] / 8
    kept += values * KEPT_BITS.get(kind, FILE_BITS[kind]) / 8
print(f"file widths: {file_bytes / 1e9:.3f} GB a token; walkrag's one-token pass: {kept / 1e9:.3f} GB")
