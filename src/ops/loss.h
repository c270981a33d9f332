/*
 * loss.h — the loss family's internal API: forward and backward of every
 * loss of ctorch/functional_loss.h, for the public functions and for the
 * autograd rules.
 *
 * Forwards return an UNTRACKED new reference (NULL on error, NULL inputs
 * propagate) exactly as the public ct_* function would, which is
 * ct_track(cti_*_forward(...)).
 *
 * Backwards take grad_output of the forward's result shape (0-dim for MEAN
 * and SUM, the per-sample shape for NONE; any strides) and the forward's
 * inputs, and return CT_OK or an error code. Each gradient goes to an out
 * pointer, which may be NULL to skip that gradient; a result is an untracked
 * new reference with exactly the shape and dtype of the tensor it is the
 * gradient of. On error every requested out pointer is set to NULL.
 */
#ifndef CT_OPS_LOSS_H
#define CT_OPS_LOSS_H

#include "core/internal.h"
#include "ctorch/functional_loss.h"

/* ---- mse_loss --------------------------------------------------------------------- */

ct_tensor *cti_mse_loss_forward(const ct_tensor *input, const ct_tensor *target,
                                ct_reduction reduction);
/* grad_input = 2 (input - target) * grad_output [/ numel for MEAN], summed
 * over the dims where input was broadcast to target; grad_target likewise
 * with the opposite sign. */
ct_status cti_mse_loss_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                const ct_tensor *target, ct_reduction reduction,
                                ct_tensor **grad_input, ct_tensor **grad_target);

/* ---- cross_entropy ------------------------------------------------------------------ */

/* total_weight (NULL: not wanted) receives, for class targets, the 0-dim sum
 * of the weights of the non-ignored targets (float32, float64 for float64
 * inputs) — the denominator of MEAN, which the backward can reuse — and
 * NULL for probability targets. */
ct_tensor *cti_cross_entropy_forward(const ct_tensor *input, const ct_tensor *target,
                                     const ct_tensor *weight, int64_t ignore_index,
                                     ct_reduction reduction, double label_smoothing,
                                     ct_tensor **total_weight);
/* grad_input: the gradient w.r.t. the logits. grad_target: only for
 * probability targets (requesting it with class targets gives NULL, not an
 * error). total_weight: the forward's, or NULL to recompute it. */
ct_status cti_cross_entropy_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                     const ct_tensor *target, const ct_tensor *weight,
                                     int64_t ignore_index, ct_reduction reduction,
                                     double label_smoothing, const ct_tensor *total_weight,
                                     ct_tensor **grad_input, ct_tensor **grad_target);

/* ---- nll_loss ------------------------------------------------------------------------ */

/* total_weight as in cti_cross_entropy_forward. */
ct_tensor *cti_nll_loss_forward(const ct_tensor *input, const ct_tensor *target,
                                const ct_tensor *weight, int64_t ignore_index,
                                ct_reduction reduction, ct_tensor **total_weight);
/* grad_input[n, t_n] = -w[t_n] * grad_output[n] [/ total_weight for MEAN],
 * zero elsewhere and on ignored samples. */
ct_status cti_nll_loss_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                const ct_tensor *target, const ct_tensor *weight,
                                int64_t ignore_index, ct_reduction reduction,
                                const ct_tensor *total_weight, ct_tensor **grad_input);

/* ---- binary_cross_entropy_with_logits -------------------------------------------------- */

ct_tensor *cti_bce_with_logits_forward(const ct_tensor *input, const ct_tensor *target,
                                       const ct_tensor *weight, const ct_tensor *pos_weight,
                                       ct_reduction reduction);
/* grad_input = w ((1 + (pw - 1) t) sigmoid(x) - pw t) * grad_output,
 * grad_target = w (-x - (pw - 1) log_sigmoid(x)) * grad_output
 * [/ numel for MEAN]; pw = 1 without pos_weight. weight and pos_weight get
 * no gradient (as in PyTorch's derivatives). */
ct_status cti_bce_with_logits_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                       const ct_tensor *target, const ct_tensor *weight,
                                       const ct_tensor *pos_weight, ct_reduction reduction,
                                       ct_tensor **grad_input, ct_tensor **grad_target);

/* ---- shared by loss.c and loss_class.c ------------------------------------------------- */

/* The loss sub-table of t's backend, or NULL with CT_ERR_UNSUPPORTED set
 * naming op when the backend lacks the family. */
const struct ct_backend_loss *cti_loss_ops(const ct_tensor *t, const char *op);
/* Call entry `fn` of t's loss table, or report CT_ERR_UNSUPPORTED naming op
 * when the backend lacks it. */
#define CTI_LOSS_CALL(t, fn, op, ...)                                                  \
    (cti_loss_ops((t), (op)) == NULL ? CT_ERR_UNSUPPORTED                              \
     : cti_loss_ops((t), (op))->fn   ? CTI_PROFILED(t, op, cti_loss_ops((t), (op))->fn(__VA_ARGS__)) \
                                     : ct_error_set(CT_ERR_UNSUPPORTED,                \
                                                    "%s: not implemented on %s", (op), \
                                                    cti_backend(t)->name))
/* Validates a reduction value ("5 is not a valid value for reduction"). */
bool cti_loss_check_reduction(const char *op, ct_reduction reduction);
/* The options of ct_loss_opts a loss takes; cti_loss_opts_check refuses
 * the others as PyTorch refuses the keyword ("mse_loss() got an unexpected
 * keyword argument 'weight'"), naming op (a function or a module). */
enum {
    CTI_LOSS_TAKES_WEIGHT = 1,
    CTI_LOSS_TAKES_POS_WEIGHT = 2,
    CTI_LOSS_TAKES_IGNORE_INDEX = 4,
    CTI_LOSS_TAKES_SMOOTHING = 8
};
bool cti_loss_opts_check(const char *op, const ct_loss_opts *o, unsigned takes);
/* The ignore_index the options mean: a non-zero field or one flagged with
 * has_ignore_index, else PyTorch's -100. */
int64_t cti_loss_ignore_index(const ct_loss_opts *o);
/* What a backward whose input is NULL returns: the pending error's code
 * (the input's producer failed), or a new "a required tensor is NULL". */
ct_status cti_loss_null_status(const char *op);
/* float64 for float64, float32 for the other floating dtypes. */
ct_dtype cti_loss_acc_dtype(ct_dtype dt);
/* The reduction of per-sample values `v` (acc dtype): NONE gives v
 * reshaped to shape (ndim dims) and cast to dt; SUM the 0-dim sum; MEAN the
 * sum divided by `denominator` (a 0-dim tensor) or, when it is NULL, the
 * mean. Consumes nothing. */
ct_tensor *cti_loss_reduce(const ct_tensor *v, ct_reduction reduction,
                           const ct_tensor *denominator, const int64_t *shape, int ndim,
                           ct_dtype dt);
/* t summed down to `shape` (dims where shape is 1 or missing were
 * broadcast), or a new reference to t when shapes agree. */
ct_tensor *cti_loss_sum_to(const ct_tensor *t, const int64_t *shape, int ndim);

#endif /* CT_OPS_LOSS_H */
