/*
 * autograd.h — the autograd graph inside ctorch (internal).
 *
 * A node is the backward of one op application. It holds strong references
 * to the nodes of its inputs (edges) or, for leaf inputs, to the leaf
 * tensors themselves (where gradients accumulate), plus the values the
 * backward formula needs. Saved values are detached views, so an output
 * saved by its own node makes no reference cycle.
 *
 * Differentiable ops come in two layers: cti_* computes and never records;
 * cta_* computes with cti_* and records a node when grad mode is on and an
 * input requires grad. Public ct_* ops call cta_*; backward formulas call
 * cti_* only, so computing gradients records nothing.
 */
#ifndef CT_AUTOGRAD_AUTOGRAD_H
#define CT_AUTOGRAD_AUTOGRAD_H

#include <stdatomic.h>

#include "core/internal.h"
#include "ctorch/autograd.h"
#include "ctorch/functional_loss.h"

#define CT_NODE_MAX_INPUTS 8
#define CT_NODE_MAX_SAVED 4

typedef struct ct_node ct_node;

/* Compute the gradient of each input from grad_out (the gradient of the
 * node's output). grad_in[i] receives a new untracked reference, or stays
 * NULL when input i needs none. Return CT_OK or an error. */
typedef ct_status (*ct_backward_fn)(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in);

typedef struct ct_input_meta {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    ct_dtype dtype;
    ct_device device;
    bool needs_grad;
} ct_input_meta;

struct ct_node {
    atomic_int refcount;
    const char *name;                      /* "AddBackward0", as PyTorch names it */
    ct_backward_fn backward;
    uint64_t seq;                          /* creation order: later nodes run first */
    int n_inputs;
    ct_node *next[CT_NODE_MAX_INPUTS];     /* grad_fn of input i, or NULL */
    ct_tensor *leaf[CT_NODE_MAX_INPUTS];   /* input i if it is a leaf that requires grad */
    ct_input_meta in[CT_NODE_MAX_INPUTS];
    ct_tensor *saved[CT_NODE_MAX_SAVED];   /* detached views */
    unsigned saved_version[CT_NODE_MAX_SAVED]; /* their storage's version when saved */
    const char *saved_from[CT_NODE_MAX_SAVED]; /* the node that made each (NULL: a leaf) */
    bool freed;                            /* saved values released by backward */
    /* op parameters for the backward formula */
    int op;
    double d[4];
    int64_t iv[2 * CT_MAX_DIMS];
    int niv;
    void *extra;                           /* owned; freed with free() */
    /* engine scratch, valid during one backward */
    int deps;
    ct_tensor *pending;
    bool visited;
};

/* Does an op on these inputs need recording? (grad mode on and one of them
 * requires grad) */
bool cta_needs_grad(const ct_tensor *const *inputs, int n);
/* Make out the result of a new node over inputs; returns the node (owned
 * by out) so the caller can save values and set parameters, or NULL on
 * error (then out has been released). Only call when cta_needs_grad. */
ct_node *cta_record(ct_tensor *out, const char *name, ct_backward_fn fn, const ct_tensor *const *inputs, int n);
/* Save a detached view of t in the node (slot i). */
ct_status cta_save(ct_node *n, int i, const ct_tensor *t);
/* A saved value, or NULL with the "backward a second time" error, or with
 * PyTorch's "modified by an inplace operation" error when an in-place op
 * changed it after it was saved. */
const ct_tensor *cta_saved(ct_node *n, int i);
/* Replace every saved value of n that lives in storage s by a copy of it,
 * so that an in-place op about to write s leaves n's values intact. */
ct_status cta_unshare_saved(ct_node *n, const ct_storage *s);
/* Make every saved value of n that lives in storage `from` (an in-place
 * op's result, just written into t) a view of t at t's current version: as
 * in PyTorch, the op saved its output, which is t, and a later write to t
 * must be noticed. */
ct_status cta_resave_as(ct_node *n, const ct_storage *from, const ct_tensor *t);

void cta_node_release(ct_node *n);

/* hooks.c: post-accumulate-grad hooks. Before a backward runs, count the
 * gradient edges that end in hooked leaves (count true), or reset the
 * counts after it (count false); an edge that has been processed calls
 * cta_leaf_edge_done, which runs the leaf's hooks after its last one. */
void cta_count_hooked_edges(ct_node *const *nodes, size_t n, int count);
ct_status cta_leaf_edge_done(ct_tensor *leaf);
ct_status cta_run_grad_hooks(ct_tensor *leaf);
/* Calls visit for every leaf that requires grad and that backward from
 * root would reach (a leaf reached twice is visited twice). Uses the
 * nodes' visited flags, so not during a backward. */
ct_status cta_visit_leaves(const ct_tensor *root, void (*visit)(ct_tensor *leaf, void *user), void *user);

/* Gradient helpers for backward formulas (untracked results):
 * sum grad down to an input's shape (undoing broadcasting) and cast it to the
 * input's dtype. */
ct_tensor *cta_reduce_to_input(const ct_tensor *grad, const ct_input_meta *in);

/* Recording versions of the differentiable internal ops (same arguments
 * as their cti_* counterparts). */
ct_tensor *cta_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *cta_binary_scalar(ct_binary_op op, const ct_tensor *a, double s);
ct_tensor *cta_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1);
ct_tensor *cta_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
ct_tensor *cta_reduce(ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims, bool keepdim, double param);
/* Record a reduction whose result out was already computed (consumes out). */
ct_tensor *cta_record_reduce(ct_tensor *out, ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims,
                             bool keepdim, double param);
ct_tensor *cta_matmul(const ct_tensor *a, const ct_tensor *b);
ct_tensor *cta_softmax(const ct_tensor *a, int dim, bool log);
/* F.linear: x [*, in] @ wᵀ [in, out] + b [out] (b may be NULL). */
ct_tensor *cti_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b);
ct_tensor *cta_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b);

/* ---- views, copies, joins and indexing (rules_views.c, rules_join.c) ----
 * Same arguments as the cti_* counterparts. The cta_record_* variants
 * record a result the caller already computed from `in` (consumed; dims
 * already wrapped, starts normalised); a result that is `in` itself is
 * returned without a node. */
ct_tensor *cta_view(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *cta_reshape(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *cta_flatten(const ct_tensor *t, int start_dim, int end_dim);
ct_tensor *cta_unsqueeze(const ct_tensor *t, int dim);
ct_tensor *cta_squeeze_dim(const ct_tensor *t, int dim);
ct_tensor *cta_permute(const ct_tensor *t, const int *dims);
ct_tensor *cta_transpose(const ct_tensor *t, int d0, int d1);
ct_tensor *cta_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length);
ct_tensor *cta_select(const ct_tensor *t, int dim, int64_t index);
ct_tensor *cta_expand(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *cta_as_strided(const ct_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                          int64_t offset);
ct_tensor *cta_clone(const ct_tensor *t);
ct_tensor *cta_contiguous(const ct_tensor *t);
ct_tensor *cta_to_dtype(const ct_tensor *t, ct_dtype dtype);
ct_tensor *cta_to_device(const ct_tensor *t, ct_device device);
/* out has in's elements in another shape (gradient: reshaped back). */
ct_tensor *cta_record_reshape(ct_tensor *out, const ct_tensor *in, const char *name);
ct_tensor *cta_record_transpose(ct_tensor *out, const ct_tensor *in, int d0, int d1, const char *name);
/* out = in[start::step] along dim (or a narrow: step 1). */
ct_tensor *cta_record_slice(ct_tensor *out, const ct_tensor *in, int dim, int64_t start, int64_t step,
                            const char *name);
/* out is in converted to another dtype and/or device. */
ct_tensor *cta_record_to(ct_tensor *out, const ct_tensor *in);
/* out = cat(ts, dim) or stack(ts, dim); dim wrapped for out. */
ct_tensor *cta_record_join(ct_tensor *out, ct_tensor *const *ts, int n, int dim, bool stack);
/* out = index_select(a, dim, index) with index the validated int64 vector. */
ct_tensor *cta_record_index_select(ct_tensor *out, const ct_tensor *a, int dim, const ct_tensor *index);
/* out = gather(a, dim, index). */
ct_tensor *cta_record_gather(ct_tensor *out, const ct_tensor *a, int dim, const ct_tensor *index);
/* ---- end of views, copies, joins and indexing ---- */

/* Neural-network ops (rules_nn.c); parameter structs from src/ops. */
struct cti_conv2d_params;
struct cti_pool2d_params;
ct_tensor *cta_conv2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b, const struct cti_conv2d_params *p);
ct_tensor *cta_conv2d_relu(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b,
                           const struct cti_conv2d_params *p);
ct_tensor *cta_max_pool2d(const ct_tensor *x, const struct cti_pool2d_params *p, ct_tensor **indices);
ct_tensor *cta_avg_pool2d(const ct_tensor *x, const struct cti_pool2d_params *p);
ct_tensor *cta_adaptive_avg_pool2d(const ct_tensor *x, const int64_t output_size[2]);
ct_tensor *cta_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var, const ct_tensor *w,
                          const ct_tensor *b, bool training, double momentum, double eps);
ct_tensor *cta_layer_norm(const ct_tensor *x, ct_shape normalized_shape, const ct_tensor *w, const ct_tensor *b,
                          double eps);
ct_tensor *cta_dropout(const ct_tensor *x, double p, bool training);
/* padding_idx already resolved to a row or -1 */
ct_tensor *cta_embedding(const ct_tensor *indices, const ct_tensor *weight, int64_t padding_idx);
ct_tensor *cta_mse_loss(const ct_tensor *x, const ct_tensor *t, ct_reduction reduction);
ct_tensor *cta_cross_entropy(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index,
                             ct_reduction reduction, double label_smoothing);
ct_tensor *cta_nll_loss(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index, ct_reduction reduction);
ct_tensor *cta_bce_with_logits(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, const ct_tensor *pw,
                               ct_reduction reduction);

#endif /* CT_AUTOGRAD_AUTOGRAD_H */
