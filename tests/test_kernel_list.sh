#!/bin/sh
# test_kernel_list.sh — src/kernels/kernels.def must list every kernel of
# the .kh files in src/kernels/, once, in the order they are defined (the
# GPU backends index their kernel tables by position in that list; OpenCL
# looks kernels up by name, CUDA by address, so a missing or extra entry
# would launch the wrong kernel or none).
# Usage: test_kernel_list.sh <source root>
set -eu
root=${1:?usage: test_kernel_list.sh <source root>}
k=$root/src/kernels
defined=$(for f in conv data elementwise index loss matmul_int nn reduce softmax; do
  sed -n 's/^K_KERNEL \([a-z0-9_]*\)(.*/\1/p' "$k/$f.kh"; done)
listed=$(sed -n 's/^CT_KERNEL(\([a-z0-9_]*\))$/\1/p' "$k/kernels.def")
# every .kh file is one of the nine above
extra=$(ls "$k"/*.kh | sed 's|.*/||; s|\.kh$||' | grep -v -x -E 'conv|data|elementwise|index|loss|matmul_int|nn|reduce|softmax' || true)
if [ -n "$extra" ]; then echo "kernel files not covered by this check: $extra"; exit 1; fi
if [ "$defined" != "$listed" ]; then
  echo "kernels.def does not match the kernels of src/kernels (defined < > listed):"
  t=$(mktemp -d)
  echo "$defined" >"$t/defined"; echo "$listed" >"$t/listed"
  diff "$t/defined" "$t/listed" || true
  rm -rf "$t"
  exit 1
fi
n=$(echo "$listed" | wc -l)
if [ "$(echo "$listed" | sort | uniq -d)" != "" ]; then echo "kernels.def lists a kernel twice"; exit 1; fi
echo "kernels.def lists all $n kernels in order"
