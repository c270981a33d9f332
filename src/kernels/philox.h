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

#ifndef CT_KERNEL_TYPES_DEFINED
#include <stdint.h>
#include <math.h>
#endif

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

static inline void ct_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                    uint32_t k1, uint32_t *out) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)CT_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)CT_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += CT_PHILOX_W0;
        k1 += CT_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The two 32-bit draws of element i. */
static inline void ct_philox_pair(uint64_t seed, uint64_t offset, uint64_t i, uint32_t *x0, uint32_t *x1) {
    uint32_t r[4];
    uint64_t block = offset + i / 2;
    ct_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u, (uint32_t)seed,
                     (uint32_t)(seed >> 32), r);
    int lane = (int)(i & 1u) * 2;
    *x0 = r[lane];
    *x1 = r[lane + 1];
}

/* Uniform in [0, 1) with 24 bits (float) or 53 bits (double) of resolution. */
static inline float ct_philox_uniform_f32(uint32_t x0) { return (float)(x0 >> 8) * 5.9604644775390625e-8f; }
static inline double ct_philox_uniform_f64(uint32_t x0, uint32_t x1) {
    uint64_t bits = ((uint64_t)x0 << 21) ^ (uint64_t)(x1 >> 11); /* 53 bits */
    return (double)(bits & ((1ull << 53) - 1)) * 1.1102230246251565e-16;
}
/* Standard normal by Box–Muller (the cosine branch); u1 in (0, 1]. */
static inline double ct_philox_normal(uint32_t x0, uint32_t x1) {
    double u1 = ((double)(x0 >> 8) + 1.0) * 5.9604644775390625e-8;
    double u2 = (double)(x1 >> 8) * 5.9604644775390625e-8;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static inline uint64_t ct_philox_u64(uint32_t x0, uint32_t x1) { return ((uint64_t)x0 << 32) | x1; }

#endif /* CT_KERNELS_PHILOX_H */
