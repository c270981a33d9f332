/*
 * rules_join.c — recording and backward formulas of cat, stack,
 * index_select and gather.
 *
 * cat and stack may join more inputs than a node holds edges
 * (CT_NODE_MAX_INPUTS): the inputs are then grouped under intermediate
 * nodes, each owning the narrow slab of the output its group filled, so
 * the gradient is split slab by slab. The index ops' gradients (an
 * index_add / scatter_add) are composed from existing ops: a one-hot
 * matrix (index == arange) multiplied with the gradient, which runs on
 * every backend.
 */
#include <string.h>

#include "rules_util.h"

/* ---- cat and stack ------------------------------------------------------------------- */

/* PyTorch's legacy rule: 1-D [0] inputs take no part in a cat. */
static bool is_legacy_empty(const ct_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* op: the dim; iv[i]: input i's extent along it (-1: a skipped legacy-empty input). */
static ct_status cat_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    int64_t offset = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const ct_input_meta *in = &n->in[i];
        const int64_t extent = n->iv[i];
        if (in->needs_grad) {
            ct_tensor *piece = extent < 0 ? cti_full(in->shape, in->ndim, 0.0, in->dtype, in->device)
                                          : cti_narrow(g, n->op, offset, extent);
            grad_in[i] = cti_cast(piece, in->dtype);
            ct_decref(piece);
            if (!grad_in[i]) return ct_last_status();
        }
        if (extent > 0) offset += extent;
    }
    return CT_OK;
}

/* op: the new dim; input i is the slice at index i. */
static ct_status stack_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    for (int i = 0; i < n->n_inputs; i++) {
        if (!n->in[i].needs_grad) continue;
        ct_tensor *piece = cti_select(g, n->op, i);
        grad_in[i] = cti_cast(piece, n->in[i].dtype);
        ct_decref(piece);
        if (!grad_in[i]) return ct_last_status();
    }
    return CT_OK;
}

static int64_t join_extent(const ct_tensor *t, int d, bool stack) {
    if (stack) return 1;
    return is_legacy_empty(t) ? -1 : t->shape[d];
}

/* Record how out (the slab of the result along d that ts[0..n) filled) was
 * joined. Groups of inputs hang under nodes of their own when n exceeds a
 * node's edges; the node of out then splits the gradient slab by slab. */
static ct_status record_join(ct_tensor *out, ct_tensor *const *ts, int n, int d, bool stack, const char *name) {
    const ct_tensor *const *ins = (const ct_tensor *const *)ts;
    if (!cta_needs_grad(ins, n)) return CT_OK;
    if (n <= CT_NODE_MAX_INPUTS) {
        ct_node *node = cta_record(ct_retain(out), name, stack ? stack_backward : cat_backward, ins, n);
        if (!node) return ct_last_status();
        ct_decref(out); /* drop the reference cta_record would have released on failure */
        node->op = d;
        for (int i = 0; i < n; i++) node->iv[i] = join_extent(ts[i], d, stack);
        return CT_OK;
    }
    const int per_group = (n + CT_NODE_MAX_INPUTS - 1) / CT_NODE_MAX_INPUTS;
    ct_tensor *slabs[CT_NODE_MAX_INPUTS] = {NULL};
    int64_t extents[CT_NODE_MAX_INPUTS];
    int n_slabs = 0;
    int64_t offset = 0;
    ct_status st = CT_OK;
    for (int first = 0; first < n && st == CT_OK; first += per_group, n_slabs++) {
        const int count = n - first < per_group ? n - first : per_group;
        int64_t extent = 0;
        for (int i = first; i < first + count; i++) {
            int64_t e = join_extent(ts[i], d, stack);
            if (e > 0) extent += e;
        }
        extents[n_slabs] = extent;
        slabs[n_slabs] = cti_narrow(out, d, offset, extent);
        st = slabs[n_slabs] ? record_join(slabs[n_slabs], ts + first, count, d, stack, name) : ct_last_status();
        offset += extent;
    }
    if (st == CT_OK) {
        ct_node *node = cta_record(ct_retain(out), name, cat_backward, (const ct_tensor *const *)slabs, n_slabs);
        if (node) {
            ct_decref(out);
            node->op = d;
            for (int i = 0; i < n_slabs; i++) node->iv[i] = extents[i];
        } else {
            st = ct_last_status();
        }
    }
    for (int i = 0; i < n_slabs; i++) ct_decref(slabs[i]); /* their nodes live on as edges */
    return st;
}

ct_tensor *cta_record_join(ct_tensor *out, ct_tensor *const *ts, int n, int dim, bool stack) {
    if (!out || !ct_dtype_is_floating(out->dtype)) return out;
    if (record_join(out, ts, n, dim, stack, stack ? "StackBackward0" : "CatBackward0") != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* ---- index_select and gather ------------------------------------------------------------- */

/* [0, 1, …, k-1] as int64 on dev. */
static ct_tensor *arange_on(int64_t k, ct_device dev) {
    ct_tensor *t = cti_empty(&k, 1, CT_INT64, dev);
    if (!t || k == 0) return t;
    ct_kview v = ct_kview_of(t);
    if (CTI_BACKEND_CALL(t, arange, "arange", &v, 0.0, 1.0) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return t;
}

/* The permutation that moves dim d of an nd-dim tensor last, and its inverse. */
static void move_last(int d, int nd, int *perm, int *inverse) {
    for (int i = 0, j = 0; i < nd; i++)
        if (i != d) perm[j++] = i;
    perm[nd - 1] = d;
    for (int i = 0; i < nd; i++) inverse[perm[i]] = i;
}

/* one_hot[..., k] = (index[...] == k) for k < size, in dtype on index's device. */
static const ct_tensor *one_hot(scratch *s, const ct_tensor *index, int64_t size, ct_dtype dtype) {
    const ct_tensor *ks = own(s, arange_on(size, index->storage->device));
    const ct_tensor *eq = CMP(s, CT_BIN_EQ, own(s, cti_unsqueeze(index, index->ndim)), ks);
    return own(s, cti_cast(eq, dtype));
}

/* iv[0]: 1 when the input was 0-dim. op: the dim. saved[0]: the int64 index. */
static ct_status index_select_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *index = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    const ct_input_meta *in = &n->in[0];
    if (in->ndim == 0) { /* the only valid index is 0: the gradient passes through */
        grad_in[0] = cti_reshape(g, in->shape, 0);
        return grad_in[0] ? CT_OK : ct_last_status();
    }
    scratch s = {0};
    int perm[CT_MAX_DIMS], inverse[CT_MAX_DIMS];
    move_last(n->op, in->ndim, perm, inverse);
    int64_t count = ct_shape_numel(index->shape, index->ndim);
    const ct_tensor *flat_index = own(&s, cti_reshape(index, &count, 1));
    const ct_tensor *hot = one_hot(&s, flat_index, in->shape[n->op], g->dtype); /* [count, size] */
    const ct_tensor *g_last = own(&s, cti_permute(g, perm));                    /* [..., count] */
    const ct_tensor *summed = own(&s, cti_matmul(g_last, hot));                 /* [..., size] */
    if (!s.failed) grad_in[0] = cti_permute(summed, inverse);
    scratch_free(&s);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_record_index_select(ct_tensor *out, const ct_tensor *a, int dim, const ct_tensor *index) {
    const ct_tensor *ins[1] = {a};
    if (!out || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    ct_node *node = cta_record(out, "IndexSelectBackward0", index_select_backward, ins, 1);
    if (!node) return NULL;
    node->op = dim;
    if (cta_save(node, 0, index)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* grad[..., k, ...] = sum_j g[..., j, ...] * (index[..., j, ...] == k), over the
 * extent of index, zero beyond it. op: the dim. saved[0]: the index. */
static ct_status gather_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *index = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    const ct_input_meta *in = &n->in[0];
    scratch s = {0};
    if (in->ndim == 0) { /* every index is 0: all of g lands on the one element */
        const ct_tensor *total = own(&s, cti_reduce(CT_RED_SUM, g, NULL, 0, false, 0));
        if (!s.failed) grad_in[0] = cti_reshape(total, in->shape, 0);
        scratch_free(&s);
        return grad_in[0] ? CT_OK : ct_last_status();
    }
    const int nd = in->ndim, d = n->op;
    int64_t index_shape[CT_MAX_DIMS];
    for (int i = 0; i < nd; i++) index_shape[i] = index->ndim ? index->shape[i] : 1; /* 0-dim: [1] */
    int perm[CT_MAX_DIMS], inverse[CT_MAX_DIMS];
    move_last(d, nd, perm, inverse);
    const ct_tensor *g_last = own(&s, cti_permute(own(&s, cti_reshape(g, index_shape, nd)), perm));
    const ct_tensor *i_last = own(&s, cti_permute(own(&s, cti_reshape(index, index_shape, nd)), perm));
    const ct_tensor *hot = s.failed ? NULL : one_hot(&s, i_last, in->shape[d], g->dtype); /* [..., J, K] */
    const ct_tensor *row = s.failed ? NULL : own(&s, cti_unsqueeze(g_last, nd - 1));      /* [..., 1, J] */
    const ct_tensor *summed = s.failed ? NULL : own(&s, cti_matmul(row, hot));            /* [..., 1, K] */
    const ct_tensor *back = s.failed ? NULL : own(&s, cti_permute(own(&s, cti_squeeze_dim(summed, nd - 1)), inverse));
    ct_tensor *grad = s.failed ? NULL : cti_full(in->shape, in->ndim, 0.0, in->dtype, in->device);
    if (grad) { /* index may be smaller than the input in the other dims */
        ct_tensor *window = ct_tensor_view_of(grad, back->shape, grad->strides, nd, 0);
        ct_status st = window ? cti_copy(window, back) : ct_last_status();
        ct_decref(window);
        if (st != CT_OK) ct_decref(grad), grad = NULL;
    }
    scratch_free(&s);
    grad_in[0] = grad;
    return grad ? CT_OK : ct_last_status();
}

ct_tensor *cta_record_gather(ct_tensor *out, const ct_tensor *a, int dim, const ct_tensor *index) {
    const ct_tensor *ins[1] = {a};
    if (!out || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    ct_node *node = cta_record(out, "GatherBackward0", gather_backward, ins, 1);
    if (!node) return NULL;
    node->op = dim;
    if (cta_save(node, 0, index)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}
