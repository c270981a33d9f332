/*
 * cpu_internal.h — helpers shared by the CPU backend's kernels (internal).
 *
 * - Element access: ct_cpu_load/ct_cpu_store read and write any dtype as a
 *   double. They are the generic (slow) path; kernels add fast paths for
 *   contiguous float32/float64 where speed matters.
 * - Iteration: ct_cpu_iter walks up to four same-shaped views at once. It
 *   merges dimensions that are contiguous in every operand, then calls an
 *   inner-loop function on runs of the innermost dimension, splitting the
 *   outer iterations across OpenMP threads when the work is large enough.
 */
#ifndef CT_CPU_INTERNAL_H
#define CT_CPU_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../core/backend.h"
#include "ctorch/dtype.h"

/* Address of element 0 of a view. */
static inline char *ct_cpu_base(const ct_kview *v) {
    return (char *)v->data + v->offset * (int64_t)ct_dtype_size(v->dtype);
}

static inline double ct_cpu_load(const void *p, ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return *(const float *)p;
    case CT_FLOAT64: return *(const double *)p;
    case CT_FLOAT16: return ct_half_to_float(*(const uint16_t *)p);
    case CT_BFLOAT16: return ct_bfloat16_to_float(*(const uint16_t *)p);
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return (double)*(const int64_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT8: return *(const int8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0.0;
    }
}

/* Float-to-integer conversion as C casts do for in-range values (truncation);
 * out-of-range and NaN give a defined value instead of undefined behaviour. */
static inline int64_t ct_cpu_double_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static inline void ct_cpu_store(void *p, ct_dtype dt, double v) {
    switch (dt) {
    case CT_FLOAT32: *(float *)p = (float)v; break;
    case CT_FLOAT64: *(double *)p = v; break;
    case CT_FLOAT16: *(uint16_t *)p = ct_float_to_half((float)v); break;
    case CT_BFLOAT16: *(uint16_t *)p = ct_float_to_bfloat16((float)v); break;
    case CT_INT32: *(int32_t *)p = (int32_t)ct_cpu_double_to_i64(v); break;
    case CT_INT64: *(int64_t *)p = ct_cpu_double_to_i64(v); break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)ct_cpu_double_to_i64(v); break;
    case CT_INT8: *(int8_t *)p = (int8_t)(uint8_t)ct_cpu_double_to_i64(v); break;
    case CT_BOOL: *(uint8_t *)p = (v != 0.0); break;
    default: break;
    }
}

/* int64 values do not fit a double exactly above 2^53: integer kernels use
 * these instead of the double path. */
static inline int64_t ct_cpu_load_i64(const void *p, ct_dtype dt) {
    switch (dt) {
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return *(const int64_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT8: return *(const int8_t *)p;
    case CT_BOOL: return *(const uint8_t *)p != 0;
    default: return ct_cpu_double_to_i64(ct_cpu_load(p, dt));
    }
}
static inline void ct_cpu_store_i64(void *p, ct_dtype dt, int64_t v) {
    switch (dt) {
    case CT_INT32: *(int32_t *)p = (int32_t)v; break;
    case CT_INT64: *(int64_t *)p = v; break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case CT_INT8: *(int8_t *)p = (int8_t)(uint8_t)v; break; /* wraps, as int32 does */
    case CT_BOOL: *(uint8_t *)p = (v != 0); break;
    default: ct_cpu_store(p, dt, (double)v); break;
    }
}

#define CT_CPU_ITER_MAX 4

/* Inner loop: n elements; ptrs[k] points at operand k's first element and
 * steps[k] is its stride in BYTES (0 when broadcast). */
typedef void (*ct_cpu_inner_fn)(char **ptrs, const int64_t *steps, int64_t n, void *ctx);

/* Walk `nops` views of identical shape (views[0]'s shape). Threads are used
 * when the total element count is at least `grain` (0 = never). */
void ct_cpu_iter(const ct_kview *const *views, int nops, ct_cpu_inner_fn fn, void *ctx,
                 int64_t grain);

/* True when every view is contiguous with the same shape (then a flat loop
 * over numel elements is valid). */
bool ct_cpu_all_contiguous(const ct_kview *const *views, int nops);
int64_t ct_cpu_numel(const ct_kview *v);

/* Element count above which loops are split across threads. */
#define CT_CPU_GRAIN 32768

#endif /* CT_CPU_INTERNAL_H */
