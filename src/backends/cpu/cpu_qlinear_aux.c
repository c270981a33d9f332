/*
 * cpu_qlinear_aux.c — the passes around the quantized linear's int8 GEMM
 * (cpu_qgemm.h): the weight row sums for the zero-point correction, and the
 * activations' min/max and quantization.
 *
 * They run on every forward (the row sums once per weight, see
 * quantize_dynamic.c), so they are vectorised: scalar nearbyintf is a libm
 * call on baseline x86-64 and used to cost more than the GEMM on small
 * batches. The AVX2 forms give the same bits as the scalar ones (round half
 * to even, the same clamps), so results do not depend on the CPU.
 */
#include <math.h>
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CT_QAUX_X86 1
#endif

#include "cpu_qgemm.h"

/* Elements above which a pass is split across threads. */
#define PARALLEL_ELEMS (1 << 18)

static bool have_avx2(void) {
#ifdef CT_QAUX_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

/* ---- weight row sums -------------------------------------------------------------- */

static int32_t row_sum_scalar(const int8_t *row, int64_t k) {
    int64_t s = 0;
    for (int64_t p = 0; p < k; p++) s += row[p];
    return (int32_t)s;
}

#ifdef CT_QAUX_X86
/* Bytes flipped to uint8 (b + 128) and summed with vpsadbw; the shift is
 * taken back out at the end. */
__attribute__((target("avx2"))) static int32_t row_sum_avx2(const int8_t *row, int64_t k) {
    const __m256i flip = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    __m256i acc = _mm256_setzero_si256();
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
        const __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(row + p)), flip);
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
    }
    __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    const int64_t vec = (int64_t)_mm_cvtsi128_si64(s) - 128 * p;
    return (int32_t)(vec + row_sum_scalar(row + p, k - p));
}
#endif

void ct_cpu_qrow_sums(int64_t n, int64_t k, const int8_t *b, int64_t ldb, int32_t *sums) {
    const bool avx2 = have_avx2();
#pragma omp parallel for if (n * k >= PARALLEL_ELEMS)
    for (int64_t j = 0; j < n; j++) {
#ifdef CT_QAUX_X86
        if (avx2) {
            sums[j] = row_sum_avx2(b + j * ldb, k);
            continue;
        }
#endif
        sums[j] = row_sum_scalar(b + j * ldb, k);
    }
    (void)avx2;
}

/* ---- activation range ------------------------------------------------------------- */

static void minmax_scalar(const float *x, int64_t n, float *lo, float *hi) {
    float l = *lo, h = *hi;
    for (int64_t i = 0; i < n; i++) {
        l = x[i] < l ? x[i] : l; /* false for NaN: NaNs are skipped */
        h = x[i] > h ? x[i] : h;
    }
    *lo = l, *hi = h;
}

#ifdef CT_QAUX_X86
/* min_ps/max_ps return their second operand when either is NaN, so with
 * the accumulator second a NaN element leaves it unchanged. */
__attribute__((target("avx2"))) static void minmax_avx2(const float *x, int64_t n, float *lo, float *hi) {
    __m256 l = _mm256_set1_ps(*lo), h = _mm256_set1_ps(*hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        l = _mm256_min_ps(v, l), h = _mm256_max_ps(v, h);
    }
    float lv[8], hv[8];
    _mm256_storeu_ps(lv, l), _mm256_storeu_ps(hv, h);
    for (int u = 0; u < 8; u++) {
        *lo = lv[u] < *lo ? lv[u] : *lo;
        *hi = hv[u] > *hi ? hv[u] : *hi;
    }
    minmax_scalar(x + i, n - i, lo, hi);
}
#endif

static void minmax_chunk(bool avx2, const float *x, int64_t n, float *lo, float *hi) {
#ifdef CT_QAUX_X86
    if (avx2) {
        minmax_avx2(x, n, lo, hi);
        return;
    }
#endif
    (void)avx2;
    minmax_scalar(x, n, lo, hi);
}

void ct_cpu_minmax_f32(const float *x, int64_t n, float *lo, float *hi) {
    const bool avx2 = have_avx2();
    float l = INFINITY, h = -INFINITY;
    if (n < PARALLEL_ELEMS) {
        minmax_chunk(avx2, x, n, &l, &h);
    } else {
        /* a reduction, not a named critical section: those become exported symbols */
#pragma omp parallel for schedule(static) reduction(min : l) reduction(max : h)
        for (int64_t c = 0; c < n; c += 65536) {
            float tl = INFINITY, th = -INFINITY;
            minmax_chunk(avx2, x + c, n - c < 65536 ? n - c : 65536, &tl, &th);
            l = tl < l ? tl : l;
            h = th > h ? th : h;
        }
    }
    *lo = l, *hi = h;
}

/* ---- activation quantization ------------------------------------------------------- */

static void quantize_scalar(const float *x, int64_t n, float inv_scale, float zp, float qmax, uint8_t *q) {
    for (int64_t i = 0; i < n; i++) {
        const float v = nearbyintf(x[i] * inv_scale) + zp;
        q[i] = (uint8_t)(!(v >= 0.0f) ? 0.0f : v > qmax ? qmax : v);
    }
}

#ifdef CT_QAUX_X86
/* 32 floats → 32 bytes: round (half to even, as nearbyintf in the default
 * mode), add the zero point, clamp (max first, so NaN → 0), convert, pack
 * with unsigned saturation (values are already in range) and undo the
 * packs' per-lane interleave. */
__attribute__((target("avx2"))) static void quantize_avx2(const float *x, int64_t n, float inv_scale, float zp,
                                                          float qmax, uint8_t *q) {
    const __m256 vinv = _mm256_set1_ps(inv_scale), vzp = _mm256_set1_ps(zp), vmax = _mm256_set1_ps(qmax);
    const __m256 vzero = _mm256_setzero_ps();
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i iv[4];
        for (int u = 0; u < 4; u++) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * u), vinv);
            v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
            v = _mm256_min_ps(_mm256_max_ps(v, vzero), vmax);
            iv[u] = _mm256_cvttps_epi32(v);
        }
        const __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
        _mm256_storeu_si256((__m256i *)(void *)(q + i), _mm256_permutevar8x32_epi32(w, order));
    }
    quantize_scalar(x + i, n - i, inv_scale, zp, qmax, q + i);
}
#endif

void ct_cpu_quantize_u8(const float *x, int64_t n, float inv_scale, int32_t zero_point, int32_t qmax, uint8_t *q) {
    const bool avx2 = have_avx2();
    const float zp = (float)zero_point, fmax_q = (float)qmax;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_ELEMS)
    for (int64_t c = 0; c < n; c += 4096) {
        const int64_t len = n - c < 4096 ? n - c : 4096;
#ifdef CT_QAUX_X86
        if (avx2) {
            quantize_avx2(x + c, len, inv_scale, zp, fmax_q, q + c);
            continue;
        }
#endif
        quantize_scalar(x + c, len, inv_scale, zp, fmax_q, q + c);
    }
    (void)avx2;
}
