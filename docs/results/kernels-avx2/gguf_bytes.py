"""The weights of a GGUF file's matrices by block type (`tensors` reads its tensor table).
Usage: gguf_bytes.py MODEL.gguf"""
import struct
import sys

# Bytes of one value of each metadata scalar type.
SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
NAMES = {0: "F32", 1: "F16", 3: "Q4_1", 6: "Q5_0", 8: "Q8_0", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K"}


def tensors(path):
    """Each tensor's name -> (ggml type, number of values, number of dimensions)."""
    f = open(path, "rb")

    def read(fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

    def string():
        (n,) = read("Q")
        return f.read(n).decode("utf-8", "replace")

    def skip(t):
        if t == 8:
            string()
        elif t == 9:
            (item,) = read("I")
            (n,) = read("Q")
            if item == 8:
                for _ in range(n):
                    string()
            else:
                f.read(SCALAR_BYTES[item] * n)
        else:
            f.read(SCALAR_BYTES[t])

    read("4sI")
    count, metadata = read("QQ")
    for _ in range(metadata):
        string()
        (t,) = read("I")
        skip(t)
    out = {}
    for _ in range(count):
        name = string()
        (dims,) = read("I")
        shape = read("Q" * dims)
        (t,) = read("I")
        read("Q")
        n = 1
        for d in shape:
            n *= d
        out[name] = (t, n, dims)
    return out


if __name__ == "__main__":
    by_type = {}
    for name, (t, n, dims) in tensors(sys.argv[1]).items():
        if dims < 2:
            continue
        entry = by_type.setdefault(NAMES.get(t, t), [0, set()])
        entry[0] += n
        entry[1].add(name.split(".")[-2] if name.startswith("blk") else name)
    for kind, (n, names) in by_type.items():
        print(kind, f"{n / 1e6:.1f} M weights", sorted(names))
