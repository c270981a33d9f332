/*
 * cpu_gemm.h — the CPU backend's float32 GEMM engine (internal): one entry
 * point that every float32 product in the backend calls (matmul, linear,
 * the im2col convolutions), so that the choice of library is made once, by
 * CPUID, in cpu_gemm.c. Arguments follow CBLAS's row-major convention.
 */
#ifndef CT_CPU_GEMM_H
#define CT_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include <cblas.h>

/* C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, all row-major; op
 * transposes when trans_* is true. Leading dimensions are in elements. */
void ct_cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc);

/* y[rows or cols] = op(A) @ x for a rows×cols row-major A: y has `rows`
 * entries without transposition, `cols` with it; x steps by incx. */
void ct_cpu_sgemv(bool trans, int64_t rows, int64_t cols, const float *a, int64_t lda,
                  const float *x, int64_t incx, float *y);

/* Which engine runs float32 GEMM in this process, for ctorch-info and the
 * benchmarks: "oneDNN 2.6.3 (avx2)" or "OpenBLAS (Zen)". */
const char *ct_cpu_gemm_engine(void);

/* True when the GEMM engine runs its threads on OpenMP (ctorch's own pool),
 * false when it has a pool of its own that must be told to stand aside
 * while ctorch's threads call it (cpu_conv_fused.c). */
bool ct_cpu_gemm_shares_openmp(void);

/* The two entries with CBLAS's signatures, for kernels written once for
 * float and double over a GEMM/GEMV macro argument (double stays on
 * OpenBLAS: cblas_dgemm, cblas_dgemv). */
static inline void ct_cpu_cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
                                      blasint m, blasint n, blasint k, float alpha, const float *a,
                                      blasint lda, const float *b, blasint ldb, float beta,
                                      float *c, blasint ldc) {
    (void)order; /* always CblasRowMajor */
    ct_cpu_sgemm(ta == CblasTrans, tb == CblasTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Callers pass alpha = 1, beta = 0 and incy = 1, as every GEMV here does. */
static inline void ct_cpu_cblas_sgemv(CBLAS_ORDER order, CBLAS_TRANSPOSE t, blasint rows,
                                      blasint cols, float alpha, const float *a, blasint lda,
                                      const float *x, blasint incx, float beta, float *y,
                                      blasint incy) {
    (void)order, (void)alpha, (void)beta, (void)incy;
    ct_cpu_sgemv(t == CblasTrans, rows, cols, a, lda, x, incx, y);
}

#endif /* CT_CPU_GEMM_H */
