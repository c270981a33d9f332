/*
 * engine.c — the autograd engine: grad mode, recording nodes, leaf
 * properties, and backward.
 *
 * Backward walks the graph reachable from the root, counts for every node
 * how many of its consumers must run first, and then runs ready nodes in
 * reverse creation order (PyTorch's sequence-number priority), summing the
 * gradients that flow into each node before running it. Gradients reaching
 * leaves are added into their .grad, and a leaf's post-accumulate-grad
 * hooks run after its last one (hooks.c). Without retain_graph the saved
 * values of every node that ran are freed.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

static _Thread_local bool tl_grad_disabled;
static atomic_ullong g_seq;

bool ct_is_grad_enabled(void) { return !tl_grad_disabled; }
void ct_set_grad_enabled(bool enabled) { tl_grad_disabled = !enabled; }

/* ---- nodes -------------------------------------------------------------------- */

bool cta_needs_grad(const ct_tensor *const *inputs, int n) {
    if (tl_grad_disabled) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

ct_node *cta_record(ct_tensor *out, const char *name, ct_backward_fn fn, const ct_tensor *const *inputs, int n) {
    CT_ASSERT(n <= CT_NODE_MAX_INPUTS);
    ct_node *node = calloc(1, sizeof *node);
    if (!node) {
        ct_decref(out);
        ct_error_set(CT_ERR_OOM, "out of memory recording the autograd graph");
        return NULL;
    }
    atomic_init(&node->refcount, 1);
    node->name = name;
    node->backward = fn;
    node->seq = atomic_fetch_add(&g_seq, 1);
    node->n_inputs = n;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = inputs[i];
        if (!t) continue;
        ct_input_meta *m = &node->in[i];
        m->ndim = t->ndim;
        memcpy(m->shape, t->shape, sizeof m->shape);
        m->dtype = t->dtype;
        m->device = t->storage->device;
        m->needs_grad = t->requires_grad;
        if (!t->requires_grad) continue;
        if (t->grad_fn) {
            node->next[i] = t->grad_fn;
            atomic_fetch_add(&node->next[i]->refcount, 1);
        } else {
            node->leaf[i] = ct_retain((ct_tensor *)t);
        }
    }
    out->requires_grad = true;
    out->grad_fn = node;
    return node;
}

ct_status cta_save(ct_node *n, int i, const ct_tensor *t) {
    CT_ASSERT(i < CT_NODE_MAX_SAVED && !n->saved[i]);
    n->saved[i] = ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset);
    if (!n->saved[i]) return ct_last_status();
    n->saved_version[i] = ct_tensor_version(t);
    n->saved_from[i] = t->grad_fn ? t->grad_fn->name : NULL;
    return CT_OK;
}

/* "torch.FloatTensor" / "torch.cuda.FloatTensor": the legacy type names
 * PyTorch's messages use. */
static const char *legacy_type_name(const ct_tensor *t, char *buf, size_t size) {
    ct_device d = t->storage->device;
    if (d.type == CT_DEVICE_CPU) snprintf(buf, size, "torch.%sTensor", cti_scalar_type_name(t->dtype));
    else snprintf(buf, size, "torch.%s.%sTensor", ct_device_type_name(d.type), cti_scalar_type_name(t->dtype));
    return buf;
}

/* PyTorch names the producing node without its "Backward<N>" suffix here. */
static int node_stem_length(const char *name) {
    const char *b = strstr(name, "Backward");
    return b ? (int)(b - name) : (int)strlen(name);
}

static void modified_error(const ct_node *n, int i) {
    const ct_tensor *t = n->saved[i];
    char type[64], shape[CT_SHAPE_STR_MAX], from[160] = "";
    if (n->saved_from[i])
        snprintf(from, sizeof from, ", which is output 0 of %.*s,", node_stem_length(n->saved_from[i]),
                 n->saved_from[i]);
    ct_error_set(CT_ERR_STATE,
                 "one of the variables needed for gradient computation has been modified by an inplace "
                 "operation: [%s %s]%s is at version %u; expected version %u instead (needed by %s). Hint: "
                 "compute the value out of place, or clone() it before the in-place op.",
                 legacy_type_name(t, type, sizeof type), ct_shape_str(t->shape, t->ndim, shape, sizeof shape),
                 from, ct_tensor_version(t), n->saved_version[i], n->name);
}

const ct_tensor *cta_saved(ct_node *n, int i) {
    if (n->freed) {
        ct_error_set(CT_ERR_STATE,
                     "Trying to backward through the graph a second time (or directly access saved tensors after "
                     "they have already been freed). Saved intermediate values of the graph are freed when you "
                     "call backward. Specify retain_graph=true if you need to backward through the graph a second "
                     "time (%s).", n->name);
        return NULL;
    }
    if (n->saved[i] && ct_tensor_version(n->saved[i]) != n->saved_version[i]) {
        modified_error(n, i);
        return NULL;
    }
    return n->saved[i];
}

ct_status cta_resave_as(ct_node *n, const ct_storage *from, const ct_tensor *t) {
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        ct_tensor *old = n->saved[i];
        if (!old || old->storage != from) continue;
        ct_tensor *v = ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset);
        if (!v) return ct_last_status();
        ct_decref(old);
        n->saved[i] = v;
        n->saved_version[i] = ct_tensor_version(t);
    }
    return CT_OK;
}

ct_status cta_unshare_saved(ct_node *n, const ct_storage *s) {
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        ct_tensor *t = n->saved[i];
        if (!t || t->storage != s) continue;
        ct_tensor *copy = cti_clone(t);
        if (!copy) return ct_last_status();
        ct_decref(t);
        n->saved[i] = copy;
        n->saved_version[i] = ct_tensor_version(copy);
    }
    return CT_OK;
}

static void free_saved(ct_node *n) {
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        ct_decref(n->saved[i]);
        n->saved[i] = NULL;
    }
}

/* Iterative, so that releasing a long chain cannot overflow the C stack. */
void cta_node_release(ct_node *root) {
    ct_node **stack = NULL;
    size_t top = 0, cap = 0;
    ct_node *n = root;
    while (n) {
        if (atomic_fetch_sub(&n->refcount, 1) == 1) {
            for (int i = 0; i < n->n_inputs; i++) {
                ct_decref(n->leaf[i]);
                if (!n->next[i]) continue;
                if (top == cap) {
                    size_t ncap = cap ? cap * 2 : 64;
                    ct_node **grown = realloc(stack, ncap * sizeof *grown);
                    if (!grown) { cta_node_release(n->next[i]); continue; } /* rare: recurse */
                    stack = grown;
                    cap = ncap;
                }
                stack[top++] = n->next[i];
            }
            free_saved(n);
            ct_decref(n->pending);
            free(n->extra);
            free(n);
        }
        n = top ? stack[--top] : NULL;
    }
    free(stack);
}

/* ---- leaf properties ----------------------------------------------------------- */

ct_status ct_set_requires_grad(ct_tensor *t, bool flag) {
    CT_CHECK_OBJ_STATUS(t, "requires_grad_: NULL tensor");
    CT_CHECK_STATUS(!t->grad_fn, CT_ERR_STATE,
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    CT_CHECK_STATUS(!flag || ct_dtype_is_floating(t->dtype), CT_ERR_DTYPE,
                    "only Tensors of floating point dtype can require gradients (got %s)", ct_dtype_name(t->dtype));
    t->requires_grad = flag;
    return CT_OK;
}

bool ct_requires_grad(const ct_tensor *t) { return t && t->requires_grad; }
bool ct_is_leaf(const ct_tensor *t) { return t && !t->grad_fn; }
const char *ct_grad_fn_name(const ct_tensor *t) { return t && t->grad_fn ? ((ct_node *)t->grad_fn)->name : NULL; }

ct_tensor *ct_grad(const ct_tensor *t) {
    if (!t || !t->grad) return NULL;
    return ct_track(ct_retain(t->grad));
}

ct_status ct_set_grad(ct_tensor *t, const ct_tensor *grad) {
    CT_CHECK_OBJ_STATUS(t, "set_grad: NULL tensor");
    if (grad) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        CT_CHECK_STATUS(grad->ndim == t->ndim && !memcmp(grad->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim),
                        CT_ERR_SHAPE, "assigned grad has data of a different size: %s vs the tensor's %s",
                        ct_shape_str(grad->shape, grad->ndim, a, sizeof a), ct_shape_str(t->shape, t->ndim, b, sizeof b));
        CT_CHECK_STATUS(grad->dtype == t->dtype, CT_ERR_DTYPE, "assigned grad has dtype %s, the tensor %s",
                        ct_dtype_name(grad->dtype), ct_dtype_name(t->dtype));
        CT_CHECK_STATUS(ct_device_equal(grad->storage->device, t->storage->device), CT_ERR_DEVICE,
                        "assigned grad is on another device than the tensor");
    }
    ct_tensor *old = t->grad;
    t->grad = grad ? ct_tensor_view_of(grad, grad->shape, grad->strides, grad->ndim, grad->offset) : NULL;
    ct_decref(old);
    return CT_OK;
}

/* ---- backward ------------------------------------------------------------------- */

/* Add g (a fresh reference, consumed) into *slot. */
static ct_status accumulate(ct_tensor **slot, ct_tensor *g) {
    if (!*slot) {
        *slot = g;
        return CT_OK;
    }
    ct_tensor *sum = cti_binary(CT_BIN_ADD, *slot, g, 1.0);
    ct_decref(g);
    if (!sum) return ct_last_status();
    ct_decref(*slot);
    *slot = sum;
    return CT_OK;
}

/* Leaves own their .grad exclusively: a gradient that may be shared with
 * another tensor (a view, or the same object passed to two leaves) is
 * copied before it is stored. */
static ct_status accumulate_leaf(ct_tensor *leaf, ct_tensor *g) {
    if (!leaf->grad) {
        bool exclusive = atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 &&
                         ct_tensor_is_contiguous(g) && !g->grad_fn;
        ct_tensor *own = exclusive ? g : cti_clone(g);
        if (own != g) ct_decref(g);
        if (!own) return ct_last_status();
        own->requires_grad = false;
        leaf->grad = own;
        return CT_OK;
    }
    return accumulate(&leaf->grad, g);
}

typedef struct node_list {
    ct_node **items;
    size_t n, cap;
} node_list;

static bool list_push(node_list *l, ct_node *x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        ct_node **grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) return false;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = x;
    return true;
}

/* Every node reachable from root, with deps = number of edges into it. */
static ct_status collect(ct_node *root, node_list *all) {
    node_list stack = {0};
    root->visited = true;
    if (!list_push(all, root) || !list_push(&stack, root)) goto oom;
    while (stack.n) {
        ct_node *n = stack.items[--stack.n];
        for (int i = 0; i < n->n_inputs; i++) {
            ct_node *m = n->next[i];
            if (!m) continue;
            m->deps++;
            if (m->visited) continue;
            m->visited = true;
            if (!list_push(all, m) || !list_push(&stack, m)) goto oom;
        }
    }
    free(stack.items);
    return CT_OK;
oom:
    free(stack.items);
    return ct_error_set(CT_ERR_OOM, "out of memory walking the autograd graph");
}

/* A backward rule must return, for input i, a gradient of input i's shape
 * (PyTorch's validate_outputs): a wrongly shaped one would otherwise be
 * stored in a leaf's .grad or broadcast into a pending sum without a word. */
static ct_status check_gradient(const ct_node *n, int i, const ct_tensor *g) {
    const ct_input_meta *m = &n->in[i];
    bool same = g->ndim == m->ndim;
    for (int d = 0; same && d < m->ndim; d++) same = g->shape[d] == m->shape[d];
    if (same) return CT_OK;
    char got[CT_SHAPE_STR_MAX], want[CT_SHAPE_STR_MAX];
    return ct_error_set(CT_ERR_SHAPE, "Function %s returned an invalid gradient at index %d - got %s but expected "
                        "shape compatible with %s", n->name, i, ct_shape_str(g->shape, g->ndim, got, sizeof got),
                        ct_shape_str(m->shape, m->ndim, want, sizeof want));
}

/* Run one node and pass its input gradients on. */
static ct_status run_node(ct_node *n, node_list *ready) {
    ct_tensor *grad_in[CT_NODE_MAX_INPUTS] = {NULL};
    ct_status st = CT_OK;
    if (n->pending) {
        if (n->freed) {
            cta_saved(n, 0); /* sets the "second time" error */
            return CT_ERR_STATE;
        }
        st = n->backward(n, n->pending, grad_in);
        ct_decref(n->pending);
        n->pending = NULL;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        ct_tensor *g = grad_in[i];
        if (g && st == CT_OK && (n->leaf[i] || n->next[i])) st = check_gradient(n, i, g);
        if (g && st == CT_OK && n->leaf[i]) {
            st = accumulate_leaf(n->leaf[i], g);
        } else if (g && st == CT_OK && n->next[i]) {
            st = accumulate(&n->next[i]->pending, g);
        } else {
            ct_decref(g);
        }
        if (n->next[i] && --n->next[i]->deps == 0 && !list_push(ready, n->next[i]))
            st = ct_error_set(CT_ERR_OOM, "out of memory running backward");
        if (n->leaf[i] && st == CT_OK) st = cta_leaf_edge_done(n->leaf[i]);
    }
    return st;
}

ct_status ct_backward_ex(const ct_tensor *root, const ct_tensor *gradient, bool retain_graph) {
    /* a NULL root is usually the result of a failed op: report its error
     * (out of memory, say), not the NULL it left behind */
    if (!root) return ct_error_pending_or(CT_ERR_INVALID_ARG, "backward: NULL tensor");
    CT_CHECK_STATUS(root->requires_grad, CT_ERR_STATE,
                    "element 0 of tensors does not require grad and does not have a grad_fn");
    ct_tensor *g;
    if (gradient) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        CT_CHECK_STATUS(gradient->ndim == root->ndim &&
                            !memcmp(gradient->shape, root->shape, sizeof(int64_t) * (size_t)root->ndim),
                        CT_ERR_SHAPE, "backward: Mismatch in shape: grad_output[0] has a shape of %s and output[0] "
                        "has a shape of %s.", ct_shape_str(gradient->shape, gradient->ndim, a, sizeof a),
                        ct_shape_str(root->shape, root->ndim, b, sizeof b));
        g = cti_to_device(gradient, root->storage->device);
        ct_tensor *cast = g ? cti_cast(g, root->dtype) : NULL;
        ct_decref(g);
        g = cast;
    } else {
        CT_CHECK_STATUS(ct_shape_numel(root->shape, root->ndim) == 1, CT_ERR_SHAPE,
                        "grad can be implicitly created only for scalar outputs (the output has %lld elements)",
                        (long long)ct_shape_numel(root->shape, root->ndim));
        g = cti_full(root->shape, root->ndim, 1.0, root->dtype, root->storage->device);
    }
    if (!g) return ct_last_status();
    bool prev_mode = ct_is_grad_enabled();
    ct_set_grad_enabled(false); /* gradients are computed without recording */
    ct_status st;
    ct_node *top = root->grad_fn;
    if (!top) {
        st = accumulate_leaf((ct_tensor *)root, g);
        if (st == CT_OK) st = cta_run_grad_hooks((ct_tensor *)root);
        ct_set_grad_enabled(prev_mode);
        return st;
    }
    node_list all = {0}, ready = {0};
    st = collect(top, &all);
    if (st == CT_OK) cta_count_hooked_edges(all.items, all.n, true);
    if (st == CT_OK) {
        top->pending = g;
        g = NULL;
        if (!list_push(&ready, top)) st = ct_error_set(CT_ERR_OOM, "out of memory running backward");
    }
    while (st == CT_OK && ready.n) {
        size_t best = 0; /* the most recently created ready node runs first */
        for (size_t i = 1; i < ready.n; i++)
            if (ready.items[i]->seq > ready.items[best]->seq) best = i;
        ct_node *n = ready.items[best];
        ready.items[best] = ready.items[--ready.n];
        st = run_node(n, &ready);
        if (!retain_graph) {
            free_saved(n);
            n->freed = true;
        }
    }
    cta_count_hooked_edges(all.items, all.n, false);
    for (size_t i = 0; i < all.n; i++) { /* reset scratch, also after an error */
        ct_node *n = all.items[i];
        n->deps = 0;
        n->visited = false;
        ct_decref(n->pending);
        n->pending = NULL;
    }
    ct_decref(g);
    free(all.items);
    free(ready.items);
    ct_set_grad_enabled(prev_mode);
    return st;
}

ct_status ct_backward(const ct_tensor *root) { return ct_backward_ex(root, NULL, false); }

/* ---- helpers for backward formulas ------------------------------------------------ */

ct_tensor *cta_reduce_to_input(const ct_tensor *grad, const ct_input_meta *in) {
    if (!grad) return NULL;
    int dims[CT_MAX_DIMS], nd = 0;
    int lead = grad->ndim - in->ndim;
    for (int d = 0; d < grad->ndim; d++) {
        int id = d - lead;
        if (id < 0 || (in->shape[id] == 1 && grad->shape[d] != 1)) dims[nd++] = d;
    }
    ct_tensor *summed = nd ? cti_reduce(CT_RED_SUM, grad, dims, nd, true, 0) : ct_retain((ct_tensor *)grad);
    ct_tensor *shaped = summed ? cti_reshape(summed, in->shape, in->ndim) : NULL;
    ct_decref(summed);
    ct_tensor *cast = shaped ? cti_cast(shaped, in->dtype) : NULL;
    ct_decref(shaped);
    return cast;
}
