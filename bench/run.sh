#!/bin/sh
# run.sh — time workloads W0 and W2 on ctorch and, in the same run, on
# PyTorch, and print them side by side with their ratio.
#
# Usage: bench/run.sh path/to/bench_ops [threads]
#   threads defaults to 2. PyTorch runs when $CT_TORCH_PYTHON (a python with
#   torch) is set, or when /usr/bin/python3 can import torch; otherwise only
#   ctorch's figures are shown. This script builds nothing.
#
# Ratios are "speedup of ctorch": PyTorch time / ctorch time for W0 (µs per
# op, lower is better) and ctorch GFLOP/s / PyTorch GFLOP/s for W2, so in
# both cases a ratio above 1 means ctorch is faster.
set -eu

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 path/to/bench_ops [threads]" >&2
    exit 2
fi
bench_ops=$1
threads=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== ctorch ($bench_ops, $threads threads)"
"$bench_ops" "$threads" | tee "$tmp/ctorch.txt"

python=${CT_TORCH_PYTHON:-/usr/bin/python3}
if [ -x "$python" ] || command -v "$python" >/dev/null 2>&1; then
    if "$python" -c 'import torch' >/dev/null 2>&1; then
        echo "== PyTorch ($python, $threads threads)"
        "$python" "$here/torch_w0_w2.py" "$threads" | tee "$tmp/torch.txt"
    fi
fi

echo
if [ ! -s "$tmp/torch.txt" ] 2>/dev/null; then
    echo "PyTorch is not importable (set CT_TORCH_PYTHON to a python with torch): no ratios."
    exit 0
fi

# Join the two outputs on the label (the text before ": ").
awk -F': ' '
    FNR == NR { if ($1 !~ /^#/) ct[$1] = $2; next }
    $1 !~ /^#/ { pt[$1] = $2; order[++n] = $1 }
    END {
        printf "%-26s %12s %12s %16s\n", "workload", "ctorch", "PyTorch", "ctorch speedup"
        for (i = 1; i <= n; i++) {
            k = order[i]
            if (!(k in ct)) continue
            c = ct[k] + 0; p = pt[k] + 0
            if (k ~ /\(us\/op\)/ || k ~ /\(us\)/ || k ~ /\(s\)/) r = (c > 0) ? p / c : 0
            else r = (p > 0) ? c / p : 0
            printf "%-26s %12.3f %12.3f %15.2fx\n", k, c, p, r
        }
        print ""
        print "ctorch speedup > 1 means ctorch is faster: PyTorch time / ctorch time for W0"
        print "(us/op, lower is better), ctorch GFLOP/s / PyTorch GFLOP/s for W2."
    }' "$tmp/ctorch.txt" "$tmp/torch.txt"
