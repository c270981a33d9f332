/*
 * test_nn_norm.c — batch_norm and layer_norm on the CPU: forward results,
 * saved statistics and running-statistics updates against float64
 * references written here, eval mode, backwards against central finite
 * differences in float64 (training and eval), every floating dtype, non-
 * contiguous inputs and parameters of other dtypes, and every error path.
 */
#include "nn_testutil.h"

static const ct_dtype g_float_dtypes[4] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};

/* ---- batch norm reference ---------------------------------------------------------------- */

typedef struct bn_ref {
    double *y, *mean, *var; /* var biased */
} bn_ref;

/* x as [N, C, S]; mean_in/var_in NULL: batch statistics. */
static bn_ref ref_batch_norm(const double *x, int64_t n, int64_t c, int64_t s, const double *w,
                             const double *b, const double *mean_in, const double *var_in,
                             double eps) {
    bn_ref r = {malloc(sizeof(double) * (size_t)(n * c * s + 1)), malloc(sizeof(double) * (size_t)c),
                malloc(sizeof(double) * (size_t)c)};
    for (int64_t j = 0; j < c; j++) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < s; k++) sum += x[(i * c + j) * s + k];
        double mu = sum / (double)(n * s);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < s; k++) sq += pow(x[(i * c + j) * s + k] - mu, 2);
        r.mean[j] = mu;
        r.var[j] = sq / (double)(n * s);
        double m = mean_in ? mean_in[j] : r.mean[j], v = var_in ? var_in[j] : r.var[j];
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < s; k++) {
                int64_t at = (i * c + j) * s + k;
                r.y[at] = (x[at] - m) / sqrt(v + eps) * (w ? w[j] : 1) + (b ? b[j] : 0);
            }
    }
    return r;
}

static void free_bn_ref(bn_ref *r) {
    free(r->y);
    free(r->mean);
    free(r->var);
}

static const ct_shape g_bn_shapes[] = {{2, {5, 3}}, {3, {4, 2, 5}}, {4, {2, 3, 4, 3}},
                                       {4, {3, 1, 2, 2}}, {5, {2, 2, 2, 3, 2}}};

static void test_batch_norm_training(void) {
    for (int rep = 0; rep < 20; rep++) {
        ct_shape sh = g_bn_shapes[rep % 5];
        ct_dtype dt = g_float_dtypes[rep % 4];
        const int64_t n = sh.dims[0], c = sh.dims[1], s = nn_numel(sh) / (n * c);
        const double momentum = rep % 2 ? 0.1 : 0.35, eps = 1e-5;
        CT_SCOPE {
            double *x, *w = nn_random_values(c, 0.5, 2), *b = nn_random_values(c, -1, 1);
            double *rm0 = nn_random_values(c, -1, 1), *rv0 = nn_random_values(c, 0.5, 2);
            ct_tensor *in = ct_test_random(sh, dt, -3, 3, &x);
            if (rep % 3 == 1) in = ct_test_noncontiguous(x, sh, dt);
            /* running stats in float32 (as nn.BatchNorm keeps them) or float64 */
            ct_dtype pdt = rep % 2 ? CT_FLOAT32 : CT_FLOAT64;
            ct_tensor *rm = ct_test_tensor(rm0, CT_SHAPE(c), pdt), *rv = ct_test_tensor(rv0, CT_SHAPE(c), pdt);
            ct_tensor *weight = ct_test_tensor(w, CT_SHAPE(c), pdt), *bias = ct_test_tensor(b, CT_SHAPE(c), dt);
            double *wv = ct_test_values(weight), *bv = ct_test_values(bias);
            double *rmv = ct_test_values(rm), *rvv = ct_test_values(rv);
            bn_ref r = ref_batch_norm(x, n, c, s, wv, bv, NULL, NULL, eps);
            ct_tensor *save_mean = NULL, *save_invstd = NULL;
            ct_tensor *y = ct_track(cti_batch_norm_forward(in, rm, rv, weight, bias, true, momentum, eps,
                                                           &save_mean, &save_invstd));
            ct_track(save_mean);
            ct_track(save_invstd);
            double rtol, atol;
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_SHAPE(y, sh);
            CT_EXPECT(ct_dtype_of(y) == dt);
            CT_EXPECT_CLOSE(y, r.y, nn_numel(sh), rtol * 2, atol * 10);
            double inv[8], rm1[8], rv1[8], m = (double)(n * s);
            for (int64_t j = 0; j < c; j++) {
                inv[j] = 1 / sqrt(r.var[j] + eps);
                rm1[j] = (1 - momentum) * rmv[j] + momentum * r.mean[j];
                rv1[j] = (1 - momentum) * rvv[j] + momentum * r.var[j] * m / (m - 1);
            }
            ct_dtype sd = dt == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32;
            CT_EXPECT(ct_dtype_of(save_mean) == sd && ct_dtype_of(save_invstd) == sd);
            CT_EXPECT_CLOSE(save_mean, r.mean, c, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(save_invstd, inv, c, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(rm, rm1, c, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(rv, rv1, c, 1e-6, 1e-6);
            free_bn_ref(&r);
            free(x), free(w), free(b), free(rm0), free(rv0), free(wv), free(bv), free(rmv), free(rvv);
        }
    }
}

static void test_batch_norm_eval(void) {
    for (int rep = 0; rep < 12; rep++) {
        ct_shape sh = g_bn_shapes[rep % 5];
        ct_dtype dt = g_float_dtypes[rep % 4];
        const int64_t n = sh.dims[0], c = sh.dims[1], s = nn_numel(sh) / (n * c);
        CT_SCOPE {
            double *x, *rm0 = nn_random_values(c, -1, 1), *rv0 = nn_random_values(c, 0.5, 2);
            ct_tensor *in = ct_test_random(sh, dt, -3, 3, &x);
            ct_tensor *rm = ct_test_tensor(rm0, CT_SHAPE(c), CT_FLOAT32);
            ct_tensor *rv = ct_test_tensor(rv0, CT_SHAPE(c), CT_FLOAT32);
            double *rmv = ct_test_values(rm), *rvv = ct_test_values(rv);
            bn_ref r = ref_batch_norm(x, n, c, s, NULL, NULL, rmv, rvv, 1e-3);
            ct_tensor *y = ct_batch_norm(in, rm, rv, NULL, NULL, .eps = 1e-3);
            double rtol, atol;
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_CLOSE(y, r.y, nn_numel(sh), rtol * 2, atol * 10);
            /* eval leaves the running statistics alone */
            CT_EXPECT_CLOSE(rm, rmv, c, 0, 0);
            CT_EXPECT_CLOSE(rv, rvv, c, 0, 0);
            free_bn_ref(&r);
            free(x), free(rm0), free(rv0), free(rmv), free(rvv);
        }
    }
}

/* Training without running statistics, an empty batch, and one running
 * statistic only. */
static void test_batch_norm_special(void) {
    CT_SCOPE {
        double *x = nn_random_values(12, -1, 1);
        ct_tensor *in = nn_f64(x, CT_SHAPE(4, 3));
        bn_ref r = ref_batch_norm(x, 4, 3, 1, NULL, NULL, NULL, NULL, 1e-5);
        CT_EXPECT_CLOSE(ct_batch_norm(in, NULL, NULL, NULL, NULL, .training = true), r.y, 12, 1e-12, 1e-12);
        ct_tensor *rv = ct_ones(CT_SHAPE(3));
        CT_EXPECT(ct_batch_norm(in, NULL, rv, NULL, NULL, .training = true, .momentum = 1.0));
        double unbiased[3];
        for (int j = 0; j < 3; j++) unbiased[j] = r.var[j] * 4.0 / 3.0;
        CT_EXPECT_CLOSE(rv, unbiased, 3, 1e-6, 1e-7);
        /* an empty batch: empty result, running statistics untouched */
        ct_tensor *rm = ct_zeros(CT_SHAPE(3));
        CT_EXPECT_SHAPE(ct_batch_norm(ct_zeros(CT_SHAPE(0, 3)), rm, rv, NULL, NULL, .training = true),
                        CT_SHAPE(0, 3));
        CT_EXPECT_CLOSE(rv, unbiased, 3, 1e-6, 1e-7);
        const double zeros[3] = {0};
        CT_EXPECT_CLOSE(rm, zeros, 3, 0, 0);
        free_bn_ref(&r);
        free(x);
    }
}

/* f for finite differences: batch_norm(x, w, b) in training (no running
 * statistics) or eval (fixed running statistics in ctx). */
typedef struct bn_ctx {
    bool training;
    ct_tensor *rm, *rv;
} bn_ctx;

static ct_tensor *fd_batch_norm(ct_tensor *const *in, void *vctx) {
    bn_ctx *c = vctx;
    return ct_batch_norm(in[0], c->training ? NULL : c->rm, c->training ? NULL : c->rv, in[1], in[2],
                         .training = c->training);
}

static void test_batch_norm_backward(void) {
    for (int rep = 0; rep < 8; rep++) {
        ct_shape sh = g_bn_shapes[rep % 5];
        const int64_t c = sh.dims[1], numel = nn_numel(sh);
        CT_SCOPE {
            double *x = nn_random_values(numel, -2, 2), *w = nn_random_values(c, 0.5, 2);
            double *b = nn_random_values(c, -1, 1), *proj = nn_random_values(numel, -1, 1);
            double *rm = nn_random_values(c, -1, 1), *rv = nn_random_values(c, 0.5, 2);
            bn_ctx ctx = {rep % 2 == 0, nn_f64(rm, CT_SHAPE(c)), nn_f64(rv, CT_SHAPE(c))};
            ct_tensor *inputs[3] = {nn_f64(x, sh), nn_f64(w, CT_SHAPE(c)), nn_f64(b, CT_SHAPE(c))};
            ct_tensor *sm = NULL, *si = NULL;
            ct_track(cti_batch_norm_forward(inputs[0], ctx.training ? NULL : ctx.rm,
                                            ctx.training ? NULL : ctx.rv, inputs[1], inputs[2],
                                            ctx.training, 0.1, 1e-5, &sm, &si));
            ct_track(sm);
            ct_track(si);
            ct_tensor *gi = NULL, *gw = NULL, *gb = NULL;
            CT_EXPECT_INT_EQ(cti_batch_norm_backward(nn_f64(proj, sh), inputs[0], inputs[1], sm, si,
                                                     ctx.training, &gi, &gw, &gb), CT_OK);
            ct_track(gi), ct_track(gw), ct_track(gb);
            CT_EXPECT_SHAPE(gi, sh);
            CT_EXPECT_SHAPE(gw, CT_SHAPE(c));
            NN_EXPECT_FD(gi, fd_batch_norm, &ctx, inputs, 0, proj);
            NN_EXPECT_FD(gw, fd_batch_norm, &ctx, inputs, 1, proj);
            NN_EXPECT_FD(gb, fd_batch_norm, &ctx, inputs, 2, proj);
            /* only grad_input, and every floating dtype against float64 */
            ct_tensor *only = NULL;
            CT_EXPECT_INT_EQ(cti_batch_norm_backward(nn_f64(proj, sh), inputs[0], inputs[1], sm, si,
                                                     ctx.training, &only, NULL, NULL), CT_OK);
            CT_EXPECT(ct_equal(ct_track(only), gi));
            double *want = ct_test_values(gi);
            for (int k = 0; k < 4; k += 2) {
                ct_dtype dt = g_float_dtypes[k];
                ct_tensor *g = NULL;
                CT_EXPECT_INT_EQ(cti_batch_norm_backward(ct_to_dtype(nn_f64(proj, sh), dt),
                                                         ct_to_dtype(inputs[0], dt), inputs[1], sm, si,
                                                         ctx.training, &g, NULL, NULL), CT_OK);
                CT_EXPECT(ct_dtype_of(ct_track(g)) == dt);
                CT_EXPECT_CLOSE(g, want, numel, dt == CT_FLOAT32 ? 1e-4 : 2e-2, 2e-3);
            }
            free(want);
            free(x), free(w), free(b), free(proj), free(rm), free(rv);
        }
    }
}

static void test_batch_norm_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(4, 3, 5)), *c3 = ct_zeros(CT_SHAPE(3)), *c4 = ct_zeros(CT_SHAPE(4));
        CT_EXPECT(!ct_batch_norm(x, c4, c3, NULL, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "running_mean should contain 3 elements not 4");
        CT_EXPECT(!ct_batch_norm(x, c3, c4, NULL, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "running_var should contain 3 elements not 4");
        CT_EXPECT(!ct_batch_norm(x, c3, c3, c4, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "weight should contain 3 elements not 4");
        CT_EXPECT(!ct_batch_norm(x, c3, c3, NULL, c4, .training = true));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "bias should contain 3 elements not 4");
        CT_EXPECT(!ct_batch_norm(ct_zeros(CT_SHAPE(1, 3)), c3, c3, NULL, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                        "Expected more than 1 value per channel when training, got input size [1, 3]");
        CT_EXPECT(ct_batch_norm(ct_zeros(CT_SHAPE(1, 3)), c3, c3, NULL, NULL));
        CT_EXPECT(!ct_batch_norm(x, NULL, NULL, NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "running_mean must be defined in evaluation mode");
        CT_EXPECT(!ct_batch_norm(x, c3, NULL, NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "running_var must be defined in evaluation mode");
        CT_EXPECT(!ct_batch_norm(ct_zeros(CT_SHAPE(3)), c3, c3, NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "batch_norm: Expected input of shape [N, C] or [N, C, *], but got "
                                      "input of size [3]");
        CT_EXPECT(!ct_batch_norm(ct_zeros(CT_SHAPE(4, 3), .dtype = CT_INT32), NULL, NULL, NULL, NULL,
                                 .training = true));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"batch_norm\" not implemented for 'Int'");
        CT_EXPECT(!ct_batch_norm(x, ct_zeros(CT_SHAPE(3), .dtype = CT_INT64), c3, NULL, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "batch_norm: expected running_mean to have a floating dtype");
        ct_tensor *gi;
        CT_EXPECT_INT_EQ(cti_batch_norm_backward(ct_zeros(CT_SHAPE(4, 3)), x, NULL, c3, c3, true, &gi, NULL,
                                                 NULL), CT_ERR_SHAPE);
        CT_EXPECT(gi == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "batch_norm_backward: grad_output must have the input's shape");
        CT_EXPECT(!ct_batch_norm(NULL, c3, c3, NULL, NULL, .training = true));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- layer norm ----------------------------------------------------------------------------- */

static void ref_layer_norm(const double *x, int64_t rows, int64_t cols, const double *w,
                           const double *b, double eps, double *y, double *mean, double *rstd) {
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0, sq = 0;
        for (int64_t k = 0; k < cols; k++) sum += x[r * cols + k];
        double mu = sum / (double)cols;
        for (int64_t k = 0; k < cols; k++) sq += pow(x[r * cols + k] - mu, 2);
        double rs = 1 / sqrt(sq / (double)cols + eps);
        mean[r] = mu;
        rstd[r] = rs;
        for (int64_t k = 0; k < cols; k++)
            y[r * cols + k] = (x[r * cols + k] - mu) * rs * (w ? w[k] : 1) + (b ? b[k] : 0);
    }
}

typedef struct ln_case {
    ct_shape input, normalized;
} ln_case;

static const ln_case g_ln_cases[] = {
    {{2, {4, 6}}, {1, {6}}},       {{3, {2, 3, 5}}, {2, {3, 5}}},   {{3, {3, 2, 7}}, {1, {7}}},
    {{1, {9}}, {1, {9}}},          {{4, {2, 2, 3, 4}}, {3, {2, 3, 4}}}, {{2, {5, 1}}, {1, {1}}},
    {{2, {3, 300}}, {1, {300}}},
};
#define LN_CASES ((int)(sizeof g_ln_cases / sizeof g_ln_cases[0]))

static void test_layer_norm_forward(void) {
    for (int rep = 0; rep < 2 * LN_CASES; rep++) {
        const ln_case *lc = &g_ln_cases[rep % LN_CASES];
        ct_dtype dt = g_float_dtypes[rep % 4];
        const int64_t cols = nn_numel(lc->normalized), rows = nn_numel(lc->input) / cols;
        CT_SCOPE {
            double *x, *w = nn_random_values(cols, 0.5, 2), *b = nn_random_values(cols, -1, 1);
            ct_tensor *in = ct_test_random(lc->input, dt, -3, 3, &x);
            if (rep % 3 == 2) in = ct_test_noncontiguous(x, lc->input, dt);
            bool affine = rep % 4 != 3;
            ct_tensor *weight = affine ? ct_test_tensor(w, lc->normalized, dt) : NULL;
            ct_tensor *bias = affine ? ct_test_tensor(b, lc->normalized, CT_FLOAT32) : NULL;
            double *wv = affine ? ct_test_values(weight) : NULL, *bv = affine ? ct_test_values(bias) : NULL;
            double *y = malloc(sizeof(double) * (size_t)(rows * cols)), *mean = malloc(sizeof(double) * (size_t)rows);
            double *rstd = malloc(sizeof(double) * (size_t)rows), rtol, atol;
            ref_layer_norm(x, rows, cols, wv, bv, 1e-5, y, mean, rstd);
            ct_tensor *sm = NULL, *sr = NULL;
            ct_tensor *out = ct_track(cti_layer_norm_forward(in, lc->normalized, weight, bias, 1e-5, &sm, &sr));
            ct_track(sm), ct_track(sr);
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_SHAPE(out, lc->input);
            CT_EXPECT_CLOSE(out, y, rows * cols, rtol * 2, atol * 10);
            CT_EXPECT_SHAPE(sm, CT_SHAPE(rows));
            CT_EXPECT_CLOSE(sm, mean, rows, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(sr, rstd, rows, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(ct_layer_norm(in, lc->normalized, weight, bias), y, rows * cols, rtol * 2,
                            atol * 10);
            free(x), free(w), free(b), free(wv), free(bv), free(y), free(mean), free(rstd);
        }
    }
}

typedef struct ln_ctx {
    ct_shape normalized;
} ln_ctx;

static ct_tensor *fd_layer_norm(ct_tensor *const *in, void *ctx) {
    return ct_layer_norm(in[0], ((ln_ctx *)ctx)->normalized, in[1], in[2]);
}

static void test_layer_norm_backward(void) {
    for (int rep = 0; rep < LN_CASES - 1; rep++) {
        const ln_case *lc = &g_ln_cases[rep];
        const int64_t numel = nn_numel(lc->input), cols = nn_numel(lc->normalized);
        CT_SCOPE {
            double *x = nn_random_values(numel, -2, 2), *w = nn_random_values(cols, 0.5, 2);
            double *b = nn_random_values(cols, -1, 1), *proj = nn_random_values(numel, -1, 1);
            ln_ctx ctx = {lc->normalized};
            ct_tensor *inputs[3] = {nn_f64(x, lc->input), nn_f64(w, lc->normalized), nn_f64(b, lc->normalized)};
            ct_tensor *sm = NULL, *sr = NULL;
            ct_track(cti_layer_norm_forward(inputs[0], lc->normalized, inputs[1], inputs[2], 1e-5, &sm, &sr));
            ct_track(sm), ct_track(sr);
            ct_tensor *gi = NULL, *gw = NULL, *gb = NULL;
            CT_EXPECT_INT_EQ(cti_layer_norm_backward(nn_f64(proj, lc->input), inputs[0], lc->normalized,
                                                     inputs[1], sm, sr, &gi, &gw, &gb), CT_OK);
            ct_track(gi), ct_track(gw), ct_track(gb);
            CT_EXPECT_SHAPE(gw, lc->normalized);
            NN_EXPECT_FD(gi, fd_layer_norm, &ctx, inputs, 0, proj);
            NN_EXPECT_FD(gw, fd_layer_norm, &ctx, inputs, 1, proj);
            NN_EXPECT_FD(gb, fd_layer_norm, &ctx, inputs, 2, proj);
            /* no weight: as weight 1; float32 grads against float64 */
            ct_tensor *g1 = NULL, *g32 = NULL;
            CT_EXPECT_INT_EQ(cti_layer_norm_backward(nn_f64(proj, lc->input), inputs[0], lc->normalized,
                                                     NULL, sm, sr, &g1, NULL, NULL), CT_OK);
            ct_track(g1);
            ct_tensor *ones = ct_ones(lc->normalized, .dtype = CT_FLOAT64), *g1w = NULL;
            cti_layer_norm_backward(nn_f64(proj, lc->input), inputs[0], lc->normalized, ones, sm, sr, &g1w,
                                    NULL, NULL);
            CT_EXPECT(ct_equal(g1, ct_track(g1w)));
            CT_EXPECT_INT_EQ(cti_layer_norm_backward(ct_to_dtype(nn_f64(proj, lc->input), CT_FLOAT32),
                                                     ct_to_dtype(inputs[0], CT_FLOAT32), lc->normalized,
                                                     inputs[1], sm, sr, &g32, NULL, NULL), CT_OK);
            double *want = ct_test_values(gi);
            CT_EXPECT_CLOSE(ct_track(g32), want, numel, 1e-4, 1e-4);
            free(want);
            free(x), free(w), free(b), free(proj);
        }
    }
}

static void test_layer_norm_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(2, 3, 4));
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(3), NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Given normalized_shape=[3], expected input with shape [*, 3], but got "
                                      "input of size[2, 3, 4]");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(2, 3, 4, 5), NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "expected input with shape [*, 2, 3, 4, 5]");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(3, 4), ct_ones(CT_SHAPE(4)), NULL));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected weight to be of same shape as normalized_shape, but got weight "
                                      "of shape [4] and normalized_shape = [3, 4]");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(4), NULL, ct_ones(CT_SHAPE(3))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected bias to be of same shape as normalized_shape, but got bias of "
                                      "shape [3] and normalized_shape = [4]");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE0, NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected normalized_shape to be at least 1-dimensional");
        CT_EXPECT(!ct_layer_norm(ct_zeros(CT_SHAPE(2, 4), .dtype = CT_INT32), CT_SHAPE(4), NULL, NULL));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"LayerNormKernelImpl\" not implemented for 'Int'");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(4), ct_ones(CT_SHAPE(4), .dtype = CT_INT64), NULL));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "layer_norm: expected weight to have a floating dtype, but got int64");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(4), NULL, ct_ones(CT_SHAPE(4), .dtype = CT_BOOL)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "layer_norm: expected bias to have a floating dtype, but got bool");
        CT_EXPECT_SHAPE(ct_layer_norm(ct_zeros(CT_SHAPE(2, 0)), CT_SHAPE(0), NULL, NULL), CT_SHAPE(2, 0));
        CT_EXPECT_SHAPE(ct_layer_norm(ct_zeros(CT_SHAPE(0, 4)), CT_SHAPE(4), NULL, NULL), CT_SHAPE(0, 4));
        ct_tensor *gi;
        CT_EXPECT_INT_EQ(cti_layer_norm_backward(ct_zeros(CT_SHAPE(2, 3, 4)), x, CT_SHAPE(4), NULL,
                                                 ct_zeros(CT_SHAPE(5)), ct_zeros(CT_SHAPE(6)), &gi, NULL, NULL),
                         CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "layer_norm_backward: save_mean and save_rstd must hold 6 values");
        CT_EXPECT(!ct_layer_norm(NULL, CT_SHAPE(4), NULL, NULL));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_batch_norm_training);
    CT_RUN(test_batch_norm_eval);
    CT_RUN(test_batch_norm_special);
    CT_RUN(test_batch_norm_backward);
    CT_RUN(test_batch_norm_errors);
    CT_RUN(test_layer_norm_forward);
    CT_RUN(test_layer_norm_backward);
    CT_RUN(test_layer_norm_errors);
    return ct_test_finish();
}
