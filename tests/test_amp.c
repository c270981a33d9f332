/*
 * test_amp.c — autocast (ctorch/amp.h) against PyTorch's CPU autocast: the
 * output dtype of every op on the lists and of a few on none, the loss and
 * float32 gradients of a small MLP (tests/fixtures/autocast.py printed
 * them), nesting and disabled regions, the weight-cast cache, the CUDA/
 * OpenCL lists on an OpenCL device, and the errors.
 */
#include <math.h>
#include <stdlib.h>

#include "amp/autocast.h"
#include "testutil.h"

/* sin(0.37 i + k) * 0.8 over the flat index, as autocast.py's fill(). */
static ct_tensor *fill(ct_shape shape, double k, ct_device dev) {
    int64_t n = 1;
    for (int d = 0; d < shape.ndim; d++) n *= shape.dims[d];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = sin(0.37 * (double)i + k) * 0.8;
    ct_tensor *t = ct_to(ct_test_tensor(v, shape, CT_FLOAT32), dev, CT_FLOAT32);
    free(v);
    return t;
}

static void expect_dtype(const char *what, const ct_tensor *t, ct_dtype want) {
    CT_EXPECT_MSG(t != NULL, "%s: %s", what, ct_last_error());
    if (t)
        CT_EXPECT_MSG(ct_dtype_of(t) == want, "%s: %s, PyTorch gives %s", what, ct_dtype_name(ct_dtype_of(t)),
                      ct_dtype_name(want));
}

/* The dtypes autocast.py printed (PyTorch 2.15, torch.autocast("cpu")). */
static void test_cpu_dtypes(void) {
    CT_SCOPE {
        ct_device cpu = ct_device_cpu();
        ct_tensor *f32 = fill(CT_SHAPE(4, 6), 0.0, cpu), *b16 = ct_to_dtype(f32, CT_BFLOAT16);
        ct_tensor *img = fill(CT_SHAPE(2, 3, 5, 5), 1.0, cpu), *w = fill(CT_SHAPE(4, 3, 3, 3), 2.0, cpu);
        ct_tensor *tgt = ct_tensor_from(.data = (int64_t[]){1, 0, 3, 2}, .src_dtype = CT_INT64, .dtype = CT_INT64, .shape = CT_SHAPE(4));
        ct_tensor *f64 = ct_to_dtype(f32, CT_FLOAT64);
        CT_AUTOCAST(CT_DEVICE_CPU) {
            CT_EXPECT(ct_is_autocast_enabled(CT_DEVICE_CPU) && !ct_is_autocast_enabled(CT_DEVICE_OPENCL));
            CT_EXPECT(ct_get_autocast_dtype(CT_DEVICE_CPU) == CT_BFLOAT16);
            expect_dtype("matmul", ct_matmul(f32, ct_t(f32)), CT_BFLOAT16);
            expect_dtype("mm", ct_mm(f32, ct_t(f32)), CT_BFLOAT16);
            expect_dtype("bmm", ct_bmm(ct_reshape(f32, CT_SHAPE(2, 2, 6)), ct_reshape(f32, CT_SHAPE(2, 6, 2))),
                         CT_BFLOAT16);
            expect_dtype("linear", ct_linear(f32, ct_narrow(f32, 0, 0, 3), ct_narrow(ct_select(f32, 0, 0), 0, 0, 3)),
                         CT_BFLOAT16);
            expect_dtype("conv2d", ct_conv2d(img, w, ct_narrow(ct_flatten(w, 0, -1), 0, 0, 4)), CT_BFLOAT16);
            expect_dtype("mse_loss(bf16)", ct_mse_loss(b16, b16), CT_FLOAT32);
            expect_dtype("cross_entropy(bf16)", ct_cross_entropy(b16, tgt), CT_FLOAT32);
            expect_dtype("nll_loss(bf16)", ct_nll_loss(ct_log_softmax(b16, 1), tgt), CT_FLOAT32);
            expect_dtype("bce_with_logits(bf16)", ct_binary_cross_entropy_with_logits(b16, ct_sigmoid(b16)),
                         CT_FLOAT32);
            expect_dtype("prod(bf16)", ct_prod(b16, (int[]){1}, 1, false), CT_FLOAT32);
            expect_dtype("sum(bf16)", ct_sum(b16, (int[]){1}, 1, false), CT_BFLOAT16);
            expect_dtype("softmax(bf16)", ct_softmax(b16, 1), CT_BFLOAT16);
            expect_dtype("exp(bf16)", ct_exp(b16), CT_BFLOAT16);
            expect_dtype("relu(f32)", ct_relu(f32), CT_FLOAT32);
            expect_dtype("add(f32,bf16)", ct_add(f32, b16), CT_FLOAT32);
            expect_dtype("matmul(f64)", ct_matmul(f64, ct_t(f64)), CT_FLOAT64);
        }
        CT_EXPECT(!ct_is_autocast_enabled(CT_DEVICE_CPU));
        expect_dtype("matmul after the region", ct_matmul(f32, ct_t(f32)), CT_FLOAT32);
    }
}

static void expect_close(const char *what, const ct_tensor *got, const double *want, int64_t n) {
    ct_tensor *g = ct_to_dtype(got, CT_FLOAT64);
    const double *v = g ? ct_data_ptr(g) : NULL;
    CT_EXPECT_MSG(v && ct_numel(got) == n, "%s: %s", what, ct_last_error());
    for (int64_t i = 0; v && i < n; i++)
        CT_EXPECT_MSG(fabs(v[i] - want[i]) <= 0.02 * fabs(want[i]) + 0.01, "%s[%lld]: %.9g, PyTorch %.9g", what,
                      (long long)i, v[i], want[i]);
}

/* An MLP's loss and gradients under bfloat16 autocast, as autocast.py
 * printed them: the linears run in bfloat16 (their casts are recorded, so
 * the gradients reach the float32 parameters in float32), mse_loss in
 * float32. Within 2% + 0.01: bfloat16 keeps 8 bits. */
static void test_mlp_gradients(void) {
    static const double loss_ref = 4.131773948669434;
    static const double w1_ref[] = {0.69921875, 0.61328125, 0.447265625, 0.34765625, 0.14453125,
                                    -0.080078125, -0.32421875, -0.443359375, -0.50390625, -0.294921875,
                                    -0.404296875, -0.4609375, 0, 0, 0};
    static const double b1_ref[] = {1.3125, 1.8359375, 0.63671875, 0.58203125, 0};
    static const double w2_ref[] = {-1.453125, -0.494140625, -0.97265625, -0.765625, 0,
                                    -2.375, -0.7109375, -0.49609375, -0.388671875, 0};
    static const double b2_ref[] = {-1.84375, -2};
    CT_SCOPE {
        ct_device cpu = ct_device_cpu();
        ct_tensor *x = fill(CT_SHAPE(4, 3), 0.5, cpu), *y = fill(CT_SHAPE(4, 2), 5.5, cpu);
        ct_tensor *p[4] = {fill(CT_SHAPE(5, 3), 1.5, cpu), fill(CT_SHAPE(5), 2.5, cpu), fill(CT_SHAPE(2, 5), 3.5, cpu),
                           fill(CT_SHAPE(2), 4.5, cpu)};
        for (int i = 0; i < 4; i++) ct_set_requires_grad(p[i], true);
        ct_tensor *out = NULL, *loss = NULL;
        CT_AUTOCAST(CT_DEVICE_CPU) {
            out = ct_linear(ct_relu(ct_linear(x, p[0], p[1])), p[2], p[3]);
            loss = ct_mse_loss(out, y);
        }
        expect_dtype("out", out, CT_BFLOAT16);
        expect_dtype("loss", loss, CT_FLOAT32);
        CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
        CT_EXPECT_NEAR(ct_item(loss), loss_ref, 0.02 * loss_ref);
        const double *refs[4] = {w1_ref, b1_ref, w2_ref, b2_ref};
        const char *names[4] = {"w1.grad", "b1.grad", "w2.grad", "b2.grad"};
        for (int i = 0; i < 4; i++) {
            ct_tensor *g = ct_grad(p[i]);
            expect_dtype(names[i], g, CT_FLOAT32);
            if (g) expect_close(names[i], g, refs[i], ct_numel(p[i]));
        }
    }
}

/* Regions nest; a disabled one turns autocast off inside; exits restore. */
static void test_nesting_and_disabling(void) {
    CT_SCOPE {
        ct_tensor *a = fill(CT_SHAPE(3, 3), 0.0, ct_device_cpu());
        CT_AUTOCAST(CT_DEVICE_CPU) {
            expect_dtype("outer", ct_matmul(a, a), CT_BFLOAT16);
            CT_AUTOCAST(CT_DEVICE_CPU, .disabled = true) {
                CT_EXPECT(!ct_is_autocast_enabled(CT_DEVICE_CPU));
                expect_dtype("disabled inside", ct_matmul(a, a), CT_FLOAT32);
                CT_AUTOCAST(CT_DEVICE_CPU, .dtype = CT_FLOAT16) {
                    expect_dtype("float16 region inside", ct_matmul(a, a), CT_FLOAT16);
                }
                expect_dtype("disabled again", ct_matmul(a, a), CT_FLOAT32);
            }
            expect_dtype("outer again", ct_matmul(a, a), CT_BFLOAT16);
        }
        expect_dtype("outside", ct_matmul(a, a), CT_FLOAT32);
    }
}

/* A parameter is cast once per outermost region; the cache is dropped at
 * its exit and not used with no_cache. Plain tensors are not cached. */
static void test_weight_cast_cache(void) {
    CT_SCOPE {
        ct_tensor *x = fill(CT_SHAPE(2, 3), 0.0, ct_device_cpu()), *w = fill(CT_SHAPE(4, 3), 1.0, ct_device_cpu());
        ct_tensor *plain = fill(CT_SHAPE(4, 3), 2.0, ct_device_cpu());
        ct_set_requires_grad(w, true);
        CT_AUTOCAST(CT_DEVICE_CPU) {
            ct_linear(x, w, NULL);
            CT_EXPECT_INT_EQ(cti_autocast_cache_size(), 1);
            CT_AUTOCAST(CT_DEVICE_CPU) { ct_linear(x, w, NULL); }
            ct_linear(x, plain, NULL);
            CT_EXPECT_INT_EQ(cti_autocast_cache_size(), 1); /* w once; x and plain are not parameters */
        }
        CT_EXPECT_INT_EQ(cti_autocast_cache_size(), 0);
        CT_AUTOCAST(CT_DEVICE_CPU, .no_cache = true) {
            ct_linear(x, w, NULL);
            CT_EXPECT_INT_EQ(cti_autocast_cache_size(), 0);
        }
    }
}

static void test_errors(void) {
    CT_EXPECT_INT_EQ(ct_autocast_begin(CT_DEVICE_CPU, .dtype = CT_FLOAT32), CT_ERR_DTYPE);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "supports float16 and bfloat16, got float32");
    CT_EXPECT(!ct_is_autocast_enabled(CT_DEVICE_CPU)); /* entered disabled, so the exit pairs */
    CT_EXPECT_INT_EQ(ct_autocast_exit(CT_DEVICE_OPENCL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "exit for opencl, but the innermost open region is cpu");
    CT_EXPECT_INT_EQ(ct_autocast_exit(CT_DEVICE_CPU), CT_OK);
    CT_EXPECT_INT_EQ(ct_autocast_exit(CT_DEVICE_CPU), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "innermost open region is none");
    CT_EXPECT_INT_EQ(ct_autocast_begin((ct_device_type)7), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown device type 7");
}

/* OpenCL follows CUDA's lists: float16 by default, exp/sum/softmax in
 * float32; CPU tensors inside an OpenCL region are left alone. */
static void test_gpu_lists_on_opencl(void) {
    if (ct_device_count(CT_DEVICE_OPENCL) == 0) {
        ct_clear_error();
        ct_test_skip("no OpenCL device");
        return;
    }
    CT_SCOPE {
        ct_device d = ct_device_opencl(0);
        ct_tensor *a = fill(CT_SHAPE(3, 4), 0.0, d), *h = ct_to_dtype(a, CT_FLOAT16);
        ct_tensor *c = fill(CT_SHAPE(3, 4), 0.0, ct_device_cpu());
        CT_AUTOCAST(CT_DEVICE_OPENCL) {
            expect_dtype("opencl matmul", ct_matmul(a, ct_t(a)), CT_FLOAT16);
            expect_dtype("opencl exp(f16)", ct_exp(h), CT_FLOAT32);
            expect_dtype("opencl sum(f16)", ct_sum(h, (int[]){1}, 1, false), CT_FLOAT32);
            expect_dtype("opencl softmax(f16)", ct_softmax(h, 1), CT_FLOAT32);
            expect_dtype("opencl pow(f16)", ct_pow_scalar(h, 2.0), CT_FLOAT32);
            expect_dtype("cpu matmul in an opencl region", ct_matmul(c, ct_t(c)), CT_FLOAT32);
        }
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_cpu_dtypes);
    CT_RUN(test_mlp_gradients);
    CT_RUN(test_nesting_and_disabling);
    CT_RUN(test_weight_cast_cache);
    CT_RUN(test_errors);
    CT_RUN(test_gpu_lists_on_opencl);
    return ct_test_finish();
}
