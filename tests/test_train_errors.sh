#!/bin/bash
# test_train_errors.sh — ctorch-train when things go wrong: every failure
# gets its documented exit code and a message that names the problem.
#   - damaged checkpoints (a flipped bit in a weight, in the metadata): an
#     explicit --resume refuses them naming the file; --resume auto skips
#     them for the newest intact one; none intact is exit 2;
#   - an unwritable checkpoint folder is exit 2 before any training; a file
#     size limit (ulimit -f) is exit 5 with a message, not death by SIGXFSZ;
#   - out of memory (ulimit -v) is exit 4 with the allocator's message, both
#     when the limit is too small to start and when an allocation fails;
#   - a second SIGTERM ends a run that has not reached a safe point;
#   - bad values: --lr inf, --resume /etc, a bad --logdir or --metrics, and
#     --eval-only --resume auto with no checkpoint are exit 2.
# Usage: test_train_errors.sh path/to/ctorch-train. Bash (ulimit -v/-f).
# Exits 77 (skip) when Fashion-MNIST is not installed.
set -u
train=$1
. "$(dirname "$0")/train_testutil.sh"
small=(--model mlp --limit-train 256 --limit-test 128 --batch-size 64 --threads 1 --workers 0 --progress none --seed 5)

# expect CODE NEEDLE WHAT -- command...: exit code CODE and NEEDLE in the output.
expect() {
    local code=$1 needle=$2 what=$3
    shift 4
    "$@" > "$tmp/out" 2>&1
    local rc=$?
    if [ $rc -eq "$code" ] && grep -q -- "$needle" "$tmp/out"; then pass "$what"
    else fail "$what: exit $rc (expected $code), output: $(tail -3 "$tmp/out")"; fi
}

# Flip one bit of byte OFFSET of FILE (negative: from the end).
flip() {
    local file=$1 off=$2 size
    size=$(stat -c %s "$file")
    [ "$off" -lt 0 ] && off=$((size + off))
    local byte
    byte=$(od -An -tu1 -j "$off" -N1 "$file" | tr -d ' ')
    printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$file" bs=1 seek="$off" conv=notrunc status=none
}

# ---- damaged checkpoints -------------------------------------------------------------------
"$train" "${small[@]}" --epochs 2 --ckpt-dir "$tmp/ck" > "$tmp/train.out" 2>&1 || fail "training: $(cat "$tmp/train.out")"
cp -r "$tmp/ck" "$tmp/ck-clean"
flip "$tmp/ck/epoch-2/model.safetensors" -100          # a weight
expect 2 "checksum mismatch" "a flipped weight bit is refused (--resume PATH)" -- \
    "$train" "${small[@]}" --epochs 3 --resume "$tmp/ck/epoch-2"
grep -q "epoch-2/model.safetensors" "$tmp/out" && pass "the message names the damaged file" \
    || fail "the message does not name the file: $(cat "$tmp/out")"
expect 0 "resumed from .*epoch-1 after epoch 1" "--resume auto falls back to the newest intact checkpoint" -- \
    "$train" "${small[@]}" --epochs 3 --ckpt-dir "$tmp/ck" --resume auto
grep -q "skipping the damaged checkpoint .*epoch-2" "$tmp/out" && pass "the fallback is announced" \
    || fail "no warning about the damaged checkpoint"

rm -rf "$tmp/ck" && cp -r "$tmp/ck-clean" "$tmp/ck"
off=$(grep -abo '"trainer.epoch":"2"' "$tmp/ck/epoch-2/optim.safetensors" | cut -d: -f1)
flip "$tmp/ck/epoch-2/optim.safetensors" $((off + 17))  # trainer.epoch 2 -> 6
expect 2 "checksum mismatch" "a flipped metadata bit (trainer.epoch) is refused" -- \
    "$train" "${small[@]}" --epochs 3 --resume "$tmp/ck/epoch-2"
flip "$tmp/ck/epoch-1/optim.safetensors" -8             # the last state tensor
expect 2 "no intact checkpoint" "all checkpoints damaged: exit 2" -- \
    "$train" "${small[@]}" --epochs 3 --ckpt-dir "$tmp/ck" --resume auto
expect 2 "written with --batch-size 64 and 256 training images; this run has 32" \
    "a checkpoint of another batch size is refused" -- \
    "$train" "${small[@]}" --batch-size 32 --epochs 3 --resume "$tmp/ck-clean/epoch-2"

# ---- checkpoint folder and file size ---------------------------------------------------------
: > "$tmp/a-file"
expect 2 "cannot create the folder" "an unusable --ckpt-dir is exit 2 before training" -- \
    "$train" "${small[@]}" --epochs 1 --ckpt-dir "$tmp/a-file/ck"
grep -q "epoch 1/1" "$tmp/out" && fail "it trained before noticing the folder"
expect 5 "File too large" "ulimit -f: exit 5 with the write error" -- \
    bash -c "ulimit -f 200; exec \"\$0\" \"\$@\"" "$train" "${small[@]}" --epochs 1 --ckpt-dir "$tmp/ck-small"
[ -e "$tmp/ck-small/latest" ] && fail "ulimit -f: a checkpoint was recorded as saved"

# ---- memory -----------------------------------------------------------------------------------
# AddressSanitizer reserves terabytes of shadow memory and cannot start under
# `ulimit -v`: the release run of the suite checks these.
if ldd "$train" 2>/dev/null | grep -q libasan; then
    echo "skip: the ulimit -v checks (AddressSanitizer cannot run under an address-space limit)"
else
expect 4 "address-space limit (ulimit -v)" "too little address space to start: exit 4 at once" -- \
    timeout -k 2 60 bash -c "ulimit -v 300000; exec \"\$0\" \"\$@\"" "$train" --device cpu --model cnn \
    --limit-train 256 --epochs 1 --batch-size 128 --progress none
expect 4 "not enough memory" "an allocation that fails mid-training: exit 4 with the allocator's message" -- \
    timeout -k 2 120 bash -c "ulimit -v 700000; exec \"\$0\" \"\$@\"" "$train" --device cpu --model cnn \
    --limit-train 8192 --limit-test 128 --batch-size 8192 --threads 1 --workers 0 --epochs 1 --progress none
fi

# ---- signals ------------------------------------------------------------------------------------
# Two SIGTERMs while the data set loads (before any point that checks for a
# stop): the second one ends the process.
"$train" --model mlp --epochs 1 --progress none > "$tmp/sig.out" 2>&1 &
pid=$!
sleep 0.05; kill -TERM $pid; sleep 0.02; kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] && pass "a second SIGTERM ends the run" || fail "two SIGTERMs: exit $rc (expected 143)"
"$train" --model mlp --epochs 5 --threads 1 --progress none > "$tmp/sig.out" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q "parameters" "$tmp/sig.out" && break; sleep 0.1; done
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q "interrupted during epoch" "$tmp/sig.out" && pass "one SIGTERM stops cleanly: exit 130" \
    || fail "one SIGTERM: exit $rc: $(tail -2 "$tmp/sig.out")"

# ---- bad values -----------------------------------------------------------------------------------
expect 2 "expects a positive number, got 'inf'" "--lr inf" -- "$train" --lr inf
expect 2 "not a checkpoint folder\|cannot resume from /etc" "--resume /etc" -- "$train" "${small[@]}" --resume /etc
expect 2 "\-\-logdir" "a --logdir that cannot be created" -- "$train" "${small[@]}" --logdir "$tmp/a-file/tb"
expect 2 "\-\-metrics" "a --metrics file that cannot be opened" -- "$train" "${small[@]}" --metrics "$tmp/a-file/m"
mkdir "$tmp/empty"
expect 2 "no checkpoint in .* to evaluate" "--eval-only --resume auto with no checkpoint" -- \
    "$train" "${small[@]}" --eval-only --resume auto --ckpt-dir "$tmp/empty"

[ $failures -eq 0 ] && echo "all error checks passed" && exit 0
echo "$failures error checks failed"
exit 1
