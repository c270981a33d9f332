#!/usr/bin/env python3
"""torch_train_fmnist.py — ctorch-train's default run, written in PyTorch.

The same model (the Fashion-MNIST CNN of WORKLOADS.md), data (the Debian
package's IDX files, normalised with mean 0.2860 / std 0.3530), loader (batch
64, shuffled, 2 worker processes), optimizer (SGD lr 0.05, momentum 0.9,
weight decay 5e-4), per-step cosine schedule to 0 and evaluation (batch 256),
so that bench/run-train.sh can put both programs' accuracy and images per
second side by side. Prints one line per epoch in ctorch-train's format.
--model resnet18 (torchvision's, the gray image repeated to 3 channels),
--augment (random crop with padding 2, horizontal flip) and --limit-train /
--limit-test mirror ctorch-train's options of the same names.

Usage: torch_train_fmnist.py [--epochs 5] [--batch-size 64] [--lr 0.05] [--threads 2] [--workers 2]
                             [--model cnn|resnet18] [--augment] [--limit-train N] [--limit-test N]
                             [--data-dir /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    assert zero == 0 and kind == 0x08, f"{path}: not a uint8 IDX file"
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(root, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(root, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(os.path.join(root, name))


class FashionMNIST(torch.utils.data.Dataset):
    def __init__(self, root, train, limit=0, augment=False, rgb=False):
        prefix = "train" if train else "t10k"
        self.images = read_idx(find(root, f"{prefix}-images-idx3-ubyte"))
        self.labels = read_idx(find(root, f"{prefix}-labels-idx1-ubyte"))
        if limit > 0:
            self.images, self.labels = self.images[:limit], self.labels[:limit]
        self.augment, self.rgb = augment, rgb

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = torch.from_numpy(self.images[i].astype(np.float32) / 255.0).unsqueeze(0)
        if self.augment:  # torchvision's RandomCrop(28, padding=2) and RandomHorizontalFlip()
            top, left = torch.randint(0, 5, (2,)).tolist()
            x = F.pad(x, (2, 2, 2, 2))[:, top:top + 28, left:left + 28]
            if torch.rand(()) < 0.5:
                x = x.flip(-1)
        x = (x - 0.2860) / 0.3530
        return (x.expand(3, -1, -1) if self.rgb else x), int(self.labels[i])


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.f1 = nn.Linear(64 * 5 * 5, 128)
        self.f2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f2(F.relu(self.f1(torch.flatten(x, 1))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--model", default="cnn", choices=["cnn", "resnet18"])
    ap.add_argument("--augment", action="store_true")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rgb = args.model == "resnet18"
    train = FashionMNIST(args.data_dir, True, args.limit_train, args.augment, rgb)
    test = FashionMNIST(args.data_dir, False, args.limit_test, False, rgb)
    train_dl = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                           persistent_workers=args.workers > 0)
    test_dl = torch.utils.data.DataLoader(test, batch_size=256, num_workers=args.workers,
                                          persistent_workers=args.workers > 0)
    if args.model == "cnn":
        model = CNN()
    else:
        import torchvision
        model = torchvision.models.resnet18(num_classes=10)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=len(train_dl) * args.epochs)
    print(f"# PyTorch {torch.__version__}, {args.model}, {args.threads} threads, {args.workers} workers", flush=True)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        t0, seen, loss_sum = time.perf_counter(), 0, 0.0
        for x, y in train_dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(y)
            seen += len(y)
        train_s = time.perf_counter() - t0
        model.eval()
        correct, test_loss, n = 0, 0.0, 0
        with torch.no_grad():
            for x, y in test_dl:
                logits = model(x)
                test_loss += F.cross_entropy(logits, y, reduction="sum").item()
                correct += (logits.argmax(1) == y).sum().item()
                n += len(y)
        print(f"epoch {epoch + 1}/{args.epochs}  train loss {loss_sum / seen:.4f}  test loss {test_loss / n:.4f}  "
              f"test accuracy {100 * correct / n:.2f}%  {seen / train_s:.0f} img/s  "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
