#!/usr/bin/python3
"""gen_fixtures_conv.py — writes tests/fixtures/conv/<case>.bin: PyTorch's
conv2d forward and gradients for a set of cases, which tests/test_conv.c
recomputes with ctorch and compares (float64 tightly, float32 to ~1e-5).

Inputs are drawn in float32 and stored as float64, so that the float32 and
float64 runs of the C test see exactly the same values; PyTorch computes in
float64. Each file holds named float64 tensors:

    magic  b"CTFX", u32 version (1), u32 count, then per tensor:
    u32 name length, name bytes (ASCII), u32 ndim, i64 dims[ndim],
    f64 values[prod(dims)]                      (all little-endian)

Tensors: params (stride h, w, padding h, w, dilation h, w, groups), input,
weight, bias (absent when the case has none), out, grad_out, grad_input,
grad_weight, grad_bias (always: the sum of grad_out per output channel).

Run with Debian's PyTorch:   /usr/bin/python3 tools/gen_fixtures_conv.py
(writes next to the tests; pass another directory as argv[1]).
"""
import os
import struct
import sys

import torch
import torch.nn.functional as F

# name, input shape, weight shape, bias, stride, padding, dilation, groups
CASES = [
    ("basic", (2, 3, 7, 6), (4, 3, 3, 3), True, (1, 1), (1, 1), (1, 1), 1),
    ("strided_groups", (1, 4, 9, 8), (6, 2, 3, 2), True, (2, 3), (1, 0), (1, 2), 2),
    ("dilated_nobias", (3, 2, 8, 8), (2, 2, 2, 3), False, (1, 1), (2, 1), (2, 1), 1),
    ("depthwise", (2, 4, 6, 7), (4, 1, 3, 3), True, (1, 2), (1, 1), (1, 1), 4),
    ("pointwise", (2, 6, 5, 4), (3, 6, 1, 1), True, (1, 1), (0, 0), (1, 1), 1),
    ("pointwise_groups", (2, 6, 5, 4), (4, 3, 1, 1), False, (1, 1), (0, 0), (1, 1), 2),
    ("unbatched", (3, 7, 7), (2, 3, 3, 3), True, (2, 2), (1, 1), (1, 1), 1),
    ("wide_kernel", (2, 2, 5, 11), (3, 2, 5, 4), True, (3, 1), (2, 3), (1, 3), 1),
]


def draw(shape, gen):
    """float32 values (uniform in [-1, 1)) widened to float64."""
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1).double()


def write_case(path, tensors):
    with open(path, "wb") as f:
        f.write(b"CTFX" + struct.pack("<II", 1, len(tensors)))
        for name, t in tensors:
            t = t.detach().double().contiguous()
            f.write(struct.pack("<I", len(name)) + name.encode("ascii"))
            f.write(struct.pack("<I", t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(struct.pack("<%dd" % t.numel(), *t.flatten().tolist()))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "fixtures", "conv")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20260704)
    for name, ishape, wshape, has_bias, stride, padding, dilation, groups in CASES:
        x = draw(ishape, gen).requires_grad_()
        w = draw(wshape, gen).requires_grad_()
        b = draw((wshape[0],), gen).requires_grad_() if has_bias else None
        out = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        gy = draw(tuple(out.shape), gen)
        out.backward(gy)
        batch_dims = [0, 2, 3] if gy.dim() == 4 else [1, 2]
        params = torch.tensor(list(stride) + list(padding) + list(dilation) + [groups],
                              dtype=torch.float64)
        tensors = [("params", params), ("input", x), ("weight", w)]
        if has_bias:
            tensors.append(("bias", b))
        tensors += [("out", out), ("grad_out", gy), ("grad_input", x.grad),
                    ("grad_weight", w.grad), ("grad_bias", gy.sum(dim=batch_dims))]
        write_case(os.path.join(out_dir, name + ".bin"), tensors)
        print("wrote", name, tuple(out.shape))


if __name__ == "__main__":
    main()
