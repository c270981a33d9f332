/*
 * test_compare.c — ct_allclose (torch.allclose) and ct_equal (torch.equal):
 * tolerances at their boundary, broadcasting, non-contiguous inputs, every
 * dtype, infinities and NaN, and every error path.
 */
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype ALL_DTYPES[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                      CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
#define NUM_DTYPES ((int)(sizeof ALL_DTYPES / sizeof ALL_DTYPES[0]))

#define RTOL 1e-5
#define ATOL 1e-8

/* ct_allclose's answer, failing the test if the call itself failed. */
static bool allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol,
                     bool equal_nan) {
    bool result = true; /* must be overwritten */
    ct_status st = ct_allclose(a, b, rtol, atol, equal_nan, &result);
    CT_EXPECT_MSG(st == CT_OK, "allclose failed: %s", ct_last_error());
    return st == CT_OK && result;
}

static ct_tensor *f64(const double *v, ct_shape s) { return ct_test_tensor(v, s, CT_FLOAT64); }

static ct_shape random_shape(int64_t *numel) {
    int ndim = (int)ct_test_randint(1, 5);
    int64_t dims[CT_MAX_DIMS];
    *numel = 1;
    for (int d = 0; d < ndim; d++) {
        dims[d] = ct_test_randint(1, 6);
        *numel *= dims[d];
    }
    return ct_shape_make(ndim, dims);
}

/* Identical tensors are close and equal in every dtype; changing one
 * element by a clear margin makes them neither. */
static void test_every_dtype(void) {
    for (int k = 0; k < NUM_DTYPES; k++) {
        ct_dtype dt = ALL_DTYPES[k];
        CT_SCOPE {
            int64_t n;
            ct_shape s = random_shape(&n);
            double *vals;
            ct_tensor *a = ct_test_random(s, dt, 0, 100, &vals);
            ct_tensor *same = ct_test_tensor(vals, s, dt);
            int64_t at = ct_test_randint(0, n);
            vals[at] = dt == CT_BOOL ? !vals[at] : vals[at] < 50 ? vals[at] + 3 : vals[at] - 3;
            ct_tensor *changed = ct_test_tensor(vals, s, dt);
            CT_EXPECT_MSG(allclose(a, same, RTOL, ATOL, false), "%s: identical", ct_dtype_name(dt));
            CT_EXPECT_MSG(ct_equal(a, same), "%s: identical", ct_dtype_name(dt));
            CT_EXPECT_MSG(!allclose(a, changed, RTOL, ATOL, false), "%s: changed at %lld",
                          ct_dtype_name(dt), (long long)at);
            CT_EXPECT_MSG(!ct_equal(a, changed), "%s: changed", ct_dtype_name(dt));
            CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
            free(vals);
        }
    }
}

/* |a - b| <= atol + rtol * |b| is the rule, measured against b: just inside
 * and just outside the bound, and not symmetric in a and b. */
static void test_tolerance_boundary(void) {
    for (int trial = 0; trial < 20; trial++) {
        CT_SCOPE {
            int64_t n;
            ct_shape s = random_shape(&n);
            double *bv = malloc((size_t)n * sizeof *bv), *av = malloc((size_t)n * sizeof *av);
            ct_test_fill_uniform(bv, n, -10, 10);
            double rtol = ct_test_uniform(1e-4, 1e-2), atol = ct_test_uniform(1e-4, 1e-2);
            for (int64_t i = 0; i < n; i++)
                av[i] = bv[i] + ct_test_uniform(-0.9, 0.9) * (atol + rtol * fabs(bv[i]));
            int64_t at = ct_test_randint(0, n);
            ct_tensor *b = f64(bv, s);
            ct_tensor *inside = f64(av, s);
            av[at] = bv[at] + 1.01 * (atol + rtol * fabs(bv[at]));
            ct_tensor *outside = f64(av, s);
            CT_EXPECT(allclose(inside, b, rtol, atol, false));
            CT_EXPECT(!allclose(outside, b, rtol, atol, false));
            CT_EXPECT(!allclose(inside, b, 0, 0, false) || n == 0);
            free(av);
            free(bv);
        }
    }
    CT_SCOPE {
        /* rtol scales |b|, not |a|: 0 vs 100 with rtol 1 is close one way only. */
        ct_tensor *zero = ct_zeros(CT_SHAPE(1), .dtype = CT_FLOAT64);
        ct_tensor *hundred = ct_full(CT_SHAPE(1), 100, .dtype = CT_FLOAT64);
        CT_EXPECT(allclose(zero, hundred, 1.0, 0, false));
        CT_EXPECT(!allclose(hundred, zero, 1.0, 0, false));
        /* The bound itself is close (<=). */
        double one[1] = {1.0}, two[1] = {1.5};
        CT_EXPECT(allclose(f64(two, CT_SHAPE(1)), f64(one, CT_SHAPE(1)), 0, 0.5, false));
    }
}

/* Shapes broadcast as in torch.allclose; views compare by value. */
static void test_broadcast_and_views(void) {
    CT_SCOPE {
        double row[4] = {1, 2, 3, 4};
        double grid[12] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
        ct_tensor *r = f64(row, CT_SHAPE(4));
        ct_tensor *g = f64(grid, CT_SHAPE(3, 4));
        CT_EXPECT(allclose(g, r, RTOL, ATOL, false));
        CT_EXPECT(allclose(r, g, RTOL, ATOL, false));
        grid[6] = 3.5;
        CT_EXPECT(!allclose(f64(grid, CT_SHAPE(3, 4)), r, RTOL, ATOL, false));
        /* (3,1) against (1,4): every pair must be close. */
        double col[3] = {2, 2, 2}, twos[4] = {2, 2, 2, 2};
        CT_EXPECT(allclose(f64(col, CT_SHAPE(3, 1)), f64(twos, CT_SHAPE(1, 4)), RTOL, ATOL, false));
        twos[3] = 2.1;
        CT_EXPECT(!allclose(f64(col, CT_SHAPE(3, 1)), f64(twos, CT_SHAPE(1, 4)), RTOL, ATOL, false));
        /* 0-dim against a tensor. */
        ct_tensor *s = ct_scalar_tensor(2.0, .dtype = CT_FLOAT64);
        CT_EXPECT(allclose(s, f64(col, CT_SHAPE(3, 1)), RTOL, ATOL, false));
        CT_EXPECT(!ct_equal(s, f64(col, CT_SHAPE(3, 1))));

        /* A transposed view equals a contiguous tensor with its values. */
        int64_t n;
        ct_shape sh = random_shape(&n);
        double *vals;
        ct_test_random(sh, CT_FLOAT32, -5, 5, &vals);
        ct_tensor *nc = ct_test_noncontiguous(vals, sh, CT_FLOAT32);
        ct_tensor *c = ct_test_tensor(vals, sh, CT_FLOAT32);
        CT_EXPECT(ct_equal(nc, c));
        CT_EXPECT(allclose(nc, c, 0, 0, false));
        ct_tensor *t = ct_t(ct_reshape(c, CT_SHAPE(1, -1)));
        ct_tensor *col_view = ct_reshape(c, CT_SHAPE(-1, 1));
        CT_EXPECT(ct_equal(t, col_view));
        free(vals);
    }
}

static void test_empty(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(0, 3));
        ct_tensor *b = ct_ones(CT_SHAPE(0, 3));
        CT_EXPECT(allclose(a, b, RTOL, ATOL, false));
        CT_EXPECT(ct_equal(a, b));
        CT_EXPECT(!ct_equal(a, ct_zeros(CT_SHAPE(3, 0))));
        CT_EXPECT(allclose(a, ct_ones(CT_SHAPE(3)), RTOL, ATOL, false));
    }
}

/* Infinities are close only to themselves; NaN only to NaN, when asked. */
static void test_nonfinite(void) {
    CT_SCOPE {
        double a[4] = {INFINITY, -INFINITY, NAN, 1.0};
        double same[4] = {INFINITY, -INFINITY, NAN, 1.0};
        ct_tensor *ta = f64(a, CT_SHAPE(4));
        ct_tensor *tsame = f64(same, CT_SHAPE(4));
        CT_EXPECT(!allclose(ta, tsame, RTOL, ATOL, false));
        CT_EXPECT(allclose(ta, tsame, RTOL, ATOL, true));
        CT_EXPECT(!ct_equal(ta, tsame)); /* NaN != NaN, as in torch.equal */

        double pinf[1] = {INFINITY}, ninf[1] = {-INFINITY}, big[1] = {1e308}, nan1[1] = {NAN},
               one[1] = {1.0};
        ct_tensor *tp = f64(pinf, CT_SHAPE(1)), *tn = f64(ninf, CT_SHAPE(1));
        ct_tensor *tb = f64(big, CT_SHAPE(1)), *tnan = f64(nan1, CT_SHAPE(1));
        ct_tensor *t1 = f64(one, CT_SHAPE(1));
        CT_EXPECT(allclose(tp, tp, 0, 0, false));
        CT_EXPECT(!allclose(tp, tn, 1e300, 1e300, true));
        CT_EXPECT(!allclose(tp, tb, 1e300, 1e300, true));
        CT_EXPECT(!allclose(tb, tp, 1e300, 1e300, true));
        CT_EXPECT(!allclose(tnan, t1, 1e300, 1e300, true));
        CT_EXPECT(!allclose(t1, tnan, 1e300, 1e300, true));
        CT_EXPECT(ct_equal(tp, tp));
        CT_EXPECT(!ct_equal(tp, tn));
    }
}

/* Booleans compare exactly (no tolerance); integers use the formula. */
static void test_bool_and_int(void) {
    CT_SCOPE {
        double t1[2] = {1, 0}, t2[2] = {1, 1};
        ct_tensor *a = ct_test_tensor(t1, CT_SHAPE(2), CT_BOOL);
        ct_tensor *b = ct_test_tensor(t2, CT_SHAPE(2), CT_BOOL);
        CT_EXPECT(!allclose(a, b, 10, 10, false));
        CT_EXPECT(allclose(a, a, 0, 0, false));

        double i1[2] = {100, 200}, i2[2] = {101, 200};
        ct_tensor *x = ct_test_tensor(i1, CT_SHAPE(2), CT_INT32);
        ct_tensor *y = ct_test_tensor(i2, CT_SHAPE(2), CT_INT32);
        CT_EXPECT(allclose(x, y, 0.01, 0, false));  /* 1 <= 0.01 * 101 */
        CT_EXPECT(!allclose(x, y, 0.009, 0, false)); /* 1 >  0.009 * 101 */
        CT_EXPECT(allclose(x, y, 0, 1, false));
    }
}

/* torch.equal compares values across dtypes, and int64 exactly. */
static void test_equal_dtypes(void) {
    CT_SCOPE {
        double v[3] = {1, 0, 7};
        ct_tensor *f = ct_test_tensor(v, CT_SHAPE(3), CT_FLOAT32);
        ct_tensor *i = ct_test_tensor(v, CT_SHAPE(3), CT_INT64);
        ct_tensor *u = ct_test_tensor(v, CT_SHAPE(3), CT_UINT8);
        CT_EXPECT(ct_equal(f, i));
        CT_EXPECT(ct_equal(i, u));
        double b[3] = {1, 0, 1};
        CT_EXPECT(ct_equal(ct_test_tensor(b, CT_SHAPE(3), CT_BOOL),
                           ct_test_tensor(b, CT_SHAPE(3), CT_FLOAT64)));
        CT_EXPECT(!ct_equal(ct_test_tensor(b, CT_SHAPE(3), CT_BOOL), f));

        /* 2^53 and 2^53 + 1 are one double but two int64 values. */
        int64_t big[2] = {INT64_C(9007199254740992), INT64_C(9007199254740993)};
        ct_tensor *p = ct_tensor_from(&big[0], CT_INT64, CT_SHAPE(1));
        ct_tensor *q = ct_tensor_from(&big[1], CT_INT64, CT_SHAPE(1));
        CT_EXPECT(!ct_equal(p, q));
        CT_EXPECT(ct_equal(q, q));
    }
}

/* Shape mismatch is a plain false for ct_equal, not an error. */
static void test_equal_shapes(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(2, 1));
        CT_EXPECT(!ct_equal(a, ct_zeros(CT_SHAPE(2))));
        CT_EXPECT(!ct_equal(a, ct_zeros(CT_SHAPE(1, 2))));
        CT_EXPECT(!ct_equal(a, ct_zeros(CT_SHAPE(2, 1, 1))));
        CT_EXPECT(!ct_equal(ct_scalar_tensor(0.0), ct_zeros(CT_SHAPE(1))));
        CT_EXPECT(ct_equal(a, ct_zeros(CT_SHAPE(2, 1))));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

static void test_errors(void) {
    CT_SCOPE {
        bool r = true;
        ct_tensor *a = ct_zeros(CT_SHAPE(2));
        ct_tensor *b = ct_zeros(CT_SHAPE(3));
        CT_EXPECT_INT_EQ(ct_allclose(a, b, RTOL, ATOL, false, &r), CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "The size of tensor a (2) must match the size of tensor b "
                                      "(3) at non-singleton dimension 0");
        CT_EXPECT(!r);
        ct_tensor *m = ct_zeros(CT_SHAPE(2, 3));
        CT_EXPECT_INT_EQ(ct_allclose(m, ct_zeros(CT_SHAPE(4)), RTOL, ATOL, false, &r), CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "The size of tensor a (3) must match the size of tensor b (4) "
                                      "at non-singleton dimension 1");

        CT_EXPECT_INT_EQ(ct_allclose(a, a, -1, ATOL, false, &r), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "rtol must be greater than or equal to zero, but got -1");
        CT_EXPECT_INT_EQ(ct_allclose(a, a, RTOL, -0.5, false, &r), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "atol must be greater than or equal to zero, but got -0.5");
        CT_EXPECT_INT_EQ(ct_allclose(a, a, NAN, ATOL, false, &r), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "rtol must be greater than or equal to zero, but got nan");

        ct_tensor *d = ct_zeros(CT_SHAPE(2), .dtype = CT_FLOAT64);
        CT_EXPECT_INT_EQ(ct_allclose(a, d, RTOL, ATOL, false, &r), CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "allclose: Float did not match Double");
        ct_tensor *i = ct_zeros(CT_SHAPE(2), .dtype = CT_INT64);
        CT_EXPECT_INT_EQ(ct_allclose(i, ct_zeros(CT_SHAPE(2), .dtype = CT_BOOL), RTOL, ATOL, false, &r),
                         CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Long did not match Bool");

        CT_EXPECT_INT_EQ(ct_allclose(a, a, RTOL, ATOL, false, NULL), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "allclose: the result pointer is NULL");

        /* NULL by hand gets an error; NULL from a failed call keeps its own. */
        r = true;
        CT_EXPECT_INT_EQ(ct_allclose(NULL, a, RTOL, ATOL, false, &r), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "allclose: a tensor argument is NULL");
        CT_EXPECT(!r);
        ct_tensor *bad = ct_narrow(a, 3, 0, 1);
        CT_EXPECT(bad == NULL);
        ct_status code = ct_last_status();
        CT_EXPECT(code != CT_OK);
        CT_EXPECT_INT_EQ(ct_allclose(a, bad, RTOL, ATOL, false, &r), code);
        CT_EXPECT(strstr(ct_last_error(), "Dimension out of range") != NULL);
        ct_clear_error();

        CT_EXPECT(!ct_equal(NULL, a));
        CT_EXPECT(!ct_equal(a, NULL));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* On a device: allclose and equal see values (a change is noticed), and
 * tensors on two devices are an error naming both. */
static void check_device(ct_device dev) {
    CT_SCOPE {
        bool r = true;
        double v[3] = {1, 2, 3}, w[3] = {1, 2, 3.5};
        ct_tensor *a = ct_test_tensor(v, CT_SHAPE(3), CT_FLOAT32);
        ct_tensor *b = ct_to_device(a, dev), *c = ct_to_device(ct_test_tensor(w, CT_SHAPE(3), CT_FLOAT32), dev);
        CT_EXPECT(allclose(b, b, RTOL, ATOL, false));
        CT_EXPECT(ct_equal(b, b));
        CT_EXPECT(!allclose(b, c, RTOL, ATOL, false));
        CT_EXPECT(allclose(b, c, 0, 0.5, false));
        CT_EXPECT(!ct_equal(b, c));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
        CT_EXPECT_INT_EQ(ct_allclose(a, b, RTOL, ATOL, false, &r), CT_ERR_DEVICE);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected all tensors to be on the same device");
        CT_EXPECT(!ct_equal(a, b));
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected all tensors to be on the same device");
    }
}

static void test_devices(void) {
    int ncl = ct_test_opencl_devices("allclose/equal on OpenCL");
    for (int i = 0; i < ncl; i++) check_device(ct_device_opencl(i));
    int ncu = ct_test_cuda_devices("allclose/equal on CUDA");
    for (int i = 0; i < ncu; i++) check_device(ct_device_cuda(i));
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_every_dtype);
    CT_RUN(test_tolerance_boundary);
    CT_RUN(test_broadcast_and_views);
    CT_RUN(test_empty);
    CT_RUN(test_nonfinite);
    CT_RUN(test_bool_and_int);
    CT_RUN(test_equal_dtypes);
    CT_RUN(test_equal_shapes);
    CT_RUN(test_errors);
    CT_RUN(test_devices);
    return ct_test_finish();
}
