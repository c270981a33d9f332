/*
 * backend_loss.h — the backend sub-table of the loss family (internal):
 * fused loss kernels and fused optimizer updates. ct_backend.loss points at
 * one of these; NULL (or a NULL entry) means "not implemented on this
 * backend" and the core reports CT_ERR_UNSUPPORTED.
 *
 * The primitives are small on purpose: each computes per-sample (or
 * per-element) values, and the core does the reductions with the backend's
 * `reduce` entry, so results are deterministic (no float atomics anywhere).
 *
 * Contracts (the core guarantees these before calling; see ct_backend in
 * backend.h for the general ones):
 *  - all views live on this backend's device; dtypes are floating unless
 *    stated; "acc" dtype means float64 when the input is float64, else
 *    float32 (per-sample values of 16-bit inputs keep float32 precision);
 *  - outputs are freshly allocated and contiguous;
 *  - an entry sets an error with ct_error_set and returns its code on
 *    failure, and otherwise enqueues its work and may return before it is
 *    done (device backends), except where a check needs the data.
 */
#ifndef CT_CORE_BACKEND_LOSS_H
#define CT_CORE_BACKEND_LOSS_H

#include "backend.h"

/* Elementwise losses. */
typedef enum ct_pointwise_loss {
    CT_LOSS_MSE,        /* (x - t)^2 */
    CT_LOSS_BCE_LOGITS, /* ((1 - t) x - (1 + (pw - 1) t) log_sigmoid(x)) * w */
    CT_LOSS_COUNT_
} ct_pointwise_loss;

/* The geometry and options of a class loss. The input is seen as
 * [batch, classes, inner]: row r = (n, s) has its classes `inner` elements
 * apart, at n * classes * inner + c * inner + s; rows count batch * inner. */
typedef struct ct_class_loss_args {
    int64_t batch, classes, inner;
    int64_t ignore_index; /* class targets only */
    double smoothing;     /* label smoothing s in [0, 1]; 0 for nll_loss */
    bool logits;          /* true: input holds logits and log_softmax is fused
                           * in (lse = log sum exp over the row); false: input
                           * holds log-probabilities (lse = 0, p = 0 below) */
} ct_class_loss_args;

/* One step of torch.optim.SGD (_single_tensor_sgd) on one tensor. */
typedef struct ct_sgd_args {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
    bool first_step; /* momentum buffer starts as the (decayed) gradient */
} ct_sgd_args;

/* One step of torch.optim.Adam / AdamW (_single_tensor_adam[w]) on one
 * tensor; the bias corrections are computed by the caller in double. */
typedef struct ct_adam_args {
    double lr, beta1, beta2, eps, weight_decay;
    bool decoupled_weight_decay; /* AdamW: param *= 1 - lr * wd first */
    bool amsgrad, maximize;
    double step_size;             /* lr / (1 - beta1^step) */
    double bias_correction2_sqrt; /* sqrt(1 - beta2^step) */
} ct_adam_args;

struct ct_backend_loss {
    /* Class-index targets (cross_entropy with indices, nll_loss).
     * in: contiguous [batch, classes, inner]; target: int64 contiguous
     * [batch * inner]; weight: NULL (all ones) or contiguous [classes] of
     * in's dtype. With w_c the weight, t the row's target, W = sum_c w_c,
     * x the row and lse as in ct_class_loss_args:
     *   loss[r] = (1 - s) w_t (lse - x_t) + (s / C) (W lse - sum_c w_c x_c)
     *   row_weight[r] = w_t
     * and both are 0 for rows whose target is ignore_index. loss and
     * row_weight (NULL: not wanted) are contiguous [batch * inner] of the acc
     * dtype. A target outside [0, classes) other than ignore_index fails
     * with CT_ERR_INDEX "Target 7 is out of bounds." (reporting it may wait
     * for the device). */
    ct_status (*class_forward)(const ct_kview *loss, const ct_kview *row_weight,
                               const ct_kview *in, const ct_kview *target, const ct_kview *weight,
                               const ct_class_loss_args *a);
    /* grad_in (contiguous, in's shape and dtype) of sum_r g[r] loss[r]:
     *   grad_in[r, j] = g[r] ((1 - s) w_t (p_j - [j == t]) + (s / C) (W p_j - w_j))
     * with p = softmax of the row (0 when !logits); 0 for ignored rows, and
     * for targets out of range (the forward reported those). grad_row: 1-D
     * [batch * inner], stride 1 or 0 (one value for all rows), any floating
     * dtype. */
    ct_status (*class_backward)(const ct_kview *grad_in, const ct_kview *grad_row,
                                const ct_kview *in, const ct_kview *target, const ct_kview *weight,
                                const ct_class_loss_args *a);

    /* Probability targets (cross_entropy with a floating target of the
     * input's shape): target contiguous like in, in's dtype; q = (1 - s) *
     * target + s / C; logp = log_softmax of the row (a->logits is true):
     *   loss[r] = -sum_c w_c q_c logp_c            (acc dtype, [batch * inner])
     * backward, grad_row as above; grad_target NULL when not wanted:
     *   grad_in[r, j] = g[r] (p_j sum_c w_c q_c - w_j q_j)
     *   grad_target[r, j] = -g[r] (1 - s) w_j logp_j */
    ct_status (*prob_forward)(const ct_kview *loss, const ct_kview *in, const ct_kview *target,
                              const ct_kview *weight, const ct_class_loss_args *a);
    ct_status (*prob_backward)(const ct_kview *grad_in, const ct_kview *grad_target,
                               const ct_kview *grad_row, const ct_kview *in,
                               const ct_kview *target, const ct_kview *weight,
                               const ct_class_loss_args *a);

    /* Elementwise losses: out contiguous; in, target, weight and pos_weight
     * (the last two NULL when absent; pos_weight only for BCE) have out's
     * shape and dtype with any strides (0 on broadcast dims). */
    ct_status (*pointwise_forward)(ct_pointwise_loss op, const ct_kview *out, const ct_kview *in,
                                   const ct_kview *target, const ct_kview *weight,
                                   const ct_kview *pos_weight);
    /* Gradients times grad_out * scale (grad_out: out's shape, any strides,
     * stride 0 everywhere for a reduced loss; scale 1/numel for MEAN):
     *   MSE: d/dx = 2 (x - t), d/dt = -2 (x - t)
     *   BCE: d/dx = w ((1 + (pw - 1) t) sigmoid(x) - pw t),
     *        d/dt = w (-x - (pw - 1) log_sigmoid(x))
     * grad_in and grad_target are contiguous of out's shape; either may be
     * NULL (not wanted). */
    ct_status (*pointwise_backward)(ct_pointwise_loss op, const ct_kview *grad_in,
                                    const ct_kview *grad_target, const ct_kview *grad_out,
                                    const ct_kview *in, const ct_kview *target,
                                    const ct_kview *weight, const ct_kview *pos_weight,
                                    double scale);

    /* Optimizer updates, in place. All views are contiguous with the same
     * number of elements; param and grad share a floating dtype; each state
     * tensor has param's dtype or float32 (16-bit params with float32
     * state). Float64 computes in double, the rest in float.
     * sgd: buf is NULL exactly when momentum == 0. */
    ct_status (*sgd_update)(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                            const ct_sgd_args *a);
    /* adam: max_exp_avg_sq is NULL unless a->amsgrad. */
    ct_status (*adam_update)(const ct_kview *param, const ct_kview *grad, const ct_kview *exp_avg,
                             const ct_kview *exp_avg_sq, const ct_kview *max_exp_avg_sq,
                             const ct_adam_args *a);
    /* GradScaler's fused multi-tensor check-and-unscale (PyTorch's
     * _amp_foreach_non_finite_check_and_unscale_): every one of the `count`
     * grads (contiguous, floating, any mix of dtypes, all on found_inf's
     * device) *= inv_scale in place, skipped when inv_scale is 1 (16-bit
     * grads multiply in float, float64 in double); found_inf (one float32
     * element) becomes 1 if any element is not finite, else is left as it
     * is. GPUs launch one kernel per CT_K_AMP_TENSORS grads. No host
     * synchronisation. */
    ct_status (*amp_unscale)(const ct_kview *grads, int count, const ct_kview *found_inf, double inv_scale);
};

#endif /* CT_CORE_BACKEND_LOSS_H */
