/*
 * view.c — operations that return a new view of the same storage: view,
 * reshape, permute, transpose, narrow, slice, select, expand, squeeze,
 * unsqueeze, flatten, unflatten, as_strided. Only metadata changes; no data
 * moves, except reshape/contiguous when a view is impossible.
 */
#include <string.h>

#include "internal.h"
#include "autograd/autograd.h"

#define SHAPE_STR(buf, s, n) ct_shape_str((s), (n), (buf), sizeof(buf))

/* Resolve a single -1 in a requested shape against numel. The sizes are
 * checked (with the -1 taken as 1) before they are multiplied. */
static bool infer_shape(const char *op, const int64_t *req, int ndim, int64_t numel, int64_t *out) {
    int infer = -1;
    char buf[CT_SHAPE_STR_MAX];
    if (ndim > CT_MAX_DIMS || ndim < 0) {
        ct_error_set(CT_ERR_SHAPE, "%s: at most %d dimensions are supported, got %d", op, CT_MAX_DIMS, ndim);
        return false;
    }
    for (int i = 0; i < ndim; i++) {
        if (req[i] == -1) {
            if (infer >= 0) {
                ct_error_set(CT_ERR_SHAPE, "%s: only one dimension can be inferred", op);
                return false;
            }
            infer = i;
        } else if (req[i] < 0) {
            ct_error_set(CT_ERR_SHAPE, "%s: invalid shape dimension %lld", op, (long long)req[i]);
            return false;
        }
        out[i] = req[i] == -1 ? 1 : req[i];
    }
    if (!ct_shape_check(op, out, ndim, NULL)) return false;
    int64_t known = ct_shape_numel(out, ndim);
    if (infer >= 0) {
        if (known == 0 || numel % known != 0) {
            ct_error_set(CT_ERR_SHAPE, "%s: shape '%s' is invalid for input of size %lld", op,
                         SHAPE_STR(buf, req, ndim), (long long)numel);
            return false;
        }
        out[infer] = numel / known;
    } else if (known != numel) {
        ct_error_set(CT_ERR_SHAPE, "%s: shape '%s' is invalid for input of size %lld", op,
                     SHAPE_STR(buf, req, ndim), (long long)numel);
        return false;
    }
    return true;
}

/* Strides for viewing t with a new shape without copying, following
 * PyTorch's computeStride: each run of old dims that is contiguous in memory
 * may be re-split freely. Returns false if impossible. */
static bool view_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides) {
    int64_t numel = ct_shape_numel(t->shape, t->ndim);
    if (numel == 0 || t->ndim == 0) {
        ct_contiguous_strides(shape, ndim, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base_stride = t->ndim > 0 ? t->strides[t->ndim - 1] : 1;
    int64_t tensor_numel = 1, view_numel = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tensor_numel *= t->shape[d];
        bool chunk_end = d == 0 || (t->shape[d - 1] != 1 &&
                                    t->strides[d - 1] != tensor_numel * chunk_base_stride);
        if (chunk_end) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

ct_tensor *cti_view(const ct_tensor *t, const int64_t *req, int ndim) {
    if (!t) return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    if (!infer_shape("view", req, ndim, ct_shape_numel(t->shape, t->ndim), shape)) return NULL;
    CT_CHECK_NULL(view_strides(t, shape, ndim, strides), CT_ERR_SHAPE,
                  "view size is not compatible with input tensor's size and stride (at least one "
                  "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    return ct_tensor_view_of(t, shape, strides, ndim, t->offset);
}

ct_tensor *cti_reshape(const ct_tensor *t, const int64_t *req, int ndim) {
    if (!t) return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    if (!infer_shape("reshape", req, ndim, ct_shape_numel(t->shape, t->ndim), shape)) return NULL;
    if (view_strides(t, shape, ndim, strides))
        return ct_tensor_view_of(t, shape, strides, ndim, t->offset);
    ct_tensor *c = cti_contiguous(t);
    ct_tensor *v = c ? cti_view(c, shape, ndim) : NULL;
    ct_decref(c);
    return v;
}

/* The element furthest from offset that sizes and strides reach, or -1 for
 * an empty view; false (error set) when that overflows. */
static bool as_strided_last(const int64_t *shape, const int64_t *strides, int ndim, int64_t offset,
                            int64_t *last) {
    *last = offset;
    for (int i = 0; i < ndim; i++) {
        CT_CHECK_RET(shape[i] >= 0 && strides[i] >= 0, false, CT_ERR_INVALID_ARG,
                     "as_strided: negative size or stride at dim %d", i);
        if (shape[i] == 0) {
            *last = -1;
            return true;
        }
    }
    for (int i = 0; i < ndim; i++) {
        int64_t reach;
        CT_CHECK_RET(!__builtin_mul_overflow(shape[i] - 1, strides[i], &reach) &&
                         !__builtin_add_overflow(*last, reach, last),
                     false, CT_ERR_INVALID_ARG,
                     "as_strided: sizes and strides reach past element INT64_MAX (dim %d: size %lld, stride %lld)",
                     i, (long long)shape[i], (long long)strides[i]);
    }
    return true;
}

ct_tensor *cti_as_strided(const ct_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                          int64_t offset) {
    if (!t) return NULL;
    CT_CHECK_NULL(ndim >= 0 && ndim <= CT_MAX_DIMS, CT_ERR_SHAPE,
                  "as_strided: at most %d dimensions are supported, got %d", CT_MAX_DIMS, ndim);
    CT_CHECK_NULL(strides || ndim == 0, CT_ERR_INVALID_ARG, "as_strided: NULL strides for %d dimensions", ndim);
    CT_CHECK_NULL(offset >= 0, CT_ERR_INVALID_ARG,
                  "as_strided: Tensor: invalid storage offset %lld", (long long)offset);
    if (!ct_shape_check("as_strided", shape, ndim, NULL)) return NULL;
    /* the furthest element must lie inside the storage */
    int64_t last;
    if (!as_strided_last(shape, strides, ndim, offset, &last)) return NULL;
    int64_t capacity = (int64_t)(t->storage->nbytes / ct_dtype_size(t->dtype));
    CT_CHECK_NULL(last < capacity, CT_ERR_INVALID_ARG,
                  "as_strided: setStorage: sizes and strides reach element %lld, out of bounds for "
                  "storage of %lld elements", (long long)last, (long long)capacity);
    return ct_tensor_view_of(t, shape, strides, ndim, offset);
}

ct_tensor *cti_permute(const ct_tensor *t, const int *dims) {
    if (!t) return NULL;
    CT_CHECK_NULL(dims || t->ndim == 0, CT_ERR_INVALID_ARG,
                  "permute(): dims is NULL; expected %d dims for a %d-D tensor", t->ndim, t->ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    bool seen[CT_MAX_DIMS] = {false};
    for (int i = 0; i < t->ndim; i++) {
        int d;
        if (!ct_wrap_dim("permute", dims[i], t->ndim, &d)) return NULL;
        CT_CHECK_NULL(!seen[d], CT_ERR_INVALID_ARG, "permute(): duplicate dims are not allowed (dim %d)", d);
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return ct_tensor_view_of(t, shape, strides, t->ndim, t->offset);
}

ct_tensor *cti_transpose(const ct_tensor *t, int d0, int d1) {
    if (!t) return NULL;
    int a, b;
    if (!ct_wrap_dim("transpose", d0, t->ndim, &a) || !ct_wrap_dim("transpose", d1, t->ndim, &b))
        return NULL;
    if (t->ndim == 0) return ct_tensor_view_of(t, t->shape, t->strides, 0, t->offset);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    shape[a] = t->shape[b], shape[b] = t->shape[a];
    strides[a] = t->strides[b], strides[b] = t->strides[a];
    return ct_tensor_view_of(t, shape, strides, t->ndim, t->offset);
}

ct_tensor *cti_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length) {
    if (!t) return NULL;
    int d;
    CT_CHECK_NULL(t->ndim > 0, CT_ERR_INVALID_ARG, "narrow() cannot be applied to a 0-dim tensor.");
    if (!ct_wrap_dim("narrow", dim, t->ndim, &d)) return NULL;
    int64_t size = t->shape[d];
    if (start < 0) start += size;
    CT_CHECK_NULL(start >= 0 && start <= size, CT_ERR_INDEX,
                  "narrow(): start (%lld) out of range for dimension %d of size %lld",
                  (long long)start, d, (long long)size);
    CT_CHECK_NULL(length >= 0 && length <= size - start, CT_ERR_INDEX,
                  "narrow(): start (%lld) + length (%lld) exceeds dimension size (%lld).",
                  (long long)start, (long long)length, (long long)size);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[d] = length;
    return ct_tensor_view_of(t, shape, t->strides, t->ndim, t->offset + start * t->strides[d]);
}

ct_tensor *cti_select(const ct_tensor *t, int dim, int64_t index) {
    if (!t) return NULL;
    int d;
    CT_CHECK_NULL(t->ndim > 0, CT_ERR_INDEX, "select() cannot be applied to a 0-dim tensor.");
    if (!ct_wrap_dim("select", dim, t->ndim, &d)) return NULL;
    int64_t size = t->shape[d];
    CT_CHECK_NULL(index >= -size && index < size, CT_ERR_INDEX,
                  "select(): index %lld out of range for tensor of size %s at dimension %d",
                  (long long)index,
                  ct_shape_str(t->shape, t->ndim, (char[CT_SHAPE_STR_MAX]){0}, CT_SHAPE_STR_MAX), d);
    if (index < 0) index += size;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d) shape[n] = t->shape[i], strides[n++] = t->strides[i];
    return ct_tensor_view_of(t, shape, strides, n, t->offset + index * t->strides[d]);
}

ct_tensor *cti_expand(const ct_tensor *t, const int64_t *req, int ndim) {
    if (!t) return NULL;
    char b1[CT_SHAPE_STR_MAX], b2[CT_SHAPE_STR_MAX];
    CT_CHECK_NULL(ndim >= t->ndim && ndim <= CT_MAX_DIMS, CT_ERR_SHAPE,
                  "expand: the number of sizes provided (%d) must be greater or equal to the number "
                  "of dimensions in the tensor (%d)", ndim, t->ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int it = t->ndim - ndim + i;
        if (it < 0) {
            CT_CHECK_NULL(req[i] >= 0, CT_ERR_SHAPE,
                          "expand: The expanded size of the tensor (%lld) isn't allowed in a leading, "
                          "non-existing dimension %d", (long long)req[i], i);
            shape[i] = req[i], strides[i] = 0;
            continue;
        }
        int64_t size = req[i] == -1 ? t->shape[it] : req[i];
        if (t->shape[it] == size) {
            shape[i] = size, strides[i] = t->strides[it];
        } else if (t->shape[it] == 1 && size >= 0) {
            shape[i] = size, strides[i] = 0;
        } else {
            ct_error_set(CT_ERR_SHAPE,
                         "expand: The expanded size of the tensor (%lld) must match the existing size "
                         "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                         (long long)size, (long long)t->shape[it], i, ct_shape_str(req, ndim, b1, sizeof b1),
                         ct_shape_str(t->shape, t->ndim, b2, sizeof b2));
            return NULL;
        }
    }
    if (!ct_shape_check("expand", shape, ndim, NULL)) return NULL;
    return ct_tensor_view_of(t, shape, strides, ndim, t->offset);
}

ct_tensor *cti_unsqueeze(const ct_tensor *t, int dim) {
    if (!t) return NULL;
    int d;
    CT_CHECK_NULL(t->ndim < CT_MAX_DIMS, CT_ERR_SHAPE, "unsqueeze: tensors have at most %d dimensions",
                  CT_MAX_DIMS);
    if (!ct_wrap_dim("unsqueeze", dim, t->ndim + 1, &d)) return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
        } else {
            shape[i] = t->shape[j], strides[i] = t->strides[j], j++;
        }
    }
    return ct_tensor_view_of(t, shape, strides, t->ndim + 1, t->offset);
}

ct_tensor *cti_squeeze_dim(const ct_tensor *t, int dim) {
    if (!t) return NULL;
    int d;
    if (!ct_wrap_dim("squeeze", dim, t->ndim, &d)) return NULL;
    if (t->ndim == 0 || t->shape[d] != 1) return ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset);
    return cti_select(t, d, 0);
}

ct_tensor *cti_flatten(const ct_tensor *t, int start_dim, int end_dim) {
    if (!t) return NULL;
    if (t->ndim == 0) {
        int64_t one = 1;
        return cti_reshape(t, &one, 1);
    }
    int s, e;
    if (!ct_wrap_dim("flatten", start_dim, t->ndim, &s) || !ct_wrap_dim("flatten", end_dim, t->ndim, &e))
        return NULL;
    CT_CHECK_NULL(s <= e, CT_ERR_INVALID_ARG, "flatten() has invalid args: start_dim cannot come after end_dim");
    int64_t shape[CT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++) shape[n++] = t->shape[i];
    shape[n++] = ct_shape_numel(t->shape + s, e - s + 1);
    for (int i = e + 1; i < t->ndim; i++) shape[n++] = t->shape[i];
    return cti_reshape(t, shape, n);
}

/* ---- public wrappers ------------------------------------------------------------- */

ct_tensor *ct_view(const ct_tensor *t, ct_shape s) { return ct_track(cta_view(t, s.dims, s.ndim)); }
ct_tensor *ct_reshape(const ct_tensor *t, ct_shape s) { return ct_track(cta_reshape(t, s.dims, s.ndim)); }
ct_tensor *ct_as_strided(const ct_tensor *t, ct_shape s, const int64_t *strides, int64_t offset) {
    return ct_track(cta_as_strided(t, s.dims, strides, s.ndim, offset));
}
ct_tensor *ct_permute(const ct_tensor *t, const int *dims) { return ct_track(cta_permute(t, dims)); }
ct_tensor *ct_transpose(const ct_tensor *t, int d0, int d1) { return ct_track(cta_transpose(t, d0, d1)); }

ct_tensor *ct_t(const ct_tensor *t) {
    if (!t) return NULL;
    CT_CHECK_NULL(t->ndim <= 2, CT_ERR_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is %dD",
                  t->ndim);
    if (t->ndim < 2)
        return ct_track(cta_record_reshape(ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset), t,
                                           "TBackward0"));
    return ct_track(cta_record_transpose(cti_transpose(t, 0, 1), t, 0, 1, "TBackward0"));
}

ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length) {
    return ct_track(cta_narrow(t, dim, start, length));
}

ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
    if (!t) return NULL;
    int d;
    CT_CHECK_NULL(t->ndim > 0, CT_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    if (!ct_wrap_dim("slice", dim, t->ndim, &d)) return NULL;
    CT_CHECK_NULL(step > 0, CT_ERR_INVALID_ARG, "slice step must be positive, got %lld", (long long)step);
    int64_t size = t->shape[d];
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    /* written so that no step, however large, overflows: stride * step can
     * only overflow when the result has at most one element, and then any
     * stride is valid */
    shape[d] = end > start ? (end - start - 1) / step + 1 : 0;
    if (__builtin_mul_overflow(t->strides[d], step, &strides[d])) strides[d] = t->strides[d];
    ct_tensor *out = ct_tensor_view_of(t, shape, strides, t->ndim, t->offset + start * t->strides[d]);
    return ct_track(cta_record_slice(out, t, d, start, step, "SliceBackward0"));
}

ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index) { return ct_track(cta_select(t, dim, index)); }
ct_tensor *ct_expand(const ct_tensor *t, ct_shape s) { return ct_track(cta_expand(t, s.dims, s.ndim)); }
ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *other) {
    if (!t || !other) return NULL;
    return ct_track(cta_expand(t, other->shape, other->ndim));
}

ct_tensor *ct_squeeze(const ct_tensor *t) {
    if (!t) return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != 1) shape[n] = t->shape[i], strides[n++] = t->strides[i];
    return ct_track(cta_record_reshape(ct_tensor_view_of(t, shape, strides, n, t->offset), t, "SqueezeBackward0"));
}

ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim) { return ct_track(cta_squeeze_dim(t, dim)); }
ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim) { return ct_track(cta_unsqueeze(t, dim)); }
ct_tensor *ct_flatten(const ct_tensor *t, int s, int e) { return ct_track(cta_flatten(t, s, e)); }

ct_tensor *ct_unflatten(const ct_tensor *t, int dim, ct_shape sizes) {
    if (!t) return NULL;
    int d;
    if (!ct_wrap_dim("unflatten", dim, t->ndim, &d)) return NULL;
    CT_CHECK_NULL(sizes.ndim > 0 && t->ndim - 1 + sizes.ndim <= CT_MAX_DIMS, CT_ERR_SHAPE,
                  "unflatten: sizes must be non-empty and the result at most %d-D", CT_MAX_DIMS);
    int64_t shape[CT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < d; i++) shape[n++] = t->shape[i];
    for (int i = 0; i < sizes.ndim; i++) shape[n++] = sizes.dims[i];
    for (int i = d + 1; i < t->ndim; i++) shape[n++] = t->shape[i];
    /* a -1 in sizes is resolved against the size of dim, not the whole tensor */
    int64_t known_dims[CT_MAX_DIMS];
    int infer = -1;
    for (int i = 0; i < sizes.ndim; i++) {
        CT_CHECK_NULL(sizes.dims[i] >= -1 && (sizes.dims[i] != -1 || infer < 0), CT_ERR_SHAPE,
                      "unflatten: invalid size %lld at index %d (only one -1 is allowed)",
                      (long long)sizes.dims[i], i);
        if (sizes.dims[i] == -1) infer = d + i;
        known_dims[i] = sizes.dims[i] == -1 ? 1 : sizes.dims[i];
    }
    if (!ct_shape_check("unflatten", known_dims, sizes.ndim, NULL)) return NULL;
    int64_t known = ct_shape_numel(known_dims, sizes.ndim);
    if (infer >= 0 && known > 0) shape[infer] = t->shape[d] / known;
    char buf[CT_SHAPE_STR_MAX];
    CT_CHECK_NULL(ct_shape_numel(shape + d, sizes.ndim) == t->shape[d], CT_ERR_SHAPE,
                  "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%lld) in the input tensor",
                  ct_shape_str(sizes.dims, sizes.ndim, buf, sizeof buf), d, (long long)t->shape[d]);
    return ct_track(cta_record_reshape(cti_view(t, shape, n), t, "ViewBackward0"));
}

/* A fresh header has no grad_fn and requires_grad false: the history stops here. */
ct_tensor *ct_detach(const ct_tensor *t) {
    if (!t) return NULL;
    return ct_track(ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset));
}
