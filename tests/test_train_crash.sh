#!/bin/sh
# test_train_crash.sh — ctorch-train's crash-safety guarantee, tried: a run
# killed with SIGKILL at any moment, then resumed with `--resume auto` (and
# killed again, maybe), must finish with checkpoint files bitwise identical
# to those of an uninterrupted run.
#
# Each trial kills at one of
#   - every named point of a save (CT_TRAIN_CRASH_AT, tools/train/safety.c:
#     before the save, after each file, after the folder's rename or
#     exchange, after latest is written and renamed), in each epoch's save,
#     including re-saving an epoch that `latest` already names;
#   - random moments (up to three kills per trial, the resumed runs too).
# Usage: test_train_crash.sh path/to/ctorch-train [random-trials]
# (default 12 random trials; tools/crash-trials.sh runs 100 and more).
# Exits 77 (skip) when Fashion-MNIST is not installed.
set -u
train=$1
random_trials=${2:-12}
. "$(dirname "$0")/train_testutil.sh"
epochs=3
opts="--model mlp --limit-train 512 --limit-test 128 --batch-size 64 --threads 1 --workers 0 --progress none
      --seed 11 --epochs $epochs"
run() { "$train" $opts "$@"; }

run --ckpt-dir "$tmp/ref" > "$tmp/ref.out" 2>&1 || { cat "$tmp/ref.out"; echo "FAIL: the reference run"; exit 1; }

# The run in folder $1 finishes with the reference's files and no leftovers.
same_as_reference() {
    for f in model.safetensors optim.safetensors; do
        cmp -s "$tmp/ref/epoch-$epochs/$f" "$1/epoch-$epochs/$f" || { echo "$f differs"; return 1; }
    done
    [ "$(cat "$1/latest")" = "epoch-$epochs" ] || { echo "latest is $(cat "$1/latest")"; return 1; }
    left=$(ls -A "$1" | grep '^\.' || true)
    [ -z "$left" ] || { echo "leftovers: $left"; return 1; }
}

# Resume until a run exits 0 (at most 6 runs); $1 the folder.
finish() {
    i=0
    while [ $i -lt 6 ]; do
        run --ckpt-dir "$1" --resume auto > "$1.out" 2>&1 && return 0
        rc=$?
        [ $rc -eq 137 ] || { echo "resume exited $rc: $(tail -3 "$1.out")"; return 1; }
        i=$((i + 1))
    done
    echo "no resume finished"; return 1
}

# ---- kills at named points ---------------------------------------------------------------
points="save-start model-written optim-written renamed exchanged latest-written latest-renamed"
named=0
for point in $points; do
    for k in 1 2 3; do
        dir="$tmp/p-$point-$k"
        if [ "$point" = exchanged ]; then
            # an exchange happens when the epoch's folder exists: re-save over a finished run
            cp -r "$tmp/ref" "$dir"
            CT_TRAIN_CRASH_AT="$point@$k" run --ckpt-dir "$dir" > "$dir.out" 2>&1
        else
            CT_TRAIN_CRASH_AT="$point@$k" run --ckpt-dir "$dir" > "$dir.out" 2>&1
        fi
        rc=$?
        [ $rc -eq 137 ] || { fail "$point@$k: expected a kill (137), exit $rc"; continue; }
        why=$(finish "$dir") && why=$(same_as_reference "$dir") || { fail "$point@$k: $why"; continue; }
        named=$((named + 1))
    done
done

# ---- states a crash leaves, built by hand ----------------------------------------------------
# A save killed inside a safetensors write leaves its temporary file in the
# half-built folder: the next run must clear it and save that epoch.
dir="$tmp/leftover"
mkdir -p "$dir/.epoch-1.tmp" && : > "$dir/.epoch-1.tmp/.model.safetensors.1-0.tmp"
why=$(finish "$dir") && why=$(same_as_reference "$dir") || fail "leftover temporary file: $why"
# Killed between the two renames of a replace (file systems without
# RENAME_EXCHANGE): epoch-2 is gone, .epoch-2.old holds it, latest names it.
dir="$tmp/between-renames"
cp -r "$tmp/ref" "$dir" && rm -rf "$dir/epoch-3" && echo epoch-2 > "$dir/latest"
mv "$dir/epoch-2" "$dir/.epoch-2.old"
why=$(finish "$dir") && why=$(same_as_reference "$dir") || fail "crash between renames: $why"
grep -q "restored .*epoch-2" "$dir.out" || fail "crash between renames: no note of the restored folder"

# ---- kills at random moments ---------------------------------------------------------------
# The reference run's duration bounds the kill time.
start=$(date +%s%N)
run --ckpt-dir "$tmp/timing" > /dev/null 2>&1
span_ms=$(( ($(date +%s%N) - start) / 1000000 ))
ok_random=0
t=0
while [ $t -lt "$random_trials" ]; do
    dir="$tmp/r-$t"
    kills=$(( (t % 3) + 1 ))
    j=0
    while [ $j -lt $kills ]; do
        ms=$(awk -v s="$t$j" -v span="$span_ms" 'BEGIN { srand(s); printf "%d", rand() * span }')
        # the trainer itself in the background (not a subshell running it), so
        # that the kill reaches it
        "$train" $opts --ckpt-dir "$dir" --resume auto > "$dir.out" 2>&1 &
        pid=$!
        sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        j=$((j + 1))
    done
    if why=$(finish "$dir") && why=$(same_as_reference "$dir"); then
        ok_random=$((ok_random + 1))
    else
        fail "random trial $t ($kills kills): $why"
    fi
    rm -rf "$dir" "$dir.out"
    t=$((t + 1))
done

echo "named crash points: $named of $(( $(echo $points | wc -w) * 3 )) resumed bitwise identical"
echo "random kills: $ok_random of $random_trials trials resumed bitwise identical"
[ $failures -eq 0 ] && echo "all crash trials passed" && exit 0
echo "$failures crash trials failed"
exit 1
