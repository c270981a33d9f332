/*
 * cu_dnn.c — cuDNN where PyTorch uses it, put over the CUDA backend's
 * copies of the shared GPU conv and nn tables (ct_gpu_conv_ops,
 * ct_gpu_nn_ops of src/backends/gpu/, which OpenCL uses as they are) by
 * ct_cu_dnn_override, plus the helpers the cuDNN files share (cu_dnn.h).
 *
 *  - convolution: whole forward / backward-data / backward-filter steps
 *    (cu_dnn_conv.c); im2col and col2im stay the portable kernels for the
 *    cases cuDNN declines;
 *  - batch norm: cudnnBatchNormalizationForwardTraining / ForwardInference /
 *    Backward in spatial mode, under PyTorch's conditions (weight and bias
 *    given, not bfloat16, batch at most 880801 in training and 65535 in
 *    evaluation);
 *  - pooling: max_pool2d without indices (inference) and avg_pool2d
 *    forward when cuDNN's window rule is PyTorch's (no dilation, no ceil-mode
 *    extra window, no divisor_override); everything else, including the
 *    backwards that read indices, uses the portable kernels.
 * Every entry falls back to the portable kernel when cuDNN declines, is
 * switched off (ct_backends_cudnn_set_enabled(false)) or is not installed.
 *
 * The entries cuDNN does not touch stay the shared functions themselves
 * (copy-and-override): no forwarding layer.
 */
#include <limits.h>
#include <string.h>

#include "ctorch/backends.h"
#include "backends/gpu/gpu.h"
#include "cu_dnn.h"

/* ---- shared helpers (cu_dnn.h) -------------------------------------------------------------- */

const ct_cudnn_api *ct_dnn_api(void) {
    return ct_backends_cudnn_get_enabled() ? ct_cu_cudnn_if_available() : NULL;
}

bool ct_dnn_deterministic(void) {
    return ct_backends_cudnn_get_deterministic() || ct_are_deterministic_algorithms_enabled();
}

bool ct_dnn_data_type(ct_dtype dt, cudnnDataType_t *out) {
    switch (dt) {
    case CT_FLOAT32: *out = CUDNN_DATA_FLOAT; return true;
    case CT_FLOAT64: *out = CUDNN_DATA_DOUBLE; return true;
    case CT_FLOAT16: *out = CUDNN_DATA_HALF; return true;
    case CT_BFLOAT16: *out = CUDNN_DATA_BFLOAT16; return true;
    default: return false;
    }
}

ct_status ct_dnn_status(cudnnStatus_t s, const char *op, const char *call) {
    if (s == CUDNN_STATUS_SUCCESS) return CT_OK;
    if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED) return CT_DNN_DECLINE;
    return ct_cu_cudnn_error(s, op, call);
}

ct_status ct_dnn_handle(int dev, const char *op, cudnnHandle_t *out) {
    cudaStream_t stream = ct_cu_stream(dev);
    if (!stream) { /* ct_cu_stream sets the error */
        ct_status st = ct_last_status();
        return st != CT_OK ? st : ct_error_set(CT_ERR_INTERNAL, "%s: cuda:%d has no current stream", op, dev);
    }
    return ct_cu_cudnn_handle(dev, stream, op, out);
}

static const float g_one_f = 1.0f, g_zero_f = 0.0f;
static const double g_one_d = 1.0, g_zero_d = 0.0;

const void *ct_dnn_one(ct_dtype dt) { return dt == CT_FLOAT64 ? (const void *)&g_one_d : (const void *)&g_one_f; }
const void *ct_dnn_zero(ct_dtype dt) { return dt == CT_FLOAT64 ? (const void *)&g_zero_d : (const void *)&g_zero_f; }

bool ct_dnn_fits_int(const int64_t *values, int n) {
    for (int i = 0; i < n; i++)
        if (values[i] < 0 || values[i] > INT_MAX) return false;
    return true;
}

bool ct_dnn_fits_tensor(const int64_t *sizes, int n) {
    int64_t numel = 1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 1 || sizes[i] > INT_MAX) return false;
        numel *= sizes[i];
        if (numel > INT_MAX) return false;
    }
    return true;
}

ct_status ct_dnn_tensor4d(const ct_cudnn_api *api, const char *op, cudnnDataType_t type, int64_t n,
                          int64_t c, int64_t h, int64_t w, cudnnTensorDescriptor_t *d) {
    CT_TRY(ct_dnn_status(api->cudnnCreateTensorDescriptor(d), op, "cudnnCreateTensorDescriptor"));
    return ct_dnn_status(api->cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW, type, (int)n, (int)c,
                                                         (int)h, (int)w),
                         op, "cudnnSetTensor4dDescriptor");
}

ct_status ct_dnn_workspace(int dev, size_t nbytes, ct_tensor **holder, void **ptr) {
    *holder = NULL;
    *ptr = NULL;
    if (nbytes == 0) return CT_OK;
    const int64_t n = (int64_t)nbytes;
    *holder = cti_empty(&n, 1, CT_UINT8, ct_device_cuda(dev));
    if (!*holder) return ct_last_status();
    ct_kview k = ct_kview_of(*holder);
    *ptr = ct_dnn_ptr(&k);
    return CT_OK;
}

/* ---- batch norm ---------------------------------------------------------------------------------- */

/* PyTorch's limits for cuDNN batch norm (Normalization.cpp). */
#define BN_MAX_BATCH_TRAINING 880801
#define BN_MAX_BATCH_EVAL 65535

/* Descriptors of x [N, C, S, 1] and of the [1, C, 1, 1] statistics. */
typedef struct bn_call {
    const ct_cudnn_api *api;
    const char *op;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, stats;
    ct_dtype dtype;
} bn_call;

/* has_params: the weight (and, for the forwards, the bias) are given; cuDNN
 * needs them, as PyTorch requires for its cuDNN path. */
static ct_status bn_setup(bn_call *b, const char *op, const ct_kview *x, bool has_params, int64_t n,
                          int64_t c, int64_t s, int64_t max_batch) {
    memset(b, 0, sizeof *b);
    b->op = op;
    b->dtype = x->dtype;
    const int64_t sizes[4] = {n, c, s, 1};
    cudnnDataType_t type;
    b->api = ct_dnn_api();
    if (!b->api || !has_params || x->dtype == CT_BFLOAT16 || !ct_dnn_data_type(x->dtype, &type) ||
        n > max_batch || !ct_dnn_fits_tensor(sizes, 4))
        return CT_DNN_DECLINE;
    const cudnnDataType_t stat_type = x->dtype == CT_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    CT_TRY(ct_dnn_tensor4d(b->api, op, type, n, c, s, 1, &b->x));
    CT_TRY(ct_dnn_tensor4d(b->api, op, stat_type, 1, c, 1, 1, &b->stats));
    return ct_dnn_handle(x->device, op, &b->h);
}

static void bn_release(bn_call *b) {
    if (!b->api) return;
    if (b->x) b->api->cudnnDestroyTensorDescriptor(b->x);
    if (b->stats) b->api->cudnnDestroyTensorDescriptor(b->stats);
}

static ct_status dnn_bn_forward_training(const ct_kview *out, const ct_kview *save_mean,
                                         const ct_kview *save_invstd, const ct_kview *running_mean,
                                         const ct_kview *running_var, const ct_kview *in,
                                         const ct_kview *weight, const ct_kview *bias, int64_t n,
                                         int64_t c, int64_t s, double momentum, double eps) {
    bn_call b;
    ct_status st = bn_setup(&b, "batch_norm", in, weight && bias, n, c, s, BN_MAX_BATCH_TRAINING);
    if (st == CT_OK)
        st = ct_dnn_status(b.api->cudnnBatchNormalizationForwardTraining(
                               b.h, CUDNN_BATCHNORM_SPATIAL, ct_dnn_one(b.dtype), ct_dnn_zero(b.dtype),
                               b.x, ct_dnn_ptr(in), b.x, ct_dnn_ptr(out), b.stats, ct_dnn_ptr(weight),
                               ct_dnn_ptr(bias), momentum, ct_dnn_ptr(running_mean),
                               ct_dnn_ptr(running_var), eps, ct_dnn_ptr(save_mean),
                               ct_dnn_ptr(save_invstd)),
                           b.op, "cudnnBatchNormalizationForwardTraining");
    bn_release(&b);
    return st;
}

static ct_status dnn_bn_forward_inference(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                                          const ct_kview *var, const ct_kview *weight,
                                          const ct_kview *bias, int64_t n, int64_t c, int64_t s,
                                          double eps) {
    bn_call b;
    ct_status st = bn_setup(&b, "batch_norm", in, weight && bias, n, c, s, BN_MAX_BATCH_EVAL);
    if (st == CT_OK)
        st = ct_dnn_status(b.api->cudnnBatchNormalizationForwardInference(
                               b.h, CUDNN_BATCHNORM_SPATIAL, ct_dnn_one(b.dtype), ct_dnn_zero(b.dtype),
                               b.x, ct_dnn_ptr(in), b.x, ct_dnn_ptr(out), b.stats, ct_dnn_ptr(weight),
                               ct_dnn_ptr(bias), ct_dnn_ptr(mean), ct_dnn_ptr(var), eps),
                           b.op, "cudnnBatchNormalizationForwardInference");
    bn_release(&b);
    return st;
}

/* cuDNN reads the forward's saved statistics, so epsilon only has to be
 * valid (it is used when the statistics are recomputed, which they are not). */
#define BN_BACKWARD_EPS 1e-5

static ct_status dnn_bn_backward(const ct_kview *grad_in, const ct_kview *grad_weight,
                                 const ct_kview *grad_bias, const ct_kview *grad_out, const ct_kview *in,
                                 const ct_kview *save_mean, const ct_kview *save_invstd,
                                 const ct_kview *weight, int64_t n, int64_t c, int64_t s) {
    bn_call b;
    ct_status st = bn_setup(&b, "batch_norm_backward", in, weight != NULL, n, c, s, BN_MAX_BATCH_TRAINING);
    if (st == CT_OK && grad_out->dtype != in->dtype) st = CT_DNN_DECLINE;
    if (st == CT_OK) {
        const void *one = ct_dnn_one(b.dtype), *zero = ct_dnn_zero(b.dtype);
        st = ct_dnn_status(b.api->cudnnBatchNormalizationBackward(
                               b.h, CUDNN_BATCHNORM_SPATIAL, one, zero, one, zero, b.x, ct_dnn_ptr(in),
                               b.x, ct_dnn_ptr(grad_out), b.x, ct_dnn_ptr(grad_in), b.stats,
                               ct_dnn_ptr(weight), ct_dnn_ptr(grad_weight), ct_dnn_ptr(grad_bias),
                               BN_BACKWARD_EPS, ct_dnn_ptr(save_mean), ct_dnn_ptr(save_invstd)),
                           b.op, "cudnnBatchNormalizationBackward");
    }
    bn_release(&b);
    return st;
}

/* ---- pooling ---------------------------------------------------------------------------------------- */

/* cuDNN's windows are PyTorch's when the output has the floor size and
 * there is no dilation (no ceil-mode window starts in the padding). */
static bool cudnn_windows(const ct_pool2d_geom *g) {
    for (int i = 0; i < 2; i++) {
        if (g->dilation[i] != 1) return false;
        if ((g->in_size[i] + 2 * g->padding[i] - g->kernel[i]) / g->stride[i] + 1 != g->out_size[i])
            return false;
    }
    return true;
}

static ct_status dnn_pool(cudnnPoolingMode_t mode, const ct_kview *out, const ct_kview *in,
                          const ct_pool2d_geom *g, const char *op) {
    const ct_cudnn_api *api = ct_dnn_api();
    const int64_t xs[4] = {g->planes, 1, g->in_size[0], g->in_size[1]};
    const int64_t ys[4] = {g->planes, 1, g->out_size[0], g->out_size[1]};
    const int64_t win[6] = {g->kernel[0], g->kernel[1], g->padding[0], g->padding[1], g->stride[0],
                            g->stride[1]};
    cudnnDataType_t type;
    if (!api || !ct_dnn_data_type(in->dtype, &type) || !cudnn_windows(g) || !ct_dnn_fits_tensor(xs, 4) ||
        !ct_dnn_fits_tensor(ys, 4) || !ct_dnn_fits_int(win, 6))
        return CT_DNN_DECLINE;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnPoolingDescriptor_t pd = NULL;
    cudnnHandle_t h;
    ct_status st = ct_dnn_tensor4d(api, op, type, xs[0], xs[1], xs[2], xs[3], &xd);
    if (st == CT_OK) st = ct_dnn_tensor4d(api, op, type, ys[0], ys[1], ys[2], ys[3], &yd);
    if (st == CT_OK)
        st = ct_dnn_status(api->cudnnCreatePoolingDescriptor(&pd), op, "cudnnCreatePoolingDescriptor");
    if (st == CT_OK)
        st = ct_dnn_status(api->cudnnSetPooling2dDescriptor(pd, mode, CUDNN_PROPAGATE_NAN, (int)win[0],
                                                            (int)win[1], (int)win[2], (int)win[3],
                                                            (int)win[4], (int)win[5]),
                           op, "cudnnSetPooling2dDescriptor");
    if (st == CT_OK) st = ct_dnn_handle(in->device, op, &h);
    if (st == CT_OK)
        st = ct_dnn_status(api->cudnnPoolingForward(h, pd, ct_dnn_one(in->dtype), xd, ct_dnn_ptr(in),
                                                    ct_dnn_zero(in->dtype), yd, ct_dnn_ptr(out)),
                           op, "cudnnPoolingForward");
    if (pd) api->cudnnDestroyPoolingDescriptor(pd);
    if (yd) api->cudnnDestroyTensorDescriptor(yd);
    if (xd) api->cudnnDestroyTensorDescriptor(xd);
    return st;
}

/* ---- the entries put over the shared tables -------------------------------------------------------- */

/* max_pool2d through cuDNN when no indices are wanted (cuDNN has none). */
static ct_status dnn_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                                const ct_pool2d_geom *g) {
    if (!indices) {
        ct_status st = dnn_pool(CUDNN_POOLING_MAX, out, in, g, "max_pool2d");
        if (st != CT_DNN_DECLINE) return st;
    }
    return ct_gpu_nn_ops.max_pool2d(out, indices, in, g);
}

static ct_status dnn_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g) {
    if (g->divisor_override == 0) {
        const cudnnPoolingMode_t mode = g->count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        ct_status st = dnn_pool(mode, out, in, g, "avg_pool2d");
        if (st != CT_DNN_DECLINE) return st;
    }
    return ct_gpu_nn_ops.avg_pool2d(out, in, g);
}

/* Put cuDNN's entries over copies of the shared GPU tables (cu_backend.c's
 * prepare hook makes the copies); the rest stay the portable kernels. */
void ct_cu_dnn_override(struct ct_backend_conv *conv, struct ct_backend_nn *nn) {
    conv->conv2d_forward = ct_dnn_conv2d_forward;
    conv->conv2d_forward_fused = ct_dnn_conv2d_forward_fused;
    conv->conv2d_backward_input = ct_dnn_conv2d_backward_input;
    conv->conv2d_backward_weight = ct_dnn_conv2d_backward_weight;
    nn->max_pool2d = dnn_max_pool2d;
    nn->avg_pool2d = dnn_avg_pool2d;
    nn->batch_norm_forward_training = dnn_bn_forward_training;
    nn->batch_norm_forward_inference = dnn_bn_forward_inference;
    nn->batch_norm_backward = dnn_bn_backward;
}
