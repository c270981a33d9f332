/*
 * nn_pool.c — the pooling front-ends: max_pool2d (with indices),
 * avg_pool2d and adaptive_avg_pool2d, forward and backward.
 *
 * Each checks its arguments in PyTorch's order with PyTorch's messages,
 * computes the output size with PyTorch's formula (pooling_output_shape:
 * ceil_mode never starts a window inside the right padding), and hands the
 * backend contiguous [planes, H, W] data with a ct_pool2d_geom. Inputs are
 * [N, C, H, W] or unbatched [C, H, W]; both are N*C planes to a backend.
 */
#include <string.h>

#include "autograd/autograd.h"
#include "nn_internal.h"

cti_pool2d_params cti_pool2d_params_make(const int64_t kernel[2], const int64_t stride[2],
                                         const int64_t padding[2], const int64_t dilation[2],
                                         bool ceil_mode, bool count_include_pad,
                                         int64_t divisor_override) {
    cti_pool2d_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < 2; i++) {
        p.kernel[i] = kernel ? kernel[i] : 0;
        p.stride[i] = stride ? stride[i] : p.kernel[i];
        p.padding[i] = padding ? padding[i] : 0;
        p.dilation[i] = dilation ? dilation[i] : 1;
    }
    p.ceil_mode = ceil_mode;
    p.count_include_pad = count_include_pad;
    p.divisor_override = divisor_override;
    return p;
}

/* ---- geometry ---------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* PyTorch's pooling_output_shape. */
static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                           bool ceil_mode) {
    int64_t out = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0),
                            stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

/* PyTorch narrows the window parameters to int (safe_downcast), which also
 * keeps every sum and product of the output-size arithmetic in int64. */
static bool params_fit_int(const char *op, const cti_pool2d_params *p) {
    const int64_t *all[4] = {p->kernel, p->stride, p->padding, p->dilation};
    static const char *const names[4] = {"kernel_size", "stride", "padding", "dilation"};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            CT_CHECK_RET(all[i][j] >= INT32_MIN && all[i][j] <= INT32_MAX, false, CT_ERR_INVALID_ARG,
                         "%s: %s value %lld cannot be converted to type int without overflow", op, names[i],
                         (long long)all[i][j]);
    return true;
}

static bool check_params(const char *op, const cti_pool2d_params *p) {
    const int64_t *k = p->kernel, *s = p->stride, *pad = p->padding, *d = p->dilation;
    if (!params_fit_int(op, p)) return false;
    CT_CHECK_RET(k[0] > 0 && k[1] > 0, false, CT_ERR_INVALID_ARG,
                 "%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                 (long long)k[0], (long long)k[1]);
    CT_CHECK_RET(s[0] != 0 && s[1] != 0, false, CT_ERR_INVALID_ARG,
                 "%s: stride should not be zero", op);
    CT_CHECK_RET(s[0] > 0 && s[1] > 0, false, CT_ERR_INVALID_ARG,
                 "%s: stride should be greater than zero, but got dH: %lld dW: %lld", op,
                 (long long)s[0], (long long)s[1]);
    CT_CHECK_RET(d[0] > 0 && d[1] > 0, false, CT_ERR_INVALID_ARG,
                 "%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
                 op, (long long)d[0], (long long)d[1]);
    for (int i = 0; i < 2; i++) {
        CT_CHECK_RET(pad[i] >= 0, false, CT_ERR_INVALID_ARG,
                     "%s: pad must be non-negative, but got pad: %lld", op, (long long)pad[i]);
        CT_CHECK_RET(pad[i] <= k[i] / 2, false, CT_ERR_INVALID_ARG,
                     "%s: pad should be at most half of kernel size, but got pad=%lld and "
                     "kernel_size=%lld", op, (long long)pad[i], (long long)k[i]);
    }
    return true;
}

/* [N, C, H, W] or [C, H, W] with non-zero C, H, W (N may be 0). */
static bool check_input_dims(const char *op, const int64_t *shape, int ndim) {
    CT_CHECK_RET(ndim == 3 || ndim == 4, false, CT_ERR_SHAPE,
                 "%s: non-empty 3D or 4D (batch mode) tensor expected for input, but got %d-D",
                 op, ndim);
    for (int i = ndim - 3; i < ndim; i++) {
        if (shape[i] != 0) continue;
        char sb[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE,
                     "%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                     "input, but got:%s", op, ct_shape_str(shape, ndim, sb, sizeof sb));
        return false;
    }
    return true;
}

/* The output shape (same rank as the input) and the backend geometry for
 * input shape `shape` with output plane out_hw. */
static void fill_geom(const int64_t *shape, int ndim, const int64_t out_hw[2],
                      ct_pool2d_geom *g, int64_t *out_shape) {
    g->planes = ndim == 4 ? shape[0] * shape[1] : shape[0];
    for (int i = 0; i < 2; i++) {
        g->in_size[i] = shape[ndim - 2 + i];
        g->out_size[i] = out_hw[i];
    }
    memcpy(out_shape, shape, sizeof(int64_t) * (size_t)ndim);
    out_shape[ndim - 2] = out_hw[0];
    out_shape[ndim - 1] = out_hw[1];
}

/* Validate a windowed pooling (max or avg) of an input of this shape and
 * produce its geometry and output shape. */
static bool pool_setup(const char *op, const int64_t *shape, int ndim, const cti_pool2d_params *p,
                       ct_pool2d_geom *g, int64_t *out_shape) {
    if (!check_params(op, p) || !check_input_dims(op, shape, ndim)) return false;
    int64_t out_hw[2];
    for (int i = 0; i < 2; i++)
        out_hw[i] = pooled_size(shape[ndim - 2 + i], p->kernel[i], p->padding[i], p->stride[i],
                                p->dilation[i], p->ceil_mode);
    CT_CHECK_RET(out_hw[0] >= 1 && out_hw[1] >= 1, false, CT_ERR_SHAPE,
                 "%s: Given input size: (%lldx%lldx%lld). Calculated output size: "
                 "(%lldx%lldx%lld). Output size is too small", op, (long long)shape[ndim - 3],
                 (long long)shape[ndim - 2], (long long)shape[ndim - 1], (long long)shape[ndim - 3],
                 (long long)out_hw[0], (long long)out_hw[1]);
    memset(g, 0, sizeof *g);
    fill_geom(shape, ndim, out_hw, g, out_shape);
    for (int i = 0; i < 2; i++) {
        g->kernel[i] = p->kernel[i];
        g->stride[i] = p->stride[i];
        g->padding[i] = p->padding[i];
        g->dilation[i] = p->dilation[i];
    }
    g->count_include_pad = p->count_include_pad;
    g->divisor_override = p->divisor_override;
    return true;
}

/* grad_output must have the forward result's shape. */
static bool check_grad_shape(const char *op, const ct_tensor *grad, const int64_t *shape,
                             int ndim) {
    if (cti_nn_shape_equal(grad, shape, ndim)) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_error_set(CT_ERR_SHAPE, "%s: grad_output of shape %s does not match the output shape %s", op,
                 ct_shape_str(grad->shape, grad->ndim, a, sizeof a),
                 ct_shape_str(shape, ndim, b, sizeof b));
    return false;
}

/* A pooling entry of the backend: out = f(in) (with an optional third
 * view), on a fresh contiguous out of `shape`. */
typedef enum pool_kind { POOL_MAX, POOL_MAX_BACKWARD, POOL_AVG, POOL_AVG_BACKWARD,
                         POOL_ADAPTIVE, POOL_ADAPTIVE_BACKWARD } pool_kind;

static ct_status call_pool(pool_kind kind, const char *op, const ct_kview *out,
                           const ct_kview *in, const ct_kview *extra, const ct_tensor *t,
                           const ct_pool2d_geom *g) {
    switch (kind) {
    case POOL_MAX: return CTI_NN_CALL(t, max_pool2d, op, out, extra, in, g);
    case POOL_MAX_BACKWARD: return CTI_NN_CALL(t, max_pool2d_backward, op, out, in, extra, g);
    case POOL_AVG: return CTI_NN_CALL(t, avg_pool2d, op, out, in, g);
    case POOL_AVG_BACKWARD: return CTI_NN_CALL(t, avg_pool2d_backward, op, out, in, g);
    case POOL_ADAPTIVE: return CTI_NN_CALL(t, adaptive_avg_pool2d, op, out, in, g);
    default: return CTI_NN_CALL(t, adaptive_avg_pool2d_backward, op, out, in, g);
    }
}

/* Run one pooling entry: a new tensor of out_shape (in's dtype) from the
 * contiguous in, and extra (max pooling: indices, written or read). */
static ct_tensor *run_pool(pool_kind kind, const char *op, const ct_tensor *in,
                           const ct_tensor *extra, const int64_t *out_shape, int ndim,
                           const ct_pool2d_geom *g) {
    ct_tensor *out = cti_empty(out_shape, ndim, in->dtype, in->storage->device);
    if (!out || ct_shape_numel(out_shape, ndim) == 0) return out;
    if (ct_shape_numel(in->shape, in->ndim) == 0) { /* backward of an empty adaptive output */
        if (cti_fill(out, 0.0) == CT_OK) return out;
        ct_decref(out);
        return NULL;
    }
    ct_tensor *x = cti_contiguous(in), *e = cti_contiguous(extra);
    ct_status st = x && (e || !extra) ? CT_OK : ct_last_status();
    if (st == CT_OK) {
        ct_kview ko = ct_kview_of(out), kx = ct_kview_of(x), ke;
        st = call_pool(kind, op, &ko, &kx, cti_nn_kview(e, &ke), out, g);
    }
    ct_decref(x);
    ct_decref(e);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* ---- max pooling ------------------------------------------------------------------ */

ct_tensor *cti_max_pool2d_forward(const ct_tensor *input, const cti_pool2d_params *p,
                                  ct_tensor **indices) {
    if (indices) *indices = NULL;
    if (!input) return NULL;
    const char *op = "max_pool2d";
    ct_pool2d_geom g;
    int64_t oshape[4];
    if (!pool_setup(op, input->shape, input->ndim, p, &g, oshape)) return NULL;
    if (!cti_nn_check_floating(op, input)) return NULL;
    /* indices only when wanted (autograd wants them; inference does not) */
    ct_tensor *idx = indices ? cti_empty(oshape, input->ndim, CT_INT64, input->storage->device)
                             : NULL;
    if (indices && !idx) return NULL;
    ct_tensor *out = run_pool(POOL_MAX, op, input, idx, oshape, input->ndim, &g);
    if (out && indices) *indices = idx;
    else ct_decref(idx);
    return out;
}

ct_tensor *cti_max_pool2d_backward(const ct_tensor *grad_output, const ct_tensor *indices,
                                   ct_shape input_shape, const cti_pool2d_params *p) {
    if (!grad_output || !indices) return NULL;
    const char *op = "max_pool2d_backward";
    const ct_tensor *both[2] = {grad_output, indices};
    if (!ct_check_same_device(op, both, 2) || !cti_nn_check_floating(op, grad_output))
        return NULL;
    CT_CHECK_NULL(indices->dtype == CT_INT64, CT_ERR_DTYPE,
                  "%s: expected indices of dtype int64, but got %s", op,
                  ct_dtype_name(indices->dtype));
    ct_pool2d_geom g;
    int64_t oshape[4];
    if (!pool_setup(op, input_shape.dims, input_shape.ndim, p, &g, oshape)) return NULL;
    if (!check_grad_shape(op, grad_output, oshape, input_shape.ndim) ||
        !check_grad_shape(op, indices, oshape, input_shape.ndim))
        return NULL;
    return run_pool(POOL_MAX_BACKWARD, op, grad_output, indices, input_shape.dims,
                    input_shape.ndim, &g);
}

/* ct_pool_opts: an all-zero pair is PyTorch's default (NULL here). */
static const int64_t *given_pair(const int64_t pair[2]) { return pair[0] || pair[1] ? pair : NULL; }

/* max_pool2d has no count_include_pad or divisor_override: refused as
 * PyTorch refuses the keywords. */
static bool max_opts_ok(const ct_pool_opts *o) {
    const char *extra = o->no_count_include_pad ? "count_include_pad"
                        : o->divisor_override   ? "divisor_override"
                                                : NULL;
    CT_CHECK_RET(!extra, false, CT_ERR_INVALID_ARG,
                 "max_pool2d() got an unexpected keyword argument '%s'", extra);
    return true;
}

static cti_pool2d_params pool_opts_params(const int64_t kernel_size[2], const ct_pool_opts *o,
                                          bool avg) {
    return cti_pool2d_params_make(kernel_size, given_pair(o->stride), given_pair(o->padding),
                                  given_pair(o->dilation), o->ceil_mode,
                                  avg && !o->no_count_include_pad, o->divisor_override);
}

ct_status ct_max_pool2d_with_indices_opts(const ct_tensor *input, const int64_t kernel_size[2],
                                          ct_tensor **output, ct_tensor **indices,
                                          ct_pool_opts o) {
    if (output) *output = NULL;
    if (indices) *indices = NULL;
    if (!input) return cti_nn_null_status("max_pool2d");
    CT_CHECK_STATUS(kernel_size, CT_ERR_INVALID_ARG, "max_pool2d: kernel_size must be given");
    if (!max_opts_ok(&o)) return ct_last_status();
    cti_pool2d_params p = pool_opts_params(kernel_size, &o, false);
    ct_tensor *idx = NULL;
    ct_tensor *out = cta_max_pool2d(input, &p, &idx);
    if (!out) return ct_last_status();
    if (output) *output = ct_track(out);
    else ct_decref(out);
    if (indices) *indices = ct_track(idx);
    else ct_decref(idx);
    return CT_OK;
}

ct_tensor *ct_max_pool2d_opts(const ct_tensor *input, const int64_t kernel_size[2],
                              ct_pool_opts o) {
    if (!input) return NULL;
    CT_CHECK_NULL(kernel_size, CT_ERR_INVALID_ARG, "max_pool2d: kernel_size must be given");
    if (!max_opts_ok(&o)) return NULL;
    cti_pool2d_params p = pool_opts_params(kernel_size, &o, false);
    return ct_track(cta_max_pool2d(input, &p, NULL));
}

/* ---- average pooling ----------------------------------------------------------------- */

/* Average pooling has no dilation; PyTorch's message for divisor 0. */
static bool check_avg_params(const char *op, const cti_pool2d_params *p) {
    CT_CHECK_RET(p->dilation[0] == 1 && p->dilation[1] == 1, false, CT_ERR_INVALID_ARG,
                 "%s: average pooling has no dilation (got %lld, %lld)", op,
                 (long long)p->dilation[0], (long long)p->dilation[1]);
    return true;
}

ct_tensor *cti_avg_pool2d_forward(const ct_tensor *input, const cti_pool2d_params *p) {
    if (!input) return NULL;
    const char *op = "avg_pool2d";
    ct_pool2d_geom g;
    int64_t oshape[4];
    if (!check_avg_params(op, p) || !pool_setup(op, input->shape, input->ndim, p, &g, oshape))
        return NULL;
    if (!cti_nn_check_floating(op, input)) return NULL;
    return run_pool(POOL_AVG, op, input, NULL, oshape, input->ndim, &g);
}

ct_tensor *cti_avg_pool2d_backward(const ct_tensor *grad_output, ct_shape input_shape,
                                   const cti_pool2d_params *p) {
    if (!grad_output) return NULL;
    const char *op = "avg_pool2d_backward";
    ct_pool2d_geom g;
    int64_t oshape[4];
    if (!cti_nn_check_floating(op, grad_output) || !check_avg_params(op, p) ||
        !pool_setup(op, input_shape.dims, input_shape.ndim, p, &g, oshape) ||
        !check_grad_shape(op, grad_output, oshape, input_shape.ndim))
        return NULL;
    return run_pool(POOL_AVG_BACKWARD, op, grad_output, NULL, input_shape.dims, input_shape.ndim,
                    &g);
}

ct_tensor *ct_avg_pool2d_opts(const ct_tensor *input, const int64_t kernel_size[2],
                              ct_pool_opts o) {
    if (!input) return NULL;
    CT_CHECK_NULL(kernel_size, CT_ERR_INVALID_ARG, "avg_pool2d: kernel_size must be given");
    CT_CHECK_NULL(!given_pair(o.dilation), CT_ERR_INVALID_ARG,
                  "avg_pool2d() got an unexpected keyword argument 'dilation'");
    cti_pool2d_params p = pool_opts_params(kernel_size, &o, true);
    return ct_track(cta_avg_pool2d(input, &p));
}

/* ---- adaptive average pooling ---------------------------------------------------------- */

static bool adaptive_setup(const char *op, const int64_t *shape, int ndim,
                           const int64_t output_size[2], ct_pool2d_geom *g, int64_t *out_shape) {
    char sb[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(ndim == 3 || ndim == 4, false, CT_ERR_SHAPE,
                 "%s(): Expected 3D or 4D tensor, but got %s", op,
                 ct_shape_str(shape, ndim, sb, sizeof sb));
    for (int i = ndim - 3 + 1; i < ndim; i++)
        CT_CHECK_RET(shape[i] > 0, false, CT_ERR_SHAPE,
                     "%s(): Expected input to have non-zero size for non-batch dimensions, but "
                     "input has sizes %s with dimension %d being empty", op,
                     ct_shape_str(shape, ndim, sb, sizeof sb), i);
    int64_t out_hw[2];
    for (int i = 0; i < 2; i++)
        out_hw[i] = output_size[i] < 0 ? shape[ndim - 2 + i] : output_size[i];
    memset(g, 0, sizeof *g);
    fill_geom(shape, ndim, out_hw, g, out_shape);
    return true;
}

ct_tensor *cti_adaptive_avg_pool2d_forward(const ct_tensor *input, const int64_t output_size[2]) {
    if (!input) return NULL;
    const char *op = "adaptive_avg_pool2d";
    CT_CHECK_NULL(output_size, CT_ERR_INVALID_ARG, "%s: output_size must be given", op);
    ct_pool2d_geom g;
    int64_t oshape[4];
    if (!adaptive_setup(op, input->shape, input->ndim, output_size, &g, oshape)) return NULL;
    if (!cti_nn_check_floating(op, input)) return NULL;
    return run_pool(POOL_ADAPTIVE, op, input, NULL, oshape, input->ndim, &g);
}

ct_tensor *cti_adaptive_avg_pool2d_backward(const ct_tensor *grad_output, ct_shape input_shape) {
    if (!grad_output) return NULL;
    const char *op = "adaptive_avg_pool2d_backward";
    ct_pool2d_geom g;
    int64_t oshape[4];
    CT_CHECK_NULL(grad_output->ndim == input_shape.ndim && input_shape.ndim >= 2, CT_ERR_SHAPE,
                  "%s: grad_output has %d dims, the input %d", op, grad_output->ndim,
                  input_shape.ndim);
    const int64_t out_hw[2] = {grad_output->shape[grad_output->ndim - 2],
                               grad_output->shape[grad_output->ndim - 1]};
    if (!cti_nn_check_floating(op, grad_output) ||
        !adaptive_setup(op, input_shape.dims, input_shape.ndim, out_hw, &g, oshape) ||
        !check_grad_shape(op, grad_output, oshape, input_shape.ndim))
        return NULL;
    return run_pool(POOL_ADAPTIVE_BACKWARD, op, grad_output, NULL, input_shape.dims,
                    input_shape.ndim, &g);
}

ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *input, const int64_t output_size[2]) {
    if (!input) return NULL;
    return ct_track(cta_adaptive_avg_pool2d(input, output_size));
}
