/*
 * shape.c — shape arithmetic shared by views and ops: element counts,
 * contiguous strides, dim wrapping and broadcasting, with PyTorch's error
 * messages.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int64_t ct_shape_numel(const int64_t *shape, int ndim) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

void ct_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
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

ct_shape ct_shape_make(int ndim, const int64_t *dims) {
    ct_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim < 0 ? 0 : ndim > CT_MAX_DIMS ? CT_MAX_DIMS : ndim;
    for (int i = 0; i < s.ndim; i++) s.dims[i] = dims[i];
    return s;
}
