/*
 * conv.c — torch.nn.functional.conv2d and its gradients, built from the
 * backend's im2col/col2im (src/core/backend_conv.h) and one batched matmul
 * per step, so every backend gets convolution from two small primitives.
 *
 * For a chunk of nb images the input becomes the column matrix
 * cols [C*kH*kW, nb*L] (L = OH*OW; groups are its row blocks), and
 *   forward      out'[g] = W[g] @ cols[g]              [Og, nb*L] per group
 *   grad_weight  dW[g]   = dY'[g] @ cols[g]^T          summed over chunks
 *   grad_input   dcols[g]= W[g]^T @ dY'[g], then col2im
 * where out' and dY' hold the images in their columns ([O, nb, L]); a
 * permuting copy (fused with the bias add in the forward) moves between that
 * layout and [nb, O, L]. Groups are the batch dim of each product, so one
 * matmul call serves all of them. Chunks of images keep the column matrix
 * within the backend's cols_budget (on a CPU: in cache until the product
 * reads it).
 *
 * 1×1 convolutions with stride 1 and no padding need no im2col: the input
 * is its own column matrix, and with one group out[n] = W @ x[n] is a
 * single product broadcast over the batch, with no copy at all.
 * float16/bfloat16 are computed in float32 and rounded once at the end.
 */
#include <string.h>

#include "autograd/autograd.h"
#include "amp/autocast.h"
#include "core/backend_conv.h"
#include "ctorch/functional_conv.h"
#include "ops/conv.h"

/* ---- names for PyTorch's messages ------------------------------------------------ */

/* C++ type names ("Input type (float) and bias type (double)"). */
static const char *cpp_type_name(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return "float";
    case CT_FLOAT64: return "double";
    case CT_FLOAT16: return "c10::Half";
    case CT_BFLOAT16: return "c10::BFloat16";
    case CT_INT32: return "int";
    case CT_INT64: return "long int";
    case CT_UINT8: return "unsigned char";
    case CT_INT8: return "signed char";
    case CT_BOOL: return "bool";
    default: return "unknown";
    }
}

/* ---- parameters and shape checks ------------------------------------------------- */

cti_conv2d_params cti_conv2d_params_make(const int64_t stride[2], const int64_t padding[2],
                                         const int64_t dilation[2], int64_t groups) {
    cti_conv2d_params p;
    for (int i = 0; i < 2; i++) {
        p.stride[i] = stride ? stride[i] : 1;
        p.padding[i] = padding ? padding[i] : 0;
        p.dilation[i] = dilation ? dilation[i] : 1;
    }
    p.groups = groups;
    return p;
}

/* Everything a convolution needs to know, derived once from the operands. */
typedef struct conv_plan {
    bool unbatched;          /* the input was [C, H, W] */
    int64_t n, c, h, w;      /* input (batched view) */
    int64_t o, kh, kw;       /* weight [o, c / groups, kh, kw] */
    int64_t groups, cg, og;  /* channels per group in and out */
    int64_t oh, ow, l;       /* output plane, l = oh * ow */
    int64_t kg;              /* rows of one group's column block: cg * kh * kw */
    bool pointwise;          /* 1×1, stride 1, no padding: no im2col */
    int64_t chunk;           /* images per im2col chunk */
    ct_dtype dtype, compute; /* operands' dtype; the dtype the math runs in */
    cti_conv2d_params p;
} conv_plan;

static bool check_params(const char *op, const cti_conv2d_params *p) {
    /* as for pooling: int-sized geometry keeps the size arithmetic in int64 */
    const int64_t *all[3] = {p->stride, p->padding, p->dilation};
    static const char *const names[3] = {"stride", "padding", "dilation"};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            CT_CHECK_RET(all[i][j] >= INT32_MIN && all[i][j] <= INT32_MAX, false, CT_ERR_INVALID_ARG,
                         "%s: %s value %lld cannot be converted to type int without overflow", op, names[i],
                         (long long)all[i][j]);
    CT_CHECK_RET(p->groups > 0, false, CT_ERR_INVALID_ARG, "%s: non-positive groups is not supported",
                 op);
    CT_CHECK_RET(p->padding[0] >= 0 && p->padding[1] >= 0, false, CT_ERR_INVALID_ARG,
                 "%s: negative padding is not supported", op);
    CT_CHECK_RET(p->stride[0] > 0 && p->stride[1] > 0, false, CT_ERR_INVALID_ARG,
                 "%s: non-positive stride is not supported", op);
    CT_CHECK_RET(p->dilation[0] > 0 && p->dilation[1] > 0, false, CT_ERR_INVALID_ARG,
                 "%s: dilation should be greater than zero, but got [%lld, %lld]", op,
                 (long long)p->dilation[0], (long long)p->dilation[1]);
    return true;
}

/* The shapes of input (batched: 4-D) and weight against each other, in
 * PyTorch's order and words (check_shape_forward). */
static bool check_shapes(const char *op, const int64_t *in, const ct_tensor *weight,
                         const ct_tensor *bias, const cti_conv2d_params *p) {
    char ws[CT_SHAPE_STR_MAX], is[CT_SHAPE_STR_MAX], bs[CT_SHAPE_STR_MAX];
    const int64_t *wsz = weight->shape;
    ct_shape_str(wsz, weight->ndim, ws, sizeof ws);
    ct_shape_str(in, 4, is, sizeof is);
    CT_CHECK_RET(weight->ndim == 4, false, CT_ERR_SHAPE,
                 "%s: Expected 4-dimensional weight for 4-dimensional input %s, but got "
                 "%d-dimensional weight of size %s instead",
                 op, is, weight->ndim, ws);
    CT_CHECK_RET(wsz[2] > 0 && wsz[3] > 0, false, CT_ERR_SHAPE,
                 "%s: kernel size should be greater than zero, but got kernel_height: %lld "
                 "kernel_width: %lld",
                 op, (long long)wsz[2], (long long)wsz[3]);
    const long long g = (long long)p->groups;
    CT_CHECK_RET(wsz[0] >= p->groups, false, CT_ERR_SHAPE,
                 "%s: Given groups=%lld, expected weight to be at least %lld at dimension 0, but "
                 "got weight of size %s instead",
                 op, g, g, ws);
    CT_CHECK_RET(wsz[0] % p->groups == 0, false, CT_ERR_SHAPE,
                 "%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                 "but got weight of size [%s] instead",
                 op, g, g, ws);
    CT_CHECK_RET(in[1] == wsz[1] * p->groups, false, CT_ERR_SHAPE,
                 "%s: Given groups=%lld, weight of size %s, expected input%s to have %lld "
                 "channels, but got %lld channels instead",
                 op, g, ws, is, (long long)(wsz[1] * p->groups), (long long)in[1]);
    if (bias && !(bias->ndim == 1 && bias->shape[0] == wsz[0])) {
        ct_error_set(CT_ERR_SHAPE,
                     "%s: Given weight of size %s, expected bias to be 1-dimensional with %lld "
                     "elements, but got bias of size %s instead",
                     op, ws, (long long)wsz[0], ct_shape_str(bias->shape, bias->ndim, bs, sizeof bs));
        return false;
    }
    int64_t padded[2], span[2];
    for (int i = 0; i < 2; i++) {
        padded[i] = in[2 + i] + 2 * p->padding[i];
        span[i] = p->dilation[i] * (wsz[2 + i] - 1) + 1;
    }
    CT_CHECK_RET(padded[0] >= span[0] && padded[1] >= span[1], false, CT_ERR_SHAPE,
                 "%s: Calculated padded input size per channel: (%lld x %lld). Kernel size: "
                 "(%lld x %lld). Kernel size can't be greater than actual input size",
                 op, (long long)padded[0], (long long)padded[1], (long long)span[0],
                 (long long)span[1]);
    return true;
}

/* dtypes: bias and weight must match the input; bool has no kernel. */
static bool check_dtypes(const char *op, const ct_tensor *input, const ct_tensor *weight,
                         const ct_tensor *bias) {
    CT_CHECK_RET(!bias || bias->dtype == input->dtype, false, CT_ERR_DTYPE,
                 "%s: Input type (%s) and bias type (%s) should be the same", op,
                 cpp_type_name(input->dtype), cpp_type_name(bias ? bias->dtype : input->dtype));
    CT_CHECK_RET(weight->dtype == input->dtype, false, CT_ERR_DTYPE,
                 "%s: expected scalar type %s but found %s", op, cti_scalar_type_name(input->dtype),
                 cti_scalar_type_name(weight->dtype));
    CT_CHECK_RET(input->dtype != CT_BOOL, false, CT_ERR_DTYPE,
                 "%s: \"slow_conv2d_cpu\" not implemented for 'Bool'", op);
    return true;
}

static bool plan_conv(const char *op, const ct_tensor *input, const ct_tensor *weight,
                      const ct_tensor *bias, const cti_conv2d_params *p, conv_plan *pl) {
    char is[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(input->ndim == 3 || input->ndim == 4, false, CT_ERR_SHAPE,
                 "%s: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
                 "size: %s",
                 op, ct_shape_str(input->shape, input->ndim, is, sizeof is));
    const ct_tensor *all[3] = {input, weight, bias};
    if (!ct_check_same_device(op, all, 3) || !check_params(op, p)) return false;
    int64_t in[4] = {1, 1, 1, 1};
    memcpy(in + 4 - input->ndim, input->shape, sizeof(int64_t) * (size_t)input->ndim);
    if (!check_shapes(op, in, weight, bias, p) || !check_dtypes(op, input, weight, bias))
        return false;
    memset(pl, 0, sizeof *pl);
    pl->unbatched = input->ndim == 3;
    pl->n = in[0], pl->c = in[1], pl->h = in[2], pl->w = in[3];
    pl->o = weight->shape[0], pl->kh = weight->shape[2], pl->kw = weight->shape[3];
    pl->groups = p->groups, pl->cg = weight->shape[1], pl->og = pl->o / p->groups;
    pl->oh = (pl->h + 2 * p->padding[0] - p->dilation[0] * (pl->kh - 1) - 1) / p->stride[0] + 1;
    pl->ow = (pl->w + 2 * p->padding[1] - p->dilation[1] * (pl->kw - 1) - 1) / p->stride[1] + 1;
    pl->l = pl->oh * pl->ow;
    pl->kg = pl->cg * pl->kh * pl->kw;
    pl->pointwise = pl->kh == 1 && pl->kw == 1 && p->stride[0] == 1 && p->stride[1] == 1 &&
                    p->padding[0] == 0 && p->padding[1] == 0;
    const struct ct_backend_conv *cv = cti_backend(input)->ops->conv;
    const int64_t per_image = pl->c * pl->kh * pl->kw * pl->l;
    pl->chunk = cv && cv->cols_budget > 0 && per_image > 0 ? cv->cols_budget / per_image : pl->n;
    if (pl->chunk < 1) pl->chunk = 1;
    pl->dtype = input->dtype;
    pl->compute = input->dtype == CT_FLOAT16 || input->dtype == CT_BFLOAT16 ? CT_FLOAT32 : input->dtype;
    pl->p = *p;
    return true;
}

/* ---- building blocks ------------------------------------------------------------------ */

static ct_tensor *reshape3(const ct_tensor *t, int64_t a, int64_t b, int64_t c) {
    const int64_t shape[3] = {a, b, c};
    return cti_reshape(t, shape, 3);
}

/* t [a, b, c] as a contiguous [b, a, c] (t itself when already laid out so). */
static ct_tensor *swap01_contiguous(const ct_tensor *t) {
    static const int perm[3] = {1, 0, 2};
    ct_tensor *v = cti_permute(t, perm);
    ct_tensor *c = cti_contiguous(v);
    ct_decref(v);
    return c;
}

/* The backend's view of a chunk of nb images. */
static ct_conv2d_geom geom_of(const conv_plan *pl, int64_t nb) {
    const ct_conv2d_geom g = {nb,
                              pl->c,
                              {pl->h, pl->w},
                              {pl->kh, pl->kw},
                              {pl->p.stride[0], pl->p.stride[1]},
                              {pl->p.padding[0], pl->p.padding[1]},
                              {pl->p.dilation[0], pl->p.dilation[1]},
                              {pl->oh, pl->ow}};
    return g;
}

/* The column matrix [C*kH*kW, nb*L] of the images x [nb, C, H, W]. */
static ct_tensor *columns(const conv_plan *pl, const ct_tensor *x) {
    const int64_t nb = x->shape[0];
    if (pl->pointwise) { /* the pixels themselves, images moved into the columns */
        ct_tensor *x3 = reshape3(x, nb, pl->c, pl->l);
        ct_tensor *cols = swap01_contiguous(x3);
        ct_decref(x3);
        return cols;
    }
    const struct ct_backend_conv *cv = cti_backend(x)->ops->conv;
    CT_CHECK_NULL(cv && cv->im2col, CT_ERR_UNSUPPORTED, "conv2d: not implemented on %s",
                  cti_backend(x)->name);
    const int64_t shape[2] = {pl->c * pl->kh * pl->kw, nb * pl->l};
    ct_tensor *cols = cti_empty(shape, 2, x->dtype, x->storage->device);
    if (!cols) return NULL;
    const ct_conv2d_geom g = geom_of(pl, nb);
    ct_kview kc = ct_kview_of(cols), kx = ct_kview_of(x);
    if (cv->im2col(&kc, &kx, &g) != CT_OK) {
        ct_decref(cols);
        return NULL;
    }
    return cols;
}

/* dx [nb, C, H, W] (contiguous) = col2im(dcols). */
static bool col2im_into(const conv_plan *pl, ct_tensor *dx, const ct_tensor *dcols) {
    const struct ct_backend_conv *cv = cti_backend(dx)->ops->conv;
    CT_CHECK_RET(cv && cv->col2im, false, CT_ERR_UNSUPPORTED,
                 "conv2d_backward: not implemented on %s", cti_backend(dx)->name);
    const ct_conv2d_geom g = geom_of(pl, dx->shape[0]);
    ct_kview ki = ct_kview_of(dx), kc = ct_kview_of(dcols);
    return cv->col2im(&ki, &kc, &g) == CT_OK;
}

/* out [nb, O, OH, OW] from the product out' [O, nb*L], plus bias [O]. */
static ct_tensor *unpermute_output(const conv_plan *pl, const ct_tensor *prod, const ct_tensor *bias,
                                   int64_t nb) {
    const int64_t shape[4] = {nb, pl->o, pl->oh, pl->ow};
    const int64_t strides[4] = {pl->l, nb * pl->l, pl->ow, 1};
    ct_tensor *view = cti_as_strided(prod, shape, strides, 4, prod->offset);
    ct_tensor *out = NULL;
    if (bias) {
        const int64_t bshape[3] = {pl->o, 1, 1};
        ct_tensor *b3 = cti_view(bias, bshape, 3);
        out = cti_binary(CT_BIN_ADD, view, b3, 1.0);
        ct_decref(b3);
    } else {
        out = cti_contiguous(view);
    }
    ct_decref(view);
    return out;
}

/* ---- forward ----------------------------------------------------------------------------- */

/* out + bias broadcast over [N, O, OH, OW]; consumes out. NULL propagates. */
static ct_tensor *add_bias(const conv_plan *pl, ct_tensor *out, const ct_tensor *bias) {
    if (!out || !bias) return out;
    const int64_t bshape[3] = {pl->o, 1, 1};
    ct_tensor *b3 = cti_view(bias, bshape, 3);
    ct_tensor *sum = cti_binary(CT_BIN_ADD, out, b3, 1.0);
    ct_decref(b3);
    ct_decref(out);
    return sum;
}

/* 1×1, stride 1, no padding, one group: out[n] = W @ x[n] for all n in
 * one product (W broadcast over the batch). */
static ct_tensor *forward_pointwise(const conv_plan *pl, const ct_tensor *x, const ct_tensor *w,
                                    const ct_tensor *bias) {
    const int64_t wshape[2] = {pl->o, pl->c};
    ct_tensor *w2 = cti_reshape(w, wshape, 2);
    ct_tensor *x3 = reshape3(x, pl->n, pl->c, pl->l);
    ct_tensor *prod = cti_matmul(w2, x3);
    ct_decref(w2);
    ct_decref(x3);
    const int64_t shape[4] = {pl->n, pl->o, pl->oh, pl->ow};
    ct_tensor *out = cti_view(prod, shape, 4);
    ct_decref(prod);
    return add_bias(pl, out, bias);
}

/* One chunk of images x [nb, C, H, W] -> [nb, O, OH, OW]. */
static ct_tensor *forward_chunk(const conv_plan *pl, const ct_tensor *x, const ct_tensor *w3,
                                const ct_tensor *bias) {
    const int64_t nb = x->shape[0];
    ct_tensor *cols = columns(pl, x);
    ct_tensor *cols3 = cols ? reshape3(cols, pl->groups, pl->kg, nb * pl->l) : NULL;
    ct_tensor *prod = cti_matmul(w3, cols3); /* [groups, Og, nb*L] = [O, nb*L] */
    ct_decref(cols);
    ct_decref(cols3);
    ct_tensor *out = prod ? unpermute_output(pl, prod, bias, nb) : NULL;
    ct_decref(prod);
    return out;
}

/* x [N, C, H, W], w, bias already in the compute dtype. */
static ct_tensor *forward_compute(const conv_plan *pl, const ct_tensor *x, const ct_tensor *w,
                                  const ct_tensor *bias) {
    if (pl->pointwise && pl->groups == 1) return forward_pointwise(pl, x, w, bias);
    ct_tensor *w3 = reshape3(w, pl->groups, pl->og, pl->kg);
    if (!w3) return NULL;
    if (pl->n <= pl->chunk) {
        ct_tensor *out = forward_chunk(pl, x, w3, bias);
        ct_decref(w3);
        return out;
    }
    const int64_t shape[4] = {pl->n, pl->o, pl->oh, pl->ow};
    ct_tensor *out = cti_empty(shape, 4, pl->compute, x->storage->device);
    for (int64_t n0 = 0; out && n0 < pl->n; n0 += pl->chunk) {
        const int64_t nb = pl->n - n0 < pl->chunk ? pl->n - n0 : pl->chunk;
        ct_tensor *xs = cti_narrow(x, 0, n0, nb);
        ct_tensor *ys = xs ? forward_chunk(pl, xs, w3, bias) : NULL;
        ct_tensor *dst = ys ? cti_narrow(out, 0, n0, nb) : NULL;
        bool ok = dst && cti_copy(dst, ys) == CT_OK;
        ct_decref(xs);
        ct_decref(ys);
        ct_decref(dst);
        if (!ok) {
            ct_decref(out);
            out = NULL;
        }
    }
    ct_decref(w3);
    return out;
}

/* t as a batched [N, ...] tensor in the compute dtype. */
static ct_tensor *batched_compute(const conv_plan *pl, const ct_tensor *t) {
    ct_tensor *c = cti_cast(t, pl->compute);
    if (!c || !pl->unbatched) return c;
    ct_tensor *u = cti_unsqueeze(c, 0);
    ct_decref(c);
    return u;
}

/* The result in the operands' dtype, unbatched again if the input was. */
static ct_tensor *finish(const conv_plan *pl, ct_tensor *t, ct_dtype dt) {
    if (!t) return NULL;
    ct_tensor *c = cti_cast(t, dt);
    ct_decref(t);
    if (!c || !pl->unbatched) return c;
    ct_tensor *s = cti_squeeze_dim(c, 0);
    ct_decref(c);
    return s;
}

/* ---- whole convolutions of the backend (backend_conv.h: cuDNN) --------------------------- */

/* t as a batched ([N, ...]) contiguous tensor in its own dtype. */
static ct_tensor *batched_contiguous(const conv_plan *pl, const ct_tensor *t) {
    ct_tensor *c = cti_contiguous(t);
    if (!c || !pl->unbatched) return c;
    ct_tensor *u = cti_unsqueeze(c, 0);
    ct_decref(c);
    return u;
}

/* A whole-convolution entry of the backend (NULL: none). */
typedef ct_status (*whole_conv_fn)(const ct_kview *out, const ct_kview *a, const ct_kview *b,
                                   const ct_conv2d_geom *geom, int64_t groups);

/* A new contiguous tensor of `shape` (the operands' dtype) computed by fn
 * from a and b. *declined (nothing computed, no error) when fn is NULL or
 * declines: the caller then takes the im2col path. */
static ct_tensor *run_whole(const char *name, const conv_plan *pl, whole_conv_fn fn, const int64_t shape[4],
                            const ct_tensor *a, const ct_tensor *b, bool *declined) {
    *declined = true;
    if (!fn || pl->n == 0) return NULL;
    ct_tensor *out = cti_empty(shape, 4, pl->dtype, a->storage->device);
    if (!out) {
        *declined = false;
        return NULL;
    }
    const ct_conv2d_geom g = geom_of(pl, pl->n);
    ct_kview ko = ct_kview_of(out), ka = ct_kview_of(a), kb = ct_kview_of(b);
    ct_status st = CTI_PROFILED(a, name, fn(&ko, &ka, &kb, &g, pl->groups));
    *declined = st == CT_ERR_UNSUPPORTED;
    if (st == CT_OK) return out;
    ct_decref(out);
    return NULL;
}

/* conv2d(x, w) + bias (may be NULL), then relu when asked, in one call of
 * the backend's conv2d_forward_fused; *declined as run_whole. */
static ct_tensor *run_whole_fused(const conv_plan *pl, const struct ct_backend_conv *cv,
                                  const int64_t shape[4], const ct_tensor *x, const ct_tensor *w,
                                  const ct_tensor *bias, bool relu, bool *declined) {
    *declined = true;
    ct_tensor *b = bias ? cti_contiguous(bias) : NULL;
    ct_tensor *out = b || !bias ? cti_empty(shape, 4, pl->dtype, x->storage->device) : NULL;
    if (out) {
        const ct_conv2d_geom g = geom_of(pl, pl->n);
        ct_kview ko = ct_kview_of(out), kx = ct_kview_of(x), kw = ct_kview_of(w);
        ct_kview kb = b ? ct_kview_of(b) : ko;
        ct_status st = CTI_PROFILED(x, relu ? "conv2d_relu" : "conv2d",
                                    cv->conv2d_forward_fused(&ko, &kx, &kw, b ? &kb : NULL, relu, &g, pl->groups));
        *declined = st == CT_ERR_UNSUPPORTED;
        if (st != CT_OK) ct_decref(out), out = NULL;
    } else {
        *declined = false;
    }
    ct_decref(b);
    return out;
}

/* The forward through the backend's whole-convolution entries: with the
 * bias (and the relu when asked) inside when the backend can (*relu_done),
 * else conv2d_forward and the bias added here, in the operands' dtype;
 * *declined as run_whole. */
static ct_tensor *forward_whole(const conv_plan *pl, const ct_tensor *input, const ct_tensor *weight,
                                const ct_tensor *bias, bool relu, bool *declined, bool *relu_done) {
    const struct ct_backend_conv *cv = cti_backend(input)->ops->conv;
    *declined = true, *relu_done = false;
    if (!cv || !cv->conv2d_forward || pl->n == 0 || !ct_dtype_is_floating(pl->dtype)) return NULL;
    ct_tensor *x = batched_contiguous(pl, input), *w = cti_contiguous(weight), *out = NULL;
    const int64_t shape[4] = {pl->n, pl->o, pl->oh, pl->ow};
    if (x && w && (bias || relu) && cv->conv2d_forward_fused) {
        out = run_whole_fused(pl, cv, shape, x, w, bias, relu, declined);
        *relu_done = relu && out;
        if (out || !*declined) {
            ct_decref(x);
            ct_decref(w);
            return out;
        }
    }
    out = x && w ? run_whole("conv2d", pl, cv->conv2d_forward, shape, x, w, declined) : NULL;
    if (!x || !w) *declined = false;
    ct_decref(x);
    ct_decref(w);
    return add_bias(pl, out, bias);
}

/* conv2d, then relu when asked: inside the backend's convolution where it
 * can (*relu_done), else left to the caller. */
static ct_tensor *conv2d_forward(const char *op, const ct_tensor *input, const ct_tensor *weight,
                                 const ct_tensor *bias, const cti_conv2d_params *p, bool relu,
                                 bool *relu_done) {
    *relu_done = false;
    if (!input || !weight) return NULL;
    conv_plan pl;
    if (!plan_conv(op, input, weight, bias, p, &pl)) return NULL;
    bool declined;
    ct_tensor *whole = forward_whole(&pl, input, weight, bias, relu, &declined, relu_done);
    if (!declined) return finish(&pl, whole, pl.dtype);
    ct_tensor *x = batched_compute(&pl, input);
    ct_tensor *w = cti_cast(weight, pl.compute);
    ct_tensor *b = bias ? cti_cast(bias, pl.compute) : NULL;
    ct_tensor *out = NULL;
    if (x && w && (b || !bias)) {
        if (pl.n == 0) {
            const int64_t shape[4] = {0, pl.o, pl.oh, pl.ow};
            out = cti_empty(shape, 4, pl.compute, x->storage->device);
        } else {
            out = forward_compute(&pl, x, w, b);
        }
    }
    ct_decref(x);
    ct_decref(w);
    ct_decref(b);
    return finish(&pl, out, pl.dtype);
}

ct_tensor *cti_conv2d_forward(const ct_tensor *input, const ct_tensor *weight,
                              const ct_tensor *bias, const cti_conv2d_params *p) {
    bool relu_done;
    return conv2d_forward("conv2d", input, weight, bias, p, false, &relu_done);
}

ct_tensor *cti_conv2d_relu_forward(const ct_tensor *input, const ct_tensor *weight,
                                   const ct_tensor *bias, const cti_conv2d_params *p) {
    bool relu_done;
    ct_tensor *out = conv2d_forward("conv2d_relu", input, weight, bias, p, true, &relu_done);
    if (!out || relu_done) return out;
    ct_tensor *r = cti_unary(CT_UN_RELU, out, 0, 0);
    ct_decref(out);
    return r;
}

/* ct_conv_opts: an all-zero pair is PyTorch's default (NULL here). */
static const int64_t *given_pair(const int64_t pair[2]) { return pair[0] || pair[1] ? pair : NULL; }

static cti_conv2d_params conv_opts_params(const ct_conv_opts *o) {
    return cti_conv2d_params_make(given_pair(o->stride), given_pair(o->padding),
                                  given_pair(o->dilation), o->groups ? o->groups : 1);
}

ct_tensor *ct_conv2d_with_opts(const ct_tensor *input, const ct_tensor *weight,
                               const ct_tensor *bias, ct_conv_opts o) {
    cti_conv2d_params p = conv_opts_params(&o);
    CTI_AUTOCAST3("conv2d", input, weight, bias);
    return CTI_AUTOCAST_RESULT(cta_conv2d(input, weight, bias, &p));
}

ct_tensor *ct_conv2d_relu_with_opts(const ct_tensor *input, const ct_tensor *weight,
                                    const ct_tensor *bias, ct_conv_opts o) {
    cti_conv2d_params p = conv_opts_params(&o);
    CTI_AUTOCAST3("conv2d", input, weight, bias);
    return CTI_AUTOCAST_RESULT(cta_conv2d_relu(input, weight, bias, &p));
}

/* ---- backward ------------------------------------------------------------------------------ */

/* The gradient of images [n0, n0 + nb) of gy [N, O, OH, OW] with the
 * images moved into the columns: [groups, Og, nb*L], contiguous. */
static ct_tensor *grad_columns(const conv_plan *pl, const ct_tensor *gy, int64_t n0, int64_t nb) {
    ct_tensor *gs = cti_narrow(gy, 0, n0, nb);
    ct_tensor *g3 = reshape3(gs, nb, pl->o, pl->l);
    ct_tensor *gt = swap01_contiguous(g3); /* [O, nb, L] */
    ct_tensor *out = reshape3(gt, pl->groups, pl->og, nb * pl->l);
    ct_decref(gs);
    ct_decref(g3);
    ct_decref(gt);
    return out;
}

/* 1×1, stride 1, no padding, one group: dx[n] = W^T @ dy[n] in one product. */
static ct_tensor *grad_input_pointwise(const conv_plan *pl, const ct_tensor *gy,
                                       const ct_tensor *w) {
    const int64_t wshape[2] = {pl->o, pl->c};
    ct_tensor *w2 = cti_reshape(w, wshape, 2);
    ct_tensor *wt = cti_transpose(w2, 0, 1);
    ct_tensor *g3 = reshape3(gy, pl->n, pl->o, pl->l);
    ct_tensor *prod = cti_matmul(wt, g3); /* [N, C, L] */
    const int64_t shape[4] = {pl->n, pl->c, pl->h, pl->w};
    ct_tensor *dx = cti_view(prod, shape, 4);
    ct_decref(w2);
    ct_decref(wt);
    ct_decref(g3);
    ct_decref(prod);
    return dx;
}

/* dx[n0 : n0 + nb] = the input gradient of one chunk, from its column
 * gradient dcols [C*kH*kW, nb*L]. */
static bool grad_input_chunk(const conv_plan *pl, ct_tensor *dx, const ct_tensor *dcols,
                             int64_t n0, int64_t nb) {
    ct_tensor *dst = cti_narrow(dx, 0, n0, nb);
    bool ok = false;
    if (dst && pl->pointwise) { /* columns are the pixels: move the images back */
        const int64_t shape[4] = {nb, pl->c, pl->h, pl->w};
        const int64_t strides[4] = {pl->l, nb * pl->l, pl->w, 1};
        ct_tensor *v = cti_as_strided(dcols, shape, strides, 4, dcols->offset);
        ok = v && cti_copy(dst, v) == CT_OK;
        ct_decref(v);
    } else if (dst) {
        ok = col2im_into(pl, dst, dcols);
    }
    ct_decref(dst);
    return ok;
}

/* *acc += t (t consumed); *acc starts NULL. */
static bool accumulate(ct_tensor **acc, ct_tensor *t) {
    if (!t) return false;
    if (!*acc) {
        *acc = t;
        return true;
    }
    ct_tensor *sum = cti_binary(CT_BIN_ADD, *acc, t, 1.0);
    ct_decref(*acc);
    ct_decref(t);
    *acc = sum;
    return sum != NULL;
}

/* One chunk: the weight gradient's part (added to *gw) and the input
 * gradient's images (written into dx), each when asked for. */
static bool backward_chunk(const conv_plan *pl, const ct_tensor *gy, const ct_tensor *x,
                           const ct_tensor *w3, int64_t n0, int64_t nb, ct_tensor *dx,
                           ct_tensor **gw) {
    ct_tensor *gcols = grad_columns(pl, gy, n0, nb); /* [groups, Og, nb*L] */
    bool ok = gcols != NULL;
    if (ok && gw) {
        ct_tensor *xs = cti_narrow(x, 0, n0, nb);
        ct_tensor *cols = xs ? columns(pl, xs) : NULL;
        ct_tensor *cols3 = cols ? reshape3(cols, pl->groups, pl->kg, nb * pl->l) : NULL;
        ct_tensor *colst = cti_transpose(cols3, 1, 2);
        ok = accumulate(gw, cti_matmul(gcols, colst)); /* [groups, Og, Kg] */
        ct_decref(xs);
        ct_decref(cols);
        ct_decref(cols3);
        ct_decref(colst);
    }
    if (ok && dx) {
        ct_tensor *wt = cti_transpose(w3, 1, 2);
        ct_tensor *dcols = cti_matmul(wt, gcols); /* [groups, Kg, nb*L] */
        ok = dcols && grad_input_chunk(pl, dx, dcols, n0, nb);
        ct_decref(wt);
        ct_decref(dcols);
    }
    ct_decref(gcols);
    return ok;
}

/* gy, x, w batched and in the compute dtype; pl->n > 0. */
static bool backward_compute(const conv_plan *pl, const ct_tensor *gy, const ct_tensor *x,
                             const ct_tensor *w, ct_tensor **dx, ct_tensor **gw) {
    bool fast_dx = dx && pl->pointwise && pl->groups == 1;
    if (fast_dx) {
        *dx = grad_input_pointwise(pl, gy, w);
        if (!*dx) return false;
        if (!gw) return true;
    }
    ct_tensor *w3 = reshape3(w, pl->groups, pl->og, pl->kg);
    if (!w3) return false;
    ct_tensor *chunk_dx = NULL;
    if (dx && !fast_dx) {
        const int64_t shape[4] = {pl->n, pl->c, pl->h, pl->w};
        chunk_dx = *dx = cti_empty(shape, 4, pl->compute, x->storage->device);
    }
    bool ok = !dx || *dx;
    for (int64_t n0 = 0; ok && n0 < pl->n; n0 += pl->chunk) {
        const int64_t nb = pl->n - n0 < pl->chunk ? pl->n - n0 : pl->chunk;
        ok = backward_chunk(pl, gy, x, w3, n0, nb, chunk_dx, gw);
    }
    ct_decref(w3);
    if (ok && gw) {
        const int64_t shape[4] = {pl->o, pl->cg, pl->kh, pl->kw};
        ct_tensor *v = cti_view(*gw, shape, 4);
        ct_decref(*gw);
        *gw = v;
        ok = v != NULL;
    }
    return ok;
}

/* The sum of gy [N, O, OH, OW] over all dims but O. */
static ct_tensor *grad_bias_of(const ct_tensor *gy) {
    static const int dims[3] = {0, 2, 3};
    return cti_reduce(CT_RED_SUM, gy, dims, 3, false, 0.0);
}

/* grad_out against what the forward would have produced. */
static bool check_grad_out(const conv_plan *pl, const ct_tensor *grad_out, const ct_tensor *input) {
    const char *op = "conv2d_backward";
    const ct_tensor *both[2] = {input, grad_out};
    if (!ct_check_same_device(op, both, 2)) return false;
    const int64_t full[4] = {pl->n, pl->o, pl->oh, pl->ow};
    const int64_t *want = pl->unbatched ? full + 1 : full;
    const int nd = pl->unbatched ? 3 : 4;
    bool same = grad_out->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = grad_out->shape[d] == want[d];
    char ws[CT_SHAPE_STR_MAX], gs[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(same, false, CT_ERR_SHAPE,
                 "%s: expected grad_output of size %s (the output of conv2d), but got %s", op,
                 ct_shape_str(want, nd, ws, sizeof ws),
                 ct_shape_str(grad_out->shape, grad_out->ndim, gs, sizeof gs));
    CT_CHECK_RET(grad_out->dtype == input->dtype, false, CT_ERR_DTYPE,
                 "%s: expected scalar type %s but found %s", op, cti_scalar_type_name(input->dtype),
                 cti_scalar_type_name(grad_out->dtype));
    CT_CHECK_RET(ct_dtype_is_floating(input->dtype), false, CT_ERR_DTYPE,
                 "%s: \"slow_conv2d_cpu_grad_input\" not implemented for '%s'", op,
                 cti_scalar_type_name(input->dtype));
    return true;
}

/* The gradients the backend's whole-convolution entries take: *dx and *gw
 * (operands' dtype) for those wanted; each left NULL when its entry is
 * missing or declines (the im2col path then computes it). False on error. */
static bool backward_whole(const conv_plan *pl, const ct_tensor *grad_out, const ct_tensor *input,
                           const ct_tensor *weight, ct_tensor **dx, ct_tensor **gw) {
    const struct ct_backend_conv *cv = cti_backend(input)->ops->conv;
    if (!cv || pl->n == 0 || !ct_dtype_is_floating(pl->dtype) ||
        !(cv->conv2d_backward_input || cv->conv2d_backward_weight))
        return true;
    ct_tensor *gy = batched_contiguous(pl, grad_out), *x = batched_contiguous(pl, input),
              *w = cti_contiguous(weight);
    bool ok = gy && x && w, declined = true;
    if (ok && dx) {
        const int64_t shape[4] = {pl->n, pl->c, pl->h, pl->w};
        *dx = run_whole("conv2d_backward_input", pl, cv->conv2d_backward_input, shape, gy, w, &declined);
        ok = *dx || declined;
    }
    if (ok && gw) {
        const int64_t shape[4] = {pl->o, pl->cg, pl->kh, pl->kw};
        *gw = run_whole("conv2d_backward_weight", pl, cv->conv2d_backward_weight, shape, gy, x, &declined);
        ok = *gw || declined;
    }
    ct_decref(gy);
    ct_decref(x);
    ct_decref(w);
    return ok;
}

static void set_null(ct_tensor **a, ct_tensor **b, ct_tensor **c) {
    if (a) *a = NULL;
    if (b) *b = NULL;
    if (c) *c = NULL;
}

/* Gradients of an empty batch: zeros of the right shapes. */
static bool backward_empty(const conv_plan *pl, const ct_tensor *x, ct_tensor **dx,
                           ct_tensor **gw) {
    const int64_t xs[4] = {0, pl->c, pl->h, pl->w}, ws[4] = {pl->o, pl->cg, pl->kh, pl->kw};
    if (dx) *dx = cti_empty(xs, 4, pl->compute, x->storage->device);
    if (gw) *gw = cti_full(ws, 4, 0.0, pl->compute, x->storage->device);
    return (!dx || *dx) && (!gw || *gw);
}

ct_status cti_conv2d_backward(const ct_tensor *grad_out, const ct_tensor *input,
                              const ct_tensor *weight, const cti_conv2d_params *p,
                              ct_tensor **grad_input, ct_tensor **grad_weight,
                              ct_tensor **grad_bias) {
    set_null(grad_input, grad_weight, grad_bias);
    if (!grad_out || !input || !weight) {
        ct_status st = ct_last_status();
        return st != CT_OK ? st
                           : ct_error_set(CT_ERR_INVALID_ARG, "conv2d_backward: got a NULL tensor");
    }
    conv_plan pl;
    if (!plan_conv("conv2d_backward", input, weight, NULL, p, &pl) ||
        !check_grad_out(&pl, grad_out, input))
        return ct_last_status();
    ct_tensor *gy = batched_compute(&pl, grad_out);
    ct_tensor *x = batched_compute(&pl, input);
    ct_tensor *w = cti_cast(weight, pl.compute);
    ct_tensor *dx = NULL, *gw = NULL, *gb = NULL;
    ct_tensor **want_dx = grad_input ? &dx : NULL, **want_gw = grad_weight ? &gw : NULL;
    bool ok = gy && x && w;
    if (ok && (want_dx || want_gw) && pl.n > 0) {
        ok = backward_whole(&pl, grad_out, input, weight, want_dx, want_gw);
        if (dx) want_dx = NULL; /* the backend computed it */
        if (gw) want_gw = NULL;
    }
    if (ok && (want_dx || want_gw))
        ok = pl.n == 0 ? backward_empty(&pl, x, want_dx, want_gw)
                       : backward_compute(&pl, gy, x, w, want_dx, want_gw);
    if (ok && grad_bias) ok = (gb = grad_bias_of(gy)) != NULL;
    ct_decref(gy);
    ct_decref(x);
    ct_decref(w);
    if (ok && grad_input) {
        *grad_input = finish(&pl, dx, input->dtype); /* consumes dx */
        dx = NULL;
        ok = *grad_input != NULL;
    }
    if (ok && grad_weight) {
        ct_tensor *c = cti_cast(gw, weight->dtype);
        ct_decref(gw);
        gw = NULL;
        ok = (*grad_weight = c) != NULL;
    }
    if (ok && grad_bias) {
        ct_tensor *c = cti_cast(gb, input->dtype);
        ct_decref(gb);
        gb = NULL;
        ok = (*grad_bias = c) != NULL;
    }
    ct_decref(dx);
    ct_decref(gw);
    ct_decref(gb);
    if (ok) return CT_OK;
    if (grad_input) ct_decref(*grad_input);
    if (grad_weight) ct_decref(*grad_weight);
    if (grad_bias) ct_decref(*grad_bias);
    set_null(grad_input, grad_weight, grad_bias);
    return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_INTERNAL;
}
