/*
 * philox.h — the Philox4x32-10 counter-based generator (Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the mapping from
 * (seed, block offset, element index) to random values.
 *
 * Written in the portable kernel subset so that the CPU backend, the OpenCL
 * kernels and the CUDA kernels all include this one file and produce the same
 * stream: element i of a random tensor uses Philox block (offset + i/2) with
 * the counter (block, 0) and key seed, and takes lanes 2*(i%2) and 2*(i%2)+1.
 *
 * Every backend must produce bit-identical values, so the float math here
 * uses only operations that IEEE 754 rounds the same way everywhere (+, -,
 * *, sqrt, conversions): device libraries' log and cos differ from the C
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
#endif
#else
#include <math.h>
#include <stdint.h>
#define CT_PH_FN static inline
typedef uint32_t ct_ph_u32;
typedef uint64_t ct_ph_u64;
#define CT_PHILOX_HAS_DOUBLE 1
#endif

/* Arithmetic that must never be fused into a multiply-add (CUDA fuses
 * a * b + c unless told not to; the OpenCL program turns FP_CONTRACT off in
 * kdefs.h; the host compiler does not fuse in ISO C mode). */
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

/* The two 32-bit draws of element i. */
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
 * built by exact halvings: device float division is not correctly rounded. */
CT_PH_FN float ct_philox_uniform_bits(ct_ph_u32 x0, int bits) {
    float scale = 1.0f;
    for (int k = 0; k < bits; k++) scale *= 0.5f;
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
 * [sqrt(1/2), sqrt(2)], ln f = 2 atanh(s) with s = (f-1)/(f+1), |s| < 0.172,
 * summed to 2^-60 relative; e * ln 2 uses a split constant whose high part
 * makes the product exact. About 1 ulp. */
CT_PH_FN double ct_philox_log_grid24(ct_ph_u32 m) {
    double f = (double)m;
    int e = -24;
    while (f >= 1.4142135623730951) {
        f = CT_PH_DMUL(f, 0.5);
        e++;
    }
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
    double de = (double)e;
    return CT_PH_DADD(CT_PH_DMUL(de, 6.93147180369123816490e-01),
                      CT_PH_DADD(lnf, CT_PH_DMUL(de, 1.90821492927058770002e-10)));
}

/* cos(2 pi k / 2^24) for an integer k in [0, 2^24): the quadrant comes from
 * k's integer bits, so the reduced argument |x| <= pi/4 is exact up to one
 * rounding; Taylor series to x^18 (error < 1e-19). */
CT_PH_FN double ct_philox_cos_grid24(ct_ph_u32 k) {
    ct_ph_u32 q = ((k + (1u << 21)) >> 22) & 3u;         /* nearest quarter turn */
    int r = (int)(k & ((1u << 22) - 1u));
    if (r >= (1 << 21)) r -= 1 << 22;                      /* r in [-2^21, 2^21) */
    double x = CT_PH_DMUL((double)r, 3.7450702829239286e-07); /* 2 pi / 2^24 */
    double z = CT_PH_DMUL(x, x);
    if (q == 0u || q == 2u) {
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
        return q == 0u ? c : -c;
    }
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
    return q == 1u ? -s : s; /* cos(x + pi/2) = -sin x, cos(x + 3pi/2) = sin x */
}

/* Standard normal by Box–Muller (the cosine branch):
 * sqrt(-2 ln u1) * cos(2 pi u2) with u1 = (x0>>8 + 1) / 2^24 in (0, 1] and
 * u2 = (x1>>8) / 2^24. */
CT_PH_FN double ct_philox_normal(ct_ph_u32 x0, ct_ph_u32 x1) {
    double r = sqrt(CT_PH_DMUL(-2.0, ct_philox_log_grid24((x0 >> 8) + 1u)));
    return CT_PH_DMUL(r, ct_philox_cos_grid24(x1 >> 8));
}
#endif /* CT_PHILOX_HAS_DOUBLE */

#endif /* CT_KERNELS_PHILOX_H */
