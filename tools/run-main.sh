#!/usr/bin/env bash
# tools/run-main.sh — the README's main-job command. Until the trainer lands
# (issue 5) the main job builds ctorch and runs the device report, the
# device examples and the seed's training loop on the best available device
# (an OpenCL device when one is installed: PoCL gives CPU devices).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build/main -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTORCH_BUILD_TESTS=OFF -DCTORCH_BUILD_BENCH=OFF >/dev/null
cmake --build build/main -j "$(nproc)"
for ex in device_info tensors_on_device move_between_devices; do
  echo "== examples/$ex"
  build/main/examples/$ex
done
echo "== examples/matmul_big (4096; pass a size to change)"
build/main/examples/matmul_big "${1:-4096}"
for ex in time_matmuls custom_stream memory_stats pinned_transfer train_linear; do
  echo "== examples/$ex"
  build/main/examples/$ex
done
