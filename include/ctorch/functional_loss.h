/*
 * ctorch/functional_loss.h — the loss functions of torch.nn.functional:
 * mse_loss, cross_entropy, nll_loss and binary_cross_entropy_with_logits,
 * with PyTorch's formulas, defaults, shapes and messages.
 *
 * The options PyTorch gives as keyword arguments are designated
 * initialisers after the two tensors, as for tensor creation (CT_OPTS);
 * an option left out has PyTorch's default:
 *
 *     F.cross_entropy(logits, target)          -> ct_cross_entropy(logits, target)
 *     F.cross_entropy(logits, target, weight=w, label_smoothing=0.1, reduction="sum")
 *         -> ct_cross_entropy(logits, target, .weight = w, .label_smoothing = 0.1,
 *                             .reduction = CT_REDUCTION_SUM)
 *     F.nll_loss(logp, target, ignore_index=0)
 *         -> ct_nll_loss(logp, target, CT_IGNORE_INDEX(0))
 *
 * The macros call ct_<loss>_opts(input, target, ct_loss_opts), which takes
 * a ready-made options struct (CT_LOSS_OPTS(...) builds one). nn.h has the
 * same losses as modules (ct_nn_cross_entropy_loss, …; ct_loss).
 *
 * Shapes: input [N, C] or [N, C, d1, ...] (classes on dim 1), or [C] for a
 * single unbatched sample. Class targets are int64 (or uint8) indices of
 * shape [N] / [N, d1, ...] / []; cross_entropy also takes class
 * probabilities: a floating target of exactly the input's shape.
 * reduction NONE keeps the per-sample shape, MEAN and SUM give a 0-dim
 * tensor. Inputs are floating (float32, float64, float16, bfloat16) on any
 * device; all tensors of one call live on one device.
 */
#ifndef CTORCH_FUNCTIONAL_LOSS_H
#define CTORCH_FUNCTIONAL_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* reduction='mean' | 'none' | 'sum'. */
typedef enum ct_reduction {
    CT_REDUCTION_MEAN = 0, /* PyTorch's default */
    CT_REDUCTION_NONE = 1,
    CT_REDUCTION_SUM = 2
} ct_reduction;

/* PyTorch's default ignore_index: targets equal to it contribute nothing. */
#define CT_IGNORE_INDEX_DEFAULT (-100)

/* The options of every loss, one struct for all four (and for the loss
 * modules of nn.h); a zero field is PyTorch's default. A loss refuses an
 * option it does not have, as PyTorch refuses the keyword ("mse_loss() got
 * an unexpected keyword argument 'weight'").
 *
 * ignore_index: C cannot tell a field set to 0 from one left out, and 0 is
 * a class while PyTorch's default is -100. So a non-zero .ignore_index is
 * used as given, and ignoring class 0 takes .has_ignore_index = true too;
 * with neither, targets equal to -100 are ignored. */
typedef struct ct_loss_opts {
    int reserved_;               /* keeps the macros valid with no options; leave it */
    const ct_tensor *weight;     /* cross_entropy, nll_loss: [C]; bce_with_logits: broadcasts */
    const ct_tensor *pos_weight; /* binary_cross_entropy_with_logits */
    ct_reduction reduction;      /* CT_REDUCTION_MEAN (0) */
    int64_t ignore_index;        /* cross_entropy, nll_loss: see above */
    bool has_ignore_index;
    double label_smoothing;      /* cross_entropy, in [0, 1] */
} ct_loss_opts;
#define CT_LOSS_OPTS(...) ((ct_loss_opts){.reserved_ = 0, __VA_ARGS__})
/* ignore_index=i for any i, 0 included: both fields at once. */
#define CT_IGNORE_INDEX(i) .ignore_index = (i), .has_ignore_index = true

#define ct_mse_loss(input, target, ...) \
    ct_mse_loss_opts((input), (target), CT_LOSS_OPTS(__VA_ARGS__))
#define ct_cross_entropy(input, target, ...) \
    ct_cross_entropy_opts((input), (target), CT_LOSS_OPTS(__VA_ARGS__))
#define ct_nll_loss(input, target, ...) \
    ct_nll_loss_opts((input), (target), CT_LOSS_OPTS(__VA_ARGS__))
#define ct_binary_cross_entropy_with_logits(input, target, ...) \
    ct_binary_cross_entropy_with_logits_opts((input), (target), CT_LOSS_OPTS(__VA_ARGS__))

/* Mean squared error (input - target)^2; target broadcasts against input as
 * in PyTorch (which warns about it). Options: reduction. */
CT_API ct_tensor *ct_mse_loss_opts(const ct_tensor *input, const ct_tensor *target, ct_loss_opts o);

/* log_softmax over the class dim followed by nll_loss, fused into one
 * numerically stable kernel. Options:
 *  - weight: NULL or [C], rescales each class (input's dtype).
 *  - ignore_index: class targets equal to it are skipped; with MEAN the
 *    result is divided by the summed weights of the targets that remain
 *    (NaN when none remain). Not allowed with probability targets (leave
 *    it unset).
 *  - label_smoothing in [0, 1]: the target becomes (1 - s) * target + s / C.
 *    For class targets this is (1 - s) * nll + (s / C) * smooth, where
 *    smooth = -sum_c weight[c] * log_softmax[c] per sample (0 for ignored
 *    samples) and MEAN divides both parts by the same summed target weights.
 *    Probability targets with MEAN divide by the number of samples, weighted
 *    or not.
 *  - reduction. */
CT_API ct_tensor *ct_cross_entropy_opts(const ct_tensor *input, const ct_tensor *target,
                                        ct_loss_opts o);

/* Negative log likelihood of class targets; input holds log-probabilities
 * (e.g. ct_log_softmax). Weighted MEAN divides by the summed weights of the
 * non-ignored targets. Options: weight, ignore_index, reduction. */
CT_API ct_tensor *ct_nll_loss_opts(const ct_tensor *input, const ct_tensor *target, ct_loss_opts o);

/* Binary cross entropy on logits, in the stable form
 *   (1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x),
 * times weight. target has input's shape; the options weight and
 * pos_weight (NULL for none) broadcast to it (pos_weight typically [C], the
 * last dim); reduction. */
CT_API ct_tensor *ct_binary_cross_entropy_with_logits_opts(const ct_tensor *input,
                                                           const ct_tensor *target,
                                                           ct_loss_opts o);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_FUNCTIONAL_LOSS_H */
