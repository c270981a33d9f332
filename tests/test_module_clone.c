/*
 * test_module_clone.c — ct_module_clone, copy.deepcopy(model).to(device):
 * a clone of an MLP and of ResNet-18 has the same tree, names, training
 * flags, values (parameters, gradients, batch-norm running statistics) and
 * bit-for-bit the same outputs, shares no storage (training the clone
 * leaves the original alone), and on an OpenCL device computes what the
 * CPU computes. Every built-in layer and criterion clones with its options.
 * A user module's state is copied by its clone function; without one, or
 * when it fails, or the device runs out of memory half-way, the clone fails
 * with an error naming the cause and frees every part it made.
 */
#include <stdlib.h>

#include "ctorch/ctorch.h"
#include "testutil.h"

/* ---- comparing a clone with its original ---------------------------------------------- */

/* Same types, training flags and number of children, all the way down. */
static void expect_same_tree(ct_module *a, ct_module *b) {
    CT_EXPECT_STR_EQ(ct_module_type(b), ct_module_type(a));
    CT_EXPECT_MSG(ct_module_is_training(a) == ct_module_is_training(b), "%s: training flag differs", ct_module_type(a));
    CT_EXPECT_INT_EQ(ct_module_num_children(b), ct_module_num_children(a));
    for (int i = 0; i < ct_module_num_children(a) && i < ct_module_num_children(b); i++)
        expect_same_tree(ct_module_child_at(a, i), ct_module_child_at(b, i));
}

/* The state_dicts: same names in the same order, same dtypes and values
 * (a copy is exact on any device), the copy's on dev, no storage shared. */
static void expect_copied_state(ct_module *orig, ct_module *copy, ct_device dev) {
    ct_tensor_dict *da = ct_module_state_dict(orig), *db = ct_module_state_dict(copy);
    int n = ct_tensor_dict_size(da);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(db), n);
    for (int i = 0; i < n && i < ct_tensor_dict_size(db); i++) {
        const char *name = ct_tensor_dict_name(da, i);
        CT_EXPECT_STR_EQ(ct_tensor_dict_name(db, i), name);
        ct_tensor *ta = ct_tensor_dict_value(da, i), *tb = ct_tensor_dict_value(db, i);
        CT_EXPECT_MSG(ct_dtype_of(tb) == ct_dtype_of(ta), "%s: dtype differs", name);
        CT_EXPECT_MSG(ct_device_equal(ct_device_of(tb), dev), "%s: the copy is not on the target device", name);
        CT_EXPECT_MSG(!ct_shares_storage(ta, tb), "%s: the copy shares the original's storage", name);
        double *v = ct_test_values(ta);
        CT_EXPECT_CLOSE(tb, v, ct_numel(ta), 0, 0);
        free(v);
        ct_release(ta);
        ct_release(tb);
    }
    ct_tensor_dict_free(da);
    ct_tensor_dict_free(db);
}

/* Parameters: new tensor objects with the original's requires_grad, and
 * a copy of its .grad exactly when it has one (deepcopy's semantics). */
static void expect_copied_params(ct_module *orig, ct_module *copy) {
    ct_tensor *pa[128], *pb[128];
    int n = ct_module_parameters(orig, pa, NULL, 128);
    CT_EXPECT_INT_EQ(ct_module_parameters(copy, pb, NULL, 128), n);
    for (int i = 0; i < n && i < 128; i++) {
        CT_EXPECT(pa[i] != pb[i]);
        CT_EXPECT_MSG(ct_requires_grad(pa[i]) == ct_requires_grad(pb[i]), "parameter %d: requires_grad differs", i);
        ct_tensor *ga = ct_grad(pa[i]), *gb = ct_grad(pb[i]);
        CT_EXPECT_MSG((ga == NULL) == (gb == NULL), "parameter %d: .grad copied wrongly", i);
        if (ga && gb) {
            CT_EXPECT(!ct_shares_storage(ga, gb));
            double *v = ct_test_values(ga);
            CT_EXPECT_CLOSE(gb, v, ct_numel(ga), 0, 0);
            free(v);
        }
        ct_release(ga);
        ct_release(gb);
    }
}

/* b(x_b) against a(x), within rtol/atol (0, 0: bit for bit). */
static void expect_same_output(ct_module *a, const ct_tensor *x, ct_module *b, const ct_tensor *x_b, double rtol,
                               double atol) {
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *ya = ct_forward(a, x), *yb = ct_forward(b, x_b);
        CT_EXPECT_MSG(ya && yb, "forward failed: %s", ct_last_error());
        if (ya && yb) {
            double *v = ct_test_values(ya);
            CT_EXPECT_CLOSE(yb, v, ct_numel(ya), rtol, atol);
            free(v);
        }
    }
}

/* ---- the CPU -------------------------------------------------------------------------- */

static void test_mlp_clone(void) {
    ct_module *m = ct_model_mlp(12, (int64_t[]){16, 8}, 2, 3);
    ct_tensor *frozen = ct_module_get(m, "1.bias"), *w = ct_module_get(m, "3.weight");
    CT_EXPECT_INT_EQ(ct_set_requires_grad(frozen, false), CT_OK);
    CT_SCOPE { CT_EXPECT_INT_EQ(ct_set_grad(w, ct_randn(CT_SHAPE(8, 16))), CT_OK); }
    ct_module *c = ct_module_clone(m, ct_device_cpu());
    CT_EXPECT_MSG(c != NULL, "clone failed: %s", ct_last_error());
    if (!c) {
        ct_module_free(m);
        return;
    }
    expect_same_tree(m, c);
    expect_copied_state(m, c, ct_device_cpu());
    expect_copied_params(m, c);
    CT_EXPECT(!ct_requires_grad(ct_module_get(c, "1.bias")) && ct_requires_grad(ct_module_get(c, "3.weight")));
    ct_tensor *x = ct_randn(CT_SHAPE(5, 3, 4));
    expect_same_output(m, x, c, x, 0, 0);
    /* sharing nothing: writing the clone's weights leaves the original's */
    double *before = ct_test_values(w);
    CT_NO_GRAD CT_SCOPE { ct_fill_(ct_module_get(c, "3.weight"), 0.25); }
    CT_EXPECT_CLOSE(w, before, 128, 0, 0);
    free(before);
    ct_release(x);
    ct_module_free(m); /* the clone outlives its original */
    CT_SCOPE { CT_EXPECT(ct_forward(c, ct_randn(CT_SHAPE(2, 12))) != NULL); }
    ct_module_free(c);
}

static void test_resnet18_clone(void) {
    ct_module *m = ct_model_resnet18(10);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3, 32, 32));
    CT_NO_GRAD CT_SCOPE { CT_EXPECT(ct_forward(m, x) != NULL); } /* running statistics move off 0 and 1 */
    ct_module_eval(m);
    ct_module_train(ct_module_child(m, "layer2"), true); /* each module's own flag is copied */
    ct_module *c = ct_module_clone(m, ct_device_cpu());
    CT_EXPECT_MSG(c != NULL, "clone failed: %s", ct_last_error());
    if (!c) {
        ct_release(x);
        ct_module_free(m);
        return;
    }
    expect_same_tree(m, c);
    CT_EXPECT(!ct_module_is_training(c) && ct_module_is_training(ct_module_child(c, "layer2")));
    CT_EXPECT_INT_EQ(ct_module_buffers(c, NULL, NULL, 0), 60);
    expect_copied_state(m, c, ct_device_cpu());
    expect_copied_params(m, c);
    CT_EXPECT_INT_EQ((int64_t)ct_item(ct_module_get(c, "bn1.num_batches_tracked")), 1);
    CT_EXPECT_STR_EQ(ct_module_type(ct_module_child(c, "maxpool")), "MaxPool2d");
    ct_module_eval(m);
    ct_module_eval(c);
    expect_same_output(m, x, c, x, 0, 0);
    /* training the clone moves its running statistics, not the original's */
    ct_tensor *mean = ct_module_get(m, "bn1.running_mean");
    double *before = ct_test_values(mean);
    ct_module_train(c, true);
    CT_NO_GRAD CT_SCOPE { CT_EXPECT(ct_forward(c, x) != NULL); }
    CT_EXPECT_CLOSE(mean, before, 64, 0, 0);
    CT_EXPECT_INT_EQ((int64_t)ct_item(ct_module_get(m, "bn1.num_batches_tracked")), 1);
    CT_EXPECT_INT_EQ((int64_t)ct_item(ct_module_get(c, "bn1.num_batches_tracked")), 2);
    free(before);
    ct_release(x);
    ct_module_free(c);
    ct_module_free(m);
}

/* A tensor registered twice (tied weights) is one tensor in the clone. */
static void test_tied_weights_stay_tied(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 4, false), ct_nn_linear(4, 4, false));
    ct_tensor *w = ct_module_get(m, "0.weight");
    CT_EXPECT_INT_EQ(ct_module_add_parameter(ct_module_child(m, "1"), "tied", ct_retain(w)), CT_OK);
    ct_module *c = ct_module_clone(m, ct_device_cpu());
    CT_EXPECT(c && ct_module_get(c, "1.tied") == ct_module_get(c, "0.weight"));
    CT_EXPECT(c && !ct_shares_storage(ct_module_get(c, "1.tied"), w));
    ct_module_free(c);
    ct_module_free(m);
}

/* Clone a (whose forward takes x) and compare outputs bit for bit. */
static void expect_clone_computes_the_same(ct_module *a, ct_tensor *x) {
    ct_module *c = ct_module_clone(a, ct_device_cpu());
    CT_EXPECT_MSG(c != NULL, "%s: clone failed: %s", ct_module_type(a), ct_last_error());
    if (c) {
        expect_same_tree(a, c);
        expect_same_output(a, x, c, x, 0, 0);
    }
    ct_module_free(c);
    ct_module_free(a);
    ct_release(x);
}

/* Each built-in keeps its options (stride, eps, padding_idx, p, …). */
static void test_every_builtin_layer_clones(void) {
    ct_module *bn = ct_nn_batchnorm1d(6, (ct_batchnorm_opts){.eps = 0.5, .momentum = 0.3});
    expect_clone_computes_the_same(ct_nn_conv2d(2, 4, 3, (ct_conv2d_opts){.stride = 2, .padding = 1, .groups = 2}),
                                   ct_randn(CT_SHAPE(1, 2, 7, 7)));
    expect_clone_computes_the_same(bn, ct_randn(CT_SHAPE(4, 6)));
    expect_clone_computes_the_same(ct_nn_batchnorm2d(3, (ct_batchnorm_opts){.eps = 0.1}), ct_randn(CT_SHAPE(2, 3, 4, 4)));
    expect_clone_computes_the_same(ct_nn_layernorm(CT_SHAPE(3, 5), 0.25), ct_randn(CT_SHAPE(2, 3, 5)));
    expect_clone_computes_the_same(ct_nn_embedding(6, 3, 2), ct_randint(0, 6, CT_SHAPE(7)));
    expect_clone_computes_the_same(ct_nn_dropout(1.0), ct_randn(CT_SHAPE(9))); /* p = 1: all zeros */
    expect_clone_computes_the_same(ct_nn_maxpool2d(3, 2, 1), ct_randn(CT_SHAPE(1, 2, 7, 7)));
    expect_clone_computes_the_same(ct_nn_avgpool2d(2, 1, 1), ct_randn(CT_SHAPE(1, 2, 5, 5)));
    expect_clone_computes_the_same(ct_nn_adaptive_avgpool2d(2, 3), ct_randn(CT_SHAPE(1, 2, 5, 7)));
    expect_clone_computes_the_same(CT_SEQUENTIAL(ct_nn_flatten(0, 1), ct_nn_gelu(), ct_nn_sigmoid(), ct_nn_tanh(),
                                                 ct_nn_identity(), ct_nn_relu(), ct_nn_linear(3, 2, true)),
                                   ct_randn(CT_SHAPE(2, 2, 3)));
    /* the folded convolution of fuse.c */
    ct_module *conv = ct_nn_conv2d(3, 4, 3, (ct_conv2d_opts){.stride = 2, .padding = 1}),
              *bn2 = ct_nn_batchnorm2d(4, (ct_batchnorm_opts){0});
    ct_module_eval(conv);
    ct_module_eval(bn2);
    expect_clone_computes_the_same(ct_fuse_conv_bn_eval(conv, bn2), ct_randn(CT_SHAPE(1, 3, 6, 6)));
    ct_module_free(conv);
    ct_module_free(bn2);
}

/* A criterion keeps its kind, options and weight buffers. */
static void test_criterions_clone(void) {
    ct_tensor *w = ct_rand(CT_SHAPE(4)), *in = ct_randn(CT_SHAPE(5, 4)), *y = ct_randint(0, 4, CT_SHAPE(5));
    ct_tensor *probs = ct_rand(CT_SHAPE(5, 4));
    ct_module *losses[2] = {ct_nn_cross_entropy_loss(.weight = w, .label_smoothing = 0.2, CT_IGNORE_INDEX(1)),
                            ct_nn_bce_with_logits_loss(.pos_weight = w, .reduction = CT_REDUCTION_SUM)};
    const ct_tensor *targets[2] = {y, probs};
    for (int i = 0; i < 2; i++) {
        ct_module *c = ct_module_clone(losses[i], ct_device_cpu());
        CT_EXPECT_MSG(c != NULL, "clone failed: %s", ct_last_error());
        if (c) CT_SCOPE {
            double want = ct_item(ct_loss(losses[i], in, targets[i]));
            CT_EXPECT_NEAR(ct_item(ct_loss(c, in, targets[i])), want, 0);
        }
        ct_module_free(c);
        ct_module_free(losses[i]);
    }
    ct_release(w), ct_release(in), ct_release(y), ct_release(probs);
}

/* ---- a user's module with private state ---------------------------------------------------- */

typedef struct scale_state {
    double factor;
} scale_state;

static int g_live_states; /* made and not yet freed: a leaked state shows here */

static scale_state *new_state(double factor) {
    scale_state *s = malloc(sizeof *s);
    if (s) s->factor = factor, g_live_states++;
    return s;
}
static void free_state(void *s) {
    if (s) g_live_states--;
    free(s);
}
static void *clone_state(const void *s) { return new_state(((const scale_state *)s)->factor); }
static void *failing_clone(const void *s) {
    ct_set_error(CT_ERR_OOM, "Scale: no memory to copy the state");
    return NULL;
}
static void *silent_clone(const void *s) { return NULL; }

static ct_tensor *scale_forward(ct_module *m, const ct_tensor *x) {
    return ct_mul_scalar(x, ((scale_state *)ct_module_state(m))->factor);
}

static ct_module *scale(double factor, ct_state_clone_fn clone) {
    ct_module *m = ct_module_new("Scale", scale_forward, new_state(factor), free_state);
    CT_EXPECT_INT_EQ(ct_module_set_state_clone(m, clone), CT_OK);
    return m;
}

/* The clone fails with code and needle; the original is as it was and
 * nothing the clone made is left (tensors, storages, states). */
static void expect_clone_fails(ct_module *m, ct_status code, const char *needle) {
    int64_t tensors = ct_live_tensors(), storages = ct_live_storages();
    int states = g_live_states;
    CT_EXPECT(ct_module_clone(m, ct_device_cpu()) == NULL);
    CT_EXPECT_ERROR(code, needle);
    CT_EXPECT_INT_EQ(ct_live_tensors(), tensors);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);
    CT_EXPECT_INT_EQ(g_live_states, states);
    CT_SCOPE { CT_EXPECT(ct_forward(m, ct_randn(CT_SHAPE(2, 4))) != NULL); } /* still usable */
}

static void test_state_without_clone_function(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 4, true), CT_SEQUENTIAL(ct_nn_relu(), scale(2.0, NULL)));
    expect_clone_fails(m, CT_ERR_INVALID_ARG,
                       "module_clone: Scale (at \"1.1\") has private state that ctorch cannot copy; give it a "
                       "state clone function with ct_module_set_state_clone(module, fn)");
    ct_module_free(m);
    ct_module *alone = scale(2.0, NULL);
    expect_clone_fails(alone, CT_ERR_INVALID_ARG, "module_clone: Scale has private state that ctorch cannot copy");
    ct_module_free(alone);
    CT_EXPECT_INT_EQ(g_live_states, 0);
}

static void test_state_with_clone_function(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 4, true), scale(3.0, clone_state));
    ct_module *c = ct_module_clone(m, ct_device_cpu());
    CT_EXPECT_MSG(c != NULL, "clone failed: %s", ct_last_error());
    CT_EXPECT_INT_EQ(g_live_states, 2);
    ct_tensor *x = ct_randn(CT_SHAPE(3, 4));
    if (c) {
        scale_state *sc = ct_module_state(ct_module_child(c, "1"));
        CT_EXPECT(sc != ct_module_state(ct_module_child(m, "1")) && sc->factor == 3.0);
        expect_same_output(m, x, c, x, 0, 0);
        ct_module *cc = ct_module_clone(c, ct_device_cpu()); /* the clone keeps the clone function */
        CT_EXPECT(cc != NULL && g_live_states == 3);
        ct_module_free(cc);
        sc->factor = -1.0; /* the clone's own state: the original still scales by 3 */
        CT_EXPECT(((scale_state *)ct_module_state(ct_module_child(m, "1")))->factor == 3.0);
    }
    ct_release(x);
    ct_module_free(c);
    ct_module_free(m);
    CT_EXPECT_INT_EQ(g_live_states, 0);
}

/* A failure after tensors were copied (the failing state is last) frees them. */
static void test_failing_clone_function(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 4, true), ct_nn_linear(4, 4, true), scale(1.0, failing_clone));
    expect_clone_fails(m, CT_ERR_OOM, "Scale: no memory to copy the state");
    ct_module_free(m);
    m = CT_SEQUENTIAL(ct_nn_linear(4, 4, true), scale(1.0, silent_clone));
    expect_clone_fails(m, CT_ERR_INTERNAL,
                       "module_clone: the state clone function of Scale returned NULL without setting an error");
    ct_module_free(m);
    CT_EXPECT_INT_EQ(g_live_states, 0);
}

static void test_bad_arguments(void) {
    ct_clear_error();
    CT_EXPECT(ct_module_clone(NULL, ct_device_cpu()) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "module_clone: NULL module");
    ct_module *m = ct_nn_linear(2, 2, true);
    CT_EXPECT(ct_module_clone(m, (ct_device){CT_DEVICE_CPU, -7}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "cpu: CPU device index must be -1 or zero, got -7");
    CT_EXPECT_INT_EQ(ct_module_set_state_clone(NULL, clone_state), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "module_set_state_clone: NULL module");
    ct_module_free(m);
}

/* ---- another device ------------------------------------------------------------------ */

static void resnet18_clone_to(ct_device dev) {
    ct_device cpu = ct_device_cpu();
    ct_module *m = ct_model_resnet18(10);
    ct_tensor *x = ct_randn(CT_SHAPE(2, 3, 32, 32));
    CT_NO_GRAD CT_SCOPE { CT_EXPECT(ct_forward(m, x) != NULL); }
    ct_module_eval(m);
    ct_module *c = ct_module_clone(m, dev);
    CT_EXPECT_MSG(c != NULL, "clone failed: %s", ct_last_error());
    if (c) {
        expect_same_tree(m, c);
        expect_copied_state(m, c, dev);
        CT_EXPECT(ct_device_of(ct_module_get(m, "fc.weight")).type == CT_DEVICE_CPU); /* the original stays */
        ct_tensor *xd = ct_to_device(x, dev);
        expect_same_output(m, x, c, xd, 1e-3, 1e-3);
        ct_release(xd);
        ct_module *back = ct_module_clone(c, cpu); /* and back: the same bits */
        CT_EXPECT(back != NULL);
        if (back) expect_copied_state(m, back, cpu), expect_same_output(m, x, back, x, 0, 0);
        ct_module_free(back);
    }
    ct_release(x);
    ct_module_free(c);
    ct_module_free(m);
}

static void test_resnet18_clone_to_opencl(void) {
    if (ct_test_opencl_devices("ResNet-18 cloned to OpenCL")) resnet18_clone_to(ct_device_opencl(0));
}

static void test_resnet18_clone_to_cuda(void) {
    if (ct_test_cuda_devices("ResNet-18 cloned to CUDA")) resnet18_clone_to(ct_device_cuda(0));
}

/* Out of device memory half-way: NULL, CT_ERR_OOM, nothing left behind. */
static void test_clone_out_of_device_memory(void) {
    if (!ct_test_opencl_devices("module_clone under a memory fraction")) return;
    ct_device dev = ct_device_opencl(0);
    size_t free_b = 0, total = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(dev, &free_b, &total), CT_OK);
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 4, true), ct_nn_linear(4096, 4096, false)); /* 64 MiB */
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction((double)(16u << 20) / (double)total, dev), CT_OK);
    int64_t tensors = ct_live_tensors(), storages = ct_live_storages();
    CT_EXPECT(ct_module_clone(m, dev) == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "OpenCL out of memory");
    CT_EXPECT_INT_EQ(ct_live_tensors(), tensors);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction(1.0, dev), CT_OK);
    ct_module *c = ct_module_clone(m, dev);
    CT_EXPECT_MSG(c != NULL, "clone failed with the limit lifted: %s", ct_last_error());
    ct_module_free(c);
    ct_module_free(m);
    ct_empty_cache(dev);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_mlp_clone);
    CT_RUN(test_resnet18_clone);
    CT_RUN(test_tied_weights_stay_tied);
    CT_RUN(test_every_builtin_layer_clones);
    CT_RUN(test_criterions_clone);
    CT_RUN(test_state_without_clone_function);
    CT_RUN(test_state_with_clone_function);
    CT_RUN(test_failing_clone_function);
    CT_RUN(test_bad_arguments);
    CT_RUN(test_resnet18_clone_to_opencl);
    CT_RUN(test_resnet18_clone_to_cuda);
    CT_RUN(test_clone_out_of_device_memory);
    return ct_test_finish();
}
