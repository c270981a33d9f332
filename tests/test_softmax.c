/*
 * test_softmax.c — softmax and log_softmax against float64 references
 * computed here (max-subtracted, so they are exact enough for any input):
 * random shapes, every dim (negative too), contiguous and non-contiguous
 * inputs, every floating dtype, large inputs that overflow a naive exp, -inf
 * and NaN entries, long rows and wide inner blocks (the threaded kernel
 * paths), 0-dim and empty tensors, and the error paths.
 */
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};

/* Reference over dim d of x (row-major, shape s) into y. */
static void ref_softmax(const double *x, ct_shape s, int d, bool log_, double *y) {
    int64_t outer = 1, n = s.ndim ? s.dims[d] : 1, inner = 1;
    for (int i = 0; i < s.ndim; i++) {
        if (i < d) outer *= s.dims[i];
        if (i > d) inner *= s.dims[i];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const double *xs = x + o * n * inner + j;
            double *ys = y + o * n * inner + j;
            double m = -INFINITY;
            bool nan = false;
            for (int64_t k = 0; k < n; k++) {
                nan |= isnan(xs[k * inner]);
                if (xs[k * inner] > m) m = xs[k * inner];
            }
            long double sum = 0;
            for (int64_t k = 0; k < n; k++) sum += expl((long double)xs[k * inner] - m);
            for (int64_t k = 0; k < n; k++) {
                long double v = (long double)xs[k * inner] - m;
                ys[k * inner] = nan    ? NAN
                                : log_ ? (double)(v - logl(sum))
                                       : (double)(expl(v) / sum);
            }
        }
}

/* softmax or log_softmax of t over dim (given as d or d - ndim) vs reference. */
static void check_softmax(const ct_tensor *t, int dim, bool log_) {
    ct_shape s = ct_shape_of(t);
    int d = dim < 0 ? dim + (s.ndim ? s.ndim : 1) : dim;
    double *x = ct_test_values(t);
    int64_t n = ct_numel(t);
    double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ref_softmax(x, s, d, log_, want);
    ct_tensor *y = log_ ? ct_log_softmax(t, dim) : ct_softmax(t, dim);
    CT_EXPECT_SHAPE(y, s);
    CT_EXPECT(y && ct_dtype_of(y) == ct_dtype_of(t) && ct_is_contiguous(y));
    double rtol, atol;
    ct_test_tolerances(ct_dtype_of(t), &rtol, &atol);
    if (!CT_EXPECT_CLOSE(y, want, n, rtol, atol))
        fprintf(stderr, "  %s dtype %s ndim %d dim %d\n", log_ ? "log_softmax" : "softmax",
                ct_dtype_name(ct_dtype_of(t)), s.ndim, dim);
    ct_release(y);
    free(want);
    free(x);
}

/* A random tensor of shape s in layout lay: 0 contiguous, 1 reversed
 * strides, 2 narrowed, 3 expanded along a random dim. */
static ct_tensor *make_input(ct_shape s, ct_dtype dt, int lay, double lo, double hi) {
    int d = s.ndim ? (int)ct_test_randint(0, s.ndim) : 0;
    if (lay == 1) {
        double *v;
        ct_tensor *c = ct_test_random(s, dt, lo, hi, &v);
        ct_tensor *t = ct_test_noncontiguous(v, s, dt);
        ct_release(c);
        free(v);
        return t;
    }
    if (lay == 2 && s.ndim) {
        ct_shape big = s;
        big.dims[d] += 2;
        ct_tensor *b = ct_test_random(big, dt, lo, hi, NULL), *t = ct_narrow(b, d, 2, s.dims[d]);
        ct_release(b);
        return t;
    }
    if (lay == 3 && s.ndim) {
        ct_shape small = s;
        small.dims[d] = 1;
        ct_tensor *b = ct_test_random(small, dt, lo, hi, NULL), *t = ct_expand(b, s);
        ct_release(b);
        return t;
    }
    return ct_test_random(s, dt, lo, hi, NULL);
}

static void test_random_shapes(void) {
    for (size_t k = 0; k < sizeof float_types / sizeof *float_types; k++)
        for (int ndim = 1; ndim <= 4; ndim++)
            for (int lay = 0; lay < 4; lay++) {
                ct_shape s = {.ndim = ndim};
                for (int i = 0; i < ndim; i++) s.dims[i] = ct_test_randint(1, 7);
                ct_tensor *t = make_input(s, float_types[k], lay, -5, 5);
                for (int d = 0; d < ndim; d++)
                    for (int log_ = 0; log_ < 2; log_++)
                        check_softmax(t, ct_test_randint(0, 2) ? d : d - ndim, log_);
                ct_release(t);
            }
}

/* exp(1000) overflows: only the max-subtracted form gets these right. */
static void test_large_inputs_are_stable(void) {
    for (size_t k = 0; k < 2; k++) {
        ct_tensor *t = ct_test_random(CT_SHAPE(5, 7), float_types[k], 1000, 1010, NULL);
        ct_tensor *n = ct_test_random(CT_SHAPE(5, 7), float_types[k], -1010, -1000, NULL);
        for (int d = 0; d < 2; d++)
            for (int log_ = 0; log_ < 2; log_++) {
                check_softmax(t, d, log_);
                check_softmax(n, d, log_);
            }
        ct_release(t);
        ct_release(n);
    }
}

/* -inf entries get probability 0 (log -inf); a NaN makes its slice NaN only. */
static void test_inf_and_nan(void) {
    for (size_t k = 0; k < sizeof float_types / sizeof *float_types; k++) {
        double v[12] = {1, -INFINITY, 2, 0.5, NAN, 3, -1, -2, -3, -INFINITY, 4, 0};
        ct_tensor *t = ct_test_tensor(v, CT_SHAPE(3, 4), float_types[k]);
        ct_tensor *tt = ct_test_noncontiguous(v, CT_SHAPE(3, 4), float_types[k]);
        for (int d = 0; d < 2; d++)
            for (int log_ = 0; log_ < 2; log_++) {
                check_softmax(t, d, log_);
                check_softmax(tt, d, log_);
            }
        ct_tensor *y = ct_softmax(t, 1);
        double *got = ct_test_values(y);
        CT_EXPECT(got[1] == 0.0 && isnan(got[4]) && isnan(got[7]) && !isnan(got[8]));
        free(got);
        ct_release(y);
        ct_release(t);
        ct_release(tt);
    }
}

/* Long rows, many rows, and inner sizes beyond one block: every kernel
 * path and the threaded split. Rows also sum to one. */
static void test_large_shapes(void) {
    const ct_shape shapes[] = {CT_SHAPE(3, 40000), CT_SHAPE(5000, 13), CT_SHAPE(7, 50, 130),
                               CT_SHAPE(2, 300, 150)};
    for (size_t si = 0; si < 4; si++)
        for (size_t k = 0; k < sizeof float_types / sizeof *float_types; k++) {
            ct_tensor *t = ct_test_random(shapes[si], float_types[k], -4, 4, NULL);
            for (int d = 0; d < shapes[si].ndim; d++) {
                check_softmax(t, d, false);
                check_softmax(t, d, true);
            }
            ct_release(t);
        }
    ct_tensor *t = ct_randn(CT_SHAPE(64, 1000));
    ct_tensor *p = ct_softmax(t, -1);
    double *v = ct_test_values(p);
    for (int r = 0; r < 64; r++) {
        double s = 0;
        for (int c = 0; c < 1000; c++) s += v[r * 1000 + c];
        CT_EXPECT_NEAR(s, 1.0, 1e-5);
    }
    free(v);
    ct_release(p);
    ct_release(t);
}

static void test_zero_dim_and_empty(void) {
    ct_tensor *s = ct_scalar_tensor(-3.5);
    ct_tensor *p = ct_softmax(s, 0), *l = ct_log_softmax(s, -1);
    double one = 1, zero = 0;
    CT_EXPECT_SHAPE(p, CT_SHAPE0);
    CT_EXPECT_CLOSE(p, &one, 1, 0, 0);
    CT_EXPECT_CLOSE(l, &zero, 1, 0, 0);
    ct_release(p), ct_release(l), ct_release(s);

    const ct_shape empties[] = {CT_SHAPE(0, 3), CT_SHAPE(3, 0), CT_SHAPE(2, 0, 4)};
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < empties[k].ndim; d++) {
            ct_tensor *e = ct_zeros(empties[k], .dtype = CT_FLOAT64);
            ct_tensor *y = ct_log_softmax(e, d);
            CT_EXPECT_SHAPE(y, empties[k]);
            CT_EXPECT(y && ct_dtype_of(y) == CT_FLOAT64);
            ct_release(y);
            ct_release(e);
        }
}

static void test_errors(void) {
    const ct_dtype bad[] = {CT_INT32, CT_INT64, CT_UINT8, CT_BOOL};
    for (int k = 0; k < 4; k++) {
        ct_tensor *t = ct_ones(CT_SHAPE(2, 3), .dtype = bad[k]);
        CT_EXPECT(ct_softmax(t, 1) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, ct_dtype_name(bad[k]));
        CT_EXPECT(ct_log_softmax(t, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "log_softmax");
        ct_release(t);
    }
    ct_tensor *t = ct_ones(CT_SHAPE(2, 3));
    CT_EXPECT(ct_softmax(t, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CT_EXPECT(ct_log_softmax(t, -3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got -3");

    /* NULL propagates without a new error */
    CT_EXPECT(ct_softmax(NULL, 0) == NULL && ct_log_softmax(NULL, 0) == NULL);
    CT_EXPECT(ct_last_status() == CT_OK);
    CT_EXPECT(ct_softmax(ct_softmax(t, 5), 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got 5");
    ct_release(t);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_random_shapes);
    CT_RUN(test_large_inputs_are_stable);
    CT_RUN(test_inf_and_nan);
    CT_RUN(test_large_shapes);
    CT_RUN(test_zero_dim_and_empty);
    CT_RUN(test_errors);
    return ct_test_finish();
}
