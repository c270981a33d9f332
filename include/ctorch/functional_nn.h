/*
 * ctorch/functional_nn.h — the pooling, normalisation, dropout and embedding
 * functions of torch.nn.functional, with PyTorch's defaults, shape rules and
 * messages.
 *
 * The arguments PyTorch requires are positional (kernel sizes are
 * (height, width) arrays written with CT_PAIR); the keyword options of
 * pooling and normalisation are designated initialisers after them, as for
 * tensor creation (CT_OPTS), and one left out has PyTorch's default:
 *
 *     F.max_pool2d(x, 2)                       -> ct_max_pool2d(x, CT_PAIR(2, 2))
 *     F.avg_pool2d(x, 3, stride=2, padding=1)  -> ct_avg_pool2d(x, CT_PAIR(3, 3), .stride = {2, 2},
 *                                                               .padding = {1, 1})
 *     F.batch_norm(x, rm, rv, w, b, training=True)
 *                                              -> ct_batch_norm(x, rm, rv, w, b, .training = true)
 *     F.layer_norm(x, (64,), w, b)             -> ct_layer_norm(x, CT_SHAPE(64), w, b)
 *     F.dropout(x, 0.5)                        -> ct_dropout(x, 0.5, true)
 *     F.embedding(idx, w)                      -> ct_embedding(idx, w, CT_NO_PADDING_IDX)
 *
 * The macros call the ct_*_opts functions, which take a ready-made options
 * struct (CT_POOL_OPTS(...), CT_NORM_OPTS(...)). Pooling takes
 * [N, C, H, W] or unbatched [C, H, W] inputs of a floating dtype (float32,
 * float64, float16, bfloat16) on any device. Every function returns a new
 * reference or NULL (see ctorch/status.h).
 */
#ifndef CTORCH_FUNCTIONAL_NN_H
#define CTORCH_FUNCTIONAL_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A (height, width) pair for the positional 2-D parameters of functional
 * ops (the same definition as in functional_conv.h). */
#ifndef CT_PAIR
#define CT_PAIR(h, w) ((const int64_t[2]){(h), (w)})
#endif

/* ---- pooling ------------------------------------------------------------------
 * Output size per spatial dim, as PyTorch:
 *   out = floor_or_ceil((in + 2*padding - dilation*(kernel-1) - 1) / stride) + 1,
 * where ceil_mode rounds up but never starts a window in the right padding.
 * padding must be at most half the kernel size. */

/* The keyword options of max_pool2d and avg_pool2d. A pair left at {0, 0}
 * is PyTorch's default (PyTorch refuses a zero stride or dilation, so zero
 * can stand for "not given"; a pair with one zero entry is passed on and
 * refused). A pooling function refuses an option it does not have, as
 * PyTorch refuses the keyword. count_include_pad defaults to True, so its
 * field is the negation (as nn.h's no_bias). */
typedef struct ct_pool_opts {
    int reserved_;             /* keeps the macros valid with no options; leave it */
    int64_t stride[2];         /* {0, 0}: kernel_size */
    int64_t padding[2];        /* 0 */
    int64_t dilation[2];       /* max_pool2d only; {0, 0}: 1 */
    bool ceil_mode;            /* False */
    bool no_count_include_pad; /* avg_pool2d only: count_include_pad=False */
    int64_t divisor_override;  /* avg_pool2d only; 0: None */
} ct_pool_opts;
#define CT_POOL_OPTS(...) ((ct_pool_opts){.reserved_ = 0, __VA_ARGS__})

#define ct_max_pool2d(input, kernel_size, ...) \
    ct_max_pool2d_opts((input), (kernel_size), CT_POOL_OPTS(__VA_ARGS__))
#define ct_max_pool2d_with_indices(input, kernel_size, output, indices, ...) \
    ct_max_pool2d_with_indices_opts((input), (kernel_size), (output), (indices), \
                                    CT_POOL_OPTS(__VA_ARGS__))
#define ct_avg_pool2d(input, kernel_size, ...) \
    ct_avg_pool2d_opts((input), (kernel_size), CT_POOL_OPTS(__VA_ARGS__))

/* F.max_pool2d(input, kernel_size, stride=kernel_size, padding=0,
 * dilation=1, ceil_mode=False). NaN wins, as in PyTorch. */
CT_API ct_tensor *ct_max_pool2d_opts(const ct_tensor *input, const int64_t kernel_size[2],
                                     ct_pool_opts o);
/* F.max_pool2d(..., return_indices=True): *indices (int64, output's shape)
 * holds, for each output, the flat index h * W + w of the chosen element in
 * its input plane. Either out pointer may be NULL. */
CT_API ct_status ct_max_pool2d_with_indices_opts(const ct_tensor *input,
                                                 const int64_t kernel_size[2],
                                                 ct_tensor **output, ct_tensor **indices,
                                                 ct_pool_opts o);

/* F.avg_pool2d(input, kernel_size, stride=kernel_size, padding=0,
 * ceil_mode=False, count_include_pad=True, divisor_override=None). */
CT_API ct_tensor *ct_avg_pool2d_opts(const ct_tensor *input, const int64_t kernel_size[2],
                                     ct_pool_opts o);

/* F.adaptive_avg_pool2d(input, output_size): output plane oh x ow, window
 * [floor(i*H/oh), ceil((i+1)*H/oh)). A negative entry keeps the input's
 * size (PyTorch's None). */
CT_API ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *input, const int64_t output_size[2]);

/* ---- normalisation --------------------------------------------------------------- */

/* The keyword options of batch_norm and layer_norm; zero fields are
 * PyTorch's defaults. momentum 0 means 0.1: a batch norm whose running
 * statistics must not move takes NULL running_mean/var instead (in
 * training the output uses the batch statistics either way). eps 0 means
 * 1e-5. layer_norm has only eps and refuses the others. */
typedef struct ct_norm_opts {
    int reserved_;   /* keeps the macros valid with no options; leave it */
    bool training;   /* batch_norm: False */
    double momentum; /* batch_norm: 0.1 */
    double eps;      /* 1e-5 */
} ct_norm_opts;
#define CT_NORM_OPTS(...) ((ct_norm_opts){.reserved_ = 0, __VA_ARGS__})

#define ct_batch_norm(input, running_mean, running_var, weight, bias, ...)            \
    ct_batch_norm_opts((input), (running_mean), (running_var), (weight), (bias), \
                       CT_NORM_OPTS(__VA_ARGS__))
#define ct_layer_norm(input, normalized_shape, weight, bias, ...) \
    ct_layer_norm_opts((input), (normalized_shape), (weight), (bias), CT_NORM_OPTS(__VA_ARGS__))

/* F.batch_norm(input, running_mean, running_var, weight=None, bias=None,
 * training=False, momentum=0.1, eps=1e-5). input is [N, C] or [N, C, ...];
 * running_mean/var, weight and bias are [C] or NULL.
 * training: normalises with the batch statistics (biased variance) and
 * updates the running statistics that are given, in place:
 *   running = (1 - momentum) * running + momentum * batch_stat,
 * with the unbiased batch variance for running_var. Otherwise normalises
 * with running_mean/var, which must then be given. */
CT_API ct_tensor *ct_batch_norm_opts(const ct_tensor *input, ct_tensor *running_mean,
                                     ct_tensor *running_var, const ct_tensor *weight,
                                     const ct_tensor *bias, ct_norm_opts o);

/* F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
 * normalises over the last normalized_shape.ndim dims, which must equal
 * normalized_shape; weight and bias (NULL for none) have that shape. */
CT_API ct_tensor *ct_layer_norm_opts(const ct_tensor *input, ct_shape normalized_shape,
                                     const ct_tensor *weight, const ct_tensor *bias,
                                     ct_norm_opts o);

/* ---- dropout ------------------------------------------------------------------------ */

/* F.dropout(input, p=0.5, training=True): zeroes each element with
 * probability p and scales the rest by 1/(1-p). The mask comes from the
 * default generator (ctorch/random.h), identical on every device for the
 * same seed. Not training (or p == 0): a new handle on input's data. */
CT_API ct_tensor *ct_dropout(const ct_tensor *input, double p, bool training);

/* ---- embedding ---------------------------------------------------------------------- */

/* padding_idx=None for ct_embedding. */
#define CT_NO_PADDING_IDX INT64_MIN

/* F.embedding(input, weight, padding_idx=None): the rows of weight [V, D]
 * picked by input (int64 or int32 indices of any shape); the result has
 * shape input.shape + [D]. padding_idx (negative counts from V; or
 * CT_NO_PADDING_IDX) names a row whose gradient stays zero. */
CT_API ct_tensor *ct_embedding(const ct_tensor *input, const ct_tensor *weight,
                               int64_t padding_idx);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_FUNCTIONAL_NN_H */
