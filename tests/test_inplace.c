/*
 * test_inplace.c — in-place ops (add_, sub_, mul_, div_, clamp_, relu_,
 * copy_, fill_, zero_) and out= forms against PyTorch's semantics: values
 * written into the same memory (views see them), broadcasting, dtype and
 * aliasing refusals with PyTorch's messages, version counters that make a
 * backward through a changed saved value fail, autograd rebasing history
 * (gradients checked against float64 formulas; tests/fixtures/inplace.py
 * prints what PyTorch 2.x says for each case), out= resizing and its
 * refusal under autograd, and the same ops on PoCL against the CPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ctorch.h"
#include "testutil.h"

#define T3(a, b, c) ct_test_tensor((double[]){a, b, c}, CT_SHAPE(3), CT_FLOAT32)

static ct_tensor *leaf3(double a, double b, double c) {
    ct_tensor *t = ct_test_tensor((double[]){a, b, c}, CT_SHAPE(3), CT_FLOAT32);
    ct_set_requires_grad(t, true);
    return t;
}

static void test_values_in_the_same_memory(void) {
    CT_SCOPE {
        ct_tensor *x = ct_test_tensor((double[]){1, -2, 3, -4, 5, -6}, CT_SHAPE(2, 3), CT_FLOAT32);
        void *p = ct_data_ptr(x);
        ct_tensor *row1 = ct_select(x, 0, 1); /* a view: sees every write */
        CT_EXPECT_INT_EQ(ct_add_(x, T3(10, 20, 30)), CT_OK); /* broadcast over rows */
        CT_EXPECT_CLOSE(x, ((double[]){11, 18, 33, 6, 25, 24}), 6, 0, 0);
        CT_EXPECT_INT_EQ(ct_sub_scalar_(x, 1), CT_OK);
        CT_EXPECT_INT_EQ(ct_mul_(x, ct_full(CT_SHAPE(), 2.0)), CT_OK);
        CT_EXPECT_INT_EQ(ct_div_scalar_(x, 4), CT_OK);
        CT_EXPECT_CLOSE(x, ((double[]){5, 8.5, 16, 2.5, 12, 11.5}), 6, 0, 0);
        CT_EXPECT_INT_EQ(ct_add_scaled_(x, T3(1, 1, 1), -0.5), CT_OK);
        CT_EXPECT_INT_EQ(ct_sub_(x, T3(0, 0, 20)), CT_OK);
        CT_EXPECT_INT_EQ(ct_mul_scalar_(x, -1), CT_OK);
        CT_EXPECT_INT_EQ(ct_relu_(x), CT_OK);
        CT_EXPECT_CLOSE(x, ((double[]){0, 0, 4.5, 0, 0, 9}), 6, 0, 0);
        CT_EXPECT_INT_EQ(ct_add_scalar_(x, -3), CT_OK);
        CT_EXPECT_INT_EQ(ct_clamp_(x, -2, NAN), CT_OK);
        CT_EXPECT_INT_EQ(ct_div_(x, T3(2, 2, 2)), CT_OK);
        CT_EXPECT_CLOSE(x, ((double[]){-1, -1, 0.75, -1, -1, 3}), 6, 0, 0);
        CT_EXPECT(ct_data_ptr(x) == p);
        CT_EXPECT_CLOSE(row1, ((double[]){-1, -1, 3}), 3, 0, 0);
        /* a strided view written in place leaves the rest alone */
        CT_EXPECT_INT_EQ(ct_zero_(ct_select(x, 1, 2)), CT_OK);
        CT_EXPECT_INT_EQ(ct_fill_(ct_select(x, 1, 0), 7), CT_OK);
        CT_EXPECT_CLOSE(x, ((double[]){7, -1, 0, 7, -1, 0}), 6, 0, 0);
        /* integers stay integers: int64 += 2 and *= int64 */
        ct_tensor *n = ct_test_tensor((double[]){1, 2, 3}, CT_SHAPE(3), CT_INT64);
        CT_EXPECT_INT_EQ(ct_add_scalar_(n, 2), CT_OK);
        CT_EXPECT_INT_EQ(ct_mul_(n, n), CT_OK); /* the same tensor on both sides */
        CT_EXPECT(ct_dtype_of(n) == CT_INT64);
        CT_EXPECT_CLOSE(n, ((double[]){9, 16, 25}), 3, 0, 0);
        /* float32 self, float64 other: computed in float64, stored in float32 */
        ct_tensor *f = T3(1, 2, 3);
        CT_EXPECT_INT_EQ(ct_mul_(f, ct_test_tensor((double[]){0.1, 0.1, 0.1}, CT_SHAPE(3), CT_FLOAT64)), CT_OK);
        CT_EXPECT(ct_dtype_of(f) == CT_FLOAT32);
        CT_EXPECT_CLOSE(f, ((double[]){(float)(1 * 0.1), (float)(2 * 0.1), (float)(3 * 0.1)}), 3, 0, 0);
    }
}

static void test_refusals(void) {
    CT_SCOPE {
        ct_tensor *n = ct_test_tensor((double[]){1, 2, 3}, CT_SHAPE(3), CT_INT64);
        CT_EXPECT(ct_add_scalar_(n, 2.5) == CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "result type Float can't be cast to the desired output type Long");
        CT_EXPECT(ct_div_(n, n) == CT_ERR_DTYPE); /* true division gives floats */
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "can't be cast to the desired output type Long");
        ct_tensor *x = T3(1, 2, 3);
        CT_EXPECT(ct_add_(x, ct_ones(CT_SHAPE(2, 3))) == CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "output with shape [3] doesn't match the broadcast shape [2, 3]");
        ct_tensor *e = ct_expand(ct_ones(CT_SHAPE(1)), CT_SHAPE(3));
        CT_EXPECT(ct_add_scalar_(e, 1) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "more than one element of the written-to tensor refers to a single");
        ct_tensor *b = ct_arange(0, 5, 1, .dtype = CT_FLOAT32);
        CT_EXPECT(ct_add_(ct_narrow(b, 0, 1, 3), ct_narrow(b, 0, 0, 3)) == CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "some elements of the input tensor and the written-to tensor");
        CT_EXPECT_CLOSE(b, ((double[]){0, 1, 2, 3, 4}), 5, 0, 0); /* nothing written */
        /* a NULL from a failed call keeps its error */
        ct_set_error(CT_ERR_IO, "earlier");
        CT_EXPECT(ct_mul_(x, NULL) == CT_ERR_IO);
        CT_EXPECT_ERROR(CT_ERR_IO, "earlier");
        CT_EXPECT(ct_relu_(NULL) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "relu_");
    }
}

static void test_autograd_rules(void) {
    CT_SCOPE {
        ct_tensor *x = leaf3(1, -2, 3);
        CT_EXPECT(ct_mul_scalar_(x, 2) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "a leaf Variable that requires grad is being used in an in-place operation.");
        CT_EXPECT(ct_zero_(x) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "a leaf Variable that requires grad");
        CT_EXPECT(ct_mul_scalar_(ct_narrow(x, 0, 0, 2), 2) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "a view of a leaf Variable that requires grad is being used in an in-place");
        ct_tensor *h = ct_mul_scalar(x, 1);
        ct_tensor *v = ct_narrow(h, 0, 0, 2);
        CT_EXPECT(ct_relu_(v) == CT_ERR_UNSUPPORTED);
        CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "CopySlices");
        CT_EXPECT(ct_relu_(h) == CT_ERR_UNSUPPORTED); /* the base of a view with history */
        CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "CopySlices");
        /* under CT_NO_GRAD both are plain writes, as optimizers and init code need */
        CT_NO_GRAD {
            CT_EXPECT_INT_EQ(ct_mul_scalar_(x, 2), CT_OK);
            CT_EXPECT_INT_EQ(ct_relu_(v), CT_OK);
        }
        CT_EXPECT_CLOSE(x, ((double[]){2, -4, 6}), 3, 0, 0);
        CT_EXPECT(ct_requires_grad(x) && ct_is_leaf(x));
    }
}

/* PyTorch: "one of the variables needed for gradient computation has been
 * modified by an inplace operation: [...] is at version 1; expected version
 * 0 instead." */
static void test_versions(void) {
    CT_SCOPE {
        ct_tensor *x = leaf3(1, 2, 3);
        ct_tensor *y = ct_exp(x); /* exp saves its output */
        CT_EXPECT_INT_EQ(ct_mul_scalar_(y, 2), CT_OK);
        CT_EXPECT(ct_backward(ct_sum_all(y)) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "has been modified by an inplace operation: [torch.FloatTensor [3]], which is "
                                      "output 0 of Exp, is at version 1; expected version 0 instead");

        ct_tensor *w = T3(1, 1, 1); /* no grad; saved by mul for x's gradient */
        ct_tensor *z = ct_mul(x, w);
        CT_EXPECT_INT_EQ(ct_add_scalar_(w, 1), CT_OK);
        CT_EXPECT_INT_EQ(ct_add_scalar_(w, 1), CT_OK);
        CT_EXPECT(ct_backward(ct_sum_all(z)) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "[torch.FloatTensor [3]] is at version 2; expected version 0 instead");

        /* a detached handle shares the counter; out-of-place ops do not bump it */
        ct_tensor *z2 = ct_mul(x, w);
        ct_tensor *unused = ct_add(w, w);
        (void)unused;
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(z2, ct_ones(CT_SHAPE(3))))), CT_OK);
        ct_tensor *z3 = ct_mul(x, w);
        CT_EXPECT_INT_EQ(ct_fill_(ct_detach(w), 0), CT_OK);
        CT_EXPECT(ct_backward(ct_sum_all(z3)) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "modified by an inplace operation");

        /* an optimizer step between forward and backward, as PyTorch */
        ct_tensor *p = leaf3(1, 2, 3);
        ct_tensor *loss = ct_sum_all(ct_mul(p, p));
        ct_optimizer *opt = ct_sgd_params(&p, 1, (ct_sgd_opts){.lr = 0.1});
        CT_EXPECT_INT_EQ(ct_set_grad(p, ct_ones(CT_SHAPE(3))), CT_OK);
        CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
        CT_EXPECT(ct_backward(loss) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "modified by an inplace operation");
        ct_optimizer_free(opt);
    }
}

/* Gradients through rebased history, against float64 formulas. */
static void test_gradients(void) {
    const double xv[3] = {1, -2, 3}, yv[3] = {0.5, 4, -1};
    CT_SCOPE {
        /* h = 2x; h *= x  =>  d sum(h)/dx = 4x */
        ct_tensor *x = leaf3(xv[0], xv[1], xv[2]);
        ct_tensor *h = ct_mul_scalar(x, 2);
        CT_EXPECT_INT_EQ(ct_mul_(h, x), CT_OK);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(h), "MulBackward0");
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(h)), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){4 * xv[0], 4 * xv[1], 4 * xv[2]}), 3, 1e-6, 0);
    }
    CT_SCOPE {
        /* h = x; h *= y (needs h's old value for y's gradient); h += y;
         * relu_(h); L = sum(h^2): with g = 2h (x y + y > 0),
         * dL/dx = g y and dL/dy = g (x + 1) */
        ct_tensor *x = leaf3(xv[0], xv[1], xv[2]), *y = leaf3(yv[0], yv[1], yv[2]);
        ct_tensor *h = ct_mul_scalar(x, 1);
        CT_EXPECT_INT_EQ(ct_mul_(h, y), CT_OK);
        CT_EXPECT_INT_EQ(ct_add_(h, y), CT_OK);
        CT_EXPECT_INT_EQ(ct_relu_(h), CT_OK);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(h), "ReluBackward0");
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(h, h))), CT_OK);
        double gx[3], gy[3];
        for (int i = 0; i < 3; i++) {
            double pre = xv[i] * yv[i] + yv[i], g = 2 * (pre > 0 ? pre : 0) * (pre > 0);
            gx[i] = g * yv[i];
            gy[i] = g * (xv[i] + 1);
        }
        CT_EXPECT_CLOSE(ct_grad(x), gx, 3, 1e-6, 1e-6);
        CT_EXPECT_CLOSE(ct_grad(y), gy, 3, 1e-6, 1e-6);
    }
    CT_SCOPE {
        /* relu_ saves its output, which is h: changing h afterwards is caught
         * (PyTorch: "output 0 of Relu, is at version 3; expected version 2") */
        ct_tensor *x = leaf3(xv[0], xv[1], xv[2]), *y = leaf3(yv[0], yv[1], yv[2]);
        ct_tensor *h = ct_mul_scalar(x, 1);
        CT_EXPECT_INT_EQ(ct_mul_(h, y), CT_OK);
        CT_EXPECT_INT_EQ(ct_relu_(h), CT_OK);
        CT_EXPECT_INT_EQ(ct_add_(h, y), CT_OK);
        CT_EXPECT(ct_backward(ct_sum_all(ct_mul(h, h))) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "[torch.FloatTensor [3]], which is output 0 of Relu, is at version 3; "
                                      "expected version 2 instead");
    }
    CT_SCOPE {
        /* a tensor without history takes other's: a = 0; a += y; a.copy_ into b */
        ct_tensor *y = leaf3(yv[0], yv[1], yv[2]);
        ct_tensor *a = ct_zeros(CT_SHAPE(3));
        CT_EXPECT_INT_EQ(ct_add_(a, y), CT_OK);
        CT_EXPECT(ct_requires_grad(a) && !ct_is_leaf(a));
        ct_tensor *b = ct_zeros(CT_SHAPE(2, 3), .dtype = CT_FLOAT64);
        CT_EXPECT_INT_EQ(ct_copy_(b, a), CT_OK); /* broadcast, converted */
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul_scalar(b, 3))), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(y), ((double[]){6, 6, 6}), 3, 0, 0);
        CT_EXPECT(ct_dtype_of(ct_grad(y)) == CT_FLOAT32);
    }
    CT_SCOPE {
        /* fill_ on a tensor with history: it keeps requires_grad, and the old
         * history gets a zero gradient (PyTorch: x.grad == zeros) */
        ct_tensor *x = leaf3(xv[0], xv[1], xv[2]);
        ct_tensor *h = ct_mul_scalar(x, 2);
        CT_EXPECT_INT_EQ(ct_fill_(h, 1), CT_OK);
        CT_EXPECT(ct_requires_grad(h));
        CT_EXPECT_STR_EQ(ct_grad_fn_name(h), "FillBackward0");
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(h, x))), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){1, 1, 1}), 3, 0, 0); /* only through the product */
    }
}

static void test_out_forms(void) {
    CT_SCOPE {
        ct_tensor *a = T3(1, 2, 3), *b = T3(10, 20, 30);
        ct_tensor *out = ct_empty(CT_SHAPE(3));
        void *p = ct_data_ptr(out);
        CT_EXPECT_INT_EQ(ct_add_out(out, a, b), CT_OK);
        CT_EXPECT_CLOSE(out, ((double[]){11, 22, 33}), 3, 0, 0);
        CT_EXPECT(ct_data_ptr(out) == p);
        CT_EXPECT_INT_EQ(ct_mul_out(out, out, a), CT_OK); /* out may be an input */
        CT_EXPECT_INT_EQ(ct_sub_out(out, out, b), CT_OK);
        CT_EXPECT_INT_EQ(ct_div_out(out, out, ct_full(CT_SHAPE(), 2.0)), CT_OK);
        CT_EXPECT_CLOSE(out, ((double[]){0.5, 12, 34.5}), 3, 0, 0);
        CT_EXPECT_INT_EQ(ct_clamp_out(out, out, 1, 20), CT_OK);
        CT_EXPECT_CLOSE(out, ((double[]){1, 12, 20}), 3, 0, 0);
        /* an empty out is resized; a float64 out takes a float32 result */
        ct_tensor *e = ct_empty(CT_SHAPE(0), .dtype = CT_FLOAT64);
        CT_EXPECT_INT_EQ(ct_add_out(e, ct_ones(CT_SHAPE(2, 1)), a), CT_OK);
        CT_EXPECT_SHAPE(e, CT_SHAPE(2, 3));
        CT_EXPECT(ct_dtype_of(e) == CT_FLOAT64);
        CT_EXPECT_CLOSE(e, ((double[]){2, 3, 4, 2, 3, 4}), 6, 0, 0);
        CT_EXPECT(ct_add_out(ct_empty(CT_SHAPE(2)), a, b) == CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "output with shape [2] doesn't match the broadcast shape [3]");
        CT_EXPECT(ct_add_out(ct_empty(CT_SHAPE(3), .dtype = CT_INT64), a, b) == CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "result type Float can't be cast to the desired output type Long");
        ct_tensor *x = leaf3(1, 2, 3);
        CT_EXPECT(ct_add_out(out, x, b) == CT_ERR_STATE);
        CT_EXPECT_ERROR(CT_ERR_STATE, "add(): functions with out=... arguments don't support automatic "
                                      "differentiation, but one of the arguments requires grad.");
        CT_NO_GRAD { CT_EXPECT_INT_EQ(ct_add_out(out, x, b), CT_OK); }
        CT_EXPECT_CLOSE(out, ((double[]){11, 22, 33}), 3, 0, 0);
    }
}

/* The same ops on PoCL give the CPU's values; a 0-dim CPU operand is allowed. */
static void test_on_device(void) {
    if (!ct_test_opencl_devices("in-place ops")) return;
    const ct_device dev = ct_device_opencl(0);
    CT_SCOPE {
        ct_tensor *cpu = ct_test_tensor((double[]){1, -2, 3, -4, 5, -6}, CT_SHAPE(2, 3), CT_FLOAT32);
        ct_tensor *gpu = ct_to_device(cpu, dev);
        ct_tensor *row = T3(0.5, 1, 2);
        for (int k = 0; k < 2; k++) {
            ct_tensor *t = k ? gpu : cpu, *r = k ? ct_to_device(row, dev) : row;
            CT_EXPECT_INT_EQ(ct_mul_(t, r), CT_OK);
            CT_EXPECT_INT_EQ(ct_add_(t, ct_full(CT_SHAPE(), 1.0)), CT_OK); /* 0-dim CPU operand */
            CT_EXPECT_INT_EQ(ct_relu_(t), CT_OK);
            CT_EXPECT_INT_EQ(ct_clamp_(t, NAN, 5), CT_OK);
            CT_EXPECT_INT_EQ(ct_zero_(ct_select(t, 1, 0)), CT_OK);
        }
        CT_EXPECT(ct_mul_(gpu, row) == CT_ERR_DEVICE); /* a CPU tensor with dims is refused, as PyTorch */
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected all tensors to be on the same device");
        CT_EXPECT(ct_device_of(gpu).type == CT_DEVICE_OPENCL);
        CT_EXPECT_CLOSE(gpu, ((double[]){0, 0, 5, 0, 5, 0}), 6, 0, 0);
        CT_EXPECT_CLOSE(cpu, ((double[]){0, 0, 5, 0, 5, 0}), 6, 0, 0);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_values_in_the_same_memory);
    CT_RUN(test_refusals);
    CT_RUN(test_autograd_rules);
    CT_RUN(test_versions);
    CT_RUN(test_gradients);
    CT_RUN(test_out_forms);
    CT_RUN(test_on_device);
    return ct_test_finish();
}
