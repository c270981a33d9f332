/*
 * cu_blas.c — the CUDA backend's GEMM for the shared matmul driver
 * (src/backends/gpu/gpu_linalg.c, which packs operands, handles shapes and
 * runs integers on the portable kernel): cuBLAS, loaded by cu_dl.c.
 *
 * cuBLAS is column-major, so the row-major product C = A·B is computed as
 * C^T = B^T·A^T: a row-major matrix read "as stored" is its own transpose
 * to cuBLAS (CUBLAS_OP_N), one read "transposed" needs CUBLAS_OP_T.
 * float16/bfloat16 run natively in cuBLAS with float32 accumulation and no
 * reduced-precision split-K reductions, so the result is rounded once as on
 * the other backends. float32 may use TF32 when
 * ct_backends_cuda_matmul_set_allow_tf32(true) (PyTorch's allow_tf32).
 *
 * cuBLAS runs with a workspace of ours per (handle, stream): cuBLAS
 * documents that this keeps results reproducible when several streams are
 * in use, which is what makes ct_use_deterministic_algorithms cover GEMMs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu.h"
#include "core/internal.h"
#include "ctorch/backends.h"
#include "cu_dl.h"

static void *element_ptr(void *base, int64_t off, ct_dtype dt) {
    return (char *)base + off * (int64_t)ct_dtype_size(dt);
}

/* ct_gpu_gemm_layout in cuBLAS's terms. */
static bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, cublasOperation_t *op, int64_t *ld) {
    bool transposed;
    if (!ct_gpu_gemm_layout(rows, cols, sr, sc, &transposed, ld)) return false;
    *op = transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    return true;
}

/* The calling thread's current stream of dev (ct_cu_stream gives NULL
 * only with an error set; it also makes dev the thread's device). */
static ct_status current_stream(int dev, cudaStream_t *out) {
    *out = ct_cu_stream(dev);
    if (*out) return CT_OK;
    ct_status st = ct_last_status();
    return st != CT_OK ? st : ct_error_set(CT_ERR_INTERNAL, "matmul: cuda:%d has no current stream", dev);
}

/* ---- workspaces ---------------------------------------------------------------------------- */

typedef struct workspace {
    cublasHandle_t handle;
    cudaStream_t stream;
    void *ptr; /* NULL: cudaMalloc failed; cuBLAS keeps its own pool */
    size_t size;
    struct workspace *next;
} workspace;

static pthread_mutex_t g_ws_lock = PTHREAD_MUTEX_INITIALIZER;
static workspace *g_workspaces;

/* PyTorch's default cuBLAS workspace sizes: 32 MiB on Hopper and newer,
 * 2 x 4 MiB + 8 x 16 KiB before. */
static size_t workspace_size(int dev) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        major = 0;
    }
    return major >= 9 ? (size_t)32 << 20 : ((size_t)8 << 20) + ((size_t)128 << 10);
}

/* The workspace of (handle, stream), allocated on first use and kept (a
 * handle is used by one thread at a time, so no two GEMMs share one). */
static workspace *workspace_for(int dev, cublasHandle_t handle, cudaStream_t stream) {
    pthread_mutex_lock(&g_ws_lock);
    workspace *w = g_workspaces;
    while (w && !(w->handle == handle && w->stream == stream)) w = w->next;
    pthread_mutex_unlock(&g_ws_lock);
    if (w) return w;
    w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->handle = handle;
    w->stream = stream;
    w->size = workspace_size(dev);
    if (cudaMalloc(&w->ptr, w->size) != cudaSuccess) {
        (void)cudaGetLastError(); /* not fatal: cuBLAS falls back to its own pool */
        w->ptr = NULL;
        w->size = 0;
    }
    pthread_mutex_lock(&g_ws_lock);
    w->next = g_workspaces;
    g_workspaces = w;
    pthread_mutex_unlock(&g_ws_lock);
    return w;
}

/* The calling thread's cuBLAS handle for dev, bound to the current stream
 * with its workspace and the math mode for this call. */
static ct_status blas_handle(int dev, cublasHandle_t *out) {
    const ct_cublas_api *api = ct_cu_cublas("matmul");
    if (!api) return ct_last_status();
    cudaStream_t stream;
    CT_TRY(current_stream(dev, &stream));
    cublasHandle_t h;
    CT_TRY(ct_cu_cublas_handle(dev, stream, "matmul", &h));
    workspace *w = workspace_for(dev, h, stream); /* after cublasSetStream, which resets it */
    if (w && w->ptr)
        CT_TRY(ct_cu_cublas_error(api->cublasSetWorkspace_v2(h, w->ptr, w->size), "matmul",
                                  "cublasSetWorkspace(handle, workspace, size)"));
    const cublasMath_t mode =
        (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    CT_TRY(ct_cu_cublas_error(api->cublasSetMathMode(h, mode), "matmul",
                              "cublasSetMathMode(handle, mode)"));
    *out = h;
    return CT_OK;
}

/* ---- floating GEMM ------------------------------------------------------------------------- */

/* cuBLAS's names for a dtype: storage type and compute type. */
typedef struct gemm_types {
    cudaDataType data;
    cublasComputeType_t compute;
    bool double_scalars; /* alpha/beta are double (else float) */
} gemm_types;

static gemm_types types_of(ct_dtype dt) {
    gemm_types t = {CUDA_R_32F, CUBLAS_COMPUTE_32F, false};
    switch (dt) {
    case CT_FLOAT64: t.data = CUDA_R_64F, t.compute = CUBLAS_COMPUTE_64F, t.double_scalars = true; break;
    case CT_FLOAT16: t.data = CUDA_R_16F; break;
    case CT_BFLOAT16: t.data = CUDA_R_16BF; break;
    default:
        if (ct_backends_cuda_matmul_get_allow_tf32()) t.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    }
    return t;
}

/* C[b] = A[b] @ B[b]; A and B readable by cuBLAS, C contiguous at c_off. */
static ct_status gemm(int dev, ct_dtype dt, const ct_gpu_mm_dims *dm, const ct_gpu_mm_side *a,
                      const ct_gpu_mm_side *b, void *c_base, int64_t c_off) {
    cublasOperation_t opa, opb;
    int64_t lda, ldb;
    if (!gemm_layout(dm->m, dm->k, a->sr, a->sc, &opa, &lda) ||
        !gemm_layout(dm->k, dm->n, b->sr, b->sc, &opb, &ldb))
        return ct_error_set(CT_ERR_INTERNAL, "matmul: operand layout not readable by cuBLAS");
    cublasHandle_t h = NULL;
    CT_TRY(blas_handle(dev, &h));
    const ct_cublas_api *api = ct_cu_cublas("matmul");
    const gemm_types t = types_of(dt);
    const float f1 = 1.0f, f0 = 0.0f;
    const double d1 = 1.0, d0 = 0.0;
    const void *one = t.double_scalars ? (const void *)&d1 : (const void *)&f1;
    const void *zero = t.double_scalars ? (const void *)&d0 : (const void *)&f0;
    const void *pa = element_ptr(a->base, a->off, dt), *pb = element_ptr(b->base, b->off, dt);
    void *pc = element_ptr(c_base, c_off, dt);
    /* column-major C^T [n, m] = op(B) [n, k] · op(A) [k, m] */
    if (dm->batch == 1)
        return ct_cu_cublas_error(
            api->cublasGemmEx_64(h, opb, opa, dm->n, dm->m, dm->k, one, pb, t.data, ldb, pa, t.data,
                                 lda, zero, pc, t.data, dm->n, t.compute, CUBLAS_GEMM_DEFAULT),
            "matmul", "cublasGemmEx(handle, opb, opa, n, m, k, &alpha, b, ldb, a, lda, &beta, c, n)");
    return ct_cu_cublas_error(
        api->cublasGemmStridedBatchedEx_64(h, opb, opa, dm->n, dm->m, dm->k, one, pb, t.data, ldb,
                                           b->sb, pa, t.data, lda, a->sb, zero, pc, t.data, dm->n,
                                           dm->m * dm->n, dm->batch, t.compute,
                                           CUBLAS_GEMM_DEFAULT),
        "matmul",
        "cublasGemmStridedBatchedEx(handle, opb, opa, n, m, k, &alpha, b, ldb, strideb, a, lda, "
        "stridea, &beta, c, n, m*n, batch)");
}

/* ---- entry ----------------------------------------------------------------------------------- */

ct_status ct_cu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    return ct_gpu_matmul(out, a, b, gemm, true);
}
