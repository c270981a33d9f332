/*
 * test_nn_ops.c — pooling, dropout and embedding (ctorch/functional_nn.h
 * and the backward functions of src/ops/nn.h) on the CPU: forward results
 * against float64 references written here, backwards against central
 * finite differences in float64 and against exact references, every
 * floating dtype, non-contiguous and unbatched inputs, and every error
 * path with PyTorch's message. Batch and layer norm are in test_nn_norm.c.
 */
#include "nn_testutil.h"

static const ct_dtype g_float_dtypes[4] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};

/* ---- pooling references ----------------------------------------------------------------- */

typedef struct pool_case {
    int64_t n, c, h, w;   /* n < 0: an unbatched [C, H, W] input */
    int64_t k[2], s[2], p[2], d[2];
    bool ceil_mode, count_include_pad;
    int64_t divisor;      /* avg: 0 = none */
} pool_case;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t span = in + 2 * p - d * (k - 1) - 1;
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

static ct_shape in_shape(const pool_case *pc) {
    return pc->n < 0 ? CT_SHAPE(pc->c, pc->h, pc->w) : CT_SHAPE(pc->n, pc->c, pc->h, pc->w);
}
static int64_t planes(const pool_case *pc) { return (pc->n < 0 ? 1 : pc->n) * pc->c; }
static int64_t oh_of(const pool_case *pc) {
    return out_size(pc->h, pc->k[0], pc->s[0], pc->p[0], pc->d[0], pc->ceil_mode);
}
static int64_t ow_of(const pool_case *pc) {
    return out_size(pc->w, pc->k[1], pc->s[1], pc->p[1], pc->d[1], pc->ceil_mode);
}
static ct_shape out_shape(const pool_case *pc) {
    ct_shape s = in_shape(pc);
    s.dims[s.ndim - 2] = oh_of(pc);
    s.dims[s.ndim - 1] = ow_of(pc);
    return s;
}

/* Kernel taps: window (oh, ow) reads rows oh*s - p + i*d. NaN wins (the
 * last one), else the first maximum. */
static void ref_max_pool(const pool_case *pc, const double *x, double *y, double *idx) {
    const int64_t H = pc->h, W = pc->w, OH = oh_of(pc), OW = ow_of(pc);
    for (int64_t pl = 0; pl < planes(pc); pl++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double m = 0;
                int64_t best = -1;
                for (int64_t i = 0; i < pc->k[0]; i++)
                    for (int64_t j = 0; j < pc->k[1]; j++) {
                        int64_t hh = oh * pc->s[0] - pc->p[0] + i * pc->d[0];
                        int64_t ww = ow * pc->s[1] - pc->p[1] + j * pc->d[1];
                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                        double v = x[pl * H * W + hh * W + ww];
                        if (best < 0 || v > m || isnan(v)) m = v, best = hh * W + ww;
                    }
                y[(pl * OH + oh) * OW + ow] = m;
                idx[(pl * OH + oh) * OW + ow] = (double)best;
            }
}

/* Taps inside [-p, H + p) count when count_include_pad, taps inside the
 * input otherwise. */
static void ref_avg_pool(const pool_case *pc, const double *x, double *y) {
    const int64_t H = pc->h, W = pc->w, OH = oh_of(pc), OW = ow_of(pc);
    for (int64_t pl = 0; pl < planes(pc); pl++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double sum = 0;
                int64_t inside = 0, padded = 0;
                for (int64_t i = 0; i < pc->k[0]; i++)
                    for (int64_t j = 0; j < pc->k[1]; j++) {
                        int64_t hh = oh * pc->s[0] - pc->p[0] + i, ww = ow * pc->s[1] - pc->p[1] + j;
                        if (hh < H + pc->p[0] && ww < W + pc->p[1]) padded++;
                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                        inside++;
                        sum += x[pl * H * W + hh * W + ww];
                    }
                double div = pc->divisor ? (double)pc->divisor
                                         : (double)(pc->count_include_pad ? padded : inside);
                y[(pl * OH + oh) * OW + ow] = inside ? sum / div : 0.0;
            }
}

static void ref_adaptive(int64_t np, int64_t H, int64_t W, int64_t OH, int64_t OW,
                         const double *x, double *y) {
    for (int64_t pl = 0; pl < np; pl++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t h0 = (int64_t)floor((double)(oh * H) / (double)OH);
                int64_t h1 = (int64_t)ceil((double)((oh + 1) * H) / (double)OH);
                int64_t w0 = (int64_t)floor((double)(ow * W) / (double)OW);
                int64_t w1 = (int64_t)ceil((double)((ow + 1) * W) / (double)OW);
                double sum = 0;
                for (int64_t hh = h0; hh < h1; hh++)
                    for (int64_t ww = w0; ww < w1; ww++) sum += x[pl * H * W + hh * W + ww];
                y[(pl * OH + oh) * OW + ow] = sum / (double)((h1 - h0) * (w1 - w0));
            }
}

/* A random valid case: output at least 1x1 in each dim. */
/* The case's keyword options (ctorch/functional_nn.h); max pooling takes
 * dilation, average pooling count_include_pad and divisor_override. */
static ct_pool_opts max_opts(const pool_case *pc) {
    return CT_POOL_OPTS(.stride = {pc->s[0], pc->s[1]}, .padding = {pc->p[0], pc->p[1]},
                        .dilation = {pc->d[0], pc->d[1]}, .ceil_mode = pc->ceil_mode);
}
static ct_pool_opts avg_opts(const pool_case *pc) {
    return CT_POOL_OPTS(.stride = {pc->s[0], pc->s[1]}, .padding = {pc->p[0], pc->p[1]}, .ceil_mode = pc->ceil_mode,
                        .no_count_include_pad = !pc->count_include_pad, .divisor_override = pc->divisor);
}

static pool_case random_case(bool with_dilation) {
    pool_case pc = {0};
    pc.n = ct_test_randint(0, 4) == 0 ? -1 : ct_test_randint(1, 3);
    pc.c = ct_test_randint(1, 4);
    for (int i = 0; i < 2; i++) {
        pc.k[i] = ct_test_randint(1, 4);
        pc.s[i] = ct_test_randint(1, 4);
        pc.p[i] = ct_test_randint(0, pc.k[i] / 2 + 1);
        pc.d[i] = with_dilation ? ct_test_randint(1, 3) : 1;
    }
    pc.h = pc.d[0] * (pc.k[0] - 1) + 1 + ct_test_randint(0, 6);
    pc.w = pc.d[1] * (pc.k[1] - 1) + 1 + ct_test_randint(0, 6);
    pc.ceil_mode = ct_test_randint(0, 2);
    pc.count_include_pad = ct_test_randint(0, 2);
    pc.divisor = ct_test_randint(0, 4) == 0 ? ct_test_randint(1, 5) : 0;
    return pc;
}

/* The input as dt: contiguous or a non-contiguous view; *vals the exact
 * stored values (caller frees). */
static ct_tensor *pool_input(const pool_case *pc, ct_dtype dt, bool noncontig, double **vals) {
    ct_tensor *x = ct_test_random(in_shape(pc), dt, -2, 2, vals);
    return noncontig ? ct_test_noncontiguous(*vals, in_shape(pc), dt) : x;
}

static cti_pool2d_params params_of(const pool_case *pc, bool avg) {
    return cti_pool2d_params_make(pc->k, pc->s, pc->p, avg ? NULL : pc->d, pc->ceil_mode,
                                  pc->count_include_pad, pc->divisor);
}

/* ---- max pooling ----------------------------------------------------------------------------- */

static void test_max_pool2d_forward(void) {
    for (int rep = 0; rep < 40; rep++) {
        pool_case pc = random_case(true);
        ct_dtype dt = g_float_dtypes[rep % 4];
        CT_SCOPE {
            double *x;
            ct_tensor *in = pool_input(&pc, dt, rep % 3 == 1, &x);
            int64_t n = nn_numel(out_shape(&pc));
            double *ref = malloc(sizeof(double) * (size_t)n), *ridx = malloc(sizeof(double) * (size_t)n);
            ref_max_pool(&pc, x, ref, ridx);
            ct_tensor *out = NULL, *idx = NULL;
            CT_EXPECT_INT_EQ(ct_max_pool2d_with_indices_opts(in, pc.k, &out, &idx, max_opts(&pc)), CT_OK);
            CT_EXPECT_SHAPE(out, out_shape(&pc));
            CT_EXPECT(ct_dtype_of(out) == dt && ct_dtype_of(idx) == CT_INT64);
            CT_EXPECT_CLOSE(out, ref, n, 0, 0);
            CT_EXPECT_CLOSE(idx, ridx, n, 0, 0);
            CT_EXPECT_CLOSE(ct_max_pool2d_opts(in, pc.k, max_opts(&pc)), ref, n, 0, 0);
            free(x);
            free(ref);
            free(ridx);
        }
    }
}

/* The stride defaults to the kernel; NaN propagates with its index. */
static void test_max_pool2d_defaults_and_nan(void) {
    CT_SCOPE {
        const double v[] = {NAN, 1, NAN, 2, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 5, 3};
        ct_tensor *x = ct_test_tensor(v, CT_SHAPE(1, 1, 5, 2), CT_FLOAT32);
        ct_tensor *out, *idx;
        CT_EXPECT_INT_EQ(ct_max_pool2d_with_indices(x, CT_PAIR(2, 2), &out, &idx),
                         CT_OK);
        CT_EXPECT_SHAPE(out, CT_SHAPE(1, 1, 2, 1));
        const double want[] = {NAN, -INFINITY}, want_idx[] = {2, 4};
        CT_EXPECT_CLOSE(out, want, 2, 0, 0);
        CT_EXPECT_CLOSE(idx, want_idx, 2, 0, 0);
        /* ceil_mode keeps the partial last row */
        ct_tensor *c = ct_max_pool2d(x, CT_PAIR(2, 2), .ceil_mode = true);
        const double want_c[] = {NAN, -INFINITY, 5};
        CT_EXPECT_CLOSE(c, want_c, 3, 0, 0);
        /* output only, indices only */
        ct_tensor *only = NULL;
        CT_EXPECT_INT_EQ(ct_max_pool2d_with_indices(x, CT_PAIR(2, 2), NULL, &only),
                         CT_OK);
        CT_EXPECT_CLOSE(only, want_idx, 2, 0, 0);
    }
}

/* f for finite differences: max_pool2d of inputs[0] with the case's params. */
/* The C references as nn_ref_fn forwards, for finite differences. */
static void fd_max_pool(const double *x, double *y, void *ctx) {
    const pool_case *pc = ctx;
    double *idx = malloc(sizeof(double) * (size_t)(nn_numel(out_shape(pc)) + 1));
    ref_max_pool(pc, x, y, idx);
    free(idx);
}

static void test_max_pool2d_backward(void) {
    for (int rep = 0; rep < 12; rep++) {
        pool_case pc = random_case(true);
        CT_SCOPE {
            double *x = nn_random_values(nn_numel(in_shape(&pc)), -2, 2);
            ct_tensor *in = nn_f64(x, in_shape(&pc));
            int64_t n = nn_numel(out_shape(&pc));
            double *proj = nn_random_values(n, -1, 1);
            cti_pool2d_params p = params_of(&pc, false);
            ct_tensor *idx = NULL;
            ct_track(cti_max_pool2d_forward(in, &p, &idx));
            ct_track(idx);
            ct_tensor *g = ct_track(cti_max_pool2d_backward(nn_f64(proj, out_shape(&pc)), idx,
                                                            in_shape(&pc), &p));
            CT_EXPECT_SHAPE(g, in_shape(&pc));
            NN_EXPECT_REF_FD(g, fd_max_pool, &pc, x, nn_numel(in_shape(&pc)), n, proj);
            /* other dtypes: the float64 result for the same (rounded) grad_output */
            for (int k = 0; k < 4; k++) {
                ct_dtype dt = g_float_dtypes[k];
                ct_tensor *go = ct_to_dtype(nn_f64(proj, out_shape(&pc)), dt);
                ct_tensor *gd = ct_track(cti_max_pool2d_backward(go, idx, in_shape(&pc), &p));
                ct_tensor *g64 = ct_track(cti_max_pool2d_backward(ct_to_dtype(go, CT_FLOAT64), idx,
                                                                  in_shape(&pc), &p));
                double *want = ct_test_values(g64), rtol, atol;
                ct_test_tolerances(dt, &rtol, &atol);
                CT_EXPECT(ct_dtype_of(gd) == dt);
                CT_EXPECT_CLOSE(gd, want, ct_numel(in), rtol, atol);
                free(want);
            }
            free(x);
            free(proj);
        }
    }
}

/* ---- average pooling ------------------------------------------------------------------------ */

static void test_avg_pool2d_forward(void) {
    for (int rep = 0; rep < 40; rep++) {
        pool_case pc = random_case(false);
        ct_dtype dt = g_float_dtypes[rep % 4];
        CT_SCOPE {
            double *x, rtol, atol;
            ct_tensor *in = pool_input(&pc, dt, rep % 3 == 2, &x);
            int64_t n = nn_numel(out_shape(&pc));
            double *ref = malloc(sizeof(double) * (size_t)n);
            ref_avg_pool(&pc, x, ref);
            ct_tensor *out = ct_avg_pool2d_opts(in, pc.k, avg_opts(&pc));
            CT_EXPECT_SHAPE(out, out_shape(&pc));
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_CLOSE(out, ref, n, rtol, atol);
            free(x);
            free(ref);
        }
    }
}

static void fd_avg_pool(const double *x, double *y, void *ctx) { ref_avg_pool(ctx, x, y); }

static void test_avg_pool2d_backward(void) {
    for (int rep = 0; rep < 12; rep++) {
        pool_case pc = random_case(false);
        CT_SCOPE {
            double *x = nn_random_values(nn_numel(in_shape(&pc)), -2, 2);
            ct_tensor *in = nn_f64(x, in_shape(&pc));
            int64_t n = nn_numel(out_shape(&pc));
            double *proj = nn_random_values(n, -1, 1);
            cti_pool2d_params p = params_of(&pc, true);
            ct_tensor *g = ct_track(cti_avg_pool2d_backward(nn_f64(proj, out_shape(&pc)),
                                                            in_shape(&pc), &p));
            CT_EXPECT_SHAPE(g, in_shape(&pc));
            NN_EXPECT_REF_FD(g, fd_avg_pool, &pc, x, nn_numel(in_shape(&pc)), n, proj);
            for (int k = 0; k < 4; k++) {
                ct_dtype dt = g_float_dtypes[k];
                ct_tensor *go = ct_to_dtype(nn_f64(proj, out_shape(&pc)), dt);
                ct_tensor *gd = ct_track(cti_avg_pool2d_backward(go, in_shape(&pc), &p));
                ct_tensor *g64 = ct_track(cti_avg_pool2d_backward(ct_to_dtype(go, CT_FLOAT64),
                                                                  in_shape(&pc), &p));
                double *want = ct_test_values(g64), rtol, atol;
                ct_test_tolerances(dt, &rtol, &atol);
                CT_EXPECT_CLOSE(gd, want, ct_numel(in), rtol, atol);
                free(want);
            }
            free(x);
            free(proj);
        }
    }
}

/* ---- adaptive average pooling -------------------------------------------------------------- */

static void test_adaptive_avg_pool2d(void) {
    for (int rep = 0; rep < 24; rep++) {
        int64_t np = ct_test_randint(1, 4), H = ct_test_randint(1, 10), W = ct_test_randint(1, 10);
        int64_t OH = ct_test_randint(1, 12), OW = ct_test_randint(1, 12);
        ct_dtype dt = g_float_dtypes[rep % 4];
        CT_SCOPE {
            double *x, rtol, atol;
            ct_tensor *in = ct_test_random(CT_SHAPE(1, np, H, W), dt, -2, 2, &x);
            if (rep % 2) in = ct_test_noncontiguous(x, CT_SHAPE(1, np, H, W), dt);
            double *ref = malloc(sizeof(double) * (size_t)(np * OH * OW));
            ref_adaptive(np, H, W, OH, OW, x, ref);
            ct_tensor *out = ct_adaptive_avg_pool2d(in, CT_PAIR(OH, rep % 3 ? OW : -1));
            if (rep % 3 == 0) { /* -1 keeps W */
                free(ref);
                ref = malloc(sizeof(double) * (size_t)(np * OH * W));
                ref_adaptive(np, H, W, OH, W, x, ref);
                OW = W;
            }
            CT_EXPECT_SHAPE(out, CT_SHAPE(1, np, OH, OW));
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_CLOSE(out, ref, np * OH * OW, rtol, atol);
            free(x);
            free(ref);
        }
    }
}

typedef struct adaptive_ctx {
    int64_t out[2];
    int64_t planes, h, w;
} adaptive_ctx;

static void fd_adaptive(const double *x, double *y, void *ctx) {
    const adaptive_ctx *a = ctx;
    ref_adaptive(a->planes, a->h, a->w, a->out[0], a->out[1], x, y);
}

static void test_adaptive_avg_pool2d_backward(void) {
    for (int rep = 0; rep < 10; rep++) {
        int64_t H = ct_test_randint(1, 8), W = ct_test_randint(1, 8);
        adaptive_ctx a = {{ct_test_randint(1, 10), ct_test_randint(1, 10)}, 2, H, W};
        CT_SCOPE {
            ct_shape s = CT_SHAPE(2, H, W), os = CT_SHAPE(2, a.out[0], a.out[1]);
            double *x = nn_random_values(nn_numel(s), -2, 2), *proj = nn_random_values(nn_numel(os), -1, 1);
            ct_tensor *g = ct_track(cti_adaptive_avg_pool2d_backward(nn_f64(proj, os), s));
            CT_EXPECT_SHAPE(g, s);
            NN_EXPECT_REF_FD(g, fd_adaptive, &a, x, nn_numel(s), nn_numel(os), proj);
            free(x);
            free(proj);
        }
    }
    CT_SCOPE { /* an empty output: the gradient is zero */
        ct_tensor *g = ct_track(cti_adaptive_avg_pool2d_backward(ct_zeros(CT_SHAPE(2, 0, 3)),
                                                                 CT_SHAPE(2, 4, 3)));
        const double zeros[24] = {0};
        CT_EXPECT_CLOSE(g, zeros, 24, 0, 0);
        CT_EXPECT_SHAPE(ct_adaptive_avg_pool2d(ct_ones(CT_SHAPE(1, 2, 3, 3)), CT_PAIR(0, 2)),
                        CT_SHAPE(1, 2, 0, 2));
    }
}

/* Empty batches and channels give empty results. */
static void test_pool_empty(void) {
    CT_SCOPE {
        CT_EXPECT_SHAPE(ct_max_pool2d(ct_zeros(CT_SHAPE(0, 2, 5, 5)), CT_PAIR(2, 2)),
                        CT_SHAPE(0, 2, 2, 2));
        CT_EXPECT_SHAPE(ct_avg_pool2d(ct_zeros(CT_SHAPE(0, 2, 5, 5)), CT_PAIR(2, 2)),
                        CT_SHAPE(0, 2, 2, 2));
        CT_EXPECT_SHAPE(ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(2, 0, 5, 5)), CT_PAIR(2, 2)),
                        CT_SHAPE(2, 0, 2, 2));
    }
}

static void test_pool_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(2, 3, 5, 5));
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(0, 0), .stride = {1, 1}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "kernel size should be greater than zero, but got kH: 0 kW: 0");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(0, 0)));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "kernel size should be greater than zero");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(2, 2), .stride = {0, 1}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max_pool2d: stride should not be zero");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(2, 2), .stride = {-1, -1}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "stride should be greater than zero, but got dH: -1 dW: -1");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(2, 2), .dilation = {0, 1})); /* {0, 0} is "not given" */
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                        "dilation should be greater than zero, but got dilationH: 0 dilationW: 1");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(2, 2), .padding = {2, 0}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                        "pad should be at most half of kernel size, but got pad=2 and kernel_size=2");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(2, 2), .padding = {-1, 0}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "pad must be non-negative, but got pad: -1");
        CT_EXPECT(!ct_max_pool2d(x, CT_PAIR(6, 6)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "Given input size: (3x5x5). Calculated output size: (3x0x0). Output size is too small");
        CT_EXPECT(!ct_max_pool2d(ct_zeros(CT_SHAPE(5, 5)), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "non-empty 3D or 4D (batch mode) tensor expected for input");
        CT_EXPECT(!ct_max_pool2d(ct_zeros(CT_SHAPE(2, 0, 5, 5)), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                                      "size for input, but got:[2, 0, 5, 5]");
        CT_EXPECT(!ct_max_pool2d(ct_zeros(CT_SHAPE(2, 3, 5, 5), .dtype = CT_INT32), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"max_pool2d\" not implemented for 'Int'");
        CT_EXPECT(!ct_max_pool2d(x, NULL));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max_pool2d: kernel_size must be given");
        CT_EXPECT(!ct_avg_pool2d(ct_zeros(CT_SHAPE(2, 3, 5, 5), .dtype = CT_INT64), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"avg_pool2d\" not implemented for 'Long'");
        CT_EXPECT(!ct_avg_pool2d(x, CT_PAIR(2, 2), .padding = {2, 2}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "avg_pool2d: pad should be at most half of kernel size");
        CT_EXPECT(!ct_avg_pool2d(ct_zeros(CT_SHAPE(5)), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "avg_pool2d: non-empty 3D or 4D");
        CT_EXPECT(!ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(5, 5)), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5, 5]");
        CT_EXPECT(!ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(2, 3, 0, 5)), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected input to have non-zero size for non-batch dimensions, "
                                      "but input has sizes [2, 3, 0, 5] with dimension 2 being empty");
        CT_EXPECT(!ct_adaptive_avg_pool2d(ct_zeros(CT_SHAPE(2, 3, 4, 4), .dtype = CT_UINT8), CT_PAIR(2, 2)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"adaptive_avg_pool2d\" not implemented for 'Byte'");
        /* backward: grad_output of the wrong shape, indices of the wrong dtype */
        cti_pool2d_params p = cti_pool2d_params_make(CT_PAIR(2, 2), NULL, NULL, NULL, false, true, 0);
        CT_EXPECT(!cti_avg_pool2d_backward(ct_zeros(CT_SHAPE(2, 3, 3, 2)), CT_SHAPE(2, 3, 5, 5), &p));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "avg_pool2d_backward: grad_output of shape [2, 3, 3, 2] does not "
                                      "match the output shape [2, 3, 2, 2]");
        CT_EXPECT(!cti_max_pool2d_backward(ct_zeros(CT_SHAPE(2, 3, 2, 2)),
                                           ct_zeros(CT_SHAPE(2, 3, 2, 2), .dtype = CT_INT32),
                                           CT_SHAPE(2, 3, 5, 5), &p));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "max_pool2d_backward: expected indices of dtype int64");
        CT_EXPECT(!cti_max_pool2d_backward(ct_zeros(CT_SHAPE(2, 3, 2, 2)),
                                           ct_zeros(CT_SHAPE(2, 3, 2, 1), .dtype = CT_INT64),
                                           CT_SHAPE(2, 3, 5, 5), &p));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "max_pool2d_backward: grad_output of shape [2, 3, 2, 1]");
        CT_EXPECT(!cti_adaptive_avg_pool2d_backward(ct_zeros(CT_SHAPE(3, 2, 2)), CT_SHAPE(2, 3, 5, 5)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "adaptive_avg_pool2d_backward: grad_output has 3 dims, the input 4");
        CT_EXPECT(!cti_avg_pool2d_backward(ct_zeros(CT_SHAPE(2, 3, 2, 2), .dtype = CT_INT32),
                                           CT_SHAPE(2, 3, 5, 5), &p));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"avg_pool2d_backward\" not implemented for 'Int'");
        /* NULL inputs propagate without a new error */
        CT_EXPECT(!ct_max_pool2d(NULL, CT_PAIR(2, 2)));
        CT_EXPECT(!ct_avg_pool2d(NULL, CT_PAIR(2, 2)));
        CT_EXPECT(!ct_adaptive_avg_pool2d(NULL, CT_PAIR(2, 2)));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- dropout -------------------------------------------------------------------------------- */

/* The keep-mask the contract defines, from the public Philox block. */
static bool expected_keep(uint64_t seed, uint64_t offset, int64_t i, double p) {
    uint32_t r[4];
    ct_philox4x32(seed, offset + (uint64_t)i / 2, 0, r);
    uint32_t x0 = r[(i % 2) * 2];
    return (double)(x0 >> 8) < ceil((1.0 - p) * 16777216.0);
}

static void test_dropout_values(void) {
    const double ps[] = {0.3, 0.5, 0.9};
    for (int k = 0; k < 12; k++) {
        ct_dtype dt = g_float_dtypes[k % 4];
        double p = ps[k % 3];
        CT_SCOPE {
            int64_t n = 2001;
            double *x;
            ct_tensor *in = ct_test_random(CT_SHAPE(n), dt, 0.5, 2, &x);
            ct_manual_seed(1234 + (uint64_t)k);
            uint64_t seed, off0, off1;
            ct_get_rng_state(&seed, &off0);
            ct_tensor *y = ct_dropout(in, p, true);
            ct_get_rng_state(NULL, &off1);
            CT_EXPECT_INT_EQ(off1 - off0, (n + 1) / 2); /* one Philox block per two elements */
            double *want = malloc(sizeof(double) * (size_t)n), rtol, atol;
            int64_t kept = 0;
            for (int64_t i = 0; i < n; i++) {
                bool keep = expected_keep(seed, off0, i, p);
                kept += keep;
                /* (x * 1) * scale in the compute type, then rounded to dt */
                float scaled = (float)x[i] * (float)(1.0 / (1.0 - p));
                want[i] = !keep ? 0.0 : dt == CT_FLOAT64 ? x[i] * (1.0 / (1.0 - p)) : (double)scaled;
            }
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_CLOSE(y, want, n, dt == CT_FLOAT64 || dt == CT_FLOAT32 ? 0 : rtol, 0);
            CT_EXPECT_MSG(fabs((double)kept / (double)n - (1 - p)) < 0.05, "kept %lld of %lld at p %g",
                          (long long)kept, (long long)n, p);
            /* the same seed gives the same mask */
            ct_manual_seed(1234 + (uint64_t)k);
            CT_EXPECT(ct_equal(ct_dropout(in, p, true), y));
            free(want);
            free(x);
        }
    }
}

static void test_dropout_modes(void) {
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(3, 4));
        uint64_t off0, off1;
        ct_get_rng_state(NULL, &off0);
        ct_tensor *e = ct_dropout(x, 0.5, false); /* eval: an alias */
        ct_tensor *z = ct_dropout(x, 0.0, true);  /* p = 0: an alias */
        ct_get_rng_state(NULL, &off1);
        CT_EXPECT(e && e != x && ct_shares_storage(e, x) && ct_equal(e, x));
        CT_EXPECT(z && ct_shares_storage(z, x) && ct_equal(z, x));
        CT_EXPECT_INT_EQ(off1, off0);
        /* p = 1: zeros, nothing drawn; inf * 0 is NaN as in PyTorch */
        const double v[] = {1, INFINITY, -2};
        ct_tensor *one = ct_dropout(ct_test_tensor(v, CT_SHAPE(3), CT_FLOAT32), 1.0, true);
        ct_get_rng_state(NULL, &off1);
        const double want[] = {0, NAN, 0};
        CT_EXPECT_CLOSE(one, want, 3, 0, 0);
        CT_EXPECT_INT_EQ(off1, off0);
        /* eval mode accepts any dtype; empty input */
        ct_tensor *ints = ct_zeros(CT_SHAPE(2), .dtype = CT_INT64);
        CT_EXPECT(ct_shares_storage(ct_dropout(ints, 0.5, false), ints));
        CT_EXPECT_SHAPE(ct_dropout(ct_zeros(CT_SHAPE(0, 3)), 0.5, true), CT_SHAPE(0, 3));
    }
}

static void test_dropout_backward(void) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(7, 9), .dtype = CT_FLOAT64);
        ct_tensor *mask = NULL;
        ct_tensor *y = ct_track(cti_dropout_forward(x, 0.25, true, &mask));
        ct_track(mask);
        CT_EXPECT(y && mask && ct_dtype_of(mask) == CT_BOOL);
        ct_tensor *g = ct_randn(CT_SHAPE(7, 9), .dtype = CT_FLOAT64);
        ct_tensor *dx = ct_track(cti_dropout_backward(g, mask, 0.25));
        double *gv = ct_test_values(g), *mv = ct_test_values(mask), *xv = ct_test_values(x);
        double want[63], want_y[63];
        for (int i = 0; i < 63; i++) {
            want[i] = gv[i] * mv[i] / 0.75;
            want_y[i] = xv[i] * mv[i] / 0.75;
        }
        CT_EXPECT_CLOSE(dx, want, 63, 1e-15, 0);
        CT_EXPECT_CLOSE(y, want_y, 63, 1e-15, 0);
        /* no mask (eval): the identity */
        ct_tensor *id = ct_track(cti_dropout_backward(g, NULL, 0.25));
        CT_EXPECT(ct_shares_storage(id, g));
        /* p = 1: zero gradients */
        ct_tensor *m1 = NULL;
        ct_track(cti_dropout_forward(x, 1.0, true, &m1));
        ct_track(m1);
        const double zeros[63] = {0};
        CT_EXPECT_CLOSE(ct_track(cti_dropout_backward(g, m1, 1.0)), zeros, 63, 0, 0);
        CT_EXPECT(!cti_dropout_backward(g, ct_zeros(CT_SHAPE(7, 8), .dtype = CT_BOOL), 0.5));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "dropout_backward: mask of shape [7, 8] does not match");
        CT_EXPECT(!cti_dropout_backward(g, ct_zeros(CT_SHAPE(7, 9)), 0.5));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "dropout_backward: expected a bool mask, but got float32");
        free(gv);
        free(mv);
        free(xv);
    }
}

static void test_dropout_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(3));
        CT_EXPECT(!ct_dropout(x, 1.5, true));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got 1.5");
        CT_EXPECT(!ct_dropout(x, -0.1, false));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got -0.1");
        CT_EXPECT(!ct_dropout(ct_ones(CT_SHAPE(3), .dtype = CT_INT32), 0.5, true));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "result type Float can't be cast to the desired output type Int");
        CT_EXPECT(!ct_dropout(NULL, 0.5, true));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- embedding -------------------------------------------------------------------------------- */

static void test_embedding_forward(void) {
    for (int k = 0; k < 6; k++) {
        ct_dtype dt = k < 4 ? g_float_dtypes[k] : CT_INT32;
        CT_SCOPE {
            const int64_t V = 7, D = 5;
            double *w;
            ct_tensor *weight = ct_test_random(CT_SHAPE(V, D), dt, -10, 10, &w);
            if (k == 5) weight = ct_test_noncontiguous(w, CT_SHAPE(V, D), dt);
            const int64_t idx[] = {3, 0, 6, 3, 1, 6};
            ct_tensor *ind = ct_tensor_from(idx, CT_INT64, CT_SHAPE(2, 3));
            if (k % 2) ind = ct_to_dtype(ind, CT_INT32);
            ct_tensor *out = ct_embedding(ind, weight, CT_NO_PADDING_IDX);
            CT_EXPECT_SHAPE(out, CT_SHAPE(2, 3, D));
            CT_EXPECT(ct_dtype_of(out) == dt);
            double want[30];
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < D; j++) want[i * D + j] = w[idx[i] * D + j];
            CT_EXPECT_CLOSE(out, want, 30, 0, 0);
            /* a 0-dim index gives one row */
            ct_tensor *row = ct_embedding(ct_scalar_tensor(6, .dtype = CT_INT64), weight, 2);
            CT_EXPECT_SHAPE(row, CT_SHAPE(D));
            CT_EXPECT_CLOSE(row, w + 6 * D, D, 0, 0);
            CT_EXPECT_SHAPE(ct_embedding(ct_zeros(CT_SHAPE(0, 4), .dtype = CT_INT64), weight, -1),
                            CT_SHAPE(0, 4, D));
            free(w);
        }
    }
}

static void test_embedding_backward(void) {
    for (int k = 0; k < 4; k++) {
        ct_dtype dt = g_float_dtypes[k];
        CT_SCOPE {
            const int64_t V = 6, D = 3, n = 8;
            const int64_t idx[] = {2, 5, 2, 0, 2, 5, 4, 0};
            const int64_t padding = k % 2 ? 0 : -1;
            double *g;
            ct_tensor *grad = ct_test_random(CT_SHAPE(2, 4, D), dt, -1, 1, &g);
            ct_tensor *ind = ct_tensor_from(idx, CT_INT64, CT_SHAPE(2, 4));
            if (k >= 2) ind = ct_to_dtype(ind, CT_INT32);
            ct_tensor *gw = ct_track(cti_embedding_backward(grad, ind, V, padding));
            CT_EXPECT_SHAPE(gw, CT_SHAPE(V, D));
            double want[18] = {0}, rtol, atol;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < D; j++)
                    if (idx[i] != padding) want[idx[i] * D + j] += g[i * D + j];
            ct_test_tolerances(dt, &rtol, &atol);
            CT_EXPECT_CLOSE(gw, want, V * D, rtol, atol);
            free(g);
        }
    }
    CT_SCOPE { /* the padding index resolves like PyTorch's (negative from the end) */
        int64_t r;
        CT_EXPECT(cti_embedding_padding_idx(-1, 10, &r) && r == 9);
        CT_EXPECT(cti_embedding_padding_idx(CT_NO_PADDING_IDX, 10, &r) && r == -1);
        CT_EXPECT(!cti_embedding_padding_idx(10, 10, &r));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Padding_idx must be within num_embeddings");
        CT_EXPECT(!cti_embedding_padding_idx(-11, 10, &r));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Padding_idx must be within num_embeddings");
        /* no indices: a zero gradient */
        ct_tensor *gw = ct_track(cti_embedding_backward(ct_zeros(CT_SHAPE(0, 2)),
                                                        ct_zeros(CT_SHAPE(0), .dtype = CT_INT64), 3, -1));
        const double zeros[6] = {0};
        CT_EXPECT_CLOSE(gw, zeros, 6, 0, 0);
    }
}

static void test_embedding_errors(void) {
    CT_SCOPE {
        ct_tensor *w = ct_ones(CT_SHAPE(10, 3));
        const int64_t bad[] = {1, 10}, neg[] = {1, -1};
        CT_EXPECT(!ct_embedding(ct_ones(CT_SHAPE(2)), w, CT_NO_PADDING_IDX));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Expected tensor for argument #1 'indices' to have one of the "
                                      "following scalar types: Long, Int; but got Float instead");
        CT_EXPECT(!ct_embedding(ct_tensor_from(bad, CT_INT64, CT_SHAPE(2)), w, CT_NO_PADDING_IDX));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index out of range in self");
        CT_EXPECT(!ct_embedding(ct_tensor_from(neg, CT_INT64, CT_SHAPE(2)), w, CT_NO_PADDING_IDX));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index out of range in self");
        CT_EXPECT(!ct_embedding(ct_zeros(CT_SHAPE(2), .dtype = CT_INT64), ct_ones(CT_SHAPE(10)),
                                CT_NO_PADDING_IDX));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "'weight' must be 2-D");
        CT_EXPECT(!ct_embedding(ct_zeros(CT_SHAPE(2), .dtype = CT_INT64), w, 10));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Padding_idx must be within num_embeddings");
        CT_EXPECT(!cti_embedding_backward(ct_ones(CT_SHAPE(2, 3)), ct_tensor_from(bad, CT_INT64, CT_SHAPE(2)),
                                          10, -1));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index out of range in self");
        CT_EXPECT(!cti_embedding_backward(ct_ones(CT_SHAPE(3, 3)), ct_zeros(CT_SHAPE(2), .dtype = CT_INT64),
                                          10, -1));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "embedding_backward: grad_output of shape [3, 3] does not match");
        CT_EXPECT(!cti_embedding_backward(ct_ones(CT_SHAPE(2, 3), .dtype = CT_INT64),
                                          ct_zeros(CT_SHAPE(2), .dtype = CT_INT64), 10, -1));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"embedding_backward\" not implemented for 'Long'");
        CT_EXPECT(!cti_embedding_backward(ct_ones(CT_SHAPE(2, 3)), ct_zeros(CT_SHAPE(2), .dtype = CT_INT64),
                                          10, 10));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "embedding_backward: invalid num_weights 10 or padding_idx 10");
        CT_EXPECT(!ct_embedding(NULL, w, -1));
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- determinism ----------------------------------------------------------------------------- */

/* Backwards that add many values into one element give the same bits run
 * after run on every device (no float atomics): float32 sums of many
 * repeated indices, and overlapping pooling windows. The sums must also be
 * right: bitwise repeatable garbage would pass the first check alone. */
static void check_determinism_on(ct_device dev) {
    CT_SCOPE {
        ct_tensor *idx_cpu = ct_randint(0, 5, CT_SHAPE(3000)), *g_cpu = ct_randn(CT_SHAPE(3000, 7));
        ct_tensor *idx = ct_to_device(idx_cpu, dev), *g = ct_to_device(g_cpu, dev);
        ct_tensor *a = ct_track(cti_embedding_backward(g, idx, 5, -1));
        ct_tensor *b = ct_track(cti_embedding_backward(g, idx, 5, -1));
        CT_EXPECT(a && b && ct_equal(a, b));
        double *iv = ct_test_values(idx_cpu), *gv = ct_test_values(g_cpu), want[5 * 7] = {0};
        for (int64_t r = 0; r < 3000; r++)
            for (int c = 0; c < 7; c++) want[(int64_t)iv[r] * 7 + c] += gv[r * 7 + c];
        CT_EXPECT_CLOSE(a, want, 5 * 7, 1e-5, 1e-4); /* ~600 float32 terms per sum */
        free(iv);
        free(gv);
        ct_tensor *x = ct_to_device(ct_randn(CT_SHAPE(2, 3, 17, 19)), dev);
        cti_pool2d_params p = cti_pool2d_params_make(CT_PAIR(3, 3), CT_PAIR(1, 1), CT_PAIR(1, 1), NULL,
                                                     false, true, 0);
        ct_tensor *go = ct_to_device(ct_randn(CT_SHAPE(2, 3, 17, 19)), dev);
        ct_tensor *p1 = ct_track(cti_avg_pool2d_backward(go, ct_shape_of(x), &p));
        ct_tensor *p2 = ct_track(cti_avg_pool2d_backward(go, ct_shape_of(x), &p));
        CT_EXPECT(p1 && p2 && ct_equal(p1, p2));
    }
}

static void test_backward_determinism(void) {
    check_determinism_on(ct_device_cpu());
    int ndev = ct_test_opencl_devices("backward determinism on OpenCL");
    for (int i = 0; i < ndev; i++) check_determinism_on(ct_device_opencl(i));
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_max_pool2d_forward);
    CT_RUN(test_max_pool2d_defaults_and_nan);
    CT_RUN(test_max_pool2d_backward);
    CT_RUN(test_avg_pool2d_forward);
    CT_RUN(test_avg_pool2d_backward);
    CT_RUN(test_adaptive_avg_pool2d);
    CT_RUN(test_adaptive_avg_pool2d_backward);
    CT_RUN(test_pool_empty);
    CT_RUN(test_pool_errors);
    CT_RUN(test_dropout_values);
    CT_RUN(test_dropout_modes);
    CT_RUN(test_dropout_backward);
    CT_RUN(test_dropout_errors);
    CT_RUN(test_embedding_forward);
    CT_RUN(test_embedding_backward);
    CT_RUN(test_embedding_errors);
    CT_RUN(test_backward_determinism);
    return ct_test_finish();
}
