/*
 * backend_ops_loss.c — the loss-family rows of the cross-backend harness:
 * cross_entropy (class indices and probabilities), nll_loss, mse_loss and
 * binary_cross_entropy_with_logits, forward and every gradient, and the
 * fused SGD / Adam / AdamW updates, on each device against the CPU.
 * Included by tests/test_backend_ops.c (after its helpers, before its
 * table, whose rows are BO_LOSS_CASES); not a test of its own.
 *
 * Variants cover [N, C], unbatched [C], [N, C, d] and [N, C, h, w] inputs,
 * long rows (700 classes), an empty batch, every reduction, weights,
 * ignored targets and label smoothing, broadcasting targets and weights,
 * and transposed, narrowed, expanded or strided layouts. Integer dtypes are
 * rejected by both sides alike. Each row has one output: the optimizer rows
 * update views in place and concatenate the bases of the parameter and its
 * state after two steps.
 */
#include "ctorch/functional_loss.h"
#include "ops/loss.h"
#include "ops/optim_kernels.h"

static const ct_reduction bo_reductions[3] = {CT_REDUCTION_MEAN, CT_REDUCTION_NONE,
                                              CT_REDUCTION_SUM};

/* ---- class losses ------------------------------------------------------------------------------ */

typedef struct bo_class_setup {
    ct_shape xs, ts;   /* input, class-target (per-sample) shapes */
    int64_t classes;
    bool weighted;
    int64_t ignore_index;
    double smoothing;
    ct_reduction reduction;
    bo_layout layout;
} bo_class_setup;

static bo_class_setup class_setup(int v, bo_rng *r) {
    bo_class_setup s;
    memset(&s, 0, sizeof s);
    int64_t n = bo_int(r, 1, 6), c = bo_int(r, 1, 9), h = bo_int(r, 1, 4), w = bo_int(r, 1, 4);
    switch (v % 5) {
    case 0: s.xs = CT_SHAPE(n, c), s.ts = CT_SHAPE(n); break;
    case 1: s.xs = CT_SHAPE(c), s.ts = CT_SHAPE0; break;
    case 2: s.xs = CT_SHAPE(n, c, h), s.ts = CT_SHAPE(n, h); break;
    case 3: s.xs = CT_SHAPE(n, c, h, w), s.ts = CT_SHAPE(n, h, w); break;
    default: s.xs = CT_SHAPE(n, 700), s.ts = CT_SHAPE(n); break; /* long rows */
    }
    if (v == 5) s.xs.dims[0] = s.ts.dims[0] = 0; /* an empty batch */
    if (v == BO_LARGE_VARIANT) s.xs = CT_SHAPE(201, 500), s.ts = CT_SHAPE(201); /* 100,500 */
    s.classes = s.xs.ndim == 1 ? s.xs.dims[0] : s.xs.dims[1];
    s.weighted = v % 2 == 0;
    s.ignore_index = v % 3 == 0 ? CT_IGNORE_INDEX_DEFAULT : 1;
    s.smoothing = (v / 2) % 3 == 0 ? 0.0 : (v / 2) % 3 == 1 ? 0.2 : 1.0;
    s.reduction = bo_reductions[v % 3];
    s.layout = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    return s;
}

/* Variant 7 has a class target out of range (a deliberate error). */
static bool target_out_of_range(const bo_case *c, ct_dtype dt, int v) { return v == 7; }

/* Class targets in [0, C), some equal to ignore_index; in variant 7 one
 * out of range, which the device must report as the CPU does. */
static ct_tensor *class_targets(const bo_class_setup *s, int v, bo_rng *r, ct_device dev) {
    int64_t n = 1;
    for (int d = 0; d < s->ts.ndim; d++) n *= s->ts.dims[d];
    int64_t *t = malloc(sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        t[i] = bo_int(r, 0, 5) == 0 ? s->ignore_index : bo_int(r, 0, s->classes);
    if (v == 7 && n > 0) t[n - 1] = s->classes;
    ct_tensor *out = bo_indices(t, s->ts, dev);
    free(t);
    return out;
}

/* The gradient of the result: per sample for NONE, else one value. */
static ct_tensor *class_grad_output(const bo_class_setup *s, ct_dtype dt, bo_rng *r,
                                    ct_device dev) {
    if (s->reduction != CT_REDUCTION_NONE)
        return ct_full(CT_SHAPE0, bo_uniform(r, 0.5, 2.0), .dtype = dt, .device = dev);
    return bo_input(r, s->ts, dt, BO_FINITE, BO_CONTIGUOUS, dev);
}

/* c->op: 0 cross_entropy, 1 its grad; 2 probabilities, 3 grad_input,
 * 4 grad_target; 5 nll_loss, 6 its grad. */
static void run_class_loss(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                           ct_tensor **out, char *desc, size_t dn) {
    bo_class_setup s = class_setup(v, r);
    bool prob = c->op >= 2 && c->op <= 4, nll = c->op >= 5;
    if (prob) s.ignore_index = CT_IGNORE_INDEX_DEFAULT;
    if (nll) s.smoothing = 0.0;
    ct_tensor *x = bo_input(r, s.xs, dt, vrange(c->range, v), s.layout, dev);
    ct_tensor *t = prob ? bo_input(r, s.xs, dt, BO_TAME, (bo_layout)bo_int(r, 0, BO_LAYOUTS_), dev)
                        : class_targets(&s, v, r, dev);
    ct_tensor *w = s.weighted ? bo_input(r, CT_SHAPE(s.classes), dt, BO_TAME, BO_CONTIGUOUS, dev)
                              : NULL;
    describe(desc, dn, "x", s.xs, s.layout);
    size_t k = strlen(desc);
    snprintf(desc + k, dn - k, ", %s, ignore %lld, smoothing %g, reduction %d",
             s.weighted ? "weight" : "no weight", (long long)s.ignore_index, s.smoothing,
             (int)s.reduction);
    if (c->op == 0 || c->op == 2) {
        out[0] = ct_cross_entropy(x, t, .weight = w, .ignore_index = s.ignore_index, .has_ignore_index = true,
                                  .reduction = s.reduction, .label_smoothing = s.smoothing);
        return;
    }
    if (c->op == 5) {
        out[0] = ct_nll_loss(x, t, .weight = w, .ignore_index = s.ignore_index, .has_ignore_index = true,
                             .reduction = s.reduction);
        return;
    }
    ct_tensor *g = class_grad_output(&s, dt, r, dev), *gi = NULL, *gt = NULL;
    ct_status st = nll ? cti_nll_loss_backward(g, x, t, w, s.ignore_index, s.reduction, NULL, &gi)
                       : cti_cross_entropy_backward(g, x, t, w, s.ignore_index, s.reduction,
                                                    s.smoothing, NULL, &gi, c->op == 4 ? &gt : NULL);
    if (st == CT_OK) out[0] = ct_track(c->op == 4 ? gt : gi);
    ct_decref(c->op == 4 ? gi : gt);
}

/* ---- elementwise losses ---------------------------------------------------------------------------- */

static ct_shape loss_broadcast(ct_shape a, ct_shape b) {
    ct_shape o = a.ndim >= b.ndim ? a : b;
    for (int d = 0; d < o.ndim; d++) {
        int da = d - (o.ndim - a.ndim), db = d - (o.ndim - b.ndim);
        int64_t x = da >= 0 ? a.dims[da] : 1, y = db >= 0 ? b.dims[db] : 1;
        o.dims[d] = x == 1 ? y : x;
    }
    return o;
}

/* c->op: 0 mse_loss, 1 grad_input, 2 grad_target; 3 bce_with_logits,
 * 4 grad_input, 5 grad_target. */
static void run_pointwise_loss(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                               ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    bool bce = c->op >= 3;
    ct_reduction red = bo_reductions[v % 3];
    ct_shape ts = bce ? s : broadcast_partner(s, v % 4, r);
    bo_layout lt = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    ct_tensor *t = bo_input(r, ts, dt, bce ? BO_TAME : vrange(c->range, v), lt, dev);
    ct_tensor *w = NULL, *pw = NULL;
    describe(desc, dn, "x", s, l);
    describe(desc, dn, "target", ts, lt);
    if (bce && v % 2 == 0) {
        ct_shape ws = broadcast_partner(s, (v / 2) % 4, r);
        w = bo_input(r, ws, dt, BO_TAME, BO_CONTIGUOUS, dev);
        describe(desc, dn, "weight", ws, BO_CONTIGUOUS);
    }
    if (bce && v % 3 != 1) {
        ct_shape ps = s.ndim && v % 3 == 0 ? CT_SHAPE(s.dims[s.ndim - 1]) : CT_SHAPE0;
        pw = bo_input(r, ps, dt, BO_POSITIVE | BO_NO_SPECIALS, BO_CONTIGUOUS, dev);
        describe(desc, dn, "pos_weight", ps, BO_CONTIGUOUS);
    }
    snprintf(desc + strlen(desc), dn - strlen(desc), ", reduction %d", (int)red);
    if (c->op == 0 || c->op == 3) {
        out[0] = bce ? ct_binary_cross_entropy_with_logits(x, t, .weight = w, .pos_weight = pw, .reduction = red)
                     : ct_mse_loss(x, t, .reduction = red);
        return;
    }
    ct_shape os = red == CT_REDUCTION_NONE ? (bce ? s : loss_broadcast(s, ts)) : CT_SHAPE0;
    ct_tensor *g = bo_input(r, os, dt, BO_FINITE, BO_CONTIGUOUS, dev), *gi = NULL, *gt = NULL;
    bool want_target = c->op == 2 || c->op == 5;
    ct_status st = bce ? cti_bce_with_logits_backward(g, x, t, w, pw, red, want_target ? NULL : &gi,
                                                      want_target ? &gt : NULL)
                       : cti_mse_loss_backward(g, x, t, red, want_target ? NULL : &gi,
                                               want_target ? &gt : NULL);
    if (st == CT_OK) out[0] = ct_track(want_target ? gt : gi);
}

/* ---- optimizer updates ------------------------------------------------------------------------------- */

/* c->op: 0 SGD (momentum; nesterov, dampening, weight decay, maximize by
 * variant), 1 Adam, 2 AdamW with amsgrad. Two steps, in place: the
 * parameter and each state tensor are views (transposed, narrowed,
 * strided), and the result is their whole bases, flattened and
 * concatenated. */
static void run_optim(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                      ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_dtype sdt = (dt == CT_FLOAT16 || dt == CT_BFLOAT16) && v % 2 ? CT_FLOAT32 : dt;
    ct_tensor *base[4], *p = view_target(r, s, &l, dt, vrange(c->range, v), dev, &base[0]);
    ct_tensor *st[3] = {NULL, NULL, NULL};
    int nstate = c->op == 0 ? 1 : c->op == 1 ? 2 : 3;
    describe(desc, dn, "param", s, l);
    for (int k = 0; k < nstate; k++) { /* state as after earlier steps (second moments >= 0) */
        bo_layout ls = (bo_layout)((l + 1 + k) % BO_LAYOUTS_);
        st[k] = view_target(r, s, &ls, sdt, k == 0 ? BO_FINITE : BO_POSITIVE | BO_NO_SPECIALS,
                            dev, &base[k + 1]);
        describe(desc, dn, "state", s, ls);
    }
    snprintf(desc + strlen(desc), dn - strlen(desc), " (%s)", ct_dtype_name(sdt));
    ct_status status = CT_OK;
    for (int step = 1; step <= 2 && status == CT_OK; step++) {
        ct_tensor *g = bo_input(r, s, dt, vrange(c->range, v), (bo_layout)bo_int(r, 0, BO_LAYOUTS_), dev);
        if (c->op == 0) {
            cti_sgd_options o = {0.1, 0.9, v % 4 == 1 ? 0.25 : 0.0, v % 3 ? 0.01 : 0.0,
                                 v % 4 == 2, v % 5 == 0};
            status = cti_sgd_update(p, g, st[0], &o, step == 1 && v % 2);
        } else {
            cti_adam_options o = {1e-2, 0.9, 0.99, 1e-8, v % 3 ? 0.05 : 0.0, c->op == 2,
                                  c->op == 2, v % 5 == 0};
            status = cti_adam_update(p, g, st[0], st[1], st[2], &o, step + v % 3);
        }
    }
    if (status != CT_OK) return;
    ct_tensor *parts[4];
    for (int k = 0; k <= nstate; k++) parts[k] = ct_flatten(base[k], 0, -1);
    out[0] = ct_cat(parts, nstate + 1, 0);
}

/* GradScaler's multi-tensor check-and-unscale (cti_amp_unscale): a
 * writable view followed, in odd variants, by AMP_EXTRA small contiguous
 * grads (one empty), so that GPU launches group 16 and then the rest; NaN/inf
 * in half the variants. out[0] every grad's base after, out[1] the inf flag
 * (compared exactly). inv_scale 1 (no multiply) in every third variant. */
#define AMP_EXTRA 19
static void run_amp_unscale(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                            ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *grads[1 + AMP_EXTRA], *parts[1 + AMP_EXTRA], *base;
    grads[0] = view_target(r, s, &l, dt, vrange(c->range, v), dev, &base);
    parts[0] = ct_flatten(base, 0, -1);
    const int n = v % 2 ? 1 + AMP_EXTRA : 1;
    for (int k = 1; k < n; k++) {
        grads[k] = bo_input(r, CT_SHAPE(k == 5 ? 0 : bo_int(r, 1, 40)), dt, vrange(c->range, v + k),
                            BO_CONTIGUOUS, dev);
        parts[k] = grads[k];
    }
    ct_tensor *found = ct_zeros(CT_SHAPE(1), .device = dev);
    const double inv = v % 3 == 0 ? 1.0 : (double)(float)(1.0 / 65536.0) * (v % 3);
    describe(desc, dn, "grad", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", %d more grads, inv_scale %g", n - 1, inv);
    if (cti_amp_unscale(grads, n, found, inv) != CT_OK) return;
    out[0] = ct_cat(parts, n, 0);
    out[1] = found;
}

#define LOSS(n_, run_, op_, err_) \
    {.name = n_, .family = "loss", .run = run_, .op = op_, .range = BO_DEFAULT, \
     .tol = BO_TOL_RED, .dtypes = BO_DT_FLOAT, .deliberate_error = err_}
#define OPTIM(n_, op_) \
    {.name = n_, .family = "optim", .run = run_optim, .op = op_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EW, .dtypes = BO_DT_FLOAT}

/* Losses need floats and sum (BO_TOL_RED); the optimizer updates are
 * pointwise formulas (BO_TOL_EW). */
#define BO_LOSS_CASES                                                                              \
    LOSS("cross_entropy", run_class_loss, 0, target_out_of_range),                                 \
    LOSS("ce_grad", run_class_loss, 1, target_out_of_range),                                       \
    LOSS("ce_prob", run_class_loss, 2, NULL), LOSS("ce_prob_grad", run_class_loss, 3, NULL),       \
    LOSS("ce_prob_grad_t", run_class_loss, 4, NULL),                                               \
    LOSS("nll_loss", run_class_loss, 5, target_out_of_range),                                      \
    LOSS("nll_grad", run_class_loss, 6, target_out_of_range),                                      \
    LOSS("mse_loss", run_pointwise_loss, 0, NULL), LOSS("mse_grad", run_pointwise_loss, 1, NULL),  \
    LOSS("mse_grad_t", run_pointwise_loss, 2, NULL),                                               \
    LOSS("bce_logits", run_pointwise_loss, 3, NULL), LOSS("bce_grad", run_pointwise_loss, 4, NULL), \
    LOSS("bce_grad_t", run_pointwise_loss, 5, NULL),                                               \
    OPTIM("sgd_update", 0), OPTIM("adam_update", 1), OPTIM("adamw_amsgrad", 2),                   \
    {.name = "amp_unscale", .family = "optim", .run = run_amp_unscale, .op = 0, .range = BO_DEFAULT, \
     .tol = BO_TOL_EW, .dtypes = BO_DT_FLOAT},
