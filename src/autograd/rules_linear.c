/*
 * rules_linear.c — F.linear (y = x Wᵀ + b) as one recorded op, the layer
 * every MLP and classifier head runs: one GEMM forward, two GEMMs and a
 * column sum backward, with no transposed copies materialised.
 */
#include "rules_util.h"

/* x [*, in] seen as a matrix [rows, in] (a view when possible). */
static ct_tensor *as_rows(const ct_tensor *x) {
    int64_t shape[2] = {-1, x->ndim ? x->shape[x->ndim - 1] : 1};
    return cti_reshape(x, shape, 2);
}

static ct_status linear_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *w = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *g2 = own(&s, as_rows(g));
    if (n->in[0].needs_grad) /* dx = g W */
        grad_in[0] = g2 ? cti_reshape(own(&s, cti_matmul(g2, w)), n->in[0].shape, n->in[0].ndim) : NULL;
    if (n->in[1].needs_grad) { /* dW = gᵀ x */
        const ct_tensor *x2 = own(&s, as_rows(x));
        const ct_tensor *gt = g2 ? own(&s, cti_transpose(g2, 0, 1)) : NULL;
        grad_in[1] = gt && x2 ? cti_matmul(gt, x2) : NULL;
    }
    if (n->in[2].needs_grad) { /* db = column sums of g */
        int dim0 = 0;
        grad_in[2] = g2 ? cti_reduce(CT_RED_SUM, g2, &dim0, 1, false, 0) : NULL;
    }
    scratch_free(&s);
    for (int i = 0; i < 3; i++)
        if (n->in[i].needs_grad && !grad_in[i]) return ct_last_status();
    return CT_OK;
}

ct_tensor *cti_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b) {
    if (!x || !w) return NULL;
    CT_CHECK_NULL(w->ndim == 2, CT_ERR_SHAPE, "linear: weight must be 2-D [out_features, in_features], got %d-D", w->ndim);
    CT_CHECK_NULL(x->ndim >= 1 && x->shape[x->ndim - 1] == w->shape[1], CT_ERR_SHAPE,
                  "linear: mat1 and mat2 shapes cannot be multiplied (input has %lld features, weight expects %lld)",
                  x->ndim ? (long long)x->shape[x->ndim - 1] : 0LL, (long long)w->shape[1]);
    ct_tensor *wt = cti_transpose(w, 0, 1);
    ct_tensor *y = wt ? cti_matmul(x, wt) : NULL;
    ct_decref(wt);
    if (y && b) {
        CT_CHECK_NULL(b->ndim == 1 && b->shape[0] == w->shape[0], CT_ERR_SHAPE,
                      "linear: bias must have shape [%lld], got %d-D", (long long)w->shape[0], b->ndim);
        ct_tensor *yb = cti_binary(CT_BIN_ADD, y, b, 1.0);
        ct_decref(y);
        y = yb;
    }
    return y;
}

ct_tensor *cta_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b) {
    ct_tensor *out = cti_linear(x, w, b);
    const ct_tensor *ins[3] = {x, w, b};
    if (!out || !cta_needs_grad(ins, 3)) return out;
    ct_node *node = cta_record(out, b ? "AddmmBackward0" : "MmBackward0", linear_backward, ins, 3);
    if (!node) return NULL;
    if (cta_save(node, 0, x) || cta_save(node, 1, w)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}
