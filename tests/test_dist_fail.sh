#!/bin/sh
# test_dist_fail.sh — a distributed job whose rank stops or hangs ends with
# an error on the others, never a silent hang (issue 17; ctorch/distributed.h).
#   hang: rank 1 stops answering; rank 0's all-reduce fails with
#         CT_ERR_TIMEOUT after the group's 2 s timeout, names the wait, and
#         the job ends non-zero well before rank 1 would wake (20 s).
#   exit: rank 1 dies; mpirun ends rank 0, which waits in an all-reduce.
# Usage: test_dist_fail.sh path/to/test_dist path/to/mpirun
set -u
bin=$1 mpirun=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

run() { # mode: runs the job with a 60 s guard, output in $out, sets rc and secs
    start=$(date +%s)
    timeout 60 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$bin" --fail "$1" > "$out" 2>&1
    rc=$? secs=$(( $(date +%s) - start ))
}

run hang
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$secs" -ge 15 ] ||
   ! grep -q "rank 0: all_reduce returned CT_ERR_TIMEOUT: all_reduce: rank 0 of 2 waited" "$out"; then
    echo "FAIL hang: exit $rc after ${secs}s; output:"; cat "$out"; fail=1
else
    echo "ok hang: rank 0 timed out and the job ended (exit $rc) after ${secs}s"
fi

run exit
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$secs" -ge 30 ]; then
    echo "FAIL exit: exit $rc after ${secs}s; output:"; cat "$out"; fail=1
else
    echo "ok exit: the job ended (exit $rc) after ${secs}s"
fi
exit $fail
