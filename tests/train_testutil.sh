# train_testutil.sh — sourced by the ctorch-train test scripts
# (test_train_cli.sh, test_train_errors.sh, test_train_crash.sh): skip (77)
# when Fashion-MNIST is not installed, a scratch folder $tmp removed at exit,
# and pass/fail reporting counted in $failures.
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
