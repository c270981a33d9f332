/*
 * test_autograd.c — the autograd engine (leaf rules, accumulation,
 * retain_graph, no-grad, errors) and gradchecks of the elementwise,
 * reduction, matmul and softmax rules, with broadcasting.
 */
#include "testutil.h"

static ct_tensor *leaf64(ct_shape s, double lo, double hi) {
    ct_tensor *t = ct_test_random(s, CT_FLOAT64, lo, hi, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

/* ---- engine semantics ---- */

static void test_leaf_rules(void) {
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(2, 3));
        CT_EXPECT(ct_is_leaf(x) && !ct_requires_grad(x));
        CT_EXPECT_INT_EQ(ct_set_requires_grad(x, true), CT_OK);
        ct_tensor *y = ct_mul_scalar(x, 3.0);
        CT_EXPECT(ct_requires_grad(y) && !ct_is_leaf(y));
        CT_EXPECT_STR_EQ(ct_grad_fn_name(y), "MulBackward0");
        CT_EXPECT(ct_set_requires_grad(y, false) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_STATE, "you can only change requires_grad flags of leaf variables");
        ct_tensor *i = ct_ones(CT_SHAPE(2), .dtype = CT_INT64);
        CT_EXPECT(ct_set_requires_grad(i, true) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "only Tensors of floating point dtype can require gradients");
        ct_tensor *z = ct_mul_scalar(ct_detach(y), 2.0);
        CT_EXPECT(!ct_requires_grad(z));
        CT_NO_GRAD { CT_EXPECT(!ct_requires_grad(ct_mul(x, x))); }
        CT_EXPECT(ct_is_grad_enabled());
        CT_EXPECT(!ct_requires_grad(ct_gt_scalar(x, 0.0))); /* bool results carry no grad */
    }
}

static void test_backward_accumulates(void) {
    CT_SCOPE {
        ct_tensor *x = ct_tensor_from((double[]){1, 2, 3}, CT_FLOAT64, CT_SHAPE(3), .dtype = CT_FLOAT32);
        ct_set_requires_grad(x, true);
        ct_tensor *loss = ct_sum_all(ct_mul(x, x)); /* d/dx = 2x */
        CT_EXPECT_INT_EQ(ct_backward_ex(loss, NULL, true), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){2, 4, 6}), 3, 1e-6, 0);
        CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK); /* retained: a second pass accumulates */
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){4, 8, 12}), 3, 1e-6, 0);
        CT_EXPECT(ct_backward(loss) != CT_OK);      /* graph freed now */
        CT_EXPECT_ERROR(CT_ERR_STATE, "Trying to backward through the graph a second time");
        CT_EXPECT_INT_EQ(ct_set_grad(x, NULL), CT_OK);
        CT_EXPECT(ct_grad(x) == NULL);
        /* a tensor used twice gets the sum of both paths */
        ct_tensor *y = ct_add(ct_mul_scalar(x, 2.0), ct_exp(x));
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(y)), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){2 + exp(1.0), 2 + exp(2.0), 2 + exp(3.0)}), 3, 1e-6, 0);
        CT_EXPECT(ct_dtype_of(ct_grad(x)) == CT_FLOAT32);
    }
}

static void test_backward_errors_and_gradient_arg(void) {
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(2, 2));
        CT_EXPECT(ct_backward(x) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_STATE, "does not require grad and does not have a grad_fn");
        ct_set_requires_grad(x, true);
        ct_tensor *y = ct_mul_scalar(x, 3.0);
        CT_EXPECT(ct_backward(y) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "grad can be implicitly created only for scalar outputs");
        CT_EXPECT(ct_backward_ex(y, ct_ones(CT_SHAPE(3)), false) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Mismatch in shape");
        ct_tensor *v = ct_tensor_from((double[]){1, 2, 3, 4}, CT_FLOAT64, CT_SHAPE(2, 2), .dtype = CT_FLOAT32);
        CT_EXPECT_INT_EQ(ct_backward_ex(y, v, false), CT_OK); /* vector-Jacobian product */
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){3, 6, 9, 12}), 4, 1e-6, 0);
        ct_tensor *leaf = ct_ones(CT_SHAPE(1));
        ct_set_requires_grad(leaf, true);
        CT_EXPECT_INT_EQ(ct_backward(leaf), CT_OK); /* backward on a leaf: grad = 1 */
        CT_EXPECT_CLOSE(ct_grad(leaf), ((double[]){1}), 1, 0, 0);
    }
    ct_clear_error();
    CT_EXPECT_INT_EQ(ct_backward(NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "backward: NULL tensor");
    /* the NULL of a failed op stands for that op's error, which backward reports as is */
    CT_SCOPE {
        ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(2, 3));
        ct_set_requires_grad(a, true);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_matmul(a, b))), CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "2x3 and 2x3");
    }
    ct_clear_error();
}

static void test_graph_is_freed(void) {
    int64_t before = ct_live_tensors();
    ct_tensor *x = ct_randn(CT_SHAPE(4, 4));
    ct_set_requires_grad(x, true);
    CT_SCOPE {
        ct_tensor *h = x;
        for (int i = 0; i < 200; i++) h = ct_tanh(ct_add_scalar(h, 0.01)); /* a long chain */
        ct_backward(ct_mean_all(h));
    }
    ct_tensor *g = ct_grad(x); /* outside a scope: ours to release */
    CT_EXPECT(g != NULL);
    ct_release(g);
    ct_release(x);
    CT_EXPECT_INT_EQ(ct_live_tensors(), before);
}

/* ---- gradchecks ---- */

typedef struct op_case {
    const char *name;
    int n_inputs;
    ct_tensor *(*fn)(ct_tensor *const *in, int n, void *user);
    double lo, hi; /* input range (positive for log, sqrt, …) */
} op_case;

#define UNARY_FN(name, call) \
    static ct_tensor *name(ct_tensor *const *in, int n, void *u) { (void)n; (void)u; return call; }
UNARY_FN(f_neg, ct_neg(in[0]))
UNARY_FN(f_abs, ct_abs(in[0]))
UNARY_FN(f_square, ct_square(in[0]))
UNARY_FN(f_exp, ct_exp(in[0]))
UNARY_FN(f_expm1, ct_expm1(in[0]))
UNARY_FN(f_log, ct_log(in[0]))
UNARY_FN(f_log1p, ct_log1p(in[0]))
UNARY_FN(f_log2, ct_log2(in[0]))
UNARY_FN(f_sqrt, ct_sqrt(in[0]))
UNARY_FN(f_rsqrt, ct_rsqrt(in[0]))
UNARY_FN(f_reciprocal, ct_reciprocal(in[0]))
UNARY_FN(f_sin, ct_sin(in[0]))
UNARY_FN(f_cos, ct_cos(in[0]))
UNARY_FN(f_tanh, ct_tanh(in[0]))
UNARY_FN(f_sigmoid, ct_sigmoid(in[0]))
UNARY_FN(f_relu, ct_relu(in[0]))
UNARY_FN(f_gelu, ct_gelu(in[0]))
UNARY_FN(f_gelu_tanh, ct_gelu_tanh(in[0]))
UNARY_FN(f_silu, ct_silu(in[0]))
UNARY_FN(f_softplus, ct_softplus(in[0]))
UNARY_FN(f_erf, ct_erf(in[0]))
UNARY_FN(f_leaky, ct_leaky_relu(in[0], 0.1))
UNARY_FN(f_hardswish, ct_hardswish(in[0]))
UNARY_FN(f_clamp, ct_clamp(in[0], -0.5, 0.5))
UNARY_FN(f_add, ct_add(in[0], in[1]))
UNARY_FN(f_add_scaled, ct_add_scaled(in[0], in[1], -2.5))
UNARY_FN(f_sub, ct_sub(in[0], in[1]))
UNARY_FN(f_mul, ct_mul(in[0], in[1]))
UNARY_FN(f_div, ct_div(in[0], in[1]))
UNARY_FN(f_pow, ct_pow(in[0], in[1]))
UNARY_FN(f_maximum, ct_maximum(in[0], in[1]))
UNARY_FN(f_minimum, ct_minimum(in[0], in[1]))
UNARY_FN(f_atan2, ct_atan2(in[0], in[1]))
UNARY_FN(f_scalars, ct_rsub_scalar(ct_div_scalar(ct_pow_scalar(ct_mul_scalar(ct_add_scalar(in[0], 1.5), 2.0), 3.0), 4.0), 1.0))
UNARY_FN(f_where, ct_where(ct_gt_scalar(in[0], 1.0), in[0], in[1]))
UNARY_FN(f_sum, ct_sum(in[0], (int[]){1}, 1, false))
UNARY_FN(f_sum_keep, ct_sum(in[0], (int[]){0, 2}, 2, true))
UNARY_FN(f_mean, ct_mean(in[0], (int[]){-1}, 1, false))
UNARY_FN(f_mean_all, ct_mean_all(in[0]))
UNARY_FN(f_prod, ct_prod(in[0], (int[]){1}, 1, false))
UNARY_FN(f_amax, ct_amax(in[0], (int[]){2}, 1, false))
UNARY_FN(f_amin, ct_amin(in[0], (int[]){0}, 1, true))
UNARY_FN(f_var, ct_var(in[0], (int[]){1}, 1, 1.0, false))
UNARY_FN(f_std, ct_std(in[0], (int[]){0, 1}, 2, 0.0, true))
UNARY_FN(f_softmax, ct_softmax(in[0], 1))
UNARY_FN(f_log_softmax, ct_log_softmax(in[0], -1))

static ct_tensor *f_max_dim(ct_tensor *const *in, int n, void *u) {
    ct_tensor *v = NULL;
    ct_max_dim(in[0], 1, false, &v, NULL);
    return v;
}

static const op_case k_unary[] = {
    {"neg", 1, f_neg, -2, 2}, {"abs", 1, f_abs, 0.1, 2}, {"square", 1, f_square, -2, 2},
    {"exp", 1, f_exp, -2, 2}, {"expm1", 1, f_expm1, -2, 2}, {"log", 1, f_log, 0.5, 3},
    {"log1p", 1, f_log1p, 0.1, 3}, {"log2", 1, f_log2, 0.5, 3}, {"sqrt", 1, f_sqrt, 0.5, 3},
    {"rsqrt", 1, f_rsqrt, 0.5, 3}, {"reciprocal", 1, f_reciprocal, 0.5, 3}, {"sin", 1, f_sin, -3, 3},
    {"cos", 1, f_cos, -3, 3}, {"tanh", 1, f_tanh, -2, 2}, {"sigmoid", 1, f_sigmoid, -3, 3},
    {"relu", 1, f_relu, 0.1, 2}, {"gelu", 1, f_gelu, -3, 3}, {"gelu_tanh", 1, f_gelu_tanh, -3, 3},
    {"silu", 1, f_silu, -3, 3}, {"softplus", 1, f_softplus, -3, 3}, {"erf", 1, f_erf, -2, 2},
    {"leaky_relu", 1, f_leaky, 0.1, 2}, {"clamp", 1, f_clamp, -0.4, 0.4},
    {"hardswish", 1, f_hardswish, -2.9, 2.9},
    {"scalar ops", 1, f_scalars, 0.1, 2},
    {"sum", 1, f_sum, -2, 2}, {"sum keepdim", 1, f_sum_keep, -2, 2}, {"mean", 1, f_mean, -2, 2},
    {"mean all", 1, f_mean_all, -2, 2}, {"prod", 1, f_prod, 0.5, 2}, {"amax", 1, f_amax, -2, 2},
    {"amin", 1, f_amin, -2, 2}, {"var", 1, f_var, -2, 2}, {"std", 1, f_std, -2, 2},
    {"softmax", 1, f_softmax, -2, 2}, {"log_softmax", 1, f_log_softmax, -2, 2}, {"max(dim)", 1, f_max_dim, -2, 2},
};

static const op_case k_binary[] = {
    {"add", 2, f_add, -2, 2}, {"add alpha", 2, f_add_scaled, -2, 2}, {"sub", 2, f_sub, -2, 2},
    {"mul", 2, f_mul, -2, 2}, {"div", 2, f_div, 0.5, 2}, {"pow", 2, f_pow, 0.5, 2},
    {"maximum", 2, f_maximum, -2, 2}, {"minimum", 2, f_minimum, -2, 2}, {"atan2", 2, f_atan2, 0.5, 2},
    {"where", 2, f_where, 0, 2},
};

static void check_case(const op_case *c, ct_shape sa, ct_shape sb) {
    ct_tensor *in[2] = {leaf64(sa, c->lo, c->hi), c->n_inputs > 1 ? leaf64(sb, c->lo, c->hi) : NULL};
    bool ok = false;
    ct_status st = ct_gradcheck(c->fn, in, c->n_inputs, NULL, &ok);
    CT_EXPECT_MSG(st == CT_OK && ok, "gradcheck %s: %s", c->name, ct_last_error());
    ct_clear_error();
    ct_release(in[0]);
    ct_release(in[1]);
}

static void test_gradcheck_unary_and_reductions(void) {
    for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++) check_case(&k_unary[i], CT_SHAPE(2, 3, 4), CT_SHAPE0);
}

static void test_gradcheck_binary_broadcast(void) {
    for (size_t i = 0; i < sizeof k_binary / sizeof k_binary[0]; i++) {
        check_case(&k_binary[i], CT_SHAPE(3, 4), CT_SHAPE(3, 4));
        check_case(&k_binary[i], CT_SHAPE(2, 3, 4), CT_SHAPE(3, 1)); /* broadcast b */
        check_case(&k_binary[i], CT_SHAPE(1, 4), CT_SHAPE(3, 1));    /* both broadcast */
    }
}

UNARY_FN(f_matmul, ct_matmul(in[0], in[1]))

static void test_gradcheck_matmul(void) {
    const op_case mm = {"matmul", 2, f_matmul, -1, 1};
    check_case(&mm, CT_SHAPE(3, 4), CT_SHAPE(4, 5));
    check_case(&mm, CT_SHAPE(2, 3, 4), CT_SHAPE(4, 5));    /* broadcast batch */
    check_case(&mm, CT_SHAPE(2, 1, 3, 4), CT_SHAPE(3, 4, 2));
    check_case(&mm, CT_SHAPE(4), CT_SHAPE(4, 5));          /* vector @ matrix */
    check_case(&mm, CT_SHAPE(3, 4), CT_SHAPE(4));          /* matrix @ vector */
    check_case(&mm, CT_SHAPE(4), CT_SHAPE(4));             /* dot */
    check_case(&mm, CT_SHAPE(4), CT_SHAPE(2, 4, 3));       /* vector @ batch */
}

/* The seed's training loop: Linear(10, 1) by hand, MSE, SGD — the loss falls. */
static void test_linear_regression_learns(void) {
    ct_manual_seed(3);
    ct_tensor *w = ct_randn(CT_SHAPE(10, 1)), *b = ct_zeros(CT_SHAPE(1));
    ct_set_requires_grad(w, true);
    ct_set_requires_grad(b, true);
    ct_tensor *x = ct_randn(CT_SHAPE(64, 10)), *true_w = ct_randn(CT_SHAPE(10, 1));
    ct_tensor *y = ct_matmul(x, true_w);
    double first = 0, last = 0;
    for (int epoch = 0; epoch < 200; epoch++) CT_SCOPE {
        ct_tensor *pred = ct_add(ct_matmul(x, w), b);
        ct_tensor *loss = ct_mean_all(ct_square(ct_sub(pred, y)));
        ct_set_grad(w, NULL);
        ct_set_grad(b, NULL);
        ct_backward(loss);
        CT_NO_GRAD {
            ct_copy_(w, ct_sub(w, ct_mul_scalar(ct_grad(w), 0.1)));
            ct_copy_(b, ct_sub(b, ct_mul_scalar(ct_grad(b), 0.1)));
        }
        if (epoch == 0) first = ct_item(loss);
        last = ct_item(loss);
    }
    CT_EXPECT_MSG(last < first * 1e-3, "loss went from %g to %g", first, last);
    ct_set_grad(w, NULL);
    ct_set_grad(b, NULL);
    ct_release(w), ct_release(b), ct_release(x), ct_release(true_w), ct_release(y);
}

/* ---- post-accumulate-grad hooks ---- */

typedef struct hook_log {
    int calls;
    double grad_sum_seen; /* the leaf's .grad summed when the hook ran */
    ct_status result;
} hook_log;

static ct_status log_hook(ct_tensor *leaf, void *user) {
    hook_log *l = user;
    l->calls++;
    CT_SCOPE { l->grad_sum_seen = ct_item(ct_sum_all(ct_grad(leaf))); }
    return l->result;
}

static void test_post_accumulate_grad_hooks(void) {
    CT_SCOPE {
        ct_tensor *w = ct_full(CT_SHAPE(3), 2.0), *unused = ct_ones(CT_SHAPE(3));
        ct_set_requires_grad(w, true), ct_set_requires_grad(unused, true);
        hook_log lw = {0}, lu = {0};
        CT_EXPECT(ct_register_post_accumulate_grad_hook(w, log_hook, &lw) == CT_OK);
        CT_EXPECT(ct_register_post_accumulate_grad_hook(unused, log_hook, &lu) == CT_OK);
        /* w used twice: d/dw sum(w*w + 3w) = 2w + 3 = 7 per element; the hook
         * runs once, after both gradients are in .grad */
        ct_tensor *loss = ct_sum_all(ct_add(ct_mul(w, w), ct_mul_scalar(w, 3)));
        CT_EXPECT(ct_backward(loss) == CT_OK);
        CT_EXPECT_INT_EQ(lw.calls, 1);
        CT_EXPECT_NEAR(lw.grad_sum_seen, 21.0, 0.0);
        CT_EXPECT_INT_EQ(lu.calls, 0); /* no gradient reached it */
        /* a second backward runs it again, after accumulating (42 in total) */
        CT_EXPECT(ct_backward(ct_sum_all(ct_mul(w, ct_full(CT_SHAPE(3), 7.0)))) == CT_OK);
        CT_EXPECT_INT_EQ(lw.calls, 2);
        CT_EXPECT_NEAR(lw.grad_sum_seen, 42.0, 0.0);
        /* a leaf that is the root itself */
        CT_EXPECT(ct_backward_ex(unused, ct_ones(CT_SHAPE(3)), false) == CT_OK);
        CT_EXPECT_INT_EQ(lu.calls, 1);
        /* a failing hook stops backward with its error */
        lw.result = ct_set_error(CT_ERR_STATE, "hook says no");
        ct_clear_error();
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(w)), CT_ERR_STATE);
        lw.result = CT_OK;
        ct_clear_error();
        CT_EXPECT(ct_remove_post_accumulate_grad_hook(w, log_hook, &lw) == CT_OK);
        CT_EXPECT(ct_backward(ct_sum_all(w)) == CT_OK);
        CT_EXPECT_INT_EQ(lw.calls, 3); /* removed: not called again */
        CT_EXPECT_INT_EQ(ct_remove_post_accumulate_grad_hook(w, log_hook, &lw), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "no such hook");
        CT_EXPECT_INT_EQ(ct_register_post_accumulate_grad_hook(ct_mul_scalar(w, 2), log_hook, &lw), CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "non-leaf");
        CT_EXPECT_INT_EQ(ct_register_post_accumulate_grad_hook(ct_ones(CT_SHAPE(1)), log_hook, &lw), CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "doesn't require gradient");
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_post_accumulate_grad_hooks);
    CT_RUN(test_leaf_rules);
    CT_RUN(test_backward_accumulates);
    CT_RUN(test_backward_errors_and_gradient_arg);
    CT_RUN(test_graph_is_freed);
    CT_RUN(test_gradcheck_unary_and_reductions);
    CT_RUN(test_gradcheck_binary_broadcast);
    CT_RUN(test_gradcheck_matmul);
    CT_RUN(test_linear_regression_learns);
    return ct_test_finish();
}
