/*
 * test_opencl_runtime.c — the OpenCL backend's runtime side: device
 * enumeration, tensors living on opencl:N, host round trips for every dtype,
 * copies between two devices, and the data-movement entries (copy with
 * conversion, fill, arange, random) compared with the CPU backend bit for
 * bit, matmul against a plain-C reference with tolerances, streams,
 * events, pinned memory and the error paths (OOM, bad ordinals).
 *
 * Skips (exit 77) when no OpenCL device can exist (no OpenCL backend or no
 * OpenCL runtime installed); fails when a runtime is installed but no
 * device shows up (testutil's ct_test_opencl_expected). Run by hand it
 * defaults to PoCL's two CPU devices (POCL_DEVICES="pthread pthread"), as
 * ctest does.
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <pthread.h>
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype k_all_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                        CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
#define N_DTYPES ((int)(sizeof k_all_dtypes / sizeof k_all_dtypes[0]))

static int g_ndev;

static ct_device cl(int i) { return ct_device_opencl(i); }
/* The second device when there is one, else the first. */
static int other_dev(void) { return g_ndev > 1 ? 1 : 0; }

/* All elements of t as raw bytes in row-major order (caller frees). */
static unsigned char *bytes_of(const ct_tensor *t, size_t *nbytes) {
    int64_t n = ct_numel(t);
    size_t size = (size_t)n * ct_element_size(t);
    unsigned char *buf = malloc(size ? size : 1);
    if (ct_copy_to_host(t, buf, ct_dtype_of(t), n) != CT_OK) {
        CT_EXPECT_MSG(false, "copy_to_host failed: %s", ct_last_error());
        memset(buf, 0, size);
    }
    *nbytes = size;
    return buf;
}

/* t (any device) and ref (cpu) hold the same bits; reports the first
 * differing element. */
static void expect_same_bits(const char *what, const ct_tensor *t, const ct_tensor *ref) {
    CT_EXPECT_MSG(t && ref, "%s: NULL tensor (%s)", what, ct_last_error());
    if (!t || !ref) return;
    CT_EXPECT_MSG(ct_dtype_of(t) == ct_dtype_of(ref) && ct_numel(t) == ct_numel(ref),
                  "%s: dtype/numel differ", what);
    size_t nt, nr;
    unsigned char *bt = bytes_of(t, &nt), *br = bytes_of(ref, &nr);
    if (nt == nr && memcmp(bt, br, nt) != 0) {
        size_t es = ct_element_size(t);
        double *vt = ct_test_values(t), *vr = ct_test_values(ref);
        for (size_t i = 0; i < nt / es; i++)
            if (memcmp(bt + i * es, br + i * es, es) != 0) {
                CT_EXPECT_MSG(false, "%s (%s): element %zu is %.17g on %s, %.17g on cpu", what,
                              ct_dtype_name(ct_dtype_of(t)), i, vt[i],
                              ct_device_type_name(ct_device_of(t).type), vr[i]);
                break;
            }
        free(vt);
        free(vr);
    }
    free(bt);
    free(br);
}

/* ---- devices -------------------------------------------------------------------- */

static bool all_pocl_pthread(void) {
    for (int i = 0; i < g_ndev; i++) {
        char name[256];
        if (ct_device_name(cl(i), name, sizeof name) != CT_OK || strncmp(name, "pthread", 7) != 0) return false;
    }
    return true;
}

static void test_enumeration(void) {
    CT_EXPECT(g_ndev >= 1);
    CT_EXPECT(ct_device_type_available(CT_DEVICE_OPENCL));
    const char *pocl = getenv("POCL_DEVICES");
    if (pocl && strcmp(pocl, "pthread pthread") == 0 && all_pocl_pthread()) CT_EXPECT_INT_EQ(g_ndev, 2);
    for (int i = 0; i < g_ndev; i++) {
        char name[256] = "";
        CT_EXPECT_INT_EQ(ct_device_name(cl(i), name, sizeof name), CT_OK);
        CT_EXPECT(name[0] != '\0');
        CT_EXPECT_INT_EQ(ct_device_synchronize(cl(i)), CT_OK);
    }
    ct_device best = ct_best_device();
    CT_EXPECT(best.type != CT_DEVICE_CPU || ct_cuda_device_count() > 0);
}

static void test_bad_ordinal(void) {
    ct_device d;
    CT_EXPECT_INT_EQ(ct_device_parse("opencl:7", &d), CT_OK);
    CT_EXPECT(ct_device_check(d, NULL) == CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "invalid device ordinal");
    ct_scope_begin();
    CT_EXPECT(ct_zeros(CT_SHAPE(3), .device = d) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "opencl:7");
    ct_tensor *x = ct_ones(CT_SHAPE(2));
    CT_EXPECT(ct_to_device(x, d) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "opencl:7");
    ct_scope_end();
}

static void test_oom(void) {
    ct_scope_begin();
    /* 2^48 float32 elements: 1 PiB, beyond any device */
    ct_tensor *t = ct_empty(CT_SHAPE((int64_t)1 << 48), .device = cl(0));
    CT_EXPECT(t == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "OpenCL out of memory. Tried to allocate");
    /* the device still works afterwards */
    ct_tensor *ok = ct_full(CT_SHAPE(4), 2.0, .device = cl(0));
    double two[4] = {2, 2, 2, 2};
    CT_EXPECT_CLOSE(ok, two, 4, 0, 0);
    ct_scope_end();
}

/* ---- tensors on devices, round trips ----------------------------------------------------- */

static void test_round_trip_every_dtype(void) {
    for (int dv = 0; dv < g_ndev; dv++)
        for (int k = 0; k < N_DTYPES; k++) {
            ct_scope_begin();
            ct_dtype dt = k_all_dtypes[k];
            int64_t n = ct_test_randint(1, 3000);
            ct_tensor *src = ct_test_random(CT_SHAPE(n), dt, -100, 100, NULL);
            ct_tensor *dev = ct_to_device(src, cl(dv));
            CT_EXPECT(dev && ct_device_equal(ct_device_of(dev), cl(dv)));
            CT_EXPECT(dev && ct_dtype_of(dev) == dt);
            ct_tensor *back = ct_cpu(dev);
            CT_EXPECT(back && ct_device_of(back).type == CT_DEVICE_CPU);
            expect_same_bits("round trip", back, src);
            /* ct_from_data straight onto the device */
            size_t nb;
            unsigned char *raw = bytes_of(src, &nb);
            ct_tensor *direct = ct_from_data(raw, dt, CT_SHAPE(n), CT_OPTS(.device = cl(dv)));
            expect_same_bits("from_data", direct, src);
            free(raw);
            ct_scope_end();
        }
}

static void test_tensors_stay_on_their_device(void) {
    ct_scope_begin();
    int d1 = other_dev();
    ct_tensor *ts[] = {ct_zeros(CT_SHAPE(3, 4), .device = cl(d1)), ct_arange(0, 10, 1, .device = cl(d1)),
                       ct_rand(CT_SHAPE(5), .device = cl(d1)), ct_full(CT_SHAPE(2), 7, .device = cl(d1))};
    for (int i = 0; i < 4; i++) CT_EXPECT(ts[i] && ct_device_equal(ct_device_of(ts[i]), cl(d1)));
    ct_tensor *v = ct_transpose(ts[0], 0, 1);
    CT_EXPECT(v && ct_device_equal(ct_device_of(v), cl(d1)));
    ct_tensor *c = ct_contiguous(v);
    CT_EXPECT(c && ct_device_equal(ct_device_of(c), cl(d1)));
    ct_tensor *f = ct_to_dtype(ts[1], CT_FLOAT16);
    CT_EXPECT(f && ct_device_equal(ct_device_of(f), cl(d1)));
    CT_EXPECT_NEAR(ct_item(ct_select(ts[3], 0, 1)), 7.0, 0);
    ct_scope_end();
}

static void test_copies_between_devices(void) {
    for (int k = 0; k < N_DTYPES; k++) {
        ct_scope_begin();
        ct_dtype dt = k_all_dtypes[k];
        ct_tensor *src = ct_test_random(CT_SHAPE(37, 29), dt, -50, 50, NULL);
        ct_tensor *on0 = ct_to_device(src, cl(0));
        ct_tensor *on1 = ct_to_device(on0, cl(other_dev()));
        CT_EXPECT(on1 && ct_device_equal(ct_device_of(on1), cl(other_dev())));
        expect_same_bits("opencl:0 -> opencl:1", on1, src);
        /* copy_ of a transposed view into a strided view on the other device */
        ct_tensor *dst = ct_zeros(CT_SHAPE(29, 74), .dtype = dt, .device = cl(other_dev()));
        ct_tensor *dst_view = ct_slice(dst, 1, 0, 74, 2);
        CT_EXPECT_INT_EQ(ct_copy_(dst_view, ct_t(on0)), CT_OK);
        expect_same_bits("copy_ across devices into a strided view", dst_view, ct_t(src));
        ct_scope_end();
    }
}

/* Two threads, each driving its own device at once (shared kernels are set
 * up under a lock; each device has its own queues). */
typedef struct worker {
    int dev;
    const ct_tensor *want; /* cpu */
    int mismatches;
} worker;

static void *convert_on_device(void *arg) {
    worker *w = arg;
    for (int it = 0; it < 20; it++) {
        ct_scope_begin();
        ct_tensor *x = ct_arange(-500, 500, 0.4, .dtype = CT_FLOAT64, .device = cl(w->dev));
        ct_tensor *y = ct_to_dtype(ct_to_dtype(ct_t(ct_view(x, CT_SHAPE(2, -1))), CT_FLOAT16), CT_INT32);
        size_t ny, nw;
        unsigned char *by = bytes_of(y, &ny), *bw = bytes_of(w->want, &nw);
        w->mismatches += ny != nw || memcmp(by, bw, ny) != 0;
        free(by);
        free(bw);
        ct_scope_end();
    }
    return NULL;
}

static void test_two_devices_at_once(void) {
    ct_scope_begin();
    ct_tensor *x = ct_arange(-500, 500, 0.4, .dtype = CT_FLOAT64);
    ct_tensor *want = ct_to_dtype(ct_to_dtype(ct_t(ct_view(x, CT_SHAPE(2, -1))), CT_FLOAT16), CT_INT32);
    worker w[2] = {{0, want, 0}, {other_dev(), want, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CT_EXPECT_INT_EQ(pthread_create(&th[i], NULL, convert_on_device, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CT_EXPECT_INT_EQ(w[0].mismatches, 0);
    CT_EXPECT_INT_EQ(w[1].mismatches, 0);
    ct_scope_end();
}

/* ---- copy / fill / arange / random vs the CPU, bit for bit ---------------------------------- */

/* Values that exercise every conversion rule: rounding ties, NaN, infinities,
 * out-of-range integers, float16 subnormals and overflow. */
static const double k_special[] = {0.0,      -0.0,      0.5,          -0.5,         1.5,         2.5,
                                   -2.5,     0.9999,    -1.0,         255.0,        256.0,       300.7,
                                   -300.7,   65504.0,   65520.0,      1e5,          -1e5,        6e-8,
                                   3e-5,     1e-40,     2147483647.0, 2147483648.0, 3e9,         -3e9,
                                   1e19,     -1e19,     1e300,        -1e300,       NAN,         INFINITY,
                                   -INFINITY, 1.0009765625, 0.333333333333, 1.00390625, 9007199254740993.0,
                                   -0.000001};
#define N_SPECIAL ((int)(sizeof k_special / sizeof k_special[0]))

static void test_copy_conversions_match_cpu(void) {
    for (int i = 0; i < N_DTYPES; i++) {
        ct_scope_begin();
        ct_dtype from = k_all_dtypes[i];
        ct_tensor *src64 = ct_from_data(k_special, CT_FLOAT64, CT_SHAPE(N_SPECIAL), CT_OPTS(.dtype = CT_FLOAT64));
        ct_tensor *src = ct_to_dtype(src64, from); /* conversions on the CPU */
        ct_tensor *dsrc = ct_to_device(src, cl(0));
        for (int j = 0; j < N_DTYPES; j++) {
            ct_dtype to = k_all_dtypes[j];
            char what[64];
            snprintf(what, sizeof what, "copy %s -> %s", ct_dtype_name(from), ct_dtype_name(to));
            expect_same_bits(what, ct_to_dtype(dsrc, to), ct_to_dtype(src, to));
        }
        ct_scope_end();
    }
    /* int64 beyond 2^53 converts exactly between integer dtypes */
    ct_scope_begin();
    int64_t big[] = {INT64_MAX, INT64_MIN, ((int64_t)1 << 53) + 1, -((int64_t)1 << 60) - 3, 4294967297LL};
    ct_tensor *b = ct_from_data(big, CT_INT64, CT_SHAPE(5), CT_OPTS(0));
    ct_tensor *db = ct_to_device(b, cl(0));
    for (int j = 0; j < N_DTYPES; j++)
        expect_same_bits("copy int64 (large)", ct_to_dtype(db, k_all_dtypes[j]), ct_to_dtype(b, k_all_dtypes[j]));
    ct_scope_end();
}

/* Strided views: transposed, narrowed, stepped, expanded (stride 0). */
static void test_strided_copies_match_cpu(void) {
    for (int k = 0; k < N_DTYPES; k++) {
        ct_scope_begin();
        ct_dtype dt = k_all_dtypes[k];
        int64_t a = ct_test_randint(2, 9), b = ct_test_randint(2, 9), c = ct_test_randint(2, 9);
        ct_tensor *x = ct_test_random(CT_SHAPE(a, b, c), dt, -20, 20, NULL);
        ct_tensor *dx = ct_to_device(x, cl(0));
        int perm[3] = {2, 0, 1};
        expect_same_bits("permuted contiguous", ct_contiguous(ct_permute(dx, perm)),
                         ct_contiguous(ct_permute(x, perm)));
        expect_same_bits("narrowed", ct_contiguous(ct_narrow(dx, 1, 1, b - 1)), ct_contiguous(ct_narrow(x, 1, 1, b - 1)));
        expect_same_bits("stepped", ct_contiguous(ct_slice(dx, 2, 0, c, 2)), ct_contiguous(ct_slice(x, 2, 0, c, 2)));
        ct_tensor *row = ct_narrow(x, 0, 0, 1), *drow = ct_narrow(dx, 0, 0, 1);
        expect_same_bits("expanded", ct_contiguous(ct_expand(drow, CT_SHAPE(4, b, c))),
                         ct_contiguous(ct_expand(row, CT_SHAPE(4, b, c))));
        /* converting copy_ into a transposed destination */
        ct_dtype to = k_all_dtypes[(k + 3) % N_DTYPES];
        ct_tensor *dst = ct_zeros(CT_SHAPE(c, b, a), .dtype = to), *ddst = ct_to_device(dst, cl(0));
        CT_EXPECT_INT_EQ(ct_copy_(ct_permute(dst, (int[]){2, 1, 0}), x), CT_OK);
        CT_EXPECT_INT_EQ(ct_copy_(ct_permute(ddst, (int[]){2, 1, 0}), dx), CT_OK);
        expect_same_bits("converting copy_ into a permuted view", ddst, dst);
        ct_scope_end();
    }
}

static void test_fill_matches_cpu(void) {
    const double values[] = {3.7, -2.5, 0.0, 1e20, -1e20, 65519.0, NAN, -INFINITY, 255.9, 1.0 / 3.0};
    for (int k = 0; k < N_DTYPES; k++)
        for (int v = 0; v < (int)(sizeof values / sizeof values[0]); v++) {
            ct_scope_begin();
            ct_dtype dt = k_all_dtypes[k];
            ct_tensor *x = ct_zeros(CT_SHAPE(6, 7), .dtype = dt), *dx = ct_zeros(CT_SHAPE(6, 7), .dtype = dt, .device = cl(0));
            CT_EXPECT_INT_EQ(ct_fill_(x, values[v]), CT_OK);
            CT_EXPECT_INT_EQ(ct_fill_(dx, values[v]), CT_OK);
            expect_same_bits("fill_", dx, x);
            /* a strided view: every other column of the transpose */
            ct_tensor *y = ct_zeros(CT_SHAPE(6, 7), .dtype = dt), *dy = ct_zeros(CT_SHAPE(6, 7), .dtype = dt, .device = cl(0));
            CT_EXPECT_INT_EQ(ct_fill_(ct_slice(ct_t(y), 1, 0, 6, 2), values[v]), CT_OK);
            CT_EXPECT_INT_EQ(ct_fill_(ct_slice(ct_t(dy), 1, 0, 6, 2), values[v]), CT_OK);
            expect_same_bits("fill_ of a strided view", dy, y);
            ct_scope_end();
        }
}

static void test_arange_matches_cpu(void) {
    struct { double start, end, step; } cases[] = {{0, 100, 1},     {-7, 50, 3},       {0.5, 40, 0.1},
                                                   {10, -10, -0.3}, {1e6, 1e6 + 5, 1}, {-3, 3, 0.25}};
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (int k = 0; k < N_DTYPES; k++) {
            ct_dtype dt = k_all_dtypes[k];
            if (dt == CT_BOOL) continue;
            ct_scope_begin();
            ct_tensor *x = ct_arange(cases[c].start, cases[c].end, cases[c].step, .dtype = dt);
            ct_tensor *dx = ct_arange(cases[c].start, cases[c].end, cases[c].step, .dtype = dt, .device = cl(other_dev()));
            if (!x) {
                CT_EXPECT(dx == NULL); /* same refusal on both backends */
                ct_clear_error();
            } else {
                expect_same_bits("arange", dx, x);
            }
            ct_scope_end();
        }
    ct_scope_begin();
    expect_same_bits("linspace", ct_linspace(-1.5, 2.25, 1001, .device = cl(0)), ct_linspace(-1.5, 2.25, 1001));
    ct_scope_end();
}

/* The default generator's draws on the CPU and on a device, from one seed. */
static void test_random_matches_cpu(void) {
    const ct_dtype floats[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
    for (int k = 0; k < 4; k++) {
        ct_scope_begin();
        int64_t n = ct_test_randint(1, 20000) | 1; /* odd: the last element uses half a block */
        uint64_t seed = ct_test_rand_u64();
        ct_manual_seed(seed);
        ct_tensor *u = ct_rand(CT_SHAPE(n), .dtype = floats[k]);
        ct_tensor *g = ct_randn(CT_SHAPE(n), .dtype = floats[k]);
        ct_manual_seed(seed);
        ct_tensor *du = ct_rand(CT_SHAPE(n), .dtype = floats[k], .device = cl(0));
        ct_tensor *dg = ct_randn(CT_SHAPE(n), .dtype = floats[k], .device = cl(other_dev()));
        expect_same_bits("rand", du, u);
        expect_same_bits("randn", dg, g);
        ct_scope_end();
    }
    const ct_dtype ints[] = {CT_INT64, CT_INT32, CT_UINT8, CT_FLOAT32, CT_FLOAT64};
    for (int k = 0; k < 5; k++) {
        ct_scope_begin();
        int64_t lo = ints[k] == CT_UINT8 ? 0 : -1000003, hi = ints[k] == CT_UINT8 ? 200 : 77777777;
        ct_manual_seed(1234 + (uint64_t)k);
        ct_tensor *x = ct_randint(lo, hi, CT_SHAPE(4097), .dtype = ints[k]);
        ct_manual_seed(1234 + (uint64_t)k);
        ct_tensor *dx = ct_randint(lo, hi, CT_SHAPE(4097), .dtype = ints[k], .device = cl(0));
        expect_same_bits("randint", dx, x);
        ct_scope_end();
    }
}

/* ---- matmul ------------------------------------------------------------------------------------ */

/* C[b] = A[b] @ B[b] in double from row-major host values, for A (nb, M, K)
 * and B (nb or 1, K, N): the reference, written here rather than taken
 * from the CPU backend's matmul. Rounded to dt (integers wrap). */
static double *naive_matmul(const double *A, const double *B, int64_t nb, bool b_broadcast, int64_t M, int64_t K,
                            int64_t N, ct_dtype dt) {
    double *C = malloc(sizeof(double) * (size_t)(nb * M * N + 1));
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double sum = 0;
                const double *b = B + (b_broadcast ? 0 : bi * K * N);
                for (int64_t k = 0; k < K; k++) sum += A[(bi * M + i) * K + k] * b[k * N + j];
                C[(bi * M + i) * N + j] = ct_test_round_to(dt, sum);
            }
    return C;
}

/* Random host values in [lo, hi) as dt stores them (integers for integer dtypes). */
static double *random_values(int64_t n, ct_dtype dt, double lo, double hi) {
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        double x = ct_test_uniform(lo, hi);
        v[i] = ct_test_round_to(dt, ct_dtype_is_floating(dt) ? x : floor(x));
    }
    return v;
}

/* The B operand in one of four layouts, all with the logical values bv
 * (nb or 1, K, N): contiguous, transposed, every other column of a wider
 * tensor, or expanded from one batch (stride 0). */
static ct_tensor *b_operand(const double *bv, int layout, int64_t nb, int64_t K, int64_t N, ct_dtype dt) {
    if (layout == 3) return ct_expand(ct_test_tensor(bv, CT_SHAPE(1, K, N), dt), CT_SHAPE(nb, K, N));
    if (layout == 0) return ct_test_tensor(bv, CT_SHAPE(nb, K, N), dt);
    int64_t wide = layout == 1 ? N * K : K * 2 * N;
    double *store = calloc((size_t)(nb * wide + 1), sizeof *store);
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                store[bi * wide + (layout == 1 ? j * K + k : k * 2 * N + 2 * j)] = bv[(bi * K + k) * N + j];
    ct_tensor *t = layout == 1 ? ct_transpose(ct_test_tensor(store, CT_SHAPE(nb, N, K), dt), 1, 2)
                               : ct_slice(ct_test_tensor(store, CT_SHAPE(nb, K, 2 * N), dt), 2, 0, 2 * N, 2);
    free(store);
    return t;
}

static void test_matmul_matches_reference(void) {
    const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT32, CT_INT64, CT_UINT8};
    for (int k = 0; k < 7; k++)
        for (int layout = 0; layout < 4; layout++) {
            ct_scope_begin();
            ct_dtype dt = dts[k];
            int64_t B = ct_test_randint(1, 4), M = ct_test_randint(1, 40), N = ct_test_randint(1, 40),
                    K = ct_test_randint(1, 60);
            double lo = ct_dtype_is_floating(dt) ? -1 : dt == CT_UINT8 ? 0 : -6, hi = ct_dtype_is_floating(dt) ? 1 : 7;
            double *av = random_values(B * M * K, dt, lo, hi), *bv = random_values((layout == 3 ? 1 : B) * K * N, dt, lo, hi);
            ct_tensor *a = ct_test_tensor(av, CT_SHAPE(B, M, K), dt), *b = b_operand(bv, layout, B, K, N, dt);
            if (layout == 1) a = ct_transpose(ct_contiguous(ct_transpose(a, 1, 2)), 1, 2);
            double *ref = naive_matmul(av, bv, B, layout == 3, M, K, N, dt);
            ct_device dev = cl(layout % g_ndev);
            ct_tensor *got = ct_matmul(ct_to_device(a, dev), ct_to_device(b, dev));
            CT_EXPECT_MSG(got != NULL, "matmul %s on opencl: %s", ct_dtype_name(dt), ct_last_error());
            if (got) {
                CT_EXPECT(ct_device_equal(ct_device_of(got), dev));
                double rtol, atol;
                ct_test_tolerances(dt, &rtol, &atol);
                /* sums of K products: scale the absolute tolerance with K */
                if (!CT_EXPECT_CLOSE(got, ref, B * M * N, rtol * 4, atol * (double)K))
                    fprintf(stderr, "  (matmul %s, layout %d, [%lld, %lld, %lld] @ [%lld, %lld])\n", ct_dtype_name(dt),
                            layout, (long long)B, (long long)M, (long long)K, (long long)K, (long long)N);
            }
            free(av);
            free(bv);
            free(ref);
            ct_scope_end();
        }
}

static void test_matmul_edge_cases(void) {
    ct_scope_begin();
    /* an empty inner dimension gives zeros */
    ct_tensor *z = ct_matmul(ct_ones(CT_SHAPE(3, 0), .device = cl(0)), ct_ones(CT_SHAPE(0, 4), .device = cl(0)));
    double zeros[12] = {0};
    CT_EXPECT(z && ct_numel(z) == 12);
    if (z) CT_EXPECT_CLOSE(z, zeros, 12, 0, 0);
    /* bool is refused as on the CPU */
    ct_tensor *bb = ct_ones(CT_SHAPE(2, 2), .dtype = CT_BOOL, .device = cl(0));
    CT_EXPECT(ct_matmul(bb, bb) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "Bool");
    /* a batch large enough for CLBlast's strided-batched GEMM, with a
     * broadcast (stride 0) operand */
    double *bav = random_values(17 * 9 * 5, CT_FLOAT32, -1, 1), *bbv = random_values(5 * 7, CT_FLOAT32, -1, 1);
    ct_tensor *ba = ct_test_tensor(bav, CT_SHAPE(17, 9, 5), CT_FLOAT32), *bb2 = b_operand(bbv, 3, 17, 5, 7, CT_FLOAT32);
    double *bref = naive_matmul(bav, bbv, 17, true, 9, 5, 7, CT_FLOAT64);
    CT_EXPECT_CLOSE(ct_matmul(ct_to_device(ba, cl(0)), ct_to_device(bb2, cl(0))), bref, 17 * 9 * 7, 1e-5, 1e-5);
    free(bav), free(bbv), free(bref);
    /* a large product through CLBlast */
    double *av = random_values(130 * 257, CT_FLOAT32, -1, 1), *bv = random_values(257 * 65, CT_FLOAT32, -1, 1);
    ct_tensor *a = ct_test_tensor(av, CT_SHAPE(130, 257), CT_FLOAT32), *b = ct_test_tensor(bv, CT_SHAPE(257, 65), CT_FLOAT32);
    double *ref = naive_matmul(av, bv, 1, false, 130, 257, 65, CT_FLOAT64);
    CT_EXPECT_CLOSE(ct_matmul(ct_to_device(a, cl(0)), ct_to_device(b, cl(0))), ref, 130 * 65, 1e-5, 1e-4);
    free(av), free(bv), free(ref);
    ct_scope_end();
}

/* ---- streams, events, pinned memory ------------------------------------------------------------- */

static void test_streams_events_and_pinned_memory(void) {
    int d1 = other_dev();
    ct_stream *s0 = ct_stream_create(cl(0), 0), *s1 = ct_stream_create(cl(d1), -1);
    ct_event *t0 = ct_event_create(.enable_timing = true), *e = ct_event_create(.enable_timing = true);
    CT_EXPECT(s0 && s1 && t0 && e);
    if (!s0 || !s1 || !t0 || !e) return;
    int least = 1, greatest = 1;
    ct_stream_priority_range(CT_DEVICE_OPENCL, &least, &greatest);
    CT_EXPECT(least == 0 && greatest == -1);
    CT_EXPECT_INT_EQ(ct_stream_priority(s1), -1);
    ct_scope_begin();
    const int64_t n = 1 << 16;
    ct_tensor *pinned = ct_pin_memory(ct_arange(0, (double)n, 1, .dtype = CT_FLOAT32));
    CT_EXPECT(pinned && ct_is_pinned(pinned));
    ct_tensor *y = NULL, *back = NULL;
    CT_WITH_STREAM(s0) {
        CT_EXPECT_INT_EQ(ct_event_record(t0, s0), CT_OK);
        ct_tensor *x = ct_to_device_nb(pinned, cl(0), true); /* asynchronous upload on s0 */
        y = ct_to_dtype(x, CT_FLOAT64);                        /* a kernel on s0 after it */
        back = ct_to_device_nb(y, ct_device_cpu(), true);       /* asynchronous download */
        CT_EXPECT_INT_EQ(ct_event_record(e, s0), CT_OK);
    }
    /* another device's stream can wait for the event; the host waits for s0 */
    CT_EXPECT_INT_EQ(ct_stream_wait_event(s1, e), CT_OK);
    CT_EXPECT_INT_EQ(ct_stream_synchronize(s1), CT_OK);
    CT_EXPECT_INT_EQ(ct_stream_synchronize(s0), CT_OK);
    CT_EXPECT(ct_stream_query(s0));
    CT_EXPECT(ct_event_query(e));
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) want[i] = (double)i;
    CT_EXPECT(back && ct_device_of(back).type == CT_DEVICE_CPU);
    if (back) CT_EXPECT_CLOSE(back, want, n, 0, 0);
    /* the default stream sees y once it waits for e */
    CT_EXPECT_INT_EQ(ct_stream_wait_event(ct_default_stream(cl(0)), e), CT_OK);
    if (y) CT_EXPECT_CLOSE(y, want, n, 0, 0);
    free(want);
    float ms = -1;
    CT_EXPECT_INT_EQ(ct_event_elapsed_time(t0, e, &ms), CT_OK);
    CT_EXPECT(ms >= 0);
    size_t free_b = 0, total = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(cl(0), &free_b, &total), CT_OK);
    CT_EXPECT(total > 0 && free_b <= total);
    ct_scope_end();
    CT_EXPECT_INT_EQ(ct_device_synchronize(cl(0)), CT_OK);
    ct_event_destroy(t0);
    ct_event_destroy(e);
    ct_stream_destroy(s0);
    ct_stream_destroy(s1);
}

int main(int argc, char **argv) {
    /* PoCL's two CPU devices unless the caller chose otherwise */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    ct_test_init(argc, argv);
    g_ndev = ct_device_count(CT_DEVICE_OPENCL);
    if (g_ndev == 0) return ct_test_opencl_absent_exit("test_opencl_runtime");
    CT_RUN(test_enumeration);
    CT_RUN(test_bad_ordinal);
    CT_RUN(test_oom);
    CT_RUN(test_round_trip_every_dtype);
    CT_RUN(test_tensors_stay_on_their_device);
    CT_RUN(test_copies_between_devices);
    CT_RUN(test_two_devices_at_once);
    CT_RUN(test_copy_conversions_match_cpu);
    CT_RUN(test_strided_copies_match_cpu);
    CT_RUN(test_fill_matches_cpu);
    CT_RUN(test_arange_matches_cpu);
    CT_RUN(test_random_matches_cpu);
    CT_RUN(test_matmul_matches_reference);
    CT_RUN(test_matmul_edge_cases);
    CT_RUN(test_streams_events_and_pinned_memory);
    return ct_test_finish();
}
