/*
 * optim_kernels.c — the front-end of the fused optimizer updates: checks
 * hyper-parameters (with torch.optim's messages), dtypes, shapes and
 * devices, computes Adam's bias corrections on the host in double, and
 * calls the backend's sgd_update / adam_update on contiguous tensors
 * (non-contiguous ones go through contiguous copies that are written back).
 */
#include "optim_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/backend_loss.h"
#include "loss.h"

/* One tensor of an update: the caller's, and the contiguous one the kernel
 * works on (the same tensor when already contiguous). */
typedef struct opt_operand {
    ct_tensor *orig;
    ct_tensor *work;
    bool written;
} opt_operand;

/* In-place updates cannot write a tensor whose elements overlap. */
static bool check_writable(const char *op, const char *what, const ct_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        CT_CHECK_RET(t->shape[d] <= 1 || t->strides[d] != 0, false, CT_ERR_INVALID_ARG,
                     "%s: unsupported operation: more than one element of the written-to tensor "
                     "(%s) refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.", op, what);
    return true;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Shape, dtype and layout checks of every operand against param; ops[0] is
 * param, ops[1] grad, the rest state. */
static bool check_operands(const char *op, const opt_operand *ops, const char *const *names,
                           int n) {
    const ct_tensor *p = ops[0].orig;
    const ct_tensor *ts[8];
    for (int k = 0; k < n; k++) ts[k] = ops[k].orig;
    if (!ct_check_same_device(op, ts, n)) return false;
    CT_CHECK_RET(ct_dtype_is_floating(p->dtype), false, CT_ERR_DTYPE,
                 "%s: param must be floating point, got %s", op, ct_dtype_name(p->dtype));
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    for (int k = 1; k < n; k++) {
        const ct_tensor *t = ops[k].orig;
        CT_CHECK_RET(same_shape(t, p), false, CT_ERR_SHAPE,
                     "%s: %s of shape %s does not match param of shape %s", op, names[k],
                     ct_shape_str(t->shape, t->ndim, a, sizeof a),
                     ct_shape_str(p->shape, p->ndim, b, sizeof b));
        bool state_ok = t->dtype == p->dtype ||
                        (k > 1 && t->dtype == CT_FLOAT32 &&
                         (p->dtype == CT_FLOAT16 || p->dtype == CT_BFLOAT16));
        CT_CHECK_RET(state_ok, false, CT_ERR_DTYPE, "%s: %s has dtype %s but param has dtype %s%s",
                     op, names[k], ct_dtype_name(t->dtype), ct_dtype_name(p->dtype),
                     k > 1 ? " (state may also be float32 for 16-bit params)" : "");
        CT_CHECK_RET(k <= 2 || t->dtype == ops[2].orig->dtype, false, CT_ERR_DTYPE,
                     "%s: %s has dtype %s but %s has dtype %s (state tensors share one dtype)", op,
                     names[k], ct_dtype_name(t->dtype), names[2],
                     ct_dtype_name(ops[2].orig->dtype));
    }
    for (int k = 0; k < n; k++)
        if (ops[k].written && !check_writable(op, names[k], ops[k].orig)) return false;
    return true;
}

static bool acquire(opt_operand *ops, int n) {
    for (int k = 0; k < n; k++) ops[k].work = NULL;
    for (int k = 0; k < n; k++) {
        ops[k].work = cti_contiguous(ops[k].orig);
        if (!ops[k].work) return false;
    }
    return true;
}

/* Write the results of copies back (when the kernel succeeded) and drop
 * the working references. */
static ct_status release(opt_operand *ops, int n, ct_status st) {
    for (int k = 0; k < n; k++) {
        if (!ops[k].work) continue;
        if (st == CT_OK && ops[k].written && ops[k].work != ops[k].orig)
            st = cti_copy(ops[k].orig, ops[k].work);
        /* an update is an in-place write: values saved for a backward that
         * has not run yet must notice (as PyTorch's optimizer.step does) */
        if (st == CT_OK && ops[k].written) ct_tensor_bump_version(ops[k].orig);
        ct_decref(ops[k].work);
    }
    return st;
}

/* ---- SGD --------------------------------------------------------------------------------- */

static bool check_sgd(const char *op, const cti_sgd_options *o, bool has_buf) {
    CT_CHECK_RET(o->lr >= 0.0, false, CT_ERR_INVALID_ARG, "%s: Invalid learning rate: %g", op, o->lr);
    CT_CHECK_RET(o->momentum >= 0.0, false, CT_ERR_INVALID_ARG, "%s: Invalid momentum value: %g",
                 op, o->momentum);
    CT_CHECK_RET(o->weight_decay >= 0.0, false, CT_ERR_INVALID_ARG,
                 "%s: Invalid weight_decay value: %g", op, o->weight_decay);
    CT_CHECK_RET(!o->nesterov || (o->momentum > 0.0 && o->dampening == 0.0), false,
                 CT_ERR_INVALID_ARG, "%s: Nesterov momentum requires a momentum and zero dampening",
                 op);
    CT_CHECK_RET(has_buf == (o->momentum != 0.0), false, CT_ERR_INVALID_ARG,
                 has_buf ? "%s: a momentum buffer was given but momentum is %g"
                         : "%s: momentum %g needs a momentum buffer",
                 op, o->momentum);
    return true;
}

ct_status cti_sgd_update(ct_tensor *param, const ct_tensor *grad, ct_tensor *momentum_buf,
                         const cti_sgd_options *o, bool first_step) {
    const char *op = "sgd_update";
    if (!param || !grad) return cti_loss_null_status(op);
    if (!check_sgd(op, o, momentum_buf != NULL)) return ct_last_status();
    opt_operand ops[3] = {{param, NULL, true}, {(ct_tensor *)grad, NULL, false},
                          {momentum_buf, NULL, true}};
    static const char *const names[3] = {"param", "grad", "momentum_buffer"};
    int n = momentum_buf ? 3 : 2;
    if (!check_operands(op, ops, names, n)) return ct_last_status();
    if (ct_shape_numel(param->shape, param->ndim) == 0) return CT_OK;
    ct_status st = CT_OK;
    if (!acquire(ops, n)) {
        st = ct_last_status();
    } else {
        ct_kview kp = ct_kview_of(ops[0].work), kg = ct_kview_of(ops[1].work), kb;
        if (momentum_buf) kb = ct_kview_of(ops[2].work);
        ct_sgd_args a = {o->lr, o->momentum, o->dampening, o->weight_decay,
                         o->nesterov, o->maximize, first_step};
        st = CTI_LOSS_CALL(param, sgd_update, op, &kp, &kg, momentum_buf ? &kb : NULL, &a);
    }
    return release(ops, n, st);
}

/* ---- Adam / AdamW -------------------------------------------------------------------------- */

static bool check_adam(const char *op, const cti_adam_options *o, bool has_max, int64_t step) {
    CT_CHECK_RET(o->lr >= 0.0, false, CT_ERR_INVALID_ARG, "%s: Invalid learning rate: %g", op, o->lr);
    CT_CHECK_RET(o->eps >= 0.0, false, CT_ERR_INVALID_ARG, "%s: Invalid epsilon value: %g", op,
                 o->eps);
    CT_CHECK_RET(o->beta1 >= 0.0 && o->beta1 < 1.0, false, CT_ERR_INVALID_ARG,
                 "%s: Invalid beta parameter at index 0: %g", op, o->beta1);
    CT_CHECK_RET(o->beta2 >= 0.0 && o->beta2 < 1.0, false, CT_ERR_INVALID_ARG,
                 "%s: Invalid beta parameter at index 1: %g", op, o->beta2);
    CT_CHECK_RET(o->weight_decay >= 0.0, false, CT_ERR_INVALID_ARG,
                 "%s: Invalid weight_decay value: %g", op, o->weight_decay);
    CT_CHECK_RET(step >= 1, false, CT_ERR_INVALID_ARG,
                 "%s: step must be at least 1 (the count including this step), got %lld", op,
                 (long long)step);
    CT_CHECK_RET(has_max == o->amsgrad, false, CT_ERR_INVALID_ARG,
                 o->amsgrad ? "%s: amsgrad needs max_exp_avg_sq"
                            : "%s: max_exp_avg_sq was given but amsgrad is off",
                 op);
    return true;
}

ct_status cti_adam_update(ct_tensor *param, const ct_tensor *grad, ct_tensor *exp_avg,
                          ct_tensor *exp_avg_sq, ct_tensor *max_exp_avg_sq,
                          const cti_adam_options *o, int64_t step) {
    const char *op = o->decoupled_weight_decay ? "adamw_update" : "adam_update";
    if (!param || !grad || !exp_avg || !exp_avg_sq) return cti_loss_null_status(op);
    if (!check_adam(op, o, max_exp_avg_sq != NULL, step)) return ct_last_status();
    opt_operand ops[5] = {{param, NULL, true},
                          {(ct_tensor *)grad, NULL, false},
                          {exp_avg, NULL, true},
                          {exp_avg_sq, NULL, true},
                          {max_exp_avg_sq, NULL, true}};
    static const char *const names[5] = {"param", "grad", "exp_avg", "exp_avg_sq",
                                         "max_exp_avg_sq"};
    int n = max_exp_avg_sq ? 5 : 4;
    if (!check_operands(op, ops, names, n)) return ct_last_status();
    if (ct_shape_numel(param->shape, param->ndim) == 0) return CT_OK;
    ct_status st = CT_OK;
    if (!acquire(ops, n)) {
        st = ct_last_status();
    } else {
        ct_kview kv[5];
        for (int k = 0; k < n; k++) kv[k] = ct_kview_of(ops[k].work);
        /* torch.optim: 1 - beta ** step in Python floats (double) */
        double bc1 = 1.0 - pow(o->beta1, (double)step), bc2 = 1.0 - pow(o->beta2, (double)step);
        ct_adam_args a = {o->lr,      o->beta1,   o->beta2,
                          o->eps,     o->weight_decay,
                          o->decoupled_weight_decay,
                          o->amsgrad, o->maximize,
                          o->lr / bc1, sqrt(bc2)};
        st = CTI_LOSS_CALL(param, adam_update, op, &kv[0], &kv[1], &kv[2], &kv[3],
                           max_exp_avg_sq ? &kv[4] : NULL, &a);
    }
    return release(ops, n, st);
}

/* ---- GradScaler ------------------------------------------------------------------------------ */

static bool check_amp_grad(const char *op, int k, ct_tensor *grad, const ct_tensor *found_inf) {
    CT_CHECK_RET(grad != NULL, false, CT_ERR_INVALID_ARG, "%s: grads[%d] is NULL", op, k);
    const ct_tensor *both[2] = {grad, found_inf};
    if (!ct_check_same_device(op, both, 2)) return false;
    CT_CHECK_RET(ct_dtype_is_floating(grad->dtype), false, CT_ERR_DTYPE,
                 "%s: grads[%d] must be floating point, got %s", op, k, ct_dtype_name(grad->dtype));
    char what[32];
    snprintf(what, sizeof what, "grads[%d]", k);
    return check_writable(op, what, grad);
}

ct_status cti_amp_unscale(ct_tensor *const *grads, int count, ct_tensor *found_inf, double inv_scale) {
    const char *op = "amp_unscale";
    if (!grads || !found_inf) return cti_loss_null_status(op);
    CT_CHECK_STATUS(count >= 0, CT_ERR_INVALID_ARG, "%s: negative gradient count %d", op, count);
    CT_CHECK_STATUS(found_inf->dtype == CT_FLOAT32 && ct_shape_numel(found_inf->shape, found_inf->ndim) == 1,
                    CT_ERR_INVALID_ARG, "%s: found_inf must be a float32 tensor of one element, got %s", op,
                    ct_dtype_name(found_inf->dtype));
    for (int k = 0; k < count; k++)
        if (!check_amp_grad(op, k, grads[k], found_inf)) return ct_last_status();
    if (count <= 0) return CT_OK;
    opt_operand *ops = calloc((size_t)count, sizeof *ops);
    ct_kview *views = calloc((size_t)count, sizeof *views);
    ct_status st = CT_OK;
    if (!ops || !views) {
        st = ct_error_set(CT_ERR_OOM, "%s: out of memory for %d gradients", op, count);
        count = 0;
    }
    for (int k = 0; k < count; k++) ops[k] = (opt_operand){grads[k], NULL, true};
    if (count && !acquire(ops, count)) {
        st = ct_last_status();
    } else if (count) {
        for (int k = 0; k < count; k++) views[k] = ct_kview_of(ops[k].work);
        ct_kview kf = ct_kview_of(found_inf);
        st = CTI_LOSS_CALL(found_inf, amp_unscale, op, views, count, &kf, inv_scale);
        if (st == CT_OK) ct_tensor_bump_version(found_inf);
    }
    st = release(ops, count, st);
    free(ops), free(views);
    return st;
}
