/*
 * backend_ops_selftest.c — the harness tests itself before it tests any
 * backend: it feeds its comparison and its verdict deliberately wrong
 * results and checks that each is flagged (and that near-equal results
 * are not). Runs on the CPU only, in milliseconds, at every start of
 * test_backend_ops (and alone with --self-test), so a change that blunts
 * the comparison fails the test suite instead of passing every backend.
 * Included by tests/test_backend_ops.c; not a test of its own.
 *
 * The planted errors are the ones the whole-tensor NMSE of earlier versions
 * let through: a float64 result computed in float32, one float32 element
 * off by 0.025 among 2,100, -0 for +0, a NaN or infinity moved; and, for
 * the verdict, a device that declines an op, and a CPU reference that fails
 * on an input meant to work.
 */

static int g_selftest_failures;

static void selftest_expect(bool ok, const char *what, const char *why) {
    if (ok) return;
    g_selftest_failures++;
    printf("SELF-TEST FAIL: %s%s%s\n", what, why[0] ? ": " : "", why);
}

/* Whether the comparison accepts got for want (n values of shape [n]). */
static bool selftest_accepts(const double *want, const double *got, int64_t n, ct_dtype dt,
                             bo_tol tol, unsigned flags, char *why, size_t wn) {
    double worst;
    why[0] = 0;
    return bo_compare_values(want, got, NULL, n, CT_SHAPE(n), dt, tol, flags, &worst, why, wn);
}

/* [3, 700] values of dt in [-3, 3) (already rounded to dt). */
static double *selftest_values(ct_dtype dt, int64_t n) {
    bo_rng r = {12345};
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double x = bo_value(&r, dt, (bo_range)(BO_DEFAULT | BO_NO_SPECIALS));
        v[i] = dt == CT_FLOAT32 ? (double)(float)x : x;
    }
    return v;
}

/* A float64 result rounded through float32, through real tensors and
 * bo_compare: flagged in every tolerance class. */
static void selftest_float64_as_float32(void) {
    const int64_t n = 3 * 700;
    double *v = selftest_values(CT_FLOAT64, n);
    char why[512];
    CT_SCOPE {
        ct_shape s = CT_SHAPE(3, 700);
        ct_tensor *want = ct_from_data(v, CT_FLOAT64, s, CT_OPTS(.dtype = CT_FLOAT64));
        ct_tensor *got = ct_to_dtype(ct_to_dtype(want, CT_FLOAT32), CT_FLOAT64);
        const ct_device cpu = ct_device_cpu();
        for (bo_tol tol = BO_TOL_EXACT; tol <= BO_TOL_MM; tol++) {
            double worst;
            bool same = bo_compare(want, want, NULL, cpu, tol, 0, &worst, why, sizeof why);
            selftest_expect(same, "a float64 result equal to the cpu's passes", why);
            why[0] = 0;
            bool caught = !bo_compare(want, got, NULL, cpu, tol, 0, &worst, why, sizeof why);
            selftest_expect(caught, "a float64 result rounded through float32 is caught", "");
        }
    }
    free(v);
}

/* One float32 element of [3, 700] off by 0.025: flagged in every class;
 * every element one ulp off: accepted where values are computed. */
static void selftest_float32_one_element(void) {
    const int64_t n = 3 * 700;
    double *want = selftest_values(CT_FLOAT32, n), *got = malloc(sizeof(double) * (size_t)n);
    char why[512];
    for (bo_tol tol = BO_TOL_EXACT; tol <= BO_TOL_MM; tol++) {
        memcpy(got, want, sizeof(double) * (size_t)n);
        got[1234] += 0.025;
        got[1234] = (double)(float)got[1234];
        bool caught = !selftest_accepts(want, got, n, CT_FLOAT32, tol, 0, why, sizeof why);
        selftest_expect(caught, "one float32 element off by 0.025 in [3, 700] is caught", "");
        if (tol == BO_TOL_EXACT) continue;
        for (int64_t i = 0; i < n; i++) got[i] = nextafterf((float)want[i], INFINITY);
        bool near = selftest_accepts(want, got, n, CT_FLOAT32, tol, 0, why, sizeof why);
        selftest_expect(near, "float32 results one ulp off pass", why);
    }
    free(want);
    free(got);
}

/* -0 for +0 (and the reverse) where the sign is defined; accepted where it
 * is not (sums, or a row flagged BO_ANY_ZERO_SIGN). */
static void selftest_zero_sign(void) {
    const double want[4] = {0.0, -0.0, 1.5, -2.0}, got[4] = {-0.0, -0.0, 1.5, -2.0};
    const double got2[4] = {0.0, 0.0, 1.5, -2.0};
    char why[512];
    const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
    for (int d = 0; d < 4; d++) {
        bool c1 = !selftest_accepts(want, got, 4, dts[d], BO_TOL_EW, 0, why, sizeof why);
        bool c2 = !selftest_accepts(want, got2, 4, dts[d], BO_TOL_EXACT, 0, why, sizeof why);
        selftest_expect(c1 && c2, "-0 against +0 is caught where the sign is defined", "");
        bool any =
            selftest_accepts(want, got, 4, dts[d], BO_TOL_EW, BO_ANY_ZERO_SIGN, why, sizeof why) &&
            selftest_accepts(want, got, 4, dts[d], BO_TOL_RED, 0, why, sizeof why);
        selftest_expect(any, "-0 against +0 passes where the sign is undefined", why);
    }
}

/* NaN and infinities must sit at the same places with the same values. */
static void selftest_specials(void) {
    static const double pairs[][2] = {{NAN, 0.0},       {0.0, NAN},       {INFINITY, -INFINITY},
                                      {INFINITY, FLT_MAX}, {-INFINITY, 1e300}, {1.0, INFINITY}};
    char why[512];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        for (bo_tol tol = BO_TOL_EXACT; tol <= BO_TOL_MM; tol++) {
            bool caught = !selftest_accepts(&pairs[i][0], &pairs[i][1], 1, CT_FLOAT32, tol, 0, why,
                                            sizeof why);
            selftest_expect(caught, "a NaN or infinity out of place is caught", "");
        }
    const double nan_inf[2] = {NAN, -INFINITY};
    bool same = selftest_accepts(nan_inf, nan_inf, 2, CT_FLOAT64, BO_TOL_EW, 0, why, sizeof why);
    selftest_expect(same, "NaN and -inf where the cpu has them pass", why);
}

/* A fake case for the verdict: accepts floats, no deliberate error variant. */
static void selftest_nothing(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                             ct_tensor **out, char *desc, size_t dn) {}

static int selftest_verdict(ct_status cpu_status, ct_status dev_status, ct_dtype dt, bo_counts *n) {
    static const bo_case fake = {.name = "fake", .family = "fake", .run = selftest_nothing,
                                 .tol = BO_TOL_EW, .dtypes = BO_DT_FLOAT};
    bo_result cpu = {{NULL, NULL, NULL}, cpu_status, "cpu"};
    bo_result got = {{NULL, NULL, NULL}, dev_status, "device"};
    char why[512];
    memset(n, 0, sizeof *n);
    return judge(&fake, dt, 0, &cpu, &got, ct_device_opencl(0), n, why, sizeof why);
}

/* Declines and errors: only deliberate errors rejected alike pass. */
static void selftest_judge(void) {
    bo_counts n;
    int r = selftest_verdict(CT_OK, CT_ERR_UNSUPPORTED, CT_FLOAT32, &n);
    selftest_expect(r == BO_FAIL_DECLINED && n.failed == 1 && n.unsupported == 1,
                    "a device declining an op it has no exception for fails", "");
    r = selftest_verdict(CT_ERR_INVALID_ARG, CT_ERR_INVALID_ARG, CT_FLOAT32, &n);
    selftest_expect(r == BO_FAIL && n.failed == 1 && n.both_errored == 1,
                    "both failing alike on an input meant to work fails", "");
    r = selftest_verdict(CT_ERR_DTYPE, CT_ERR_DTYPE, CT_INT32, &n);
    selftest_expect(r == BO_NONE && n.passed == 1 && n.deliberate == 1,
                    "both rejecting a dtype the op does not accept passes", "");
    r = selftest_verdict(CT_ERR_DTYPE, CT_ERR_INVALID_ARG, CT_INT32, &n);
    selftest_expect(r == BO_FAIL, "rejecting with another status fails", "");
    r = selftest_verdict(CT_OK, CT_ERR_INVALID_ARG, CT_FLOAT32, &n);
    selftest_expect(r == BO_FAIL && n.failed == 1, "a device error where the cpu runs fails", "");
}

/* Every check; returns the number that did not behave. */
static int bo_self_test(void) {
    int64_t live = ct_live_tensors();
    g_selftest_failures = 0;
    selftest_float64_as_float32();
    selftest_float32_one_element();
    selftest_zero_sign();
    selftest_specials();
    selftest_judge();
    if (ct_live_tensors() != live) selftest_expect(false, "the self-test leaks no tensors", "");
    return g_selftest_failures;
}
