#!/bin/sh
# run.sh — time the reference workloads W0–W6 on ctorch (bench_ops: W0, W2;
# bench_train: W1, W3–W6) and, in the same run, on PyTorch
# (torch_workloads.py), and print them side by side with their ratio.
#
# Usage: bench/run.sh [--device D] path/to/bench_ops [threads] [workload ids]
#   bench_train is taken from the same folder as bench_ops. threads defaults
#   to 2; ids (e.g. W2 W4) choose workloads, all by default. --device runs
#   both sides on a device, e.g. cuda:0 (tools/gpu-check.sh does). PyTorch
#   runs when $CT_TORCH_PYTHON (a python with torch) is set, or
#   when /usr/bin/python3 can import torch; otherwise only ctorch's figures
#   are shown. This script builds nothing.
#
# The environment is used as it is, OPENBLAS_CORETYPE included: OpenBLAS may
# mis-detect a virtual CPU (e.g. as "Prescott"), and both sides print the
# core they got, so that a table says which GEMM kernels it measured.
#
# Ratios are "speedup of ctorch": PyTorch time / ctorch time for the timed
# workloads (W0 µs/op, W1 µs/step, W3 s), ctorch rate / PyTorch rate for the
# others (GFLOP/s, img/s), so a ratio above 1 always means ctorch is faster.
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
ops_ids= train_ids=
for id in $ids; do
    case $id in W0|W2) ops_ids="$ops_ids $id" ;; *) train_ids="$train_ids $id" ;; esac
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

# Join the two outputs on the label (the text before ": ").
awk -F': ' '
    FILENAME == ARGV[1] { if ($1 !~ /^#/) ct[$1] = $2; next }
    $1 !~ /^#/ { pt[$1] = $2; order[++n] = $1 }
    END {
        printf "%-34s %12s %12s %16s\n", "workload", "ctorch", "PyTorch", "ctorch speedup"
        for (i = 1; i <= n; i++) {
            k = order[i]
            if (!(k in ct)) { printf "%-34s %12s %12.3f %16s\n", k, "-", pt[k], "-"; continue }
            c = ct[k] + 0; p = pt[k] + 0
            if (k ~ /\(us\/op\)/ || k ~ /\(us\)/ || k ~ /\(s\)/) r = (c > 0) ? p / c : 0
            else r = (p > 0) ? c / p : 0
            printf "%-34s %12.3f %12.3f %15.2fx\n", k, c, p, r
        }
        print ""
        print "ctorch speedup > 1 means ctorch is faster: PyTorch time / ctorch time for"
        print "W0, W1, W3 (lower is better), ctorch rate / PyTorch rate for W2, W4-W6."
    }' "$tmp/ctorch.txt" "$tmp/torch.txt"
