/*
 * gpu_linalg.c — the integer matrix product of the GPU backends, shared by
 * OpenCL and CUDA (see gpu.h). Float products go through each backend's
 * BLAS (CLBlast, cuBLAS); integers have no BLAS, so both run the portable
 * kernel of src/kernels/matmul_int.kh with the same host code.
 */
#include "gpu.h"

/* Same layout as ct_kmm in src/kernels/matmul_int.kh. */
typedef struct gpu_kmm {
    int64_t batch, m, n, k;
    int64_t a_off, a_sb, a_sr, a_sc;
    int64_t b_off, b_sb, b_sr, b_sc;
    int64_t c_off;
    int64_t dtype;
} gpu_kmm;

ct_status ct_gpu_matmul_int(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    gpu_kmm p = {out->shape[0], out->shape[1], out->shape[2], a->shape[2],   a->offset,
                 a->strides[0], a->strides[1], a->strides[2], b->offset,     b->strides[0],
                 b->strides[1], b->strides[2], out->offset,   (int64_t)out->dtype};
    ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_BUF(a), CT_GPU_BUF(b), CT_GPU_ARG(p)};
    return ct_gpu_of(out)->launch(out->device, CT_KID(ct_k_matmul_int), args, 4,
                                  (size_t)(p.batch * p.m * p.n), 0);
}
