#!/usr/bin/python3
"""gen_parity_fixtures.py — writes the end-to-end parity fixtures that
tests/test_parity.c recomputes with ctorch and compares against PyTorch:

    tests/fixtures/parity/fmnist_cnn_sgd.safetensors
    tests/fixtures/parity/fmnist_cnn_adamw.safetensors
        the Fashion-MNIST CNN of WORKLOADS.md (children c1, c2, f1, f2):
        its initial weights under their state_dict names, an input "x"
        [8,1,28,28], int64 targets "y" [8], the cross-entropy "loss" (0-dim),
        every parameter's gradient "grad.<name>" and the parameters after one
        optimizer step "after.<name>" (SGD lr 0.01 momentum 0.9; AdamW lr 1e-3
        with the default betas, eps and weight_decay 0.01). The input is
        redrawn until every positive max-pool window's winner leads by more
        than 1e-5 (see pool_margin).
    tests/fixtures/parity/resnet18_logits.safetensors
        torchvision's resnet18(num_classes=10) state_dict after the default
        init, a few training-mode forwards (nontrivial running stats) and a
        small random perturbation of the BatchNorm affine parameters (so a
        kernel that ignored them would be caught), every floating tensor
        rounded to and stored as bfloat16; an input "input" [2,3,32,32] and
        the eval-mode float32 "logits" computed from the rounded weights.

Everything is float32 (default dtype) except the stored ResNet weights. The
files are written by the safetensors writer of gen_safetensors_fixture.py.
ResNet-18 comes from torchvision when installed, otherwise from the
plain-torch copy below, which has torchvision's module names, layout and
initialisation.

Run with Debian's PyTorch:   /usr/bin/python3 tools/gen_parity_fixtures.py [OUTDIR]
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_safetensors_fixture import hand_serialize  # noqa: E402

METADATA = {"format": "pt", "generator": "tools/gen_parity_fixtures.py, PyTorch " + torch.__version__}


class Net(nn.Module):
    """The Fashion-MNIST CNN, as torch_anchor.py's Net."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.f1 = nn.Linear(64 * 5 * 5, 128)
        self.f2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


# ---- ResNet-18 in plain torch with torchvision's names (fallback) -------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        h = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(h)) + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, cin = (64, 128, 256, 512), 64
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, "layer%d" % (i + 1), nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes):
    try:
        import torchvision
        return torchvision.models.resnet18(num_classes=num_classes), "torchvision " + torchvision.__version__
    except ImportError:
        return ResNet18(num_classes), "plain-torch copy of torchvision's resnet18"


# ---- fixtures -------------------------------------------------------------------------------

def pool_margin(t):
    """The smallest gap between the two largest values of a positive 2x2
    max-pool window of t [N, C, H, W]. A near-tie lets a float32 rounding
    difference move the window's gradient to the other element, which no
    tolerance can absorb, so fixtures are drawn with a clear winner."""
    h, w = t.shape[2] // 2 * 2, t.shape[3] // 2 * 2
    win = t[:, :, :h, :w].reshape(t.shape[0], t.shape[1], h // 2, 2, w // 2, 2)
    top = win.permute(0, 1, 2, 4, 3, 5).flatten(-2).topk(2, -1).values
    gaps = (top[..., 0] - top[..., 1])[top[..., 0] > 0]
    return gaps.min().item() if gaps.numel() else float("inf")


def cnn_margin(net, x):
    with torch.no_grad():
        h1 = F.relu(net.c1(x))
        h2 = F.relu(net.c2(F.max_pool2d(h1, 2)))
    return min(pool_margin(h1), pool_margin(h2))


def cnn_fixture(make_optimizer, seed):
    torch.manual_seed(seed)
    net = Net()
    for tries in range(10000):
        x = torch.randn(8, 1, 28, 28)
        if cnn_margin(net, x) > 1e-5:
            break
    else:
        sys.exit("no input without max-pool near-ties found")
    print("input accepted after %d draws" % (tries + 1))
    y = torch.randint(0, 10, (8,), dtype=torch.int64)
    out = {name: p.detach().clone() for name, p in net.named_parameters()}
    out["x"], out["y"] = x, y
    opt = make_optimizer(net.parameters())
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    out["loss"] = loss.detach().clone()
    for name, p in net.named_parameters():
        out["grad." + name] = p.grad.detach().clone()
        out["after." + name] = p.detach().clone()
    return out


def resnet_fixture(seed):
    torch.manual_seed(seed)
    net, source = resnet18(10)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
        net.train()
        for _ in range(3):
            net(torch.randn(4, 3, 32, 32) * 1.5 + 0.2)
    sd = {k: v.detach().clone() for k, v in net.state_dict().items()}
    stored = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in sd.items()}
    net.load_state_dict({k: (v.float() if v.is_floating_point() else v) for k, v in stored.items()})
    net.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        logits = net(x)
    stored["input"], stored["logits"] = x, logits.clone()
    return stored, source


def write(path, tensors):
    blob = hand_serialize(tensors, METADATA)
    with open(path, "wb") as f:
        f.write(blob)
    print("wrote %s (%d tensors, %d bytes)" % (path, len(tensors), len(blob)))


def main():
    torch.set_default_dtype(torch.float32)
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.normpath(os.path.join(here, "..", "tests", "fixtures", "parity"))
    outdir = sys.argv[1] if len(sys.argv) > 1 else default
    os.makedirs(outdir, exist_ok=True)
    write(os.path.join(outdir, "fmnist_cnn_sgd.safetensors"),
          cnn_fixture(lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9), 1234))
    write(os.path.join(outdir, "fmnist_cnn_adamw.safetensors"),
          cnn_fixture(lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01), 4321))
    tensors, source = resnet_fixture(2024)
    print("resnet18 from", source)
    write(os.path.join(outdir, "resnet18_logits.safetensors"), tensors)


if __name__ == "__main__":
    main()
