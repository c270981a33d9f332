/*
 * grad_scaler.c — torch.amp.GradScaler (ctorch/amp.h): the loss scale,
 * per-optimizer stages (ready, unscaled, stepped) with PyTorch's errors,
 * the unscale through the fused check-and-unscale of each backend
 * (cti_amp_unscale), one read of the inf flag per device at step, PyTorch's
 * update rule, and the state_dict.
 *
 * The scale lives on the host: step has to read the inf flag anyway to
 * decide whether to skip, so update needs no device work (PyTorch keeps
 * the scale on the device because its fused optimizers may skip on the
 * device without a read; ctorch's step reads once per device).
 */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "core/tensor_impl.h"
#include "ctorch/amp.h"
#include "ctorch/io.h"
#include "ops/optim_kernels.h"
#include "optim/optim_internal.h"

#define MAX_DEVICES 16 /* distinct devices of one optimizer's gradients */

typedef enum stage { READY, UNSCALED, STEPPED } stage;

/* What the scaler knows about one optimizer since the last update. */
typedef struct opt_record {
    const ct_optimizer *opt;
    stage stage;
    ct_tensor *found_inf[MAX_DEVICES]; /* one float32 flag per device of its grads */
    ct_device devices[MAX_DEVICES];
    int ndevices;
    bool checked, found; /* flags read (at step) and their result */
} opt_record;

struct ct_grad_scaler {
    bool enabled;
    double scale, growth_factor, backoff_factor;
    int64_t growth_interval, growth_tracker, skipped;
    opt_record *recs;
    int nrecs;
};

static const char *const k_null_scaler = "grad_scaler: NULL scaler";

ct_grad_scaler *ct_grad_scaler_new_opts(ct_grad_scaler_opts o) {
    const double init = o.init_scale != 0 ? o.init_scale : 65536.0;
    const double growth = o.growth_factor != 0 ? o.growth_factor : 2.0;
    const double backoff = o.backoff_factor != 0 ? o.backoff_factor : 0.5;
    const int64_t interval = o.growth_interval != 0 ? o.growth_interval : 2000;
    CT_CHECK_NULL(growth > 1.0, CT_ERR_INVALID_ARG, "grad_scaler: The growth factor must be > 1.0. (got %g)", growth);
    CT_CHECK_NULL(backoff > 0.0 && backoff < 1.0, CT_ERR_INVALID_ARG,
                  "grad_scaler: The backoff factor must be < 1.0. (got %g)", backoff);
    CT_CHECK_NULL(init > 0.0 && isfinite(init), CT_ERR_INVALID_ARG,
                  "grad_scaler: init_scale must be positive and finite, got %g", init);
    CT_CHECK_NULL(interval > 0, CT_ERR_INVALID_ARG, "grad_scaler: growth_interval must be positive, got %lld",
                  (long long)interval);
    ct_grad_scaler *s = calloc(1, sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "grad_scaler: out of memory");
    s->enabled = !o.disabled;
    s->scale = (double)(float)init; /* PyTorch keeps it in a float32 tensor */
    s->growth_factor = growth, s->backoff_factor = backoff, s->growth_interval = interval;
    return s;
}

static void clear_records(ct_grad_scaler *s) {
    for (int i = 0; i < s->nrecs; i++)
        for (int d = 0; d < s->recs[i].ndevices; d++) ct_decref(s->recs[i].found_inf[d]);
    free(s->recs);
    s->recs = NULL;
    s->nrecs = 0;
}

void ct_grad_scaler_free(ct_grad_scaler *s) {
    if (!s) return;
    clear_records(s);
    free(s);
}

/* The record of opt, made on first use; NULL (error set) when out of memory. */
static opt_record *record_of(ct_grad_scaler *s, const ct_optimizer *opt) {
    for (int i = 0; i < s->nrecs; i++)
        if (s->recs[i].opt == opt) return &s->recs[i];
    opt_record *grown = realloc(s->recs, (size_t)(s->nrecs + 1) * sizeof *grown);
    CT_CHECK_NULL(grown != NULL, CT_ERR_OOM, "grad_scaler: out of memory");
    s->recs = grown;
    opt_record *r = &s->recs[s->nrecs++];
    *r = (opt_record){.opt = opt, .stage = READY};
    return r;
}

/* The inf flag of device dev in r, a zero float32 scalar made on first use. */
static ct_tensor *flag_for(opt_record *r, ct_device dev) {
    for (int d = 0; d < r->ndevices; d++)
        if (r->devices[d].type == dev.type && r->devices[d].index == dev.index) return r->found_inf[d];
    CT_CHECK_NULL(r->ndevices < MAX_DEVICES, CT_ERR_INVALID_ARG,
                  "grad_scaler: gradients on more than %d devices", MAX_DEVICES);
    ct_tensor *f = cti_full(NULL, 0, 0.0, CT_FLOAT32, dev);
    if (!f) return NULL;
    r->devices[r->ndevices] = dev;
    r->found_inf[r->ndevices++] = f;
    return f;
}

ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss) {
    CT_CHECK_OBJ(s, NULL, "%s", k_null_scaler);
    CT_CHECK_OBJ(loss, NULL, "grad_scaler.scale: NULL loss");
    if (!s->enabled) return ct_track(ct_retain((ct_tensor *)loss));
    return ct_mul_scalar(loss, s->scale);
}

/* 1/scale in double, rounded to float32 (PyTorch's inv_scale tensor). */
static double inv_scale_of(const ct_grad_scaler *s) { return (double)(float)(1.0 / s->scale); }

static bool same_device(ct_device a, ct_device b) { return a.type == b.type && a.index == b.index; }

/* One fused unscale per device over grads[0..n) (reordered in place so
 * that each device's grads lie together). */
static ct_status unscale_by_device(opt_record *r, ct_tensor **grads, int n, double inv) {
    for (int first = 0; first < n;) {
        const ct_device dev = grads[first]->storage->device;
        int end = first + 1;
        for (int k = end; k < n; k++)
            if (same_device(grads[k]->storage->device, dev)) {
                ct_tensor *t = grads[end];
                grads[end++] = grads[k], grads[k] = t;
            }
        ct_tensor *flag = flag_for(r, dev);
        if (!flag) return ct_last_status();
        CT_TRY(cti_amp_unscale(grads + first, end - first, flag, inv));
        first = end;
    }
    return CT_OK;
}

static ct_status unscale(ct_grad_scaler *s, opt_record *r) {
    ct_tensor **grads = malloc(sizeof *grads * (size_t)(r->opt->n > 0 ? r->opt->n : 1));
    CT_CHECK_STATUS(grads != NULL, CT_ERR_OOM, "grad_scaler.unscale_: out of memory");
    int n = 0;
    for (int i = 0; i < r->opt->n; i++) {
        ct_tensor *g = r->opt->p[i].param->grad;
        if (!g) continue;
        if (g->dtype == CT_FLOAT16) {
            free(grads);
            return ct_error_set(CT_ERR_DTYPE, "grad_scaler.unscale_: Attempting to unscale FP16 gradients. "
                                "(parameter %d; keep the parameters in float32 and use autocast)", i);
        }
        grads[n++] = g;
    }
    const ct_status st = unscale_by_device(r, grads, n, inv_scale_of(s));
    free(grads);
    if (st == CT_OK) r->stage = UNSCALED;
    return st;
}

ct_status ct_grad_scaler_unscale(ct_grad_scaler *s, ct_optimizer *opt) {
    CT_CHECK_OBJ_STATUS(s, "%s", k_null_scaler);
    CT_CHECK_OBJ_STATUS(opt, "grad_scaler.unscale_: NULL optimizer");
    if (!s->enabled) return CT_OK;
    opt_record *r = record_of(s, opt);
    if (!r) return ct_last_status();
    CT_CHECK_STATUS(r->stage != UNSCALED, CT_ERR_INVALID_ARG,
                    "unscale_() has already been called on this optimizer since the last update().");
    CT_CHECK_STATUS(r->stage != STEPPED, CT_ERR_INVALID_ARG, "unscale_() is being called after step().");
    return unscale(s, r);
}

/* Reads r's flags (once per device): whether any gradient was inf/NaN. */
static ct_status read_flags(opt_record *r) {
    if (r->checked) return CT_OK;
    bool found = false;
    for (int d = 0; d < r->ndevices; d++) {
        double v = ct_item(r->found_inf[d]);
        if (isnan(v)) return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_INTERNAL;
        found |= v != 0.0;
    }
    r->found = found, r->checked = true;
    return CT_OK;
}

ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt) {
    CT_CHECK_OBJ_STATUS(s, "%s", k_null_scaler);
    CT_CHECK_OBJ_STATUS(opt, "grad_scaler.step: NULL optimizer");
    if (!s->enabled) return ct_step(opt);
    opt_record *r = record_of(s, opt);
    if (!r) return ct_last_status();
    CT_CHECK_STATUS(r->stage != STEPPED, CT_ERR_INVALID_ARG, "step() has already been called since the last update().");
    if (r->stage == READY) CT_TRY(unscale(s, r));
    CT_TRY(read_flags(r));
    r->stage = STEPPED;
    if (r->found) {
        s->skipped++;
        return CT_OK;
    }
    return ct_step(opt);
}

/* PyTorch's _amp_update_scale_. */
static void apply_update(ct_grad_scaler *s, bool found) {
    if (found) {
        s->scale = (double)(float)(s->scale * s->backoff_factor);
        s->growth_tracker = 0;
        return;
    }
    if (s->growth_tracker + 1 == s->growth_interval) {
        const float grown = (float)(s->scale * s->growth_factor);
        if (isfinite(grown)) s->scale = grown; /* recent PyTorch keeps the scale rather than overflow */
        s->growth_tracker = 0;
    } else {
        s->growth_tracker++;
    }
}

ct_status ct_grad_scaler_update(ct_grad_scaler *s) {
    CT_CHECK_OBJ_STATUS(s, "%s", k_null_scaler);
    if (!s->enabled) return CT_OK;
    bool found = false;
    int checks = 0;
    for (int i = 0; i < s->nrecs; i++) {
        if (s->recs[i].stage == READY) continue;
        CT_TRY(read_flags(&s->recs[i]));
        found |= s->recs[i].found;
        checks++;
    }
    CT_CHECK_STATUS(checks > 0, CT_ERR_INVALID_ARG, "update: No inf checks were recorded prior to update.");
    apply_update(s, found);
    clear_records(s);
    return CT_OK;
}

ct_status ct_grad_scaler_update_to(ct_grad_scaler *s, double new_scale) {
    CT_CHECK_OBJ_STATUS(s, "%s", k_null_scaler);
    if (!s->enabled) return CT_OK;
    CT_CHECK_STATUS(new_scale > 0.0 && isfinite(new_scale), CT_ERR_INVALID_ARG,
                    "update: new_scale must be positive and finite, got %g", new_scale);
    s->scale = (double)(float)new_scale;
    clear_records(s);
    return CT_OK;
}

double ct_grad_scaler_get_scale(const ct_grad_scaler *s) { return s && s->enabled ? s->scale : 1.0; }
int64_t ct_grad_scaler_growth_tracker(const ct_grad_scaler *s) { return s && s->enabled ? s->growth_tracker : 0; }
int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *s) { return s ? s->skipped : 0; }
bool ct_grad_scaler_is_enabled(const ct_grad_scaler *s) { return s && s->enabled; }

/* ---- state_dict ------------------------------------------------------------------------------ */

static ct_status put_scalar(ct_tensor_dict *d, const char *name, double v, ct_dtype dt) {
    ct_tensor *t = cti_full(NULL, 0, v, dt, ct_device_cpu());
    if (!t) return ct_last_status();
    ct_status st = ct_tensor_dict_set(d, name, t);
    ct_decref(t);
    return st;
}

ct_tensor_dict *ct_grad_scaler_state_dict(const ct_grad_scaler *s) {
    CT_CHECK_OBJ(s, NULL, "%s", k_null_scaler);
    ct_tensor_dict *d = ct_tensor_dict_new();
    if (!d || !s->enabled) return d;
    ct_status st = put_scalar(d, "scale", s->scale, CT_FLOAT32);
    if (st == CT_OK) st = put_scalar(d, "growth_factor", s->growth_factor, CT_FLOAT64);
    if (st == CT_OK) st = put_scalar(d, "backoff_factor", s->backoff_factor, CT_FLOAT64);
    if (st == CT_OK) st = put_scalar(d, "growth_interval", (double)s->growth_interval, CT_INT64);
    if (st == CT_OK) st = put_scalar(d, "_growth_tracker", (double)s->growth_tracker, CT_INT32);
    if (st != CT_OK) {
        ct_tensor_dict_free(d);
        return NULL;
    }
    return d;
}

/* d[name] as a double, checked to be a one-element tensor of dtype dt. */
static ct_status get_scalar(const ct_tensor_dict *d, const char *name, ct_dtype dt, double *out) {
    CT_CHECK_STATUS(ct_tensor_dict_contains(d, name), CT_ERR_INVALID_ARG,
                    "grad_scaler.load_state_dict: missing key \"%s\"", name);
    ct_tensor *t = ct_tensor_dict_get(d, name);
    if (!t) return ct_last_status();
    ct_status st = CT_OK;
    if (t->dtype != dt || ct_shape_numel(t->shape, t->ndim) != 1)
        st = ct_error_set(CT_ERR_INVALID_ARG, "grad_scaler.load_state_dict: \"%s\" must be one %s value, got %s with %lld elements",
                          name, ct_dtype_name(dt), ct_dtype_name(t->dtype),
                          (long long)ct_shape_numel(t->shape, t->ndim));
    if (st == CT_OK) *out = ct_item(t);
    ct_decref(t);
    return st;
}

ct_status ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const ct_tensor_dict *d) {
    CT_CHECK_OBJ_STATUS(s, "%s", k_null_scaler);
    CT_CHECK_STATUS(d != NULL, CT_ERR_INVALID_ARG, "grad_scaler.load_state_dict: NULL dict");
    CT_CHECK_STATUS(ct_tensor_dict_size(d) > 0, CT_ERR_INVALID_ARG,
                    "The source state dict is empty, possibly because it was saved from a disabled instance "
                    "of GradScaler.");
    double scale, growth, backoff, interval, tracker;
    CT_TRY(get_scalar(d, "scale", CT_FLOAT32, &scale));
    CT_TRY(get_scalar(d, "growth_factor", CT_FLOAT64, &growth));
    CT_TRY(get_scalar(d, "backoff_factor", CT_FLOAT64, &backoff));
    CT_TRY(get_scalar(d, "growth_interval", CT_INT64, &interval));
    CT_TRY(get_scalar(d, "_growth_tracker", CT_INT32, &tracker));
    CT_CHECK_STATUS(scale > 0 && isfinite(scale) && growth > 1.0 && backoff > 0.0 && backoff < 1.0 &&
                        interval > 0 && tracker >= 0 && tracker < interval,
                    CT_ERR_INVALID_ARG,
                    "grad_scaler.load_state_dict: inconsistent state (scale %g, growth_factor %g, backoff_factor "
                    "%g, growth_interval %g, _growth_tracker %g)",
                    scale, growth, backoff, interval, tracker);
    s->scale = scale, s->growth_factor = growth, s->backoff_factor = backoff;
    s->growth_interval = (int64_t)interval, s->growth_tracker = (int64_t)tracker;
    clear_records(s);
    return CT_OK;
}
