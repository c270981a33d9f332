/*
 * gradcheck.c — torch.autograd.gradcheck: analytical gradients (backward)
 * against central finite differences, in float64.
 *
 * The output is projected to a scalar with fixed random weights,
 * f(x) = sum(fn(x) * w), so one backward gives every input's full gradient
 * and each finite difference needs two evaluations of f.
 */
#include <math.h>
#include <stdlib.h>

#include "autograd.h"

/* f(inputs) = sum(fn(inputs) * w) as a double; *w is created on first use. */
static ct_status project(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user, ct_tensor **w,
                         bool keep_graph, ct_tensor **f_out, double *value) {
    ct_tensor *out = NULL, *prod = NULL, *f = NULL;
    ct_status st = CT_OK;
    ct_scope_begin();
    out = fn(inputs, n, user);
    if (!out) {
        st = ct_last_status() ? ct_last_status() : CT_ERR_INVALID_ARG;
        goto done;
    }
    if (!*w) {
        /* our own reference outlives this scope's */
        *w = ct_retain(ct_randn(ct_shape_of(out), .dtype = CT_FLOAT64, .device = ct_device_of(out)));
    }
    prod = cta_binary(CT_BIN_MUL, out, *w, 1.0);
    f = prod ? cta_reduce(CT_RED_SUM, prod, NULL, 0, false, 0) : NULL;
    if (!f) {
        st = ct_last_status();
        goto done;
    }
    if (value) st = ct_item_checked(f, value);
    if (keep_graph && f_out) *f_out = ct_retain(f);
done:
    ct_decref(prod);
    ct_decref(f);
    ct_scope_end();
    return st;
}

/* Perturb element `flat` (row-major index) of t by delta, in place. */
static ct_status nudge(ct_tensor *t, int64_t flat, double delta) {
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (flat % t->shape[d]) * t->strides[d];
        flat /= t->shape[d];
    }
    ct_tensor *elem = ct_tensor_view_of(t, NULL, NULL, 0, off);
    if (!elem) return ct_last_status();
    double v;
    ct_status st = ct_copy_to_host(elem, &v, CT_FLOAT64, 1);
    v += delta;
    if (st == CT_OK) st = ct_copy_from_host(elem, &v, CT_FLOAT64, 1);
    ct_decref(elem);
    return st;
}

ct_status ct_gradcheck_opts_run(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user,
                                ct_gradcheck_opts o, bool *ok) {
    CT_CHECK_STATUS(fn && inputs && ok && n > 0, CT_ERR_INVALID_ARG, "gradcheck: NULL argument");
    double eps = o.eps > 0 ? o.eps : 1e-6, atol = o.atol > 0 ? o.atol : 1e-5, rtol = o.rtol > 0 ? o.rtol : 1e-3;
    *ok = false;
    for (int i = 0; i < n; i++) {
        CT_CHECK_STATUS(inputs[i] && inputs[i]->dtype == CT_FLOAT64 && inputs[i]->requires_grad && !inputs[i]->grad_fn,
                        CT_ERR_INVALID_ARG, "gradcheck: input %d must be a float64 leaf that requires grad", i);
        ct_set_grad(inputs[i], NULL);
    }
    ct_tensor *w = NULL, *f = NULL;
    ct_status st = project(fn, inputs, n, user, &w, true, &f, NULL);
    if (st == CT_OK) st = ct_backward(f);
    ct_decref(f);
    bool good = st == CT_OK;
    for (int i = 0; i < n && good; i++) {
        int64_t numel = ct_shape_numel(inputs[i]->shape, inputs[i]->ndim);
        double *analytic = calloc((size_t)(numel ? numel : 1), sizeof *analytic);
        if (!analytic) {
            st = ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
            break;
        }
        if (inputs[i]->grad) st = ct_copy_to_host(inputs[i]->grad, analytic, CT_FLOAT64, numel);
        bool prev = ct_is_grad_enabled();
        ct_set_grad_enabled(false);
        for (int64_t k = 0; k < numel && st == CT_OK && good; k++) {
            double fp = 0, fm = 0;
            st = nudge(inputs[i], k, eps);
            if (st == CT_OK) st = project(fn, inputs, n, user, &w, false, NULL, &fp);
            if (st == CT_OK) st = nudge(inputs[i], k, -2 * eps);
            if (st == CT_OK) st = project(fn, inputs, n, user, &w, false, NULL, &fm);
            if (st == CT_OK) st = nudge(inputs[i], k, eps);
            double numeric = (fp - fm) / (2 * eps);
            if (st == CT_OK && !(fabs(analytic[k] - numeric) <= atol + rtol * fabs(numeric))) {
                good = false;
                ct_error_set(CT_ERR_INVALID_ARG,
                             "gradcheck: Jacobian mismatch for input %d, element %lld: analytical %.10g, "
                             "numerical %.10g (atol %g, rtol %g)", i, (long long)k, analytic[k], numeric, atol, rtol);
            }
        }
        ct_set_grad_enabled(prev);
        free(analytic);
    }
    for (int i = 0; i < n; i++) ct_set_grad(inputs[i], NULL);
    ct_decref(w);
    if (st != CT_OK && good) return st;
    *ok = good && st == CT_OK;
    return CT_OK;
}
