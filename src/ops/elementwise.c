/*
 * elementwise.c — the front-ends of the elementwise ops: unary, binary,
 * binary with a C scalar, and where.
 *
 * They hold PyTorch's rules that no backend should repeat: which dtype an op
 * computes in and returns (type promotion, integer inputs to floating
 * functions, bool results of comparisons), which dtypes an op refuses, and
 * broadcasting. Backends then receive inputs already in the compute dtype
 * and at the output's shape (stride 0 on broadcast dims).
 *
 * W0 of the benchmarks is `a + b` on one-element tensors, so the path keeps
 * per-call work small: inputs already in the compute dtype are used as they
 * are (no retain, no cast) and broadcasting is expressed in the kernel views
 * on the stack instead of allocating expanded view tensors.
 */
#include <math.h>
#include <string.h>

#include "../autograd/autograd.h"

/* ---- names ------------------------------------------------------------- */

const char *cti_unary_name(ct_unary_op op) { return ct_unary_facts_of(op)->name; }
const char *cti_binary_name(ct_binary_op op) { return ct_binary_facts_of(op)->name; }

/* ---- shared helpers ---------------------------------------------------- */

/* t when it already has dtype dt (nothing to release), else a converted copy
 * that the caller releases through *owned. NULL on failure. */
static const ct_tensor *in_dtype(const ct_tensor *t, ct_dtype dt, ct_tensor **owned) {
    *owned = NULL;
    if (t->dtype == dt)
        return t;
    *owned = cti_cast(t, dt);
    return *owned;
}

/* The kernel view of t seen at a broadcast shape (stride 0 on expanded
 * dims): what cti_expand would give, without allocating a tensor. */
static void broadcast_kview(const ct_tensor *t, const int64_t *shape, int ndim, ct_kview *v) {
    /* filled here rather than through ct_kview_of, whose shape/stride copies
     * would be overwritten at once (this is on W0's path three times) */
    v->data = t->storage->data;
    v->offset = ct_buffer_offset(t);
    v->dtype = t->dtype;
    v->ndim = ndim;
    v->device = t->storage->device.index;
    v->device_type = t->storage->device.type;
    for (int i = 0; i < CT_MAX_DIMS; i++) {
        v->shape[i] = i < ndim ? shape[i] : 1;
        v->strides[i] = 0;
    }
    ct_broadcast_strides(t, shape, ndim, v->strides);
}

static ct_status not_implemented(const char *op, ct_dtype dt) {
    return ct_error_set(CT_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", op, op, ct_dtype_name(dt));
}

/* ---- unary ------------------------------------------------------------- */

/* torch.clamp promotes with its bounds like a binary op with scalars: an
 * integer tensor clamped to a fractional bound becomes floating, a bool
 * tensor with any bound becomes int64. */
static ct_dtype clamp_dtype(ct_dtype in, double lo, double hi) {
    if (ct_dtype_is_floating(in))
        return in;
    const bool fractional = (!isnan(lo) && !cti_is_whole(lo)) || (!isnan(hi) && !cti_is_whole(hi));
    if (fractional)
        return cti_resolve_dtype(CT_DTYPE_DEFAULT);
    return in == CT_BOOL ? CT_INT64 : in;
}

/* The dtype op computes in (its input is cast to it) and the output dtype,
 * or an error for dtypes PyTorch refuses. */
static ct_status unary_dtypes(ct_unary_op op, ct_dtype in, double p0, double p1, ct_dtype *compute,
                              ct_dtype *out) {
    const char *name = cti_unary_name(op);
    const bool floating = ct_dtype_is_floating(in);
    *compute = in;
    const ct_unary_facts *facts = ct_unary_facts_of(op);
    /* floating-only ops without integer kernels (leaky_relu, hardswish) */
    if (!facts->floating && !facts->integer_kernel && !floating)
        return not_implemented(name, in);
    if (facts->floating) {
        if (!floating)
            *compute = cti_resolve_dtype(CT_DTYPE_DEFAULT);
    } else {
        switch (op) {
        case CT_UN_NEG:
            if (in == CT_BOOL)
                return ct_error_set(CT_ERR_DTYPE,
                                    "neg: Negation, the `-` operator, on a bool tensor is not "
                                    "supported. If you are trying to invert a mask, use the `~` "
                                    "or `logical_not()` operator instead.");
            break;
        case CT_UN_RELU:
            if (in == CT_BOOL)
                return ct_error_set(CT_ERR_DTYPE, "relu: Boolean inputs not supported for relu");
            break;
        case CT_UN_SQUARE:
            /* square is pow(x, 2): a bool tensor with an int scalar gives int64 */
            if (in == CT_BOOL)
                *compute = CT_INT64;
            break;
        case CT_UN_CLAMP:
            if (isnan(p0) && isnan(p1))
                return ct_error_set(CT_ERR_INVALID_ARG,
                                    "clamp: At least one of 'min' or 'max' must not be None");
            *compute = clamp_dtype(in, p0, p1);
            break;
        default:
            break;
        }
        if (in == CT_BOOL && (facts->flags & CT_OPF_NO_BOOL)) /* abs, floor, ceil, round, trunc */
            return not_implemented(name, in);
    }
    *out = facts->bool_result ? CT_BOOL : *compute;
    return CT_OK;
}

/* The unary kernel writing into out, which has a's shape and dtype out_dtype. */
static ct_status unary_run(ct_unary_op op, ct_tensor *out, const ct_tensor *a, ct_dtype compute, double p0,
                           double p1) {
    if (ct_shape_numel(a->shape, a->ndim) == 0) return CT_OK;
    ct_tensor *owned;
    const ct_tensor *in = in_dtype(a, compute, &owned);
    if (!in) return ct_last_status();
    ct_kview ko, ki;
    broadcast_kview(out, a->shape, a->ndim, &ko);
    broadcast_kview(in, a->shape, a->ndim, &ki);
    ct_status st = CTI_BACKEND_CALL(out, unary, cti_unary_name(op), op, &ko, &ki, p0, p1);
    ct_decref(owned);
    return st;
}

ct_tensor *cti_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1) {
    if (!a)
        return NULL;
    ct_dtype compute = CT_DTYPE_DEFAULT, out_dtype = CT_DTYPE_DEFAULT;
    if (unary_dtypes(op, a->dtype, p0, p1, &compute, &out_dtype) != CT_OK)
        return NULL;
    ct_tensor *out = cti_empty(a->shape, a->ndim, out_dtype, a->storage->device);
    if (out && unary_run(op, out, a, compute, p0, p1) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* ---- writing into a given tensor (in-place ops and out= forms) --------------- */

/* out must have the result's shape exactly and a dtype the result can be
 * cast to (PyTorch's messages). */
ct_status cti_check_into(const char *op, const ct_tensor *out, const int64_t *shape, int ndim, ct_dtype result) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (out->ndim != ndim || memcmp(out->shape, shape, sizeof(int64_t) * (size_t)ndim) != 0)
        return ct_error_set(CT_ERR_SHAPE, "%s: output with shape %s doesn't match the broadcast shape %s", op,
                            ct_shape_str(out->shape, out->ndim, a, sizeof a), ct_shape_str(shape, ndim, b, sizeof b));
    if (!cti_can_cast(result, out->dtype))
        return ct_error_set(CT_ERR_DTYPE, "%s: result type %s can't be cast to the desired output type %s", op,
                            cti_scalar_type_name(result), cti_scalar_type_name(out->dtype));
    return CT_OK;
}

/* A result in another dtype than out's is computed aside and converted. */
static ct_status copy_result_into(ct_tensor *out, ct_tensor *result) {
    ct_status st = result ? cti_copy(out, result) : ct_last_status();
    ct_decref(result);
    return st;
}

ct_status cti_unary_into(const char *name, ct_unary_op op, ct_tensor *out, const ct_tensor *a, double p0,
                         double p1) {
    if (!out || !a) return ct_error_null_input(name);
    const ct_tensor *operands[2] = {out, a};
    if (!ct_check_same_device(name, operands, 2)) return ct_last_status();
    ct_dtype compute = CT_DTYPE_DEFAULT, out_dtype = CT_DTYPE_DEFAULT;
    CT_TRY(unary_dtypes(op, a->dtype, p0, p1, &compute, &out_dtype));
    CT_TRY(cti_check_into(name, out, a->shape, a->ndim, out_dtype));
    if (out->dtype != out_dtype) return copy_result_into(out, cti_unary(op, a, p0, p1));
    return unary_run(op, out, a, compute, p0, p1);
}

/* ---- binary ------------------------------------------------------------ */

static ct_status check_alpha(ct_binary_op op, ct_dtype dt, double alpha) {
    if ((op != CT_BIN_ADD && op != CT_BIN_SUB) || alpha == 1.0 || ct_dtype_is_floating(dt) ||
        cti_is_whole(alpha))
        return CT_OK;
    return ct_error_set(CT_ERR_INVALID_ARG,
                        "%s: For integral input tensors, argument alpha must not be a floating "
                        "point number (got %g).",
                        cti_binary_name(op), alpha);
}

/* The compute and output dtypes of a binary op, or an error for dtypes
 * PyTorch refuses. */
static ct_status binary_dtypes(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha,
                               ct_dtype *compute, ct_dtype *out) {
    const char *name = cti_binary_name(op);
    ct_dtype r = cti_result_type(a, b);
    switch (op) {
    case CT_BIN_SUB:
        if (a->dtype == CT_BOOL && b->dtype == CT_BOOL)
            return ct_error_set(CT_ERR_DTYPE,
                                "sub: Subtraction, the `-` operator, with two bool tensors is not "
                                "supported. Use the `^` or `logical_xor()` operator instead.");
        if (a->dtype == CT_BOOL || b->dtype == CT_BOOL)
            return ct_error_set(CT_ERR_DTYPE,
                                "sub: Subtraction, the `-` operator, with a bool tensor is not "
                                "supported. If you are trying to invert a mask, use the `~` or "
                                "`logical_not()` operator instead.");
        break;
    case CT_BIN_DIV: case CT_BIN_ATAN2:
        /* true division and atan2 of integers give the default float dtype */
        if (!ct_dtype_is_floating(r))
            r = cti_resolve_dtype(CT_DTYPE_DEFAULT);
        break;
    case CT_BIN_FLOOR_DIV: case CT_BIN_REMAINDER: case CT_BIN_POW:
        if (r == CT_BOOL)
            return not_implemented(name, r);
        break;
    default:
        break;
    }
    if (check_alpha(op, r, alpha) != CT_OK)
        return ct_last_status();
    *compute = r;
    *out = ct_binary_facts_of(op)->bool_result ? CT_BOOL : r;
    return CT_OK;
}

/* The binary kernel writing into out (shape: the broadcast shape). */
static ct_status binary_run(ct_binary_op op, ct_tensor *out, const int64_t *shape, int ndim, const ct_tensor *a,
                            const ct_tensor *b, ct_dtype compute, double alpha) {
    if (ct_shape_numel(shape, ndim) == 0) return CT_OK;
    ct_tensor *owned_a, *owned_b = NULL;
    const ct_tensor *ca = in_dtype(a, compute, &owned_a);
    const ct_tensor *cb = ca ? in_dtype(b, compute, &owned_b) : NULL;
    ct_status st = cb ? CT_OK : ct_last_status();
    if (cb) {
        ct_kview ko, ka, kb;
        broadcast_kview(out, shape, ndim, &ko);
        broadcast_kview(ca, shape, ndim, &ka);
        broadcast_kview(cb, shape, ndim, &kb);
        st = CTI_BACKEND_CALL(out, binary, cti_binary_name(op), op, &ko, &ka, &kb, alpha);
    }
    ct_decref(owned_a);
    ct_decref(owned_b);
    return st;
}

ct_tensor *cti_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha) {
    if (!a || !b)
        return NULL;
    const char *name = cti_binary_name(op);
    const ct_tensor *operands[2] = {a, b};
    if (!ct_check_same_device(name, operands, 2))
        return NULL;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (!ct_broadcast_shapes(name, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim))
        return NULL;
    ct_dtype compute = CT_DTYPE_DEFAULT, out_dtype = CT_DTYPE_DEFAULT;
    if (binary_dtypes(op, a, b, alpha, &compute, &out_dtype) != CT_OK)
        return NULL;
    ct_tensor *out = cti_empty(shape, ndim, out_dtype, a->storage->device);
    if (out && binary_run(op, out, shape, ndim, a, b, compute, alpha) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_status cti_binary_into(const char *name, ct_binary_op op, ct_tensor *out, const ct_tensor *a,
                          const ct_tensor *b, double alpha) {
    if (!out || !a || !b) return ct_error_null_input(name);
    const ct_tensor *operands[3] = {out, a, b};
    if (!ct_check_same_device(name, operands, 3)) return ct_last_status();
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (!ct_broadcast_shapes(name, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim)) return ct_last_status();
    ct_dtype compute = CT_DTYPE_DEFAULT, out_dtype = CT_DTYPE_DEFAULT;
    CT_TRY(binary_dtypes(op, a, b, alpha, &compute, &out_dtype));
    CT_TRY(cti_check_into(name, out, shape, ndim, out_dtype));
    if (out->dtype != out_dtype) return copy_result_into(out, cti_binary(op, a, b, alpha));
    return binary_run(op, out, shape, ndim, a, b, compute, alpha);
}

/* A C scalar is a "weak" operand, like a Python number: it only raises the
 * category of the result (int tensor * 2.5 -> default float; float16 tensor
 * * 2.5 -> float16). A C double cannot say whether the caller meant an int
 * or a float, so a whole number (2.0) counts as an int scalar: that is what
 * ct_mul_scalar(t, 2) means to a C user, and it keeps integer tensors
 * integer. Infinities, NaN and values beyond int64 are float scalars. */
static bool scalar_is_float(double s) {
    return !(cti_is_whole(s) && fabs(s) < 9223372036854775808.0);
}

/* The 0-dim operand that stands for the C scalar s next to a: stored in
 * the result dtype, so that the binary op sees an operand that promotes to
 * exactly that dtype. NULL with PyTorch's error for integer tensors raised
 * to negative integer powers. */
static ct_tensor *scalar_operand(ct_binary_op op, const ct_tensor *a, double s, bool scalar_first) {
    const bool is_float = scalar_is_float(s);
    const ct_dtype r = cti_result_type_scalar(a, is_float);
    if (op == CT_BIN_POW && !scalar_first && !is_float && s < 0 && !ct_dtype_is_floating(r)) {
        ct_error_set(CT_ERR_INVALID_ARG, "pow: Integers to negative integer powers are not allowed.");
        return NULL;
    }
    return cti_scalar(s, r, a->storage->device);
}

/* op(a, s), or op(s, a) when scalar_first. */
static ct_tensor *binary_with_scalar(ct_binary_op op, const ct_tensor *a, double s, bool scalar_first) {
    if (!a)
        return NULL;
    ct_tensor *scalar = scalar_operand(op, a, s, scalar_first);
    if (!scalar)
        return NULL;
    ct_tensor *out = scalar_first ? cti_binary(op, scalar, a, 1.0) : cti_binary(op, a, scalar, 1.0);
    ct_decref(scalar);
    return out;
}

ct_status cti_binary_scalar_into(const char *name, ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s) {
    if (!out || !a) return ct_error_null_input(name);
    ct_tensor *scalar = scalar_operand(op, a, s, false);
    if (!scalar) return ct_last_status();
    ct_status st = cti_binary_into(name, op, out, a, scalar, 1.0);
    ct_decref(scalar);
    return st;
}

ct_tensor *cti_binary_scalar(ct_binary_op op, const ct_tensor *a, double s) {
    return binary_with_scalar(op, a, s, false);
}

/* s - a (torch.rsub); here rather than with the other public one-liners
 * because it needs the scalar on the left. */
ct_tensor *ct_rsub_scalar(const ct_tensor *a, double s) {
    if (!a || !a->requires_grad || !ct_is_grad_enabled())
        return ct_track(binary_with_scalar(CT_BIN_SUB, a, s, true));
    /* s - a == -a + s exactly; recorded through the differentiable ops */
    ct_tensor *neg = cta_unary(CT_UN_NEG, a, 0.0, 0.0);
    ct_tensor *out = cta_binary_scalar(CT_BIN_ADD, neg, s);
    ct_decref(neg);
    return ct_track(out);
}

/* ---- where ------------------------------------------------------------- */

ct_tensor *cti_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
    if (!cond || !a || !b)
        return NULL;
    const ct_tensor *operands[3] = {cond, a, b};
    if (!ct_check_same_device("where", operands, 3))
        return NULL;
    CT_CHECK_NULL(cond->dtype == CT_BOOL, CT_ERR_DTYPE,
                  "where: expected condition to be a boolean tensor, but got a tensor with dtype %s",
                  ct_dtype_name(cond->dtype));
    int64_t ab[CT_MAX_DIMS], shape[CT_MAX_DIMS];
    int nab, ndim;
    if (!ct_broadcast_shapes("where", a->shape, a->ndim, b->shape, b->ndim, ab, &nab) ||
        !ct_broadcast_shapes("where", cond->shape, cond->ndim, ab, nab, shape, &ndim))
        return NULL;
    const ct_dtype r = cti_result_type(a, b);

    ct_tensor *owned_a, *owned_b = NULL, *out = NULL;
    const ct_tensor *ca = in_dtype(a, r, &owned_a);
    const ct_tensor *cb = ca ? in_dtype(b, r, &owned_b) : NULL;
    if (cb)
        out = cti_empty(shape, ndim, r, a->storage->device);
    ct_status st = out ? CT_OK : ct_last_status();
    if (out && ct_shape_numel(shape, ndim) > 0) {
        ct_kview ko, kc, ka, kb;
        broadcast_kview(out, shape, ndim, &ko);
        broadcast_kview(cond, shape, ndim, &kc);
        broadcast_kview(ca, shape, ndim, &ka);
        broadcast_kview(cb, shape, ndim, &kb);
        st = CTI_BACKEND_CALL(out, where, "where", &ko, &kc, &ka, &kb);
    }
    ct_decref(owned_a);
    ct_decref(owned_b);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}
