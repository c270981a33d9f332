/*
 * testutil.c — the test harness behind testutil.h: running tests with a
 * leak check after each, recording failures, seeded random data and
 * float64-reference comparisons with PyTorch's default tolerances.
 */
#include "testutil.h"

#include <stdarg.h>
#include <stdlib.h>

int ct_test_failures;
uint64_t ct_test_seed = 20261121;
static int g_passed, g_failed;
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

void ct_test_run(const char *name, void (*fn)(void)) {
    g_current = name;
    ct_test_failures = 0;
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
    } else {
        g_passed++;
        printf("[ ok ] %s\n", name);
    }
    fflush(stdout);
}

int ct_test_finish(void) {
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
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
    return ct_tensor_from(vals, CT_FLOAT64, shape, .dtype = dt);
}

double *ct_test_values(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (ct_copy_to_host(t, v, CT_FLOAT64, n) != CT_OK) {
        fprintf(stderr, "ct_test_values: %s\n", ct_last_error());
        for (int64_t i = 0; i < n; i++) v[i] = NAN;
    }
    return v;
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
    if (vals_out) {
        free(x);
        *vals_out = t ? ct_test_values(t) : NULL;
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
    ct_copy_(store_view, base);
    ct_release(base);
    ct_release(store);
    return store_view;
}
