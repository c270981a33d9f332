/*
 * rules_reduce.c — recording and backward formulas of reductions, matmul
 * and softmax.
 *
 * A reduction's gradient is the output gradient broadcast back over the
 * reduced dimensions (scaled for mean, masked for max/min with ties sharing
 * equally, (x - mean) weighted for var). Matmul's are the two transposed
 * products, summed back over broadcast batch dimensions.
 */
#include <string.h>

#include "rules_util.h"

/* g reshaped with the reduced dims kept (size 1), ready to broadcast. */
static const ct_tensor *keepdim_view(scratch *s, const ct_tensor *g, const ct_node *n) {
    if (n->iv[CT_MAX_DIMS]) return g; /* keepdim: already there */
    int64_t shape[CT_MAX_DIMS];
    const ct_input_meta *in = &n->in[0];
    for (int d = 0; d < in->ndim; d++) shape[d] = n->iv[d] ? 1 : in->shape[d];
    return own(s, cti_reshape(g, shape, in->ndim));
}

static int64_t reduced_count(const ct_node *n) {
    int64_t c = 1;
    for (int d = 0; d < n->in[0].ndim; d++)
        if (n->iv[d]) c *= n->in[0].shape[d];
    return c;
}

static ct_status reduce_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *y = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *gk = keepdim_view(&s, g, n);
    const ct_input_meta *in = &n->in[0];
    const ct_tensor *full = NULL;
    switch ((ct_reduce_op)n->op) {
    case CT_RED_SUM: full = gk; break;
    case CT_RED_MEAN: full = MULS(&s, gk, 1.0 / (double)reduced_count(n)); break;
    case CT_RED_PROD: full = MUL(&s, gk, DIV(&s, keepdim_view(&s, y, n), x)); break; /* nonzero inputs */
    case CT_RED_MAX:
    case CT_RED_MIN: { /* evenly among the elements equal to the extreme */
        const ct_tensor *mask = CMP(&s, CT_BIN_EQ, x, keepdim_view(&s, y, n));
        int dims[CT_MAX_DIMS], nd = 0;
        for (int d = 0; d < in->ndim; d++)
            if (n->iv[d]) dims[nd++] = d;
        const ct_tensor *cnt = own(&s, cti_reduce(CT_RED_SUM, own(&s, cti_cast(mask, x->dtype)), dims, nd, true, 0));
        full = DIV(&s, MUL(&s, gk, mask), cnt);
        break;
    }
    case CT_RED_VAR: { /* 2 (x - mean) / (N - correction) */
        int dims[CT_MAX_DIMS], nd = 0;
        for (int d = 0; d < in->ndim; d++)
            if (n->iv[d]) dims[nd++] = d;
        const ct_tensor *mean = own(&s, cti_reduce(CT_RED_MEAN, x, dims, nd, true, 0));
        full = MUL(&s, gk, MULS(&s, SUB(&s, x, mean), 2.0 / ((double)reduced_count(n) - n->d[0])));
        break;
    }
    default:
        ct_error_set(CT_ERR_UNSUPPORTED, "%s: this reduction has no gradient", n->name);
        s.failed = true;
    }
    if (!s.failed) full = own(&s, cti_expand(full, in->shape, in->ndim)); /* over the reduced dims */
    if (!s.failed) grad_in[0] = cta_reduce_to_input(full, in);
    scratch_free(&s);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static const char *reduce_node_name(ct_reduce_op op) {
    switch (op) {
    case CT_RED_SUM: return "SumBackward1";
    case CT_RED_MEAN: return "MeanBackward1";
    case CT_RED_PROD: return "ProdBackward1";
    case CT_RED_MAX: return "AmaxBackward0";
    case CT_RED_MIN: return "AminBackward0";
    case CT_RED_VAR: return "VarBackward0";
    default: return NULL; /* argmax/argmin: integer results */
    }
}

ct_tensor *cta_record_reduce(ct_tensor *out, ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims,
                             bool keepdim, double param) {
    const ct_tensor *ins[1] = {a};
    const char *name = reduce_node_name(op);
    if (!out || !name || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    ct_node *node = cta_record(out, name, reduce_backward, ins, 1);
    if (!node) return NULL;
    node->op = op;
    node->d[0] = param;
    for (int d = 0; d < a->ndim; d++) node->iv[d] = ndims == 0; /* no dims: all reduced */
    for (int i = 0; i < ndims; i++) {
        int d = dims[i] < 0 ? dims[i] + a->ndim : dims[i]; /* validated by the op */
        if (d >= 0 && d < a->ndim) node->iv[d] = 1;
    }
    node->iv[CT_MAX_DIMS] = keepdim && ndims > 0;
    if (cta_save(node, 0, a) || cta_save(node, 1, out)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *cta_reduce(ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims, bool keepdim, double param) {
    return cta_record_reduce(cti_reduce(op, a, dims, ndims, keepdim, param), op, a, dims, ndims, keepdim, param);
}

/* ---- matmul --------------------------------------------------------------------------- */

static const ct_tensor *mT(scratch *s, const ct_tensor *t) { return own(s, cti_transpose(t, -2, -1)); }

/* a 1-D operand as the 2-D matrix matmul used: [1, K] on the left, [K, 1] on the right */
static const ct_tensor *as_matrix(scratch *s, const ct_tensor *t, bool left) {
    if (t->ndim != 1) return t;
    int64_t shape[2] = {left ? 1 : t->shape[0], left ? t->shape[0] : 1};
    return own(s, cti_reshape(t, shape, 2));
}

/* Sum a gradient computed for the 2-D form back to the input's real shape. */
static ct_tensor *to_input(scratch *s, const ct_tensor *grad, const ct_tensor *matrix_form, const ct_input_meta *in) {
    ct_input_meta m = *in;
    m.ndim = matrix_form->ndim;
    memcpy(m.shape, matrix_form->shape, sizeof m.shape);
    const ct_tensor *r = own(s, cta_reduce_to_input(grad, &m));
    return r ? cti_reshape(r, in->shape, in->ndim) : NULL;
}

static ct_status matmul_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *a = cta_saved(n, 0), *b = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *a2 = as_matrix(&s, a, true), *b2 = as_matrix(&s, b, false);
    const ct_tensor *g2 = g;
    /* put back the dims matmul dropped for 1-D operands: M for a, N for b */
    if (a->ndim == 1) g2 = own(&s, cti_unsqueeze(g2, g2->ndim - (b->ndim == 1 ? 0 : 1)));
    if (b->ndim == 1) g2 = own(&s, cti_unsqueeze(g2, g2->ndim));
    if (!s.failed && n->in[0].needs_grad) grad_in[0] = to_input(&s, own(&s, cti_matmul(g2, mT(&s, b2))), a2, &n->in[0]);
    if (!s.failed && n->in[1].needs_grad) grad_in[1] = to_input(&s, own(&s, cti_matmul(mT(&s, a2), g2)), b2, &n->in[1]);
    scratch_free(&s);
    return s.failed || (n->in[0].needs_grad && !grad_in[0]) || (n->in[1].needs_grad && !grad_in[1]) ? ct_last_status()
                                                                                                      : CT_OK;
}

ct_tensor *cta_matmul(const ct_tensor *a, const ct_tensor *b) {
    ct_tensor *out = cti_matmul(a, b);
    const ct_tensor *ins[2] = {a, b};
    if (!out || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 2)) return out;
    ct_node *node = cta_record(out, "MmBackward0", matmul_backward, ins, 2);
    if (!node) return NULL;
    if (cta_save(node, 0, a) || cta_save(node, 1, b)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* ---- softmax ---------------------------------------------------------------------------- */

static ct_status softmax_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *y = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    int dim = n->op;
    const ct_tensor *gx;
    if (n->d[0] != 0) { /* log_softmax: g - exp(y) * sum(g) */
        const ct_tensor *sg = own(&s, cti_reduce(CT_RED_SUM, g, &dim, 1, true, 0));
        gx = SUB(&s, g, MUL(&s, UN(&s, CT_UN_EXP, y), sg));
    } else { /* softmax: y * (g - sum(g * y)) */
        const ct_tensor *sgy = own(&s, cti_reduce(CT_RED_SUM, MUL(&s, g, y), &dim, 1, true, 0));
        gx = MUL(&s, y, SUB(&s, g, sgy));
    }
    if (!s.failed) grad_in[0] = cta_reduce_to_input(gx, &n->in[0]);
    scratch_free(&s);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_softmax(const ct_tensor *a, int dim, bool log) {
    ct_tensor *out = cti_softmax(a, dim, log);
    const ct_tensor *ins[1] = {a};
    if (!out || !cta_needs_grad(ins, 1)) return out;
    ct_node *node = cta_record(out, log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", softmax_backward, ins, 1);
    if (!node) return NULL;
    int d = 0;
    ct_wrap_dim("softmax", dim, a->ndim, &d);
    node->op = d;
    node->d[0] = log;
    if (cta_save(node, 0, out)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}
