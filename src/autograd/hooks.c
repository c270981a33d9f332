/*
 * hooks.c — post-accumulate-grad hooks on leaves
 * (Tensor.register_post_accumulate_grad_hook): registration, and the
 * engine's call once a leaf has received every gradient of a backward.
 * Why: DistributedDataParallel must know the moment a parameter's gradient
 * is final, to start all-reducing its bucket while backward goes on with
 * the layers below (src/dist/ddp.c).
 *
 * The engine counts, before running, how many gradient edges of the graph
 * end in each hooked leaf (tensor.hook_pending); the edge that brings the
 * count to zero runs the hooks. A leaf used twice therefore runs its hooks
 * once, after both gradients are summed, as PyTorch's AccumulateGrad does.
 */
#include <stdlib.h>

#include "autograd.h"

ct_status ct_register_post_accumulate_grad_hook(ct_tensor *t, ct_grad_hook_fn fn, void *user) {
    CT_CHECK_OBJ_STATUS(t, "register_post_accumulate_grad_hook: NULL tensor");
    CT_CHECK_STATUS(fn != NULL, CT_ERR_INVALID_ARG, "register_post_accumulate_grad_hook: NULL hook");
    CT_CHECK_STATUS(!t->grad_fn, CT_ERR_STATE,
                    "post accumulate grad hooks cannot be registered on non-leaf tensors");
    CT_CHECK_STATUS(t->requires_grad, CT_ERR_STATE,
                    "cannot register a hook on a tensor that doesn't require gradient");
    ct_grad_hook *h = malloc(sizeof *h);
    CT_CHECK_STATUS(h != NULL, CT_ERR_OOM, "register_post_accumulate_grad_hook: out of memory");
    *h = (ct_grad_hook){fn, user, NULL};
    ct_grad_hook **end = &t->hooks;
    while (*end) end = &(*end)->next;
    *end = h;
    return CT_OK;
}

ct_status ct_remove_post_accumulate_grad_hook(ct_tensor *t, ct_grad_hook_fn fn, void *user) {
    CT_CHECK_OBJ_STATUS(t, "remove_post_accumulate_grad_hook: NULL tensor");
    for (ct_grad_hook **p = &t->hooks; *p; p = &(*p)->next)
        if ((*p)->fn == fn && (*p)->user == user) {
            ct_grad_hook *h = *p;
            *p = h->next;
            free(h);
            return CT_OK;
        }
    return ct_error_set(CT_ERR_INVALID_ARG, "remove_post_accumulate_grad_hook: no such hook on this tensor");
}

ct_status cta_run_grad_hooks(ct_tensor *leaf) {
    if (!leaf->grad) return CT_OK; /* no gradient reached it in this backward */
    for (ct_grad_hook *h = leaf->hooks; h; h = h->next) CT_TRY(h->fn(leaf, h->user));
    return CT_OK;
}

void cta_count_hooked_edges(ct_node *const *nodes, size_t n, int count) {
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < nodes[k]->n_inputs; i++) {
            ct_tensor *leaf = nodes[k]->leaf[i];
            if (!leaf || !leaf->hooks) continue;
            leaf->hook_pending = count ? leaf->hook_pending + 1 : 0;
        }
}

ct_status cta_visit_leaves(const ct_tensor *root, void (*visit)(ct_tensor *leaf, void *user), void *user) {
    if (!root || !root->grad_fn) {
        if (root && root->requires_grad) visit((ct_tensor *)root, user);
        return CT_OK;
    }
    size_t n = 0, cap = 64, seen_n = 0;
    ct_node **stack = malloc(cap * sizeof *stack), **seen = malloc(cap * sizeof *seen);
    ct_status st = stack && seen ? CT_OK : ct_error_set(CT_ERR_OOM, "autograd: out of memory walking the graph");
    if (st == CT_OK) stack[n++] = root->grad_fn, seen[seen_n++] = root->grad_fn, root->grad_fn->visited = true;
    while (st == CT_OK && n) {
        ct_node *node = stack[--n];
        for (int i = 0; i < node->n_inputs; i++) {
            if (node->leaf[i]) visit(node->leaf[i], user);
            ct_node *m = node->next[i];
            if (!m || m->visited) continue;
            if (n == cap || seen_n == cap) {
                cap *= 2;
                ct_node **s2 = realloc(stack, cap * sizeof *s2);
                if (s2) stack = s2;
                ct_node **v2 = s2 ? realloc(seen, cap * sizeof *v2) : NULL;
                if (v2) seen = v2;
                if (!s2 || !v2) {
                    st = ct_error_set(CT_ERR_OOM, "autograd: out of memory walking the graph");
                    break;
                }
            }
            m->visited = true;
            stack[n++] = m, seen[seen_n++] = m;
        }
    }
    for (size_t k = 0; seen && k < seen_n; k++) seen[k]->visited = false;
    free(stack), free(seen);
    return st;
}

ct_status cta_leaf_edge_done(ct_tensor *leaf) {
    if (!leaf->hooks || --leaf->hook_pending > 0) return CT_OK;
    return cta_run_grad_hooks(leaf);
}
