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

/* A contiguous [O, Cg, kh', kw'] view of `buf` shaped like w but for the window. */
static ct_kview window_view(const ct_kview *w, const int64_t win[4], void *buf) {
    ct_kview v = *w;
    v.data = buf, v.offset = 0;
    v.shape[2] = win[1] - win[0], v.shape[3] = win[3] - win[2];
    v.strides[3] = 1, v.strides[2] = v.shape[3];
    v.strides[1] = v.shape[2] * v.shape[3], v.strides[0] = v.shape[1] * v.strides[1];
    return v;
}

/* Copies between a whole kernel [planes, KH, KW] and its window [planes,
 * kh, kw] at (i0, j0), one direction or the other, typed so that the loops
 * compile to plain moves: a 512×512 layer cut to its centre tap copies
 * 262,144 single elements, which per-row memcpy calls made cost more than
 * the convolution itself. Threaded over planes. */
#define CT_DEFINE_WINDOW_COPY(T, SUF)                                                          \
    static void window_copy_##SUF(T *restrict whole, T *restrict win, int64_t planes,          \
                                  int64_t KH, int64_t KW, int64_t i0, int64_t j0, int64_t kh,  \
                                  int64_t kw, bool to_window) {                                \
        _Pragma("omp parallel for if (planes * kh * kw >= CT_CPU_GRAIN)")                      \
        for (int64_t p = 0; p < planes; p++)                                                   \
            for (int64_t i = 0; i < kh; i++) {                                                 \
                T *restrict wrow = whole + (p * KH + i0 + i) * KW + j0;                        \
                T *restrict crow = win + (p * kh + i) * kw;                                    \
                for (int64_t j = 0; j < kw; j++) {                                             \
                    if (to_window)                                                             \
                        crow[j] = wrow[j];                                                     \
                    else                                                                       \
                        wrow[j] = crow[j];                                                     \
                }                                                                              \
            }                                                                                  \
    }

CT_DEFINE_WINDOW_COPY(float, f32)
CT_DEFINE_WINDOW_COPY(double, f64)

static void window_copy(const ct_kview *whole, char *buf, const int64_t win[4], bool to_window) {
    const int64_t planes = whole->shape[0] * whole->shape[1];
    const int64_t KH = whole->shape[2], KW = whole->shape[3], kh = win[1] - win[0], kw = win[3] - win[2];
    if (whole->dtype == CT_FLOAT32)
        window_copy_f32((float *)(void *)ct_cpu_base(whole), (float *)(void *)buf, planes, KH, KW, win[0],
                        win[2], kh, kw, to_window);
    else
        window_copy_f64((double *)(void *)ct_cpu_base(whole), (double *)(void *)buf, planes, KH, KW, win[0],
                        win[2], kh, kw, to_window);
}

/* float32 and float64 only (the im2col kernels' dtypes); w is contiguous, as
 * the whole-convolution entries get it. */
void *ct_cpu_conv_crop_weight(const ct_kview *w, const int64_t win[4], ct_kview *out) {
    const int64_t count = w->shape[0] * w->shape[1] * (win[1] - win[0]) * (win[3] - win[2]);
    char *buf = malloc((size_t)count * ct_dtype_size(w->dtype) + 1);
    if (!buf) return NULL;
    window_copy(w, buf, win, true);
    *out = window_view(w, win, buf);
    return buf;
}

void *ct_cpu_conv_crop_grad_buffer(const ct_kview *dw, const int64_t win[4], ct_kview *out) {
    const int64_t count = dw->shape[0] * dw->shape[1] * (win[1] - win[0]) * (win[3] - win[2]);
    void *buf = malloc((size_t)count * ct_dtype_size(dw->dtype) + 1);
    if (buf) *out = window_view(dw, win, buf);
    return buf;
}

void ct_cpu_conv_uncrop_grad(const ct_kview *dw, const int64_t win[4], void *buf) {
    memset(ct_cpu_base(dw), 0, (size_t)ct_cpu_numel(dw) * ct_dtype_size(dw->dtype));
    window_copy(dw, buf, win, false);
}
