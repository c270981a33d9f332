/*
 * cpu_conv.c — the CPU backend's convolution primitives, im2col and its
 * adjoint col2im (contracts and the column layout: src/core/backend_conv.h),
 * and its table of convolution entries. The whole-convolution entries
 * (cpu_conv_fused.c) take float32/float64; im2col and col2im serve the
 * other dtypes.
 *
 * Both work on runs of output columns: for one kernel tap, the output
 * positions that read inside the image form one interval per row, computed
 * once, so the inner loops have no bounds tests; with unit stride they are
 * plain copies (im2col) or vectorised adds (col2im), and the padding is
 * written with memset. The taps' intervals are computed once per call
 * (cpu_conv.h). im2col moves elements of any dtype by size and
 * threads over (tap, image) pairs; col2im threads over (image, channel)
 * planes, each owned by one thread, so sums need no atomics and every pixel
 * adds its taps in the same order on every run.
 */
#include <stdlib.h>
#include <string.h>

#include "../../core/backend_conv.h"
#include "../../core/error.h"
#include "cpu_conv.h"
#include "cpu_dnnl.h"
#include "cpu_internal.h"

ct_conv_tap *ct_cpu_conv_taps(const ct_conv2d_geom *g) {
    const int64_t kh = g->kernel[0], kw = g->kernel[1];
    ct_conv_tap *taps = malloc(sizeof(ct_conv_tap) * (size_t)(kh * kw > 0 ? kh * kw : 1));
    if (!taps) return NULL;
    for (int64_t i = 0; i < kh; i++)
        for (int64_t j = 0; j < kw; j++) taps[i * kw + j] = ct_conv_tap_of(g, i, j);
    return taps;
}

/* ---- im2col ------------------------------------------------------------------------ */

/* One (tap row r, image n) block of cols: OH*OW entries. `s` holds the
 * image's strides (n, c, h, w) in elements. Rows are short (OW is often
 * below 32), so the padding and the copy are plain loops, not calls. */
#define CT_DEFINE_IM2COL(T, SUF)                                                              \
    static void im2col_block_##SUF(const ct_conv2d_geom *g, const T *im, const int64_t *s,   \
                                   T *restrict dst, int64_t c, const ct_conv_tap *t) {       \
        const int64_t OW = g->out_size[1], sh = g->stride[0], sw = g->stride[1];             \
        const int64_t w0 = t->w0, w1 = t->w1, shift = t->shift_w;                             \
        const T *plane = im + c * s[1];                                                      \
        memset(dst, 0, (size_t)(t->h0 * OW) * sizeof(T));                                    \
        for (int64_t oh = t->h0; oh < t->h1; oh++) {                                         \
            T *restrict d = dst + oh * OW;                                                   \
            const T *restrict src = plane + (oh * sh + t->shift_h) * s[2];                   \
            for (int64_t ow = 0; ow < w0; ow++) d[ow] = 0;                                   \
            if (sw == 1 && s[3] == 1) {                                                      \
                for (int64_t ow = w0; ow < w1; ow++) d[ow] = src[ow + shift];                \
            } else {                                                                         \
                for (int64_t ow = w0; ow < w1; ow++) d[ow] = src[(ow * sw + shift) * s[3]];  \
            }                                                                                \
            for (int64_t ow = w1; ow < OW; ow++) d[ow] = 0;                                  \
        }                                                                                    \
        memset(dst + t->h1 * OW, 0, (size_t)((g->out_size[0] - t->h1) * OW) * sizeof(T));    \
    }                                                                                        \
                                                                                             \
    static void im2col_##SUF(const ct_conv2d_geom *g, const ct_conv_tap *taps, const T *im,  \
                             const int64_t *s, T *cols) {                                    \
        const int64_t kk = g->kernel[0] * g->kernel[1];                                      \
        const int64_t rows = g->channels * kk, n = g->batch;                                 \
        const int64_t L = g->out_size[0] * g->out_size[1], NL = n * L;                       \
        _Pragma("omp parallel for collapse(2) if (rows * NL >= CT_CPU_GRAIN)")               \
        for (int64_t r = 0; r < rows; r++)                                                   \
            for (int64_t b = 0; b < n; b++)                                                  \
                im2col_block_##SUF(g, im + b * s[0], s, cols + r * NL + b * L, r / kk,       \
                                   &taps[r % kk]);                                           \
    }

CT_DEFINE_IM2COL(uint8_t, u8)
CT_DEFINE_IM2COL(uint16_t, u16)
CT_DEFINE_IM2COL(uint32_t, u32)
CT_DEFINE_IM2COL(uint64_t, u64)

static ct_status cpu_im2col(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *g) {
    if (ct_cpu_numel(cols) == 0) return CT_OK;
    const size_t esz = ct_dtype_size(im->dtype);
    if (esz != 1 && esz != 2 && esz != 4 && esz != 8)
        return ct_error_set(CT_ERR_DTYPE, "im2col: not implemented for '%s' on cpu",
                            ct_dtype_name(im->dtype));
    ct_conv_tap *taps = ct_cpu_conv_taps(g);
    if (!taps) return ct_error_set(CT_ERR_OOM, "im2col: out of memory");
    const void *src = ct_cpu_base(im);
    void *dst = ct_cpu_base(cols);
    switch (esz) {
    case 1: im2col_u8(g, taps, src, im->strides, dst); break;
    case 2: im2col_u16(g, taps, src, im->strides, dst); break;
    case 4: im2col_u32(g, taps, src, im->strides, dst); break;
    default: im2col_u64(g, taps, src, im->strides, dst); break;
    }
    free(taps);
    return CT_OK;
}

/* ---- col2im ------------------------------------------------------------------------ */

/* Plane (image b, channel c) of im = the sum of its taps' column entries. */
#define CT_DEFINE_COL2IM(T, SUF)                                                              \
    static void col2im_plane_##SUF(const ct_conv2d_geom *g, const ct_conv_tap *taps,          \
                                   T *restrict plane, const T *cols, int64_t b, int64_t c) { \
        const int64_t kk = g->kernel[0] * g->kernel[1], W = g->in_size[1];                   \
        const int64_t OW = g->out_size[1], sh = g->stride[0], sw = g->stride[1];             \
        const int64_t L = g->out_size[0] * OW, NL = g->batch * L;                            \
        memset(plane, 0, (size_t)(g->in_size[0] * W) * sizeof(T));                            \
        for (int64_t k = 0; k < kk; k++) {                                                   \
            const ct_conv_tap *t = &taps[k];                                                 \
            const T *src = cols + (c * kk + k) * NL + b * L;                                 \
            for (int64_t oh = t->h0; oh < t->h1; oh++) {                                     \
                T *restrict d = plane + (oh * sh + t->shift_h) * W + t->shift_w;             \
                const T *restrict s = src + oh * OW;                                         \
                if (sw == 1) {                                                               \
                    _Pragma("omp simd") for (int64_t ow = t->w0; ow < t->w1; ow++)           \
                        d[ow] += s[ow];                                                      \
                } else {                                                                     \
                    for (int64_t ow = t->w0; ow < t->w1; ow++) d[ow * sw] += s[ow];          \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
                                                                                             \
    static void col2im_##SUF(const ct_conv2d_geom *g, const ct_conv_tap *taps, T *im,        \
                             const T *cols) {                                                \
        const int64_t planes = g->batch * g->channels;                                       \
        const int64_t hw = g->in_size[0] * g->in_size[1];                                    \
        const int64_t work =                                                                 \
            planes * g->kernel[0] * g->kernel[1] * g->out_size[0] * g->out_size[1];          \
        _Pragma("omp parallel for if (work >= CT_CPU_GRAIN && planes > 1)")                  \
        for (int64_t p = 0; p < planes; p++)                                                 \
            col2im_plane_##SUF(g, taps, im + p * hw, cols, p / g->channels,                  \
                               p % g->channels);                                             \
    }

CT_DEFINE_COL2IM(float, f32)
CT_DEFINE_COL2IM(double, f64)

static ct_status cpu_col2im(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *g) {
    if (ct_cpu_numel(im) == 0) return CT_OK;
    if (im->dtype != CT_FLOAT32 && im->dtype != CT_FLOAT64)
        return ct_error_set(CT_ERR_DTYPE, "col2im: not implemented for '%s' on cpu",
                            ct_dtype_name(im->dtype));
    ct_conv_tap *taps = ct_cpu_conv_taps(g);
    if (!taps) return ct_error_set(CT_ERR_OOM, "col2im: out of memory");
    void *dst = ct_cpu_base(im);
    const void *src = ct_cpu_base(cols);
    if (im->dtype == CT_FLOAT32)
        col2im_f32(g, taps, dst, src);
    else
        col2im_f64(g, taps, dst, src);
    free(taps);
    return CT_OK;
}

/* ---- whole convolutions: oneDNN first, then the im2col kernels --------------------------- */

/* The im2col kernels on the cropped convolution where the kernel hangs over
 * the padding (cpu_conv_crop.c); only their dtypes are worth the copy. */
static bool croppable(const ct_kview *v, const ct_conv2d_geom *g, ct_conv2d_geom *cg, int64_t win[4]) {
    return (v->dtype == CT_FLOAT32 || v->dtype == CT_FLOAT64) && ct_cpu_conv_crop(g, cg, win);
}

/* ct_cpu_conv2d_forward or ct_cpu_conv2d_backward_input: out from `a` and the weight w. */
typedef ct_status (*weight_conv_fn)(const ct_kview *out, const ct_kview *a, const ct_kview *w,
                                    const ct_conv2d_geom *g, int64_t groups);

/* The forward or the input gradient, both read the weight: on the cropped
 * weight where the kernel hangs over the padding. */
static ct_status im2col_with_weight(weight_conv_fn fn, const char *op, const ct_kview *out,
                                    const ct_kview *a, const ct_kview *w, const ct_conv2d_geom *g,
                                    int64_t groups) {
    ct_conv2d_geom cg;
    int64_t win[4];
    if (!croppable(w, g, &cg, win)) return fn(out, a, w, g, groups);
    ct_kview wc;
    void *buf = ct_cpu_conv_crop_weight(w, win, &wc);
    if (!buf) return ct_error_set(CT_ERR_OOM, "%s: out of memory cropping the weight", op);
    ct_status st = fn(out, a, &wc, &cg, groups);
    free(buf);
    return st;
}

static ct_status im2col_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *g, int64_t groups) {
    ct_conv2d_geom cg;
    int64_t win[4];
    if (!croppable(dw, g, &cg, win)) return ct_cpu_conv2d_backward_weight(dw, dy, x, g, groups);
    ct_kview dwc;
    void *buf = ct_cpu_conv_crop_grad_buffer(dw, win, &dwc);
    if (!buf) return ct_error_set(CT_ERR_OOM, "conv2d_backward: out of memory for the weight gradient");
    ct_status st = ct_cpu_conv2d_backward_weight(&dwc, dy, x, &cg, groups);
    if (st == CT_OK) ct_cpu_conv_uncrop_grad(dw, win, buf);
    free(buf);
    return st;
}

static ct_status conv_forward(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                              const ct_conv2d_geom *g, int64_t groups) {
    ct_status st = ct_cpu_dnnl_conv2d(CT_CPU_CONV_FORWARD, y, x, w, NULL, false, g, groups);
    return st != CT_ERR_UNSUPPORTED ? st : im2col_with_weight(ct_cpu_conv2d_forward, "conv2d", y, x, w, g, groups);
}

/* Only oneDNN adds the bias and applies the relu inside; otherwise the core
 * does them after conv_forward. */
static ct_status conv_forward_fused(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                    const ct_kview *bias, bool relu, const ct_conv2d_geom *g,
                                    int64_t groups) {
    return ct_cpu_dnnl_conv2d(CT_CPU_CONV_FORWARD, y, x, w, bias, relu, g, groups);
}

static ct_status conv_backward_input(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                     const ct_conv2d_geom *g, int64_t groups) {
    ct_status st = ct_cpu_dnnl_conv2d(CT_CPU_CONV_BACKWARD_INPUT, dx, dy, w, NULL, false, g, groups);
    return st != CT_ERR_UNSUPPORTED
               ? st
               : im2col_with_weight(ct_cpu_conv2d_backward_input, "conv2d_backward", dx, dy, w, g, groups);
}

static ct_status conv_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                      const ct_conv2d_geom *g, int64_t groups) {
    ct_status st = ct_cpu_dnnl_conv2d(CT_CPU_CONV_BACKWARD_WEIGHT, dw, dy, x, NULL, false, g, groups);
    return st != CT_ERR_UNSUPPORTED ? st : im2col_backward_weight(dw, dy, x, g, groups);
}

/* 1 MiB of float32: the column matrix of a chunk stays in L2 between
 * im2col and the GEMM that reads it. Measured on the W4 and ResNet-18
 * layer shapes, 2^18 to 2^19 elements run up to twice as fast as one
 * matrix for the whole batch; larger chunks lose the cache. */
const struct ct_backend_conv ct_cpu_conv_ops = {
    .cols_budget = (int64_t)1 << 18,
    .im2col = cpu_im2col,
    .col2im = cpu_col2im,
    .conv2d_forward = conv_forward,
    .conv2d_forward_fused = conv_forward_fused,
    .conv2d_backward_input = conv_backward_input,
    .conv2d_backward_weight = conv_backward_weight,
};
