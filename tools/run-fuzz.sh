#!/usr/bin/env bash
# tools/run-fuzz.sh — build the fuzz targets with clang (libFuzzer, ASan,
# UBSan) and fuzz the safetensors reader for a short while, starting from the
# valid files of tests/fuzz/seeds and tests/fixtures/safetensors. A crash
# leaves its input in $BUILD/fuzz-artifacts/ and makes the script fail; rerun
# it with:  $BUILD/tests/fuzz/fuzz_safetensors <file>
#
# Usage: tools/run-fuzz.sh [SECONDS (30)] [extra libFuzzer flags ...]
# Env:   CTORCH_FUZZ_BUILD  build directory (default: build-fuzz)
# Needs the Debian packages clang, libclang-rt-14-dev (libFuzzer) and
# libomp-14-dev (OpenMP for clang); tools/deps.sh installs what is missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
[ $# -gt 0 ] && shift
build=${CTORCH_FUZZ_BUILD:-$root/build-fuzz}

"$root/tools/deps.sh" clang libclang-rt-14-dev libomp-14-dev

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCTORCH_FUZZ=ON -DCTORCH_OPENCL=OFF -DCTORCH_BUILD_TESTS=OFF -DCTORCH_BUILD_EXAMPLES=OFF \
  -DCTORCH_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz_safetensors

# The corpus grows across runs in the build tree; the seeds are copied in.
corpus=$build/fuzz-corpus/safetensors
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"
cp "$root"/tests/fuzz/seeds/*.safetensors "$root"/tests/fixtures/safetensors/*.safetensors "$corpus"/

echo "run-fuzz: fuzzing the safetensors reader for ${seconds}s"
OMP_NUM_THREADS=1 "$build/tests/fuzz/fuzz_safetensors" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
  -dict="$root/tests/fuzz/safetensors.dict" -artifact_prefix="$artifacts/" \
  -print_final_stats=1 "$@" "$corpus"
echo "run-fuzz: no crash in ${seconds}s (corpus: $(ls "$corpus" | wc -l) files)"
