/*
 * philox.h — the Philox4x32-10 counter-based generator (Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the mapping from
 * (seed, block offset, element index) to random values.
 *
 * Written in the portable kernel subset so that the CPU backend, the OpenCL
 * kernels and the CUDA kernels all include this one file and produce the same
 * stream. Elements 2j and 2j+1 of a random tensor both come from Philox block
 * offset + j (counter (block, 0), key seed), whose four 32-bit lanes are
 * r0..r3:
 *  - uniform and integer draws: element 2j uses lanes (r0, r1) and element
 *    2j+1 lanes (r2, r3) (x0, x1 below);
 *  - normal draws: one Box–Muller pair from (x0, x1) = (r0, r1) gives both,
 *    element 2j = rho cos theta and element 2j+1 = rho sin theta
 *    (ct_philox_normal_pair); r2 and r3 are unused.
 *
 * Every backend must produce bit-identical values, so the float math here
 * uses only operations that IEEE 754 rounds the same way everywhere (+, -,
 * *, double /, sqrt, conversions, comparisons, bit casts), never fused into
 * multiply-adds: device libraries' log, cos and sin differ from the C
 * library's in the last bit, so the normal draw evaluates its own.
 */
#ifndef CT_KERNELS_PHILOX_H
#define CT_KERNELS_PHILOX_H

/* Device compilers see this after src/kernels/kdefs.h, which defines
 * CT_KERNEL_TYPES_DEFINED, the k_* types and K_FUNC; the host uses stdint.
 * Functions in double exist on devices only when they have fp64. */
#ifdef CT_KERNEL_TYPES_DEFINED
#define CT_PH_FN K_FUNC
typedef k_uint ct_ph_u32;
typedef k_ulong ct_ph_u64;
#ifdef K_HAS_FP64
#define CT_PHILOX_HAS_DOUBLE 1
#define CT_PH_DOUBLE_BITS(d) k_double_bits(d)
#define CT_PH_BITS_DOUBLE(u) k_bits_double(u)
#endif
#define CT_PH_BITS_FLOAT(u) k_bits_float(u)
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define CT_PH_FN static inline
typedef uint32_t ct_ph_u32;
typedef uint64_t ct_ph_u64;
#define CT_PHILOX_HAS_DOUBLE 1
/* Bit casts by memcpy, which compilers turn into register moves. */
static inline ct_ph_u64 ct_ph_double_bits(double d) {
    ct_ph_u64 u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static inline double ct_ph_bits_double(ct_ph_u64 u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
static inline float ct_ph_bits_float(ct_ph_u32 u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define CT_PH_DOUBLE_BITS(d) ct_ph_double_bits(d)
#define CT_PH_BITS_DOUBLE(u) ct_ph_bits_double(u)
#define CT_PH_BITS_FLOAT(u) ct_ph_bits_float(u)
/* Clang contracts a * b + c into fma by default even in ISO C mode; gcc in
 * ISO C mode does not, and warns about this pragma. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#endif

/* Arithmetic that must never be fused into a multiply-add (CUDA fuses
 * a * b + c unless told not to; the OpenCL program turns FP_CONTRACT off in
 * kdefs.h; gcc does not fuse in ISO C mode, and cpu_random.c also turns
 * fp-contract off for builds in GNU mode). */
#if defined(__CUDACC__)
#define CT_PH_DMUL(a, b) __dmul_rn((a), (b))
#define CT_PH_DADD(a, b) __dadd_rn((a), (b))
#define CT_PH_FMUL(a, b) __fmul_rn((a), (b))
#define CT_PH_FADD(a, b) __fadd_rn((a), (b))
#else
#define CT_PH_DMUL(a, b) ((a) * (b))
#define CT_PH_DADD(a, b) ((a) + (b))
#define CT_PH_FMUL(a, b) ((a) * (b))
#define CT_PH_FADD(a, b) ((a) + (b))
#endif

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

CT_PH_FN void ct_philox4x32_10(ct_ph_u32 c0, ct_ph_u32 c1, ct_ph_u32 c2, ct_ph_u32 c3, ct_ph_u32 k0,
                               ct_ph_u32 k1, ct_ph_u32 *out) {
    for (int round = 0; round < 10; round++) {
        ct_ph_u64 p0 = (ct_ph_u64)CT_PHILOX_M0 * c0;
        ct_ph_u64 p1 = (ct_ph_u64)CT_PHILOX_M1 * c2;
        ct_ph_u32 n0 = (ct_ph_u32)(p1 >> 32) ^ c1 ^ k0;
        ct_ph_u32 n2 = (ct_ph_u32)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (ct_ph_u32)p1;
        c2 = n2;
        c3 = (ct_ph_u32)p0;
        k0 += CT_PHILOX_W0;
        k1 += CT_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The two 32-bit draws (x0, x1) of a uniform or integer element i. A normal
 * element i uses those of element i & ~1: lanes 0 and 1 of its block. */
CT_PH_FN void ct_philox_pair(ct_ph_u64 seed, ct_ph_u64 offset, ct_ph_u64 i, ct_ph_u32 *x0,
                             ct_ph_u32 *x1) {
    ct_ph_u32 r[4];
    ct_ph_u64 block = offset + i / 2;
    ct_philox4x32_10((ct_ph_u32)block, (ct_ph_u32)(block >> 32), 0u, 0u, (ct_ph_u32)seed,
                     (ct_ph_u32)(seed >> 32), r);
    int lane = (int)(i & 1u) * 2;
    *x0 = r[lane];
    *x1 = r[lane + 1];
}

/* Uniform in [0, 1) with `bits` bits of resolution (24 for float32, 11 for
 * float16, 8 for bfloat16: every value is then exactly representable in the
 * target dtype, so rounding can never produce 1.0). The scale 2^-bits is
 * assembled from its encoding: device float division is not correctly
 * rounded. */
CT_PH_FN float ct_philox_uniform_bits(ct_ph_u32 x0, int bits) {
    float scale = CT_PH_BITS_FLOAT((ct_ph_u32)(127 - bits) << 23);
    return (float)(x0 >> (32 - bits)) * scale;
}
CT_PH_FN float ct_philox_uniform_f32(ct_ph_u32 x0) { return ct_philox_uniform_bits(x0, 24); }
CT_PH_FN ct_ph_u64 ct_philox_u64(ct_ph_u32 x0, ct_ph_u32 x1) { return ((ct_ph_u64)x0 << 32) | x1; }

#ifdef CT_PHILOX_HAS_DOUBLE
CT_PH_FN double ct_philox_uniform_f64(ct_ph_u32 x0, ct_ph_u32 x1) {
    ct_ph_u64 bits = ((ct_ph_u64)x0 << 21) ^ (ct_ph_u64)(x1 >> 11); /* 53 bits */
    return (double)(bits & (((ct_ph_u64)1 << 53) - 1)) * 1.1102230246251565e-16;
}

/* ln(m * 2^-24) for an integer m in [1, 2^24]: m = f * 2^e with f in
 * [sqrt(1/2), sqrt(2)), ln f = 2 atanh(s) with s = (f-1)/(f+1), |s| < 0.172,
 * summed to 2^-60 relative; e * ln 2 uses a split constant whose high part
 * makes the product exact. About 1 ulp.
 *
 * f and e come from the encoding of the (exact) double m: its mantissa with
 * the exponent of 1 is m scaled into [1, 2), halved once more (exactly) when
 * it is at least sqrt(2). Written without branches, 64-bit comparisons or
 * int64-to-double conversions so that the CPU loop over many draws
 * vectorises even with SSE2 alone. */
CT_PH_FN double ct_philox_log_grid24(ct_ph_u32 m) {
    ct_ph_u64 bits = CT_PH_DOUBLE_BITS((double)(int)m); /* m < 2^31: a 32-bit conversion */
    double f1 = CT_PH_BITS_DOUBLE((bits & ((((ct_ph_u64)1) << 52) - 1)) | ((ct_ph_u64)1023 << 52));
    double e1 = (double)((int)(bits >> 52) - 1023 - 24); /* m = f1 2^(e1 + 24) */
    int halve = f1 >= 1.4142135623730951;
    double f = halve ? CT_PH_DMUL(f1, 0.5) : f1;
    double de = halve ? CT_PH_DADD(e1, 1.0) : e1;
    double s = (f - 1.0) / (f + 1.0); /* double division is correctly rounded everywhere */
    double z = CT_PH_DMUL(s, s);
    double p = 0.04; /* 1/25 */
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.043478260869565216);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.047619047619047616);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.05263157894736842);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.058823529411764705);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.06666666666666667);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.07692307692307693);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.09090909090909091);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.1111111111111111);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.14285714285714285);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.2);
    p = CT_PH_DADD(CT_PH_DMUL(p, z), 0.3333333333333333);
    double s2 = CT_PH_DMUL(2.0, s);
    double lnf = CT_PH_DADD(s2, CT_PH_DMUL(CT_PH_DMUL(s2, z), p));
    return CT_PH_DADD(CT_PH_DMUL(de, 6.93147180369123816490e-01),
                      CT_PH_DADD(lnf, CT_PH_DMUL(de, 1.90821492927058770002e-10)));
}

/* cos and sin of 2 pi k / 2^24 for an integer k in [0, 2^24): the quadrant
 * q comes from k's integer bits, so the reduced argument |x| <= pi/4 is
 * exact up to one rounding; Taylor series to x^18 and x^19 (error < 1e-19).
 * Both series are always evaluated and the quadrant picks and signs them
 * with selects, so the CPU loop vectorises. */
CT_PH_FN void ct_philox_sincos_grid24(ct_ph_u32 k, double *cosv, double *sinv) {
    ct_ph_u32 q = ((k + (1u << 21)) >> 22) & 3u; /* nearest quarter turn */
    int r = (int)((k + (1u << 21)) & ((1u << 22) - 1u)) - (1 << 21); /* k - q 2^22, in [-2^21, 2^21) */
    double x = CT_PH_DMUL((double)r, 3.7450702829239286e-07);       /* 2 pi / 2^24 */
    double z = CT_PH_DMUL(x, x);
    double c = -1.5619206968586225e-16; /* -1/18! */
    c = CT_PH_DADD(CT_PH_DMUL(c, z), 4.779477332387385e-14);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), -1.1470745597729725e-11);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), 2.08767569878681e-09);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), -2.755731922398589e-07);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), 2.48015873015873e-05);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), -0.001388888888888889);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), 0.041666666666666664);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), -0.5);
    c = CT_PH_DADD(CT_PH_DMUL(c, z), 1.0);
    double s = -8.22063524662433e-18; /* -1/19! */
    s = CT_PH_DADD(CT_PH_DMUL(s, z), 2.8114572543455206e-15);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), -7.647163731819816e-13);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), 1.6059043836821613e-10);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), -2.505210838544172e-08);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), 2.7557319223985893e-06);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), -0.0001984126984126984);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), 0.008333333333333333);
    s = CT_PH_DADD(CT_PH_DMUL(s, z), -0.16666666666666666);
    s = CT_PH_DADD(x, CT_PH_DMUL(CT_PH_DMUL(x, z), s));
    /* theta = q pi/2 + x: cos theta = c, -s, -c, s and sin theta = s, c, -s, -c */
    int odd = (int)(q & 1u);
    double cq = odd ? s : c, sq = odd ? c : s;
    *cosv = ((q + 1u) & 2u) ? -cq : cq;
    *sinv = (q & 2u) ? -sq : sq;
}

/* Box–Muller's squared radius -2 ln u1 with u1 = (x0>>8 + 1) / 2^24 in (0, 1]. */
CT_PH_FN double ct_philox_radius_sq(ct_ph_u32 x0) {
    return CT_PH_DMUL(-2.0, ct_philox_log_grid24((x0 >> 8) + 1u));
}

/* Two standard normals by Box–Muller from one pair of draws:
 * rho = sqrt(-2 ln u1) and theta = 2 pi u2 with u2 = (x1>>8) / 2^24;
 * z0 = rho cos theta, z1 = rho sin theta. (cpu_random.c evaluates the same
 * steps over arrays, with sqrt in a separate loop.) */
CT_PH_FN void ct_philox_normal_pair(ct_ph_u32 x0, ct_ph_u32 x1, double *z0, double *z1) {
    double rho = sqrt(ct_philox_radius_sq(x0));
    double c, s;
    ct_philox_sincos_grid24(x1 >> 8, &c, &s);
    *z0 = CT_PH_DMUL(rho, c);
    *z1 = CT_PH_DMUL(rho, s);
}
#endif /* CT_PHILOX_HAS_DOUBLE */

#endif /* CT_KERNELS_PHILOX_H */
