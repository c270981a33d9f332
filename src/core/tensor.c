/*
 * tensor.c — tensor handles: allocation, reference counting, scopes and
 * property accessors.
 *
 * Ownership (the contract is spelled out in include/ctorch/tensor.h): each
 * reference a public call returns is owned either by the caller or, inside a
 * scope, by that scope. Scopes are a per-thread stack of arrays of
 * references. ct_release looks for the reference in the open scopes (newest
 * first, where it almost always is) so that releasing early inside a scope
 * never leads to a double release at the scope's end.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mem_history.h"

static atomic_llong g_live_tensors;

int64_t ct_live_tensors(void) { return (int64_t)atomic_load(&g_live_tensors); }

/* ---- allocation ---------------------------------------------------------------- */

static ct_tensor *tensor_header(void) {
    ct_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        ct_error_set(CT_ERR_OOM, "out of memory allocating a tensor header");
        return NULL;
    }
    atomic_init(&t->refcount, 1);
    atomic_fetch_add(&g_live_tensors, 1);
    return t;
}

ct_tensor *ct_tensor_alloc(const int64_t *shape, int ndim, ct_dtype dt, ct_device dev) {
    char sbuf[CT_SHAPE_STR_MAX];
    dt = cti_resolve_dtype(dt);
    CT_CHECK_NULL(ct_dtype_is_valid(dt), CT_ERR_DTYPE, "invalid dtype %d", (int)dt);
    int64_t numel;
    if (!ct_shape_check("empty", shape, ndim, &numel)) return NULL;
    CT_CHECK_NULL(numel <= INT64_MAX / 8, CT_ERR_OOM, "tensor of shape %s is too large",
                  ct_shape_str(shape, ndim, sbuf, sizeof sbuf));
    ct_device d;
    if (ct_device_check(dev, &d) != CT_OK) return NULL;
    const bool history = cti_mem_history_on(); /* the allocator records shape and dtype */
    if (history) cti_mem_history_tensor(shape, ndim, dt);
    ct_storage *s = ct_storage_new(d, (size_t)numel * ct_dtype_size(dt));
    if (history) cti_mem_history_tensor_done();
    return s ? ct_tensor_on_storage(s, shape, ndim, dt) : NULL;
}

ct_tensor *ct_tensor_on_storage(ct_storage *s, const int64_t *shape, int ndim, ct_dtype dt) {
    ct_tensor *t = ct_shape_check("empty", shape, ndim, NULL) ? tensor_header() : NULL;
    if (!t) {
        ct_storage_release(s);
        return NULL;
    }
    t->storage = s;
    t->ndim = ndim;
    t->dtype = dt;
    if (ndim > 0) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    ct_contiguous_strides(t->shape, ndim, t->strides);
    return t;
}

/* Views get their sizes from ops that checked them with their own names; the
 * check here is the last gate that keeps every tensor's shape valid. */
ct_tensor *ct_tensor_view_of(const ct_tensor *base, const int64_t *shape, const int64_t *strides,
                             int ndim, int64_t offset) {
    if (!base || !ct_shape_check("view", shape, ndim, NULL)) return NULL;
    ct_tensor *t = tensor_header();
    if (!t) return NULL;
    t->storage = base->storage;
    ct_storage_retain(t->storage);
    t->ndim = ndim;
    t->dtype = base->dtype;
    t->offset = offset;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    return t;
}

ct_kview ct_kview_of(const ct_tensor *t) {
    ct_kview v;
    v.data = t->storage->data;
    v.offset = ct_buffer_offset(t);
    v.dtype = t->dtype;
    v.ndim = t->ndim;
    v.device = t->storage->device.index;
    v.device_type = t->storage->device.type;
    memcpy(v.shape, t->shape, sizeof v.shape);
    memcpy(v.strides, t->strides, sizeof v.strides);
    for (int i = t->ndim; i < CT_MAX_DIMS; i++) v.shape[i] = 1, v.strides[i] = 0;
    return v;
}

/* ---- reference counting ----------------------------------------------------------- */

void cta_node_release(struct ct_node *n);

static void tensor_destroy(ct_tensor *t) {
    ct_storage_release(t->storage);
    if (t->grad) ct_decref(t->grad);
    if (t->grad_fn) cta_node_release(t->grad_fn);
    for (ct_grad_hook *h = t->hooks, *next; h; h = next) next = h->next, free(h);
    free(t);
    atomic_fetch_sub(&g_live_tensors, 1);
}

void ct_decref(ct_tensor *t) {
    if (!t) return;
    int old = atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel);
    CT_ASSERT(old > 0);
    if (old == 1) tensor_destroy(t);
}

ct_tensor *ct_retain(ct_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

int ct_refcount(const ct_tensor *t) { return t ? atomic_load(&((ct_tensor *)t)->refcount) : 0; }

/* ---- scopes ------------------------------------------------------------------------ */

typedef struct scope {
    ct_tensor **items;
    int64_t count, cap;
    const void *site; /* the CT_SCOPE that opened it (its loop variable), or NULL */
} scope;

/* The per-thread stack of open scopes grows as needed. If it cannot grow
 * (out of memory), the new scope is counted but tracks nothing; its tensors
 * go to the innermost real scope, which is the safe direction (released
 * later, never twice). */
static _Thread_local scope *tl_scopes;
static _Thread_local int tl_depth, tl_cap;
static _Thread_local int tl_overflow;

int ct_scope_depth(void) { return tl_depth + tl_overflow; }

void ct_scope_begin(void) {
    if (tl_overflow == 0 && tl_depth == tl_cap) {
        int cap = tl_cap ? tl_cap * 2 : 16;
        scope *grown = realloc(tl_scopes, sizeof *grown * (size_t)cap);
        if (grown) {
            memset(grown + tl_cap, 0, sizeof *grown * (size_t)(cap - tl_cap));
            tl_scopes = grown;
            tl_cap = cap;
        }
    }
    if (tl_overflow > 0 || tl_depth == tl_cap) {
        ct_error_set(CT_ERR_OOM, "ct_scope_begin: out of memory growing the scope stack");
        tl_overflow++;
        return;
    }
    tl_scopes[tl_depth].site = NULL;
    tl_scopes[tl_depth++].count = 0;
}

/* A CT_SCOPE left by break, goto or return never ran its ct_scope_end.
 * Entering the same CT_SCOPE again in the same frame (its loop variable has
 * the same address, and a variable that is still live cannot share it)
 * while that abandoned scope is still the innermost one closes it first.
 * Deeper ones are left: a scope opened above it may be live. */
void ct_scope_begin_at(void *site) {
    if (site && tl_overflow == 0 && tl_depth > 0 && tl_scopes[tl_depth - 1].site == site) ct_scope_end();
    ct_scope_begin();
    if (tl_overflow == 0 && tl_depth > 0) tl_scopes[tl_depth - 1].site = site;
}

/* Ending a CT_SCOPE closes the scopes still open above it first: they were
 * opened inside its body and left without their end (a CT_SCOPE left by
 * break or return). If its own scope is no longer open, nothing is closed. */
void ct_scope_end_at(void *site) {
    if (!site || tl_overflow > 0) {
        ct_scope_end();
        return;
    }
    int d = tl_depth - 1;
    while (d >= 0 && tl_scopes[d].site != site) d--;
    if (d < 0) return;
    while (tl_depth > d) ct_scope_end();
}

void ct_scope_end(void) {
    if (tl_overflow > 0) {
        tl_overflow--;
        return;
    }
    if (tl_depth == 0) {
        ct_error_set(CT_ERR_STATE, "ct_scope_end: no scope is open");
        return;
    }
    scope *s = &tl_scopes[tl_depth - 1];
    /* release newest first; entries set to NULL were released early */
    for (int64_t i = s->count - 1; i >= 0; i--)
        if (s->items[i]) ct_decref(s->items[i]);
    s->count = 0;
    tl_depth--;
    if (tl_depth == 0) { /* outermost scope closed: give all memory back */
        for (int d = 0; d < tl_cap; d++) free(tl_scopes[d].items);
        free(tl_scopes);
        tl_scopes = NULL;
        tl_cap = 0;
    }
}

static bool scope_push(scope *s, ct_tensor *t) {
    if (s->count == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 64;
        ct_tensor **items = realloc(s->items, sizeof *items * (size_t)cap);
        if (!items) return false;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->count++] = t;
    return true;
}

ct_tensor *ct_track(ct_tensor *t) {
    if (!t || tl_depth == 0) return t;
    if (!scope_push(&tl_scopes[tl_depth - 1], t)) {
        ct_decref(t);
        ct_error_set(CT_ERR_OOM, "out of memory growing a tensor scope");
        return NULL;
    }
    return t;
}

/* Find and remove one scope-owned reference to t; true if found. */
static bool scope_forget(ct_tensor *t) {
    for (int d = tl_depth - 1; d >= 0; d--) {
        scope *s = &tl_scopes[d];
        for (int64_t i = s->count - 1; i >= 0; i--) {
            if (s->items[i] == t) {
                s->items[i] = NULL;
                if (i == s->count - 1) s->count--;
                return true;
            }
        }
    }
    return false;
}

void ct_release(ct_tensor *t) {
    if (!t) return;
    scope_forget(t);
    ct_decref(t);
}

ct_tensor *ct_keep(ct_tensor *t) {
    if (!t || tl_depth == 0) return t;
    /* The current scope keeps its reference (released at its end); the
     * parent scope, or the caller outside all scopes, gets a new one. */
    ct_retain(t);
    if (tl_depth >= 2 && !scope_push(&tl_scopes[tl_depth - 2], t)) {
        ct_decref(t);
        ct_error_set(CT_ERR_OOM, "out of memory growing a tensor scope");
        return NULL;
    }
    return t;
}

/* ---- properties ------------------------------------------------------------------ */

int ct_ndim(const ct_tensor *t) { return t ? t->ndim : 0; }

int64_t ct_size(const ct_tensor *t, int dim) {
    int d;
    if (!t || !ct_wrap_dim("size", dim, t->ndim, &d)) return -1;
    return t->ndim == 0 ? 1 : t->shape[d];
}

int64_t ct_stride(const ct_tensor *t, int dim) {
    int d;
    if (!t || !ct_wrap_dim("stride", dim, t->ndim, &d)) return -1;
    return t->ndim == 0 ? 1 : t->strides[d];
}

ct_shape ct_shape_of(const ct_tensor *t) {
    return t ? ct_shape_make(t->ndim, t->shape) : ct_shape_make(0, NULL);
}
const int64_t *ct_sizes(const ct_tensor *t) { return t ? t->shape : NULL; }
const int64_t *ct_strides(const ct_tensor *t) { return t ? t->strides : NULL; }
int64_t ct_storage_offset(const ct_tensor *t) { return t ? t->offset : 0; }
int64_t ct_numel(const ct_tensor *t) { return t ? ct_shape_numel(t->shape, t->ndim) : 0; }
ct_dtype ct_dtype_of(const ct_tensor *t) { return t ? t->dtype : CT_DTYPE_DEFAULT; }
ct_device ct_device_of(const ct_tensor *t) { return t ? t->storage->device : ct_device_cpu(); }
size_t ct_element_size(const ct_tensor *t) { return t ? ct_dtype_size(t->dtype) : 0; }
bool ct_is_contiguous(const ct_tensor *t) { return t && ct_tensor_is_contiguous(t); }
bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b) {
    return a && b && a->storage == b->storage;
}

void *ct_data_ptr(const ct_tensor *t) {
    if (!t || t->storage->device.type != CT_DEVICE_CPU) return NULL;
    return (char *)t->storage->data + ct_buffer_offset(t) * (int64_t)ct_dtype_size(t->dtype);
}
