/*
 * layers_nn.c — the convolution, normalisation, pooling, dropout and
 * embedding modules over ctorch/functional.h, with PyTorch's parameter
 * names, defaults and initialisation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/functional.h"
#include "module_impl.h"

/* U(-bound, bound) or N(0, std) tensors owned by the caller (untracked). */
static ct_tensor *uniform_init(ct_shape s, double bound) {
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_retain(ct_add_scalar(ct_mul_scalar(ct_rand_opts(s, CT_OPTS()), 2 * bound), -bound)); }
    return out;
}
static ct_tensor *normal_init(ct_shape s, double std) {
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_retain(ct_mul_scalar(ct_randn_opts(s, CT_OPTS()), std)); }
    return out;
}
static ct_tensor *filled(ct_shape s, double v, ct_dtype dt) {
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_retain(ct_full_opts(s, v, CT_OPTS(.dtype = dt))); }
    return out;
}

static ct_module *fail_free(ct_module *m) {
    ct_module_free(m);
    return NULL;
}

/* ---- Conv2d ------------------------------------------------------------------------ */

typedef struct conv_state {
    int64_t stride[2], padding[2], dilation[2], groups;
} conv_state;

/* The functional's options (ctorch/functional_conv.h) for this configuration. */
static ct_conv_opts conv_opts_of(const conv_state *s) {
    return CT_CONV_OPTS(.stride = {s->stride[0], s->stride[1]}, .padding = {s->padding[0], s->padding[1]},
                        .dilation = {s->dilation[0], s->dilation[1]}, .groups = s->groups);
}

static ct_tensor *conv_forward(ct_module *m, const ct_tensor *x) {
    return ct_conv2d_with_opts(x, ct_module_param(m, "weight"), ct_module_param(m, "bias"), conv_opts_of(m->state));
}

ct_module *ct_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ct_conv2d_opts o) {
    int64_t groups = o.groups ? o.groups : 1;
    CT_CHECK_NULL(in_channels > 0 && out_channels > 0 && kernel_size > 0, CT_ERR_INVALID_ARG,
                  "Conv2d: channels and kernel_size must be positive");
    CT_CHECK_NULL(in_channels % groups == 0 && out_channels % groups == 0, CT_ERR_INVALID_ARG,
                  "Conv2d: in_channels (%lld) and out_channels (%lld) must be divisible by groups (%lld)",
                  (long long)in_channels, (long long)out_channels, (long long)groups);
    conv_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "Conv2d: out of memory");
    int64_t st = o.stride ? o.stride : 1, dil = o.dilation ? o.dilation : 1;
    *s = (conv_state){{st, st}, {o.padding, o.padding}, {dil, dil}, groups};
    ct_module *m = cti_module_new_plain("Conv2d", conv_forward, s, sizeof *s);
    if (!m) return NULL;
    double fan_in = (double)(in_channels / groups * kernel_size * kernel_size), bound = 1.0 / sqrt(fan_in);
    if (ct_module_add_parameter(m, "weight",
                                uniform_init(CT_SHAPE(out_channels, in_channels / groups, kernel_size, kernel_size), bound)))
        return fail_free(m);
    if (!o.no_bias && ct_module_add_parameter(m, "bias", uniform_init(CT_SHAPE(out_channels), bound)))
        return fail_free(m);
    char extra[64] = "";
    if (s->padding[0]) snprintf(extra, sizeof extra, ", padding=(%lld, %lld)", (long long)o.padding, (long long)o.padding);
    ct_module_set_extra_repr(m, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, %lld)%s%s", (long long)in_channels,
                             (long long)out_channels, (long long)kernel_size, (long long)kernel_size, (long long)st,
                             (long long)st, extra, o.no_bias ? ", bias=False" : "");
    return m;
}

/* fuse.c builds the folded conv through this, because the layout of a
 * Conv2d's configuration is private to this file; the forward function
 * identifies a Conv2d of ct_nn_conv2d (a user module may call itself
 * "Conv2d" too, and its state would not be a conv_state). */
bool cti_is_conv2d(const ct_module *m) { return m && m->forward == conv_forward; }

ct_tensor *ct_forward_relu(ct_module *m, const ct_tensor *input) {
    if (!cti_is_conv2d(m) || !input) return ct_relu(ct_forward(m, input));
    ct_clear_error();
    if (m->prune && cti_prune_pre_forward(m) != CT_OK) return NULL;
    return ct_conv2d_relu_with_opts(input, ct_module_param(m, "weight"), ct_module_param(m, "bias"),
                                    conv_opts_of(m->state));
}

ct_module *cti_conv2d_like(const ct_module *like, ct_tensor *weight, ct_tensor *bias) {
    conv_state *s = NULL;
    if (!cti_is_conv2d(like))
        ct_error_set(CT_ERR_INVALID_ARG, "Conv2d: expected a Conv2d to copy the configuration of, got %s",
                     like ? like->type : "NULL");
    else if (!(s = malloc(sizeof *s)))
        ct_error_set(CT_ERR_OOM, "Conv2d: out of memory");
    if (!s) return ct_decref(weight), ct_decref(bias), NULL;
    *s = *(const conv_state *)like->state;
    ct_module *m = cti_module_new_plain("Conv2d", conv_forward, s, sizeof *s);
    if (!m) return ct_decref(weight), ct_decref(bias), NULL;
    if (ct_module_add_parameter(m, "weight", weight)) return ct_decref(bias), fail_free(m);
    if (bias && ct_module_add_parameter(m, "bias", bias)) return fail_free(m);
    char extra[64] = "";
    if (s->padding[0])
        snprintf(extra, sizeof extra, ", padding=(%lld, %lld)", (long long)s->padding[0], (long long)s->padding[1]);
    const int64_t *w = ct_sizes(weight);
    ct_module_set_extra_repr(m, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, %lld)%s%s",
                             (long long)(w[1] * s->groups), (long long)w[0], (long long)w[2], (long long)w[3],
                             (long long)s->stride[0], (long long)s->stride[1], extra, bias ? "" : ", bias=False");
    return m;
}

/* ---- BatchNorm ------------------------------------------------------------------------ */

typedef struct bn_state {
    double eps, momentum;
    int expect_dims; /* 2-D module: 4-D input; 1-D module: 2-D or 3-D input */
} bn_state;

static ct_tensor *bn_forward(ct_module *m, const ct_tensor *x) {
    bn_state *s = m->state;
    int nd = ct_ndim(x);
    if (s->expect_dims == 4 ? nd != 4 : (nd != 2 && nd != 3)) {
        ct_error_set(CT_ERR_SHAPE, "%s: expected %s input (got %dD input)", m->type,
                     s->expect_dims == 4 ? "4D" : "2D or 3D", nd);
        return NULL;
    }
    ct_tensor *tracked = ct_module_buffer(m, "num_batches_tracked");
    if (m->training && tracked) CT_NO_GRAD CT_SCOPE { ct_copy_(tracked, ct_add_scalar(tracked, 1)); }
    return ct_batch_norm(x, ct_module_buffer(m, "running_mean"), ct_module_buffer(m, "running_var"),
                         ct_module_param(m, "weight"), ct_module_param(m, "bias"), .training = m->training,
                         .momentum = s->momentum, .eps = s->eps);
}

static ct_module *batchnorm(const char *type, int expect_dims, int64_t features, ct_batchnorm_opts o) {
    CT_CHECK_NULL(features > 0, CT_ERR_INVALID_ARG, "%s: num_features must be positive", type);
    bn_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "%s: out of memory", type);
    *s = (bn_state){o.eps ? o.eps : 1e-5, o.momentum ? o.momentum : 0.1, expect_dims};
    ct_module *m = cti_module_new_plain(type, bn_forward, s, sizeof *s);
    if (!m) return NULL;
    if (ct_module_add_parameter(m, "weight", filled(CT_SHAPE(features), 1.0, CT_FLOAT32)) ||
        ct_module_add_parameter(m, "bias", filled(CT_SHAPE(features), 0.0, CT_FLOAT32)) ||
        ct_module_add_buffer(m, "running_mean", filled(CT_SHAPE(features), 0.0, CT_FLOAT32)) ||
        ct_module_add_buffer(m, "running_var", filled(CT_SHAPE(features), 1.0, CT_FLOAT32)) ||
        ct_module_add_buffer(m, "num_batches_tracked", filled(CT_SHAPE0, 0.0, CT_INT64)))
        return fail_free(m);
    ct_module_set_extra_repr(m, "%lld, eps=%g, momentum=%g, affine=True, track_running_stats=True", (long long)features,
                             s->eps, s->momentum);
    return m;
}

bool cti_batchnorm2d_eps(const ct_module *m, double *eps) {
    if (!m || m->forward != bn_forward || ((const bn_state *)m->state)->expect_dims != 4) return false;
    *eps = ((const bn_state *)m->state)->eps;
    return true;
}

ct_module *ct_nn_batchnorm2d(int64_t features, ct_batchnorm_opts o) { return batchnorm("BatchNorm2d", 4, features, o); }
ct_module *ct_nn_batchnorm1d(int64_t features, ct_batchnorm_opts o) { return batchnorm("BatchNorm1d", 2, features, o); }

/* ---- LayerNorm, Embedding, Dropout ------------------------------------------------------- */

typedef struct ln_state {
    ct_shape shape;
    double eps;
} ln_state;

static ct_tensor *ln_forward(ct_module *m, const ct_tensor *x) {
    ln_state *s = m->state;
    return ct_layer_norm(x, s->shape, ct_module_param(m, "weight"), ct_module_param(m, "bias"), .eps = s->eps);
}

ct_module *ct_nn_layernorm(ct_shape normalized_shape, double eps) {
    CT_CHECK_NULL(normalized_shape.ndim >= 1, CT_ERR_SHAPE,
                  "LayerNorm: normalized_shape must have at least one dimension, got %d", normalized_shape.ndim);
    if (!ct_shape_check("LayerNorm", normalized_shape.dims, normalized_shape.ndim, NULL)) return NULL;
    ln_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "LayerNorm: out of memory");
    *s = (ln_state){normalized_shape, eps > 0 ? eps : 1e-5};
    ct_module *m = cti_module_new_plain("LayerNorm", ln_forward, s, sizeof *s);
    if (!m) return NULL;
    if (ct_module_add_parameter(m, "weight", filled(normalized_shape, 1.0, CT_FLOAT32)) ||
        ct_module_add_parameter(m, "bias", filled(normalized_shape, 0.0, CT_FLOAT32)))
        return fail_free(m);
    return m;
}

static ct_tensor *emb_forward(ct_module *m, const ct_tensor *x) {
    return ct_embedding(x, ct_module_param(m, "weight"), *(int64_t *)m->state);
}

ct_module *ct_nn_embedding(int64_t num_embeddings, int64_t dim, int64_t padding_idx) {
    CT_CHECK_NULL(num_embeddings >= 0 && dim >= 0, CT_ERR_INVALID_ARG,
                  "Embedding: num_embeddings and embedding_dim must be non-negative, got %lld and %lld",
                  (long long)num_embeddings, (long long)dim);
    CT_CHECK_NULL(padding_idx == CT_NO_PADDING_IDX || (padding_idx < num_embeddings && padding_idx >= -num_embeddings),
                  CT_ERR_INDEX, "Embedding: Padding_idx must be within num_embeddings (got %lld for %lld embeddings)",
                  (long long)padding_idx, (long long)num_embeddings);
    int64_t *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "Embedding: out of memory");
    *s = padding_idx;
    ct_module *m = cti_module_new_plain("Embedding", emb_forward, s, sizeof *s);
    if (!m) return NULL;
    ct_tensor *w = normal_init(CT_SHAPE(num_embeddings, dim), 1.0);
    if (w && padding_idx != CT_NO_PADDING_IDX) CT_NO_GRAD CT_SCOPE { /* the padding row starts at zero, as in PyTorch */
        ct_fill_(ct_select(w, 0, padding_idx), 0.0);
    }
    if (ct_module_add_parameter(m, "weight", w)) return fail_free(m);
    ct_module_set_extra_repr(m, "%lld, %lld", (long long)num_embeddings, (long long)dim);
    return m;
}

static ct_tensor *dropout_forward(ct_module *m, const ct_tensor *x) {
    return ct_dropout(x, *(double *)m->state, m->training);
}

ct_module *ct_nn_dropout(double p) {
    CT_CHECK_NULL(p >= 0 && p <= 1, CT_ERR_INVALID_ARG, "dropout probability has to be between 0 and 1, but got %g", p);
    double *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "Dropout: out of memory");
    *s = p;
    ct_module *m = cti_module_new_plain("Dropout", dropout_forward, s, sizeof *s);
    if (!m) return NULL;
    ct_module_set_extra_repr(m, "p=%g, inplace=False", p);
    return m;
}

/* ---- pooling --------------------------------------------------------------------------- */

typedef struct pool_state {
    int64_t kernel[2], stride[2], padding[2];
} pool_state;

static ct_tensor *maxpool_forward(ct_module *m, const ct_tensor *x) {
    pool_state *s = m->state;
    return ct_max_pool2d(x, s->kernel, .stride = {s->stride[0], s->stride[1]},
                         .padding = {s->padding[0], s->padding[1]});
}
static ct_tensor *avgpool_forward(ct_module *m, const ct_tensor *x) {
    pool_state *s = m->state;
    return ct_avg_pool2d(x, s->kernel, .stride = {s->stride[0], s->stride[1]},
                         .padding = {s->padding[0], s->padding[1]});
}
static ct_tensor *adaptive_forward(ct_module *m, const ct_tensor *x) {
    pool_state *s = m->state;
    return ct_adaptive_avg_pool2d(x, s->kernel);
}

/* PyTorch checks these when the module first runs; a constructor that
 * refuses them names the module while the mistake is still in sight. */
static bool pool_args_ok(const char *type, int64_t k, int64_t stride, int64_t padding) {
    CT_CHECK_RET(k > 0, false, CT_ERR_INVALID_ARG, "%s: kernel_size should be greater than zero, but got %lld",
                 type, (long long)k);
    CT_CHECK_RET(stride >= 0, false, CT_ERR_INVALID_ARG,
                 "%s: stride should be greater than zero (or 0 for kernel_size), but got %lld", type, (long long)stride);
    CT_CHECK_RET(padding >= 0 && padding <= k / 2, false, CT_ERR_INVALID_ARG,
                 "%s: pad should be at least zero and at most half of effective kernel size, but got pad=%lld, "
                 "kernel_size=%lld and dilation=1", type, (long long)padding, (long long)k);
    return true;
}

static ct_module *pool(const char *type, ct_forward_fn fwd, int64_t k, int64_t stride, int64_t padding, int64_t k2) {
    if (fwd != adaptive_forward && !pool_args_ok(type, k, stride, padding)) return NULL;
    pool_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "%s: out of memory", type);
    int64_t st = stride ? stride : k;
    *s = (pool_state){{k, k2}, {st, st}, {padding, padding}};
    ct_module *m = cti_module_new_plain(type, fwd, s, sizeof *s);
    if (!m) return NULL;
    if (fwd == adaptive_forward)
        ct_module_set_extra_repr(m, "output_size=(%lld, %lld)", (long long)k, (long long)k2);
    else
        ct_module_set_extra_repr(m, "kernel_size=%lld, stride=%lld, padding=%lld", (long long)k, (long long)st,
                                 (long long)padding);
    return m;
}

ct_module *ct_nn_maxpool2d(int64_t kernel, int64_t stride, int64_t padding) {
    return pool("MaxPool2d", maxpool_forward, kernel, stride, padding, kernel);
}
ct_module *ct_nn_avgpool2d(int64_t kernel, int64_t stride, int64_t padding) {
    return pool("AvgPool2d", avgpool_forward, kernel, stride, padding, kernel);
}
ct_module *ct_nn_adaptive_avgpool2d(int64_t out_h, int64_t out_w) {
    return pool("AdaptiveAvgPool2d", adaptive_forward, out_h, 0, 0, out_w);
}
