/*
 * rules_elementwise.c — recording and backward formulas of the elementwise
 * ops (binary, scalar, unary, where), PyTorch's derivatives.yaml in C.
 *
 * Gradients are reduced back over broadcast dimensions and cast to each
 * input's dtype (cta_reduce_to_input). Ops with integer or bool results
 * (comparisons, logical ops, floor/round…) are not differentiable and
 * record nothing.
 */
#include <math.h>

#include "rules_util.h"

/* ---- binary ---------------------------------------------------------------------- */

/* Gradients w.r.t. a and b at full (broadcast) shape; either may stay NULL. */
static void binary_grads(scratch *s, ct_binary_op op, double alpha, const ct_tensor *g, const ct_tensor *a,
                         const ct_tensor *b, const ct_tensor *out, const ct_tensor **ga, const ct_tensor **gb) {
    switch (op) {
    case CT_BIN_ADD: *ga = g; *gb = alpha == 1.0 ? g : MULS(s, g, alpha); break;
    case CT_BIN_SUB: *ga = g; *gb = MULS(s, g, -alpha); break;
    case CT_BIN_MUL: *ga = MUL(s, g, b); *gb = MUL(s, g, a); break;
    case CT_BIN_DIV:
        *ga = DIV(s, g, b);
        *gb = MULS(s, DIV(s, MUL(s, g, out), b), -1.0);
        break;
    case CT_BIN_POW: { /* d/da = b a^(b-1); d/db = out ln a, 0 where a == 0 and b >= 0 */
        *ga = MUL(s, g, MUL(s, b, own(s, cti_binary(CT_BIN_POW, a, ADDS(s, b, -1.0), 1.0))));
        const ct_tensor *lna = own(s, cti_where(CMPS(s, CT_BIN_EQ, a, 0.0), own(s, cti_zeros_like(a)), UN(s, CT_UN_LOG, a)));
        *gb = MUL(s, g, MUL(s, out, lna));
        break;
    }
    case CT_BIN_MAXIMUM:
    case CT_BIN_MINIMUM: { /* ties split the gradient in half, as PyTorch */
        ct_binary_op win = op == CT_BIN_MAXIMUM ? CT_BIN_GT : CT_BIN_LT;
        const ct_tensor *half = MULS(s, MUL(s, g, CMP(s, CT_BIN_EQ, a, b)), 0.5);
        *ga = ADD(s, MUL(s, g, CMP(s, win, a, b)), half);
        *gb = ADD(s, MUL(s, g, CMP(s, win, b, a)), half);
        break;
    }
    case CT_BIN_ATAN2: { /* d/da = b/(a²+b²), d/db = -a/(a²+b²) */
        const ct_tensor *den = ADD(s, MUL(s, a, a), MUL(s, b, b));
        *ga = MUL(s, g, DIV(s, b, den));
        *gb = MULS(s, MUL(s, g, DIV(s, a, den)), -1.0);
        break;
    }
    default: break;
    }
}

static ct_status binary_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *a = cta_saved(n, 0), *b = cta_saved(n, 1), *out = cta_saved(n, 2);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *ga = NULL, *gb = NULL;
    binary_grads(&s, (ct_binary_op)n->op, n->d[0], g, a, b, out, &ga, &gb);
    if (!s.failed) {
        if (n->in[0].needs_grad) grad_in[0] = cta_reduce_to_input(ga, &n->in[0]);
        if (n->in[1].needs_grad) grad_in[1] = cta_reduce_to_input(gb, &n->in[1]);
    }
    scratch_free(&s);
    return s.failed || (n->in[0].needs_grad && !grad_in[0]) || (n->in[1].needs_grad && !grad_in[1])
               ? ct_last_status()
               : CT_OK;
}

/* ---- 0-dim CPU tensors as operands of device ops ------------------------------------ */

/* PyTorch lets a 0-dim CPU tensor be an operand of an op whose other
 * operands are on a device (x_cuda * torch.tensor(2.0)); the op runs there.
 * The device is that of the first operand that is not a 0-dim CPU tensor. */
static bool cpu_scalar(const ct_tensor *t) { return t && t->ndim == 0 && t->storage->device.type == CT_DEVICE_CPU; }

static ct_device op_device(const ct_tensor *const *ts, int n) {
    for (int i = 0; i < n; i++)
        if (ts[i] && !cpu_scalar(ts[i])) return ts[i]->storage->device;
    return ct_device_cpu();
}

/* t itself, or (a 0-dim CPU tensor off the op's device) its copy on dev,
 * made through a recorded copy so that its gradient comes back to the CPU;
 * *moved is the copy to release. */
static const ct_tensor *onto(const ct_tensor *t, ct_device dev, ct_tensor **moved) {
    *moved = NULL;
    if (!cpu_scalar(t) || ct_device_equal(t->storage->device, dev)) return t;
    *moved = cta_to_device(t, dev);
    return *moved;
}

static ct_tensor *binary_recorded(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha);
static ct_tensor *where_recorded(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

ct_tensor *cta_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha) {
    if (!a || !b || ct_device_equal(a->storage->device, b->storage->device)) return binary_recorded(op, a, b, alpha);
    const ct_tensor *ts[2] = {a, b};
    const ct_device dev = op_device(ts, 2);
    ct_tensor *ma, *mb;
    const ct_tensor *a2 = onto(a, dev, &ma), *b2 = onto(b, dev, &mb);
    ct_tensor *out = a2 && b2 ? binary_recorded(op, a2, b2, alpha) : NULL;
    ct_decref(ma);
    ct_decref(mb);
    return out;
}

ct_tensor *cta_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
    const ct_tensor *ts[3] = {cond, a, b};
    if (!cond || !a || !b ||
        (ct_device_equal(cond->storage->device, a->storage->device) &&
         ct_device_equal(a->storage->device, b->storage->device)))
        return where_recorded(cond, a, b);
    const ct_device dev = op_device(ts, 3);
    ct_tensor *mc, *ma, *mb;
    const ct_tensor *c2 = onto(cond, dev, &mc), *a2 = onto(a, dev, &ma), *b2 = onto(b, dev, &mb);
    ct_tensor *out = c2 && a2 && b2 ? where_recorded(c2, a2, b2) : NULL;
    ct_decref(mc);
    ct_decref(ma);
    ct_decref(mb);
    return out;
}

static ct_tensor *binary_recorded(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha) {
    ct_tensor *out = cti_binary(op, a, b, alpha);
    const ct_tensor *ins[2] = {a, b};
    const char *name = ct_binary_facts_of(op)->node;
    if (!out || !name || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 2)) return out;
    ct_node *node = cta_record(out, name, binary_backward, ins, 2);
    if (!node) return NULL;
    node->op = op;
    node->d[0] = alpha;
    /* what each formula reads: keep it, cheaply (saved values are views) */
    if (cta_save(node, 0, a) || cta_save(node, 1, b) || cta_save(node, 2, out)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *cta_binary_scalar(ct_binary_op op, const ct_tensor *a, double sc) {
    ct_tensor *out = cti_binary_scalar(op, a, sc);
    const ct_tensor *ins[1] = {a};
    const char *name = ct_binary_facts_of(op)->node;
    if (!out || !name || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    /* record as a binary op whose second operand is a constant 0-dim tensor */
    ct_tensor *k = cti_scalar(sc, out->dtype, out->storage->device);
    const ct_tensor *ins2[2] = {a, k};
    ct_node *node = k ? cta_record(out, name, binary_backward, ins2, 2) : NULL;
    if (node) {
        node->op = op;
        node->d[0] = 1.0;
    }
    if (!node || cta_save(node, 0, a) || cta_save(node, 1, k) || cta_save(node, 2, out)) {
        if (node) ct_decref(out);
        else if (!k) ct_decref(out);
        ct_decref(k);
        return NULL;
    }
    ct_decref(k);
    return out;
}

/* ---- unary ---------------------------------------------------------------------------- */

static const ct_tensor *unary_grad(scratch *s, ct_unary_op op, const ct_tensor *g, const ct_tensor *x,
                                   const ct_tensor *y, double p0, double p1) {
    switch (op) {
    case CT_UN_NEG: return MULS(s, g, -1.0);
    case CT_UN_ABS: return MUL(s, g, UN(s, CT_UN_SIGN, x));
    case CT_UN_SQUARE: return MUL(s, g, MULS(s, x, 2.0));
    case CT_UN_EXP: return MUL(s, g, y);
    case CT_UN_EXPM1: return MUL(s, g, ADDS(s, y, 1.0));
    case CT_UN_LOG: return DIV(s, g, x);
    case CT_UN_LOG1P: return DIV(s, g, ADDS(s, x, 1.0));
    case CT_UN_LOG2: return DIV(s, g, MULS(s, x, 0.6931471805599453));
    case CT_UN_SQRT: return DIV(s, g, MULS(s, y, 2.0));
    case CT_UN_RSQRT: return MUL(s, g, MULS(s, MUL(s, y, MUL(s, y, y)), -0.5));
    case CT_UN_RECIPROCAL: return MUL(s, g, MULS(s, MUL(s, y, y), -1.0));
    case CT_UN_SIN: return MUL(s, g, UN(s, CT_UN_COS, x));
    case CT_UN_COS: return MUL(s, g, MULS(s, UN(s, CT_UN_SIN, x), -1.0));
    case CT_UN_TANH: return MUL(s, g, MULS(s, ADDS(s, MUL(s, y, y), -1.0), -1.0)); /* 1 - y² */
    case CT_UN_SIGMOID: return MUL(s, g, MUL(s, y, MULS(s, ADDS(s, y, -1.0), -1.0)));
    case CT_UN_RELU: return MUL(s, g, CMPS(s, CT_BIN_GT, y, 0.0));
    case CT_UN_GELU: { /* Φ(x) + x φ(x) */
        const ct_tensor *cdf = MULS(s, ADDS(s, UN(s, CT_UN_ERF, MULS(s, x, 0.7071067811865476)), 1.0), 0.5);
        const ct_tensor *pdf = MULS(s, UN(s, CT_UN_EXP, MULS(s, MUL(s, x, x), -0.5)), 0.3989422804014327);
        return MUL(s, g, ADD(s, cdf, MUL(s, x, pdf)));
    }
    case CT_UN_GELU_TANH: { /* 0.5(1+t) + 0.5 x (1-t²) k (1 + 3c x²), t = tanh(k(x + c x³)) */
        const double k = 0.7978845608028654, c = 0.044715;
        const ct_tensor *x2 = MUL(s, x, x);
        const ct_tensor *inner = MULS(s, ADD(s, x, MULS(s, MUL(s, x2, x), c)), k);
        const ct_tensor *t = UN(s, CT_UN_TANH, inner);
        const ct_tensor *left = MULS(s, ADDS(s, t, 1.0), 0.5);
        const ct_tensor *one_m_t2 = MULS(s, ADDS(s, MUL(s, t, t), -1.0), -1.0);
        const ct_tensor *dinner = MULS(s, ADDS(s, MULS(s, x2, 3.0 * c), 1.0), k);
        return MUL(s, g, ADD(s, left, MULS(s, MUL(s, x, MUL(s, one_m_t2, dinner)), 0.5)));
    }
    case CT_UN_SILU: { /* s (1 + x (1 - s)) */
        const ct_tensor *sg = UN(s, CT_UN_SIGMOID, x);
        const ct_tensor *one_m = MULS(s, ADDS(s, sg, -1.0), -1.0);
        return MUL(s, g, MUL(s, sg, ADDS(s, MUL(s, x, one_m), 1.0)));
    }
    case CT_UN_SOFTPLUS: /* sigmoid(x), exactly 1 above the threshold 20 */
        return MUL(s, g, own(s, cti_where(CMPS(s, CT_BIN_GT, x, 20.0), own(s, cti_ones_like(x)), UN(s, CT_UN_SIGMOID, x))));
    case CT_UN_ERF: return MUL(s, g, MULS(s, UN(s, CT_UN_EXP, MULS(s, MUL(s, x, x), -1.0)), 1.1283791670955126));
    case CT_UN_LEAKY_RELU:
        return MUL(s, g, own(s, cti_where(CMPS(s, CT_BIN_GT, x, 0.0), own(s, cti_ones_like(x)),
                                          own(s, cti_full(x->shape, x->ndim, p0, x->dtype, x->storage->device)))));
    case CT_UN_CLAMP: { /* gradient flows where lo <= x <= hi */
        const ct_tensor *m = own(s, cti_ones_like(x));
        if (!isnan(p0)) m = MUL(s, m, CMPS(s, CT_BIN_GE, x, p0));
        if (!isnan(p1)) m = MUL(s, m, CMPS(s, CT_BIN_LE, x, p1));
        return MUL(s, g, m);
    }
    case CT_UN_HARDSWISH: { /* PyTorch's: 0 for x <= -3, x/3 + 1/2 below 3, else 1 (NaN too) */
        const ct_tensor *mid = ADDS(s, MULS(s, x, 1.0 / 3.0), 0.5);
        const ct_tensor *upper = own(s, cti_where(CMPS(s, CT_BIN_LT, x, 3.0), mid, own(s, cti_ones_like(x))));
        return MUL(s, g, own(s, cti_where(CMPS(s, CT_BIN_LE, x, -3.0), own(s, cti_zeros_like(x)), upper)));
    }
    default: return MULS(s, g, 0.0); /* sign, floor, ceil, round, trunc: zero almost everywhere */
    }
}

static ct_status unary_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *y = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *gx = unary_grad(&s, (ct_unary_op)n->op, g, x, y, n->d[0], n->d[1]);
    if (!s.failed && gx) grad_in[0] = cta_reduce_to_input(gx, &n->in[0]);
    scratch_free(&s);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1) {
    ct_tensor *out = cti_unary(op, a, p0, p1);
    const ct_tensor *ins[1] = {a};
    const char *name = ct_unary_facts_of(op)->node;
    if (!out || !name || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins, 1)) return out;
    ct_node *node = cta_record(out, name, unary_backward, ins, 1);
    if (!node) return NULL;
    node->op = op;
    node->d[0] = p0;
    node->d[1] = p1;
    if (cta_save(node, 0, a) || cta_save(node, 1, out)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* ---- where ------------------------------------------------------------------------------ */

static ct_status where_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *cond = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    scratch s = {0};
    const ct_tensor *zero = own(&s, cti_zeros_like(g));
    if (n->in[1].needs_grad) grad_in[1] = cta_reduce_to_input(own(&s, cti_where(cond, g, zero)), &n->in[1]);
    if (n->in[2].needs_grad) grad_in[2] = cta_reduce_to_input(own(&s, cti_where(cond, zero, g)), &n->in[2]);
    scratch_free(&s);
    return s.failed ? ct_last_status() : CT_OK;
}

static ct_tensor *where_recorded(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
    ct_tensor *out = cti_where(cond, a, b);
    const ct_tensor *ins[3] = {cond, a, b};
    if (!out || !ct_dtype_is_floating(out->dtype) || !cta_needs_grad(ins + 1, 2)) return out;
    ct_node *node = cta_record(out, "WhereBackward0", where_backward, ins, 3);
    if (!node) return NULL;
    if (cta_save(node, 0, cond)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}
