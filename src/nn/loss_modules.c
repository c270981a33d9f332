/*
 * loss_modules.c — the loss modules (criterions) of nn.h:
 * nn.CrossEntropyLoss, nn.MSELoss, nn.NLLLoss and nn.BCEWithLogitsLoss,
 * and ct_loss, PyTorch's criterion(input, target).
 *
 * A criterion is a module so that it lives where PyTorch's does: its class
 * weights are buffers, so they move with ct_module_to and are saved in the
 * state_dict. The options are checked once, when the criterion is made
 * (naming the module, while the mistake is in sight); each call then runs
 * the functional loss with the stored options and the current buffers, so
 * module and functional give the same values and gradients by construction.
 */
#include <stdlib.h>

#include "module_impl.h"
#include "ops/loss.h"

typedef enum loss_kind { LOSS_CROSS_ENTROPY, LOSS_MSE, LOSS_NLL, LOSS_BCE_WITH_LOGITS } loss_kind;

/* PyTorch's class names and the options each loss takes. */
static const struct {
    const char *type;
    unsigned takes;
} k_losses[] = {
    [LOSS_CROSS_ENTROPY] = {"CrossEntropyLoss", CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_IGNORE_INDEX |
                                                    CTI_LOSS_TAKES_SMOOTHING},
    [LOSS_MSE] = {"MSELoss", 0},
    [LOSS_NLL] = {"NLLLoss", CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_IGNORE_INDEX},
    [LOSS_BCE_WITH_LOGITS] = {"BCEWithLogitsLoss", CTI_LOSS_TAKES_WEIGHT | CTI_LOSS_TAKES_POS_WEIGHT},
};

/* The options without the tensors, which are the module's buffers. */
typedef struct loss_state {
    loss_kind kind;
    ct_loss_opts o;
} loss_state;

/* A criterion needs the target too, which a forward function cannot take. */
static ct_tensor *loss_forward(ct_module *m, const ct_tensor *input) {
    ct_error_set(CT_ERR_INVALID_ARG,
                 "%s takes an input and a target: call ct_loss(criterion, input, target), not ct_forward",
                 m->type);
    return NULL;
}

static ct_module *make_loss(loss_kind kind, ct_loss_opts o) {
    const char *type = k_losses[kind].type;
    if (!cti_loss_opts_check(type, &o, k_losses[kind].takes) || !cti_loss_check_reduction(type, o.reduction))
        return NULL;
    /* PyTorch checks this on the first call; here the constructor names it */
    CT_CHECK_NULL(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, CT_ERR_INVALID_ARG,
                  "%s: label_smoothing must be between 0.0 and 1.0. Got: %g", type, o.label_smoothing);
    loss_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "%s: out of memory", type);
    *s = (loss_state){kind, o};
    s->o.weight = s->o.pos_weight = NULL;
    ct_module *m = cti_module_new_plain(type, loss_forward, s, sizeof *s); /* plain: no tensors in s->o */
    if (!m) return NULL;
    /* ct_module_add_buffer takes the detached handle's reference, in a scope or not */
    if ((o.weight && ct_module_add_buffer(m, "weight", ct_detach(o.weight))) ||
        (o.pos_weight && ct_module_add_buffer(m, "pos_weight", ct_detach(o.pos_weight)))) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_cross_entropy_loss_opts(ct_loss_opts o) { return make_loss(LOSS_CROSS_ENTROPY, o); }
ct_module *ct_nn_mse_loss_opts(ct_loss_opts o) { return make_loss(LOSS_MSE, o); }
ct_module *ct_nn_nll_loss_opts(ct_loss_opts o) { return make_loss(LOSS_NLL, o); }
ct_module *ct_nn_bce_with_logits_loss_opts(ct_loss_opts o) { return make_loss(LOSS_BCE_WITH_LOGITS, o); }

ct_tensor *ct_loss(ct_module *criterion, const ct_tensor *input, const ct_tensor *target) {
    CT_CHECK_OBJ(criterion, NULL, "loss: NULL criterion");
    if (!input || !target) { /* a failed call made it: its error is the one to keep */
        ct_error_null_input("loss");
        return NULL;
    }
    CT_CHECK_NULL(criterion->forward == loss_forward, CT_ERR_INVALID_ARG,
                  "loss: %s is not a criterion (make one with ct_nn_cross_entropy_loss, ct_nn_mse_loss, "
                  "ct_nn_nll_loss or ct_nn_bce_with_logits_loss)",
                  criterion->type);
    const loss_state *s = criterion->state;
    ct_loss_opts o = s->o;
    switch (s->kind) {
    case LOSS_CROSS_ENTROPY:
        o.weight = ct_module_buffer(criterion, "weight");
        return ct_cross_entropy_opts(input, target, o);
    case LOSS_MSE:
        return ct_mse_loss_opts(input, target, o);
    case LOSS_NLL:
        o.weight = ct_module_buffer(criterion, "weight");
        return ct_nll_loss_opts(input, target, o);
    case LOSS_BCE_WITH_LOGITS:
        o.weight = ct_module_buffer(criterion, "weight");
        o.pos_weight = ct_module_buffer(criterion, "pos_weight");
        return ct_binary_cross_entropy_with_logits_opts(input, target, o);
    }
    ct_error_set(CT_ERR_INTERNAL, "loss: %s has an unknown kind %d", criterion->type, (int)s->kind);
    return NULL;
}
