/*
 * creation.c — factory functions: empty, zeros, ones, full, arange,
 * linspace, eye, rand, randn, randint, from_data and the *_like family.
 * Each resolves its options (default dtype, current device), allocates
 * through the device's backend and fills on that device.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

static ct_tensor *with_grad_flag(ct_tensor *t, ct_opts o) {
    if (t) t->requires_grad = o.requires_grad;
    return t;
}

/* Sizes from the caller: checked here, with the factory's name, before
 * anything is computed from them. */
static bool shape_ok(const char *op, ct_shape s) { return ct_shape_check(op, s.dims, s.ndim, NULL); }

ct_tensor *ct_empty_opts(ct_shape s, ct_opts o) {
    if (!shape_ok("empty", s)) return NULL;
    return ct_track(with_grad_flag(cti_empty(s.dims, s.ndim, o.dtype, o.device), o));
}

ct_tensor *ct_full_opts(ct_shape s, double value, ct_opts o) {
    if (!shape_ok("full", s)) return NULL;
    return ct_track(with_grad_flag(cti_full(s.dims, s.ndim, value, o.dtype, o.device), o));
}

ct_tensor *ct_zeros_opts(ct_shape s, ct_opts o) { return ct_full_opts(s, 0.0, o); }
ct_tensor *ct_ones_opts(ct_shape s, ct_opts o) { return ct_full_opts(s, 1.0, o); }

static ct_tensor *random_tensor(const char *op, ct_shape s, ct_dtype dt, ct_device dev,
                                ct_random_kind kind, double a, double b) {
    if (!shape_ok(op, s)) return NULL;
    ct_tensor *t = cti_empty(s.dims, s.ndim, dt, dev);
    if (!t) return NULL;
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    if (n == 0) return t;
    uint64_t seed, offset;
    cti_rng_reserve((uint64_t)n, &seed, &offset);
    ct_kview v = ct_kview_of(t);
    if (CTI_BACKEND_CALL(t, random, op, &v, kind, seed, offset, a, b) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return t;
}

static bool floating_for(const char *op, ct_dtype dt) {
    CT_CHECK_RET(ct_dtype_is_floating(cti_resolve_dtype(dt)), false, CT_ERR_DTYPE,
                 "%s: expected a floating point dtype, got %s", op, ct_dtype_name(dt));
    return true;
}

ct_tensor *ct_rand_opts(ct_shape s, ct_opts o) {
    if (!floating_for("rand", o.dtype)) return NULL;
    return ct_track(with_grad_flag(random_tensor("rand", s, o.dtype, o.device, CT_RAND_UNIFORM, 0, 1), o));
}

ct_tensor *ct_randn_opts(ct_shape s, ct_opts o) {
    if (!floating_for("randn", o.dtype)) return NULL;
    return ct_track(with_grad_flag(random_tensor("randn", s, o.dtype, o.device, CT_RAND_NORMAL, 0, 1), o));
}

ct_tensor *ct_randint_opts(int64_t low, int64_t high, ct_shape s, ct_opts o) {
    CT_CHECK_NULL(low < high, CT_ERR_INVALID_ARG,
                  "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                  (long long)low, (long long)high);
    /* the backends receive the bounds as doubles: keep them exact */
    const int64_t exact = INT64_C(1) << 53;
    CT_CHECK_NULL(low >= -exact && high <= exact, CT_ERR_INVALID_ARG,
                  "randint: low and high must lie in [-2^53, 2^53], got low=%lld, high=%lld", (long long)low,
                  (long long)high);
    ct_dtype dt = o.dtype == CT_DTYPE_DEFAULT ? CT_INT64 : o.dtype;
    return ct_track(random_tensor("randint", s, dt, o.device, CT_RAND_INT, (double)low, (double)high));
}

ct_tensor *ct_arange_opts(double start, double end, double step, ct_opts o) {
    CT_CHECK_NULL(step != 0 && isfinite(step) && isfinite(start) && isfinite(end), CT_ERR_INVALID_ARG,
                  "arange: step must be nonzero and all bounds finite (start=%g, end=%g, step=%g)",
                  start, end, step);
    CT_CHECK_NULL((step > 0 && end >= start) || (step < 0 && end <= start), CT_ERR_INVALID_ARG,
                  "arange: upper bound and larger bound inconsistent with step sign "
                  "(start=%g, end=%g, step=%g)", start, end, step);
    ct_dtype dt = o.dtype;
    if (dt == CT_DTYPE_DEFAULT)
        dt = cti_is_whole(start) && cti_is_whole(end) && cti_is_whole(step) ? CT_INT64 : cti_resolve_dtype(dt);
    double size = ceil((end - start) / step);
    CT_CHECK_NULL(size >= 0 && size < (double)INT64_MAX, CT_ERR_INVALID_ARG,
                  "arange: invalid size, possible overflow? (start=%g, end=%g, step=%g)", start, end, step);
    int64_t n = (int64_t)size;
    ct_tensor *t = cti_empty(&n, 1, dt, o.device);
    if (t && n > 0) {
        ct_kview v = ct_kview_of(t);
        if (CTI_BACKEND_CALL(t, arange, "arange", &v, start, step) != CT_OK) {
            ct_decref(t);
            return NULL;
        }
    }
    return ct_track(with_grad_flag(t, o));
}

ct_tensor *ct_linspace_opts(double start, double end, int64_t steps, ct_opts o) {
    CT_CHECK_NULL(steps >= 0, CT_ERR_INVALID_ARG, "linspace: number of steps must be non-negative, got %lld",
                  (long long)steps);
    ct_tensor *t = cti_empty(&steps, 1, o.dtype, o.device);
    if (!t || steps == 0) return ct_track(t);
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
    ct_kview v = ct_kview_of(t);
    ct_status st = CTI_BACKEND_CALL(t, arange, "linspace", &v, start, step);
    if (st == CT_OK && steps > 1) { /* the last value is exactly `end` */
        ct_tensor *last = cti_narrow(t, 0, steps - 1, 1);
        st = last ? cti_fill(last, end) : ct_last_status();
        ct_decref(last);
    }
    if (st != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return ct_track(with_grad_flag(t, o));
}

ct_tensor *ct_eye_opts(int64_t n, int64_t m, ct_opts o) {
    if (m <= 0) m = n;
    CT_CHECK_NULL(n >= 0, CT_ERR_INVALID_ARG, "eye: n must be greater or equal to 0, got %lld", (long long)n);
    int64_t shape[2] = {n, m};
    ct_tensor *t = cti_full(shape, 2, 0.0, o.dtype, o.device);
    int64_t k = n < m ? n : m;
    if (t && k > 0) { /* k > 0: [n, m] has n * m elements, so m + 1 fits */
        int64_t stride = m + 1;
        ct_tensor *diag = cti_as_strided(t, &k, &stride, 1, 0);
        ct_status st = diag ? cti_fill(diag, 1.0) : ct_last_status();
        ct_decref(diag);
        if (st != CT_OK) {
            ct_decref(t);
            return NULL;
        }
    }
    return ct_track(with_grad_flag(t, o));
}

ct_tensor *ct_from_data(const void *data, ct_dtype src_dtype, ct_shape s, ct_opts o) {
    int64_t numel;
    if (!ct_shape_check("from_data", s.dims, s.ndim, &numel)) return NULL;
    CT_CHECK_NULL(data || numel == 0, CT_ERR_INVALID_ARG, "from_data: NULL data");
    CT_CHECK_NULL(ct_dtype_is_valid(src_dtype), CT_ERR_DTYPE, "from_data: invalid source dtype %d",
                  (int)src_dtype);
    ct_dtype dt = o.dtype == CT_DTYPE_DEFAULT ? src_dtype : o.dtype;
    ct_tensor *t = cti_empty(s.dims, s.ndim, dt, o.device);
    if (t && ct_copy_from_host(t, data, src_dtype, ct_shape_numel(t->shape, t->ndim)) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return ct_track(with_grad_flag(t, o));
}

ct_tensor *ct_tensor_from_args(ct_from_args a) {
    return ct_from_data(a.data, a.src_dtype, a.shape,
                        (ct_opts){.dtype = a.dtype, .device = a.device, .requires_grad = a.requires_grad});
}

/* ---- *_like ---- */

static ct_opts opts_like(const ct_tensor *t) {
    ct_opts o;
    memset(&o, 0, sizeof o);
    o.dtype = t->dtype;
    o.device = t->storage->device;
    return o;
}

ct_tensor *ct_empty_like(const ct_tensor *t) { return t ? ct_empty_opts(ct_shape_of(t), opts_like(t)) : NULL; }
ct_tensor *ct_zeros_like(const ct_tensor *t) { return t ? ct_zeros_opts(ct_shape_of(t), opts_like(t)) : NULL; }
ct_tensor *ct_ones_like(const ct_tensor *t) { return t ? ct_ones_opts(ct_shape_of(t), opts_like(t)) : NULL; }
ct_tensor *ct_full_like(const ct_tensor *t, double v) {
    return t ? ct_full_opts(ct_shape_of(t), v, opts_like(t)) : NULL;
}
ct_tensor *ct_rand_like(const ct_tensor *t) { return t ? ct_rand_opts(ct_shape_of(t), opts_like(t)) : NULL; }
ct_tensor *ct_randn_like(const ct_tensor *t) { return t ? ct_randn_opts(ct_shape_of(t), opts_like(t)) : NULL; }
