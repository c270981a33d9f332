/*
 * reduce.c — the reduction front-end: sum, mean, prod, amax/amin, var/std,
 * max/min with indices and argmax/argmin.
 *
 * It checks dims and dtypes with PyTorch's rules and messages, picks the
 * output dtype (integer and bool sums/products give int64, argmax gives
 * int64, mean/var/std need floating input) and shape (keepdim or not), and
 * arranges the input as the strided 2-D [O, R] view that backends reduce:
 * reduced dims are moved last and each side is merged into one strided dim
 * when the strides allow it (no copy). When the kept dims merge into a few
 * strided groups the backend is called once per leading group; otherwise a
 * contiguous copy of the permuted input is reduced.
 * Empty reductions give the identity (sum 0, prod 1, mean/var NaN); max/min/
 * argmax over an empty dim are errors, as in PyTorch.
 */
#include <math.h>
#include <string.h>

#include "../autograd/autograd.h"
#include "amp/autocast.h"

/* Below this much work per backend call, one contiguous copy is cheaper than
 * a call per group of kept dims. */
#define CT_REDUCE_MIN_WORK_PER_CALL 4096

const char *cti_reduce_name(ct_reduce_op op) { return ct_reduce_facts_of(op)->name; }

static bool is_extreme(ct_reduce_op op) {
    return (ct_reduce_facts_of(op)->flags & CT_OPF_EXTREME) != 0;
}

/* What one reduction call asks for; `name` is the op as the user called it
 * ("max" for ct_max_dim, "std" for ct_std) so messages name it. */
typedef struct reduce_req {
    ct_reduce_op op;
    const char *name;
    const int *dims;
    int ndims;          /* 0: all dims */
    bool keepdim;
    double param;
    bool whole_tensor;  /* max_all & co: PyTorch's message for empty input */
} reduce_req;

/* The reduced dims as a mask over a's dims, validated as PyTorch does. */
static bool reduced_mask(const reduce_req *q, const ct_tensor *a, bool *mask) {
    memset(mask, 0, sizeof(bool) * CT_MAX_DIMS);
    CT_CHECK_RET(q->ndims >= 0 && (q->ndims == 0 || q->dims), false, CT_ERR_INVALID_ARG,
                 "%s: invalid dims list (ndims %d, dims %s)", q->name, q->ndims,
                 q->dims ? "given" : "NULL");
    if (q->ndims == 0) {
        for (int i = 0; i < a->ndim; i++) mask[i] = true;
        return true;
    }
    bool seen[CT_MAX_DIMS] = {false};
    for (int k = 0; k < q->ndims; k++) {
        int d;
        if (!ct_wrap_dim(q->name, q->dims[k], a->ndim, &d)) return false;
        CT_CHECK_RET(!seen[d], false, CT_ERR_INVALID_ARG,
                     "%s: dim %d appears multiple times in the list of dims", q->name, d);
        seen[d] = true;
        if (a->ndim > 0) mask[d] = true; /* a 0-dim tensor has nothing to reduce */
    }
    return true;
}

static bool check_dtype(const reduce_req *q, ct_dtype dt) {
    const char *tn = cti_scalar_type_name(dt);
    switch (q->op) {
    case CT_RED_MEAN:
        CT_CHECK_RET(ct_dtype_is_floating(dt), false, CT_ERR_DTYPE,
                     "%s(): could not infer output dtype. Input dtype must be either a floating "
                     "point or complex dtype. Got: %s", q->name, tn);
        return true;
    case CT_RED_VAR:
        CT_CHECK_RET(ct_dtype_is_floating(dt), false, CT_ERR_DTYPE,
                     "%s(): std and var only support floating point and complex dtypes. Got: %s",
                     q->name, tn);
        return true;
    case CT_RED_ARGMAX:
    case CT_RED_ARGMIN:
        CT_CHECK_RET(dt != CT_BOOL, false, CT_ERR_DTYPE, "%s(): \"%s\" not implemented for '%s'",
                     q->name, q->name, tn);
        return true;
    default:
        return true;
    }
}

/* max/min/argmax/argmin have no identity: every reduced dim must be non-empty. */
static bool check_nonempty(const reduce_req *q, const ct_tensor *a, const bool *mask) {
    if (!is_extreme(q->op)) return true;
    if (q->whole_tensor) {
        CT_CHECK_RET(ct_shape_numel(a->shape, a->ndim) > 0, false, CT_ERR_INVALID_ARG,
                     "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                     "Specify the reduction dim with the 'dim' argument.", q->name);
        return true;
    }
    for (int i = 0; i < a->ndim; i++)
        CT_CHECK_RET(!mask[i] || a->shape[i] != 0, false, CT_ERR_INDEX,
                     "%s(): Expected reduction dim %d to have non-zero size.", q->name, i);
    return true;
}

static ct_dtype output_dtype(ct_reduce_op op, ct_dtype in) {
    const unsigned flags = ct_reduce_facts_of(op)->flags;
    if (flags & CT_OPF_INDEX_RESULT) return CT_INT64;
    if ((flags & CT_OPF_INT_WIDENS) && !ct_dtype_is_floating(in)) return CT_INT64;
    return in;
}

/* Merge (size, stride) dims, outermost first, into as few strided dims as
 * the strides allow; size-1 dims vanish. Returns the group count. */
static int merge_dims(const int64_t *size, const int64_t *stride, int n, int64_t *gsize,
                      int64_t *gstride) {
    int64_t rs[CT_MAX_DIMS], rt[CT_MAX_DIMS]; /* innermost first */
    int ng = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (size[i] == 1) continue;
        if (ng > 0 && stride[i] == rt[ng - 1] * rs[ng - 1]) {
            rs[ng - 1] *= size[i];
        } else {
            rs[ng] = size[i];
            rt[ng] = stride[i];
            ng++;
        }
    }
    for (int g = 0; g < ng; g++) {
        gsize[g] = rs[ng - 1 - g];
        gstride[g] = rt[ng - 1 - g];
    }
    return ng;
}

/* The input as kept dims then reduced dims (sizes and strides). */
typedef struct layout {
    int nkept, nred;
    int perm[CT_MAX_DIMS];
    int64_t ksize[CT_MAX_DIMS], kstride[CT_MAX_DIMS];
    int64_t rsize[CT_MAX_DIMS], rstride[CT_MAX_DIMS];
    int64_t O, R;
} layout;

static void split_layout(const ct_tensor *t, const bool *mask, layout *L) {
    L->nkept = L->nred = 0;
    L->O = L->R = 1;
    for (int i = 0; i < t->ndim; i++)
        if (!mask[i]) {
            L->perm[L->nkept] = i;
            L->ksize[L->nkept] = t->shape[i];
            L->kstride[L->nkept++] = t->strides[i];
            L->O *= t->shape[i];
        }
    for (int i = 0; i < t->ndim; i++)
        if (mask[i]) {
            L->perm[L->nkept + L->nred] = i;
            L->rsize[L->nred] = t->shape[i];
            L->rstride[L->nred++] = t->strides[i];
            L->R *= t->shape[i];
        }
}

/* One backend call: rows [o0, o0 + n) of the output from in[offset + ...]. */
static ct_status call_backend(const reduce_req *q, const ct_tensor *src, int64_t in_offset,
                              int64_t so, int64_t sr, int64_t R, int64_t o0, int64_t n,
                              ct_tensor *out, ct_tensor *idx) {
    ct_kview kin = ct_kview_of(src), kout = ct_kview_of(out), kidx;
    /* in_offset counts from the tensor's storage start; the kernel view
     * counts from the buffer, where the storage may start further in */
    kin.offset = in_offset + (ct_buffer_offset(src) - src->offset);
    kin.ndim = 2;
    kin.shape[0] = n;
    kin.shape[1] = R;
    kin.strides[0] = so;
    kin.strides[1] = sr;
    kout.ndim = 1;
    kout.offset += o0;
    kout.shape[0] = n;
    kout.strides[0] = 1;
    if (idx) {
        kidx = ct_kview_of(idx);
        kidx.ndim = 1;
        kidx.offset += o0;
        kidx.shape[0] = n;
        kidx.strides[0] = 1;
    }
    return CTI_BACKEND_CALL(src, reduce, q->name, q->op, &kout, idx ? &kidx : NULL, &kin,
                            q->param);
}

/* The kept dims form ng > 1 groups: one call per index of the leading ones. */
static ct_status call_per_group(const reduce_req *q, const ct_tensor *src, const int64_t *gsize,
                                const int64_t *gstride, int ng, int64_t sr, int64_t R,
                                ct_tensor *out, ct_tensor *idx) {
    int64_t inner = gsize[ng - 1], ncalls = 1;
    for (int g = 0; g < ng - 1; g++) ncalls *= gsize[g];
    for (int64_t call = 0; call < ncalls; call++) {
        int64_t rem = call, off = src->offset;
        for (int g = ng - 2; g >= 0; g--) {
            off += (rem % gsize[g]) * gstride[g];
            rem /= gsize[g];
        }
        CT_TRY(call_backend(q, src, off, gstride[ng - 1], sr, R, call * inner, inner, out, idx));
    }
    return CT_OK;
}

/* When no index is reported, the order in which reduced elements are
 * visited does not matter: sorting the reduced dims by decreasing stride
 * lets e.g. a full reduction of a transposed tensor merge into one run
 * instead of being copied. (Insertion sort: at most CT_MAX_DIMS entries.) */
static void sort_reduced_by_stride(layout *L) {
    for (int i = 1; i < L->nred; i++)
        for (int j = i; j > 0 && L->rstride[j - 1] < L->rstride[j]; j--) {
            int64_t ts = L->rsize[j], tt = L->rstride[j];
            L->rsize[j] = L->rsize[j - 1], L->rstride[j] = L->rstride[j - 1];
            L->rsize[j - 1] = ts, L->rstride[j - 1] = tt;
        }
}

/* Reduce src (already of the compute dtype) into out/idx, which hold O
 * contiguous results in kept-dims order. */
static ct_status run_reduction(const reduce_req *q, const ct_tensor *src, const bool *mask,
                               ct_tensor *out, ct_tensor *idx) {
    layout L;
    split_layout(src, mask, &L);
    bool reports_index = q->op == CT_RED_ARGMAX || q->op == CT_RED_ARGMIN || idx != NULL;
    if (!reports_index) sort_reduced_by_stride(&L);
    int64_t ks[CT_MAX_DIMS], kt[CT_MAX_DIMS], rs[CT_MAX_DIMS], rt[CT_MAX_DIMS];
    int nk = merge_dims(L.ksize, L.kstride, L.nkept, ks, kt);
    int nr = merge_dims(L.rsize, L.rstride, L.nred, rs, rt);
    int64_t sr = nr == 1 ? rt[0] : 0;
    if (nr <= 1 && nk <= 1)
        return call_backend(q, src, src->offset, nk == 1 ? kt[0] : 0, sr, L.R, 0, L.O, out, idx);
    if (nr <= 1 && ks[nk - 1] * L.R >= CT_REDUCE_MIN_WORK_PER_CALL)
        return call_per_group(q, src, ks, kt, nk, sr, L.R, out, idx);

    ct_tensor *perm = cti_permute(src, L.perm);
    ct_tensor *dense = cti_contiguous(perm);
    ct_decref(perm);
    if (!dense) return ct_last_status();
    ct_status s = call_backend(q, dense, dense->offset, L.R, 1, L.R, 0, L.O, out, idx);
    ct_decref(dense);
    return s;
}

static void output_shape(const ct_tensor *a, const bool *mask, bool keepdim, int64_t *shape,
                         int *ndim) {
    *ndim = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (!mask[i]) shape[(*ndim)++] = a->shape[i];
        else if (keepdim) shape[(*ndim)++] = 1;
    }
}

static double empty_result(ct_reduce_op op) {
    switch (op) {
    case CT_RED_SUM: return 0.0;
    case CT_RED_PROD: return 1.0;
    default: return NAN; /* mean and var of nothing */
    }
}

/* The whole reduction. *values gets the result (values, or indices for
 * argmax/argmin); *indices, when not NULL, the int64 indices of max/min. */
static ct_status reduce_impl(const reduce_req *q, const ct_tensor *a, ct_tensor **values,
                             ct_tensor **indices) {
    *values = NULL;
    if (indices) *indices = NULL;
    bool mask[CT_MAX_DIMS];
    if (!reduced_mask(q, a, mask) || !check_dtype(q, a->dtype) || !check_nonempty(q, a, mask))
        return ct_last_status();

    int64_t shape[CT_MAX_DIMS];
    int ndim;
    output_shape(a, mask, q->keepdim, shape, &ndim);
    ct_dtype odt = output_dtype(q->op, a->dtype);
    ct_device dev = a->storage->device;
    int64_t R = 1;
    for (int i = 0; i < a->ndim; i++)
        if (mask[i]) R *= a->shape[i];
    int64_t O = ct_shape_numel(shape, ndim);

    if (O > 0 && R == 0) { /* only ops with an identity reach here */
        *values = cti_full(shape, ndim, empty_result(q->op), odt, dev);
        return *values ? CT_OK : ct_last_status();
    }
    ct_tensor *out = cti_empty(shape, ndim, odt, dev);
    ct_tensor *idx = indices ? cti_empty(shape, ndim, CT_INT64, dev) : NULL;
    ct_status s = (!out || (indices && !idx)) ? ct_last_status() : CT_OK;
    if (s == CT_OK && O > 0) {
        bool widen = (q->op == CT_RED_SUM || q->op == CT_RED_PROD) && a->dtype != odt;
        ct_tensor *src = widen ? cti_cast(a, odt) : NULL;
        if (widen && !src) s = ct_last_status();
        else s = run_reduction(q, widen ? src : a, mask, out, idx);
        ct_decref(src);
    }
    if (s != CT_OK) {
        ct_decref(out);
        ct_decref(idx);
        return s;
    }
    *values = out;
    if (indices) *indices = idx;
    return CT_OK;
}

static ct_tensor *reduce_values(const reduce_req *q, const ct_tensor *a) {
    if (!a) return NULL;
    ct_tensor *v;
    return reduce_impl(q, a, &v, NULL) == CT_OK ? v : NULL;
}

ct_tensor *cti_reduce(ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims,
                      bool keepdim, double param) {
    reduce_req q = {op, cti_reduce_name(op), dims, ndims, keepdim, param, false};
    return reduce_values(&q, a);
}

/* ---- public API ------------------------------------------------------------- */

static ct_tensor *reduce_named(ct_reduce_op op, const char *name, const ct_tensor *a,
                               const int *dims, int ndims, bool keepdim, double param,
                               bool whole_tensor) {
    CTI_AUTOCAST1(name, a);
    reduce_req q = {op, name, dims, ndims, keepdim, param, whole_tensor};
    return CTI_AUTOCAST_RESULT(cta_record_reduce(reduce_values(&q, a), op, a, dims, ndims, keepdim, param));
}

ct_tensor *ct_sum(const ct_tensor *a, const int *dims, int ndims, bool keepdim) {
    return reduce_named(CT_RED_SUM, "sum", a, dims, ndims, keepdim, 0.0, false);
}
ct_tensor *ct_mean(const ct_tensor *a, const int *dims, int ndims, bool keepdim) {
    return reduce_named(CT_RED_MEAN, "mean", a, dims, ndims, keepdim, 0.0, false);
}
ct_tensor *ct_prod(const ct_tensor *a, const int *dims, int ndims, bool keepdim) {
    return reduce_named(CT_RED_PROD, "prod", a, dims, ndims, keepdim, 0.0, false);
}
ct_tensor *ct_amax(const ct_tensor *a, const int *dims, int ndims, bool keepdim) {
    return reduce_named(CT_RED_MAX, "amax", a, dims, ndims, keepdim, 0.0, false);
}
ct_tensor *ct_amin(const ct_tensor *a, const int *dims, int ndims, bool keepdim) {
    return reduce_named(CT_RED_MIN, "amin", a, dims, ndims, keepdim, 0.0, false);
}
ct_tensor *ct_var(const ct_tensor *a, const int *dims, int ndims, double correction,
                  bool keepdim) {
    return reduce_named(CT_RED_VAR, "var", a, dims, ndims, keepdim, correction, false);
}

ct_tensor *ct_std(const ct_tensor *a, const int *dims, int ndims, double correction,
                  bool keepdim) {
    reduce_req q = {CT_RED_VAR, "std", dims, ndims, keepdim, correction, false};
    ct_tensor *var = cta_record_reduce(reduce_values(&q, a), CT_RED_VAR, a, dims, ndims, keepdim, correction);
    ct_tensor *std = cta_unary(CT_UN_SQRT, var, 0.0, 0.0);
    ct_decref(var);
    return ct_track(std);
}

ct_tensor *ct_sum_all(const ct_tensor *a) {
    return reduce_named(CT_RED_SUM, "sum", a, NULL, 0, false, 0.0, false);
}
ct_tensor *ct_mean_all(const ct_tensor *a) {
    return reduce_named(CT_RED_MEAN, "mean", a, NULL, 0, false, 0.0, false);
}
ct_tensor *ct_max_all(const ct_tensor *a) {
    return reduce_named(CT_RED_MAX, "max", a, NULL, 0, false, 0.0, true);
}
ct_tensor *ct_min_all(const ct_tensor *a) {
    return reduce_named(CT_RED_MIN, "min", a, NULL, 0, false, 0.0, true);
}
ct_tensor *ct_argmax_all(const ct_tensor *a) {
    return reduce_named(CT_RED_ARGMAX, "argmax", a, NULL, 0, false, 0.0, true);
}
ct_tensor *ct_argmax(const ct_tensor *a, int dim, bool keepdim) {
    return reduce_named(CT_RED_ARGMAX, "argmax", a, &dim, 1, keepdim, 0.0, false);
}
ct_tensor *ct_argmin(const ct_tensor *a, int dim, bool keepdim) {
    return reduce_named(CT_RED_ARGMIN, "argmin", a, &dim, 1, keepdim, 0.0, false);
}

static ct_status extreme_dim(ct_reduce_op op, const char *name, const ct_tensor *a, int dim,
                             bool keepdim, ct_tensor **values, ct_tensor **indices) {
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!a) return ct_error_null_input(name);
    reduce_req q = {op, name, &dim, 1, keepdim, 0.0, false};
    ct_tensor *v, *i;
    CT_TRY(reduce_impl(&q, a, &v, indices ? &i : NULL));
    if (values) *values = ct_track(cta_record_reduce(v, op, a, &dim, 1, keepdim, 0.0));
    else ct_decref(v);
    if (indices) *indices = ct_track(i);
    return CT_OK;
}

ct_status ct_max_dim(const ct_tensor *a, int dim, bool keepdim, ct_tensor **values,
                     ct_tensor **indices) {
    return extreme_dim(CT_RED_MAX, "max", a, dim, keepdim, values, indices);
}
ct_status ct_min_dim(const ct_tensor *a, int dim, bool keepdim, ct_tensor **values,
                     ct_tensor **indices) {
    return extreme_dim(CT_RED_MIN, "min", a, dim, keepdim, values, indices);
}
