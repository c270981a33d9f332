/*
 * gpu_nn.c — the GPU backends' nn table (ct_gpu_nn_ops), shared by OpenCL
 * and CUDA (see gpu.h): launchers for the kernels of src/kernels/nn.kh, one
 * per entry of struct ct_backend_nn (src/core/backend_nn.h). CUDA's table
 * (cu_dnn.c) puts cuDNN's pooling and batch norm in front of these.
 *
 * Every view is contiguous (the contract), so kernels receive buffers with
 * element offsets instead of full metadata. Elementwise kernels run one
 * work item per element; per-channel (batch norm) and per-row (layer norm)
 * statistics run one work-group per channel or row, with groups looping
 * when there are more channels than groups. Nothing waits.
 */
#include <string.h>

#include "gpu.h"
#include "core/backend_nn.h"

/* Work-groups of the group kernels (the kernels' local arrays hold 256). */
#define GROUP_CAP 256
/* The group kernels loop over channels/rows, so no launch needs more. */
#define MAX_GROUPS 4096


static ct_knn_pool pool_of(const ct_pool2d_geom *g) {
    ct_knn_pool p = {g->planes,      g->in_size[0], g->in_size[1], g->out_size[0],
                      g->out_size[1], g->kernel[0],  g->kernel[1],  g->stride[0],
                      g->stride[1],   g->padding[0], g->padding[1], g->dilation[0],
                      g->dilation[1], g->count_include_pad, g->divisor_override};
    return p;
}

/* A view's buffer and element offset as kernel arguments; NULL views give a
 * NULL buffer (with a has_ flag beside it in the kernel). */
typedef struct buf_arg {
    void *mem;
    int64_t off;
} buf_arg;

static buf_arg buf_of(const ct_kview *v) {
    buf_arg b = {v ? v->data : NULL, v ? v->offset : 0};
    return b;
}

#define BUF_ARGS(b) CT_GPU_ARG((b).mem), CT_GPU_ARG((b).off)
#define NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The float64 check every entry starts with. */
static ct_status check_dtype(const ct_kview *v, const char *op) {
    return ct_gpu_check_fp64(v, v->dtype, op);
}

/* One work item per item, in the backend's usual groups. */
static ct_status launch_items(const ct_kview *v, ct_kernel_id k, const ct_gpu_arg *args, int nargs,
                              int64_t items) {
    return ct_gpu_of(v)->launch(v->device, k, args, nargs, (size_t)items, 0);
}

/* One work-group per item over `items` items (at most MAX_GROUPS groups). */
static ct_status launch_groups(const ct_kview *v, ct_kernel_id k, const ct_gpu_arg *args, int nargs,
                               int64_t items) {
    size_t local;
    CT_TRY(ct_gpu_group_size(v, k, GROUP_CAP, &local));
    size_t groups = (size_t)(items < MAX_GROUPS ? items : MAX_GROUPS);
    return ct_gpu_of(v)->launch(v->device, k, args, nargs, groups * local, local);
}

/* ---- pooling ------------------------------------------------------------------------ */

static int64_t out_items(const ct_pool2d_geom *g) {
    return g->planes * g->out_size[0] * g->out_size[1];
}
static int64_t in_items(const ct_pool2d_geom *g) {
    return g->planes * g->in_size[0] * g->in_size[1];
}

static ct_status ct_gpu_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                                const ct_pool2d_geom *g) {
    CT_TRY(check_dtype(in, "max_pool2d"));
    buf_arg o = buf_of(out), x = buf_of(in), ix = buf_of(indices);
    int32_t has_ind = indices != NULL, dt = in->dtype;
    ct_knn_pool pg = pool_of(g);
    ct_gpu_arg args[] = {BUF_ARGS(o), BUF_ARGS(ix), CT_GPU_ARG(has_ind), BUF_ARGS(x),
                         CT_GPU_ARG(dt), CT_GPU_ARG(pg)};
    return launch_items(out, CT_KID(ct_k_nn_max_pool2d), args, NARGS(args), out_items(g));
}

static ct_status ct_gpu_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                         const ct_kview *indices, const ct_pool2d_geom *g) {
    CT_TRY(check_dtype(grad_out, "max_pool2d_backward"));
    buf_arg gi = buf_of(grad_in), go = buf_of(grad_out), ix = buf_of(indices);
    int32_t dt = grad_out->dtype;
    ct_knn_pool pg = pool_of(g);
    ct_gpu_arg args[] = {BUF_ARGS(gi), BUF_ARGS(go), BUF_ARGS(ix), CT_GPU_ARG(dt), CT_GPU_ARG(pg)};
    return launch_items(grad_in, CT_KID(ct_k_nn_max_pool2d_backward), args, NARGS(args), in_items(g));
}

/* The average and adaptive kernels share one argument list: (dst, src, dt,
 * geometry), one work item per dst element. */
static ct_status pool_simple(ct_kernel_id kernel, const char *op, const ct_kview *dst,
                             const ct_kview *src, const ct_pool2d_geom *g, int64_t items) {
    CT_TRY(check_dtype(src, op));
    buf_arg d = buf_of(dst), s = buf_of(src);
    int32_t dt = src->dtype;
    ct_knn_pool pg = pool_of(g);
    ct_gpu_arg args[] = {BUF_ARGS(d), BUF_ARGS(s), CT_GPU_ARG(dt), CT_GPU_ARG(pg)};
    return launch_items(dst, kernel, args, NARGS(args), items);
}

static ct_status ct_gpu_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g) {
    return pool_simple(CT_KID(ct_k_nn_avg_pool2d), "avg_pool2d", out, in, g, out_items(g));
}

static ct_status ct_gpu_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                         const ct_pool2d_geom *g) {
    return pool_simple(CT_KID(ct_k_nn_avg_pool2d_backward), "avg_pool2d_backward", grad_in, grad_out, g,
                       in_items(g));
}

static ct_status ct_gpu_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in,
                                         const ct_pool2d_geom *g) {
    return pool_simple(CT_KID(ct_k_nn_adaptive_avg_pool2d), "adaptive_avg_pool2d", out, in, g,
                       out_items(g));
}

static ct_status ct_gpu_adaptive_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                                  const ct_pool2d_geom *g) {
    return pool_simple(CT_KID(ct_k_nn_adaptive_avg_pool2d_backward), "adaptive_avg_pool2d_backward",
                       grad_in, grad_out, g, in_items(g));
}

/* ---- batch norm ------------------------------------------------------------------------- */

static ct_status ct_gpu_batch_norm_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                              int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm"));
    buf_arg m = buf_of(mean), v = buf_of(var), x = buf_of(in);
    int32_t sdt = mean->dtype, dt = in->dtype;
    ct_gpu_arg args[] = {BUF_ARGS(m),    BUF_ARGS(v),   CT_GPU_ARG(sdt), BUF_ARGS(x),
                         CT_GPU_ARG(dt), CT_GPU_ARG(n), CT_GPU_ARG(c),   CT_GPU_ARG(s)};
    return launch_groups(in, CT_KID(ct_k_nn_bn_stats), args, NARGS(args), c);
}

static ct_status ct_gpu_batch_norm_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                              const ct_kview *invstd, const ct_kview *weight, const ct_kview *bias,
                              int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm"));
    buf_arg o = buf_of(out), x = buf_of(in), m = buf_of(mean), k = buf_of(invstd),
            w = buf_of(weight), b = buf_of(bias);
    int32_t dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL, has_b = bias != NULL;
    ct_gpu_arg args[] = {BUF_ARGS(o),       BUF_ARGS(x),     CT_GPU_ARG(dt),    BUF_ARGS(m),
                         BUF_ARGS(k),       BUF_ARGS(w),     CT_GPU_ARG(has_w), BUF_ARGS(b),
                         CT_GPU_ARG(has_b), CT_GPU_ARG(sdt), CT_GPU_ARG(n),     CT_GPU_ARG(c),
                         CT_GPU_ARG(s)};
    return launch_items(in, CT_KID(ct_k_nn_bn_apply), args, NARGS(args), n * c * s);
}

static ct_status ct_gpu_batch_norm_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                        const ct_kview *grad_out, const ct_kview *in,
                                        const ct_kview *mean, int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm_backward"));
    buf_arg a = buf_of(sum_dy), b = buf_of(sum_dy_xmu), g = buf_of(grad_out), x = buf_of(in),
            m = buf_of(mean);
    int32_t sdt = mean->dtype, dt = in->dtype;
    ct_gpu_arg args[] = {BUF_ARGS(a), BUF_ARGS(b),    CT_GPU_ARG(sdt), BUF_ARGS(g),   BUF_ARGS(x),
                         CT_GPU_ARG(dt), BUF_ARGS(m), CT_GPU_ARG(n),   CT_GPU_ARG(c), CT_GPU_ARG(s)};
    return launch_groups(in, CT_KID(ct_k_nn_bn_backward_reduce), args, NARGS(args), c);
}

static ct_status ct_gpu_batch_norm_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                       const ct_kview *in, const ct_kview *mean,
                                       const ct_kview *invstd, const ct_kview *weight,
                                       const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                       int64_t n, int64_t c, int64_t s, bool batch_stats) {
    CT_TRY(check_dtype(grad_out, "batch_norm_backward"));
    /* without batch statistics x, mean and the sums are unused: pass dy/invstd */
    buf_arg gi = buf_of(grad_in), g = buf_of(grad_out), x = buf_of(in ? in : grad_out),
            m = buf_of(mean ? mean : invstd), k = buf_of(invstd), w = buf_of(weight),
            a = buf_of(sum_dy ? sum_dy : invstd), b = buf_of(sum_dy_xmu ? sum_dy_xmu : invstd);
    int32_t dt = grad_out->dtype, sdt = invstd->dtype, has_w = weight != NULL, bs = batch_stats;
    ct_gpu_arg args[] = {BUF_ARGS(gi),    BUF_ARGS(g),   BUF_ARGS(x),   CT_GPU_ARG(dt),
                         BUF_ARGS(m),     BUF_ARGS(k),   BUF_ARGS(w),   CT_GPU_ARG(has_w),
                         BUF_ARGS(a),     BUF_ARGS(b),   CT_GPU_ARG(sdt), CT_GPU_ARG(n),
                         CT_GPU_ARG(c),   CT_GPU_ARG(s), CT_GPU_ARG(bs)};
    return launch_items(grad_out, CT_KID(ct_k_nn_bn_backward_apply), args, NARGS(args), n * c * s);
}

/* ---- layer norm ------------------------------------------------------------------------- */

static ct_status ct_gpu_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                                const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                                int64_t rows, int64_t cols, double eps) {
    CT_TRY(check_dtype(in, "layer_norm"));
    buf_arg o = buf_of(out), m = buf_of(mean), r = buf_of(rstd), x = buf_of(in), w = buf_of(weight),
            b = buf_of(bias);
    int32_t dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL, has_b = bias != NULL;
    ct_gpu_acc e;
    ct_gpu_arg args[] = {BUF_ARGS(o),       BUF_ARGS(m),      BUF_ARGS(r),       BUF_ARGS(x),
                         CT_GPU_ARG(dt),    BUF_ARGS(w),      CT_GPU_ARG(has_w), BUF_ARGS(b),
                         CT_GPU_ARG(has_b), CT_GPU_ARG(sdt),  CT_GPU_ARG(rows),  CT_GPU_ARG(cols),
                         ct_gpu_acc_arg(in, &e, eps)};
    return launch_groups(in, CT_KID(ct_k_nn_layer_norm), args, NARGS(args), rows);
}

static ct_status ct_gpu_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                         const ct_kview *in, const ct_kview *mean, const ct_kview *rstd,
                                         const ct_kview *weight, int64_t rows, int64_t cols) {
    CT_TRY(check_dtype(in, "layer_norm_backward"));
    buf_arg gi = buf_of(grad_in), g = buf_of(grad_out), x = buf_of(in), m = buf_of(mean),
            r = buf_of(rstd), w = buf_of(weight);
    int32_t dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL;
    ct_gpu_arg args[] = {BUF_ARGS(gi), BUF_ARGS(g),       BUF_ARGS(x),     CT_GPU_ARG(dt),
                         BUF_ARGS(m),  BUF_ARGS(r),       BUF_ARGS(w),     CT_GPU_ARG(has_w),
                         CT_GPU_ARG(sdt), CT_GPU_ARG(rows), CT_GPU_ARG(cols)};
    return launch_groups(in, CT_KID(ct_k_nn_layer_norm_backward), args, NARGS(args), rows);
}

static ct_status ct_gpu_layer_norm_backward_params(const ct_kview *grad_weight, const ct_kview *grad_bias,
                                                const ct_kview *grad_out, const ct_kview *in,
                                                const ct_kview *mean, const ct_kview *rstd, int64_t rows,
                                                int64_t cols) {
    CT_TRY(check_dtype(in, "layer_norm_backward"));
    buf_arg gw = buf_of(grad_weight), gb = buf_of(grad_bias), g = buf_of(grad_out), x = buf_of(in),
            m = buf_of(mean), r = buf_of(rstd);
    int32_t has_gw = grad_weight != NULL, has_gb = grad_bias != NULL, dt = in->dtype, sdt = mean->dtype;
    ct_gpu_arg args[] = {BUF_ARGS(gw), CT_GPU_ARG(has_gw), BUF_ARGS(gb),    CT_GPU_ARG(has_gb),
                         BUF_ARGS(g),  BUF_ARGS(x),        CT_GPU_ARG(dt),  BUF_ARGS(m),
                         BUF_ARGS(r),  CT_GPU_ARG(sdt),    CT_GPU_ARG(rows), CT_GPU_ARG(cols)};
    return launch_items(in, CT_KID(ct_k_nn_layer_norm_backward_params), args, NARGS(args), cols);
}

/* ---- dropout and embedding -------------------------------------------------------------- */

static ct_status ct_gpu_dropout_mask(const ct_kview *mask, uint64_t seed, uint64_t offset,
                                  uint32_t keep_threshold) {
    buf_arg m = buf_of(mask);
    int64_t n = ct_gpu_meta_of(mask).numel;
    ct_gpu_arg args[] = {BUF_ARGS(m), CT_GPU_ARG(n), CT_GPU_ARG(seed), CT_GPU_ARG(offset),
                         CT_GPU_ARG(keep_threshold)};
    return launch_items(mask, CT_KID(ct_k_nn_dropout_mask), args, NARGS(args), n);
}

static ct_status ct_gpu_masked_scale(const ct_kview *out, const ct_kview *in, const ct_kview *mask,
                                  double scale) {
    CT_TRY(check_dtype(in, "dropout"));
    buf_arg o = buf_of(out), x = buf_of(in), m = buf_of(mask);
    int64_t n = ct_gpu_meta_of(in).numel;
    int32_t dt = in->dtype;
    ct_gpu_acc sc;
    ct_gpu_arg args[] = {BUF_ARGS(o),   BUF_ARGS(x),    BUF_ARGS(m),
                         CT_GPU_ARG(n), CT_GPU_ARG(dt), ct_gpu_acc_arg(in, &sc, scale)};
    return launch_items(in, CT_KID(ct_k_nn_masked_scale), args, NARGS(args), n);
}

static ct_status ct_gpu_embedding_backward(const ct_kview *grad_weight, const ct_kview *grad_out,
                                        const ct_kview *offsets, const ct_kview *positions,
                                        int64_t padding_idx) {
    CT_TRY(check_dtype(grad_out, "embedding_backward"));
    buf_arg gw = buf_of(grad_weight), g = buf_of(grad_out), of = buf_of(offsets), p = buf_of(positions);
    int32_t dt = grad_out->dtype;
    int64_t v = grad_weight->shape[0], d = grad_weight->shape[1];
    ct_gpu_arg args[] = {BUF_ARGS(gw),   BUF_ARGS(g),   BUF_ARGS(of),  BUF_ARGS(p),
                         CT_GPU_ARG(dt), CT_GPU_ARG(v), CT_GPU_ARG(d), CT_GPU_ARG(padding_idx)};
    return launch_items(grad_weight, CT_KID(ct_k_nn_embedding_backward), args, NARGS(args), v * d);
}

/* ---- the table ------------------------------------------------------------------------------ */

const struct ct_backend_nn ct_gpu_nn_ops = {
    .max_pool2d = ct_gpu_max_pool2d,
    .max_pool2d_backward = ct_gpu_max_pool2d_backward,
    .avg_pool2d = ct_gpu_avg_pool2d,
    .avg_pool2d_backward = ct_gpu_avg_pool2d_backward,
    .adaptive_avg_pool2d = ct_gpu_adaptive_avg_pool2d,
    .adaptive_avg_pool2d_backward = ct_gpu_adaptive_avg_pool2d_backward,
    .batch_norm_stats = ct_gpu_batch_norm_stats,
    .batch_norm_apply = ct_gpu_batch_norm_apply,
    .batch_norm_backward_reduce = ct_gpu_batch_norm_backward_reduce,
    .batch_norm_backward_apply = ct_gpu_batch_norm_backward_apply,
    .layer_norm = ct_gpu_layer_norm,
    .layer_norm_backward = ct_gpu_layer_norm_backward,
    .layer_norm_backward_params = ct_gpu_layer_norm_backward_params,
    .dropout_mask = ct_gpu_dropout_mask,
    .masked_scale = ct_gpu_masked_scale,
    .embedding_backward = ct_gpu_embedding_backward,
};
