#!/usr/bin/python3
"""gen_fixtures_loss.py — writes tests/fixtures/loss/<case>.bin: PyTorch's
losses (value and gradients) and optimizer steps for a set of cases, which
tests/test_loss.c and tests/test_optim_kernels.c recompute with ctorch and
compare (float64 tightly, float32 to ~1e-5 relative).

Inputs are drawn in float32 and stored as float64, so that float32 and
float64 runs of the C tests see the same values; PyTorch computes in
float64. Class targets are stored as float64 integers. Each file holds
named float64 tensors (the format of tests/fixtures/conv/):

    magic  b"CTFX", u32 version (1), u32 count, then per tensor:
    u32 name length, name bytes (ASCII), u32 ndim, i64 dims[ndim],
    f64 values[prod(dims)]                      (all little-endian)

Loss cases hold "params" (per case, documented below), the inputs, and for
each reduction r in (mean, sum, none): "loss_<r>" and "grad_<r>" (the input
gradient; for none with the random "grad_out"), plus "grad_target_<r>"
where the target has a gradient. Optimizer cases hold "params" (the
hyper-parameters), "param0", "grad<k>" for each step k = 1.., and the
parameter and state after each step ("param<k>", "buf<k>" / "exp_avg<k>",
"exp_avg_sq<k>", "max_exp_avg_sq<k>").

Run with Debian's PyTorch:   /usr/bin/python3 tools/gen_fixtures_loss.py
(writes next to the tests; pass another directory as argv[1]).
"""
import os
import struct
import sys

import torch
import torch.nn.functional as F

REDUCTIONS = ("mean", "sum", "none")


def draw(shape, gen, lo=-1.0, hi=1.0):
    """float32 values uniform in [lo, hi), widened to float64."""
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo).double()


def f64(values):
    """Exact float64 values (torch.tensor would make a list of floats float32)."""
    return torch.tensor(values, dtype=torch.float64)


def write_case(path, tensors):
    with open(path, "wb") as f:
        f.write(b"CTFX" + struct.pack("<II", 1, len(tensors)))
        for name, t in tensors:
            t = torch.as_tensor(t).detach().double().contiguous()
            f.write(struct.pack("<I", len(name)) + name.encode("ascii"))
            f.write(struct.pack("<I", t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(struct.pack("<%dd" % t.numel(), *t.flatten().tolist()))


def loss_and_grads(fn, x, target, gen, target_grad):
    """[(name, tensor)] of every reduction's loss and gradients."""
    out = []
    for r in REDUCTIONS:
        xi = x.clone().requires_grad_()
        ti = target.clone().requires_grad_() if target_grad else target
        loss = fn(xi, ti, r)
        g = draw(tuple(loss.shape), gen) if r == "none" else f64(1.0)
        loss.backward(g)
        if r == "none":
            out.append(("grad_out", g))
        out += [("loss_" + r, loss), ("grad_" + r, xi.grad)]
        if target_grad:
            out.append(("grad_target_" + r, ti.grad))
    return out


def class_cases(gen):
    """params: ignore_index, label_smoothing, has_weight (1/0), log_input (nll: 1)."""
    cases = []
    # name, input shape, ignore_index, smoothing, weighted, nll
    for name, shape, ignore, smooth, weighted, nll in [
        ("ce_weight_ignore_smooth", (6, 5), 2, 0.1, True, False),
        ("ce_default", (4, 7), -100, 0.0, False, False),
        ("ce_spatial", (2, 4, 3, 3), 1, 0.2, True, False),
        ("ce_unbatched", (6,), -100, 0.3, True, False),
        ("nll_weight_ignore", (5, 4), 3, 0.0, True, True),
    ]:
        x = draw(shape, gen, -3.0, 3.0)
        classes = shape[0] if len(shape) == 1 else shape[1]
        tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
        target = torch.randint(0, classes, tshape, generator=gen)
        if ignore >= 0 and target.numel() > 2:
            target.view(-1)[1] = ignore  # the ignored class does occur
        weight = draw((classes,), gen, 0.2, 2.0) if weighted else None
        if nll:
            x = F.log_softmax(x, dim=0 if len(shape) == 1 else 1)
            fn = lambda xi, ti, r: F.nll_loss(xi, ti, weight=weight, ignore_index=ignore, reduction=r)
        else:
            fn = lambda xi, ti, r: F.cross_entropy(xi, ti, weight=weight, ignore_index=ignore,
                                                   reduction=r, label_smoothing=smooth)
        params = f64([ignore, smooth, 1.0 if weighted else 0.0, 1.0 if nll else 0.0])
        tensors = [("params", params), ("input", x), ("target", target.double())]
        if weighted:
            tensors.append(("weight", weight))
        tensors += loss_and_grads(fn, x, target, gen, False)
        cases.append((name, tensors))
    return cases


def prob_case(gen):
    """Probability targets; params: label_smoothing, has_weight."""
    x = draw((4, 5), gen, -3.0, 3.0)
    target = torch.softmax(draw((4, 5), gen, -2.0, 2.0), dim=1)
    weight = draw((5,), gen, 0.2, 2.0)
    fn = lambda xi, ti, r: F.cross_entropy(xi, ti, weight=weight, reduction=r, label_smoothing=0.15)
    tensors = [("params", f64([0.15, 1.0])), ("input", x), ("target", target),
               ("weight", weight)]
    return ("ce_prob", tensors + loss_and_grads(fn, x, target, gen, True))


def bce_case(gen):
    """params: has_weight, has_pos_weight."""
    x = draw((3, 4), gen, -4.0, 4.0)
    target = draw((3, 4), gen, 0.0, 1.0)
    weight = draw((4,), gen, 0.2, 2.0)
    pos_weight = draw((4,), gen, 0.5, 3.0)
    fn = lambda xi, ti, r: F.binary_cross_entropy_with_logits(xi, ti, weight=weight,
                                                              pos_weight=pos_weight, reduction=r)
    tensors = [("params", f64([1.0, 1.0])), ("input", x), ("target", target),
               ("weight", weight), ("pos_weight", pos_weight)]
    return ("bce_logits", tensors + loss_and_grads(fn, x, target, gen, True))


def mse_case(gen):
    """A target that broadcasts ([4] against [3, 4])."""
    x = draw((3, 4), gen, -2.0, 2.0)
    target = draw((4,), gen, -2.0, 2.0)
    fn = lambda xi, ti, r: F.mse_loss(xi, ti.expand_as(xi), reduction=r)
    tensors = [("params", f64([0.0])), ("input", x), ("target", target)]
    return ("mse_broadcast", tensors + loss_and_grads(fn, x, target, gen, True))


def sgd_case(gen, name, steps, **kw):
    """params: lr, momentum, dampening, weight_decay, nesterov, maximize."""
    p = draw((7,), gen).requires_grad_()
    opt = torch.optim.SGD([p], foreach=False, **kw)
    tensors = [("params", f64([kw["lr"], kw["momentum"], kw["dampening"],
                                        kw["weight_decay"], float(kw["nesterov"]),
                                        float(kw["maximize"])])),
               ("param0", p.detach().clone())]
    for k in range(1, steps + 1):
        p.grad = draw((7,), gen)
        tensors.append(("grad%d" % k, p.grad.clone()))
        opt.step()
        tensors += [("param%d" % k, p.detach().clone()),
                    ("buf%d" % k, opt.state[p]["momentum_buffer"].clone())]
    return (name, tensors)


def adam_case(gen, name, cls, steps, **kw):
    """params: lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled."""
    p = draw((7,), gen).requires_grad_()
    opt = cls([p], foreach=False, **kw)
    decoupled = 1.0 if cls is torch.optim.AdamW else 0.0
    tensors = [("params", f64([kw["lr"], kw["betas"][0], kw["betas"][1], kw["eps"],
                                        kw["weight_decay"], float(kw["amsgrad"]),
                                        float(kw["maximize"]), decoupled])),
               ("param0", p.detach().clone())]
    for k in range(1, steps + 1):
        p.grad = draw((7,), gen)
        tensors.append(("grad%d" % k, p.grad.clone()))
        opt.step()
        st = opt.state[p]
        tensors += [("param%d" % k, p.detach().clone()), ("exp_avg%d" % k, st["exp_avg"].clone()),
                    ("exp_avg_sq%d" % k, st["exp_avg_sq"].clone())]
        if kw["amsgrad"]:
            tensors.append(("max_exp_avg_sq%d" % k, st["max_exp_avg_sq"].clone()))
    return (name, tensors)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "fixtures", "loss")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20260705)
    cases = class_cases(gen) + [prob_case(gen), bce_case(gen), mse_case(gen)]
    cases += [
        sgd_case(gen, "sgd_momentum", 2, lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01,
                 nesterov=True, maximize=False),
        sgd_case(gen, "sgd_dampening_maximize", 3, lr=0.05, momentum=0.8, dampening=0.3,
                 weight_decay=0.0, nesterov=False, maximize=True),
        adam_case(gen, "adamw_amsgrad", torch.optim.AdamW, 3, lr=1e-2, betas=(0.9, 0.99), eps=1e-8,
                  weight_decay=0.05, amsgrad=True, maximize=False),
        adam_case(gen, "adam_wd_maximize", torch.optim.Adam, 2, lr=3e-3, betas=(0.8, 0.95),
                  eps=1e-6, weight_decay=0.1, amsgrad=False, maximize=True),
    ]
    for name, tensors in cases:
        if len(tensors) > 24:
            raise SystemExit("%s: too many tensors for the C reader" % name)
        write_case(os.path.join(out_dir, name + ".bin"), tensors)
        print("wrote", name, len(tensors), "tensors")


if __name__ == "__main__":
    main()
