/*
 * philox.h — the Philox4x32-10 counter-based generator (Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the mapping from
 * (seed, block offset, element index) to random values.
 *
 * Written in the portable kernel subset so that the CPU backend, the OpenCL
 * kernels and the CUDA kernels all include this one file and produce the same
 * stream: element i of a random tensor uses Philox block (offset + i/2) with
 * the counter (block, 0) and key seed, and takes lanes 2*(i%2) and 2*(i%2)+1.
 */
#ifndef CT_KERNELS_PHILOX_H
#define CT_KERNELS_PHILOX_H

/* Device compilers see this after src/kernels/kdefs.h, which provides
 * k_uint/k_ulong/K_FUNC; host C gets the same names from stdint. Functions
 * in double exist on devices only when they have fp64 (K_HAS_FP64). */
#ifndef CT_KERNEL_TYPES_DEFINED
#include <math.h>
#include <stdint.h>
typedef uint32_t k_uint;
typedef uint64_t k_ulong;
#define K_FUNC static inline
#define CT_PHILOX_HAS_DOUBLE 1
#elif defined(K_HAS_FP64)
#define CT_PHILOX_HAS_DOUBLE 1
#endif

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

K_FUNC void ct_philox4x32_10(k_uint c0, k_uint c1, k_uint c2, k_uint c3, k_uint k0, k_uint k1,
                             k_uint *out) {
    for (int r = 0; r < 10; r++) {
        k_ulong p0 = (k_ulong)CT_PHILOX_M0 * c0;
        k_ulong p1 = (k_ulong)CT_PHILOX_M1 * c2;
        k_uint n0 = (k_uint)(p1 >> 32) ^ c1 ^ k0;
        k_uint n2 = (k_uint)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (k_uint)p1;
        c2 = n2;
        c3 = (k_uint)p0;
        k0 += CT_PHILOX_W0;
        k1 += CT_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The two 32-bit draws of element i. */
K_FUNC void ct_philox_pair(k_ulong seed, k_ulong offset, k_ulong i, k_uint *x0, k_uint *x1) {
    k_uint r[4];
    k_ulong block = offset + i / 2;
    ct_philox4x32_10((k_uint)block, (k_uint)(block >> 32), 0u, 0u, (k_uint)seed,
                     (k_uint)(seed >> 32), r);
    int lane = (int)(i & 1u) * 2;
    *x0 = r[lane];
    *x1 = r[lane + 1];
}

/* Uniform in [0, 1) with `bits` bits of resolution (24 for float32, 11 for
 * float16, 8 for bfloat16: every value is then exactly representable in the
 * target dtype, so rounding can never produce 1.0). */
K_FUNC float ct_philox_uniform_bits(k_uint x0, int bits) {
    return (float)(x0 >> (32 - bits)) * (1.0f / (float)(1u << bits));
}
K_FUNC float ct_philox_uniform_f32(k_uint x0) { return ct_philox_uniform_bits(x0, 24); }
#ifdef CT_PHILOX_HAS_DOUBLE
K_FUNC double ct_philox_uniform_f64(k_uint x0, k_uint x1) {
    k_ulong bits = ((k_ulong)x0 << 21) ^ (k_ulong)(x1 >> 11); /* 53 bits */
    return (double)(bits & (((k_ulong)1 << 53) - 1)) * 1.1102230246251565e-16;
}
/* Standard normal by Box–Muller (the cosine branch); u1 in (0, 1]. */
K_FUNC double ct_philox_normal(k_uint x0, k_uint x1) {
    double u1 = ((double)(x0 >> 8) + 1.0) * 5.9604644775390625e-8;
    double u2 = (double)(x1 >> 8) * 5.9604644775390625e-8;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
#endif /* CT_PHILOX_HAS_DOUBLE */
K_FUNC k_ulong ct_philox_u64(k_uint x0, k_uint x1) { return ((k_ulong)x0 << 32) | x1; }

#endif /* CT_KERNELS_PHILOX_H */
