/*
 * backend_ops_compare.c — how the cross-backend harness judges a device
 * result against the CPU's: element by element, with a tolerance per dtype
 * and per kind of computation, NaN where the CPU has NaN, infinities equal,
 * and the sign of zero where PyTorch defines it. Also the perturbations that
 * --inject plants in device results to show that the comparison catches
 * them. Included by tests/test_backend_ops.c; not a test of its own.
 *
 * Why per element: one normalised error over the whole tensor (ggml's NMSE)
 * let through a float64 op computed in float32 (NMSE ~1e-15) and one wrong
 * element among 2,100. Here every element must satisfy
 *
 *     |got - want| <= atol + rtol * |want| + scaled * mag
 *
 * The last term is zero for pointwise ops. For sums computed in another
 * order (reductions, matmul, convolution) the rounding error scales with the
 * size of the terms, which a small result (a cancelling sum) does not show:
 * mag is the sum of the terms' magnitudes where the runner gives it (out[2]
 * of the cpu run: sum(|x|), |A| @ |B|, or n * |result| for products and
 * sums of squares: the classic bound of a sum's rounding error), else the
 * largest |want| of the result.
 */
#include <float.h>

/* The unit of every tolerance: the spacing of the dtype's values at 1. */
static double bo_eps(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT64: return 0x1p-52;
    case CT_FLOAT16: return 0x1p-10;
    case CT_BFLOAT16: return 0x1p-7;
    default: return 0x1p-23;
    }
}

typedef struct bo_limits {
    double rtol, atol, scaled; /* see the file comment */
    bool zero_sign;            /* +0 and -0 differ */
} bo_limits;

/* The precision the op computes in: float32 for float16/bfloat16, whose
 * kernels compute and accumulate in float32 (src/core/backend.h). */
static double bo_eps_compute(ct_dtype dt) {
    return dt == CT_FLOAT16 || dt == CT_BFLOAT16 ? 0x1p-23 : bo_eps(dt);
}

/* The tolerances: relative parts in eps of the dtype (rounding of the
 * stored result), absolute and scaled parts in eps of the compute dtype
 * (rounding inside the computation). PyTorch's assert_close defaults are
 * float32 (1.3e-6, 1e-5) = (11, 84) eps, float64 (1e-7, 1e-7), float16
 * (1e-3, 1e-5) = (1, 0.01) eps and bfloat16 (1.6e-2, 1e-5) = (2, 0.001)
 * eps, written for results of different algorithms. The devices here run
 * the CPU's own kernel bodies (the .kh files of src/kernels) with their own
 * math libraries, so:
 *  - pointwise float32 is 8 eps relative and 8 eps absolute, not 84: a few
 *    ulps of libm/libdevice/OpenCL builtins (2-4 ulp each) may differ;
 *  - float64 is far tighter than 1e-7: everything scales with eps =
 *    2.2e-16 (8 eps = 1.8e-15 pointwise), so a float64 op computed in
 *    float32, 6e-8 off, fails by 10^7;
 *  - float16/bfloat16 are float32 computations rounded once, so results
 *    may land one ulp apart: 1 and 2 eps relative, as PyTorch; the absolute
 *    part is 8 float32 eps (PyTorch's 1e-5 is looser, and meant for results
 *    computed in the 16-bit dtype);
 *  - sums in another order (reductions, norms, losses: BO_TOL_RED; matmul,
 *    convolution: BO_TOL_MM) get twice the relative part (a second
 *    rounding, e.g. statistics stored in the dtype) and a part scaled by
 *    the magnitude of the terms: 32 and 64 compute eps. An ordered float32
 *    sum of n uniform terms errs by about 0.2 eps x sum|x|, so this holds
 *    on any device, yet a float32 element off by 0.025 fails unless its
 *    terms add up to more than 6,000. */
static bo_limits bo_tolerance(bo_tol tol, ct_dtype dt) {
    const double e = bo_eps(dt), ec = bo_eps_compute(dt);
    const double r16 = dt == CT_FLOAT16 ? 1 : 2; /* PyTorch's float16/bfloat16 rtol, in eps */
    const bool half = dt == CT_FLOAT16 || dt == CT_BFLOAT16;
    bo_limits l = {0, 0, 0, true};
    switch (tol) {
    case BO_TOL_EXACT: break;
    case BO_TOL_EW:
        l.rtol = (half ? r16 : 8) * e;
        l.atol = 8 * ec;
        break;
    case BO_TOL_RED:
    case BO_TOL_MM:
        l.rtol = (half ? 2 * r16 : 16) * e;
        l.atol = 16 * ec;
        l.scaled = (tol == BO_TOL_RED ? 32 : 64) * ec;
        l.zero_sign = false; /* a cancelling sum's zero has no defined sign */
        break;
    }
    return l;
}

/* ---- one element ---------------------------------------------------------------------------- */

/* Why got differs from want beyond what lim allows, or NULL; *ratio is the
 * error over the allowed error (0 when specials agree). */
static const char *bo_element_mismatch(double want, double got, const bo_limits *lim, double scale,
                                       double *ratio) {
    *ratio = 0.0;
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? NULL : "NaN position";
    if (isinf(want) || isinf(got)) return want == got ? NULL : "infinity";
    if (want == 0.0 && got == 0.0)
        return lim->zero_sign && signbit(want) != signbit(got) ? "sign of zero" : NULL;
    double err = fabs(got - want);
    double allowed = lim->atol + lim->rtol * fabs(want) + lim->scaled * scale;
    *ratio = err == 0.0 ? 0.0 : allowed > 0.0 ? err / allowed : INFINITY;
    return err > allowed ? "value" : NULL;
}

/* "[i, j, k]" of flat index i in shape s. */
static void bo_unravel(int64_t i, ct_shape s, char *buf, size_t n) {
    int64_t idx[CT_MAX_DIMS];
    for (int d = s.ndim - 1; d >= 0; d--) {
        idx[d] = s.dims[d] ? i % s.dims[d] : 0;
        i = s.dims[d] ? i / s.dims[d] : 0;
    }
    int k = snprintf(buf, n, "[");
    for (int d = 0; d < s.ndim && k < (int)n; d++)
        k += snprintf(buf + k, n - (size_t)k, d ? ", %lld" : "%lld", (long long)idx[d]);
    if (k < (int)n) snprintf(buf + k, n - (size_t)k, "]");
}

/* ---- whole results --------------------------------------------------------------------------- */

/* The largest |want| among the finite elements. */
static double bo_max_abs(const double *want, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(want[i]) && fabs(want[i]) > m) m = fabs(want[i]);
    return m;
}

/* Compare n values of a result of shape s and dtype dt (as float64), mag
 * the magnitudes of the terms per element or NULL. On a mismatch writes
 * the number of bad elements and the worst one (a special first, else the
 * largest error over tolerance); *worst receives the largest
 * error/tolerance ratio seen. */
static bool bo_compare_values(const double *want, const double *got, const double *mag, int64_t n,
                              ct_shape s, ct_dtype dt, bo_tol tol, unsigned flags, double *worst,
                              char *why, size_t wn) {
    bo_limits lim = bo_tolerance(tol, dt);
    if (flags & BO_ANY_ZERO_SIGN) lim.zero_sign = false;
    if ((flags & BO_VENDOR_SUMS) && tol == BO_TOL_MM && (dt == CT_FLOAT16 || dt == CT_BFLOAT16))
        lim.scaled = fmax(lim.scaled, bo_eps(dt) / 16);
    double fallback = lim.scaled > 0.0 ? bo_max_abs(want, n) : 0.0, scale = fallback;
    int64_t bad = 0, at = -1;
    const char *kind = NULL;
    double at_ratio = 0.0, at_scale = 0.0;
    *worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double ratio;
        if (lim.scaled > 0.0 && mag) scale = isfinite(mag[i]) ? mag[i] : fallback;
        const char *k = bo_element_mismatch(want[i], got[i], &lim, scale, &ratio);
        if (ratio > *worst) *worst = ratio;
        if (!k) continue;
        bad++;
        bool special = strcmp(k, "value") != 0;
        bool was_special = kind && strcmp(kind, "value") != 0;
        if (at < 0 || (special && !was_special) || (!special && !was_special && ratio > at_ratio))
            at = i, kind = k, at_ratio = ratio, at_scale = scale;
    }
    if (!bad) return true;
    char pos[96];
    bo_unravel(at, s, pos, sizeof pos);
    double err = fabs(got[at] - want[at]);
    int k = snprintf(why, wn,
                     "%lld of %lld elements differ; element %lld %s: %.17g, cpu gives %.17g (%s",
                     (long long)bad, (long long)n, (long long)at, pos, got[at], want[at], kind);
    if (k < (int)wn && strcmp(kind, "value") == 0)
        snprintf(why + k, wn - (size_t)k,
                 ": |error| %.3g > %.3g = atol %.3g + rtol %.3g x |cpu| + %.3g x %s %.3g)",
                 err, lim.atol + lim.rtol * fabs(want[at]) + lim.scaled * at_scale, lim.atol,
                 lim.rtol, lim.scaled, mag ? "magnitude" : "max|cpu|", at_scale);
    else if (k < (int)wn)
        snprintf(why + k, wn - (size_t)k, ")");
    return false;
}

/* Same shape and dtype as the cpu result, and on the device it ran on. */
static bool bo_check_meta(const ct_tensor *want, const ct_tensor *got, ct_device dev, char *why,
                          size_t why_size) {
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
static bool bo_read_both(const ct_tensor *want, const ct_tensor *got, ct_dtype as, void **a,
                         void **b, char *why, size_t why_size) {
    int64_t n = ct_numel(want);
    *a = malloc(8 * (size_t)(n + 1));
    *b = malloc(8 * (size_t)(n + 1));
    if (ct_copy_to_host(want, *a, as, n) == CT_OK && ct_copy_to_host(got, *b, as, n) == CT_OK)
        return true;
    snprintf(why, why_size, "reading results: %s", ct_last_error());
    return false;
}

/* Integers and bool: identical, compared as int64 (doubles lose bits). */
static bool bo_compare_ints(const ct_tensor *want, const ct_tensor *got, char *why,
                            size_t why_size) {
    void *pa, *pb;
    bool ok = bo_read_both(want, got, CT_INT64, &pa, &pb, why, why_size);
    const int64_t *a = pa, *b = pb;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; ok && i < ct_numel(want); i++)
        if (a[i] != b[i] && bad++ == 0) first = i;
    if (bad) {
        char pos[96];
        bo_unravel(first, ct_shape_of(want), pos, sizeof pos);
        snprintf(why, why_size,
                 "%lld of %lld elements differ; element %lld %s: %lld, cpu gives %lld",
                 (long long)bad, (long long)ct_numel(want), (long long)first, pos,
                 (long long)b[first], (long long)a[first]);
        ok = false;
    }
    free(pa);
    free(pb);
    return ok;
}

/* The magnitudes of the terms of each element (a cpu tensor of want's
 * numel), or NULL when there are none or they cannot be read. */
static double *bo_read_magnitudes(const ct_tensor *mag, int64_t n) {
    if (!mag || ct_numel(mag) != n) return NULL;
    double *m = malloc(sizeof(double) * (size_t)(n + 1));
    if (ct_copy_to_host(mag, m, CT_FLOAT64, n) == CT_OK) return m;
    free(m);
    return NULL;
}

/* Whether got (on a device) matches want (cpu), mag (or NULL) the
 * magnitudes of the terms; on a mismatch writes why. *worst: the largest
 * error/tolerance ratio (0 for exact comparisons). */
static bool bo_compare(const ct_tensor *want, const ct_tensor *got, const ct_tensor *mag,
                       ct_device dev, bo_tol tol, unsigned flags, double *worst, char *why,
                       size_t why_size) {
    *worst = 0.0;
    /* cuDNN's float16/bfloat16 convolutions (tensor-op algorithms) keep
     * some partial sums in the 16-bit dtype: on an H200 (cuDNN 9.19) a
     * grouped 3x3 convolution erred by up to 0.012-0.023 dtype eps times
     * the magnitude of its terms, where ctorch's own kernels stay within 64
     * float32 eps. So matmul and convolution on CUDA get a scaled part of
     * eps/16 of the dtype (2.6-5x that error); the relative and absolute
     * parts stay as they are. */
    if (dev.type == CT_DEVICE_CUDA) flags |= BO_VENDOR_SUMS;
    if (!bo_check_meta(want, got, dev, why, why_size)) return false;
    if (!ct_dtype_is_floating(ct_dtype_of(want))) return bo_compare_ints(want, got, why, why_size);
    void *pa, *pb;
    bool ok = bo_read_both(want, got, CT_FLOAT64, &pa, &pb, why, why_size);
    double *m = ok ? bo_read_magnitudes(mag, ct_numel(want)) : NULL;
    if (ok)
        ok = bo_compare_values(pa, pb, m, ct_numel(want), ct_shape_of(want), ct_dtype_of(want),
                               tol, flags, worst, why, why_size);
    free(m);
    free(pa);
    free(pb);
    return ok;
}

/* ---- planted errors (--inject) --------------------------------------------------------------- */

typedef enum bo_inject {
    BO_INJECT_NONE,
    BO_INJECT_F64_VIA_F32, /* every float64 device result rounded through float32 */
    BO_INJECT_OFF_BY,      /* one element of each float32 result of >= 2,100 elements + 0.025 */
    BO_INJECT_NEG_ZERO,    /* every +0 of a floating device result becomes -0 */
    BO_INJECT_DECLINE      /* the device reports one family as unsupported */
} bo_inject;

/* Apply kind to device result t in place (a fresh tensor the harness owns). */
static void bo_perturb(ct_tensor *t, bo_inject kind) {
    ct_dtype dt = ct_dtype_of(t);
    int64_t n = ct_numel(t);
    if (!ct_dtype_is_floating(dt) || n == 0) return;
    if ((kind == BO_INJECT_F64_VIA_F32 && dt != CT_FLOAT64) ||
        (kind == BO_INJECT_OFF_BY && (dt != CT_FLOAT32 || n < 2100)))
        return;
    double *v = malloc(sizeof(double) * (size_t)n);
    if (ct_copy_to_host(t, v, CT_FLOAT64, n) == CT_OK) {
        for (int64_t i = 0; i < n; i++) {
            if (kind == BO_INJECT_F64_VIA_F32) v[i] = (double)(float)v[i];
            if (kind == BO_INJECT_NEG_ZERO && v[i] == 0.0) v[i] = -0.0;
        }
        for (int64_t i = n / 2; kind == BO_INJECT_OFF_BY && i < n; i++)
            if (isfinite(v[i])) { /* the middle element, or the next finite one */
                v[i] += 0.025;
                break;
            }
        ct_copy_from_host(t, v, CT_FLOAT64, n);
    }
    free(v);
}
