/*
 * cl_blas.c — the OpenCL backend's GEMM for the shared matmul driver
 * (src/backends/gpu/gpu_linalg.c, which packs operands, widens
 * float16/bfloat16 to float32 and runs integers on the portable kernel):
 * CLBlast's row-major float32/float64 GEMMs.
 */
#include <clblast_c.h>
#include <pthread.h>

#include "cl_device.h"
#include "cl_ops.h"

ct_status ct_cl_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* ct_gpu_gemm_layout in CLBlast's terms. */
static bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, CLBlastTranspose *t, size_t *ld) {
    bool transposed;
    int64_t ld64;
    if (!ct_gpu_gemm_layout(rows, cols, sr, sc, &transposed, &ld64)) return false;
    *t = transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
    *ld = (size_t)ld64;
    return true;
}

static ct_status clblast_status(CLBlastStatusCode s, const char *routine) {
    if (s == CLBlastSuccess) return CT_OK;
    return ct_error_set(s == CLBlastOpenCLOutOfResources || s == CLBlastOpenCLOutOfHostMemory ||
                                s == CLBlastTempBufferAllocFailure
                            ? CT_ERR_OOM
                            : CT_ERR_BACKEND,
                        "matmul: CLBlast %s failed with status %d", routine, (int)s);
}

/* From this many matrices on, one strided-batched CLBlast call replaces a
 * call per matrix. Fewer calls cost little, and CLBlast compiles its batched
 * kernels (tens of seconds on PoCL) only when a large batch needs them. */
#define CT_CL_GEMM_BATCHED_MIN 16

/* C[b] = A[b] @ B[b] in float32 or float64; A and B readable by BLAS, C
 * contiguous. */
static ct_status gemm_unlocked(int dev, ct_dtype dt, const ct_gpu_mm_dims *dm, const ct_gpu_mm_side *a,
                      const ct_gpu_mm_side *b, void *c_base, int64_t c_off) {
    cl_mem c = c_base, abuf = a->base, bbuf = b->base;
    CLBlastTranspose ta, tb;
    size_t lda, ldb, m = (size_t)dm->m, n = (size_t)dm->n, k = (size_t)dm->k;
    if (!gemm_layout(dm->m, dm->k, a->sr, a->sc, &ta, &lda) || !gemm_layout(dm->k, dm->n, b->sr, b->sc, &tb, &ldb))
        return ct_error_set(CT_ERR_INTERNAL, "matmul: operand layout not readable by BLAS");
    cl_command_queue q = ct_cl_queue(dev);
    if (!q) return ct_last_status();
    const CLBlastLayout rm = CLBlastLayoutRowMajor;
    if (dm->batch >= CT_CL_GEMM_BATCHED_MIN) {
        CLBlastStatusCode s =
            dt == CT_FLOAT32
                ? CLBlastSgemmStridedBatched(rm, ta, tb, m, n, k, 1.0f, abuf, (size_t)a->off, lda, (size_t)a->sb,
                                             bbuf, (size_t)b->off, ldb, (size_t)b->sb, 0.0f, c, (size_t)c_off, n,
                                             m * n, (size_t)dm->batch, &q, NULL)
                : CLBlastDgemmStridedBatched(rm, ta, tb, m, n, k, 1.0, abuf, (size_t)a->off, lda, (size_t)a->sb,
                                             bbuf, (size_t)b->off, ldb, (size_t)b->sb, 0.0, c, (size_t)c_off, n,
                                             m * n, (size_t)dm->batch, &q, NULL);
        if (s == CLBlastSuccess) return CT_OK;
        /* CLBlast may refuse some strides (e.g. 0): then one call per matrix */
    }
    for (int64_t bi = 0; bi < dm->batch; bi++) {
        size_t ao = (size_t)(a->off + bi * a->sb), bo = (size_t)(b->off + bi * b->sb);
        size_t co = (size_t)(c_off + bi * dm->m * dm->n);
        CLBlastStatusCode s =
            dt == CT_FLOAT32
                ? CLBlastSgemm(rm, ta, tb, m, n, k, 1.0f, abuf, ao, lda, bbuf, bo, ldb, 0.0f, c, co, n, &q, NULL)
                : CLBlastDgemm(rm, ta, tb, m, n, k, 1.0, abuf, ao, lda, bbuf, bo, ldb, 0.0, c, co, n, &q, NULL);
        CT_TRY(clblast_status(s, dt == CT_FLOAT32 ? "Sgemm" : "Dgemm"));
    }
    return CT_OK;
}

/* One CLBlast call at a time in the process: two threads driving two
 * devices (DataParallel) made CLBlast 1.5 fail with std::bad_alloc (status
 * -2039) when both compiled or looked up a routine at once. Calls only
 * enqueue work, so the devices still compute side by side. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

static ct_status gemm(int dev, ct_dtype dt, const ct_gpu_mm_dims *dm, const ct_gpu_mm_side *a,
                      const ct_gpu_mm_side *b, void *c_base, int64_t c_off) {
    pthread_mutex_lock(&clblast_lock);
    ct_status st = gemm_unlocked(dev, dt, dm, a, b, c_base, c_off);
    pthread_mutex_unlock(&clblast_lock);
    return st;
}

ct_status ct_cl_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    if (!ct_cl_ready(out->device)) return ct_last_status();
    return ct_gpu_matmul(out, a, b, gemm, false);
}
