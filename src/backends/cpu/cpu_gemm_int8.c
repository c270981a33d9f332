/*
 * cpu_gemm_int8.c — the uint8 × int8 → int32 GEMM behind dynamic
 * quantization (cpu_qgemm.h has the contract), with the quantized linear's
 * dequantization fused into its stores.
 *
 * Both operands have K-contiguous rows (activations [m, k], a Linear weight
 * [n, k]), so each output is a dot product of two byte rows. A 2×4 tile of
 * outputs is computed at a time: every A row loaded is used against four B
 * rows and every B row against two A rows, with eight vector accumulators.
 * A single-row tile serves m = 1 (and odd m's last row) so a batch-1
 * forward streams each weight row once with no repeated work. Edge tiles
 * repeat their last column and drop the copies on store, so one tile kernel
 * serves every shape. Threads split the (row block, column block) grid;
 * each block's 64 weight rows stay in L2 while the activation rows stream
 * past.
 *
 * The kernels are compiled with target attributes (no -m flags for the
 * whole file) and picked once from CPUID, like cpu_gemm.c's engine. On
 * CPUs with AMX the product goes to oneDNN instead (cpu_dnnl_qgemm.c),
 * which writes int32; the fused dequantization then runs over that output
 * in place, with the same epilogue code as the tiles' stores, so its bits
 * match. cpu_qlinear_aux.c has the helpers around the product (activation
 * quantization, weight row sums).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define CT_QGEMM_X86 1
#endif

#include "cpu_qgemm.h"

#define MR 2
#define NR 4
#define BLOCK_M 64
#define BLOCK_N 64
/* Multiply-adds below which threads cost more than they save. */
#define PARALLEL_WORK (1 << 18)
/* Outputs below which the dequantizing pass over oneDNN's output runs
 * on one thread. */
#define DEQUANT_PARALLEL (1 << 14)

typedef void (*tile_fn)(const uint8_t *const a[MR], const int8_t *const b[NR], int64_t k,
                        int32_t out[MR][NR]);

/* Wrapping int32 sums of exact products, as the SIMD adds do. */
static void tail_dot(const uint8_t *const a[MR], const int8_t *const b[NR], int64_t p0, int64_t k,
                     int32_t out[MR][NR]) {
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) {
            uint32_t s = (uint32_t)out[r][q];
            for (int64_t p = p0; p < k; p++) s += (uint32_t)((int32_t)a[r][p] * (int32_t)b[q][p]);
            out[r][q] = (int32_t)s;
        }
}

static void tile_scalar(const uint8_t *const a[MR], const int8_t *const b[NR], int64_t k,
                        int32_t out[MR][NR]) {
    memset(out, 0, sizeof(int32_t) * MR * NR);
    tail_dot(a, b, 0, k, out);
}

#ifdef CT_QGEMM_X86
__attribute__((target("avx2"))) static inline int32_t hsum256(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 16 bytes per step, widened to int16: vpmaddwd's pair sums (at most
 * 2·255·128) are exact, where vpmaddubsw would saturate at 32767. */
__attribute__((target("avx2"))) static void tile_avx2(const uint8_t *const a[MR],
                                                      const int8_t *const b[NR], int64_t k,
                                                      int32_t out[MR][NR]) {
    __m256i acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) acc[r][q] = _mm256_setzero_si256();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m256i av[MR];
        for (int r = 0; r < MR; r++)
            av[r] = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(a[r] + p)));
#pragma GCC unroll 4
        for (int q = 0; q < NR; q++) {
            __m256i bv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b[q] + p)));
            for (int r = 0; r < MR; r++) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(av[r], bv));
        }
    }
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) out[r][q] = hsum256(acc[r][q]);
    tail_dot(a, b, p, k, out);
}

/* The four sums of one row's accumulators (columns 0..3) in one vector. */
__attribute__((target("avx2"))) static inline __m128i hsum4x256(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(c0, c1), _mm256_hadd_epi32(c2, c3));
    return _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* One 32-byte step of the 7-bit kernel: vpmaddubsw gives exact int16 pair
 * sums (A ≤ 127), vpmaddwd against ones widens them to int32. */
__attribute__((always_inline, target("avx2"))) static inline void u7_step(int mr, __m256i acc[MR][NR],
                                                                           const uint8_t *const a[MR],
                                                                           const int8_t *const b[NR], int64_t p) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i av[MR];
    for (int r = 0; r < mr; r++) av[r] = _mm256_loadu_si256((const __m256i *)(const void *)(a[r] + p));
    for (int q = 0; q < NR; q++) {
        const __m256i bv = _mm256_loadu_si256((const __m256i *)(const void *)(b[q] + p));
        for (int r = 0; r < mr; r++)
            acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(_mm256_maddubs_epi16(av[r], bv), ones));
    }
}

/* The same on 16 bytes (zero upper half): k = 784 has a 16-byte tail. */
__attribute__((always_inline, target("avx2"))) static inline void u7_step16(int mr, __m256i acc[MR][NR],
                                                                             const uint8_t *const a[MR],
                                                                             const int8_t *const b[NR], int64_t p) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i av[MR];
    for (int r = 0; r < mr; r++) av[r] = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(a[r] + p)));
    for (int q = 0; q < NR; q++) {
        const __m256i bv = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(b[q] + p)));
        for (int r = 0; r < mr; r++)
            acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(_mm256_maddubs_epi16(av[r], bv), ones));
    }
}

/* mr rows (1 or 2, a constant after inlining); a 16-byte step, then
 * zero-padded copies take the last k % 32 bytes, so there is no scalar
 * tail. */
__attribute__((always_inline, target("avx2"))) static inline void tile_u7_body(int mr, const uint8_t *const a[MR],
                                                                                const int8_t *const b[NR], int64_t k,
                                                                                int32_t out[MR][NR]) {
    __m256i acc[MR][NR];
    for (int r = 0; r < mr; r++)
        for (int q = 0; q < NR; q++) acc[r][q] = _mm256_setzero_si256();
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) u7_step(mr, acc, a, b, p);
    if (p + 16 <= k) u7_step16(mr, acc, a, b, p), p += 16;
    if (p < k) {
        _Alignas(32) uint8_t at[MR][32] = {{0}};
        _Alignas(32) int8_t bt[NR][32] = {{0}};
        const uint8_t *ap[MR];
        const int8_t *bp[NR];
        for (int r = 0; r < mr; r++) memcpy(at[r], a[r] + p, (size_t)(k - p)), ap[r] = at[r];
        for (int q = 0; q < NR; q++) memcpy(bt[q], b[q] + p, (size_t)(k - p)), bp[q] = bt[q];
        u7_step(mr, acc, ap, bp, 0);
    }
    for (int r = 0; r < mr; r++)
        _mm_storeu_si128((__m128i *)(void *)out[r], hsum4x256(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
}

__attribute__((target("avx2"))) static void tile_u7_avx2(const uint8_t *const a[MR], const int8_t *const b[NR],
                                                         int64_t k, int32_t out[MR][NR]) {
    tile_u7_body(2, a, b, k, out);
}

__attribute__((target("avx2"))) static void tile1_u7_avx2(const uint8_t *const a[MR], const int8_t *const b[NR],
                                                          int64_t k, int32_t out[MR][NR]) {
    tile_u7_body(1, a, b, k, out);
}

/* vpdpbusd: four u8·s8 products summed into each int32 lane, wrapping
 * (the non-saturating form), 32 bytes per step. */
__attribute__((target("avx2,avxvnni"))) static void tile_avx_vnni(const uint8_t *const a[MR],
                                                                  const int8_t *const b[NR],
                                                                  int64_t k, int32_t out[MR][NR]) {
    __m256i acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) acc[r][q] = _mm256_setzero_si256();
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
        __m256i av[MR];
        for (int r = 0; r < MR; r++) av[r] = _mm256_loadu_si256((const __m256i *)(const void *)(a[r] + p));
#pragma GCC unroll 4
        for (int q = 0; q < NR; q++) {
            __m256i bv = _mm256_loadu_si256((const __m256i *)(const void *)(b[q] + p));
            for (int r = 0; r < MR; r++) acc[r][q] = _mm256_dpbusd_avx_epi32(acc[r][q], av[r], bv);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) out[r][q] = hsum256(acc[r][q]);
    tail_dot(a, b, p, k, out);
}

/* 64 bytes per step; the last step loads under a mask (zeros add nothing). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void tile_avx512_vnni(
    const uint8_t *const a[MR], const int8_t *const b[NR], int64_t k, int32_t out[MR][NR]) {
    __m512i acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) acc[r][q] = _mm512_setzero_si512();
    for (int64_t p = 0; p < k; p += 64) {
        const __mmask64 mk = k - p >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - p)) - 1);
        __m512i av[MR];
        for (int r = 0; r < MR; r++) av[r] = _mm512_maskz_loadu_epi8(mk, a[r] + p);
#pragma GCC unroll 4
        for (int q = 0; q < NR; q++) {
            __m512i bv = _mm512_maskz_loadu_epi8(mk, b[q] + p);
            for (int r = 0; r < MR; r++) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], av[r], bv);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int q = 0; q < NR; q++) out[r][q] = _mm512_reduce_add_epi32(acc[r][q]);
}
#endif

/* ---- choosing a path ---------------------------------------------------------- */

#ifdef CT_QGEMM_X86
/* AVX-VNNI: CPUID leaf 7, sub-leaf 1, EAX bit 4. Asked directly because
 * clang's __builtin_cpu_supports (14, Debian 12's) has no "avxvnni"; the
 * operating system's AVX state is covered by the avx2 check beside it. */
static bool cpu_has_avx_vnni(void) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4));
}
#endif

static bool cpu_has(ct_qgemm_path path) {
#ifdef CT_QGEMM_X86
    __builtin_cpu_init();
    switch (path) {
    case CT_QGEMM_AVX2: return __builtin_cpu_supports("avx2");
    case CT_QGEMM_AVX_VNNI: return __builtin_cpu_supports("avx2") && cpu_has_avx_vnni();
    case CT_QGEMM_AVX512_VNNI:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
    default: break;
    }
#endif
    if (path == CT_QGEMM_AMX) return ct_cpu_dnnl_qgemm_available();
    return path == CT_QGEMM_SCALAR || path == CT_QGEMM_AUTO;
}

bool ct_cpu_qgemm_supported(ct_qgemm_path path) {
    return path >= CT_QGEMM_AUTO && path < CT_QGEMM_NPATHS && cpu_has(path);
}

static pthread_once_t best_once = PTHREAD_ONCE_INIT;
static ct_qgemm_path best_path = CT_QGEMM_SCALAR;
/* The kernel of ours that serves what oneDNN declines. */
static ct_qgemm_path best_native = CT_QGEMM_SCALAR;

/* oneDNN only with AMX: without tiles its int8 kernels do not beat ours
 * (docs/quantization.md has the AVX2 figures). */
static void choose_best(void) {
    static const ct_qgemm_path order[] = {CT_QGEMM_AVX512_VNNI, CT_QGEMM_AVX_VNNI, CT_QGEMM_AVX2};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (cpu_has(order[i])) {
            best_native = order[i];
            break;
        }
    best_path = ct_cpu_dnnl_qgemm_amx() ? CT_QGEMM_AMX : best_native;
}

ct_qgemm_path ct_cpu_qgemm_best(void) {
    pthread_once(&best_once, choose_best);
    return best_path;
}

const char *ct_cpu_qgemm_name(ct_qgemm_path path) {
    switch (path) {
    case CT_QGEMM_AUTO: return "auto";
    case CT_QGEMM_SCALAR: return "scalar";
    case CT_QGEMM_AVX2: return "avx2";
    case CT_QGEMM_AVX_VNNI: return "avx_vnni";
    case CT_QGEMM_AVX512_VNNI: return "avx512_vnni";
    case CT_QGEMM_AMX: return "amx_int8 (oneDNN)";
    default: return "invalid";
    }
}

/* The full tile and the single-row tile (NULL: the full one, whose second
 * row repeats the first) for path, 7-bit A or not. */
typedef struct tiles {
    tile_fn full, one_row;
} tiles;

/* The path a call runs: AUTO and paths this CPU lacks become the best. */
static ct_qgemm_path resolve(ct_qgemm_path path) {
    return !ct_cpu_qgemm_supported(path) || path == CT_QGEMM_AUTO ? ct_cpu_qgemm_best() : path;
}

static tiles tiles_for(ct_qgemm_path path, bool a7) {
    path = resolve(path);
    if (path == CT_QGEMM_AMX) path = best_native; /* what oneDNN declined */
    switch (path) {
#ifdef CT_QGEMM_X86
    case CT_QGEMM_AVX2: return a7 ? (tiles){tile_u7_avx2, tile1_u7_avx2} : (tiles){tile_avx2, NULL};
    case CT_QGEMM_AVX_VNNI: return (tiles){tile_avx_vnni, NULL};
    case CT_QGEMM_AVX512_VNNI: return (tiles){tile_avx512_vnni, NULL};
#endif
    default: return (tiles){tile_scalar, NULL};
    }
}

/* ---- the product -------------------------------------------------------------- */

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

/* Where a tile's outputs go: int32 C, or the fused dequantization. */
typedef struct qgemm_out {
    int32_t *c;
    int64_t ldc;
    const ct_qgemm_dequant *dq;
} qgemm_out;

/* The fused dequantization of rows [i, i + rows) × columns [j, j + cols),
 * whose int32 sums are t (rows ldt apart): the tiles' stores and the pass
 * over oneDNN's output share it, so both give the same bits. */
static void dequant_block(const ct_qgemm_dequant *dq, int64_t i, int64_t rows, int64_t j, int64_t cols,
                          const int32_t *t, int64_t ldt) {
    for (int64_t q0 = 0; q0 < cols; q0 += NR) {
        const int64_t qn = min64(NR, cols - q0);
        float colscale[NR], bias[NR];
        uint32_t off[NR];
        for (int64_t q = 0; q < qn; q++) {
            colscale[q] = dq->a_scale * dq->b_scale[j + q0 + q];
            bias[q] = dq->bias ? dq->bias[j + q0 + q] : 0.0f;
            off[q] = (uint32_t)dq->a_zero_point * (uint32_t)dq->b_row_sum[j + q0 + q];
        }
        for (int64_t r = 0; r < rows; r++) {
            float *y = dq->y + (i + r) * dq->ldy + j + q0;
            const int32_t *tr = t + r * ldt + q0;
            for (int64_t q = 0; q < qn; q++) {
                const float v = (float)(int32_t)((uint32_t)tr[q] - off[q]) * colscale[q];
                y[q] = dq->bias ? v + bias[q] : v;
            }
        }
    }
}

static void store_tile(const qgemm_out *o, int64_t i, int64_t rows, int64_t j, int64_t cols, int32_t t[MR][NR]) {
    if (o->dq) {
        dequant_block(o->dq, i, rows, j, cols, &t[0][0], NR);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < cols; q++) o->c[(i + r) * o->ldc + j + q] = t[r][q];
}

/* Rows [i0, i1) × columns [j0, j1) of the output. */
static void run_block(tiles tl, int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k, const uint8_t *a,
                      int64_t lda, const int8_t *b, int64_t ldb, const qgemm_out *o) {
    for (int64_t i = i0; i < i1; i += MR) {
        const int64_t rows = min64(MR, i1 - i);
        const tile_fn tile = rows == 1 && tl.one_row ? tl.one_row : tl.full;
        const uint8_t *ap[MR];
        for (int r = 0; r < MR; r++) ap[r] = a + min64(i + r, i1 - 1) * lda;
        for (int64_t j = j0; j < j1; j += NR) {
            const int8_t *bp[NR];
            for (int q = 0; q < NR; q++) bp[q] = b + min64(j + q, j1 - 1) * ldb;
            int32_t t[MR][NR];
            tile(ap, bp, k, t);
            store_tile(o, i, rows, j, min64(NR, j1 - j), t);
        }
    }
}

static void qgemm(tiles tl, int64_t m, int64_t n, int64_t k, const uint8_t *a, int64_t lda, const int8_t *b,
                  int64_t ldb, const qgemm_out *o) {
    if (m <= 0 || n <= 0) return;
    const int64_t mb = (m + BLOCK_M - 1) / BLOCK_M, nb = (n + BLOCK_N - 1) / BLOCK_N;
    const int64_t blocks = mb * nb;
    const double work = (double)m * (double)n * (double)k;
#pragma omp parallel for schedule(static) if (work >= PARALLEL_WORK && blocks > 1)
    for (int64_t t = 0; t < blocks; t++) {
        const int64_t bi = t % mb, bj = t / mb; /* neighbours share a weight block */
        run_block(tl, bi * BLOCK_M, min64(m, (bi + 1) * BLOCK_M), bj * BLOCK_N, min64(n, (bj + 1) * BLOCK_N), k,
                  a, lda, b, ldb, o);
    }
}

/* The product through oneDNN when path resolves to AMX and it takes the
 * shape; false: a native kernel must compute it. Asked for by name, it
 * runs without the work threshold (the tests' way in on any CPU). */
static bool try_onednn(ct_qgemm_path path, bool a7, int64_t m, int64_t n, int64_t k, const uint8_t *a,
                       int64_t lda, const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc) {
    if (resolve(path) != CT_QGEMM_AMX) return false;
    return ct_cpu_dnnl_qgemm_u8s8(path == CT_QGEMM_AMX, a7, m, n, k, a, lda, b, ldb, c, ldc);
}

/* Columns converted per step of the in-place pass below. */
#define DEQUANT_CHUNK 256

/* One row of that pass: the int32 sums in y's memory become floats, by
 * the same formula as dequant_block's (same bits), with the per-column
 * factors precomputed so that the loop vectorises. */
static void dequant_row_in_place(const ct_qgemm_dequant *dq, int64_t i, int64_t n, const float *colscale,
                                 const uint32_t *off) {
    float *y = dq->y + i * dq->ldy;
    int32_t t[DEQUANT_CHUNK];
    for (int64_t j = 0; j < n; j += DEQUANT_CHUNK) {
        const int64_t cols = min64(DEQUANT_CHUNK, n - j);
        memcpy(t, y + j, sizeof(int32_t) * (size_t)cols);
        for (int64_t q = 0; q < cols; q++) y[j + q] = (float)(int32_t)((uint32_t)t[q] - off[j + q]) * colscale[j + q];
        if (dq->bias)
            for (int64_t q = 0; q < cols; q++) y[j + q] += dq->bias[j + q];
    }
}

/* oneDNN wrote the int32 sums into y itself (int32 and float are both 4
 * bytes, ldy apart): each chunk is copied out before its floats overwrite
 * it, so no temporary of the output's size is needed. Threads split the
 * rows: alone, this pass took longer than AMX's product (64×1024 outputs:
 * 256 µs against 34 µs on a Xeon with AMX). */
static void dequant_in_place(const ct_qgemm_dequant *dq, int64_t m, int64_t n) {
    float *colscale = malloc(sizeof(float) * (size_t)n);
    uint32_t *off = malloc(sizeof(uint32_t) * (size_t)n);
    if (!colscale || !off) { /* no memory for the factors: the tiles' epilogue, column by column */
        free(colscale), free(off);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int32_t t;
                memcpy(&t, dq->y + i * dq->ldy + j, sizeof t);
                dequant_block(dq, i, 1, j, 1, &t, 1);
            }
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        colscale[j] = dq->a_scale * dq->b_scale[j];
        off[j] = (uint32_t)dq->a_zero_point * (uint32_t)dq->b_row_sum[j];
    }
#pragma omp parallel for schedule(static) if ((double)m * (double)n >= DEQUANT_PARALLEL && m > 1)
    for (int64_t i = 0; i < m; i++) dequant_row_in_place(dq, i, n, colscale, off);
    free(colscale), free(off);
}

void ct_cpu_qgemm_u8s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a, int64_t lda,
                       const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc) {
    if (try_onednn(path, false, m, n, k, a, lda, b, ldb, c, ldc)) return;
    const qgemm_out o = {c, ldc, NULL};
    qgemm(tiles_for(path, false), m, n, k, a, lda, b, ldb, &o);
}

void ct_cpu_qgemm_u7s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a, int64_t lda,
                       const int8_t *b, int64_t ldb, int32_t *c, int64_t ldc) {
    if (try_onednn(path, true, m, n, k, a, lda, b, ldb, c, ldc)) return;
    const qgemm_out o = {c, ldc, NULL};
    qgemm(tiles_for(path, true), m, n, k, a, lda, b, ldb, &o);
}

void ct_cpu_qlinear_u7s8(ct_qgemm_path path, int64_t m, int64_t n, int64_t k, const uint8_t *a, int64_t lda,
                         const int8_t *b, int64_t ldb, const ct_qgemm_dequant *dq) {
    /* the int32 sums land in y's own memory, then become floats there */
    void *ybytes = dq->y;
    if (try_onednn(path, true, m, n, k, a, lda, b, ldb, ybytes, dq->ldy)) {
        dequant_in_place(dq, m, n);
        return;
    }
    const qgemm_out o = {NULL, 0, dq};
    qgemm(tiles_for(path, true), m, n, k, a, lda, b, ldb, &o);
}
