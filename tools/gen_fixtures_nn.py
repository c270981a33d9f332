#!/usr/bin/python3
"""gen_fixtures_nn.py — writes tests/fixtures/nn/<case>.bin: PyTorch's results
for the nn family (BatchNorm2d in training and eval, max/avg/adaptive pooling,
layer norm, embedding): forward values and gradients, which
tests/test_nn_fixtures.c recomputes with ctorch and compares (float64
tightly, float32 to ~1e-5 relative).

Inputs are drawn in float32 and stored as float64, so that the float32 and
float64 runs of the C test see exactly the same values; PyTorch computes in
float64. Each gradient is that of sum(out * proj) for a stored random proj
(the "grad_out"). Files use the format of tools/gen_fixtures_conv.py:

    magic  b"CTFX", u32 version (1), u32 count, then per tensor:
    u32 name length, name bytes (ASCII), u32 ndim, i64 dims[ndim],
    f64 values[prod(dims)]                      (all little-endian)

Every file holds a "params" vector describing the call (see each case).

Run with Debian's PyTorch:   /usr/bin/python3 tools/gen_fixtures_nn.py
(writes next to the tests; pass another directory as argv[1]).
"""
import os
import struct
import sys

import torch
import torch.nn.functional as F


def draw(shape, gen, lo=-1.0, hi=1.0):
    """float32 values (uniform in [lo, hi)) widened to float64."""
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo).double()


def write_case(path, tensors):
    with open(path, "wb") as f:
        f.write(b"CTFX" + struct.pack("<II", 1, len(tensors)))
        for name, t in tensors:
            t = torch.as_tensor(t).detach().double().contiguous()
            f.write(struct.pack("<I", len(name)) + name.encode("ascii"))
            f.write(struct.pack("<I", t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(struct.pack("<%dd" % t.numel(), *t.flatten().tolist()))


def leaf(t):
    return t.clone().requires_grad_(True)


def batch_norm(gen, training):
    """params: training, momentum, eps. BatchNorm2d(3) on [4, 3, 5, 6]."""
    x, w, b = draw((4, 3, 5, 6), gen, -2, 2), draw((3,), gen, 0.5, 1.5), draw((3,), gen)
    rm, rv = draw((3,), gen), draw((3,), gen, 0.5, 1.5)
    momentum, eps = 0.1, 1e-5
    bn = torch.nn.BatchNorm2d(3, eps=eps, momentum=momentum).double()
    with torch.no_grad():
        bn.weight.copy_(w)
        bn.bias.copy_(b)
        bn.running_mean.copy_(rm)
        bn.running_var.copy_(rv)
    bn.train(training)
    xl = leaf(x)
    out = bn(xl)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", [1.0 if training else 0.0, momentum, eps]), ("input", x), ("weight", w),
            ("bias", b), ("running_mean", rm), ("running_var", rv), ("out", out),
            ("running_mean_after", bn.running_mean), ("running_var_after", bn.running_var),
            ("grad_out", proj), ("grad_input", xl.grad), ("grad_weight", bn.weight.grad),
            ("grad_bias", bn.bias.grad)]


def max_pool(gen, shape, k, s, p, d, ceil_mode):
    """params: kernel h, w, stride h, w, padding h, w, dilation h, w, ceil_mode."""
    x = draw(shape, gen, -2, 2)
    xl = leaf(x)
    out, idx = F.max_pool2d(xl, k, s, p, d, ceil_mode, return_indices=True)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", [*k, *s, *p, *d, float(ceil_mode)]), ("input", x), ("out", out),
            ("indices", idx), ("grad_out", proj), ("grad_input", xl.grad)]


def avg_pool(gen, shape, k, s, p, ceil_mode, count_include_pad, divisor):
    """params: kernel h, w, stride h, w, padding h, w, ceil_mode,
    count_include_pad, divisor_override (0: none)."""
    x = draw(shape, gen, -2, 2)
    xl = leaf(x)
    out = F.avg_pool2d(xl, k, s, p, ceil_mode, count_include_pad, divisor or None)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", [*k, *s, *p, float(ceil_mode), float(count_include_pad), float(divisor)]),
            ("input", x), ("out", out), ("grad_out", proj), ("grad_input", xl.grad)]


def adaptive_pool(gen, shape, size):
    """params: output h, w."""
    x = draw(shape, gen, -2, 2)
    xl = leaf(x)
    out = F.adaptive_avg_pool2d(xl, size)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", list(size)), ("input", x), ("out", out), ("grad_out", proj),
            ("grad_input", xl.grad)]


def layer_norm(gen):
    """params: eps, then normalized_shape."""
    x, w, b = draw((3, 4, 10), gen, -2, 2), draw((4, 10), gen, 0.5, 1.5), draw((4, 10), gen)
    xl, wl, bl = leaf(x), leaf(w), leaf(b)
    out = F.layer_norm(xl, (4, 10), wl, bl, 1e-5)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", [1e-5, 4, 10]), ("input", x), ("weight", w), ("bias", b), ("out", out),
            ("grad_out", proj), ("grad_input", xl.grad), ("grad_weight", wl.grad),
            ("grad_bias", bl.grad)]


def embedding(gen):
    """params: padding_idx."""
    w = draw((10, 4), gen)
    idx = torch.tensor([[1, 2, 1, 7], [9, 0, 1, 2]])
    wl = leaf(w)
    out = F.embedding(idx, wl, padding_idx=1)
    proj = draw(out.shape, gen)
    (out * proj).sum().backward()
    return [("params", [1]), ("indices", idx), ("weight", w), ("out", out), ("grad_out", proj),
            ("grad_weight", wl.grad)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "fixtures", "nn")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20261124)
    cases = [
        ("batch_norm_train", batch_norm(gen, True)),
        ("batch_norm_eval", batch_norm(gen, False)),
        ("max_pool", max_pool(gen, (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), True)),
        ("max_pool_dilated", max_pool(gen, (2, 2, 10, 9), (3, 2), (1, 2), (1, 0), (2, 3), False)),
        ("avg_pool", avg_pool(gen, (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), True, False, 0)),
        ("avg_pool_pad", avg_pool(gen, (2, 2, 7, 10), (3, 2), (2, 3), (1, 1), True, True, 0)),
        ("avg_pool_divisor", avg_pool(gen, (1, 2, 6, 6), (2, 3), (1, 2), (0, 1), False, True, 5)),
        ("adaptive_pool", adaptive_pool(gen, (2, 3, 9, 7), (4, 5))),
        ("adaptive_pool_up", adaptive_pool(gen, (1, 2, 3, 5), (7, 4))),
        ("layer_norm", layer_norm(gen)),
        ("embedding", embedding(gen)),
    ]
    for name, tensors in cases:
        write_case(os.path.join(out_dir, name + ".bin"), tensors)
        print("wrote", name)


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    main()
