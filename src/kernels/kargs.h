/*
 * kargs.h — the argument structs of the device kernels, defined once for
 * the kernels (OpenCL C and CUDA, through kdefs.h) and for the host code
 * that fills them (src/backends/gpu/). Kernels take them by value; the host
 * passes their bytes (cudaLaunchKernel, clSetKernelArg), so both sides must
 * agree on the layout: every field is a 64-bit integer (no padding on any
 * compiler), and the host's static asserts below pin each size.
 *
 * Offsets and strides count elements; dtypes are ct_dtype values.
 */
#ifndef CT_KERNELS_KARGS_H
#define CT_KERNELS_KARGS_H

#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)
typedef k_long ct_ki64; /* kdefs.h */
#else
#include <stdint.h>
typedef int64_t ct_ki64;
#endif

#define CT_K_MAX_DIMS 8

/* A strided tensor (the host makes it with ct_gpu_meta_of and merges
 * dimensions that are contiguous in every operand). */
typedef struct ct_kmeta {
    ct_ki64 shape[CT_K_MAX_DIMS];
    ct_ki64 strides[CT_K_MAX_DIMS];
    ct_ki64 offset;
    ct_ki64 ndim;
    ct_ki64 numel;
    ct_ki64 dtype;
} ct_kmeta;

/* im2col / col2im (conv.kh): the geometry (ct_conv2d_geom) and where the
 * two tensors lie: the image's element offset and strides (n, c, h, w),
 * the columns' offset. */
typedef struct ct_kconv {
    ct_ki64 batch, channels, in_h, in_w;
    ct_ki64 k_h, k_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    ct_ki64 out_h, out_w;
    ct_ki64 im_off, im_sn, im_sc, im_sh, im_sw;
    ct_ki64 cols_off;
    ct_ki64 dtype;
} ct_kconv;

/* Integer matmul (matmul_int.kh): element (b, r, c) of an operand lies at
 * off + b*sb + r*sr + c*sc elements into its buffer. */
typedef struct ct_kmm {
    ct_ki64 batch, m, n, k;
    ct_ki64 a_off, a_sb, a_sr, a_sc;
    ct_ki64 b_off, b_sb, b_sr, b_sc;
    ct_ki64 c_off;
    ct_ki64 dtype;
} ct_kmm;

/* Pooling (nn.kh): the geometry of ct_pool2d_geom. */
typedef struct ct_knn_pool {
    ct_ki64 planes, in_h, in_w, out_h, out_w;
    ct_ki64 k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w;
    ct_ki64 count_include_pad, divisor_override;
} ct_knn_pool;

/* Class losses (loss.kh): geometry and where each operand lies. Element
 * (n, c, s) of the input is at in_off + (n * classes + c) * inner + s;
 * target and per-row values are indexed by row r = n * inner + s. */
typedef struct ct_kloss {
    ct_ki64 batch, classes, inner, ignore_index;
    ct_ki64 in_off, tgt_off, w_off, out_off, aux_off, g_off, g_stride;
    ct_ki64 in_dtype, out_dtype, g_dtype;
    ct_ki64 has_w, has_aux, logits;
} ct_kloss;

/* Elementwise losses (loss.kh). Operand slots: 0 out / grad_in,
 * 1 grad_target, 2 grad_out, 3 input, 4 target, 5 weight, 6 pos_weight. */
#define KPW_N 7
typedef struct ct_kpw {
    ct_ki64 shape[CT_K_MAX_DIMS];
    ct_ki64 strides[KPW_N][CT_K_MAX_DIMS];
    ct_ki64 offset[KPW_N];
    ct_ki64 dtype[KPW_N];
    ct_ki64 has[KPW_N];
    ct_ki64 ndim, numel, op, backward;
} ct_kpw;

/* Optimizer updates (loss.kh): where the operands lie and the flags; all
 * operands contiguous with n elements. sgd: s0 = momentum buffer; adam:
 * s0, s1, s2 = m, v, vmax. */
typedef struct ct_koptim {
    ct_ki64 n;
    ct_ki64 p_off, g_off, s0_off, s1_off, s2_off;
    ct_ki64 pdt, sdt;
    ct_ki64 has_s0, has_s2, first, nesterov, maximize, has_wd, decoupled, amsgrad;
} ct_koptim;

/* GradScaler's check-and-unscale (loss.kh): up to CT_K_AMP_TENSORS
 * contiguous gradients per launch, one buffer argument each; gradient j
 * owns items [start[j], start[j + 1]), its element k lies at off[j] + k. 16
 * buffers and this struct stay under OpenCL's guaranteed 1,024 bytes of
 * kernel arguments. */
#define CT_K_AMP_TENSORS 16
typedef struct ct_kamp {
    ct_ki64 count, found_off;
    ct_ki64 start[CT_K_AMP_TENSORS + 1];
    ct_ki64 off[CT_K_AMP_TENSORS];
    ct_ki64 dtype[CT_K_AMP_TENSORS];
} ct_kamp;

#if !defined(__OPENCL_VERSION__) && !defined(__CUDACC__)
_Static_assert(sizeof(ct_kmeta) == (2 * CT_K_MAX_DIMS + 4) * 8, "ct_kmeta: 64-bit fields only");
_Static_assert(sizeof(ct_kconv) == 21 * 8, "ct_kconv: 64-bit fields only");
_Static_assert(sizeof(ct_kmm) == 14 * 8, "ct_kmm: 64-bit fields only");
_Static_assert(sizeof(ct_knn_pool) == 15 * 8, "ct_knn_pool: 64-bit fields only");
_Static_assert(sizeof(ct_kloss) == 17 * 8, "ct_kloss: 64-bit fields only");
_Static_assert(sizeof(ct_kpw) == (CT_K_MAX_DIMS + KPW_N * CT_K_MAX_DIMS + 3 * KPW_N + 4) * 8,
               "ct_kpw: 64-bit fields only");
_Static_assert(sizeof(ct_koptim) == 16 * 8, "ct_koptim: 64-bit fields only");
_Static_assert(sizeof(ct_kamp) == (3 * CT_K_AMP_TENSORS + 3) * 8, "ct_kamp: 64-bit fields only");
#endif

#endif /* CT_KERNELS_KARGS_H */
