/*
 * nn.h — the internal API of the "nn" family (src/ops/nn*.c): the forward
 * and backward functions that the functions of ctorch/functional_nn.h and
 * their autograd rules are built from.
 *
 * Conventions (as the rest of the internal API):
 *  - tensor results are UNTRACKED references (give them back with
 *    ct_decref); NULL tensor inputs return NULL / the last status without a
 *    new message; everything is validated with PyTorch's messages;
 *  - a backward takes grad_output (the gradient of the forward's result:
 *    its shape, a floating dtype, the same device) and returns gradients in
 *    grad_output's dtype (parameter gradients: the parameter's dtype), each
 *    shaped like the tensor it belongs to;
 *  - multi-result backwards fill the out pointers that are not NULL (NULL
 *    skips that gradient and its work); on failure every out pointer is set
 *    to NULL and the error code is returned.
 */
#ifndef CT_OPS_NN_H
#define CT_OPS_NN_H

#include "core/internal.h"
#include "ctorch/functional_nn.h"

/* ---- pooling ------------------------------------------------------------------------- */

/* Resolved 2-D pooling parameters; index 0 is height, 1 is width. */
typedef struct cti_pool2d_params {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t padding[2];
    int64_t dilation[2];        /* 1 for avg pooling */
    bool ceil_mode;
    bool count_include_pad;     /* avg pooling */
    int64_t divisor_override;   /* avg pooling; 0: none */
} cti_pool2d_params;

/* From the user's arguments (NULL: PyTorch's defaults stride = kernel,
 * padding 0, dilation 1). Checks only what needs no input; the forward
 * checks the rest. */
cti_pool2d_params cti_pool2d_params_make(const int64_t kernel[2], const int64_t stride[2],
                                         const int64_t padding[2], const int64_t dilation[2],
                                         bool ceil_mode, bool count_include_pad,
                                         int64_t divisor_override);

/* max_pool2d of input [N, C, H, W] or [C, H, W]: the result, and in
 * *indices (when not NULL) the int64 flat h * W + w of each chosen element,
 * the result's shape. */
ct_tensor *cti_max_pool2d_forward(const ct_tensor *input, const cti_pool2d_params *p,
                                  ct_tensor **indices);
/* grad_input (input_shape) from grad_output and the forward's indices. */
ct_tensor *cti_max_pool2d_backward(const ct_tensor *grad_output, const ct_tensor *indices,
                                   ct_shape input_shape, const cti_pool2d_params *p);

ct_tensor *cti_avg_pool2d_forward(const ct_tensor *input, const cti_pool2d_params *p);
ct_tensor *cti_avg_pool2d_backward(const ct_tensor *grad_output, ct_shape input_shape,
                                   const cti_pool2d_params *p);

/* output_size entries < 0 keep the input's size. */
ct_tensor *cti_adaptive_avg_pool2d_forward(const ct_tensor *input, const int64_t output_size[2]);
ct_tensor *cti_adaptive_avg_pool2d_backward(const ct_tensor *grad_output, ct_shape input_shape);

/* ---- batch norm -------------------------------------------------------------------------
 * The stat dtype is float64 for float64 input and float32 otherwise. */

/* F.batch_norm (see ctorch/functional_nn.h): the result, and what the
 * backward needs: *save_mean and *save_invstd, [C] in the stat dtype, hold
 * the statistics the result was normalised with: the batch mean and
 * 1/sqrt(biased batch var + eps) when batch statistics are used (training,
 * or running statistics not given), else running_mean and
 * 1/sqrt(running_var + eps). Either out pointer may be NULL. Running
 * statistics are updated in place when training. */
ct_tensor *cti_batch_norm_forward(const ct_tensor *input, ct_tensor *running_mean,
                                  ct_tensor *running_var, const ct_tensor *weight,
                                  const ct_tensor *bias, bool training, double momentum,
                                  double eps, ct_tensor **save_mean, ct_tensor **save_invstd);
/* Gradients for the forward's input, weight (may be NULL: then as 1) and
 * saved statistics; batch_stats is the forward's `training` (whether it
 * normalised with batch statistics):
 *   *grad_input  [input's shape],
 *   *grad_weight [C] = sum(dy * (x - mean) * invstd) (needs no weight),
 *   *grad_bias   [C] = sum(dy),
 * sums over every dim but the channel one (dim 1). grad_weight and
 * grad_bias have weight's dtype when weight is given. */
ct_status cti_batch_norm_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                  const ct_tensor *weight, const ct_tensor *save_mean,
                                  const ct_tensor *save_invstd, bool batch_stats,
                                  ct_tensor **grad_input, ct_tensor **grad_weight,
                                  ct_tensor **grad_bias);

/* ---- layer norm ----------------------------------------------------------------------- */

/* F.layer_norm, and (either may be NULL) *save_mean and *save_rstd: 1-D
 * [R] in the stat dtype, R = the product of input's leading dims (those
 * not normalised): each row's mean and 1/sqrt(biased var + eps). */
ct_tensor *cti_layer_norm_forward(const ct_tensor *input, ct_shape normalized_shape,
                                  const ct_tensor *weight, const ct_tensor *bias, double eps,
                                  ct_tensor **save_mean, ct_tensor **save_rstd);
/* *grad_input [input's shape]; *grad_weight and *grad_bias
 * [normalized_shape] (sums over the rows of dy * xhat and of dy; they need
 * no weight/bias tensor; weight's dtype when weight is given). weight NULL
 * means 1. */
ct_status cti_layer_norm_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                  ct_shape normalized_shape, const ct_tensor *weight,
                                  const ct_tensor *save_mean, const ct_tensor *save_rstd,
                                  ct_tensor **grad_input, ct_tensor **grad_weight,
                                  ct_tensor **grad_bias);

/* ---- dropout ----------------------------------------------------------------------------- */

/* F.dropout. When it drops (training and p > 0) *mask (may be NULL)
 * receives the bool keep-mask, input's shape; otherwise the result is a
 * new handle on input's data (an alias, not a copy) and *mask is NULL. */
ct_tensor *cti_dropout_forward(const ct_tensor *input, double p, bool training,
                               ct_tensor **mask);
/* grad_output * mask * 1/(1-p) (0 for p == 1); mask NULL: the identity (a
 * new handle on grad_output's data). */
ct_tensor *cti_dropout_backward(const ct_tensor *grad_output, const ct_tensor *mask, double p);

/* ---- embedding ---------------------------------------------------------------------------- */

/* padding_idx as the user gives it (negative from the end, or
 * CT_NO_PADDING_IDX) -> a row in [0, num_embeddings) or -1 for none;
 * false with PyTorch's message when out of range. */
bool cti_embedding_padding_idx(int64_t padding_idx, int64_t num_embeddings, int64_t *resolved);
/* weight [V, D] rows picked by indices (int64/int32, any shape):
 * indices.shape + [D], weight's dtype. */
ct_tensor *cti_embedding_forward(const ct_tensor *indices, const ct_tensor *weight);
/* grad_weight [num_weights, D]: row v sums the grad_output rows whose index
 * is v (deterministically); row padding_idx (resolved; -1 none) is zero. */
ct_tensor *cti_embedding_backward(const ct_tensor *grad_output, const ct_tensor *indices,
                                  int64_t num_weights, int64_t padding_idx);

#endif /* CT_OPS_NN_H */
