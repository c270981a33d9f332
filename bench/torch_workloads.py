"""torch_workloads.py — PyTorch's figures for the reference workloads W0–W6
(../shared/bench/WORKLOADS.md), timed the way bench_ops and bench_train time
ctorch: medians of several repeats after a warm-up, with torch_anchor.py's
labels and units. Also names the OpenBLAS core that PyTorch's BLAS uses
(OpenBLAS may mis-detect a virtual CPU; OPENBLAS_CORETYPE overrides it).

Usage: python3 bench/torch_workloads.py [threads] [workload ids; default all]
ResNet-18 comes from torchvision (Debian: python3-torchvision).
"""
import ctypes
import re
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def median_time(fn, repeats, warm, per_repeat=1):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_repeat):
            fn()
        times.append((time.perf_counter() - start) / per_repeat)
    return statistics.median(times)


def math_libraries():
    """PyTorch's BLAS and oneDNN as its build reports them, and its CPU capability."""
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    dnnl = re.search(r"(?:MKL-DNN|oneDNN) v([\d.]+)", config)
    return (f"BLAS {blas.group(1) if blas else 'unknown'}, oneDNN {dnnl.group(1) if dnnl else 'absent'}, "
            f"CPU capability {torch.backends.cpu.get_cpu_capability()}")


def openblas_core():
    """The core of the libopenblas loaded into this process, if any."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libopenblas" in line}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return f"{lib.openblas_get_corename().decode()} ({path})"
        except (OSError, AttributeError):
            continue
    return "not loaded (PyTorch uses another BLAS)"


def w0():
    a, b = torch.ones(1), torch.ones(1)
    t = median_time(lambda: a + b, repeats=7, warm=1000, per_repeat=20000)
    print(f"W0 add 1-elem (us/op): {t * 1e6:.3f}", flush=True)


def train_step(model, opt, x, y, loss_fn):
    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def w1():
    m = nn.Linear(10, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(32, 10), torch.randn(32, 1)
    t = median_time(train_step(m, opt, x, y, F.mse_loss), repeats=7, warm=200, per_repeat=1000)
    print(f"W1 Linear(10,1) train step (us): {t * 1e6:.3f}", flush=True)


def w2():
    for n in (1024, 2048, 4096):
        A, B = torch.rand(n, n), torch.rand(n, n)
        t = median_time(lambda: A @ B, repeats=5 if n < 4096 else 3, warm=1)
        print(f"W2 matmul {n} (GFLOP/s): {2 * n**3 / t / 1e9:.3f}", flush=True)


def w3():
    def loop():
        for _ in range(100):
            torch.randn(1000, 1000).mm(torch.randn(1000, 1000))
    print(f"W3 100x randn+mm 1000 (s): {median_time(loop, repeats=3, warm=1):.3f}", flush=True)


class FashionCNN(nn.Module):
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


def w4():
    net = FashionCNN()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,))
    t = median_time(train_step(net, opt, x, y, F.cross_entropy), repeats=5, warm=2)
    print(f"W4 FMNIST CNN train (img/s): {128 / t:.3f}", flush=True)


def resnet18_batch():
    import torchvision
    return (torchvision.models.resnet18(num_classes=10),
            torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,)))


def w5():
    r, x, y = resnet18_batch()
    opt = torch.optim.SGD(r.parameters(), lr=0.01, momentum=0.9)
    t = median_time(train_step(r, opt, x, y, F.cross_entropy), repeats=3, warm=1)
    print(f"W5 ResNet18 CIFAR train (img/s): {64 / t:.3f}", flush=True)


def w6():
    r, x, _ = resnet18_batch()
    r.eval()
    with torch.no_grad():
        t = median_time(lambda: r(x), repeats=5, warm=1)
    print(f"W6 ResNet18 CIFAR infer (img/s): {64 / t:.3f}", flush=True)


WORKLOADS = {"W0": w0, "W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6}


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    chosen = sys.argv[2:] or list(WORKLOADS)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(f"# PyTorch {torch.__version__}, {threads} threads")
    print(f"# {math_libraries()}")
    print(f"# OpenBLAS core: {openblas_core()}", flush=True)
    for wid in chosen:
        WORKLOADS[wid]()


if __name__ == "__main__":
    main()
