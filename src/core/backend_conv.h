/*
 * backend_conv.h — the convolution family of a backend's table (internal):
 * the two data-rearranging primitives of im2col convolution. The products
 * themselves go through the backend's existing `matmul` entry, so a backend
 * adds no second GEMM; src/ops/conv.c composes these pieces.
 *
 * Layout of the column matrix (one call covers a batch of N images):
 *   cols [C*kH*kW, N*OH*OW], contiguous, row r = (c*kH + i)*kW + j,
 *   column q = (n*OH + oh)*OW + ow, holding the input pixel
 *   im[n, c, oh*sH - pH + i*dH, ow*sW - pW + j*dW] (0 outside the image).
 * Images are the columns' slow index so that one GEMM with a weight
 * [O, C*kH*kW] covers the whole batch; groups are row blocks of cols.
 *
 * Contracts (src/ops/conv.c guarantees these before calling):
 *  - every view is on the backend's device, sizes are those of `geom`, and
 *    geom's output sizes follow PyTorch's formula (both at least 1);
 *  - im2col: `im` is 4-D [N, C, H, W] with any strides (non-negative, no
 *    overlap with cols); `cols` is contiguous and has im's dtype, which may
 *    be any dtype (elements are moved, never computed);
 *  - col2im: `im` [N, C, H, W] and `cols` are contiguous, float32 or
 *    float64 (the core computes 16-bit convolutions in float32); every
 *    element of `im` is written: the sum, over the kernel taps that read
 *    that pixel, of the matching cols entries (the adjoint of im2col);
 *  - a backend returns CT_OK or sets an error with ct_error_set and returns
 *    its code; device backends enqueue on the current stream.
 */
#ifndef CT_CORE_BACKEND_CONV_H
#define CT_CORE_BACKEND_CONV_H

#include "backend.h"

/* The geometry of one 2-D convolution; index 0 is height, 1 is width. */
typedef struct ct_conv2d_geom {
    int64_t batch;          /* N: images in this call */
    int64_t channels;       /* C: input channels of all groups */
    int64_t in_size[2];     /* H, W */
    int64_t kernel[2];      /* kH, kW */
    int64_t stride[2];      /* >= 1 */
    int64_t padding[2];     /* >= 0 */
    int64_t dilation[2];    /* >= 1 */
    int64_t out_size[2];    /* OH, OW */
} ct_conv2d_geom;

struct ct_backend_conv {
    /* The most elements one column matrix should hold (0: no limit). The
     * core splits a batch into chunks of images below it (at least one
     * image each): a CPU wants the matrix to stay in cache between im2col
     * and the product, a device wants few large launches. */
    int64_t cols_budget;
    /* cols = the column matrix of im (layout above). */
    ct_status (*im2col)(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *geom);
    /* im = the adjoint of im2col applied to cols (overwrites im). */
    ct_status (*col2im)(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *geom);

    /* ---- whole convolutions (optional; NULL: not provided) ----
     * A backend with a convolution library (cuDNN) takes a whole step of
     * conv2d here; src/ops/conv.c tries these first and composes im2col,
     * col2im and matmul when an entry is NULL or declines.
     *  - views: x [N, C, H, W], w [O, C/groups, kH, kW], y [N, O, OH, OW],
     *    all CONTIGUOUS (offset may be non-zero) and of one dtype: float32,
     *    float64, float16 or bfloat16 (the operands' own, not widened);
     *    geom->batch is N >= 1 and geom describes the whole batch;
     *  - the output view (y, dx or dw) is freshly allocated; the entry
     *    writes every element of it;
     *  - declining: an entry returns CT_ERR_UNSUPPORTED WITHOUT calling
     *    ct_error_set (a case the library does not cover, or the library
     *    switched off or absent), having written nothing but possibly its
     *    output view, which the core then discards for the im2col path.
     *    Any other failure sets an error as usual. */
    /* y = conv2d(x, w) without bias (the core adds the bias). */
    ct_status (*conv2d_forward)(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                const ct_conv2d_geom *geom, int64_t groups);
    /* y = conv2d(x, w) + bias, then max(y, 0) when relu, all inside the
     * convolution (bias: [O], contiguous, the operands' dtype, or NULL),
     * saving the core's separate passes over y; optional, and may decline
     * like the others. */
    ct_status (*conv2d_forward_fused)(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                      const ct_kview *bias, bool relu, const ct_conv2d_geom *geom,
                                      int64_t groups);
    /* dx = the gradient of conv2d with respect to its input, given dy. */
    ct_status (*conv2d_backward_input)(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                       const ct_conv2d_geom *geom, int64_t groups);
    /* dw = the gradient of conv2d with respect to its weight, given dy
     * (summed over the batch). */
    ct_status (*conv2d_backward_weight)(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *geom, int64_t groups);
};

#endif /* CT_CORE_BACKEND_CONV_H */
