/*
 * module.c — the module object: registration of parameters, buffers and
 * children; traversal with PyTorch's dotted names; train/eval; moving to a
 * device in place; printing like PyTorch's repr. (Copies of a module:
 * module_clone.c.)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_impl.h"

ct_module *ct_module_new(const char *type, ct_forward_fn forward, void *state, void (*free_state)(void *)) {
    ct_module *m = calloc(1, sizeof *m);
    CT_CHECK_NULL(m != NULL, CT_ERR_OOM, "out of memory creating a module");
    snprintf(m->type, sizeof m->type, "%s", type ? type : "Module");
    m->forward = forward;
    m->state = state;
    m->free_state = free_state;
    m->training = true;
    return m;
}

ct_module *cti_module_new_plain(const char *type, ct_forward_fn forward, void *state, size_t size) {
    ct_module *m = ct_module_new(type, forward, state, free);
    if (!m) {
        free(state);
        return NULL;
    }
    m->state_size = size;
    return m;
}

void *ct_module_state(ct_module *m) { return m ? m->state : NULL; }

void ct_module_set_extra_repr(ct_module *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->extra_repr, sizeof m->extra_repr, fmt, ap);
    va_end(ap);
}

static void free_names(ct_module *m) {
    for (int i = 0; i < m->nnames; i++) free(m->names[i]);
    free(m->names);
    m->names = NULL;
    m->nnames = 0;
}

void ct_module_free(ct_module *m) {
    if (!m) return;
    for (int i = 0; i < m->nparams; i++) free(m->params[i].name), ct_decref(m->params[i].t);
    for (int i = 0; i < m->nbuffers; i++) free(m->buffers[i].name), ct_decref(m->buffers[i].t);
    for (int i = 0; i < m->nchildren; i++) free(m->children[i].name), ct_module_free(m->children[i].m);
    free(m->params);
    free(m->buffers);
    free(m->children);
    free_names(m);
    cti_prune_free(m->prune);
    if (m->free_state) m->free_state(m->state);
    free(m);
}

static bool valid_name(const char *op, const char *name) {
    CT_CHECK_RET(name && name[0] && !strchr(name, '.'), false, CT_ERR_INVALID_ARG,
                 "%s: name can't be empty or contain \".\", got \"%s\"", op, name ? name : "(null)");
    return true;
}

static bool name_taken(const ct_module *m, const char *name) {
    for (int i = 0; i < m->nparams; i++) if (!strcmp(m->params[i].name, name)) return true;
    for (int i = 0; i < m->nbuffers; i++) if (!strcmp(m->buffers[i].name, name)) return true;
    for (int i = 0; i < m->nchildren; i++) if (!strcmp(m->children[i].name, name)) return true;
    return false;
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static ct_status add_tensor(ct_module *m, named_tensor **arr, int *n, int *cap, const char *op, const char *name,
                            ct_tensor *t) {
    if (!m || !t) {
        ct_decref(t);
        return ct_error_pending_or(CT_ERR_INVALID_ARG, "%s: NULL argument", op);
    }
    if (!valid_name(op, name) || (name_taken(m, name) && ct_error_set(CT_ERR_INVALID_ARG,
                                                                      "%s: attribute '%s' already exists", op, name))) {
        ct_decref(t);
        return ct_last_status();
    }
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 4;
        named_tensor *g = realloc(*arr, sizeof *g * (size_t)c);
        if (!g) {
            ct_decref(t);
            return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
        }
        *arr = g, *cap = c;
    }
    char *nm = dup(name);
    if (!nm) {
        ct_decref(t);
        return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    }
    (*arr)[(*n)++] = (named_tensor){nm, t};
    return CT_OK;
}

/* The caller's reference becomes the module's: drop it from the caller's
 * scope (if it is scope-owned) without changing the count. */
static ct_tensor *adopt(ct_tensor *t) {
    if (!t) return NULL;
    ct_retain(t);
    ct_release(t); /* gives back the scope's (or caller's) reference; ours remains */
    return t;
}

/* A NULL module still takes the reference, as a failed registration does. */
static ct_status null_module(const char *op, ct_tensor *t) {
    ct_release(t);
    return ct_error_pending_or(CT_ERR_INVALID_ARG, "%s: NULL module", op);
}

ct_status ct_module_add_parameter(ct_module *m, const char *name, ct_tensor *t) {
    if (!m) return null_module("register_parameter", t);
    if (t && !ct_dtype_is_floating(ct_dtype_of(t))) {
        ct_release(t);
        return ct_error_set(CT_ERR_DTYPE, "register_parameter: parameter '%s' must be floating point", name);
    }
    t = adopt(t);
    if (t && !t->grad_fn) t->requires_grad = true;
    return add_tensor(m, &m->params, &m->nparams, &m->cap_params, "register_parameter", name, t);
}

ct_status ct_module_add_buffer(ct_module *m, const char *name, ct_tensor *t) {
    if (!m) return null_module("register_buffer", t);
    return add_tensor(m, &m->buffers, &m->nbuffers, &m->cap_buffers, "register_buffer", name, adopt(t));
}

ct_status ct_module_add_child(ct_module *m, const char *name, ct_module *child) {
    if (!m || !child) {
        ct_module_free(child);
        return ct_error_pending_or(CT_ERR_INVALID_ARG, "add_module: NULL argument");
    }
    if (!valid_name("add_module", name) ||
        (name_taken(m, name) && ct_error_set(CT_ERR_INVALID_ARG, "add_module: attribute '%s' already exists", name))) {
        ct_module_free(child);
        return ct_last_status();
    }
    if (m->nchildren == m->cap_children) {
        int c = m->cap_children ? m->cap_children * 2 : 4;
        named_child *g = realloc(m->children, sizeof *g * (size_t)c);
        if (!g) {
            ct_module_free(child);
            return ct_error_set(CT_ERR_OOM, "add_module: out of memory");
        }
        m->children = g, m->cap_children = c;
    }
    char *nm = dup(name);
    if (!nm) {
        ct_module_free(child);
        return ct_error_set(CT_ERR_OOM, "add_module: out of memory");
    }
    m->children[m->nchildren++] = (named_child){nm, child};
    return CT_OK;
}

/* Fusion swaps children in place: the parent's forward looks its children
 * up by name, so the new one must take the old one's name and position. */
ct_status cti_module_replace_child(ct_module *m, const char *name, ct_module *child) {
    for (int i = 0; m && name && child && i < m->nchildren; i++)
        if (!strcmp(m->children[i].name, name)) {
            ct_module_free(m->children[i].m);
            m->children[i].m = child;
            return CT_OK;
        }
    ct_module_free(child);
    return ct_error_pending_or(CT_ERR_INVALID_ARG, "replace_child: %s has no child \"%s\"", m ? m->type : "NULL",
                               name ? name : "(null)");
}

/* Lookups: an absent name is no error (NULL), a NULL name is. */
static bool name_given(const char *op, const char *name) {
    CT_CHECK_RET(name != NULL, false, CT_ERR_INVALID_ARG, "%s: NULL name", op);
    return true;
}

ct_tensor *ct_module_param(ct_module *m, const char *name) {
    if (!m || !name_given("module_param", name)) return NULL;
    for (int i = 0; i < m->nparams; i++) if (!strcmp(m->params[i].name, name)) return m->params[i].t;
    return m->prune ? cti_prune_attr(m, name) : NULL; /* a pruned weight is orig * mask (prune.c) */
}
ct_tensor *ct_module_buffer(ct_module *m, const char *name) {
    if (!m || !name_given("module_buffer", name)) return NULL;
    for (int i = 0; i < m->nbuffers; i++) if (!strcmp(m->buffers[i].name, name)) return m->buffers[i].t;
    return NULL;
}
int ct_module_num_children(const ct_module *m) { return m ? m->nchildren : 0; }
ct_module *ct_module_child_at(ct_module *m, int i) {
    if (!m) return NULL;
    CT_CHECK_NULL(i >= 0 && i < m->nchildren, CT_ERR_INDEX,
                  "module_child_at: index %d is out of range for %s with %d children", i, m->type, m->nchildren);
    return m->children[i].m;
}
ct_module *ct_module_child(ct_module *m, const char *name) {
    if (!m || !name_given("module_child", name)) return NULL;
    for (int i = 0; i < m->nchildren; i++) if (!strcmp(m->children[i].name, name)) return m->children[i].m;
    return NULL;
}
const char *ct_module_type(const ct_module *m) { return m ? m->type : NULL; }
bool ct_module_is_training(const ct_module *m) { return m && m->training; }

void ct_module_train(ct_module *m, bool training) {
    if (!m) return;
    m->training = training;
    for (int i = 0; i < m->nchildren; i++) ct_module_train(m->children[i].m, training);
}

/* forward may be a user function: the thread's error is cleared first, so
 * that one returning NULL without ct_set_error is reported as such and not
 * by an older, unrelated message. */
ct_tensor *ct_forward(ct_module *m, const ct_tensor *input) {
    if (!m || !input) return NULL;
    CT_CHECK_NULL(m->forward != NULL, CT_ERR_UNSUPPORTED, "%s has no forward function", m->type);
    ct_clear_error();
    if (m->prune && cti_prune_pre_forward(m) != CT_OK) return NULL;
    ct_tensor *out = m->forward(m, input);
    if (!out && ct_last_status() == CT_OK)
        ct_error_set(CT_ERR_INTERNAL, "%s: forward returned NULL without setting an error", m->type);
    return out;
}

/* ---- traversal ----------------------------------------------------------------- */

typedef struct walk {
    ct_module *root;
    bool buffers;
    ct_tensor **out;
    const char **names;
    int max, count;
    bool failed;
} walk;

static void visit(walk *w, ct_module *m, const char *prefix) {
    int n = w->buffers ? m->nbuffers : m->nparams;
    named_tensor *arr = w->buffers ? m->buffers : m->params;
    for (int i = 0; i < n; i++, w->count++) {
        if (w->count >= w->max) continue;
        if (w->out) w->out[w->count] = arr[i].t;
        if (w->names) {
            size_t len = strlen(prefix) + strlen(arr[i].name) + 1;
            char *full = malloc(len);
            char **grown = realloc(w->root->names, sizeof *grown * (size_t)(w->root->nnames + 1));
            if (!full || !grown) {
                free(full);
                if (grown) w->root->names = grown;
                w->failed = true;
                continue;
            }
            snprintf(full, len, "%s%s", prefix, arr[i].name);
            w->root->names = grown;
            w->root->names[w->root->nnames++] = full;
            w->names[w->count] = full;
        }
    }
    for (int i = 0; i < m->nchildren; i++) {
        char child_prefix[512];
        snprintf(child_prefix, sizeof child_prefix, "%s%s.", prefix, m->children[i].name);
        visit(w, m->children[i].m, child_prefix);
    }
}

static int collect(ct_module *m, bool buffers, ct_tensor **out, const char **names, int max) {
    if (!m) return -1;
    CT_CHECK_RET(max >= 0, -1, CT_ERR_INVALID_ARG, "module_%s: max must be non-negative, got %d",
                 buffers ? "buffers" : "parameters", max);
    if (names) free_names(m);
    walk w = {m, buffers, out, names, out || names ? max : 0, 0, false};
    visit(&w, m, "");
    if (w.failed) {
        ct_error_set(CT_ERR_OOM, "out of memory listing module entries");
        return -1;
    }
    return w.count;
}

int ct_module_parameters(ct_module *m, ct_tensor **params, const char **names, int max) {
    return collect(m, false, params, names, max);
}
int ct_module_buffers(ct_module *m, ct_tensor **buffers, const char **names, int max) {
    return collect(m, true, buffers, names, max);
}

int64_t ct_module_num_parameters(ct_module *m) {
    int n = ct_module_parameters(m, NULL, NULL, 0);
    if (n <= 0) return 0;
    ct_tensor **p = malloc(sizeof *p * (size_t)n);
    if (!p) return 0;
    ct_module_parameters(m, p, NULL, n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += ct_numel(p[i]);
    free(p);
    return total;
}

ct_tensor *ct_module_get(ct_module *m, const char *name) {
    if (!m || !name_given("module_get", name)) return NULL;
    const char *dot = strchr(name, '.');
    if (!dot) {
        ct_tensor *t = ct_module_param(m, name);
        return t ? t : ct_module_buffer(m, name);
    }
    char head[128];
    size_t len = (size_t)(dot - name);
    if (len >= sizeof head) return NULL;
    memcpy(head, name, len);
    head[len] = '\0';
    return ct_module_get(ct_module_child(m, head), dot + 1);
}

/* ---- moving to a device in place --------------------------------------------------------- */

/* Give t the storage of a copy on dev, keeping the tensor object. */
/* module.to(device) copies every parameter, buffer and gradient first and
 * swaps the copies in only when all exist, so a failure (out of device
 * memory half-way) leaves the module exactly as it was, on its old device.
 * Tensors keep their handles (optimizers hold them); only their storage
 * changes. */
typedef struct pending_move {
    ct_tensor *t, *moved;
} pending_move;

typedef struct move_plan {
    pending_move *items;
    int n, cap;
} move_plan;

static bool planned(const move_plan *p, const ct_tensor *t) {
    for (int i = 0; i < p->n; i++)
        if (p->items[i].t == t) return true; /* a tensor shared by two modules */
    return false;
}

static ct_status plan_tensor(move_plan *p, ct_tensor *t, ct_device dev) {
    if (!t || ct_device_equal(t->storage->device, dev) || planned(p, t)) return CT_OK;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        pending_move *items = realloc(p->items, sizeof *items * (size_t)cap);
        if (!items) return ct_error_set(CT_ERR_OOM, "module.to: out of memory");
        p->items = items, p->cap = cap;
    }
    ct_tensor *moved = cti_to_device(t, dev);
    if (!moved) return ct_last_status();
    p->items[p->n++] = (pending_move){t, moved};
    return plan_tensor(p, t->grad, dev);
}

static ct_status plan_module(move_plan *p, ct_module *m, ct_device dev) {
    for (int i = 0; i < m->nparams; i++) CT_TRY(plan_tensor(p, m->params[i].t, dev));
    for (int i = 0; i < m->nbuffers; i++) CT_TRY(plan_tensor(p, m->buffers[i].t, dev));
    for (int i = 0; i < m->nchildren; i++) CT_TRY(plan_module(p, m->children[i].m, dev));
    return CT_OK;
}

static void apply_move(pending_move *mv) {
    ct_tensor *t = mv->t, *moved = mv->moved;
    ct_storage_release(t->storage);
    t->storage = moved->storage;
    ct_storage_retain(t->storage);
    t->offset = moved->offset;
    memcpy(t->strides, moved->strides, sizeof t->strides);
}

ct_status ct_module_to_checked(ct_module *m, ct_device device) {
    CT_CHECK_OBJ_STATUS(m, "module.to: NULL module");
    ct_device d;
    CT_TRY(ct_device_check(device, &d));
    move_plan p = {0};
    ct_status st = plan_module(&p, m, d);
    for (int i = 0; i < p.n; i++) {
        if (st == CT_OK) apply_move(&p.items[i]);
        ct_decref(p.items[i].moved);
    }
    free(p.items);
    return st;
}

ct_module *ct_module_to(ct_module *m, ct_device device) {
    return ct_module_to_checked(m, device) == CT_OK ? m : NULL;
}

/* ---- printing ------------------------------------------------------------------------------ */

static void print_module(FILE *f, const ct_module *m, int indent) {
    fprintf(f, "%s(", m->type);
    if (m->nchildren == 0) {
        fprintf(f, "%s)", m->extra_repr);
        return;
    }
    fprintf(f, "\n");
    if (m->extra_repr[0]) fprintf(f, "%*s%s\n", indent + 2, "", m->extra_repr);
    for (int i = 0; i < m->nchildren; i++) {
        fprintf(f, "%*s(%s): ", indent + 2, "", m->children[i].name);
        print_module(f, m->children[i].m, indent + 2);
        fprintf(f, "\n");
    }
    fprintf(f, "%*s)", indent, "");
}

ct_status ct_module_print(const ct_module *m) {
    CT_CHECK_OBJ_STATUS(m, "module print: NULL module");
    print_module(stdout, m, 0);
    fprintf(stdout, "\n");
    return CT_OK;
}
