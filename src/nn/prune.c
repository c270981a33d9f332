/*
 * prune.c — torch.nn.utils.prune (ctorch/prune.h): unstructured L1, random,
 * custom-mask and global pruning, making it permanent, and the module-side
 * hooks (module_impl.h) that make a pruned name read as orig * mask.
 *
 * A pruned parameter "w" is the parameter "w_orig", the buffer "w_mask"
 * and a record here holding the attribute "w" (orig * mask). Layers find
 * their weight with ct_module_param, which falls back to the record, and
 * ct_forward recomputes the attribute first (PyTorch's forward pre-hook),
 * so every layer and user module works pruned without knowing it.
 *
 * Masks are chosen on the host, from float64 copies of the values: the
 * same tie rule and the same random draws (made on the CPU) give the same
 * mask on every device. Each call first builds everything that can fail
 * (mask and attribute tensors, names, array capacity), then commits with
 * steps that cannot, so an error leaves the module as it was.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/prune.h"
#include "module_impl.h"

typedef struct pruned {
    char *name;       /* "weight" */
    ct_tensor *attr;  /* orig * mask as of the last forward; NULL: not computed yet */
} pruned;

struct cti_prune_state {
    pruned *items;
    int n, cap;
};

/* ---- small helpers -------------------------------------------------------------------- */

static char *suffixed(const char *name, const char *suffix) {
    size_t a = strlen(name), b = strlen(suffix);
    char *s = malloc(a + b + 1);
    if (!s) return NULL;
    memcpy(s, name, a);
    memcpy(s + a, suffix, b + 1);
    return s;
}

static int index_of(const named_tensor *arr, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(arr[i].name, name)) return i;
    return -1;
}

static int record_of(const ct_module *m, const char *name) {
    if (!m->prune) return -1;
    for (int i = 0; i < m->prune->n; i++)
        if (!strcmp(m->prune->items[i].name, name)) return i;
    return -1;
}

static bool attribute_taken(const ct_module *m, const char *name) {
    if (index_of(m->params, m->nparams, name) >= 0 || index_of(m->buffers, m->nbuffers, name) >= 0) return true;
    for (int i = 0; i < m->nchildren; i++)
        if (!strcmp(m->children[i].name, name)) return true;
    return record_of(m, name) >= 0;
}

/* Where the orig parameter and the mask buffer of a pruned name are (both
 * must exist: they are ours). */
static ct_status find_pair(const ct_module *m, const char *name, int *oi, int *mi) {
    char *on = suffixed(name, "_orig"), *mn = suffixed(name, "_mask");
    *oi = on ? index_of(m->params, m->nparams, on) : -1;
    *mi = mn ? index_of(m->buffers, m->nbuffers, mn) : -1;
    free(on), free(mn);
    if (*oi < 0 || *mi < 0)
        return ct_error_set(CT_ERR_STATE, "prune: the pruned parameter '%s' of %s has lost its %s", name, m->type,
                            *oi < 0 ? "_orig parameter" : "_mask buffer");
    return CT_OK;
}

static ct_status orig_and_mask(ct_module *m, const char *name, ct_tensor **orig, ct_tensor **mask) {
    int oi, mi;
    CT_TRY(find_pair(m, name, &oi, &mi));
    *orig = m->params[oi].t, *mask = m->buffers[mi].t;
    return CT_OK;
}

/* mask * orig (PyTorch's apply_mask), in the current grad mode; a new reference. */
static ct_tensor *masked(const ct_tensor *orig, const ct_tensor *mask) {
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *prod = ct_mul(mask, orig);
        out = prod ? ct_retain(prod) : NULL;
    }
    return out;
}

static ct_status ensure_cap(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return CT_OK;
    int c = *cap ? *cap : 4;
    while (c < need) c *= 2;
    void *g = realloc(*arr, elem * (size_t)c);
    if (!g) return ct_error_set(CT_ERR_OOM, "prune: out of memory");
    *arr = g, *cap = c;
    return CT_OK;
}

/* ---- the module-side hooks (module_impl.h) ------------------------------------------- */

static ct_status recompute(ct_module *m, pruned *p) {
    ct_tensor *orig, *mask;
    CT_TRY(orig_and_mask(m, p->name, &orig, &mask));
    ct_tensor *attr = masked(orig, mask);
    if (!attr) return ct_last_status();
    ct_decref(p->attr);
    p->attr = attr;
    return CT_OK;
}

ct_tensor *cti_prune_attr(ct_module *m, const char *name) {
    int i = record_of(m, name);
    if (i < 0) return NULL;
    pruned *p = &m->prune->items[i];
    ct_tensor *orig, *mask;
    if (orig_and_mask(m, name, &orig, &mask) != CT_OK) return NULL;
    /* a clone has no attribute yet; ct_module_to moved orig but not it */
    if (!p->attr || !ct_device_equal(ct_device_of(p->attr), ct_device_of(orig)) ||
        ct_dtype_of(p->attr) != ct_dtype_of(orig))
        if (recompute(m, p) != CT_OK) return NULL;
    return p->attr;
}

ct_status cti_prune_pre_forward(ct_module *m) {
    for (int i = 0; m->prune && i < m->prune->n; i++) CT_TRY(recompute(m, &m->prune->items[i]));
    return CT_OK;
}

void cti_prune_free(struct cti_prune_state *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->items[i].name), ct_decref(p->items[i].attr);
    free(p->items);
    free(p);
}

ct_status cti_prune_clone(const ct_module *src, ct_module *dst) {
    struct cti_prune_state *p = calloc(1, sizeof *p);
    if (!p || !(p->items = calloc((size_t)src->prune->n + 1, sizeof *p->items))) {
        free(p);
        return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
    }
    p->cap = src->prune->n + 1;
    dst->prune = p; /* freed with dst from here on */
    for (int i = 0; i < src->prune->n; i++) {
        if (!(p->items[i].name = suffixed(src->prune->items[i].name, "")))
            return ct_error_set(CT_ERR_OOM, "module_clone: out of memory");
        p->n++;
    }
    return CT_OK;
}

/* ---- planning: everything that can fail ---------------------------------------------- */

/* One parameter to prune, with what its commit needs made in advance. */
typedef struct plan {
    ct_module *m;
    const char *name;
    ct_tensor *orig;           /* borrowed: the parameter, or name_orig when pruned before */
    ct_tensor *old_mask;       /* borrowed; NULL the first time */
    int64_t numel;
    double *mask;              /* host: the current mask, then the new one */
    ct_tensor *new_mask, *attr; /* owned until committed */
    char *orig_name, *mask_name, *rec_name; /* owned until committed (first time only) */
} plan;

static void plan_free(plan *p) {
    free(p->mask);
    ct_decref(p->new_mask), ct_decref(p->attr);
    free(p->orig_name), free(p->mask_name), free(p->rec_name);
    memset(p, 0, sizeof *p);
}

/* Find name in m and read its current mask (all ones the first time). */
static ct_status plan_find(const char *op, ct_module *m, const char *name, plan *p) {
    *p = (plan){.m = m, .name = name};
    CT_CHECK_OBJ_STATUS(m, "%s: NULL module", op);
    CT_CHECK_STATUS(name != NULL, CT_ERR_INVALID_ARG, "%s: NULL name", op);
    if (record_of(m, name) >= 0) {
        CT_TRY(orig_and_mask(m, name, &p->orig, &p->old_mask));
    } else {
        int i = index_of(m->params, m->nparams, name);
        if (i < 0) {
            if (index_of(m->buffers, m->nbuffers, name) >= 0)
                return ct_error_set(CT_ERR_INVALID_ARG, "%s: '%s' of %s is a buffer, not a parameter", op, name,
                                    m->type);
            return ct_error_set(CT_ERR_INVALID_ARG, "%s: %s has no parameter named '%s'", op, m->type, name);
        }
        p->orig = m->params[i].t;
        p->orig_name = suffixed(name, "_orig");
        p->mask_name = suffixed(name, "_mask");
        p->rec_name = suffixed(name, "");
        if (!p->orig_name || !p->mask_name || !p->rec_name) return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
        const char *clash = attribute_taken(m, p->orig_name) ? p->orig_name
                            : attribute_taken(m, p->mask_name) ? p->mask_name : NULL;
        if (clash)
            return ct_error_set(CT_ERR_INVALID_ARG, "%s: %s already has an attribute '%s', which pruning '%s' needs",
                                op, m->type, clash, name);
    }
    p->numel = ct_numel(p->orig);
    p->mask = malloc(sizeof *p->mask * (size_t)(p->numel ? p->numel : 1));
    if (!p->mask) return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    if (p->old_mask) return ct_copy_to_host(p->old_mask, p->mask, CT_FLOAT64, p->numel);
    for (int64_t i = 0; i < p->numel; i++) p->mask[i] = 1.0;
    return CT_OK;
}

/* The mask tensor (orig's dtype, shape and device) and the attribute. */
static ct_status plan_tensors(plan *p) {
    CT_SCOPE {
        ct_tensor *t = ct_from_data(p->mask, CT_FLOAT64, ct_shape_of(p->orig),
                                    CT_OPTS(.dtype = ct_dtype_of(p->orig), .device = ct_device_of(p->orig)));
        p->new_mask = t ? ct_retain(t) : NULL;
    }
    if (!p->new_mask || !(p->attr = masked(p->orig, p->new_mask))) return ct_last_status();
    return CT_OK;
}

/* Room for the entries the commits will add, so that they cannot fail.
 * `extra` counts the first-time plans for p->m so far (this one included). */
static ct_status plan_reserve(plan *p, int extra) {
    ct_module *m = p->m;
    if (!p->rec_name) return CT_OK;
    CT_TRY(ensure_cap((void **)&m->buffers, &m->cap_buffers, m->nbuffers + extra, sizeof *m->buffers));
    if (!m->prune && !(m->prune = calloc(1, sizeof *m->prune))) return ct_error_set(CT_ERR_OOM, "prune: out of memory");
    return ensure_cap((void **)&m->prune->items, &m->prune->cap, m->prune->n + extra, sizeof *m->prune->items);
}

/* ---- committing: nothing here fails ------------------------------------------------- */

/* Move entry i of arr to the end under a new name (the old name is freed). */
static void move_to_end(named_tensor *arr, int n, int i, char *new_name) {
    named_tensor e = arr[i];
    memmove(arr + i, arr + i + 1, sizeof *arr * (size_t)(n - i - 1));
    free(e.name);
    arr[n - 1] = (named_tensor){new_name, e.t};
}

static void plan_commit(plan *p) {
    ct_module *m = p->m;
    if (p->rec_name) {
        move_to_end(m->params, m->nparams, index_of(m->params, m->nparams, p->name), p->orig_name);
        m->buffers[m->nbuffers++] = (named_tensor){p->mask_name, p->new_mask};
        m->prune->items[m->prune->n++] = (pruned){p->rec_name, p->attr};
        p->orig_name = p->mask_name = p->rec_name = NULL;
    } else {
        char *mn = suffixed(p->name, "_mask"); /* found before: orig_and_mask succeeded */
        int bi = mn ? index_of(m->buffers, m->nbuffers, mn) : -1;
        free(mn);
        pruned *rec = &m->prune->items[record_of(m, p->name)];
        if (bi >= 0) ct_decref(m->buffers[bi].t), m->buffers[bi].t = p->new_mask;
        else ct_decref(p->new_mask);
        ct_decref(rec->attr);
        rec->attr = p->attr;
    }
    p->new_mask = p->attr = NULL;
}

/* ---- choosing the entries to prune ---------------------------------------------------- */

typedef struct ranked {
    double key;
    int64_t idx;
} ranked;

/* Ascending key, NaN last (topk counts NaN as the largest), then index. */
static int by_key(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    bool xn = isnan(x->key), yn = isnan(y->key);
    if (xn != yn) return xn ? 1 : -1;
    if (!xn && x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* How many of `kept` entries to prune: round(amount * kept) (Python's round:
 * halves to even, as nearbyint in the default rounding mode) or count. */
static ct_status count_to_prune(const char *op, bool is_count, double amount, int64_t count, int64_t kept,
                                int64_t *k) {
    if (is_count) {
        CT_CHECK_STATUS(count >= 0, CT_ERR_INVALID_ARG,
                        "%s: amount=%lld should either be a float in the range [0, 1] or a non-negative integer", op,
                        (long long)count);
        CT_CHECK_STATUS(count <= kept, CT_ERR_INVALID_ARG,
                        "%s: amount=%lld should be smaller than the number of parameters to prune=%lld", op,
                        (long long)count, (long long)kept);
        *k = count;
        return CT_OK;
    }
    CT_CHECK_STATUS(amount >= 0.0 && amount <= 1.0, CT_ERR_INVALID_ARG,
                    "%s: amount=%g should either be a float in the range [0, 1] or a non-negative integer", op, amount);
    *k = (int64_t)nearbyint(amount * (double)kept);
    return CT_OK;
}

/* Zero k of the entries of mask that are 1 (PyTorch's slice `mask == 1`),
 * chosen by method from vals (both of n entries). */
static ct_status choose(const char *op, ct_prune_method method, const double *vals, double *mask, int64_t n,
                        bool is_count, double amount, int64_t count, ct_dtype draw_dtype) {
    int64_t kept = 0, k;
    for (int64_t i = 0; i < n; i++) kept += mask[i] == 1.0;
    CT_TRY(count_to_prune(op, is_count, amount, count, kept, &k));
    if (k == 0) return CT_OK; /* PyTorch draws no random numbers then either */
    ranked *r = malloc(sizeof *r * (size_t)kept);
    double *draws = method == CT_PRUNE_RANDOM ? malloc(sizeof *draws * (size_t)kept) : NULL;
    if (!r || (method == CT_PRUNE_RANDOM && !draws)) {
        free(r), free(draws);
        return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    }
    ct_status st = CT_OK;
    if (draws) CT_SCOPE {
        ct_tensor *u = ct_rand_opts(CT_SHAPE(kept), CT_OPTS(.dtype = draw_dtype, .device = ct_device_cpu()));
        st = u ? ct_copy_to_host(u, draws, CT_FLOAT64, kept) : ct_last_status();
    }
    if (st == CT_OK) {
        for (int64_t i = 0, j = 0; i < n; i++)
            if (mask[i] == 1.0) {
                r[j] = (ranked){draws ? -draws[j] : fabs(vals[i]), i}; /* random: the largest draws go */
                j++;
            }
        qsort(r, (size_t)kept, sizeof *r, by_key);
        for (int64_t j = 0; j < k; j++) mask[r[j].idx] = 0.0;
    }
    free(r), free(draws);
    return st;
}

/* ---- the public calls ---------------------------------------------------------------- */

static ct_status finish(plan *p) {
    ct_status st = plan_tensors(p);
    if (st == CT_OK) st = plan_reserve(p, 1);
    if (st == CT_OK) plan_commit(p);
    plan_free(p);
    return st;
}

static ct_status prune_one(const char *op, ct_module *m, const char *name, ct_prune_method method, bool is_count,
                           double amount, int64_t count) {
    plan p;
    ct_status st = plan_find(op, m, name, &p);
    double *vals = NULL;
    if (st == CT_OK && method == CT_PRUNE_L1) {
        vals = malloc(sizeof *vals * (size_t)(p.numel ? p.numel : 1));
        st = vals ? ct_copy_to_host(p.orig, vals, CT_FLOAT64, p.numel) : ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    }
    if (st == CT_OK) st = choose(op, method, vals, p.mask, p.numel, is_count, amount, count, ct_dtype_of(p.orig));
    free(vals);
    if (st != CT_OK) {
        plan_free(&p);
        return st;
    }
    return finish(&p);
}

ct_status ct_prune_l1_unstructured(ct_module *m, const char *name, double amount) {
    return prune_one("prune.l1_unstructured", m, name, CT_PRUNE_L1, false, amount, 0);
}
ct_status ct_prune_l1_unstructured_n(ct_module *m, const char *name, int64_t count) {
    return prune_one("prune.l1_unstructured", m, name, CT_PRUNE_L1, true, 0, count);
}
ct_status ct_prune_random_unstructured(ct_module *m, const char *name, double amount) {
    return prune_one("prune.random_unstructured", m, name, CT_PRUNE_RANDOM, false, amount, 0);
}
ct_status ct_prune_random_unstructured_n(ct_module *m, const char *name, int64_t count) {
    return prune_one("prune.random_unstructured", m, name, CT_PRUNE_RANDOM, true, 0, count);
}

ct_status ct_prune_custom_from_mask(ct_module *m, const char *name, const ct_tensor *mask) {
    const char *op = "prune.custom_from_mask";
    CT_CHECK_OBJ_STATUS(m, "%s: NULL module", op);
    CT_CHECK_OBJ_STATUS(mask, "%s: NULL mask", op);
    plan p;
    ct_status st = plan_find(op, m, name, &p);
    if (st == CT_OK && (ct_ndim(mask) != ct_ndim(p.orig) || ct_numel(mask) != p.numel ||
                        memcmp(ct_sizes(mask), ct_sizes(p.orig), sizeof(int64_t) * (size_t)ct_ndim(mask)))) {
        char a[96], b[96];
        st = ct_error_set(CT_ERR_SHAPE, "%s: mask has shape %s but %s of %s has shape %s", op,
                          ct_shape_str(ct_sizes(mask), ct_ndim(mask), a, sizeof a), name, m->type,
                          ct_shape_str(ct_sizes(p.orig), ct_ndim(p.orig), b, sizeof b));
    }
    double *given = st == CT_OK ? malloc(sizeof *given * (size_t)(p.numel ? p.numel : 1)) : NULL;
    if (st == CT_OK && !given) st = ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    if (st == CT_OK) st = ct_copy_to_host(mask, given, CT_FLOAT64, p.numel);
    for (int64_t i = 0; st == CT_OK && i < p.numel; i++) p.mask[i] *= given[i]; /* default_mask * mask */
    free(given);
    if (st != CT_OK) {
        plan_free(&p);
        return st;
    }
    return finish(&p);
}

/* Pool the targets' values and masks, choose over the pool, and give each
 * target its slice of the result. */
static ct_status prune_global(const ct_prune_target *targets, int n, ct_prune_method method, bool is_count,
                              double amount, int64_t count) {
    const char *op = "prune.global_unstructured";
    CT_CHECK_STATUS(targets != NULL && n >= 0, CT_ERR_INVALID_ARG,
                    "%s: expected n >= 0 (module, name) pairs in a non-NULL array, got n = %d%s", op, n,
                    targets ? "" : " and a NULL array");
    CT_CHECK_STATUS(method == CT_PRUNE_L1 || method == CT_PRUNE_RANDOM, CT_ERR_INVALID_ARG,
                    "%s: unknown pruning method %d (CT_PRUNE_L1 or CT_PRUNE_RANDOM)", op, (int)method);
    plan *plans = calloc((size_t)(n ? n : 1), sizeof *plans);
    CT_CHECK_STATUS(plans != NULL, CT_ERR_OOM, "%s: out of memory", op);
    ct_status st = CT_OK;
    int64_t total = 0;
    for (int i = 0; st == CT_OK && i < n; i++) {
        for (int j = 0; j < i && st == CT_OK; j++)
            if (targets[i].module && targets[j].module == targets[i].module && targets[i].name && targets[j].name &&
                !strcmp(targets[j].name, targets[i].name))
                st = ct_error_set(CT_ERR_INVALID_ARG, "%s: (%s, '%s') appears twice, as targets %d and %d", op,
                                  targets[i].module->type, targets[i].name, j, i);
        if (st == CT_OK) st = plan_find(op, targets[i].module, targets[i].name, &plans[i]);
        if (st == CT_OK && i > 0 && ct_dtype_of(plans[i].orig) != ct_dtype_of(plans[0].orig))
            st = ct_error_set(CT_ERR_DTYPE, "%s: all parameters must have one dtype, got %s and %s", op,
                              ct_dtype_name(ct_dtype_of(plans[0].orig)), ct_dtype_name(ct_dtype_of(plans[i].orig)));
        total += st == CT_OK ? plans[i].numel : 0;
    }
    double *vals = st == CT_OK ? malloc(sizeof *vals * (size_t)(total ? total : 1)) : NULL;
    double *mask = st == CT_OK ? malloc(sizeof *mask * (size_t)(total ? total : 1)) : NULL;
    if (st == CT_OK && (!vals || !mask)) st = ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    for (int64_t i = 0, off = 0; st == CT_OK && i < n; off += plans[i].numel, i++) {
        memcpy(mask + off, plans[i].mask, sizeof *mask * (size_t)plans[i].numel);
        if (method == CT_PRUNE_L1) st = ct_copy_to_host(plans[i].orig, vals + off, CT_FLOAT64, plans[i].numel);
    }
    if (st == CT_OK)
        st = choose(op, method, vals, mask, total, is_count, amount, count, n ? ct_dtype_of(plans[0].orig) : CT_FLOAT32);
    int64_t off = 0;
    for (int i = 0; st == CT_OK && i < n; off += plans[i].numel, i++) {
        memcpy(plans[i].mask, mask + off, sizeof *mask * (size_t)plans[i].numel);
        st = plan_tensors(&plans[i]);
        int extra = 0;
        for (int j = 0; j <= i; j++) extra += plans[j].m == plans[i].m && plans[j].rec_name != NULL;
        if (st == CT_OK) st = plan_reserve(&plans[i], extra);
    }
    for (int i = 0; st == CT_OK && i < n; i++) plan_commit(&plans[i]);
    for (int i = 0; i < n; i++) plan_free(&plans[i]);
    free(plans), free(vals), free(mask);
    return st;
}

ct_status ct_prune_global_unstructured(const ct_prune_target *targets, int n, ct_prune_method method, double amount) {
    return prune_global(targets, n, method, false, amount, 0);
}
ct_status ct_prune_global_unstructured_n(const ct_prune_target *targets, int n, ct_prune_method method,
                                         int64_t count) {
    return prune_global(targets, n, method, true, 0, count);
}

/* ---- making it permanent ------------------------------------------------------------- */

ct_status ct_prune_remove(ct_module *m, const char *name) {
    const char *op = "prune.remove";
    CT_CHECK_OBJ_STATUS(m, "%s: NULL module", op);
    CT_CHECK_STATUS(name != NULL, CT_ERR_INVALID_ARG, "%s: NULL name", op);
    int r = record_of(m, name);
    CT_CHECK_STATUS(r >= 0, CT_ERR_INVALID_ARG,
                    "%s: Parameter '%s' of module %s has to be pruned before pruning can be removed", op, name,
                    m->type);
    int oi, mi;
    CT_TRY(find_pair(m, name, &oi, &mi));
    ct_tensor *orig = m->params[oi].t, *mask = m->buffers[mi].t;
    ct_status st = CT_OK;
    CT_NO_GRAD CT_SCOPE { /* orig.data = (mask * orig).data */
        ct_tensor *prod = ct_mul(mask, orig);
        st = prod ? ct_copy_(orig, prod) : ct_last_status();
    }
    if (st != CT_OK) return st;
    pruned rec = m->prune->items[r];
    move_to_end(m->params, m->nparams, oi, rec.name); /* the record's name becomes the parameter's */
    free(m->buffers[mi].name);
    ct_decref(m->buffers[mi].t);
    memmove(m->buffers + mi, m->buffers + mi + 1, sizeof *m->buffers * (size_t)(m->nbuffers - mi - 1));
    m->nbuffers--;
    ct_decref(rec.attr);
    memmove(m->prune->items + r, m->prune->items + r + 1, sizeof rec * (size_t)(m->prune->n - r - 1));
    if (--m->prune->n == 0) {
        cti_prune_free(m->prune);
        m->prune = NULL;
    }
    return CT_OK;
}

bool ct_prune_is_pruned(const ct_module *m) {
    CT_CHECK_OBJ(m, false, "prune.is_pruned: NULL module");
    if (m->prune && m->prune->n > 0) return true;
    for (int i = 0; i < m->nchildren; i++)
        if (ct_prune_is_pruned(m->children[i].m)) return true;
    return false;
}
