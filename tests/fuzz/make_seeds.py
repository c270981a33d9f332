#!/usr/bin/env python3
"""make_seeds.py — writes the small seed inputs of fuzz_idx and fuzz_cifar
into tests/fuzz/seeds (the safetensors seeds there come from
tools/gen_safetensors_fixture.py). Each seed is a valid input that reaches a
different part of its reader; libFuzzer mutates from there.

    fuzz_idx:   *.idx (plain), *.idx.gz (gzip), *.zidx ('Z' + IDX bytes,
                which the target gzips itself so mutations pass the CRC)
    fuzz_cifar: *.cifar (one selector byte + 3073-byte records)

Usage: python3 tests/fuzz/make_seeds.py
"""
import gzip
import os
import struct

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")

# IDX type code -> (struct format, sample values)
TYPES = {
    0x08: ("B", [0, 1, 127, 255]),
    0x09: ("b", [-128, -1, 0, 127]),
    0x0B: ("h", [-32768, -1, 0, 32767]),
    0x0C: ("i", [-(2**31), -1, 0, 2**31 - 1]),
    0x0D: ("f", [0.0, -1.5, 3.25, float("inf")]),
    0x0E: ("d", [0.0, -1.5, 1e300, float("nan")]),
}


def idx(type_code, dims):
    fmt, values = TYPES[type_code]
    n = 1
    for d in dims:
        n *= d
    data = [values[i % len(values)] for i in range(n)]
    head = bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    return head + struct.pack(">%d%s" % (n, fmt), *data)


def write(name, data):
    with open(os.path.join(SEEDS, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(SEEDS, exist_ok=True)
    write("labels_u8.idx", idx(0x08, [6]))
    write("images_u8.idx", idx(0x08, [2, 3, 3]))
    write("i8_2d.idx", idx(0x09, [2, 2]))
    write("i16.idx", idx(0x0B, [4]))
    write("i32_2d.idx", idx(0x0C, [1, 4]))
    write("f32.idx", idx(0x0D, [4]))
    write("f64_4d.idx", idx(0x0E, [1, 2, 1, 2]))
    write("empty.idx", idx(0x08, [0, 28, 28]))
    write("eight_dims.idx", idx(0x08, [1, 1, 1, 1, 1, 1, 2, 1]))
    write("images_u8.idx.gz", gzip.compress(idx(0x08, [2, 3, 3]), mtime=0))
    write("f32.idx.gz", gzip.compress(idx(0x0D, [4]), mtime=0))
    write("labels_u8.zidx", b"Z" + idx(0x08, [6]))
    write("i16_2d.zidx", b"Z" + idx(0x0B, [2, 3]))
    record = lambda label, base: bytes([label]) + bytes((base + i) % 256 for i in range(3072))
    write("one_record.cifar", b"\x00" + record(3, 0))
    write("two_records.cifar", b"\x02" + record(0, 7) + record(9, 200))
    write("bad_label.cifar", b"\x00" + record(10, 1))


if __name__ == "__main__":
    main()
