#!/bin/sh
# test_train_cli.sh — end-to-end tests of ctorch-train on the real
# Fashion-MNIST files (Debian's dataset-fashion-mnist), on small subsets so
# the whole file runs in a minute or two:
#   - --help, usage errors (exit 2), a missing data set (exit 3, names the file);
#   - training learns: accuracy after one short epoch is far above chance;
#   - exact resume: 2 epochs in one run == 1 epoch, stop, resume for the 2nd
#     (bitwise equal losses and accuracy, one thread), also via --resume PATH;
#   - checkpoints load back with --eval-only and give the same accuracy;
#   - the TensorBoard log exists and parses (tools/check_tensorboard.py, when
#     the tensorboard package is importable);
#   - ResNet-18 (1-channel images to RGB, augmentation) resumes exactly too;
#   - an OpenCL device trains too, when one exists.
# Usage: test_train_cli.sh path/to/ctorch-train source-dir. Exits 77 (skip)
# when the data set is not installed.
set -u
train=$1
src=$2
data=/usr/share/datasets/fashion-mnist
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
    echo "SKIP: $data is not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# Small, deterministic runs on one thread.
small="--limit-train 1024 --limit-test 512 --batch-size 64 --threads 1 --progress none --seed 7"

# ---- command line -------------------------------------------------------------
"$train" --help > "$tmp/help" 2>&1 && grep -q -- "--resume" "$tmp/help" && grep -q -- "--logdir" "$tmp/help" \
    && pass "--help" || fail "--help"
"$train" --epochs nope > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "epochs expects" "$tmp/out" && pass "bad --epochs is a usage error" \
    || fail "bad --epochs: rc $rc: $(cat "$tmp/out")"
"$train" --model transformer > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown model 'transformer'" "$tmp/out" && pass "unknown model" || fail "unknown model: rc $rc"
"$train" --device cuda:3 --epochs 1 $small > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "cuda" "$tmp/out" && pass "absent device is a usage error" \
    || fail "absent device: rc $rc: $(cat "$tmp/out")"
mkdir "$tmp/empty"
"$train" --data-dir "$tmp/empty" --epochs 1 $small > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 3 ] && grep -q "train-images-idx3-ubyte" "$tmp/out" && pass "missing data set: exit 3 naming the file" \
    || fail "missing data set: rc $rc: $(cat "$tmp/out")"

# ---- learning, exact resume, checkpoints, logs ------------------------------------
"$train" --epochs 2 $small --device cpu --metrics "$tmp/full.jsonl" --logdir "$tmp/tb" > "$tmp/full.out" 2>&1 \
    || fail "2-epoch run: $(cat "$tmp/full.out")"
acc=$(sed -n 's/.*"test_accuracy": \([0-9.e-]*\).*/\1/p' "$tmp/full.jsonl" | tail -1)
awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.5) }' && pass "learns: test accuracy $acc after 2 short epochs" \
    || fail "accuracy $acc after 2 short epochs (expected > 0.5, chance is 0.1)"

"$train" --epochs 2 --stop-after 1 $small --device cpu --ckpt-dir "$tmp/ck" --metrics "$tmp/part.jsonl" \
    > "$tmp/p1.out" 2>&1 \
    || fail "first half: $(cat "$tmp/p1.out")"
"$train" --epochs 2 $small --device cpu --ckpt-dir "$tmp/ck" --resume auto --metrics "$tmp/part.jsonl" \
    > "$tmp/p2.out" 2>&1 || fail "resumed half: $(cat "$tmp/p2.out")"
grep -q "resumed from .*epoch-1 after epoch 1" "$tmp/p2.out" && pass "resume auto finds epoch-1" \
    || fail "resume message: $(cat "$tmp/p2.out")"
# Everything but the throughput must be identical.
strip() { sed 's/, "images_per_s": [0-9.]*//' "$1"; }
if [ "$(strip "$tmp/full.jsonl")" = "$(strip "$tmp/part.jsonl")" ]; then
    pass "resume is exact (losses and accuracy bitwise equal)"
else
    fail "resume differs:"; strip "$tmp/full.jsonl"; strip "$tmp/part.jsonl"
fi
[ -f "$tmp/ck/latest" ] && [ "$(cat "$tmp/ck/latest")" = "epoch-2" ] && [ -f "$tmp/ck/epoch-2/model.safetensors" ] \
    && pass "checkpoint folders and latest pointer" || fail "checkpoint layout: $(ls -R "$tmp/ck")"

# Resuming from an explicit folder re-runs epoch 2 identically.
"$train" --epochs 2 $small --device cpu --resume "$tmp/ck/epoch-1" --metrics "$tmp/again.jsonl" \
    > "$tmp/p3.out" 2>&1 || fail "resume PATH: $(cat "$tmp/p3.out")"
[ "$(strip "$tmp/again.jsonl")" = "$(strip "$tmp/full.jsonl" | tail -1)" ] && pass "resume from a folder is exact" \
    || fail "resume PATH differs: $(cat "$tmp/again.jsonl")"

# --eval-only on the saved weights reproduces the last accuracy.
"$train" --eval-only --weights "$tmp/ck/epoch-2/model.safetensors" $small --device cpu > "$tmp/eval.out" 2>&1 \
    || fail "eval-only: $(cat "$tmp/eval.out")"
want=$(awk -v a="$acc" 'BEGIN { printf "%.2f%%", a * 100 }')
grep -q "test accuracy $want" "$tmp/eval.out" && pass "eval-only reproduces $want" \
    || fail "eval-only: expected $want: $(cat "$tmp/eval.out")"

# A checkpoint of another model is refused with a clear message.
"$train" --epochs 2 $small --model mlp --device cpu --resume "$tmp/ck/epoch-1" > "$tmp/out" 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "written for model cnn" "$tmp/out" && pass "checkpoint of another model refused" \
    || fail "model mismatch: rc $rc: $(cat "$tmp/out")"

# ResNet-18 on 1-channel images (repeated to RGB) with augmentation: the random
# crops and flips are keyed by (seed, epoch, sample), and BatchNorm's running
# statistics travel in the checkpoint, so resuming is exact here too.
r18="--model resnet18 --augment --limit-train 256 --limit-test 128 --batch-size 64 --threads 1 --progress none --seed 5 --device cpu"
# shellcheck disable=SC2086
"$train" --epochs 2 $r18 --metrics "$tmp/r18-full.jsonl" > "$tmp/r18.out" 2>&1 \
    || fail "resnet18 run: $(cat "$tmp/r18.out")"
# shellcheck disable=SC2086
"$train" --epochs 2 --stop-after 1 $r18 --ckpt-dir "$tmp/r18ck" --metrics "$tmp/r18-part.jsonl" > "$tmp/r18.out" 2>&1 \
    && "$train" --epochs 2 $r18 --ckpt-dir "$tmp/r18ck" --resume auto --metrics "$tmp/r18-part.jsonl" \
        > "$tmp/r18.out" 2>&1 || fail "resnet18 stop/resume: $(cat "$tmp/r18.out")"
if [ "$(wc -l < "$tmp/r18-full.jsonl")" -eq 2 ] && [ "$(strip "$tmp/r18-full.jsonl")" = "$(strip "$tmp/r18-part.jsonl")" ]; then
    pass "resnet18 with augmentation: resume is exact"
else
    fail "resnet18 resume differs:"; cat "$tmp/r18-full.jsonl" "$tmp/r18-part.jsonl"
fi

# TensorBoard: one event file; checked with the tensorboard package if present.
ls "$tmp/tb"/events.out.tfevents.* > /dev/null 2>&1 && pass "TensorBoard event file written" \
    || fail "no event file in $tmp/tb"
py=${CT_PYTHON:-python3}
if [ -f "$src/tools/check_tensorboard.py" ] && command -v "$py" > /dev/null 2>&1; then
    # The per-epoch scalars must be the values of the metrics file, at its steps.
    expects=$(sed 's/[{}":,]/ /g' "$tmp/full.jsonl" | awk '{
        for (i = 1; i < NF; i++) v[$i] = $(i + 1)
        printf "--expect Loss/train,%s,%s --expect Loss/val,%s,%s --expect Accuracy/val,%s,%s ",
               v["global_step"], v["train_loss"], v["global_step"], v["test_loss"], v["global_step"], v["test_accuracy"]
    }')
    # shellcheck disable=SC2086
    "$py" "$src/tools/check_tensorboard.py" "$tmp/tb" --allow-extra $expects > "$tmp/tbcheck" 2>&1; rc=$?
    case $rc in
        0) pass "TensorBoard reads the log" ;;
        77) echo "skip: tensorboard is not installed for $py" ;;
        *) fail "TensorBoard check: $(cat "$tmp/tbcheck")" ;;
    esac
fi

# ---- an OpenCL device, when there is one -------------------------------------------
if "$train" --device opencl:0 --epochs 1 --limit-train 256 --limit-test 256 --batch-size 64 --progress none \
    --seed 3 --workers 1 > "$tmp/cl.out" 2>&1; then
    grep -q "test accuracy" "$tmp/cl.out" && pass "trains on opencl:0 (pinned batches)" || fail "opencl: $(cat "$tmp/cl.out")"
elif grep -q "opencl" "$tmp/cl.out" && ! grep -q "accuracy" "$tmp/cl.out"; then
    echo "skip: no OpenCL device ($(head -1 "$tmp/cl.out"))"
else
    fail "opencl run: $(cat "$tmp/cl.out")"
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
