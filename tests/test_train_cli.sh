#!/bin/sh
# test_train_cli.sh — end-to-end tests of ctorch-train on the real
# Fashion-MNIST files (Debian's dataset-fashion-mnist), on small subsets so
# the whole file runs in a minute or two:
#   - --help, usage errors (exit 2), a missing data set (exit 3, names the file);
#   - training learns: accuracy after one short epoch is far above chance;
#   - exact resume: 2 epochs in one run == 1 epoch, stop, resume for the 2nd
#     (bitwise equal losses and accuracy, one thread), also via --resume PATH;
#   - --amp bf16 learns as float32 does; --amp fp16 resumes exactly (the
#     gradient scaler's state travels in the checkpoint);
#   - --distributed under `mpirun -np 2` learns as one process does, and only
#     rank 0 reports and writes checkpoints; --data-parallel over two OpenCL
#     devices trains as one device does; --profile writes the kernel table
#     and a Chrome trace;
#   - checkpoints load back with --eval-only and give the same accuracy;
#   - the TensorBoard log exists and parses (tools/check_tensorboard.py, when
#     the tensorboard package is importable);
#   - ResNet-18 (1-channel images to RGB, augmentation) resumes exactly too;
#   - an OpenCL device trains too (and agrees with the CPU) when one exists;
#     a missing device fails when an OpenCL runtime is installed.
# Usage: test_train_cli.sh path/to/ctorch-train source-dir. Exits 77 (skip)
# when the data set is not installed.
set -u
train=$1
src=$2
. "$(dirname "$0")/train_testutil.sh"
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
# Everything but the throughput and the timings must be identical.
strip() { sed 's/, "images_per_s": .*$//' "$1"; }
if [ "$(strip "$tmp/full.jsonl")" = "$(strip "$tmp/part.jsonl")" ]; then
    pass "resume is exact (losses and accuracy bitwise equal)"
else
    fail "resume differs:"; strip "$tmp/full.jsonl"; strip "$tmp/part.jsonl"
fi

# ---- --profile N: the kernel table and a Chrome trace beside the logs ---------------------------
"$train" --epochs 1 $small --device cpu --profile 2 --logdir "$tmp/prof" > "$tmp/prof.out" 2>&1 \
    || fail "--profile run: $(cat "$tmp/prof.out")"
if grep -q "profile of 2 training steps" "$tmp/prof.out" && grep -q "conv2d_relu" "$tmp/prof.out" \
    && [ -s "$tmp/prof/trace.json" ] \
    && { ! command -v python3 > /dev/null 2>&1 || python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/prof/trace.json"; }; then
    pass "--profile 2 prints the kernel table and writes a valid trace.json"
else
    fail "--profile: $(cat "$tmp/prof.out")"
fi

# ---- --distributed: 2 ranks under mpirun, 32 images each per step, learn as one process on 64 ----
if command -v mpirun > /dev/null 2>&1 && "$train" --help | grep -q -- "--distributed"; then
    dist="--distributed --epochs 2 --limit-train 1000 --limit-test 512 --batch-size 32 --threads 1 --progress none"
    dist="$dist --seed 7 --device cpu --workers 1"
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe -np 2 "$train" $dist --ckpt-dir "$tmp/ckdist" \
        --metrics "$tmp/dist.jsonl" > "$tmp/dist.out" 2>&1; rc=$?
    accd=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$tmp/dist.out" | tail -1)
    if [ $rc -eq 0 ] && [ "$(grep -c "^done in" "$tmp/dist.out")" -eq 1 ] && grep -q "distributed: 2 processes" "$tmp/dist.out" \
        && [ -d "$tmp/ckdist/epoch-2" ] && awk -v a="${accd:-0}" -v f="${acc:-0}" 'BEGIN { exit !(a / 100 > f - 0.05) }'; then
        pass "--distributed (2 ranks) learns as one process: test accuracy ${accd}% (one process: $acc); rank 0 alone reports and saves"
    else
        fail "--distributed: rc $rc, accuracy ${accd:-?}% vs $acc: $(cat "$tmp/dist.out")"
    fi
    # exact resume with the same world size: epoch 1, stop, resume for epoch 2
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe -np 2 "$train" $dist --stop-after 1 --ckpt-dir "$tmp/ckd2" \
        --metrics "$tmp/dist2.jsonl" > "$tmp/out" 2>&1 || fail "--distributed first half: $(cat "$tmp/out")"
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe -np 2 "$train" $dist --resume auto --ckpt-dir "$tmp/ckd2" \
        --metrics "$tmp/dist2.jsonl" > "$tmp/out" 2>&1 || fail "--distributed resumed half: $(cat "$tmp/out")"
    [ "$(strip "$tmp/dist.jsonl")" = "$(strip "$tmp/dist2.jsonl")" ] \
        && pass "--distributed resume with the same world size is exact" \
        || { fail "--distributed resume differs:"; strip "$tmp/dist.jsonl"; strip "$tmp/dist2.jsonl"; }
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe -np 1 "$train" $dist --resume auto --ckpt-dir "$tmp/ckd2" \
        > "$tmp/out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q "written by 2 process(es) and this run has 1" "$tmp/out" \
        && pass "--distributed resume with another world size is refused" \
        || fail "--distributed resume with 1 rank: rc $rc: $(cat "$tmp/out")"
else
    echo "skip: --distributed: no mpirun"
fi

# ---- mixed precision: --amp bf16 learns; --amp fp16 (with the scaler) resumes exactly --------
"$train" --amp fp32 $small > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown --amp 'fp32'" "$tmp/out" && pass "bad --amp is a usage error" \
    || fail "bad --amp: rc $rc: $(cat "$tmp/out")"
"$train" --epochs 2 $small --device cpu --amp bf16 --metrics "$tmp/bf16.jsonl" > "$tmp/bf16.out" 2>&1 \
    || fail "--amp bf16 run: $(cat "$tmp/bf16.out")"
acc16=$(sed -n 's/.*"test_accuracy": \([0-9.e-]*\).*/\1/p' "$tmp/bf16.jsonl" | tail -1)
grep -q "autocast to bfloat16" "$tmp/bf16.out" && awk -v a="${acc16:-0}" -v f="${acc:-0}" 'BEGIN { exit !(a > f - 0.05) }' \
    && pass "--amp bf16 learns: test accuracy $acc16 (float32: $acc)" \
    || fail "--amp bf16: accuracy $acc16 vs float32 $acc: $(cat "$tmp/bf16.out")"
"$train" --epochs 2 $small --device cpu --amp fp16 --metrics "$tmp/fp16.jsonl" > "$tmp/fp16.out" 2>&1 \
    || fail "--amp fp16 run: $(cat "$tmp/fp16.out")"
"$train" --epochs 2 --stop-after 1 $small --device cpu --amp fp16 --ckpt-dir "$tmp/ck16" --metrics "$tmp/fp16p.jsonl" \
    > "$tmp/out" 2>&1 || fail "--amp fp16 first half: $(cat "$tmp/out")"
"$train" --epochs 2 $small --device cpu --amp fp16 --ckpt-dir "$tmp/ck16" --resume auto --metrics "$tmp/fp16p.jsonl" \
    > "$tmp/out" 2>&1 || fail "--amp fp16 resumed half: $(cat "$tmp/out")"
if [ "$(strip "$tmp/fp16.jsonl")" = "$(strip "$tmp/fp16p.jsonl")" ] \
    && grep -q "trainer.amp_scale" "$tmp/ck16/epoch-1/optim.safetensors"; then
    pass "--amp fp16 resume is exact (the scaler's state is in the checkpoint)"
else
    fail "--amp fp16 resume differs:"; strip "$tmp/fp16.jsonl"; strip "$tmp/fp16p.jsonl"
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
if [ ! -f "$src/tools/check_tensorboard.py" ]; then
    fail "TensorBoard check: $src/tools/check_tensorboard.py is missing"
elif ! command -v "$py" > /dev/null 2>&1; then
    echo "skip: TensorBoard check ($py not found)"
else
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
        77) echo "skip: TensorBoard check (the tensorboard package is not installed for $py)" ;;
        *) fail "TensorBoard check: $(cat "$tmp/tbcheck")" ;;
    esac
fi

# ---- an OpenCL device ----------------------------------------------------------------
# ctorch-info (built beside ctorch-train) tells whether ctorch sees an OpenCL
# device. With none the run is skipped only when none can exist (no OpenCL
# backend, or no OpenCL runtime: no platform and no ICD file), and fails
# otherwise, as the C tests decide (testutil's ct_test_opencl_expected).
opencl_icd_installed() {
    vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    [ -n "${OCL_ICD_FILENAMES:-}" ] && return 0
    [ -f "$vendors" ] && return 0
    ls "$vendors"/*.icd > /dev/null 2>&1
}
# Prints "device", "expected" (none, but one must exist), "broken" (ctorch-info
# failed) or "absent: why".
opencl_state() {
    info="$(dirname "$train")/ctorch-info"
    if [ ! -x "$info" ]; then
        echo "absent: no ctorch-info beside $train to ask"
        return
    fi
    if ! "$info" --format json > "$tmp/info.json" 2> "$tmp/info.err"; then
        echo broken
        return
    fi
    if grep -q '"backend": "opencl"' "$tmp/info.json"; then
        echo device
    elif ! grep -q '"opencl_compiled": true' "$tmp/info.json"; then
        echo "absent: ctorch is built without OpenCL"
    elif grep -q '"platforms": \[$' "$tmp/info.json" || opencl_icd_installed; then
        echo expected
    else
        echo "absent: no OpenCL runtime is installed"
    fi
}
# The same short run on the CPU and on opencl:0 must learn (as the CPU run
# above: accuracy > 0.5) and agree: the devices differ only in rounding.
cl_run="--epochs 1 --limit-train 1024 --limit-test 256 --batch-size 64 --progress none --seed 3 --workers 1"
cl_state=$(opencl_state)
case $cl_state in
device)
    # shellcheck disable=SC2086
    "$train" --device opencl:0 $cl_run --metrics "$tmp/cl.jsonl" > "$tmp/cl.out" 2>&1 \
        || fail "opencl run: $(cat "$tmp/cl.out")"
    # shellcheck disable=SC2086
    "$train" --device cpu $cl_run --metrics "$tmp/cl-cpu.jsonl" > "$tmp/cl-cpu.out" 2>&1 \
        || fail "cpu twin of the opencl run: $(cat "$tmp/cl-cpu.out")"
    metric() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | tail -1; }
    cl_acc=$(metric "$tmp/cl.jsonl" test_accuracy)
    awk -v a="${cl_acc:-0}" 'BEGIN { exit !(a > 0.5) }' && pass "trains on opencl:0 (pinned batches): test accuracy $cl_acc" \
        || fail "opencl:0 test accuracy ${cl_acc:-none} (expected > 0.5): $(cat "$tmp/cl.out")"
    # losses to 1e-4 relative; accuracy to 2 of the 256 test images
    for check in train_loss,1e-4,0 test_loss,1e-4,0 test_accuracy,0,0.008; do
        key=${check%%,*} tol=${check#*,}
        a=$(metric "$tmp/cl.jsonl" "$key") b=$(metric "$tmp/cl-cpu.jsonl" "$key")
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" -v r="${tol%,*}" -v t="${tol#*,}" \
            'BEGIN { d = a - b; m = b < 0 ? -b : b; exit !((d < 0 ? -d : d) <= r * m + t) }' \
            && pass "opencl:0 $key $a agrees with the cpu's $b" || fail "opencl:0 $key ${a:-none} vs cpu ${b:-none}"
    done
    # --data-parallel over both PoCL devices: the same run, the batch split in two
    # shellcheck disable=SC2086
    "$train" --device opencl:0 --data-parallel $cl_run --metrics "$tmp/dp.jsonl" > "$tmp/dp.out" 2>&1 \
        || fail "--data-parallel run: $(cat "$tmp/dp.out")"
    a=$(metric "$tmp/dp.jsonl" train_loss) b=$(metric "$tmp/cl.jsonl" train_loss)
    if grep -q "only one opencl device" "$tmp/dp.out"; then
        echo "skip: --data-parallel: one OpenCL device (POCL_DEVICES=\"pthread pthread\" gives two)"
    else
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !((d < 0 ? -d : d) <= 1e-4 * b) }' \
            && pass "--data-parallel on two OpenCL devices: train loss $a, as on one ($b)" \
            || fail "--data-parallel train loss ${a:-none} vs one device ${b:-none}: $(cat "$tmp/dp.out")"
    fi
    ;;
broken)
    fail "ctorch-info --format json failed: $(cat "$tmp/info.err")"
    ;;
expected)
    fail "ctorch has the OpenCL backend and an OpenCL runtime is installed, but ctorch-info lists no OpenCL device:$(grep -E '"(detail|device_count|name)"' "$tmp/info.json" | tr -s ' \n' ' ')"
    ;;
*)
    echo "skip: opencl run (${cl_state#absent: })"
    ;;
esac

echo "$failures failure(s)"
[ $failures -eq 0 ]
