/*
 * optimizer_state.c — optimizer.state_dict() and load_state_dict().
 *
 * The state is PyTorch's, flattened into names: "state.<i>.<key>" tensors
 * (the step as a 0-dim float32, as torch.optim stores it) and the optimizer
 * kind, lr and step count as metadata strings.
 *
 * Loading is strict, because a checkpoint that half-loads trains on quietly
 * wrong: an unknown or misspelt entry used to be skipped, and its parameter
 * then restarted with empty momentum. Every entry is checked first — its
 * name (canonical index below the parameter count, a key this optimizer
 * has), its shape (the parameter's), the step's value (a whole number >= 1)
 * and the set of entries per parameter (the ones a step creates together) —
 * and only then is the state replaced, as a whole: a parameter without
 * entries gets no state, as in a fresh optimizer.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/tensor_impl.h"
#include "ctorch/io.h"
#include "optim/optim_internal.h"

enum { KEY_BUF0, KEY_BUF1, KEY_BUF2, KEY_STEP, N_KEYS };

static const char *const k_sgd_keys[N_KEYS] = {"momentum_buffer", NULL, NULL, "step"};
static const char *const k_adam_keys[N_KEYS] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"};

static const char *kind_name(const ct_optimizer *opt) {
    return opt->kind == OPT_SGD ? "SGD" : opt->adam.decoupled_weight_decay ? "AdamW" : "Adam";
}

static const char *key_name(const ct_optimizer *opt, int key) {
    return (opt->kind == OPT_SGD ? k_sgd_keys : k_adam_keys)[key];
}

/* The buffers a step creates for one parameter, as a mask of KEY_* bits. */
static unsigned full_state(const ct_optimizer *opt) {
    if (opt->kind == OPT_SGD) return opt->sgd.momentum != 0 ? 1u << KEY_BUF0 | 1u << KEY_STEP : 1u << KEY_STEP;
    unsigned m = 1u << KEY_BUF0 | 1u << KEY_BUF1 | 1u << KEY_STEP;
    return opt->adam.amsgrad ? m | 1u << KEY_BUF2 : m;
}

ct_tensor_dict *ct_optimizer_state_dict(const ct_optimizer *opt) {
    CT_CHECK_OBJ(opt, NULL, "optimizer state_dict: NULL optimizer");
    ct_tensor_dict *d = ct_tensor_dict_new();
    if (!d) return NULL;
    char name[64], value[64];
    ct_status st = CT_OK;
    for (int i = 0; i < opt->n && st == CT_OK; i++) CT_SCOPE {
        const param_state *s = &opt->p[i];
        for (int k = KEY_BUF0; k <= KEY_BUF2 && st == CT_OK; k++) {
            if (!s->buf[k]) continue;
            snprintf(name, sizeof name, "state.%d.%s", i, key_name(opt, k));
            st = ct_tensor_dict_set(d, name, s->buf[k]);
        }
        if (s->step && st == CT_OK) {
            snprintf(name, sizeof name, "state.%d.step", i);
            st = ct_tensor_dict_set(d, name, ct_scalar_tensor((double)s->step, .dtype = CT_FLOAT32));
        }
    }
    if (st == CT_OK) st = ct_tensor_dict_set_metadata(d, "optimizer", kind_name(opt));
    snprintf(value, sizeof value, "%.17g", ct_optimizer_lr(opt));
    if (st == CT_OK) st = ct_tensor_dict_set_metadata(d, "lr", value);
    snprintf(value, sizeof value, "%lld", (long long)opt->steps);
    if (st == CT_OK) st = ct_tensor_dict_set_metadata(d, "steps", value);
    if (st != CT_OK) {
        ct_tensor_dict_free(d);
        return NULL;
    }
    return d;
}

/* ---- load_state_dict -------------------------------------------------------------- */

#define BAD(code, ...) ct_error_set(code, "optimizer load_state_dict: " __VA_ARGS__)

/* "state.<i>.<key>" with i written canonically (no sign, no leading zero)
 * and below the parameter count, and a key this optimizer has. */
static ct_status parse_entry_name(const ct_optimizer *opt, const char *name, int *param, int *key) {
    const char *p = name;
    long i = -1;
    if (strncmp(p, "state.", 6) == 0 && isdigit((unsigned char)p[6]) && !(p[6] == '0' && isdigit((unsigned char)p[7]))) {
        char *end;
        errno = 0;
        i = strtol(p + 6, &end, 10);
        p = errno == 0 && *end == '.' ? end + 1 : NULL;
    } else {
        p = NULL;
    }
    if (!p || i < 0 || i >= opt->n)
        return BAD(CT_ERR_FORMAT, "unexpected entry \"%s\" (entries are state.<i>.<key> for the %d parameters, "
                   "i from 0 to %d)", name, opt->n, opt->n - 1);
    for (int k = 0; k < N_KEYS; k++) {
        if (key_name(opt, k) && strcmp(p, key_name(opt, k)) == 0 && (full_state(opt) >> k & 1)) {
            *param = (int)i;
            *key = k;
            return CT_OK;
        }
    }
    return BAD(CT_ERR_FORMAT, "unexpected entry \"%s\": %s%s has no state \"%s\"", name, kind_name(opt),
               opt->kind == OPT_SGD && opt->sgd.momentum == 0 ? " without momentum" : "", p);
}

/* A buffer must have the parameter's shape and a floating dtype; the step a
 * whole number in [1, 2^53] in a one-element tensor. */
static ct_status check_entry(const ct_optimizer *opt, const char *name, int i, int key, const ct_tensor *t) {
    const ct_tensor *param = opt->p[i].param;
    if (key == KEY_STEP) {
        double v = NAN;
        if (ct_numel(t) == 1) CT_SCOPE { v = ct_item(t); }
        if (!(v >= 1 && v <= 9007199254740992.0 && v == floor(v)))
            return BAD(CT_ERR_FORMAT, "%s must hold one whole number >= 1, found %lld elements%s%g", name,
                       (long long)ct_numel(t), ct_numel(t) == 1 ? " with value " : "",
                       ct_numel(t) == 1 ? v : 0.0);
        return CT_OK;
    }
    if (!ct_dtype_is_floating(ct_dtype_of(t)))
        return BAD(CT_ERR_DTYPE, "%s has dtype %s; optimizer state is floating point", name,
                   ct_dtype_name(ct_dtype_of(t)));
    bool same = ct_ndim(t) == ct_ndim(param);
    for (int d = 0; same && d < ct_ndim(t); d++) same = ct_size(t, d) == ct_size(param, d);
    if (!same) {
        char got[128], want[128];
        return BAD(CT_ERR_SHAPE, "%s has shape %s, parameter %d has shape %s", name,
                   ct_shape_str(ct_sizes(t), ct_ndim(t), got, sizeof got), i,
                   ct_shape_str(ct_sizes(param), ct_ndim(param), want, sizeof want));
    }
    return CT_OK;
}

static ct_status parse_metadata_number(const ct_tensor_dict *d, const char *key, bool whole, double *out) {
    const char *v = ct_tensor_dict_get_metadata(d, key);
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || end == v || *end || errno || !isfinite(x) || x < 0 || (whole && (x != floor(x) || x > 9e15)))
        return BAD(CT_ERR_FORMAT, "metadata \"%s\" is %s%s%s (expected a %s)", key, v ? "\"" : "",
                   v ? v : "missing", v ? "\"" : "", whole ? "whole number >= 0" : "finite number >= 0");
    *out = x;
    return CT_OK;
}

/* Checks all of d against opt; on success masks[i] holds parameter i's
 * entries (KEY_* bits). Changes nothing. */
static ct_status validate(const ct_optimizer *opt, const ct_tensor_dict *d, unsigned *masks, double *lr,
                          double *steps) {
    const char *kind = ct_tensor_dict_get_metadata(d, "optimizer");
    if (!kind || strcmp(kind, kind_name(opt)) != 0)
        return BAD(CT_ERR_FORMAT, "the state is for %s, this optimizer is %s", kind ? kind : "(unknown)",
                   kind_name(opt));
    CT_TRY(parse_metadata_number(d, "lr", false, lr));
    CT_TRY(parse_metadata_number(d, "steps", true, steps));
    for (int e = 0; e < ct_tensor_dict_size(d); e++) {
        const char *name = ct_tensor_dict_name(d, e);
        int i = 0, key = 0;
        CT_TRY(parse_entry_name(opt, name, &i, &key));
        ct_status s = CT_OK;
        CT_SCOPE { s = check_entry(opt, name, i, key, ct_tensor_dict_value(d, e)); }
        CT_TRY(s);
        masks[i] |= 1u << key;
    }
    for (int i = 0; i < opt->n; i++) {
        if (masks[i] == 0 || masks[i] == full_state(opt)) continue;
        for (int k = 0; k < N_KEYS; k++)
            if ((full_state(opt) >> k & 1) && !(masks[i] >> k & 1))
                return BAD(CT_ERR_FORMAT, "parameter %d has part of its state but no state.%d.%s (a %s step "
                           "creates them together)", i, i, key_name(opt, k), kind_name(opt));
    }
    return CT_OK;
}

/* Parameter i's state from d (its entries in mask), replacing what it had. */
static ct_status apply_param(ct_optimizer *opt, const ct_tensor_dict *d, int i, unsigned mask) {
    param_state *s = &opt->p[i];
    char name[64];
    for (int k = KEY_BUF0; k <= KEY_BUF2; k++) {
        if (!(mask >> k & 1)) {
            ct_decref(s->buf[k]);
            s->buf[k] = NULL;
            continue;
        }
        if (!s->buf[k] && !(s->buf[k] = cti_optim_state_zeros(s->param))) return ct_last_status();
        snprintf(name, sizeof name, "state.%d.%s", i, key_name(opt, k));
        ct_status st = CT_OK;
        CT_SCOPE { st = ct_copy_(s->buf[k], ct_tensor_dict_get(d, name)); }
        CT_TRY(st);
    }
    s->step = 0;
    if (mask >> KEY_STEP & 1) {
        snprintf(name, sizeof name, "state.%d.step", i);
        CT_SCOPE { s->step = (int64_t)ct_item(ct_tensor_dict_get(d, name)); }
    }
    return CT_OK;
}

ct_status ct_optimizer_load_state_dict(ct_optimizer *opt, const ct_tensor_dict *d) {
    CT_CHECK_OBJ_STATUS(opt && d, "optimizer load_state_dict: NULL %s", opt ? "state dict" : "optimizer");
    unsigned *masks = calloc((size_t)opt->n, sizeof *masks);
    CT_CHECK_STATUS(masks, CT_ERR_OOM, "optimizer load_state_dict: out of memory");
    double lr = 0, steps = 0;
    ct_status st = validate(opt, d, masks, &lr, &steps);
    for (int i = 0; i < opt->n && st == CT_OK; i++) st = apply_param(opt, d, i, masks[i]);
    free(masks);
    CT_TRY(st);
    CT_TRY(ct_optimizer_set_lr(opt, lr));
    opt->steps = (int64_t)steps;
    return CT_OK;
}
