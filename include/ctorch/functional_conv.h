/*
 * ctorch/functional_conv.h — torch.nn.functional.conv2d.
 *
 *   y = ct_conv2d(x, w, b, .stride = {2, 2}, .padding = {1, 1});
 *
 * is F.conv2d(x, w, b, stride=2, padding=1). The options after the three
 * tensors are designated initialisers, as for tensor creation (CT_OPTS);
 * one left out has PyTorch's default (stride 1, padding 0, dilation 1,
 * groups 1). The 2-D options are (height, width) pairs. The macros call
 * ct_conv2d_with_opts / ct_conv2d_relu_with_opts with a ct_conv_opts
 * (CT_CONV_OPTS(...) builds one); "ct_conv2d_opts" already names the
 * options of the nn.Conv2d module (nn.h). Shapes, dtypes and messages
 * follow PyTorch; float16/bfloat16 accumulate in float32. Returns a new
 * reference or NULL (see ctorch/status.h).
 */
#ifndef CTORCH_FUNCTIONAL_CONV_H
#define CTORCH_FUNCTIONAL_CONV_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A (height, width) pair for the positional 2-D parameters of functional
 * ops (kernel sizes, output sizes). */
#ifndef CT_PAIR
#define CT_PAIR(h, w) ((const int64_t[2]){(h), (w)})
#endif

/* F.conv2d's keyword options. A pair left at {0, 0} is PyTorch's default:
 * PyTorch refuses a zero stride or dilation, so zero can stand for "not
 * given"; a pair with one zero entry ({2} is {2, 0}) is passed on and
 * refused as PyTorch refuses it. groups 0 means 1. */
typedef struct ct_conv_opts {
    int reserved_;       /* keeps the macros valid with no options; leave it */
    int64_t stride[2];   /* {0, 0}: 1 */
    int64_t padding[2];  /* 0 */
    int64_t dilation[2]; /* {0, 0}: 1 */
    int64_t groups;      /* 0: 1 */
} ct_conv_opts;
#define CT_CONV_OPTS(...) ((ct_conv_opts){.reserved_ = 0, __VA_ARGS__})

#define ct_conv2d(input, weight, bias, ...) \
    ct_conv2d_with_opts((input), (weight), (bias), CT_CONV_OPTS(__VA_ARGS__))
#define ct_conv2d_relu(input, weight, bias, ...) \
    ct_conv2d_relu_with_opts((input), (weight), (bias), CT_CONV_OPTS(__VA_ARGS__))

/* input [N, C, H, W] (or unbatched [C, H, W]); weight [O, C/groups, kH, kW];
 * bias [O] or NULL. Result [N, O, OH, OW] (or [O, OH, OW]) with
 * OH = (H + 2*padding[0] - dilation[0]*(kH - 1) - 1) / stride[0] + 1, and
 * likewise OW. All tensors must share dtype (a floating one) and device. */
CT_API ct_tensor *ct_conv2d_with_opts(const ct_tensor *input, const ct_tensor *weight,
                                      const ct_tensor *bias, ct_conv_opts o);

/* relu(conv2d(input, weight, bias, …)) as one op: the same values and
 * gradients as ct_relu(ct_conv2d(…)), computed in one pass where the backend
 * can fuse them (the CPU's oneDNN convolutions add the bias and apply the
 * relu inside the convolution), which saves a pass over the output and its
 * memory. PyTorch has no eager functional for it (its fusers make
 * ConvReLU2d); the autograd node is ConvolutionReluBackward0. */
CT_API ct_tensor *ct_conv2d_relu_with_opts(const ct_tensor *input, const ct_tensor *weight,
                                           const ct_tensor *bias, ct_conv_opts o);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_FUNCTIONAL_CONV_H */
