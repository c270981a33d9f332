/*
 * cpu_conv_crop.c — convolutions whose kernel hangs over the padding for
 * every output, run as the smaller convolution they really are.
 *
 * Why: at the ends of a network the planes are tiny. ResNet-18 at 32×32
 * input runs 3×3 convolutions on 1×1 planes (padding 1): only the centre
 * tap ever reads the image, the other eight multiply padding zeros, and an
 * im2col product does nine times the work it needs (oneDNN's direct
 * kernels skip such taps by themselves). Here the taps that read inside the
 * image for at least one output form a window [i0, i1) × [j0, j1) of the
 * kernel; the convolution equals one with the window as its kernel, the
 * padding reduced by the cut (it may become negative: the first output then
 * starts inside the image), and the same output size. The weight is copied
 * to the window's shape (it is small), and a weight gradient is computed for
 * the window and written back with zeros for the cut taps, which never see
 * the image.
 */
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "cpu_conv.h"
#include "cpu_internal.h"

/* The kernel rows (or columns) [*first, *last) of one axis that read inside
 * the image for some output; false when that is the whole axis. */
static bool axis_window(int64_t out, int64_t in, int64_t stride, int64_t dilation,
                        int64_t padding, int64_t kernel, int64_t *first, int64_t *last) {
    *first = kernel, *last = 0;
    for (int64_t i = 0; i < kernel; i++) {
        int64_t lo, hi;
        ct_conv_inside(out, in, stride, i * dilation - padding, &lo, &hi);
        if (hi > lo) {
            if (*first == kernel) *first = i;
            *last = i + 1;
        }
    }
    return *first < *last && *last - *first < kernel;
}

bool ct_cpu_conv_crop(const ct_conv2d_geom *g, ct_conv2d_geom *cropped, int64_t win[4]) {
    int64_t i0, i1, j0, j1;
    bool rows = axis_window(g->out_size[0], g->in_size[0], g->stride[0], g->dilation[0],
                            g->padding[0], g->kernel[0], &i0, &i1);
    bool cols = axis_window(g->out_size[1], g->in_size[1], g->stride[1], g->dilation[1],
                            g->padding[1], g->kernel[1], &j0, &j1);
    /* a whole axis over padding (first == kernel) leaves nothing to cut to */
    if (!rows) i0 = 0, i1 = g->kernel[0];
    if (!cols) j0 = 0, j1 = g->kernel[1];
    if ((!rows && !cols) || i0 >= i1 || j0 >= j1) return false;
    *cropped = *g;
    cropped->kernel[0] = i1 - i0, cropped->kernel[1] = j1 - j0;
    cropped->padding[0] = g->padding[0] - i0 * g->dilation[0];
    cropped->padding[1] = g->padding[1] - j0 * g->dilation[1];
    win[0] = i0, win[1] = i1, win[2] = j0, win[3] = j1;
    return true;
}

/* Rows of one to three elements (the common case: a 3×3 kernel cut to its
 * centre) are too short for a memcpy call to pay. */
static void copy_row(char *dst, const char *src, int64_t count, size_t es) {
    if (es == sizeof(float) && count <= 3) {
        for (int64_t k = 0; k < count; k++) ((float *)(void *)dst)[k] = ((const float *)(const void *)src)[k];
        return;
    }
    memcpy(dst, src, (size_t)count * es);
}

/* A contiguous [O, Cg, kh', kw'] view of `buf` shaped like w but for the window. */
static ct_kview window_view(const ct_kview *w, const int64_t win[4], void *buf) {
    ct_kview v = *w;
    v.data = buf, v.offset = 0;
    v.shape[2] = win[1] - win[0], v.shape[3] = win[3] - win[2];
    v.strides[3] = 1, v.strides[2] = v.shape[3];
    v.strides[1] = v.shape[2] * v.shape[3], v.strides[0] = v.shape[1] * v.strides[1];
    return v;
}

void *ct_cpu_conv_crop_weight(const ct_kview *w, const int64_t win[4], ct_kview *out) {
    const size_t es = ct_dtype_size(w->dtype);
    const int64_t planes = w->shape[0] * w->shape[1], kh = win[1] - win[0], kw = win[3] - win[2];
    char *buf = malloc((size_t)(planes * kh * kw) * es + 1);
    if (!buf) return NULL;
    const char *src = ct_cpu_base(w); /* contiguous, as the whole-convolution entries get it */
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < kh; i++)
            copy_row(buf + (size_t)((p * kh + i) * kw) * es,
                     src + (size_t)((p * w->shape[2] + win[0] + i) * w->shape[3] + win[2]) * es, kw, es);
    *out = window_view(w, win, buf);
    return buf;
}

void *ct_cpu_conv_crop_grad_buffer(const ct_kview *dw, const int64_t win[4], ct_kview *out) {
    const int64_t count = dw->shape[0] * dw->shape[1] * (win[1] - win[0]) * (win[3] - win[2]);
    void *buf = malloc((size_t)count * ct_dtype_size(dw->dtype) + 1);
    if (buf) *out = window_view(dw, win, buf);
    return buf;
}

void ct_cpu_conv_uncrop_grad(const ct_kview *dw, const int64_t win[4], const void *buf) {
    const size_t es = ct_dtype_size(dw->dtype);
    const int64_t planes = dw->shape[0] * dw->shape[1], kh = win[1] - win[0], kw = win[3] - win[2];
    char *dst = ct_cpu_base(dw);
    memset(dst, 0, (size_t)(planes * dw->shape[2] * dw->shape[3]) * es);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < kh; i++)
            copy_row(dst + (size_t)((p * dw->shape[2] + win[0] + i) * dw->shape[3] + win[2]) * es,
                     (const char *)buf + (size_t)((p * kh + i) * kw) * es, kw, es);
}
