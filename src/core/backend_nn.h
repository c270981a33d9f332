/*
 * backend_nn.h — the "nn" family of a backend's table (internal): pooling,
 * batch and layer normalisation, dropout and the embedding gradient. The
 * front-ends in src/ops/nn*.c validate, resolve shapes and dtypes and
 * compose these primitives (plus generic entries of backend.h such as
 * index_select, unary and binary).
 *
 * Determinism: every entry gives the same result run after run. No float
 * atomics: a backward that sums several contributions into one element
 * computes that element in one place (a gather over the contributions in a
 * fixed order), so OpenCL/CUDA kernels can run one work item per element.
 *
 * Contracts (the core guarantees these before calling):
 *  - every view lives on the backend's device and is CONTIGUOUS (offset may
 *    be non-zero); its shape is the tensor's own (e.g. [N, C, H, W] or
 *    [C, H, W] for pooling), which backends index flat with the sizes
 *    passed beside it (the geometry, n/c/s, rows/cols);
 *  - "x dtype" views (inputs, outputs, gradients) share one floating dtype
 *    (float32, float64, float16, bfloat16); "stat" views (means, inverse
 *    standard deviations, weights, biases, per-channel sums) have the stat
 *    dtype: float64 when x is float64, float32 otherwise; index views are
 *    int64; masks are bool;
 *  - counts are positive (the core returns early on empty tensors);
 *  - a backend returns CT_OK or sets an error with ct_error_set and returns
 *    its code. Device backends enqueue on the current stream and return.
 */
#ifndef CT_CORE_BACKEND_NN_H
#define CT_CORE_BACKEND_NN_H

#include "backend.h"

/* The geometry of one 2-D pooling call; index 0 is height, 1 is width.
 * Planes are the N*C images of [N, C, H, W] (contiguous [P, H, W]). */
typedef struct ct_pool2d_geom {
    int64_t planes;           /* P = N * C */
    int64_t in_size[2];       /* H, W (>= 1) */
    int64_t out_size[2];      /* OH, OW (>= 1), PyTorch's formula */
    int64_t kernel[2];        /* >= 1 (unused by adaptive pooling) */
    int64_t stride[2];        /* >= 1 (unused by adaptive pooling) */
    int64_t padding[2];       /* 0 <= padding <= kernel / 2 */
    int64_t dilation[2];      /* >= 1 (max pooling only) */
    bool count_include_pad;   /* avg pooling */
    int64_t divisor_override; /* avg pooling: non-zero replaces the divisor; 0 none */
} ct_pool2d_geom;

struct ct_backend_nn {
    /* ---- pooling: in/grad_in [P, H, W], out/grad_out/indices [P, OH, OW] ---- */

    /* out = max over each window (window of output (oh, ow): rows
     * oh*sH - pH + i*dH, i < kH, inside [0, H); likewise columns). A NaN
     * wins (the last NaN of the window in row-major order); with no NaN the
     * first maximum wins. indices (NULL: not wanted) = h * W + w of the
     * chosen element. As PyTorch, the index of a window whose elements are
     * all -inf is its first in-bounds element. */
    ct_status (*max_pool2d)(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                            const ct_pool2d_geom *g);
    /* grad_in (every element written) = sum of grad_out[o] over the outputs
     * o whose indices[o] names that element, added in increasing o. */
    ct_status (*max_pool2d_backward)(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *indices, const ct_pool2d_geom *g);
    /* PyTorch's avg_pool2d: window rows [oh*sH - pH, min(that + kH, H + pH)),
     * its size counted before clipping to [0, H) when count_include_pad,
     * after otherwise; divisor_override replaces the count; sum / count. */
    ct_status (*avg_pool2d)(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g);
    /* grad_in = sum over the windows that hold the element of
     * grad_out / count (the adjoint of avg_pool2d), in increasing output;
     * every element written. */
    ct_status (*avg_pool2d_backward)(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_pool2d_geom *g);
    /* Window rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) (exact integer
     * arithmetic), likewise columns; out = mean over the window. */
    ct_status (*adaptive_avg_pool2d)(const ct_kview *out, const ct_kview *in,
                                     const ct_pool2d_geom *g);
    /* Its adjoint (every element of grad_in written), in increasing output. */
    ct_status (*adaptive_avg_pool2d_backward)(const ct_kview *grad_in, const ct_kview *grad_out,
                                              const ct_pool2d_geom *g);

    /* ---- batch norm: x views are [N, C, S] (S = product of spatial dims),
     * stat views [C]; M = N * S values per channel ---- */

    /* mean[c] and biased var[c] of the M values of channel c. */
    ct_status (*batch_norm_stats)(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                                  int64_t n, int64_t c, int64_t s);
    /* out = (in - mean[c]) * invstd[c] * weight[c] + bias[c]; weight/bias
     * NULL mean 1/0. */
    ct_status (*batch_norm_apply)(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                                  const ct_kview *invstd, const ct_kview *weight,
                                  const ct_kview *bias, int64_t n, int64_t c, int64_t s);
    /* sum_dy[c] = sum(grad_out), sum_dy_xmu[c] = sum(grad_out * (in - mean[c]))
     * over channel c. */
    ct_status (*batch_norm_backward_reduce)(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, int64_t n, int64_t c,
                                            int64_t s);
    /* grad_in with w = weight[c] (1 when NULL), k = invstd[c]:
     *   batch statistics: (dy - sum_dy/M - (x - mean) * k^2 * sum_dy_xmu/M) * k * w
     *   running statistics: dy * k * w (in, mean, sum_dy, sum_dy_xmu unused, may be NULL). */
    ct_status (*batch_norm_backward_apply)(const ct_kview *grad_in, const ct_kview *grad_out,
                                           const ct_kview *in, const ct_kview *mean,
                                           const ct_kview *invstd, const ct_kview *weight,
                                           const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                           int64_t n, int64_t c, int64_t s,
                                           bool batch_stats);

    /* ---- layer norm: x views are [R, L] (R rows normalised separately),
     * mean/rstd [R], weight/bias [L] ---- */

    /* Per row: mean, biased var, rstd = 1/sqrt(var + eps);
     * out = (in - mean) * rstd * weight + bias (NULL: 1/0). */
    ct_status (*layer_norm)(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                            const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                            int64_t rows, int64_t cols, double eps);
    /* Per row, with xhat = (x - mean) * rstd and g = dy * weight:
     *   grad_in = rstd * (g - mean(g) - xhat * mean(g * xhat)). */
    ct_status (*layer_norm_backward)(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *in, const ct_kview *mean,
                                     const ct_kview *rstd, const ct_kview *weight, int64_t rows,
                                     int64_t cols);
    /* Per column, summed over rows: grad_weight = sum(dy * xhat),
     * grad_bias = sum(dy) (stat dtype; either may be NULL, not both). */
    ct_status (*layer_norm_backward_params)(const ct_kview *grad_weight,
                                            const ct_kview *grad_bias, const ct_kview *grad_out,
                                            const ct_kview *in, const ct_kview *mean,
                                            const ct_kview *rstd, int64_t rows, int64_t cols);

    /* ---- dropout ---- */

    /* mask[i] = ((x0 >> 8) < keep_threshold) for the first 32-bit draw x0 of
     * element i in src/kernels/philox.h's mapping (ct_philox_pair with seed
     * and offset): a uniform 24-bit draw below keep_threshold / 2^24. */
    ct_status (*dropout_mask)(const ct_kview *mask, uint64_t seed, uint64_t offset,
                              uint32_t keep_threshold);
    /* out = (in * mask) * scale, in the compute type (float for float32 and
     * the 16-bit types with scale rounded to float, double for float64), so
     * every backend gives identical bits. */
    ct_status (*masked_scale)(const ct_kview *out, const ct_kview *in, const ct_kview *mask,
                              double scale);

    /* ---- embedding ---- */

    /* grad_weight [V, D] (every element written) from grad_out [n, D]:
     * row v = sum of grad_out rows positions[k] for k in
     * [offsets[v], offsets[v+1]), in increasing k; offsets [V + 1] and
     * positions [n] are int64 (positions sorted by index, then position).
     * Row padding_idx (-1: none) is zero. */
    ct_status (*embedding_backward)(const ct_kview *grad_weight, const ct_kview *grad_out,
                                    const ct_kview *offsets, const ct_kview *positions,
                                    int64_t padding_idx);

    /* ---- whole batch norm (optional; NULL: not provided) ----
     * For a backend with a normalisation library (cuDNN). src/ops/nn_norm.c
     * tries these first and composes the primitives above when an entry is
     * NULL or declines. Views as for the primitives (x views [N, C, S],
     * stat views [C], all contiguous); weight and bias are NULL when the
     * caller has none. Declining: return CT_ERR_UNSUPPORTED WITHOUT calling
     * ct_error_set, before enqueuing anything or touching any view (a case
     * the library does not cover, or the library switched off or absent).
     * (Pooling needs no entries here: the pooling entries above already
     * take a whole operation, so a backend can route them to a library.) */

    /* Training: out normalised with the batch statistics, save_mean = the
     * batch mean, save_invstd = 1/sqrt(biased var + eps), and when
     * running_mean/running_var are given (both or neither) they are updated
     * in place: r = (1 - momentum) * r + momentum * batch statistic, with
     * the unbiased variance (times M / (M - 1)) for running_var. */
    ct_status (*batch_norm_forward_training)(const ct_kview *out, const ct_kview *save_mean,
                                             const ct_kview *save_invstd,
                                             const ct_kview *running_mean,
                                             const ct_kview *running_var, const ct_kview *in,
                                             const ct_kview *weight, const ct_kview *bias,
                                             int64_t n, int64_t c, int64_t s, double momentum,
                                             double eps);
    /* Evaluation: out = (in - mean[c]) / sqrt(var[c] + eps) * weight[c] +
     * bias[c] with the given (running) statistics. */
    ct_status (*batch_norm_forward_inference)(const ct_kview *out, const ct_kview *in,
                                              const ct_kview *mean, const ct_kview *var,
                                              const ct_kview *weight, const ct_kview *bias,
                                              int64_t n, int64_t c, int64_t s, double eps);
    /* Backward with batch statistics: grad_in (as batch_norm_backward_apply
     * with batch_stats), grad_weight[c] = sum(dy * (x - mean) * invstd) and
     * grad_bias[c] = sum(dy) (stat dtype), all three written, from the
     * forward's save_mean/save_invstd. */
    ct_status (*batch_norm_backward)(const ct_kview *grad_in, const ct_kview *grad_weight,
                                     const ct_kview *grad_bias, const ct_kview *grad_out,
                                     const ct_kview *in, const ct_kview *save_mean,
                                     const ct_kview *save_invstd, const ct_kview *weight,
                                     int64_t n, int64_t c, int64_t s);
};

#endif /* CT_CORE_BACKEND_NN_H */
