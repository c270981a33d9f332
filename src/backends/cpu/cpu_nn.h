/*
 * cpu_nn.h — the CPU backend's nn kernels (internal), each with exactly the
 * signature of its struct ct_backend_nn member (src/core/backend_nn.h), so
 * that cpu_nn.c can build the ct_cpu_nn_ops table from the files that
 * implement them; plus the block helpers those files share.
 */
#ifndef CT_CPU_NN_H
#define CT_CPU_NN_H

#include "../../core/backend_nn.h"
#include "cpu_internal.h"

/* cpu_nn_pool.c */
ct_status ct_cpu_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                            const ct_pool2d_geom *g);
ct_status ct_cpu_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *indices, const ct_pool2d_geom *g);
ct_status ct_cpu_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g);
ct_status ct_cpu_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_pool2d_geom *g);
ct_status ct_cpu_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in,
                                     const ct_pool2d_geom *g);
ct_status ct_cpu_adaptive_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                              const ct_pool2d_geom *g);

/* cpu_nn_norm.c */
ct_status ct_cpu_batch_norm_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                                  int64_t n, int64_t c, int64_t s);
ct_status ct_cpu_batch_norm_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                                  const ct_kview *invstd, const ct_kview *weight,
                                  const ct_kview *bias, int64_t n, int64_t c, int64_t s);
ct_status ct_cpu_batch_norm_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, int64_t n, int64_t c,
                                            int64_t s);
ct_status ct_cpu_batch_norm_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                           const ct_kview *in, const ct_kview *mean,
                                           const ct_kview *invstd, const ct_kview *weight,
                                           const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                           int64_t n, int64_t c, int64_t s, bool batch_stats);
ct_status ct_cpu_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                            const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                            int64_t rows, int64_t cols, double eps);
ct_status ct_cpu_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *in, const ct_kview *mean,
                                     const ct_kview *rstd, const ct_kview *weight, int64_t rows,
                                     int64_t cols);
ct_status ct_cpu_layer_norm_backward_params(const ct_kview *grad_weight, const ct_kview *grad_bias,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, const ct_kview *rstd,
                                            int64_t rows, int64_t cols);

/* ---- block helpers: contiguous runs of any floating dtype as doubles ---- */

/* Elements handled at once by the block loops (stack buffers). */
#define CT_CPU_NN_BLOCK 256

/* Element i of a contiguous floating view (stat vectors), as double. */
static inline double ct_cpu_nn_at(const ct_kview *v, int64_t i) {
    return ct_cpu_load(ct_cpu_base(v) + i * (int64_t)ct_dtype_size(v->dtype), v->dtype);
}

/* n contiguous elements of dtype dt at p <- buf. */
void ct_cpu_nn_store_block(char *p, const double *buf, int64_t n, ct_dtype dt);

#endif /* CT_CPU_NN_H */
