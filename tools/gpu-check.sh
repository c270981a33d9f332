#!/usr/bin/env bash
# tools/gpu-check.sh — run ctorch's CUDA code on a machine that has a GPU.
#
# The project's own machines have no GPU; the GPU machine that is sometimes
# lent has nvcc, a driver and pip's CUDA libraries, but none of Debian's
# packages (no OpenBLAS). So the check is split in two:
#
#   tools/gpu-check.sh pack    here: build build/gpu (CUDA on, OpenCL off),
#                              and pack the test binaries, the host libraries
#                              they need and a Fashion-MNIST subset into .gpu/
#                              (ignored by git; small enough to travel);
#   tools/gpu-check.sh run     there, from the repository root: unpack, report
#                              the GPU and the libraries, run the CUDA tests,
#                              the cross-backend harness and the rest of the
#                              suite, and train on cuda:0 against the CPU.
#                              A summary goes to stdout, the logs to
#                              $OUT/gpu-check-logs.tar.gz (the device tool's
#                              folder) when OUT is set; exit status 0 only
#                              when all of it passed.
#
# With the device tool: run `tools/gpu-check.sh pack` here, then one call of
# `tools/gpu-check.sh run 2>&1 | tee $OUT/summary.txt` carrying .gpu, with a
# timeout of about 420 s (each GPU test is cut off at CT_GPU_TEST_LIMIT=150 s).
#
# Pack options (environment): CT_GPU_ARCH (default 90-real: H100/H200; a list
# such as "80-real;90-real" also works).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pack=$root/.gpu

pack_here() {
    set -e
    tools/deps.sh
    local arch=${CT_GPU_ARCH:-90-real}
    cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCTORCH_OPENCL=OFF -DCTORCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
        -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
    cmake --build build/gpu -j "$(nproc)"
    rm -rf "$pack"; mkdir -p "$pack/lib" "$pack/data"
    # ctest's files name absolute paths: the run side recreates this root.
    echo "$root" > "$pack/srcdir"
    (cd build/gpu && find . -name CTestTestfile.cmake; ls libctorch.so* ctorch-train ctorch-info tests/test_*) \
        | sort -u | tar -C build/gpu -cf - -T - | xz -T0 -6 > "$pack/build.tar.xz"
    # Debian libraries the binaries need that the GPU machine lacks.
    ldd build/gpu/ctorch-train build/gpu/tests/test_backend_ops | awk '/=> \//{print $3}' | sort -u \
        | grep -E 'openblas|gfortran|quadmath|gomp|libz\.|dnnl|libOpenCL' | while read -r lib; do
            cp -L "$lib" "$pack/lib/$(basename "$lib")"
        done
    tar -C "$pack" -cf - lib | xz -T0 -6 > "$pack/lib.tar.xz"; rm -rf "$pack/lib"
    # 6,000 training and 2,000 test images: enough to see the model learn.
    python3 - "$pack/data" <<'EOF'
import gzip, struct, sys
src, dst = "/usr/share/datasets/fashion-mnist", sys.argv[1]
for kind, n in (("train", 6000), ("t10k", 2000)):
    for part, item in (("images-idx3-ubyte", 784), ("labels-idx1-ubyte", 1)):
        raw = gzip.open(f"{src}/{kind}-{part}.gz").read()
        ndim = raw[3]
        header = bytearray(raw[:4 + 4 * ndim])
        struct.pack_into(">I", header, 4, n)
        body = raw[4 + 4 * ndim: 4 + 4 * ndim + n * item]
        with gzip.open(f"{dst}/{kind}-{part}.gz", "wb", compresslevel=9) as f:
            f.write(bytes(header) + body)
EOF
    du -sh "$pack"/*
    echo "packed: carry .gpu and build nothing there; run: tools/gpu-check.sh run"
}

# pip's CUDA libraries (cuBLAS, cuDNN, NCCL) live in site-packages/nvidia/*/lib.
pip_cuda_lib_dirs() {
    local sp
    for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
        [ -d "$sp/nvidia" ] || continue
        find "$sp/nvidia" -name 'lib*.so*' \( -name 'libcublas*' -o -name 'libcudnn*' -o -name 'libnccl*' \) \
            -printf '%h\n' 2>/dev/null
    done | sort -u | tr '\n' ':'
}

run_there() {
    local out=${TMPDIR:-/tmp}/ctorch-gpu-check
    rm -rf "$out"; mkdir -p "$out"
    [ -f "$pack/build.tar.xz" ] || { echo "gpu-check: .gpu/build.tar.xz missing: run 'tools/gpu-check.sh pack' first and carry .gpu"; exit 2; }
    local src; src=$(cat "$pack/srcdir")
    if [ "$src" != "$root" ]; then
        if [ -e "$src" ] && [ ! "$src" -ef "$root" ]; then
            echo "gpu-check: $src exists and is not this checkout; ctest's paths point there"; exit 2
        fi
        mkdir -p "$(dirname "$src")"; [ -e "$src" ] || ln -s "$root" "$src"
    fi
    local host=${TMPDIR:-/tmp}/ctorch-gpu-host
    mkdir -p build/gpu "$host"
    xz -dc "$pack/build.tar.xz" | tar -C build/gpu -xf -
    xz -dc "$pack/lib.tar.xz" | tar -C "$host" -xf -
    export LD_LIBRARY_PATH="$host/lib:$(pip_cuda_lib_dirs)${LD_LIBRARY_PATH:-}"
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
    local status=0 b=build/gpu

    { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } 2>&1 | tee "$out/gpu.txt"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$out/gpu.txt"
    $b/ctorch-info > "$out/info.txt" 2>&1 || status=1
    sed -n '1,60p' "$out/info.txt"

    # Each binary directly, under its own time limit (ctest's --timeout does
    # not override the tests' TIMEOUT property): a hang costs minutes, not the
    # whole lease. All four at once: the GPU and 16 cores have room.
    echo "== CUDA tests and the cross-backend harness on cuda:0 (each limited to ${CT_GPU_TEST_LIMIT:-150} s)"
    local t pids=() names=()
    for t in test_cuda_runtime test_cuda_math test_device_runtime test_backend_ops; do
        (cd $b/tests && timeout -k 5 "${CT_GPU_TEST_LIMIT:-150}" stdbuf -oL -eL ./$t > "$out/$t.log" 2>&1
         echo "exit $?" >> "$out/$t.log") &
        pids+=($!); names+=($t)
    done
    wait "${pids[@]}"
    for t in "${names[@]}"; do
        local rc; rc=$(tail -1 "$out/$t.log" | sed 's/exit //')
        case $rc in
            0) echo "  $t: passed ($(grep -c '^\[ ok \]' "$out/$t.log") cases ok)" ;;
            124|137) echo "  $t: TIMED OUT; last lines:"; tail -4 "$out/$t.log" | sed 's/^/    /'; status=1 ;;
            77) echo "  $t: SKIPPED although a GPU is present"; status=1 ;;
            *) echo "  $t: FAILED (exit $rc):"; grep -E 'FAIL' "$out/$t.log" | head -12 | sed 's/^/    /'; status=1 ;;
        esac
    done
    tail -3 "$out/test_backend_ops.log"

    echo "== the rest of the suite (CPU tests, CUDA devices visible)"
    (cd $b && timeout 300 ctest -E 'test_cuda_|test_device_runtime|test_backend_ops' --output-on-failure -j 8) \
        > "$out/suite.log" 2>&1 || status=1
    grep -E 'tests passed|Failed|\*\*\*' "$out/suite.log" | tail -20

    echo "== training on cuda:0 and on the CPU (6,000 images, 2 epochs, CNN)"
    local d
    for d in cuda:0 cpu; do
        $b/ctorch-train --device "$d" --model cnn --data-dir "$pack/data" --epochs 2 --batch-size 64 \
            --seed 7 --progress none > "$out/train-${d%%:*}.log" 2>&1 \
            || { echo "training on $d failed:"; status=1; }
        tail -4 "$out/train-${d%%:*}.log"
    done
    if command -v compute-sanitizer >/dev/null; then
        echo "== compute-sanitizer memcheck on test_cuda_runtime"
        timeout 120 compute-sanitizer --tool memcheck --leak-check no $b/tests/test_cuda_runtime \
            > "$out/memcheck.log" 2>&1 || { echo "memcheck: exit $?"; status=1; }
        grep -E 'ERROR SUMMARY|Invalid|passed|failed' "$out/memcheck.log" | tail -5
    fi
    # The device tool brings back at most 8 files from $OUT: one archive.
    if [ -n "${OUT:-}" ]; then tar -C "$out" -czf "$OUT/gpu-check-logs.tar.gz" .; fi
    echo "gpu-check: $([ $status -eq 0 ] && echo passed || echo FAILED) (logs in $out${OUT:+, packed as \$OUT/gpu-check-logs.tar.gz})"
    return $status
}

case "${1:-}" in
    pack) pack_here ;;
    run) run_there; exit $? ;;
    *) echo "usage: tools/gpu-check.sh pack|run"; exit 2 ;;
esac
