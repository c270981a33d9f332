#!/bin/sh
# run-ddp.sh — issue 17's scaling figures on this machine: W4 training
# (batch 128 per process) in one process and in two under mpirun with
# DistributedDataParallel, and how much of the all-reduce backward hides.
# Usage: bench/run-ddp.sh path/to/bench_train   (bench_ddp beside it)
set -eu
bench_train=$1
bench_ddp=$(dirname "$1")/bench_ddp
mpirun="mpirun --allow-run-as-root --oversubscribe"
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "== one process, 1 thread and $(nproc) threads (bench_train W4)"
"$bench_train" 1 W4 | grep '^W4'
"$bench_train" "$(nproc)" W4 | grep '^W4'
echo "== DDP, 1 thread per process (bench_ddp)"
$mpirun -np 1 "$bench_ddp" 1
$mpirun -np 2 "$bench_ddp" 1
echo "== DDP with 0.25 MiB buckets (the CNN's 0.9 MB of gradients fit the default first bucket of 1 MiB)"
$mpirun -np 2 "$bench_ddp" 1 0.25
