/*
 * test_loss.c — cross_entropy and nll_loss: forward against float64
 * references written here from PyTorch's definitions (nll_loss's weighted
 * mean, cross_entropy's label-smoothing formula and its interaction with
 * weights and ignore_index, probability targets), for every option
 * combination, at [N, C], [N, C, d1, ...] and unbatched [C] inputs,
 * contiguous and not, in every floating dtype; gradients (cti_*_backward)
 * against central finite differences of the float64 forward; PyTorch
 * fixtures (tools/gen_fixtures_loss.py); stability at huge logits; empty
 * batches; every error path with PyTorch's messages; and, when there is an
 * OpenCL device, its error reporting and a device forward/backward chain.
 * The elementwise losses are in test_loss_pointwise.c.
 */
#include <stdlib.h>

#include "ctorch/functional_loss.h"
#include "loss_fixture.h"
#include "ops/loss.h"
#include "testutil.h"

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
static const ct_reduction reductions[] = {CT_REDUCTION_MEAN, CT_REDUCTION_NONE, CT_REDUCTION_SUM};

/* ---- one problem: data, options and the float64 reference ------------------------------- */

typedef struct ce_problem {
    ct_shape shape;        /* input shape */
    int64_t N, C, inner;   /* seen as [N, C, inner]; rows = N * inner */
    bool nll;              /* nll_loss: x holds log-probabilities */
    bool prob;             /* probability targets */
    bool weighted;
    int64_t ignore_index;
    double smoothing;
    ct_reduction reduction;
    double *x;             /* input values (row-major) */
    double *target;        /* class indices, or probabilities like x */
    double *w;             /* [C] */
    double *gout;          /* grad_output: [rows] for NONE, else [1] */
} ce_problem;

static int64_t rows_of(const ce_problem *p) { return p->N * p->inner; }
static int64_t numel_of(const ce_problem *p) { return rows_of(p) * p->C; }
static double at(const ce_problem *p, const double *v, int64_t r, int64_t c) {
    return v[(r / p->inner * p->C + c) * p->inner + r % p->inner];
}

static ct_shape target_shape(const ce_problem *p) {
    if (p->prob) return p->shape;
    if (p->shape.ndim == 1) return CT_SHAPE0;
    ct_shape t = p->shape;
    t.ndim = p->shape.ndim - 1;
    for (int d = 1; d < t.ndim; d++) t.dims[d] = p->shape.dims[d + 1];
    return t;
}

/* NONE: the input's shape without the class dim. */
static ct_shape result_shape(const ce_problem *p) {
    if (p->reduction != CT_REDUCTION_NONE) return CT_SHAPE0;
    ce_problem classes = *p;
    classes.prob = false;
    return target_shape(&classes);
}

static void problem_init(ce_problem *p, ct_shape shape) {
    p->shape = shape;
    p->N = shape.ndim == 1 ? 1 : shape.dims[0];
    p->C = shape.ndim == 1 ? shape.dims[0] : shape.dims[1];
    p->inner = 1;
    for (int d = 2; d < shape.ndim; d++) p->inner *= shape.dims[d];
    int64_t n = numel_of(p), rows = rows_of(p);
    p->x = malloc(sizeof(double) * (size_t)(n + 1));
    p->target = malloc(sizeof(double) * (size_t)(n + 1));
    p->w = malloc(sizeof(double) * (size_t)(p->C + 1));
    p->gout = malloc(sizeof(double) * (size_t)(rows + 1));
    ct_test_fill_uniform(p->x, n, -3.0, 3.0);
    ct_test_fill_uniform(p->w, p->C, 0.2, 2.0);
    ct_test_fill_uniform(p->gout, rows, -1.5, 1.5);
    if (p->nll) /* log-probabilities of a random distribution */
        for (int64_t r = 0; r < rows; r++) {
            double m = 0;
            for (int64_t c = 0; c < p->C; c++) m += exp(at(p, p->x, r, c));
            for (int64_t c = 0; c < p->C; c++)
                p->x[(r / p->inner * p->C + c) * p->inner + r % p->inner] -= log(m);
        }
    if (p->prob) {
        ct_test_fill_uniform(p->target, n, 0.0, 1.0);
        return;
    }
    /* only row 0 is ignored (a fully ignored MEAN is NaN: tested elsewhere) */
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = ct_test_randint(0, p->C);
        p->target[r] = (double)(t == p->ignore_index ? (t + 1) % p->C : t);
    }
    if (p->ignore_index >= 0 && rows > 1) p->target[0] = (double)p->ignore_index;
}

static void problem_free(ce_problem *p) {
    free(p->x);
    free(p->target);
    free(p->w);
    free(p->gout);
}

/* log_softmax of row r (or x itself for nll). */
static void ref_logp(const ce_problem *p, const double *x, int64_t r, double *logp) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < p->C; c++) logp[c] = at(p, x, r, c), m = logp[c] > m ? logp[c] : m;
    if (p->nll) return;
    for (int64_t c = 0; c < p->C; c++) s += exp(logp[c] - m);
    for (int64_t c = 0; c < p->C; c++) logp[c] -= m + log(s);
}

/* The loss as PyTorch defines it, into out (rows values for NONE, else 1).
 * x and target are the values as stored in the tested dtype. */
static void ref_loss(const ce_problem *p, const double *x, const double *target, double *out) {
    int64_t rows = rows_of(p);
    double s = p->smoothing > 0 ? p->smoothing : 0, C = (double)p->C;
    double nll_sum = 0, smooth_sum = 0, tw = 0, total = 0;
    double *logp = malloc(sizeof(double) * (size_t)(p->C + 1));
    for (int64_t r = 0; r < rows; r++) {
        ref_logp(p, x, r, logp);
        double v = 0;
        if (p->prob) { /* -sum_c w_c q_c logp_c with q = (1 - s) target + s / C */
            for (int64_t c = 0; c < p->C; c++)
                v -= (p->weighted ? p->w[c] : 1) * ((1 - s) * at(p, target, r, c) + s / C) * logp[c];
        } else if ((int64_t)target[r] != p->ignore_index) {
            int64_t t = (int64_t)target[r];
            double wt = p->weighted ? p->w[t] : 1, nll = -wt * logp[t], smooth = 0;
            for (int64_t c = 0; c < p->C; c++) smooth -= (p->weighted ? p->w[c] : 1) * logp[c];
            nll_sum += nll, smooth_sum += smooth, tw += wt;
            v = (1 - s) * nll + s / C * smooth;
        }
        if (p->reduction == CT_REDUCTION_NONE) out[r] = v;
        total += v;
    }
    free(logp);
    if (p->reduction == CT_REDUCTION_SUM) out[0] = total;
    if (p->reduction == CT_REDUCTION_MEAN)
        out[0] = p->prob ? (p->C ? total / (double)rows : NAN)
                         : (1 - s) * nll_sum / tw + s / C * smooth_sum / tw;
}

/* ---- calling ctorch --------------------------------------------------------------------------- */

static ct_tensor *make(const ce_problem *p, const double *v, ct_shape s, ct_dtype dt, bool noncontig) {
    return noncontig && s.ndim >= 2 ? ct_test_noncontiguous(v, s, dt) : ct_test_tensor(v, s, dt);
}

/* Input, target and weight tensors (scope-owned when called in a scope). */
static void tensors_of(const ce_problem *p, const double *x, ct_dtype dt, bool noncontig,
                       ct_tensor **in, ct_tensor **tg, ct_tensor **w) {
    *in = make(p, x, p->shape, dt, noncontig);
    *tg = p->prob ? make(p, p->target, p->shape, dt, noncontig)
                  : ct_test_tensor(p->target, target_shape(p), CT_INT64);
    *w = p->weighted ? ct_test_tensor(p->w, CT_SHAPE(p->C), dt) : NULL;
}

static ct_tensor *call_forward(const ce_problem *p, ct_tensor *in, ct_tensor *tg, ct_tensor *w) {
    if (p->nll)
        return ct_nll_loss(in, tg, .weight = w, .ignore_index = p->ignore_index, .has_ignore_index = true,
                           .reduction = p->reduction);
    return ct_cross_entropy(in, tg, .weight = w, .ignore_index = p->ignore_index, .has_ignore_index = true,
                            .reduction = p->reduction, .label_smoothing = p->smoothing);
}

static ct_status call_backward(const ce_problem *p, ct_tensor *g, ct_tensor *in, ct_tensor *tg,
                               ct_tensor *w, ct_tensor **gi, ct_tensor **gt) {
    if (p->nll) {
        if (gt) *gt = NULL;
        return cti_nll_loss_backward(g, in, tg, w, p->ignore_index, p->reduction, NULL, gi);
    }
    return cti_cross_entropy_backward(g, in, tg, w, p->ignore_index, p->reduction, p->smoothing,
                                      NULL, gi, gt);
}

/* sum_i gout_i * loss_i in float64 at input values x (target values t),
 * from the plain-C reference, so that the gradients' oracle does not run
 * the forward code under test. */
static double objective(const ce_problem *p, const double *x, const double *t) {
    int64_t n = p->reduction == CT_REDUCTION_NONE ? rows_of(p) : 1;
    double *vals = malloc(sizeof(double) * (size_t)(n + 1)), v = 0;
    ref_loss(p, x, t, vals);
    for (int64_t i = 0; i < n; i++) v += p->gout[i] * vals[i];
    free(vals);
    return v;
}

/* Central differences of the objective w.r.t. every element of v. */
static double *finite_differences(const ce_problem *p, bool wrt_target) {
    int64_t n = numel_of(p);
    double *g = malloc(sizeof(double) * (size_t)(n + 1)), h = 1e-5;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *t = malloc(sizeof(double) * (size_t)(n + 1));
    memcpy(x, p->x, sizeof(double) * (size_t)n);
    memcpy(t, p->target, sizeof(double) * (size_t)(p->prob ? n : rows_of(p)));
    double *v = wrt_target ? t : x;
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + h;
        double up = objective(p, x, t);
        v[i] = keep - h;
        g[i] = (up - objective(p, x, t)) / (2 * h);
        v[i] = keep;
    }
    free(x);
    free(t);
    return g;
}

static void describe(const ce_problem *p, ct_dtype dt) {
    char s[96];
    int k = snprintf(s, sizeof s, "[");
    for (int d = 0; d < p->shape.ndim; d++) k += snprintf(s + k, sizeof s - (size_t)k, d ? ", %lld" : "%lld", (long long)p->shape.dims[d]);
    snprintf(s + k, sizeof s - (size_t)k, "]");
    fprintf(stderr, "  %s %s %s, weight %d, ignore %lld, smoothing %g, reduction %d, %s\n",
            p->nll ? "nll_loss" : "cross_entropy", p->prob ? "probabilities" : "classes", s,
            p->weighted, (long long)p->ignore_index, p->smoothing, (int)p->reduction,
            ct_dtype_name(dt));
}

/* Forward in dt (contiguous or not) against the reference at dt's values. */
static void check_forward(const ce_problem *p, ct_dtype dt, bool noncontig) {
    ct_scope_begin();
    ct_tensor *in, *tg, *w;
    tensors_of(p, p->x, dt, noncontig, &in, &tg, &w);
    double *x = ct_test_values(in), *t = p->prob ? ct_test_values(tg) : NULL;
    ce_problem q = *p;
    if (w) q.w = ct_test_values(w);
    int64_t n = p->reduction == CT_REDUCTION_NONE ? rows_of(p) : 1;
    double *want = malloc(sizeof(double) * (size_t)(n + 1));
    ref_loss(&q, x, t ? t : p->target, want);
    ct_tensor *out = call_forward(p, in, tg, w);
    double rtol, atol;
    ct_test_tolerances(dt, &rtol, &atol);
    bool ok = CT_EXPECT_SHAPE(out, result_shape(p)) && ct_dtype_of(out) == ct_dtype_of(in) &&
              CT_EXPECT_CLOSE(out, want, n, 4 * rtol, atol);
    if (!ok) describe(p, dt);
    if (w) free(q.w);
    free(want);
    free(x);
    free(t);
    ct_scope_end();
}

/* p with x, probability targets, weights and grad_output rounded as dt
 * stores them (the arrays are new; free with problem_free). */
static ce_problem rounded_problem(const ce_problem *p, ct_dtype dt) {
    ce_problem q = *p;
    int64_t n = numel_of(p), rows = rows_of(p);
    q.x = malloc(sizeof(double) * (size_t)(n + 1));
    q.target = malloc(sizeof(double) * (size_t)(n + 1));
    q.w = malloc(sizeof(double) * (size_t)(p->C + 1));
    q.gout = malloc(sizeof(double) * (size_t)(rows + 1));
    for (int64_t i = 0; i < n; i++) q.x[i] = ct_test_round_to(dt, p->x[i]);
    for (int64_t i = 0; i < (p->prob ? n : rows); i++)
        q.target[i] = p->prob ? ct_test_round_to(dt, p->target[i]) : p->target[i];
    for (int64_t c = 0; c < p->C; c++) q.w[c] = ct_test_round_to(dt, p->w[c]);
    for (int64_t r = 0; r < rows; r++) q.gout[r] = ct_test_round_to(dt, p->gout[r]);
    return q;
}

/* The gradient in a lower-precision dtype against the float64 gradient of
 * the same stored values: what is left is the rounding of the result to
 * the dtype and float32 arithmetic on terms the size of the gradient's
 * largest element (ct_test_rounding_tolerances). */
static bool check_backward_lowp(const ce_problem *p, ct_dtype dt) {
    ce_problem q = rounded_problem(p, dt);
    int64_t n = numel_of(p);
    double *ref = finite_differences(&q, false), big = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(ref[i]));
    ct_tensor *in, *tg, *w, *gi = NULL;
    tensors_of(p, p->x, dt, true, &in, &tg, &w);
    ct_tensor *g = ct_test_tensor(p->gout, result_shape(p), dt);
    CT_EXPECT(call_backward(p, g, in, tg, w, &gi, NULL) == CT_OK);
    double rtol, atol;
    ct_test_rounding_tolerances(dt, big, &rtol, &atol);
    bool ok = CT_EXPECT_CLOSE(gi, ref, n, rtol, atol);
    if (!ok) fprintf(stderr, "  (%s gradient; largest |element| %g)\n", ct_dtype_name(dt), big);
    if (gi) ct_release(gi);
    free(ref);
    problem_free(&q);
    return ok;
}

/* Backward in float64 against finite differences of the reference; then
 * in the other dtypes. */
static void check_backward(const ce_problem *p) {
    ct_scope_begin();
    ct_tensor *in, *tg, *w, *gi = NULL, *gt = NULL;
    tensors_of(p, p->x, CT_FLOAT64, false, &in, &tg, &w);
    ct_tensor *g = ct_test_tensor(p->gout, result_shape(p), CT_FLOAT64);
    CT_EXPECT(call_backward(p, g, in, tg, w, &gi, p->prob ? &gt : NULL) == CT_OK);
    int64_t n = numel_of(p);
    double *fd = finite_differences(p, false);
    bool ok = CT_EXPECT_SHAPE(gi, p->shape) && CT_EXPECT_CLOSE(gi, fd, n, 1e-6, 1e-7);
    free(fd);
    if (p->prob) {
        fd = finite_differences(p, true);
        ok &= CT_EXPECT_CLOSE(gt, fd, n, 1e-6, 1e-7);
        free(fd);
    }
    for (int k = 0; k < 4 && ok; k++)
        if (float_types[k] != CT_FLOAT64) ok &= check_backward_lowp(p, float_types[k]);
    if (!ok) describe(p, CT_FLOAT64);
    if (gi) ct_release(gi);
    if (gt) ct_release(gt);
    ct_scope_end();
}

/* ---- every option combination --------------------------------------------------------------- */

static const struct {
    int ndim;
    int64_t dims[5];
} g_shapes[] = {{2, {5, 4}}, {1, {6}}, {3, {2, 3, 4}}, {4, {3, 4, 2, 3}}, {5, {2, 3, 2, 1, 2}}};

static void run_combinations(bool nll, bool prob) {
    static const double smoothings[] = {0.0, 0.25, 1.0};
    for (size_t si = 0; si < sizeof g_shapes / sizeof g_shapes[0]; si++)
        for (int weighted = 0; weighted < 2; weighted++)
            for (int ig = 0; ig < (prob ? 1 : 2); ig++)
                for (int sm = 0; sm < (nll ? 1 : 3); sm++)
                    for (int r = 0; r < 3; r++) {
                        ce_problem p = {.nll = nll, .prob = prob, .weighted = weighted,
                                        .ignore_index = ig ? 1 : CT_IGNORE_INDEX_DEFAULT,
                                        .smoothing = smoothings[sm], .reduction = reductions[r]};
                        problem_init(&p, ct_shape_make(g_shapes[si].ndim, g_shapes[si].dims));
                        for (int k = 0; k < 4; k++) check_forward(&p, float_types[k], k % 2 == 0);
                        check_backward(&p);
                        problem_free(&p);
                    }
}

static void test_cross_entropy_class_targets(void) { run_combinations(false, false); }
static void test_cross_entropy_prob_targets(void) { run_combinations(false, true); }
static void test_nll_loss(void) { run_combinations(true, false); }

/* ---- PyTorch fixtures ------------------------------------------------------------------------- */

/* Compare ctorch with a fixture's loss_<r> and grad_<r> in float64 (tight)
 * and float32 (~1e-5). */
static void check_class_fixture(const char *name) {
    lf_file f;
    if (!lf_load(__FILE__, name, &f)) {
        CT_EXPECT_MSG(false, "cannot read fixture %s (run tools/gen_fixtures_loss.py)", name);
        return;
    }
    const lf_tensor *params = lf_get(&f, "params");
    int64_t ignore = (int64_t)params->values[0];
    double smoothing = params->values[1];
    bool weighted = params->values[2] != 0, nll = params->values[3] != 0;
    static const char *const rnames[] = {"mean", "none", "sum"};
    for (int k = 0; k < 2; k++) {
        ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
        double rtol = k ? 1e-5 : 1e-10, atol = k ? 1e-6 : 1e-12;
        for (int r = 0; r < 3; r++) {
            ct_scope_begin();
            ct_tensor *in = lf_tensor_of(&f, "input", dt), *tg = lf_tensor_of(&f, "target", CT_INT64);
            ct_tensor *w = weighted ? lf_tensor_of(&f, "weight", dt) : NULL;
            char key[32];
            snprintf(key, sizeof key, "loss_%s", rnames[r]);
            const lf_tensor *want = lf_get(&f, key);
            /* the fixtures' ignore_index may be a class: always flagged */
            const ct_loss_opts o = CT_LOSS_OPTS(.weight = w, .ignore_index = ignore, .has_ignore_index = true,
                                                .reduction = reductions[r], .label_smoothing = smoothing);
            ct_tensor *out = nll ? ct_nll_loss(in, tg, .weight = w, .ignore_index = ignore,
                                               .has_ignore_index = true, .reduction = reductions[r])
                                 : ct_cross_entropy_opts(in, tg, o);
            bool ok = CT_EXPECT_CLOSE(out, want->values, want->numel, rtol, atol);
            ct_tensor *g = reductions[r] == CT_REDUCTION_NONE ? lf_tensor_of(&f, "grad_out", dt)
                                                              : ct_scalar_tensor(1.0, .dtype = dt);
            ct_tensor *gi = NULL;
            ct_status st = nll ? cti_nll_loss_backward(g, in, tg, w, ignore, reductions[r], NULL, &gi)
                               : cti_cross_entropy_backward(g, in, tg, w, ignore, reductions[r],
                                                            smoothing, NULL, &gi, NULL);
            snprintf(key, sizeof key, "grad_%s", rnames[r]);
            want = lf_get(&f, key);
            ok &= st == CT_OK && CT_EXPECT_CLOSE(gi, want->values, want->numel, rtol, atol);
            if (!ok) fprintf(stderr, "  fixture %s, reduction %s, %s\n", name, rnames[r], ct_dtype_name(dt));
            ct_release(gi);
            ct_scope_end();
        }
    }
    lf_free(&f);
}

static void test_fixtures_class(void) {
    check_class_fixture("ce_weight_ignore_smooth");
    check_class_fixture("ce_default");
    check_class_fixture("ce_spatial");
    check_class_fixture("ce_unbatched");
    check_class_fixture("nll_weight_ignore");
}

static void test_fixture_prob(void) {
    lf_file f;
    if (!lf_load(__FILE__, "ce_prob", &f)) {
        CT_EXPECT_MSG(false, "cannot read fixture ce_prob");
        return;
    }
    double smoothing = lf_get(&f, "params")->values[0];
    static const char *const rnames[] = {"mean", "none", "sum"};
    for (int k = 0; k < 2; k++) {
        ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
        double rtol = k ? 1e-5 : 1e-10, atol = k ? 1e-6 : 1e-12;
        for (int r = 0; r < 3; r++) {
            ct_scope_begin();
            ct_tensor *in = lf_tensor_of(&f, "input", dt), *tg = lf_tensor_of(&f, "target", dt);
            ct_tensor *w = lf_tensor_of(&f, "weight", dt), *gi = NULL, *gt = NULL;
            char key[32];
            snprintf(key, sizeof key, "loss_%s", rnames[r]);
            const lf_tensor *want = lf_get(&f, key);
            ct_tensor *out = ct_cross_entropy(in, tg, .weight = w, .reduction = reductions[r], .label_smoothing = smoothing);
            CT_EXPECT_CLOSE(out, want->values, want->numel, rtol, atol);
            ct_tensor *g = reductions[r] == CT_REDUCTION_NONE ? lf_tensor_of(&f, "grad_out", dt)
                                                              : ct_scalar_tensor(1.0, .dtype = dt);
            CT_EXPECT(cti_cross_entropy_backward(g, in, tg, w, CT_IGNORE_INDEX_DEFAULT, reductions[r],
                                                 smoothing, NULL, &gi, &gt) == CT_OK);
            snprintf(key, sizeof key, "grad_%s", rnames[r]);
            want = lf_get(&f, key);
            CT_EXPECT_CLOSE(gi, want->values, want->numel, rtol, atol);
            snprintf(key, sizeof key, "grad_target_%s", rnames[r]);
            want = lf_get(&f, key);
            CT_EXPECT_CLOSE(gt, want->values, want->numel, rtol, atol);
            ct_release(gi);
            ct_release(gt);
            ct_scope_end();
        }
    }
    lf_free(&f);
}

/* ---- special values and shapes -------------------------------------------------------------- */

/* Logits far beyond exp's range: the fused kernel stays finite and exact. */
static void test_cross_entropy_huge_logits(void) {
    CT_SCOPE {
        double x[] = {1e4, 1e4 - 2.0, -1e4, 5e3, 5e3 + 1.0, 5e3 - 1.0};
        int64_t t[] = {1, 0};
        for (int k = 0; k < 2; k++) {
            ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
            ct_tensor *in = ct_test_tensor(x, CT_SHAPE(2, 3), dt);
            ct_tensor *tg = ct_tensor_from(t, CT_INT64, CT_SHAPE(2));
            ct_tensor *out = ct_cross_entropy(in, tg, .reduction = CT_REDUCTION_NONE);
            double l0 = 2.0 + log1p(exp(-2.0)), l1 = 1.0 + log(1.0 + exp(-1.0) + exp(-2.0));
            double want[] = {l0, l1};
            CT_EXPECT_CLOSE(out, want, 2, 1e-6, 1e-6);
            /* with smoothing the -1e4 logit contributes (2e4 + ...) / C, still finite */
            out = ct_cross_entropy(in, tg, .reduction = CT_REDUCTION_SUM, .label_smoothing = 0.1);
            CT_EXPECT(out && isfinite(ct_item(out)));
        }
    }
}

/* NaN in a row gives NaN for that row only; all-ignored MEAN is NaN (0/0),
 * SUM 0; an empty batch: MEAN NaN, SUM 0, NONE empty. */
static void test_cross_entropy_special_cases(void) {
    CT_SCOPE {
        double x[] = {0.5, NAN, 1.0, 0.1, 0.2, 0.3};
        int64_t t[] = {0, 2};
        ct_tensor *in = ct_test_tensor(x, CT_SHAPE(2, 3), CT_FLOAT32);
        ct_tensor *tg = ct_tensor_from(t, CT_INT64, CT_SHAPE(2));
        ct_tensor *out = ct_cross_entropy(in, tg, .reduction = CT_REDUCTION_NONE);
        CT_EXPECT(out && isnan(ct_get(out, (int64_t[]){0})) && isfinite(ct_get(out, (int64_t[]){1})));

        int64_t ign[] = {-100, -100};
        ct_tensor *all_ignored = ct_tensor_from(ign, CT_INT64, CT_SHAPE(2));
        ct_tensor *ok_in = ct_randn(CT_SHAPE(2, 3));
        CT_EXPECT(isnan(ct_item(ct_cross_entropy(ok_in, all_ignored))));
        CT_EXPECT(isnan(ct_item(ct_cross_entropy(ok_in, all_ignored, .label_smoothing = 0.2))));
        CT_EXPECT(ct_item(ct_cross_entropy(ok_in, all_ignored, .reduction = CT_REDUCTION_SUM,
                                           .label_smoothing = 0.2)) == 0.0);
        ct_tensor *gi = NULL;
        CT_EXPECT(cti_cross_entropy_backward(ct_scalar_tensor(1.0), ok_in, all_ignored, NULL, -100,
                                             CT_REDUCTION_SUM, 0.2, NULL, &gi, NULL) == CT_OK);
        CT_EXPECT_CLOSE(gi, ((double[]){0, 0, 0, 0, 0, 0}), 6, 0, 0);
        ct_release(gi);

        ct_tensor *empty = ct_zeros(CT_SHAPE(0, 4)), *no_t = ct_zeros(CT_SHAPE(0), .dtype = CT_INT64);
        CT_EXPECT(isnan(ct_item(ct_cross_entropy(empty, no_t))));
        CT_EXPECT(ct_item(ct_nll_loss(empty, no_t, .reduction = CT_REDUCTION_SUM)) == 0.0);
        CT_EXPECT_SHAPE(ct_cross_entropy(empty, no_t, .reduction = CT_REDUCTION_NONE), CT_SHAPE(0));
        CT_EXPECT(isnan(ct_item(ct_cross_entropy(empty, ct_zeros(CT_SHAPE(0, 4))))));
        /* no classes: probability targets give empty sums (0), MEAN NaN */
        ct_tensor *no_classes = ct_zeros(CT_SHAPE(3, 0));
        double zeros3[3] = {0, 0, 0};
        CT_EXPECT_CLOSE(ct_cross_entropy(no_classes, no_classes, .reduction = CT_REDUCTION_NONE),
                        zeros3, 3, 0, 0);
        CT_EXPECT(isnan(ct_item(ct_cross_entropy(no_classes, no_classes))));

        /* uint8 targets are accepted as indices; label_smoothing <= 0 is ignored */
        uint8_t t8[] = {2, 0};
        ct_tensor *tg8 = ct_tensor_from(t8, CT_UINT8, CT_SHAPE(2));
        double *xv = ct_test_values(ok_in), tv[2] = {2, 0}, want;
        ce_problem p = {.shape = CT_SHAPE(2, 3), .N = 2, .C = 3, .inner = 1, .ignore_index = -100,
                        .reduction = CT_REDUCTION_MEAN};
        ref_loss(&p, xv, tv, &want);
        CT_EXPECT_CLOSE(ct_cross_entropy(ok_in, tg8, .label_smoothing = -0.5), &want, 1, 1e-6, 1e-7);
        free(xv);
    }
}

/* total_weight from the forward is the denominator the backward reuses. */
static void test_total_weight(void) {
    CT_SCOPE {
        double x[12], w[] = {0.5, 2.0, 1.5, 1.0};
        ct_test_fill_uniform(x, 12, -2, 2);
        int64_t t[] = {3, 1, -100};
        ct_tensor *in = ct_test_tensor(x, CT_SHAPE(3, 4), CT_FLOAT64);
        ct_tensor *tg = ct_tensor_from(t, CT_INT64, CT_SHAPE(3));
        ct_tensor *wt = ct_test_tensor(w, CT_SHAPE(4), CT_FLOAT64), *total = NULL, *g1 = NULL, *g2 = NULL;
        ct_tensor *out = ct_track(cti_cross_entropy_forward(in, tg, wt, -100, CT_REDUCTION_MEAN, 0.1, &total));
        CT_EXPECT(out && total && ct_ndim(total) == 0);
        CT_EXPECT_NEAR(ct_item(total), 3.0, 1e-15);
        ct_tensor *g = ct_scalar_tensor(1.0, .dtype = CT_FLOAT64);
        CT_EXPECT(cti_cross_entropy_backward(g, in, tg, wt, -100, CT_REDUCTION_MEAN, 0.1, total, &g1, NULL) == CT_OK);
        CT_EXPECT(cti_cross_entropy_backward(g, in, tg, wt, -100, CT_REDUCTION_MEAN, 0.1, NULL, &g2, NULL) == CT_OK);
        double *v = ct_test_values(g2);
        CT_EXPECT_CLOSE(g1, v, 12, 1e-15, 1e-15);
        free(v);
        ct_release(total);
        ct_release(g1);
        ct_release(g2);
        /* probability targets have no total weight */
        ct_tensor *pt = ct_softmax(ct_randn(CT_SHAPE(3, 4), .dtype = CT_FLOAT64), 1);
        total = (ct_tensor *)1;
        ct_release(ct_track(cti_cross_entropy_forward(in, pt, NULL, -100, CT_REDUCTION_MEAN, 0.0, &total)));
        CT_EXPECT(total == NULL);
    }
}

/* ---- errors ------------------------------------------------------------------------------------ */

static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(3, 5));
        int64_t t3[] = {1, 2, 4}, t4[] = {1, 2, 4, 0}, t7[] = {1, 2, 7}, tneg[] = {1, -2, 3};
        ct_tensor *t = ct_tensor_from(t3, CT_INT64, CT_SHAPE(3));
        const ct_reduction M = CT_REDUCTION_MEAN;

        CT_EXPECT(!ct_cross_entropy(x, ct_tensor_from(t4, CT_INT64, CT_SHAPE(4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "cross_entropy: Expected input batch_size (3) to match target batch_size (4).");
        CT_EXPECT(!ct_cross_entropy(x, ct_tensor_from(t7, CT_INT64, CT_SHAPE(3))));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Target 7 is out of bounds.");
        CT_EXPECT(!ct_nll_loss(x, ct_tensor_from(tneg, CT_INT64, CT_SHAPE(3))));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "nll_loss: Target -2 is out of bounds.");
        CT_EXPECT(!ct_cross_entropy(x, ct_to_dtype(t, CT_INT32)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected scalar type Long but found Int");
        CT_EXPECT(!ct_cross_entropy(x, ct_to_dtype(t, CT_FLOAT32)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected scalar type Long but found Float");
        CT_EXPECT(!ct_cross_entropy(x, t, .weight = ct_ones(CT_SHAPE(4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "weight tensor should be defined either for all 5 classes or no "
                                      "classes but got weight tensor of shape: [4]");
        CT_EXPECT(!ct_nll_loss(x, t, .weight = ct_ones(CT_SHAPE(5), .dtype = CT_FLOAT64)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected scalar type Float but found Double");
        CT_EXPECT(!ct_cross_entropy(x, t, .label_smoothing = 1.5));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
        CT_EXPECT(!ct_cross_entropy(x, ct_rand(CT_SHAPE(3, 5)), .ignore_index = 2));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ignore_index is not supported for floating point target");
        CT_EXPECT(!ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 5), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Expected floating point type for target with class probabilities, got Long");
        CT_EXPECT(!ct_cross_entropy(x, ct_rand(CT_SHAPE(3, 5)), .weight = ct_ones(CT_SHAPE(4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "cross_entropy: weight tensor should be defined either for all 5 classes");
        CT_EXPECT(!ct_cross_entropy(ct_to_dtype(x, CT_INT64), t));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"log_softmax\" not implemented for 'Long'");
        CT_EXPECT(!ct_cross_entropy(ct_randn(CT_SHAPE(5)), ct_tensor_from(t3, CT_INT64, CT_SHAPE(1))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "size mismatch (got input: [5], target: [1])");
        CT_EXPECT(!ct_cross_entropy(x, ct_zeros(CT_SHAPE(3, 1), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "0D or 1D target tensor expected, multi-target not supported");
        ct_tensor *x4 = ct_randn(CT_SHAPE(2, 5, 3, 4));
        CT_EXPECT(!ct_cross_entropy(x4, ct_zeros(CT_SHAPE(2, 3), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "only batches of spatial targets supported (3D tensors) but got "
                                      "targets of dimension: 2");
        CT_EXPECT(!ct_cross_entropy(x4, ct_zeros(CT_SHAPE(2, 3, 3), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "size mismatch (got input: [2, 5, 3, 4], target: [2, 3, 3])");
        CT_EXPECT(!ct_cross_entropy(ct_randn(CT_SHAPE(2, 5, 3)), ct_zeros(CT_SHAPE(2, 4), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected target size [2, 3], got [2, 4]");
        CT_EXPECT(!ct_nll_loss(ct_scalar_tensor(1.0), ct_zeros(CT_SHAPE(1), .dtype = CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "nll_loss: Expected 1 or more dimensions (got 0)");
        CT_EXPECT(!ct_cross_entropy(x, t, .reduction = (ct_reduction)7));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "cross_entropy: 7 is not a valid value for reduction");

        /* NULL propagates without a new error */
        CT_EXPECT(!ct_cross_entropy(NULL, t) && ct_last_status() == CT_OK);
        CT_EXPECT(!ct_nll_loss(x, NULL) && ct_last_status() == CT_OK);
        /* the backward checks grad_output's shape */
        ct_tensor *gi = NULL;
        CT_EXPECT(cti_cross_entropy_backward(ct_ones(CT_SHAPE(2)), x, t, NULL, -100, M, 0, NULL, &gi,
                                             NULL) == CT_ERR_SHAPE && !gi);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "cross_entropy_backward: grad_output of shape [2], expected one element");
        CT_EXPECT(cti_nll_loss_backward(ct_ones(CT_SHAPE(4)), x, t, NULL, -100, CT_REDUCTION_NONE, NULL,
                                        &gi) == CT_ERR_SHAPE && !gi);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "nll_loss_backward: grad_output of shape [4], expected [3]");
    }
}

/* A [3, 5] weighted, smoothed MEAN cross-entropy with row 1 ignored, at
 * the float32 values x: the reference loss and its gradient. */
static void device_chain_reference(const double *x, const int64_t *t, const double *w, double *loss,
                                   double **grad) {
    double target[3] = {(double)t[0], (double)t[1], (double)t[2]}, gout = 1.0;
    ce_problem p = {.shape = CT_SHAPE(3, 5), .N = 3, .C = 5, .inner = 1, .weighted = true, .ignore_index = -100,
                    .smoothing = 0.1, .reduction = CT_REDUCTION_MEAN, .x = (double *)x, .target = target,
                    .w = (double *)w, .gout = &gout};
    ref_loss(&p, x, target, loss);
    *grad = finite_differences(&p, false);
}

/* On an OpenCL device: the out-of-range target is reported (the device
 * kernel raises a flag the host reads), empty class dims, and a
 * forward/backward chain that reuses the device-side total weight,
 * against the plain-C reference. (The cross-backend harness compares
 * every variant with the CPU.) */
static void check_opencl(ct_device dev) {
    CT_SCOPE {
        int64_t t7[] = {1, 2, 7};
        ct_tensor *x = ct_randn(CT_SHAPE(3, 5), .device = dev);
        ct_tensor *bad = ct_to_device(ct_tensor_from(t7, CT_INT64, CT_SHAPE(3)), dev);
        CT_EXPECT(!ct_cross_entropy(x, bad));
        CT_EXPECT_ERROR(CT_ERR_INDEX, "cross_entropy: Target 7 is out of bounds.");
        ct_tensor *no_classes = ct_zeros(CT_SHAPE(3, 0), .device = dev);
        double zeros3[3] = {0, 0, 0};
        CT_EXPECT_CLOSE(ct_cross_entropy(no_classes, no_classes, .reduction = CT_REDUCTION_NONE),
                        zeros3, 3, 0, 0);

        int64_t t[] = {1, -100, 4};
        double w[] = {1.0, 0.5, 2.0, 1.5, 3.0}, want_loss, *want_grad, *xv = ct_test_values(x);
        device_chain_reference(xv, t, w, &want_loss, &want_grad);
        ct_tensor *tc = ct_to_device(ct_tensor_from(t, CT_INT64, CT_SHAPE(3)), dev);
        ct_tensor *wc = ct_to_device(ct_test_tensor(w, CT_SHAPE(5), CT_FLOAT32), dev), *total = NULL, *gi = NULL;
        ct_tensor *out = ct_track(cti_cross_entropy_forward(x, tc, wc, -100, CT_REDUCTION_MEAN, 0.1, &total));
        CT_EXPECT(out && ct_device_equal(ct_device_of(out), dev) && ct_device_equal(ct_device_of(total), dev));
        CT_EXPECT_CLOSE(out, &want_loss, 1, 1e-6, 1e-7);
        CT_EXPECT(cti_cross_entropy_backward(ct_scalar_tensor(1.0, .device = dev), x, tc, wc, -100,
                                             CT_REDUCTION_MEAN, 0.1, total, &gi, NULL) == CT_OK);
        CT_EXPECT_CLOSE(gi, want_grad, 15, 1e-5, 1e-7);
        free(xv);
        free(want_grad);
        ct_release(total);
        ct_release(gi);
    }
}

static void test_opencl(void) {
    int ndev = ct_test_opencl_devices("cross_entropy on OpenCL");
    for (int i = 0; i < ndev; i++) check_opencl(ct_device_opencl(i));
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_cross_entropy_class_targets);
    CT_RUN(test_cross_entropy_prob_targets);
    CT_RUN(test_nll_loss);
    CT_RUN(test_fixtures_class);
    CT_RUN(test_fixture_prob);
    CT_RUN(test_cross_entropy_huge_logits);
    CT_RUN(test_cross_entropy_special_cases);
    CT_RUN(test_total_weight);
    CT_RUN(test_errors);
    CT_RUN(test_opencl);
    return ct_test_finish();
}
