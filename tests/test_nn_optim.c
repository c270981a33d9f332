/*
 * test_nn_optim.c — modules (registration, names, init, forward, train/eval,
 * moving to a device), optimizers against float64 references of PyTorch's
 * formulas, schedulers against values printed by PyTorch 1.13, clipping,
 * and the seed's Linear/MSE/SGD training loop on every device.
 */
#include "testutil.h"

#include <stdlib.h>

static void test_linear_module(void) {
    ct_manual_seed(0);
    ct_module *m = ct_nn_linear(4, 3, true);
    CT_EXPECT_STR_EQ(ct_module_type(m), "Linear");
    ct_tensor *p[4];
    const char *names[4];
    CT_EXPECT_INT_EQ(ct_module_parameters(m, p, names, 4), 2);
    CT_EXPECT_STR_EQ(names[0], "weight");
    CT_EXPECT_STR_EQ(names[1], "bias");
    CT_EXPECT_SHAPE(p[0], CT_SHAPE(3, 4));
    CT_EXPECT(ct_requires_grad(p[0]) && ct_is_leaf(p[0]));
    CT_EXPECT_INT_EQ(ct_module_num_parameters(m), 15);
    double *w = ct_test_values(p[0]);
    for (int i = 0; i < 12; i++) CT_EXPECT(fabs(w[i]) <= 0.5); /* U(±1/√4) */
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(5, 4));
        ct_tensor *y = ct_forward(m, x);
        CT_EXPECT_SHAPE(y, CT_SHAPE(5, 3));
        double *xv = ct_test_values(x), *bv = ct_test_values(p[1]), expect[15];
        for (int r = 0; r < 5; r++)
            for (int o = 0; o < 3; o++) {
                double acc = bv[o];
                for (int k = 0; k < 4; k++) acc += xv[r * 4 + k] * w[o * 4 + k];
                expect[r * 3 + o] = acc;
            }
        CT_EXPECT_CLOSE(y, expect, 15, 1e-5, 1e-6);
        free(xv), free(bv);
        ct_tensor *bad = ct_forward(m, ct_randn(CT_SHAPE(2, 5)));
        CT_EXPECT(bad == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "linear");
    }
    free(w);
    ct_module_free(m);
}

static void test_sequential_names_and_modes(void) {
    ct_module *net = CT_SEQUENTIAL(ct_nn_flatten(1, -1), ct_nn_linear(6, 5, true), ct_nn_relu(), ct_nn_linear(5, 2, false));
    const char *names[8];
    CT_EXPECT_INT_EQ(ct_module_parameters(net, NULL, names, 8), 3);
    CT_EXPECT_STR_EQ(names[0], "1.weight");
    CT_EXPECT_STR_EQ(names[1], "1.bias");
    CT_EXPECT_STR_EQ(names[2], "3.weight");
    CT_EXPECT(ct_module_get(net, "3.weight") != NULL && ct_module_get(net, "3.bias") == NULL);
    CT_EXPECT(ct_module_is_training(ct_module_child(net, "2")));
    ct_module_eval(net);
    CT_EXPECT(!ct_module_is_training(ct_module_child(net, "2")));
    CT_SCOPE {
        ct_tensor *y = ct_forward(net, ct_randn(CT_SHAPE(4, 2, 3)));
        CT_EXPECT_SHAPE(y, CT_SHAPE(4, 2));
        CT_EXPECT_STR_EQ(ct_grad_fn_name(y), "MmBackward0");
    }
    CT_EXPECT(ct_module_add_child(net, "a.b", ct_nn_relu()) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "can't be empty or contain");
    CT_EXPECT(ct_module_add_child(net, "1", ct_nn_relu()) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "already exists");
    ct_module_free(net);
}

/* One SGD step with momentum, nesterov and weight decay, twice, against the
 * float64 formula of torch.optim.SGD. */
static void test_sgd_matches_reference(void) {
    double p0[3] = {1.0, -2.0, 0.5}, g[3] = {0.3, -0.1, 0.2};
    ct_tensor *p = ct_tensor_from(p0, CT_FLOAT64, CT_SHAPE(3));
    ct_set_requires_grad(p, true);
    ct_optimizer *opt = ct_sgd_params(&p, 1, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    double ref[3], buf[3] = {0};
    memcpy(ref, p0, sizeof ref);
    for (int step = 0; step < 2; step++) {
        ct_tensor *gt = ct_tensor_from(g, CT_FLOAT64, CT_SHAPE(3));
        ct_set_grad(p, gt);
        ct_release(gt);
        CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
        for (int i = 0; i < 3; i++) {
            double d = g[i] + 0.01 * ref[i];
            buf[i] = step == 0 ? d : 0.9 * buf[i] + d;
            ref[i] -= 0.1 * (d + 0.9 * buf[i]);
        }
        CT_EXPECT_CLOSE(p, ref, 3, 1e-12, 1e-12);
    }
    CT_EXPECT_INT_EQ(ct_optimizer_step_count(opt), 2);
    ct_zero_grad(opt);
    CT_EXPECT(ct_grad(p) == NULL);
    ct_optimizer_free(opt);
    ct_release(p);
    CT_EXPECT(ct_sgd_params(&p, 0, (ct_sgd_opts){.lr = 0.1}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "empty parameter list");
    CT_EXPECT(ct_sgd_params(&p, 1, (ct_sgd_opts){.lr = -1}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid learning rate");
}

static void test_adamw_matches_reference(void) {
    double p0[2] = {0.5, -1.5}, g[2] = {0.2, 0.4};
    ct_tensor *p = ct_tensor_from(p0, CT_FLOAT64, CT_SHAPE(2));
    ct_set_requires_grad(p, true);
    ct_optimizer *opt = ct_adamw_params(&p, 1, (ct_adam_opts){.lr = 0.01, .amsgrad = true});
    double ref[2] = {p0[0], p0[1]}, m[2] = {0}, v[2] = {0}, vmax[2] = {0};
    for (int step = 1; step <= 3; step++) {
        ct_tensor *gt = ct_tensor_from(g, CT_FLOAT64, CT_SHAPE(2));
        ct_set_grad(p, gt);
        ct_release(gt);
        CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
        for (int i = 0; i < 2; i++) {
            ref[i] *= 1 - 0.01 * 0.01;
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
            vmax[i] = fmax(vmax[i], v[i]);
            double bc1 = 1 - pow(0.9, step), bc2 = 1 - pow(0.999, step);
            ref[i] -= 0.01 / bc1 * m[i] / (sqrt(vmax[i]) / sqrt(bc2) + 1e-8);
        }
        CT_EXPECT_CLOSE(p, ref, 2, 1e-12, 1e-12);
    }
    ct_optimizer_free(opt);
    ct_release(p);
}

static void test_schedulers_match_pytorch(void) {
    ct_tensor *p = ct_zeros(CT_SHAPE(1));
    ct_set_requires_grad(p, true);
    struct { const char *name; int n; double expect[11]; } cases[] = {
        {"step", 8, {0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125}},
        {"multistep", 5, {0.1, 0.01, 0.01, 0.001, 0.001}},
        /* past T_max = 4 PyTorch's cosine rises again (its recursive form; 2.15's values) */
        {"cosine", 10, {0.1, 0.086819805153394644, 0.055000000000000007, 0.023180194846605363, 0.01,
                        0.023180194846605363, 0.05500000000000002, 0.08681980515339469, 0.10000000000000006,
                        0.0868198051533947}},
        /* total_steps = 10: the constructor's step and ten more; PyTorch 2.15's values */
        {"onecycle", 11, {0.04, 0.52, 1, 0.95048463201347366, 0.81174565394976306, 0.61126202193628931,
                          0.38874197806371075, 0.18825834605023697, 0.049519367986526286, 3.9999999999999998e-06,
                          0.04951936798652623}},
        {"linear", 7, {0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1}},
    };
    int milestones[2] = {1, 3};
    for (int c = 0; c < 5; c++) {
        ct_optimizer *opt = ct_sgd_params(&p, 1, (ct_sgd_opts){.lr = 0.1});
        ct_scheduler *s = c == 0 ? ct_step_lr(opt, 2, 0.5)
                        : c == 1 ? ct_multistep_lr(opt, milestones, 2, 0.1)
                        : c == 2 ? ct_cosine_annealing_lr(opt, 4, 0.01)
                        : c == 3 ? ct_onecycle_lr(opt, 1.0, 10)
                                 : ct_linear_lr(opt, 0.25, 1.0, 3);
        for (int e = 0; e < cases[c].n; e++) {
            if (e > 0) ct_scheduler_step(s);
            CT_EXPECT_MSG(fabs(ct_optimizer_lr(opt) - cases[c].expect[e]) < 1e-12, "%s epoch %d: lr %.17g, PyTorch %.17g",
                          cases[c].name, e, ct_optimizer_lr(opt), cases[c].expect[e]);
        }
        if (c == 3) {
            CT_EXPECT(ct_scheduler_step(s) != CT_OK);
            CT_EXPECT_ERROR(CT_ERR_STATE, "Tried to step 11 times");
        }
        ct_scheduler_free(s);
        ct_optimizer_free(opt);
    }
    ct_release(p);
}

static void test_clip_grad_norm(void) {
    ct_module *m = ct_nn_linear(2, 1, true);
    ct_tensor *w = ct_module_param(m, "weight"), *b = ct_module_param(m, "bias");
    CT_SCOPE {
        ct_set_grad(w, ct_tensor_from((double[]){3, 0}, CT_FLOAT64, CT_SHAPE(1, 2), .dtype = CT_FLOAT32));
        ct_set_grad(b, ct_tensor_from((double[]){4}, CT_FLOAT64, CT_SHAPE(1), .dtype = CT_FLOAT32));
        double norm = 0;
        CT_EXPECT_INT_EQ(ct_clip_grad_norm(m, 1.0, 2.0, &norm), CT_OK);
        CT_EXPECT_NEAR(norm, 5.0, 1e-6);
        CT_EXPECT_CLOSE(ct_grad(w), ((double[]){0.6, 0}), 2, 1e-5, 1e-6);
        CT_EXPECT_CLOSE(ct_grad(b), ((double[]){0.8}), 1, 1e-5, 1e-6);
    }
    /* the parameter-list form returns the norm as a 0-dim tensor in the gradients' dtype */
    CT_SCOPE {
        ct_set_grad(w, ct_tensor_from((double[]){3, 0}, CT_FLOAT64, CT_SHAPE(1, 2), .dtype = CT_FLOAT32));
        ct_set_grad(b, ct_tensor_from((double[]){4}, CT_FLOAT64, CT_SHAPE(1), .dtype = CT_FLOAT32));
        ct_tensor *params[2] = {w, b};
        ct_tensor *norm = ct_clip_grad_norm_params(params, 2, 1.0, 2.0);
        CT_EXPECT(norm && ct_ndim(norm) == 0 && ct_dtype_of(norm) == CT_FLOAT32);
        CT_EXPECT_NEAR(ct_item(norm), 5.0, 1e-6);
        CT_EXPECT_CLOSE(ct_grad(w), ((double[]){0.6, 0}), 2, 1e-5, 1e-6);
        ct_tensor *inf = ct_clip_grad_norm_params(params, 2, 10.0, INFINITY); /* below max_norm: unchanged */
        CT_EXPECT_NEAR(ct_item(inf), 0.8, 1e-6);
        CT_EXPECT_CLOSE(ct_grad(b), ((double[]){0.8}), 1, 1e-5, 1e-6);
        ct_set_grad(w, NULL), ct_set_grad(b, NULL);
        ct_tensor *none = ct_clip_grad_norm_params(params, 2, 1.0, 2.0); /* no gradients: 0 */
        CT_EXPECT(none && ct_item(none) == 0.0);
        CT_EXPECT(ct_clip_grad_norm_params(NULL, 2, 1.0, 2.0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "clip_grad_norm_: NULL parameter list");
        CT_EXPECT(ct_clip_grad_norm_params(params, 2, 1.0, 1.0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "norm_type 1 is not supported");
    }
    ct_module_free(m);
}

/* The seed example: Linear(10, 1), MSE, SGD lr 0.01 — on every device. */
static double train_seed_loop(ct_device dev, double *first) {
    char name[32];
    ct_device_format(dev, name, sizeof name);
    ct_manual_seed(42);
    ct_module *model = ct_module_to(ct_nn_linear(10, 1, true), dev);
    if (!model) {
        CT_EXPECT_MSG(false, "module_to(%s): %s", name, ct_last_error());
        ct_clear_error();
        return *first = NAN;
    }
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.01});
    ct_tensor *x = ct_randn(CT_SHAPE(32, 10), .device = dev), *y = ct_randn(CT_SHAPE(32, 1), .device = dev);
    double last = NAN;
    bool failed = false;
    for (int epoch = 0; epoch < 100 && !failed; epoch++) CT_SCOPE {
        ct_tensor *diff = ct_sub(ct_forward(model, x), y);
        ct_tensor *loss = ct_mean_all(ct_mul(diff, diff));
        ct_zero_grad(opt);
        ct_status st = ct_backward(loss);
        if (st == CT_OK) st = ct_step(opt);
        if (st == CT_OK) st = ct_item_checked(loss, &last);
        if (st != CT_OK) {
            CT_EXPECT_MSG(false, "epoch %d on %s: %s", epoch, name, ct_last_error());
            ct_clear_error();
            failed = true;
            last = NAN;
        }
        if (epoch == 0) *first = last;
    }
    ct_release(x), ct_release(y);
    ct_optimizer_free(opt);
    ct_module_free(model);
    return last;
}

/* Each device must reproduce the CPU's losses (same seed, same data). */
static void check_device_loop(ct_device dev, double first_cpu, double last_cpu) {
    double first, last = train_seed_loop(dev, &first);
    CT_EXPECT_NEAR(first, first_cpu, 1e-5 * fabs(first_cpu));
    CT_EXPECT_NEAR(last, last_cpu, 1e-4 * fabs(last_cpu));
}

static void test_seed_training_loop_every_device(void) {
    double first_cpu, last_cpu = train_seed_loop(ct_device_cpu(), &first_cpu);
    CT_EXPECT_MSG(last_cpu < first_cpu * 0.8, "cpu loss %g -> %g", first_cpu, last_cpu);
    int ncl = ct_test_opencl_devices("the training loop on OpenCL");
    for (int i = 0; i < ncl; i++) check_device_loop(ct_device_opencl(i), first_cpu, last_cpu);
    int ncu = ct_test_cuda_devices("the training loop on CUDA");
    for (int i = 0; i < ncu; i++) check_device_loop(ct_device_cuda(i), first_cpu, last_cpu);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_linear_module);
    CT_RUN(test_sequential_names_and_modes);
    CT_RUN(test_sgd_matches_reference);
    CT_RUN(test_adamw_matches_reference);
    CT_RUN(test_schedulers_match_pytorch);
    CT_RUN(test_clip_grad_norm);
    CT_RUN(test_seed_training_loop_every_device);
    return ct_test_finish();
}
