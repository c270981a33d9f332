/*
 * quantize_dynamic.c — torch.ao.quantization.quantize_dynamic for Linear
 * layers: the DynamicQuantizedLinear module and the swap of every Linear
 * in a model (the scheme is in ctorch/quantization.h).
 *
 * The module keeps its quantized weight as buffers ("weight" int8,
 * "weight_scale" float32, "bias" float32), so state_dict, ct_module_to and
 * ct_module_clone handle it like any other module. Its private state adds
 * a cache of the weight's row sums (the zero-point correction), which would
 * otherwise cost a second pass over the weight on every forward — as much
 * as the product itself at batch 1. The cache holds a reference to the
 * weight tensor it was computed from and that tensor's version, so a
 * replaced buffer (ct_module_to, assignment) or an in-place write through
 * the API (load_state_dict's copy_) is noticed and the sums recomputed;
 * writes through a raw ct_data_ptr are not (as PyTorch's .data writes
 * bypass its version counter). A clone starts with an empty cache.
 * Swapping is all-or-nothing, as fuse.c's: every replacement is built
 * before the first Linear is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/tensor_impl.h"
#include "module_impl.h"
#include "ops/quantized.h"

#define QD_TYPE "DynamicQuantizedLinear"

typedef struct qd_linear_state {
    int64_t in_features, out_features;
    /* row_sums[out_features] are valid for the weight tensor cached_for
     * (a reference held) while its version is cached_version */
    ct_tensor *cached_for;
    unsigned cached_version;
    int32_t *row_sums;
} qd_linear_state;

static void qd_cache_drop(qd_linear_state *st) {
    if (st->cached_for) ct_decref(st->cached_for);
    st->cached_for = NULL;
}

static void qd_state_free(void *p) {
    qd_linear_state *st = p;
    if (!st) return;
    qd_cache_drop(st);
    free(st->row_sums);
    free(st);
}

static void *qd_state_clone(const void *p) {
    const qd_linear_state *src = p;
    qd_linear_state *st = calloc(1, sizeof *st);
    if (st) st->in_features = src->in_features, st->out_features = src->out_features;
    return st;
}

/* The row sums of the CPU weight w, from the cache or computed into it;
 * NULL (the op then computes its own) for other devices, shapes the op
 * will refuse, or OOM. */
static const int32_t *qd_row_sums(qd_linear_state *st, ct_tensor *w) {
    if (!w || ct_device_of(w).type != CT_DEVICE_CPU || ct_dtype_of(w) != CT_INT8 || ct_ndim(w) != 2 ||
        ct_size(w, 0) != st->out_features) {
        qd_cache_drop(st); /* do not keep a moved-away weight alive */
        return NULL;
    }
    if (st->cached_for == w && st->cached_version == ct_tensor_version(w)) return st->row_sums;
    qd_cache_drop(st);
    if (!st->row_sums) st->row_sums = malloc(sizeof(int32_t) * (size_t)(st->out_features > 0 ? st->out_features : 1));
    if (!st->row_sums) return NULL;
    const unsigned version = ct_tensor_version(w);
    bool ok = false;
    CT_SCOPE {
        ct_tensor *wc = ct_contiguous(w);
        if (wc) cti_qlinear_row_sums(wc, st->row_sums), ok = true;
    }
    if (!ok) return NULL;
    st->cached_for = ct_retain(w), st->cached_version = version;
    return st->row_sums;
}

static ct_tensor *qd_linear_forward(ct_module *m, const ct_tensor *x) {
    CT_CHECK_NULL(!m->training, CT_ERR_STATE,
                  "%s: quantized modules are inference-only (no backward) and this one is in training mode; "
                  "call ct_module_eval on it", QD_TYPE);
    ct_tensor *w = ct_module_buffer(m, "weight");
    return cti_quantized_linear_dynamic(x, w, ct_module_buffer(m, "weight_scale"), ct_module_buffer(m, "bias"),
                                        qd_row_sums(m->state, w));
}

static bool is_linear(const ct_module *m) { return !strcmp(m->type, "Linear"); }

ct_module *ct_nnqd_linear_from_float(ct_module *linear) {
    CT_CHECK_OBJ(linear, NULL, "nnqd.Linear.from_float: NULL module");
    CT_CHECK_NULL(is_linear(linear), CT_ERR_INVALID_ARG,
                  "nnqd.Linear.from_float: expected a Linear (ct_nn_linear), got %s", linear->type);
    const ct_tensor *w = ct_module_param(linear, "weight"), *b = ct_module_param(linear, "bias");
    CT_CHECK_NULL(w && ct_ndim(w) == 2, CT_ERR_INVALID_ARG, "nnqd.Linear.from_float: the Linear has no 2-D weight");
    qd_linear_state *st = calloc(1, sizeof *st);
    CT_CHECK_NULL(st != NULL, CT_ERR_OOM, "nnqd.Linear.from_float: out of memory");
    st->out_features = ct_size(w, 0), st->in_features = ct_size(w, 1);
    ct_module *m = ct_module_new(QD_TYPE, qd_linear_forward, st, qd_state_free);
    if (!m) {
        free(st);
        return NULL;
    }
    ct_module_set_state_clone(m, qd_state_clone);
    ct_tensor *q = NULL, *scale = NULL;
    bool ok = false;
    CT_NO_GRAD CT_SCOPE {
        /* add_buffer adopts the scope's reference */
        ok = ct_quantize_weight_int8(w, &q, &scale) == CT_OK &&
             ct_module_add_buffer(m, "weight", q) == CT_OK &&
             ct_module_add_buffer(m, "weight_scale", scale) == CT_OK;
        /* a float32 copy that shares nothing with the float model */
        if (ok && b) {
            ct_tensor *bc = ct_to_dtype(ct_clone(ct_detach(b)), CT_FLOAT32);
            ok = bc && ct_module_add_buffer(m, "bias", bc) == CT_OK;
        }
    }
    if (!ok) {
        ct_module_free(m);
        return NULL;
    }
    ct_module_set_extra_repr(m, "in_features=%lld, out_features=%lld, dtype=torch.qint8, qscheme=torch.per_channel_affine",
                             (long long)st->in_features, (long long)st->out_features);
    m->training = false;
    qd_row_sums(st, ct_module_buffer(m, "weight")); /* warm the cache: forwards then only read it */
    return m;
}

/* ---- swapping every Linear ---------------------------------------------------------- */

typedef struct qd_swap {
    ct_module *parent;
    const char *name; /* borrowed from parent */
    ct_module *q;
} qd_swap;

typedef struct qd_list {
    qd_swap *s;
    int n, cap;
} qd_list;

/* Collect every Linear child under m, depth first; false on OOM. */
static bool collect(ct_module *m, qd_list *l) {
    for (int i = 0; i < m->nchildren; i++) {
        ct_module *c = m->children[i].m;
        if (!is_linear(c)) {
            if (!collect(c, l)) return false;
            continue;
        }
        if (l->n == l->cap) {
            int cap = l->cap ? 2 * l->cap : 16;
            qd_swap *g = realloc(l->s, sizeof *g * (size_t)cap);
            CT_CHECK_RET(g != NULL, false, CT_ERR_OOM, "quantize_dynamic: out of memory");
            l->s = g, l->cap = cap;
        }
        l->s[l->n++] = (qd_swap){m, m->children[i].name, NULL};
    }
    return true;
}

/* Build every replacement, then swap them all in (which cannot fail: each
 * parent holds its named child). */
static ct_status quantize_children(ct_module *model) {
    qd_list l = {0};
    bool ok = collect(model, &l);
    for (int i = 0; ok && i < l.n; i++) ok = (l.s[i].q = ct_nnqd_linear_from_float(ct_module_child(l.s[i].parent, l.s[i].name))) != NULL;
    if (ok)
        for (int i = 0; i < l.n; i++) cti_module_replace_child(l.s[i].parent, l.s[i].name, l.s[i].q);
    else
        for (int i = 0; i < l.n; i++) ct_module_free(l.s[i].q);
    free(l.s);
    return ok ? CT_OK : ct_last_status();
}

/* The device of the model's first parameter or buffer (CPU for none). */
static ct_device model_device(ct_module *m) {
    ct_tensor *t = NULL;
    if (ct_module_parameters(m, &t, NULL, 1) > 0 && t) return ct_device_of(t);
    if (ct_module_buffers(m, &t, NULL, 1) > 0 && t) return ct_device_of(t);
    return ct_device_cpu();
}

ct_module *ct_quantize_dynamic(ct_module *model, bool inplace) {
    CT_CHECK_OBJ(model, NULL, "quantize_dynamic: NULL model");
    if (is_linear(model)) {
        CT_CHECK_NULL(!inplace, CT_ERR_INVALID_ARG,
                      "quantize_dynamic: the model is a bare Linear, which cannot be replaced in place; pass "
                      "inplace=false to get its quantized copy, or put it in a container");
        return ct_nnqd_linear_from_float(model);
    }
    ct_module *target = inplace ? model : ct_module_clone(model, model_device(model));
    if (!target) return NULL;
    if (quantize_children(target) != CT_OK) {
        if (!inplace) ct_module_free(target);
        return NULL;
    }
    ct_module_train(target, false); /* PyTorch's quantize_dynamic calls model.eval() */
    return target;
}
