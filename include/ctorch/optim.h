/*
 * ctorch/optim.h — optimizers and learning-rate schedulers, as torch.optim.
 *
 *   ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
 *   ct_zero_grad(opt); ct_backward(loss); ct_step(opt);
 *
 * An optimizer keeps (borrowed) pointers to its parameters — the module
 * must outlive it — and owns its state (momentum buffers, Adam moments).
 * Updates run as one fused kernel per parameter on its device.
 * ct_zero_grad sets gradients to none, as PyTorch does by default.
 */
#ifndef CTORCH_OPTIM_H
#define CTORCH_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "nn.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optimizer ct_optimizer;

typedef struct ct_sgd_opts {
    double lr;            /* required (> 0) */
    double momentum, dampening, weight_decay;
    bool nesterov, maximize;
} ct_sgd_opts;

typedef struct ct_adam_opts {
    double lr;            /* 0 means the default 1e-3 */
    double beta1, beta2;  /* 0 means the defaults 0.9 and 0.999 */
    double eps;           /* 0 means the default 1e-8 */
    double weight_decay;  /* Adam default 0; AdamW: 0 means the default 1e-2, use a negative value for none */
    bool amsgrad, maximize;
} ct_adam_opts;

CT_API ct_optimizer *ct_sgd(ct_module *model, ct_sgd_opts o);
CT_API ct_optimizer *ct_adam(ct_module *model, ct_adam_opts o);
CT_API ct_optimizer *ct_adamw(ct_module *model, ct_adam_opts o);
/* The same over an explicit parameter list (borrowed; floating leaves). */
CT_API ct_optimizer *ct_sgd_params(ct_tensor *const *params, int n, ct_sgd_opts o);
CT_API ct_optimizer *ct_adam_params(ct_tensor *const *params, int n, ct_adam_opts o);
CT_API ct_optimizer *ct_adamw_params(ct_tensor *const *params, int n, ct_adam_opts o);
CT_API void ct_optimizer_free(ct_optimizer *opt);

CT_API ct_status ct_step(ct_optimizer *opt);
CT_API ct_status ct_zero_grad(ct_optimizer *opt);     /* grads to none */
CT_API double ct_optimizer_lr(const ct_optimizer *opt);
CT_API ct_status ct_optimizer_set_lr(ct_optimizer *opt, double lr);
CT_API int64_t ct_optimizer_step_count(const ct_optimizer *opt);

/* optimizer.state_dict() / load_state_dict(): per-parameter state as
 * "state.<i>.momentum_buffer", "state.<i>.exp_avg", …, "state.<i>.step", and
 * the optimizer kind, lr and step count as metadata (ctorch/io.h). Loading
 * checks the optimizer kind and every entry name before changing anything,
 * and each tensor's size as it copies it. */
struct ct_tensor_dict;
CT_API struct ct_tensor_dict *ct_optimizer_state_dict(const ct_optimizer *opt);
CT_API ct_status ct_optimizer_load_state_dict(ct_optimizer *opt, const struct ct_tensor_dict *d);

/* torch.nn.utils.clip_grad_norm_: scales all gradients so that their joint
 * norm (norm_type 2 or INFINITY) is at most max_norm; *total_norm (may be
 * NULL) receives the norm before clipping. */
CT_API ct_status ct_clip_grad_norm(ct_module *model, double max_norm, double norm_type, double *total_norm);
/* The same over a parameter list, as clip_grad_norm_(parameters, …): returns
 * the total norm as a 0-dim tensor (the gradients' dtype and device; 0.0 on
 * the CPU when none has a gradient), NULL on error. */
CT_API ct_tensor *ct_clip_grad_norm_params(ct_tensor *const *params, int n, double max_norm, double norm_type);

/* ---- learning-rate schedulers (call ct_scheduler_step once per epoch or per
 * batch, after ct_step, as in PyTorch) ---- */
typedef struct ct_scheduler ct_scheduler;
CT_API ct_scheduler *ct_step_lr(ct_optimizer *opt, int step_size, double gamma);
CT_API ct_scheduler *ct_multistep_lr(ct_optimizer *opt, const int *milestones, int n, double gamma);
CT_API ct_scheduler *ct_cosine_annealing_lr(ct_optimizer *opt, int t_max, double eta_min);
/* OneCycleLR with cosine annealing and PyTorch's defaults for the rest
 * (pct_start 0.3, div_factor 25, final_div_factor 1e4). */
CT_API ct_scheduler *ct_onecycle_lr(ct_optimizer *opt, double max_lr, int total_steps);
/* LinearLR: lr × factor, factor going from start_factor to end_factor over
 * total_iters steps (a linear warm-up with start_factor < 1). */
CT_API ct_scheduler *ct_linear_lr(ct_optimizer *opt, double start_factor, double end_factor, int total_iters);
CT_API ct_status ct_scheduler_step(ct_scheduler *s);
CT_API double ct_scheduler_last_lr(const ct_scheduler *s);
CT_API void ct_scheduler_free(ct_scheduler *s);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_OPTIM_H */
