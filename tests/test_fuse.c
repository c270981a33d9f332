/*
 * test_fuse.c — folding eval-mode batch norm into the convolution before
 * it (src/nn/fuse.c): the fused conv computes what conv then bn computed,
 * for float32 and float64, with and without conv bias, with stride,
 * padding, dilation and groups, with a non-affine bn, on OpenCL; its
 * parameters are the float64 folding rounded once; the whole zoo ResNet-18
 * gives the same outputs fused and unfused; every refusal has its exact
 * message; and a failing fusion leaves the model bit-identical.
 *
 * White-box where the public API cannot build the case: modules are
 * converted to float64 and batch norms stripped of their affine parameters
 * through module_impl.h, since ctorch has no module.double() or
 * BatchNorm2d(affine=False) yet.
 */
#include <stdlib.h>

#include "nn/module_impl.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------- */

static void fill_uniform(ct_tensor *t, double lo, double hi) {
    if (!t) return;
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof *v * (size_t)n);
    ct_test_fill_uniform(v, n, lo, hi);
    CT_EXPECT(ct_copy_from_host(t, v, CT_FLOAT64, n) == CT_OK);
    free(v);
}

/* Statistics and affine parameters far from the identity, so that a fold
 * that forgot a term shows. */
static void randomize_bn(ct_module *m) {
    if (!strcmp(m->type, "BatchNorm2d")) {
        fill_uniform(ct_module_param(m, "weight"), 0.5, 1.5);
        fill_uniform(ct_module_param(m, "bias"), -0.5, 0.5);
        fill_uniform(ct_module_buffer(m, "running_mean"), -0.3, 0.3);
        fill_uniform(ct_module_buffer(m, "running_var"), 0.5, 2.0);
    }
    for (int i = 0; i < m->nchildren; i++) randomize_bn(m->children[i].m);
}

/* module.to(dtype) for one module: float parameters and buffers replaced by
 * converted copies (parameters keep requires_grad). */
static void module_to_dtype(ct_module *m, ct_dtype dt) {
    named_tensor *lists[2] = {m->params, m->buffers};
    int counts[2] = {m->nparams, m->nbuffers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            ct_tensor *old = lists[l][i].t, *t = NULL;
            if (!ct_dtype_is_floating(ct_dtype_of(old))) continue;
            CT_NO_GRAD CT_SCOPE { t = ct_retain(ct_to_dtype(old, dt)); }
            if (l == 0) ct_set_requires_grad(t, ct_requires_grad(old));
            lists[l][i].t = t;
            ct_decref(old);
        }
}

/* BatchNorm2d(affine=False): no weight, no bias. */
static void drop_affine(ct_module *bn) {
    for (int i = 0; i < bn->nparams; i++) free(bn->params[i].name), ct_decref(bn->params[i].t);
    bn->nparams = 0;
}

static double max_abs(const double *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* ---- the fused conv against conv then bn ---------------------------------------------- */

typedef struct conv_case {
    int64_t in, out, k, stride, padding, dilation, groups;
    bool bias;
    double eps;
} conv_case;

static const conv_case k_cases[] = {
    {3, 4, 3, 1, 0, 1, 1, true, 0},       {3, 5, 3, 2, 1, 1, 1, false, 0},
    {4, 6, 3, 1, 2, 2, 2, true, 1e-3},    {6, 6, 1, 1, 0, 1, 6, false, 0}, /* depthwise 1x1 */
    {4, 8, 5, 3, 2, 1, 4, true, 0.25},    {2, 3, 2, 1, 1, 1, 1, false, 1e-5},
};

/* The folded parameters, as the test computes them from conv's and bn's
 * stored values: w * (gamma / sqrt(var + eps)) in float64, rounded once. */
static void expected_fold(ct_module *conv, ct_module *bn, double eps, ct_dtype dt, double **w_out, double **b_out) {
    ct_tensor *w = ct_module_param(conv, "weight"), *b = ct_module_param(conv, "bias");
    ct_tensor *g = ct_module_param(bn, "weight"), *be = ct_module_param(bn, "bias");
    int64_t c = ct_size(w, 0), per = ct_numel(w) / c;
    double *wv = ct_test_values(w), *bv = b ? ct_test_values(b) : NULL, *gv = g ? ct_test_values(g) : NULL;
    double *bev = be ? ct_test_values(be) : NULL, *mu = ct_test_values(ct_module_buffer(bn, "running_mean"));
    double *var = ct_test_values(ct_module_buffer(bn, "running_var"));
    double *nb = malloc(sizeof *nb * (size_t)c);
    for (int64_t j = 0; j < c; j++) {
        double scale = (gv ? gv[j] : 1.0) / sqrt(var[j] + eps);
        for (int64_t i = 0; i < per; i++) wv[j * per + i] = ct_test_round_to(dt, wv[j * per + i] * scale);
        nb[j] = ct_test_round_to(dt, ((bv ? bv[j] : 0.0) - mu[j]) * scale + (bev ? bev[j] : 0.0));
    }
    free(bv), free(gv), free(bev), free(mu), free(var);
    *w_out = wv, *b_out = nb;
}

/* One case in one dtype (affine or not): the fused conv's configuration,
 * parameters and outputs. */
static void check_case(const conv_case *cc, ct_dtype dt, bool affine) {
    ct_module *conv = ct_nn_conv2d(cc->in, cc->out, cc->k,
                                   (ct_conv2d_opts){.stride = cc->stride, .padding = cc->padding,
                                                    .dilation = cc->dilation, .groups = cc->groups,
                                                    .no_bias = !cc->bias});
    ct_module *bn = ct_nn_batchnorm2d(cc->out, (ct_batchnorm_opts){.eps = cc->eps});
    randomize_bn(bn);
    if (!affine) drop_affine(bn);
    module_to_dtype(conv, dt);
    module_to_dtype(bn, dt);
    ct_module_eval(conv);
    ct_module_eval(bn);
    ct_module *fused = ct_fuse_conv_bn_eval(conv, bn);
    CT_EXPECT_MSG(fused != NULL, "fuse failed: %s", ct_last_error());
    if (!fused) {
        ct_module_free(conv);
        ct_module_free(bn);
        return;
    }
    CT_EXPECT_STR_EQ(ct_module_type(fused), "Conv2d");
    CT_EXPECT(!ct_module_is_training(fused));
    ct_tensor *fw = ct_module_param(fused, "weight"), *fb = ct_module_param(fused, "bias");
    CT_EXPECT(fb != NULL);
    CT_EXPECT(ct_dtype_of(fw) == dt && ct_dtype_of(fb) == dt);
    CT_EXPECT_SHAPE(fw, ct_shape_of(ct_module_param(conv, "weight")));
    CT_EXPECT_SHAPE(fb, CT_SHAPE(cc->out));
    /* PyTorch: Parameter(w', conv.weight.requires_grad), Parameter(b', conv.bias.requires_grad), no bias: False */
    CT_EXPECT(ct_requires_grad(fw));
    CT_EXPECT(ct_requires_grad(fb) == cc->bias);
    CT_EXPECT((ct_module_param(conv, "bias") != NULL) == cc->bias); /* the inputs are untouched */
    CT_EXPECT_INT_EQ(ct_module_num_parameters(fused), ct_numel(fw) + cc->out);

    double *ew, *eb, eps = cc->eps ? cc->eps : 1e-5;
    expected_fold(conv, bn, eps, dt, &ew, &eb);
    CT_EXPECT_CLOSE(fw, ew, ct_numel(fw), 0, 0); /* rounded once: bit for bit */
    CT_EXPECT_CLOSE(fb, eb, cc->out, 0, 0);
    free(ew), free(eb);

    CT_SCOPE {
        ct_shape xs = CT_SHAPE(2, cc->in, 9, 9);
        ct_tensor *x = ct_test_random(xs, dt, -2, 2, NULL);
        ct_tensor *ref = ct_forward(bn, ct_forward(conv, x));
        ct_tensor *out = ct_forward(fused, x);
        CT_EXPECT_SHAPE(out, ct_shape_of(ref));
        double *rv = ct_test_values(ref);
        int64_t n = ct_numel(ref);
        double tol = (dt == CT_FLOAT64 ? 1e-12 : 2e-5) * fmax(1.0, max_abs(rv, n));
        if (!CT_EXPECT_CLOSE(out, rv, n, 0, tol))
            printf("  case in=%lld out=%lld k=%lld stride=%lld groups=%lld bias=%d %s affine=%d\n", (long long)cc->in,
                   (long long)cc->out, (long long)cc->k, (long long)cc->stride, (long long)cc->groups, cc->bias,
                   ct_dtype_name(dt), affine);
        free(rv);
    }
    ct_module_free(fused);
    ct_module_free(conv);
    ct_module_free(bn);
}

static void test_fused_conv_matches(void) {
    for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++) {
        check_case(&k_cases[i], CT_FLOAT32, true);
        check_case(&k_cases[i], CT_FLOAT64, true);
    }
    check_case(&k_cases[0], CT_FLOAT32, false);
    check_case(&k_cases[1], CT_FLOAT64, false);
}

/* A conv whose weight requires no grad gives a fused weight that requires none. */
static void test_requires_grad_follows_conv(void) {
    ct_module *conv = ct_nn_conv2d(2, 3, 3, (ct_conv2d_opts){0}), *bn = ct_nn_batchnorm2d(3, (ct_batchnorm_opts){0});
    ct_module_eval(conv);
    ct_module_eval(bn);
    ct_set_requires_grad(ct_module_param(conv, "weight"), false);
    ct_module *fused = ct_fuse_conv_bn_eval(conv, bn);
    CT_EXPECT(fused && !ct_requires_grad(ct_module_param(fused, "weight")));
    CT_EXPECT(fused && ct_requires_grad(ct_module_param(fused, "bias")));
    ct_module_free(fused);
    ct_module_free(conv);
    ct_module_free(bn);
}

static void test_fuse_on_opencl(void) {
    if (ct_test_opencl_devices("fusing on opencl:0") <= 0) return;
    ct_device cl = ct_device_opencl(0);
    ct_module *conv = ct_nn_conv2d(3, 4, 3, (ct_conv2d_opts){.padding = 1});
    ct_module *bn = ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0});
    randomize_bn(bn);
    ct_module_eval(conv);
    ct_module_eval(bn);
    ct_module *fused_cpu = ct_fuse_conv_bn_eval(conv, bn);
    CT_EXPECT(ct_module_to(conv, cl) && ct_module_to(bn, cl));
    ct_module *fused = ct_fuse_conv_bn_eval(conv, bn);
    CT_EXPECT_MSG(fused != NULL, "%s", ct_last_error());
    if (fused && fused_cpu) CT_SCOPE {
        ct_tensor *fw = ct_module_param(fused, "weight");
        CT_EXPECT(ct_device_equal(ct_device_of(fw), cl));
        CT_EXPECT(ct_device_equal(ct_device_of(ct_module_param(fused, "bias")), cl));
        double *cw = ct_test_values(ct_module_param(fused_cpu, "weight"));
        CT_EXPECT_CLOSE(fw, cw, ct_numel(fw), 0, 0); /* the folding is done on the host either way */
        free(cw);
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 6, 6), CT_FLOAT32, -1, 1, NULL);
        double *want = ct_test_values(ct_forward(fused_cpu, x));
        CT_EXPECT_CLOSE(ct_forward(fused, ct_to_device(x, cl)), want, 2 * 4 * 36, 1e-5, 1e-5);
        free(want);
    }
    CT_EXPECT(ct_module_to(bn, ct_device_cpu()) != NULL);
    CT_EXPECT(ct_fuse_conv_bn_eval(conv, bn) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_ERR_DEVICE);
    CT_EXPECT_STR_EQ(ct_last_error(), "fuse_conv_bn_eval: bn.weight is on cpu but conv.weight is on opencl:0 "
                                      "(move both modules to one device first)");
    ct_clear_error();
    ct_module_free(fused);
    ct_module_free(fused_cpu);
    ct_module_free(conv);
    ct_module_free(bn);
}

/* ---- refusals ------------------------------------------------------------------------- */

#define EXPECT_REFUSED(call, code, msg)                   \
    do {                                                  \
        ct_clear_error();                                 \
        CT_EXPECT((call) == NULL);                        \
        CT_EXPECT_INT_EQ(ct_last_status(), (code));       \
        CT_EXPECT_STR_EQ(ct_last_error(), (msg));         \
        ct_clear_error();                                 \
    } while (0)

static ct_tensor *echo(ct_module *self, const ct_tensor *x) {
    (void)self;
    return ct_clone(x);
}

static void test_fuse_errors(void) {
    ct_module *conv = ct_nn_conv2d(3, 4, 3, (ct_conv2d_opts){0}), *bn = ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0});
    ct_module *bn5 = ct_nn_batchnorm2d(5, (ct_batchnorm_opts){0}), *bn1d = ct_nn_batchnorm1d(4, (ct_batchnorm_opts){0});
    ct_module *lin = ct_nn_linear(3, 4, true), *fake = ct_module_new("Conv2d", echo, NULL, NULL);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn), CT_ERR_STATE,
                   "fuse_conv_bn_eval: Fusion only for eval! conv and bn are in training mode (call ct_module_eval "
                   "first)");
    ct_module_eval(conv);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn), CT_ERR_STATE,
                   "fuse_conv_bn_eval: Fusion only for eval! bn is in training mode (call ct_module_eval first)");
    ct_module_eval(bn);
    ct_module_train(conv, true);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn), CT_ERR_STATE,
                   "fuse_conv_bn_eval: Fusion only for eval! conv is in training mode (call ct_module_eval first)");
    ct_module_eval(conv);
    ct_module_eval(bn5);
    ct_module_eval(bn1d);
    ct_module_eval(lin);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn5), CT_ERR_SHAPE,
                   "fuse_conv_bn_eval: conv has 4 output channels but bn has num_features=5");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(lin, bn), CT_ERR_INVALID_ARG,
                   "fuse_conv_bn_eval: conv must be a Conv2d (ct_nn_conv2d), got Linear");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(fake, bn), CT_ERR_INVALID_ARG,
                   "fuse_conv_bn_eval: conv must be a Conv2d (ct_nn_conv2d), got Conv2d");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn1d), CT_ERR_INVALID_ARG,
                   "fuse_conv_bn_eval: bn must be a BatchNorm2d (ct_nn_batchnorm2d), got BatchNorm1d");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(bn, conv), CT_ERR_INVALID_ARG,
                   "fuse_conv_bn_eval: conv must be a Conv2d (ct_nn_conv2d), got BatchNorm2d");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(NULL, bn), CT_ERR_INVALID_ARG, "fuse_conv_bn_eval: NULL conv");
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, NULL), CT_ERR_INVALID_ARG, "fuse_conv_bn_eval: NULL bn");
    /* a NULL from a failed constructor keeps its error */
    ct_set_error(CT_ERR_OOM, "the constructor's error");
    CT_EXPECT(ct_fuse_conv_bn_eval(NULL, bn) == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "the constructor's error");
    module_to_dtype(bn, CT_FLOAT64);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn), CT_ERR_DTYPE,
                   "fuse_conv_bn_eval: bn.weight is float64 but conv.weight is float32 (fusion needs one dtype)");
    module_to_dtype(bn, CT_FLOAT32);
    CT_EXPECT_INT_EQ(ct_module_add_child(conv, "extra", ct_nn_relu()), CT_OK);
    EXPECT_REFUSED(ct_fuse_conv_bn_eval(conv, bn), CT_ERR_INVALID_ARG,
                   "fuse_conv_bn_eval: conv has child modules, which fusion would drop");
    ct_module *all[] = {conv, bn, bn5, bn1d, lin, fake};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ct_module_free(all[i]);
}

/* ---- inside a model ------------------------------------------------------------------- */

/* The model's output on x, as host values. */
static double *outputs(ct_module *m, const ct_tensor *x) {
    double *v = NULL;
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *y = ct_forward(m, x);
        CT_EXPECT_MSG(y != NULL, "forward failed: %s", ct_last_error());
        v = ct_test_values(y);
    }
    return v;
}

static const char *child_type(ct_module *m, const char *path) {
    ct_module *cur = m;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *seg = strtok(buf, "."); seg && cur; seg = strtok(NULL, ".")) cur = ct_module_child(cur, seg);
    return cur ? ct_module_type(cur) : "(none)";
}

static ct_module *eval_resnet(void) {
    ct_module *m = ct_model_resnet18(10);
    randomize_bn(m);
    ct_module_eval(m);
    return m;
}

static void test_resnet18_fuse_all(void) {
    ct_module *m = eval_resnet();
    ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 32, 32), CT_FLOAT32, -2, 2, NULL);
    double *before = outputs(m, x);
    CT_EXPECT_INT_EQ(ct_module_parameters(m, NULL, NULL, 0), 62);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), 20);
    double *after = outputs(m, x);
    double scale = fmax(1.0, max_abs(before, 20)), worst = 0;
    for (int i = 0; i < 20; i++) worst = fmax(worst, fabs(after[i] - before[i]));
    CT_EXPECT_MSG(worst <= 1e-4 * scale, "fused ResNet-18 differs by %g (outputs up to %g)", worst, scale);
    printf("  ResNet-18 fused vs unfused: max |diff| %.3g, max |output| %.3g\n", worst, scale);
    /* 20 convs with weight and bias plus fc; no batch-norm buffers left */
    CT_EXPECT_INT_EQ(ct_module_parameters(m, NULL, NULL, 0), 42);
    CT_EXPECT_INT_EQ(ct_module_buffers(m, NULL, NULL, 0), 0);
    const char *convs[] = {"conv1", "layer1.0.conv1", "layer1.1.conv2", "layer2.0.downsample.0", "layer4.1.conv2"};
    const char *bns[] = {"bn1", "layer1.0.bn1", "layer1.1.bn2", "layer2.0.downsample.1", "layer4.1.bn2"};
    for (int i = 0; i < 5; i++) {
        CT_EXPECT_STR_EQ(child_type(m, convs[i]), "Conv2d");
        CT_EXPECT_STR_EQ(child_type(m, bns[i]), "Identity");
        char name[64];
        snprintf(name, sizeof name, "%s.bias", convs[i]);
        CT_EXPECT(ct_module_get(m, name) != NULL);
    }
    CT_EXPECT(!ct_module_is_training(ct_module_child(m, "conv1")));
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), 0); /* nothing left to fuse */
    free(before), free(after);
    ct_release(x);
    ct_module_free(m);
}

static void test_fuse_by_path(void) {
    ct_module *m = eval_resnet();
    ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 32, 32), CT_FLOAT32, -2, 2, NULL);
    double *before = outputs(m, x);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn(m, "layer1.0.conv1", "layer1.0.bn1"), CT_OK);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn(m, "layer2.0.downsample.0", "layer2.0.downsample.1"), CT_OK);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn(m, "conv1", "bn1"), CT_OK);
    CT_EXPECT_STR_EQ(child_type(m, "layer1.0.bn1"), "Identity");
    CT_EXPECT_STR_EQ(child_type(m, "layer2.0.downsample.1"), "Identity");
    CT_EXPECT_STR_EQ(child_type(m, "layer1.0.bn2"), "BatchNorm2d");
    double *mid = outputs(m, x);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), 17); /* the rest */
    double *after = outputs(m, x);
    double scale = fmax(1.0, max_abs(before, 20));
    for (int i = 0; i < 20; i++) {
        CT_EXPECT_NEAR(mid[i], before[i], 1e-4 * scale);
        CT_EXPECT_NEAR(after[i], before[i], 1e-4 * scale);
    }
    free(before), free(mid), free(after);
    ct_release(x);
    ct_module_free(m);
}

/* The conv and its bn under different parents, and the Sequential rule. */
static void test_fuse_nested_sequential(void) {
    ct_module *m = CT_SEQUENTIAL(CT_SEQUENTIAL(ct_nn_conv2d(3, 4, 3, (ct_conv2d_opts){.padding = 1})),
                                 ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0}), ct_nn_relu(),
                                 ct_nn_conv2d(4, 4, 3, (ct_conv2d_opts){.no_bias = true}),
                                 ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0}),
                                 ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0}));
    randomize_bn(m);
    ct_module_eval(m);
    ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 8, 8), CT_FLOAT32, -2, 2, NULL);
    double *before = outputs(m, x);
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn(m, "0.0", "1"), CT_OK);
    /* "3" then "4" is a Sequential pair; the second bn ("5") follows a bn and stays */
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), 1);
    CT_EXPECT_STR_EQ(child_type(m, "0.0"), "Conv2d");
    CT_EXPECT_STR_EQ(child_type(m, "1"), "Identity");
    CT_EXPECT_STR_EQ(child_type(m, "4"), "Identity");
    CT_EXPECT_STR_EQ(child_type(m, "5"), "BatchNorm2d");
    double *after = outputs(m, x);
    int64_t n = 2 * 4 * 6 * 6;
    double scale = fmax(1.0, max_abs(before, n));
    for (int64_t i = 0; i < n; i++) CT_EXPECT_NEAR(after[i], before[i], 2e-5 * scale);
    free(before), free(after);
    ct_release(x);
    ct_module_free(m);
}

#define EXPECT_PATH_ERROR(call, code, msg)                \
    do {                                                  \
        ct_clear_error();                                 \
        CT_EXPECT_INT_EQ((call), (code));                 \
        CT_EXPECT_INT_EQ(ct_last_status(), (code));       \
        CT_EXPECT_STR_EQ(ct_last_error(), (msg));         \
        ct_clear_error();                                 \
    } while (0)

static void test_path_errors(void) {
    ct_module *m = eval_resnet();
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer1.9.conv1", "layer1.0.bn1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: conv_name \"layer1.9.conv1\" names no submodule of ResNet (Sequential "
                      "\"layer1\" has no child \"9\")");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer1.0.conv1", "layer1.0.bn9"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: bn_name \"layer1.0.bn9\" names no submodule of ResNet (BasicBlock "
                      "\"layer1.0\" has no child \"bn9\")");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "nope", "bn1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: conv_name \"nope\" names no submodule of ResNet (it has no child \"nope\")");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "conv1.", "bn1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: conv_name \"conv1.\" names no submodule of ResNet (Conv2d \"conv1\" has no "
                      "child \"\")");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "", "bn1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: conv_name must be a dotted submodule path of 1 to 255 characters, got \"\"");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "conv1", NULL), CT_ERR_INVALID_ARG, "fuse_conv_bn: NULL bn_name");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, NULL, "bn1"), CT_ERR_INVALID_ARG, "fuse_conv_bn: NULL conv_name");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(NULL, "conv1", "bn1"), CT_ERR_INVALID_ARG, "fuse_conv_bn: NULL module");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer1.0.bn1", "layer1.0.conv1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: layer1.0.bn1 must be a Conv2d (ct_nn_conv2d), got BatchNorm2d");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer1.0.conv1", "layer1.0.relu"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: layer1.0.relu must be a BatchNorm2d (ct_nn_batchnorm2d), got ReLU");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer2.0.conv1", "layer1.0.bn1"), CT_ERR_SHAPE,
                      "fuse_conv_bn: layer2.0.conv1 has 128 output channels but layer1.0.bn1 has num_features=64");
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn(m, "layer1.0.conv1", "layer1.0.bn1"), CT_OK);
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer1.0.conv1", "layer1.0.bn1"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: layer1.0.bn1 must be a BatchNorm2d (ct_nn_batchnorm2d), got Identity");
    ct_module_train(ct_module_child(m, "layer3"), true);
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer3.1.conv2", "layer3.1.bn2"), CT_ERR_STATE,
                      "fuse_conv_bn: Fusion only for eval! layer3.1.conv2 and layer3.1.bn2 are in training mode "
                      "(call ct_module_eval first)");
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), -1);
    CT_EXPECT_ERROR(CT_ERR_STATE, "fuse_conv_bn_all: Fusion only for eval! layer3.0.conv1 and layer3.0.bn1 are in "
                                  "training mode (call ct_module_eval first)");
    CT_EXPECT_STR_EQ(child_type(m, "conv1"), "Conv2d"); /* conv1/bn1 came first and passed, but nothing changed */
    CT_EXPECT_STR_EQ(child_type(m, "bn1"), "BatchNorm2d");
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(NULL), -1);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "fuse_conv_bn_all: NULL module");
    ct_module_free(m);
}

/* A fusion that fails at its last pair changes nothing: same children, same
 * parameter objects, bit-identical outputs. */
static void test_all_or_nothing(void) {
    ct_module *m = eval_resnet();
    /* the last pair cannot be fused: its bn is float64 (and still runs) */
    ct_module *block = ct_module_child(ct_module_child(m, "layer4"), "1");
    module_to_dtype(ct_module_child(block, "bn2"), CT_FLOAT64);
    ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 32, 32), CT_FLOAT32, -2, 2, NULL);
    double *before = outputs(m, x);
    ct_tensor *params[64], *params_after[64];
    int np = ct_module_parameters(m, params, NULL, 64);
    ct_module *conv1 = ct_module_child(m, "conv1"), *bn1 = ct_module_child(m, "bn1");
    ct_clear_error();
    CT_EXPECT_INT_EQ(ct_module_fuse_conv_bn_all(m), -1);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_ERR_DTYPE);
    CT_EXPECT_STR_EQ(ct_last_error(), "fuse_conv_bn_all: layer4.1.bn2.weight is float64 but layer4.1.conv2.weight "
                                      "is float32 (fusion needs one dtype)");
    ct_clear_error();
    CT_EXPECT(ct_module_child(m, "conv1") == conv1 && ct_module_child(m, "bn1") == bn1);
    CT_EXPECT_STR_EQ(child_type(m, "layer1.0.bn1"), "BatchNorm2d");
    CT_EXPECT(ct_module_get(m, "conv1.bias") == NULL);
    CT_EXPECT_INT_EQ(ct_module_parameters(m, params_after, NULL, 64), np);
    for (int i = 0; i < np && i < 64; i++) CT_EXPECT(params_after[i] == params[i]);
    /* the same for one pair whose bn path is wrong */
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer4.1.conv1", "layer4.1.bn"), CT_ERR_INVALID_ARG,
                      "fuse_conv_bn: bn_name \"layer4.1.bn\" names no submodule of ResNet (BasicBlock "
                      "\"layer4.1\" has no child \"bn\")");
    EXPECT_PATH_ERROR(ct_module_fuse_conv_bn(m, "layer4.1.conv2", "layer4.1.bn2"), CT_ERR_DTYPE,
                      "fuse_conv_bn: layer4.1.bn2.weight is float64 but layer4.1.conv2.weight is float32 (fusion "
                      "needs one dtype)");
    CT_EXPECT_STR_EQ(child_type(m, "layer4.1.conv1"), "Conv2d");
    CT_EXPECT(ct_module_get(m, "layer4.1.conv1.bias") == NULL);
    double *after = outputs(m, x);
    CT_EXPECT(before && after && memcmp(before, after, sizeof(double) * 20) == 0);
    free(before), free(after);
    ct_release(x);
    ct_module_free(m);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_fused_conv_matches);
    CT_RUN(test_requires_grad_follows_conv);
    CT_RUN(test_fuse_on_opencl);
    CT_RUN(test_fuse_errors);
    CT_RUN(test_resnet18_fuse_all);
    CT_RUN(test_fuse_by_path);
    CT_RUN(test_fuse_nested_sequential);
    CT_RUN(test_path_errors);
    CT_RUN(test_all_or_nothing);
    return ct_test_finish();
}
