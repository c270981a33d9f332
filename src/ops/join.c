/*
 * join.c — torch.cat, torch.stack, torch.split and torch.chunk.
 *
 * cat allocates its output once and copies each input into a narrow view of
 * it, so dtype conversion and strided inputs are handled by the ordinary copy
 * path of whatever device the tensors are on. stack is cat of unsqueezed
 * inputs. split and chunk only make narrow views: they share storage with
 * their input and copy nothing.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/internal.h"

/* PyTorch's legacy rule: 1-D tensors of shape [0] may appear in a cat with
 * tensors of any shape and are skipped. */
static bool is_legacy_empty(const ct_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* The first input that takes part in the shape checks, or NULL if all are
 * legacy-empty. */
static const ct_tensor *cat_reference(ct_tensor *const *ts, int n) {
    for (int i = 0; i < n; i++)
        if (!is_legacy_empty(ts[i])) return ts[i];
    return NULL;
}

static bool check_cat_shapes(ct_tensor *const *ts, int n, const ct_tensor *ref, int dim) {
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = ts[i];
        if (is_legacy_empty(t)) continue;
        CT_CHECK_RET(t->ndim == ref->ndim, false, CT_ERR_SHAPE,
                     "cat: Tensors must have same number of dimensions: got %d and %d", ref->ndim,
                     t->ndim);
        for (int d = 0; d < t->ndim; d++) {
            CT_CHECK_RET(d == dim || t->shape[d] == ref->shape[d], false, CT_ERR_SHAPE,
                         "cat: Sizes of tensors must match except in dimension %d. Expected size "
                         "%lld but got size %lld for tensor number %d in the list.",
                         dim, (long long)ref->shape[d], (long long)t->shape[d], i);
        }
    }
    return true;
}

/* Validate the inputs of cat; on success *dtype is the promoted dtype. */
static bool check_cat_inputs(ct_tensor *const *ts, int n, ct_dtype *dtype) {
    CT_CHECK_RET(ts != NULL || n == 0, false, CT_ERR_INVALID_ARG, "cat: the tensor list is NULL");
    CT_CHECK_RET(n > 0, false, CT_ERR_INVALID_ARG,
                 "cat: expected a non-empty list of Tensors, got %d tensors", n);
    for (int i = 0; i < n; i++)
        if (!ts[i]) return false; /* NULL input: the error is already set */
    if (!ct_check_same_device("cat", (const ct_tensor *const *)ts, n)) return false;
    *dtype = ts[0]->dtype;
    for (int i = 0; i < n; i++) {
        CT_CHECK_RET(ts[i]->ndim > 0, false, CT_ERR_SHAPE,
                     "cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
        *dtype = ct_promote_types(*dtype, ts[i]->dtype);
    }
    return true;
}

static ct_tensor *cat_impl(ct_tensor *const *ts, int n, int dim) {
    ct_dtype dtype;
    if (!check_cat_inputs(ts, n, &dtype)) return NULL;
    const ct_device dev = ts[0]->storage->device;
    const ct_tensor *ref = cat_reference(ts, n);
    int d;
    if (!ref) {
        if (!ct_wrap_dim("cat", dim, 1, &d)) return NULL;
        int64_t empty = 0;
        return cti_empty(&empty, 1, dtype, dev);
    }
    if (!ct_wrap_dim("cat", dim, ref->ndim, &d) || !check_cat_shapes(ts, n, ref, d)) return NULL;
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, ref->shape, sizeof shape);
    shape[d] = 0;
    for (int i = 0; i < n; i++)
        CT_CHECK_NULL(is_legacy_empty(ts[i]) || !__builtin_add_overflow(shape[d], ts[i]->shape[d], &shape[d]),
                      CT_ERR_SHAPE, "cat: the sizes in dimension %d add up past INT64_MAX", d);
    ct_tensor *out = cti_empty(shape, ref->ndim, dtype, dev);
    if (!out) return NULL;
    int64_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (is_legacy_empty(ts[i])) continue;
        if (ct_shape_numel(ts[i]->shape, ts[i]->ndim) == 0) {
            offset += ts[i]->shape[d];
            continue;
        }
        ct_tensor *slot = cti_narrow(out, d, offset, ts[i]->shape[d]);
        ct_status st = slot ? cti_copy(slot, ts[i]) : CT_ERR_INTERNAL;
        ct_decref(slot);
        if (st != CT_OK) {
            ct_decref(out);
            return NULL;
        }
        offset += ts[i]->shape[d];
    }
    return out;
}

ct_tensor *ct_cat(ct_tensor *const *tensors, int n, int dim) {
    ct_tensor *out = cat_impl(tensors, n, dim);
    if (!out) return NULL;
    int d = 0; /* validated by cat; a cat of legacy-empty inputs is 1-D */
    ct_wrap_dim("cat", dim, out->ndim, &d);
    return ct_track(cta_record_join(out, tensors, n, d, false));
}

static bool check_stack_inputs(ct_tensor *const *ts, int n) {
    CT_CHECK_RET(ts != NULL || n == 0, false, CT_ERR_INVALID_ARG, "stack: the tensor list is NULL");
    CT_CHECK_RET(n > 0, false, CT_ERR_INVALID_ARG, "stack expects a non-empty TensorList");
    for (int i = 0; i < n; i++)
        if (!ts[i]) return false;
    for (int i = 1; i < n; i++) {
        bool same = ts[i]->ndim == ts[0]->ndim &&
                    memcmp(ts[i]->shape, ts[0]->shape, (size_t)ts[0]->ndim * sizeof(int64_t)) == 0;
        if (!same) {
            char s0[CT_SHAPE_STR_MAX], si[CT_SHAPE_STR_MAX];
            ct_error_set(CT_ERR_SHAPE,
                         "stack expects each tensor to be equal size, but got %s at entry 0 and %s "
                         "at entry %d",
                         ct_shape_str(ts[0]->shape, ts[0]->ndim, s0, sizeof s0),
                         ct_shape_str(ts[i]->shape, ts[i]->ndim, si, sizeof si), i);
            return false;
        }
    }
    return true;
}

ct_tensor *ct_stack(ct_tensor *const *tensors, int n, int dim) {
    if (!check_stack_inputs(tensors, n)) return NULL;
    int d;
    if (!ct_wrap_dim("stack", dim, tensors[0]->ndim + 1, &d)) return NULL;
    ct_tensor **parts = calloc((size_t)n, sizeof *parts);
    CT_CHECK_NULL(parts, CT_ERR_OOM, "stack: out of memory for %d tensors", n);
    ct_tensor *out = NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) ok = (parts[i] = cti_unsqueeze(tensors[i], d)) != NULL;
    if (ok) out = cat_impl(parts, n, d);
    for (int i = 0; i < n; i++) ct_decref(parts[i]);
    free(parts);
    return ct_track(cta_record_join(out, tensors, n, d, true));
}

/* Make `count` narrow views of a along dim d, each split_size long (the last
 * ones shorter or empty), and hand the first `max` of them to the caller.
 * Returns count, or -1 on error with nothing handed out. */
static int split_views(const ct_tensor *a, int d, int64_t split_size, int64_t count,
                       ct_tensor **out, int max, const char *op) {
    CT_CHECK_RET(count <= INT_MAX, -1, CT_ERR_INVALID_ARG,
                 "%s: %lld chunks do not fit in an int", op, (long long)count);
    CT_CHECK_RET(max >= 0, -1, CT_ERR_INVALID_ARG, "%s: max must be non-negative, got %d", op, max);
    CT_CHECK_RET(out != NULL || max == 0, -1, CT_ERR_INVALID_ARG,
                 "%s: out is NULL but max is %d", op, max);
    const int64_t size = a->shape[d];
    const int made = (int)(count < max ? count : max);
    for (int i = 0; i < made; i++) {
        const int64_t start = (int64_t)i * split_size;
        int64_t length = size - start < split_size ? size - start : split_size;
        out[i] = cta_record_slice(cti_narrow(a, d, start, length), a, d, start, 1, "SplitBackward0");
        if (!out[i]) {
            for (int j = 0; j < i; j++) ct_decref(out[j]), out[j] = NULL;
            return -1;
        }
    }
    for (int i = 0; i < made; i++) out[i] = ct_track(out[i]);
    return (int)count;
}

int ct_split(const ct_tensor *a, int64_t split_size, int dim, ct_tensor **out, int max) {
    if (!a) return -1;
    CT_CHECK_RET(a->ndim > 0, -1, CT_ERR_SHAPE, "split expects at least a 1-dimensional tensor");
    int d;
    if (!ct_wrap_dim("split", dim, a->ndim, &d)) return -1;
    CT_CHECK_RET(split_size >= 0, -1, CT_ERR_INVALID_ARG,
                 "split expects split_size be non-negative, but got split_size=%lld",
                 (long long)split_size);
    const int64_t size = a->shape[d];
    CT_CHECK_RET(split_size > 0 || size == 0, -1, CT_ERR_INVALID_ARG,
                 "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                 (long long)size);
    int64_t count = split_size == 0 ? 1 : size / split_size + (size % split_size != 0);
    if (count < 1) count = 1;
    return split_views(a, d, split_size, count, out, max, "split");
}

int ct_chunk(const ct_tensor *a, int chunks, int dim, ct_tensor **out, int max) {
    if (!a) return -1;
    CT_CHECK_RET(a->ndim > 0, -1, CT_ERR_SHAPE, "chunk expects at least a 1-dimensional tensor");
    CT_CHECK_RET(chunks > 0, -1, CT_ERR_INVALID_ARG,
                 "chunk expects `chunks` to be greater than 0, got: %d", chunks);
    int d;
    if (!ct_wrap_dim("chunk", dim, a->ndim, &d)) return -1;
    const int64_t size = a->shape[d];
    const int64_t split_size = (size + chunks - 1) / chunks;
    /* An empty dim still yields `chunks` empty pieces, as torch.chunk does. */
    int64_t count = size == 0 ? chunks : (size + split_size - 1) / split_size;
    return split_views(a, d, split_size, count, out, max, "chunk");
}
