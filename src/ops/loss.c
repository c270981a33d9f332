/*
 * loss.c — the elementwise losses (mse_loss, binary_cross_entropy_with_logits)
 * and the helpers every loss front-end shares (reductions, broadcasting
 * back to an operand's shape, the backend's loss table).
 *
 * Front-ends validate arguments with PyTorch's rules and messages, bring the
 * operands to one floating dtype and the loss's shape (broadcast views, no
 * copies), and call one fused backend kernel for the per-element values and
 * one for the gradients; reductions use the backend's deterministic `reduce`.
 * The class losses (cross_entropy, nll_loss) are in loss_class.c.
 */
#include "autograd/autograd.h"
#include "amp/autocast.h"
#include "loss.h"

#include <string.h>

#include "core/backend_loss.h"

/* ---- shared helpers ------------------------------------------------------------------ */

const struct ct_backend_loss *cti_loss_ops(const ct_tensor *t, const char *op) {
    const struct ct_backend_loss *ops = cti_backend(t)->ops->loss;
    if (!ops)
        ct_error_set(CT_ERR_UNSUPPORTED, "%s: not implemented on %s", op, cti_backend(t)->name);
    return ops;
}

bool cti_loss_check_reduction(const char *op, ct_reduction reduction) {
    CT_CHECK_RET(reduction == CT_REDUCTION_MEAN || reduction == CT_REDUCTION_NONE ||
                     reduction == CT_REDUCTION_SUM,
                 false, CT_ERR_INVALID_ARG, "%s: %d is not a valid value for reduction", op,
                 (int)reduction);
    return true;
}

bool cti_loss_opts_check(const char *op, const ct_loss_opts *o, unsigned takes) {
    const char *extra = NULL;
    if (o->weight && !(takes & CTI_LOSS_TAKES_WEIGHT)) extra = "weight";
    else if (o->pos_weight && !(takes & CTI_LOSS_TAKES_POS_WEIGHT)) extra = "pos_weight";
    else if ((o->ignore_index || o->has_ignore_index) && !(takes & CTI_LOSS_TAKES_IGNORE_INDEX))
        extra = "ignore_index";
    else if (o->label_smoothing != 0 && !(takes & CTI_LOSS_TAKES_SMOOTHING))
        extra = "label_smoothing";
    CT_CHECK_RET(!extra, false, CT_ERR_INVALID_ARG, "%s() got an unexpected keyword argument '%s'",
                 op, extra);
    return true;
}

int64_t cti_loss_ignore_index(const ct_loss_opts *o) {
    return o->ignore_index != 0 || o->has_ignore_index ? o->ignore_index : CT_IGNORE_INDEX_DEFAULT;
}

ct_status cti_loss_null_status(const char *op) {
    return ct_error_pending_or(CT_ERR_INVALID_ARG, "%s: a required tensor is NULL", op);
}

ct_dtype cti_loss_acc_dtype(ct_dtype dt) { return dt == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32; }

/* Reduce over every dim to a 0-dim tensor (cti_reduce's ndims 0 means all). */
static ct_tensor *reduce_all(ct_reduce_op op, const ct_tensor *v) {
    return cti_reduce(op, v, NULL, 0, false, 0.0);
}

ct_tensor *cti_loss_reduce(const ct_tensor *v, ct_reduction reduction,
                           const ct_tensor *denominator, const int64_t *shape, int ndim,
                           ct_dtype dt) {
    if (!v) return NULL;
    ct_tensor *r;
    if (reduction == CT_REDUCTION_NONE) {
        r = cti_reshape(v, shape, ndim);
    } else if (reduction == CT_REDUCTION_SUM || !denominator) {
        r = reduce_all(reduction == CT_REDUCTION_SUM ? CT_RED_SUM : CT_RED_MEAN, v);
    } else {
        ct_tensor *sum = reduce_all(CT_RED_SUM, v);
        r = cti_binary(CT_BIN_DIV, sum, denominator, 1.0);
        ct_decref(sum);
    }
    ct_tensor *out = cti_cast(r, dt);
    ct_decref(r);
    return out;
}

ct_tensor *cti_loss_sum_to(const ct_tensor *t, const int64_t *shape, int ndim) {
    if (!t) return NULL;
    int dims[CT_MAX_DIMS], nd = 0, lead = t->ndim - ndim;
    CT_ASSERT(lead >= 0);
    for (int d = 0; d < t->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && t->shape[d] != 1)) dims[nd++] = d;
    if (nd == 0) {
        if (t->ndim == ndim) return ct_retain((ct_tensor *)t);
        return cti_reshape(t, shape, ndim);
    }
    ct_tensor *s = cti_reduce(CT_RED_SUM, t, dims, nd, true, 0.0);
    ct_tensor *out = cti_reshape(s, shape, ndim);
    ct_decref(s);
    return out;
}

/* ---- operands of an elementwise loss ----------------------------------------------------- */

/* The operands cast to one dtype and expanded to the loss's shape; each
 * slot owns a reference (or is NULL). */
typedef struct pw_operands {
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    ct_dtype dtype;
    ct_tensor *t[4]; /* input, target, weight, pos_weight */
} pw_operands;

static void pw_release(pw_operands *p) {
    for (int k = 0; k < 4; k++) ct_decref(p->t[k]);
    memset(p->t, 0, sizeof p->t);
}

/* Cast src to p->dtype and expand it to p->shape into slot k. */
static bool pw_put(pw_operands *p, int k, const ct_tensor *src) {
    if (!src) return true;
    ct_tensor *c = cti_cast(src, p->dtype);
    p->t[k] = cti_expand(c, p->shape, p->ndim);
    ct_decref(c);
    return p->t[k] != NULL;
}

static bool pw_prepare(pw_operands *p, const ct_tensor *input, const ct_tensor *target,
                       const ct_tensor *weight, const ct_tensor *pos_weight) {
    return pw_put(p, 0, input) && pw_put(p, 1, target) && pw_put(p, 2, weight) &&
           pw_put(p, 3, pos_weight);
}

/* Kernel views of the four slots (absent ones left unset). */
static void pw_views(const pw_operands *p, ct_kview *kv, const ct_kview **ptr) {
    for (int k = 0; k < 4; k++) {
        ptr[k] = NULL;
        if (p->t[k]) kv[k] = ct_kview_of(p->t[k]), ptr[k] = &kv[k];
    }
}

/* Per-element losses (contiguous, p's shape and dtype), then the reduction. */
static ct_tensor *pw_forward(ct_pointwise_loss op, const char *name, const pw_operands *p,
                             ct_reduction reduction) {
    ct_tensor *out = cti_empty(p->shape, p->ndim, p->dtype, p->t[0]->storage->device);
    if (!out) return NULL;
    if (ct_shape_numel(p->shape, p->ndim) > 0) {
        ct_kview ko = ct_kview_of(out), kv[4];
        const ct_kview *v[4];
        pw_views(p, kv, v);
        if (CTI_LOSS_CALL(out, pointwise_forward, name, op, &ko, v[0], v[1], v[2], v[3]) !=
            CT_OK) {
            ct_decref(out);
            return NULL;
        }
    }
    if (reduction == CT_REDUCTION_NONE) return out;
    ct_tensor *r = reduce_all(reduction == CT_REDUCTION_SUM ? CT_RED_SUM : CT_RED_MEAN, out);
    ct_decref(out);
    return r;
}

/* grad_output must have the forward result's shape: 0-dim when reduced. */
static bool check_grad_output(const char *name, const ct_tensor *g, ct_reduction reduction,
                              const int64_t *shape, int ndim) {
    bool ok = reduction == CT_REDUCTION_NONE
                  ? g->ndim == ndim && memcmp(g->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0
                  : ct_shape_numel(g->shape, g->ndim) == 1;
    char want[CT_SHAPE_STR_MAX], got[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(ok, false, CT_ERR_SHAPE, "%s_backward: grad_output of shape %s, expected %s", name,
                 ct_shape_str(g->shape, g->ndim, got, sizeof got),
                 reduction == CT_REDUCTION_NONE ? ct_shape_str(shape, ndim, want, sizeof want)
                                                : "one element");
    return true;
}

/* The gradients of an elementwise loss at p's shape, summed down to the
 * shapes of input and target and cast to their dtypes. */
static ct_status pw_backward(ct_pointwise_loss op, const char *name, const pw_operands *p,
                             const ct_tensor *grad_output, ct_reduction reduction,
                             const ct_tensor *input, const ct_tensor *target,
                             ct_tensor **grad_input, ct_tensor **grad_target) {
    if (!check_grad_output(name, grad_output, reduction, p->shape, p->ndim)) return ct_last_status();
    ct_tensor *g = cti_cast(grad_output, p->dtype);
    /* a reduced loss's gradient is one value for every element */
    ct_tensor *g0 = reduction != CT_REDUCTION_NONE ? cti_reshape(g, NULL, 0) : ct_retain(g);
    ct_tensor *gx = cti_expand(g0, p->shape, p->ndim);
    ct_decref(g0);
    ct_decref(g);
    ct_device dev = p->t[0]->storage->device;
    ct_tensor *gi = grad_input ? cti_empty(p->shape, p->ndim, p->dtype, dev) : NULL;
    ct_tensor *gt = grad_target ? cti_empty(p->shape, p->ndim, p->dtype, dev) : NULL;
    ct_status st = gx && (gi || !grad_input) && (gt || !grad_target) ? CT_OK : ct_last_status();
    int64_t n = ct_shape_numel(p->shape, p->ndim);
    if (st == CT_OK && n > 0 && (gi || gt)) {
        ct_kview kgi, kgt, kg = ct_kview_of(gx), kv[4];
        const ct_kview *v[4];
        if (gi) kgi = ct_kview_of(gi);
        if (gt) kgt = ct_kview_of(gt);
        pw_views(p, kv, v);
        double scale = reduction == CT_REDUCTION_MEAN ? 1.0 / (double)n : 1.0;
        st = CTI_LOSS_CALL(gx, pointwise_backward, name, op, gi ? &kgi : NULL, gt ? &kgt : NULL,
                           &kg, v[0], v[1], v[2], v[3], scale);
    }
    ct_decref(gx);
    if (grad_input) *grad_input = NULL;
    if (grad_target) *grad_target = NULL;
    if (st == CT_OK && gi) {
        ct_tensor *s = cti_loss_sum_to(gi, input->shape, input->ndim);
        *grad_input = cti_cast(s, input->dtype);
        ct_decref(s);
        if (!*grad_input) st = ct_last_status();
    }
    if (st == CT_OK && gt) {
        ct_tensor *s = cti_loss_sum_to(gt, target->shape, target->ndim);
        *grad_target = cti_cast(s, target->dtype);
        ct_decref(s);
        if (!*grad_target) st = ct_last_status();
    }
    ct_decref(gi);
    ct_decref(gt);
    if (st != CT_OK && grad_input) ct_decref(*grad_input), *grad_input = NULL;
    if (st != CT_OK && grad_target) ct_decref(*grad_target), *grad_target = NULL;
    return st;
}

/* ---- mse_loss ------------------------------------------------------------------------------ */

static bool mse_prepare(const char *name, const ct_tensor *input, const ct_tensor *target,
                        ct_reduction reduction, pw_operands *p) {
    memset(p, 0, sizeof *p);
    if (!cti_loss_check_reduction(name, reduction)) return false;
    const ct_tensor *ts[2] = {input, target};
    if (!ct_check_same_device(name, ts, 2)) return false;
    p->dtype = cti_result_type(input, target);
    CT_CHECK_RET(ct_dtype_is_floating(p->dtype), false, CT_ERR_DTYPE,
                 "%s: \"mse\" not implemented for '%s'", name, cti_scalar_type_name(p->dtype));
    if (!ct_broadcast_shapes(name, input->shape, input->ndim, target->shape, target->ndim,
                             p->shape, &p->ndim))
        return false;
    if (pw_prepare(p, input, target, NULL, NULL)) return true;
    pw_release(p);
    return false;
}

ct_tensor *cti_mse_loss_forward(const ct_tensor *input, const ct_tensor *target,
                                ct_reduction reduction) {
    if (!input || !target) return NULL;
    pw_operands p;
    if (!mse_prepare("mse_loss", input, target, reduction, &p)) return NULL;
    ct_tensor *out = pw_forward(CT_LOSS_MSE, "mse_loss", &p, reduction);
    pw_release(&p);
    return out;
}

ct_status cti_mse_loss_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                const ct_tensor *target, ct_reduction reduction,
                                ct_tensor **grad_input, ct_tensor **grad_target) {
    const char *name = "mse_loss_backward";
    if (grad_input) *grad_input = NULL;
    if (grad_target) *grad_target = NULL;
    if (!grad_output || !input || !target) return cti_loss_null_status(name);
    pw_operands p;
    if (!mse_prepare(name, input, target, reduction, &p)) return ct_last_status();
    ct_status st = pw_backward(CT_LOSS_MSE, "mse_loss", &p, grad_output, reduction, input, target,
                               grad_input, grad_target);
    pw_release(&p);
    return st;
}

ct_tensor *ct_mse_loss_opts(const ct_tensor *input, const ct_tensor *target, ct_loss_opts o) {
    if (!input || !target || !cti_loss_opts_check("mse_loss", &o, 0)) return NULL;
    CTI_AUTOCAST2("mse_loss", input, target);
    return CTI_AUTOCAST_RESULT(cta_mse_loss(input, target, o.reduction));
}

/* ---- binary_cross_entropy_with_logits -------------------------------------------------------- */

/* weight / pos_weight must broadcast to exactly the input's shape (PyTorch
 * multiplies the loss by them in place). */
static bool bce_check_broadcast(const char *name, const ct_tensor *input, const ct_tensor *w) {
    if (!w) return true;
    int64_t shape[CT_MAX_DIMS];
    int ndim;
    if (!ct_broadcast_shapes(name, input->shape, input->ndim, w->shape, w->ndim, shape, &ndim))
        return false;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(ndim == input->ndim &&
                     memcmp(shape, input->shape, sizeof(int64_t) * (size_t)ndim) == 0,
                 false, CT_ERR_SHAPE, "%s: output with shape %s doesn't match the broadcast shape %s",
                 name, ct_shape_str(input->shape, input->ndim, a, sizeof a),
                 ct_shape_str(shape, ndim, b, sizeof b));
    return true;
}

static bool bce_prepare(const char *name, const ct_tensor *input, const ct_tensor *target,
                        const ct_tensor *weight, const ct_tensor *pos_weight,
                        ct_reduction reduction, pw_operands *p) {
    memset(p, 0, sizeof *p);
    if (!cti_loss_check_reduction(name, reduction)) return false;
    const ct_tensor *ts[4] = {input, target, weight, pos_weight};
    if (!ct_check_same_device(name, ts, 4)) return false;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(target->ndim == input->ndim &&
                     memcmp(target->shape, input->shape, sizeof(int64_t) * (size_t)input->ndim) == 0,
                 false, CT_ERR_SHAPE, "%s: Target size (%s) must be the same as input size (%s)",
                 name, ct_shape_str(target->shape, target->ndim, a, sizeof a),
                 ct_shape_str(input->shape, input->ndim, b, sizeof b));
    CT_CHECK_RET(ct_dtype_is_floating(input->dtype), false, CT_ERR_DTYPE,
                 "%s: \"log_sigmoid_forward\" not implemented for '%s'", name,
                 cti_scalar_type_name(input->dtype));
    p->dtype = cti_result_type(input, target);
    CT_CHECK_RET(ct_dtype_is_floating(target->dtype), false, CT_ERR_DTYPE,
                 "%s: result type %s can't be cast to the desired output type %s", name,
                 cti_scalar_type_name(p->dtype), cti_scalar_type_name(target->dtype));
    if (!bce_check_broadcast(name, input, weight) || !bce_check_broadcast(name, input, pos_weight))
        return false;
    p->ndim = input->ndim;
    memcpy(p->shape, input->shape, sizeof(int64_t) * (size_t)input->ndim);
    if (pw_prepare(p, input, target, weight, pos_weight)) return true;
    pw_release(p);
    return false;
}

ct_tensor *cti_bce_with_logits_forward(const ct_tensor *input, const ct_tensor *target,
                                       const ct_tensor *weight, const ct_tensor *pos_weight,
                                       ct_reduction reduction) {
    if (!input || !target) return NULL;
    const char *name = "binary_cross_entropy_with_logits";
    pw_operands p;
    if (!bce_prepare(name, input, target, weight, pos_weight, reduction, &p)) return NULL;
    ct_tensor *out = pw_forward(CT_LOSS_BCE_LOGITS, name, &p, reduction);
    pw_release(&p);
    return out;
}

ct_status cti_bce_with_logits_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                       const ct_tensor *target, const ct_tensor *weight,
                                       const ct_tensor *pos_weight, ct_reduction reduction,
                                       ct_tensor **grad_input, ct_tensor **grad_target) {
    const char *name = "binary_cross_entropy_with_logits_backward";
    if (grad_input) *grad_input = NULL;
    if (grad_target) *grad_target = NULL;
    if (!grad_output || !input || !target) return cti_loss_null_status(name);
    pw_operands p;
    if (!bce_prepare(name, input, target, weight, pos_weight, reduction, &p))
        return ct_last_status();
    ct_status st = pw_backward(CT_LOSS_BCE_LOGITS, "binary_cross_entropy_with_logits", &p,
                               grad_output, reduction, input, target, grad_input, grad_target);
    pw_release(&p);
    return st;
}

ct_tensor *ct_binary_cross_entropy_with_logits_opts(const ct_tensor *input,
                                                    const ct_tensor *target, ct_loss_opts o) {
    if (!input || !target ||
        !cti_loss_opts_check("binary_cross_entropy_with_logits", &o,
                             CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_POS_WEIGHT))
        return NULL;
    const ct_tensor *ac_in_[4] = {input, target, o.weight, o.pos_weight};
    ct_tensor *ac_held_[4] = {NULL, NULL, NULL, NULL};
    if (!CTI_AUTOCAST("binary_cross_entropy_with_logits", 4, ac_in_, ac_held_)) return NULL;
    return CTI_AUTOCAST_RESULT(cta_bce_with_logits(ac_in_[0], ac_in_[1], ac_in_[2], ac_in_[3], o.reduction));
}
