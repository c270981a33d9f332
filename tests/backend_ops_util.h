/*
 * backend_ops_util.h — the machinery of the cross-backend harness
 * (tests/test_backend_ops.c): a seedable random source that rebuilds the
 * same inputs on every device, input tensors with a chosen memory layout
 * (transposed, narrowed, expanded) made by the same view calls on every
 * device, and the comparison of a device result with the CPU's.
 *
 * Inputs are never copied as views: the contiguous base is moved with
 * ct_to_device and the view is taken there, so a device sees exactly the
 * strides and offsets the CPU sees.
 */
#ifndef CT_BACKEND_OPS_UTIL_H
#define CT_BACKEND_OPS_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- a random source that can be replayed -------------------------------------- */

typedef struct bo_rng {
    uint64_t s;
} bo_rng;

static inline uint64_t bo_next(bo_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double bo_uniform(bo_rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(bo_next(r) >> 11) * 0x1.0p-53;
}
static inline int64_t bo_int(bo_rng *r, int64_t lo, int64_t hi) { /* [lo, hi) */
    return hi <= lo ? lo : lo + (int64_t)(bo_next(r) % (uint64_t)(hi - lo));
}

/* ---- values ------------------------------------------------------------------- */

typedef enum bo_range {
    BO_DEFAULT,  /* floats in [-3, 3) with a few NaN/±inf/±0; small integers */
    BO_POSITIVE, /* floats in (0.1, 4), a few specials; integers >= 1         */
    BO_NONZERO,  /* as default, integers never 0 (integer divisors)          */
    BO_TAME,     /* floats in [0.5, 1.5) (products); integers in [-2, 3)      */
    BO_FINITE,   /* as default without specials                               */
    BO_WIDE,     /* casts: large magnitudes beyond every integer range        */
    BO_NO_SPECIALS = 0x100 /* flag: never NaN/inf/±0 (a NaN hides a whole long row) */
} bo_range;

static inline double bo_special(bo_rng *r) {
    static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
    return specials[bo_int(r, 0, 5)];
}

/* A float32 from random bits, often with the low bits of a rounding tie
 * (or a neighbour) of float16 or bfloat16, and with exponents where float16
 * is subnormal or overflows: conversions must round exactly as the CPU. */
static inline double bo_float_bits(bo_rng *r) {
    static const uint32_t low13[] = {0x1000u, 0x0fffu, 0x1001u};
    static const uint32_t low16[] = {0x8000u, 0x7fffu, 0x8001u};
    uint32_t u = (uint32_t)bo_next(r);
    if (bo_int(r, 0, 2)) u = (u & ~(0xffu << 23)) | ((uint32_t)bo_int(r, 97, 146) << 23);
    switch (bo_int(r, 0, 3)) {
    case 0: u = (u & ~0x1fffu) | low13[bo_int(r, 0, 3)]; break;
    case 1: u = (u & ~0xffffu) | low16[bo_int(r, 0, 3)]; break;
    default: break;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline double bo_value(bo_rng *r, ct_dtype dt, bo_range flags) {
    bo_range range = (bo_range)(flags & ~BO_NO_SPECIALS);
    if (dt == CT_BOOL) return (double)bo_int(r, 0, 2);
    if (!ct_dtype_is_floating(dt)) {
        int64_t lo = dt == CT_UINT8 ? 0 : -20, hi = dt == CT_UINT8 ? 40 : 20;
        switch (range) {
        case BO_POSITIVE: lo = 1; break;
        case BO_TAME: lo = dt == CT_UINT8 ? 0 : -2, hi = 3; break;
        case BO_WIDE:
            lo = dt == CT_UINT8 ? 0 : dt == CT_INT32 ? -2000000000 : -4000000000000000000ll;
            hi = dt == CT_UINT8 ? 256 : dt == CT_INT32 ? 2000000000 : 4000000000000000000ll;
            break;
        default: break;
        }
        int64_t v = bo_int(r, lo, hi);
        if (range == BO_NONZERO && v == 0) v = 3;
        return (double)v;
    }
    bool specials = range != BO_TAME && range != BO_FINITE && range != BO_NONZERO &&
                    !(flags & BO_NO_SPECIALS);
    if (specials && bo_int(r, 0, 25) == 0) {
        double s = bo_special(r);
        return range == BO_POSITIVE && s < 0 ? INFINITY : s;
    }
    switch (range) {
    case BO_POSITIVE: return bo_uniform(r, 0.1, 4.0);
    case BO_TAME: return bo_uniform(r, 0.5, 1.5);
    case BO_WIDE: {
        if (bo_int(r, 0, 2)) return bo_float_bits(r);
        double mag = pow(10.0, bo_uniform(r, -9.0, 20.0));
        return bo_int(r, 0, 2) ? mag : -mag;
    }
    default: return bo_uniform(r, -3.0, 3.0);
    }
}

/* ---- inputs with a layout --------------------------------------------------------- */

typedef enum bo_layout {
    BO_CONTIGUOUS,
    BO_TRANSPOSED, /* the last two dims swapped in memory               */
    BO_NARROWED,   /* a slice of a larger tensor (offset and gaps)       */
    BO_EXPANDED,   /* a size-1 dim expanded (stride 0)                   */
    BO_LAYOUTS_
} bo_layout;

static inline const char *bo_layout_name(bo_layout l) {
    static const char *const names[] = {"contiguous", "transposed", "narrowed", "expanded"};
    return names[l];
}

static inline void bo_shape_str(ct_shape s, char *buf, size_t n) {
    int k = snprintf(buf, n, "[");
    for (int d = 0; d < s.ndim && k < (int)n; d++)
        k += snprintf(buf + k, n - (size_t)k, d ? ", %lld" : "%lld", (long long)s.dims[d]);
    if (k < (int)n) snprintf(buf + k, n - (size_t)k, "]");
}

/* The contiguous tensor a layout is viewed from, and the view (a new
 * scope-owned handle, or base itself for BO_CONTIGUOUS). */
static inline ct_shape bo_base_shape(ct_shape s, bo_layout l) {
    ct_shape b = s;
    if (l == BO_TRANSPOSED && s.ndim >= 2) {
        b.dims[s.ndim - 1] = s.dims[s.ndim - 2];
        b.dims[s.ndim - 2] = s.dims[s.ndim - 1];
    } else if (l == BO_NARROWED && s.ndim >= 1) {
        b.dims[s.ndim - 1] += 3;
        b.dims[0] += s.ndim > 1 ? 1 : 0;
    } else if (l == BO_EXPANDED && s.ndim >= 1) {
        b.dims[0] = 1;
    }
    return b;
}

static inline ct_tensor *bo_view(ct_tensor *base, ct_shape s, bo_layout l) {
    if (l == BO_TRANSPOSED && s.ndim >= 2) return ct_transpose(base, -1, -2);
    if (l == BO_NARROWED && s.ndim >= 1) {
        ct_tensor *t = ct_narrow(base, s.ndim - 1, 2, s.dims[s.ndim - 1]);
        return s.ndim > 1 ? ct_narrow(t, 0, 1, s.dims[0]) : t;
    }
    if (l == BO_EXPANDED && s.ndim >= 1) return ct_expand(base, s);
    return base; /* (inside a scope: ct_retain would take a reference it never owns) */
}

/* A tensor of shape s and dtype dt on dev with values from r, laid out as
 * l. Call inside a scope: the intermediate references belong to it. */
static inline ct_tensor *bo_input(bo_rng *r, ct_shape s, ct_dtype dt, bo_range range, bo_layout l,
                                  ct_device dev) {
    ct_shape bs = bo_base_shape(s, l);
    int64_t n = 1;
    for (int d = 0; d < bs.ndim; d++) n *= bs.dims[d];
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = bo_value(r, dt, range);
    ct_tensor *base = ct_from_data(v, CT_FLOAT64, bs, CT_OPTS(.dtype = dt));
    free(v);
    return bo_view(ct_to_device(base, dev), s, l);
}

/* An int64 tensor of the given values on dev. */
static inline ct_tensor *bo_indices(const int64_t *v, ct_shape s, ct_device dev) {
    return ct_to_device(ct_from_data(v, CT_INT64, s, CT_OPTS(.dtype = CT_INT64)), dev);
}

/* ---- comparison ------------------------------------------------------------------- */

typedef enum bo_tol {
    BO_TOL_EW,    /* computed: NMSE 1e-7 (float32), 1e-12 (float64), assert_close (16-bit) */
    BO_TOL_EXACT, /* moved or converted, never computed: identical values */
    BO_TOL_MM     /* matrix products: NMSE 5e-4 */
} bo_tol;

static inline bool bo_same_special(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return true;
}

/* Same shape and dtype as the cpu result, and on the device it ran on. */
static inline bool bo_check_meta(const ct_tensor *want, const ct_tensor *got, ct_device dev,
                                 char *why, size_t why_size) {
    char ws[96], gs[96], d1[32], d2[32];
    bo_shape_str(ct_shape_of(want), ws, sizeof ws);
    bo_shape_str(ct_shape_of(got), gs, sizeof gs);
    if (strcmp(ws, gs) != 0 || ct_dtype_of(want) != ct_dtype_of(got)) {
        snprintf(why, why_size, "result %s %s, cpu gives %s %s", gs,
                 ct_dtype_name(ct_dtype_of(got)), ws, ct_dtype_name(ct_dtype_of(want)));
        return false;
    }
    if (!ct_device_equal(ct_device_of(got), dev)) {
        snprintf(why, why_size, "result on %s, expected it on %s",
                 ct_device_format(ct_device_of(got), d1, sizeof d1),
                 ct_device_format(dev, d2, sizeof d2));
        return false;
    }
    return true;
}

/* Both results as host arrays of `as` (int64 or float64); false when a copy
 * fails. The caller frees *a and *b. */
static inline bool bo_read_both(const ct_tensor *want, const ct_tensor *got, ct_dtype as,
                                void **a, void **b, char *why, size_t why_size) {
    int64_t n = ct_numel(want);
    *a = malloc(8 * (size_t)(n + 1));
    *b = malloc(8 * (size_t)(n + 1));
    if (ct_copy_to_host(want, *a, as, n) == CT_OK && ct_copy_to_host(got, *b, as, n) == CT_OK)
        return true;
    snprintf(why, why_size, "reading results: %s", ct_last_error());
    return false;
}

/* Integers and bool: identical, compared as int64 (doubles lose bits). */
static inline bool bo_compare_ints(const ct_tensor *want, const ct_tensor *got, char *why,
                                   size_t why_size) {
    void *pa, *pb;
    bool ok = bo_read_both(want, got, CT_INT64, &pa, &pb, why, why_size);
    const int64_t *a = pa, *b = pb;
    for (int64_t i = 0; ok && i < ct_numel(want); i++)
        if (a[i] != b[i]) {
            snprintf(why, why_size, "element %lld: %lld, cpu gives %lld", (long long)i,
                     (long long)b[i], (long long)a[i]);
            ok = false;
        }
    free(pa);
    free(pb);
    return ok;
}

/* Floats: NaN/inf at the same places, then per tolerance class: identical
 * values, PyTorch's assert_close per element (16-bit computed results), or
 * a normalised mean squared error. */
static inline bool bo_compare_floats(const ct_tensor *want, const ct_tensor *got, bo_tol tol,
                                     char *why, size_t why_size) {
    void *pa, *pb;
    bool ok = bo_read_both(want, got, CT_FLOAT64, &pa, &pb, why, why_size);
    const double *a = pa, *b = pb;
    ct_dtype dt = ct_dtype_of(want);
    double rtol, atol, err2 = 0.0, ref2 = 0.0;
    ct_test_tolerances(dt, &rtol, &atol);
    bool per_element = tol == BO_TOL_EW && (dt == CT_FLOAT16 || dt == CT_BFLOAT16);
    for (int64_t i = 0; ok && i < ct_numel(want); i++) {
        double d = b[i] - a[i];
        if (!bo_same_special(a[i], b[i])) {
            snprintf(why, why_size, "element %lld: %.9g, cpu gives %.9g (NaN/inf positions differ)",
                     (long long)i, b[i], a[i]);
            ok = false;
        } else if (!isfinite(a[i])) {
            continue;
        } else if (tol == BO_TOL_EXACT && d != 0.0) {
            snprintf(why, why_size, "element %lld: %.17g, cpu gives %.17g (expected identical)",
                     (long long)i, b[i], a[i]);
            ok = false;
        } else if (per_element && fabs(d) > atol + rtol * fabs(a[i])) {
            snprintf(why, why_size, "element %lld: %.9g, cpu gives %.9g (rtol %g, atol %g)",
                     (long long)i, b[i], a[i], rtol, atol);
            ok = false;
        }
        err2 += d * d;
        ref2 += a[i] * a[i];
    }
    if (ok && !per_element && tol != BO_TOL_EXACT) {
        double limit = tol == BO_TOL_MM ? 5e-4 : dt == CT_FLOAT64 ? 1e-12 : 1e-7;
        double nmse = err2 / (ref2 > 0.0 ? ref2 : 1.0);
        if (nmse > limit) {
            snprintf(why, why_size, "NMSE %.3g > %.3g", nmse, limit);
            ok = false;
        }
    }
    free(pa);
    free(pb);
    return ok;
}

/* Whether got (on a device) matches want (cpu); on a mismatch writes why. */
static inline bool bo_compare(const ct_tensor *want, const ct_tensor *got, ct_device dev,
                              bo_tol tol, char *why, size_t why_size) {
    if (!bo_check_meta(want, got, dev, why, why_size)) return false;
    if (ct_dtype_is_floating(ct_dtype_of(want)))
        return bo_compare_floats(want, got, tol, why, why_size);
    return bo_compare_ints(want, got, why, why_size);
}

#endif /* CT_BACKEND_OPS_UTIL_H */
