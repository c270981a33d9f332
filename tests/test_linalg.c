/*
 * test_linalg.c — ct_matmul / ct_mm / ct_bmm against a float64 triple-loop
 * reference: every dtype matmul supports, 1-D and batched cases with
 * broadcast batch dims, and operands in every memory layout the backend has
 * to handle (contiguous, reversed strides, transposed, strided slices,
 * stride-0 broadcasts), plus every error path and NULL propagation.
 */
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype k_matmul_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                           CT_INT32,   CT_INT64,   CT_UINT8};
#define N_MATMUL_DTYPES ((int)(sizeof k_matmul_dtypes / sizeof k_matmul_dtypes[0]))

/* Memory layouts an operand can come in. */
enum layout { L_CONTIGUOUS, L_REVERSED, L_TRANSPOSED, L_STRIDED, L_EXPANDED, L_COUNT };

static void value_range(ct_dtype dt, double *lo, double *hi) {
    if (ct_dtype_is_floating(dt)) *lo = -1, *hi = 1;
    else if (dt == CT_UINT8) *lo = 0, *hi = 7; /* products overflow uint8: wrap-around is tested */
    else *lo = -6, *hi = 6;
}

/* A random tensor of shape s and dtype dt stored in the given layout. */
static ct_tensor *make_operand(ct_shape s, ct_dtype dt, int layout) {
    double lo, hi;
    value_range(dt, &lo, &hi);
    ct_shape base = s;
    int n = s.ndim;
    switch (layout) {
    case L_REVERSED: {
        int perm[CT_MAX_DIMS];
        for (int i = 0; i < n; i++) base.dims[i] = s.dims[n - 1 - i], perm[i] = n - 1 - i;
        return ct_permute(ct_test_random(base, dt, lo, hi, NULL), perm);
    }
    case L_TRANSPOSED:
        if (n < 2) break;
        base.dims[n - 1] = s.dims[n - 2], base.dims[n - 2] = s.dims[n - 1];
        return ct_transpose(ct_test_random(base, dt, lo, hi, NULL), -1, -2);
    case L_STRIDED: /* every other element of the last dim: no BLAS layout fits */
        base.dims[n - 1] = 2 * s.dims[n - 1] + 1;
        return ct_slice(ct_test_random(base, dt, lo, hi, NULL), -1, 1, base.dims[n - 1], 2);
    case L_EXPANDED: /* the first dim broadcast with stride 0 */
        if (s.dims[0] == 0) break;
        base.dims[0] = 1;
        return ct_expand(ct_test_random(base, dt, lo, hi, NULL), s);
    default: break;
    }
    return ct_test_random(s, dt, lo, hi, NULL);
}

/* torch.matmul in float64 on row-major values; also returns the result shape. */
static double *reference_matmul(const double *va, ct_shape sa, const double *vb, ct_shape sb,
                                ct_shape *out_shape) {
    int64_t M = sa.ndim >= 2 ? sa.dims[sa.ndim - 2] : 1, K = sa.dims[sa.ndim - 1];
    int64_t N = sb.ndim >= 2 ? sb.dims[sb.ndim - 1] : 1;
    int nba = sa.ndim > 2 ? sa.ndim - 2 : 0, nbb = sb.ndim > 2 ? sb.ndim - 2 : 0;
    int nbatch = nba > nbb ? nba : nbb;
    int64_t batch[CT_MAX_DIMS];
    for (int i = 0; i < nbatch; i++) {
        int ia = i - (nbatch - nba), ib = i - (nbatch - nbb);
        int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;
        batch[i] = da == 1 ? db : da;
    }
    *out_shape = ct_shape_make(nbatch, batch);
    if (sa.ndim > 1) out_shape->dims[out_shape->ndim++] = M;
    if (sb.ndim > 1) out_shape->dims[out_shape->ndim++] = N;
    int64_t B = 1;
    for (int i = 0; i < nbatch; i++) B *= batch[i];
    double *out = calloc((size_t)(B * M * N + 1), sizeof(double));
    for (int64_t bi = 0; bi < B; bi++) {
        /* Matrix number of this batch element within a and within b. */
        int64_t rem = bi, ma = 0, mb = 0, scale_a = 1, scale_b = 1;
        for (int i = nbatch - 1; i >= 0; i--) {
            int64_t c = rem % batch[i];
            rem /= batch[i];
            int ia = i - (nbatch - nba), ib = i - (nbatch - nbb);
            if (ia >= 0) ma += (sa.dims[ia] == 1 ? 0 : c) * scale_a, scale_a *= sa.dims[ia];
            if (ib >= 0) mb += (sb.dims[ib] == 1 ? 0 : c) * scale_b, scale_b *= sb.dims[ib];
        }
        const double *am = va + ma * M * K, *bm = vb + mb * K * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++) acc += am[i * K + k] * bm[k * N + j];
                out[(bi * M + i) * N + j] = acc;
            }
    }
    return out;
}

/* Integer matmul keeps the low bits of the exact result, as PyTorch does. */
static void wrap_to_dtype(double *v, int64_t n, ct_dtype dt) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == CT_UINT8) v[i] = (double)(uint8_t)(int64_t)v[i];
        else if (dt == CT_INT32) v[i] = (double)(int32_t)(uint32_t)(int64_t)v[i];
    }
}

/* PyTorch's tolerances, widened for float32 sums of K products: rounding
 * error grows with K (a sum of K equal terms is the worst case). */
static void matmul_tolerances(ct_dtype dt, int64_t K, double *rtol, double *atol) {
    ct_test_tolerances(dt, rtol, atol);
    if (dt == CT_FLOAT32) {
        *rtol = fmax(1e-5, (double)K * 3e-8);
        *atol = 1e-5 * fmax(1.0, (double)K / 256.0);
    }
}

/* Compare ct_matmul(a, b) with the reference; returns false on mismatch. */
static bool check_matmul_of(const ct_tensor *a, const ct_tensor *b, const char *what) {
    ct_tensor *c = ct_matmul(a, b);
    if (!c) {
        CT_EXPECT_MSG(false, "%s: matmul failed: %s", what, ct_last_error());
        return false;
    }
    double *va = ct_test_values(a), *vb = ct_test_values(b);
    ct_shape expected_shape;
    double *ref = reference_matmul(va, ct_shape_of(a), vb, ct_shape_of(b), &expected_shape);
    ct_dtype dt = ct_dtype_of(a);
    int64_t n = ct_numel(c);
    wrap_to_dtype(ref, n, dt);
    double rtol, atol;
    matmul_tolerances(dt, ct_size(a, -1), &rtol, &atol);
    bool ok = CT_EXPECT_SHAPE(c, expected_shape);
    ok = ok && ct_dtype_of(c) == dt && ct_is_contiguous(c);
    if (ok) ok = ct_test_close(__FILE__, __LINE__, what, c, ref, n, rtol, atol);
    else CT_EXPECT_MSG(false, "%s: wrong dtype/layout of result", what);
    free(va);
    free(vb);
    free(ref);
    return ok;
}

static bool check_matmul(ct_shape sa, int la, ct_shape sb, int lb, ct_dtype dt) {
    bool ok;
    CT_SCOPE {
        char what[128];
        snprintf(what, sizeof what, "matmul %s layouts %d,%d (%dD @ %dD)", ct_dtype_name(dt), la, lb,
                 sa.ndim, sb.ndim);
        ok = check_matmul_of(make_operand(sa, dt, la), make_operand(sb, dt, lb), what);
    }
    return ok;
}

static int64_t rnd(int64_t lo, int64_t hi) { return ct_test_randint(lo, hi + 1); }

/* Tiny products (at most 12^3 multiply-adds) run in a plain loop, larger ones
 * through BLAS: every layout pair is checked at both sizes. */
static void test_matmul_2d_every_dtype_and_layout(void) {
    for (int t = 0; t < N_MATMUL_DTYPES; t++)
        for (int la = 0; la < L_COUNT; la++)
            for (int lb = 0; lb < L_COUNT; lb++) {
                int64_t M = rnd(1, 8), K = rnd(1, 8), N = rnd(1, 8);
                if (!check_matmul(CT_SHAPE(M, K), la, CT_SHAPE(K, N), lb, k_matmul_dtypes[t])) return;
                M = rnd(13, 24), K = rnd(13, 24), N = rnd(13, 24);
                if (!check_matmul(CT_SHAPE(M, K), la, CT_SHAPE(K, N), lb, k_matmul_dtypes[t])) return;
            }
}

static void test_matmul_single_row_and_column(void) {
    /* Size-1 dims leave strides meaningless, yet BLAS needs a valid ld; one
     * output row or column goes to gemv. Small and BLAS-sized variants. */
    for (int t = 0; t < N_MATMUL_DTYPES; t++)
        for (int la = 0; la < L_COUNT; la++)
            for (int big = 0; big <= 1; big++) {
                ct_dtype dt = k_matmul_dtypes[t];
                int64_t K = big ? rnd(1800, 2000) : 5, M = big ? rnd(1800, 2000) : 4;
                int lb = (la + 1) % L_COUNT;
                check_matmul(CT_SHAPE(1, K), la, CT_SHAPE(K, 1), lb, dt);
                check_matmul(CT_SHAPE(M, 1), la, CT_SHAPE(1, 3), lb, dt);
                check_matmul(CT_SHAPE(1, 1), la, CT_SHAPE(1, M), lb, dt);
                check_matmul(CT_SHAPE(M, 3), la, CT_SHAPE(3, 1), lb, dt);
                check_matmul(CT_SHAPE(1, 3), la, CT_SHAPE(3, M), lb, dt);
                check_matmul(CT_SHAPE(6, K), la, CT_SHAPE(K, 1), lb, dt);
                check_matmul(CT_SHAPE(1, K), la, CT_SHAPE(K, 6), lb, dt);
            }
}

static void test_matmul_vector_cases(void) {
    for (int t = 0; t < N_MATMUL_DTYPES; t++) {
        ct_dtype dt = k_matmul_dtypes[t];
        for (int layout = 0; layout < 2 * L_COUNT; layout++) {
            /* the second round has K large enough for BLAS (gemv) */
            int64_t M = rnd(1, 8), K = layout < L_COUNT ? rnd(1, 8) : rnd(600, 800), N = rnd(1, 8);
            int l = layout % L_COUNT;
            check_matmul(CT_SHAPE(K), l, CT_SHAPE(K), L_CONTIGUOUS, dt);      /* dot */
            check_matmul(CT_SHAPE(K), L_EXPANDED, CT_SHAPE(K), l, dt);
            check_matmul(CT_SHAPE(K), l, CT_SHAPE(K, N), l, dt);              /* vec @ mat */
            check_matmul(CT_SHAPE(M, K), l, CT_SHAPE(K), l, dt);              /* mv */
            check_matmul(CT_SHAPE(K), l, CT_SHAPE(3, K, N), l, dt);           /* vec @ batch */
            check_matmul(CT_SHAPE(2, M, K), l, CT_SHAPE(K), l, dt);           /* batch @ vec */
            check_matmul(CT_SHAPE(2, 3, M, K), l, CT_SHAPE(K), L_STRIDED, dt);
        }
    }
    CT_SCOPE {
        /* a dot product is a 0-dim tensor */
        ct_tensor *a = ct_arange(1, 4, 1, .dtype = CT_FLOAT64);
        ct_tensor *c = ct_matmul(a, a);
        CT_EXPECT_SHAPE(c, CT_SHAPE0);
        CT_EXPECT_NEAR(ct_item(c), 14.0, 0);
        ct_tensor *m = ct_view(ct_arange(0, 6, 1, .dtype = CT_FLOAT64), CT_SHAPE(2, 3));
        CT_EXPECT_SHAPE(ct_matmul(m, a), CT_SHAPE(2));
        CT_EXPECT_SHAPE(ct_matmul(ct_arange(0, 2, 1, .dtype = CT_FLOAT64), m), CT_SHAPE(3));
    }
}

/* The same shape with its two matrix dims multiplied by f. */
static ct_shape scale_matrix_dims(ct_shape s, int64_t f) {
    for (int i = s.ndim >= 2 ? s.ndim - 2 : 0; i < s.ndim; i++) s.dims[i] *= f;
    return s;
}

static void test_matmul_batched_broadcast(void) {
    struct { ct_shape a, b; } cases[] = {
        {CT_SHAPE(3, 4, 5), CT_SHAPE(3, 5, 2)},       /* plain batch */
        {CT_SHAPE(2, 1, 3, 4), CT_SHAPE(5, 4, 6)},    /* broadcast both ways */
        {CT_SHAPE(3, 4), CT_SHAPE(2, 4, 5)},          /* 2-D left operand broadcast */
        {CT_SHAPE(2, 3, 4, 5), CT_SHAPE(5, 6)},       /* folds into one GEMM */
        {CT_SHAPE(1, 3, 4), CT_SHAPE(4, 4, 2)},       /* batch 1 broadcast */
        {CT_SHAPE(4, 1, 2, 3), CT_SHAPE(1, 5, 3, 2)},
        {CT_SHAPE(2, 2, 2, 3, 4), CT_SHAPE(2, 1, 4, 3)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; t < N_MATMUL_DTYPES; t++)
            for (int la = 0; la < L_COUNT; la++)
                for (int scale = 1; scale <= 6; scale += 5) /* tiny loop, then BLAS */
                    check_matmul(scale_matrix_dims(cases[c].a, scale), la,
                                 scale_matrix_dims(cases[c].b, scale), (la + (int)c) % L_COUNT,
                                 k_matmul_dtypes[t]);
}

static void test_matmul_batch_dims_that_do_not_collapse(void) {
    for (int t = 0; t < N_MATMUL_DTYPES; t++)
        for (int64_t f = 1; f <= 4; f += 3) CT_SCOPE {
                ct_dtype dt = k_matmul_dtypes[t];
                /* a's batch strides become (0, M*K): not one strided dim, so it is copied */
                ct_tensor *a = make_operand(CT_SHAPE(3, 4 * f, 5 * f), dt, L_CONTIGUOUS);
                ct_tensor *b = make_operand(CT_SHAPE(2, 3, 5 * f, 6 * f), dt, L_CONTIGUOUS);
                check_matmul_of(a, b, "a broadcast over the outer batch dim");
                check_matmul_of(b, ct_transpose(b, -1, -2), "b @ b^T, batched");
                /* batch dims permuted: strides no longer nest */
                int perm[4] = {1, 0, 2, 3};
                ct_tensor *p = ct_permute(make_operand(CT_SHAPE(3, 2, 4 * f, 5 * f), dt, L_CONTIGUOUS), perm);
                check_matmul_of(p, make_operand(CT_SHAPE(2, 3, 5 * f, 3 * f), dt, L_REVERSED), "permuted batch");
            }
}

static void test_matmul_large_blas_paths(void) {
    ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
    for (int t = 0; t < 4; t++)
        for (int la = 0; la < L_COUNT; la++) {
            int64_t M = rnd(60, 130), K = rnd(60, 130), N = rnd(60, 130);
            check_matmul(CT_SHAPE(M, K), la, CT_SHAPE(K, N), (la + 2) % L_COUNT, dts[t]);
            /* batch of matrices big enough for one BLAS call each */
            check_matmul(CT_SHAPE(3, M, K), la, CT_SHAPE(3, K, N), la, dts[t]);
        }
    /* many tiny matrices: the threaded loop kernel */
    check_matmul(CT_SHAPE(300, 8, 9), L_CONTIGUOUS, CT_SHAPE(300, 9, 7), L_TRANSPOSED, CT_FLOAT32);
    check_matmul(CT_SHAPE(300, 8, 9), L_STRIDED, CT_SHAPE(9, 7), L_CONTIGUOUS, CT_FLOAT64);
    /* many small matrices: one single-threaded BLAS call per matrix, spread over threads */
    for (int la = 0; la < L_COUNT; la++) {
        check_matmul(CT_SHAPE(300, 16, 12), la, CT_SHAPE(300, 12, 14), (la + 3) % L_COUNT, CT_FLOAT32);
        check_matmul(CT_SHAPE(200, 1, 600), la, CT_SHAPE(200, 600, 12), la, CT_FLOAT64);
        check_matmul(CT_SHAPE(200, 12, 600), la, CT_SHAPE(200, 600, 1), la, CT_BFLOAT16);
    }
    /* integer kernel across its column blocks */
    check_matmul(CT_SHAPE(5, 300), L_CONTIGUOUS, CT_SHAPE(300, 600), L_TRANSPOSED, CT_INT64);
    check_matmul(CT_SHAPE(7, 40), L_REVERSED, CT_SHAPE(40, 520), L_CONTIGUOUS, CT_UINT8);
}

static void test_matmul_empty_shapes(void) {
    for (int t = 0; t < N_MATMUL_DTYPES; t++) {
        ct_dtype dt = k_matmul_dtypes[t];
        check_matmul(CT_SHAPE(3, 0), L_CONTIGUOUS, CT_SHAPE(0, 4), L_CONTIGUOUS, dt); /* zeros */
        check_matmul(CT_SHAPE(0, 3), L_CONTIGUOUS, CT_SHAPE(3, 4), L_CONTIGUOUS, dt);
        check_matmul(CT_SHAPE(2, 3), L_CONTIGUOUS, CT_SHAPE(3, 0), L_CONTIGUOUS, dt);
        check_matmul(CT_SHAPE(0, 2, 3), L_CONTIGUOUS, CT_SHAPE(3, 4), L_CONTIGUOUS, dt);
        check_matmul(CT_SHAPE(0), L_CONTIGUOUS, CT_SHAPE(0), L_CONTIGUOUS, dt);      /* dot = 0 */
        check_matmul(CT_SHAPE(2, 0, 3), L_REVERSED, CT_SHAPE(2, 3, 0), L_EXPANDED, dt);
    }
    CT_SCOPE {
        ct_tensor *c = ct_matmul(ct_ones(CT_SHAPE(2, 0)), ct_ones(CT_SHAPE(0, 3)));
        CT_EXPECT_SHAPE(c, CT_SHAPE(2, 3));
        double zeros[6] = {0};
        CT_EXPECT_CLOSE(c, zeros, 6, 0, 0);
    }
}

static void test_matmul_known_values(void) {
    CT_SCOPE {
        double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {7, 8, 9, 10, 11, 12};
        double expected[4] = {58, 64, 139, 154};
        for (int t = 0; t < N_MATMUL_DTYPES; t++) {
            ct_dtype dt = k_matmul_dtypes[t];
            ct_tensor *a = ct_test_tensor(av, CT_SHAPE(2, 3), dt);
            ct_tensor *b = ct_test_tensor(bv, CT_SHAPE(3, 2), dt);
            double exp_dt[4];
            memcpy(exp_dt, expected, sizeof exp_dt);
            wrap_to_dtype(exp_dt, 4, dt);
            double rtol, atol;
            matmul_tolerances(dt, 3, &rtol, &atol);
            CT_EXPECT_CLOSE(ct_mm(a, b), exp_dt, 4, rtol, atol);
            CT_EXPECT_CLOSE(ct_matmul(a, b), exp_dt, 4, rtol, atol);
        }
    }
}

static void test_mm_and_bmm(void) {
    for (int t = 0; t < N_MATMUL_DTYPES; t++) {
        ct_dtype dt = k_matmul_dtypes[t];
        CT_SCOPE {
            ct_tensor *a = make_operand(CT_SHAPE(4, 6), dt, L_TRANSPOSED);
            ct_tensor *b = make_operand(CT_SHAPE(6, 3), dt, L_STRIDED);
            ct_tensor *x = make_operand(CT_SHAPE(2, 4, 6), dt, L_REVERSED);
            ct_tensor *y = make_operand(CT_SHAPE(2, 6, 5), dt, L_EXPANDED);
            double rtol, atol;
            matmul_tolerances(dt, 6, &rtol, &atol);
            double *va = ct_test_values(a), *vb = ct_test_values(b);
            double *vx = ct_test_values(x), *vy = ct_test_values(y);
            ct_shape s1, s2;
            double *r1 = reference_matmul(va, ct_shape_of(a), vb, ct_shape_of(b), &s1);
            double *r2 = reference_matmul(vx, ct_shape_of(x), vy, ct_shape_of(y), &s2);
            wrap_to_dtype(r1, 12, dt);
            wrap_to_dtype(r2, 40, dt);
            ct_tensor *mm = ct_mm(a, b), *bmm = ct_bmm(x, y);
            CT_EXPECT_SHAPE(mm, CT_SHAPE(4, 3));
            CT_EXPECT_SHAPE(bmm, CT_SHAPE(2, 4, 5));
            CT_EXPECT_CLOSE(mm, r1, 12, rtol, atol);
            CT_EXPECT_CLOSE(bmm, r2, 40, rtol, atol);
            free(va), free(vb), free(vx), free(vy), free(r1), free(r2);
        }
    }
}

static void test_matmul_errors(void) {
    CT_SCOPE {
        ct_tensor *m23 = ct_zeros(CT_SHAPE(2, 3)), *m45 = ct_zeros(CT_SHAPE(4, 5));
        ct_tensor *s = ct_scalar_tensor(1.0);
        ct_tensor *v3 = ct_zeros(CT_SHAPE(3)), *v4 = ct_zeros(CT_SHAPE(4));

        CT_EXPECT(ct_matmul(s, m23) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
        CT_EXPECT(ct_matmul(m23, m45) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
        CT_EXPECT(ct_mm(m23, m45) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
        CT_EXPECT(ct_matmul(v4, m23) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (1x4 and 2x3)");
        CT_EXPECT(ct_matmul(m23, v4) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "size mismatch, got input (2), mat (2x3), vec (4)");
        CT_EXPECT(ct_matmul(v3, v4) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "inconsistent tensor size, expected tensor [3] and src [4]");
        CT_EXPECT(ct_matmul(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(2, 5, 6))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "matmul: mat1 and mat2 shapes cannot be multiplied (2x3x4 and 2x5x6)");
        CT_EXPECT(ct_matmul(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(3, 4, 5))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");

        ct_tensor *d34 = ct_zeros(CT_SHAPE(3, 4), .dtype = CT_FLOAT64);
        CT_EXPECT(ct_matmul(m23, d34) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: float != double");
        CT_EXPECT(ct_mm(m23, d34) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: float != double");
        CT_EXPECT(ct_matmul(ct_zeros(CT_SHAPE(2, 3), .dtype = CT_INT64), ct_zeros(CT_SHAPE(3, 2))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: long int != float");
        ct_tensor *b23 = ct_zeros(CT_SHAPE(2, 3), .dtype = CT_BOOL), *b32 = ct_zeros(CT_SHAPE(3, 2), .dtype = CT_BOOL);
        CT_EXPECT(ct_matmul(b23, b32) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "not implemented for 'Bool'");

        CT_EXPECT(ct_mm(v3, m23) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mm: self must be a matrix");
        CT_EXPECT(ct_mm(m23, ct_zeros(CT_SHAPE(2, 3, 4))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mm: mat2 must be a matrix");

        CT_EXPECT(ct_bmm(m23, ct_zeros(CT_SHAPE(2, 3, 4))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "bmm: Expected 3-D tensor, got 2-D");
        CT_EXPECT(ct_bmm(ct_zeros(CT_SHAPE(2, 3, 4)), m45) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "bmm: Expected 3-D tensor, got 2-D");
        CT_EXPECT(ct_bmm(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(3, 4, 5))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "batch1 and batch2 must have same number of batches, got 2 and 3");
        CT_EXPECT(ct_bmm(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(2, 5, 6))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
        CT_EXPECT(ct_bmm(ct_zeros(CT_SHAPE(2, 3, 4)), ct_zeros(CT_SHAPE(2, 4, 5), .dtype = CT_FLOAT16)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "float != c10::Half");
        /* bmm does not broadcast, even where matmul would */
        CT_EXPECT(ct_bmm(ct_zeros(CT_SHAPE(1, 3, 4)), ct_zeros(CT_SHAPE(2, 4, 5))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "got 1 and 2");
    }
}

static void test_matmul_null_propagation(void) {
    CT_SCOPE {
        ct_tensor *m = ct_zeros(CT_SHAPE(2, 2)), *x = ct_zeros(CT_SHAPE(2, 2, 2));
        ct_clear_error();
        CT_EXPECT(ct_matmul(NULL, m) == NULL);
        CT_EXPECT(ct_matmul(m, NULL) == NULL);
        CT_EXPECT(ct_mm(NULL, m) == NULL);
        CT_EXPECT(ct_mm(m, NULL) == NULL);
        CT_EXPECT(ct_bmm(NULL, x) == NULL);
        CT_EXPECT(ct_bmm(x, NULL) == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
        /* a failing inner call reports its own error through the chain */
        CT_EXPECT(ct_matmul(ct_matmul(m, ct_zeros(CT_SHAPE(3, 2))), m) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mm: mat1 and mat2 shapes cannot be multiplied (2x2 and 3x2)");
    }
}

static void test_matmul_does_not_modify_inputs(void) {
    CT_SCOPE {
        ct_tensor *a = make_operand(CT_SHAPE(3, 4, 5), CT_FLOAT32, L_EXPANDED);
        ct_tensor *b = make_operand(CT_SHAPE(5, 2), CT_FLOAT32, L_TRANSPOSED);
        double *va = ct_test_values(a), *vb = ct_test_values(b);
        CT_EXPECT(ct_matmul(a, b) != NULL);
        CT_EXPECT_CLOSE(a, va, 60, 0, 0);
        CT_EXPECT_CLOSE(b, vb, 10, 0, 0);
        CT_EXPECT_INT_EQ(ct_stride(a, 0), 0);
        free(va), free(vb);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_matmul_known_values);
    CT_RUN(test_matmul_2d_every_dtype_and_layout);
    CT_RUN(test_matmul_single_row_and_column);
    CT_RUN(test_matmul_vector_cases);
    CT_RUN(test_matmul_batched_broadcast);
    CT_RUN(test_matmul_batch_dims_that_do_not_collapse);
    CT_RUN(test_matmul_large_blas_paths);
    CT_RUN(test_matmul_empty_shapes);
    CT_RUN(test_mm_and_bmm);
    CT_RUN(test_matmul_errors);
    CT_RUN(test_matmul_null_propagation);
    CT_RUN(test_matmul_does_not_modify_inputs);
    return ct_test_finish();
}
