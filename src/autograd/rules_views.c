/*
 * rules_views.c — recording and backward formulas of the view ops and of
 * the copying conversions (contiguous, clone, to), PyTorch's
 * derivatives.yaml in C.
 *
 * A view's gradient is the output gradient mapped back onto the input's
 * shape: reshaped for reshape-like views, permuted back for permute and
 * transpose, copied into the matching view of a zero tensor for narrow,
 * slice and select, and summed over the broadcast dims for expand. The
 * copies pass the gradient through, cast and moved back for to().
 */
#include <string.h>

#include "rules_util.h"

/* Record out (computed from in) under a one-input node, or return it as it
 * is when nothing needs recording. A result that is the input itself (a
 * no-op contiguous/to) keeps the input's history. *node receives the node
 * (NULL when none was recorded). */
static ct_tensor *record1(ct_tensor *out, const ct_tensor *in, const char *name, ct_backward_fn fn,
                          ct_node **node) {
    const ct_tensor *ins[1] = {in};
    *node = NULL;
    if (out && out != in && in->requires_grad && out->storage == in->storage)
        atomic_store(&out->storage->autograd_view, true); /* see ct_storage.autograd_view */
    if (!out || out == in || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    *node = cta_record(out, name, fn, ins, 1);
    return *node ? out : NULL;
}

/* ---- reshape-like: view, reshape, flatten, unflatten, squeeze, unsqueeze, t of 1-D ---- */

static ct_status reshape_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = cti_reshape(g, n->in[0].shape, n->in[0].ndim);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_record_reshape(ct_tensor *out, const ct_tensor *in, const char *name) {
    ct_node *node;
    return record1(out, in, name, reshape_backward, &node);
}

/* PyTorch names a reshape that had to copy after the _unsafe_view it ends with. */
static const char *reshape_name(const ct_tensor *out, const ct_tensor *in) {
    return out && in && out->storage != in->storage ? "UnsafeViewBackward0" : "ViewBackward0";
}

ct_tensor *cta_view(const ct_tensor *t, const int64_t *shape, int ndim) {
    return cta_record_reshape(cti_view(t, shape, ndim), t, "ViewBackward0");
}

ct_tensor *cta_reshape(const ct_tensor *t, const int64_t *shape, int ndim) {
    ct_tensor *out = cti_reshape(t, shape, ndim);
    return cta_record_reshape(out, t, reshape_name(out, t));
}

ct_tensor *cta_flatten(const ct_tensor *t, int start_dim, int end_dim) {
    ct_tensor *out = cti_flatten(t, start_dim, end_dim);
    return cta_record_reshape(out, t, reshape_name(out, t));
}

ct_tensor *cta_unsqueeze(const ct_tensor *t, int dim) {
    return cta_record_reshape(cti_unsqueeze(t, dim), t, "UnsqueezeBackward0");
}

ct_tensor *cta_squeeze_dim(const ct_tensor *t, int dim) {
    return cta_record_reshape(cti_squeeze_dim(t, dim), t, "SqueezeBackward1");
}

/* ---- permute and transpose ---------------------------------------------------------- */

static ct_status permute_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    int inverse[CT_MAX_DIMS];
    for (int i = 0; i < n->in[0].ndim; i++) inverse[i] = (int)n->iv[i];
    grad_in[0] = cti_permute(g, inverse);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_permute(const ct_tensor *t, const int *dims) {
    ct_node *node;
    ct_tensor *out = record1(cti_permute(t, dims), t, "PermuteBackward0", permute_backward, &node);
    if (node) /* dims were validated by permute */
        for (int i = 0; i < t->ndim; i++) node->iv[dims[i] < 0 ? dims[i] + t->ndim : dims[i]] = i;
    return out;
}

static ct_status transpose_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = cti_transpose(g, (int)n->iv[0], (int)n->iv[1]);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_record_transpose(ct_tensor *out, const ct_tensor *in, int d0, int d1, const char *name) {
    ct_node *node;
    out = record1(out, in, name, transpose_backward, &node);
    if (node) node->iv[0] = d0, node->iv[1] = d1;
    return out;
}

ct_tensor *cta_transpose(const ct_tensor *t, int d0, int d1) {
    return cta_record_transpose(cti_transpose(t, d0, d1), t, d0, d1, "TransposeBackward0");
}

/* ---- narrow, slice, select: the gradient lands in a view of zeros ---------------------- */

/* iv: [0] start, [1] step, [2] 1 for select (the dim is gone); op: the dim. */
static ct_status slice_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_input_meta *in = &n->in[0];
    const int d = n->op;
    const int64_t start = n->iv[0], step = n->iv[1];
    const bool select = n->iv[2] != 0;
    ct_tensor *zeros = cti_full(in->shape, in->ndim, 0.0, in->dtype, in->device);
    if (!zeros) return ct_last_status();
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < in->ndim; i++) {
        if (i == d && select) continue;
        shape[nd] = i == d ? g->shape[d] : in->shape[i];
        strides[nd++] = i == d ? zeros->strides[d] * step : zeros->strides[i];
    }
    ct_tensor *window = ct_tensor_view_of(zeros, shape, strides, nd, start * zeros->strides[d]);
    ct_status st = window ? cti_copy(window, g) : ct_last_status();
    ct_decref(window);
    if (st != CT_OK) {
        ct_decref(zeros);
        return st;
    }
    grad_in[0] = zeros;
    return CT_OK;
}

ct_tensor *cta_record_slice(ct_tensor *out, const ct_tensor *in, int dim, int64_t start, int64_t step,
                            const char *name) {
    ct_node *node;
    out = record1(out, in, name, slice_backward, &node);
    if (node) node->op = dim, node->iv[0] = start, node->iv[1] = step, node->iv[2] = 0;
    return out;
}

ct_tensor *cta_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length) {
    ct_tensor *out = cti_narrow(t, dim, start, length);
    if (!out) return NULL;
    int d = dim < 0 ? dim + t->ndim : dim; /* validated by narrow */
    if (start < 0) start += t->shape[d];
    return cta_record_slice(out, t, d, start, 1, "SliceBackward0");
}

ct_tensor *cta_select(const ct_tensor *t, int dim, int64_t index) {
    ct_node *node;
    ct_tensor *out = record1(cti_select(t, dim, index), t, "SelectBackward0", slice_backward, &node);
    if (node) {
        int d = dim < 0 ? dim + t->ndim : dim; /* validated by select */
        node->op = d;
        node->iv[0] = index < 0 ? index + t->shape[d] : index;
        node->iv[1] = 1;
        node->iv[2] = 1;
    }
    return out;
}

/* ---- expand ------------------------------------------------------------------------------- */

static ct_status expand_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = cta_reduce_to_input(g, &n->in[0]);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_expand(const ct_tensor *t, const int64_t *shape, int ndim) {
    ct_node *node;
    return record1(cti_expand(t, shape, ndim), t, "ExpandBackward0", expand_backward, &node);
}

/* ---- as_strided ---------------------------------------------------------------------------- */

static ct_status as_strided_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    (void)n, (void)g, (void)grad_in;
    return ct_error_set(CT_ERR_UNSUPPORTED, "as_strided backward is not supported (AsStridedBackward0)");
}

ct_tensor *cta_as_strided(const ct_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                          int64_t offset) {
    ct_node *node;
    return record1(cti_as_strided(t, shape, strides, ndim, offset), t, "AsStridedBackward0",
                   as_strided_backward, &node);
}

/* ---- contiguous, clone, to ---------------------------------------------------------------- */

static ct_status identity_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    (void)n;
    grad_in[0] = give(g);
    return CT_OK;
}

ct_tensor *cta_clone(const ct_tensor *t) {
    ct_node *node;
    return record1(cti_clone(t), t, "CloneBackward0", identity_backward, &node);
}

ct_tensor *cta_contiguous(const ct_tensor *t) {
    ct_node *node; /* an already contiguous t comes back as itself: nothing to record */
    return record1(cti_contiguous(t), t, "CloneBackward0", identity_backward, &node);
}

/* The gradient goes back to the input's dtype and device. */
static ct_status to_copy_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    ct_tensor *cast = cti_cast(g, n->in[0].dtype);
    grad_in[0] = cti_to_device(cast, n->in[0].device);
    ct_decref(cast);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_record_to(ct_tensor *out, const ct_tensor *in) {
    ct_node *node;
    return record1(out, in, "ToCopyBackward0", to_copy_backward, &node);
}

ct_tensor *cta_to_dtype(const ct_tensor *t, ct_dtype dtype) { return cta_record_to(cti_cast(t, dtype), t); }
ct_tensor *cta_to_device(const ct_tensor *t, ct_device device) {
    return cta_record_to(cti_to_device(t, device), t);
}
