/*
 * nn_testutil.h — helpers shared by the nn family's tests (test_nn_ops.c,
 * test_nn_norm.c): random float64 data, a float64 central-difference
 * gradient of sum(f(inputs) * proj), and comparisons of host arrays.
 *
 * NN_EXPECT_REF_FD differentiates a plain-C forward written in the test,
 * so the gradient's oracle shares no code with ctorch. NN_EXPECT_FD runs the
 * op under test itself in float64 with one element nudged by ±h (a backward
 * checked against its own forward, which its forward test must then check
 * against a C reference). With h = 1e-6 the truncation error is ~1e-12 for
 * smooth ops; max pooling is smooth wherever the inputs have no ties, which
 * random data has not.
 */
#ifndef CT_NN_TESTUTIL_H
#define CT_NN_TESTUTIL_H

#include <stdlib.h>

#include "ops/nn.h"
#include "testutil.h"

/* A malloc'd array of n uniform values in [lo, hi). */
static inline double *nn_random_values(int64_t n, double lo, double hi) {
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    ct_test_fill_uniform(v, n, lo, hi);
    return v;
}

static inline int64_t nn_numel(ct_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.dims[i];
    return n;
}

/* sum(t * proj) over t's elements in row-major order. */
static inline double nn_dot(const ct_tensor *t, const double *proj) {
    double *v = ct_test_values(t), s = 0.0;
    for (int64_t i = 0; i < ct_numel(t); i++) s += v[i] * proj[i];
    free(v);
    return s;
}

/* f builds its result from float64 CPU tensors inputs[0..n) (any tracked
 * or untracked reference it returns is released by the caller with
 * ct_release inside a scope). */
typedef ct_tensor *(*nn_fd_fn)(ct_tensor *const *inputs, void *ctx);

/* d sum(f(inputs) * proj) / d inputs[which], by central differences, into
 * grad (numel of that input). inputs[which] must be a contiguous float64
 * CPU tensor; it is nudged in place and restored. */
static inline void nn_fd_grad(nn_fd_fn f, void *ctx, ct_tensor *const *inputs, int which,
                              const double *proj, double *grad) {
    const double h = 1e-6;
    double *x = ct_data_ptr(inputs[which]);
    for (int64_t i = 0; i < ct_numel(inputs[which]); i++) {
        double keep = x[i], lp = 0, lm = 0;
        CT_SCOPE {
            x[i] = keep + h;
            lp = nn_dot(f(inputs, ctx), proj);
            x[i] = keep - h;
            lm = nn_dot(f(inputs, ctx), proj);
        }
        x[i] = keep;
        grad[i] = (lp - lm) / (2 * h);
    }
}

/* Check an analytic gradient tensor against nn_fd_grad (float64). */
#define NN_EXPECT_FD(grad_tensor, f, ctx, inputs, which, proj)                                \
    do {                                                                                      \
        int64_t nn_n_ = ct_numel((inputs)[which]);                                            \
        double *nn_fd_ = malloc(sizeof(double) * (size_t)(nn_n_ > 0 ? nn_n_ : 1));            \
        nn_fd_grad((f), (ctx), (inputs), (which), (proj), nn_fd_);                            \
        CT_EXPECT_CLOSE((grad_tensor), nn_fd_, nn_n_, 1e-6, 1e-7);                            \
        free(nn_fd_);                                                                         \
    } while (0)

/* A plain-C forward: the n_out outputs at input values x. */
typedef void (*nn_ref_fn)(const double *x, double *out, void *ctx);

/* d sum(f(x) * proj) / dx by central differences of a C forward, into
 * grad (nx values); x is nudged in place and restored. */
static inline void nn_ref_fd_grad(nn_ref_fn f, void *ctx, double *x, int64_t nx, int64_t n_out, const double *proj,
                                  double *grad) {
    const double h = 1e-6;
    double *y = malloc(sizeof(double) * (size_t)(n_out > 0 ? n_out : 1));
    for (int64_t i = 0; i < nx; i++) {
        double keep = x[i], lp = 0, lm = 0;
        x[i] = keep + h;
        f(x, y, ctx);
        for (int64_t o = 0; o < n_out; o++) lp += y[o] * proj[o];
        x[i] = keep - h;
        f(x, y, ctx);
        for (int64_t o = 0; o < n_out; o++) lm += y[o] * proj[o];
        x[i] = keep;
        grad[i] = (lp - lm) / (2 * h);
    }
    free(y);
}

/* Check an analytic gradient tensor against nn_ref_fd_grad (float64). */
#define NN_EXPECT_REF_FD(grad_tensor, f, ctx, x, nx, n_out, proj)                             \
    do {                                                                                      \
        int64_t nn_n_ = (nx);                                                                 \
        double *nn_fd_ = malloc(sizeof(double) * (size_t)(nn_n_ > 0 ? nn_n_ : 1));            \
        nn_ref_fd_grad((f), (ctx), (x), nn_n_, (n_out), (proj), nn_fd_);                      \
        CT_EXPECT_CLOSE((grad_tensor), nn_fd_, nn_n_, 1e-6, 1e-7);                            \
        free(nn_fd_);                                                                         \
    } while (0)

/* A float64 CPU tensor of the given values (contiguous, tracked). */
static inline ct_tensor *nn_f64(const double *v, ct_shape s) { return ct_test_tensor(v, s, CT_FLOAT64); }

#endif /* CT_NN_TESTUTIL_H */
