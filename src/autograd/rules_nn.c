/*
 * rules_nn.c — recording for the neural-network ops (convolution, pooling,
 * normalisation, dropout, embedding, losses). Their backward kernels live
 * with the ops (src/ops/conv.h, nn.h, loss.h); these rules only save what
 * those kernels need and route the gradients.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/loss.h"
#include "ops/nn.h"
#include "rules_util.h"

/* Copy a parameter struct into the node. */
static bool keep_params(ct_node *n, const void *p, size_t size) {
    n->extra = malloc(size);
    if (!n->extra) {
        ct_error_set(CT_ERR_OOM, "out of memory recording %s", n->name);
        return false;
    }
    memcpy(n->extra, p, size);
    return true;
}

static ct_shape input_shape(const ct_node *n, int i) { return ct_shape_make(n->in[i].ndim, n->in[i].shape); }

/* Finish a recording: on failure release out and return NULL. */
static ct_tensor *recorded(ct_tensor *out, bool ok) {
    if (ok) return out;
    ct_decref(out);
    return NULL;
}

/* ---- conv2d ------------------------------------------------------------------------------ */

static ct_status conv_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *w = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    return cti_conv2d_backward(g, x, w, n->extra, n->in[0].needs_grad ? &grad_in[0] : NULL,
                               n->in[1].needs_grad ? &grad_in[1] : NULL, n->in[2].needs_grad ? &grad_in[2] : NULL);
}

ct_tensor *cta_conv2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b, const cti_conv2d_params *p) {
    ct_tensor *out = cti_conv2d_forward(x, w, b, p);
    const ct_tensor *ins[3] = {x, w, b};
    if (!out || !cta_needs_grad(ins, 3)) return out;
    ct_node *n = cta_record(out, "ConvolutionBackward0", conv_backward, ins, 3);
    return n ? recorded(out, keep_params(n, p, sizeof *p) && !cta_save(n, 0, x) && !cta_save(n, 1, w)) : NULL;
}

/* relu(conv2d): the gradient through the relu (g where the output is
 * positive, as ReluBackward0), then conv2d's. */
static ct_status conv_relu_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *w = cta_saved(n, 1), *y = cta_saved(n, 2);
    if (n->freed) return ct_last_status();
    ct_tensor *positive = cti_binary_scalar(CT_BIN_GT, y, 0.0);
    ct_tensor *gm = positive ? cti_binary(CT_BIN_MUL, g, positive, 1.0) : NULL;
    ct_decref(positive);
    if (!gm) return ct_last_status();
    ct_status st = cti_conv2d_backward(gm, x, w, n->extra, n->in[0].needs_grad ? &grad_in[0] : NULL,
                                       n->in[1].needs_grad ? &grad_in[1] : NULL,
                                       n->in[2].needs_grad ? &grad_in[2] : NULL);
    ct_decref(gm);
    return st;
}

ct_tensor *cta_conv2d_relu(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b, const cti_conv2d_params *p) {
    ct_tensor *out = cti_conv2d_relu_forward(x, w, b, p);
    const ct_tensor *ins[3] = {x, w, b};
    if (!out || !cta_needs_grad(ins, 3)) return out;
    ct_node *n = cta_record(out, "ConvolutionReluBackward0", conv_relu_backward, ins, 3);
    return n ? recorded(out, keep_params(n, p, sizeof *p) && !cta_save(n, 0, x) && !cta_save(n, 1, w) &&
                                 !cta_save(n, 2, out))
             : NULL;
}

/* ---- pooling ----------------------------------------------------------------------------- */

static ct_status maxpool_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *idx = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    grad_in[0] = cti_max_pool2d_backward(g, idx, input_shape(n, 0), n->extra);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_max_pool2d(const ct_tensor *x, const cti_pool2d_params *p, ct_tensor **indices_out) {
    const ct_tensor *ins[1] = {x};
    bool record = cta_needs_grad(ins, 1);
    ct_tensor *idx = NULL;
    ct_tensor *out = cti_max_pool2d_forward(x, p, record || indices_out ? &idx : NULL);
    if (out && record) {
        ct_node *n = cta_record(out, "MaxPool2DWithIndicesBackward0", maxpool_backward, ins, 1);
        out = n ? recorded(out, keep_params(n, p, sizeof *p) && !cta_save(n, 0, idx)) : NULL;
    }
    if (indices_out && out) *indices_out = idx;
    else ct_decref(idx);
    return out;
}

static ct_status avgpool_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    grad_in[0] = n->op ? cti_adaptive_avg_pool2d_backward(g, input_shape(n, 0))
                       : cti_avg_pool2d_backward(g, input_shape(n, 0), n->extra);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_avg_pool2d(const ct_tensor *x, const cti_pool2d_params *p) {
    ct_tensor *out = cti_avg_pool2d_forward(x, p);
    const ct_tensor *ins[1] = {x};
    if (!out || !cta_needs_grad(ins, 1)) return out;
    ct_node *n = cta_record(out, "AvgPool2DBackward0", avgpool_backward, ins, 1);
    return n ? recorded(out, keep_params(n, p, sizeof *p)) : NULL;
}

ct_tensor *cta_adaptive_avg_pool2d(const ct_tensor *x, const int64_t output_size[2]) {
    ct_tensor *out = cti_adaptive_avg_pool2d_forward(x, output_size);
    const ct_tensor *ins[1] = {x};
    if (!out || !cta_needs_grad(ins, 1)) return out;
    ct_node *n = cta_record(out, "AdaptiveAvgPool2DBackward0", avgpool_backward, ins, 1);
    if (n) n->op = 1;
    return n ? out : NULL;
}

/* ---- batch norm and layer norm --------------------------------------------------------------- */

static ct_status bn_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *w = cta_saved(n, 1), *mean = cta_saved(n, 2), *invstd = cta_saved(n, 3);
    if (n->freed) return ct_last_status();
    return cti_batch_norm_backward(g, x, w, mean, invstd, n->op != 0, n->in[0].needs_grad ? &grad_in[0] : NULL,
                                   n->in[1].needs_grad ? &grad_in[1] : NULL, n->in[2].needs_grad ? &grad_in[2] : NULL);
}

ct_tensor *cta_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var, const ct_tensor *w,
                          const ct_tensor *b, bool training, double momentum, double eps) {
    const ct_tensor *ins[3] = {x, w, b};
    bool record = cta_needs_grad(ins, 3);
    ct_tensor *mean = NULL, *invstd = NULL;
    ct_tensor *out = cti_batch_norm_forward(x, running_mean, running_var, w, b, training, momentum, eps,
                                            record ? &mean : NULL, record ? &invstd : NULL);
    if (out && record) {
        ct_node *n = cta_record(out, "NativeBatchNormBackward0", bn_backward, ins, 3);
        if (n) n->op = training || !running_mean || !running_var; /* normalised with batch statistics */
        out = n ? recorded(out, !cta_save(n, 0, x) && (!w || !cta_save(n, 1, w)) && !cta_save(n, 2, mean) &&
                                    !cta_save(n, 3, invstd))
                : NULL;
    }
    ct_decref(mean);
    ct_decref(invstd);
    return out;
}

static ct_status ln_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *w = cta_saved(n, 1), *mean = cta_saved(n, 2), *rstd = cta_saved(n, 3);
    if (n->freed) return ct_last_status();
    return cti_layer_norm_backward(g, x, *(ct_shape *)n->extra, w, mean, rstd, n->in[0].needs_grad ? &grad_in[0] : NULL,
                                   n->in[1].needs_grad ? &grad_in[1] : NULL, n->in[2].needs_grad ? &grad_in[2] : NULL);
}

ct_tensor *cta_layer_norm(const ct_tensor *x, ct_shape shape, const ct_tensor *w, const ct_tensor *b, double eps) {
    const ct_tensor *ins[3] = {x, w, b};
    bool record = cta_needs_grad(ins, 3);
    ct_tensor *mean = NULL, *rstd = NULL;
    ct_tensor *out = cti_layer_norm_forward(x, shape, w, b, eps, record ? &mean : NULL, record ? &rstd : NULL);
    if (out && record) {
        ct_node *n = cta_record(out, "NativeLayerNormBackward0", ln_backward, ins, 3);
        out = n ? recorded(out, keep_params(n, &shape, sizeof shape) && !cta_save(n, 0, x) &&
                                    (!w || !cta_save(n, 1, w)) && !cta_save(n, 2, mean) && !cta_save(n, 3, rstd))
                : NULL;
    }
    ct_decref(mean);
    ct_decref(rstd);
    return out;
}

/* ---- dropout and embedding ----------------------------------------------------------------- */

static ct_status dropout_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *mask = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    grad_in[0] = cti_dropout_backward(g, mask, n->d[0]);
    return grad_in[0] ? CT_OK : ct_last_status();
}

ct_tensor *cta_dropout(const ct_tensor *x, double p, bool training) {
    const ct_tensor *ins[1] = {x};
    bool record = cta_needs_grad(ins, 1);
    ct_tensor *mask = NULL;
    ct_tensor *out = cti_dropout_forward(x, p, training, record ? &mask : NULL);
    if (out && record) {
        ct_node *n = cta_record(out, "NativeDropoutBackward0", dropout_backward, ins, 1);
        if (n) n->d[0] = p;
        out = n ? recorded(out, !mask || !cta_save(n, 0, mask)) : NULL;
    }
    ct_decref(mask);
    return out;
}

static ct_status embedding_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *idx = cta_saved(n, 0);
    if (n->freed) return ct_last_status();
    grad_in[1] = cti_embedding_backward(g, idx, n->in[1].shape[0], n->iv[0]);
    return grad_in[1] ? CT_OK : ct_last_status();
}

ct_tensor *cta_embedding(const ct_tensor *indices, const ct_tensor *weight, int64_t padding_idx_resolved) {
    ct_tensor *out = cti_embedding_forward(indices, weight);
    const ct_tensor *ins[2] = {indices, weight};
    if (!out || !cta_needs_grad(ins + 1, 1)) return out;
    ct_node *n = cta_record(out, "EmbeddingBackward0", embedding_backward, ins, 2);
    if (n) n->iv[0] = padding_idx_resolved;
    return n ? recorded(out, !cta_save(n, 0, indices)) : NULL;
}

/* ---- losses ----------------------------------------------------------------------------------- */

static ct_status mse_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *t = cta_saved(n, 1);
    if (n->freed) return ct_last_status();
    return cti_mse_loss_backward(g, x, t, (ct_reduction)n->op, n->in[0].needs_grad ? &grad_in[0] : NULL,
                                 n->in[1].needs_grad ? &grad_in[1] : NULL);
}

ct_tensor *cta_mse_loss(const ct_tensor *x, const ct_tensor *t, ct_reduction r) {
    ct_tensor *out = cti_mse_loss_forward(x, t, r);
    const ct_tensor *ins[2] = {x, t};
    if (!out || !cta_needs_grad(ins, 2)) return out;
    ct_node *n = cta_record(out, "MseLossBackward0", mse_backward, ins, 2);
    if (n) n->op = r;
    return n ? recorded(out, !cta_save(n, 0, x) && !cta_save(n, 1, t)) : NULL;
}

typedef struct class_loss_params {
    int64_t ignore_index;
    ct_reduction reduction;
    double label_smoothing;
    bool nll;
} class_loss_params;

static ct_status class_loss_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *t = cta_saved(n, 1), *w = cta_saved(n, 2), *tw = cta_saved(n, 3);
    if (n->freed) return ct_last_status();
    const class_loss_params *p = n->extra;
    if (p->nll)
        return cti_nll_loss_backward(g, x, t, w, p->ignore_index, p->reduction, tw, &grad_in[0]);
    return cti_cross_entropy_backward(g, x, t, w, p->ignore_index, p->reduction, p->label_smoothing, tw,
                                      n->in[0].needs_grad ? &grad_in[0] : NULL, n->in[1].needs_grad ? &grad_in[1] : NULL);
}

static ct_tensor *class_loss(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, class_loss_params p) {
    const ct_tensor *ins[2] = {x, t};
    bool record = cta_needs_grad(ins, 2);
    ct_tensor *tw = NULL;
    ct_tensor *out = p.nll ? cti_nll_loss_forward(x, t, w, p.ignore_index, p.reduction, record ? &tw : NULL)
                           : cti_cross_entropy_forward(x, t, w, p.ignore_index, p.reduction, p.label_smoothing,
                                                       record ? &tw : NULL);
    if (out && record) {
        ct_node *n = cta_record(out, p.nll ? "NllLossBackward0" : "CrossEntropyLossBackward0", class_loss_backward, ins, 2);
        out = n ? recorded(out, keep_params(n, &p, sizeof p) && !cta_save(n, 0, x) && !cta_save(n, 1, t) &&
                                    (!w || !cta_save(n, 2, w)) && (!tw || !cta_save(n, 3, tw)))
                : NULL;
    }
    ct_decref(tw);
    return out;
}

ct_tensor *cta_cross_entropy(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index,
                             ct_reduction r, double label_smoothing) {
    return class_loss(x, t, w, (class_loss_params){ignore_index, r, label_smoothing, false});
}

ct_tensor *cta_nll_loss(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index, ct_reduction r) {
    return class_loss(x, t, w, (class_loss_params){ignore_index, r, 0.0, true});
}

static ct_status bce_backward(ct_node *n, const ct_tensor *g, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0), *t = cta_saved(n, 1), *w = cta_saved(n, 2), *pw = cta_saved(n, 3);
    if (n->freed) return ct_last_status();
    return cti_bce_with_logits_backward(g, x, t, w, pw, (ct_reduction)n->op, n->in[0].needs_grad ? &grad_in[0] : NULL,
                                        n->in[1].needs_grad ? &grad_in[1] : NULL);
}

ct_tensor *cta_bce_with_logits(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, const ct_tensor *pw,
                               ct_reduction r) {
    ct_tensor *out = cti_bce_with_logits_forward(x, t, w, pw, r);
    const ct_tensor *ins[2] = {x, t};
    if (!out || !cta_needs_grad(ins, 2)) return out;
    ct_node *n = cta_record(out, "BinaryCrossEntropyWithLogitsBackward0", bce_backward, ins, 2);
    if (n) n->op = r;
    return n ? recorded(out, !cta_save(n, 0, x) && !cta_save(n, 1, t) && (!w || !cta_save(n, 2, w)) &&
                                 (!pw || !cta_save(n, 3, pw)))
             : NULL;
}
