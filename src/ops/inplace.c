/*
 * inplace.c — PyTorch's trailing-underscore ops (x.add_(y), x.relu_(),
 * x.clamp_(lo, hi), x.copy_(y), x.fill_(v), x.zero_()) and the out= forms
 * (torch.add(a, b, out=c)).
 *
 * Both write into a tensor that already exists, and share three rules:
 *  - aliasing, as PyTorch: a destination whose elements share memory (an
 *    expanded view) is refused, and so is an input that partly overlaps it;
 *  - versions: every write bumps the storage's version counter, so that a
 *    value autograd saved before the write refuses to be used by backward
 *    instead of giving a wrong gradient (PyTorch's "modified by an inplace
 *    operation");
 *  - autograd: out= forms record nothing, and PyTorch refuses them when an
 *    argument requires grad. In-place ops record by rebasing the tensor's
 *    history: the op is recorded out of place on a handle that carries the
 *    tensor's old history, its result is written into the tensor, and the
 *    tensor takes the new node as its grad_fn. Values that node saved in
 *    the storage being written are copied first, so its backward still sees
 *    the old values. In grad mode a leaf that requires grad may not change
 *    in place, and a tensor that shares its storage with views that have
 *    history is refused: PyTorch rebases those views (CopySlices), ctorch
 *    does not.
 * Without recording (no grad mode, or nothing requires grad) the kernels
 * write straight into the tensor, which is what optimizers and inference
 * code want.
 */
#include <math.h>
#include <string.h>

#include "../autograd/autograd.h"

/* ---- shared checks --------------------------------------------------------------- */

/* The 0-dim CPU operand of an op on a device tensor, moved there (PyTorch
 * allows CPU scalars as operands of device ops); *moved is what to release. */
static const ct_tensor *onto_device_of(const ct_tensor *t, const ct_tensor *self, ct_tensor **moved) {
    *moved = NULL;
    if (t->ndim != 0 || t->storage->device.type != CT_DEVICE_CPU ||
        ct_device_equal(t->storage->device, self->storage->device))
        return t;
    *moved = cti_to_device(t, self->storage->device);
    return *moved;
}

/* May autograd record a write into self? (called when it must) */
static ct_status check_may_record(const char *op, const ct_tensor *self) {
    CT_CHECK_STATUS(!(self->requires_grad && !self->grad_fn), CT_ERR_STATE,
                    "%s: a leaf Variable that requires grad is being used in an in-place operation. (Change "
                    "parameters under CT_NO_GRAD, as torch.no_grad().)", op);
    if (!atomic_load(&self->storage->autograd_view)) return CT_OK;
    const ct_node *n = self->grad_fn;
    if (n && n->n_inputs == 1 && n->leaf[0] && n->leaf[0]->storage == self->storage)
        return ct_error_set(CT_ERR_STATE,
                            "%s: a view of a leaf Variable that requires grad is being used in an in-place "
                            "operation.", op);
    return ct_error_set(CT_ERR_UNSUPPORTED,
                        "%s: this tensor shares its memory with a view that has autograd history (it is a view, "
                        "or a view was taken of it), and an in-place op in grad mode would have to rebase that "
                        "view's history (PyTorch's CopySlices), which ctorch does not do. Use the out-of-place op "
                        "(y = ct_add(x, other)), or write under CT_NO_GRAD if no gradient flows through it.", op);
}

/* The aliasing rules, then: does this write need recording (grad mode, and
 * self or the source requires grad), and may it be recorded? */
static ct_status check_write(const char *op, const ct_tensor *self, const ct_tensor *src, bool *record) {
    CT_TRY(cti_check_write(op, self, src));
    const ct_tensor *ins[2] = {self, src};
    *record = cta_needs_grad(ins, src ? 2 : 1);
    return *record ? check_may_record(op, self) : CT_OK;
}

/* ---- rebasing history ------------------------------------------------------------ */

/* A handle on self's values that carries self's history (grad_fn, or the
 * absence of one): the input the recorded out-of-place op starts from. */
static ct_tensor *history_handle(const ct_tensor *self) {
    ct_tensor *h = ct_tensor_view_of(self, self->shape, self->strides, self->ndim, self->offset);
    if (!h) return NULL;
    h->requires_grad = self->requires_grad;
    h->grad_fn = self->grad_fn;
    if (h->grad_fn) atomic_fetch_add(&h->grad_fn->refcount, 1);
    return h;
}

/* Write res (the recorded out-of-place result, consumed) into self and make
 * its node self's grad_fn. */
static ct_status commit(const char *op, ct_tensor *self, ct_tensor *res) {
    if (!res) return ct_last_status();
    ct_status st = cti_check_into(op, self, res->shape, res->ndim, res->dtype);
    if (st == CT_OK && res->grad_fn) st = cta_unshare_saved(res->grad_fn, self->storage);
    if (st == CT_OK) st = cti_copy(self, res);
    if (st == CT_OK) ct_tensor_bump_version(self);
    if (st == CT_OK && res->grad_fn) st = cta_resave_as(res->grad_fn, res->storage, self);
    if (st == CT_OK && res->grad_fn) {
        ct_node *old = self->grad_fn;
        self->grad_fn = res->grad_fn;
        self->requires_grad = true;
        res->grad_fn = NULL;
        if (old) cta_node_release(old);
    }
    ct_decref(res);
    return st;
}

/* ---- the ops ---------------------------------------------------------------------- */

typedef enum { IP_UNARY, IP_BINARY, IP_SCALAR } inplace_kind;

typedef struct inplace_op {
    const char *name; /* "add_" */
    inplace_kind kind;
    int op;           /* ct_unary_op or ct_binary_op */
    double p0, p1;    /* unary parameters; the scalar; add's alpha */
} inplace_op;

static ct_tensor *recorded(const inplace_op *o, const ct_tensor *self, const ct_tensor *other) {
    switch (o->kind) {
    case IP_UNARY: return cta_unary((ct_unary_op)o->op, self, o->p0, o->p1);
    case IP_BINARY: return cta_binary((ct_binary_op)o->op, self, other, o->p0);
    case IP_SCALAR: return cta_binary_scalar((ct_binary_op)o->op, self, o->p0);
    }
    return NULL;
}

static ct_status direct(const inplace_op *o, ct_tensor *self, const ct_tensor *other) {
    switch (o->kind) {
    case IP_UNARY: return cti_unary_into(o->name, (ct_unary_op)o->op, self, self, o->p0, o->p1);
    case IP_SCALAR: return cti_binary_scalar_into(o->name, (ct_binary_op)o->op, self, self, o->p0);
    case IP_BINARY: break;
    }
    ct_tensor *moved;
    const ct_tensor *b = onto_device_of(other, self, &moved);
    ct_status st = b ? cti_binary_into(o->name, (ct_binary_op)o->op, self, self, b, o->p0) : ct_last_status();
    ct_decref(moved);
    return st;
}

static ct_status apply(const inplace_op *o, ct_tensor *self, const ct_tensor *other) {
    if (!self || (o->kind == IP_BINARY && !other)) return ct_error_null_input(o->name);
    if (other && !(other->ndim == 0 && other->storage->device.type == CT_DEVICE_CPU)) {
        const ct_tensor *both[2] = {self, other}; /* only a CPU scalar may come from elsewhere */
        if (!ct_check_same_device(o->name, both, 2)) return ct_last_status();
    }
    bool record;
    CT_TRY(check_write(o->name, self, other, &record));
    if (!record) {
        CT_TRY(direct(o, self, other));
        ct_tensor_bump_version(self);
        return CT_OK;
    }
    ct_tensor *h = history_handle(self);
    ct_tensor *res = h ? recorded(o, h, other) : NULL;
    ct_decref(h);
    if (res && res->dtype != self->dtype && cti_can_cast(res->dtype, self->dtype)) {
        /* recorded as a conversion too, so gradients arrive in the node's dtype */
        ct_tensor *converted = cta_to_dtype(res, self->dtype);
        ct_decref(res);
        res = converted;
    }
    return commit(o->name, self, res);
}

#define BINARY_(fn, nm, binop)                                                      \
    ct_status fn(ct_tensor *self, const ct_tensor *other) {                        \
        const inplace_op o = {nm, IP_BINARY, binop, 1.0, 0.0};                      \
        return apply(&o, self, other);                                              \
    }
#define SCALAR_(fn, nm, binop)                                                      \
    ct_status fn(ct_tensor *self, double s) {                                       \
        const inplace_op o = {nm, IP_SCALAR, binop, s, 0.0};                        \
        return apply(&o, self, NULL);                                               \
    }
BINARY_(ct_add_, "add_", CT_BIN_ADD)
BINARY_(ct_sub_, "sub_", CT_BIN_SUB)
BINARY_(ct_mul_, "mul_", CT_BIN_MUL)
BINARY_(ct_div_, "div_", CT_BIN_DIV)
SCALAR_(ct_add_scalar_, "add_", CT_BIN_ADD)
SCALAR_(ct_sub_scalar_, "sub_", CT_BIN_SUB)
SCALAR_(ct_mul_scalar_, "mul_", CT_BIN_MUL)
SCALAR_(ct_div_scalar_, "div_", CT_BIN_DIV)

ct_status ct_add_scaled_(ct_tensor *self, const ct_tensor *other, double alpha) {
    const inplace_op o = {"add_", IP_BINARY, CT_BIN_ADD, alpha, 0.0};
    return apply(&o, self, other);
}

ct_status ct_relu_(ct_tensor *self) {
    const inplace_op o = {"relu_", IP_UNARY, CT_UN_RELU, 0.0, 0.0};
    return apply(&o, self, NULL);
}

ct_status ct_clamp_(ct_tensor *self, double lo, double hi) {
    const inplace_op o = {"clamp_", IP_UNARY, CT_UN_CLAMP, lo, hi};
    return apply(&o, self, NULL);
}

/* ---- copy_, fill_, zero_ ------------------------------------------------------------ */

/* The new values do not depend on the old ones: the old history gets a zero
 * gradient. A tensor with history keeps requires_grad (as in PyTorch) through
 * a node that passes zeros back. */
static ct_status overwrite_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    (void)g;
    const ct_input_meta *m = &n->in[0];
    if (!m->needs_grad) return CT_OK;
    grad_in[0] = cti_full(m->shape, m->ndim, 0.0, m->dtype, m->device);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_status overwrite_history(ct_tensor *self, const char *node_name) {
    if (!self->requires_grad || !ct_is_grad_enabled()) return CT_OK;
    /* two headers on self's storage, no data: the node's input (the old
     * history) and the tensor cta_record attaches the node to */
    ct_tensor *h = history_handle(self);
    ct_tensor *carrier = h ? ct_tensor_view_of(self, self->shape, self->strides, self->ndim, self->offset) : NULL;
    const ct_tensor *ins[1] = {h};
    ct_node *n = carrier ? cta_record(carrier, node_name, overwrite_backward, ins, 1) : NULL;
    ct_decref(h);
    if (!n) return ct_last_status(); /* cta_record released the carrier */
    ct_node *old = self->grad_fn;
    self->grad_fn = n;
    carrier->grad_fn = NULL;
    ct_decref(carrier);
    if (old) cta_node_release(old);
    return CT_OK;
}

ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src) {
    if (!dst || !src) return ct_error_null_input("copy_");
    if (cti_same_data(dst, src)) return CT_OK;
    bool record;
    CT_TRY(check_write("copy_", dst, src, &record));
    if (!record || !src->requires_grad) {
        CT_TRY(cti_copy(dst, src));
        CT_TRY(overwrite_history(dst, "CopyBackwards"));
        ct_tensor_bump_version(dst);
        return CT_OK;
    }
    /* dst's new history is src's, broadcast, converted and moved (CopyBackwards) */
    ct_tensor *e = cta_expand(src, dst->shape, dst->ndim);
    ct_tensor *c = e ? cta_to_dtype(e, dst->dtype) : NULL;
    ct_tensor *m = c ? cta_to_device(c, dst->storage->device) : NULL;
    ct_tensor *res = m ? cta_clone(m) : NULL;
    ct_decref(e);
    ct_decref(c);
    ct_decref(m);
    return commit("copy_", dst, res);
}

ct_status ct_fill_(ct_tensor *t, double value) {
    if (!t) return ct_error_null_input("fill_");
    bool record;
    CT_TRY(check_write("fill_", t, NULL, &record));
    CT_TRY(cti_fill(t, value));
    CT_TRY(overwrite_history(t, "FillBackward0"));
    ct_tensor_bump_version(t);
    return CT_OK;
}

ct_status ct_zero_(ct_tensor *t) {
    if (!t) return ct_error_null_input("zero_");
    bool record;
    CT_TRY(check_write("zero_", t, NULL, &record));
    CT_TRY(cti_fill(t, 0.0));
    CT_TRY(overwrite_history(t, "ZeroBackward0"));
    ct_tensor_bump_version(t);
    return CT_OK;
}

/* ---- out= forms ---------------------------------------------------------------------- */

/* PyTorch resizes an out= tensor with zero elements to the result's shape;
 * ctorch does that too (and refuses, rather than resizing with a deprecation
 * warning, one that has elements and the wrong shape). */
static ct_status resize_empty(ct_tensor *out, const int64_t *shape, int ndim) {
    if (ct_shape_numel(out->shape, out->ndim) != 0 ||
        (out->ndim == ndim && memcmp(out->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0))
        return CT_OK;
    ct_tensor *fresh = ct_tensor_alloc(shape, ndim, out->dtype, out->storage->device);
    if (!fresh) return ct_last_status();
    ct_storage *old = out->storage;
    out->storage = fresh->storage;
    fresh->storage = old;
    out->ndim = ndim;
    out->offset = 0;
    memcpy(out->shape, fresh->shape, sizeof out->shape);
    memcpy(out->strides, fresh->strides, sizeof out->strides);
    ct_decref(fresh);
    return CT_OK;
}

static ct_status check_out(const char *fn, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
    if (!out || !a) return ct_error_null_input(fn);
    const ct_tensor *ins[3] = {out, a, b};
    if (cta_needs_grad(ins, b ? 3 : 2))
        return ct_error_set(CT_ERR_STATE,
                            "%s(): functions with out=... arguments don't support automatic differentiation, but "
                            "one of the arguments requires grad.", fn);
    int64_t shape[CT_MAX_DIMS];
    int ndim = a->ndim;
    memcpy(shape, a->shape, sizeof shape);
    if (b && !ct_broadcast_shapes(fn, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim)) return ct_last_status();
    CT_TRY(resize_empty(out, shape, ndim));
    CT_TRY(cti_check_write(fn, out, a));
    return b ? cti_check_write(fn, out, b) : CT_OK;
}

static ct_status binary_out(const char *fn, ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
    if (!b) return ct_error_null_input(fn);
    CT_TRY(check_out(fn, out, a, b));
    CT_TRY(cti_binary_into(fn, op, out, a, b, 1.0));
    ct_tensor_bump_version(out);
    return CT_OK;
}

ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { return binary_out("add", CT_BIN_ADD, out, a, b); }
ct_status ct_sub_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { return binary_out("sub", CT_BIN_SUB, out, a, b); }
ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { return binary_out("mul", CT_BIN_MUL, out, a, b); }
ct_status ct_div_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { return binary_out("div", CT_BIN_DIV, out, a, b); }

ct_status ct_clamp_out(ct_tensor *out, const ct_tensor *a, double lo, double hi) {
    CT_TRY(check_out("clamp", out, a, NULL));
    CT_TRY(cti_unary_into("clamp", CT_UN_CLAMP, out, a, lo, hi));
    ct_tensor_bump_version(out);
    return CT_OK;
}
