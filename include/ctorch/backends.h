/*
 * ctorch/backends.h — the process-wide switches of torch.backends: TF32 in
 * cuBLAS and cuDNN, cuDNN's autotuner, cuDNN determinism, cuDNN on/off, and
 * torch.use_deterministic_algorithms; plus the versions of the CUDA math
 * libraries this process can load.
 *
 * The switches exist in every build (a CPU-only build stores them and
 * nothing reads them), so code that sets them compiles and runs anywhere.
 * Like PyTorch's at::Context flags they are process-wide, not per thread,
 * and take effect at the next operation. Defaults are PyTorch's:
 *
 *   PyTorch                                       ctorch                                  default
 *   torch.backends.cuda.matmul.allow_tf32         ct_backends_cuda_matmul_set_allow_tf32  false
 *   torch.set_float32_matmul_precision            ct_set_float32_matmul_precision         "highest"
 *   torch.backends.cudnn.allow_tf32               ct_backends_cudnn_set_allow_tf32        true
 *   torch.backends.cudnn.benchmark                ct_backends_cudnn_set_benchmark         false
 *   torch.backends.cudnn.deterministic            ct_backends_cudnn_set_deterministic     false
 *   torch.backends.cudnn.enabled                  ct_backends_cudnn_set_enabled           true
 *   torch.use_deterministic_algorithms            ct_use_deterministic_algorithms         false
 *   torch.backends.cudnn.version()                ct_backends_cudnn_version               -
 *   torch.backends.cudnn.is_available()           ct_backends_cudnn_is_available          -
 *   torch.backends.mkldnn.enabled                 ct_backends_mkldnn_set_enabled          true
 *   torch.backends.mkldnn.is_available()          ct_backends_mkldnn_is_available         -
 *   torch.backends.cpu.get_cpu_capability()       ct_backends_cpu_get_cpu_capability      -
 *   (ctorch only)                                 ct_backends_cpu_gemm_engine             -
 *
 * What they change (CUDA backend):
 *  - matmul allow_tf32: float32 GEMMs (matmul, mm, bmm, linear and the
 *    im2col products of convolutions that do not go through cuDNN) may use
 *    TF32 tensor cores (10-bit mantissa inputs, float32 accumulation) on
 *    sm_80 and newer. float64/float16/bfloat16 are unaffected.
 *  - cudnn allow_tf32: the same for cuDNN convolutions.
 *  - cudnn benchmark: the first convolution of each new configuration
 *    (shapes, dtype, device, groups, padding, stride, dilation, and the
 *    TF32/determinism switches) times cuDNN's candidate algorithms and
 *    caches the fastest; later calls reuse it. Off: cuDNN's heuristics pick
 *    without timing (also cached). Every new shape pays the timing once.
 *  - cudnn deterministic: only algorithms that cuDNN reports as
 *    deterministic are used; a convolution for which cuDNN has none fails
 *    with CT_ERR_UNSUPPORTED naming it.
 *  - cudnn enabled = false: convolution, batch norm and pooling use
 *    ctorch's own CUDA kernels (im2col + cuBLAS for convolutions).
 *  - use_deterministic_algorithms(true): everything cudnn deterministic
 *    does, in every backend that consults it. ctorch's own kernels are
 *    deterministic already (no float atomics: backend_nn.h), and cuBLAS
 *    runs with a workspace per (handle, stream), which cuBLAS documents as
 *    making it reproducible, so no CUBLAS_WORKSPACE_CONFIG is needed and
 *    no operation raises PyTorch's "does not have a deterministic
 *    implementation" error. (Reproducible means: same inputs, same GPU
 *    model, same library versions.)
 */
#ifndef CTORCH_BACKENDS_H
#define CTORCH_BACKENDS_H

#include <stdbool.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.backends.cuda.matmul.allow_tf32 (default false). Setting it true
 * sets the float32 matmul precision to "high", false to "highest". */
CT_API void ct_backends_cuda_matmul_set_allow_tf32(bool allow);
CT_API bool ct_backends_cuda_matmul_get_allow_tf32(void);

/* torch.set_float32_matmul_precision: "highest" (no TF32), "high" or
 * "medium" (TF32 allowed; ctorch has no bf16-internal mode, so "medium"
 * behaves as "high"). Any other string: CT_ERR_INVALID_ARG. */
CT_API ct_status ct_set_float32_matmul_precision(const char *precision);
/* "highest", "high" or "medium" (a static string). */
CT_API const char *ct_get_float32_matmul_precision(void);

/* torch.backends.cudnn.allow_tf32 (default true). */
CT_API void ct_backends_cudnn_set_allow_tf32(bool allow);
CT_API bool ct_backends_cudnn_get_allow_tf32(void);

/* torch.backends.cudnn.benchmark (default false). */
CT_API void ct_backends_cudnn_set_benchmark(bool benchmark);
CT_API bool ct_backends_cudnn_get_benchmark(void);

/* torch.backends.cudnn.deterministic (default false). */
CT_API void ct_backends_cudnn_set_deterministic(bool deterministic);
CT_API bool ct_backends_cudnn_get_deterministic(void);

/* torch.backends.cudnn.enabled (default true). */
CT_API void ct_backends_cudnn_set_enabled(bool enabled);
CT_API bool ct_backends_cudnn_get_enabled(void);

/* torch.use_deterministic_algorithms / are_deterministic_algorithms_enabled
 * (default false); see the file comment for what it covers. */
CT_API void ct_use_deterministic_algorithms(bool enabled);
CT_API bool ct_are_deterministic_algorithms_enabled(void);

/* torch.backends.cudnn.version(): cuDNN's version as cudnnGetVersion
 * reports it (e.g. 91900 for 9.19.0), or 0 when this build has no CUDA
 * backend or libcudnn cannot be loaded. */
CT_API int ct_backends_cudnn_version(void);
/* torch.backends.cudnn.is_available(): libcudnn loads and is a version
 * ctorch can use. Needs no GPU. */
CT_API bool ct_backends_cudnn_is_available(void);
/* cuBLAS's version as major*10000 + minor*100 + patch (e.g. 130100), or 0
 * when this build has no CUDA backend or libcublas cannot be loaded. */
CT_API int ct_backends_cublas_version(void);

/* torch.backends.mkldnn.enabled (default true): the CPU backend runs
 * float32 convolutions through oneDNN where it is the engine for this CPU
 * (docs/performance.md); false: ctorch's own im2col kernels. Deterministic
 * algorithms also select ctorch's kernels, whose sums do not depend on the
 * thread count. */
CT_API void ct_backends_mkldnn_set_enabled(bool enabled);
CT_API bool ct_backends_mkldnn_get_enabled(void);
/* torch.backends.mkldnn.is_available(): this build has oneDNN and the CPU
 * is one it JIT-compiles for (x86-64 with AVX2 and FMA). */
CT_API bool ct_backends_mkldnn_is_available(void);
/* torch.backends.cpu.get_cpu_capability(): "AVX512", "AVX2" or "DEFAULT",
 * the widest vector level this CPU offers the CPU kernels. */
CT_API const char *ct_backends_cpu_get_cpu_capability(void);
/* The library running float32 GEMM on the CPU in this process, with its
 * version and the level it runs at: "oneDNN 2.6.3 (avx2)", "OpenBLAS (Zen)". */
CT_API const char *ct_backends_cpu_gemm_engine(void);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_BACKENDS_H */
