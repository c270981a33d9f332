#!/bin/sh
# run-train.sh — the main job's quality bar and speed, side by side with
# PyTorch: runs ctorch-train and bench/torch_train_fmnist.py (the same loop in
# PyTorch) with the same model, data, batch size, optimizer, schedule, epochs,
# threads and loader workers, one after the other, and prints each program's
# per-epoch lines and a summary (final test accuracy, mean training img/s,
# ratio). Nothing is built here.
#
# Usage: bench/run-train.sh path/to/ctorch-train [epochs] [threads] [options...]
#   Options after threads go to both programs (the ones they share: --model
#   cnn|resnet18, --augment, --batch-size, --lr, --limit-train, --limit-test), e.g.
#   bench/run-train.sh build/ctorch-train 1 2 --model resnet18 --augment --batch-size 256 --lr 0.1
#   PyTorch runs when $CT_TORCH_PYTHON (a python with torch) is set or when
#   /usr/bin/python3 can import torch. The environment is used as it is
#   (OPENBLAS_CORETYPE included; ctorch-train fixes a "Prescott" mis-detection
#   itself, see docs/trainer.md, so set OPENBLAS_CORETYPE to compare like with like).
set -eu
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 path/to/ctorch-train [epochs] [threads] [options for both programs...]" >&2
    exit 2
fi
train=$1
epochs=${2:-5}
threads=${3:-2}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== ctorch-train --epochs $epochs --threads $threads --seed 7 --device cpu $* (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset})"
"$train" --epochs "$epochs" --threads "$threads" --seed 7 --device cpu --progress none "$@" | tee "$out/ctorch"

py=${CT_TORCH_PYTHON:-/usr/bin/python3}
if "$py" -c "import torch" 2>/dev/null; then
    echo "== PyTorch: bench/torch_train_fmnist.py --epochs $epochs --threads $threads $*"
    "$py" "$here/torch_train_fmnist.py" --epochs "$epochs" --threads "$threads" "$@" | tee "$out/torch"
else
    echo "(PyTorch not importable with $py: ctorch only)"
fi

summary() { # file -> "final_accuracy mean_img_s"
    awk '/^epoch [0-9]+\/[0-9]+  train loss/ {
             for (i = 1; i <= NF; i++) { if ($i == "accuracy") acc = $(i + 1); if ($i == "img/s") { s += $(i - 1); n++ } }
         } END { if (n) printf "%s %.0f\n", acc, s / n }' "$1"
}
echo "== summary (final test accuracy, mean training images/s over the epochs)"
set -- $(summary "$out/ctorch")
echo "ctorch:  accuracy $1  $2 img/s"
if [ -f "$out/torch" ]; then
    c=$2
    set -- $(summary "$out/torch")
    echo "PyTorch: accuracy $1  $2 img/s"
    awk -v c="$c" -v t="$2" 'BEGIN { printf "ctorch / PyTorch images per second: %.2f\n", c / t }'
fi
