/*
 * cl_nn.c — the OpenCL backend's nn table (ct_cl_nn_ops): launchers for the
 * kernels of src/kernels/nn.kh, one per entry of struct ct_backend_nn
 * (src/core/backend_nn.h).
 *
 * Every view is contiguous (the contract), so kernels receive buffers with
 * element offsets instead of full metadata. Elementwise kernels run one
 * work item per element; per-channel (batch norm) and per-row (layer norm)
 * statistics run one work-group per channel or row, with groups looping
 * when there are more channels than groups. Nothing waits.
 */
#include <string.h>

#include "cl_ops.h"
#include "core/backend_nn.h"

/* Work-groups of the group kernels (the kernels' local arrays hold 256). */
#define GROUP_CAP 256
/* The group kernels loop over channels/rows, so no launch needs more. */
#define MAX_GROUPS 4096

/* Pooling geometry as the kernels take it (ct_knn_pool in nn.kh). */
typedef struct ct_cl_nn_pool {
    cl_long planes, in_h, in_w, out_h, out_w;
    cl_long k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w;
    cl_long count_include_pad, divisor_override;
} ct_cl_nn_pool;

static ct_cl_nn_pool pool_of(const ct_pool2d_geom *g) {
    ct_cl_nn_pool p = {g->planes,     g->in_size[0],  g->in_size[1],  g->out_size[0],
                       g->out_size[1], g->kernel[0],  g->kernel[1],   g->stride[0],
                       g->stride[1],  g->padding[0],  g->padding[1],  g->dilation[0],
                       g->dilation[1], g->count_include_pad, g->divisor_override};
    return p;
}

/* A view's buffer and element offset as kernel arguments; NULL views give a
 * NULL buffer (with a has_ flag beside it in the kernel). */
typedef struct buf_arg {
    cl_mem mem;
    cl_long off;
} buf_arg;

static buf_arg buf_of(const ct_kview *v) {
    buf_arg b = {v ? (cl_mem)v->data : NULL, v ? (cl_long)v->offset : 0};
    return b;
}

#define BUF_ARGS(b) CT_CLOPS_ARG((b).mem), CT_CLOPS_ARG((b).off)
#define NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The float64 check every entry starts with. */
static ct_status check_dtype(const ct_kview *v, const char *op) {
    return ct_clops_check_fp64(v->device, v->dtype, op);
}

/* A k_acc scalar argument: double on devices with fp64, else float. */
typedef struct acc_arg {
    cl_double d;
    cl_float f;
} acc_arg;
static ct_clops_arg acc_of(int dev, acc_arg *a, double v) {
    a->d = v;
    a->f = (cl_float)v;
    return ct_clops_has_fp64(dev) ? CT_CLOPS_ARG(a->d) : CT_CLOPS_ARG(a->f);
}

/* Launch a one-work-group-per-item kernel over `items` items. */
static ct_status launch_groups(int dev, const char *name, const ct_clops_arg *args, int nargs,
                               int64_t items) {
    size_t local;
    CT_TRY(ct_clops_group_size(dev, name, GROUP_CAP, &local));
    size_t groups = (size_t)(items < MAX_GROUPS ? items : MAX_GROUPS);
    return ct_clops_launch(dev, name, args, nargs, groups * local, local);
}

/* ---- pooling ------------------------------------------------------------------------ */

static ct_status cl_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                               const ct_pool2d_geom *g) {
    CT_TRY(check_dtype(in, "max_pool2d"));
    buf_arg o = buf_of(out), x = buf_of(in), ix = buf_of(indices);
    cl_int has_ind = indices != NULL, dt = in->dtype;
    ct_cl_nn_pool pg = pool_of(g);
    ct_clops_arg args[] = {BUF_ARGS(o), BUF_ARGS(ix), CT_CLOPS_ARG(has_ind), BUF_ARGS(x),
                           CT_CLOPS_ARG(dt), CT_CLOPS_ARG(pg)};
    return ct_clops_launch(out->device, "ct_k_nn_max_pool2d", args, NARGS(args),
                           (size_t)(g->planes * g->out_size[0] * g->out_size[1]), 0);
}

static ct_status cl_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                        const ct_kview *indices, const ct_pool2d_geom *g) {
    CT_TRY(check_dtype(grad_out, "max_pool2d_backward"));
    buf_arg gi = buf_of(grad_in), go = buf_of(grad_out), ix = buf_of(indices);
    cl_int dt = grad_out->dtype;
    ct_cl_nn_pool pg = pool_of(g);
    ct_clops_arg args[] = {BUF_ARGS(gi), BUF_ARGS(go), BUF_ARGS(ix), CT_CLOPS_ARG(dt),
                           CT_CLOPS_ARG(pg)};
    return ct_clops_launch(grad_in->device, "ct_k_nn_max_pool2d_backward", args, NARGS(args),
                           (size_t)(g->planes * g->in_size[0] * g->in_size[1]), 0);
}

/* The average and adaptive kernels share one argument list: (dst, src, dt,
 * geometry), one work item per dst element. */
static ct_status pool_simple(const char *kernel, const char *op, const ct_kview *dst,
                             const ct_kview *src, const ct_pool2d_geom *g, int64_t items) {
    CT_TRY(check_dtype(src, op));
    buf_arg d = buf_of(dst), s = buf_of(src);
    cl_int dt = src->dtype;
    ct_cl_nn_pool pg = pool_of(g);
    ct_clops_arg args[] = {BUF_ARGS(d), BUF_ARGS(s), CT_CLOPS_ARG(dt), CT_CLOPS_ARG(pg)};
    return ct_clops_launch(dst->device, kernel, args, NARGS(args), (size_t)items, 0);
}

static int64_t out_items(const ct_pool2d_geom *g) {
    return g->planes * g->out_size[0] * g->out_size[1];
}
static int64_t in_items(const ct_pool2d_geom *g) {
    return g->planes * g->in_size[0] * g->in_size[1];
}

static ct_status cl_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g) {
    return pool_simple("ct_k_nn_avg_pool2d", "avg_pool2d", out, in, g, out_items(g));
}

static ct_status cl_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                        const ct_pool2d_geom *g) {
    return pool_simple("ct_k_nn_avg_pool2d_backward", "avg_pool2d_backward", grad_in, grad_out, g,
                       in_items(g));
}

static ct_status cl_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in,
                                        const ct_pool2d_geom *g) {
    return pool_simple("ct_k_nn_adaptive_avg_pool2d", "adaptive_avg_pool2d", out, in, g,
                       out_items(g));
}

static ct_status cl_adaptive_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                                 const ct_pool2d_geom *g) {
    return pool_simple("ct_k_nn_adaptive_avg_pool2d_backward", "adaptive_avg_pool2d_backward",
                       grad_in, grad_out, g, in_items(g));
}

/* ---- batch norm ------------------------------------------------------------------------- */

static ct_status cl_bn_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                             int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm"));
    buf_arg m = buf_of(mean), v = buf_of(var), x = buf_of(in);
    cl_int sdt = mean->dtype, dt = in->dtype;
    cl_long ln = n, lc = c, ls = s;
    ct_clops_arg args[] = {BUF_ARGS(m),      BUF_ARGS(v),      CT_CLOPS_ARG(sdt),
                           BUF_ARGS(x),      CT_CLOPS_ARG(dt), CT_CLOPS_ARG(ln),
                           CT_CLOPS_ARG(lc), CT_CLOPS_ARG(ls)};
    return launch_groups(in->device, "ct_k_nn_bn_stats", args, NARGS(args), c);
}

static ct_status cl_bn_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                             const ct_kview *invstd, const ct_kview *weight, const ct_kview *bias,
                             int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm"));
    buf_arg o = buf_of(out), x = buf_of(in), m = buf_of(mean), k = buf_of(invstd),
            w = buf_of(weight), b = buf_of(bias);
    cl_int dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL, has_b = bias != NULL;
    cl_long ln = n, lc = c, ls = s;
    ct_clops_arg args[] = {BUF_ARGS(o),         BUF_ARGS(x),      CT_CLOPS_ARG(dt),
                           BUF_ARGS(m),         BUF_ARGS(k),      BUF_ARGS(w),
                           CT_CLOPS_ARG(has_w), BUF_ARGS(b),      CT_CLOPS_ARG(has_b),
                           CT_CLOPS_ARG(sdt),   CT_CLOPS_ARG(ln), CT_CLOPS_ARG(lc),
                           CT_CLOPS_ARG(ls)};
    return ct_clops_launch(in->device, "ct_k_nn_bn_apply", args, NARGS(args), (size_t)(n * c * s), 0);
}

static ct_status cl_bn_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                       const ct_kview *grad_out, const ct_kview *in,
                                       const ct_kview *mean, int64_t n, int64_t c, int64_t s) {
    CT_TRY(check_dtype(in, "batch_norm_backward"));
    buf_arg a = buf_of(sum_dy), b = buf_of(sum_dy_xmu), g = buf_of(grad_out), x = buf_of(in),
            m = buf_of(mean);
    cl_int sdt = mean->dtype, dt = in->dtype;
    cl_long ln = n, lc = c, ls = s;
    ct_clops_arg args[] = {BUF_ARGS(a), BUF_ARGS(b),      CT_CLOPS_ARG(sdt), BUF_ARGS(g),
                           BUF_ARGS(x), CT_CLOPS_ARG(dt), BUF_ARGS(m),       CT_CLOPS_ARG(ln),
                           CT_CLOPS_ARG(lc), CT_CLOPS_ARG(ls)};
    return launch_groups(in->device, "ct_k_nn_bn_backward_reduce", args, NARGS(args), c);
}

static ct_status cl_bn_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                      const ct_kview *in, const ct_kview *mean,
                                      const ct_kview *invstd, const ct_kview *weight,
                                      const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                      int64_t n, int64_t c, int64_t s, bool batch_stats) {
    CT_TRY(check_dtype(grad_out, "batch_norm_backward"));
    /* without batch statistics x, mean and the sums are unused: pass dy/invstd */
    buf_arg gi = buf_of(grad_in), g = buf_of(grad_out), x = buf_of(in ? in : grad_out),
            m = buf_of(mean ? mean : invstd), k = buf_of(invstd), w = buf_of(weight),
            a = buf_of(sum_dy ? sum_dy : invstd), b = buf_of(sum_dy_xmu ? sum_dy_xmu : invstd);
    cl_int dt = grad_out->dtype, sdt = invstd->dtype, has_w = weight != NULL, bs = batch_stats;
    cl_long ln = n, lc = c, ls = s;
    ct_clops_arg args[] = {BUF_ARGS(gi),      BUF_ARGS(g),        BUF_ARGS(x),      CT_CLOPS_ARG(dt),
                           BUF_ARGS(m),       BUF_ARGS(k),        BUF_ARGS(w),      CT_CLOPS_ARG(has_w),
                           BUF_ARGS(a),       BUF_ARGS(b),        CT_CLOPS_ARG(sdt), CT_CLOPS_ARG(ln),
                           CT_CLOPS_ARG(lc),  CT_CLOPS_ARG(ls),   CT_CLOPS_ARG(bs)};
    return ct_clops_launch(grad_out->device, "ct_k_nn_bn_backward_apply", args, NARGS(args),
                           (size_t)(n * c * s), 0);
}

/* ---- layer norm ------------------------------------------------------------------------- */

static ct_status cl_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                               const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                               int64_t rows, int64_t cols, double eps) {
    CT_TRY(check_dtype(in, "layer_norm"));
    const int dev = in->device;
    buf_arg o = buf_of(out), m = buf_of(mean), r = buf_of(rstd), x = buf_of(in), w = buf_of(weight),
            b = buf_of(bias);
    cl_int dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL, has_b = bias != NULL;
    cl_long lr = rows, lc = cols;
    acc_arg e;
    ct_clops_arg args[] = {BUF_ARGS(o),         BUF_ARGS(m),      BUF_ARGS(r),
                           BUF_ARGS(x),         CT_CLOPS_ARG(dt), BUF_ARGS(w),
                           CT_CLOPS_ARG(has_w), BUF_ARGS(b),      CT_CLOPS_ARG(has_b),
                           CT_CLOPS_ARG(sdt),   CT_CLOPS_ARG(lr), CT_CLOPS_ARG(lc),
                           acc_of(dev, &e, eps)};
    return launch_groups(dev, "ct_k_nn_layer_norm", args, NARGS(args), rows);
}

static ct_status cl_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                        const ct_kview *in, const ct_kview *mean,
                                        const ct_kview *rstd, const ct_kview *weight,
                                        int64_t rows, int64_t cols) {
    CT_TRY(check_dtype(in, "layer_norm_backward"));
    buf_arg gi = buf_of(grad_in), g = buf_of(grad_out), x = buf_of(in), m = buf_of(mean),
            r = buf_of(rstd), w = buf_of(weight);
    cl_int dt = in->dtype, sdt = mean->dtype, has_w = weight != NULL;
    cl_long lr = rows, lc = cols;
    ct_clops_arg args[] = {BUF_ARGS(gi), BUF_ARGS(g),         BUF_ARGS(x),       CT_CLOPS_ARG(dt),
                           BUF_ARGS(m),  BUF_ARGS(r),         BUF_ARGS(w),       CT_CLOPS_ARG(has_w),
                           CT_CLOPS_ARG(sdt), CT_CLOPS_ARG(lr), CT_CLOPS_ARG(lc)};
    return launch_groups(in->device, "ct_k_nn_layer_norm_backward", args, NARGS(args), rows);
}

static ct_status cl_layer_norm_backward_params(const ct_kview *grad_weight,
                                               const ct_kview *grad_bias,
                                               const ct_kview *grad_out, const ct_kview *in,
                                               const ct_kview *mean, const ct_kview *rstd,
                                               int64_t rows, int64_t cols) {
    CT_TRY(check_dtype(in, "layer_norm_backward"));
    buf_arg gw = buf_of(grad_weight), gb = buf_of(grad_bias), g = buf_of(grad_out), x = buf_of(in),
            m = buf_of(mean), r = buf_of(rstd);
    cl_int has_gw = grad_weight != NULL, has_gb = grad_bias != NULL, dt = in->dtype,
           sdt = mean->dtype;
    cl_long lr = rows, lc = cols;
    ct_clops_arg args[] = {BUF_ARGS(gw), CT_CLOPS_ARG(has_gw), BUF_ARGS(gb), CT_CLOPS_ARG(has_gb),
                           BUF_ARGS(g),  BUF_ARGS(x),          CT_CLOPS_ARG(dt), BUF_ARGS(m),
                           BUF_ARGS(r),  CT_CLOPS_ARG(sdt),    CT_CLOPS_ARG(lr), CT_CLOPS_ARG(lc)};
    return ct_clops_launch(in->device, "ct_k_nn_layer_norm_backward_params", args, NARGS(args),
                           (size_t)cols, 0);
}

/* ---- dropout and embedding -------------------------------------------------------------- */

static ct_status cl_dropout_mask(const ct_kview *mask, uint64_t seed, uint64_t offset,
                                 uint32_t keep_threshold) {
    buf_arg m = buf_of(mask);
    cl_long n = ct_clops_meta(mask).numel;
    cl_ulong s = seed, o = offset;
    cl_uint t = keep_threshold;
    ct_clops_arg args[] = {BUF_ARGS(m), CT_CLOPS_ARG(n), CT_CLOPS_ARG(s), CT_CLOPS_ARG(o),
                           CT_CLOPS_ARG(t)};
    return ct_clops_launch(mask->device, "ct_k_nn_dropout_mask", args, NARGS(args), (size_t)n, 0);
}

static ct_status cl_masked_scale(const ct_kview *out, const ct_kview *in, const ct_kview *mask,
                                 double scale) {
    CT_TRY(check_dtype(in, "dropout"));
    const int dev = in->device;
    buf_arg o = buf_of(out), x = buf_of(in), m = buf_of(mask);
    cl_long n = ct_clops_meta(in).numel;
    cl_int dt = in->dtype;
    acc_arg sc;
    ct_clops_arg args[] = {BUF_ARGS(o),     BUF_ARGS(x),      BUF_ARGS(m),
                           CT_CLOPS_ARG(n), CT_CLOPS_ARG(dt), acc_of(dev, &sc, scale)};
    return ct_clops_launch(dev, "ct_k_nn_masked_scale", args, NARGS(args), (size_t)n, 0);
}

static ct_status cl_embedding_backward(const ct_kview *grad_weight, const ct_kview *grad_out,
                                       const ct_kview *offsets, const ct_kview *positions,
                                       int64_t padding_idx) {
    CT_TRY(check_dtype(grad_out, "embedding_backward"));
    buf_arg gw = buf_of(grad_weight), g = buf_of(grad_out), of = buf_of(offsets),
            p = buf_of(positions);
    cl_int dt = grad_out->dtype;
    cl_long v = grad_weight->shape[0], d = grad_weight->shape[1], pad = padding_idx;
    ct_clops_arg args[] = {BUF_ARGS(gw),     BUF_ARGS(g),     BUF_ARGS(of),    BUF_ARGS(p),
                           CT_CLOPS_ARG(dt), CT_CLOPS_ARG(v), CT_CLOPS_ARG(d), CT_CLOPS_ARG(pad)};
    return ct_clops_launch(grad_weight->device, "ct_k_nn_embedding_backward", args, NARGS(args),
                           (size_t)(v * d), 0);
}

/* ---- the table ------------------------------------------------------------------------------ */

const struct ct_backend_nn ct_cl_nn_ops = {
    .max_pool2d = cl_max_pool2d,
    .max_pool2d_backward = cl_max_pool2d_backward,
    .avg_pool2d = cl_avg_pool2d,
    .avg_pool2d_backward = cl_avg_pool2d_backward,
    .adaptive_avg_pool2d = cl_adaptive_avg_pool2d,
    .adaptive_avg_pool2d_backward = cl_adaptive_avg_pool2d_backward,
    .batch_norm_stats = cl_bn_stats,
    .batch_norm_apply = cl_bn_apply,
    .batch_norm_backward_reduce = cl_bn_backward_reduce,
    .batch_norm_backward_apply = cl_bn_backward_apply,
    .layer_norm = cl_layer_norm,
    .layer_norm_backward = cl_layer_norm_backward,
    .layer_norm_backward_params = cl_layer_norm_backward_params,
    .dropout_mask = cl_dropout_mask,
    .masked_scale = cl_masked_scale,
    .embedding_backward = cl_embedding_backward,
};
