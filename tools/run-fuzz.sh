#!/usr/bin/env bash
# tools/run-fuzz.sh — build the fuzz targets with clang (libFuzzer, ASan,
# UBSan) and fuzz each file parser for a given time, starting from the valid
# files of tests/fuzz/seeds (and tests/fixtures/safetensors):
#   safetensors  ct_safetensors_load_buffer (and the JSON reader under it)
#   idx          the IDX reader of ct_idx_load, plain and gzip
#   cifar        the CIFAR-10 binary reader of ct_cifar10, and its samples
# A crash leaves its input in $BUILD/fuzz-artifacts/<target>/ and makes the
# script fail (after the other targets have run); rerun it with
#   $BUILD/tests/fuzz/fuzz_<target> <file>
#
# Usage: tools/run-fuzz.sh [SECONDS (30)] [TARGET ...] [libFuzzer flags ...]
#   SECONDS is per target; no TARGET (or "all") runs all three in turn.
#   Arguments that start with "-" go to libFuzzer, e.g. -jobs=2 -workers=2.
#   Example: tools/run-fuzz.sh 300 idx cifar
# Env:   CTORCH_FUZZ_BUILD  build directory (default: build-fuzz)
# Needs the Debian packages clang, libclang-rt-14-dev (libFuzzer) and
# libomp-14-dev (OpenMP for clang); tools/deps.sh installs what is missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=30
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
targets=()
flags=()
for arg in "$@"; do
  case $arg in
    -*) flags+=("$arg") ;;
    all) targets+=(safetensors idx cifar) ;;
    safetensors|idx|cifar) targets+=("$arg") ;;
    *) echo "run-fuzz: unknown target '$arg' (safetensors, idx, cifar or all)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(safetensors idx cifar)
build=${CTORCH_FUZZ_BUILD:-$root/build-fuzz}

"$root/tools/deps.sh" clang libclang-rt-14-dev libomp-14-dev

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCTORCH_FUZZ=ON -DCTORCH_OPENCL=OFF -DCTORCH_CUDA=OFF -DCTORCH_BUILD_TESTS=OFF \
  -DCTORCH_BUILD_EXAMPLES=OFF -DCTORCH_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target "${targets[@]/#/fuzz_}"

seeds=$root/tests/fuzz/seeds
failed=()
for target in "${targets[@]}"; do
  # Per target: the seeds, the longest input worth trying and a dictionary.
  case $target in
    safetensors) max_len=65536; dict=(-dict="$root/tests/fuzz/safetensors.dict")
                 seed_files=("$seeds"/*.safetensors "$root"/tests/fixtures/safetensors/*.safetensors) ;;
    idx)         max_len=4096; dict=(-dict="$root/tests/fuzz/idx.dict")
                 seed_files=("$seeds"/*.idx "$seeds"/*.idx.gz "$seeds"/*.zidx) ;;
    cifar)       max_len=16384; dict=()
                 seed_files=("$seeds"/*.cifar) ;;
  esac
  # The corpus grows across runs in the build tree; the seeds are copied in.
  corpus=$build/fuzz-corpus/$target
  artifacts=$build/fuzz-artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  cp "${seed_files[@]}" "$corpus"/
  echo "run-fuzz: fuzzing $target for ${seconds}s"
  if OMP_NUM_THREADS=1 "$build/tests/fuzz/fuzz_$target" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -max_len="$max_len" -timeout=10 \
      "${dict[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 "${flags[@]}" "$corpus"; then
    echo "run-fuzz: $target: no crash in ${seconds}s (corpus: $(ls "$corpus" | wc -l) files)"
  else
    echo "run-fuzz: $target FAILED; inputs in $artifacts/" >&2
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzz: ${targets[*]}: no crash"
