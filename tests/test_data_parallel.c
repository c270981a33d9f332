/*
 * test_data_parallel.c — torch.nn.DataParallel (ctorch/distributed.h): the
 * same training with the batch split over two devices as on one device,
 * on the two PoCL devices (skipped without them) and on two CPU "devices"
 * (threads); the module's gradients are the whole batch's; replicas follow
 * the module's weights and modes; the errors (module on the wrong device,
 * bad device lists, a batch of one).
 */
#include <string.h>

#include "ctorch/distributed.h"
#include "testutil.h"

static ct_module *mlp(void) {
    return CT_SEQUENTIAL(ct_nn_linear(6, 24, true), ct_nn_relu(), ct_nn_linear(24, 12, true), ct_nn_relu(),
                         ct_nn_linear(12, 3, true));
}

/* 4 SGD steps with momentum on a batch of 10 (split 5 + 5), against the same
 * steps on one device. */
static void check_training(const char *what, ct_device d0, ct_device d1) {
    ct_manual_seed(3);
    ct_module *model = ct_module_to(mlp(), d0), *single = ct_module_clone(model, d0);
    const ct_device devs[2] = {d0, d1};
    ct_data_parallel *dp = ct_data_parallel_new(model, devs, 2, d0);
    CT_EXPECT_MSG(dp != NULL, "%s: %s", what, ct_last_error());
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    ct_optimizer *opt1 = ct_sgd(single, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    for (int step = 0; dp && step < 4; step++) CT_SCOPE {
        ct_manual_seed(50 + (uint64_t)step);
        ct_tensor *x = ct_randn(CT_SHAPE(10, 6), .device = d0), *y = ct_randint(0, 3, CT_SHAPE(10), .device = d0);
        ct_zero_grad(opt), ct_zero_grad(opt1);
        ct_tensor *out = ct_data_parallel_forward(dp, x);
        CT_EXPECT_MSG(out != NULL, "%s: %s", what, ct_last_error());
        if (out) CT_EXPECT_SHAPE(out, CT_SHAPE(10, 3));
        CT_EXPECT(out && ct_device_equal(ct_device_of(out), d0));
        CT_EXPECT(ct_backward(ct_cross_entropy(out, y)) == CT_OK);
        CT_EXPECT(ct_backward(ct_cross_entropy(ct_forward(single, x), y)) == CT_OK);
        if (step == 0) {
            double gd = 0;
            ct_tensor *g[8], *g1[8];
            const int n = ct_module_parameters(model, g, NULL, 8);
            ct_module_parameters(single, g1, NULL, 8);
            for (int k = 0; k < n; k++) {
                double d = ct_item(ct_max_all(ct_abs(ct_sub(ct_grad(g[k]), ct_grad(g1[k])))));
                gd = d > gd ? d : gd;
            }
            CT_EXPECT_MSG(gd < 1e-5, "%s: module gradients differ from the whole batch's by %g", what, gd);
        }
        ct_step(opt), ct_step(opt1);
    }
    const double diff = ct_test_param_diff(model, single);
    CT_EXPECT_MSG(diff < 1e-5, "%s: DataParallel training differs from one device by %g", what, diff);
    printf("  %s: parameters after 4 steps within %.2g of one device\n", what, diff);
    /* eval mode and no-grad forwards reach the replicas too */
    ct_module_eval(model);
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(7, 6), .device = d0);
        ct_tensor *a = ct_data_parallel_forward(dp, x), *b = ct_forward(single, x);
        CT_EXPECT(a && !ct_requires_grad(a));
        if (a && b) CT_EXPECT_NEAR(ct_item(ct_max_all(ct_abs(ct_sub(a, b)))), 0.0, 1e-5);
        /* a batch of one runs on the first device alone */
        CT_EXPECT(ct_data_parallel_forward(dp, ct_narrow(x, 0, 0, 1)) != NULL);
    }
    ct_optimizer_free(opt), ct_optimizer_free(opt1);
    ct_data_parallel_free(dp);
    ct_module_free(model), ct_module_free(single);
}

static void test_two_cpu_threads(void) { check_training("cpu + cpu", ct_device_cpu(), ct_device_cpu()); }

static void test_two_opencl_devices(void) {
    if (ct_device_count(CT_DEVICE_OPENCL) < 2) {
        ct_test_skip("DataParallel on OpenCL: fewer than two OpenCL devices (POCL_DEVICES=\"pthread pthread\")");
        return;
    }
    ct_device d0, d1;
    ct_device_parse("opencl:0", &d0), ct_device_parse("opencl:1", &d1);
    check_training("opencl:0 + opencl:1", d0, d1);
}

static void test_errors(void) {
    ct_module *m = mlp();
    const ct_device cpu[2] = {ct_device_cpu(), ct_device_cpu()};
    CT_EXPECT(ct_data_parallel_new(NULL, cpu, 2, cpu[0]) == NULL);
    ct_clear_error();
    CT_EXPECT(ct_data_parallel_new(m, cpu, 0, cpu[0]) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "needs 1 to 16 devices, got 0");
    if (ct_device_count(CT_DEVICE_OPENCL) >= 1) {
        ct_device cl[2];
        ct_device_parse("opencl:0", &cl[0]), cl[1] = cpu[0];
        CT_EXPECT(ct_data_parallel_new(m, cl, 2, cl[0]) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "module must have its parameters and buffers on device opencl:0");
    }
    ct_data_parallel *dp = ct_data_parallel_new(m, cpu, 2, cpu[0]);
    CT_SCOPE {
        CT_EXPECT(ct_data_parallel_forward(dp, ct_ones(CT_SHAPE())) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "needs a batch dimension");
        CT_EXPECT(ct_data_parallel_forward(dp, ct_ones(CT_SHAPE(4, 5))) == NULL); /* wrong feature size */
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "DataParallel: replica 0 on cpu");
    }
    ct_data_parallel_free(dp);
    ct_module_free(m);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_two_cpu_threads);
    CT_RUN(test_two_opencl_devices);
    CT_RUN(test_errors);
    return ct_test_finish();
}
