/*
 * test_random.c — the Philox4x32-10 generator and the random factories.
 *
 * ct_philox4x32 is checked against the known-answer vectors of the Random123
 * distribution (kat_vectors) and against an independent implementation in
 * this file. Random tensors are checked for reproducibility, exact resume
 * from a saved state, independence from the thread count (elementwise
 * recomputation from ct_philox4x32 with the mapping documented in
 * src/kernels/philox.h; normals also bit for bit against philox.h's scalar
 * ct_philox_normal_pair, which the device kernels evaluate), and for their
 * statistics at 5 sigma with fixed seeds so that the tests are deterministic.
 */
#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/philox.h"
#include "testutil.h"

/* ---- Philox4x32-10 from the paper, written independently ---- */
static uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

static void my_philox(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
    uint32_t k[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        uint32_t hi0, hi1;
        uint32_t lo0 = mulhilo(0xD2511F53u, c[0], &hi0);
        uint32_t lo1 = mulhilo(0xCD9E8D57u, c[2], &hi1);
        uint32_t n[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
        for (int i = 0; i < 4; i++) c[i] = n[i];
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

static void api_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    ct_philox4x32((uint64_t)key[0] | (uint64_t)key[1] << 32,
                  (uint64_t)ctr[0] | (uint64_t)ctr[1] << 32,
                  (uint64_t)ctr[2] | (uint64_t)ctr[3] << 32, out);
}

static void test_philox_known_answers(void) {
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[3] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t got[4], mine[4];
        api_philox(kat[v].ctr, kat[v].key, got);
        my_philox(kat[v].ctr, kat[v].key, mine);
        for (int i = 0; i < 4; i++) {
            CT_EXPECT_MSG(got[i] == kat[v].out[i], "KAT %d word %d: ct_philox4x32 gave %08x, expected %08x",
                          v, i, got[i], kat[v].out[i]);
            CT_EXPECT_MSG(mine[i] == kat[v].out[i], "KAT %d word %d: test reference gave %08x", v, i,
                          mine[i]);
        }
    }
}

static void test_philox_matches_reference(void) {
    uint64_t s = 0x0123456789ABCDEFull;
    int bad = 0;
    for (int n = 0; n < 10000; n++) {
        uint32_t ctr[4], key[2], a[4], b[4];
        for (int i = 0; i < 6; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t w = (uint32_t)(s >> 32);
            if (i < 4) ctr[i] = w; else key[i - 4] = w;
        }
        api_philox(ctr, key, a);
        my_philox(ctr, key, b);
        if (memcmp(a, b, sizeof a) != 0 && bad++ < 3)
            CT_EXPECT_MSG(false, "philox(%08x %08x %08x %08x / %08x %08x) differs from the reference",
                          ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1]);
    }
    CT_EXPECT_INT_EQ(bad, 0);
}

/* ---- random tensors ---------------------------------------------------------- */

static double *values_of(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    CT_EXPECT_INT_EQ(ct_copy_to_host(t, v, CT_FLOAT64, n), CT_OK);
    return v;
}

static int64_t count_equal(const ct_tensor *a, const ct_tensor *b) {
    int64_t n = ct_numel(a), same = 0;
    double *x = values_of(a), *y = values_of(b);
    for (int64_t i = 0; i < n; i++) same += x[i] == y[i];
    free(x);
    free(y);
    return same;
}

static void test_manual_seed_reproduces(void) {
    ct_scope_begin();
    ct_manual_seed(42);
    CT_EXPECT_INT_EQ(ct_initial_seed(), 42);
    ct_tensor *a = ct_rand(CT_SHAPE(1000));
    ct_tensor *b = ct_randn(CT_SHAPE(33, 3), .dtype = CT_FLOAT64);
    ct_tensor *c = ct_randint(-5, 17, CT_SHAPE(999));
    ct_manual_seed(42);
    ct_tensor *a2 = ct_rand(CT_SHAPE(1000));
    ct_tensor *b2 = ct_randn(CT_SHAPE(33, 3), .dtype = CT_FLOAT64);
    ct_tensor *c2 = ct_randint(-5, 17, CT_SHAPE(999));
    CT_EXPECT_INT_EQ(count_equal(a, a2), 1000);
    CT_EXPECT_INT_EQ(count_equal(b, b2), 99);
    CT_EXPECT_INT_EQ(count_equal(c, c2), 999);
    CT_EXPECT_INT_EQ(ct_dtype_of(a), CT_FLOAT32);
    CT_EXPECT_INT_EQ(ct_dtype_of(b), CT_FLOAT64);
    CT_EXPECT_INT_EQ(ct_dtype_of(c), CT_INT64);

    /* successive draws and other seeds differ */
    ct_tensor *a3 = ct_rand(CT_SHAPE(1000));
    CT_EXPECT(count_equal(a, a3) < 10);
    ct_manual_seed(43);
    ct_tensor *a4 = ct_rand(CT_SHAPE(1000));
    CT_EXPECT(count_equal(a, a4) < 10);
    ct_tensor *c3 = ct_randint(-5, 17, CT_SHAPE(999));
    CT_EXPECT(count_equal(c, c3) < 200); /* 1/22 of them agree by chance */

    /* *_like draw from the same generator */
    ct_manual_seed(7);
    ct_tensor *r1 = ct_rand_like(b);
    ct_tensor *n1 = ct_randn_like(b);
    ct_manual_seed(7);
    ct_tensor *r2 = ct_rand(CT_SHAPE(33, 3), .dtype = CT_FLOAT64);
    ct_tensor *n2 = ct_randn(CT_SHAPE(33, 3), .dtype = CT_FLOAT64);
    CT_EXPECT_INT_EQ(ct_dtype_of(r1), CT_FLOAT64);
    CT_EXPECT_INT_EQ(count_equal(r1, r2), 99);
    CT_EXPECT_INT_EQ(count_equal(n1, n2), 99);
    ct_scope_end();
}

static void test_rng_state_resume(void) {
    ct_scope_begin();
    ct_manual_seed(2024);
    uint64_t seed, off;
    ct_get_rng_state(&seed, &off);
    CT_EXPECT_INT_EQ(seed, 2024);
    CT_EXPECT_INT_EQ(off, 0);
    ct_rand(CT_SHAPE(10));
    uint64_t off1;
    ct_get_rng_state(&seed, &off1);
    CT_EXPECT(off1 > 0);
    ct_randn(CT_SHAPE(5));
    uint64_t off2;
    ct_get_rng_state(&seed, &off2);
    CT_EXPECT(off2 > off1);

    ct_get_rng_state(&seed, &off);
    ct_tensor *x = ct_rand(CT_SHAPE(257));
    ct_tensor *y = ct_randn(CT_SHAPE(3, 5));
    ct_tensor *z = ct_randint(0, 1000, CT_SHAPE(11));
    uint64_t seed_end, off_end;
    ct_get_rng_state(&seed_end, &off_end);

    ct_manual_seed(1); /* disturb, then resume */
    ct_rand(CT_SHAPE(3));
    ct_set_rng_state(seed, off);
    ct_tensor *x2 = ct_rand(CT_SHAPE(257));
    ct_tensor *y2 = ct_randn(CT_SHAPE(3, 5));
    ct_tensor *z2 = ct_randint(0, 1000, CT_SHAPE(11));
    CT_EXPECT_INT_EQ(count_equal(x, x2), 257);
    CT_EXPECT_INT_EQ(count_equal(y, y2), 15);
    CT_EXPECT_INT_EQ(count_equal(z, z2), 11);
    uint64_t s3, o3;
    ct_get_rng_state(&s3, &o3);
    CT_EXPECT_INT_EQ(s3, seed_end);
    CT_EXPECT_INT_EQ(o3, off_end);

    /* empty tensors consume nothing and still succeed */
    ct_tensor *e = ct_rand(CT_SHAPE(0, 4));
    CT_EXPECT(e != NULL && ct_numel(e) == 0);
    ct_get_rng_state(&s3, &o3);
    CT_EXPECT_INT_EQ(o3, off_end);
    ct_scope_end();
}

/* Element i of a random tensor, recomputed from ct_philox4x32 with the
 * mapping of src/kernels/philox.h: block (offset + i/2) with counter
 * (block, 0) and key seed; a uniform or integer element i takes lanes
 * 2*(i%2) and 2*(i%2)+1. */
static void element_draws(uint64_t seed, uint64_t offset, uint64_t i, uint32_t *x0, uint32_t *x1) {
    uint32_t r[4];
    ct_philox4x32(seed, offset + i / 2, 0, r);
    *x0 = r[(i % 2) * 2];
    *x1 = r[(i % 2) * 2 + 1];
}

/* A normal element i: Box–Muller on lanes 0 and 1 of block (offset + i/2),
 * the cosine for even i and the sine for odd i. `libm` is the same formula
 * with the C library's log, cos and sin; `shared` is philox.h's own scalar
 * evaluation, which the CPU must reproduce exactly. */
static void normal_element(uint64_t seed, uint64_t offset, uint64_t i, double *libm, double *shared) {
    uint32_t r[4];
    ct_philox4x32(seed, offset + i / 2, 0, r);
    double u1 = (double)((r[0] >> 8) + 1) * 0x1p-24;
    double theta = 6.283185307179586 * (double)(r[1] >> 8) * 0x1p-24;
    double rho = sqrt(-2 * log(u1));
    *libm = i % 2 ? rho * sin(theta) : rho * cos(theta);
    double z0, z1;
    ct_philox_normal_pair(r[0], r[1], &z0, &z1);
    *shared = i % 2 ? z1 : z0;
}

static void test_stream_matches_documented_mapping(void) {
    ct_scope_begin();
    const int64_t n = 100003; /* above the threading threshold, odd */
    ct_manual_seed(0xDEADBEEFCAFEull);
    ct_rand(CT_SHAPE(5)); /* start from a non-zero offset */
    uint64_t seed, off;
    ct_get_rng_state(&seed, &off);
    ct_tensor *u = ct_rand(CT_SHAPE(n));
    uint64_t off_after;
    ct_get_rng_state(&seed, &off_after);
    CT_EXPECT_INT_EQ(off_after - off, (n + 1) / 2); /* one block per two elements */
    ct_tensor *g = ct_randint(3, 3 + 1000003, CT_SHAPE(n));
    uint64_t off_n64 = off_after + (uint64_t)(n + 1) / 2, off_n32 = off_n64 + (uint64_t)(n + 1) / 2;
    ct_tensor *z64 = ct_randn(CT_SHAPE(n), .dtype = CT_FLOAT64);
    ct_tensor *z32 = ct_randn(CT_SHAPE(n), .dtype = CT_FLOAT32);
    double *uv = values_of(u), *gv = values_of(g), *z64v = values_of(z64), *z32v = values_of(z32);
    int bad_u = 0, bad_g = 0, bad_n = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t x0, x1;
        element_draws(seed, off, (uint64_t)i, &x0, &x1);
        double want = (double)(x0 >> 8) * 0x1p-24;
        if (uv[i] != want && bad_u++ < 3)
            CT_EXPECT_MSG(false, "rand element %lld = %.9g, recomputed %.9g", (long long)i, uv[i], want);
        element_draws(seed, off_after, (uint64_t)i, &x0, &x1);
        double wg = 3.0 + (double)((((uint64_t)x0 << 32) | x1) % 1000003u);
        if (gv[i] != wg && bad_g++ < 3)
            CT_EXPECT_MSG(false, "randint element %lld = %.17g, recomputed %.17g", (long long)i, gv[i], wg);
        double libm64, shared64, libm32, shared32;
        normal_element(seed, off_n64, (uint64_t)i, &libm64, &shared64);
        normal_element(seed, off_n32, (uint64_t)i, &libm32, &shared32);
        if ((z64v[i] != shared64 || z32v[i] != (double)(float)shared32) && bad_n++ < 3)
            CT_EXPECT_MSG(false, "randn element %lld = %.17g (float64), %.9g (float32); "
                                 "philox.h gives %.17g, %.9g",
                          (long long)i, z64v[i], z32v[i], shared64, (double)(float)shared32);
        worst = fmax(worst, fabs(z64v[i] - libm64) / fmax(1.0, fabs(libm64)));
    }
    CT_EXPECT_INT_EQ(bad_u, 0);
    CT_EXPECT_INT_EQ(bad_g, 0);
    CT_EXPECT_INT_EQ(bad_n, 0);
    /* philox.h's own log, cos and sin are within a few ulp of the C library's */
    CT_EXPECT_MSG(worst < 1e-14, "randn float64 differs from the libm Box-Muller by %.3g", worst);
    free(uv);
    free(gv);
    free(z64v);
    free(z32v);
    ct_scope_end();
}

static void draw_with_threads(int threads, double **u, double **nrm) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    ct_scope_begin();
    ct_manual_seed(99);
    *u = values_of(ct_rand(CT_SHAPE(300, 301)));
    *nrm = values_of(ct_randn(CT_SHAPE(300, 301), .dtype = CT_FLOAT64));
    ct_scope_end();
}

static void test_same_stream_for_any_thread_count(void) {
#ifdef _OPENMP
    int saved = omp_get_max_threads();
#endif
    double *u1, *n1, *u2, *n2, *u4, *n4;
    draw_with_threads(1, &u1, &n1);
    draw_with_threads(2, &u2, &n2);
    draw_with_threads(4, &u4, &n4);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    int64_t n = 300 * 301, diff = 0;
    for (int64_t i = 0; i < n; i++)
        diff += u1[i] != u2[i] || n1[i] != n2[i] || u1[i] != u4[i] || n1[i] != n4[i];
    CT_EXPECT_INT_EQ(diff, 0);
    free(u1), free(n1), free(u2), free(n2), free(u4), free(n4);
}

/* ---- statistics (fixed seeds: deterministic) ---------------------------------- */

static void mean_var(const double *x, int64_t n, double *mean, double *var) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *var = ss / (double)(n - 1);
}

static void check_uniform(ct_dtype dt) {
    const int64_t n = 1000000;
    ct_scope_begin();
    ct_manual_seed(12345);
    ct_tensor *t = ct_rand(CT_SHAPE(1000, 1000), .dtype = dt);
    CT_EXPECT(t && ct_dtype_of(t) == dt);
    double *x = values_of(t);
    int64_t out_of_range = 0, bins[10] = {0}, finer = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(x[i] >= 0.0 && x[i] < 1.0)) out_of_range++;
        else bins[(int)(x[i] * 10)]++;
        if ((double)(float)x[i] != x[i]) finer++;
    }
    CT_EXPECT_MSG(out_of_range == 0, "rand %s: %lld values outside [0, 1)", ct_dtype_name(dt),
                  (long long)out_of_range);
    double mean, var;
    mean_var(x, n, &mean, &var);
    double step = dt == CT_BFLOAT16 ? 1.0 / 256 : dt == CT_FLOAT16 ? 1.0 / 2048 : 0;
    CT_EXPECT_NEAR(mean, 0.5, 5 * sqrt(1.0 / 12 / n) + step);
    CT_EXPECT_NEAR(var, 1.0 / 12, 5 * sqrt(1.0 / 180 / n) + step);
    if (step == 0) {
        double sd = sqrt(n * 0.1 * 0.9);
        for (int b = 0; b < 10; b++)
            CT_EXPECT_MSG(fabs(bins[b] - n * 0.1) <= 5 * sd, "rand %s: bin %d holds %lld of %lld",
                          ct_dtype_name(dt), b, (long long)bins[b], (long long)n);
    }
    if (dt == CT_FLOAT64) /* 53-bit resolution, not float32 values widened */
        CT_EXPECT_MSG(finer > n / 2, "rand float64: only %lld of %lld values are not float32",
                      (long long)finer, (long long)n);
    free(x);
    ct_scope_end();
}

static void test_uniform_statistics(void) {
    check_uniform(CT_FLOAT32);
    check_uniform(CT_FLOAT64);
    check_uniform(CT_FLOAT16);
    check_uniform(CT_BFLOAT16);
}

static void check_normal(ct_dtype dt) {
    const int64_t n = 1000000;
    ct_scope_begin();
    ct_manual_seed(777);
    ct_tensor *t = ct_randn(CT_SHAPE(n), .dtype = dt);
    CT_EXPECT(t && ct_dtype_of(t) == dt);
    double *x = values_of(t);
    double mean, var;
    mean_var(x, n, &mean, &var);
    double step = dt == CT_BFLOAT16 ? 1.0 / 128 : 0;
    CT_EXPECT_NEAR(mean, 0.0, 5 * sqrt(1.0 / n) + step);
    CT_EXPECT_NEAR(var, 1.0, 5 * sqrt(2.0 / n) + step);
    int64_t within1 = 0, nonfinite = 0, beyond4 = 0;
    for (int64_t i = 0; i < n; i++) {
        within1 += fabs(x[i]) <= 1.0;
        nonfinite += !isfinite(x[i]);
        beyond4 += fabs(x[i]) > 4.0;
    }
    double p = 0.682689492137, sd = sqrt(n * p * (1 - p));
    CT_EXPECT_MSG(fabs(within1 - n * p) <= 5 * sd + (step ? n * 0.01 : 0),
                  "randn %s: %lld of %lld within one sigma", ct_dtype_name(dt), (long long)within1,
                  (long long)n);
    CT_EXPECT_INT_EQ(nonfinite, 0);
    /* P(|z| > 4) = 6.3e-5: about 63 of a million; tails must exist */
    CT_EXPECT_MSG(beyond4 > 20 && beyond4 < 130, "randn %s: %lld values beyond 4 sigma",
                  ct_dtype_name(dt), (long long)beyond4);
    /* The two elements of a Box–Muller pair (2j, 2j+1) and neighbouring pairs
     * (2j+1, 2j+2) are independent: correlation within 5 sigma of 0. */
    double within = 0, across = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
        if (i % 2) across += (x[i] - mean) * (x[i + 1] - mean);
        else within += (x[i] - mean) * (x[i + 1] - mean);
    }
    within /= (double)(n / 2) * var;
    across /= (double)(n / 2 - 1) * var;
    CT_EXPECT_MSG(fabs(within) < 5 / sqrt(n / 2.0) && fabs(across) < 5 / sqrt(n / 2.0),
                  "randn %s: correlation %.4f within pairs, %.4f across", ct_dtype_name(dt), within, across);
    free(x);
    ct_scope_end();
}

static void test_normal_statistics(void) {
    check_normal(CT_FLOAT32);
    check_normal(CT_FLOAT64);
    check_normal(CT_BFLOAT16);
}

static void check_randint(int64_t low, int64_t high, ct_dtype dt, int64_t n) {
    ct_scope_begin();
    ct_manual_seed(31337);
    ct_tensor *t = dt == CT_DTYPE_DEFAULT ? ct_randint(low, high, CT_SHAPE(n))
                                          : ct_randint(low, high, CT_SHAPE(n), .dtype = dt);
    CT_EXPECT(t != NULL);
    CT_EXPECT_INT_EQ(ct_dtype_of(t), dt == CT_DTYPE_DEFAULT ? CT_INT64 : dt);
    int64_t *x = malloc(sizeof(int64_t) * (size_t)n);
    CT_EXPECT_INT_EQ(ct_copy_to_host(t, x, CT_INT64, n), CT_OK);
    int64_t range = high - low, bad = 0;
    int64_t *hits = calloc((size_t)(range < 1000 ? range : 1), sizeof(int64_t));
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < low || x[i] >= high) bad++;
        else if (range < 1000) hits[x[i] - low]++;
    }
    CT_EXPECT_MSG(bad == 0, "randint(%lld, %lld): %lld values out of range", (long long)low,
                  (long long)high, (long long)bad);
    if (range < 1000) {
        double p = 1.0 / (double)range, sd = sqrt(n * p * (1 - p));
        for (int64_t v = 0; v < range; v++)
            CT_EXPECT_MSG(hits[v] > 0 && fabs(hits[v] - n * p) <= 5 * sd,
                          "randint(%lld, %lld): value %lld drawn %lld times of %lld", (long long)low,
                          (long long)high, (long long)(low + v), (long long)hits[v], (long long)n);
    }
    free(hits);
    free(x);
    ct_scope_end();
}

static void test_randint(void) {
    check_randint(0, 10, CT_DTYPE_DEFAULT, 1000000);
    check_randint(-3, 4, CT_INT32, 100000);
    check_randint(0, 2, CT_UINT8, 10000);
    check_randint(250, 256, CT_UINT8, 10000);
    check_randint(0, 1, CT_DTYPE_DEFAULT, 100);
    check_randint(-((int64_t)1 << 40), (int64_t)1 << 40, CT_INT64, 10000);
    check_randint(0, 100, CT_FLOAT32, 100000);
}

static void test_random_errors(void) {
    ct_clear_error();
    CT_EXPECT(ct_randint(5, 5, CT_SHAPE(3)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                    "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
    CT_EXPECT(ct_randint(5, -2, CT_SHAPE(3)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "from=5 >= to=-2");
    CT_EXPECT(ct_rand(CT_SHAPE(3), .dtype = CT_INT64) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "rand");
    CT_EXPECT(ct_randn(CT_SHAPE(3), .dtype = CT_BOOL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "randn");
    CT_EXPECT(ct_rand(CT_SHAPE(-1)) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    /* a failed call must not advance the generator */
    ct_manual_seed(5);
    ct_randint(1, 1, CT_SHAPE(4));
    ct_clear_error();
    uint64_t s, o;
    ct_get_rng_state(&s, &o);
    CT_EXPECT_INT_EQ(o, 0);
    /* NULL propagates without a new error */
    ct_clear_error();
    CT_EXPECT(ct_rand_like(NULL) == NULL);
    CT_EXPECT(ct_randn_like(NULL) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_philox_known_answers);
    CT_RUN(test_philox_matches_reference);
    CT_RUN(test_manual_seed_reproduces);
    CT_RUN(test_rng_state_resume);
    CT_RUN(test_stream_matches_documented_mapping);
    CT_RUN(test_same_stream_for_any_thread_count);
    CT_RUN(test_uniform_statistics);
    CT_RUN(test_normal_statistics);
    CT_RUN(test_randint);
    CT_RUN(test_random_errors);
    return ct_test_finish();
}
