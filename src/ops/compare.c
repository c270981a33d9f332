/*
 * compare.c — whole-tensor comparisons: ct_allclose (torch.allclose) and
 * ct_equal (torch.equal).
 *
 * Both answer a single yes/no for the host program, so they read the values
 * back with ct_copy_to_host and decide on the host: this works unchanged for
 * every device and keeps the answer in exact double arithmetic.
 */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

/* Both tensors' values, broadcast to their common shape, as host doubles
 * (malloc'd; the caller frees). *n receives the element count. */
static ct_status broadcast_to_host(const char *op, const ct_tensor *a, const ct_tensor *b,
                                   double **va, double **vb, int64_t *n) {
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    *va = *vb = NULL;
    if (!ct_broadcast_shapes(op, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim))
        return ct_last_status();
    *n = ct_shape_numel(shape, ndim);
    size_t bytes = (size_t)(*n > 0 ? *n : 1) * sizeof(double);
    *va = malloc(bytes);
    *vb = malloc(bytes);
    if (!*va || !*vb)
        return ct_error_set(CT_ERR_OOM, "%s: out of memory for %lld values", op, (long long)*n);
    if (*n == 0) return CT_OK;
    ct_tensor *ea = cti_expand(a, shape, ndim);
    ct_tensor *eb = cti_expand(b, shape, ndim);
    ct_status st = (ea && eb) ? ct_copy_to_host(ea, *va, CT_FLOAT64, *n) : ct_last_status();
    if (st == CT_OK) st = ct_copy_to_host(eb, *vb, CT_FLOAT64, *n);
    ct_decref(ea);
    ct_decref(eb);
    return st;
}

/* torch.isclose for one pair: equal values (equal infinities included),
 * NaN with NaN when asked, or a finite difference within tolerance. */
static bool is_close(double x, double y, double rtol, double atol, bool equal_nan) {
    if (x == y) return true;
    if (isnan(x) || isnan(y)) return equal_nan && isnan(x) && isnan(y);
    double diff = fabs(x - y);
    return isfinite(diff) && diff <= atol + rtol * fabs(y);
}

ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol,
                      bool equal_nan, bool *result) {
    static const char op[] = "allclose";
    if (result) *result = false;
    /* a NULL tensor (a failed call's) is reported before the plain pointer */
    if (!a || !b) return ct_error_null_input(op);
    CT_CHECK_STATUS(result != NULL, CT_ERR_INVALID_ARG, "%s: the result pointer is NULL", op);
    CT_CHECK_STATUS(rtol >= 0, CT_ERR_INVALID_ARG,
                    "%s: rtol must be greater than or equal to zero, but got %g", op, rtol);
    CT_CHECK_STATUS(atol >= 0, CT_ERR_INVALID_ARG,
                    "%s: atol must be greater than or equal to zero, but got %g", op, atol);
    CT_CHECK_STATUS(a->dtype == b->dtype, CT_ERR_DTYPE, "%s: %s did not match %s", op,
                    cti_scalar_type_name(a->dtype), cti_scalar_type_name(b->dtype));
    const ct_tensor *pair[2] = {a, b};
    if (!ct_check_same_device(op, pair, 2)) return ct_last_status();

    double *va, *vb;
    int64_t n = 0;
    ct_status st = broadcast_to_host(op, a, b, &va, &vb, &n);
    if (st == CT_OK) {
        /* Booleans have no tolerance in torch.isclose: only equality. */
        bool exact = a->dtype == CT_BOOL;
        bool all = true;
        for (int64_t i = 0; i < n && all; i++)
            all = exact ? va[i] == vb[i] : is_close(va[i], vb[i], rtol, atol, equal_nan);
        *result = all;
    }
    free(va);
    free(vb);
    return st;
}

/* Integers (bool included) compare as int64 so that values past 2^53 stay
 * exact; anything with a float compares as double, where NaN != NaN. */
static bool values_equal(const ct_tensor *a, const ct_tensor *b, int64_t n) {
    bool ints = ct_dtype_is_integral(a->dtype, true) && ct_dtype_is_integral(b->dtype, true);
    ct_dtype host = ints ? CT_INT64 : CT_FLOAT64;
    size_t bytes = (size_t)n * 8;
    void *va = malloc(bytes), *vb = malloc(bytes);
    bool equal = false;
    if (!va || !vb) {
        ct_error_set(CT_ERR_OOM, "equal: out of memory for %lld values", (long long)n);
    } else if (ct_copy_to_host(a, va, host, n) == CT_OK && ct_copy_to_host(b, vb, host, n) == CT_OK) {
        equal = true;
        for (int64_t i = 0; i < n && equal; i++)
            equal = ints ? ((int64_t *)va)[i] == ((int64_t *)vb)[i]
                         : ((double *)va)[i] == ((double *)vb)[i];
    }
    free(va);
    free(vb);
    return equal;
}

bool ct_equal(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b) return false;
    const ct_tensor *pair[2] = {a, b};
    if (!ct_check_same_device("equal", pair, 2)) return false;
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    int64_t n = ct_shape_numel(a->shape, a->ndim);
    return n == 0 || values_equal(a, b, n);
}
