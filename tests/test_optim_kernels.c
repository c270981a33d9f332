/*
 * test_optim_kernels.c — the fused optimizer updates (cti_sgd_update,
 * cti_adam_update) against float64 reimplementations of torch.optim's
 * _single_tensor_sgd and _single_tensor_adam(w) written here, over several
 * steps and every option combination (momentum, dampening, nesterov,
 * weight decay, maximize; Adam vs AdamW weight decay, amsgrad's running
 * max), for float32/float64 and 16-bit parameters (with 16-bit or float32
 * state), contiguous and not; PyTorch fixtures (one SGD-momentum run, one
 * AdamW run and their variants, tools/gen_fixtures_loss.py); errors.
 */
#include <stdlib.h>

#include "loss_fixture.h"
#include "ops/optim_kernels.h"
#include "testutil.h"

/* ---- rounding to a storage dtype ------------------------------------------------------------ */

static double stored(double v, ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return (float)v;
    case CT_FLOAT16: return ct_half_to_float(ct_float_to_half((float)v));
    case CT_BFLOAT16: return ct_bfloat16_to_float(ct_float_to_bfloat16((float)v));
    default: return v;
    }
}

/* ---- float64 references of torch.optim ------------------------------------------------------- */

/* Every PyTorch op rounds its result to its tensor's dtype: RP for
 * param-dtype temporaries, RS for the state. */
#define RP(v) stored((v), pdt)
#define RS(v) stored((v), sdt)

static void ref_sgd(double *p, const double *grad, double *buf, int64_t n, const cti_sgd_options *o,
                    bool first, ct_dtype pdt, ct_dtype sdt) {
    for (int64_t i = 0; i < n; i++) {
        double d = o->maximize ? -grad[i] : grad[i];
        if (o->weight_decay != 0) d = RP(d + o->weight_decay * p[i]);
        if (o->momentum != 0) {
            buf[i] = first ? RS(d) : RS(RS(buf[i] * o->momentum) + (1 - o->dampening) * d);
            d = o->nesterov ? RP(d + o->momentum * buf[i]) : buf[i];
        }
        p[i] = RP(p[i] - o->lr * d);
    }
}

static void ref_adam(double *p, const double *grad, double *m, double *v, double *vmax, int64_t n,
                     const cti_adam_options *o, int64_t step, ct_dtype pdt, ct_dtype sdt) {
    double bc1 = 1 - pow(o->beta1, (double)step), bc2 = 1 - pow(o->beta2, (double)step);
    for (int64_t i = 0; i < n; i++) {
        double d = o->maximize ? -grad[i] : grad[i];
        if (o->decoupled_weight_decay) p[i] = RP(p[i] * (1 - o->lr * o->weight_decay));
        else if (o->weight_decay != 0) d = RP(d + o->weight_decay * p[i]);
        m[i] = RS(RS(m[i] * o->beta1) + (1 - o->beta1) * d);
        v[i] = RS(RS(v[i] * o->beta2) + (1 - o->beta2) * d * d);
        double vv = v[i];
        if (o->amsgrad) vv = vmax[i] = vmax[i] > v[i] ? vmax[i] : v[i];
        double denom = RS(RS(RS(sqrt(vv)) / sqrt(bc2)) + o->eps);
        p[i] = RP(p[i] - o->lr / bc1 * m[i] / denom);
    }
}

/* ---- running both ---------------------------------------------------------------------------- */

#define N_ROWS 5
#define N_COLS 7
#define N_EL (N_ROWS * N_COLS)

/* A [5, 7] tensor of dtype dt, contiguous or a transposed layout. */
static ct_tensor *make(const double *v, ct_dtype dt, bool noncontig) {
    return noncontig ? ct_test_noncontiguous(v, CT_SHAPE(N_ROWS, N_COLS), dt)
                     : ct_test_tensor(v, CT_SHAPE(N_ROWS, N_COLS), dt);
}

static void tolerances(ct_dtype dt, double *rtol, double *atol) {
    ct_test_tolerances(dt, rtol, atol);
    if (dt == CT_FLOAT32) *rtol = 1e-5, *atol = 1e-6;      /* a few float ops per step */
    if (dt == CT_FLOAT64) *rtol = 1e-12, *atol = 1e-14;
    /* 16-bit: a rounding apart, at the scale of the operands (~1: a result
     * near 0 can come from cancelling ones) */
    if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) *rtol *= 2, *atol = 2 * *rtol;
}

/* The dtype pairs (param, state) tested. */
static const ct_dtype g_pairs[][2] = {{CT_FLOAT32, CT_FLOAT32}, {CT_FLOAT64, CT_FLOAT64},
                                      {CT_FLOAT16, CT_FLOAT32}, {CT_BFLOAT16, CT_FLOAT32},
                                      {CT_FLOAT16, CT_FLOAT16}, {CT_BFLOAT16, CT_BFLOAT16}};
#define N_PAIRS ((int)(sizeof g_pairs / sizeof g_pairs[0]))

/* Fresh random values as stored in dt. */
static void draw(double *v, ct_dtype dt, double lo, double hi) {
    ct_test_fill_uniform(v, N_EL, lo, hi);
    for (int i = 0; i < N_EL; i++) v[i] = stored(v[i], dt);
}

static bool expect_close(const ct_tensor *t, const double *want, ct_dtype dt, const char *what,
                         int step) {
    double rtol, atol;
    tolerances(dt, &rtol, &atol);
    bool ok = CT_EXPECT_CLOSE(t, want, N_EL, rtol, atol);
    if (!ok) fprintf(stderr, "  %s after step %d (%s)\n", what, step, ct_dtype_name(dt));
    return ok;
}

static void run_sgd(const cti_sgd_options *o, ct_dtype pdt, ct_dtype sdt, bool noncontig) {
    double p[N_EL], buf[N_EL] = {0}, g[N_EL];
    draw(p, pdt, -1, 1);
    ct_scope_begin();
    ct_tensor *tp = make(p, pdt, noncontig);
    ct_tensor *tb = o->momentum != 0 ? make(buf, sdt, noncontig) : NULL;
    bool ok = true;
    for (int step = 1; step <= 3 && ok; step++) {
        draw(g, pdt, -1, 1);
        ct_tensor *tg = make(g, pdt, !noncontig);
        CT_EXPECT(cti_sgd_update(tp, tg, tb, o, step == 1) == CT_OK);
        ref_sgd(p, g, buf, N_EL, o, step == 1, pdt, sdt);
        ok = expect_close(tp, p, pdt, "param", step);
        if (tb) ok &= expect_close(tb, buf, sdt, "momentum_buffer", step);
    }
    if (!ok)
        fprintf(stderr, "  sgd lr %g momentum %g dampening %g wd %g nesterov %d maximize %d, %s state %s%s\n",
                o->lr, o->momentum, o->dampening, o->weight_decay, o->nesterov, o->maximize,
                ct_dtype_name(pdt), ct_dtype_name(sdt), noncontig ? ", non-contiguous" : "");
    ct_scope_end();
}

static void test_sgd_reference(void) {
    for (int combo = 0; combo < 32; combo++) {
        cti_sgd_options o = {.lr = 0.1, .momentum = combo & 1 ? 0.9 : 0.0,
                             .dampening = combo & 2 ? 0.3 : 0.0, .weight_decay = combo & 4 ? 0.01 : 0.0,
                             .nesterov = (combo & 8) != 0, .maximize = (combo & 16) != 0};
        if (o.nesterov && (o.momentum == 0 || o.dampening != 0)) continue;
        for (int k = 0; k < N_PAIRS; k++) run_sgd(&o, g_pairs[k][0], g_pairs[k][1], (combo + k) % 2 == 1);
    }
}

static void run_adam(const cti_adam_options *o, ct_dtype pdt, ct_dtype sdt, bool noncontig) {
    double p[N_EL], m[N_EL] = {0}, v[N_EL] = {0}, vmax[N_EL] = {0}, g[N_EL];
    draw(p, pdt, -1, 1);
    ct_scope_begin();
    ct_tensor *tp = make(p, pdt, noncontig), *tm = make(m, sdt, noncontig), *tv = make(v, sdt, false);
    ct_tensor *tx = o->amsgrad ? make(vmax, sdt, noncontig) : NULL;
    bool ok = true;
    for (int step = 1; step <= 4 && ok; step++) {
        draw(g, pdt, step == 3 ? -0.01 : -1, step == 3 ? 0.01 : 1); /* small grads: the max matters */
        ct_tensor *tg = make(g, pdt, !noncontig);
        CT_EXPECT(cti_adam_update(tp, tg, tm, tv, tx, o, step) == CT_OK);
        ref_adam(p, g, m, v, vmax, N_EL, o, step, pdt, sdt);
        ok = expect_close(tp, p, pdt, "param", step) && expect_close(tm, m, sdt, "exp_avg", step) &&
             expect_close(tv, v, sdt, "exp_avg_sq", step);
        if (tx) ok &= expect_close(tx, vmax, sdt, "max_exp_avg_sq", step);
    }
    if (!ok)
        fprintf(stderr, "  adam%s lr %g betas (%g, %g) eps %g wd %g amsgrad %d maximize %d, %s state %s\n",
                o->decoupled_weight_decay ? "w" : "", o->lr, o->beta1, o->beta2, o->eps,
                o->weight_decay, o->amsgrad, o->maximize, ct_dtype_name(pdt), ct_dtype_name(sdt));
    ct_scope_end();
}

static void test_adam_reference(void) {
    for (int combo = 0; combo < 16; combo++) {
        cti_adam_options o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                              .weight_decay = combo & 1 ? 0.05 : 0.0,
                              .decoupled_weight_decay = (combo & 2) != 0,
                              .amsgrad = (combo & 4) != 0, .maximize = (combo & 8) != 0};
        for (int k = 0; k < N_PAIRS; k++) run_adam(&o, g_pairs[k][0], g_pairs[k][1], (combo + k) % 2 == 1);
    }
}

/* ---- PyTorch fixtures ----------------------------------------------------------------------------- */

static void check_sgd_fixture(const char *name) {
    lf_file f;
    if (!lf_load(__FILE__, name, &f)) {
        CT_EXPECT_MSG(false, "cannot read fixture %s (run tools/gen_fixtures_loss.py)", name);
        return;
    }
    const double *hp = lf_get(&f, "params")->values;
    cti_sgd_options o = {hp[0], hp[1], hp[2], hp[3], hp[4] != 0, hp[5] != 0};
    for (int k = 0; k < 2; k++) {
        ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
        double rtol = k ? 1e-5 : 1e-12, atol = k ? 1e-6 : 1e-14;
        ct_scope_begin();
        ct_tensor *p = lf_tensor_of(&f, "param0", dt), *buf = ct_zeros_like(p);
        char key[32];
        for (int step = 1;; step++) {
            snprintf(key, sizeof key, "grad%d", step);
            ct_tensor *g = lf_tensor_of(&f, key, dt);
            if (!g) break;
            CT_EXPECT(cti_sgd_update(p, g, buf, &o, step == 1) == CT_OK);
            snprintf(key, sizeof key, "param%d", step);
            const lf_tensor *want = lf_get(&f, key);
            bool ok = CT_EXPECT_CLOSE(p, want->values, want->numel, rtol, atol);
            snprintf(key, sizeof key, "buf%d", step);
            want = lf_get(&f, key);
            ok &= CT_EXPECT_CLOSE(buf, want->values, want->numel, rtol, atol);
            if (!ok) fprintf(stderr, "  fixture %s step %d %s\n", name, step, ct_dtype_name(dt));
        }
        ct_scope_end();
    }
    lf_free(&f);
}

static void check_adam_fixture(const char *name) {
    lf_file f;
    if (!lf_load(__FILE__, name, &f)) {
        CT_EXPECT_MSG(false, "cannot read fixture %s (run tools/gen_fixtures_loss.py)", name);
        return;
    }
    const double *hp = lf_get(&f, "params")->values;
    cti_adam_options o = {.lr = hp[0], .beta1 = hp[1], .beta2 = hp[2], .eps = hp[3],
                          .weight_decay = hp[4], .amsgrad = hp[5] != 0, .maximize = hp[6] != 0,
                          .decoupled_weight_decay = hp[7] != 0};
    for (int k = 0; k < 2; k++) {
        ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
        double rtol = k ? 1e-5 : 1e-12, atol = k ? 1e-6 : 1e-14;
        ct_scope_begin();
        ct_tensor *p = lf_tensor_of(&f, "param0", dt);
        ct_tensor *m = ct_zeros_like(p), *v = ct_zeros_like(p), *vmax = o.amsgrad ? ct_zeros_like(p) : NULL;
        char key[32];
        for (int step = 1;; step++) {
            snprintf(key, sizeof key, "grad%d", step);
            ct_tensor *g = lf_tensor_of(&f, key, dt);
            if (!g) break;
            CT_EXPECT(cti_adam_update(p, g, m, v, vmax, &o, step) == CT_OK);
            static const char *const names[] = {"param%d", "exp_avg%d", "exp_avg_sq%d", "max_exp_avg_sq%d"};
            ct_tensor *got[] = {p, m, v, vmax};
            for (int j = 0; j < (o.amsgrad ? 4 : 3); j++) {
                snprintf(key, sizeof key, names[j], step);
                const lf_tensor *want = lf_get(&f, key);
                if (!CT_EXPECT_CLOSE(got[j], want->values, want->numel, rtol, atol))
                    fprintf(stderr, "  fixture %s: %s %s\n", name, key, ct_dtype_name(dt));
            }
        }
        ct_scope_end();
    }
    lf_free(&f);
}

static void test_fixtures(void) {
    check_sgd_fixture("sgd_momentum");
    check_sgd_fixture("sgd_dampening_maximize");
    check_adam_fixture("adamw_amsgrad");
    check_adam_fixture("adam_wd_maximize");
}

/* ---- edge cases and errors ------------------------------------------------------------------------ */

static void test_empty_and_nan(void) {
    CT_SCOPE {
        ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
        cti_sgd_options s = {.lr = 0.1};
        CT_EXPECT(cti_sgd_update(e, e, NULL, &s, true) == CT_OK);
        /* amsgrad's max is torch.maximum: a NaN moment stays NaN */
        cti_adam_options a = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .amsgrad = true};
        double nan_g[] = {NAN, 1.0};
        ct_tensor *p = ct_zeros(CT_SHAPE(2)), *g = ct_test_tensor(nan_g, CT_SHAPE(2), CT_FLOAT32);
        ct_tensor *m = ct_zeros(CT_SHAPE(2)), *v = ct_zeros(CT_SHAPE(2)), *mx = ct_zeros(CT_SHAPE(2));
        CT_EXPECT(cti_adam_update(p, g, m, v, mx, &a, 1) == CT_OK);
        CT_EXPECT(isnan(ct_get(mx, (int64_t[]){0})) && isnan(ct_get(p, (int64_t[]){0})));
        CT_EXPECT(isfinite(ct_get(p, (int64_t[]){1})));
    }
}

static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *p = ct_zeros(CT_SHAPE(3)), *g = ct_ones(CT_SHAPE(3)), *b = ct_zeros(CT_SHAPE(3));
        cti_sgd_options s = {.lr = -1};
        CT_EXPECT(cti_sgd_update(p, g, NULL, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sgd_update: Invalid learning rate: -1");
        s = (cti_sgd_options){.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true};
        CT_EXPECT(cti_sgd_update(p, g, b, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Nesterov momentum requires a momentum and zero dampening");
        s = (cti_sgd_options){.lr = 0.1, .momentum = 0.9};
        CT_EXPECT(cti_sgd_update(p, g, NULL, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sgd_update: momentum 0.9 needs a momentum buffer");
        s.momentum = 0;
        CT_EXPECT(cti_sgd_update(p, g, b, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "a momentum buffer was given but momentum is 0");
        s.weight_decay = -0.5;
        CT_EXPECT(cti_sgd_update(p, g, NULL, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid weight_decay value: -0.5");
        s.weight_decay = 0;
        CT_EXPECT(cti_sgd_update(p, ct_ones(CT_SHAPE(4)), NULL, &s, true) == CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "sgd_update: grad of shape [4] does not match param of shape [3]");
        CT_EXPECT(cti_sgd_update(p, ct_ones(CT_SHAPE(3), .dtype = CT_FLOAT64), NULL, &s, true) == CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "sgd_update: grad has dtype float64 but param has dtype float32");
        ct_tensor *ip = ct_zeros(CT_SHAPE(3), .dtype = CT_INT64);
        CT_EXPECT(cti_sgd_update(ip, ip, NULL, &s, true) == CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "sgd_update: param must be floating point, got int64");
        ct_tensor *expanded = ct_expand(ct_zeros(CT_SHAPE(1)), CT_SHAPE(3));
        CT_EXPECT(cti_sgd_update(expanded, g, NULL, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "more than one element of the written-to tensor (param)");
        CT_EXPECT(cti_sgd_update(NULL, g, NULL, &s, true) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sgd_update: a required tensor is NULL");

        cti_adam_options a = {.lr = 0.1, .beta1 = 1.0, .beta2 = 0.999, .eps = 1e-8};
        ct_tensor *m = ct_zeros(CT_SHAPE(3)), *v = ct_zeros(CT_SHAPE(3));
        CT_EXPECT(cti_adam_update(p, g, m, v, NULL, &a, 1) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "adam_update: Invalid beta parameter at index 0: 1");
        a = (cti_adam_options){.lr = 0.1, .beta1 = 0.9, .beta2 = -0.1, .eps = 1e-8, .decoupled_weight_decay = true};
        CT_EXPECT(cti_adam_update(p, g, m, v, NULL, &a, 1) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "adamw_update: Invalid beta parameter at index 1: -0.1");
        a.beta2 = 0.999;
        a.eps = -1;
        CT_EXPECT(cti_adam_update(p, g, m, v, NULL, &a, 1) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid epsilon value: -1");
        a.eps = 1e-8;
        CT_EXPECT(cti_adam_update(p, g, m, v, NULL, &a, 0) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "step must be at least 1");
        a.amsgrad = true;
        CT_EXPECT(cti_adam_update(p, g, m, v, NULL, &a, 1) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amsgrad needs max_exp_avg_sq");
        a.amsgrad = false;
        CT_EXPECT(cti_adam_update(p, g, m, ct_zeros(CT_SHAPE(3), .dtype = CT_FLOAT16), NULL, &a, 1) == CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "exp_avg_sq has dtype float16 but param has dtype float32");
        CT_EXPECT(cti_adam_update(p, g, ct_zeros(CT_SHAPE(2)), v, NULL, &a, 1) == CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "exp_avg of shape [2] does not match param of shape [3]");
        /* a failed call leaves everything untouched */
        CT_EXPECT(ct_item(ct_sum_all(ct_abs(p))) == 0 && ct_item(ct_sum_all(ct_abs(m))) == 0);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_sgd_reference);
    CT_RUN(test_adam_reference);
    CT_RUN(test_fixtures);
    CT_RUN(test_empty_and_nan);
    CT_RUN(test_errors);
    return ct_test_finish();
}
