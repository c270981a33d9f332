/*
 * test_prune.c — torch.nn.utils.prune (src/nn/prune.c): the exact masks of
 * L1 pruning on known weights (ties, Python's rounding of the amount), the
 * number of zeros of random pruning and its reproducibility under a seed,
 * global pruning picking the smallest entries across layers, the forward
 * and backward of a pruned Linear and Conv2d against orig * mask computed
 * here, remove, repeated pruning composing as PyTorch's PruningContainer,
 * state_dict keys and loading, clones and module.to, OpenCL and CUDA against the
 * CPU, and every refusal with its message (leaving the module unchanged).
 */
#include <stdlib.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------- */

static void set_values(ct_tensor *t, const double *v) {
    CT_EXPECT_INT_EQ(ct_copy_from_host(t, v, CT_FLOAT64, ct_numel(t)), CT_OK);
}

/* t holds exactly want (n entries). */
static void expect_exact(const ct_tensor *t, const double *want, int64_t n, const char *what) {
    CT_EXPECT_INT_EQ(ct_numel(t), n);
    double *got = ct_test_values(t);
    for (int64_t i = 0; got && i < n; i++)
        CT_EXPECT_MSG(got[i] == want[i], "%s[%lld]: got %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
    free(got);
}

/* The comma-joined names of m's parameters (buffers) into buf. */
static const char *joined(ct_module *m, bool buffers, char *buf, size_t size) {
    ct_tensor *t[16];
    const char *names[16];
    int n = buffers ? ct_module_buffers(m, t, names, 16) : ct_module_parameters(m, t, names, 16);
    buf[0] = '\0';
    for (int i = 0; i < n && i < 16; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", names[i]);
    return buf;
}

static int64_t zeros_in(const ct_tensor *t) {
    double *v = ct_test_values(t);
    int64_t z = 0;
    for (int64_t i = 0; v && i < ct_numel(t); i++) z += v[i] == 0.0;
    free(v);
    return z;
}

/* A Linear(in, out) whose weight holds w (row-major [out, in]). */
static ct_module *linear_with(int64_t in, int64_t out, const double *w, bool bias) {
    ct_module *m = ct_nn_linear(in, out, bias);
    set_values(ct_module_param(m, "weight"), w);
    return m;
}

/* ---- L1 ----------------------------------------------------------------------------- */

/* Exact in float32; |-0.125| and |0.125| tie (indices 1 and 4). */
static const double k_w[6] = {0.5, -0.125, 0.375, -0.25, 0.125, 0.875};

static void test_l1_exact_mask(void) {
    ct_module *m = linear_with(3, 2, k_w, true);
    ct_tensor *weight = ct_module_param(m, "weight");
    CT_EXPECT(!ct_prune_is_pruned(m));
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.5), CT_OK); /* round(3.0) = 3 entries */
    CT_EXPECT(ct_prune_is_pruned(m));
    const double mask[6] = {1, 0, 1, 0, 0, 1}, pruned[6] = {0.5, 0, 0.375, 0, 0, 0.875};
    expect_exact(ct_module_buffer(m, "weight_mask"), mask, 6, "weight_mask");
    expect_exact(ct_module_param(m, "weight"), pruned, 6, "weight");
    expect_exact(ct_module_param(m, "weight_orig"), k_w, 6, "weight_orig");
    /* the same tensor object, renamed: an optimizer made before keeps training it */
    CT_EXPECT(ct_module_param(m, "weight_orig") == weight);
    CT_EXPECT(ct_module_param(m, "weight") != weight);
    CT_EXPECT(ct_dtype_of(ct_module_buffer(m, "weight_mask")) == CT_FLOAT32);
    CT_EXPECT(ct_module_get(m, "weight") == ct_module_param(m, "weight"));
    char buf[256];
    CT_EXPECT_STR_EQ(joined(m, false, buf, sizeof buf), "bias,weight_orig");
    CT_EXPECT_STR_EQ(joined(m, true, buf, sizeof buf), "weight_mask");
    CT_EXPECT_INT_EQ(ct_module_num_parameters(m), 8);
    ct_module_free(m);
}

/* Ties go to the lower index; the amount is rounded half to even. */
static void test_l1_ties_and_rounding(void) {
    ct_module *m = linear_with(3, 2, k_w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", 1), CT_OK);
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 0, 1, 1, 1, 1}, 6, "count 1");
    ct_module_free(m);

    m = linear_with(3, 2, k_w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.25), CT_OK); /* 1.5 -> 2 */
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 0, 1, 1, 0, 1}, 6, "0.25 of 6");
    ct_module_free(m);

    m = linear_with(3, 2, k_w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.75), CT_OK); /* 4.5 -> 4 */
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 0, 0, 0, 0, 1}, 6, "0.75 of 6");
    ct_module_free(m);

    m = linear_with(3, 2, k_w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.0), CT_OK);
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 1, 1, 1, 1, 1}, 6, "amount 0");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 1.0), CT_OK);
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){0, 0, 0, 0, 0, 0}, 6, "amount 1");
    ct_module_free(m);
}

/* ---- random ------------------------------------------------------------------------- */

static void test_random_counts_and_seed(void) {
    ct_module *a = ct_nn_linear(10, 20, true), *b = ct_nn_linear(10, 20, true);
    ct_manual_seed(7);
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured(a, "weight", 0.3), CT_OK);
    ct_manual_seed(7);
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured(b, "weight", 0.3), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(a, "weight_mask")), 60);
    double *ma = ct_test_values(ct_module_buffer(a, "weight_mask"));
    expect_exact(ct_module_buffer(b, "weight_mask"), ma, 200, "same seed, same mask");
    /* a pruned entry is a zero of the weight, a kept one its original value */
    double *w = ct_test_values(ct_module_param(a, "weight")), *o = ct_test_values(ct_module_param(a, "weight_orig"));
    for (int i = 0; i < 200; i++) CT_EXPECT(w[i] == (ma[i] ? o[i] : 0.0));
    free(ma), free(w), free(o);
    /* again: 7 more of the 140 kept */
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured_n(a, "bias", 7), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(a, "bias_mask")), 7);
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured_n(a, "weight", 7), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(a, "weight_mask")), 67);
    char buf[256];
    CT_EXPECT_STR_EQ(joined(a, false, buf, sizeof buf), "weight_orig,bias_orig");
    CT_EXPECT_STR_EQ(joined(a, true, buf, sizeof buf), "weight_mask,bias_mask");
    ct_module_free(a);
    ct_module_free(b);
}

/* ---- repeated pruning ------------------------------------------------------------------ */

/* The second amount applies to the entries still kept; pruned ones stay. */
static void test_repeat_composes(void) {
    const double w[8] = {0.8, -0.7, 0.6, -0.5, 0.4, -0.3, 0.2, -0.1};
    ct_module *m = linear_with(4, 2, w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.5), CT_OK); /* 4 smallest: 4..7 */
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 1, 1, 1, 0, 0, 0, 0}, 8, "first");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.5), CT_OK); /* 2 of the 4 kept: 2, 3 */
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 1, 0, 0, 0, 0, 0, 0}, 8, "second");
    /* a count is of the kept entries too, and may not exceed them */
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", 3), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amount=3 should be smaller than the number of parameters to prune=2");
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured_n(m, "weight", 1), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(m, "weight_mask")), 7);
    /* a custom mask multiplies in */
    ct_module *c = linear_with(4, 2, w, false);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(c, "weight", 0.5), CT_OK);
    CT_SCOPE {
        ct_tensor *mk = ct_tensor_from((bool[]){1, 0, 1, 1, 1, 1, 1, 0}, CT_BOOL, CT_SHAPE(2, 4));
        CT_EXPECT_INT_EQ(ct_prune_custom_from_mask(c, "weight", mk), CT_OK);
    }
    expect_exact(ct_module_buffer(c, "weight_mask"), (double[]){1, 0, 1, 1, 0, 0, 0, 0}, 8, "custom");
    char buf[256];
    CT_EXPECT_STR_EQ(joined(c, false, buf, sizeof buf), "weight_orig");
    ct_module_free(m);
    ct_module_free(c);
}

/* ---- global --------------------------------------------------------------------------- */

static void test_global_picks_smallest(void) {
    const double wa[4] = {5, -6, 0.25, 8}, wb[6] = {1, -2, 3, 4, -0.5, 9};
    ct_module *net = CT_SEQUENTIAL(linear_with(2, 2, wa, true), ct_nn_relu(), linear_with(3, 2, wb, true));
    ct_prune_target t[2] = {{ct_module_child(net, "0"), "weight"}, {ct_module_child(net, "2"), "weight"}};
    /* 0.4 of 10 = 4: 0.25 (layer 0), then 0.5, 1, 2 (layer 2) */
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(t, 2, CT_PRUNE_L1, 0.4), CT_OK);
    expect_exact(ct_module_get(net, "0.weight_mask"), (double[]){1, 1, 0, 1}, 4, "layer 0");
    expect_exact(ct_module_get(net, "2.weight_mask"), (double[]){0, 0, 1, 1, 0, 1}, 6, "layer 2");
    /* again over the 6 kept: 2 more, 3 and 4 */
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured_n(t, 2, CT_PRUNE_L1, 2), CT_OK);
    expect_exact(ct_module_get(net, "0.weight_mask"), (double[]){1, 1, 0, 1}, 4, "layer 0 again");
    expect_exact(ct_module_get(net, "2.weight_mask"), (double[]){0, 0, 0, 0, 0, 1}, 6, "layer 2 again");
    CT_EXPECT(ct_prune_is_pruned(net));
    /* weight and bias of one module in one call */
    ct_module *lin = linear_with(2, 2, wa, true);
    set_values(ct_module_param(lin, "bias"), (double[]){0.1, -7});
    ct_prune_target wb2[2] = {{lin, "weight"}, {lin, "bias"}};
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured_n(wb2, 2, CT_PRUNE_L1, 2), CT_OK);
    expect_exact(ct_module_buffer(lin, "weight_mask"), (double[]){1, 1, 0, 1}, 4, "weight");
    expect_exact(ct_module_buffer(lin, "bias_mask"), (double[]){0, 1}, 2, "bias");
    /* random: the count over the pool */
    ct_module *r1 = ct_nn_linear(8, 8, false), *r2 = ct_nn_linear(8, 4, false);
    ct_prune_target tr[2] = {{r1, "weight"}, {r2, "weight"}};
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(tr, 2, CT_PRUNE_RANDOM, 0.5), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(r1, "weight_mask")) + zeros_in(ct_module_buffer(r2, "weight_mask")),
                     48);
    ct_module_free(net);
    ct_module_free(lin);
    ct_module_free(r1);
    ct_module_free(r2);
}

/* ---- forward and backward ---------------------------------------------------------------- */

/* y = x @ (orig * mask)^T + b and d(sum(y * g))/d orig = (g^T x) * mask,
 * computed here in float64 from the stored values. */
static void check_linear(ct_module *m, ct_device dev) {
    int64_t in = ct_size(ct_module_param(m, "weight_orig"), 1), out = ct_size(ct_module_param(m, "weight_orig"), 0);
    enum { B = 5 };
    double *x = malloc(sizeof *x * B * (size_t)in), *g = malloc(sizeof *g * B * (size_t)out);
    ct_test_fill_uniform(x, B * in, -1, 1);
    ct_test_fill_uniform(g, B * out, -1, 1);
    double *w = ct_test_values(ct_module_param(m, "weight_orig")), *mk = ct_test_values(ct_module_buffer(m, "weight_mask"));
    double *b = ct_test_values(ct_module_param(m, "bias"));
    CT_EXPECT_INT_EQ(ct_set_grad(ct_module_param(m, "weight_orig"), NULL), CT_OK); /* zero_grad() */
    CT_SCOPE {
        ct_tensor *xt = ct_to_device(ct_tensor_from(x, CT_FLOAT64, CT_SHAPE(B, in), .dtype = CT_FLOAT32), dev);
        ct_tensor *gt = ct_to_device(ct_tensor_from(g, CT_FLOAT64, CT_SHAPE(B, out), .dtype = CT_FLOAT32), dev);
        double *xs = ct_test_values(xt), *gs = ct_test_values(gt);
        ct_tensor *y = ct_forward(m, xt);
        double *yv = ct_test_values(y);
        for (int i = 0; i < B; i++)
            for (int o = 0; o < out; o++) {
                double ref = b[o];
                for (int k = 0; k < in; k++) ref += xs[i * in + k] * w[o * in + k] * mk[o * in + k];
                CT_EXPECT_NEAR(yv[i * out + o], ref, 1e-5 * (1 + fabs(ref)));
            }
        CT_EXPECT_INT_EQ(ct_backward(ct_sum(ct_mul(y, gt), NULL, 0, false)), CT_OK);
        ct_tensor *grad = ct_grad(ct_module_param(m, "weight_orig"));
        CT_EXPECT(grad != NULL);
        double *gv = grad ? ct_test_values(grad) : NULL;
        for (int o = 0; gv && o < out; o++)
            for (int k = 0; k < in; k++) {
                double ref = 0;
                for (int i = 0; i < B; i++) ref += gs[i * out + o] * xs[i * in + k];
                ref *= mk[o * in + k];
                CT_EXPECT_NEAR(gv[o * in + k], ref, 1e-5 * (1 + fabs(ref)));
                if (mk[o * in + k] == 0) CT_EXPECT(gv[o * in + k] == 0);
            }
        free(xs), free(gs), free(yv), free(gv);
    }
    free(x), free(g), free(w), free(mk), free(b);
}

static void test_linear_forward_backward(void) {
    ct_module *m = ct_nn_linear(6, 4, true);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.4), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(m, "weight_mask")), 10); /* round(9.6) */
    check_linear(m, ct_device_cpu());
    ct_module_free(m);
}

/* An optimizer made before pruning trains weight_orig; the forward stays masked. */
static void test_optimizer_made_before(void) {
    ct_module *m = ct_nn_linear(3, 2, false);
    ct_optimizer *opt = ct_sgd(m, (ct_sgd_opts){.lr = 0.5});
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", 3), CT_OK);
    CT_SCOPE {
        ct_tensor *y = ct_forward(m, ct_ones(CT_SHAPE(1, 3)));
        CT_EXPECT_INT_EQ(ct_backward(ct_sum(y, NULL, 0, false)), CT_OK);
    }
    CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
    double *o = ct_test_values(ct_module_param(m, "weight_orig")), *mk = ct_test_values(ct_module_buffer(m, "weight_mask"));
    CT_SCOPE {
        ct_tensor *y = ct_forward(m, ct_ones(CT_SHAPE(1, 3)));
        double *yv = ct_test_values(y);
        for (int r = 0; r < 2; r++) {
            double ref = 0;
            for (int k = 0; k < 3; k++) ref += o[r * 3 + k] * mk[r * 3 + k];
            CT_EXPECT_NEAR(yv[r], ref, 1e-6);
        }
        free(yv);
    }
    free(o), free(mk);
    ct_optimizer_free(opt);
    ct_module_free(m);
}

static void test_conv_forward(void) {
    ct_module *c = ct_nn_conv2d(2, 3, 3, (ct_conv2d_opts){.padding = 1});
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(c, "weight", 0.6), CT_OK);
    CT_EXPECT_INT_EQ(zeros_in(ct_module_buffer(c, "weight_mask")), 32); /* round(32.4) */
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 2, 5, 5), CT_FLOAT32, -1, 1, NULL);
        ct_tensor *w = ct_mul(ct_module_param(c, "weight_orig"), ct_module_buffer(c, "weight_mask"));
        ct_tensor *ref = ct_conv2d(x, w, ct_module_param(c, "bias"), .padding = {1, 1});
        int64_t n = ct_numel(ref);
        double *rv = ct_test_values(ref);
        expect_exact(ct_forward(c, x), rv, n, "conv forward");
        double *rr = ct_test_values(ct_relu(ref));
        expect_exact(ct_forward_relu(c, x), rr, n, "conv forward_relu");
        free(rv), free(rr);
    }
    ct_module_free(c);
}

/* ---- remove ------------------------------------------------------------------------- */

static void test_remove(void) {
    ct_module *m = linear_with(3, 2, k_w, true);
    ct_tensor *weight = ct_module_param(m, "weight");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 0.5), CT_OK);
    CT_EXPECT_INT_EQ(ct_prune_remove(m, "weight"), CT_OK);
    CT_EXPECT(!ct_prune_is_pruned(m));
    CT_EXPECT(ct_module_param(m, "weight") == weight); /* the same object again */
    CT_EXPECT(ct_requires_grad(weight));
    CT_EXPECT(ct_module_param(m, "weight_orig") == NULL && ct_module_buffer(m, "weight_mask") == NULL);
    expect_exact(weight, (double[]){0.5, 0, 0.375, 0, 0, 0.875}, 6, "weight after remove");
    char buf[256];
    CT_EXPECT_STR_EQ(joined(m, false, buf, sizeof buf), "bias,weight");
    CT_EXPECT_STR_EQ(joined(m, true, buf, sizeof buf), "");
    CT_EXPECT_INT_EQ(ct_prune_remove(m, "weight"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                    "prune.remove: Parameter 'weight' of module Linear has to be pruned before pruning can be removed");
    /* pruning again after remove starts afresh */
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", 4), CT_OK);
    expect_exact(ct_module_buffer(m, "weight_mask"), (double[]){1, 0, 0, 0, 0, 1}, 6, "after remove");
    ct_module_free(m);
}

/* ---- state_dict, clone, module.to ---------------------------------------------------- */

static void test_state_dict(void) {
    ct_module *a = ct_nn_linear(4, 3, true), *b = ct_nn_linear(4, 3, true), *plain = ct_nn_linear(4, 3, true);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(a, "weight", 0.5), CT_OK);
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured(b, "weight", 0.25), CT_OK);
    ct_tensor_dict *d = ct_module_state_dict(a);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 3);
    const char *want[3] = {"bias", "weight_orig", "weight_mask"};
    for (int i = 0; i < 3 && i < ct_tensor_dict_size(d); i++) CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, i), want[i]);
    CT_EXPECT_INT_EQ(ct_module_load_state_dict(b, d, true), CT_OK);
    double *ma = ct_test_values(ct_module_buffer(a, "weight_mask"));
    expect_exact(ct_module_buffer(b, "weight_mask"), ma, 12, "loaded mask");
    free(ma);
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 4), CT_FLOAT32, -1, 1, NULL);
        double *ya = ct_test_values(ct_forward(a, x));
        expect_exact(ct_forward(b, x), ya, 6, "loaded pruned module");
        free(ya);
    }
    CT_EXPECT_INT_EQ(ct_module_load_state_dict(plain, d, true), CT_ERR_FORMAT);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "Unexpected key(s) in state_dict: \"weight_orig\", \"weight_mask\"");
    ct_tensor_dict_free(d);
    ct_module_free(a);
    ct_module_free(b);
    ct_module_free(plain);
}

static void test_clone_and_to(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 3, true), ct_nn_relu(), ct_nn_linear(3, 2, false));
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(ct_module_child(m, "0"), "weight", 0.5), CT_OK);
    ct_module *c = ct_module_clone(m, ct_device_cpu());
    CT_EXPECT(c != NULL && ct_prune_is_pruned(c));
    char bm[256], bc[256];
    CT_EXPECT_STR_EQ(joined(c, false, bc, sizeof bc), joined(m, false, bm, sizeof bm));
    CT_EXPECT(ct_module_get(c, "0.weight") != NULL && ct_module_get(c, "0.weight") != ct_module_get(m, "0.weight"));
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(3, 4), CT_FLOAT32, -1, 1, NULL);
        double *ym = ct_test_values(ct_forward(m, x));
        expect_exact(ct_forward(c, x), ym, 6, "clone");
        free(ym);
    }
    /* the clone is its own: removing there leaves the original pruned */
    CT_EXPECT_INT_EQ(ct_prune_remove(ct_module_child(c, "0"), "weight"), CT_OK);
    CT_EXPECT(!ct_prune_is_pruned(c) && ct_prune_is_pruned(m));
    ct_module_free(c);
    ct_module_free(m);
}

/* ---- the docs/pruning.md example ------------------------------------------------------ */

static void test_fmnist_cnn_example(void) {
    ct_module *model = ct_model_fmnist_cnn();
    ct_module *c1 = ct_module_child(model, "c1"), *c2 = ct_module_child(model, "c2");
    ct_module *f1 = ct_module_child(model, "f1"), *f2 = ct_module_child(model, "f2");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(c1, "weight", 0.3), CT_OK);
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured_n(f2, "bias", 2), CT_OK);
    ct_prune_target targets[] = {{c1, "weight"}, {c2, "weight"}, {f1, "weight"}, {f2, "weight"}};
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(targets, 4, CT_PRUNE_L1, 0.5), CT_OK);
    CT_EXPECT(ct_prune_is_pruned(model));
    int64_t total = 0, zeros = 0;
    for (int i = 0; i < 4; i++) {
        ct_tensor *mk = ct_module_buffer(targets[i].module, "weight_mask");
        total += ct_numel(mk), zeros += zeros_in(mk);
    }
    /* 0.3 of c1's 288 (86), then half of the remaining kept entries */
    int64_t kept = total - 86;
    CT_EXPECT_INT_EQ(zeros, 86 + (int64_t)nearbyint(0.5 * (double)kept));
    ct_tensor_dict *d = ct_module_state_dict(model);
    CT_EXPECT(ct_tensor_dict_contains(d, "c1.weight_orig") && ct_tensor_dict_contains(d, "c1.weight_mask") &&
              ct_tensor_dict_contains(d, "f2.bias_mask") && !ct_tensor_dict_contains(d, "c1.weight"));
    ct_tensor_dict_free(d);
    double *before = NULL;
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 1, 28, 28), CT_FLOAT32, 0, 1, NULL);
        before = ct_test_values(ct_forward(model, x));
        for (int i = 0; i < 4; i++) CT_EXPECT_INT_EQ(ct_prune_remove(targets[i].module, "weight"), CT_OK);
        CT_EXPECT_INT_EQ(ct_prune_remove(f2, "bias"), CT_OK);
        CT_EXPECT(!ct_prune_is_pruned(model));
        expect_exact(ct_forward(model, x), before, 20, "after remove");
    }
    free(before);
    char buf[256];
    CT_EXPECT_STR_EQ(joined(model, false, buf, sizeof buf),
                     "c1.bias,c1.weight,c2.bias,c2.weight,f1.bias,f1.weight,f2.weight,f2.bias");
    ct_module_free(model);
}

/* ---- devices against the CPU ----------------------------------------------------------- */

/* Masks, forward, gradients, remove and module_to on a device against the CPU. */
static void matches_cpu_on(ct_device dev) {
    ct_module *cpu = CT_SEQUENTIAL(ct_nn_linear(6, 5, true), ct_nn_relu(), ct_nn_linear(5, 3, true));
    ct_module *gpu = ct_module_clone(cpu, dev);
    CT_EXPECT(gpu != NULL);
    if (!gpu) return ct_module_free(cpu);
    ct_module *pair[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++) {
        CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(ct_module_child(pair[i], "0"), "weight", 0.3), CT_OK);
        ct_manual_seed(11);
        CT_EXPECT_INT_EQ(ct_prune_random_unstructured(ct_module_child(pair[i], "2"), "weight", 0.4), CT_OK);
        ct_prune_target t[2] = {{ct_module_child(pair[i], "0"), "weight"}, {ct_module_child(pair[i], "2"), "bias"}};
        CT_EXPECT_INT_EQ(ct_prune_global_unstructured(t, 2, CT_PRUNE_L1, 0.2), CT_OK);
    }
    const char *bufs[3] = {"0.weight_mask", "2.weight_mask", "2.bias_mask"};
    for (int i = 0; i < 3; i++) {
        ct_tensor *g = ct_module_get(gpu, bufs[i]);
        CT_EXPECT(ct_device_equal(ct_device_of(g), dev));
        double *want = ct_test_values(ct_module_get(cpu, bufs[i]));
        expect_exact(g, want, ct_numel(g), bufs[i]);
        free(want);
    }
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(4, 6), CT_FLOAT32, -1, 1, NULL);
        ct_tensor *yc = ct_forward(cpu, x), *yg = ct_forward(gpu, ct_to_device(x, dev));
        double *want = ct_test_values(yc);
        CT_EXPECT_CLOSE(yg, want, ct_numel(yc), 1e-5, 1e-5);
        free(want);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum(yc, NULL, 0, false)), CT_OK);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum(yg, NULL, 0, false)), CT_OK);
        ct_tensor *gc = ct_grad(ct_module_get(cpu, "0.weight_orig")), *gg = ct_grad(ct_module_get(gpu, "0.weight_orig"));
        CT_EXPECT(gc && gg);
        double *gw = gc ? ct_test_values(gc) : NULL;
        if (gg && gw) CT_EXPECT_CLOSE(gg, gw, ct_numel(gc), 1e-5, 1e-5);
        free(gw);
    }
    check_linear(ct_module_child(gpu, "0"), dev);
    CT_EXPECT_INT_EQ(ct_prune_remove(ct_module_child(gpu, "0"), "weight"), CT_OK);
    CT_EXPECT_INT_EQ(ct_prune_remove(ct_module_child(cpu, "0"), "weight"), CT_OK);
    double *want = ct_test_values(ct_module_get(cpu, "0.weight"));
    expect_exact(ct_module_get(gpu, "0.weight"), want, 30, "removed on the device");
    free(want);
    /* a pruned module moved in place recomputes its weight on the new device */
    CT_EXPECT(ct_module_to(cpu, dev) == cpu);
    CT_EXPECT(ct_device_equal(ct_device_of(ct_module_get(cpu, "2.weight")), dev));
    ct_module_free(cpu);
    ct_module_free(gpu);
}

/* ---- refusals ------------------------------------------------------------------------ */

static void test_errors(void) {
    ct_module *m = linear_with(3, 2, k_w, true), *bn = ct_nn_batchnorm1d(3, (ct_batchnorm_opts){0});
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "wieght", 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "prune.l1_unstructured: Linear has no parameter named 'wieght'");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(m, "weight", 1.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amount=1.5 should either be a float in the range [0, 1] or a non-negative integer");
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured(m, "weight", -0.25), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "prune.random_unstructured: amount=-0.25");
    CT_EXPECT_INT_EQ(ct_prune_random_unstructured(m, "weight", NAN), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amount=nan");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", -1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amount=-1 should either be");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured_n(m, "weight", 7), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "amount=7 should be smaller than the number of parameters to prune=6");
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(bn, "running_mean", 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "'running_mean' of BatchNorm1d is a buffer, not a parameter");
    CT_EXPECT_INT_EQ(ct_prune_remove(m, "bias"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Parameter 'bias' of module Linear has to be pruned");
    CT_SCOPE {
        CT_EXPECT_INT_EQ(ct_prune_custom_from_mask(m, "weight", ct_ones(CT_SHAPE(3, 2))), CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "prune.custom_from_mask: mask has shape [3, 2] but weight of Linear has shape [2, 3]");
    }
    /* a name the pruning would need is taken */
    CT_EXPECT_INT_EQ(ct_module_add_buffer(bn, "weight_mask", ct_zeros(CT_SHAPE(1))), CT_OK);
    CT_EXPECT_INT_EQ(ct_prune_l1_unstructured(bn, "weight", 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "BatchNorm1d already has an attribute 'weight_mask', which pruning 'weight' needs");
    /* global: all or nothing */
    ct_prune_target t[3] = {{m, "weight"}, {bn, "weight"}, {m, "nope"}};
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(t, 3, CT_PRUNE_L1, 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "already has an attribute");
    ct_prune_target dup[2] = {{m, "weight"}, {m, "weight"}};
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(dup, 2, CT_PRUNE_L1, 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "(Linear, 'weight') appears twice, as targets 0 and 1");
    CT_EXPECT_INT_EQ(ct_prune_global_unstructured(t, 1, (ct_prune_method)5, 0.5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown pruning method 5");
    CT_EXPECT(!ct_prune_is_pruned(m) && !ct_prune_is_pruned(bn));
    char buf[256];
    CT_EXPECT_STR_EQ(joined(m, false, buf, sizeof buf), "weight,bias");
    CT_EXPECT_STR_EQ(joined(m, true, buf, sizeof buf), "");
    expect_exact(ct_module_param(m, "weight"), k_w, 6, "unchanged");
    ct_module_free(m);
    ct_module_free(bn);
}

static void test_opencl_matches_cpu(void) {
    if (ct_test_opencl_devices("pruning on OpenCL")) matches_cpu_on(ct_device_opencl(0));
}

static void test_cuda_matches_cpu(void) {
    if (ct_test_cuda_devices("pruning on CUDA")) matches_cpu_on(ct_device_cuda(0));
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_l1_exact_mask);
    CT_RUN(test_l1_ties_and_rounding);
    CT_RUN(test_random_counts_and_seed);
    CT_RUN(test_repeat_composes);
    CT_RUN(test_global_picks_smallest);
    CT_RUN(test_linear_forward_backward);
    CT_RUN(test_optimizer_made_before);
    CT_RUN(test_conv_forward);
    CT_RUN(test_remove);
    CT_RUN(test_state_dict);
    CT_RUN(test_clone_and_to);
    CT_RUN(test_fmnist_cnn_example);
    CT_RUN(test_opencl_matches_cpu);
    CT_RUN(test_cuda_matches_cpu);
    CT_RUN(test_errors);
    return ct_test_finish();
}
