/*
 * ctorch/functional_conv.h — torch.nn.functional.conv2d.
 *
 *   y = ct_conv2d(x, w, b, CT_PAIR(2, 2), CT_PAIR(1, 1), NULL, 1);
 *
 * is F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=1). The 2-D
 * parameters are (height, width) arrays; NULL gives PyTorch's default
 * (stride 1, padding 0, dilation 1). Shapes, dtypes and messages follow
 * PyTorch; float16/bfloat16 accumulate in float32. Returns a new reference
 * or NULL (see ctorch/status.h).
 */
#ifndef CTORCH_FUNCTIONAL_CONV_H
#define CTORCH_FUNCTIONAL_CONV_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A (height, width) pair for the 2-D parameters of functional ops. */
#ifndef CT_PAIR
#define CT_PAIR(h, w) ((const int64_t[2]){(h), (w)})
#endif

/* input [N, C, H, W] (or unbatched [C, H, W]); weight [O, C/groups, kH, kW];
 * bias [O] or NULL. Result [N, O, OH, OW] (or [O, OH, OW]) with
 * OH = (H + 2*padding[0] - dilation[0]*(kH - 1) - 1) / stride[0] + 1, and
 * likewise OW. All tensors must share dtype (a floating one) and device. */
CT_API ct_tensor *ct_conv2d(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias,
                            const int64_t stride[2], const int64_t padding[2],
                            const int64_t dilation[2], int64_t groups);

/* relu(conv2d(input, weight, bias, …)) as one op: the same values and
 * gradients as ct_relu(ct_conv2d(…)), computed in one pass where the backend
 * can fuse them (the CPU's oneDNN convolutions add the bias and apply the
 * relu inside the convolution), which saves a pass over the output and its
 * memory. PyTorch has no eager functional for it (its fusers make
 * ConvReLU2d); the autograd node is ConvolutionReluBackward0. */
CT_API ct_tensor *ct_conv2d_relu(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias,
                                 const int64_t stride[2], const int64_t padding[2],
                                 const int64_t dilation[2], int64_t groups);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_FUNCTIONAL_CONV_H */
