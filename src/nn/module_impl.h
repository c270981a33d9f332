/*
 * module_impl.h — the layout of ct_module (internal to src/nn).
 */
#ifndef CT_NN_MODULE_IMPL_H
#define CT_NN_MODULE_IMPL_H

#include "autograd/autograd.h"
#include "ctorch/nn.h"

typedef struct named_tensor {
    char *name;
    ct_tensor *t;
} named_tensor;

typedef struct named_child {
    char *name;
    ct_module *m;
} named_child;

struct ct_module {
    char type[32];
    char extra_repr[160];      /* "in_features=10, out_features=1, bias=True" */
    ct_forward_fn forward;
    void *state;
    void (*free_state)(void *);
    /* How ct_module_clone copies state: with clone_state (set by the user,
     * ct_module_set_state_clone) or, for built-in layers whose state is
     * plain data, by copying state_size bytes; state without either cannot
     * be cloned. */
    ct_state_clone_fn clone_state;
    size_t state_size;
    bool training;
    named_tensor *params, *buffers;
    int nparams, nbuffers, cap_params, cap_buffers;
    named_child *children;
    int nchildren, cap_children;
    char **names;              /* dotted names handed out by parameters()/buffers() */
    int nnames;
    struct cti_prune_state *prune; /* pruned parameters (prune.c); NULL when none */
};

/* A module owning state that is plain data (no pointers to tensors,
 * modules or other memory; malloc'd, freed with free): ct_module_clone
 * copies its size bytes. On failure the state is freed. */
ct_module *cti_module_new_plain(const char *type, ct_forward_fn forward, void *state, size_t size);

/* Set the text shown inside the parentheses when the module is printed. */
void ct_module_set_extra_repr(ct_module *m, const char *fmt, ...);

/* Put child (owned from here on, freed on failure) in the place of m's
 * child called name, which is freed; the name and position stay. */
ct_status cti_module_replace_child(ct_module *m, const char *name, ct_module *child);

/* For fuse.c (layers_nn.c keeps the layouts of the layers' state): whether
 * m is a Conv2d of ct_nn_conv2d; a new Conv2d with like's stride, padding,
 * dilation and groups around weight and bias (references taken; bias may be
 * NULL); a BatchNorm2d of ct_nn_batchnorm2d's eps (false for other modules). */
bool cti_is_conv2d(const ct_module *m);
ct_module *cti_conv2d_like(const ct_module *like, ct_tensor *weight, ct_tensor *bias);
bool cti_batchnorm2d_eps(const ct_module *m, double *eps);

/* Pruning (prune.c): the attribute a pruned parameter's name stands for
 * (orig * mask, recomputed when missing or on another device than orig),
 * or NULL when name is not pruned; recomputing every such attribute before
 * a forward (PyTorch's forward pre-hook); copying the record for
 * ct_module_clone (the clone recomputes its attributes); freeing it. */
ct_tensor *cti_prune_attr(ct_module *m, const char *name);
ct_status cti_prune_pre_forward(ct_module *m);
ct_status cti_prune_clone(const ct_module *src, ct_module *dst);
void cti_prune_free(struct cti_prune_state *p);

#endif /* CT_NN_MODULE_IMPL_H */
