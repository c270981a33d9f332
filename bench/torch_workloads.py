"""torch_workloads.py — PyTorch's figures for the reference workloads W0–W6
(../shared/bench/WORKLOADS.md) and their bfloat16 variants (issue 16), timed
the way bench_ops and bench_train time ctorch: medians of several repeats
after a warm-up, with torch_anchor.py's labels and units, so that bench/run.sh
can set both side by side. Also names the OpenBLAS core that PyTorch's BLAS
uses (OpenBLAS may mis-detect a virtual CPU; OPENBLAS_CORETYPE overrides it).

Usage: python3 bench/torch_workloads.py [threads] [workload ids] [--device D]
  No ids: W0–W6. Named only: W2-bf16 (bfloat16 matmul at 1024 and 2048, and
  4096 on a device or a CPU with avx512_bf16/amx_bf16, as bench_ops;
  CT_BENCH_BF16_MAX_N=1024 lowers the largest size), W4-bf16, W5-bf16,
  W6-bf16 (W4–W6 with forward and loss under
  torch.autocast(device_type, dtype=torch.bfloat16), parameters float32, as
  bench_train), W5-mem (one W5 step's peak allocated memory, float32 and
  bf16: only on a CUDA device, where PyTorch's allocator keeps statistics).
ResNet-18 comes from torchvision (Debian: python3-torchvision); without it,
from the same layout written out below.

On a device (--device cuda:0) the tensors and models live there, each timed
repeat ends with torch.cuda.synchronize(), and the repeats take more steps
(GPU_PLANS), exactly as bench_ops and bench_train do with --device.
"""
import ctypes
import os
import re
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


DEVICE = torch.device("cpu")

# (per_repeat, repeats, warm) on a GPU, as bench_train.c's *_GPU_PLAN and
# bench_ops.c's GPU_MATMULS.
GPU_PLANS = {"W1": (200, 7, 50), "W2": (10, None, 1), "W3": (1, 3, 1), "W4": (20, 5, 10),
             "W5": (10, 5, 5), "W6": (10, 5, 5)}


def plan(wid, per_repeat, repeats, warm):
    """The CPU plan given, or the GPU plan of wid on a device (None: keep)."""
    if DEVICE.type == "cpu" or wid not in GPU_PLANS:
        return dict(per_repeat=per_repeat, repeats=repeats, warm=warm)
    p, r, w = GPU_PLANS[wid]
    return dict(per_repeat=p, repeats=r or repeats, warm=w)


def sync():
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


def median_time(fn, repeats, warm, per_repeat=1):
    for _ in range(warm):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_repeat):
            fn()
        sync()
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
    a, b = torch.ones(1, device=DEVICE), torch.ones(1, device=DEVICE)
    t = median_time(lambda: a + b, repeats=7, warm=1000, per_repeat=20000)
    print(f"W0 add 1-elem (us/op): {t * 1e6:.3f}", flush=True)


def train_step(model, opt, x, y, loss_fn, autocast=False):
    """PyTorch's loop body; with autocast, forward and loss run in a bfloat16
    autocast region (one per step), backward and the step outside it."""
    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def autocast_step():
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return autocast_step if autocast else step


def w1():
    m = nn.Linear(10, 1).to(DEVICE)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(32, 10, device=DEVICE), torch.randn(32, 1, device=DEVICE)
    t = median_time(train_step(m, opt, x, y, F.mse_loss), **plan("W1", 1000, 7, 200))
    print(f"W1 Linear(10,1) train step (us): {t * 1e6:.3f}", flush=True)


def w2():
    for n in (1024, 2048, 4096):
        A, B = torch.rand(n, n, device=DEVICE), torch.rand(n, n, device=DEVICE)
        t = median_time(lambda: A @ B, **plan("W2", 1, 5 if n < 4096 else 3, 1))
        print(f"W2 matmul {n} (GFLOP/s): {2 * n**3 / t / 1e9:.3f}", flush=True)


def cpu_has_flag(flag):
    """Whether /proc/cpuinfo's flags list flag (every CPU lists the same)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return flag in line.split()
    except OSError:
        pass
    return False


def bf16_max_n():
    """bench_common.h's bench_bf16_max_n: 4096 on a device or with bfloat16
    instructions, else 2048 (PyTorch's bfloat16 matmul runs at ~1 GFLOP/s
    without them); CT_BENCH_BF16_MAX_N lowers it."""
    native = DEVICE.type != "cpu" or cpu_has_flag("avx512_bf16") or cpu_has_flag("amx_bf16")
    n = 4096 if native else 2048
    try:
        env = int(os.environ.get("CT_BENCH_BF16_MAX_N", "0"))
    except ValueError:
        env = 0
    return env if 0 < env < n else n


def w2_bf16():
    max_n = bf16_max_n()
    if max_n < 4096:
        why = ("CT_BENCH_BF16_MAX_N" if os.environ.get("CT_BENCH_BF16_MAX_N")
               else "no avx512_bf16/amx_bf16 in /proc/cpuinfo")
        print(f"# W2-bf16: sizes up to {max_n} ({why})", flush=True)
    for n in (1024, 2048, 4096):
        if n > max_n:
            break
        A = torch.rand(n, n, device=DEVICE, dtype=torch.bfloat16)
        B = torch.rand(n, n, device=DEVICE, dtype=torch.bfloat16)
        t = median_time(lambda: A @ B, **plan("W2", 1, 3, 1))
        print(f"W2-bf16 matmul {n} (GFLOP/s): {2 * n**3 / t / 1e9:.3f}", flush=True)


def w3():
    def loop():
        for _ in range(100):
            torch.randn(1000, 1000, device=DEVICE).mm(torch.randn(1000, 1000, device=DEVICE))
    print(f"W3 100x randn+mm 1000 (s): {median_time(loop, **plan('W3', 1, 3, 1)):.3f}", flush=True)


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


def w4(autocast=False):
    net = FashionCNN().to(DEVICE)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(128, 1, 28, 28, device=DEVICE), torch.randint(0, 10, (128,), device=DEVICE)
    t = median_time(train_step(net, opt, x, y, F.cross_entropy, autocast), **plan("W4", 1, 5, 2))
    print(f"W4{'-bf16' if autocast else ''} FMNIST CNN train (img/s): {128 / t:.3f}", flush=True)


class BasicBlock(nn.Module):
    """torchvision's BasicBlock, for machines without torchvision."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """torchvision.models.resnet18's layout (7x7 stem, max pool, 4 stages of 2 blocks)."""

    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        stages, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            stages.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18_batch():
    try:
        import torchvision
        model = torchvision.models.resnet18(num_classes=10)
    except ImportError:
        model = ResNet18(num_classes=10)
    return (model.to(DEVICE), torch.randn(64, 3, 32, 32, device=DEVICE),
            torch.randint(0, 10, (64,), device=DEVICE))


def w5(autocast=False):
    r, x, y = resnet18_batch()
    opt = torch.optim.SGD(r.parameters(), lr=0.01, momentum=0.9)
    t = median_time(train_step(r, opt, x, y, F.cross_entropy, autocast), **plan("W5", 1, 3, 1))
    print(f"W5{'-bf16' if autocast else ''} ResNet18 CIFAR train (img/s): {64 / t:.3f}", flush=True)


def w6(autocast=False):
    r, x, _ = resnet18_batch()
    r.eval()

    def infer():
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
            r(x)
    with torch.no_grad():
        t = median_time(infer if autocast else (lambda: r(x)), **plan("W6", 1, 5, 1))
    print(f"W6{'-bf16' if autocast else ''} ResNet18 CIFAR infer (img/s): {64 / t:.3f}", flush=True)


def w5_mem():
    """bench_train's W5-mem: peak allocated bytes of one W5 step after a
    warm-up step and reset_peak_memory_stats. PyTorch's CPU allocator keeps
    no statistics, so there is a figure on a CUDA device only."""
    if DEVICE.type != "cuda":
        print("# W5-mem: no PyTorch figure on the CPU (its CPU allocator keeps no statistics)", flush=True)
        return
    for autocast in (False, True):
        r, x, y = resnet18_batch()
        opt = torch.optim.SGD(r.parameters(), lr=0.01, momentum=0.9)
        step = train_step(r, opt, x, y, F.cross_entropy, autocast)
        step()
        sync()
        torch.cuda.reset_peak_memory_stats(DEVICE)
        start = torch.cuda.memory_allocated(DEVICE)
        step()
        sync()
        name = "bf16" if autocast else "float32"
        print(f"# W5-mem {name}: {start / 2**20:.3f} MiB allocated when the step began", flush=True)
        print(f"W5-mem {name} step peak (MiB): {torch.cuda.max_memory_allocated(DEVICE) / 2**20:.3f}",
              flush=True)
        del r, x, y, opt, step


WORKLOADS = {"W0": w0, "W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6}
# Run only when named, as in bench_ops and bench_train.
NAMED_ONLY = {"W2-bf16": w2_bf16, "W4-bf16": lambda: w4(True), "W5-bf16": lambda: w5(True),
              "W6-bf16": lambda: w6(True), "W5-mem": w5_mem}


def main():
    global DEVICE
    args = sys.argv[1:]
    if "--device" in args:
        i = args.index("--device")
        DEVICE = torch.device(args[i + 1])
        del args[i:i + 2]
    threads = int(args[0]) if args and not args[0].startswith("W") else 2
    chosen = [a for a in args if a.startswith("W")] or list(WORKLOADS)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(f"# PyTorch {torch.__version__}, {threads} threads")
    print(f"# {math_libraries()}")
    print(f"# OpenBLAS core: {openblas_core()}", flush=True)
    if DEVICE.type == "cuda":
        p = torch.cuda.get_device_properties(DEVICE)
        print(f"# device: {DEVICE} ({p.name}, {p.major}.{p.minor}, {p.total_memory >> 20} MiB; "
              f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}); "
              "timings wait for the device (synchronize)", flush=True)
    for wid in chosen:
        fn = WORKLOADS.get(wid) or NAMED_ONLY.get(wid)
        if fn is None:
            sys.exit(f"torch_workloads.py: unknown workload {wid} (known: {' '.join([*WORKLOADS, *NAMED_ONLY])})")
        fn()


if __name__ == "__main__":
    main()
