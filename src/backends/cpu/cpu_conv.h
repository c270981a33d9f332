/*
 * cpu_conv.h — what the CPU convolution files share (internal): the kernel
 * tap geometry used by both im2col layouts, and the whole-convolution
 * kernels of cpu_conv_fused.c.
 *
 * A kernel tap (i, j) reads input row oh*sH + shift_h and column
 * ow*sW + shift_w for output (oh, ow); the outputs for which that lies inside
 * the image form one interval per axis, computed once per tap, so that the
 * copy and add loops over a tap's outputs need no bounds tests.
 */
#ifndef CT_CPU_CONV_H
#define CT_CPU_CONV_H

#include "../../core/backend_conv.h"

typedef struct ct_conv_tap {
    int64_t shift_h, shift_w; /* input position of output (0, 0) */
    int64_t h0, h1, w0, w1;   /* outputs [h0, h1) x [w0, w1) read inside the image */
} ct_conv_tap;

static inline int64_t ct_conv_ceil_div(int64_t a, int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static inline int64_t ct_conv_clamp(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* The outputs [*lo, *hi) of one axis whose input o*stride + shift lies in [0, in). */
static inline void ct_conv_inside(int64_t out, int64_t in, int64_t stride, int64_t shift,
                                  int64_t *lo, int64_t *hi) {
    *lo = ct_conv_clamp(ct_conv_ceil_div(-shift, stride), 0, out);
    *hi = ct_conv_clamp(ct_conv_ceil_div(in - shift, stride), *lo, out);
}

static inline ct_conv_tap ct_conv_tap_of(const ct_conv2d_geom *g, int64_t i, int64_t j) {
    ct_conv_tap t;
    t.shift_h = i * g->dilation[0] - g->padding[0];
    t.shift_w = j * g->dilation[1] - g->padding[1];
    ct_conv_inside(g->out_size[0], g->in_size[0], g->stride[0], t.shift_h, &t.h0, &t.h1);
    ct_conv_inside(g->out_size[1], g->in_size[1], g->stride[1], t.shift_w, &t.w0, &t.w1);
    return t;
}

/* The taps of all kH*kW kernel positions, row-major; NULL when out of memory. */
ct_conv_tap *ct_cpu_conv_taps(const ct_conv2d_geom *g);

/* ---- whole convolutions (cpu_conv_fused.c) ------------------------------------------
 * The backend's conv2d_forward, conv2d_backward_input and
 * conv2d_backward_weight entries (contracts: src/core/backend_conv.h).
 * float32 and float64 only: other dtypes, and shapes beyond BLAS's int
 * dimensions, are declined (CT_ERR_UNSUPPORTED, no error set). Chunks of
 * images are spread over the OpenMP threads, each running single-threaded
 * GEMMs on its own chunk, so that one parallel region covers a whole layer
 * and no [O, N*L] intermediate goes through memory. The weight gradient
 * sums the images in an order that depends only on the shapes, never on the
 * thread count or scheduling. */

/* y [N, O, OH, OW] = conv2d(x [N, C, H, W], w [O, C/groups, kH, kW]), no bias. */
ct_status ct_cpu_conv2d_forward(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                const ct_conv2d_geom *g, int64_t groups);

/* dx [N, C, H, W] = the gradient of conv2d with respect to x, given dy. */
ct_status ct_cpu_conv2d_backward_input(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                       const ct_conv2d_geom *g, int64_t groups);

/* dw [O, C/groups, kH, kW] = the gradient with respect to w, summed over the batch. */
ct_status ct_cpu_conv2d_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *g, int64_t groups);

/* ---- cropped kernels (cpu_conv_crop.c) ----------------------------------------------
 * When the kernel taps that ever read inside the image form a smaller
 * window [win[0], win[1]) × [win[2], win[3]) than the kernel, *cropped is
 * the equivalent convolution with that window as its kernel (true), else
 * false. crop_weight copies a contiguous weight to the window (a buffer the
 * caller frees; NULL when out of memory) and describes it in *out;
 * crop_grad_buffer makes an uninitialised one for a weight gradient, which
 * uncrop_grad writes back into dw with zeros for the cut taps. */
bool ct_cpu_conv_crop(const ct_conv2d_geom *g, ct_conv2d_geom *cropped, int64_t win[4]);
void *ct_cpu_conv_crop_weight(const ct_kview *w, const int64_t win[4], ct_kview *out);
void *ct_cpu_conv_crop_grad_buffer(const ct_kview *dw, const int64_t win[4], ct_kview *out);
void ct_cpu_conv_uncrop_grad(const ct_kview *dw, const int64_t win[4], void *buf);

#endif /* CT_CPU_CONV_H */
