/*
 * cpu_qgemm.h — the CPU backend's 8-bit integer GEMM (internal), used by
 * dynamic quantization (ct_quantized_linear_dynamic) and ct_int_mm.
 *
 * One product shape serves both: C[i][j] = Σ_p A[i][p] · B[j][p] with A
 * uint8 (activations), B int8 (a Linear weight, [out, in]: both operands
 * are K-contiguous rows) and C int32. Products are exact; sums wrap modulo
 * 2^32 like int32 arithmetic, so they stay exact while k · 255 · 128 fits
 * an int32 (k ≤ 65793), which the callers check.
 *
 * The kernel is chosen once per process from CPUID, fastest first:
 * AVX-512 VNNI (vpdpbusd on 64 bytes), AVX-VNNI (vpdpbusd on 32 bytes),
 * AVX2 (widen to int16, vpmaddwd: exact, unlike vpmaddubsw which
 * saturates), scalar. Every path gives the same bits.
 */
#ifndef CT_CPU_QGEMM_H
#define CT_CPU_QGEMM_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ct_qgemm_path {
    CT_QGEMM_AUTO = 0, /* the best one this CPU runs */
    CT_QGEMM_SCALAR,
    CT_QGEMM_AVX2,
    CT_QGEMM_AVX_VNNI,
    CT_QGEMM_AVX512_VNNI,
    CT_QGEMM_NPATHS
} ct_qgemm_path;

/* Whether this build and CPU can run path (AUTO and SCALAR always can). */
bool ct_cpu_qgemm_supported(ct_qgemm_path path);
/* The path AUTO resolves to here. */
ct_qgemm_path ct_cpu_qgemm_best(void);
/* "avx512_vnni", "avx_vnni", "avx2", "scalar" ("auto" for AUTO). */
const char *ct_cpu_qgemm_name(ct_qgemm_path path);

/* C = A · Bᵀ as above (m×k uint8 rows lda apart, n×k int8 rows ldb apart,
 * m×n int32 rows ldc apart). A path this CPU cannot run falls back to
 * AUTO's, so the result is always computed. Threads over OpenMP when the
 * product is large. */
void ct_cpu_qgemm_u8s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                       int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc);

#endif /* CT_CPU_QGEMM_H */
