/*
 * scheduler.c — learning-rate schedulers with torch.optim.lr_scheduler's
 * closed forms: StepLR, MultiStepLR, CosineAnnealingLR, OneCycleLR (cosine),
 * LinearLR. As in PyTorch, constructing one applies the epoch-0 rate and
 * each ct_scheduler_step advances one epoch (or one batch for OneCycle).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ctorch/optim.h"

#define M_PI_VALUE 3.14159265358979323846

typedef enum { SCHED_STEP, SCHED_MULTISTEP, SCHED_COSINE, SCHED_ONECYCLE, SCHED_LINEAR } sched_kind;

struct ct_scheduler {
    sched_kind kind;
    ct_optimizer *opt;
    double base_lr, last_lr;
    int epoch;
    int step_size, t_max, total, n_milestones;
    int *milestones;
    double gamma, eta_min, max_lr, start_factor, end_factor;
};

static double cos_anneal(double start, double end, double pct) {
    return end + (start - end) / 2.0 * (cos(M_PI_VALUE * pct) + 1.0);
}

static double lr_at(const ct_scheduler *s, int e) {
    switch (s->kind) {
    case SCHED_STEP: return s->base_lr * pow(s->gamma, (double)(e / s->step_size));
    case SCHED_MULTISTEP: {
        int passed = 0;
        for (int i = 0; i < s->n_milestones; i++) passed += s->milestones[i] <= e;
        return s->base_lr * pow(s->gamma, passed);
    }
    case SCHED_COSINE:
        return s->eta_min + (s->base_lr - s->eta_min) * (1.0 + cos(M_PI_VALUE * e / s->t_max)) / 2.0;
    case SCHED_ONECYCLE: {
        double initial = s->max_lr / 25.0, min_lr = initial / 1e4;
        double end1 = 0.3 * s->total - 1.0, end2 = s->total - 1.0;
        if (e <= end1) return cos_anneal(initial, s->max_lr, e / end1);
        return cos_anneal(s->max_lr, min_lr, (e - end1) / (end2 - end1));
    }
    case SCHED_LINEAR: {
        int k = e < s->total ? e : s->total;
        return s->base_lr * (s->start_factor + (s->end_factor - s->start_factor) * k / s->total);
    }
    }
    return s->base_lr;
}

/* Every constructor checks opt before its other arguments: a NULL optimizer
 * is the result of a failed call, and that call's error is the one to keep. */
#define CHECK_OPT(opt) CT_CHECK_OBJ(opt, NULL, "lr_scheduler: NULL optimizer")

static ct_scheduler *sched_new(sched_kind kind, ct_optimizer *opt) {
    CHECK_OPT(opt);
    ct_scheduler *s = calloc(1, sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "lr_scheduler: out of memory");
    s->kind = kind;
    s->opt = opt;
    s->base_lr = ct_optimizer_lr(opt);
    return s;
}

/* Apply the rate of the current epoch. */
static ct_scheduler *start(ct_scheduler *s) {
    if (!s) return NULL;
    s->last_lr = lr_at(s, 0);
    ct_optimizer_set_lr(s->opt, s->last_lr);
    return s;
}


ct_scheduler *ct_step_lr(ct_optimizer *opt, int step_size, double gamma) {
    CHECK_OPT(opt);
    CT_CHECK_NULL(step_size > 0, CT_ERR_INVALID_ARG, "StepLR: step_size must be positive, got %d", step_size);
    ct_scheduler *s = sched_new(SCHED_STEP, opt);
    if (s) s->step_size = step_size, s->gamma = gamma;
    return start(s);
}

ct_scheduler *ct_multistep_lr(ct_optimizer *opt, const int *milestones, int n, double gamma) {
    CHECK_OPT(opt);
    CT_CHECK_NULL(n >= 0 && (milestones || n == 0), CT_ERR_INVALID_ARG, "MultiStepLR: bad milestone list");
    for (int i = 1; i < n; i++)
        CT_CHECK_NULL(milestones[i] > milestones[i - 1], CT_ERR_INVALID_ARG,
                      "MultiStepLR: milestones should be a list of increasing integers, got %d after %d",
                      milestones[i], milestones[i - 1]);
    ct_scheduler *s = sched_new(SCHED_MULTISTEP, opt);
    if (!s) return NULL;
    s->milestones = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!s->milestones) {
        free(s);
        ct_error_set(CT_ERR_OOM, "MultiStepLR: out of memory");
        return NULL;
    }
    if (n) memcpy(s->milestones, milestones, sizeof(int) * (size_t)n);
    s->n_milestones = n;
    s->gamma = gamma;
    return start(s);
}

ct_scheduler *ct_cosine_annealing_lr(ct_optimizer *opt, int t_max, double eta_min) {
    CHECK_OPT(opt);
    CT_CHECK_NULL(t_max > 0, CT_ERR_INVALID_ARG, "CosineAnnealingLR: T_max must be positive, got %d", t_max);
    ct_scheduler *s = sched_new(SCHED_COSINE, opt);
    if (s) s->t_max = t_max, s->eta_min = eta_min;
    return start(s);
}

ct_scheduler *ct_onecycle_lr(ct_optimizer *opt, double max_lr, int total_steps) {
    CHECK_OPT(opt);
    CT_CHECK_NULL(total_steps > 1 && max_lr > 0, CT_ERR_INVALID_ARG,
                  "OneCycleLR: Expected positive max_lr and total_steps > 1, got %g and %d", max_lr, total_steps);
    ct_scheduler *s = sched_new(SCHED_ONECYCLE, opt);
    if (s) s->max_lr = max_lr, s->total = total_steps;
    return start(s);
}

ct_scheduler *ct_linear_lr(ct_optimizer *opt, double start_factor, double end_factor, int total_iters) {
    CHECK_OPT(opt);
    CT_CHECK_NULL(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1, CT_ERR_INVALID_ARG,
                  "LinearLR: Starting multiplicative factor expected to be greater than 0 and less or equal to 1, "
                  "got %g (end factor %g)", start_factor, end_factor);
    CT_CHECK_NULL(total_iters > 0, CT_ERR_INVALID_ARG, "LinearLR: total_iters must be positive, got %d", total_iters);
    ct_scheduler *s = sched_new(SCHED_LINEAR, opt);
    if (s) s->start_factor = start_factor, s->end_factor = end_factor, s->total = total_iters;
    return start(s);
}

ct_status ct_scheduler_step(ct_scheduler *s) {
    CT_CHECK_OBJ_STATUS(s, "scheduler.step: NULL scheduler");
    /* PyTorch allows exactly total_steps calls of step() after the
     * constructor's (the last one extrapolates the annealing past its end)
     * and refuses the next, naming the count it would have reached. */
    CT_CHECK_STATUS(s->kind != SCHED_ONECYCLE || s->epoch + 1 <= s->total, CT_ERR_STATE,
                    "OneCycleLR: Tried to step %d times. The specified number of total steps is %d", s->epoch + 1,
                    s->total);
    s->epoch++;
    s->last_lr = lr_at(s, s->epoch);
    return ct_optimizer_set_lr(s->opt, s->last_lr);
}

double ct_scheduler_last_lr(const ct_scheduler *s) { return s ? s->last_lr : NAN; }

void ct_scheduler_free(ct_scheduler *s) {
    if (!s) return;
    free(s->milestones);
    free(s);
}
