"""torch_w0_w2.py — PyTorch's figures for workloads W0 and W2
(../shared/bench/WORKLOADS.md), timed the way bench_ops times ctorch:
medians of several repeats after a warm-up, with the same labels and units.

Usage: python3 bench/torch_w0_w2.py [threads]   (default 2)
"""
import statistics
import sys
import time

import torch


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


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(f"# PyTorch {torch.__version__}, {threads} threads")
    a = torch.ones(1)
    b = torch.ones(1)
    t = median_time(lambda: a + b, repeats=7, warm=1000, per_repeat=20000)
    print(f"W0 add 1-elem (us/op): {t * 1e6:.3f}", flush=True)
    for n in (1024, 2048, 4096):
        A = torch.rand(n, n)
        B = torch.rand(n, n)
        t = median_time(lambda: A @ B, repeats=5 if n < 4096 else 3, warm=1)
        print(f"W2 matmul {n} (GFLOP/s): {2 * n**3 / t / 1e9:.3f}", flush=True)


if __name__ == "__main__":
    main()
