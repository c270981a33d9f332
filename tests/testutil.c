/*
 * testutil.c — the test harness behind testutil.h: running tests with a
 * leak check after each, recording failures and visible skips, deciding
 * whether a missing device is a skip or a failure, seeded random data and
 * float64-reference comparisons with PyTorch's default tolerances.
 */
#include "testutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/backend.h" /* ct_backend_for: which backends this build has */

int ct_test_failures;
uint64_t ct_test_seed = 20261121;
static int g_passed, g_failed, g_skipped, g_test_skips;
static uint64_t g_state;
static const char *g_current = "";

void ct_test_init(int argc, char **argv) {
    const char *env = getenv("CT_TEST_SEED");
    if (env) ct_test_seed = strtoull(env, NULL, 10);
    /* hash the seed so that seeds s and s+1 give unrelated streams */
    g_state = ct_test_seed;
    g_state = ct_test_rand_u64();
    printf("%s: seed %llu (set CT_TEST_SEED to change)\n", argc > 0 ? argv[0] : "test",
           (unsigned long long)ct_test_seed);
}

void ct_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "FAIL [%s] %s:%d: ", g_current, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    ct_test_failures++;
}

void ct_test_skip(const char *fmt, ...) {
    va_list ap;
    printf("  skip: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    g_skipped++;
    g_test_skips++;
}

/* CT_TEST_EXCLUDE="test_a,test_b" leaves those tests out (reported as
 * skipped): for runs under tools that change what a test may assume, such
 * as compute-sanitizer, which reports a deliberate out-of-memory as an
 * error. */
static bool excluded(const char *name) {
    const char *list = getenv("CT_TEST_EXCLUDE");
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

void ct_test_run(const char *name, void (*fn)(void)) {
    if (excluded(name)) {
        printf("[skip] %s (CT_TEST_EXCLUDE)\n", name);
        g_skipped++;
        fflush(stdout);
        return;
    }
    g_current = name;
    ct_test_failures = 0;
    g_test_skips = 0;
    ct_clear_error();
    int64_t tensors = ct_live_tensors(), storages = ct_live_storages();
    fn();
    if (ct_live_tensors() != tensors || ct_live_storages() != storages)
        ct_test_fail(__FILE__, __LINE__, "leak: live tensors %lld -> %lld, storages %lld -> %lld",
                     (long long)tensors, (long long)ct_live_tensors(), (long long)storages,
                     (long long)ct_live_storages());
    if (ct_scope_depth() != 0) {
        ct_test_fail(__FILE__, __LINE__, "scope left open (depth %d)", ct_scope_depth());
        while (ct_scope_depth() > 0) ct_scope_end();
    }
    if (ct_test_failures) {
        g_failed++;
        printf("[FAIL] %s (%d failed expectations)\n", name, ct_test_failures);
    } else if (g_test_skips) {
        g_passed++;
        printf("[ ok ] %s (%d section%s skipped)\n", name, g_test_skips, g_test_skips == 1 ? "" : "s");
    } else {
        g_passed++;
        printf("[ ok ] %s\n", name);
    }
    fflush(stdout);
}

int ct_test_finish(void) {
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}

/* ---- devices ------------------------------------------------------------------ */

static bool has_icd_file(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        found = len > 4 && strcmp(e->d_name + len - 4, ".icd") == 0;
    }
    closedir(d);
    return found;
}

/* Where ocl-icd and the Khronos loader find drivers. */
static bool opencl_runtime_installed(void) {
    const char *files = getenv("OCL_ICD_FILENAMES");
    if (files && *files) return true;
    const char *vendors = getenv("OCL_ICD_VENDORS");
    if (vendors && *vendors) {
        struct stat st;
        if (stat(vendors, &st) == 0 && !S_ISDIR(st.st_mode)) return true;
        return has_icd_file(vendors);
    }
    return has_icd_file("/etc/OpenCL/vendors");
}

bool ct_test_opencl_expected(void) {
    return ct_backend_for(CT_DEVICE_OPENCL) != NULL && opencl_runtime_installed();
}

int ct_test_opencl_devices(const char *what) {
    int n = ct_device_count(CT_DEVICE_OPENCL);
    if (n > 0) return n;
    ct_clear_error();
    if (ct_test_opencl_expected())
        ct_test_fail(__FILE__, __LINE__, "%s: no OpenCL device, but ctorch has the OpenCL backend and an OpenCL "
                     "runtime is installed (an ICD file exists); POCL_DEVICES=\"%s\"", what,
                     getenv("POCL_DEVICES") ? getenv("POCL_DEVICES") : "(unset)");
    else
        ct_test_skip("%s (no OpenCL device: %s)", what,
                     ct_backend_for(CT_DEVICE_OPENCL) ? "no OpenCL runtime installed" : "built without OpenCL");
    return 0;
}

int ct_test_cuda_devices(const char *what) {
    int n = ct_device_count(CT_DEVICE_CUDA);
    if (n > 0) return n;
    ct_clear_error();
    ct_test_skip("%s (no CUDA device)", what);
    return 0;
}

int ct_test_opencl_absent_exit(const char *what) {
    if (ct_test_opencl_expected()) {
        fprintf(stderr, "FAIL %s: no OpenCL device, but ctorch has the OpenCL backend and an OpenCL runtime is "
                "installed (an ICD file exists)\n", what);
        return 1;
    }
    printf("skip: %s (no OpenCL device: %s)\n", what,
           ct_backend_for(CT_DEVICE_OPENCL) ? "no OpenCL runtime installed" : "built without OpenCL");
    return 77;
}

uint64_t ct_test_rand_u64(void) { /* splitmix64 */
    uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ct_test_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(ct_test_rand_u64() >> 11) * 0x1.0p-53;
}

int64_t ct_test_randint(int64_t lo, int64_t hi) {
    return lo + (int64_t)(ct_test_rand_u64() % (uint64_t)(hi - lo));
}

void ct_test_fill_uniform(double *x, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) x[i] = ct_test_uniform(lo, hi);
}

ct_tensor *ct_test_tensor(const double *vals, ct_shape shape, ct_dtype dt) {
    ct_tensor *t = ct_tensor_from(vals, CT_FLOAT64, shape, .dtype = dt);
    if (!t) ct_test_fail(__FILE__, __LINE__, "cannot make a %s test input: %s", ct_dtype_name(dt), ct_last_error());
    return t;
}

double ct_test_round_to(ct_dtype dt, double v) {
    switch (dt) {
    case CT_FLOAT64: return v;
    case CT_FLOAT32: return (double)(float)v;
    /* through float, as PyTorch converts a double to a 16-bit float */
    case CT_FLOAT16: return ct_half_to_float(ct_float_to_half((float)v));
    case CT_BFLOAT16: return ct_bfloat16_to_float(ct_float_to_bfloat16((float)v));
    case CT_BOOL: return v != 0;
    case CT_INT32: return (double)(int32_t)(uint32_t)(uint64_t)(int64_t)v;
    case CT_UINT8: return (double)(uint8_t)(uint64_t)(int64_t)v;
    default: return (double)(int64_t)v;
    }
}

double *ct_test_values(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!t || ct_copy_to_host(t, v, CT_FLOAT64, n) != CT_OK) {
        ct_test_fail(__FILE__, __LINE__, "cannot read a tensor's values: %s", ct_last_error());
        ct_clear_error();
        for (int64_t i = 0; i < n; i++) v[i] = NAN;
    }
    return v;
}

bool ct_test_holds(const ct_tensor *t, const double *vals, int64_t n, ct_dtype dt) {
    double *got = ct_test_values(t);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double want = ct_test_round_to(dt, vals[i]);
        if (!(got[i] == want || (isnan(got[i]) && isnan(want)))) bad = i;
    }
    if (bad >= 0)
        ct_test_fail(__FILE__, __LINE__, "test input of %s holds %.9g at flat index %lld, expected %.9g",
                     ct_dtype_name(dt), got[bad], (long long)bad, ct_test_round_to(dt, vals[bad]));
    free(got);
    return bad < 0;
}

ct_tensor *ct_test_random(ct_shape shape, ct_dtype dt, double lo, double hi, double **vals_out) {
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.dims[i];
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    bool integral = ct_dtype_is_integral(dt, true);
    for (int64_t i = 0; i < n; i++) {
        double v = ct_test_uniform(lo, hi);
        x[i] = dt == CT_BOOL ? (double)(v > (lo + hi) / 2) : integral ? floor(v) : v;
    }
    ct_tensor *t = ct_test_tensor(x, shape, dt);
    if (t && vals_out) ct_test_holds(t, x, n, dt);
    if (vals_out) {
        for (int64_t i = 0; i < n; i++) x[i] = ct_test_round_to(dt, x[i]);
        *vals_out = x;
    } else {
        free(x);
    }
    return t;
}

void ct_test_tolerances(ct_dtype dt, double *rtol, double *atol) {
    switch (dt) {
    case CT_FLOAT16: *rtol = 1e-3, *atol = 1e-5; break;
    case CT_BFLOAT16: *rtol = 1.6e-2, *atol = 1e-5; break;
    case CT_FLOAT32: *rtol = 1.3e-6, *atol = 1e-5; break;
    case CT_FLOAT64: *rtol = 1e-7, *atol = 1e-7; break;
    default: *rtol = 0, *atol = 0; break;
    }
}

/* Half the spacing of dt's numbers at 1 and the spacing of its subnormals. */
static void float_format(ct_dtype dt, double *roundoff, double *subnormal) {
    switch (dt) {
    case CT_FLOAT16: *roundoff = 0x1p-11, *subnormal = 0x1p-24; break;
    case CT_BFLOAT16: *roundoff = 0x1p-8, *subnormal = 0x1p-133; break;
    case CT_FLOAT32: *roundoff = 0x1p-24, *subnormal = 0x1p-149; break;
    default: *roundoff = 0x1p-53, *subnormal = 0x1p-1074; break;
    }
}

void ct_test_rounding_tolerances(ct_dtype dt, double scale, double *rtol, double *atol) {
    double u, tiny, compute_u, unused;
    float_format(dt, &u, &tiny);
    float_format(dt == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32, &compute_u, &unused);
    *rtol = 2 * u;
    *atol = fmax(fmax(2 * u, 16 * compute_u) * scale, tiny);
}

bool ct_test_close(const char *file, int line, const char *what, const ct_tensor *t, const double *expected,
                   int64_t n, double rtol, double atol) {
    if (!t) {
        ct_test_fail(file, line, "%s is NULL: %s", what, ct_last_error());
        return false;
    }
    if (ct_numel(t) != n) {
        ct_test_fail(file, line, "%s has %lld elements, expected %lld", what, (long long)ct_numel(t), (long long)n);
        return false;
    }
    double *got = ct_test_values(t);
    int64_t worst = -1, bad = 0;
    double worst_err = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], e = expected[i];
        bool ok;
        if (isnan(e) || isnan(g)) ok = isnan(e) && isnan(g);
        else if (isinf(e) || isinf(g)) ok = g == e;
        else ok = fabs(g - e) <= atol + rtol * fabs(e);
        if (!ok) {
            double err = isnan(g - e) ? INFINITY : fabs(g - e);
            if (worst < 0 || err > worst_err) worst = i, worst_err = err;
            bad++;
        }
    }
    if (bad)
        ct_test_fail(file, line, "%s: %lld of %lld elements differ; worst at flat index %lld: got %.9g, expected %.9g "
                     "(rtol %g, atol %g, seed %llu)", what, (long long)bad, (long long)n, (long long)worst,
                     got[worst], expected[worst], rtol, atol, (unsigned long long)ct_test_seed);
    free(got);
    return bad == 0;
}

bool ct_test_shape_is(const char *file, int line, const ct_tensor *t, ct_shape s) {
    if (!t) {
        ct_test_fail(file, line, "tensor is NULL: %s", ct_last_error());
        return false;
    }
    bool ok = ct_ndim(t) == s.ndim;
    for (int i = 0; ok && i < s.ndim; i++) ok = ct_sizes(t)[i] == s.dims[i];
    if (!ok) {
        char a[256] = "[", b[256] = "[";
        for (int i = 0; i < ct_ndim(t); i++)
            snprintf(a + strlen(a), sizeof a - strlen(a), i ? ", %lld" : "%lld", (long long)ct_sizes(t)[i]);
        for (int i = 0; i < s.ndim; i++)
            snprintf(b + strlen(b), sizeof b - strlen(b), i ? ", %lld" : "%lld", (long long)s.dims[i]);
        ct_test_fail(file, line, "shape %s], expected %s]", a, b);
    }
    return ok;
}

ct_tensor *ct_test_noncontiguous(const double *vals, ct_shape shape, ct_dtype dt) {
    /* store the reversed-dims tensor contiguously, then permute back */
    ct_shape rev = shape;
    int perm[CT_MAX_DIMS];
    for (int i = 0; i < shape.ndim; i++) rev.dims[i] = shape.dims[shape.ndim - 1 - i], perm[i] = shape.ndim - 1 - i;
    ct_tensor *base = ct_test_tensor(vals, shape, dt);      /* values in logical order */
    ct_tensor *store = ct_empty_opts(rev, CT_OPTS(.dtype = dt));
    ct_tensor *store_view = ct_permute(store, perm);       /* logical shape, reversed strides */
    bool ok = base && store_view && ct_copy_(store_view, base) == CT_OK;
    if (base && !ok) /* (a NULL base has failed the test already) */
        ct_test_fail(__FILE__, __LINE__, "cannot make a non-contiguous %s input: %s", ct_dtype_name(dt), ct_last_error());
    if (ok) ok = ct_test_holds(store_view, vals, ct_numel(store_view), dt);
    ct_release(base);
    ct_release(store);
    if (!ok) {
        ct_release(store_view);
        return NULL;
    }
    return store_view;
}

void ct_test_set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

double ct_test_param_diff(ct_module *a, ct_module *b) {
    const int n = ct_module_parameters(a, NULL, NULL, 0);
    ct_tensor **pa = calloc((size_t)n + 1, sizeof *pa), **pb = calloc((size_t)n + 1, sizeof *pb);
    double worst = 0;
    if (pa && pb && ct_module_parameters(b, NULL, NULL, 0) == n) {
        ct_module_parameters(a, pa, NULL, n), ct_module_parameters(b, pb, NULL, n);
        CT_SCOPE {
            for (int i = 0; i < n; i++) {
                double d = ct_item(ct_max_all(ct_abs(ct_sub(ct_to_device(pa[i], ct_device_cpu()),
                                                            ct_to_device(pb[i], ct_device_cpu())))));
                if (d > worst) worst = d;
            }
        }
    } else {
        worst = INFINITY;
    }
    free(pa), free(pb);
    return worst;
}
