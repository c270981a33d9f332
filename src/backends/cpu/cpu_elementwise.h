/*
 * cpu_elementwise.h — the CPU backend's elementwise kernels (internal).
 *
 * They live in cpu_unary.c and cpu_binary.c and fill the `unary`, `binary`
 * and `where` entries of the CPU backend table (cpu_backend.c), so their
 * signatures are exactly those of the ct_backend members.
 */
#ifndef CT_CPU_ELEMENTWISE_H
#define CT_CPU_ELEMENTWISE_H

#include "cpu_internal.h"
#include "cpu_vec.h"

/* `out` is contiguous; inputs may have any strides (0 on broadcast dims).
 * `out` may also be exactly one of the inputs (same data, offset, strides)
 * for in-place use. */
ct_status ct_cpu_unary(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0, double p1);
ct_status ct_cpu_binary(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                        double alpha);
ct_status ct_cpu_where(const ct_kview *out, const ct_kview *cond, const ct_kview *a, const ct_kview *b);

/* ---- helpers shared by cpu_unary.c and cpu_binary.c ---- */

/* Float16/bfloat16 are computed in float32 and int32/uint8/int8/bool in int64:
 * runs of this many elements are converted into a stack buffer, computed by
 * the float32/int64 loop and converted back, so every op is written once. */
#define CT_CPU_EW_CHUNK 256

/* The byte step of a view walked as a flat array: its element size when it
 * is contiguous, 0 when all its elements are one (a broadcast scalar).
 * Returns false when it is neither and the N-d iterator is needed. */
static inline bool ct_cpu_flat_step(const ct_kview *v, int64_t *step) {
    int64_t expected = 1;
    bool contiguous = true, all_zero = true;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] == 1)
            continue;
        if (v->strides[d] != expected)
            contiguous = false;
        if (v->strides[d] != 0)
            all_zero = false;
        expected *= v->shape[d];
    }
    if (contiguous) {
        *step = (int64_t)ct_dtype_size(v->dtype);
        return true;
    }
    if (all_zero) {
        *step = 0;
        return true;
    }
    return false;
}

static inline int64_t ct_cpu_view_numel(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++)
        n *= v->shape[d];
    return n;
}

/* Run an inner loop over n flat elements, in chunks spread over OpenMP
 * threads when n reaches CT_CPU_GRAIN. */
static inline void ct_cpu_run_flat(ct_cpu_inner_fn fn, void *ctx, char *const *base,
                                   const int64_t *steps, int nops, int64_t n) {
    if (n < CT_CPU_GRAIN) {
        char *ptrs[CT_CPU_ITER_MAX];
        for (int k = 0; k < nops; k++)
            ptrs[k] = base[k];
        fn(ptrs, steps, n, ctx);
        return;
    }
    const int64_t chunk = CT_CPU_GRAIN / 4;
    const int64_t nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nchunks; c++) {
        char *ptrs[CT_CPU_ITER_MAX];
        const int64_t start = c * chunk;
        const int64_t len = n - start < chunk ? n - start : chunk;
        for (int k = 0; k < nops; k++)
            ptrs[k] = base[k] + start * steps[k];
        fn(ptrs, steps, len, ctx);
    }
}

/* Flat when every view is contiguous or a broadcast scalar (the output is
 * contiguous by contract), else the N-d iterator. */
static inline void ct_cpu_run_elementwise(const ct_kview *const *views, int nops, ct_cpu_inner_fn fn,
                                          void *ctx) {
    char *base[CT_CPU_ITER_MAX];
    int64_t steps[CT_CPU_ITER_MAX];
    for (int k = 0; k < nops; k++) {
        if (!ct_cpu_flat_step(views[k], &steps[k])) {
            ct_cpu_iter(views, nops, fn, ctx, CT_CPU_GRAIN);
            return;
        }
        base[k] = ct_cpu_base(views[k]);
    }
    ct_cpu_run_flat(fn, ctx, base, steps, nops, ct_cpu_view_numel(views[0]));
}

/* The 16-bit conversions are cpu_vec.h's branch-free ones, so these loops
 * vectorise (files including this header start with the no-trapping-math
 * pragma that cpu_vec.h asks for). */
static inline void ct_cpu_load_f32_run(float *restrict dst, const char *src, int64_t step, ct_dtype dt,
                                       int64_t n) {
    const uint16_t *restrict flat = (const uint16_t *)src;
    if (dt == CT_FLOAT16 && step == 2) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = ct_cpu_half_bits_to_float(flat[i]);
    } else if (dt == CT_FLOAT16) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = ct_cpu_half_bits_to_float(*(const uint16_t *)(src + i * step));
    } else if (step == 2) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = ct_cpu_bf16_bits_to_float(flat[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = ct_cpu_bf16_bits_to_float(*(const uint16_t *)(src + i * step));
    }
}

static inline void ct_cpu_store_f32_run(char *dst, int64_t step, ct_dtype dt, const float *restrict src,
                                        int64_t n) {
    uint16_t *restrict flat = (uint16_t *)dst;
    if (dt == CT_FLOAT16 && step == 2) {
        for (int64_t i = 0; i < n; i++)
            flat[i] = ct_cpu_float_to_half_bits(src[i]);
    } else if (dt == CT_FLOAT16) {
        for (int64_t i = 0; i < n; i++)
            *(uint16_t *)(dst + i * step) = ct_cpu_float_to_half_bits(src[i]);
    } else if (step == 2) {
        for (int64_t i = 0; i < n; i++)
            flat[i] = ct_cpu_float_to_bf16_bits(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            *(uint16_t *)(dst + i * step) = ct_cpu_float_to_bf16_bits(src[i]);
    }
}

static inline void ct_cpu_load_i64_run(int64_t *dst, const char *src, int64_t step, ct_dtype dt,
                                       int64_t n) {
    switch (dt) {
    case CT_INT32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = *(const int32_t *)(src + i * step);
        break;
    case CT_UINT8:
        for (int64_t i = 0; i < n; i++)
            dst[i] = *(const uint8_t *)(src + i * step);
        break;
    case CT_INT8:
        for (int64_t i = 0; i < n; i++)
            dst[i] = *(const int8_t *)(src + i * step);
        break;
    case CT_BOOL:
        for (int64_t i = 0; i < n; i++)
            dst[i] = *(const uint8_t *)(src + i * step) != 0;
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ct_cpu_load_i64(src + i * step, dt);
        break;
    }
}

/* Integer results wrap modulo the width of the dtype, as in PyTorch. */
static inline void ct_cpu_store_i64_run(char *dst, int64_t step, ct_dtype dt, const int64_t *src,
                                        int64_t n) {
    switch (dt) {
    case CT_INT32:
        for (int64_t i = 0; i < n; i++)
            *(int32_t *)(dst + i * step) = (int32_t)(uint32_t)(uint64_t)src[i];
        break;
    case CT_UINT8:
        for (int64_t i = 0; i < n; i++)
            *(uint8_t *)(dst + i * step) = (uint8_t)(uint64_t)src[i];
        break;
    case CT_INT8:
        for (int64_t i = 0; i < n; i++)
            *(int8_t *)(dst + i * step) = (int8_t)(uint8_t)(uint64_t)src[i];
        break;
    case CT_BOOL:
        for (int64_t i = 0; i < n; i++)
            *(uint8_t *)(dst + i * step) = src[i] != 0;
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            ct_cpu_store_i64(dst + i * step, dt, src[i]);
        break;
    }
}

#endif /* CT_CPU_ELEMENTWISE_H */
