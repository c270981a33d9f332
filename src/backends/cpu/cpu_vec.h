/*
 * cpu_vec.h — small inline helpers that let the CPU reduction and softmax
 * kernels run vectorised loops on any dtype and layout (internal).
 *
 * Kernels gather a block of elements (any dtype, any byte stride) into a
 * float or double buffer with one tight loop per dtype, then do their math on
 * the buffer, which gcc vectorises; this replaces a per-element dtype switch
 * and out-of-line 16-bit conversions. ct_cpu_exp_f32 is an exp that gcc can
 * vectorise (libm's expf is a call per element).
 * The selects below vectorise only when gcc may treat float compares as
 * non-trapping: the library is compiled with -fno-trapping-math (it changes
 * no result, only whether FP exception flags may be raised speculatively).
 */
#ifndef CT_CPU_VEC_H
#define CT_CPU_VEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

static inline float ct_cpu_bits_to_float(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t ct_cpu_float_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* IEEE binary16 bits to float, exactly; written with selects rather than
 * branches so that loops over it vectorise. Subnormal halves go through an
 * integer conversion so that a denormals-are-zero FPU mode cannot flush them. */
static inline float ct_cpu_half_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = h & 0x7c00u, mant = h & 0x03ffu;
    uint32_t normal = ((uint32_t)(h & 0x7fffu) << 13) + ((uint32_t)(127 - 15) << 23);
    uint32_t special = 0x7f800000u | (mant << 13); /* inf and NaN */
    uint32_t sub = ct_cpu_float_bits((float)mant * 0x1p-24f);
    uint32_t mag = exp == 0x7c00u ? special : exp == 0 ? sub : normal;
    return ct_cpu_bits_to_float(sign | mag);
}

static inline float ct_cpu_bf16_bits_to_float(uint16_t b) {
    return ct_cpu_bits_to_float((uint32_t)b << 16);
}

/* float to IEEE binary16 bits, rounding to nearest even: overflow gives
 * infinity, NaN the canonical quiet NaN of its sign (0x7e00, as PyTorch's),
 * tiny values subnormals or zero. Same results as ct_float_to_half except
 * that NaN payloads are not kept; written with selects so that loops
 * vectorise. */
static inline uint16_t ct_cpu_float_to_half_bits(float f) {
    uint32_t b = ct_cpu_float_bits(f);
    uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
    uint32_t t = a - ((uint32_t)(127 - 15) << 23); /* exponent rebiased */
    uint32_t normal = (t + 0x0fffu + ((t >> 13) & 1u)) >> 13;
    float tiny = ct_cpu_bits_to_float(a) * 0x1p24f; /* in units of the least subnormal */
    uint32_t sub = (uint32_t)((tiny + 8388608.0f) - 8388608.0f); /* rounds to nearest even */
    uint32_t mag = a > 0x7f800000u ? 0x7e00u : a >= 0x477ff000u ? 0x7c00u
                 : a >= 0x38800000u ? normal : sub;
    return (uint16_t)(sign | mag);
}

/* float to bfloat16 bits, rounding to nearest even; NaN stays a quiet NaN. */
static inline uint16_t ct_cpu_float_to_bf16_bits(float f) {
    uint32_t b = ct_cpu_float_bits(f);
    uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    uint32_t nan = (b >> 16) | 0x40u;
    return (uint16_t)((b & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* out[k] = CONV(element k) for n elements of type T, `step` bytes apart;
 * the contiguous case gets its own loop so that it vectorises with plain
 * vector loads. */
#define CT_CPU_GATHER_LOOP(T, CONV)                                            \
    do {                                                                       \
        if (step == (int64_t)sizeof(T)) {                                      \
            const T *src_ = (const T *)(const void *)p;                        \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++) out[k] = CONV(src_[k]); \
        } else {                                                               \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++)                \
                out[k] = CONV(*(const T *)(const void *)(p + k * step));       \
        }                                                                      \
    } while (0)
#define CT_CPU_AS_IS(v) (v)

/* n elements of dtype dt from p, `step` bytes apart, as doubles. */
static inline void ct_cpu_gather_f64(const char *p, int64_t n, int64_t step, ct_dtype dt,
                                     double *restrict out) {
    switch (dt) {
    case CT_FLOAT32: CT_CPU_GATHER_LOOP(float, CT_CPU_AS_IS); break;
    case CT_FLOAT64: CT_CPU_GATHER_LOOP(double, CT_CPU_AS_IS); break;
    case CT_FLOAT16: CT_CPU_GATHER_LOOP(uint16_t, ct_cpu_half_bits_to_float); break;
    case CT_BFLOAT16: CT_CPU_GATHER_LOOP(uint16_t, ct_cpu_bf16_bits_to_float); break;
    case CT_INT64: CT_CPU_GATHER_LOOP(int64_t, (double)); break;
    case CT_INT32: CT_CPU_GATHER_LOOP(int32_t, CT_CPU_AS_IS); break;
    default:
        for (int64_t k = 0; k < n; k++) out[k] = ct_cpu_load(p + k * step, dt);
        break;
    }
}

/* n floating elements as floats (float64 is rounded). */
static inline void ct_cpu_gather_f32(const char *p, int64_t n, int64_t step, ct_dtype dt,
                                     float *restrict out) {
    switch (dt) {
    case CT_FLOAT32: CT_CPU_GATHER_LOOP(float, CT_CPU_AS_IS); break;
    case CT_FLOAT16: CT_CPU_GATHER_LOOP(uint16_t, ct_cpu_half_bits_to_float); break;
    case CT_BFLOAT16: CT_CPU_GATHER_LOOP(uint16_t, ct_cpu_bf16_bits_to_float); break;
    default:
        for (int64_t k = 0; k < n; k++) out[k] = (float)ct_cpu_load(p + k * step, dt);
        break;
    }
}

/* n integer (or bool) elements as int64. */
static inline void ct_cpu_gather_i64(const char *p, int64_t n, int64_t step, ct_dtype dt,
                                     int64_t *restrict out) {
    switch (dt) {
    case CT_INT64: CT_CPU_GATHER_LOOP(int64_t, CT_CPU_AS_IS); break;
    case CT_INT32: CT_CPU_GATHER_LOOP(int32_t, CT_CPU_AS_IS); break;
    case CT_UINT8: CT_CPU_GATHER_LOOP(uint8_t, CT_CPU_AS_IS); break;
    case CT_INT8: CT_CPU_GATHER_LOOP(int8_t, CT_CPU_AS_IS); break;
    default:
        for (int64_t k = 0; k < n; k++) out[k] = ct_cpu_load_i64(p + k * step, dt);
        break;
    }
}

/* e^x in float, within about 1 ulp over the whole range (0 below -104,
 * inf above 88.73, NaN kept). x = n ln2 + r with |r| <= ln2/2; e^r by its
 * Taylor series to r^7; 2^n applied as two exact power-of-two factors so that
 * results in the subnormal range round once. Selects instead of branches so
 * that loops over it vectorise. */
static inline float ct_cpu_exp_f32(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f;     /* few bits: n * ln2_hi is exact */
    const float ln2_lo = -2.12194440e-4f;  /* ln2 - ln2_hi */
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x >= -110.0f ? x : -110.0f; /* NaN lands here too, fixed below */
    xc = xc <= 90.0f ? xc : 90.0f;
    float n = (xc * log2e + round_magic) - round_magic;
    float r = (xc - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)n, half = ni / 2;
    float s1 = ct_cpu_bits_to_float((uint32_t)(half + 127) << 23);
    float s2 = ct_cpu_bits_to_float((uint32_t)(ni - half + 127) << 23);
    float y = (p * s1) * s2;
    return x != x ? x : y;
}

/* max(m, x[0..n)) with 8 independent accumulators so that the vector
 * compares pipeline; shared by softmax and the class losses. NaN handling is
 * the caller's: a NaN row makes its results NaN downstream whichever value
 * wins here. */
#define CT_CPU_MAX_LANES 8
#define CT_CPU_DEFINE_BLOCK_MAX(name, T)                                                   \
    static inline T name(const T *x, int64_t n, T m) {                                     \
        T acc[CT_CPU_MAX_LANES];                                                           \
        for (int j = 0; j < CT_CPU_MAX_LANES; j++) acc[j] = m;                             \
        int64_t k = 0;                                                                     \
        for (; k + CT_CPU_MAX_LANES <= n; k += CT_CPU_MAX_LANES)                           \
            _Pragma("omp simd") for (int j = 0; j < CT_CPU_MAX_LANES; j++)                 \
                acc[j] = x[k + j] > acc[j] ? x[k + j] : acc[j];                            \
        for (; k < n; k++) m = x[k] > m ? x[k] : m;                                        \
        for (int j = 0; j < CT_CPU_MAX_LANES; j++) m = acc[j] > m ? acc[j] : m;            \
        return m;                                                                          \
    }
CT_CPU_DEFINE_BLOCK_MAX(ct_cpu_block_max_f32, float)
CT_CPU_DEFINE_BLOCK_MAX(ct_cpu_block_max_f64, double)

#endif /* CT_CPU_VEC_H */
