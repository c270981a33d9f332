/*
 * test_reduce.c — reductions (sum, mean, prod, amax/amin, var/std, max/min
 * with indices, argmax/argmin) against float64 references computed here
 * from the same inputs: random shapes, every subset of dims, keepdim both
 * ways, contiguous and non-contiguous inputs (reversed strides, narrowed,
 * expanded, transposed), every dtype that applies, NaN propagation, empty
 * tensors, 0-dim tensors, long rows and columns (the parallel and chunked
 * kernel paths), large-sum accuracy, int64 exactness and every error path.
 */
#include <stdlib.h>

#include "testutil.h"

enum op_id { OP_SUM, OP_MEAN, OP_PROD, OP_AMAX, OP_AMIN, OP_VAR, OP_STD, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"sum", "mean", "prod", "amax", "amin", "var", "std"};

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
static const ct_dtype int_types[] = {CT_INT32, CT_INT64, CT_UINT8, CT_BOOL};
static const ct_dtype all_types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                     CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};

/* ---- inputs in several layouts ------------------------------------------------ */

enum layout { LAY_CONTIG, LAY_REVERSED, LAY_NARROWED, LAY_EXPANDED, LAY_TRANSPOSED, LAY_COUNT };

/* A random tensor of `shape` stored in layout `lay`; its values (row-major)
 * are read back with ct_test_values by the caller. */
static ct_tensor *make_input(ct_shape shape, ct_dtype dt, int lay, double lo, double hi) {
    int n = shape.ndim;
    if (lay == LAY_REVERSED) {
        double *v;
        ct_tensor *c = ct_test_random(shape, dt, lo, hi, &v);
        ct_tensor *t = ct_test_noncontiguous(v, shape, dt);
        ct_release(c);
        free(v);
        return t;
    }
    if (lay == LAY_NARROWED && n > 0) {
        int d = (int)ct_test_randint(0, n);
        ct_shape big = shape;
        big.dims[d] += 3;
        ct_tensor *b = ct_test_random(big, dt, lo, hi, NULL);
        ct_tensor *t = ct_narrow(b, d, 1, shape.dims[d]);
        ct_release(b);
        return t;
    }
    if (lay == LAY_EXPANDED && n > 0) {
        int d = (int)ct_test_randint(0, n);
        ct_shape small = shape;
        small.dims[d] = 1;
        ct_tensor *s = ct_test_random(small, dt, lo, hi, NULL);
        ct_tensor *t = ct_expand(s, shape);
        ct_release(s);
        return t;
    }
    if (lay == LAY_TRANSPOSED && n > 1) {
        ct_shape sw = shape;
        sw.dims[0] = shape.dims[n - 1];
        sw.dims[n - 1] = shape.dims[0];
        ct_tensor *s = ct_test_random(sw, dt, lo, hi, NULL);
        ct_tensor *t = ct_transpose(s, 0, n - 1);
        ct_release(s);
        return t;
    }
    return ct_test_random(shape, dt, lo, hi, NULL);
}

static ct_shape random_shape(int ndim, int64_t max_size) {
    ct_shape s = {.ndim = ndim};
    for (int i = 0; i < ndim; i++) s.dims[i] = ct_test_randint(1, max_size + 1);
    return s;
}

/* ---- float64 references ------------------------------------------------------- */

/* Gather x (row-major, shape) into an [O, R] matrix: kept dims row-major
 * first, reduced dims (mask bits) row-major second. */
static double *gather(const double *x, ct_shape shape, unsigned mask, int64_t *O, int64_t *R) {
    int64_t n = 1, o_n = 1, r_n = 1;
    for (int i = 0; i < shape.ndim; i++) {
        n *= shape.dims[i];
        if (mask >> i & 1) r_n *= shape.dims[i];
        else o_n *= shape.dims[i];
    }
    double *g = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t flat = 0; flat < n; flat++) {
        int64_t rem = flat, o = 0, r = 0, o_mul = 1, r_mul = 1;
        for (int i = shape.ndim - 1; i >= 0; i--) {
            int64_t k = rem % shape.dims[i];
            rem /= shape.dims[i];
            if (mask >> i & 1) r += k * r_mul, r_mul *= shape.dims[i];
            else o += k * o_mul, o_mul *= shape.dims[i];
        }
        g[o * r_n + r] = x[flat];
    }
    *O = o_n;
    *R = r_n;
    return g;
}

/* Index of the first extreme of a row, a NaN counting as extreme. */
static int64_t ref_arg(const double *row, int64_t R, bool is_max) {
    int64_t best = 0;
    for (int64_t r = 0; r < R; r++) {
        if (isnan(row[r])) return r;
        if (is_max ? row[r] > row[best] : row[r] < row[best]) best = r;
    }
    return best;
}

static double ref_row(int op, const double *row, int64_t R, double correction) {
    long double s = 0, p = 1;
    for (int64_t r = 0; r < R; r++) s += row[r], p *= row[r];
    switch (op) {
    case OP_SUM: return (double)s;
    case OP_MEAN: return (double)(s / R);
    case OP_PROD: return (double)p;
    case OP_AMAX: return row[ref_arg(row, R, true)];
    case OP_AMIN: return row[ref_arg(row, R, false)];
    default: {
        long double mean = s / R, m2 = 0;
        for (int64_t r = 0; r < R; r++) m2 += (row[r] - mean) * (row[r] - mean);
        double var = (double)(m2 / fmax(0.0, (double)R - correction));
        return op == OP_STD ? sqrt(var) : var;
    }
    }
}

/* ---- running the public API ---------------------------------------------------- */

static ct_tensor *run_op(int op, const ct_tensor *t, const int *dims, int nd, bool keepdim,
                         double correction) {
    switch (op) {
    case OP_SUM: return ct_sum(t, dims, nd, keepdim);
    case OP_MEAN: return ct_mean(t, dims, nd, keepdim);
    case OP_PROD: return ct_prod(t, dims, nd, keepdim);
    case OP_AMAX: return ct_amax(t, dims, nd, keepdim);
    case OP_AMIN: return ct_amin(t, dims, nd, keepdim);
    case OP_VAR: return ct_var(t, dims, nd, correction, keepdim);
    default: return ct_std(t, dims, nd, correction, keepdim);
    }
}

static ct_dtype expected_dtype(int op, ct_dtype in) {
    if ((op == OP_SUM || op == OP_PROD) && !ct_dtype_is_floating(in)) return CT_INT64;
    return in;
}

static ct_shape reduced_shape(ct_shape s, unsigned mask, bool keepdim) {
    ct_shape r = {.ndim = 0};
    for (int i = 0; i < s.ndim; i++) {
        if (!(mask >> i & 1)) r.dims[r.ndim++] = s.dims[i];
        else if (keepdim) r.dims[r.ndim++] = 1;
    }
    return r;
}

/* Reduce t (values x, shape s) over `mask` with op and compare with the
 * reference. Dims are passed in a shuffled order, some negative; mask 0
 * with all_dims passes ndims 0. */
static void check_reduction(int op, const ct_tensor *t, const double *x, ct_shape s,
                            unsigned mask, bool keepdim, double correction) {
    int dims[CT_MAX_DIMS], nd = 0;
    for (int i = s.ndim - 1; i >= 0; i--)
        if (mask >> i & 1) dims[nd++] = ct_test_randint(0, 2) ? i - s.ndim : i;
    if (nd == s.ndim && ct_test_randint(0, 2)) nd = 0; /* "all dims" spelled as ndims 0 */
    if (nd == 0) mask = (1u << s.ndim) - 1;

    ct_tensor *y = run_op(op, t, dims, nd, keepdim, correction);
    ct_dtype dt = ct_dtype_of(t);
    if (!y) {
        ct_test_fail(__FILE__, __LINE__, "%s(%s) failed: %s", op_names[op], ct_dtype_name(dt),
                     ct_last_error());
        return;
    }
    CT_EXPECT_SHAPE(y, reduced_shape(s, mask, keepdim));
    CT_EXPECT_MSG(ct_dtype_of(y) == expected_dtype(op, dt), "%s(%s) gave dtype %s", op_names[op],
                  ct_dtype_name(dt), ct_dtype_name(ct_dtype_of(y)));
    int64_t O, R;
    double *g = gather(x, s, mask, &O, &R);
    double *want = malloc(sizeof(double) * (size_t)(O ? O : 1));
    for (int64_t o = 0; o < O; o++) want[o] = ref_row(op, g + o * R, R, correction);
    double rtol, atol;
    ct_test_tolerances(ct_dtype_of(y), &rtol, &atol);
    if (!CT_EXPECT_CLOSE(y, want, O, rtol, atol))
        fprintf(stderr, "  op %s dtype %s ndim %d mask %#x keepdim %d strides[0] %lld\n",
                op_names[op], ct_dtype_name(dt), s.ndim, mask, keepdim,
                s.ndim ? (long long)ct_stride(t, 0) : 0LL);
    free(g);
    free(want);
    ct_release(y);
}

/* Every op that applies to dt, every subset of dims, every layout. */
static void sweep(ct_dtype dt, int max_ndim, int64_t max_size) {
    bool floating = ct_dtype_is_floating(dt);
    for (int op = 0; op < OP_COUNT; op++) {
        if (!floating && (op == OP_MEAN || op == OP_VAR || op == OP_STD)) continue;
        double lo = -3, hi = 3;
        int64_t size = max_size;
        if (op == OP_PROD) {
            lo = floating ? 0.5 : (dt == CT_UINT8 || dt == CT_BOOL ? 0 : -2);
            hi = floating ? 1.5 : 3;
            size = 3; /* keeps integer products exact in double */
        }
        /* integer products of up to 27 values in [-2, 2] stay exact */
        int top = op == OP_PROD && !floating ? 3 : max_ndim;
        for (int ndim = 1; ndim <= top; ndim++)
            for (int lay = 0; lay < LAY_COUNT; lay++) {
                ct_shape s = random_shape(ndim, size);
                ct_tensor *t = make_input(s, dt, lay, lo, hi);
                double *x = ct_test_values(t);
                for (unsigned mask = 1; mask < 1u << ndim; mask++)
                    for (int keep = 0; keep < 2; keep++)
                        check_reduction(op, t, x, s, mask, keep,
                                        op == OP_VAR ? (double)(mask % 3) : 1.0);
                free(x);
                ct_release(t);
            }
    }
}

static void test_float_reductions(void) {
    for (size_t k = 0; k < sizeof float_types / sizeof *float_types; k++)
        sweep(float_types[k], 4, 6);
}

static void test_integer_reductions(void) {
    for (size_t k = 0; k < sizeof int_types / sizeof *int_types; k++) sweep(int_types[k], 4, 6);
}

/* max_dim/min_dim/argmax/argmin along each dim, with ties (small integer
 * values) so that "first occurrence" is tested. */
static void test_max_min_dim(void) {
    for (size_t k = 0; k < sizeof all_types / sizeof *all_types; k++) {
        ct_dtype dt = all_types[k];
        for (int ndim = 1; ndim <= 3; ndim++)
            for (int lay = 0; lay < LAY_COUNT; lay++) {
                ct_shape s = random_shape(ndim, 7);
                ct_tensor *t = make_input(s, dt, lay, 0, 4);
                double *x = ct_test_values(t);
                for (int d = 0; d < ndim; d++)
                    for (int keep = 0; keep < 2; keep++)
                        for (int is_max = 0; is_max < 2; is_max++) {
                            ct_tensor *vals = NULL, *idx = NULL;
                            ct_status st = is_max ? ct_max_dim(t, d, keep, &vals, &idx)
                                                  : ct_min_dim(t, d, keep, &vals, &idx);
                            CT_EXPECT_INT_EQ(st, CT_OK);
                            int64_t O, R;
                            double *g = gather(x, s, 1u << d, &O, &R);
                            double *wv = malloc(sizeof(double) * (size_t)O);
                            double *wi = malloc(sizeof(double) * (size_t)O);
                            for (int64_t o = 0; o < O; o++) {
                                int64_t a = ref_arg(g + o * R, R, is_max);
                                wi[o] = (double)a;
                                wv[o] = g[o * R + a];
                            }
                            ct_shape rs = reduced_shape(s, 1u << d, keep);
                            CT_EXPECT_SHAPE(vals, rs);
                            CT_EXPECT_SHAPE(idx, rs);
                            CT_EXPECT(ct_dtype_of(vals) == dt && ct_dtype_of(idx) == CT_INT64);
                            CT_EXPECT_CLOSE(vals, wv, O, 0, 0);
                            CT_EXPECT_CLOSE(idx, wi, O, 0, 0);
                            if (dt != CT_BOOL) {
                                ct_tensor *a = is_max ? ct_argmax(t, d - ndim, keep)
                                                      : ct_argmin(t, d - ndim, keep);
                                CT_EXPECT_SHAPE(a, rs);
                                CT_EXPECT(ct_dtype_of(a) == CT_INT64);
                                CT_EXPECT_CLOSE(a, wi, O, 0, 0);
                                ct_release(a);
                            }
                            free(g);
                            free(wv);
                            free(wi);
                            ct_release(vals);
                            ct_release(idx);
                        }
                free(x);
                ct_release(t);
            }
    }
}

/* Ties: the first extreme wins, including when it is element 0, in short
 * rows, vector-width rows and chunked rows, contiguous and strided. */
static void test_first_occurrence(void) {
    const int64_t lens[] = {4, 21, 70001};
    for (size_t k = 0; k < sizeof all_types / sizeof *all_types; k++)
        for (size_t li = 0; li < 3; li++) {
            int64_t n = lens[li];
            double *v = malloc(sizeof(double) * (size_t)(2 * n));
            for (int64_t i = 0; i < 2 * n; i++) v[i] = 1;
            v[0] = v[n - 1] = 2;            /* row 0: max at 0 and n-1     */
            v[n / 2] = v[n - 2] = 0;        /* row 0: min at n/2 and n-2   */
            v[n + 1] = v[n + n / 2 + 1] = 2; /* row 1: max at 1 and n/2+1 */
            v[n] = v[2 * n - 1] = 0;        /* row 1: min at 0 and n-1     */
            if (all_types[k] == CT_BOOL)    /* bool has only 0 and 1       */
                for (int64_t i = 0; i < 2 * n; i++) v[i] = v[i] > 1;
            double wmax[2] = {0, 1}, wmin[2] = {(double)(n / 2), 0};
            if (all_types[k] == CT_BOOL) wmin[0] = 1, wmin[1] = 0;
            for (int lay = 0; lay < 2; lay++) {
                ct_tensor *t = lay ? ct_test_noncontiguous(v, CT_SHAPE(2, n), all_types[k])
                                   : ct_test_tensor(v, CT_SHAPE(2, n), all_types[k]);
                ct_tensor *vals, *imax, *imin;
                CT_EXPECT_INT_EQ(ct_max_dim(t, 1, false, &vals, &imax), CT_OK);
                CT_EXPECT_INT_EQ(ct_min_dim(t, -1, false, NULL, &imin), CT_OK);
                if (!CT_EXPECT_CLOSE(imax, wmax, 2, 0, 0) | !CT_EXPECT_CLOSE(imin, wmin, 2, 0, 0))
                    fprintf(stderr, "  dtype %s n %lld layout %d\n", ct_dtype_name(all_types[k]),
                            (long long)n, lay);
                ct_release(vals), ct_release(imax), ct_release(imin);
                ct_release(t);
            }
            free(v);
        }
}

static void test_whole_tensor(void) {
    for (size_t k = 0; k < sizeof all_types / sizeof *all_types; k++) {
        ct_dtype dt = all_types[k];
        ct_shape s = CT_SHAPE(4, 3, 5);
        ct_tensor *t = make_input(s, dt, LAY_REVERSED, 0, 5);
        double *x = ct_test_values(t);
        int64_t n = 60;
        double sum = 0, mx = x[0], mn = x[0];
        int64_t amax = 0;
        for (int64_t i = 0; i < n; i++) {
            sum += x[i];
            if (x[i] > mx) mx = x[i], amax = i;
            if (x[i] < mn) mn = x[i];
        }
        double rtol, atol;
        ct_test_tolerances(dt, &rtol, &atol);
        ct_tensor *ts = ct_sum_all(t), *tmax = ct_max_all(t), *tmin = ct_min_all(t);
        CT_EXPECT_SHAPE(ts, CT_SHAPE0);
        CT_EXPECT_SHAPE(tmax, CT_SHAPE0);
        CT_EXPECT_CLOSE(ts, &sum, 1, rtol, atol);
        CT_EXPECT_CLOSE(tmax, &mx, 1, 0, 0);
        CT_EXPECT_CLOSE(tmin, &mn, 1, 0, 0);
        if (ct_dtype_is_floating(dt)) {
            double mean = sum / (double)n;
            ct_tensor *tm = ct_mean_all(t);
            CT_EXPECT_CLOSE(tm, &mean, 1, rtol, atol);
            ct_release(tm);
        }
        if (dt != CT_BOOL) {
            double want = (double)amax;
            ct_tensor *am = ct_argmax_all(t);
            CT_EXPECT_SHAPE(am, CT_SHAPE0);
            CT_EXPECT_CLOSE(am, &want, 1, 0, 0);
            ct_release(am);
        }
        ct_release(ts);
        ct_release(tmax);
        ct_release(tmin);
        free(x);
        ct_release(t);
    }
}

/* NaN wins max/min and the first NaN's index is reported; sums become NaN. */
static void test_nan_propagation(void) {
    const int64_t lens[] = {5, 37, 100000}; /* scalar tail, vector body, chunked row */
    for (size_t k = 0; k < 4; k++)
        for (size_t li = 0; li < 3; li++) {
            int64_t n = lens[li];
            double *v = malloc(sizeof(double) * (size_t)(2 * n));
            ct_test_fill_uniform(v, 2 * n, -1, 1);
            int64_t p1 = n / 3, p2 = n - 1;
            v[p1] = NAN;          /* row 0: first NaN at p1 */
            v[p2] = NAN;
            v[n + p2] = NAN;      /* row 1: only NaN last */
            ct_tensor *t = ct_test_tensor(v, CT_SHAPE(2, n), float_types[k]);
            ct_tensor *tt = ct_test_noncontiguous(v, CT_SHAPE(2, n), float_types[k]);
            const ct_tensor *ins[2] = {t, tt};
            for (int w = 0; w < 2; w++) {
                ct_tensor *vals, *idx;
                double wi[2] = {(double)p1, (double)p2}, nan2[2] = {NAN, NAN};
                CT_EXPECT_INT_EQ(ct_max_dim(ins[w], 1, false, &vals, &idx), CT_OK);
                CT_EXPECT_CLOSE(vals, nan2, 2, 0, 0);
                CT_EXPECT_CLOSE(idx, wi, 2, 0, 0);
                ct_release(vals);
                ct_release(idx);
                ct_tensor *am = ct_argmin(ins[w], 1, false), *mx = ct_amax(ins[w], NULL, 0, false);
                ct_tensor *s = ct_sum(ins[w], (int[]){1}, 1, false), *mn = ct_min_all(ins[w]);
                CT_EXPECT_CLOSE(am, wi, 2, 0, 0);
                CT_EXPECT_CLOSE(s, nan2, 2, 0, 0);
                CT_EXPECT(mx && isnan(ct_item(mx)));
                CT_EXPECT(mn && isnan(ct_item(mn)));
                ct_release(am);
                ct_release(mx);
                ct_release(s);
                ct_release(mn);
            }
            ct_release(t);
            ct_release(tt);
            free(v);
        }
}

/* Column reductions (outputs adjacent in memory) with NaN and infinities:
 * infinities must not be mistaken for NaN, and NaN must win. */
static void test_nan_inf_columns(void) {
    double v[5 * 3] = {1, 2, 3,   4, -INFINITY, 0,   NAN, 5, -1,   2, INFINITY, 7,   3, 1, 2};
    double want_max[3] = {NAN, INFINITY, 7}, want_min[3] = {NAN, -INFINITY, -1};
    double want_argmax[3] = {2, 3, 3}, want_argmin[3] = {2, 1, 2};
    for (size_t k = 0; k < sizeof float_types / sizeof *float_types; k++) {
        ct_tensor *t = ct_test_tensor(v, CT_SHAPE(5, 3), float_types[k]);
        ct_tensor *mx = ct_amax(t, (int[]){0}, 1, false), *mn = ct_amin(t, (int[]){-2}, 1, true);
        ct_tensor *am = ct_argmax(t, 0, false), *an = ct_argmin(t, 0, false);
        CT_EXPECT_CLOSE(mx, want_max, 3, 0, 0);
        CT_EXPECT_CLOSE(mn, want_min, 3, 0, 0);
        CT_EXPECT_CLOSE(am, want_argmax, 3, 0, 0);
        CT_EXPECT_CLOSE(an, want_argmin, 3, 0, 0);
        ct_release(mx), ct_release(mn), ct_release(am), ct_release(an), ct_release(t);
    }
}

/* Long rows, long columns and many rows: the chunked, column and threaded
 * kernel paths, for sum, var, amax (with argmax) and int64 sums. */
static void check_large(ct_shape s, int dim, ct_dtype dt, int lay) {
    ct_tensor *t = make_input(s, dt, lay, -2, 2);
    double *x = ct_test_values(t);
    const int ops[] = {OP_SUM, OP_MEAN, OP_AMAX, OP_AMIN, OP_VAR, OP_PROD};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        if (!ct_dtype_is_floating(dt) && (ops[k] == OP_MEAN || ops[k] == OP_VAR)) continue;
        if (ops[k] == OP_PROD && ct_dtype_is_floating(dt)) continue; /* over/underflows */
        if (ops[k] == OP_PROD) {
            ct_release(t);
            free(x);
            t = make_input(s, dt, lay, 1, 2); /* all ones: exact */
            x = ct_test_values(t);
        }
        check_reduction(ops[k], t, x, s, 1u << dim, false, 1.0);
    }
    int64_t O, R;
    double *g = gather(x, s, 1u << dim, &O, &R);
    double *wi = malloc(sizeof(double) * (size_t)O);
    for (int64_t o = 0; o < O; o++) wi[o] = (double)ref_arg(g + o * R, R, true);
    ct_tensor *a = ct_argmax(t, dim, false), *vals, *idx;
    CT_EXPECT_CLOSE(a, wi, O, 0, 0);
    CT_EXPECT_INT_EQ(ct_min_dim(t, dim, false, &vals, &idx), CT_OK);
    double *wv = malloc(sizeof(double) * (size_t)O);
    for (int64_t o = 0; o < O; o++) {
        wi[o] = (double)ref_arg(g + o * R, R, false);
        wv[o] = g[o * R + (int64_t)wi[o]];
    }
    CT_EXPECT_CLOSE(vals, wv, O, 0, 0);
    CT_EXPECT_CLOSE(idx, wi, O, 0, 0);
    ct_release(vals), ct_release(idx), ct_release(a);
    free(wv);
    free(wi);
    free(g);
    free(x);
    ct_release(t);
}

static void test_large_paths(void) {
    check_large(CT_SHAPE(2, 70001), 1, CT_FLOAT32, LAY_CONTIG);     /* chunked rows  */
    check_large(CT_SHAPE(3, 70001), 1, CT_FLOAT64, LAY_NARROWED);
    check_large(CT_SHAPE(70001, 3), 0, CT_FLOAT32, LAY_CONTIG);     /* chunked cols  */
    check_large(CT_SHAPE(70001, 2), 0, CT_BFLOAT16, LAY_CONTIG);
    check_large(CT_SHAPE(300, 257), 0, CT_FLOAT32, LAY_CONTIG);     /* column tiles  */
    check_large(CT_SHAPE(300, 257), 0, CT_FLOAT16, LAY_REVERSED);
    check_large(CT_SHAPE(257, 300), 1, CT_FLOAT64, LAY_TRANSPOSED); /* strided rows  */
    check_large(CT_SHAPE(2000, 40), 1, CT_FLOAT32, LAY_CONTIG);     /* many rows     */
    check_large(CT_SHAPE(40, 2000), 0, CT_FLOAT64, LAY_CONTIG);
    check_large(CT_SHAPE(4, 70, 100), 1, CT_FLOAT32, LAY_CONTIG);   /* call per group */
    check_large(CT_SHAPE(2, 70001), 1, CT_INT64, LAY_CONTIG);
    check_large(CT_SHAPE(70001, 2), 0, CT_INT32, LAY_CONTIG);
    check_large(CT_SHAPE(300, 257), 0, CT_UINT8, LAY_CONTIG);
}

/* Sums accumulate in double: 1e6 float32 ones are exact and a long float32
 * sum is within one float ulp of the exact one. */
static void test_large_sum_accuracy(void) {
    int64_t n = 1000000;
    ct_tensor *ones = ct_ones(CT_SHAPE(n));
    ct_tensor *s = ct_sum_all(ones), *m = ct_mean_all(ones);
    CT_EXPECT(ct_item(s) == 1e6);
    CT_EXPECT(ct_item(m) == 1.0);
    ct_release(s);
    ct_release(m);
    ct_release(ones);

    double *x;
    ct_tensor *t = ct_test_random(CT_SHAPE(3000000), CT_FLOAT32, 0, 1, &x);
    long double exact = 0;
    for (int64_t i = 0; i < 3000000; i++) exact += x[i];
    s = ct_sum_all(t);
    double got = ct_item(s), want = (double)exact;
    CT_EXPECT_MSG(fabs(got - want) <= nextafterf((float)want, INFINITY) - (float)want,
                  "float32 sum %.10g vs exact %.10g", got, want);
    ct_release(s);
    ct_release(t);
    free(x);

    t = ct_test_random(CT_SHAPE(1000000), CT_FLOAT64, -1, 1, &x);
    exact = 0;
    for (int64_t i = 0; i < 1000000; i++) exact += x[i];
    s = ct_sum_all(t);
    CT_EXPECT_NEAR(ct_item(s), (double)exact, 1e-9);
    ct_release(s);
    ct_release(t);
    free(x);
}

/* int64 arithmetic is exact beyond 2^53 and wraps like PyTorch's. */
static void test_int64_exact(void) {
    int64_t big[3] = {((int64_t)1 << 62) + 1, ((int64_t)1 << 62) + 3, ((int64_t)1 << 62) + 2};
    ct_tensor *t = ct_tensor_from(big, CT_INT64, CT_SHAPE(3));
    ct_tensor *mx = ct_amax(t, NULL, 0, false), *am = ct_argmax_all(t);
    ct_tensor *two = ct_narrow(t, 0, 0, 2), *s = ct_sum_all(two);
    int64_t v = 0;
    ct_copy_to_host(mx, &v, CT_INT64, 1);
    CT_EXPECT(v == ((int64_t)1 << 62) + 3);
    ct_copy_to_host(am, &v, CT_INT64, 1);
    CT_EXPECT_INT_EQ(v, 1);
    ct_copy_to_host(s, &v, CT_INT64, 1);
    CT_EXPECT(v == INT64_MIN + 4); /* 2^63 + 4 wraps */
    int64_t wrap[2] = {INT64_MAX, 1};
    ct_tensor *w = ct_tensor_from(wrap, CT_INT64, CT_SHAPE(2)), *ws = ct_sum_all(w);
    ct_copy_to_host(ws, &v, CT_INT64, 1);
    CT_EXPECT(v == INT64_MIN);
    uint8_t bytes[4] = {200, 200, 200, 200};
    ct_tensor *u = ct_tensor_from(bytes, CT_UINT8, CT_SHAPE(4)), *us = ct_sum_all(u);
    CT_EXPECT(ct_dtype_of(us) == CT_INT64 && ct_item(us) == 800); /* no uint8 overflow */
    ct_release(t), ct_release(mx), ct_release(am), ct_release(two), ct_release(s);
    ct_release(w), ct_release(ws), ct_release(u), ct_release(us);
}

static void test_empty(void) {
    ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
    ct_tensor *s0 = ct_sum(e, (int[]){0}, 1, false), *p0 = ct_prod(e, (int[]){0}, 1, true);
    ct_tensor *m0 = ct_mean(e, (int[]){0}, 1, false), *v0 = ct_var(e, (int[]){0}, 1, 1.0, false);
    ct_tensor *s1 = ct_sum(e, (int[]){1}, 1, false), *x1 = ct_amax(e, (int[]){1}, 1, true);
    ct_tensor *sa = ct_sum_all(e), *ma = ct_mean_all(e);
    double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1}, nans[3] = {NAN, NAN, NAN};
    CT_EXPECT_SHAPE(s0, CT_SHAPE(3));
    CT_EXPECT_CLOSE(s0, zeros, 3, 0, 0);
    CT_EXPECT_SHAPE(p0, CT_SHAPE(1, 3));
    CT_EXPECT_CLOSE(p0, ones, 3, 0, 0);
    CT_EXPECT_CLOSE(m0, nans, 3, 0, 0);
    CT_EXPECT_CLOSE(v0, nans, 3, 0, 0);
    CT_EXPECT_SHAPE(s1, CT_SHAPE(0));
    CT_EXPECT_SHAPE(x1, CT_SHAPE(0, 1));
    CT_EXPECT_SHAPE(sa, CT_SHAPE0);
    CT_EXPECT_CLOSE(sa, zeros, 1, 0, 0);
    CT_EXPECT_CLOSE(ma, nans, 1, 0, 0);
    ct_release(s0), ct_release(p0), ct_release(m0), ct_release(v0);
    ct_release(s1), ct_release(x1), ct_release(sa), ct_release(ma);

    ct_tensor *ei = ct_zeros(CT_SHAPE(2, 0), .dtype = CT_INT32);
    ct_tensor *si = ct_sum(ei, (int[]){1}, 1, false);
    CT_EXPECT(si && ct_dtype_of(si) == CT_INT64);
    CT_EXPECT_CLOSE(si, zeros, 2, 0, 0);
    ct_release(si);
    ct_release(ei);

    CT_EXPECT(ct_amax(e, (int[]){0}, 1, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "amax(): Expected reduction dim 0 to have non-zero size.");
    ct_tensor *sentinel = ct_ones(CT_SHAPE(1)), *vals = sentinel, *idx = sentinel;
    CT_EXPECT(ct_max_dim(e, -2, false, &vals, &idx) == CT_ERR_INDEX);
    CT_EXPECT(vals == NULL && idx == NULL); /* cleared on failure */
    ct_release(sentinel);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "max(): Expected reduction dim 0 to have non-zero size.");
    CT_EXPECT(ct_argmin(e, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "argmin(): Expected reduction dim 0 to have non-zero size.");
    CT_EXPECT(ct_max_all(e) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max(): Expected reduction dim to be specified for input.numel() == 0");
    CT_EXPECT(ct_argmax_all(e) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "argmax(): Expected reduction dim to be specified");
    CT_EXPECT(ct_amin(e, NULL, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "amin(): Expected reduction dim 0 to have non-zero size.");
    ct_release(e);
}

/* A 0-dim tensor reduces over dim 0 or -1 to itself, as in PyTorch. */
static void test_zero_dim(void) {
    ct_tensor *t = ct_scalar_tensor(2.5, .dtype = CT_FLOAT64);
    double v = 2.5, zero = 0, nan = NAN;
    for (int keep = 0; keep < 2; keep++) {
        ct_tensor *s = ct_sum(t, (int[]){0}, 1, keep), *m = ct_mean(t, (int[]){-1}, 1, keep);
        ct_tensor *mx = ct_amax(t, NULL, 0, keep), *a = ct_argmax(t, 0, keep);
        ct_tensor *v1 = ct_var(t, NULL, 0, 1.0, keep), *v0 = ct_var(t, (int[]){0}, 1, 0.0, keep);
        CT_EXPECT_SHAPE(s, CT_SHAPE0);
        CT_EXPECT_SHAPE(a, CT_SHAPE0);
        CT_EXPECT_CLOSE(s, &v, 1, 0, 0);
        CT_EXPECT_CLOSE(m, &v, 1, 0, 0);
        CT_EXPECT_CLOSE(mx, &v, 1, 0, 0);
        CT_EXPECT_CLOSE(a, &zero, 1, 0, 0);
        CT_EXPECT_CLOSE(v1, &nan, 1, 0, 0);
        CT_EXPECT_CLOSE(v0, &zero, 1, 0, 0);
        ct_release(s), ct_release(m), ct_release(mx), ct_release(a), ct_release(v1), ct_release(v0);
    }
    ct_tensor *vals, *idx;
    CT_EXPECT_INT_EQ(ct_min_dim(t, -1, false, &vals, &idx), CT_OK);
    CT_EXPECT_CLOSE(vals, &v, 1, 0, 0);
    CT_EXPECT_CLOSE(idx, &zero, 1, 0, 0);
    ct_release(vals), ct_release(idx);
    CT_EXPECT(ct_sum(t, (int[]){1}, 1, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    ct_release(t);
}

static void test_output_dtypes(void) {
    struct { ct_dtype in; int op; ct_dtype out; } cases[] = {
        {CT_INT32, OP_SUM, CT_INT64},      {CT_BOOL, OP_SUM, CT_INT64},
        {CT_UINT8, OP_PROD, CT_INT64},     {CT_BOOL, OP_PROD, CT_INT64},
        {CT_FLOAT16, OP_SUM, CT_FLOAT16},  {CT_BFLOAT16, OP_MEAN, CT_BFLOAT16},
        {CT_BOOL, OP_AMAX, CT_BOOL},       {CT_UINT8, OP_AMIN, CT_UINT8},
        {CT_FLOAT64, OP_STD, CT_FLOAT64},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ct_tensor *t = ct_ones(CT_SHAPE(2, 3), .dtype = cases[k].in);
        ct_tensor *y = run_op(cases[k].op, t, (int[]){1}, 1, false, 1.0);
        CT_EXPECT_MSG(y && ct_dtype_of(y) == cases[k].out, "%s(%s): got %s", op_names[cases[k].op],
                      ct_dtype_name(cases[k].in), y ? ct_dtype_name(ct_dtype_of(y)) : "NULL");
        ct_release(y);
        ct_release(t);
    }
    /* bool max_dim works and keeps bool values */
    bool b[4] = {false, true, true, false};
    ct_tensor *t = ct_tensor_from(b, CT_BOOL, CT_SHAPE(2, 2)), *vals, *idx;
    CT_EXPECT_INT_EQ(ct_max_dim(t, 1, false, &vals, NULL), CT_OK);
    CT_EXPECT(ct_dtype_of(vals) == CT_BOOL);
    CT_EXPECT_CLOSE(vals, ((double[]){1, 1}), 2, 0, 0);
    ct_release(vals);
    CT_EXPECT_INT_EQ(ct_min_dim(t, 0, true, NULL, &idx), CT_OK);
    CT_EXPECT_SHAPE(idx, CT_SHAPE(1, 2));
    CT_EXPECT_CLOSE(idx, ((double[]){0, 1}), 2, 0, 0);
    ct_release(idx);
    ct_release(t);
}

static void test_errors(void) {
    ct_tensor *t = ct_ones(CT_SHAPE(2, 3));
    CT_EXPECT(ct_sum(t, (int[]){2}, 1, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CT_EXPECT(ct_amax(t, (int[]){-3}, 1, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
    CT_EXPECT(ct_argmax(t, 5, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got 5");
    ct_tensor *v = t, *i = t;
    CT_EXPECT(ct_max_dim(t, 2, false, &v, &i) == CT_ERR_INDEX && v == NULL && i == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");

    CT_EXPECT(ct_sum(t, (int[]){1, -1}, 2, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "dim 1 appears multiple times in the list of dims");
    CT_EXPECT(ct_mean(t, (int[]){0, 1, 0}, 3, true) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "dim 0 appears multiple times in the list of dims");
    CT_EXPECT(ct_sum(t, NULL, 2, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sum: invalid dims list");
    CT_EXPECT(ct_sum(t, (int[]){0}, -1, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sum: invalid dims list");

    ct_tensor *l = ct_ones(CT_SHAPE(2, 3), .dtype = CT_INT64);
    CT_EXPECT(ct_mean(l, NULL, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "mean(): could not infer output dtype. Input dtype must be either a "
                                  "floating point or complex dtype. Got: Long");
    CT_EXPECT(ct_mean_all(l) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "Got: Long");
    CT_EXPECT(ct_var(l, NULL, 0, 1.0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "var(): std and var only support floating point and complex dtypes. Got: Long");
    ct_tensor *b = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
    ct_tensor *u = ct_ones(CT_SHAPE(2), .dtype = CT_UINT8);
    CT_EXPECT(ct_std(u, NULL, 0, 1.0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "std(): std and var only support floating point and complex dtypes. Got: Byte");
    CT_EXPECT(ct_argmax(b, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "argmax(): \"argmax\" not implemented for 'Bool'");
    CT_EXPECT(ct_argmax_all(b) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "not implemented for 'Bool'");
    ct_release(l), ct_release(b), ct_release(u), ct_release(t);
}

/* NULL inputs give NULL (or the recorded error's code) and keep the message. */
static void test_null_propagation(void) {
    ct_tensor *t = ct_ones(CT_SHAPE(2));
    CT_EXPECT(ct_sum(t, (int[]){3}, 1, false) == NULL); /* records an error */
    CT_EXPECT(ct_sum(NULL, NULL, 0, false) == NULL);
    CT_EXPECT(ct_mean(NULL, NULL, 0, false) == NULL);
    CT_EXPECT(ct_prod(NULL, NULL, 0, true) == NULL);
    CT_EXPECT(ct_amax(NULL, NULL, 0, false) == NULL && ct_amin(NULL, NULL, 0, false) == NULL);
    CT_EXPECT(ct_var(NULL, NULL, 0, 1, false) == NULL && ct_std(NULL, NULL, 0, 1, false) == NULL);
    CT_EXPECT(ct_sum_all(NULL) == NULL && ct_mean_all(NULL) == NULL);
    CT_EXPECT(ct_max_all(NULL) == NULL && ct_min_all(NULL) == NULL);
    CT_EXPECT(ct_argmax(NULL, 0, false) == NULL && ct_argmin(NULL, 0, false) == NULL);
    CT_EXPECT(ct_argmax_all(NULL) == NULL);
    ct_tensor *v = t, *i = t;
    CT_EXPECT(ct_max_dim(NULL, 0, false, &v, &i) == CT_ERR_INDEX && v == NULL && i == NULL);
    CT_EXPECT(ct_min_dim(NULL, 0, false, NULL, NULL) == CT_ERR_INDEX);
    CT_EXPECT(ct_sum(ct_sum(t, (int[]){-2}, 1, false), NULL, 0, false) == NULL); /* a chain */
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got -2");
    CT_EXPECT(ct_mean(NULL, NULL, 0, false) == NULL);
    CT_EXPECT(ct_last_status() == CT_OK); /* nothing new recorded */
    ct_release(t);
}

/* Inside a scope results are released with it. */
static void test_scopes(void) {
    int64_t live = ct_live_tensors();
    CT_SCOPE {
        ct_tensor *t = ct_ones(CT_SHAPE(3, 4));
        ct_tensor *s = ct_sum(ct_mean(t, (int[]){0}, 1, true), NULL, 0, false);
        CT_EXPECT_NEAR(ct_item(s), 4.0, 0);
        ct_tensor *m;
        CT_EXPECT_INT_EQ(ct_max_dim(t, 1, false, &m, NULL), CT_OK);
        ct_tensor *sd = ct_std(t, NULL, 0, 1, false);
        CT_EXPECT_NEAR(ct_item(sd), 0.0, 0);
    }
    CT_EXPECT_INT_EQ(ct_live_tensors(), live);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_float_reductions);
    CT_RUN(test_integer_reductions);
    CT_RUN(test_max_min_dim);
    CT_RUN(test_first_occurrence);
    CT_RUN(test_whole_tensor);
    CT_RUN(test_nan_propagation);
    CT_RUN(test_nan_inf_columns);
    CT_RUN(test_large_paths);
    CT_RUN(test_large_sum_accuracy);
    CT_RUN(test_int64_exact);
    CT_RUN(test_empty);
    CT_RUN(test_zero_dim);
    CT_RUN(test_output_dtypes);
    CT_RUN(test_errors);
    CT_RUN(test_null_propagation);
    CT_RUN(test_scopes);
    return ct_test_finish();
}
