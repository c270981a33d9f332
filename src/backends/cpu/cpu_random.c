/*
 * cpu_random.c — random tensors on the CPU from the shared Philox mapping
 * (src/kernels/philox.h).
 *
 * The tensor is cut into chunks of CT_RAND_BLOCKS Philox blocks (two
 * elements each). A chunk first fills arrays with the lanes of all its
 * blocks, then maps them to values, then stores those in the tensor's dtype.
 * Every element still depends only on (seed, offset, index), and threads
 * take whole chunks, so the result is the same for any number of threads.
 *
 * Each step has a portable form, simple loops over arrays that gcc
 * vectorises. On x86-64 CPUs with AVX2 (checked at run time) Philox, and
 * the normal draw from Philox to the stored value, are also written with
 * intrinsics, about 2.5 times faster: gcc's vectorised Philox spends most
 * of its time moving 32-bit halves of the 64-bit products around, and its
 * Box–Muller loop runs one long chain of dependent multiplies and adds at a
 * time. The intrinsics keep each Philox word in a 64-bit lane and work on
 * several independent vectors side by side, with the same IEEE operations
 * in the same order as philox.h, so the bits are unchanged.
 */
/* The values must match the device kernels bit for bit, so a * b + c must
 * never become a fused multiply-add, whatever -std or -march the library is
 * built with (philox.h does the same for clang). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "cpu_internal.h"
#include "kernels/philox.h"

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b);

#define CT_RAND_BLOCKS 256

/* gcc on x86-64 Linux also builds each step below for AVX2 and AVX-512
 * machines and picks one version at load time (an ifunc): with the wider
 * vectors the loops run about twice as fast, and the values are the same
 * (no step may be fused into multiply-adds, see above). Not under
 * ThreadSanitizer: the dynamic loader runs ifunc resolvers before the TSan
 * runtime is initialised, and gcc instruments the resolvers it generates,
 * so the program would crash before main. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define CT_RAND_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CT_RAND_CLONES
#endif

/* The four 32-bit lanes of consecutive Philox blocks, lane by lane. */
typedef struct philox_lanes {
    uint32_t r0[CT_RAND_BLOCKS], r1[CT_RAND_BLOCKS], r2[CT_RAND_BLOCKS], r3[CT_RAND_BLOCKS];
} philox_lanes;

CT_RAND_CLONES static void philox_blocks(uint64_t seed, uint64_t first, int nb, philox_lanes *lanes) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int j = 0; j < nb; j++) {
        uint64_t block = first + (uint64_t)j;
        uint32_t r[4];
        ct_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u, k0, k1, r);
        lanes->r0[j] = r[0];
        lanes->r1[j] = r[1];
        lanes->r2[j] = r[2];
        lanes->r3[j] = r[3];
    }
}

/* Element 2j in v[2j], element 2j+1 in v[2j+1]: ct_philox_normal_pair in
 * two loops. sqrt may set errno, so gcc keeps a branch around it unless
 * built with -fno-math-errno, and a loop with a branch does not vectorise:
 * the first loop, which holds nearly all the work, has no sqrt. */
CT_RAND_CLONES static void normal_values(const philox_lanes *lanes, int nb, double mean, double std,
                                         double *restrict v) {
    double t[CT_RAND_BLOCKS], c[CT_RAND_BLOCKS], s[CT_RAND_BLOCKS];
    for (int j = 0; j < nb; j++) {
        t[j] = ct_philox_radius_sq(lanes->r0[j]);
        ct_philox_sincos_grid24(lanes->r1[j] >> 8, &c[j], &s[j]);
    }
    for (int j = 0; j < nb; j++) {
        double rho = sqrt(t[j]);
        v[2 * j] = mean + std * (rho * c[j]);
        v[2 * j + 1] = mean + std * (rho * s[j]);
    }
}

CT_RAND_CLONES static void uniform_values_f64(const philox_lanes *lanes, int nb, double lo, double hi,
                                              double *restrict v) {
    for (int j = 0; j < nb; j++) {
        v[2 * j] = lo + (hi - lo) * ct_philox_uniform_f64(lanes->r0[j], lanes->r1[j]);
        v[2 * j + 1] = lo + (hi - lo) * ct_philox_uniform_f64(lanes->r2[j], lanes->r3[j]);
    }
}

/* Float32, float16 and bfloat16 draw `bits` bits and compute in float. */
CT_RAND_CLONES static void uniform_values_f32(const philox_lanes *lanes, int nb, int bits, double lo,
                                              double hi, double *restrict v) {
    float flo = (float)lo, span = (float)hi - (float)lo;
    for (int j = 0; j < nb; j++) {
        v[2 * j] = (double)(flo + span * ct_philox_uniform_bits(lanes->r0[j], bits));
        v[2 * j + 1] = (double)(flo + span * ct_philox_uniform_bits(lanes->r2[j], bits));
    }
}

CT_RAND_CLONES static void store_values(char *out, ct_dtype dt, const double *restrict v, int64_t count) {
    if (dt == CT_FLOAT32) {
        float *restrict o = (float *)out;
        for (int64_t i = 0; i < count; i++) o[i] = (float)v[i];
    } else if (dt == CT_FLOAT64) {
        memcpy(out, v, (size_t)count * sizeof(double));
    } else {
        size_t es = ct_dtype_size(dt);
        for (int64_t i = 0; i < count; i++) ct_cpu_store(out + (size_t)i * es, dt, v[i]);
    }
}

/* Integers lo + u64 % range, kept in int64 (a double would round above 2^53). */
static void store_ints(char *out, ct_dtype dt, const philox_lanes *lanes, int64_t count, int64_t lo,
                       uint64_t range) {
    size_t es = ct_dtype_size(dt);
    for (int64_t i = 0; i < count; i++) {
        int64_t j = i / 2;
        uint64_t u = i % 2 ? ct_philox_u64(lanes->r2[j], lanes->r3[j])
                           : ct_philox_u64(lanes->r0[j], lanes->r1[j]);
        ct_cpu_store_i64(out + (size_t)i * es, dt, lo + (int64_t)(u % range));
    }
}

/* ---- x86-64 with AVX2 ---------------------------------------------------- */
/* Only avx2 is enabled, not fma: the compiler then has no fused
 * multiply-add to contract into. The code is chosen by
 * __builtin_cpu_supports at run time, not by an ifunc, so it also runs
 * under ThreadSanitizer. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CT_RAND_AVX2 1
#include <immintrin.h>
/* gcc's out-of-SSA pass (TER) moves each single-use value next to its use,
 * which turns the interleaved chains below back into one chain after
 * another (the normal draw then takes a third longer); clang keeps the
 * order. */
#if defined(__clang__)
#define CT_AVX2_FN __attribute__((target("avx2")))
#else
#define CT_AVX2_FN __attribute__((target("avx2"), optimize("no-tree-ter")))
#endif
#define CT_AVX2_INLINE static inline CT_AVX2_FN __attribute__((always_inline))

/* Vectors handled side by side: Philox's rounds and the polynomials are
 * chains of dependent multiplies and adds, so one vector at a time leaves
 * the multipliers idle while each result makes its way through. */
#define CT_RAND_NV 4
/* The AVX2 forms work on whole groups of 4 CT_RAND_NV blocks: a chunk's
 * rounded-up last group must still fit its arrays. */
_Static_assert(CT_RAND_BLOCKS % (4 * CT_RAND_NV) == 0, "chunks hold whole groups");

static bool rand_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

/* The key of each Philox round, in every 64-bit lane. */
typedef struct philox_keys_avx2 {
    __m256i k0[10], k1[10];
} philox_keys_avx2;

CT_AVX2_INLINE void philox_keys_init_avx2(uint64_t seed, philox_keys_avx2 *keys) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        keys->k0[r] = _mm256_set1_epi64x(k0);
        keys->k1[r] = _mm256_set1_epi64x(k1);
        k0 += CT_PHILOX_W0;
        k1 += CT_PHILOX_W1;
    }
}

/* Philox4x32-10 on the 4 CT_RAND_NV blocks from `first`, lane by lane into
 * r0..r3 (r2 and r3 may be NULL). Each 32-bit word of a block lives in the
 * low half of a 64-bit lane: _mm256_mul_epu32 then gives the whole product,
 * whose high word is one shuffle away and whose low word needs no
 * extraction at all, since the next round only multiplies it (which reads
 * the low half) or xors it. Vector u holds blocks
 * first + 8 (u / 2) + (u & 1) + {0, 2, 4, 6}, so that a pair of vectors
 * packs into eight consecutive blocks with one blend. */
CT_AVX2_INLINE void philox_group_avx2(const philox_keys_avx2 *keys, uint64_t first, uint32_t *r0,
                                      uint32_t *r1, uint32_t *r2, uint32_t *r3) {
    const __m256i m0 = _mm256_set1_epi64x(CT_PHILOX_M0), m1 = _mm256_set1_epi64x(CT_PHILOX_M1);
    const __m256i spread = _mm256_setr_epi64x(0, 2, 4, 6);
    __m256i c0[CT_RAND_NV], c1[CT_RAND_NV], c2[CT_RAND_NV], c3[CT_RAND_NV];
    /* Round 0: the counter's upper words c2 and c3 are zero, and so is the
     * second product. */
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u++) {
        uint64_t base = first + 8u * (uint64_t)(u / 2) + (uint64_t)(u & 1);
        __m256i block = _mm256_add_epi64(_mm256_set1_epi64x((long long)base), spread);
        __m256i p0 = _mm256_mul_epu32(block, m0);
        c0[u] = _mm256_xor_si256(_mm256_srli_epi64(block, 32), keys->k0[0]);
        c1[u] = _mm256_setzero_si256();
        c2[u] = _mm256_xor_si256(_mm256_srli_epi64(p0, 32), keys->k1[0]);
        c3[u] = p0;
    }
    /* unrolled, so that c1 = p1 and c3 = p0 are renamings, not moves */
#pragma GCC unroll 10
    for (int r = 1; r < 10; r++) {
#pragma GCC unroll 8
        for (int u = 0; u < CT_RAND_NV; u++) {
            __m256i p0 = _mm256_mul_epu32(c0[u], m0);
            __m256i p1 = _mm256_mul_epu32(c2[u], m1);
            __m256i h0 = _mm256_shuffle_epi32(p0, 0xF5), h1 = _mm256_shuffle_epi32(p1, 0xF5);
            c0[u] = _mm256_xor_si256(_mm256_xor_si256(h1, c1[u]), keys->k0[r]);
            c2[u] = _mm256_xor_si256(_mm256_xor_si256(h0, c3[u]), keys->k1[r]);
            c1[u] = p1;
            c3[u] = p0;
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u += 2) {
#define CT_PACK(c) _mm256_blend_epi32((c)[u], _mm256_slli_epi64((c)[u + 1], 32), 0xAA)
        _mm256_storeu_si256((__m256i *)(r0 + 4 * u), CT_PACK(c0));
        _mm256_storeu_si256((__m256i *)(r1 + 4 * u), CT_PACK(c1));
        if (r2) {
            _mm256_storeu_si256((__m256i *)(r2 + 4 * u), CT_PACK(c2));
            _mm256_storeu_si256((__m256i *)(r3 + 4 * u), CT_PACK(c3));
        }
#undef CT_PACK
    }
}

/* philox_blocks for blocks [first, first + nb) rounded up to a whole group
 * (CT_RAND_BLOCKS is a multiple of one, so the extra blocks still fit the
 * arrays; they are never stored). */
CT_AVX2_FN static void philox_blocks_avx2(uint64_t seed, uint64_t first, int nb, philox_lanes *lanes) {
    philox_keys_avx2 keys;
    philox_keys_init_avx2(seed, &keys);
    for (int j = 0; j < nb; j += 4 * CT_RAND_NV)
        philox_group_avx2(&keys, first + (uint64_t)j, lanes->r0 + j, lanes->r1 + j, lanes->r2 + j,
                          lanes->r3 + j);
}

/* p = p z + c for each vector: one step of a Horner chain. */
CT_AVX2_INLINE void horner_avx2(__m256d *p, const __m256d *z, double c) {
    const __m256d cv = _mm256_set1_pd(c);
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u++) p[u] = _mm256_add_pd(_mm256_mul_pd(p[u], z[u]), cv);
}

/* Box–Muller for 4 CT_RAND_NV blocks from their lanes x0 and x1: the
 * squared radius t (ct_philox_radius_sq) and cos and sin of the angle
 * (ct_philox_sincos_grid24), with the scalar selects as blends and bit
 * operations. The log's and the two sines' Horner chains take turns, so
 * that 3 CT_RAND_NV independent chains fill the multipliers. */
CT_AVX2_INLINE void box_muller_avx2(const uint32_t *x0, const uint32_t *x1, __m256d *t, __m256d *cosv,
                                    __m256d *sinv) {
    const __m256d one = _mm256_set1_pd(1.0);
    __m256d ls[CT_RAND_NV], lz[CT_RAND_NV], lp[CT_RAND_NV], de[CT_RAND_NV];
    __m256d x[CT_RAND_NV], z[CT_RAND_NV], c[CT_RAND_NV], s[CT_RAND_NV];
    __m256i kw[CT_RAND_NV]; /* k in 64-bit lanes, for the quadrant */
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u++) {
        /* log: m = f1 2^(e1 + 24) from the encoding of the exact double m.
         * Halving f1 (exact) lowers its exponent field by one, and the
         * all-ones mask of the comparison is -1, which raises e by one;
         * 2^52 + e, less 2^52 + 1023 + 24, is then de exactly. */
        __m128i m = _mm_add_epi32(_mm_srli_epi32(_mm_loadu_si128((const __m128i *)(x0 + 4 * u)), 8),
                                  _mm_set1_epi32(1));
        __m256i bits = _mm256_castpd_si256(_mm256_cvtepi32_pd(m));
        __m256i mant = _mm256_and_si256(bits, _mm256_set1_epi64x((long long)((UINT64_C(1) << 52) - 1)));
        __m256i f1 = _mm256_or_si256(mant, _mm256_castpd_si256(one));
        __m256i halve = _mm256_castpd_si256(
            _mm256_cmp_pd(_mm256_castsi256_pd(f1), _mm256_set1_pd(1.4142135623730951), _CMP_GE_OQ));
        __m256d f = _mm256_castsi256_pd(
            _mm256_sub_epi64(f1, _mm256_and_si256(halve, _mm256_set1_epi64x(1LL << 52))));
        __m256i e = _mm256_sub_epi64(_mm256_srli_epi64(bits, 52), halve);
        __m256i e_enc = _mm256_or_si256(e, _mm256_set1_epi64x(0x433LL << 52));
        de[u] = _mm256_sub_pd(_mm256_castsi256_pd(e_enc), _mm256_set1_pd(4503599627370496.0 + 1047.0));
        ls[u] = _mm256_div_pd(_mm256_sub_pd(f, one), _mm256_add_pd(f, one));
        /* sincos, with k here philox.h's k + 2^21: r = (double)m - 2^21
         * with m = k mod 2^22, both steps exact; the quadrant q is bits 22
         * and 23 of k */
        __m128i k = _mm_add_epi32(_mm_srli_epi32(_mm_loadu_si128((const __m128i *)(x1 + 4 * u)), 8),
                                  _mm_set1_epi32(1 << 21));
        kw[u] = _mm256_cvtepu32_epi64(k);
        __m256d r = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm_and_si128(k, _mm_set1_epi32((1 << 22) - 1))),
                                  _mm256_set1_pd(2097152.0));
        x[u] = _mm256_mul_pd(r, _mm256_set1_pd(3.7450702829239286e-07));
        z[u] = _mm256_mul_pd(x[u], x[u]);
        c[u] = _mm256_set1_pd(-1.5619206968586225e-16);
        s[u] = _mm256_set1_pd(-8.22063524662433e-18);
    }
    /* the sines' chains first: the log's wait for the division */
    horner_avx2(c, z, 4.779477332387385e-14);
    horner_avx2(s, z, 2.8114572543455206e-15);
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u++) {
        lz[u] = _mm256_mul_pd(ls[u], ls[u]);
        lp[u] = _mm256_set1_pd(0.04);
    }
    horner_avx2(lp, lz, 0.043478260869565216);
    horner_avx2(c, z, -1.1470745597729725e-11);
    horner_avx2(s, z, -7.647163731819816e-13);
    horner_avx2(lp, lz, 0.047619047619047616);
    horner_avx2(c, z, 2.08767569878681e-09);
    horner_avx2(s, z, 1.6059043836821613e-10);
    horner_avx2(lp, lz, 0.05263157894736842);
    horner_avx2(c, z, -2.755731922398589e-07);
    horner_avx2(s, z, -2.505210838544172e-08);
    horner_avx2(lp, lz, 0.058823529411764705);
    horner_avx2(c, z, 2.48015873015873e-05);
    horner_avx2(s, z, 2.7557319223985893e-06);
    horner_avx2(lp, lz, 0.06666666666666667);
    horner_avx2(c, z, -0.001388888888888889);
    horner_avx2(s, z, -0.0001984126984126984);
    horner_avx2(lp, lz, 0.07692307692307693);
    horner_avx2(c, z, 0.041666666666666664);
    horner_avx2(s, z, 0.008333333333333333);
    horner_avx2(lp, lz, 0.09090909090909091);
    horner_avx2(c, z, -0.5);
    horner_avx2(s, z, -0.16666666666666666);
    horner_avx2(lp, lz, 0.1111111111111111);
    horner_avx2(c, z, 1.0);
    horner_avx2(lp, lz, 0.14285714285714285);
    horner_avx2(lp, lz, 0.2);
    horner_avx2(lp, lz, 0.3333333333333333);
    const __m256i sign = _mm256_set1_epi64x((long long)(UINT64_C(1) << 63));
#pragma GCC unroll 8
    for (int u = 0; u < CT_RAND_NV; u++) {
        __m256d sn = _mm256_add_pd(x[u], _mm256_mul_pd(_mm256_mul_pd(x[u], z[u]), s[u]));
        /* theta = q pi/2 + x: cos theta = c, -s, -c, s and sin theta = s, c,
         * -s, -c. Moved to bit 63: q's bit 0 (which only the blends'
         * sign-bit test reads), its bit 1 (sin's sign) and their xor (cos's
         * sign); a negation flips the sign bit. */
        __m256i q0 = _mm256_slli_epi64(kw[u], 41), q1 = _mm256_slli_epi64(kw[u], 40);
        __m256d odd = _mm256_castsi256_pd(q0);
        __m256d cq = _mm256_blendv_pd(c[u], sn, odd), sq = _mm256_blendv_pd(sn, c[u], odd);
        __m256i cneg = _mm256_and_si256(_mm256_xor_si256(q0, q1), sign);
        __m256i sneg = _mm256_and_si256(q1, sign);
        cosv[u] = _mm256_xor_pd(cq, _mm256_castsi256_pd(cneg));
        sinv[u] = _mm256_xor_pd(sq, _mm256_castsi256_pd(sneg));
        __m256d s2 = _mm256_mul_pd(_mm256_set1_pd(2.0), ls[u]);
        __m256d lnf = _mm256_add_pd(s2, _mm256_mul_pd(_mm256_mul_pd(s2, lz[u]), lp[u]));
        __m256d hi = _mm256_mul_pd(de[u], _mm256_set1_pd(6.93147180369123816490e-01));
        __m256d lo = _mm256_mul_pd(de[u], _mm256_set1_pd(1.90821492927058770002e-10));
        t[u] = _mm256_mul_pd(_mm256_set1_pd(-2.0), _mm256_add_pd(hi, _mm256_add_pd(lnf, lo)));
    }
}

/* The normal draw of blocks [first, first + nb) rounded up to a whole
 * group, from Philox to the values, one group at a time: the Philox
 * integer work then overlaps the divisions and square roots. Written as
 * float (f32) or double: straight into the `count` elements at dst, through
 * a small buffer for the last, partial group. */
CT_AVX2_FN static void normal_values_avx2(uint64_t seed, uint64_t first, int nb, double mean, double std,
                                          int f32, void *dst, int64_t count) {
    enum { GROUP = 4 * CT_RAND_NV };
    const __m256d meanv = _mm256_set1_pd(mean), stdv = _mm256_set1_pd(std);
    size_t es = f32 ? sizeof(float) : sizeof(double);
    philox_keys_avx2 keys;
    philox_keys_init_avx2(seed, &keys);
    for (int j = 0; j < nb; j += GROUP) {
        uint32_t x0[GROUP], x1[GROUP];
        __m256d t[CT_RAND_NV], c[CT_RAND_NV], s[CT_RAND_NV];
        philox_group_avx2(&keys, first + (uint64_t)j, x0, x1, NULL, NULL);
        box_muller_avx2(x0, x1, t, c, s);
        int64_t left = count - 2 * (int64_t)j;
        double tmp[2 * GROUP];
        char *out = left >= 2 * GROUP ? (char *)dst + 2 * (int64_t)j * (int64_t)es : (char *)tmp;
#pragma GCC unroll 8
        for (int u = 0; u < CT_RAND_NV; u++) {
            __m256d rho = _mm256_sqrt_pd(t[u]);
            __m256d v0 = _mm256_add_pd(meanv, _mm256_mul_pd(stdv, _mm256_mul_pd(rho, c[u])));
            __m256d v1 = _mm256_add_pd(meanv, _mm256_mul_pd(stdv, _mm256_mul_pd(rho, s[u])));
            if (f32) {
                __m128 a = _mm256_cvtpd_ps(v0), b = _mm256_cvtpd_ps(v1);
                _mm_storeu_ps((float *)out + 8 * u, _mm_unpacklo_ps(a, b));
                _mm_storeu_ps((float *)out + 8 * u + 4, _mm_unpackhi_ps(a, b));
            } else {
                __m256d lo = _mm256_unpacklo_pd(v0, v1), hi = _mm256_unpackhi_pd(v0, v1);
                _mm256_storeu_pd((double *)out + 8 * u, _mm256_permute2f128_pd(lo, hi, 0x20));
                _mm256_storeu_pd((double *)out + 8 * u + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
            }
        }
        if (out == (char *)tmp) memcpy((char *)dst + 2 * (int64_t)j * (int64_t)es, tmp, (size_t)left * es);
    }
}
#endif /* AVX2 */

/* Elements [2 * first_pair, 2 * first_pair + count) of the tensor at `base`;
 * avx2: whether this CPU runs the AVX2 forms. */
static void random_chunk(char *base, ct_dtype dt, ct_random_kind kind, uint64_t seed, uint64_t offset,
                         int64_t first_pair, int64_t count, double a, double b, bool avx2) {
    philox_lanes lanes;
    double v[2 * CT_RAND_BLOCKS];
    int nb = (int)((count + 1) / 2);
    char *out = base + 2 * first_pair * (int64_t)ct_dtype_size(dt);
    uint64_t first = offset + (uint64_t)first_pair;
#ifdef CT_RAND_AVX2
    if (avx2 && kind == CT_RAND_NORMAL) {
        if (dt == CT_FLOAT32 || dt == CT_FLOAT64) {
            normal_values_avx2(seed, first, nb, a, b, dt == CT_FLOAT32, out, count);
        } else {
            normal_values_avx2(seed, first, nb, a, b, 0, v, 2 * CT_RAND_BLOCKS);
            store_values(out, dt, v, count);
        }
        return;
    }
    if (avx2)
        philox_blocks_avx2(seed, first, nb, &lanes);
    else
#endif
        philox_blocks(seed, first, nb, &lanes);
    (void)avx2;
    switch (kind) {
    case CT_RAND_UNIFORM:
        if (dt == CT_FLOAT64)
            uniform_values_f64(&lanes, nb, a, b, v);
        else
            uniform_values_f32(&lanes, nb, dt == CT_FLOAT16 ? 11 : dt == CT_BFLOAT16 ? 8 : 24, a, b, v);
        store_values(out, dt, v, count);
        break;
    case CT_RAND_NORMAL:
        normal_values(&lanes, nb, a, b, v);
        store_values(out, dt, v, count);
        break;
    case CT_RAND_INT:
        store_ints(out, dt, &lanes, count, (int64_t)a, (uint64_t)((int64_t)b - (int64_t)a));
        break;
    }
}

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b) {
    int64_t n = ct_cpu_numel(dst);
    char *base = ct_cpu_base(dst);
    int64_t npairs = (n + 1) / 2;
    int64_t nchunks = (npairs + CT_RAND_BLOCKS - 1) / CT_RAND_BLOCKS;
#ifdef CT_RAND_AVX2
    bool avx2 = rand_has_avx2();
#else
    bool avx2 = false;
#endif
#pragma omp parallel for if (n >= CT_CPU_GRAIN / 4) schedule(static)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t first_pair = c * CT_RAND_BLOCKS;
        int64_t count = n - 2 * first_pair < 2 * CT_RAND_BLOCKS ? n - 2 * first_pair : 2 * CT_RAND_BLOCKS;
        random_chunk(base, dst->dtype, kind, seed, offset, first_pair, count, a, b, avx2);
    }
    return CT_OK;
}
