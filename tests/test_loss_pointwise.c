/*
 * test_loss_pointwise.c — mse_loss and binary_cross_entropy_with_logits:
 * forward against float64 references written here, at broadcasting shapes
 * (mse's target; bce's weight and pos_weight), contiguous and not, in every
 * floating dtype and reduction; gradients w.r.t. input and target
 * (cti_*_backward, summed back over broadcast dims) against central finite
 * differences; logits far outside exp's range; PyTorch fixtures; errors.
 */
#include <stdlib.h>

#include "ctorch/functional_loss.h"
#include "loss_fixture.h"
#include "ops/loss.h"
#include "testutil.h"

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
static const ct_reduction reductions[] = {CT_REDUCTION_MEAN, CT_REDUCTION_NONE, CT_REDUCTION_SUM};

/* Operands: 0 input, 1 target, 2 weight, 3 pos_weight (ndim < 0: absent). */
typedef struct pw_problem {
    bool bce;
    ct_reduction reduction;
    ct_shape s[4];
    ct_shape out; /* the broadcast shape */
    double *v[4];
    double *gout;
} pw_problem;

static int64_t numel(ct_shape s) {
    int64_t n = 1;
    for (int d = 0; d < s.ndim; d++) n *= s.dims[d];
    return n;
}

/* The flat index in an operand of shape s of flat index i of shape out. */
static int64_t bcast_index(ct_shape out, ct_shape s, int64_t i) {
    int64_t idx = 0, stride = 1;
    for (int d = out.ndim - 1; d >= 0; d--) {
        int64_t pos = i % out.dims[d];
        i /= out.dims[d];
        int sd = d - (out.ndim - s.ndim);
        if (sd < 0) continue;
        if (s.dims[sd] != 1) idx += pos * stride;
        stride *= s.dims[sd];
    }
    return idx;
}

static ct_shape bcast(ct_shape a, ct_shape b) {
    ct_shape o = a.ndim >= b.ndim ? a : b;
    for (int d = 0; d < o.ndim; d++) {
        int da = d - (o.ndim - a.ndim), db = d - (o.ndim - b.ndim);
        int64_t x = da >= 0 ? a.dims[da] : 1, y = db >= 0 ? b.dims[db] : 1;
        o.dims[d] = x == 1 ? y : x;
    }
    return o;
}

static void problem_init(pw_problem *p) {
    p->out = p->bce ? p->s[0] : bcast(p->s[0], p->s[1]);
    static const double lo[] = {-3, 0, 0.2, 0.5}, hi[] = {3, 1, 2, 3};
    for (int k = 0; k < 4; k++) {
        p->v[k] = NULL;
        if (p->s[k].ndim < 0) continue;
        int64_t n = numel(p->s[k]);
        p->v[k] = malloc(sizeof(double) * (size_t)(n + 1));
        ct_test_fill_uniform(p->v[k], n, p->bce ? lo[k] : -2, p->bce ? hi[k] : 2);
    }
    int64_t n = numel(p->out);
    p->gout = malloc(sizeof(double) * (size_t)(n + 1));
    ct_test_fill_uniform(p->gout, n, -1.5, 1.5);
}

static void problem_free(pw_problem *p) {
    for (int k = 0; k < 4; k++) free(p->v[k]);
    free(p->gout);
}

static double log_sigmoid(double x) { return (x < 0 ? x : 0) - log1p(exp(-fabs(x))); }

/* The loss at operand values v (rows for NONE, else one value). */
static void ref_loss(const pw_problem *p, double *const *v, double *out) {
    int64_t n = numel(p->out);
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = v[0][bcast_index(p->out, p->s[0], i)], t = v[1][bcast_index(p->out, p->s[1], i)];
        double l;
        if (!p->bce) {
            l = (x - t) * (x - t);
        } else {
            double w = v[2] ? v[2][bcast_index(p->out, p->s[2], i)] : 1;
            double pw = v[3] ? v[3][bcast_index(p->out, p->s[3], i)] : 1;
            l = ((1 - t) * x - (1 + (pw - 1) * t) * log_sigmoid(x)) * w;
        }
        if (p->reduction == CT_REDUCTION_NONE) out[i] = l;
        total += l;
    }
    if (p->reduction == CT_REDUCTION_SUM) out[0] = total;
    if (p->reduction == CT_REDUCTION_MEAN) out[0] = total / (double)n;
}

static ct_tensor *operand(const pw_problem *p, double *const *v, int k, ct_dtype dt, bool noncontig) {
    if (p->s[k].ndim < 0) return NULL;
    return noncontig && p->s[k].ndim >= 2 ? ct_test_noncontiguous(v[k], p->s[k], dt)
                                          : ct_test_tensor(v[k], p->s[k], dt);
}

static ct_tensor *call(const pw_problem *p, double *const *v, ct_dtype dt, bool noncontig) {
    ct_tensor *x = operand(p, v, 0, dt, noncontig), *t = operand(p, v, 1, dt, noncontig);
    if (!p->bce) return ct_mse_loss(x, t, .reduction = p->reduction);
    return ct_binary_cross_entropy_with_logits(x, t, .weight = operand(p, v, 2, dt, noncontig),
                                               .pos_weight = operand(p, v, 3, dt, noncontig),
                                               .reduction = p->reduction);
}

static ct_shape result_shape(const pw_problem *p) {
    return p->reduction == CT_REDUCTION_NONE ? p->out : CT_SHAPE0;
}

static void describe(const pw_problem *p, ct_dtype dt) {
    fprintf(stderr, "  %s, reduction %d, %s, shapes:", p->bce ? "bce_with_logits" : "mse_loss",
            (int)p->reduction, ct_dtype_name(dt));
    for (int k = 0; k < 4; k++) {
        if (p->s[k].ndim < 0) continue;
        fprintf(stderr, " [");
        for (int d = 0; d < p->s[k].ndim; d++) fprintf(stderr, d ? ", %lld" : "%lld", (long long)p->s[k].dims[d]);
        fprintf(stderr, "]");
    }
    fprintf(stderr, "\n");
}

/* p with every operand and grad_output rounded as dt stores them (new
 * arrays; free with problem_free). */
static pw_problem rounded_problem(const pw_problem *p, ct_dtype dt) {
    pw_problem q = *p;
    for (int k = 0; k < 4; k++) {
        q.v[k] = NULL;
        if (!p->v[k]) continue;
        int64_t n = numel(p->s[k]);
        q.v[k] = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) q.v[k][i] = ct_test_round_to(dt, p->v[k][i]);
    }
    int64_t n = numel(p->out);
    q.gout = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) q.gout[i] = ct_test_round_to(dt, p->gout[i]);
    return q;
}

static void check_forward(const pw_problem *p, ct_dtype dt, bool noncontig) {
    ct_scope_begin();
    pw_problem q = rounded_problem(p, dt); /* the values as stored in dt */
    double *const *vals = q.v;
    int64_t n = p->reduction == CT_REDUCTION_NONE ? numel(p->out) : 1;
    double *want = malloc(sizeof(double) * (size_t)(n + 1)), rtol, atol;
    ref_loss(p, vals, want);
    ct_tensor *out = call(p, p->v, dt, noncontig);
    ct_test_tolerances(dt, &rtol, &atol);
    bool ok = CT_EXPECT_SHAPE(out, result_shape(p)) && ct_dtype_of(out) == dt &&
              CT_EXPECT_CLOSE(out, want, n, 4 * rtol, 4 * atol);
    if (!ok) describe(p, dt);
    free(want);
    problem_free(&q);
    ct_scope_end();
}

/* sum_i gout_i * loss_i from the plain-C reference, so that the gradients'
 * oracle does not run the forward code under test. */
static double objective(const pw_problem *p, double *const *v) {
    int64_t n = p->reduction == CT_REDUCTION_NONE ? numel(p->out) : 1;
    double *vals = malloc(sizeof(double) * (size_t)(n + 1)), s = 0;
    ref_loss(p, v, vals);
    for (int64_t i = 0; i < n; i++) s += p->gout[i] * vals[i];
    free(vals);
    return s;
}

static double *finite_differences(const pw_problem *p, int k) {
    int64_t n = numel(p->s[k]);
    double *g = malloc(sizeof(double) * (size_t)(n + 1)), h = 1e-6;
    double *v[4] = {p->v[0], p->v[1], p->v[2], p->v[3]};
    for (int64_t i = 0; i < n; i++) {
        double keep = v[k][i];
        v[k][i] = keep + h;
        double up = objective(p, v);
        v[k][i] = keep - h;
        g[i] = (up - objective(p, v)) / (2 * h);
        v[k][i] = keep;
    }
    return g;
}

static ct_status call_backward(const pw_problem *p, ct_dtype dt, ct_tensor **gi, ct_tensor **gt) {
    ct_tensor *x = operand(p, p->v, 0, dt, true), *t = operand(p, p->v, 1, dt, true);
    ct_tensor *g = ct_test_tensor(p->gout, result_shape(p), dt);
    if (!p->bce) return cti_mse_loss_backward(g, x, t, p->reduction, gi, gt);
    return cti_bce_with_logits_backward(g, x, t, operand(p, p->v, 2, dt, true),
                                        operand(p, p->v, 3, dt, true), p->reduction, gi, gt);
}

/* The size of the terms a gradient element of operand k adds up: for each
 * element j, the sum over outputs i of |d(c_i l_i)/dv_j| (c_i the factor
 * grad_output and the reduction give loss i); the largest over j. Where
 * terms cancel, the arithmetic's error is relative to this, not to the
 * (small) gradient. */
static double term_scale(const pw_problem *p, int k) {
    pw_problem none = *p;
    none.reduction = CT_REDUCTION_NONE;
    int64_t n = numel(p->s[k]), nout = numel(p->out);
    double *up = malloc(sizeof(double) * (size_t)(nout + 1)), *down = malloc(sizeof(double) * (size_t)(nout + 1));
    double *v[4] = {p->v[0], p->v[1], p->v[2], p->v[3]}, h = 1e-6, worst = 0;
    for (int64_t j = 0; j < n; j++) {
        double keep = v[k][j], sum = 0;
        v[k][j] = keep + h;
        ref_loss(&none, v, up);
        v[k][j] = keep - h;
        ref_loss(&none, v, down);
        v[k][j] = keep;
        for (int64_t i = 0; i < nout; i++) {
            double c = p->reduction == CT_REDUCTION_NONE ? p->gout[i]
                       : p->gout[0] / (p->reduction == CT_REDUCTION_MEAN ? (double)nout : 1.0);
            sum += fabs(c * (up[i] - down[i]) / (2 * h));
        }
        worst = fmax(worst, sum);
    }
    free(up);
    free(down);
    return worst;
}

/* The gradients in a lower-precision dtype (w.r.t. the target too for
 * float32) against the float64 gradient of the same stored values: what is
 * left is the rounding of the result to the dtype and float32 arithmetic
 * on the terms each element sums (ct_test_rounding_tolerances). */
static bool check_backward_lowp(const pw_problem *p, ct_dtype dt) {
    pw_problem q = rounded_problem(p, dt);
    ct_tensor *h[2] = {NULL, NULL};
    bool both = dt == CT_FLOAT32, ok = true;
    CT_EXPECT(call_backward(p, dt, &h[0], both ? &h[1] : NULL) == CT_OK);
    CT_EXPECT(both || !h[1]);
    for (int k = 0; k < (both ? 2 : 1); k++) {
        int64_t n = numel(p->s[k]);
        double *ref = finite_differences(&q, k), scale = term_scale(&q, k), rtol, atol;
        ct_test_rounding_tolerances(dt, scale, &rtol, &atol);
        if (!CT_EXPECT_CLOSE(h[k], ref, n, rtol, atol)) {
            fprintf(stderr, "  (%s gradient w.r.t. operand %d; terms up to %g)\n", ct_dtype_name(dt), k, scale);
            ok = false;
        }
        free(ref);
    }
    ct_release(h[0]);
    ct_release(h[1]);
    problem_free(&q);
    return ok;
}

static void check_backward(const pw_problem *p) {
    ct_scope_begin();
    ct_tensor *g[2] = {NULL, NULL};
    CT_EXPECT(call_backward(p, CT_FLOAT64, &g[0], &g[1]) == CT_OK);
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        double *fd = finite_differences(p, k);
        ok &= CT_EXPECT_SHAPE(g[k], p->s[k]) && CT_EXPECT_CLOSE(g[k], fd, numel(p->s[k]), 1e-6, 1e-8);
        free(fd);
    }
    for (int d = 0; d < 4 && ok; d++)
        if (float_types[d] != CT_FLOAT64) ok &= check_backward_lowp(p, float_types[d]);
    if (!ok) describe(p, CT_FLOAT64);
    ct_release(g[0]);
    ct_release(g[1]);
    ct_scope_end();
}

static void run_problem(pw_problem *p) {
    for (int r = 0; r < 3; r++) {
        p->reduction = reductions[r];
        problem_init(p);
        for (int k = 0; k < 4; k++) check_forward(p, float_types[k], k % 2 == 1);
        check_backward(p);
        problem_free(p);
    }
}

#define NONE_SHAPE ((ct_shape){.ndim = -1})

static void test_mse_loss(void) {
    const ct_shape pairs[][2] = {
        {CT_SHAPE(3, 4), CT_SHAPE(3, 4)}, {CT_SHAPE(3, 4), CT_SHAPE(4)},
        {CT_SHAPE(2, 1, 3), CT_SHAPE(4, 1)}, {CT_SHAPE(5), CT_SHAPE0},
        {CT_SHAPE0, CT_SHAPE0}, {CT_SHAPE(1, 4), CT_SHAPE(3, 1)},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        pw_problem p = {.bce = false, .s = {pairs[i][0], pairs[i][1], NONE_SHAPE, NONE_SHAPE}};
        run_problem(&p);
    }
}

static void test_bce_with_logits(void) {
    const ct_shape cases[][3] = { /* input (= target), weight, pos_weight */
        {CT_SHAPE(3, 4), NONE_SHAPE, NONE_SHAPE},  {CT_SHAPE(3, 4), CT_SHAPE(4), NONE_SHAPE},
        {CT_SHAPE(3, 4), NONE_SHAPE, CT_SHAPE(4)}, {CT_SHAPE(3, 4), CT_SHAPE(3, 1), CT_SHAPE(4)},
        {CT_SHAPE(2, 3, 2), CT_SHAPE(2, 3, 2), CT_SHAPE0}, {CT_SHAPE0, CT_SHAPE0, CT_SHAPE0},
        {CT_SHAPE(7), NONE_SHAPE, CT_SHAPE(1)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pw_problem p = {.bce = true, .s = {cases[i][0], cases[i][0], cases[i][1], cases[i][2]}};
        run_problem(&p);
    }
}

/* Logits far outside exp's range: finite, and exact (the stable form). */
static void test_bce_extreme_logits(void) {
    CT_SCOPE {
        double x[] = {100, -100, 1e4, -1e4, 0}, t[] = {0, 1, 0.5, 0.25, 1};
        for (int k = 0; k < 2; k++) {
            ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
            ct_tensor *in = ct_test_tensor(x, CT_SHAPE(5), dt), *tg = ct_test_tensor(t, CT_SHAPE(5), dt);
            ct_tensor *out = ct_binary_cross_entropy_with_logits(in, tg, .reduction = CT_REDUCTION_NONE);
            double want[] = {100, 100, 5e3, 2.5e3, log(2.0)};
            CT_EXPECT_CLOSE(out, want, 5, 1e-6, 1e-6);
            ct_tensor *gi = NULL, *gt = NULL;
            CT_EXPECT(cti_bce_with_logits_backward(ct_ones(CT_SHAPE(5), .dtype = dt), in, tg, NULL, NULL,
                                                   CT_REDUCTION_NONE, &gi, &gt) == CT_OK);
            double want_gi[] = {1, -1, 0.5, -0.25, -0.5}, want_gt[] = {-100, 100, -1e4, 1e4, 0};
            CT_EXPECT_CLOSE(gi, want_gi, 5, 1e-6, 1e-6);
            CT_EXPECT_CLOSE(gt, want_gt, 5, 1e-6, 1e-6);
            ct_release(gi);
            ct_release(gt);
        }
    }
}

/* Empty inputs: MEAN is NaN (mean of nothing), SUM 0, NONE empty. */
static void test_empty(void) {
    CT_SCOPE {
        ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
        CT_EXPECT(isnan(ct_item(ct_mse_loss(e, e))));
        CT_EXPECT(ct_item(ct_binary_cross_entropy_with_logits(e, e, .reduction = CT_REDUCTION_SUM)) == 0);
        CT_EXPECT_SHAPE(ct_mse_loss(e, e, .reduction = CT_REDUCTION_NONE), CT_SHAPE(0, 3));
        ct_tensor *gi = NULL;
        CT_EXPECT(cti_mse_loss_backward(ct_scalar_tensor(1.0), e, e, CT_REDUCTION_MEAN, &gi, NULL) == CT_OK);
        CT_EXPECT_SHAPE(gi, CT_SHAPE(0, 3));
        ct_release(gi);
    }
}

static void check_fixture(const char *name, bool bce) {
    lf_file f;
    if (!lf_load(__FILE__, name, &f)) {
        CT_EXPECT_MSG(false, "cannot read fixture %s (run tools/gen_fixtures_loss.py)", name);
        return;
    }
    static const char *const rnames[] = {"mean", "none", "sum"};
    for (int k = 0; k < 2; k++) {
        ct_dtype dt = k ? CT_FLOAT32 : CT_FLOAT64;
        double rtol = k ? 1e-5 : 1e-10, atol = k ? 1e-6 : 1e-12;
        for (int r = 0; r < 3; r++) {
            ct_scope_begin();
            ct_tensor *x = lf_tensor_of(&f, "input", dt), *t = lf_tensor_of(&f, "target", dt);
            ct_tensor *w = bce ? lf_tensor_of(&f, "weight", dt) : NULL;
            ct_tensor *pw = bce ? lf_tensor_of(&f, "pos_weight", dt) : NULL, *gi = NULL, *gt = NULL;
            ct_tensor *g = reductions[r] == CT_REDUCTION_NONE ? lf_tensor_of(&f, "grad_out", dt)
                                                              : ct_scalar_tensor(1.0, .dtype = dt);
            ct_tensor *out = bce ? ct_binary_cross_entropy_with_logits(x, t, .weight = w, .pos_weight = pw,
                                                                       .reduction = reductions[r])
                                 : ct_mse_loss(x, t, .reduction = reductions[r]);
            ct_status st = bce ? cti_bce_with_logits_backward(g, x, t, w, pw, reductions[r], &gi, &gt)
                               : cti_mse_loss_backward(g, x, t, reductions[r], &gi, &gt);
            CT_EXPECT(st == CT_OK);
            const char *keys[] = {"loss_%s", "grad_%s", "grad_target_%s"};
            ct_tensor *got[] = {out, gi, gt};
            for (int j = 0; j < 3; j++) {
                char key[32];
                snprintf(key, sizeof key, keys[j], rnames[r]);
                const lf_tensor *want = lf_get(&f, key);
                if (!CT_EXPECT_CLOSE(got[j], want->values, want->numel, rtol, atol))
                    fprintf(stderr, "  fixture %s: %s, %s\n", name, key, ct_dtype_name(dt));
            }
            ct_release(gi);
            ct_release(gt);
            ct_scope_end();
        }
    }
    lf_free(&f);
}

static void test_fixtures(void) {
    check_fixture("bce_logits", true);
    check_fixture("mse_broadcast", false);
}

static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(3, 5)), *t = ct_rand(CT_SHAPE(3, 5));
        CT_EXPECT(!ct_mse_loss(ct_to_dtype(x, CT_INT64), ct_to_dtype(t, CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "mse_loss: \"mse\" not implemented for 'Long'");
        CT_EXPECT(!ct_mse_loss(x, ct_rand(CT_SHAPE(4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "The size of tensor a (5) must match the size of tensor b (4) at "
                                      "non-singleton dimension 1");
        CT_EXPECT(!ct_mse_loss(x, t, .reduction = (ct_reduction)3));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "mse_loss: 3 is not a valid value for reduction");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(x, ct_rand(CT_SHAPE(3, 4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "binary_cross_entropy_with_logits: Target size ([3, 4]) must be "
                                      "the same as input size ([3, 5])");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(x, t, .weight = ct_rand(CT_SHAPE(2, 3, 5))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "output with shape [3, 5] doesn't match the broadcast shape [2, 3, 5]");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(x, t, .pos_weight = ct_rand(CT_SHAPE(4))));
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "must match the size of tensor b (4) at non-singleton dimension 1");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(x, ct_to_dtype(t, CT_INT64)));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "result type Float can't be cast to the desired output type Long");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(ct_to_dtype(x, CT_INT64), t));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"log_sigmoid_forward\" not implemented for 'Long'");
        CT_EXPECT(!ct_mse_loss(NULL, t) && ct_last_status() == CT_OK);
        ct_tensor *gi = (ct_tensor *)1;
        CT_EXPECT(cti_mse_loss_backward(ct_ones(CT_SHAPE(3)), x, t, CT_REDUCTION_NONE, &gi, NULL) ==
                      CT_ERR_SHAPE && gi == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "mse_loss_backward: grad_output of shape [3], expected [3, 5]");
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_mse_loss);
    CT_RUN(test_bce_with_logits);
    CT_RUN(test_bce_extreme_logits);
    CT_RUN(test_empty);
    CT_RUN(test_fixtures);
    CT_RUN(test_errors);
    return ct_test_finish();
}
