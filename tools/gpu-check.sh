#!/usr/bin/env bash
# tools/gpu-check.sh — run ctorch's CUDA code on a machine that has a GPU.
#
# The project's own machines have no GPU; the GPU machine that is sometimes
# lent has nvcc, a driver and PyTorch from pip (with its CUDA libraries in
# site-packages/nvidia), but none of Debian's packages (no OpenBLAS). So the
# check is split in two:
#
#   tools/gpu-check.sh pack    here: build build/gpu (CUDA on, OpenCL off)
#                              with only what the GPU run needs, and pack it,
#                              the host libraries it needs and a Fashion-MNIST
#                              subset into .gpu/ (ignored by git; ~21 MiB);
#   tools/gpu-check.sh run     there, from the repository root: unpack into
#                              build/gpu-run, check that every binary's
#                              libraries resolve, report the GPU and library
#                              versions, run the CUDA tests and the
#                              cross-backend harness on cuda:0, the workloads
#                              W2/W4/W5/W6 on cuda:0 beside PyTorch's CUDA
#                              figures from the same run, a short training
#                              run on cuda:0 and on the CPU, the tests of the
#                              suite that use CUDA when it is there, and
#                              compute-sanitizer on the runtime test; then a
#                              short report. Logs go to
#                              $OUT/gpu-check-logs.tar.gz when OUT is set.
#                              Exit status 0 only when all of it passed.
#   tools/gpu-check.sh dry-run (or --dry-run) here, without a GPU: pack, then
#                              run against the pack, where every GPU step
#                              reports "skipped (no GPU)"; exit 0 when the
#                              script, the pack and the CPU steps work. CI
#                              runs this (tools/run-tests.sh).
#
# With the device tool: run `tools/gpu-check.sh pack` here, then one call of
# `tools/gpu-check.sh run 2>&1 | tee $OUT/summary.txt` carrying .gpu, with a
# timeout of about 420 s. The run keeps to CT_GPU_CHECK_BUDGET seconds
# (default 380): each GPU test is cut off at CT_GPU_TEST_LIMIT (150 s), and a
# later step that no longer fits is reported "skipped (time budget)".
#
# Options (environment): CT_GPU_ARCH (pack; default 90-real: H100/H200, a
# list such as "80-real;90-real" also works), CT_GPU_JOBS (pack; build jobs,
# default nproc), CT_GPU_EXTRA_TESTS (pack; more test binaries to carry),
# CT_GPU_WORKLOADS (run; default "W2 W4 W5 W6"),
# CT_TORCH_PYTHON (run; the python with torch, default python3).
#
# Libraries: the pack carries every library the binaries need except glibc
# (2.34 or newer), libstdc++ (GLIBCXX_3.4.29, GCC 11 or newer) and libgcc_s,
# which any machine that runs PyTorch has; cuBLAS and cuDNN are opened at run
# time, from pip's nvidia packages when python3's site-packages have them,
# else from the system or /usr/local/cuda. The run checks all of it with ldd.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pack=$root/.gpu
build=$root/build/gpu
run_dir=$root/build/gpu-run
# What ldd may resolve outside the pack: the C and C++ runtimes.
base_libs='^(linux-vdso\.so|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'

# ---- pack (here) -----------------------------------------------------------------------------

# The tests of the suite that touch CUDA when it is present (their source
# names it), besides the GPU tests run on their own; OpenCL-only tests are out.
suite_tests() {
    grep -l -i cuda tests/test_*.c | xargs -n1 basename | sed 's/\.c$//' \
        | grep -v -E '^test_(cuda_|opencl_|device_runtime$|backend_ops$)'
}
gpu_tests() {
    local f; for f in tests/test_cuda_*.c; do basename "$f" .c; done
    echo test_device_runtime
    echo test_backend_ops
    # CT_GPU_EXTRA_TESTS: more binaries to pack and run by hand there (the
    # lent machine's CPU has AMX, which checks ctorch's AMX paths)
    for f in ${CT_GPU_EXTRA_TESTS:-}; do echo "$f"; done
}

pack_here() {
    set -e
    tools/deps.sh
    local arch=${CT_GPU_ARCH:-90-real} jobs=${CT_GPU_JOBS:-$(nproc)} t0=$SECONDS
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCTORCH_OPENCL=OFF -DCTORCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
        -DCTORCH_BUILD_BENCH=ON -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
    local tests; tests=$(gpu_tests; suite_tests)
    # shellcheck disable=SC2086  # word lists
    cmake --build "$build" -j "$jobs" --target ctorch ctorch-train ctorch-info bench_ops bench_train $tests
    echo "gpu-check: built in $((SECONDS - t0)) s"
    rm -rf "$pack"; mkdir -p "$pack/lib" "$pack/data"
    # Test sources find their fixtures through __FILE__ (absolute): the run
    # side recreates this root when its checkout is elsewhere.
    echo "$root" > "$pack/srcdir"
    # The suite's commands as ctest has them (environment, working folder,
    # skip code), build paths relative to $B: no cmake needed there.
    ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, shlex, sys
build, wanted = sys.argv[1], set(sys.argv[2].split())
def q(s):
    return "\"$B\"" + shlex.quote(s[len(build):]) if s.startswith(build) else shlex.quote(s)
for t in json.load(sys.stdin)["tests"]:
    if t["name"] not in wanted or t["name"] == "test_dist_nccl": continue
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    env = props.get("ENVIRONMENT", [])
    print("suite_test", t["name"], q(props.get("WORKING_DIRECTORY", build)),
          props.get("SKIP_RETURN_CODE", "none"), *map(q, env), "--", *map(q, t["command"]))
' "$build" "$(suite_tests) test_info" > "$pack/suite.sh"
    # xz preset 1 with a 32 MiB window, one thread: the test binaries share
    # most of their bytes (each links the static library), so a window that
    # spans several of them packs 67 MB into 4 MB in seconds (-6: 40 s).
    (cd "$build" && ls libctorch.so* ctorch-train ctorch-info bench/bench_ops bench/bench_train \
        $(for t in $tests; do echo "tests/$t"; done)) | tar -C "$build" -cf - -T - | xz -T1 --lzma2=preset=1,dict=32MiB > "$pack/build.tar.xz"
    # Every library the packed binaries need, but the C and C++ runtimes.
    (cd "$build" && for f in libctorch.so.*.*.* ctorch-train ctorch-info bench/bench_ops bench/bench_train tests/test_backend_ops; do
        ldd "$f"; done) | awk '/=> \//{print $1, $3}' | sort -u | while read -r name path; do
            [[ $name =~ $base_libs || $name == libctorch.so* ]] || cp -L "$path" "$pack/lib/$name"
        done
    tar -C "$pack" -cf - lib | xz -T1 --lzma2=preset=1,dict=32MiB > "$pack/lib.tar.xz"; rm -rf "${pack:?}/lib"
    pack_openmpi
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
    echo "packed in $((SECONDS - t0)) s ($(du -sh "$pack" | cut -f1)): carry .gpu and build nothing there; run: tools/gpu-check.sh run"
}

# The GPU machine has no MPI, and the process groups (the nccl backend's
# rendezvous too) need one: OpenMPI's runtime as Debian installed it here,
# its programs, plugins, help files and every library they load, at the
# paths they have here (it is not relocatable). The run side unpacks it
# into / without replacing any file already there.
pack_openmpi() {
    command -v orted >/dev/null || { echo "gpu-check: no OpenMPI here: the nccl test will skip there"; return 0; }
    local files; files=$(dpkg -L libopenmpi3 openmpi-bin openmpi-common libpmix2 | while read -r f; do
            [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done | grep -v -E '/(doc|man|include)/|java|fortran|\.mod$')
    # shellcheck disable=SC2086  # word lists
    local deps; deps=$(for f in $files; do [ -f "$f" ] && ldd "$f" 2>/dev/null; done \
        | awk '/=> \//{print $3}' | sort -u | while read -r d; do
            [[ $(basename "$d") =~ $base_libs ]] || echo "$d"; done)
    # Libraries by their soname paths, dereferenced; OpenMPI's own files as they are.
    { echo "$files"; } | tar -cf "$pack/mpi.tar" -T - 2>/dev/null
    echo "$deps" | tar -rhf "$pack/mpi.tar" -T - 2>/dev/null
    xz -T1 --lzma2=preset=1,dict=32MiB "$pack/mpi.tar"
}

# ---- run (there) -----------------------------------------------------------------------------

python=${CT_TORCH_PYTHON:-python3}

# pip's CUDA libraries (cuBLAS, cuDNN, NCCL, NVRTC) live in site-packages/nvidia/*/lib
# (nvidia/cu13/lib for CUDA 13 wheels), in the system's, the user's or a
# virtual environment's site-packages, whichever python has torch.
pip_cuda_lib_dirs() {
    local sp
    for sp in $("$python" -c '
import site, sys
dirs = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path
print(" ".join(dict.fromkeys(d for d in dirs if d)))' 2>/dev/null); do
        [ -d "$sp/nvidia" ] || continue
        find "$sp/nvidia" -name 'lib*.so*' \( -name 'libcublas*' -o -name 'libcudnn*' -o -name 'libnccl*' -o -name 'libnvrtc*' \) \
            -printf '%h\n' 2>/dev/null
    done | sort -u | tr '\n' ':'
}

out=${TMPDIR:-/tmp}/ctorch-gpu-check
report=$out/report.txt
status=0
t0=$SECONDS
budget=${CT_GPU_CHECK_BUDGET:-380}
left() { echo $((budget - (SECONDS - t0))); }
# One line of the report: "key: value", printed now and kept for the end.
rep() { printf '%-34s %s\n' "$1:" "$2" | tee -a "$report"; }
fail() { status=1; }
# Indented detail lines under a report line, kept in the report too.
detail() { sed 's/^/    /' | tee -a "$report"; }

# OpenMPI from the pack, unpacked into / (nothing already there replaced),
# with the settings a single machine run as root needs.
use_carried_openmpi() {
    if ! command -v orted >/dev/null && [ -f "$pack/mpi.tar.xz" ]; then
        xz -dc "$pack/mpi.tar.xz" | tar -C / -xkf - 2>/dev/null; ldconfig 2>/dev/null
        command -v orted >/dev/null && rep "OpenMPI" "carried from the pack ($(orted --version 2>&1 | head -1))"
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 \
        OMPI_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_mca_base_component_show_load_errors=0
}

run_there() {
    local dry=$1
    t0=$SECONDS
    rm -rf "$out"; mkdir -p "$out"; : > "$report"
    [ -f "$pack/build.tar.xz" ] || { echo "gpu-check: .gpu/build.tar.xz missing: run 'tools/gpu-check.sh pack' first and carry .gpu"; exit 2; }
    local src; src=$(cat "$pack/srcdir")
    if [ "$src" != "$root" ]; then
        if [ -e "$src" ] && [ ! "$src" -ef "$root" ]; then
            echo "gpu-check: $src exists and is not this checkout; the tests' fixture paths point there"; exit 2
        fi
        mkdir -p "$(dirname "$src")"; [ -e "$src" ] || ln -s "$root" "$src"
    fi
    local host=$out/host b=$run_dir
    rm -rf "$b"; mkdir -p "$b" "$host"
    xz -dc "$pack/build.tar.xz" | tar -C "$b" -xf -
    xz -dc "$pack/lib.tar.xz" | tar -C "$host" -xf -
    local orig_ld=${LD_LIBRARY_PATH:-}
    export LD_LIBRARY_PATH="$b:$host/lib:$(pip_cuda_lib_dirs)$orig_ld"
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > "$out/env.txt"

    echo "== the machine"
    local gpu=""
    if command -v nvidia-smi >/dev/null && nvidia-smi -L > "$out/gpu.txt" 2>&1 && grep -q '^GPU ' "$out/gpu.txt"; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$out/gpu.txt" 2>&1
        gpu=$(tail -1 "$out/gpu.txt")
        rep "GPU (name, driver, memory)" "$gpu ($(grep -c '^GPU ' "$out/gpu.txt") GPU(s))"
    else
        rep "GPU" "none$([ "$dry" = 1 ] && echo ' (dry run)')"
        [ "$dry" = 1 ] || fail
    fi
    local skip="skipped (no GPU)"

    # Every packed binary must find its libraries in the pack, pip's CUDA
    # libraries or the system's C/C++ runtimes.
    local f bad=""
    for f in "$b"/libctorch.so.*.*.* "$b"/ctorch-* "$b"/bench/* "$b"/tests/* "$host"/lib/*; do
        ldd "$f" 2>&1 | awk -v f="${f#"$b"/}" '{print f ": " $0}'
    done > "$out/ldd.txt"
    bad=$( (grep -E '=> /' "$out/ldd.txt" | grep -v -E "=> ($b|$host/lib)/" \
        | awk '{print $2, $4}' | grep -v -E "$base_libs" | grep -v -E '^[^ ]+ /.*/nvidia/'
        grep -E 'not found' "$out/ldd.txt") | sort -u)
    if ! command -v ldd >/dev/null; then
        rep "libraries (ldd)" "not checked (no ldd on this machine)"
    elif [ -z "$bad" ]; then
        rep "libraries (ldd)" "all resolved (the pack's, glibc, libstdc++, libgcc_s)"
    else
        rep "libraries (ldd)" "UNRESOLVED or outside the pack:"; echo "$bad" | head -12 | detail; fail
    fi

    "$b"/ctorch-info > "$out/info.txt" 2>&1 || fail
    "$b"/ctorch-info --format json > "$out/info.json" 2>/dev/null || fail
    sed -n '/^Libraries:/,/^Environment:/p' "$out/info.txt" | sed '$d'
    python3 - "$out/info.json" <<'EOF' | while IFS='|' read -r k v; do rep "$k" "$v"; done
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"ctorch-info|FAILED ({e})"); sys.exit()
lib = d.get("libraries", {})
def v(name):
    x = lib.get(name) or {}
    if not x.get("found"):
        return "not found" + (f" ({x['detail']})" if x.get("detail") else "")
    return f"{x.get('version')} ({x.get('path')})"
drv = lib.get("cuda_driver") or {}
print(f"CUDA runtime (static, built with)|{lib.get('cuda_built')}")
print(f"CUDA driver|{drv.get('version') if drv.get('found') else 'not found'}")
print(f"cuBLAS|{v('cublas')}")
print(f"cuDNN|{v('cudnn')}")
c = d.get("cuda", {})
print(f"ctorch sees|{c.get('device_count', 0)} CUDA device(s)" + ("" if c.get("available") else f": {c.get('reason')}"))
EOF

    # Each binary directly, under its own time limit: a hang costs minutes,
    # not the whole lease. All at once: the GPU and 16 cores have room.
    local limit=${CT_GPU_TEST_LIMIT:-150}
    echo "== CUDA tests and the cross-backend harness on cuda:0 (each limited to $limit s)"
    local t pids=() names=()
    for t in $(cd "$b/tests" && ls test_cuda_*) test_device_runtime test_backend_ops; do
        (cd "$b/tests" && timeout -k 5 "$limit" stdbuf -oL -eL "./$t" > "$out/$t.log" 2>&1
         echo "exit $?" >> "$out/$t.log") &
        pids+=($!); names+=("$t")
    done
    wait "${pids[@]}"
    for t in "${names[@]}"; do
        local rc; rc=$(tail -1 "$out/$t.log" | sed 's/exit //')
        case $rc in
            0) local ok; ok=$(grep -c '^\[ ok \]' "$out/$t.log")
               rep "$t" "passed$([ "$ok" -gt 0 ] && echo " ($ok cases ok)")" ;;
            124|137) rep "$t" "TIMED OUT after $limit s"; tail -4 "$out/$t.log" | detail; fail ;;
            77) if [ -n "$gpu" ]; then rep "$t" "SKIPPED although a GPU is present"; fail; else rep "$t" "$skip"; fi ;;
            *) rep "$t" "FAILED (exit $rc)"; grep -E 'FAIL' "$out/$t.log" | head -12 | detail; fail ;;
        esac
    done
    local totals; totals=$(grep -E '^cuda:0 ' "$out/test_backend_ops.log" | tr -s ' ')
    if [ -n "$totals" ]; then
        rep "harness totals (cuda:0)" "$(echo "$totals" | awk '{printf "%s compared, %s passed, %s failed, %s %s %s unsupported, %s %s %s both-errored, worst %s", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}')"
    else
        rep "harness totals (cuda:0)" "$([ -n "$gpu" ] && echo 'none (see test_backend_ops.log)' || echo "$skip")"
    fi

    # The workloads, both sides on cuda:0 in the same run, the GPU otherwise idle.
    local ids=${CT_GPU_WORKLOADS:-W2 W4 W5 W6} torch_cuda=""
    echo "== workloads $ids on cuda:0, ctorch and PyTorch"
    if env LD_LIBRARY_PATH="$orig_ld" "$python" -c 'import torch; assert torch.cuda.is_available()' > "$out/torch-check.txt" 2>&1; then
        torch_cuda=$(env LD_LIBRARY_PATH="$orig_ld" "$python" -c 'import torch; print(torch.__version__)')
    fi
    if [ -z "$gpu" ]; then
        for t in $ids; do rep "workload $t (ctorch/PyTorch)" "$skip"; done
    elif [ "$(left)" -lt 100 ]; then
        for t in $ids; do rep "workload $t (ctorch/PyTorch)" "skipped (time budget)"; done
    else
        # PyTorch runs with the environment it came with, not the pack's libraries.
        printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$orig_ld" "$(command -v "$python")" > "$out/torch-python"
        chmod +x "$out/torch-python"
        # shellcheck disable=SC2086  # $ids is a word list
        CT_TORCH_PYTHON=$([ -n "$torch_cuda" ] && echo "$out/torch-python" || echo /nonexistent) \
            timeout -k 5 $(($(left) - 60 < 240 ? $(left) - 60 : 240)) \
            sh bench/run.sh --device cuda:0 "$b/bench/bench_ops" "$OMP_NUM_THREADS" $ids > "$out/workloads.log" 2>&1 \
            || { echo "workloads: exit $?"; fail; }
        sed -n '/^workload /,$p' "$out/workloads.log"
        # Each workload: ctorch's figure, PyTorch's and the ratio as bench/run.sh
        # gives it (above 1: ctorch is faster), from the two sides' own lines.
        local n=0 label text ok
        while IFS='|' read -r label text ok; do
            n=$((n + 1)); rep "$label" "$text"; [ "$ok" = 1 ] || fail
        done < <(awk -v torch="$torch_cuda" '
            /^== ctorch/ { side = "ct"; next }
            /^== PyTorch/ { side = "pt"; next }
            /^(== |workload )/ { side = ""; next }
            side != "" && /^W[0-9][^:]*: / {
                i = index($0, ": "); k = substr($0, 1, i - 1); v = substr($0, i + 2)
                if (!(k in seen)) { seen[k] = 1; order[++n] = k }
                if (side == "ct") ct[k] = v; else pt[k] = v
            }
            END {
                for (j = 1; j <= n; j++) {
                    k = order[j]
                    if (!(k in ct)) { printf "%s|ctorch gave no figure (see workloads.log)|0\n", k; continue }
                    if (!(k in pt)) {
                        printf "%s|ctorch %s; PyTorch %s|1\n", k, ct[k],
                               torch == "" ? "skipped (no torch with CUDA)" : "gave no figure"
                        continue
                    }
                    c = ct[k] + 0; p = pt[k] + 0
                    if (c <= 0) { printf "%s|ctorch FAILED (%s; see workloads.log), PyTorch %s|0\n", k, ct[k], pt[k]; continue }
                    if (k ~ /\((us\/op|us|s)\)/) r = (c > 0) ? p / c : 0; else r = (p > 0) ? c / p : 0
                    printf "%s|ctorch %s, PyTorch %s: ctorch speedup %.2fx|1\n", k, ct[k], pt[k], r
                }
            }' "$out/workloads.log")
        [ $n -gt 0 ] || { rep "workloads" "FAILED: no figures (see workloads.log)"; fail; }
        if grep -q -E '^bench_(ops|train): ' "$out/workloads.log"; then
            rep "workload errors" "$(grep -E '^bench_(ops|train): ' "$out/workloads.log" | head -3 | tr '\n' ' ')"; fail
        fi
    fi
    rep "PyTorch on CUDA" "${torch_cuda:-not available ($(tail -1 "$out/torch-check.txt" | cut -c1-80))}"

    echo "== training on cuda:0 and on the CPU (6,000 images, 2 epochs, CNN)"
    local d
    for d in cuda:0 cpu; do
        if [ "$d" != cpu ] && [ -z "$gpu" ]; then rep "training on $d" "$skip"; continue; fi
        if [ "$(left)" -lt 40 ]; then rep "training on $d" "skipped (time budget)"; continue; fi
        if timeout -k 5 120 "$b"/ctorch-train --device "$d" --model cnn --data-dir "$pack/data" --epochs 2 \
            --batch-size 64 --seed 7 --progress none > "$out/train-${d%%:*}.log" 2>&1; then
            rep "training on $d" "$(grep '^epoch 2/2' "$out/train-${d%%:*}.log" | sed -E 's/.*test accuracy ([0-9.]+%) +([0-9]+ img\/s).*/\1 test accuracy, \2 in epoch 2/')"
        else
            rep "training on $d" "FAILED:"; tail -4 "$out/train-${d%%:*}.log" | detail; fail
        fi
    done

    echo "== the tests of the suite that use CUDA when it is there"
    echo "== the nccl process group (a world of one) on cuda:0"
    if [ -z "$gpu" ]; then
        rep "test_dist_nccl" "$skip"
    else
        use_carried_openmpi
        (cd "$b/tests" && OMP_NUM_THREADS=1 timeout -k 5 90 ./test_dist_nccl > "$out/test_dist_nccl.log" 2>&1
         echo "exit $?" >> "$out/test_dist_nccl.log")
        local nrc; nrc=$(tail -1 "$out/test_dist_nccl.log" | sed 's/exit //')
        case $nrc in
            0) rep "test_dist_nccl" "passed ($(grep -c '^\[ ok \]' "$out/test_dist_nccl.log") cases ok)" ;;
            77) rep "test_dist_nccl" "SKIPPED: $(grep -m1 SKIP "$out/test_dist_nccl.log" | cut -c1-120)"; fail ;;
            *) rep "test_dist_nccl" "FAILED (exit $nrc)"; grep -v '^exit' "$out/test_dist_nccl.log" | tail -8 | detail; fail ;;
        esac
    fi

    if [ "$(left)" -lt 40 ]; then
        rep "suite (CUDA-aware tests)" "skipped (time budget)"
    else
        local jobs=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
        suite_test() { # name workdir skip-code env… -- command…
            local name=$1 dir=$2 skipc=$3; shift 3
            local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
            (cd "$dir" && env "${envs[@]}" timeout -k 5 "$suite_limit" "$@" > "$out/suite-$name.log" 2>&1
             echo "exit $? $skipc" >> "$out/suite-$name.log") &
            while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        }
        local suite_limit=$(( $(left) - 30 < 180 ? $(left) - 30 : 180 )) B=$b
        # shellcheck disable=SC1090,SC2034  # suite.sh uses $B
        source "$pack/suite.sh"
        wait
        local passed=0 skipped=0 failed=""
        for f in "$out"/suite-*.log; do
            local name; name=$(basename "$f" .log); name=${name#suite-}
            read -r _ rc skipc <<< "$(tail -1 "$f")"
            if [ "$rc" = 0 ]; then passed=$((passed + 1))
            elif [ "$rc" = "$skipc" ]; then skipped=$((skipped + 1))
            else failed="$failed $name(exit $rc)"; fi
        done
        rep "suite (CUDA-aware tests)" "$passed passed, $skipped skipped, $(echo $failed | wc -w) failed${failed:+:$failed}"
        [ -z "$failed" ] || fail
    fi

    local sanitizer; sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
    if [ -z "$gpu" ]; then
        rep "compute-sanitizer memcheck" "$skip"
    elif [ -z "$sanitizer" ]; then
        rep "compute-sanitizer memcheck" "skipped (compute-sanitizer not found)"
    elif [ "$(left)" -lt 45 ]; then
        rep "compute-sanitizer memcheck" "skipped (time budget)"
    else
        echo "== compute-sanitizer memcheck on test_cuda_runtime"
        # Left out: test_out_of_memory (its deliberate cudaMalloc failures
        # count as sanitizer errors) and test_visible_devices (its children
        # run under the sanitizer, which does not keep CUDA_VISIBLE_DEVICES="").
        if (cd "$b/tests" && CT_TEST_EXCLUDE=test_out_of_memory,test_visible_devices \
                timeout -k 5 $(($(left) - 15 < 120 ? $(left) - 15 : 120)) "$sanitizer" --tool memcheck \
                --leak-check no ./test_cuda_runtime > "$out/memcheck.log" 2>&1); then
            rep "compute-sanitizer memcheck" "$(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1 | sed 's/^========= //')"
        else
            rep "compute-sanitizer memcheck" "FAILED: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1 | sed 's/^========= //')"; fail
        fi
    fi

    rep "time" "$((SECONDS - t0)) s of a $budget s budget"
    rep "gpu-check" "$([ $status -eq 0 ] && echo passed || echo FAILED)$([ "$dry" = 1 ] && echo ' (dry run: GPU steps skipped)')"
    echo
    echo "== report"
    cat "$report"
    # The device tool brings back at most 8 files from $OUT: one archive.
    if [ -n "${OUT:-}" ]; then tar -C "$out" --exclude=./host -czf "$OUT/gpu-check-logs.tar.gz" .; fi
    echo "(logs in $out${OUT:+, packed as \$OUT/gpu-check-logs.tar.gz})"
    return $status
}

dry_run() {
    if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDACXX:-}" ]; then
        echo "gpu-check dry-run: no CUDA toolkit (nvcc) here: nothing to check"; return 0
    fi
    (pack_here)  # not under || : that would turn set -e off inside it
    local rc=$?
    [ $rc -eq 0 ] || { echo "gpu-check dry-run: pack failed (exit $rc)"; return 1; }
    run_there 1
}

case "${1:-}" in
    pack) (pack_here) ;;
    run) run_there 0; exit $? ;;
    dry-run|--dry-run) dry_run; exit $? ;;
    *) echo "usage: tools/gpu-check.sh pack|run|dry-run"; exit 2 ;;
esac
