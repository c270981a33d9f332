/*
 * gpu_ops.h — the shared GPU entries of the conv and nn tables by name
 * (internal), for a backend that overrides some entries of
 * ct_gpu_conv_ops / ct_gpu_nn_ops (CUDA with cuDNN) and keeps the rest:
 * its table names these directly instead of forwarding to them.
 */
#ifndef CT_BACKENDS_GPU_OPS_H
#define CT_BACKENDS_GPU_OPS_H

#include "core/backend_conv.h"
#include "core/backend_nn.h"

ct_status ct_gpu_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                            const ct_pool2d_geom *g);
ct_status ct_gpu_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *indices, const ct_pool2d_geom *g);
ct_status ct_gpu_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g);
ct_status ct_gpu_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_pool2d_geom *g);
ct_status ct_gpu_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g);
ct_status ct_gpu_adaptive_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                              const ct_pool2d_geom *g);
ct_status ct_gpu_batch_norm_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                                  int64_t n, int64_t c, int64_t s);
ct_status ct_gpu_batch_norm_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                                  const ct_kview *invstd, const ct_kview *weight, const ct_kview *bias,
                                  int64_t n, int64_t c, int64_t s);
ct_status ct_gpu_batch_norm_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, int64_t n, int64_t c, int64_t s);
ct_status ct_gpu_batch_norm_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                           const ct_kview *in, const ct_kview *mean,
                                           const ct_kview *invstd, const ct_kview *weight,
                                           const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                           int64_t n, int64_t c, int64_t s, bool batch_stats);
ct_status ct_gpu_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                            const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                            int64_t rows, int64_t cols, double eps);
ct_status ct_gpu_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *in, const ct_kview *mean, const ct_kview *rstd,
                                     const ct_kview *weight, int64_t rows, int64_t cols);
ct_status ct_gpu_layer_norm_backward_params(const ct_kview *grad_weight, const ct_kview *grad_bias,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, const ct_kview *rstd, int64_t rows,
                                            int64_t cols);
ct_status ct_gpu_dropout_mask(const ct_kview *mask, uint64_t seed, uint64_t offset, uint32_t keep_threshold);
ct_status ct_gpu_masked_scale(const ct_kview *out, const ct_kview *in, const ct_kview *mask, double scale);
ct_status ct_gpu_embedding_backward(const ct_kview *grad_weight, const ct_kview *grad_out,
                                    const ct_kview *offsets, const ct_kview *positions, int64_t padding_idx);
ct_status ct_gpu_im2col(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *g);
ct_status ct_gpu_col2im(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *g);

#endif /* CT_BACKENDS_GPU_OPS_H */
