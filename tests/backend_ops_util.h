/*
 * backend_ops_util.h — the machinery of the cross-backend harness
 * (tests/test_backend_ops.c): a seedable random source that rebuilds the
 * same inputs on every device, input tensors with a chosen memory layout
 * (transposed, narrowed, expanded, strided) made by the same view calls on every
 * device, the shapes of each variant, and the description of a case (a row
 * of the harness's table). The comparison is in backend_ops_compare.c.
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
            lo = dt == CT_UINT8 ? 0 : dt == CT_INT8 ? -128 : dt == CT_INT32 ? -2000000000 : -4000000000000000000ll;
            hi = dt == CT_UINT8 ? 256 : dt == CT_INT8 ? 128 : dt == CT_INT32 ? 2000000000 : 4000000000000000000ll;
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
    BO_STRIDED,    /* every other element of the last dim (stride 2)     */
    BO_LAYOUTS_
} bo_layout;

static inline const char *bo_layout_name(bo_layout l) {
    static const char *const names[] = {"contiguous", "transposed", "narrowed", "expanded",
                                        "strided"};
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
    } else if (l == BO_STRIDED && s.ndim >= 1) {
        b.dims[s.ndim - 1] = 2 * s.dims[s.ndim - 1] + 1;
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
    if (l == BO_STRIDED && s.ndim >= 1)
        return ct_slice(base, s.ndim - 1, 1, 1 + 2 * s.dims[s.ndim - 1], 2);
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

/* A writable view of shape s over a base of values of dtype dt in range on
 * dev, for ops that write in place: compare the whole base, so that a write
 * outside the view, or one missing inside it, shows. Layout *l, expanded
 * excepted (not writable: it becomes strided). Call inside a scope. */
static inline ct_tensor *view_target(bo_rng *r, ct_shape s, bo_layout *l, ct_dtype dt,
                                     bo_range range, ct_device dev, ct_tensor **base) {
    if (*l == BO_EXPANDED) *l = BO_STRIDED;
    *base = bo_input(r, bo_base_shape(s, *l), dt, range, BO_CONTIGUOUS, dev);
    return bo_view(*base, s, *l);
}

/* |x| in float64 (sums of magnitudes overflow no 16-bit dtype there). */
static inline ct_tensor *bo_abs64(const ct_tensor *x) { return ct_abs(ct_to_dtype(x, CT_FLOAT64)); }

/* n * |result| in float64: the magnitude for a product or a sum of n
 * nonnegative terms, whose rounding error grows with n relative to it. */
static inline ct_tensor *bo_scaled_abs(const ct_tensor *result, int64_t n) {
    return ct_mul_scalar(bo_abs64(result), (double)(n > 0 ? n : 1));
}

/* An int64 tensor of the given values on dev. */
static inline ct_tensor *bo_indices(const int64_t *v, ct_shape s, ct_device dev) {
    return ct_to_device(ct_from_data(v, CT_INT64, s, CT_OPTS(.dtype = CT_INT64)), dev);
}

/* ---- dtypes ---------------------------------------------------------------------- */

#define BO_NDTYPES 9
static const ct_dtype g_dtypes[BO_NDTYPES] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                              CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL,
                                              CT_INT8};
static const char *const g_dtype_short[BO_NDTYPES] = {"f32", "f64", "f16", "bf16", "i32",
                                                      "i64", "u8",  "bool", "i8"};

/* Sets of dtypes, one bit per ct_dtype value. */
#define BO_DT(dt) (1u << (unsigned)(dt))
#define BO_DT_FLOAT (BO_DT(CT_FLOAT32) | BO_DT(CT_FLOAT64) | BO_DT(CT_FLOAT16) | BO_DT(CT_BFLOAT16))
#define BO_DT_NOBOOL (BO_DT_FLOAT | BO_DT(CT_INT32) | BO_DT(CT_INT64) | BO_DT(CT_UINT8) | BO_DT(CT_INT8))
#define BO_DT_ALL (BO_DT_NOBOOL | BO_DT(CT_BOOL))

/* ---- cases ------------------------------------------------------------------------- */

/* How a device result is compared with the cpu's (backend_ops_compare.c). */
typedef enum bo_tol {
    BO_TOL_EXACT, /* moved, converted or selected, never computed: identical, sign of zero too */
    BO_TOL_EW,    /* computed pointwise: each element within a few ulps of the cpu's        */
    BO_TOL_RED,   /* sums in another order (reductions, norms, losses): per element, with an
                     absolute part scaled by the result's largest magnitude                  */
    BO_TOL_MM     /* long dot products (matmul, convolution): as RED, looser                 */
} bo_tol;

/* bo_case.flags */
enum {
    BO_ANY_ZERO_SIGN = 1, /* the op leaves the sign of a zero result undefined (sums) */
    BO_VENDOR_SUMS = 2    /* set by the judge, not by rows: a vendor library (cuBLAS,
                             cuDNN) computed the sums (backend_ops_compare.c) */
};

typedef struct bo_case bo_case;
/* Build the inputs from r on dev and run the op; out[0..1] receive the
 * results (NULL on error), desc a description of the inputs. Runs inside a
 * scope that keeps only out[]. On the cpu run, a runner of sums may set
 * out[2] to the magnitudes of the terms of each element of out[0]
 * (bo_abs64, bo_scaled_abs), which scale the tolerance of sums. */
typedef void (*bo_run_fn)(const bo_case *c, ct_dtype dt, int variant, bo_rng *r, ct_device dev,
                          ct_tensor **out, char *desc, size_t desc_size);
/* Whether variant v in dtype dt is built to be rejected (a deliberate error
 * case: division by zero, a target out of range…). */
typedef bool (*bo_error_fn)(const bo_case *c, ct_dtype dt, int variant);

struct bo_case {
    const char *name;
    const char *family;
    bo_run_fn run;
    int op;           /* op code or target dtype, per runner */
    double p0;        /* op parameter, per runner */
    bo_range range;
    bo_tol tol;
    unsigned dtypes;  /* BO_DT set the op accepts: there the cpu must succeed */
    unsigned flags;
    bo_error_fn deliberate_error; /* NULL: no variant is an error case */
};

/* Variants per (case, dtype); the last two are large (see variant_shape). */
#define BO_VARIANTS 18
#define BO_LARGE_VARIANT 16

/* ---- shapes and layouts per variant -------------------------------------------------- */

/* 0-dim, one element, empty, then growing ranks and every layout, long
 * rows (work-group reductions), random ones, and two of more than 100,000
 * elements (many work-groups per launch, index arithmetic past 2^16). */
static inline void variant_shape(int v, bo_rng *r, ct_shape *s, bo_layout *l) {
    static const struct { int ndim; int64_t dims[4]; bo_layout l; } fixed[] = {
        {0, {0}, BO_CONTIGUOUS},          {1, {1}, BO_CONTIGUOUS},
        {2, {0, 3}, BO_CONTIGUOUS},       {1, {6}, BO_NARROWED},
        {2, {4, 5}, BO_TRANSPOSED},       {2, {3, 7}, BO_NARROWED},
        {3, {2, 3, 5}, BO_EXPANDED},      {4, {2, 1, 4, 3}, BO_TRANSPOSED},
        {2, {3, 700}, BO_CONTIGUOUS},     {2, {300, 3}, BO_TRANSPOSED},
    };
    static const struct { int ndim; int64_t dims[4]; bo_layout l; } large[] = {
        {2, {257, 393}, BO_CONTIGUOUS}, {3, {3, 181, 191}, BO_TRANSPOSED},
    };
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    if (v >= BO_LARGE_VARIANT) {
        *s = ct_shape_make(large[v - BO_LARGE_VARIANT].ndim, large[v - BO_LARGE_VARIANT].dims);
        *l = large[v - BO_LARGE_VARIANT].l;
        return;
    }
    if (v < nfixed) {
        *s = ct_shape_make(fixed[v].ndim, fixed[v].dims);
        *l = fixed[v].l;
        return;
    }
    s->ndim = (int)bo_int(r, 1, 5);
    for (int d = 0; d < s->ndim; d++) s->dims[d] = bo_int(r, 1, 7);
    *l = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
}

/* Specials (NaN, ±inf, ±0) only in some variants: elsewhere, and in the
 * long rows above all, one NaN would make whole results NaN and hide the
 * values. The second large variant has them (NaN positions over many
 * work-groups). */
static inline bo_range vrange(bo_range r, int v) {
    return v % 2 == 1 && v != 9 ? r : (bo_range)(r | BO_NO_SPECIALS);
}

/* Variant v's shape and layout (into *s, *l) and an input x of them, drawn
 * in that order from r: the opening of most rows. */
static inline ct_tensor *variant_input(bo_range range, ct_dtype dt, int v, bo_rng *r, ct_device dev, ct_shape *s,
                                       bo_layout *l) {
    variant_shape(v, r, s, l);
    return bo_input(r, *s, dt, vrange(range, v), *l, dev);
}

static inline void describe(char *desc, size_t n, const char *what, ct_shape s, bo_layout l) {
    char sh[96];
    size_t k = strlen(desc);
    bo_shape_str(s, sh, sizeof sh);
    snprintf(desc + k, n - k, "%s%s %s %s", k ? ", " : "", what, sh, bo_layout_name(l));
}

/* A shape broadcastable with s: size-1 dims, fewer dims or 0-dim. */
static inline ct_shape broadcast_partner(ct_shape s, int pattern, bo_rng *r) {
    ct_shape b = s;
    if (pattern == 1)
        for (int d = 0; d < s.ndim; d++)
            if (bo_int(r, 0, 2)) b.dims[d] = 1;
    if (pattern == 2) b.ndim = 0;
    if (pattern == 3 && s.ndim > 0) {
        int drop = (int)bo_int(r, 1, s.ndim + 1);
        b.ndim = s.ndim - drop;
        memmove(b.dims, s.dims + drop, sizeof(int64_t) * (size_t)b.ndim);
    }
    return b;
}

#endif /* CT_BACKEND_OPS_UTIL_H */
