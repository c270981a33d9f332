/*
 * cl_conv.c — the OpenCL backend's convolution primitives: launchers of
 * the im2col and col2im kernels of src/kernels/conv.kh (contracts:
 * src/core/backend_conv.h). Each enqueues one kernel on the current stream
 * and returns without waiting; the products go through ct_cl_matmul.
 */
#include <string.h>

#include "cl_ops.h"
#include "core/backend_conv.h"

/* Same layout as ct_kconv in src/kernels/conv.kh. */
typedef struct cl_kconv {
    cl_long batch, channels, in_h, in_w;
    cl_long k_h, k_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    cl_long out_h, out_w;
    cl_long im_off, im_sn, im_sc, im_sh, im_sw;
    cl_long cols_off;
    cl_long dtype;
} cl_kconv;

static cl_kconv kconv_of(const ct_conv2d_geom *g, const ct_kview *im, const ct_kview *cols) {
    cl_kconv k;
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

static int64_t numel_of(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

static ct_status cl_im2col(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *g) {
    const int64_t n = numel_of(cols);
    if (n == 0) return CT_OK;
    cl_kconv k = kconv_of(g, im, cols);
    cl_mem bc = (cl_mem)cols->data, bi = (cl_mem)im->data;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bc), CT_CLOPS_ARG(bi), CT_CLOPS_ARG(k)};
    return ct_clops_launch(cols->device, "ct_k_im2col", args, 3, (size_t)n, 0);
}

static ct_status cl_col2im(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *g) {
    CT_CHECK_STATUS(im->dtype == CT_FLOAT32 || im->dtype == CT_FLOAT64, CT_ERR_DTYPE,
                    "col2im: not implemented for '%s' on opencl", ct_dtype_name(im->dtype));
    CT_TRY(ct_clops_check_fp64(im->device, im->dtype, "col2im"));
    const int64_t n = numel_of(im);
    if (n == 0) return CT_OK;
    cl_kconv k = kconv_of(g, im, cols);
    cl_mem bi = (cl_mem)im->data, bc = (cl_mem)cols->data;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bi), CT_CLOPS_ARG(bc), CT_CLOPS_ARG(k)};
    return ct_clops_launch(im->device, "ct_k_col2im", args, 3, (size_t)n, 0);
}

/* Few large launches and GEMMs: 64 MiB of float32 per column matrix. */
const struct ct_backend_conv ct_cl_conv_ops = {
    .cols_budget = (int64_t)1 << 24,
    .im2col = cl_im2col,
    .col2im = cl_col2im,
};
