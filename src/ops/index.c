/*
 * index.c — torch.index_select and torch.gather.
 *
 * The front-end checks every index against the indexed dimension before any
 * backend runs, so kernels can trust their indices and an out-of-range index
 * is a clean error (PyTorch's wording) instead of a stray memory access. For
 * tensors on a device that means reading the indices back to the host once.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/internal.h"

/* The values of a contiguous int64 tensor, readable on the host. For CPU
 * tensors that is the storage itself; otherwise *owned receives a copy that
 * the caller frees. */
static const int64_t *host_indices(const ct_tensor *idx, int64_t n, int64_t **owned) {
    *owned = NULL;
    if (idx->storage->device.type == CT_DEVICE_CPU)
        return (const int64_t *)idx->storage->data + ct_buffer_offset(idx);
    int64_t *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    CT_CHECK_NULL(buf, CT_ERR_OOM, "out of memory reading %lld indices", (long long)n);
    ct_status st = cti_backend(idx)->read(idx->storage->device.index, idx->storage->data,
                                           (size_t)ct_buffer_offset(idx) * sizeof *buf, buf,
                                           (size_t)n * sizeof *buf);
    if (st != CT_OK) {
        free(buf);
        return NULL;
    }
    *owned = buf;
    return buf;
}

/* Position of the first index outside [0, size), or -1 if all are valid. */
static int64_t first_out_of_range(const int64_t *v, int64_t n, int64_t size) {
    for (int64_t i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= size) return i;
    return -1;
}

/* Check the (contiguous int64) indices against a dim of `size`. `prefix`
 * opens the detail of the message (PyTorch's index_select says "index out of
 * range in self"). */
static bool check_indices(const char *op, const char *prefix, const ct_tensor *idx, int dim,
                          int64_t size) {
    const int64_t n = ct_shape_numel(idx->shape, idx->ndim);
    int64_t *owned;
    const int64_t *v = host_indices(idx, n, &owned);
    if (!v) return false;
    int64_t bad = first_out_of_range(v, n, size);
    if (bad >= 0) {
        ct_error_set(CT_ERR_INDEX,
                     "%s(): %sindex %lld is out of bounds for dimension %d with size %lld", op,
                     prefix, (long long)v[bad], dim, (long long)size);
    }
    free(owned);
    return bad < 0;
}

/* A kernel view that treats a 0-dim tensor as the 1-D tensor [1] (PyTorch
 * indexes scalars as one-element vectors). */
static ct_kview kview_at_least_1d(const ct_tensor *t) {
    ct_kview kv = ct_kview_of(t);
    if (kv.ndim == 0) kv.ndim = 1, kv.shape[0] = 1, kv.strides[0] = 1;
    return kv;
}

/* ---- index_select ---------------------------------------------------------------- */

static bool check_index_select_args(const ct_tensor *a, const ct_tensor *index, int dim, int *d) {
    const ct_tensor *both[2] = {a, index};
    if (!ct_check_same_device("index_select", both, 2)) return false;
    CT_CHECK_RET(index->dtype == CT_INT64 || index->dtype == CT_INT32, false, CT_ERR_DTYPE,
                 "index_select(): Expected dtype int32/int64 for index but got: %s",
                 ct_dtype_name(index->dtype));
    CT_CHECK_RET(index->ndim <= 1, false, CT_ERR_SHAPE,
                 "index_select(): Index is supposed to be a vector, got a %d-D tensor", index->ndim);
    if (!ct_wrap_dim("index_select", dim, a->ndim, d)) return false;
    CT_CHECK_RET(a->ndim > 0 || ct_shape_numel(index->shape, index->ndim) == 1, false,
                 CT_ERR_INVALID_ARG,
                 "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                 (long long)ct_shape_numel(index->shape, index->ndim));
    return true;
}

/* out = a's elements along dim d picked by idx (validated, contiguous int64). */
static ct_tensor *run_index_select(const ct_tensor *a, int d, const ct_tensor *idx) {
    const int64_t n = ct_shape_numel(idx->shape, idx->ndim);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    if (a->ndim > 0) shape[d] = n;
    ct_tensor *out = cti_empty(shape, a->ndim, a->dtype, a->storage->device);
    if (!out || ct_shape_numel(shape, a->ndim) == 0) return out;
    ct_tensor *src = cti_contiguous(a);
    if (!src) {
        ct_decref(out);
        return NULL;
    }
    int64_t outer = ct_shape_numel(a->shape, d);
    int64_t dim_in = a->ndim > 0 ? a->shape[d] : 1;
    int64_t inner = a->ndim > 0 ? ct_shape_numel(a->shape + d + 1, a->ndim - d - 1) : 1;
    ct_kview okv = kview_at_least_1d(out), ikv = kview_at_least_1d(src), xkv = kview_at_least_1d(idx);
    ct_status st = CTI_BACKEND_CALL(out, index_select, "index_select", &okv, &ikv, &xkv, outer,
                                    dim_in, inner);
    ct_decref(src);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_index_select(const ct_tensor *a, int dim, const ct_tensor *index) {
    if (!a || !index) return NULL;
    int d;
    if (!check_index_select_args(a, index, dim, &d)) return NULL;
    ct_tensor *as_i64 = cti_cast(index, CT_INT64);
    ct_tensor *idx = cti_contiguous(as_i64);
    ct_decref(as_i64);
    if (!idx) return NULL;
    ct_tensor *out = NULL;
    const int64_t dim_size = a->ndim > 0 ? a->shape[d] : 1;
    if (check_indices("index_select", "index out of range in self: ", idx, d, dim_size))
        out = cta_record_index_select(run_index_select(a, d, idx), a, d, idx);
    ct_decref(idx);
    return ct_track(out);
}

/* ---- gather ---------------------------------------------------------------------- */

static bool check_gather_args(const ct_tensor *a, const ct_tensor *index, int dim, int *d) {
    const ct_tensor *both[2] = {a, index};
    if (!ct_check_same_device("gather", both, 2)) return false;
    CT_CHECK_RET(index->dtype == CT_INT64, false, CT_ERR_DTYPE,
                 "gather(): Expected dtype int64 for index, but got %s", ct_dtype_name(index->dtype));
    /* Scalars count as one-element vectors, as in PyTorch. */
    int nd = a->ndim > 0 ? a->ndim : 1, nd_index = index->ndim > 0 ? index->ndim : 1;
    CT_CHECK_RET(nd == nd_index, false, CT_ERR_SHAPE,
                 "gather(): Index tensor must have the same number of dimensions as input tensor "
                 "(got %d and %d)",
                 index->ndim, a->ndim);
    if (!ct_wrap_dim("gather", dim, a->ndim, d)) return false;
    for (int i = 0; i < a->ndim && index->ndim > 0; i++) {
        if (i == *d || index->shape[i] <= a->shape[i]) continue;
        char si[CT_SHAPE_STR_MAX], sa[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE,
                     "gather(): Size does not match at dimension %d expected index %s to be smaller "
                     "than self %s apart from dimension %d",
                     i, ct_shape_str(index->shape, index->ndim, si, sizeof si),
                     ct_shape_str(a->shape, a->ndim, sa, sizeof sa), *d);
        return false;
    }
    return true;
}

ct_tensor *ct_gather(const ct_tensor *a, int dim, const ct_tensor *index) {
    if (!a || !index) return NULL;
    int d;
    if (!check_gather_args(a, index, dim, &d)) return NULL;
    ct_tensor *out = cti_empty(index->shape, index->ndim, a->dtype, a->storage->device);
    if (!out || ct_shape_numel(index->shape, index->ndim) == 0) return ct_track(cta_record_gather(out, a, d, index));
    ct_tensor *idx = cti_contiguous(index);
    ct_status st = CT_ERR_INDEX;
    if (idx && check_indices("gather", "", idx, d, a->ndim > 0 ? a->shape[d] : 1)) {
        ct_kview okv = kview_at_least_1d(out), akv = kview_at_least_1d(a),
                 xkv = kview_at_least_1d(idx);
        st = CTI_BACKEND_CALL(out, gather, "gather", &okv, &akv, &xkv, d);
    }
    ct_decref(idx);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return ct_track(cta_record_gather(out, a, d, index));
}
