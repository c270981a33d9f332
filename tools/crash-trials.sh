#!/bin/sh
# tools/crash-trials.sh — the long version of tests/test_train_crash.sh:
# every named crash point of a save plus N random SIGKILL trials (default
# 100), each resumed with --resume auto and compared bitwise with an
# uninterrupted run. Builds ctorch-train first if needed.
# Usage: tools/crash-trials.sh [N]
set -eu
cd "$(dirname "$0")/.."
n=${1:-100}
if [ ! -x build/main/ctorch-train ]; then
    cmake -S . -B build/main -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build/main --target ctorch-train
fi
exec sh tests/test_train_crash.sh build/main/ctorch-train "$n"
