#!/usr/bin/env bash
# tools/run-main.sh — the README's main-job command: installs what it needs
# (tools/deps.sh, which includes Debian's dataset-fashion-mnist), builds
# ctorch and ctorch-train, and trains the Fashion-MNIST CNN on the best
# device, reporting test accuracy, speed and memory. Arguments are passed to
# ctorch-train (see `build/main/ctorch-train --help`), e.g.
#   tools/run-main.sh --epochs 5 --logdir runs/fmnist
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build/main -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTORCH_BUILD_TESTS=OFF \
      -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/main -j "$(nproc)"
exec build/main/ctorch-train "$@"
