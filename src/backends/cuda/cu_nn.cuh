/*
 * cu_nn.cuh — the CUDA backend's portable-kernel tables of the
 * convolution, nn and loss families (ct_cu_conv_kernels, ct_cu_nn_kernels,
 * ct_cu_loss_kernels): launchers of the kernels of src/kernels/conv.kh,
 * nn.kh and loss.kh, included once, by cu_kernels.cu, after the kernels.
 *
 * Each launcher mirrors its OpenCL twin (src/backends/opencl/cl_conv.c,
 * cl_nn.c, cl_loss.c) line by line: the same checks, the same kernel
 * arguments and the same geometry: one thread per element (per row for the
 * class losses), one block per channel or row (looping when there are
 * more) for the statistics kernels. Everything is enqueued on the calling
 * thread's current stream of the device and nothing waits, except
 * class_forward, which must report a target out of range as the CPU does:
 * its kernel sets a flag in a small device buffer that the host copies back
 * on the stream and waits for. cu_dnn.c wraps the conv and nn tables with
 * cuDNN versions of some entries and falls back to these.
 *
 * Every nn view is contiguous (the contracts of src/core/backend_conv.h,
 * backend_nn.h and backend_loss.h), so kernels receive (device pointer,
 * element offset) pairs instead of full metadata. Kernel arguments are
 * converted to the kernels' parameter types by the launch itself (k_long,
 * int, double); CUDA devices always have fp64, so k_acc scalars are doubles
 * and OpenCL's fp64 checks have nothing to check here.
 *
 * The tables are built by constexpr functions: still initialised at compile
 * time, and members added to the structs later start as NULL without a
 * missing-initializer warning.
 */
#include <string.h>

#include "core/backend_conv.h"
#include "core/backend_nn.h"
#include "core/backend_loss.h"

/* ---- launch helpers ------------------------------------------------------------------- */

/* The calling thread's current stream of dev (which also becomes the
 * thread's CUDA device). ct_cu_stream gives NULL only with an error set. */
static ct_status cunn_stream(int dev, cudaStream_t *s) {
    *s = ct_cu_stream(dev);
    if (*s) return CT_OK;
    ct_status st = ct_last_status();
    return st != CT_OK ? st : ct_error_set(CT_ERR_INTERNAL, "cuda:%d: no current stream", dev);
}

/* One thread per item in blocks of CT_CU_THREADS (ct_cl_launch_1d); the
 * kernels check their index against the count. Nothing to do for no items. */
template <typename... P, typename... A>
static ct_status cunn_launch(void (*kernel)(P...), const char *name, int dev, int64_t items,
                             A... args) {
    if (items <= 0) return CT_OK;
    cudaStream_t s;
    CT_TRY(cunn_stream(dev, &s));
    kernel<<<ct_cu_blocks(items), CT_CU_THREADS, 0, s>>>(args...);
    return ct_cu_launched(name);
}
#define CUNN_LAUNCH(kernel, dev, items, ...) \
    cunn_launch(kernel, #kernel, dev, (int64_t)(items), __VA_ARGS__)

/* Blocks of the group kernels: their shared arrays hold NN_MAX_GROUP
 * values and their trees need a power of two. They loop over channels or
 * rows, so no launch needs more than CUNN_MAX_GROUPS blocks. */
#define CUNN_GROUP_CAP NN_MAX_GROUP
#define CUNN_MAX_GROUPS 4096

/* One block per item (launch_groups in cl_nn.c): the largest power of two
 * threads, at most CUNN_GROUP_CAP, that the kernel can run with. The
 * kernels' shared memory is static, so no dynamic shared memory. */
template <typename... P, typename... A>
static ct_status cunn_launch_groups(void (*kernel)(P...), const char *name, int dev,
                                    int64_t items, A... args) {
    if (items <= 0) return CT_OK;
    cudaStream_t s;
    CT_TRY(cunn_stream(dev, &s));
    cudaFuncAttributes attr;
    CT_CU_TRY(cudaFuncGetAttributes(&attr, kernel));
    int limit = attr.maxThreadsPerBlock < CUNN_GROUP_CAP ? attr.maxThreadsPerBlock : CUNN_GROUP_CAP;
    int threads = 1;
    while (threads * 2 <= limit) threads *= 2;
    unsigned blocks = (unsigned)(items < CUNN_MAX_GROUPS ? items : CUNN_MAX_GROUPS);
    kernel<<<blocks, threads, 0, s>>>(args...);
    return ct_cu_launched(name);
}
#define CUNN_LAUNCH_GROUPS(kernel, dev, items, ...) \
    cunn_launch_groups(kernel, #kernel, dev, (int64_t)(items), __VA_ARGS__)

/* A view's device pointer (NULL for an absent view: the kernels then get a
 * has_ flag of 0 beside it) and its element offset (0 when absent). */
static k_uchar *cunn_ptr(const ct_kview *v) { return v ? (k_uchar *)v->data : NULL; }
static k_long *cunn_lptr(const ct_kview *v) { return v ? (k_long *)v->data : NULL; }
static k_long cunn_off(const ct_kview *v) { return v ? (k_long)v->offset : 0; }

static int64_t cunn_numel(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* ---- convolution columns (cl_conv.c) ----------------------------------------------------- */

static ct_kconv cunn_kconv(const ct_conv2d_geom *g, const ct_kview *im, const ct_kview *cols) {
    ct_kconv k;
    memset(&k, 0, sizeof k);
    k.batch = g->batch, k.channels = g->channels, k.in_h = g->in_size[0], k.in_w = g->in_size[1];
    k.k_h = g->kernel[0], k.k_w = g->kernel[1];
    k.stride_h = g->stride[0], k.stride_w = g->stride[1];
    k.pad_h = g->padding[0], k.pad_w = g->padding[1];
    k.dil_h = g->dilation[0], k.dil_w = g->dilation[1];
    k.out_h = g->out_size[0], k.out_w = g->out_size[1];
    k.im_off = im->offset;
    k.im_sn = im->strides[0], k.im_sc = im->strides[1];
    k.im_sh = im->strides[2], k.im_sw = im->strides[3];
    k.cols_off = cols->offset;
    k.dtype = im->dtype;
    return k;
}

static ct_status cunn_im2col(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *g) {
    const int64_t n = cunn_numel(cols);
    if (n == 0) return CT_OK;
    ct_kconv k = cunn_kconv(g, im, cols);
    return CUNN_LAUNCH(ct_k_im2col, cols->device, n, cunn_ptr(cols), cunn_ptr(im), k);
}

static ct_status cunn_col2im(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *g) {
    CT_CHECK_STATUS(im->dtype == CT_FLOAT32 || im->dtype == CT_FLOAT64, CT_ERR_DTYPE,
                    "col2im: not implemented for '%s' on cuda", ct_dtype_name(im->dtype));
    const int64_t n = cunn_numel(im);
    if (n == 0) return CT_OK;
    ct_kconv k = cunn_kconv(g, im, cols);
    return CUNN_LAUNCH(ct_k_col2im, im->device, n, cunn_ptr(im), cunn_ptr(cols), k);
}

static constexpr struct ct_backend_conv cunn_conv_table(void) {
    struct ct_backend_conv t{};
    /* as OpenCL on GPUs: few large launches and GEMMs, 64 MiB of float32
     * per column matrix */
    t.cols_budget = (int64_t)1 << 24;
    t.im2col = cunn_im2col;
    t.col2im = cunn_col2im;
    return t;
}
extern "C" const struct ct_backend_conv ct_cu_conv_kernels = cunn_conv_table();

/* ---- pooling (cl_nn.c) ------------------------------------------------------------------- */

static ct_knn_pool cunn_pool(const ct_pool2d_geom *g) {
    ct_knn_pool p;
    memset(&p, 0, sizeof p);
    p.planes = g->planes, p.in_h = g->in_size[0], p.in_w = g->in_size[1];
    p.out_h = g->out_size[0], p.out_w = g->out_size[1];
    p.k_h = g->kernel[0], p.k_w = g->kernel[1], p.s_h = g->stride[0], p.s_w = g->stride[1];
    p.p_h = g->padding[0], p.p_w = g->padding[1], p.d_h = g->dilation[0], p.d_w = g->dilation[1];
    p.count_include_pad = g->count_include_pad, p.divisor_override = g->divisor_override;
    return p;
}

static int64_t cunn_out_items(const ct_pool2d_geom *g) {
    return g->planes * g->out_size[0] * g->out_size[1];
}
static int64_t cunn_in_items(const ct_pool2d_geom *g) {
    return g->planes * g->in_size[0] * g->in_size[1];
}

static ct_status cunn_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                                 const ct_pool2d_geom *g) {
    return CUNN_LAUNCH(ct_k_nn_max_pool2d, out->device, cunn_out_items(g), cunn_ptr(out),
                       cunn_off(out), cunn_lptr(indices), cunn_off(indices), (int)(indices != NULL),
                       cunn_ptr(in), cunn_off(in), (int)in->dtype, cunn_pool(g));
}

static ct_status cunn_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                          const ct_kview *indices, const ct_pool2d_geom *g) {
    return CUNN_LAUNCH(ct_k_nn_max_pool2d_backward, grad_in->device, cunn_in_items(g),
                       cunn_ptr(grad_in), cunn_off(grad_in), cunn_ptr(grad_out),
                       cunn_off(grad_out), cunn_lptr(indices), cunn_off(indices),
                       (int)grad_out->dtype, cunn_pool(g));
}

/* The average and adaptive kernels share one argument list: (dst, src, dt,
 * geometry), one thread per dst element. */
typedef void (*cunn_pool_kernel)(k_uchar *, k_long, const k_uchar *, k_long, int, ct_knn_pool);

static ct_status cunn_pool_simple(cunn_pool_kernel kernel, const char *name, const ct_kview *dst,
                                  const ct_kview *src, const ct_pool2d_geom *g, int64_t items) {
    return cunn_launch(kernel, name, dst->device, items, cunn_ptr(dst), cunn_off(dst),
                       cunn_ptr(src), cunn_off(src), (int)src->dtype, cunn_pool(g));
}

static ct_status cunn_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g) {
    return cunn_pool_simple(ct_k_nn_avg_pool2d, "ct_k_nn_avg_pool2d", out, in, g,
                            cunn_out_items(g));
}

static ct_status cunn_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                          const ct_pool2d_geom *g) {
    return cunn_pool_simple(ct_k_nn_avg_pool2d_backward, "ct_k_nn_avg_pool2d_backward", grad_in,
                            grad_out, g, cunn_in_items(g));
}

static ct_status cunn_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in,
                                          const ct_pool2d_geom *g) {
    return cunn_pool_simple(ct_k_nn_adaptive_avg_pool2d, "ct_k_nn_adaptive_avg_pool2d", out, in,
                            g, cunn_out_items(g));
}

static ct_status cunn_adaptive_avg_pool2d_backward(const ct_kview *grad_in,
                                                   const ct_kview *grad_out,
                                                   const ct_pool2d_geom *g) {
    return cunn_pool_simple(ct_k_nn_adaptive_avg_pool2d_backward,
                            "ct_k_nn_adaptive_avg_pool2d_backward", grad_in, grad_out, g,
                            cunn_in_items(g));
}

/* ---- batch norm -------------------------------------------------------------------------- */

static ct_status cunn_bn_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                               int64_t n, int64_t c, int64_t s) {
    return CUNN_LAUNCH_GROUPS(ct_k_nn_bn_stats, in->device, c, cunn_ptr(mean), cunn_off(mean),
                              cunn_ptr(var), cunn_off(var), (int)mean->dtype, cunn_ptr(in),
                              cunn_off(in), (int)in->dtype, n, c, s);
}

static ct_status cunn_bn_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                               const ct_kview *invstd, const ct_kview *weight,
                               const ct_kview *bias, int64_t n, int64_t c, int64_t s) {
    return CUNN_LAUNCH(ct_k_nn_bn_apply, in->device, n * c * s, cunn_ptr(out), cunn_off(out),
                       cunn_ptr(in), cunn_off(in), (int)in->dtype, cunn_ptr(mean), cunn_off(mean),
                       cunn_ptr(invstd), cunn_off(invstd), cunn_ptr(weight), cunn_off(weight),
                       (int)(weight != NULL), cunn_ptr(bias), cunn_off(bias), (int)(bias != NULL),
                       (int)mean->dtype, n, c, s);
}

static ct_status cunn_bn_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                         const ct_kview *grad_out, const ct_kview *in,
                                         const ct_kview *mean, int64_t n, int64_t c, int64_t s) {
    return CUNN_LAUNCH_GROUPS(ct_k_nn_bn_backward_reduce, in->device, c, cunn_ptr(sum_dy),
                              cunn_off(sum_dy), cunn_ptr(sum_dy_xmu), cunn_off(sum_dy_xmu),
                              (int)mean->dtype, cunn_ptr(grad_out), cunn_off(grad_out),
                              cunn_ptr(in), cunn_off(in), (int)in->dtype, cunn_ptr(mean),
                              cunn_off(mean), n, c, s);
}

static ct_status cunn_bn_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                        const ct_kview *in, const ct_kview *mean,
                                        const ct_kview *invstd, const ct_kview *weight,
                                        const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                        int64_t n, int64_t c, int64_t s, bool batch_stats) {
    /* without batch statistics x, mean and the sums are unused: pass dy/invstd */
    const ct_kview *x = in ? in : grad_out, *m = mean ? mean : invstd;
    const ct_kview *a = sum_dy ? sum_dy : invstd, *b = sum_dy_xmu ? sum_dy_xmu : invstd;
    return CUNN_LAUNCH(ct_k_nn_bn_backward_apply, grad_out->device, n * c * s, cunn_ptr(grad_in),
                       cunn_off(grad_in), cunn_ptr(grad_out), cunn_off(grad_out), cunn_ptr(x),
                       cunn_off(x), (int)grad_out->dtype, cunn_ptr(m), cunn_off(m),
                       cunn_ptr(invstd), cunn_off(invstd), cunn_ptr(weight), cunn_off(weight),
                       (int)(weight != NULL), cunn_ptr(a), cunn_off(a), cunn_ptr(b), cunn_off(b),
                       (int)invstd->dtype, n, c, s, (int)batch_stats);
}

/* ---- layer norm -------------------------------------------------------------------------- */

static ct_status cunn_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                                 const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                                 int64_t rows, int64_t cols, double eps) {
    return CUNN_LAUNCH_GROUPS(ct_k_nn_layer_norm, in->device, rows, cunn_ptr(out), cunn_off(out),
                              cunn_ptr(mean), cunn_off(mean), cunn_ptr(rstd), cunn_off(rstd),
                              cunn_ptr(in), cunn_off(in), (int)in->dtype, cunn_ptr(weight),
                              cunn_off(weight), (int)(weight != NULL), cunn_ptr(bias),
                              cunn_off(bias), (int)(bias != NULL), (int)mean->dtype, rows, cols,
                              eps);
}

static ct_status cunn_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                          const ct_kview *in, const ct_kview *mean,
                                          const ct_kview *rstd, const ct_kview *weight,
                                          int64_t rows, int64_t cols) {
    return CUNN_LAUNCH_GROUPS(ct_k_nn_layer_norm_backward, in->device, rows, cunn_ptr(grad_in),
                              cunn_off(grad_in), cunn_ptr(grad_out), cunn_off(grad_out),
                              cunn_ptr(in), cunn_off(in), (int)in->dtype, cunn_ptr(mean),
                              cunn_off(mean), cunn_ptr(rstd), cunn_off(rstd), cunn_ptr(weight),
                              cunn_off(weight), (int)(weight != NULL), (int)mean->dtype, rows,
                              cols);
}

static ct_status cunn_layer_norm_backward_params(const ct_kview *grad_weight,
                                                 const ct_kview *grad_bias,
                                                 const ct_kview *grad_out, const ct_kview *in,
                                                 const ct_kview *mean, const ct_kview *rstd,
                                                 int64_t rows, int64_t cols) {
    return CUNN_LAUNCH(ct_k_nn_layer_norm_backward_params, in->device, cols,
                       cunn_ptr(grad_weight), cunn_off(grad_weight), (int)(grad_weight != NULL),
                       cunn_ptr(grad_bias), cunn_off(grad_bias), (int)(grad_bias != NULL),
                       cunn_ptr(grad_out), cunn_off(grad_out), cunn_ptr(in), cunn_off(in),
                       (int)in->dtype, cunn_ptr(mean), cunn_off(mean), cunn_ptr(rstd),
                       cunn_off(rstd), (int)mean->dtype, rows, cols);
}

/* ---- dropout and embedding --------------------------------------------------------------- */

static ct_status cunn_dropout_mask(const ct_kview *mask, uint64_t seed, uint64_t offset,
                                   uint32_t keep_threshold) {
    const int64_t n = cunn_numel(mask);
    return CUNN_LAUNCH(ct_k_nn_dropout_mask, mask->device, n, cunn_ptr(mask), cunn_off(mask), n,
                       seed, offset, keep_threshold);
}

static ct_status cunn_masked_scale(const ct_kview *out, const ct_kview *in, const ct_kview *mask,
                                   double scale) {
    const int64_t n = cunn_numel(in);
    return CUNN_LAUNCH(ct_k_nn_masked_scale, in->device, n, cunn_ptr(out), cunn_off(out),
                       cunn_ptr(in), cunn_off(in), cunn_ptr(mask), cunn_off(mask), n,
                       (int)in->dtype, scale);
}

static ct_status cunn_embedding_backward(const ct_kview *grad_weight, const ct_kview *grad_out,
                                         const ct_kview *offsets, const ct_kview *positions,
                                         int64_t padding_idx) {
    const int64_t v = grad_weight->shape[0], d = grad_weight->shape[1];
    return CUNN_LAUNCH(ct_k_nn_embedding_backward, grad_weight->device, v * d,
                       cunn_ptr(grad_weight), cunn_off(grad_weight), cunn_ptr(grad_out),
                       cunn_off(grad_out), cunn_lptr(offsets), cunn_off(offsets),
                       cunn_lptr(positions), cunn_off(positions), (int)grad_out->dtype, v, d,
                       padding_idx);
}

/* ---- the nn table ---------------------------------------------------------------------------- */

static constexpr struct ct_backend_nn cunn_nn_table(void) {
    struct ct_backend_nn t{};
    t.max_pool2d = cunn_max_pool2d;
    t.max_pool2d_backward = cunn_max_pool2d_backward;
    t.avg_pool2d = cunn_avg_pool2d;
    t.avg_pool2d_backward = cunn_avg_pool2d_backward;
    t.adaptive_avg_pool2d = cunn_adaptive_avg_pool2d;
    t.adaptive_avg_pool2d_backward = cunn_adaptive_avg_pool2d_backward;
    t.batch_norm_stats = cunn_bn_stats;
    t.batch_norm_apply = cunn_bn_apply;
    t.batch_norm_backward_reduce = cunn_bn_backward_reduce;
    t.batch_norm_backward_apply = cunn_bn_backward_apply;
    t.layer_norm = cunn_layer_norm;
    t.layer_norm_backward = cunn_layer_norm_backward;
    t.layer_norm_backward_params = cunn_layer_norm_backward_params;
    t.dropout_mask = cunn_dropout_mask;
    t.masked_scale = cunn_masked_scale;
    t.embedding_backward = cunn_embedding_backward;
    return t;
}
extern "C" const struct ct_backend_nn ct_cu_nn_kernels = cunn_nn_table();

/* ---- class losses (cl_loss.c) ------------------------------------------------------------ */

/* Every loss entry starts here: dtype support (floating only). */
static ct_status cunn_check_input(const ct_kview *in, const char *op) {
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on cuda", op, ct_dtype_name(in->dtype));
    return CT_OK;
}

static ct_kloss cunn_kloss(const ct_class_loss_args *a, const ct_kview *in,
                           const ct_kview *target, const ct_kview *weight) {
    ct_kloss k;
    memset(&k, 0, sizeof k);
    k.batch = a->batch, k.classes = a->classes, k.inner = a->inner;
    k.ignore_index = a->ignore_index;
    k.in_off = in->offset, k.tgt_off = target->offset;
    k.w_off = weight ? weight->offset : 0;
    k.in_dtype = in->dtype;
    k.has_w = weight != NULL, k.logits = a->logits;
    return k;
}

static void cunn_set_row_grad(ct_kloss *k, const ct_kview *grad_row) {
    k->g_off = grad_row->offset;
    k->g_stride = grad_row->ndim ? grad_row->strides[0] : 0;
    k->g_dtype = grad_row->dtype;
}

/* The kernel's out-of-range flag {set, target}: zeroed, the kernel, then
 * copied back and waited for, all on the current stream s. */
static ct_status cunn_class_loss_run(cudaStream_t s, k_long *flags,
                                     const ct_kview *loss, const ct_kview *row_weight,
                                     const ct_kview *in, const ct_kview *target,
                                     const ct_kview *weight, const ct_kloss *k, double smoothing) {
    const size_t size = 2 * sizeof(k_long);
    k_long *dflags = NULL;
    CT_CU_TRY(cudaMalloc((void **)&dflags, size));
    ct_status st = ct_cu_check(cudaMemsetAsync(dflags, 0, size, s), "cudaMemsetAsync(flags)");
    if (st == CT_OK) {
        ct_k_class_loss<<<ct_cu_blocks(k->batch * k->inner), CT_CU_THREADS, 0, s>>>(
            cunn_ptr(loss), cunn_ptr(row_weight), cunn_ptr(in), cunn_ptr(target), cunn_ptr(weight),
            dflags, *k, smoothing);
        st = ct_cu_launched("ct_k_class_loss");
    }
    if (st == CT_OK)
        st = ct_cu_check(cudaMemcpyAsync(flags, dflags, size, cudaMemcpyDeviceToHost, s),
                         "cudaMemcpyAsync(flags)");
    if (st == CT_OK) st = ct_cu_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    cudaError_t freed = cudaFree(dflags);
    if (freed != cudaSuccess) {
        if (st == CT_OK) st = ct_cu_check(freed, "cudaFree(flags)");
        else (void)cudaGetLastError(); /* keep the first error; leave no stale one behind */
    }
    return st;
}

static ct_status cunn_class_forward(const ct_kview *loss, const ct_kview *row_weight,
                                    const ct_kview *in, const ct_kview *target,
                                    const ct_kview *weight, const ct_class_loss_args *a) {
    const char *name = a->logits ? "cross_entropy" : "nll_loss";
    CT_TRY(cunn_check_input(in, name));
    const int dev = in->device;
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    ct_kloss k = cunn_kloss(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    k.aux_off = row_weight ? row_weight->offset : 0, k.has_aux = row_weight != NULL;
    cudaStream_t s;
    CT_TRY(cunn_stream(dev, &s));
    k_long flag[2] = {0, 0};
    CT_TRY(cunn_class_loss_run(s, flag, loss, row_weight, in, target, weight, &k,
                               a->smoothing));
    CT_CHECK_STATUS(!flag[0], CT_ERR_INDEX, "%s: Target %lld is out of bounds.", name,
                    (long long)flag[1]);
    return CT_OK;
}

static ct_status cunn_class_backward(const ct_kview *grad_in, const ct_kview *grad_row,
                                     const ct_kview *in, const ct_kview *target,
                                     const ct_kview *weight, const ct_class_loss_args *a) {
    CT_TRY(cunn_check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    ct_kloss k = cunn_kloss(a, in, target, weight);
    cunn_set_row_grad(&k, grad_row);
    return CUNN_LAUNCH(ct_k_class_loss_grad, in->device, rows, cunn_ptr(grad_in),
                       cunn_ptr(grad_row), cunn_ptr(in), cunn_ptr(target), cunn_ptr(weight), k,
                       cunn_off(grad_in), a->smoothing);
}

/* ---- probability targets ------------------------------------------------------------------- */

static ct_status cunn_prob_forward(const ct_kview *loss, const ct_kview *in,
                                   const ct_kview *target, const ct_kview *weight,
                                   const ct_class_loss_args *a) {
    CT_TRY(cunn_check_input(in, "cross_entropy"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    ct_kloss k = cunn_kloss(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    return CUNN_LAUNCH(ct_k_prob_loss, in->device, rows, cunn_ptr(loss), cunn_ptr(in),
                       cunn_ptr(target), cunn_ptr(weight), k, a->smoothing);
}

static ct_status cunn_prob_backward(const ct_kview *grad_in, const ct_kview *grad_target,
                                    const ct_kview *grad_row, const ct_kview *in,
                                    const ct_kview *target, const ct_kview *weight,
                                    const ct_class_loss_args *a) {
    CT_TRY(cunn_check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    ct_kloss k = cunn_kloss(a, in, target, weight);
    cunn_set_row_grad(&k, grad_row);
    return CUNN_LAUNCH(ct_k_prob_loss_grad, in->device, rows, cunn_ptr(grad_in),
                       cunn_ptr(grad_target), cunn_ptr(grad_row), cunn_ptr(in), cunn_ptr(target),
                       cunn_ptr(weight), k, cunn_off(grad_in), cunn_off(grad_target),
                       (int)(grad_target != NULL), a->smoothing);
}

/* ---- elementwise losses ---------------------------------------------------------------------- */

static_assert(CT_MAX_DIMS <= CT_K_MAX_DIMS, "ct_kpw holds CT_K_MAX_DIMS dimensions");

/* v: the operand slots of ct_kpw (0 out / grad_in, 1 grad_target,
 * 2 grad_out, 3 input, 4 target, 5 weight, 6 pos_weight), NULL when absent. */
static ct_status cunn_pointwise(ct_pointwise_loss op, const ct_kview *const *v, bool backward,
                                double scale) {
    const ct_kview *ref = v[3];
    CT_TRY(cunn_check_input(ref, op == CT_LOSS_MSE ? "mse_loss"
                                                   : "binary_cross_entropy_with_logits"));
    ct_kpw p;
    memset(&p, 0, sizeof p);
    p.ndim = ref->ndim, p.numel = 1, p.op = op, p.backward = backward;
    for (int d = 0; d < ref->ndim; d++) p.shape[d] = ref->shape[d], p.numel *= ref->shape[d];
    if (p.numel == 0) return CT_OK;
    k_uchar *b[KPW_N];
    for (int j = 0; j < KPW_N; j++) {
        b[j] = cunn_ptr(v[j]);
        if (!v[j]) continue;
        p.has[j] = 1, p.offset[j] = v[j]->offset, p.dtype[j] = v[j]->dtype;
        for (int d = 0; d < ref->ndim; d++) p.strides[j][d] = v[j]->strides[d];
    }
    return CUNN_LAUNCH(ct_k_pointwise_loss, ref->device, p.numel, b[0], b[1], b[2], b[3], b[4],
                       b[5], b[6], p, scale);
}

static ct_status cunn_pointwise_forward(ct_pointwise_loss op, const ct_kview *out,
                                        const ct_kview *in, const ct_kview *target,
                                        const ct_kview *weight, const ct_kview *pos_weight) {
    const ct_kview *v[KPW_N] = {out, NULL, NULL, in, target, weight, pos_weight};
    return cunn_pointwise(op, v, false, 1.0);
}

static ct_status cunn_pointwise_backward(ct_pointwise_loss op, const ct_kview *grad_in,
                                         const ct_kview *grad_target, const ct_kview *grad_out,
                                         const ct_kview *in, const ct_kview *target,
                                         const ct_kview *weight, const ct_kview *pos_weight,
                                         double scale) {
    const ct_kview *v[KPW_N] = {grad_in, grad_target, grad_out, in, target, weight, pos_weight};
    return cunn_pointwise(op, v, true, scale);
}

/* ---- optimizer updates -------------------------------------------------------------------------- */

static ct_koptim cunn_koptim(const ct_kview *param, const ct_kview *grad, const ct_kview *s0,
                             const ct_kview *s1, const ct_kview *s2) {
    ct_koptim o;
    memset(&o, 0, sizeof o);
    o.n = cunn_numel(param);
    o.p_off = param->offset, o.g_off = grad->offset;
    o.s0_off = s0 ? s0->offset : 0, o.s1_off = s1 ? s1->offset : 0, o.s2_off = s2 ? s2->offset : 0;
    o.pdt = param->dtype, o.sdt = s0 ? s0->dtype : param->dtype;
    o.has_s0 = s0 != NULL, o.has_s2 = s2 != NULL;
    return o;
}

/* Float64 parameters update in double (ct_k_sgd_d), the rest in float with
 * the scalars rounded to float first (ct_k_sgd_f), as on OpenCL. */
static ct_status cunn_sgd_update(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                                 const ct_sgd_args *a) {
    const int dev = param->device;
    CT_TRY(cunn_check_input(param, "sgd_update"));
    ct_koptim o = cunn_koptim(param, grad, buf, NULL, NULL);
    if (o.n == 0) return CT_OK;
    o.first = a->first_step, o.nesterov = a->nesterov, o.maximize = a->maximize;
    o.has_wd = a->weight_decay != 0.0;
    k_uchar *bp = cunn_ptr(param), *bg = cunn_ptr(grad), *bb = cunn_ptr(buf);
    if (param->dtype == CT_FLOAT64)
        return CUNN_LAUNCH(ct_k_sgd_d, dev, o.n, bp, bg, bb, o, -a->lr, a->momentum,
                           1.0 - a->dampening, a->weight_decay);
    return CUNN_LAUNCH(ct_k_sgd_f, dev, o.n, bp, bg, bb, o, (float)-a->lr, (float)a->momentum,
                       (float)(1.0 - a->dampening), (float)a->weight_decay);
}

static ct_status cunn_adam_update(const ct_kview *param, const ct_kview *grad,
                                  const ct_kview *exp_avg, const ct_kview *exp_avg_sq,
                                  const ct_kview *max_exp_avg_sq, const ct_adam_args *a) {
    const int dev = param->device;
    CT_TRY(cunn_check_input(param, a->decoupled_weight_decay ? "adamw_update" : "adam_update"));
    ct_koptim o = cunn_koptim(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    if (o.n == 0) return CT_OK;
    o.maximize = a->maximize, o.has_wd = a->weight_decay != 0.0;
    o.decoupled = a->decoupled_weight_decay, o.amsgrad = a->amsgrad;
    k_uchar *bp = cunn_ptr(param), *bg = cunn_ptr(grad), *bm = cunn_ptr(exp_avg);
    k_uchar *bv = cunn_ptr(exp_avg_sq), *bx = cunn_ptr(max_exp_avg_sq);
    /* decay, wd, b1, 1 - b1, b2, 1 - b2, eps, -step_size, sqrt(bias correction 2) */
    const double k[9] = {1.0 - a->lr * a->weight_decay, a->weight_decay, a->beta1, 1.0 - a->beta1,
                         a->beta2, 1.0 - a->beta2, a->eps, -a->step_size,
                         a->bias_correction2_sqrt};
    if (param->dtype == CT_FLOAT64)
        return CUNN_LAUNCH(ct_k_adam_d, dev, o.n, bp, bg, bm, bv, bx, o, k[0], k[1], k[2], k[3],
                           k[4], k[5], k[6], k[7], k[8]);
    float f[9];
    for (int i = 0; i < 9; i++) f[i] = (float)k[i];
    return CUNN_LAUNCH(ct_k_adam_f, dev, o.n, bp, bg, bm, bv, bx, o, f[0], f[1], f[2], f[3], f[4],
                       f[5], f[6], f[7], f[8]);
}

/* ---- the loss table -------------------------------------------------------------------------- */

static constexpr struct ct_backend_loss cunn_loss_table(void) {
    struct ct_backend_loss t{};
    t.class_forward = cunn_class_forward;
    t.class_backward = cunn_class_backward;
    t.prob_forward = cunn_prob_forward;
    t.prob_backward = cunn_prob_backward;
    t.pointwise_forward = cunn_pointwise_forward;
    t.pointwise_backward = cunn_pointwise_backward;
    t.sgd_update = cunn_sgd_update;
    t.adam_update = cunn_adam_update;
    return t;
}
extern "C" const struct ct_backend_loss ct_cu_loss_kernels = cunn_loss_table();
