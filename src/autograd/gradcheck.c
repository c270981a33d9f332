/*
 * gradcheck.c — torch.autograd.gradcheck: analytical gradients (backward)
 * against central finite differences, in float64.
 *
 * As in PyTorch, Jacobians are compared, not one number per input element:
 * a check against a single random projection sum(fn(x) * w) can be passed
 * by a wrong rule whose error w happens to hide, and says nothing about
 * which output is wrong. Each input element is perturbed once (two
 * evaluations of fn give a column of the numerical Jacobian); the
 * analytical side is one backward pass per vector v, giving vᵀJ.
 *  - Outputs of up to GC_FULL_MAX elements: v runs over every unit vector,
 *    so every entry of the Jacobian is compared (PyTorch's default mode).
 *  - Larger outputs: GC_PROJECTIONS random vectors v (PyTorch's fast mode
 *    uses one), each compared as vᵀJ against vᵀJ_num.
 * A gradient whose shape differs from its input's is a failure too (the
 * engine stores what a backward rule returns).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

#define GC_FULL_MAX 256
#define GC_PROJECTIONS 8

/* The vectors v: unit vectors (full) or random ones, n_out long each. */
typedef struct gc_proj {
    int count;
    bool full;
    int64_t n_out;
    double *v; /* count * n_out values when !full */
} gc_proj;

static double proj_weight(const gc_proj *p, int j, int64_t o) {
    return p->full ? (double)(o == j) : p->v[(int64_t)j * p->n_out + o];
}

/* Random vectors from a fixed seed (splitmix64): reproducible, and the
 * user's generator is left alone. Values in [-1, -0.25] ∪ [0.25, 1] so no
 * output is weighted by nearly zero. */
static ct_status proj_init(gc_proj *p, int64_t n_out) {
    p->n_out = n_out;
    p->full = n_out <= GC_FULL_MAX;
    p->count = p->full ? (int)n_out : GC_PROJECTIONS;
    p->v = NULL;
    if (p->full) return CT_OK;
    p->v = malloc(sizeof(double) * (size_t)p->count * (size_t)n_out);
    if (!p->v) return ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
    uint64_t state = 0x6772616463686B00ull;
    for (int64_t i = 0; i < (int64_t)p->count * n_out; i++) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        double u = (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53; /* [0, 1) */
        p->v[i] = u < 0.5 ? -1.0 + 1.5 * u : 0.25 + 1.5 * (u - 0.5);
    }
    return CT_OK;
}

/* fn's output at the current inputs, as n_out host doubles (no graph). */
static ct_status evaluate(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user, double *out_vals,
                          int64_t n_out) {
    ct_status st = CT_OK;
    ct_scope_begin();
    ct_clear_error(); /* fn's own error, not a stale one, if it fails */
    ct_tensor *out = fn(inputs, n, user);
    if (!out)
        st = ct_error_pending_or(CT_ERR_INVALID_ARG, "gradcheck: fn returned NULL without setting an error");
    else if (ct_shape_numel(out->shape, out->ndim) != n_out)
        st = ct_error_set(CT_ERR_SHAPE, "gradcheck: fn's output changed size between calls");
    else st = ct_copy_to_host(out, out_vals, CT_FLOAT64, n_out);
    ct_scope_end();
    return st;
}

/* The element of t at row-major index flat, read or written. */
static ct_status element_io(ct_tensor *t, int64_t flat, double *value, bool write) {
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (flat % t->shape[d]) * t->strides[d];
        flat /= t->shape[d];
    }
    ct_tensor *elem = ct_tensor_view_of(t, NULL, NULL, 0, off);
    if (!elem) return ct_last_status();
    ct_status st = write ? ct_copy_from_host(elem, value, CT_FLOAT64, 1) : ct_copy_to_host(elem, value, CT_FLOAT64, 1);
    ct_decref(elem);
    return st;
}

/* One column of the numerical Jacobian: d out / d input[k]. The element is
 * restored to its exact original value afterwards. */
static ct_status numeric_column(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user, int i, int64_t k,
                                double eps, double *plus, double *minus, int64_t n_out) {
    double orig, v;
    ct_status st = element_io(inputs[i], k, &orig, false);
    if (st != CT_OK) return st;
    v = orig + eps;
    st = element_io(inputs[i], k, &v, true);
    if (st == CT_OK) st = evaluate(fn, inputs, n, user, plus, n_out);
    v = orig - eps;
    if (st == CT_OK) st = element_io(inputs[i], k, &v, true);
    if (st == CT_OK) st = evaluate(fn, inputs, n, user, minus, n_out);
    ct_status restored = element_io(inputs[i], k, &orig, true);
    if (st != CT_OK) return st;
    for (int64_t o = 0; o < n_out; o++) plus[o] = (plus[o] - minus[o]) / (2 * eps);
    return restored;
}

/* Input i's gradient into dst (numel values), zeros when it has none; a
 * gradient of another shape or dtype is a failure (*ok = false). */
static ct_status read_grad(const ct_tensor *in, int i, double *dst, int64_t numel, bool *ok) {
    const ct_tensor *g = in->grad;
    if (!g) {
        memset(dst, 0, sizeof(double) * (size_t)numel);
        return CT_OK;
    }
    if (g->ndim != in->ndim || memcmp(g->shape, in->shape, sizeof(int64_t) * (size_t)in->ndim) != 0 ||
        g->dtype != in->dtype) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE, "gradcheck: the gradient of input %d is %s %s, the input is %s %s", i,
                     ct_dtype_name(g->dtype), ct_shape_str(g->shape, g->ndim, a, sizeof a), ct_dtype_name(in->dtype),
                     ct_shape_str(in->shape, in->ndim, b, sizeof b));
        *ok = false;
        return CT_OK;
    }
    return ct_copy_to_host(g, dst, CT_FLOAT64, numel);
}

/* The analytical vᵀJ for every projection: analytic[i][j * numel_i + k]. */
static ct_status analytic_rows(ct_tensor *out, ct_tensor *const *inputs, int n, const gc_proj *p,
                               double **analytic, const int64_t *numel, bool *ok) {
    ct_status st = CT_OK;
    double *v = malloc(sizeof(double) * (size_t)(p->n_out ? p->n_out : 1));
    if (!v) return ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
    for (int j = 0; j < p->count && st == CT_OK && *ok; j++) {
        for (int i = 0; i < n; i++) ct_set_grad(inputs[i], NULL);
        if (out->requires_grad) {
            for (int64_t o = 0; o < p->n_out; o++) v[o] = proj_weight(p, j, o);
            ct_tensor *vt = ct_tensor_from(v, CT_FLOAT64, ct_shape_make(out->ndim, out->shape), .dtype = out->dtype,
                                           .device = out->storage->device);
            st = vt ? ct_backward_ex(out, vt, true) : ct_last_status();
            ct_release(vt);
        }
        for (int i = 0; i < n && st == CT_OK && *ok; i++)
            st = read_grad(inputs[i], i, analytic[i] + (int64_t)j * numel[i], numel[i], ok);
    }
    free(v);
    return st;
}

/* Compare every projection of column k of input i; false (with the error
 * set) at the first mismatch. */
static bool compare_column(const gc_proj *p, const double *column, const double *analytic, int64_t numel, int i,
                           int64_t k, double atol, double rtol) {
    for (int j = 0; j < p->count; j++) {
        double num = 0;
        if (p->full) num = column[j];
        else
            for (int64_t o = 0; o < p->n_out; o++) num += p->v[(int64_t)j * p->n_out + o] * column[o];
        double ana = analytic[(int64_t)j * numel + k];
        if (fabs(ana - num) <= atol + rtol * fabs(num)) continue;
        ct_error_set(CT_ERR_INVALID_ARG,
                     "gradcheck: Jacobian mismatch for %s %d, input %d, element %lld: analytical %.10g, "
                     "numerical %.10g (atol %g, rtol %g)", p->full ? "output" : "projection", j, i, (long long)k,
                     ana, num, atol, rtol);
        return false;
    }
    return true;
}

/* Numerical columns of every input against the analytical rows. */
static ct_status numeric_compare(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user, const gc_proj *p,
                                 double *const *analytic, const int64_t *numel, double eps, double atol,
                                 double rtol, bool *ok) {
    size_t cols = (size_t)(p->n_out ? p->n_out : 1);
    double *plus = malloc(sizeof(double) * cols), *minus = malloc(sizeof(double) * cols);
    ct_status st = plus && minus ? CT_OK : ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
    bool prev = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    for (int i = 0; i < n && st == CT_OK && *ok; i++)
        for (int64_t k = 0; k < numel[i] && st == CT_OK && *ok; k++) {
            st = numeric_column(fn, inputs, n, user, i, k, eps, plus, minus, p->n_out);
            if (st == CT_OK) *ok = compare_column(p, plus, analytic[i], numel[i], i, k, atol, rtol);
        }
    ct_set_grad_enabled(prev);
    free(plus);
    free(minus);
    return st;
}

/* Both Jacobians from one recorded output. */
static ct_status check_all(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user, double eps, double atol,
                           double rtol, bool *ok) {
    double **analytic = calloc((size_t)n, sizeof *analytic);
    int64_t *numel = calloc((size_t)n, sizeof *numel);
    gc_proj p = {0};
    ct_status st = analytic && numel ? CT_OK : ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
    ct_scope_begin();
    if (st == CT_OK) ct_clear_error();
    ct_tensor *out = st == CT_OK ? fn(inputs, n, user) : NULL;
    if (st == CT_OK && !out)
        st = ct_error_pending_or(CT_ERR_INVALID_ARG, "gradcheck: fn returned NULL without setting an error");
    if (st == CT_OK) st = proj_init(&p, ct_shape_numel(out->shape, out->ndim));
    for (int i = 0; i < n && st == CT_OK; i++) {
        numel[i] = ct_shape_numel(inputs[i]->shape, inputs[i]->ndim);
        analytic[i] = malloc(sizeof(double) * (size_t)(p.count * numel[i] + 1));
        if (!analytic[i]) st = ct_error_set(CT_ERR_OOM, "gradcheck: out of memory");
    }
    if (st == CT_OK) st = analytic_rows(out, inputs, n, &p, analytic, numel, ok);
    ct_scope_end(); /* frees the graph before the numerical side runs */
    if (st == CT_OK && *ok) st = numeric_compare(fn, inputs, n, user, &p, analytic, numel, eps, atol, rtol, ok);
    for (int i = 0; analytic && i < n; i++) free(analytic[i]);
    free(analytic);
    free(numel);
    free(p.v);
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
    bool good = true;
    ct_status st = check_all(fn, inputs, n, user, eps, atol, rtol, &good);
    for (int i = 0; i < n; i++) ct_set_grad(inputs[i], NULL);
    if (st != CT_OK) return st;
    *ok = good;
    return CT_OK;
}
