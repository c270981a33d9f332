/*
 * conv.h — the internal API of the convolution family (src/ops/conv.c):
 * the forward and backward functions that ct_conv2d and its autograd rule
 * are built from.
 *
 * Both return UNTRACKED references (give them back with ct_decref), accept
 * NULL tensor inputs (returning NULL / the last error without a new
 * message) and validate everything with PyTorch's messages.
 */
#ifndef CT_OPS_CONV_H
#define CT_OPS_CONV_H

#include "core/internal.h"

/* (height, width) parameters, already resolved (no NULL defaults). */
typedef struct cti_conv2d_params {
    int64_t stride[2];
    int64_t padding[2];
    int64_t dilation[2];
    int64_t groups;
} cti_conv2d_params;

/* stride/padding/dilation may be NULL (PyTorch's defaults 1, 0, 1). */
cti_conv2d_params cti_conv2d_params_make(const int64_t stride[2], const int64_t padding[2],
                                         const int64_t dilation[2], int64_t groups);

/* torch.nn.functional.conv2d: input [N, C, H, W] or [C, H, W], weight
 * [O, C/groups, kH, kW], bias [O] or NULL. Returns [N, O, OH, OW] (or
 * [O, OH, OW] for an unbatched input), in the inputs' dtype. */
ct_tensor *cti_conv2d_forward(const ct_tensor *input, const ct_tensor *weight,
                              const ct_tensor *bias, const cti_conv2d_params *p);

/* relu(conv2d(...)) in one pass where the backend can fuse them (the
 * CPU's oneDNN convolutions), else the two ops in turn; same arguments. */
ct_tensor *cti_conv2d_relu_forward(const ct_tensor *input, const ct_tensor *weight,
                                   const ct_tensor *bias, const cti_conv2d_params *p);

/* Gradients of conv2d for grad_out (the gradient of its result; the
 * forward's output shape, dtype and device). For each non-NULL out pointer:
 *   *grad_input  = dL/d input,  shaped like input (3-D input: 3-D grad),
 *   *grad_weight = dL/d weight, shaped like weight,
 *   *grad_bias   = dL/d bias,   shape [O] (the sum of grad_out over every
 *                  dim but the channel one; needs no bias tensor),
 * each a new untracked reference in the inputs' dtype (16-bit: computed in
 * float32, rounded once). NULL out pointers skip that gradient and its
 * work. On failure every out pointer is set to NULL and the error code is
 * returned; a NULL grad_out, input or weight returns the last status. */
ct_status cti_conv2d_backward(const ct_tensor *grad_out, const ct_tensor *input,
                              const ct_tensor *weight, const cti_conv2d_params *p,
                              ct_tensor **grad_input, ct_tensor **grad_weight,
                              ct_tensor **grad_bias);

#endif /* CT_OPS_CONV_H */
