/*
 * optim_kernels.h — fused, in-place optimizer updates on one tensor
 * (internal), the building blocks of ct_sgd / ct_adam: one kernel launch
 * per parameter tensor instead of a chain of elementwise ops.
 *
 * The formulas are torch.optim's _single_tensor_sgd and
 * _single_tensor_adam / _single_tensor_adamw, reproduced step by step:
 *
 *   SGD:   g = maximize ? -grad : grad
 *          g += weight_decay * param                        (if weight_decay)
 *          buf = first_step ? g : momentum * buf + (1 - dampening) * g
 *          g = nesterov ? g + momentum * buf : buf          (if momentum)
 *          param -= lr * g
 *
 *   Adam:  g = maximize ? -grad : grad
 *          AdamW: param *= 1 - lr * weight_decay
 *          Adam:  g += weight_decay * param                 (if weight_decay)
 *          exp_avg = beta1 * exp_avg + (1 - beta1) * g
 *          exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
 *          v = amsgrad ? (max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq))
 *                      : exp_avg_sq
 *          param -= lr / (1 - beta1^step) * exp_avg
 *                   / (sqrt(v) / sqrt(1 - beta2^step) + eps)
 *
 * Tensors: param (updated), grad (read), state tensors (updated) — all on
 * one device with the same shape. param and grad share a floating dtype;
 * state tensors have param's dtype, or float32 for float16/bfloat16 params.
 * Non-contiguous tensors are handled (through contiguous copies written
 * back); a tensor with overlapping elements (an expanded view) cannot be
 * written in place and is an error.
 */
#ifndef CT_OPS_OPTIM_KERNELS_H
#define CT_OPS_OPTIM_KERNELS_H

#include "core/internal.h"

typedef struct cti_sgd_options {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
} cti_sgd_options;

/* momentum_buf must be NULL when momentum == 0 and given otherwise.
 * first_step: the buffer has no history yet (PyTorch's "buf is None"): it is
 * set to the gradient instead of being decayed; the caller allocates it
 * (e.g. cti_empty_like(param)) before the first step. */
ct_status cti_sgd_update(ct_tensor *param, const ct_tensor *grad, ct_tensor *momentum_buf,
                         const cti_sgd_options *o, bool first_step);

typedef struct cti_adam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool decoupled_weight_decay; /* true: AdamW */
    bool amsgrad, maximize;
} cti_adam_options;

/* step: the step count including this step (1 for the first), as in
 * PyTorch's state['step'] after `step_t += 1`. exp_avg, exp_avg_sq (and
 * max_exp_avg_sq, required exactly when amsgrad) start as zeros. */
ct_status cti_adam_update(ct_tensor *param, const ct_tensor *grad, ct_tensor *exp_avg,
                          ct_tensor *exp_avg_sq, ct_tensor *max_exp_avg_sq,
                          const cti_adam_options *o, int64_t step);

/* GradScaler's unscale of the gradients of one device (PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_): every grad *= inv_scale in
 * place, and found_inf (a float32 tensor of one element on the grads'
 * device) is set to 1 if any grad holds an inf or NaN. One fused kernel
 * for many grads (backend_loss.h); never reads back. */
ct_status cti_amp_unscale(ct_tensor *const *grads, int count, ct_tensor *found_inf, double inv_scale);

#endif /* CT_OPS_OPTIM_KERNELS_H */
