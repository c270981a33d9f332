/*
 * gpu_linalg.c — the matrix product of the GPU backends (backend.h's
 * contract: out [B, M, N] contiguous = a [B, M, K] @ b [B, K, N], operands
 * with any strides, batch stride 0 when broadcast), shared by OpenCL and
 * CUDA. Everything but the GEMM call itself is here: the shapes, which
 * operands a BLAS can read in place and which must be packed first,
 * float16/bfloat16 widened to float32 where the BLAS has no 16-bit GEMM,
 * and the integer dtypes, which no BLAS has, on the portable kernel of
 * src/kernels/matmul_int.kh. Each backend passes its GEMM (CLBlast, cuBLAS).
 */
#include "core/internal.h"
#include "gpu.h"

/* ---- integers: the portable kernel ------------------------------------------------------------- */


static ct_status matmul_int(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    ct_kmm p = {out->shape[0], out->shape[1], out->shape[2], a->shape[2],   a->offset,
                 a->strides[0], a->strides[1], a->strides[2], b->offset,     b->strides[0],
                 b->strides[1], b->strides[2], out->offset,   (int64_t)out->dtype};
    ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_BUF(a), CT_GPU_BUF(b), CT_GPU_ARG(p)};
    return ct_gpu_of(out)->launch(out->device, CT_KID(ct_k_matmul_int), args, 4,
                                  (size_t)(p.batch * p.m * p.n), 0);
}

/* ---- floats: the backend's GEMM ----------------------------------------------------------------- */

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

bool ct_gpu_gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *transposed, int64_t *ld) {
    if ((cols == 1 || sc == 1) && (rows == 1 || sr >= max64(1, cols))) {
        *transposed = false;
        *ld = rows == 1 ? max64(1, cols) : sr;
        return true;
    }
    if ((rows == 1 || sr == 1) && (cols == 1 || sc >= max64(1, rows))) {
        *transposed = true;
        *ld = cols == 1 ? max64(1, rows) : sc;
        return true;
    }
    return false;
}

static bool readable(int64_t rows, int64_t cols, const ct_gpu_mm_side *s) {
    bool t;
    int64_t ld;
    return ct_gpu_gemm_layout(rows, cols, s->sr, s->sc, &t, &ld);
}

static ct_gpu_mm_side side_of(const ct_kview *v) {
    ct_gpu_mm_side s = {v->data, v->offset, v->strides[0], v->strides[1], v->strides[2]};
    return s;
}

/* A contiguous copy of an operand's [nb, rows, cols] matrices in dtype dt
 * (one matrix when the operand is broadcast over the batch), in a
 * temporary tensor from the caching allocator: released right after the
 * GEMM is enqueued, its block is reused only by later work on the same
 * stream. */
static ct_status pack(const ct_kview *v, const ct_gpu_mm_dims *dm, int64_t rows, int64_t cols, ct_dtype dt,
                      ct_tensor **holder, ct_gpu_mm_side *out) {
    const int64_t nb = (dm->batch == 1 || v->strides[0] == 0) ? 1 : dm->batch;
    const int64_t shape[3] = {nb, rows, cols};
    const ct_device dev = {v->device_type, v->device};
    *holder = cti_empty(shape, 3, dt, dev);
    if (!*holder) return ct_last_status();
    ct_kview src = *v, dst = ct_kview_of(*holder);
    src.shape[0] = nb;
    CT_TRY(ct_gpu_copy(&dst, &src));
    ct_gpu_mm_side s = {dst.data, dst.offset, nb == 1 ? 0 : rows * cols, cols, 1};
    *out = s;
    return CT_OK;
}

/* Operands the BLAS cannot read in place are packed first; with widen,
 * both are packed as float32 and the float32 product is rounded once into
 * out (as PyTorch accumulates 16-bit products in float32). */
static ct_status matmul_blas(const ct_kview *out, const ct_kview *a, const ct_kview *b, const ct_gpu_mm_dims *dm,
                             ct_gpu_gemm_fn gemm, bool widen) {
    const ct_dtype dt = widen ? CT_FLOAT32 : out->dtype;
    ct_gpu_mm_side sa = side_of(a), sb = side_of(b);
    ct_tensor *ha = NULL, *hb = NULL, *hc = NULL;
    ct_status st = CT_OK;
    if (widen || !readable(dm->m, dm->k, &sa)) st = pack(a, dm, dm->m, dm->k, dt, &ha, &sa);
    if (st == CT_OK && (widen || !readable(dm->k, dm->n, &sb))) st = pack(b, dm, dm->k, dm->n, dt, &hb, &sb);
    if (st == CT_OK && widen) {
        const int64_t shape[3] = {dm->batch, dm->m, dm->n};
        hc = cti_empty(shape, 3, CT_FLOAT32, (ct_device){out->device_type, out->device});
        if (!hc) st = ct_last_status();
    }
    if (st == CT_OK) {
        ct_kview c = hc ? ct_kview_of(hc) : *out;
        st = gemm(out->device, dt, dm, &sa, &sb, c.data, c.offset);
        if (st == CT_OK && hc) st = ct_gpu_copy(out, &c);
    }
    ct_decref(ha);
    ct_decref(hb);
    ct_decref(hc);
    return st;
}

ct_status ct_gpu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b, ct_gpu_gemm_fn gemm,
                        bool native_16bit) {
    const ct_gpu_mm_dims dm = {out->shape[0], out->shape[1], out->shape[2], a->shape[2]};
    if (dm.batch == 0 || dm.m == 0 || dm.n == 0) return CT_OK;
    CT_TRY(ct_gpu_check_fp64(out, out->dtype, "matmul"));
    if (dm.k == 0) return ct_gpu_fill(out, 0.0);
    switch (out->dtype) {
    case CT_FLOAT64:
    case CT_FLOAT32: return matmul_blas(out, a, b, &dm, gemm, false);
    case CT_FLOAT16:
    case CT_BFLOAT16: return matmul_blas(out, a, b, &dm, gemm, !native_16bit);
    case CT_INT32:
    case CT_INT64:
    case CT_UINT8: case CT_INT8: return matmul_int(out, a, b);
    default:
        return ct_error_set(CT_ERR_DTYPE, "matmul: not implemented for '%s' on %s", ct_dtype_name(out->dtype),
                            ct_device_type_name(out->device_type));
    }
}
