/*
 * optimizer.c — SGD, Adam and AdamW over a list of parameters, each step a
 * fused in-place kernel per parameter (src/ops/optim_kernels.h), and
 * clip_grad_norm.
 *
 * State is created lazily on the first step a parameter has a gradient, as
 * in PyTorch (momentum buffer = first gradient; Adam moments = zeros), and
 * lives on the parameter's device. state_dict and load_state_dict are in
 * optimizer_state.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "ctorch/io.h"
#include "ctorch/optim.h"
#include "ops/optim_kernels.h"

#include "optim/optim_internal.h"

static ct_optimizer *optimizer_new(opt_kind kind, ct_tensor *const *params, int n) {
    CT_CHECK_NULL(params != NULL || n == 0, CT_ERR_INVALID_ARG, "optimizer: NULL parameter list");
    CT_CHECK_NULL(n > 0, CT_ERR_INVALID_ARG, "optimizer got an empty parameter list");
    for (int i = 0; i < n; i++) {
        CT_CHECK_OBJ(params[i], NULL, "optimizer: parameter %d is NULL", i);
        CT_CHECK_NULL(ct_is_leaf(params[i]), CT_ERR_INVALID_ARG, "optimizer: can't optimize a non-leaf Tensor (parameter %d)", i);
        CT_CHECK_NULL(ct_dtype_is_floating(ct_dtype_of(params[i])), CT_ERR_DTYPE,
                      "optimizer: parameter %d has dtype %s; only floating-point parameters can be optimized", i,
                      ct_dtype_name(ct_dtype_of(params[i])));
    }
    ct_optimizer *o = calloc(1, sizeof *o);
    param_state *p = calloc((size_t)n, sizeof *p);
    if (!o || !p) {
        free(o), free(p);
        ct_error_set(CT_ERR_OOM, "optimizer: out of memory");
        return NULL;
    }
    o->kind = kind;
    o->p = p;
    o->n = n;
    for (int i = 0; i < n; i++) p[i].param = params[i];
    return o;
}

static ct_tensor **module_params(ct_module *m, int *n) {
    *n = ct_module_parameters(m, NULL, NULL, 0);
    if (*n <= 0) return NULL;
    ct_tensor **p = malloc(sizeof *p * (size_t)*n);
    if (p) ct_module_parameters(m, p, NULL, *n);
    return p;
}

ct_optimizer *ct_sgd_params(ct_tensor *const *params, int n, ct_sgd_opts o) {
    CT_CHECK_NULL(o.lr > 0 && isfinite(o.lr), CT_ERR_INVALID_ARG, "SGD: Invalid learning rate: %g", o.lr);
    CT_CHECK_NULL(o.momentum >= 0, CT_ERR_INVALID_ARG, "SGD: Invalid momentum value: %g", o.momentum);
    CT_CHECK_NULL(o.weight_decay >= 0, CT_ERR_INVALID_ARG, "SGD: Invalid weight_decay value: %g", o.weight_decay);
    CT_CHECK_NULL(!o.nesterov || (o.momentum > 0 && o.dampening == 0), CT_ERR_INVALID_ARG,
                  "SGD: Nesterov momentum requires a momentum and zero dampening");
    ct_optimizer *opt = optimizer_new(OPT_SGD, params, n);
    if (opt) opt->sgd = (cti_sgd_options){o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize};
    return opt;
}

static ct_optimizer *adam_common(ct_tensor *const *params, int n, ct_adam_opts o, bool decoupled) {
    const char *name = decoupled ? "AdamW" : "Adam";
    double lr = o.lr ? o.lr : 1e-3, b1 = o.beta1 ? o.beta1 : 0.9, b2 = o.beta2 ? o.beta2 : 0.999;
    double eps = o.eps ? o.eps : 1e-8;
    double wd = decoupled ? (o.weight_decay == 0 ? 1e-2 : o.weight_decay < 0 ? 0 : o.weight_decay) : o.weight_decay;
    CT_CHECK_NULL(lr > 0, CT_ERR_INVALID_ARG, "%s: Invalid learning rate: %g", name, lr);
    CT_CHECK_NULL(eps >= 0, CT_ERR_INVALID_ARG, "%s: Invalid epsilon value: %g", name, eps);
    CT_CHECK_NULL(b1 >= 0 && b1 < 1, CT_ERR_INVALID_ARG, "%s: Invalid beta parameter at index 0: %g", name, b1);
    CT_CHECK_NULL(b2 >= 0 && b2 < 1, CT_ERR_INVALID_ARG, "%s: Invalid beta parameter at index 1: %g", name, b2);
    CT_CHECK_NULL(wd >= 0, CT_ERR_INVALID_ARG, "%s: Invalid weight_decay value: %g", name, wd);
    ct_optimizer *opt = optimizer_new(OPT_ADAM, params, n);
    if (opt) opt->adam = (cti_adam_options){lr, b1, b2, eps, wd, decoupled, o.amsgrad, o.maximize};
    return opt;
}

ct_optimizer *ct_adam_params(ct_tensor *const *params, int n, ct_adam_opts o) { return adam_common(params, n, o, false); }
ct_optimizer *ct_adamw_params(ct_tensor *const *params, int n, ct_adam_opts o) { return adam_common(params, n, o, true); }

#define FOR_MODULE(call)                          \
    do {                                          \
        CT_CHECK_OBJ(model, NULL, "optimizer: NULL module"); \
        int n_;                                   \
        ct_tensor **p_ = module_params(model, &n_); \
        if (!p_ && n_ > 0) {                      \
            ct_error_set(CT_ERR_OOM, "optimizer: out of memory"); \
            return NULL;                          \
        }                                         \
        ct_optimizer *o_ = call;                  \
        free(p_);                                 \
        return o_;                                \
    } while (0)

ct_optimizer *ct_sgd(ct_module *model, ct_sgd_opts o) { FOR_MODULE(ct_sgd_params(p_, n_, o)); }
ct_optimizer *ct_adam(ct_module *model, ct_adam_opts o) { FOR_MODULE(ct_adam_params(p_, n_, o)); }
ct_optimizer *ct_adamw(ct_module *model, ct_adam_opts o) { FOR_MODULE(ct_adamw_params(p_, n_, o)); }

void ct_optimizer_free(ct_optimizer *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->n; i++)
        for (int k = 0; k < 3; k++) ct_decref(opt->p[i].buf[k]);
    free(opt->p);
    free(opt);
}

/* Optimizer state in float32 for 16-bit parameters, else the param's dtype. */
ct_tensor *cti_optim_state_zeros(const ct_tensor *p) {
    ct_dtype dt = ct_dtype_of(p) == CT_FLOAT16 || ct_dtype_of(p) == CT_BFLOAT16 ? CT_FLOAT32 : ct_dtype_of(p);
    return cti_full(ct_sizes(p), ct_ndim(p), 0.0, dt, ct_device_of(p));
}

static ct_status step_one(ct_optimizer *o, param_state *s) {
    ct_tensor *grad = s->param->grad;
    if (!grad) return CT_OK; /* parameters without a gradient are skipped */
    s->step++;
    if (o->kind == OPT_SGD) {
        bool first = false;
        if (o->sgd.momentum != 0 && !s->buf[0]) {
            if (!(s->buf[0] = cti_optim_state_zeros(s->param))) return ct_last_status();
            first = true;
        }
        return cti_sgd_update(s->param, grad, s->buf[0], &o->sgd, first);
    }
    for (int k = 0; k < (o->adam.amsgrad ? 3 : 2); k++)
        if (!s->buf[k] && !(s->buf[k] = cti_optim_state_zeros(s->param))) return ct_last_status();
    return cti_adam_update(s->param, grad, s->buf[0], s->buf[1], o->adam.amsgrad ? s->buf[2] : NULL, &o->adam,
                           s->step);
}

ct_status ct_step(ct_optimizer *opt) {
    CT_CHECK_OBJ_STATUS(opt, "step: NULL optimizer");
    bool prev = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    ct_status st = CT_OK;
    for (int i = 0; i < opt->n && st == CT_OK; i++) st = step_one(opt, &opt->p[i]);
    ct_set_grad_enabled(prev);
    if (st == CT_OK) opt->steps++;
    return st;
}

ct_status ct_zero_grad(ct_optimizer *opt) {
    CT_CHECK_OBJ_STATUS(opt, "zero_grad: NULL optimizer");
    for (int i = 0; i < opt->n; i++) ct_set_grad(opt->p[i].param, NULL);
    return CT_OK;
}

double ct_optimizer_lr(const ct_optimizer *opt) {
    return !opt ? NAN : opt->kind == OPT_SGD ? opt->sgd.lr : opt->adam.lr;
}

ct_status ct_optimizer_set_lr(ct_optimizer *opt, double lr) {
    CT_CHECK_OBJ_STATUS(opt, "set_lr: NULL optimizer");
    CT_CHECK_STATUS(lr >= 0 && isfinite(lr), CT_ERR_INVALID_ARG, "set_lr: Invalid learning rate: %g", lr);
    if (opt->kind == OPT_SGD) opt->sgd.lr = lr; else opt->adam.lr = lr;
    return CT_OK;
}

int64_t ct_optimizer_step_count(const ct_optimizer *opt) { return opt ? opt->steps : 0; }

/* ---- clip_grad_norm ---------------------------------------------------------- */

/* The joint norm of the gradients of params[0..n) (those that have one),
 * then every gradient scaled by max_norm / (norm + 1e-6) when that is below
 * 1, as torch.nn.utils.clip_grad_norm_. */
static ct_status clip_gradients(ct_tensor *const *p, int n, double max_norm, double norm_type, double *total_norm) {
    CT_CHECK_STATUS(norm_type == 2.0 || isinf(norm_type), CT_ERR_UNSUPPORTED,
                    "clip_grad_norm_: norm_type %g is not supported (use 2 or INFINITY)", norm_type);
    double total = 0;
    ct_status st = CT_OK;
    for (int i = 0; i < n && st == CT_OK; i++) CT_SCOPE {
        if (!p[i] || !p[i]->grad) continue;
        double v = 0;
        ct_tensor *g = ct_to_dtype(p[i]->grad, CT_FLOAT64);
        st = isinf(norm_type) ? ct_item_checked(ct_max_all(ct_abs(g)), &v)
                              : ct_item_checked(ct_sum_all(ct_square(g)), &v);
        total = isinf(norm_type) ? fmax(total, v) : total + v;
    }
    if (!isinf(norm_type)) total = sqrt(total);
    if (total_norm) *total_norm = total;
    double coef = max_norm / (total + 1e-6);
    for (int i = 0; i < n && st == CT_OK && coef < 1.0; i++) CT_SCOPE {
        if (!p[i] || !p[i]->grad) continue;
        st = ct_copy_(p[i]->grad, ct_mul_scalar(p[i]->grad, coef));
    }
    return st;
}

ct_status ct_clip_grad_norm(ct_module *model, double max_norm, double norm_type, double *total_norm) {
    CT_CHECK_OBJ_STATUS(model, "clip_grad_norm_: NULL module");
    int n;
    ct_tensor **p = module_params(model, &n);
    CT_CHECK_STATUS(p || n <= 0, CT_ERR_OOM, "clip_grad_norm_: out of memory");
    ct_status st = clip_gradients(p, n, max_norm, norm_type, total_norm);
    free(p);
    return st;
}

ct_tensor *ct_clip_grad_norm_params(ct_tensor *const *params, int n, double max_norm, double norm_type) {
    CT_CHECK_NULL(params != NULL || n == 0, CT_ERR_INVALID_ARG, "clip_grad_norm_: NULL parameter list");
    CT_CHECK_NULL(n >= 0, CT_ERR_INVALID_ARG, "clip_grad_norm_: negative parameter count %d", n);
    double total = 0;
    if (clip_gradients(params, n, max_norm, norm_type, &total) != CT_OK) return NULL;
    /* PyTorch: a 0-dim tensor in the gradients' dtype on their device; 0.0 without gradients */
    const ct_tensor *first = NULL;
    for (int i = 0; i < n && !first; i++)
        if (params[i] && params[i]->grad) first = params[i]->grad;
    return first ? ct_full(CT_SHAPE(), total, .dtype = first->dtype, .device = first->storage->device)
                 : ct_full(CT_SHAPE(), total);
}

