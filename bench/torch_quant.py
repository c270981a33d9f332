"""PyTorch's side of bench_quant: float32 vs quantize_dynamic(qint8) forward
times on the same shapes (median of repeats after a warm-up).

    /work/torchvenv/bin/python bench/torch_quant.py [repeats]
"""
import sys
import time

import torch
import torch.nn as nn


def median_time(m, x, repeats):
    ts = []
    with torch.no_grad():
        for r in range(repeats + 3):
            t0 = time.perf_counter()
            m(x)
            if r >= 3:
                ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    torch.manual_seed(0)
    print("torch", torch.__version__, "threads", torch.get_num_threads(),
          "engine", torch.backends.quantized.engine)
    cases = [
        ("MLP 784-1024-10, batch 64",
         nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 10)), (64, 784)),
        ("Linear 1024x1024, batch 64", nn.Sequential(nn.Linear(1024, 1024)), (64, 1024)),
        ("Linear 1024x1024, batch 1", nn.Sequential(nn.Linear(1024, 1024)), (1, 1024)),
    ]
    for name, model, shape in cases:
        model.eval()
        q = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        x = torch.randn(*shape)
        tf, tq = median_time(model, x, repeats), median_time(q, x, repeats)
        print(f"{name:<28} float32 {1e3 * tf:8.3f} ms   int8 {1e3 * tq:8.3f} ms   speed-up {tf / tq:.2f}x")


if __name__ == "__main__":
    main()
