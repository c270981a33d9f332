/*
 * ctorch/functional_loss.h — the loss functions of torch.nn.functional:
 * mse_loss, cross_entropy, nll_loss and binary_cross_entropy_with_logits,
 * with PyTorch's formulas, defaults, shapes and messages.
 *
 * C has no default arguments, so every option is a parameter, in PyTorch's
 * order. PyTorch's defaults are: weight NULL, ignore_index -100
 * (CT_IGNORE_INDEX_DEFAULT), reduction CT_REDUCTION_MEAN (the zero value of
 * ct_reduction, so a zero-initialised field means "mean"), label_smoothing 0:
 *
 *     F.cross_entropy(logits, target)
 *  -> ct_cross_entropy(logits, target, NULL, CT_IGNORE_INDEX_DEFAULT,
 *                      CT_REDUCTION_MEAN, 0.0)
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

/* Mean squared error (input - target)^2; target broadcasts against input as
 * in PyTorch (which warns about it). */
CT_API ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target,
                              ct_reduction reduction);

/* log_softmax over the class dim followed by nll_loss, fused into one
 * numerically stable kernel.
 *  - weight: NULL or [C], rescales each class (input's dtype).
 *  - ignore_index: class targets equal to it are skipped; with MEAN the
 *    result is divided by the summed weights of the targets that remain
 *    (NaN when none remain). Not allowed with probability targets.
 *  - label_smoothing in [0, 1]: the target becomes (1 - s) * target + s / C.
 *    For class targets this is (1 - s) * nll + (s / C) * smooth, where
 *    smooth = -sum_c weight[c] * log_softmax[c] per sample (0 for ignored
 *    samples) and MEAN divides both parts by the same summed target weights.
 *    Probability targets with MEAN divide by the number of samples, weighted
 *    or not. */
CT_API ct_tensor *ct_cross_entropy(const ct_tensor *input, const ct_tensor *target,
                                   const ct_tensor *weight, int64_t ignore_index,
                                   ct_reduction reduction, double label_smoothing);

/* Negative log likelihood of class targets; input holds log-probabilities
 * (e.g. ct_log_softmax). Weighted MEAN divides by the summed weights of the
 * non-ignored targets. */
CT_API ct_tensor *ct_nll_loss(const ct_tensor *input, const ct_tensor *target,
                              const ct_tensor *weight, int64_t ignore_index,
                              ct_reduction reduction);

/* Binary cross entropy on logits, in the stable form
 *   (1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x),
 * times weight. target has input's shape; weight and pos_weight (NULL for
 * none) broadcast to it (pos_weight typically [C], the last dim). */
CT_API ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *input,
                                                      const ct_tensor *target,
                                                      const ct_tensor *weight,
                                                      const ct_tensor *pos_weight,
                                                      ct_reduction reduction);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_FUNCTIONAL_LOSS_H */
