/*
 * cpu_dnnl_qgemm.c — the uint8 × int8 → int32 GEMM (cpu_qgemm.h) through
 * oneDNN's matmul primitive, for CPUs with AMX-INT8 tiles.
 *
 * Why: a Sapphire Rapids Xeon's AMX tiles (TDPBUSD) multiply u8·s8 with
 * exact int32 sums several times faster than AVX-512 VNNI, and oneDNN has
 * the tile kernels, the weight packing and the blocking for them, which
 * ctorch's own kernels do not. The sums are exact on AMX and VNNI, so the
 * bits equal the native paths' and the path only changes speed.
 *
 * Below VNNI oneDNN's int8 GEMM pairs products with vpmaddubsw, whose
 * int16 sums saturate on full-range bytes (255·(−128)·2 < −32768; seen on
 * AVX2: gemm:jit gave wrong sums). There it takes only 7-bit activations
 * (the quantized linear's), whose pair sums fit, and declines full-range
 * products (ct_int_mm's) to the native kernels.
 *
 * The operands are described by their strides as they are: activations
 * [m, k] rows lda apart, the [n, k] weight as the [k, n] operand oneDNN
 * wants by swapping its strides (no copy of ours; oneDNN packs what its
 * kernel needs into the scratchpad), int32 output rows ldc apart. No plan
 * cache of our own: oneDNN's primitive cache keeps what it built, and
 * products too small to repay the lookup stay on the native kernels
 * (unless a caller asks for this path by name, as the tests do to run the
 * plumbing on CPUs without AMX). Declining never sets an error: the caller
 * then runs its native kernel, so the product is always computed.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_dnnl.h"
#include "cpu_qgemm.h"
#include "ctorch/backends.h"

#ifndef CTORCH_HAVE_DNNL

bool ct_cpu_dnnl_qgemm_available(void) { return false; }
bool ct_cpu_dnnl_qgemm_amx(void) { return false; }
bool ct_cpu_dnnl_qgemm_full_range(void) { return false; }
int64_t ct_cpu_dnnl_qgemm_runs(void) { return 0; }

bool ct_cpu_dnnl_qgemm_u8s8(bool by_name, bool a7, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                            int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc) {
    (void)by_name, (void)a7, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc;
    return false;
}

#else

/* Multiply-adds below which a primitive lookup (tens of microseconds)
 * costs more than the native VNNI kernel's whole product: a batch-1
 * Linear (m = 1) is memory-bound and stays native. */
#define CT_DNNL_QGEMM_MIN_WORK (64.0 * 256 * 256)

static atomic_llong runs;

bool ct_cpu_dnnl_qgemm_available(void) { return ct_cpu_dnnl_engine() != NULL; }

static bool isa_has(dnnl_cpu_isa_t isa) {
    const unsigned have = (unsigned)dnnl_get_effective_cpu_isa();
    return (have & (unsigned)isa) == (unsigned)isa;
}

bool ct_cpu_dnnl_qgemm_amx(void) {
    return ct_cpu_dnnl_qgemm_available() && isa_has(dnnl_cpu_isa_avx512_core_amx);
}

/* avx512_core_vnni's bits are part of AMX's, so AMX always passes;
 * avx2_vnni is not trusted: oneDNN 2.6's GEMM may not use it. */
bool ct_cpu_dnnl_qgemm_full_range(void) {
    return ct_cpu_dnnl_qgemm_available() && isa_has(dnnl_cpu_isa_avx512_core_vnni);
}

int64_t ct_cpu_dnnl_qgemm_runs(void) { return (int64_t)atomic_load(&runs); }

bool ct_cpu_dnnl_qgemm_u8s8(bool by_name, bool a7, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                            int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc) {
    /* k = 0 is an empty sum oneDNN does not take; the native kernels write the zeros. */
    if (m <= 0 || n <= 0 || k <= 0) return false;
    if (!a7 && !ct_cpu_dnnl_qgemm_full_range()) return false;
    if (!by_name && (double)m * (double)n * (double)k < CT_DNNL_QGEMM_MIN_WORK) return false;
    if (!ct_backends_mkldnn_get_enabled()) return false;
    const dnnl_dims_t a_dims = {m, k}, a_strides = {lda, 1};
    const dnnl_dims_t b_dims = {k, n}, b_strides = {1, ldb}; /* [n, k] rows read as columns */
    const dnnl_dims_t c_dims = {m, n}, c_strides = {ldc, 1};
    dnnl_memory_desc_t mds[3];
    bool ok = dnnl_memory_desc_init_by_strides(&mds[0], 2, a_dims, dnnl_u8, a_strides) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&mds[1], 2, b_dims, dnnl_s8, b_strides) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&mds[2], 2, c_dims, dnnl_s32, c_strides) == dnnl_success;
    /* oneDNN takes non-const handles; it only reads src and weights. Its
     * reference matmul would lose to the native kernels: chosen by default
     * it is declined (asked for by name, it is what the tests run). */
    void *const data[3] = {(void *)(uintptr_t)a, (void *)(uintptr_t)b, c};
    ok = ok && ct_cpu_dnnl_matmul_run(mds, data, by_name) == CT_CPU_DNNL_RAN;
    if (ok) atomic_fetch_add(&runs, 1);
    return ok;
}

#endif /* CTORCH_HAVE_DNNL */
