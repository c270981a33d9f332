/*
 * test_autograd_nn.c — float64 gradchecks of the neural-network ops through
 * their public functions (so the recording in src/autograd/rules_nn.c is
 * what is checked), and a CNN whose loss falls when trained.
 */
#include "testutil.h"

#include "ctorch/functional.h"

static ct_tensor *leaf64(ct_shape s, double lo, double hi) {
    ct_tensor *t = ct_test_random(s, CT_FLOAT64, lo, hi, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

#define FN(name, call) \
    static ct_tensor *name(ct_tensor *const *in, int n, void *u) { (void)n; (void)u; return call; }
FN(f_conv, ct_conv2d(in[0], in[1], in[2], .stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}))
FN(f_conv_groups, ct_conv2d(in[0], in[1], NULL, .padding = {1, 1}, .groups = 2))
FN(f_maxpool, ct_max_pool2d(in[0], CT_PAIR(2, 2)))
FN(f_avgpool, ct_avg_pool2d(in[0], CT_PAIR(3, 3), .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true,
                                  .no_count_include_pad = true))
FN(f_adaptive, ct_adaptive_avg_pool2d(in[0], CT_PAIR(2, 3)))
FN(f_bn_train, ct_batch_norm(in[0], NULL, NULL, in[1], in[2], .training = true))
FN(f_layernorm, ct_layer_norm(in[0], CT_SHAPE(4), in[1], in[2]))
FN(f_mse, ct_mse_loss(in[0], in[1]))
FN(f_bce, ct_binary_cross_entropy_with_logits(in[0], in[1], .reduction = CT_REDUCTION_SUM))

static ct_tensor *g_target, *g_indices;
FN(f_ce, ct_cross_entropy(in[0], g_target, .label_smoothing = 0.1))
FN(f_nll, ct_nll_loss(ct_log_softmax(in[0], 1), g_target, .ignore_index = 2))
FN(f_embedding, ct_embedding(g_indices, in[0], CT_NO_PADDING_IDX))

static void check(const char *name, ct_gradcheck_fn fn, ct_tensor **in, int n) {
    bool ok = false;
    ct_status st = ct_gradcheck(fn, in, n, NULL, &ok);
    CT_EXPECT_MSG(st == CT_OK && ok, "gradcheck %s: %s", name, ct_last_error());
    ct_clear_error();
    for (int i = 0; i < n; i++) ct_release(in[i]);
}

static void test_gradcheck_conv_and_pooling(void) {
    check("conv2d", f_conv, (ct_tensor *[]){leaf64(CT_SHAPE(2, 2, 6, 5), -1, 1), leaf64(CT_SHAPE(3, 2, 3, 2), -1, 1),
                                            leaf64(CT_SHAPE(3), -1, 1)}, 3);
    check("conv2d groups", f_conv_groups, (ct_tensor *[]){leaf64(CT_SHAPE(1, 4, 4, 4), -1, 1), leaf64(CT_SHAPE(2, 2, 3, 3), -1, 1)}, 2);
    check("max_pool2d", f_maxpool, (ct_tensor *[]){leaf64(CT_SHAPE(2, 2, 4, 6), -1, 1)}, 1);
    check("avg_pool2d", f_avgpool, (ct_tensor *[]){leaf64(CT_SHAPE(1, 2, 5, 5), -1, 1)}, 1);
    check("adaptive_avg_pool2d", f_adaptive, (ct_tensor *[]){leaf64(CT_SHAPE(2, 1, 5, 7), -1, 1)}, 1);
}

static void test_gradcheck_norms(void) {
    check("batch_norm", f_bn_train, (ct_tensor *[]){leaf64(CT_SHAPE(4, 3, 2, 2), -1, 1), leaf64(CT_SHAPE(3), 0.5, 1.5),
                                                    leaf64(CT_SHAPE(3), -1, 1)}, 3);
    check("layer_norm", f_layernorm, (ct_tensor *[]){leaf64(CT_SHAPE(3, 4), -1, 1), leaf64(CT_SHAPE(4), 0.5, 1.5),
                                                     leaf64(CT_SHAPE(4), -1, 1)}, 3);
}

static void test_gradcheck_losses_and_embedding(void) {
    check("mse_loss", f_mse, (ct_tensor *[]){leaf64(CT_SHAPE(3, 4), -1, 1), leaf64(CT_SHAPE(3, 4), -1, 1)}, 2);
    check("bce_with_logits", f_bce, (ct_tensor *[]){leaf64(CT_SHAPE(5), -2, 2), leaf64(CT_SHAPE(5), 0, 1)}, 2);
    g_target = ct_tensor_from((int64_t[]){0, 2, 1, 2}, CT_INT64, CT_SHAPE(4));
    check("cross_entropy", f_ce, (ct_tensor *[]){leaf64(CT_SHAPE(4, 3), -2, 2)}, 1);
    check("nll_loss(log_softmax) with ignore_index", f_nll, (ct_tensor *[]){leaf64(CT_SHAPE(4, 3), -2, 2)}, 1);
    ct_release(g_target);
    g_indices = ct_tensor_from((int64_t[]){1, 3, 1, 0, 3, 3}, CT_INT64, CT_SHAPE(2, 3));
    check("embedding", f_embedding, (ct_tensor *[]){leaf64(CT_SHAPE(4, 2), -1, 1)}, 1);
    ct_release(g_indices);
}

/* The Fashion-MNIST CNN learns a fixed random batch (loss falls). */
static void test_cnn_learns(void) {
    ct_manual_seed(11);
    ct_module *net = ct_model_fmnist_cnn();
    ct_optimizer *opt = ct_sgd(net, (ct_sgd_opts){.lr = 0.05, .momentum = 0.9});
    ct_tensor *x = ct_randn(CT_SHAPE(16, 1, 28, 28)), *y = ct_randint(0, 10, CT_SHAPE(16));
    double first = 0, last = 0;
    for (int step = 0; step < 15; step++) CT_SCOPE {
        ct_tensor *loss = ct_cross_entropy(ct_forward(net, x), y);
        ct_zero_grad(opt);
        CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
        CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
        last = ct_item(loss);
        if (step == 0) first = last;
    }
    CT_EXPECT_MSG(last < 0.5 * first, "CNN loss %g -> %g", first, last);
    ct_release(x), ct_release(y);
    ct_optimizer_free(opt);
    ct_module_free(net);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_gradcheck_conv_and_pooling);
    CT_RUN(test_gradcheck_norms);
    CT_RUN(test_gradcheck_losses_and_embedding);
    CT_RUN(test_cnn_learns);
    return ct_test_finish();
}
