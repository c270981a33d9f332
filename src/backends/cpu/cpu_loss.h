/*
 * cpu_loss.h — the CPU backend's loss-family entries shared between its
 * files (internal): cpu_loss.c holds the loss kernels and the sub-table
 * ct_cpu_loss_ops, cpu_optim.c the optimizer updates. Signatures are those
 * of struct ct_backend_loss (src/core/backend_loss.h).
 */
#ifndef CT_CPU_LOSS_H
#define CT_CPU_LOSS_H

#include "../../core/backend_loss.h"

ct_status ct_cpu_sgd_update(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                            const ct_sgd_args *a);
ct_status ct_cpu_adam_update(const ct_kview *param, const ct_kview *grad, const ct_kview *exp_avg,
                             const ct_kview *exp_avg_sq, const ct_kview *max_exp_avg_sq,
                             const ct_adam_args *a);
/* GradScaler's fused check-and-unscale (backend_loss.h's amp_unscale). */
ct_status ct_cpu_amp_unscale(const ct_kview *grads, int count, const ct_kview *found_inf, double inv_scale);

extern const struct ct_backend_loss ct_cpu_loss_ops;

#endif /* CT_CPU_LOSS_H */
