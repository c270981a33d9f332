/*
 * test_loss_modules.c — the loss modules (nn.CrossEntropyLoss, nn.MSELoss,
 * nn.NLLLoss, nn.BCEWithLogitsLoss with ct_loss) and the designated-
 * initialiser options of the functional losses, convolution, pooling and
 * normalisation.
 *
 * A criterion must give exactly the values and gradients of its functional
 * with the same options; options left out must mean PyTorch's defaults
 * (checked against PyTorch: tests/fixtures/loss/defaults_*.bin, made by
 * tools/gen_fixtures_defaults.py, and the ce_default / mse_broadcast
 * fixtures of tools/gen_fixtures_loss.py), including ignore_index, whose
 * default (-100) C cannot spell as zero; a criterion's weights are buffers
 * that move with ct_module_to and are in its state_dict; ct_forward on a
 * criterion fails and names ct_loss; options a function does not take are
 * refused; NULL inputs keep the earlier error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ctorch.h"
#include "ctorch/functional.h"
#include "ctorch/io.h"
#include "loss_fixture.h"
#include "testutil.h"

/* ---- module == functional --------------------------------------------------------------- */

/* The loss and the input's gradient of ct_loss(m, ...) and of the
 * functional `fn` with options o must be the same values exactly. */
typedef ct_tensor *(*loss_fn)(const ct_tensor *, const ct_tensor *, ct_loss_opts);

static void expect_same_as_functional(ct_module *m, loss_fn fn, ct_loss_opts o, ct_tensor *x,
                                      const ct_tensor *target) {
    CT_EXPECT_MSG(m != NULL, "%s", ct_last_error());
    if (!m) return;
    CT_SCOPE {
        double *vals[2] = {NULL, NULL}, *grads[2] = {NULL, NULL};
        int64_t n = 0;
        for (int k = 0; k < 2; k++) {
            ct_set_grad(x, NULL);
            ct_tensor *loss = k ? fn(x, target, o) : ct_loss(m, x, target);
            CT_EXPECT_MSG(loss != NULL, "%s: %s", ct_module_type(m), ct_last_error());
            if (!loss) break;
            n = ct_numel(loss);
            CT_EXPECT_INT_EQ(ct_backward_ex(loss, ct_ones_like(loss), false), CT_OK);
            vals[k] = ct_test_values(loss);
            grads[k] = ct_test_values(ct_grad(x));
        }
        if (vals[0] && vals[1]) {
            CT_EXPECT_MSG(memcmp(vals[0], vals[1], sizeof(double) * (size_t)n) == 0, "%s: loss",
                          ct_module_type(m));
            CT_EXPECT_MSG(memcmp(grads[0], grads[1], sizeof(double) * (size_t)ct_numel(x)) == 0,
                          "%s: gradient", ct_module_type(m));
        }
        for (int k = 0; k < 2; k++) free(vals[k]), free(grads[k]);
    }
    ct_module_free(m);
}

static void test_modules_match_functional(void) {
    ct_manual_seed(3);
    CT_SCOPE {
        ct_tensor *logits = ct_randn(CT_SHAPE(6, 5), .requires_grad = true);
        const int64_t tv[6] = {0, 2, 0, 4, 1, 3};
        ct_tensor *classes = ct_tensor_from(tv, CT_INT64, CT_SHAPE(6));
        ct_tensor *w = ct_rand(CT_SHAPE(5));
        ct_loss_opts ce = CT_LOSS_OPTS(.weight = w, .ignore_index = 0, .has_ignore_index = true,
                                       .label_smoothing = 0.1, .reduction = CT_REDUCTION_SUM);
        expect_same_as_functional(ct_nn_cross_entropy_loss_opts(ce), ct_cross_entropy_opts, ce, logits, classes);
        expect_same_as_functional(ct_nn_cross_entropy_loss(), ct_cross_entropy_opts, CT_LOSS_OPTS(), logits,
                                  classes);
        ct_tensor *probs = ct_softmax(ct_randn(CT_SHAPE(6, 5)), 1);
        expect_same_as_functional(ct_nn_cross_entropy_loss(.label_smoothing = 0.2), ct_cross_entropy_opts,
                                  CT_LOSS_OPTS(.label_smoothing = 0.2), logits, probs);
        ct_loss_opts nll = CT_LOSS_OPTS(.weight = w, .ignore_index = 2, .reduction = CT_REDUCTION_NONE);
        expect_same_as_functional(ct_nn_nll_loss_opts(nll), ct_nll_loss_opts, nll, logits, classes);
        ct_tensor *y = ct_randn(CT_SHAPE(6, 5));
        expect_same_as_functional(ct_nn_mse_loss(.reduction = CT_REDUCTION_NONE), ct_mse_loss_opts,
                                  CT_LOSS_OPTS(.reduction = CT_REDUCTION_NONE), logits, y);
        expect_same_as_functional(ct_nn_mse_loss(), ct_mse_loss_opts, CT_LOSS_OPTS(), logits, y);
        ct_tensor *t01 = ct_rand(CT_SHAPE(6, 5)), *pw = ct_add_scalar(ct_rand(CT_SHAPE(5)), 0.5);
        ct_loss_opts bce = CT_LOSS_OPTS(.weight = ct_rand(CT_SHAPE(6, 1)), .pos_weight = pw);
        expect_same_as_functional(ct_nn_bce_with_logits_loss_opts(bce), ct_binary_cross_entropy_with_logits_opts,
                                  bce, logits, t01);
    }
}

/* ---- defaults == PyTorch's -------------------------------------------------------------- */

static bool load(const char *name, lf_file *f) {
    bool ok = lf_load(__FILE__, name, f);
    CT_EXPECT_MSG(ok, "cannot read fixture %s (run tools/gen_fixtures_defaults.py / gen_fixtures_loss.py)", name);
    return ok;
}

/* t against fixture `name` of f, float64 (tight). */
static void expect_fixture(const ct_tensor *t, const lf_file *f, const char *name) {
    const lf_tensor *want = lf_get(f, name);
    CT_EXPECT_MSG(want && t, "%s: %s", name, ct_last_error());
    if (want && t && !CT_EXPECT_CLOSE(t, want->values, want->numel, 1e-10, 1e-12))
        ct_test_fail(__FILE__, __LINE__, "fixture %s", name);
}

/* loss(x) and its gradient, from a criterion and from the functional call
 * `call` (which uses x and target), against PyTorch. */
#define EXPECT_LOSS_AND_GRAD(f, prefix, x, call)                    \
    do {                                                            \
        ct_set_grad(x, NULL);                                       \
        ct_tensor *l_ = (call);                                     \
        expect_fixture(l_, f, prefix "_loss");                      \
        if (l_) CT_EXPECT_INT_EQ(ct_backward(l_), CT_OK);           \
        expect_fixture(ct_grad(x), f, prefix "_grad");              \
    } while (0)

static void test_loss_defaults(void) {
    lf_file f;
    if (load("defaults_loss", &f)) CT_SCOPE {
        /* nll_loss: the target -100 is ignored by default */
        ct_tensor *x = lf_tensor_of(&f, "nll_input", CT_FLOAT64), *t = lf_tensor_of(&f, "nll_target", CT_INT64);
        ct_set_requires_grad(x, true);
        EXPECT_LOSS_AND_GRAD(&f, "nll", x, ct_nll_loss(x, t));
        ct_module *nll = ct_nn_nll_loss();
        EXPECT_LOSS_AND_GRAD(&f, "nll", x, ct_loss(nll, x, t));
        ct_module_free(nll);
        /* cross_entropy(ignore_index=0): class 0 needs the flag */
        ct_tensor *z = lf_tensor_of(&f, "ce0_input", CT_FLOAT64), *t0 = lf_tensor_of(&f, "ce0_target", CT_INT64);
        ct_set_requires_grad(z, true);
        EXPECT_LOSS_AND_GRAD(&f, "ce0", z, ct_cross_entropy(z, t0, CT_IGNORE_INDEX(0)));
        ct_module *ce = ct_nn_cross_entropy_loss(CT_IGNORE_INDEX(0));
        EXPECT_LOSS_AND_GRAD(&f, "ce0", z, ct_loss(ce, z, t0));
        ct_module_free(ce);
        /* without it a zero field is PyTorch's -100 (documented), so class 0 counts */
        ct_tensor *unflagged = ct_cross_entropy(z, t0, .ignore_index = 0);
        CT_EXPECT(ct_equal(unflagged, ct_cross_entropy(z, t0)));
        CT_EXPECT(fabs(ct_item(unflagged) - lf_get(&f, "ce0_loss")->values[0]) > 1e-3);
        /* binary_cross_entropy_with_logits: no weights, mean */
        ct_tensor *b = lf_tensor_of(&f, "bce_input", CT_FLOAT64), *y = lf_tensor_of(&f, "bce_target", CT_FLOAT64);
        ct_set_requires_grad(b, true);
        EXPECT_LOSS_AND_GRAD(&f, "bce", b, ct_binary_cross_entropy_with_logits(b, y));
        ct_module *bce = ct_nn_bce_with_logits_loss();
        EXPECT_LOSS_AND_GRAD(&f, "bce", b, ct_loss(bce, b, y));
        CT_EXPECT_INT_EQ(ct_module_buffers(bce, NULL, NULL, 0), 0);
        ct_module_free(bce);
    }
    lf_free(&f);
    /* cross_entropy and mse_loss with every option left out, and their criterions */
    static const char *const cases[] = {"ce_default", "mse_broadcast"};
    for (int c = 0; c < 2; c++) {
        if (!load(cases[c], &f)) continue;
        CT_SCOPE {
            ct_tensor *x = lf_tensor_of(&f, "input", CT_FLOAT64);
            ct_tensor *t = lf_tensor_of(&f, "target", c ? CT_FLOAT64 : CT_INT64);
            if (c) t = ct_expand(t, ct_shape_of(x)); /* the fixture's PyTorch call expands it */
            ct_set_requires_grad(x, true);
            ct_module *m = c ? ct_nn_mse_loss() : ct_nn_cross_entropy_loss();
            for (int k = 0; k < 3; k++) {
                ct_set_grad(x, NULL);
                ct_tensor *loss = k == 2 ? ct_loss(m, x, t) : c ? ct_mse_loss(x, t) : ct_cross_entropy(x, t);
                expect_fixture(loss, &f, "loss_mean");
                if (loss) CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
                expect_fixture(ct_grad(x), &f, "grad_mean");
            }
            ct_module_free(m);
        }
        lf_free(&f);
    }
}

static void test_nn_defaults(void) {
    lf_file f;
    if (!load("defaults_nn", &f)) return;
    CT_SCOPE {
        ct_tensor *x = lf_tensor_of(&f, "pool_input", CT_FLOAT64);
        expect_fixture(ct_max_pool2d(x, CT_PAIR(3, 3)), &f, "maxpool_out"); /* stride = kernel_size */
        expect_fixture(ct_avg_pool2d(x, CT_PAIR(3, 3), .stride = {2, 2}, .padding = {1, 1}), &f, "avgpool_out");
        expect_fixture(ct_avg_pool2d(x, CT_PAIR(3, 3), .stride = {2, 2}, .padding = {1, 1}, .no_count_include_pad = true),
                       &f, "avgpool_excl");
        ct_tensor *out = NULL, *idx = NULL;
        CT_EXPECT_INT_EQ(ct_max_pool2d_with_indices(x, CT_PAIR(3, 3), &out, &idx), CT_OK);
        expect_fixture(out, &f, "maxpool_out");
        /* batch norm: training updates the running stats with momentum 0.1; eps 1e-5 */
        ct_tensor *b = lf_tensor_of(&f, "bn_input", CT_FLOAT64);
        ct_tensor *rm = ct_zeros(CT_SHAPE(3), .dtype = CT_FLOAT64), *rv = ct_ones(CT_SHAPE(3), .dtype = CT_FLOAT64);
        expect_fixture(ct_batch_norm(b, rm, rv, NULL, NULL, .training = true), &f, "bn_out");
        expect_fixture(rm, &f, "bn_running_mean");
        expect_fixture(rv, &f, "bn_running_var");
        ct_tensor *rm0 = lf_tensor_of(&f, "bn_rm0", CT_FLOAT64), *rv0 = lf_tensor_of(&f, "bn_rv0", CT_FLOAT64);
        expect_fixture(ct_batch_norm(b, rm0, rv0, NULL, NULL), &f, "bn_eval_out");
        expect_fixture(ct_layer_norm(lf_tensor_of(&f, "ln_input", CT_FLOAT64), CT_SHAPE(5), NULL, NULL), &f, "ln_out");
    }
    lf_free(&f);
    /* conv2d: options left out are stride 1, padding 0, dilation 1, groups 1 */
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(2, 4, 7, 6)), *w = ct_randn(CT_SHAPE(6, 4, 3, 3)), *b = ct_randn(CT_SHAPE(6));
        ct_tensor *want = ct_conv2d(x, w, b, .stride = {1, 1}, .padding = {0, 0}, .dilation = {1, 1}, .groups = 1);
        CT_EXPECT(ct_equal(ct_conv2d(x, w, b), want));
        CT_EXPECT(ct_equal(ct_conv2d_relu(x, w, b), ct_relu(want)));
        CT_EXPECT_SHAPE(ct_conv2d(x, w, b, .stride = {2, 2}, .padding = {1, 1}), CT_SHAPE(2, 6, 4, 3));
    }
}

/* ---- weights are buffers ---------------------------------------------------------------- */

static void check_weight_buffer_on(ct_module *m, ct_device dev) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3)), *t = ct_randint(0, 3, CT_SHAPE(4));
        ct_tensor *on_cpu = ct_loss(m, x, t);
        CT_EXPECT_INT_EQ(ct_module_to_checked(m, dev), CT_OK);
        ct_tensor *w = ct_module_buffer(m, "weight");
        CT_EXPECT(ct_device_equal(ct_device_of(w), dev));
        ct_tensor *on_dev = ct_to_device(ct_loss(m, ct_to_device(x, dev), ct_to_device(t, dev)), ct_device_cpu());
        CT_EXPECT_NEAR(ct_item(on_dev), ct_item(on_cpu), 1e-5);
        CT_EXPECT_INT_EQ(ct_module_to_checked(m, ct_device_cpu()), CT_OK);
    }
}

static void test_weight_buffers(void) {
    CT_SCOPE {
        ct_tensor *w = ct_tensor_from(((const float[]){1, 2, 0.5f}), CT_FLOAT32, CT_SHAPE(3));
        ct_module *ce = ct_nn_cross_entropy_loss(.weight = w);
        CT_EXPECT_STR_EQ(ct_module_type(ce), "CrossEntropyLoss");
        ct_tensor *buf = ct_module_buffer(ce, "weight");
        /* a new handle on the same data, as PyTorch's buffer is the same tensor */
        CT_EXPECT(buf && buf != w && ct_shares_storage(buf, w) && ct_equal(buf, w));
        CT_EXPECT_INT_EQ(ct_module_parameters(ce, NULL, NULL, 0), 0);
        ct_tensor_dict *sd = ct_module_state_dict(ce);
        CT_EXPECT(ct_tensor_dict_size(sd) == 1 && ct_equal(ct_tensor_dict_get(sd, "weight"), w));
        ct_tensor_dict_free(sd);
        /* load_state_dict changes the weight the loss uses */
        ct_tensor_dict *d = ct_tensor_dict_new();
        ct_tensor_dict_set(d, "weight", ct_ones(CT_SHAPE(3)));
        CT_EXPECT_INT_EQ(ct_module_load_state_dict(ce, d, true), CT_OK);
        ct_tensor_dict_free(d);
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3)), *t = ct_randint(0, 3, CT_SHAPE(4));
        CT_EXPECT(ct_equal(ct_loss(ce, x, t), ct_cross_entropy(x, t)));
        /* moved with the module; the caller's tensor stays where it was */
        ct_device dev = ct_device_cpu();
        if (ct_test_opencl_devices("a criterion's weight moved to a device") > 0) dev = ct_device_opencl(0);
        check_weight_buffer_on(ce, dev);
        CT_EXPECT(ct_device_equal(ct_device_of(w), ct_device_cpu()));
        ct_module_free(ce);
        ct_module *nll = ct_nn_nll_loss(.weight = w);
        check_weight_buffer_on(nll, dev);
        ct_module_free(nll);

        ct_module *bce = ct_nn_bce_with_logits_loss(.weight = w, .pos_weight = ct_full(CT_SHAPE(3), 2.0));
        const char *names[2] = {NULL, NULL};
        CT_EXPECT_INT_EQ(ct_module_buffers(bce, NULL, names, 2), 2);
        CT_EXPECT(names[0] && names[1] && !strcmp(names[0], "weight") && !strcmp(names[1], "pos_weight"));
        sd = ct_module_state_dict(bce);
        CT_EXPECT(ct_tensor_dict_contains(sd, "weight") && ct_tensor_dict_contains(sd, "pos_weight"));
        ct_tensor_dict_free(sd);
        ct_module_free(bce);
        ct_module *plain = ct_nn_cross_entropy_loss();
        sd = ct_module_state_dict(plain);
        CT_EXPECT_INT_EQ(ct_tensor_dict_size(sd), 0); /* weight=None: no buffer */
        ct_tensor_dict_free(sd);
        ct_module_free(plain);
    }
    /* made outside any scope, the buffer still belongs to the module alone */
    ct_tensor *w = ct_ones(CT_SHAPE(3));
    ct_module *m = ct_nn_nll_loss(.weight = w);
    ct_release(w);
    CT_EXPECT(m && ct_numel(ct_module_buffer(m, "weight")) == 3);
    ct_module_free(m);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(4, 3)), *t = ct_randint(0, 3, CT_SHAPE(4));
        static const char *const types[4] = {"CrossEntropyLoss", "MSELoss", "NLLLoss", "BCEWithLogitsLoss"};
        ct_module *crit[4] = {ct_nn_cross_entropy_loss(), ct_nn_mse_loss(), ct_nn_nll_loss(),
                              ct_nn_bce_with_logits_loss()};
        for (int i = 0; i < 4; i++) {
            CT_EXPECT_STR_EQ(ct_module_type(crit[i]), types[i]);
            CT_EXPECT(ct_forward(crit[i], x) == NULL);
            char want[128];
            snprintf(want, sizeof want, "%s takes an input and a target: call ct_loss(criterion, input, target)",
                     types[i]);
            CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, want);
        }
        ct_module *lin = ct_nn_linear(3, 3, true);
        CT_EXPECT(ct_loss(lin, x, t) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "loss: Linear is not a criterion");
        ct_module_free(lin);
        /* a NULL input is an earlier failure: its error stays */
        ct_set_error(CT_ERR_STATE, "earlier failure");
        CT_EXPECT(ct_loss(crit[0], NULL, t) == NULL && ct_loss(NULL, x, t) == NULL);
        CT_EXPECT_ERROR(CT_ERR_STATE, "earlier failure");
        CT_EXPECT(ct_loss(crit[0], x, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "loss: a tensor argument is NULL");
        CT_EXPECT(ct_loss(NULL, x, t) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "loss: NULL criterion");
        CT_EXPECT(ct_loss(crit[2], x, ct_randint(5, 6, CT_SHAPE(4))) == NULL); /* the functional's error */
        CT_EXPECT_ERROR(CT_ERR_INDEX, "nll_loss");
        for (int i = 0; i < 4; i++) ct_module_free(crit[i]);

        /* options a criterion or function does not take, PyTorch's message */
        CT_EXPECT(!ct_nn_mse_loss(.weight = ct_ones(CT_SHAPE(3))));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "MSELoss() got an unexpected keyword argument 'weight'");
        CT_EXPECT(!ct_nn_nll_loss(.label_smoothing = 0.1));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NLLLoss() got an unexpected keyword argument 'label_smoothing'");
        CT_EXPECT(!ct_nn_cross_entropy_loss(.label_smoothing = -0.5));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0");
        CT_EXPECT(!ct_nn_bce_with_logits_loss(.reduction = (ct_reduction)4));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "BCEWithLogitsLoss: 4 is not a valid value for reduction");
        CT_EXPECT(!ct_mse_loss(x, x, .ignore_index = 1));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "mse_loss() got an unexpected keyword argument 'ignore_index'");
        CT_EXPECT(!ct_nll_loss(x, t, .pos_weight = x));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "nll_loss() got an unexpected keyword argument 'pos_weight'");
        CT_EXPECT(!ct_binary_cross_entropy_with_logits(x, x, .label_smoothing = 0.1));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                        "binary_cross_entropy_with_logits() got an unexpected keyword argument 'label_smoothing'");
        ct_tensor *img = ct_randn(CT_SHAPE(1, 2, 6, 6));
        CT_EXPECT(!ct_max_pool2d(img, CT_PAIR(2, 2), .no_count_include_pad = true));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max_pool2d() got an unexpected keyword argument 'count_include_pad'");
        CT_EXPECT(!ct_avg_pool2d(img, CT_PAIR(2, 2), .dilation = {2, 2}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "avg_pool2d() got an unexpected keyword argument 'dilation'");
        CT_EXPECT(!ct_layer_norm(x, CT_SHAPE(3), NULL, NULL, .training = true));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "layer_norm() got an unexpected keyword argument 'training'");
        CT_EXPECT(!ct_conv2d(img, ct_randn(CT_SHAPE(2, 2, 3, 3)), NULL, .stride = {2}));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "conv2d: non-positive stride is not supported");
        ct_clear_error();
    }
}

/* The criterion in a training step, as PyTorch's loop writes it. */
static void test_training_step(void) {
    ct_manual_seed(5);
    ct_module *model = ct_nn_linear(4, 3, true);
    ct_module *criterion = ct_nn_cross_entropy_loss(.label_smoothing = 0.05);
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.5});
    ct_tensor *x = ct_randn(CT_SHAPE(16, 4)), *y = NULL;
    CT_SCOPE { /* classes 0..2 that depend on x, so that the model can learn them */
        ct_tensor *a = ct_argmax(x, 1, false);
        y = ct_retain(ct_where(ct_lt(a, ct_scalar_tensor(3, .dtype = CT_INT64)), a, ct_zeros_like(a)));
    }
    double first = 0, last = 0;
    for (int step = 0; step < 20; step++) CT_SCOPE {
        ct_tensor *loss = ct_loss(criterion, ct_forward(model, x), y);
        ct_zero_grad(opt);
        CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
        CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
        if (step == 0) first = ct_item(loss);
        last = ct_item(loss);
    }
    CT_EXPECT_MSG(last < first, "loss %g -> %g", first, last);
    ct_release(x);
    ct_release(y);
    ct_optimizer_free(opt);
    ct_module_free(criterion);
    ct_module_free(model);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_modules_match_functional);
    CT_RUN(test_loss_defaults);
    CT_RUN(test_nn_defaults);
    CT_RUN(test_weight_buffers);
    CT_RUN(test_errors);
    CT_RUN(test_training_step);
    return ct_test_finish();
}
