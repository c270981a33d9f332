/*
 * optim_internal.h — the optimizer's layout, shared by optimizer.c (the
 * steps) and optimizer_state.c (state_dict and its strict loading).
 */
#ifndef CT_OPTIM_INTERNAL_H
#define CT_OPTIM_INTERNAL_H

#include "ctorch/optim.h"
#include "ops/optim_kernels.h"

typedef enum { OPT_SGD, OPT_ADAM } opt_kind;

typedef struct param_state {
    ct_tensor *param;           /* borrowed */
    ct_tensor *buf[3];          /* sgd: momentum; adam: exp_avg, exp_avg_sq, max_exp_avg_sq */
    int64_t step;
} param_state;

struct ct_optimizer {
    opt_kind kind;
    cti_sgd_options sgd;
    cti_adam_options adam;
    param_state *p;
    int n;
    int64_t steps;
};

/* Zeros shaped like parameter p, on its device: float32 for 16-bit
 * parameters, else p's dtype. */
ct_tensor *cti_optim_state_zeros(const ct_tensor *p);

#endif /* CT_OPTIM_INTERNAL_H */
