/*
 * test_gradcheck.c — ct_gradcheck is the oracle every gradient test relies
 * on, so it is tested against backward rules known to be wrong: ops defined
 * here through autograd's internal recording hooks (cta_record, cta_save),
 * each with a correct rule and deliberately wrong ones — a gradient 1% too
 * large, one element 1% off, one output's contribution 1% off (invisible
 * in a single random projection of a long output), a broadcast input whose
 * gradient is not summed back or sums only one row, a missing gradient, a
 * gradient for an input the output does not use. Each wrong rule must make
 * gradcheck report failure (naming what is wrong); each correct rule must
 * pass, both for short outputs (full Jacobian) and long ones (random
 * projections). Also: gradcheck leaves its inputs bitwise unchanged.
 */
#include <stdlib.h>

#include "autograd/autograd.h"
#include "testutil.h"

typedef enum rule {
    RULE_RIGHT,
    RULE_SCALED,      /* every element 1% too large */
    RULE_ONE_ELEMENT, /* element 3 of the gradient 1% off */
    RULE_ONE_OUTPUT,  /* output 7's contribution 1% off */
    RULE_NO_REDUCE,   /* broadcast input: gradient left in the output's shape */
    RULE_FIRST_ROW,   /* broadcast input: only the first row summed */
    RULE_MISSING,     /* no gradient at all */
    RULE_UNUSED_GRAD  /* a gradient for an input the output ignores */
} rule;

/* ---- host helpers for the backward rules -------------------------------------------- */

static double *host_values(const ct_tensor *t) {
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (v && ct_copy_to_host(t, v, CT_FLOAT64, n) != CT_OK) {
        free(v);
        return NULL;
    }
    return v;
}

/* An untracked CPU float64 tensor of the given shape holding vals, as a
 * backward rule must return. */
static ct_tensor *host_tensor(const double *vals, const int64_t *shape, int ndim) {
    ct_tensor *t = cti_empty(shape, ndim, CT_FLOAT64, ct_device_cpu());
    if (t && ct_copy_from_host(t, vals, CT_FLOAT64, ct_numel(t)) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return t;
}

/* The recorded result of a custom op: untracked out becomes the node's
 * output when grad mode and the inputs ask for it; returned tracked. */
static ct_tensor *finish(ct_tensor *out, const char *name, ct_backward_fn fn, const ct_tensor *const *in, int n,
                         rule r, const ct_tensor *save0, const ct_tensor *save1) {
    if (!out || !cta_needs_grad(in, n)) return ct_track(out);
    ct_node *node = cta_record(out, name, fn, in, n);
    if (!node) return NULL;
    node->op = (int)r;
    if ((save0 && cta_save(node, 0, save0) != CT_OK) || (save1 && cta_save(node, 1, save1) != CT_OK)) {
        ct_decref(out);
        return NULL;
    }
    return ct_track(out);
}

/* ---- square: y = x², dy/dx = 2x ---------------------------------------------------- */

static ct_status square_backward(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *x = cta_saved(n, 0);
    if (!x) return ct_last_status();
    if (n->op == RULE_MISSING) return CT_OK;
    double *xv = host_values(x), *gv = host_values(grad_out);
    int64_t k = ct_numel(x);
    for (int64_t i = 0; xv && gv && i < k; i++) {
        xv[i] = 2 * xv[i] * gv[i];
        if (n->op == RULE_SCALED || (n->op == RULE_ONE_ELEMENT && i == 3)) xv[i] *= 1.01;
    }
    grad_in[0] = xv && gv ? host_tensor(xv, x->shape, x->ndim) : NULL;
    free(xv);
    free(gv);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_tensor *square_fn(ct_tensor *const *in, int n, void *user) {
    (void)n;
    ct_tensor *out = cti_binary(CT_BIN_MUL, in[0], in[0], 1.0);
    return finish(out, "SquareBackward", square_backward, (const ct_tensor *const *)in, 1, *(rule *)user, in[0], NULL);
}

/* ---- y = a * b with b (3) broadcast over a (2, 3) --------------------------------------- */

static ct_status mul_backward(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const ct_tensor *a = cta_saved(n, 0), *b = cta_saved(n, 1);
    if (!a || !b) return ct_last_status();
    double *av = host_values(a), *bv = host_values(b), *gv = host_values(grad_out), ga[6], gb[6] = {0};
    if (!av || !bv || !gv) {
        free(av), free(bv), free(gv);
        return ct_error_set(CT_ERR_OOM, "mul_backward: cannot read values");
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            ga[i * 3 + j] = gv[i * 3 + j] * bv[j];
            double term = gv[i * 3 + j] * av[i * 3 + j];
            if (n->op == RULE_NO_REDUCE) gb[i * 3 + j] = term;
            else if (n->op != RULE_FIRST_ROW || i == 0) gb[j] += term;
        }
    grad_in[0] = host_tensor(ga, a->shape, a->ndim);
    grad_in[1] = n->op == RULE_NO_REDUCE ? host_tensor(gb, a->shape, a->ndim) : host_tensor(gb, b->shape, b->ndim);
    free(av), free(bv), free(gv);
    return grad_in[0] && grad_in[1] ? CT_OK : ct_last_status();
}

static ct_tensor *mul_fn(ct_tensor *const *in, int n, void *user) {
    (void)n;
    ct_tensor *out = cti_binary(CT_BIN_MUL, in[0], in[1], 1.0);
    return finish(out, "MulBroadcastBackward", mul_backward, (const ct_tensor *const *)in, 2, *(rule *)user, in[0],
                  in[1]);
}

/* ---- fan-out: y_o = c_o x for one x and m outputs, c_o = (o + 1) / m ------------------- */

typedef struct fan_case {
    rule r;
    int64_t m;
} fan_case;

static ct_status fan_backward(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in) {
    int64_t m = n->iv[0];
    double *gv = host_values(grad_out), sum = 0;
    if (!gv) return ct_error_set(CT_ERR_OOM, "fan_backward: cannot read grad_out");
    for (int64_t o = 0; o < m; o++) {
        double term = gv[o] * (double)(o + 1) / (double)m;
        if (n->op == RULE_ONE_OUTPUT && o == 7) term *= 1.01;
        sum += term;
    }
    if (n->op == RULE_SCALED) sum *= 1.01;
    free(gv);
    grad_in[0] = host_tensor(&sum, (int64_t[]){1}, 1);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_tensor *fan_fn(ct_tensor *const *in, int n, void *user) {
    (void)n;
    const fan_case *fc = user;
    double *c = malloc(sizeof(double) * (size_t)fc->m);
    for (int64_t o = 0; o < fc->m; o++) c[o] = (double)(o + 1) / (double)fc->m;
    ct_tensor *ct = host_tensor(c, &fc->m, 1);
    free(c);
    ct_tensor *out = ct ? cti_binary(CT_BIN_MUL, in[0], ct, 1.0) : NULL;
    ct_decref(ct);
    ct_tensor *y = finish(out, "FanOutBackward", fan_backward, (const ct_tensor *const *)in, 1, fc->r, NULL, NULL);
    if (y && y->grad_fn) ((ct_node *)y->grad_fn)->iv[0] = fc->m, ((ct_node *)y->grad_fn)->niv = 1;
    return y;
}

/* ---- y = 2 x0, with x1 recorded as an input it does not use ----------------------------- */

static ct_status unused_backward(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in) {
    double *gv = host_values(grad_out);
    if (!gv) return ct_error_set(CT_ERR_OOM, "unused_backward: cannot read grad_out");
    int64_t k = ct_numel(grad_out);
    double *twice = malloc(sizeof(double) * (size_t)k);
    for (int64_t i = 0; i < k; i++) twice[i] = 2 * gv[i];
    grad_in[0] = host_tensor(twice, n->in[0].shape, n->in[0].ndim);
    if (n->op == RULE_UNUSED_GRAD) grad_in[1] = host_tensor(gv, n->in[1].shape, n->in[1].ndim);
    free(gv);
    free(twice);
    return grad_in[0] ? CT_OK : ct_last_status();
}

static ct_tensor *unused_fn(ct_tensor *const *in, int n, void *user) {
    (void)n;
    ct_tensor *out = cti_binary_scalar(CT_BIN_MUL, in[0], 2.0);
    return finish(out, "UnusedInputBackward", unused_backward, (const ct_tensor *const *)in, 2, *(rule *)user, NULL,
                  NULL);
}

/* ---- checks ------------------------------------------------------------------------------ */

static ct_tensor *leaf(ct_shape s) {
    ct_tensor *t = ct_test_random(s, CT_FLOAT64, -2, 2, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

/* Runs gradcheck; true when it returned CT_OK and ok. When a failure is
 * expected, the error must contain `needle`. */
static bool verdict(const char *what, ct_gradcheck_fn fn, ct_tensor **in, int n, void *user, bool expect_ok,
                    const char *needle) {
    bool ok = !expect_ok;
    ct_status st = ct_gradcheck(fn, in, n, user, &ok);
    bool passed = st == CT_OK && ok;
    if (expect_ok)
        CT_EXPECT_MSG(passed, "%s: a correct rule failed gradcheck (%s): %s", what, ct_status_str(st), ct_last_error());
    else
        CT_EXPECT_MSG(!passed && strstr(ct_last_error(), needle), "%s: gradcheck %s, error \"%s\" (expected \"%s\")",
                      what, passed ? "passed a wrong rule" : "failed", ct_last_error(), needle);
    ct_clear_error();
    return passed;
}

static void test_square_rules(void) {
    struct { rule r; bool ok; const char *needle; } cases[] = {
        {RULE_RIGHT, true, ""},
        {RULE_SCALED, false, "Jacobian mismatch for output 0, input 0, element 0"},
        {RULE_ONE_ELEMENT, false, "Jacobian mismatch for output 3, input 0, element 3"},
        {RULE_MISSING, false, "analytical 0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *x = leaf(CT_SHAPE(2, 3));
        verdict("square", square_fn, &x, 1, &cases[c].r, cases[c].ok, cases[c].needle);
        ct_release(x);
    }
}

static void test_broadcast_rules(void) {
    struct { rule r; bool ok; const char *needle; } cases[] = {
        {RULE_RIGHT, true, ""},
        /* the engine itself refuses it, as PyTorch's validate_outputs does */
        {RULE_NO_REDUCE, false, "Function MulBroadcastBackward returned an invalid gradient at index 1 - got [2, 3] "
                                "but expected shape compatible with [3]"},
        {RULE_FIRST_ROW, false, "Jacobian mismatch for output 3, input 1, element 0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *in[2] = {leaf(CT_SHAPE(2, 3)), leaf(CT_SHAPE(3))};
        verdict("a * b broadcast", mul_fn, in, 2, &cases[c].r, cases[c].ok, cases[c].needle);
        ct_release(in[0]);
        ct_release(in[1]);
    }
}

/* One output of 200 weighted 1% wrong changes a random projection of all
 * 200 by far less than rtol of it; the full Jacobian sees it. */
static void test_one_output_wrong(void) {
    fan_case right = {RULE_RIGHT, 200}, wrong = {RULE_ONE_OUTPUT, 200};
    ct_tensor *x = leaf(CT_SHAPE(1));
    verdict("fan-out of 200", fan_fn, &x, 1, &right, true, "");
    verdict("fan-out of 200, output 7 off", fan_fn, &x, 1, &wrong, false, "Jacobian mismatch for output 7, input 0");
    ct_release(x);
}

/* Past the full-Jacobian size gradcheck projects on random vectors: a
 * correct rule passes, a scaled one fails. */
static void test_long_output_projections(void) {
    fan_case right = {RULE_RIGHT, 3000}, wrong = {RULE_SCALED, 3000};
    ct_tensor *x = leaf(CT_SHAPE(1));
    verdict("fan-out of 3000", fan_fn, &x, 1, &right, true, "");
    verdict("fan-out of 3000, scaled", fan_fn, &x, 1, &wrong, false, "Jacobian mismatch for projection");
    ct_release(x);
}

static void test_unused_input(void) {
    rule right = RULE_RIGHT, wrong = RULE_UNUSED_GRAD;
    ct_tensor *in[2] = {leaf(CT_SHAPE(4)), leaf(CT_SHAPE(4))};
    verdict("unused input, no gradient", unused_fn, in, 2, &right, true, "");
    verdict("unused input given a gradient", unused_fn, in, 2, &wrong, false, "input 1, element 0");
    ct_release(in[0]);
    ct_release(in[1]);
}

/* The finite differences write into the inputs; they must come back with
 * the same bits (x + eps - eps need not be x) and without a .grad. */
static void test_inputs_restored(void) {
    double vals[6] = {0.1, -1.7, 3.3, 1e-3, -0.7, 2.9};
    ct_tensor *x = ct_test_tensor(vals, CT_SHAPE(2, 3), CT_FLOAT64);
    ct_set_requires_grad(x, true);
    rule r = RULE_RIGHT;
    verdict("square", square_fn, &x, 1, &r, true, "");
    double after[6];
    CT_EXPECT_INT_EQ(ct_copy_to_host(x, after, CT_FLOAT64, 6), CT_OK);
    CT_EXPECT(memcmp(vals, after, sizeof vals) == 0);
    CT_EXPECT(ct_grad(x) == NULL);
    ct_clear_error();
    ct_release(x);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_square_rules);
    CT_RUN(test_broadcast_rules);
    CT_RUN(test_one_output_wrong);
    CT_RUN(test_long_output_projections);
    CT_RUN(test_unused_input);
    CT_RUN(test_inputs_restored);
    return ct_test_finish();
}
