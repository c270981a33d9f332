/*
 * test_scalar_operands.c — a 0-dim CPU tensor as an operand of an op on
 * another device, as PyTorch allows (x_cuda * torch.tensor(2.0)): binary
 * ops either way round, comparisons, where, PyTorch's promotion for 0-dim
 * operands, the gradient coming back to the CPU scalar, and the error that
 * stays for CPU tensors that are not 0-dim. Runs on PoCL's opencl:0.
 */
#include <stdlib.h>
#include <string.h>

#include "ctorch/ctorch.h"
#include "testutil.h"

static void test_binary_and_where(void) {
    if (!ct_test_opencl_devices("0-dim CPU operands")) return;
    const ct_device dev = ct_device_opencl(0);
    CT_SCOPE {
        ct_tensor *x = ct_to(ct_test_tensor((double[]){1, -2, 3}, CT_SHAPE(3), CT_FLOAT32), dev, CT_FLOAT32);
        ct_tensor *two = ct_full(CT_SHAPE(), 2.0, .dtype = CT_FLOAT64); /* 0-dim, CPU, float64 */
        ct_tensor *y = ct_mul(x, two), *z = ct_sub(two, x);
        CT_EXPECT(y && ct_device_of(y).type == CT_DEVICE_OPENCL && ct_dtype_of(y) == CT_FLOAT32);
        CT_EXPECT_CLOSE(y, ((double[]){2, -4, 6}), 3, 0, 0);
        CT_EXPECT(z && ct_device_of(z).type == CT_DEVICE_OPENCL);
        CT_EXPECT_CLOSE(z, ((double[]){1, 4, -1}), 3, 0, 0);
        /* an int tensor on the device and a float 0-dim CPU tensor: the default float */
        ct_tensor *xi = ct_to(ct_test_tensor((double[]){1, 2, 3}, CT_SHAPE(3), CT_INT32), dev, CT_INT32);
        ct_tensor *half = ct_full(CT_SHAPE(), 0.5);
        ct_tensor *r = ct_mul(xi, half);
        CT_EXPECT(r && ct_dtype_of(r) == CT_FLOAT32);
        CT_EXPECT_CLOSE(r, ((double[]){0.5, 1, 1.5}), 3, 0, 0);
        ct_tensor *gt = ct_gt(x, ct_full(CT_SHAPE(), 0.0));
        CT_EXPECT(gt && ct_dtype_of(gt) == CT_BOOL && ct_device_of(gt).type == CT_DEVICE_OPENCL);
        CT_EXPECT_CLOSE(gt, ((double[]){1, 0, 1}), 3, 0, 0);
        ct_tensor *w = ct_where(gt, x, ct_full(CT_SHAPE(), -1.0));
        CT_EXPECT(w && ct_device_of(w).type == CT_DEVICE_OPENCL);
        CT_EXPECT_CLOSE(w, ((double[]){1, -1, 3}), 3, 0, 0);
        /* a CPU tensor with dims is still refused, with PyTorch's message */
        CT_EXPECT(ct_add(x, ct_ones(CT_SHAPE(3))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected all tensors to be on the same device");
    }
}

static void test_gradient_comes_back_to_the_cpu(void) {
    if (!ct_test_opencl_devices("0-dim CPU operand gradients")) return;
    const ct_device dev = ct_device_opencl(0);
    CT_SCOPE {
        ct_tensor *x = ct_to(ct_test_tensor((double[]){1, -2, 3}, CT_SHAPE(3), CT_FLOAT32), dev, CT_FLOAT32);
        ct_tensor *s = ct_full(CT_SHAPE(), 2.0, .requires_grad = true);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(x, s))), CT_OK);
        ct_tensor *g = ct_grad(s);
        CT_EXPECT(g && ct_device_of(g).type == CT_DEVICE_CPU && ct_ndim(g) == 0);
        CT_EXPECT(g && ct_item(g) == 2.0); /* d/ds sum(x * s) = sum(x) = 2 */
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_binary_and_where);
    CT_RUN(test_gradient_comes_back_to_the_cpu);
    return ct_test_finish();
}
