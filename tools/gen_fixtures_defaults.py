#!/usr/bin/python3
"""gen_fixtures_defaults.py — writes tests/fixtures/loss/defaults_loss.bin and
defaults_nn.bin: PyTorch's results for calls that leave options out, so that
tests/test_loss_modules.c can check that ctorch's zero-initialised options
(ct_loss_opts, ct_pool_opts, ct_norm_opts) mean PyTorch's defaults, and that
the one default C cannot spell as zero is handled (ignore_index -100, and
ignore_index=0 meaning class 0).

Inputs are chosen so that each default matters: an nll target holds -100
(ignored only under the default), a cross-entropy target holds class 0
(ignored with ignore_index=0), the average pool has padding (count_include_pad
changes the border), batch norm updates running statistics (momentum) and
normalises with a tiny running variance (eps), layer norm's rows vary by
about 1e-3 (eps).

Format: that of tools/gen_fixtures_loss.py (read by tests/loss_fixture.h).
Run with PyTorch:   python3 tools/gen_fixtures_defaults.py [out_dir]
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures_loss import draw, f64, write_case  # noqa: E402


def with_grad(fn, x, *args):
    """fn(x, *args) and the gradient of its (0-dim) result w.r.t. x."""
    xi = x.clone().requires_grad_()
    out = fn(xi, *args)
    out.backward()
    return out.detach(), xi.grad


def loss_case(gen):
    x = F.log_softmax(draw((5, 4), gen, -3.0, 3.0), dim=1)
    t = torch.tensor([1, -100, 3, 0, 2])
    nll, nll_grad = with_grad(F.nll_loss, x, t)  # ignore_index=-100, reduction='mean'
    logits = draw((6, 5), gen, -3.0, 3.0)
    t0 = torch.tensor([0, 2, 0, 4, 1, 3])
    ce0, ce0_grad = with_grad(lambda a, b: F.cross_entropy(a, b, ignore_index=0), logits, t0)
    z = draw((3, 4), gen, -4.0, 4.0)
    y = draw((3, 4), gen, 0.0, 1.0)
    bce, bce_grad = with_grad(F.binary_cross_entropy_with_logits, z, y)
    return ("defaults_loss", [
        ("nll_input", x), ("nll_target", t.double()), ("nll_loss", nll), ("nll_grad", nll_grad),
        ("ce0_input", logits), ("ce0_target", t0.double()), ("ce0_loss", ce0), ("ce0_grad", ce0_grad),
        ("bce_input", z), ("bce_target", y), ("bce_loss", bce), ("bce_grad", bce_grad),
    ])


def nn_case(gen):
    x = draw((1, 2, 7, 6), gen, -2.0, 2.0)
    maxpool = F.max_pool2d(x, 3)  # stride = kernel_size
    avgpool = F.avg_pool2d(x, 3, stride=2, padding=1)  # count_include_pad=True
    avg_excl = F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)
    b = draw((4, 3), gen, -2.0, 2.0)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bn = F.batch_norm(b, rm, rv, training=True)  # momentum=0.1, eps=1e-5
    rm0, rv0 = f64([0.1, -0.2, 0.3]), f64([1e-4, 1e-3, 2.0])
    bn_eval = F.batch_norm(b, rm0, rv0)  # training=False, eps=1e-5
    ln_x = 1.0 + 1e-3 * draw((2, 5), gen)
    ln = F.layer_norm(ln_x, (5,))  # eps=1e-5
    return ("defaults_nn", [
        ("pool_input", x), ("maxpool_out", maxpool), ("avgpool_out", avgpool),
        ("avgpool_excl", avg_excl), ("bn_input", b), ("bn_out", bn), ("bn_running_mean", rm),
        ("bn_running_var", rv), ("bn_rm0", rm0), ("bn_rv0", rv0), ("bn_eval_out", bn_eval),
        ("ln_input", ln_x), ("ln_out", ln),
    ])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "fixtures", "loss")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20260714)
    for name, tensors in (loss_case(gen), nn_case(gen)):
        write_case(os.path.join(out_dir, name + ".bin"), tensors)
        print("wrote", name, len(tensors), "tensors")


if __name__ == "__main__":
    main()
