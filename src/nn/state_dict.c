/*
 * state_dict.c — module and optimizer state as named tensors (PyTorch's
 * state_dict / load_state_dict), and saving/loading them as safetensors.
 *
 * Order and names follow PyTorch: each module's parameters, then its
 * buffers, then its children depth-first, with dotted prefixes. Loading
 * copies values into the existing tensors (any device and dtype), so
 * parameter objects — and optimizers holding them — stay valid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/io.h"
#include "ctorch/optim.h"
#include "module_impl.h"

typedef ct_status (*entry_fn)(const char *name, ct_tensor *t, bool is_buffer, void *user);

static ct_status walk(ct_module *m, const char *prefix, entry_fn fn, void *user) {
    char name[512];
    for (int i = 0; i < m->nparams; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, m->params[i].name);
        CT_TRY(fn(name, m->params[i].t, false, user));
    }
    for (int i = 0; i < m->nbuffers; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, m->buffers[i].name);
        CT_TRY(fn(name, m->buffers[i].t, true, user));
    }
    for (int i = 0; i < m->nchildren; i++) {
        snprintf(name, sizeof name, "%s%s.", prefix, m->children[i].name);
        CT_TRY(walk(m->children[i].m, name, fn, user));
    }
    return CT_OK;
}

static ct_status add_entry(const char *name, ct_tensor *t, bool is_buffer, void *user) {
    CT_SCOPE { /* detached, so saving or inspecting never touches the graph */
        ct_tensor_dict_set(user, name, ct_detach(t));
    }
    return ct_last_status() == CT_OK ? CT_OK : ct_last_status();
}

ct_tensor_dict *ct_module_state_dict(ct_module *m) {
    CT_CHECK_OBJ(m, NULL, "state_dict: NULL module");
    ct_tensor_dict *d = ct_tensor_dict_new();
    if (!d) return NULL;
    ct_clear_error();
    if (walk(m, "", add_entry, d) != CT_OK) {
        ct_tensor_dict_free(d);
        return NULL;
    }
    return d;
}

/* ---- loading ---------------------------------------------------------------------- */

typedef struct load_ctx {
    const ct_tensor_dict *d;
    bool strict;
    char missing[512], mismatch[512];
    int n_missing, n_found;
    bool *used;
} load_ctx;

static void append(char *buf, size_t size, const char *item) {
    size_t len = strlen(buf);
    if (len + 8 >= size) return;
    snprintf(buf + len, size - len, "%s\"%s\"", len ? ", " : "", item);
}

static int dict_index(const ct_tensor_dict *d, const char *name) { return ct_tensor_dict_index(d, name); }

/* First pass: check names and shapes; second pass (apply): copy. */
static ct_status check_entry(const char *name, ct_tensor *t, bool is_buffer, void *user) {
    load_ctx *c = user;
    int i = dict_index(c->d, name);
    if (i < 0) {
        /* old BatchNorm checkpoints lack num_batches_tracked: PyTorch fills in 0 */
        const char *leaf = strrchr(name, '.');
        if (!strcmp(leaf ? leaf + 1 : name, "num_batches_tracked")) return CT_OK;
        append(c->missing, sizeof c->missing, name);
        c->n_missing++;
        return CT_OK;
    }
    c->used[i] = true;
    c->n_found++;
    ct_tensor *src = ct_tensor_dict_value(c->d, i);
    bool same = ct_ndim(src) == ct_ndim(t);
    for (int k = 0; same && k < ct_ndim(t); k++) same = ct_sizes(src)[k] == ct_sizes(t)[k];
    if (!same) {
        char line[256], a[96], b[96];
        snprintf(line, sizeof line, "size mismatch for %s: copying a param with shape %s from checkpoint, the shape "
                 "in current model is %s", name, ct_shape_str(ct_sizes(src), ct_ndim(src), a, sizeof a),
                 ct_shape_str(ct_sizes(t), ct_ndim(t), b, sizeof b));
        if (!c->mismatch[0]) snprintf(c->mismatch, sizeof c->mismatch, "%s", line);
    }
    ct_release(src);
    return CT_OK;
}

static ct_status copy_entry(const char *name, ct_tensor *t, bool is_buffer, void *user) {
    load_ctx *c = user;
    int i = dict_index(c->d, name);
    if (i < 0) { /* absent: an old checkpoint's num_batches_tracked becomes 0; others stay */
        const char *leaf = strrchr(name, '.');
        return !strcmp(leaf ? leaf + 1 : name, "num_batches_tracked") ? ct_fill_(t, 0.0) : CT_OK;
    }
    ct_status st;
    bool prev = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    CT_SCOPE { st = ct_copy_(t, ct_tensor_dict_value(c->d, i)); }
    ct_set_grad_enabled(prev);
    return st;
}

ct_status ct_module_load_state_dict(ct_module *m, const ct_tensor_dict *d, bool strict) {
    CT_CHECK_OBJ_STATUS(m && d, "load_state_dict: NULL argument");
    load_ctx c = {.d = d, .strict = strict};
    int n = ct_tensor_dict_size(d);
    c.used = calloc((size_t)(n ? n : 1), sizeof *c.used);
    CT_CHECK_STATUS(c.used != NULL, CT_ERR_OOM, "load_state_dict: out of memory");
    ct_status st = walk(m, "", check_entry, &c);
    char unexpected[512] = "";
    int n_unexpected = 0;
    for (int i = 0; i < n; i++)
        if (!c.used[i]) append(unexpected, sizeof unexpected, ct_tensor_dict_name(d, i)), n_unexpected++;
    free(c.used);
    if (st != CT_OK) return st;
    if (c.mismatch[0] || (strict && (c.n_missing || n_unexpected))) {
        char msg[1200] = "";
        if (strict && c.n_missing) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "Missing key(s) in state_dict: %s. ", c.missing);
        if (strict && n_unexpected) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "Unexpected key(s) in state_dict: %s. ", unexpected);
        if (c.mismatch[0]) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%s.", c.mismatch);
        return ct_error_set(CT_ERR_FORMAT, "Error(s) in loading state_dict for %s: %s", m->type, msg);
    }
    return walk(m, "", copy_entry, &c); /* nothing is changed unless every check passed */
}

ct_status ct_module_save(ct_module *m, const char *path) {
    ct_tensor_dict *d = ct_module_state_dict(m);
    if (!d) return ct_last_status();
    ct_status st = ct_safetensors_save(path, d);
    ct_tensor_dict_free(d);
    return st;
}

ct_status ct_module_load(ct_module *m, const char *path, bool strict) {
    CT_CHECK_OBJ_STATUS(m, "load: NULL argument");
    CT_CHECK_STATUS(path != NULL, CT_ERR_INVALID_ARG, "load: NULL argument");
    ct_tensor_dict *d = NULL;
    CT_TRY(ct_safetensors_load(path, ct_device_cpu(), &d));
    ct_status st = ct_module_load_state_dict(m, d, strict);
    ct_tensor_dict_free(d);
    return st;
}
