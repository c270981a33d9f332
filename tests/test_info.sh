#!/bin/sh
# test_info.sh — end-to-end test of ctorch-info (tools/info): the text report
# has every line users look for, the JSON report parses and agrees with the
# text one, the device table lists the cpu, a machine without a (visible)
# CUDA GPU says so plainly, and bad options exit 2 while everything else
# exits 0.
#
# Usage: sh tests/test_info.sh PATH/TO/ctorch-info [EXPECTED_VERSION]
set -u

INFO=${1:?usage: test_info.sh PATH/TO/ctorch-info [EXPECTED_VERSION]}
EXPECTED_VERSION=${2:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-info-test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
FAILURES=0

fail() {
    echo "FAIL: $*" >&2
    FAILURES=$((FAILURES + 1))
}

# run NAME EXPECTED_RC ARGS...: output in $TMP/NAME.out, errors in $TMP/NAME.err
run() {
    name=$1 expected=$2
    shift 2
    "$INFO" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    [ "$rc" -eq "$expected" ] || fail "ctorch-info $* exited $rc, expected $expected: $(cat "$TMP/$name.err")"
}

expect_line() { # FILE REGEX WHAT
    grep -Eq "$2" "$1" || fail "$3: no line matching '$2' in $(basename "$1")"
}

# ---- text report ----------------------------------------------------------------
run text 0
T=$TMP/text.out
for key in "ctorch version: [0-9]+\.[0-9]+\.[0-9]+" "^Build: ctorch " "^Build type: " \
    "^Backends compiled: .*cpu" "^CUDA available: (yes|no)$" "^OS: " "^Kernel: " "^libc: " "^CPU: " \
    "^CPU cores: [0-9]+ online" "^OpenMP threads: " "^Memory: " \
    "^  CUDA used to build ctorch: " "^  CUDA driver: " "^  cuBLAS: " "^  cuDNN: " "^  NCCL: " \
    "^  OpenCL: " "^  BLAS: OpenBLAS" "^  oneDNN: " "^  CPU engine: float32 GEMM on (oneDNN|OpenBLAS)" "^  CUDA_VISIBLE_DEVICES" "^Devices:$" \
    "^  INDEX +BACKEND +NAME +CAPABILITY"; do
    expect_line "$T" "$key" "text report"
done
expect_line "$T" "^  0 +cpu +" "the cpu device row"
if [ -n "$EXPECTED_VERSION" ]; then
    expect_line "$T" "^ctorch version: $EXPECTED_VERSION( |\$)" "the library's version"
fi
# No GPU must be said plainly, with a reason; a GPU must not be denied.
if grep -q "^CUDA available: no" "$T"; then
    expect_line "$T" "^  No CUDA GPU: (not compiled|no driver|no device|the driver sees)" "the no-GPU reason"
else
    grep -q "No CUDA GPU" "$T" && fail "CUDA is available but the report says 'No CUDA GPU'"
    expect_line "$T" "^  [0-9]+ +cuda +" "a cuda device row"
fi
if grep -q "^Backends compiled: .*cuda" "$T"; then
    grep -q "No CUDA GPU: not compiled" "$T" && fail "cuda is compiled in but the reason says 'not compiled'"
else
    grep -q "^CUDA available: no" "$T" || fail "cuda is not compiled in but CUDA is reported available"
fi

# ---- hiding every GPU: CUDA_VISIBLE_DEVICES="" ------------------------------------
CUDA_VISIBLE_DEVICES='' "$INFO" >"$TMP/hidden.out" 2>"$TMP/hidden.err" ||
    fail "ctorch-info with CUDA_VISIBLE_DEVICES=\"\" exited $?: $(cat "$TMP/hidden.err")"
expect_line "$TMP/hidden.out" "^CUDA available: no$" "CUDA_VISIBLE_DEVICES=\"\""
expect_line "$TMP/hidden.out" "^  No CUDA GPU: " "CUDA_VISIBLE_DEVICES=\"\""
expect_line "$TMP/hidden.out" '^  CUDA_VISIBLE_DEVICES=""' "the environment section"

# ---- options -----------------------------------------------------------------------
run help 0 --help
expect_line "$TMP/help.out" "^Usage: ctorch-info" "--help"
run bad_option 2 --no-such-option
run bad_format 2 --format xml
run missing_format 2 --format
run text_explicit 0 --format=text
expect_line "$TMP/text_explicit.out" "^Devices:$" "--format=text"

# ---- JSON report ---------------------------------------------------------------------
run json 0 --format json
J=$TMP/json.out
if command -v python3 >/dev/null 2>&1; then
    python3 - "$J" "$T" "$EXPECTED_VERSION" <<'EOF' || fail "JSON report checks (see above)"
import json, re, sys
path, text_path, expected = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path, encoding="utf-8") as f:
    r = json.load(f)
text = open(text_path, encoding="utf-8").read()
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
for key in ("schema_version", "ctorch", "system", "cpu", "libraries", "environment", "cuda", "devices"):
    check(key in r, "missing top-level key " + key)
check(r["schema_version"] == 1, "schema_version is not 1")
c = r["ctorch"]
check(re.fullmatch(r"\d+\.\d+\.\d+", c["version"] or "") is not None, "bad version %r" % c["version"])
check(not expected or c["version"] == expected, "version %r, expected %r" % (c["version"], expected))
check("cpu" in c["backends"], "backends %r lack cpu" % c["backends"])
check(c["cuda_compiled"] == ("cuda" in c["backends"]), "cuda_compiled disagrees with backends")
check(("ctorch version: %s" % c["version"]) in text, "text and JSON versions differ")
for lib in ("cuda_driver", "cublas", "cudnn", "nccl", "opencl", "onednn"):
    l = r["libraries"][lib]
    check(isinstance(l["found"], bool), lib + ".found is not a bool")
    for key in ("version", "path", "detail", "ctorch_version"):
        check(key in l, "%s lacks the key %s" % (lib, key))
    check(not l["found"] or l["path"], lib + " found without a path")
    check(l["found"] or l["detail"], lib + " not found without a reason")
check(r["libraries"]["blas"]["name"] == "OpenBLAS", "blas is not OpenBLAS")
e = r["libraries"]["cpu_engine"]
check(e["cpu_capability"] in ("AVX512", "AVX2", "DEFAULT"), "cpu_capability %r" % e["cpu_capability"])
check(e["gemm"].startswith("oneDNN" if e["mkldnn_available"] else "OpenBLAS"),
      "GEMM engine %r disagrees with mkldnn_available %r" % (e["gemm"], e["mkldnn_available"]))
check(not e["mkldnn_available"] or r["libraries"]["onednn"]["found"], "oneDNN runs but was not found")
check(("CPU engine: float32 GEMM on %s;" % e["gemm"]) in text, "text and JSON GEMM engines differ")
check(isinstance(r["cpu"]["online_cpus"], int) and r["cpu"]["online_cpus"] >= 1, "online_cpus")
devs = r["devices"]
check(len(devs) >= 1 and devs[0]["backend"] == "cpu" and devs[0]["device"] == "cpu", "first device is not cpu")
check(devs[0]["is_host"] is True, "the cpu is not a host device")
cuda = r["cuda"]
ncuda = sum(1 for d in devs if d["backend"] == "cuda")
check(cuda["device_count"] == ncuda, "cuda.device_count %d but %d cuda rows" % (cuda["device_count"], ncuda))
check(cuda["available"] == (ncuda > 0), "cuda.available disagrees with the rows")
check(cuda["available"] or cuda["reason"], "no CUDA GPU but no reason")
for d in devs:
    label = d["device"]
    check(d["device"] == (d["backend"] if d["backend"] == "cpu" else "%s:%d" % (d["backend"], d["index"])),
          "device label %r does not match backend/index" % label)
    check(d["name"], label + " has no name")
    check(d["total_memory"] is not None and d["total_memory"] > 0, label + " has no total memory")
    check(d["multi_processor_count"] is not None and d["multi_processor_count"] >= 1, label + " has no SMs/CUs")
    if d["free_memory"] is not None and d["total_memory"]:
        check(0 <= d["free_memory"] <= d["total_memory"], label + " free memory exceeds total")
    if d["backend"] == "cuda":
        check(re.fullmatch(r"\d+\.\d+", d["capability"] or "") is not None, label + " capability")
    if d["backend"] == "opencl":
        check(re.fullmatch(r"OpenCL \d+\.\d+", d["capability"] or "") is not None, label + " capability")
rows = [l for l in text.splitlines() if re.match(r"^  \d+ +(cpu|cuda|opencl) ", l)]
check(len(rows) == len(devs), "text has %d device rows, JSON %d" % (len(rows), len(devs)))
for e in errors:
    print("  JSON: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
else
    expect_line "$J" '"schema_version": 1' "JSON report"
    expect_line "$J" '"backend": "cpu"' "JSON cpu device"
fi

if [ "$FAILURES" -ne 0 ]; then
    echo "test_info: $FAILURES failure(s); text report:" >&2
    cat "$T" >&2
    exit 1
fi
echo "test_info: all checks passed"
exit 0
