/*
 * elementwise_testutil.h — helpers shared by the elementwise tests
 * (test_elementwise.c: unary ops; test_elementwise_binary.c: binary ops,
 * promotion and where): value domains, random and broadcast shapes, inputs
 * in any dtype and layout, and references rounded as the dtype stores them.
 */
#ifndef CT_ELEMENTWISE_TESTUTIL_H
#define CT_ELEMENTWISE_TESTUTIL_H

#include <stdlib.h>

#include "testutil.h"
#include "core/backend.h" /* ct_unary_op / ct_binary_op: test tables */

static const ct_dtype all_dtypes[8] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                       CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};

static inline bool is_float(ct_dtype dt) { return ct_dtype_is_floating(dt); }

/* A reference result as the dtype stores it: integers wrap around, bool is
 * 0/1, floats round (so a float32 overflow is inf, as the op's is). */
static inline double wrap_to(ct_dtype dt, double v) {
    switch (dt) {
    case CT_FLOAT32: return (double)(float)v;
    case CT_FLOAT16: return ct_half_to_float(ct_float_to_half((float)v));
    case CT_BFLOAT16: return ct_bfloat16_to_float(ct_float_to_bfloat16((float)v));
    case CT_INT32: return (double)(int32_t)(uint32_t)(uint64_t)(int64_t)v;
    case CT_UINT8: return (double)(uint8_t)(uint64_t)(int64_t)v;
    case CT_BOOL: return v != 0;
    default: return v;
    }
}

static inline void tolerances(ct_dtype dt, double *rtol, double *atol) { ct_test_tolerances(dt, rtol, atol); }

/* A random shape of 0..4 dims with sizes 1..5. */
static inline ct_shape random_shape(int max_ndim) {
    ct_shape s = {.ndim = (int)ct_test_randint(0, max_ndim + 1)};
    for (int i = 0; i < s.ndim; i++) s.dims[i] = ct_test_randint(1, 6);
    return s;
}

static inline int64_t shape_numel(ct_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.dims[i];
    return n;
}

/* The broadcast of two shapes (assumed compatible). */
static inline ct_shape broadcast2(ct_shape a, ct_shape b) {
    ct_shape s = {.ndim = a.ndim > b.ndim ? a.ndim : b.ndim};
    for (int i = 0; i < s.ndim; i++) {
        int ia = i - (s.ndim - a.ndim), ib = i - (s.ndim - b.ndim);
        int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
        s.dims[i] = da == 1 ? db : da;
    }
    return s;
}

/* torch.result_type of two tensors, written out independently: a 0-dim
 * tensor only matters when its category (bool < int < float) is higher. */
static inline int category(ct_dtype dt) { return dt == CT_BOOL ? 0 : is_float(dt) ? 2 : 1; }
static inline ct_dtype result_type(ct_dtype da, int nda, ct_dtype db, int ndb) {
    if ((nda > 0) == (ndb > 0)) return ct_promote_types(da, db);
    ct_dtype strong = nda > 0 ? da : db, weak = nda > 0 ? db : da;
    return category(weak) > category(strong) ? weak : strong;
}

/* A tensor of dt holding vals (n = numel(s)), contiguous or with reversed
 * strides; *stored receives the values after rounding to dt (malloc'd),
 * computed here: read back through ctorch's strided copy, they would
 * agree with an op that walks strides the same wrong way. */
static inline ct_tensor *make_input(const double *vals, ct_shape s, ct_dtype dt, bool noncontig, double **stored) {
    int64_t n = shape_numel(s);
    ct_tensor *t = noncontig && s.ndim >= 2 ? ct_test_noncontiguous(vals, s, dt) : ct_test_tensor(vals, s, dt);
    if (t) ct_test_holds(t, vals, n, dt);
    *stored = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) (*stored)[i] = ct_test_round_to(dt, vals[i]);
    return t;
}

/* Values suited to an op's domain, for dtype dt. */
typedef enum { DOM_ANY, DOM_POSITIVE, DOM_ABOVE_M1, DOM_NONZERO, DOM_DISCRETE, DOM_POW_BASE, DOM_POW_EXP } domain;

static inline double draw(domain d, ct_dtype dt) {
    if (dt == CT_BOOL) return (double)(ct_test_rand_u64() & 1);
    bool integral = !is_float(dt);
    double lo = integral ? -6 : -4, hi = integral ? 7 : 4;
    switch (d) {
    case DOM_POSITIVE: lo = integral ? 1 : 0.05, hi = integral ? 9 : 5; break;
    case DOM_ABOVE_M1: lo = integral ? 0 : -0.9, hi = 5; break;
    case DOM_POW_BASE: lo = integral ? -3 : 0.25, hi = integral ? 4 : 3; break;
    case DOM_POW_EXP: lo = integral ? 0 : -2, hi = integral ? 4 : 2.5; break;
    default: break;
    }
    if (dt == CT_UINT8 && lo < 0) lo = 0;
    double v = ct_test_uniform(lo, hi);
    if (integral) v = floor(v);
    if (d == DOM_DISCRETE && !integral) v = floor(v * 2) / 2; /* ties for comparisons */
    if (d == DOM_NONZERO && v == 0) v = integral ? 1 : 0.5;
    if (d == DOM_NONZERO && !integral && fabs(v) < 0.25) v = v < 0 ? -0.5 : 0.5;
    return v;
}

static inline double *draw_array(domain d, ct_dtype dt, int64_t n) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = draw(d, dt);
    return v;
}

/* Shape s broadcast-compatible with out: leading dims dropped, some set to 1. */
static inline ct_shape broadcastable_from(ct_shape out) {
    ct_shape s = {.ndim = out.ndim - (int)ct_test_randint(0, out.ndim + 1)};
    for (int i = 0; i < s.ndim; i++) {
        s.dims[i] = out.dims[out.ndim - s.ndim + i];
        if (ct_test_randint(0, 3) == 0) s.dims[i] = 1;
    }
    return s;
}

/* Flat index into an input of shape in (right-aligned, broadcast) for flat
 * output index i. */
static inline int64_t bcast_index(int64_t i, ct_shape out, ct_shape in) {
    int64_t idx = 0, stride = 1;
    for (int d = out.ndim - 1; d >= 0; d--) {
        int64_t coord = i % out.dims[d];
        i /= out.dims[d];
        int di = d - (out.ndim - in.ndim);
        if (di < 0) continue;
        if (in.dims[di] != 1) idx += coord * stride;
        stride *= in.dims[di];
    }
    return idx;
}

#endif /* CT_ELEMENTWISE_TESTUTIL_H */
