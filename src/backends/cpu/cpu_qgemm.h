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
 * AMX-INT8 tiles through oneDNN's matmul (where oneDNN reports
 * avx512_core_amx; cpu_dnnl_qgemm.c), AVX-512 VNNI (vpdpbusd on 64 bytes),
 * AVX-VNNI (vpdpbusd on 32 bytes), AVX2, scalar. Every path gives the same
 * bits. AVX2 has two kernels:
 * for full-range A it widens to int16 and uses vpmaddwd; when A is 7-bit
 * (0..127, the quantized linear's activations) it uses vpmaddubsw, whose
 * u8·s8 pair sums (|.| ≤ 2·127·128 = 32512) cannot saturate then, with
 * half the instructions per product.
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
    /* oneDNN's matmul: chosen by AUTO only where it has AMX tiles, but
     * runnable by name wherever oneDNN is built in (its non-AMX int8
     * kernels then run, so tests cover the plumbing on any CPU). */
    CT_QGEMM_AMX,
    CT_QGEMM_NPATHS
} ct_qgemm_path;

/* Whether this build and CPU can run path (AUTO and SCALAR always can;
 * AMX wherever oneDNN is built in, see above). */
bool ct_cpu_qgemm_supported(ct_qgemm_path path);
/* The path AUTO resolves to here. */
ct_qgemm_path ct_cpu_qgemm_best(void);
/* "amx_int8 (oneDNN)", "avx512_vnni", "avx_vnni", "avx2", "scalar"
 * ("auto" for AUTO). */
const char *ct_cpu_qgemm_name(ct_qgemm_path path);

/* C = A · Bᵀ as above (m×k uint8 rows lda apart, n×k int8 rows ldb apart,
 * m×n int32 rows ldc apart). A path this CPU cannot run falls back to
 * AUTO's, so the result is always computed. Threads over OpenMP when the
 * product is large. The AMX path hands products oneDNN does not take
 * (k = 0; under a work threshold when reached through AUTO; oneDNN
 * switched off by ct_backends_mkldnn_set_enabled) to the best native
 * kernel. */
void ct_cpu_qgemm_u8s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                       int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc);

/* The same product with every A byte ≤ 127 (AVX2 then runs vpmaddubsw;
 * other paths are the same as above). */
void ct_cpu_qgemm_u7s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                       int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc);

/* The dequantization fused into the 7-bit product's stores (the quantized
 * linear's epilogue): y[i][j] = (float)(C[i][j] − a_zero_point·b_row_sum[j])
 * · (a_scale · b_scale[j]) + bias[j], with bias NULL meaning 0 and the int32
 * arithmetic wrapping. The float steps are a multiply then an add (no FMA)
 * on every path, so every path gives the same bits. */
typedef struct ct_qgemm_dequant {
    int32_t a_zero_point;
    float a_scale;
    const int32_t *b_row_sum; /* Σ_p B[j][p], n entries */
    const float *b_scale;     /* n entries */
    const float *bias;        /* n entries or NULL */
    float *y;
    int64_t ldy;
} ct_qgemm_dequant;

void ct_cpu_qlinear_u7s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                         int64_t lda, const int8_t *b, int64_t ldb, const ct_qgemm_dequant *dq);

/* Helpers around it, vectorised when the CPU has AVX2 (same bits as the
 * scalar forms): the row sums Σ_p B[j][p] (wrapping int32); the min and max
 * of x (+inf and -inf for n = 0; NaNs ignored); and x's quantization
 * q[i] = clamp(nearbyint(x[i] · inv_scale) + zero_point, 0, qmax) (round
 * half to even, NaN → 0). */
/* cpu_dnnl_qgemm.c: whether oneDNN is built in and its engine runs;
 * whether it reports AMX tiles; the u8s8 product through its matmul
 * (false, nothing set, when it declines: the caller runs a native kernel;
 * by_name: no work threshold, reference kernels accepted; a7: every A byte
 * ≤ 127, without which it declines on CPUs below AVX-512 VNNI, where
 * oneDNN's int8 sums saturate: ct_cpu_dnnl_qgemm_full_range says whether it
 * takes them); and how many products it has run in this process (for
 * tests). */
bool ct_cpu_dnnl_qgemm_available(void);
bool ct_cpu_dnnl_qgemm_amx(void);
bool ct_cpu_dnnl_qgemm_full_range(void);
bool ct_cpu_dnnl_qgemm_u8s8(bool by_name, bool a7, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                            int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc);
int64_t ct_cpu_dnnl_qgemm_runs(void);

void ct_cpu_qrow_sums(int64_t n, int64_t k, const int8_t *b, int64_t ldb, int32_t *sums);
void ct_cpu_minmax_f32(const float *x, int64_t n, float *lo, float *hi);
void ct_cpu_quantize_u8(const float *x, int64_t n, float inv_scale, int32_t zero_point, int32_t qmax,
                        uint8_t *q);

#endif /* CT_CPU_QGEMM_H */
