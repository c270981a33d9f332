#!/bin/sh
# tools/pocl-stress.sh — the long version of tests/test_pocl_stress.sh: N
# rounds (default 100) of 2 x PROCS processes (default 3) building ctorch's
# OpenCL kernels on PoCL at once, with a shared and with fresh kernel caches,
# half of them with cuBLAS/cuDNN loaded first, all exiting while PoCL may
# still be compiling; stops at the first crash, abort or hang (issue 15
# item 4, docs/devices.md "PoCL and process exit").
# Builds tests/pocl_stress_worker first if needed, in $BUILD (default
# build/main; configure it with -DCTORCH_CUDA=ON to load the CUDA libraries).
# Usage: tools/pocl-stress.sh [N [PROCS]]
set -eu
cd "$(dirname "$0")/.."
n=${1:-100}
procs=${2:-3}
build=${BUILD:-build/main}
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target pocl_stress_worker
exec sh tests/test_pocl_stress.sh "$build/tests/pocl_stress_worker" "$n" "$procs"
