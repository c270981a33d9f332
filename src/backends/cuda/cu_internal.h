/*
 * cu_internal.h — what the CUDA backend's files share (internal): error
 * checking, device selection, the current stream, launch helpers and the
 * tables the files contribute to ct_cuda_backend (cu_backend.c).
 *
 * The CUDA backend mirrors the OpenCL one (src/backends/opencl/): memory
 * handles are device pointers to whole segments of the caching allocator; a
 * ct_kview's `data` is that pointer and its `offset` counts elements from it,
 * so kernels receive (base pointer, element offset) exactly as on OpenCL and
 * the portable kernels of src/kernels/ run unchanged. Every op is launched on
 * the calling thread's current stream of its device (ct_cu_stream) and
 * returns without waiting.
 *
 * This header is C and C++ (it is included by the .c files and by the .cu
 * translation unit, cu_kernels.cu).
 */
#ifndef CT_CU_INTERNAL_H
#define CT_CU_INTERNAL_H

#include <cuda_runtime_api.h>

/* The core's internal headers have no extern "C" guards: under nvcc (C++)
 * their declarations (ct_error_set, ct_backend_for) must still get C
 * linkage. The C library headers they include come first, outside the
 * block, because C++'s wrappers of them declare overloads. */
#ifdef __cplusplus
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
extern "C" {
#endif
#include "core/backend.h"
#include "core/error.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Turn a failed CUDA runtime call into a ctorch error: CT_ERR_OOM for
 * cudaErrorMemoryAllocation, CT_ERR_DEVICE for no device / no driver /
 * invalid device, CT_ERR_BACKEND otherwise; the message names `what` (the
 * call) and CUDA's error name and string. Also clears CUDA's sticky
 * last-error for non-sticky errors. Returns the ctorch code (CT_OK on
 * cudaSuccess). */
ct_status ct_cu_check(cudaError_t err, const char *what);
#define CT_CU_TRY(call)                                          \
    do {                                                         \
        ct_status ct_cu_st_ = ct_cu_check((call), #call);        \
        if (ct_cu_st_ != CT_OK) return ct_cu_st_;                \
    } while (0)

/* Number of usable devices (0 without a driver or GPU; never an error).
 * CUDA_VISIBLE_DEVICES is applied by the runtime itself. */
int ct_cu_count(void);
/* Make dev the calling thread's CUDA device (cudaSetDevice when needed). */
ct_status ct_cu_set_device(int dev);
/* The stream the calling thread's current ctorch stream of dev maps to
 * (cti_current_stream_handle); also sets dev as the thread's device. NULL
 * only with an error set (bad device, stream creation failed): CUDA's
 * legacy default stream is never used, every ctorch stream is a
 * non-blocking stream of its own. */
cudaStream_t ct_cu_stream(int dev);

/* Launch geometry: threads per block for 1-D kernels, and the number of
 * blocks for n work items (kernels check their index against n). */
#define CT_CU_THREADS 256
static inline unsigned ct_cu_blocks(int64_t n) {
    int64_t b = (n + CT_CU_THREADS - 1) / CT_CU_THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 2147483647 ? 2147483647 : b));
}
/* After a kernel launch: cudaGetLastError → a ctorch error naming kernel. */
ct_status ct_cu_launched(const char *kernel);

/* ---- tables the other files provide (NULL-free only when implemented) ---- */

/* cu_kernels.cu: every kernel's address in kernels/kernels.def order, and
 * their count; cu_gpu.c: the table of the shared GPU host layer built on it
 * (elementwise, where and indexing run there). */
extern const void *const ct_cu_kernel_table[];
extern const int ct_cu_kernel_count;
extern const struct ct_gpu_device ct_cu_gpu;

/* cu_nvtx.c: NVTX ranges (get_proc("range_push") / "range_pop"). */
void ct_cu_nvtx_push(const char *name);
void ct_cu_nvtx_pop(void);

/* cu_nccl.c: NCCL as the process group's collective library
 * (get_proc("comm_ops"); src/core/backend_comm.h). */
struct ct_backend_comm;
const struct ct_backend_comm *ct_cu_comm_ops(void);

/* cu_user_kernel.c: users' own kernels through NVRTC (get_proc("kernel_ops");
 * src/core/backend_kernel.h). */
struct ct_backend_kernel;
const struct ct_backend_kernel *ct_cu_kernel_ops(void);

/* cu_blas.c: matmul through cuBLAS (TF32 per ct_backends settings). */
ct_status ct_cu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* cu_dnn.c: put cuDNN's entries over copies of the shared GPU conv and nn
 * tables (ct_gpu_conv_ops, ct_gpu_nn_ops). */
struct ct_backend_conv;
struct ct_backend_nn;
void ct_cu_dnn_override(struct ct_backend_conv *conv, struct ct_backend_nn *nn);

#ifdef __cplusplus
}
#endif
#endif /* CT_CU_INTERNAL_H */
