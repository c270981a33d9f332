/*
 * gpu_conv.c — the GPU backends' convolution columns (ct_gpu_conv_ops),
 * shared by OpenCL and CUDA (see gpu.h): launchers of the im2col and col2im
 * kernels of src/kernels/conv.kh, contracts in src/core/backend_conv.h.
 *
 * Each enqueues one kernel on the current stream and returns without
 * waiting; the products go through the backend's matmul. CUDA's table
 * (cu_dnn.c) puts cuDNN's convolutions beside these entries.
 */
#include <string.h>

#include "gpu.h"
#include "core/backend_conv.h"


static ct_kconv kconv_of(const ct_conv2d_geom *g, const ct_kview *im, const ct_kview *cols) {
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

/* One work item per element of dst: (dst buffer, src buffer, geometry). */
static ct_status launch_columns(ct_kernel_id kernel, const ct_kview *dst, const ct_kview *src,
                                const ct_kconv *k) {
    const int64_t n = ct_gpu_meta_of(dst).numel;
    if (n == 0) return CT_OK;
    ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_BUF(src), CT_GPU_ARG(*k)};
    return ct_gpu_of(dst)->launch(dst->device, kernel, args, 3, (size_t)n, 0);
}

static ct_status ct_gpu_im2col(const ct_kview *cols, const ct_kview *im, const ct_conv2d_geom *g) {
    ct_kconv k = kconv_of(g, im, cols);
    return launch_columns(CT_KID(ct_k_im2col), cols, im, &k);
}

static ct_status ct_gpu_col2im(const ct_kview *im, const ct_kview *cols, const ct_conv2d_geom *g) {
    CT_CHECK_STATUS(im->dtype == CT_FLOAT32 || im->dtype == CT_FLOAT64, CT_ERR_DTYPE,
                    "col2im: not implemented for '%s' on %s", ct_dtype_name(im->dtype),
                    ct_device_type_name(im->device_type));
    CT_TRY(ct_gpu_check_fp64(im, im->dtype, "col2im"));
    ct_kconv k = kconv_of(g, im, cols);
    return launch_columns(CT_KID(ct_k_col2im), im, cols, &k);
}

/* Few large launches and GEMMs: 64 MiB of float32 per column matrix. */
const struct ct_backend_conv ct_gpu_conv_ops = {
    .cols_budget = (int64_t)1 << 24,
    .im2col = ct_gpu_im2col,
    .col2im = ct_gpu_col2im,
};
