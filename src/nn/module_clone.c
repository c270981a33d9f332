/*
 * module_clone.c — copies of a module: ct_module_clone, PyTorch's
 * copy.deepcopy(model).to(device), and the hook by which a module says how
 * its private state is copied.
 *
 * A clone shares nothing with the original (parameters, buffers and their
 * gradients are new tensors, each module's state is a new copy), so either
 * can be trained, moved or freed without the other noticing. The whole tree
 * is checked for state that cannot be copied before any device memory is
 * taken; any later failure frees every part of the copy made so far.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_impl.h"

ct_status ct_module_set_state_clone(ct_module *m, ct_state_clone_fn clone_state) {
    CT_CHECK_OBJ_STATUS(m, "module_set_state_clone: NULL module");
    m->clone_state = clone_state;
    return CT_OK;
}

/* ---- checking that every state can be copied ---------------------------------------- */

static bool state_copyable(const ct_module *m) { return !m->state || m->clone_state || m->state_size; }

/* The first module (depth-first) whose state cannot be copied, and its
 * dotted path from the root in path ("" for the root itself). */
static const ct_module *find_uncopyable(const ct_module *m, char *path, size_t cap) {
    if (!state_copyable(m)) return m;
    size_t len = strlen(path);
    for (int i = 0; i < m->nchildren; i++) {
        snprintf(path + len, cap - len, "%s%s", len ? "." : "", m->children[i].name);
        const ct_module *bad = find_uncopyable(m->children[i].m, path, cap);
        if (bad) return bad;
    }
    path[len] = '\0';
    return NULL;
}

static ct_status check_copyable(const ct_module *root) {
    char path[512] = "";
    const ct_module *bad = find_uncopyable(root, path, sizeof path);
    if (!bad) return CT_OK;
    return ct_error_set(CT_ERR_INVALID_ARG,
                        "module_clone: %s%s%s%s has private state that ctorch cannot copy; give it a state clone "
                        "function with ct_module_set_state_clone(module, fn)",
                        bad->type, path[0] ? " (at \"" : "", path, path[0] ? "\")" : "");
}

/* ---- tensors ------------------------------------------------------------------------ */

/* Originals already copied, so that a tensor registered twice (tied
 * weights) stays one tensor in the clone. Holds one reference per copy. */
typedef struct copied {
    const ct_tensor *orig;
    ct_tensor *copy;
} copied;

typedef struct clone_ctx {
    ct_device device;
    copied *items;
    int n, cap;
} clone_ctx;

/* A new contiguous tensor on dev with t's values (no autograd history). */
static ct_tensor *copy_values(const ct_tensor *t, ct_device dev) {
    ct_tensor *out = ct_tensor_alloc(t->shape, t->ndim, t->dtype, dev);
    if (out && cti_copy(out, t) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* t's values, requires_grad and .grad as a fresh leaf on dev. */
static ct_tensor *copy_leaf(const ct_tensor *t, ct_device dev) {
    ct_tensor *out = copy_values(t, dev);
    if (!out) return NULL;
    out->requires_grad = t->requires_grad;
    if (t->grad && !(out->grad = copy_values(t->grad, dev))) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

static ct_status remember(clone_ctx *c, const ct_tensor *orig, ct_tensor *copy) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        copied *items = realloc(c->items, sizeof *items * (size_t)cap);
        if (!items) return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
        c->items = items, c->cap = cap;
    }
    c->items[c->n++] = (copied){orig, copy};
    return CT_OK;
}

/* The copy of t (a new reference), made once per original. */
static ct_tensor *copy_of(clone_ctx *c, const ct_tensor *t) {
    for (int i = 0; i < c->n; i++)
        if (c->items[i].orig == t) return ct_retain(c->items[i].copy);
    ct_tensor *copy = copy_leaf(t, c->device);
    if (!copy) return NULL;
    if (remember(c, t, copy) != CT_OK) {
        ct_decref(copy);
        return NULL;
    }
    return ct_retain(copy);
}

static void forget_all(clone_ctx *c) {
    for (int i = 0; i < c->n; i++) ct_decref(c->items[i].copy);
    free(c->items);
}

/* ---- modules ------------------------------------------------------------------------ */

static char *dup_name(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Copy n named tensors into *dst (allocated here); *dst_n counts the
 * entries filled, so that ct_module_free frees exactly those on failure. */
static ct_status copy_entries(clone_ctx *c, const named_tensor *src, int n, named_tensor **dst, int *dst_n,
                              int *dst_cap) {
    if (n == 0) return CT_OK;
    *dst = calloc((size_t)n, sizeof **dst);
    if (!*dst) return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
    *dst_cap = n;
    for (int i = 0; i < n; i++) {
        char *name = dup_name(src[i].name);
        ct_tensor *t = name ? copy_of(c, src[i].t) : NULL;
        if (!t) {
            free(name);
            return name ? ct_last_status() : ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
        }
        (*dst)[(*dst_n)++] = (named_tensor){name, t};
    }
    return CT_OK;
}

/* m's state copied by its clone function or bytewise; NULL for none. A
 * clone function that fails without saying why is reported as such. */
static ct_status copy_state(const ct_module *m, void **out) {
    *out = NULL;
    if (!m->state) return CT_OK;
    if (m->clone_state) {
        ct_clear_error();
        *out = m->clone_state(m->state);
        if (*out) return CT_OK;
        return ct_error_pending_or(CT_ERR_INTERNAL,
                                   "module_clone: the state clone function of %s returned NULL without setting an "
                                   "error", m->type);
    }
    if (!(*out = malloc(m->state_size))) return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
    memcpy(*out, m->state, m->state_size);
    return CT_OK;
}

/* A module like m around a copy of its state, without tensors or children. */
static ct_module *copy_shell(const ct_module *m) {
    void *state;
    if (copy_state(m, &state) != CT_OK) return NULL;
    ct_module *out = ct_module_new(m->type, m->forward, state, m->free_state);
    if (!out) {
        if (state && m->free_state) m->free_state(state);
        return NULL;
    }
    memcpy(out->extra_repr, m->extra_repr, sizeof out->extra_repr);
    out->training = m->training;
    out->clone_state = m->clone_state;
    out->state_size = m->state_size;
    return out;
}

static ct_module *clone_tree(clone_ctx *c, const ct_module *m);

static ct_status copy_children(clone_ctx *c, const ct_module *m, ct_module *out) {
    if (m->nchildren == 0) return CT_OK;
    out->children = calloc((size_t)m->nchildren, sizeof *out->children);
    if (!out->children) return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
    out->cap_children = m->nchildren;
    for (int i = 0; i < m->nchildren; i++) {
        char *name = dup_name(m->children[i].name);
        ct_module *child = name ? clone_tree(c, m->children[i].m) : NULL;
        if (!child) {
            free(name);
            return name ? ct_last_status() : ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
        }
        out->children[out->nchildren++] = (named_child){name, child};
    }
    return CT_OK;
}

static ct_module *clone_tree(clone_ctx *c, const ct_module *m) {
    ct_module *out = copy_shell(m);
    if (!out) return NULL;
    if (copy_entries(c, m->params, m->nparams, &out->params, &out->nparams, &out->cap_params) != CT_OK ||
        copy_entries(c, m->buffers, m->nbuffers, &out->buffers, &out->nbuffers, &out->cap_buffers) != CT_OK ||
        (m->prune && cti_prune_clone(m, out) != CT_OK) || copy_children(c, m, out) != CT_OK) {
        ct_module_free(out);
        return NULL;
    }
    return out;
}

ct_module *ct_module_clone(const ct_module *m, ct_device device) {
    CT_CHECK_OBJ(m, NULL, "module_clone: NULL module");
    clone_ctx c = {0};
    if (ct_device_check(device, &c.device) != CT_OK || check_copyable(m) != CT_OK) return NULL;
    ct_module *out = clone_tree(&c, m);
    forget_all(&c);
    return out;
}
