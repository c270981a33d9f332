/*
 * test_backend_ops.c — the cross-backend harness (in the spirit of ggml's
 * test-backend-ops and PyTorch's test_compare_cpu): every op × every dtype,
 * run through the API on the CPU and on each OpenCL and CUDA device, at
 * shapes from 0-dim, empty and one element to more than 100,000 elements,
 * with broadcast, transposed, narrowed, expanded and strided inputs, and
 * in-place writes into views. Each device result must land on the device
 * and match the CPU's element by element (backend_ops_compare.c: a
 * tolerance per dtype and kind of op, NaN and infinities in place, the sign
 * of zero, integers exact).
 *
 *   test_backend_ops [-o op[,op…]] [-b backend] [-v] [--list] [--self-test]
 *                    [--inject f64-via-f32|off-by|neg-zero|decline=FAMILY]
 *
 * -o runs only the named ops (or families), -b only backends whose name
 * starts with the argument (opencl, opencl:1, cuda), -v prints every result
 * with its largest error/tolerance ratio, --list prints the op × backend
 * support matrix, --self-test runs only the harness's own checks (which
 * otherwise run first, every time), --inject plants an error in every device
 * result to show that the harness fails on it (the run must exit 1).
 *
 * Exit status: 0 when every device result matched; 1 on any mismatch, on a
 * device declining an op without a listed exception, on both sides failing
 * where no error was meant (backend_ops_judge.c), on a leak or a failed
 * self-test; 77 (skipped) when there is no OpenCL or CUDA device.
 *
 * The table `g_cases` drives everything: an op is one row naming a runner
 * (which builds its inputs from a replayable random source on a given
 * device and calls the op), a tolerance class and the dtypes it accepts.
 * The elementwise ops' rows are made from src/kernels/unary_ops.def and
 * binary_ops.def (as ggml's test-backend-ops iterates its op enum), so a
 * new elementwise op needs no row of its own.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, execv */

#include <unistd.h>

#include "backend_ops_util.h"
#include "backend_ops_compare.c"   /* tolerances, comparison, planted errors */
#include "backend_ops_pointwise.c" /* BO_POINTWISE_CASES */
#include "backend_ops_reduce.c"    /* BO_REDUCE_CASES */
#include "backend_ops_data.c"      /* BO_DATA_CASES */
#include "backend_ops_conv.c"      /* BO_CONV_CASES */
#include "backend_ops_nn.c"        /* BO_NN_CASES */
#include "backend_ops_loss.c"      /* BO_LOSS_CASES */
#include "backend_ops_judge.c"     /* running a case, the verdict */
#include "backend_ops_selftest.c"  /* bo_self_test */

static const bo_case g_cases[] = {
#define CT_UNARY_OP(...) BO_UNARY_ROW(__VA_ARGS__)
#include "kernels/unary_ops.def"
#undef CT_UNARY_OP
#define CT_BINARY_OP(...) BO_BINARY_ROW(__VA_ARGS__)
#include "kernels/binary_ops.def"
#undef CT_BINARY_OP
    BO_POINTWISE_CASES
    BO_REDUCE_CASES
    BO_CONV_CASES
    BO_NN_CASES
    BO_LOSS_CASES
    BO_DATA_CASES
};
#define BO_NCASES ((int)(sizeof g_cases / sizeof g_cases[0]))

/* ---- running --------------------------------------------------------------------------------- */

typedef struct bo_options {
    const char *ops;     /* comma-separated names or families; NULL: all */
    const char *backend; /* prefix of a device name; NULL: all */
    bool verbose, list, self_test_only;
} bo_options;

static bool name_selected(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

#define BO_MAX_DEVICES 16
#define BO_DESC_SIZE 384
#define BO_WHY_SIZE 900
/* "variant N, " + a description + ": " + why */
#define BO_FIRST_WHY_SIZE (BO_DESC_SIZE + BO_WHY_SIZE + 32)

static void counts_add(bo_counts *t, const bo_counts *n) {
    t->compared += n->compared, t->passed += n->passed, t->failed += n->failed;
    t->unsupported += n->unsupported, t->declined += n->declined;
    t->both_errored += n->both_errored, t->deliberate += n->deliberate;
    if (n->worst > t->worst) t->worst = n->worst;
}

/* One line per device: the outcome per dtype (with the largest
 * error/tolerance ratio under -v), then the first failure of each dtype. */
static void print_case(const bo_case *c, ct_device dev, const int *outcome,
                       const bo_counts *per_dt, char (*first_why)[BO_FIRST_WHY_SIZE],
                       const bo_options *o) {
    char dname[32], line[640];
    int n = snprintf(line, sizeof line, "%-14s %-10s", c->name,
                     ct_device_format(dev, dname, sizeof dname));
    bool bad = false;
    for (int di = 0; di < BO_NDTYPES && n < (int)sizeof line; di++) {
        n += snprintf(line + n, sizeof line - (size_t)n, " %s:%s", g_dtype_short[di],
                      g_outcome_marks[outcome[di]]);
        if (o->verbose && outcome[di] == BO_PASS && n < (int)sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, "(%.2g)", per_dt[di].worst);
        bad |= outcome[di] != BO_NONE && outcome[di] != BO_PASS;
    }
    if (bad || o->verbose) printf("%s\n", line);
    for (int di = 0; di < BO_NDTYPES; di++)
        if (outcome[di] >= BO_DECLINED)
            printf("  %s %s(%s) on %s: %s\n", g_outcome_marks[outcome[di]], c->name,
                   g_dtype_short[di], dname, first_why[di]);
}

/* Every variant of case c × every dtype on the cpu and on each device. */
static void test_case(const bo_case *c, int ci, const ct_device *devs, int ndev,
                      const bo_options *o, bo_counts *totals) {
    int outcome[BO_MAX_DEVICES][BO_NDTYPES] = {{0}};
    bo_counts per_dt[BO_MAX_DEVICES][BO_NDTYPES];
    static char first_why[BO_MAX_DEVICES][BO_NDTYPES][BO_FIRST_WHY_SIZE];
    char desc[BO_DESC_SIZE], cdesc[BO_DESC_SIZE], why[BO_WHY_SIZE];
    memset(per_dt, 0, sizeof per_dt);
    for (int di = 0; di < BO_NDTYPES; di++) {
        for (int v = 0; v < BO_VARIANTS; v++) {
            bo_result cpu;
            run_case(c, ci, di, v, ct_device_cpu(), &cpu, cdesc, sizeof cdesc);
            for (int k = 0; k < ndev; k++) {
                bo_result got;
                run_case(c, ci, di, v, devs[k], &got, desc, sizeof desc);
                why[0] = 0;
                int res = judge(c, g_dtypes[di], v, &cpu, &got, devs[k], &per_dt[k][di], why,
                                sizeof why);
                if (res > outcome[k][di]) {
                    outcome[k][di] = res;
                    snprintf(first_why[k][di], sizeof first_why[k][di], "variant %d, %s: %s", v,
                             desc[0] ? desc : cdesc, why);
                }
                release_result(&got);
            }
            release_result(&cpu);
        }
    }
    for (int k = 0; k < ndev; k++) {
        for (int di = 0; di < BO_NDTYPES; di++) counts_add(&totals[k], &per_dt[k][di]);
        print_case(c, devs[k], outcome[k], per_dt[k], first_why[k], o);
    }
    fflush(stdout);
}

/* The per-device totals, counted per variant run. */
static void print_totals(const ct_device *devs, int ndev, const bo_counts *t) {
    printf("\n%-10s %9s %9s %7s %12s %13s %10s\n", "backend", "compared", "passed", "failed",
           "unsupported", "both-errored", "worst");
    for (int k = 0; k < ndev; k++) {
        char dname[32], unsup[32], both[32];
        snprintf(unsup, sizeof unsup, "%ld (%ld ok)", t[k].unsupported, t[k].declined);
        snprintf(both, sizeof both, "%ld (%ld ok)", t[k].both_errored, t[k].deliberate);
        printf("%-10s %9ld %9ld %7ld %12s %13s %10.2g\n",
               ct_device_format(devs[k], dname, sizeof dname), t[k].compared, t[k].passed,
               t[k].failed, unsup, both, t[k].worst);
    }
    printf("(unsupported: the device declined, \"ok\" when an exception allows it; both-errored:\n"
           " cpu and device failed alike, \"ok\" for deliberate error cases; worst: the largest\n"
           " error/tolerance ratio among the results that passed)\n");
}

/* --list: what each backend runs, per op and dtype: yes, NO (reported
 * unsupported), ERR (another error where the cpu succeeds) or "-" (the cpu
 * rejects the dtype too). One variant per cell, no comparison. */
static void list_support(const ct_device *devs, int ndev, const bo_options *o) {
    printf("%-14s %-10s", "op", "backend");
    for (int di = 0; di < BO_NDTYPES; di++) printf(" %-5s", g_dtype_short[di]);
    printf("\n");
    for (int ci = 0; ci < BO_NCASES; ci++) {
        const bo_case *c = &g_cases[ci];
        if (!name_selected(o->ops, c->name) && !name_selected(o->ops, c->family)) continue;
        for (int k = -1; k < ndev; k++) {
            ct_device dev = k < 0 ? ct_device_cpu() : devs[k];
            char dname[32], desc[384];
            printf("%-14s %-10s", c->name, ct_device_format(dev, dname, sizeof dname));
            for (int di = 0; di < BO_NDTYPES; di++) {
                bo_result cpu, res;
                run_case(c, ci, di, 3, ct_device_cpu(), &cpu, desc, sizeof desc);
                run_case(c, ci, di, 3, dev, &res, desc, sizeof desc);
                const char *mark = cpu.status != CT_OK              ? "-"
                                   : res.status == CT_OK             ? "yes"
                                   : res.status == CT_ERR_UNSUPPORTED ? "NO"
                                                                      : "ERR";
                printf(" %-5s", mark);
                release_result(&cpu);
                release_result(&res);
            }
            printf("\n");
        }
    }
}

/* ---- command line ---------------------------------------------------------------------------- */

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [-o op[,op...]] [-b backend] [-v] [--list] [--self-test]\n"
            "       [--inject f64-via-f32|off-by|neg-zero|decline=FAMILY]\n",
            argv0);
    return 2;
}

static bool parse_inject(const char *s) {
    if (!strncmp(s, "decline=", 8) && s[8]) {
        g_inject = BO_INJECT_DECLINE;
        g_inject_family = s + 8;
    } else if (!strcmp(s, "f64-via-f32")) {
        g_inject = BO_INJECT_F64_VIA_F32;
    } else if (!strcmp(s, "off-by")) {
        g_inject = BO_INJECT_OFF_BY;
    } else if (!strcmp(s, "neg-zero")) {
        g_inject = BO_INJECT_NEG_ZERO;
    } else {
        return false;
    }
    return true;
}

static bool parse_args(int argc, char **argv, bo_options *o) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) o->ops = argv[++i];
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) o->backend = argv[++i];
        else if (!strcmp(argv[i], "-v")) o->verbose = true;
        else if (!strcmp(argv[i], "--list")) o->list = true;
        else if (!strcmp(argv[i], "--self-test")) o->self_test_only = true;
        else if (!strcmp(argv[i], "--inject") && i + 1 < argc && parse_inject(argv[i + 1])) i++;
        else return false;
    }
    return true;
}

/* The devices to test: every CUDA and OpenCL device whose name starts
 * with o->backend. */
static int select_devices(const bo_options *o, ct_device *devs) {
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        int count = pass ? g_opencl_count : g_cuda_count;
        for (int i = 0; i < count && n < BO_MAX_DEVICES; i++) {
            ct_device d = pass ? ct_device_opencl(i) : ct_device_cuda(i);
            char name[32];
            ct_device_format(d, name, sizeof name);
            if (!o->backend || strncmp(name, o->backend, strlen(o->backend)) == 0) devs[n++] = d;
        }
    }
    return n;
}

/* The cpu backend's OpenMP threads spin after each parallel region
 * (libgomp's default wait policy) and take the cores that PoCL's device
 * threads need: on a shared 2-core machine the harness ran 4x slower.
 * libgomp reads OMP_WAIT_POLICY when it loads, so set it and start again
 * (once: the new process finds it set). */
static void prefer_passive_openmp(char **argv) {
#ifdef __linux__
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); /* returns only if it failed: go on as we are */
#endif
}

int main(int argc, char **argv) {
    /* PoCL's two CPU devices (its default thread count) unless the caller chose */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    prefer_passive_openmp(argv);
    bo_options o = {0};
    if (!parse_args(argc, argv, &o)) return usage(argv[0]);
    const char *env = getenv("CT_TEST_SEED");
    if (env) g_seed = strtoull(env, NULL, 10);

    int self = bo_self_test();
    printf("test_backend_ops: self-test %s\n", self ? "FAILED" : "passed (planted errors caught)");
    if (self || o.self_test_only) return self ? 1 : 0;

    /* float32 means float32: TF32 convolutions (PyTorch's cuDNN default)
     * are a precision of their own, outside what this harness compares */
    ct_backends_cudnn_set_allow_tf32(false);
    g_opencl_count = ct_device_count(CT_DEVICE_OPENCL);
    g_cuda_count = ct_device_count(CT_DEVICE_CUDA);
    ct_clear_error();
    if (g_opencl_count + g_cuda_count <= 0) /* a failure where PoCL is installed, else a skip */
        return ct_test_opencl_absent_exit("test_backend_ops (no OpenCL or CUDA device)");
    ct_device devs[BO_MAX_DEVICES];
    int ndev = select_devices(&o, devs);
    if (ndev == 0) {
        fprintf(stderr, "test_backend_ops: no backend matches '%s'\n", o.backend);
        return 2;
    }
    if (o.list) {
        list_support(devs, ndev, &o);
        return 0;
    }
    printf("test_backend_ops: seed %llu (set CT_TEST_SEED to change), %d device(s)%s\n",
           (unsigned long long)g_seed, ndev, g_inject ? ", errors planted (--inject)" : "");
    int64_t live = ct_live_tensors();
    bo_counts totals[BO_MAX_DEVICES];
    memset(totals, 0, sizeof totals);
    for (int ci = 0; ci < BO_NCASES; ci++)
        if (name_selected(o.ops, g_cases[ci].name) || name_selected(o.ops, g_cases[ci].family))
            test_case(&g_cases[ci], ci, devs, ndev, &o, totals);
    print_totals(devs, ndev, totals);
    long failed = 0;
    for (int k = 0; k < ndev; k++) failed += totals[k].failed;
    if (ct_live_tensors() != live) {
        printf("FAIL: %lld tensors leaked\n", (long long)(ct_live_tensors() - live));
        failed++;
    }
    printf("%s\n", failed ? "FAILED" : "all device results match the cpu");
    return failed ? 1 : 0;
}
