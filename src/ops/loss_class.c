/*
 * loss_class.c — cross_entropy and nll_loss: validation with PyTorch's
 * rules and messages (nll_loss_nd, nll_loss, nll_loss2d and
 * cross_entropy_loss in ATen), and the fused backend kernels behind them.
 *
 * The input is seen as [batch, classes, inner] (classes on dim 1, or dim 0
 * for an unbatched [C] input), so one kernel serves [N, C], [N, C, d1, ...]
 * and [C]. Cross entropy never materialises log_softmax: the kernel
 * computes each row's log-sum-exp and the loss together. Per-row losses and
 * target weights are kept in float32 (float64 for float64 inputs) and
 * reduced with the backend's deterministic `reduce`; MEAN divides by the
 * summed target weights for class targets and by the row count for
 * probability targets, as PyTorch does.
 */
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "amp/autocast.h"
#include "core/backend_loss.h"
#include "loss.h"

/* What a call asks for. */
typedef struct class_req {
    const char *name; /* "cross_entropy" / "nll_loss" (for messages) */
    bool logits;      /* cross_entropy: log_softmax is fused in */
    double smoothing;
    int64_t ignore_index;
    ct_reduction reduction;
} class_req;

/* The operands as the kernels take them; each tensor is an owned reference. */
typedef struct class_prep {
    ct_class_loss_args a;
    ct_tensor *in;     /* contiguous input (promoted dtype for probabilities) */
    ct_tensor *target; /* class targets: int64 contiguous; probabilities: like in */
    ct_tensor *weight; /* contiguous [C] of in's dtype, or NULL */
    int64_t out_shape[CT_MAX_DIMS]; /* the per-sample shape (reduction NONE) */
    int out_ndim;
    ct_dtype out_dtype;
} class_prep;

static void prep_release(class_prep *p) {
    ct_decref(p->in);
    ct_decref(p->target);
    ct_decref(p->weight);
    p->in = p->target = p->weight = NULL;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* Geometry and the per-sample shape: the input's shape without dim 1. */
static void set_geometry(class_prep *p, const ct_tensor *input) {
    const int64_t *s = input->shape;
    p->a.batch = input->ndim == 1 ? 1 : s[0];
    p->a.classes = input->ndim == 1 ? s[0] : s[1];
    p->a.inner = 1;
    for (int d = 2; d < input->ndim; d++) p->a.inner *= s[d];
    p->out_ndim = input->ndim <= 1 ? 0 : input->ndim - 1;
    if (input->ndim >= 2) {
        p->out_shape[0] = s[0];
        memcpy(p->out_shape + 1, s + 2, sizeof(int64_t) * (size_t)(input->ndim - 2));
    }
}

static bool check_weight(const char *name, const ct_tensor *weight, int64_t classes) {
    if (!weight) return true;
    char ws[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(weight->ndim == 1 && weight->shape[0] == classes, false, CT_ERR_SHAPE,
                 "%s: weight tensor should be defined either for all %lld classes or no classes but "
                 "got weight tensor of shape: %s",
                 name, (long long)classes, ct_shape_str(weight->shape, weight->ndim, ws, sizeof ws));
    return true;
}

/* nll_loss_nd's, nll_loss's and nll_loss2d's shape checks, in their order. */
static bool check_class_shapes(const char *name, const ct_tensor *input, const ct_tensor *target) {
    char is[CT_SHAPE_STR_MAX], ts[CT_SHAPE_STR_MAX];
    ct_shape_str(input->shape, input->ndim, is, sizeof is);
    ct_shape_str(target->shape, target->ndim, ts, sizeof ts);
    CT_CHECK_RET(input->ndim >= 1, false, CT_ERR_SHAPE, "%s: Expected 1 or more dimensions (got %d)",
                 name, input->ndim);
    if (input->ndim == 1) {
        CT_CHECK_RET(target->ndim == 0, false, CT_ERR_SHAPE,
                     "%s: size mismatch (got input: %s, target: %s)", name, is, ts);
        return true;
    }
    CT_CHECK_RET(target->ndim >= 1, false, CT_ERR_SHAPE,
                 "%s: size mismatch (got input: %s, target: %s)", name, is, ts);
    CT_CHECK_RET(input->shape[0] == target->shape[0], false, CT_ERR_SHAPE,
                 "%s: Expected input batch_size (%lld) to match target batch_size (%lld).", name,
                 (long long)input->shape[0], (long long)target->shape[0]);
    if (input->ndim == 2) {
        CT_CHECK_RET(target->ndim == 1, false, CT_ERR_SHAPE,
                     "%s: 0D or 1D target tensor expected, multi-target not supported", name);
        return true;
    }
    if (input->ndim == 4) {
        CT_CHECK_RET(target->ndim == 3, false, CT_ERR_SHAPE,
                     "%s: only batches of spatial targets supported (3D tensors) but got targets "
                     "of dimension: %d", name, target->ndim);
        CT_CHECK_RET(target->shape[1] == input->shape[2] && target->shape[2] == input->shape[3],
                     false, CT_ERR_SHAPE, "%s: size mismatch (got input: %s, target: %s)", name, is,
                     ts);
        return true;
    }
    bool ok = target->ndim == input->ndim - 1 &&
              memcmp(target->shape + 1, input->shape + 2,
                     sizeof(int64_t) * (size_t)(input->ndim - 2)) == 0;
    if (!ok) {
        int64_t want[CT_MAX_DIMS];
        want[0] = input->shape[0];
        memcpy(want + 1, input->shape + 2, sizeof(int64_t) * (size_t)(input->ndim - 2));
        char ws[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE, "%s: Expected target size %s, got %s", name,
                     ct_shape_str(want, input->ndim - 1, ws, sizeof ws), ts);
    }
    return ok;
}

/* Class-index targets: checks, then contiguous operands. */
static bool prepare_class(const class_req *q, const ct_tensor *input, const ct_tensor *target,
                          const ct_tensor *weight, class_prep *p) {
    memset(p, 0, sizeof *p);
    CT_CHECK_RET(ct_dtype_is_floating(input->dtype), false, CT_ERR_DTYPE,
                 "%s: \"%s\" not implemented for '%s'", q->name,
                 q->logits ? "log_softmax" : "nll_loss", cti_scalar_type_name(input->dtype));
    if (!check_class_shapes(q->name, input, target)) return false;
    CT_CHECK_RET(target->dtype == CT_INT64 || target->dtype == CT_UINT8, false, CT_ERR_DTYPE,
                 "%s: expected scalar type Long but found %s", q->name,
                 cti_scalar_type_name(target->dtype));
    set_geometry(p, input);
    if (!check_weight(q->name, weight, p->a.classes)) return false;
    CT_CHECK_RET(!weight || weight->dtype == input->dtype, false, CT_ERR_DTYPE,
                 "%s: expected scalar type %s but found %s", q->name,
                 cti_scalar_type_name(input->dtype), cti_scalar_type_name(weight->dtype));
    p->a.ignore_index = q->ignore_index;
    p->a.smoothing = q->smoothing;
    p->a.logits = q->logits;
    p->out_dtype = input->dtype;
    p->in = cti_contiguous(input);
    ct_tensor *t64 = cti_cast(target, CT_INT64);
    p->target = cti_contiguous(t64);
    ct_decref(t64);
    p->weight = weight ? cti_contiguous(weight) : NULL;
    if (p->in && p->target && (p->weight || !weight)) return true;
    prep_release(p);
    return false;
}

/* Probability targets (a floating target of the input's shape). */
static bool prepare_prob(const class_req *q, const ct_tensor *input, const ct_tensor *target,
                         const ct_tensor *weight, class_prep *p) {
    memset(p, 0, sizeof *p);
    CT_CHECK_RET(ct_dtype_is_floating(target->dtype), false, CT_ERR_DTYPE,
                 "%s: Expected floating point type for target with class probabilities, got %s",
                 q->name, cti_scalar_type_name(target->dtype));
    CT_CHECK_RET(q->ignore_index < 0, false, CT_ERR_INVALID_ARG,
                 "%s: ignore_index is not supported for floating point target", q->name);
    CT_CHECK_RET(ct_dtype_is_floating(input->dtype), false, CT_ERR_DTYPE,
                 "%s: \"log_softmax\" not implemented for '%s'", q->name,
                 cti_scalar_type_name(input->dtype));
    CT_CHECK_RET(input->ndim >= 1, false, CT_ERR_SHAPE, "%s: Expected 1 or more dimensions (got %d)",
                 q->name, input->ndim);
    set_geometry(p, input);
    if (!check_weight(q->name, weight, p->a.classes)) return false;
    CT_CHECK_RET(q->smoothing <= 1.0, false, CT_ERR_INVALID_ARG,
                 "%s: label_smoothing must be between 0.0 and 1.0. Got: %g", q->name, q->smoothing);
    p->a.ignore_index = -1;
    p->a.smoothing = q->smoothing > 0.0 ? q->smoothing : 0.0;
    p->a.logits = true;
    p->out_dtype = cti_result_type(input, target);
    ct_tensor *ci = cti_cast(input, p->out_dtype), *ct = cti_cast(target, p->out_dtype);
    ct_tensor *cw = weight ? cti_cast(weight, p->out_dtype) : NULL;
    p->in = cti_contiguous(ci);
    p->target = cti_contiguous(ct);
    p->weight = cw ? cti_contiguous(cw) : NULL;
    ct_decref(ci);
    ct_decref(ct);
    ct_decref(cw);
    if (p->in && p->target && (p->weight || !weight)) return true;
    prep_release(p);
    return false;
}

/* PyTorch's dispatch: same shapes mean probabilities, else class indices. */
static bool prepare(const class_req *q, const ct_tensor *input, const ct_tensor *target,
                    const ct_tensor *weight, bool *prob, class_prep *p) {
    if (!cti_loss_check_reduction(q->name, q->reduction)) return false;
    const ct_tensor *ts[3] = {input, target, weight};
    if (!ct_check_same_device(q->name, ts, 3)) return false;
    *prob = q->logits && same_shape(input, target);
    if (*prob) return prepare_prob(q, input, target, weight, p);
    CT_CHECK_RET(q->smoothing <= 1.0, false, CT_ERR_INVALID_ARG,
                 "%s: label_smoothing must be between 0.0 and 1.0. Got: %g", q->name, q->smoothing);
    class_req cq = *q;
    cq.smoothing = q->smoothing > 0.0 ? q->smoothing : 0.0; /* PyTorch ignores s <= 0 */
    return prepare_class(&cq, input, target, weight, p);
}

static int64_t row_count(const class_prep *p) { return p->a.batch * p->a.inner; }

/* ---- kernels -------------------------------------------------------------------------- */

/* Per-row losses and (when row_weight is wanted) target weights. */
static ct_status run_forward(const class_req *q, const class_prep *p, bool prob, ct_tensor *loss,
                             ct_tensor *row_weight) {
    if (row_count(p) == 0) return CT_OK;
    ct_kview kl = ct_kview_of(loss), ki = ct_kview_of(p->in), kt = ct_kview_of(p->target), kw, kr;
    if (p->weight) kw = ct_kview_of(p->weight);
    if (row_weight) kr = ct_kview_of(row_weight);
    const ct_kview *w = p->weight ? &kw : NULL;
    if (prob) return CTI_LOSS_CALL(p->in, prob_forward, q->name, &kl, &ki, &kt, w, &p->a);
    return CTI_LOSS_CALL(p->in, class_forward, q->name, &kl, row_weight ? &kr : NULL, &ki, &kt, w,
                         &p->a);
}

static ct_tensor *forward(const class_req *q, const ct_tensor *input, const ct_tensor *target,
                          const ct_tensor *weight, ct_tensor **total_weight) {
    if (total_weight) *total_weight = NULL;
    if (!input || !target) return NULL;
    bool prob;
    class_prep p;
    if (!prepare(q, input, target, weight, &prob, &p)) return NULL;
    int64_t rows = row_count(&p);
    ct_dtype acc = cti_loss_acc_dtype(p.out_dtype);
    ct_device dev = p.in->storage->device;
    bool want_weights = !prob && (q->reduction == CT_REDUCTION_MEAN || total_weight);
    ct_tensor *loss = cti_empty(&rows, 1, acc, dev);
    ct_tensor *row_w = want_weights ? cti_empty(&rows, 1, acc, dev) : NULL;
    ct_tensor *out = NULL, *total = NULL;
    if (loss && (row_w || !want_weights) && run_forward(q, &p, prob, loss, row_w) == CT_OK) {
        total = row_w ? cti_reduce(CT_RED_SUM, row_w, NULL, 0, false, 0.0) : NULL;
        if (total || !row_w) {
            if (prob && p.a.classes == 0 && q->reduction == CT_REDUCTION_MEAN)
                out = cti_full(NULL, 0, NAN, p.out_dtype, dev); /* PyTorch: mean of nothing */
            else
                out = cti_loss_reduce(loss, q->reduction, total, p.out_shape, p.out_ndim,
                                      p.out_dtype);
        }
    }
    ct_decref(loss);
    ct_decref(row_w);
    prep_release(&p);
    if (out && total_weight) *total_weight = total;
    else ct_decref(total);
    return out;
}

/* The gradient of the loss w.r.t. each row's value, as the kernels take it:
 * 1-D [rows], one shared value (stride 0) for MEAN and SUM. */
static ct_tensor *row_gradient(const class_req *q, const class_prep *p, bool prob,
                               const ct_tensor *grad_output, const ct_tensor *total_weight) {
    int64_t rows = row_count(p);
    ct_dtype acc = cti_loss_acc_dtype(p->out_dtype);
    if (q->reduction == CT_REDUCTION_NONE) {
        ct_tensor *g = cti_reshape(grad_output, &rows, 1);
        ct_tensor *gc = cti_cast(g, acc);
        ct_decref(g);
        return gc;
    }
    ct_tensor *g = cti_reshape(grad_output, NULL, 0), *gc = cti_cast(g, acc), *scaled = NULL;
    ct_decref(g);
    if (q->reduction == CT_REDUCTION_SUM) scaled = ct_retain(gc);
    else if (prob) scaled = cti_binary_scalar(CT_BIN_MUL, gc, 1.0 / (double)rows);
    else {
        ct_tensor *tw = cti_cast(total_weight, acc);
        scaled = cti_binary(CT_BIN_DIV, gc, tw, 1.0);
        ct_decref(tw);
    }
    ct_decref(gc);
    ct_tensor *row = cti_expand(scaled, &rows, 1);
    ct_decref(scaled);
    return row;
}

static bool check_grad_output(const class_req *q, const class_prep *p, const ct_tensor *g) {
    bool ok = q->reduction == CT_REDUCTION_NONE
                  ? g->ndim == p->out_ndim &&
                        memcmp(g->shape, p->out_shape, sizeof(int64_t) * (size_t)g->ndim) == 0
                  : ct_shape_numel(g->shape, g->ndim) == 1;
    char want[CT_SHAPE_STR_MAX], got[CT_SHAPE_STR_MAX];
    CT_CHECK_RET(ok, false, CT_ERR_SHAPE, "%s_backward: grad_output of shape %s, expected %s",
                 q->name, ct_shape_str(g->shape, g->ndim, got, sizeof got),
                 q->reduction == CT_REDUCTION_NONE
                     ? ct_shape_str(p->out_shape, p->out_ndim, want, sizeof want)
                     : "one element");
    return true;
}

/* The denominator of MEAN for class targets: the forward's, or recomputed. */
static ct_tensor *mean_denominator(const class_req *q, const class_prep *p,
                                   const ct_tensor *total_weight) {
    if (total_weight) return ct_retain((ct_tensor *)total_weight);
    int64_t rows = row_count(p);
    ct_dtype acc = cti_loss_acc_dtype(p->out_dtype);
    ct_device dev = p->in->storage->device;
    ct_tensor *loss = cti_empty(&rows, 1, acc, dev), *row_w = cti_empty(&rows, 1, acc, dev);
    ct_tensor *total = NULL;
    if (loss && row_w && run_forward(q, p, false, loss, row_w) == CT_OK)
        total = cti_reduce(CT_RED_SUM, row_w, NULL, 0, false, 0.0);
    ct_decref(loss);
    ct_decref(row_w);
    return total;
}

static ct_status backward(const class_req *q, const ct_tensor *grad_output,
                          const ct_tensor *input, const ct_tensor *target, const ct_tensor *weight,
                          const ct_tensor *total_weight, ct_tensor **grad_input,
                          ct_tensor **grad_target) {
    if (grad_input) *grad_input = NULL;
    if (grad_target) *grad_target = NULL;
    if (!grad_output || !input || !target) return cti_loss_null_status(q->name);
    bool prob;
    class_prep p;
    if (!prepare(q, input, target, weight, &prob, &p)) return ct_last_status();
    if (!check_grad_output(q, &p, grad_output)) {
        prep_release(&p);
        return ct_last_status();
    }
    bool want_target = prob && grad_target;
    ct_tensor *denom = NULL;
    if (!prob && q->reduction == CT_REDUCTION_MEAN) denom = mean_denominator(q, &p, total_weight);
    ct_tensor *g = NULL;
    if (denom || prob || q->reduction != CT_REDUCTION_MEAN)
        g = row_gradient(q, &p, prob, grad_output, denom);
    ct_decref(denom);
    ct_tensor *gi = cti_empty(p.in->shape, p.in->ndim, p.in->dtype, p.in->storage->device);
    ct_tensor *gt = want_target ? cti_empty_like(p.in) : NULL;
    ct_status st = g && gi && (gt || !want_target) ? CT_OK : ct_last_status();
    if (st == CT_OK && row_count(&p) > 0 && p.a.classes > 0) {
        ct_kview kgi = ct_kview_of(gi), kg = ct_kview_of(g), ki = ct_kview_of(p.in);
        ct_kview kt = ct_kview_of(p.target), kw, kgt;
        if (p.weight) kw = ct_kview_of(p.weight);
        if (gt) kgt = ct_kview_of(gt);
        const ct_kview *w = p.weight ? &kw : NULL;
        st = prob ? CTI_LOSS_CALL(gi, prob_backward, q->name, &kgi, gt ? &kgt : NULL, &kg, &ki,
                                  &kt, w, &p.a)
                  : CTI_LOSS_CALL(gi, class_backward, q->name, &kgi, &kg, &ki, &kt, w, &p.a);
    }
    ct_decref(g);
    prep_release(&p);
    if (st == CT_OK && grad_input) {
        *grad_input = cti_cast(gi, input->dtype);
        if (!*grad_input) st = ct_last_status();
    }
    if (st == CT_OK && gt) {
        *grad_target = cti_cast(gt, target->dtype);
        if (!*grad_target) st = ct_last_status();
    }
    ct_decref(gi);
    ct_decref(gt);
    if (st != CT_OK && grad_input) ct_decref(*grad_input), *grad_input = NULL;
    if (st != CT_OK && grad_target) ct_decref(*grad_target), *grad_target = NULL;
    return st;
}

/* ---- entry points ----------------------------------------------------------------------- */

static class_req ce_req(int64_t ignore_index, ct_reduction reduction, double label_smoothing) {
    return (class_req){"cross_entropy", true, label_smoothing, ignore_index, reduction};
}

static class_req nll_req(int64_t ignore_index, ct_reduction reduction) {
    return (class_req){"nll_loss", false, 0.0, ignore_index, reduction};
}

ct_tensor *cti_cross_entropy_forward(const ct_tensor *input, const ct_tensor *target,
                                     const ct_tensor *weight, int64_t ignore_index,
                                     ct_reduction reduction, double label_smoothing,
                                     ct_tensor **total_weight) {
    class_req q = ce_req(ignore_index, reduction, label_smoothing);
    return forward(&q, input, target, weight, total_weight);
}

ct_status cti_cross_entropy_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                     const ct_tensor *target, const ct_tensor *weight,
                                     int64_t ignore_index, ct_reduction reduction,
                                     double label_smoothing, const ct_tensor *total_weight,
                                     ct_tensor **grad_input, ct_tensor **grad_target) {
    class_req q = ce_req(ignore_index, reduction, label_smoothing);
    return backward(&q, grad_output, input, target, weight, total_weight, grad_input,
                    grad_target);
}

ct_tensor *cti_nll_loss_forward(const ct_tensor *input, const ct_tensor *target,
                                const ct_tensor *weight, int64_t ignore_index,
                                ct_reduction reduction, ct_tensor **total_weight) {
    class_req q = nll_req(ignore_index, reduction);
    return forward(&q, input, target, weight, total_weight);
}

ct_status cti_nll_loss_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                const ct_tensor *target, const ct_tensor *weight,
                                int64_t ignore_index, ct_reduction reduction,
                                const ct_tensor *total_weight, ct_tensor **grad_input) {
    class_req q = nll_req(ignore_index, reduction);
    return backward(&q, grad_output, input, target, weight, total_weight, grad_input, NULL);
}

ct_tensor *ct_cross_entropy_opts(const ct_tensor *input, const ct_tensor *target,
                                 ct_loss_opts o) {
    if (!input || !target ||
        !cti_loss_opts_check("cross_entropy", &o,
                             CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_IGNORE_INDEX |
                                 CTI_LOSS_TAKES_SMOOTHING))
        return NULL;
    CTI_AUTOCAST3("cross_entropy", input, target, o.weight);
    return CTI_AUTOCAST_RESULT(cta_cross_entropy(input, target, o.weight, cti_loss_ignore_index(&o),
                                                 o.reduction, o.label_smoothing));
}

ct_tensor *ct_nll_loss_opts(const ct_tensor *input, const ct_tensor *target, ct_loss_opts o) {
    if (!input || !target ||
        !cti_loss_opts_check("nll_loss", &o, CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_IGNORE_INDEX))
        return NULL;
    CTI_AUTOCAST3("nll_loss", input, target, o.weight);
    return CTI_AUTOCAST_RESULT(cta_nll_loss(input, target, o.weight, cti_loss_ignore_index(&o), o.reduction));
}
