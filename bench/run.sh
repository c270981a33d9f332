#!/bin/sh
# run.sh — time the reference workloads W0–W6 on ctorch (bench_ops: W0, W2;
# bench_train: W1, W3–W6) and, in the same run, on PyTorch
# (torch_workloads.py), and print them side by side with their ratio; also
# their bfloat16 variants (issue 16), named on the command line:
#   W2-bf16          bfloat16 matmul 1024, 2048 (4096 on a device or a CPU with
#                    avx512_bf16/amx_bf16), bench_ops
#   W4-bf16 W5-bf16 W6-bf16
#                    W4–W6 with forward and loss under bfloat16 autocast
#                    (float32 parameters), bench_train
#   W5-mem           peak allocated MiB of one W5 step, float32 and bf16
#                    autocast (ctorch's allocator statistics; PyTorch has a
#                    figure on CUDA only, its CPU allocator keeps none)
#
# Usage: bench/run.sh [--device D] path/to/bench_ops [threads] [workload ids]
#   bench_train is taken from the same folder as bench_ops. threads defaults
#   to 2; ids (e.g. W2 W4 W5-bf16) choose workloads, W0–W6 by default (the
#   -bf16 and -mem ones run only when named). A -bf16 id brings its float32
#   workload along on both sides, for the table's "vs PyTorch fp32" column
#   (ctorch's bf16 figure / PyTorch's float32 one) and, for W5-bf16, the
#   issue 16 goal line: ctorch W5-bf16 >= 2.5x PyTorch's float32 W5 and
#   >= 2x PyTorch's W5-bf16. --device runs both sides on a device, e.g.
#   cuda:0 (tools/gpu-check.sh does). PyTorch runs when $CT_TORCH_PYTHON (a
#   python with torch) is set, or when /usr/bin/python3 can import torch;
#   otherwise only ctorch's figures are shown. This script builds nothing.
#   CT_BENCH_BF16_MAX_N=1024 limits W2-bf16 to 1024 on both sides (PyTorch's
#   bfloat16 matmul takes ~20 s per 2048 product on an AVX2-only CPU).
#
# Examples:
#   CT_TORCH_PYTHON=/path/to/venv/bin/python bench/run.sh build/bench/bench_ops 2 W4-bf16 W5-bf16 W6-bf16
#   bench/run.sh build/bench/bench_ops 2 W2-bf16 W5-mem
#
# The environment is used as it is, OPENBLAS_CORETYPE included: OpenBLAS may
# mis-detect a virtual CPU (e.g. as "Prescott"), and both sides print the
# core they got, so that a table says which GEMM kernels it measured.
#
# Ratios are "speedup of ctorch": PyTorch time / ctorch time for the timed
# workloads (W0 µs/op, W1 µs/step, W3 s), PyTorch MiB / ctorch MiB for
# memory (W5-mem), ctorch rate / PyTorch rate for the others (GFLOP/s,
# img/s), so a ratio above 1 always means ctorch is faster (or smaller).
set -eu

device=
if [ "${1:-}" = --device ] && [ $# -ge 2 ]; then device=$2; shift 2; fi
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 [--device D] path/to/bench_ops [threads] [workload ids]" >&2
    exit 2
fi
bench_ops=$1
bench_train=$(dirname "$1")/bench_train
threads=${2:-2}
[ $# -ge 2 ] && shift 2 || shift $#
ids=$*
# Each -bf16 workload brings its float32 one (just before it, unless named),
# for the "vs PyTorch fp32" column.
with_fp32=
for id in $ids; do
    case $id in
    W[0-9]-bf16)
        case " $ids " in *" ${id%-bf16} "*) ;; *) with_fp32="$with_fp32 ${id%-bf16}" ;; esac ;;
    esac
    with_fp32="$with_fp32 $id"
done
ids=${with_fp32# }
ops_ids= train_ids=
for id in $ids; do
    case $id in W0|W2|W2-bf16) ops_ids="$ops_ids $id" ;; *) train_ids="$train_ids $id" ;; esac
done
dev_opt=${device:+--device $device}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs;" \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(date -u '+%Y-%m-%d %H:%M UTC')"
: > "$tmp/ctorch.txt"
# $dev_opt, $ops_ids and $train_ids are word lists: unquoted on purpose.
if [ -z "$ids" ] || [ -n "$ops_ids" ]; then
    echo "== ctorch ($bench_ops${device:+ on $device}, $threads threads)"
    "$bench_ops" "$threads" $ops_ids $dev_opt | tee -a "$tmp/ctorch.txt"
fi
if [ -n "$ids" ] && [ -z "$train_ids" ]; then
    :
elif [ -x "$bench_train" ]; then
    echo "== ctorch ($bench_train${device:+ on $device}, $threads threads)"
    "$bench_train" "$threads" $train_ids $dev_opt | tee -a "$tmp/ctorch.txt"
else
    echo "($bench_train not found: W1, W3-W6 skipped on ctorch)"
fi

python=${CT_TORCH_PYTHON:-/usr/bin/python3}
if [ -x "$python" ] || command -v "$python" >/dev/null 2>&1; then
    if "$python" -c 'import torch' >/dev/null 2>&1; then
        echo "== PyTorch ($python${device:+ on $device}, $threads threads)"
        "$python" "$here/torch_workloads.py" "$threads" $ids $dev_opt | tee "$tmp/torch.txt"
    fi
fi

echo
if [ ! -s "$tmp/torch.txt" ] 2>/dev/null; then
    echo "PyTorch is not importable (set CT_TORCH_PYTHON to a python with torch): no ratios."
    exit 0
fi

# Join the two outputs on the label (the text before ": "): PyTorch's rows in
# its order, then ctorch's rows that PyTorch has no figure for. A "Wn-bf16 …"
# row also gets ctorch's figure against PyTorch's float32 "Wn …" row.
awk -F': ' '
    function speedup(label, c, p) {
        c += 0; p += 0
        if (label ~ /\(us\/op\)/ || label ~ /\(us\)/ || label ~ /\(s\)/ || label ~ /\(MiB\)/)
            return (c > 0) ? p / c : 0
        return (p > 0) ? c / p : 0
    }
    function fp32_label(label, f) {
        f = label
        return sub(/-bf16 /, " ", f) ? f : ""
    }
    function ratio_text(r) { return sprintf("%.2fx", r) }
    FILENAME == ARGV[1] { if ($1 !~ /^#/) { ct[$1] = $2; ct_order[++m] = $1 }; next }
    $1 !~ /^#/ { pt[$1] = $2; order[++n] = $1 }
    END {
        for (i = 1; i <= m; i++) if (!(ct_order[i] in pt)) order[++n] = ct_order[i]
        printf "%-38s %12s %12s %16s %16s\n", "workload", "ctorch", "PyTorch", "ctorch speedup", "vs PyTorch fp32"
        for (i = 1; i <= n; i++) {
            k = order[i]
            c = (k in ct) ? sprintf("%12.3f", ct[k]) : sprintf("%12s", "-")
            p = (k in pt) ? sprintf("%12.3f", pt[k]) : sprintf("%12s", "-")
            r = (k in ct && k in pt) ? ratio_text(speedup(k, ct[k], pt[k])) : "-"
            f = fp32_label(k)
            v = (f != "" && k in ct && f in pt) ? ratio_text(speedup(k, ct[k], pt[f])) : ""
            line = sprintf("%-38s %s %s %16s", k, c, p, r)
            print (v == "") ? line : sprintf("%s %16s", line, v)
        }
        g = "W5-bf16 ResNet18 CIFAR train (img/s)"; f = fp32_label(g)
        if (g in ct && (f in pt || g in pt)) {
            print ""
            printf "issue 16 goal, W5 under bf16 autocast (ctorch W5-bf16 img/s over PyTorch'"'"'s):\n"
            if (f in pt) {
                r = speedup(g, ct[g], pt[f])
                printf "  vs PyTorch float32 W5:   %6.2fx (goal >= 2.5x: %s)\n", r, (r >= 2.5 ? "met" : "not met")
            }
            if (g in pt) {
                r = speedup(g, ct[g], pt[g])
                printf "  vs PyTorch bf16 W5-bf16: %6.2fx (goal >= 2x: %s)\n", r, (r >= 2 ? "met" : "not met")
            }
        }
        print ""
        print "ctorch speedup > 1 means ctorch is faster: PyTorch time / ctorch time for"
        print "W0, W1, W3 (lower is better), ctorch rate / PyTorch rate for W2, W4-W6 and"
        print "their -bf16 forms, PyTorch MiB / ctorch MiB for W5-mem (smaller is better)."
        print "vs PyTorch fp32: ctorch'"'"'s bfloat16 figure over PyTorch'"'"'s float32 one."
    }' "$tmp/ctorch.txt" "$tmp/torch.txt"
