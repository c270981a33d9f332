/*
 * test_module_to.c — module.to(device) is all or nothing: when the device
 * runs out of memory half-way (a memory fraction on a PoCL device), the
 * module is unchanged — every parameter still on the CPU with its values,
 * still usable, still the caller's — and a later move succeeds. Also the
 * move of parameters with their gradients, there and back.
 */
#include <stdlib.h>

#include "ctorch/ctorch.h"
#include "testutil.h"

static ct_module *two_layers(int64_t big) {
    ct_module *layers[2] = {ct_nn_linear(4, 4, true), ct_nn_linear(big, big, false)};
    return ct_nn_sequential(layers, 2);
}

static void test_failed_move_leaves_the_module_alone(void) {
    if (!ct_test_opencl_devices("module.to under a memory fraction")) return;
    ct_device dev = ct_device_opencl(0);
    size_t free_b = 0, total = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(dev, &free_b, &total), CT_OK);
    ct_module *m = two_layers(4096); /* 64 MiB of weight in the second layer */
    ct_tensor *w0 = ct_module_get(m, "0.weight"), *w1 = ct_module_get(m, "1.weight");
    double *before = ct_test_values(w0);
    /* room for the small layer only */
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction((double)(16u << 20) / (double)total, dev), CT_OK);
    ct_clear_error();
    CT_EXPECT(ct_module_to(m, dev) == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "OpenCL out of memory");
    CT_EXPECT(ct_device_of(w0).type == CT_DEVICE_CPU && ct_device_of(w1).type == CT_DEVICE_CPU);
    CT_EXPECT_CLOSE(w0, before, 16, 0, 0);
    ct_clear_error();
    CT_SCOPE { CT_EXPECT(ct_forward(ct_module_child(m, "0"), ct_randn(CT_SHAPE(2, 4))) != NULL); } /* still usable */
    /* with the limit lifted the same module moves */
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction(1.0, dev), CT_OK);
    CT_EXPECT_INT_EQ(ct_module_to_checked(m, dev), CT_OK);
    CT_EXPECT(ct_device_of(w0).type == CT_DEVICE_OPENCL && ct_device_of(w1).type == CT_DEVICE_OPENCL);
    CT_EXPECT_CLOSE(w0, before, 16, 0, 0);
    free(before);
    ct_module_free(m); /* w0, w1 were borrowed */
    ct_empty_cache(dev);
}

static void test_gradients_move(void) {
    if (!ct_test_opencl_devices("module.to with gradients")) return;
    ct_device dev = ct_device_opencl(0);
    ct_module *m = two_layers(8);
    ct_tensor *w1 = ct_module_get(m, "1.weight");
    CT_SCOPE { ct_set_grad(w1, ct_ones(CT_SHAPE(8, 8))); }
    CT_EXPECT_INT_EQ(ct_module_to_checked(m, dev), CT_OK);
    ct_tensor *g = ct_grad(w1);
    CT_EXPECT(g && ct_device_of(g).type == CT_DEVICE_OPENCL);
    ct_release(g);
    CT_EXPECT_INT_EQ(ct_module_to_checked(m, ct_device_cpu()), CT_OK); /* and back */
    CT_EXPECT(ct_device_of(w1).type == CT_DEVICE_CPU);
    ct_module_free(m);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_failed_move_leaves_the_module_alone);
    CT_RUN(test_gradients_move);
    return ct_test_finish();
}
