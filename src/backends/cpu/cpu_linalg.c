/*
 * cpu_linalg.c — batched matrix multiply for the CPU backend.
 *
 * float32 products go to the GEMM engine chosen for this CPU (cpu_gemm.c:
 * oneDNN or OpenBLAS), float64 ones to OpenBLAS (dgemm). BLAS reads a
 * row-major matrix either as stored (strides (ld, 1)) or transposed (strides
 * (1, ld)), so any operand whose strides fit one of those forms is passed
 * without a copy; only other layouts are packed into a temporary buffer.
 * Products with one output row or column use gemv. Tiny matrices would spend
 * more time in per-call BLAS overhead than in arithmetic, so they run through
 * a plain loop threaded over all output rows; batches of small matrices call
 * single-threaded BLAS from our own threads, one matrix each.
 *
 * bfloat16 products run on the CPU's bfloat16 instructions where it has AMX
 * (cpu_dnnl_matmul.c); elsewhere float16/bfloat16 are widened to float32
 * (PyTorch also accumulates them in float32) and rounded once at the end. Integer products accumulate in 64
 * bits with wrap-around, which gives the same low bits as PyTorch's
 * same-type arithmetic.
 */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "cpu_dnnl.h"
#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "cpu_linalg.h"
#include "cpu_vec.h"

/* One operand of a batched product: element (b, r, c) lies at
 * base + b*sb + r*sr + c*sc, counted in elements. */
typedef struct mm_operand {
    const void *base;
    int64_t sb, sr, sc;
} mm_operand;

typedef struct mm_dims {
    int64_t batch, m, n, k;
} mm_dims;

/* Up to this many multiply-adds per matrix, our own loop beats the fixed
 * cost of a BLAS call (tiny matrices in large batches). */
#define CT_TINY_MATMUL_WORK (12 * 12 * 12)
/* OpenBLAS runs a GEMM of at most this many multiply-adds on the calling
 * thread alone (interface/gemm.c: SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD),
 * so batches of such matrices are spread over our own threads instead. */
#define CT_BLAS_SINGLE_THREAD_WORK (65536 * 4)
/* Output columns accumulated at once by the integer kernel (stays in L1). */
#define CT_INT_MATMUL_BLOCK 256

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Can BLAS read a rows×cols matrix with these strides? Row-major storage
 * means element (r, c) at r*ld + c (NoTrans) or, for the transposed form, at
 * c*ld + r. Strides of size-1 dims do not matter, so they are not checked. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t srow, int64_t scol,
                        CBLAS_TRANSPOSE *trans, int64_t *ld) {
    if ((cols == 1 || scol == 1) && (rows == 1 || srow >= max64(1, cols))) {
        *trans = CblasNoTrans;
        *ld = rows == 1 ? max64(1, cols) : srow;
        return *ld <= INT_MAX;
    }
    if ((rows == 1 || srow == 1) && (cols == 1 || scol >= max64(1, rows))) {
        *trans = CblasTrans;
        *ld = cols == 1 ? max64(1, rows) : scol;
        return *ld <= INT_MAX;
    }
    return false;
}

static bool blas_readable(int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
    CBLAS_TRANSPOSE trans;
    int64_t ld;
    return blas_layout(rows, cols, srow, scol, &trans, &ld);
}

static bool dims_fit_blas(const mm_dims *d) {
    return d->m <= INT_MAX && d->n <= INT_MAX && d->k <= INT_MAX;
}

/* Threads pay off once a loop does this many multiply-adds in total. */
static bool worth_threading(int64_t work) { return work >= 4 * (int64_t)CT_CPU_GRAIN; }

/* The float kernels, written once for float and double. */
#define CT_DEFINE_FLOAT_MATMUL(T, SUF, GEMM, GEMV)                                                 \
    /* crow[0:n] = arow @ B for one output row; i-k-j order keeps B and C unit-stride. */           \
    static void row_times_matrix_##SUF(int64_t n, int64_t k, const T *arow, int64_t sak,           \
                                       const T *bm, int64_t sbk, int64_t sbn, T *restrict crow) {  \
        for (int64_t j = 0; j < n; j++) crow[j] = 0;                                               \
        for (int64_t p = 0; p < k; p++) {                                                          \
            const T av = arow[p * sak];                                                            \
            const T *restrict brow = bm + p * sbk;                                                 \
            if (sbn == 1) {                                                                        \
                _Pragma("omp simd") for (int64_t j = 0; j < n; j++) crow[j] += av * brow[j];       \
            } else {                                                                               \
                for (int64_t j = 0; j < n; j++) crow[j] += av * brow[j * sbn];                     \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void loop_matmul_##SUF(const mm_dims *d, const mm_operand *a, const mm_operand *b,      \
                                  T *c) {                                                          \
        const int64_t rows = d->batch * d->m;                                                      \
        _Pragma("omp parallel for if (worth_threading(rows * d->n * d->k))")                       \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const int64_t bi = r / d->m, i = r % d->m;                                             \
            const T *arow = (const T *)a->base + bi * a->sb + i * a->sr;                           \
            const T *bm = (const T *)b->base + bi * b->sb;                                         \
            row_times_matrix_##SUF(d->n, d->k, arow, a->sc, bm, b->sr, b->sc, c + r * d->n);       \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* The matrices of an operand (one if broadcast over the batch) copied into                    \
     * a contiguous buffer that BLAS can read; *packed describes the copy. */                      \
    static T *pack_##SUF(const mm_operand *op, int64_t batch, int64_t rows, int64_t cols,          \
                         mm_operand *packed) {                                                     \
        const int64_t nb = (batch == 1 || op->sb == 0) ? 1 : batch;                                \
        T *dst = malloc((size_t)max64(1, nb * rows * cols) * sizeof(T));                           \
        if (!dst) return NULL;                                                                     \
        const int64_t total_rows = nb * rows;                                                      \
        _Pragma("omp parallel for if (total_rows * cols >= CT_CPU_GRAIN)")                         \
        for (int64_t r = 0; r < total_rows; r++) {                                                 \
            const T *src = (const T *)op->base + (r / rows) * op->sb + (r % rows) * op->sr;        \
            for (int64_t j = 0; j < cols; j++) dst[r * cols + j] = src[j * op->sc];                \
        }                                                                                          \
        packed->base = dst, packed->sb = nb == 1 ? 0 : rows * cols;                                \
        packed->sr = cols, packed->sc = 1;                                                         \
        return dst;                                                                                \
    }                                                                                              \
                                                                                                   \
    /* One product through BLAS; both operands must be blas_readable. With one                     \
     * output row or column it is a matrix-vector product, which gemv does                         \
     * several times faster than gemm. */                                                          \
    static void blas_matmul_##SUF(const mm_dims *d, const T *a, int64_t sam, int64_t sak,          \
                                  const T *b, int64_t sbk, int64_t sbn, T *c) {                    \
        CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;                                      \
        int64_t lda = 1, ldb = 1;                                                                  \
        blas_layout(d->m, d->k, sam, sak, &ta, &lda);                                              \
        blas_layout(d->k, d->n, sbk, sbn, &tb, &ldb);                                              \
        const blasint m = (blasint)d->m, n = (blasint)d->n, k = (blasint)d->k;                     \
        if (d->n == 1) { /* c = A b; b's column is a vector with increment sbk */                  \
            const blasint inc = d->k == 1 ? 1 : (blasint)sbk;                                      \
            if (ta == CblasNoTrans)                                                                \
                GEMV(CblasRowMajor, CblasNoTrans, m, k, (T)1, a, (blasint)lda, b, inc, (T)0,       \
                     c, 1);                                                                        \
            else                                                                                   \
                GEMV(CblasRowMajor, CblasTrans, k, m, (T)1, a, (blasint)lda, b, inc, (T)0, c,      \
                     1);                                                                           \
        } else if (d->m == 1) { /* c^T = B^T a^T */                                                \
            const blasint inc = d->k == 1 ? 1 : (blasint)sak;                                      \
            if (tb == CblasNoTrans)                                                                \
                GEMV(CblasRowMajor, CblasTrans, k, n, (T)1, b, (blasint)ldb, a, inc, (T)0, c,      \
                     1);                                                                           \
            else                                                                                   \
                GEMV(CblasRowMajor, CblasNoTrans, n, k, (T)1, b, (blasint)ldb, a, inc, (T)0,       \
                     c, 1);                                                                        \
        } else {                                                                                   \
            GEMM(CblasRowMajor, ta, tb, m, n, k, (T)1, a, (blasint)lda, b, (blasint)ldb, (T)0,     \
                 c, n);                                                                            \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void blas_batch_##SUF(const mm_dims *d, const mm_operand *a, const mm_operand *b,       \
                                 T *c) {                                                           \
        const mm_dims one = {1, d->m, d->n, d->k};                                                 \
        /* Small products stay on one BLAS thread, so our threads take the batch. */               \
        const bool spread = d->m * d->n * d->k <= CT_BLAS_SINGLE_THREAD_WORK;                      \
        const int64_t work = d->batch * d->m * d->n * d->k;                                        \
        /* Not an `if` clause: a product inside a one-thread region would start                    \
         * a nested team on fresh threads instead of using the OpenMP pool. */                     \
        if (spread && worth_threading(work)) {                                                     \
            _Pragma("omp parallel for")                                                            \
            for (int64_t bi = 0; bi < d->batch; bi++)                                              \
                blas_matmul_##SUF(&one, (const T *)a->base + bi * a->sb, a->sr, a->sc,             \
                                  (const T *)b->base + bi * b->sb, b->sr, b->sc,                   \
                                  c + bi * d->m * d->n);                                           \
        } else {                                                                                   \
            for (int64_t bi = 0; bi < d->batch; bi++)                                              \
                blas_matmul_##SUF(&one, (const T *)a->base + bi * a->sb, a->sr, a->sc,             \
                                  (const T *)b->base + bi * b->sb, b->sr, b->sc,                   \
                                  c + bi * d->m * d->n);                                           \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static ct_status matmul_##SUF(const mm_dims *d, const mm_operand *a, const mm_operand *b,      \
                                  T *c) {                                                          \
        if (d->k == 0) {                                                                           \
            memset(c, 0, (size_t)(d->batch * d->m * d->n) * sizeof(T));                            \
            return CT_OK;                                                                          \
        }                                                                                          \
        if (!dims_fit_blas(d) || d->m * d->n * d->k <= CT_TINY_MATMUL_WORK) {                      \
            loop_matmul_##SUF(d, a, b, c);                                                         \
            return CT_OK;                                                                          \
        }                                                                                          \
        /* Layouts BLAS cannot read are packed here, before any threads start. */                  \
        mm_operand pa = *a, pb = *b;                                                               \
        const bool pack_a = !blas_readable(d->m, d->k, a->sr, a->sc);                              \
        const bool pack_b = !blas_readable(d->k, d->n, b->sr, b->sc);                              \
        T *packed_a = pack_a ? pack_##SUF(a, d->batch, d->m, d->k, &pa) : NULL;                    \
        T *packed_b = pack_b ? pack_##SUF(b, d->batch, d->k, d->n, &pb) : NULL;                    \
        ct_status st = CT_OK;                                                                      \
        if ((pack_a && !packed_a) || (pack_b && !packed_b))                                        \
            st = ct_error_set(CT_ERR_OOM, "matmul: out of memory packing an operand");             \
        else                                                                                       \
            blas_batch_##SUF(d, &pa, &pb, c);                                                      \
        free(packed_a);                                                                            \
        free(packed_b);                                                                            \
        return st;                                                                                 \
    }

CT_DEFINE_FLOAT_MATMUL(float, f32, ct_cpu_cblas_sgemm, ct_cpu_cblas_sgemv)
CT_DEFINE_FLOAT_MATMUL(double, f64, cblas_dgemm, cblas_dgemv)

/* ---- float16 / bfloat16: widen, multiply in float32, round once ------------------- */

/* Widen `nb` matrices of an operand into a contiguous float32 buffer (the
 * row loop vectorises: cpu_vec.h's converters are branch-free). */
static float *widen_operand(const mm_operand *op, ct_dtype dt, int64_t nb, int64_t rows,
                            int64_t cols) {
    float *dst = malloc((size_t)max64(1, nb * rows * cols) * sizeof(float));
    if (!dst) return NULL;
    const uint16_t *src = op->base;
    const int64_t total_rows = nb * rows;
    #pragma omp parallel for if (total_rows * cols >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < total_rows; r++) {
        const uint16_t *row = src + (r / rows) * op->sb + (r % rows) * op->sr;
        ct_cpu_gather_f32((const char *)row, cols, op->sc * 2, dt, dst + r * cols);
    }
    return dst;
}

static ct_status matmul_reduced_float(const mm_dims *d, const mm_operand *a, const mm_operand *b,
                                      ct_dtype dt, uint16_t *c) {
    /* A broadcast operand (batch stride 0) is widened once, not per batch. */
    const int64_t na = (d->batch == 1 || a->sb == 0) ? 1 : d->batch;
    const int64_t nb = (d->batch == 1 || b->sb == 0) ? 1 : d->batch;
    const int64_t nout = d->batch * d->m * d->n;
    float *wa = widen_operand(a, dt, na, d->m, d->k);
    float *wb = widen_operand(b, dt, nb, d->k, d->n);
    float *wc = malloc((size_t)nout * sizeof(float));
    ct_status st = CT_OK;
    if (!wa || !wb || !wc) {
        st = ct_error_set(CT_ERR_OOM, "matmul: out of memory widening %s operands",
                          ct_dtype_name(dt));
    } else {
        mm_operand fa = {wa, na == 1 ? 0 : d->m * d->k, d->k, 1};
        mm_operand fb = {wb, nb == 1 ? 0 : d->k * d->n, d->n, 1};
        st = matmul_f32(d, &fa, &fb, wc);
    }
    if (st == CT_OK && dt == CT_FLOAT16) {
        #pragma omp parallel for simd if (nout >= CT_CPU_GRAIN)
        for (int64_t i = 0; i < nout; i++) c[i] = ct_cpu_float_to_half_bits(wc[i]);
    } else if (st == CT_OK) {
        #pragma omp parallel for simd if (nout >= CT_CPU_GRAIN)
        for (int64_t i = 0; i < nout; i++) c[i] = ct_cpu_float_to_bf16_bits(wc[i]);
    }
    free(wa);
    free(wb);
    free(wc);
    return st;
}

/* ---- integers: 64-bit wrap-around accumulation ------------------------------------ */

/* Unsigned arithmetic wraps without undefined behaviour; the final narrowing
 * keeps the low bits, as PyTorch's arithmetic in the element type does. */
#define CT_DEFINE_INT_MATMUL(T, SUF)                                                               \
    static void int_matmul_##SUF(const mm_dims *d, const mm_operand *a, const mm_operand *b,       \
                                 T *c) {                                                           \
        const int64_t rows = d->batch * d->m;                                                      \
        _Pragma("omp parallel for if (worth_threading(rows * d->n * d->k))")                       \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            uint64_t acc[CT_INT_MATMUL_BLOCK];                                                     \
            const int64_t bi = r / d->m, i = r % d->m;                                             \
            const T *arow = (const T *)a->base + bi * a->sb + i * a->sr;                           \
            const T *bm = (const T *)b->base + bi * b->sb;                                         \
            for (int64_t j0 = 0; j0 < d->n; j0 += CT_INT_MATMUL_BLOCK) {                           \
                const int64_t nj = min64(CT_INT_MATMUL_BLOCK, d->n - j0);                          \
                for (int64_t j = 0; j < nj; j++) acc[j] = 0;                                       \
                for (int64_t p = 0; p < d->k; p++) {                                               \
                    const uint64_t av = (uint64_t)(int64_t)arow[p * a->sc];                        \
                    const T *brow = bm + p * b->sr + j0 * b->sc;                                   \
                    for (int64_t j = 0; j < nj; j++)                                               \
                        acc[j] += av * (uint64_t)(int64_t)brow[j * b->sc];                         \
                }                                                                                  \
                T *crow = c + r * d->n + j0;                                                       \
                for (int64_t j = 0; j < nj; j++) crow[j] = (T)(int64_t)acc[j];                     \
            }                                                                                      \
        }                                                                                          \
    }

CT_DEFINE_INT_MATMUL(int32_t, i32)
CT_DEFINE_INT_MATMUL(int64_t, i64)
CT_DEFINE_INT_MATMUL(uint8_t, u8)
CT_DEFINE_INT_MATMUL(int8_t, i8)

/* ---- entry point --------------------------------------------------------------------- */

static mm_operand operand_of(const ct_kview *v) {
    mm_operand op = {ct_cpu_base(v), v->strides[0], v->strides[1], v->strides[2]};
    return op;
}

ct_status ct_cpu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    const mm_dims d = {out->shape[0], out->shape[1], out->shape[2], a->shape[2]};
    if (d.batch == 0 || d.m == 0 || d.n == 0) return CT_OK;
    const mm_operand oa = operand_of(a), ob = operand_of(b);
    void *c = ct_cpu_base(out);
    switch (out->dtype) {
    case CT_FLOAT32: return matmul_f32(&d, &oa, &ob, c);
    case CT_FLOAT64: return matmul_f64(&d, &oa, &ob, c);
    case CT_BFLOAT16: {
        const ct_status st = ct_cpu_dnnl_matmul_bf16(out, a, b); /* declined: this CPU widens */
        return st != CT_ERR_UNSUPPORTED ? st : matmul_reduced_float(&d, &oa, &ob, out->dtype, c);
    }
    case CT_FLOAT16: return matmul_reduced_float(&d, &oa, &ob, out->dtype, c);
    case CT_INT32: int_matmul_i32(&d, &oa, &ob, c); return CT_OK;
    case CT_INT64: int_matmul_i64(&d, &oa, &ob, c); return CT_OK;
    case CT_UINT8: int_matmul_u8(&d, &oa, &ob, c); return CT_OK;
    case CT_INT8: int_matmul_i8(&d, &oa, &ob, c); return CT_OK;
    default:
        return ct_error_set(CT_ERR_DTYPE, "matmul: not implemented for '%s' on cpu",
                            ct_dtype_name(out->dtype));
    }
}
