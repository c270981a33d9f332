/*
 * cl_data.c — the OpenCL backend's matmul (data movement — copy, fill,
 * arange, random — is the shared GPU layer's, src/backends/gpu/gpu_data.c).
 *
 * Float products go through CLBlast (row-major GEMM, operands passed in place
 * when their strides fit a BLAS layout, packed otherwise); float16/bfloat16
 * are widened to float32 and rounded once, integers use our own kernel
 * (src/kernels/matmul_int.kh), through the shared GPU layer (gpu_linalg.c).
 */
#include <clblast_c.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/cpu_internal.h"
#include "cl_device.h"
#include "cl_ops.h"

ct_status ct_cl_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* ---- helpers -------------------------------------------------------------------------------- */

static ct_status need_fp64(const ct_cl_device *d, int dev, const char *op) {
    if (d->has_fp64) return CT_OK;
    return ct_error_set(CT_ERR_UNSUPPORTED, "%s: float64 is not supported on opencl:%d (%s has no fp64)", op, dev,
                        d->name);
}

/* A new device buffer for temporaries; the caller releases it once the
 * commands using it are enqueued (OpenCL frees it when they finish). */
static ct_status temp_buffer(int dev, size_t nbytes, cl_mem *out) {
    return ct_backend_for(CT_DEVICE_OPENCL)->alloc(dev, nbytes, (void **)out);
}
static void temp_release(int dev, cl_mem m) { ct_backend_for(CT_DEVICE_OPENCL)->free(dev, m); }

/* ---- matmul --------------------------------------------------------------------------------------- */

/* One operand: element (b, r, c) at off + b*sb + r*sr + c*sc elements of buf. */
typedef struct mm_side {
    cl_mem buf;
    int64_t off, sb, sr, sc;
} mm_side;

typedef struct mm_dims {
    int64_t batch, m, n, k;
} mm_dims;

static mm_side side_of(const ct_kview *v) {
    mm_side s = {v->data, v->offset, v->strides[0], v->strides[1], v->strides[2]};
    return s;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* How BLAS reads a row-major rows×cols matrix with these strides: as stored
 * (element (r, c) at r*ld + c) or transposed (at c*ld + r), as the CPU
 * backend decides; false when neither fits. */
static bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, CLBlastTranspose *t, size_t *ld) {
    if ((cols == 1 || sc == 1) && (rows == 1 || sr >= max64(1, cols))) {
        *t = CLBlastTransposeNo;
        *ld = (size_t)(rows == 1 ? max64(1, cols) : sr);
        return true;
    }
    if ((rows == 1 || sr == 1) && (cols == 1 || sc >= max64(1, rows))) {
        *t = CLBlastTransposeYes;
        *ld = (size_t)(cols == 1 ? max64(1, rows) : sc);
        return true;
    }
    return false;
}

/* A contiguous copy of an operand's [nb, rows, cols] matrices in dtype dt
 * (one matrix when the operand is broadcast over the batch). */
static ct_status pack(int dev, const ct_kview *v, const mm_dims *dims, int64_t rows, int64_t cols, ct_dtype dt,
                      cl_mem *buf, mm_side *out) {
    const int64_t nb = (dims->batch == 1 || v->strides[0] == 0) ? 1 : dims->batch;
    ct_kview src = *v, dst;
    src.shape[0] = nb;
    memset(&dst, 0, sizeof dst);
    dst.dtype = dt;
    dst.ndim = 3;
    dst.device = dev;
    dst.device_type = v->device_type;
    dst.shape[0] = nb, dst.shape[1] = rows, dst.shape[2] = cols;
    dst.strides[0] = rows * cols, dst.strides[1] = cols, dst.strides[2] = 1;
    CT_TRY(temp_buffer(dev, (size_t)(nb * rows * cols) * ct_dtype_size(dt), buf));
    dst.data = *buf;
    ct_status st = ct_gpu_copy(&dst, &src);
    if (st != CT_OK) {
        temp_release(dev, *buf);
        return st;
    }
    mm_side s = {*buf, 0, nb == 1 ? 0 : rows * cols, cols, 1};
    *out = s;
    return CT_OK;
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
static ct_status gemm(int dev, ct_dtype dt, const mm_dims *dm, const mm_side *a, const mm_side *b, cl_mem c,
                      int64_t c_off) {
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
                ? CLBlastSgemmStridedBatched(rm, ta, tb, m, n, k, 1.0f, a->buf, (size_t)a->off, lda, (size_t)a->sb,
                                             b->buf, (size_t)b->off, ldb, (size_t)b->sb, 0.0f, c, (size_t)c_off, n,
                                             m * n, (size_t)dm->batch, &q, NULL)
                : CLBlastDgemmStridedBatched(rm, ta, tb, m, n, k, 1.0, a->buf, (size_t)a->off, lda, (size_t)a->sb,
                                             b->buf, (size_t)b->off, ldb, (size_t)b->sb, 0.0, c, (size_t)c_off, n,
                                             m * n, (size_t)dm->batch, &q, NULL);
        if (s == CLBlastSuccess) return CT_OK;
        /* CLBlast may refuse some strides (e.g. 0): then one call per matrix */
    }
    for (int64_t bi = 0; bi < dm->batch; bi++) {
        size_t ao = (size_t)(a->off + bi * a->sb), bo = (size_t)(b->off + bi * b->sb);
        size_t co = (size_t)(c_off + bi * dm->m * dm->n);
        CLBlastStatusCode s =
            dt == CT_FLOAT32
                ? CLBlastSgemm(rm, ta, tb, m, n, k, 1.0f, a->buf, ao, lda, b->buf, bo, ldb, 0.0f, c, co, n, &q, NULL)
                : CLBlastDgemm(rm, ta, tb, m, n, k, 1.0, a->buf, ao, lda, b->buf, bo, ldb, 0.0, c, co, n, &q, NULL);
        CT_TRY(clblast_status(s, dt == CT_FLOAT32 ? "Sgemm" : "Dgemm"));
    }
    return CT_OK;
}

/* float32/float64: operands BLAS cannot read are packed first. */
static ct_status matmul_float(int dev, const mm_dims *dm, const ct_kview *out, const ct_kview *a,
                              const ct_kview *b) {
    mm_side sa = side_of(a), sb = side_of(b);
    CLBlastTranspose t;
    size_t ld;
    cl_mem pa = NULL, pb = NULL;
    ct_status st = CT_OK;
    if (!gemm_layout(dm->m, dm->k, sa.sr, sa.sc, &t, &ld)) st = pack(dev, a, dm, dm->m, dm->k, a->dtype, &pa, &sa);
    if (st == CT_OK && !gemm_layout(dm->k, dm->n, sb.sr, sb.sc, &t, &ld))
        st = pack(dev, b, dm, dm->k, dm->n, b->dtype, &pb, &sb);
    if (st == CT_OK) st = gemm(dev, out->dtype, dm, &sa, &sb, out->data, out->offset);
    if (pa) temp_release(dev, pa);
    if (pb) temp_release(dev, pb);
    return st;
}

/* float16/bfloat16: widen both operands to float32, multiply, round once
 * into out (PyTorch accumulates them in float32 too). */
static ct_status matmul_widened(int dev, const mm_dims *dm, const ct_kview *out, const ct_kview *a,
                                const ct_kview *b) {
    mm_side sa, sb;
    cl_mem pa = NULL, pb = NULL, pc = NULL;
    ct_status st = pack(dev, a, dm, dm->m, dm->k, CT_FLOAT32, &pa, &sa);
    if (st == CT_OK) st = pack(dev, b, dm, dm->k, dm->n, CT_FLOAT32, &pb, &sb);
    if (st == CT_OK) st = temp_buffer(dev, (size_t)(dm->batch * dm->m * dm->n) * sizeof(float), &pc);
    if (st == CT_OK) st = gemm(dev, CT_FLOAT32, dm, &sa, &sb, pc, 0);
    if (st == CT_OK) {
        ct_kview wide = *out;
        wide.data = pc;
        wide.offset = 0;
        wide.dtype = CT_FLOAT32;
        st = ct_gpu_copy(out, &wide);
    }
    if (pa) temp_release(dev, pa);
    if (pb) temp_release(dev, pb);
    if (pc) temp_release(dev, pc);
    return st;
}

ct_status ct_cl_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    const int dev = out->device;
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    const mm_dims dm = {out->shape[0], out->shape[1], out->shape[2], a->shape[2]};
    if (dm.batch == 0 || dm.m == 0 || dm.n == 0) return CT_OK;
    if (dm.k == 0) return ct_gpu_fill(out, 0.0);
    switch (out->dtype) {
    case CT_FLOAT64: CT_TRY(need_fp64(d, dev, "matmul")); return matmul_float(dev, &dm, out, a, b);
    case CT_FLOAT32: return matmul_float(dev, &dm, out, a, b);
    case CT_FLOAT16:
    case CT_BFLOAT16: return matmul_widened(dev, &dm, out, a, b);
    case CT_INT32:
    case CT_INT64:
    case CT_UINT8: return ct_gpu_matmul_int(out, a, b);
    default:
        return ct_error_set(CT_ERR_DTYPE, "matmul: not implemented for '%s' on opencl", ct_dtype_name(out->dtype));
    }
}
