/*
 * shape.c — shape arithmetic shared by views and ops: element counts,
 * contiguous strides, dim wrapping and broadcasting, with PyTorch's error
 * messages.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Every tensor's sizes satisfy ct_shape_check, so the product of its sizes
 * with zeros counted as ones fits in int64: neither the element count nor a
 * contiguous stride can overflow. The arithmetic below is still written so
 * that it is defined for any input (zero first, then a saturating product). */
int64_t ct_shape_numel(const int64_t *shape, int ndim) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 0;
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(n, shape[i], &n)) return INT64_MAX;
    return n;
}

void ct_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        if (__builtin_mul_overflow(s, shape[i] > 1 ? shape[i] : 1, &s)) s = INT64_MAX;
    }
}

/* PyTorch computes contiguous strides from the innermost dim outwards with
 * empty dims counted as 1 ("Stride calculation overflowed"), and the element
 * count over all dims ("numel: integer multiplication overflow"). Counting
 * zeros as ones makes the check independent of where a zero sits, so a
 * zero-element shape whose other sizes multiply past INT64_MAX is refused
 * too, as its strides would overflow. */
bool ct_shape_check(const char *op, const int64_t *shape, int ndim, int64_t *numel) {
    char buf[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(ndim >= 0 && ndim <= CT_MAX_DIMS, false, CT_ERR_SHAPE,
                 "%s: tensors have at most %d dimensions, got %d", op, CT_MAX_DIMS, ndim);
    CT_CHECK_RET(shape || ndim == 0, false, CT_ERR_INVALID_ARG, "%s: NULL sizes for %d dimensions", op, ndim);
    for (int i = 0; i < ndim; i++)
        CT_CHECK_RET(shape[i] >= 0, false, CT_ERR_SHAPE,
                     "%s: Trying to create tensor with negative dimension %lld: %s", op, (long long)shape[i],
                     ct_shape_str(shape, ndim, buf, sizeof buf));
    int64_t span = 1;
    bool empty = false;
    for (int i = 0; i < ndim; i++) empty |= shape[i] == 0;
    for (int i = ndim - 1; i >= 0; i--) {
        if (!__builtin_mul_overflow(span, shape[i] > 1 ? shape[i] : 1, &span)) continue;
        /* dims 1.. make the strides; dim 0 only the element count, which
         * cannot overflow for an empty tensor */
        ct_error_set(CT_ERR_SHAPE, "%s: %s: the sizes %s multiply past INT64_MAX (zero sizes count as one)", op,
                     i > 0 || empty ? "Stride calculation overflowed" : "numel: integer multiplication overflow",
                     ct_shape_str(shape, ndim, buf, sizeof buf));
        return false;
    }
    if (numel) *numel = ct_shape_numel(shape, ndim);
    return true;
}

bool ct_tensor_is_contiguous(const ct_tensor *t) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return true;
        if (t->shape[i] != 1 && t->strides[i] != expected) return false;
        expected *= t->shape[i];
    }
    return true;
}

bool ct_wrap_dim(const char *op, int dim, int ndim, int *out) {
    int n = ndim > 0 ? ndim : 1; /* a 0-dim tensor accepts dim 0 and -1 */
    if (dim < -n || dim >= n) {
        ct_error_set(CT_ERR_INDEX,
                     "%s: Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                     op, -n, n - 1, dim);
        return false;
    }
    *out = dim < 0 ? dim + n : dim;
    return true;
}

const char *ct_shape_str(const int64_t *shape, int ndim, char *buf, size_t size) {
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

bool ct_broadcast_shapes(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                         int64_t *out, int *nout) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            ct_error_set(CT_ERR_SHAPE,
                         "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) "
                         "at non-singleton dimension %d",
                         op, (long long)sa, (long long)sb, i);
            return false;
        }
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return true;
}

void ct_broadcast_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides) {
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        strides[i] = (it < 0 || t->shape[it] != shape[i]) ? 0 : t->strides[it];
    }
}

const char *ct_device_str(ct_device d, char *buf, size_t size) { return ct_device_format(d, buf, size); }

bool ct_check_same_device(const char *op, const ct_tensor *const *ts, int n) {
    const ct_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!first) { first = ts[i]; continue; }
        if (!ct_device_equal(first->storage->device, ts[i]->storage->device)) {
            char a[32], b[32];
            ct_error_set(CT_ERR_DEVICE,
                         "%s: Expected all tensors to be on the same device, but found at least two "
                         "devices, %s and %s!",
                         op, ct_device_format(first->storage->device, a, sizeof a),
                         ct_device_format(ts[i]->storage->device, b, sizeof b));
            return false;
        }
    }
    return true;
}

/* A bad request gives ndim -1, which every function taking a shape refuses,
 * so ct_empty(ct_shape_make(n, dims)) fails cleanly with this message. */
ct_shape ct_shape_make(int ndim, const int64_t *dims) {
    ct_shape s;
    memset(&s, 0, sizeof s);
    if (ndim < 0 || ndim > CT_MAX_DIMS || (!dims && ndim > 0)) {
        if (ndim < 0 || ndim > CT_MAX_DIMS)
            ct_error_set(CT_ERR_SHAPE, "shape_make: ndim must be in [0, %d], got %d", CT_MAX_DIMS, ndim);
        else
            ct_error_set(CT_ERR_INVALID_ARG, "shape_make: NULL dims for ndim %d", ndim);
        s.ndim = -1;
        return s;
    }
    s.ndim = ndim;
    for (int i = 0; i < s.ndim; i++) s.dims[i] = dims[i];
    return s;
}
