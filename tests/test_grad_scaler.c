/*
 * test_grad_scaler.c — the gradient scaler (ctorch/amp.h) against
 * PyTorch's GradScaler rules: defaults, the scaled loss, unscaled gradients
 * and a normal step, a skipped step and backoff on inf and on NaN in one of
 * many gradients, growth after the interval, the stage errors with
 * PyTorch's text, float16 gradients refused, clip_grad_norm after unscale,
 * the state_dict through a safetensors round trip, a disabled scaler, the
 * same on an OpenCL device (the fused kernel) when there is one, and a
 * float16 model whose gradients underflow without the scaler and train
 * with it.
 */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

/* Two float32 parameters [n] on dev with the given values. */
static ct_tensor *param(const double *v, int64_t n, ct_device dev) {
    ct_tensor *p = ct_to(ct_test_tensor(v, CT_SHAPE(n), CT_FLOAT64), dev, CT_FLOAT32);
    ct_set_requires_grad(p, true);
    return p;
}

/* backward of scale * (sum(a * ca) + sum(b * cb)): a.grad = scale * ca. */
static void backward_scaled(ct_grad_scaler *s, ct_tensor *a, ct_tensor *b, const double *ca, const double *cb,
                            ct_device dev) {
    ct_tensor *ta = ct_to(ct_test_tensor(ca, CT_SHAPE(3), CT_FLOAT64), dev, CT_FLOAT32);
    ct_tensor *tb = ct_to(ct_test_tensor(cb, CT_SHAPE(3), CT_FLOAT64), dev, CT_FLOAT32);
    ct_tensor *loss = ct_add(ct_sum_all(ct_mul(a, ta)), ct_sum_all(ct_mul(b, tb)));
    CT_EXPECT_INT_EQ(ct_backward(ct_grad_scaler_scale(s, loss)), CT_OK);
}

static void expect_values(const char *what, const ct_tensor *t, const double *want) {
    ct_tensor *c = ct_to(t, ct_device_cpu(), CT_FLOAT64);
    const double *v = c ? ct_data_ptr(c) : NULL;
    for (int i = 0; v && i < 3; i++)
        CT_EXPECT_MSG(v[i] == want[i] || (isnan(v[i]) && isnan(want[i])), "%s[%d]: %.9g, want %.9g", what, i, v[i],
                      want[i]);
}

static const double k_a[3] = {1, 2, 3}, k_b[3] = {-1, 0.5, 4};
static const double k_ca[3] = {0.5, -0.25, 1}, k_cb[3] = {2, 1, -3};

/* One clean iteration, then one with inf (or NaN) in b's gradient only. */
static void scaler_steps_on(ct_device dev, double bad) {
    CT_SCOPE {
        ct_tensor *a = param(k_a, 3, dev), *b = param(k_b, 3, dev);
        ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){a, b}, 2, (ct_sgd_opts){.lr = 0.5});
        ct_grad_scaler *s = ct_grad_scaler_new();
        CT_EXPECT(ct_grad_scaler_get_scale(s) == 65536.0);
        backward_scaled(s, a, b, k_ca, k_cb, dev);
        expect_values("scaled a.grad", ct_grad(a), (double[]){32768, -16384, 65536});
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
        expect_values("a.grad after unscale", ct_grad(a), k_ca);
        expect_values("a after step", a, (double[]){0.75, 2.125, 2.5}); /* a - 0.5 * ca */
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
        CT_EXPECT(ct_grad_scaler_get_scale(s) == 65536.0 && ct_grad_scaler_growth_tracker(s) == 1);

        ct_zero_grad(opt);
        const double cb_bad[3] = {2, bad, -3};
        backward_scaled(s, a, b, k_ca, cb_bad, dev);
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
        expect_values("a unchanged by the skipped step", a, (double[]){0.75, 2.125, 2.5});
        CT_EXPECT_INT_EQ(ct_grad_scaler_skipped_steps(s), 1);
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
        CT_EXPECT(ct_grad_scaler_get_scale(s) == 32768.0 && ct_grad_scaler_growth_tracker(s) == 0);
        ct_grad_scaler_free(s);
        ct_optimizer_free(opt);
    }
}

static void test_steps_cpu(void) {
    scaler_steps_on(ct_device_cpu(), INFINITY);
    scaler_steps_on(ct_device_cpu(), NAN);
}

static void test_steps_opencl(void) {
    if (ct_device_count(CT_DEVICE_OPENCL) == 0) {
        ct_clear_error();
        ct_test_skip("no OpenCL device");
        return;
    }
    scaler_steps_on(ct_device_opencl(0), INFINITY);
    scaler_steps_on(ct_device_opencl(0), NAN);
}

static void test_steps_cuda(void) {
    if (!ct_test_cuda_devices("GradScaler on CUDA")) return;
    scaler_steps_on(ct_device_cuda(0), INFINITY);
    scaler_steps_on(ct_device_cuda(0), NAN);
}

/* growth_interval clean steps double the scale; backoff halves it. */
static void test_growth(void) {
    CT_SCOPE {
        ct_tensor *a = param(k_a, 3, ct_device_cpu()), *b = param(k_b, 3, ct_device_cpu());
        ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){a, b}, 2, (ct_sgd_opts){.lr = 0.1});
        ct_grad_scaler *s = ct_grad_scaler_new(.init_scale = 8, .growth_interval = 3, .growth_factor = 4);
        for (int i = 1; i <= 3; i++) {
            ct_zero_grad(opt);
            backward_scaled(s, a, b, k_ca, k_cb, ct_device_cpu());
            CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
            CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
            CT_EXPECT_MSG(ct_grad_scaler_get_scale(s) == (i < 3 ? 8.0 : 32.0), "scale %g after %d clean steps",
                          ct_grad_scaler_get_scale(s), i);
        }
        CT_EXPECT_INT_EQ(ct_grad_scaler_growth_tracker(s), 0);
        CT_EXPECT_INT_EQ(ct_grad_scaler_update_to(s, 1024), CT_OK);
        CT_EXPECT(ct_grad_scaler_get_scale(s) == 1024.0);
        ct_grad_scaler_free(s);
        ct_optimizer_free(opt);
    }
}

/* PyTorch's stage errors, float16 gradients, bad options. */
static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *a = param(k_a, 3, ct_device_cpu()), *b = param(k_b, 3, ct_device_cpu());
        ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){a, b}, 2, (ct_sgd_opts){.lr = 0.1});
        ct_grad_scaler *s = ct_grad_scaler_new();
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "No inf checks were recorded prior to update.");
        backward_scaled(s, a, b, k_ca, k_cb, ct_device_cpu());
        CT_EXPECT_INT_EQ(ct_grad_scaler_unscale(s, opt), CT_OK);
        CT_EXPECT_INT_EQ(ct_grad_scaler_unscale(s, opt), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unscale_() has already been called on this optimizer since the last update().");
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "step() has already been called since the last update().");
        CT_EXPECT_INT_EQ(ct_grad_scaler_unscale(s, opt), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unscale_() is being called after step().");
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
        ct_grad_scaler_free(s);
        ct_optimizer_free(opt);

        ct_tensor *h = ct_to_dtype(ct_test_tensor(k_a, CT_SHAPE(3), CT_FLOAT64), CT_FLOAT16);
        ct_set_requires_grad(h, true);
        ct_optimizer *hopt = ct_sgd_params((ct_tensor *[]){h}, 1, (ct_sgd_opts){.lr = 0.1});
        ct_grad_scaler *hs = ct_grad_scaler_new();
        CT_EXPECT_INT_EQ(ct_backward(ct_grad_scaler_scale(hs, ct_sum_all(h))), CT_OK);
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(hs, hopt), CT_ERR_DTYPE);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Attempting to unscale FP16 gradients.");
        ct_grad_scaler_free(hs);
        ct_optimizer_free(hopt);
    }
    CT_EXPECT(ct_grad_scaler_new(.growth_factor = 1.0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "The growth factor must be > 1.0.");
    CT_EXPECT(ct_grad_scaler_new(.backoff_factor = 1.5) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "The backoff factor must be < 1.0.");
}

/* unscale, then clip the true gradients, then step (the recipe for clipping). */
static void test_clip_after_unscale(void) {
    CT_SCOPE {
        ct_tensor *a = param(k_a, 3, ct_device_cpu()), *b = param(k_b, 3, ct_device_cpu());
        ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){a, b}, 2, (ct_sgd_opts){.lr = 1.0});
        ct_grad_scaler *s = ct_grad_scaler_new();
        backward_scaled(s, a, b, k_ca, k_cb, ct_device_cpu());
        CT_EXPECT_INT_EQ(ct_grad_scaler_unscale(s, opt), CT_OK);
        ct_tensor *norm = ct_clip_grad_norm_params((ct_tensor *[]){a, b}, 2, 1.0, 2.0);
        const double total = sqrt(0.25 + 0.0625 + 1 + 4 + 1 + 9); /* of the unscaled gradients */
        CT_EXPECT_NEAR(ct_item(norm), total, 1e-5);
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
        const double f = 1.0 / (total + 1e-6);
        expect_values("a after a clipped step", a,
                      (double[]){(double)(float)(1 - (float)(0.5 * f)), (double)(float)(2 + (float)(0.25 * f)),
                                 (double)(float)(3 - (float)(1 * f))});
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
        ct_grad_scaler_free(s);
        ct_optimizer_free(opt);
    }
}

/* The state survives a checkpoint: resume continues with the same scale
 * and growth tracker. */
static void test_state_dict(void) {
    ct_grad_scaler *s = ct_grad_scaler_new(.init_scale = 512, .growth_interval = 7);
    CT_EXPECT_INT_EQ(ct_grad_scaler_update_to(s, 256), CT_OK);
    ct_tensor_dict *d = ct_grad_scaler_state_dict(s);
    CT_EXPECT(d && ct_tensor_dict_size(d) == 5);
    void *buf = NULL;
    size_t size = 0;
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &size), CT_OK);
    ct_tensor_dict *back = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(buf, size, ct_device_cpu(), &back), CT_OK);
    ct_grad_scaler *r = ct_grad_scaler_new();
    CT_EXPECT_INT_EQ(ct_grad_scaler_load_state_dict(r, back), CT_OK);
    CT_EXPECT(ct_grad_scaler_get_scale(r) == 256.0 && ct_grad_scaler_growth_tracker(r) == 0);
    ct_tensor_dict_remove(back, "_growth_tracker");
    CT_EXPECT_INT_EQ(ct_grad_scaler_load_state_dict(r, back), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "missing key \"_growth_tracker\"");
    ct_grad_scaler *off = ct_grad_scaler_new(.disabled = true);
    ct_tensor_dict *empty = ct_grad_scaler_state_dict(off);
    CT_EXPECT(empty && ct_tensor_dict_size(empty) == 0);
    CT_EXPECT_INT_EQ(ct_grad_scaler_load_state_dict(r, empty), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "possibly because it was saved from a disabled instance of GradScaler");
    free(buf);
    ct_tensor_dict_free(d);
    ct_tensor_dict_free(back);
    ct_tensor_dict_free(empty);
    ct_grad_scaler_free(s);
    ct_grad_scaler_free(r);
    ct_grad_scaler_free(off);
}

/* Disabled: scale returns the loss itself, step is a plain step. */
static void test_disabled(void) {
    CT_SCOPE {
        ct_tensor *a = param(k_a, 3, ct_device_cpu()), *b = param(k_b, 3, ct_device_cpu());
        ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){a, b}, 2, (ct_sgd_opts){.lr = 0.5});
        ct_grad_scaler *s = ct_grad_scaler_new(.disabled = true);
        CT_EXPECT(!ct_grad_scaler_is_enabled(s) && ct_grad_scaler_get_scale(s) == 1.0);
        backward_scaled(s, a, b, k_ca, k_cb, ct_device_cpu());
        expect_values("a.grad (not scaled)", ct_grad(a), k_ca);
        CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
        expect_values("a after step", a, (double[]){0.75, 2.125, 2.5});
        CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
        ct_grad_scaler_free(s);
        ct_optimizer_free(opt);
    }
}

/* What the scaler is for: under float16 autocast, a loss whose gradients
 * are tiny (here ~1e-9) underflows to zero in the float16 backward, so the
 * weights never move; scaled by 2^16 the gradients survive, the unscaled
 * step trains, and the loss falls. */
static void test_float16_underflow(void) {
    CT_SCOPE {
        ct_manual_seed(3);
        ct_tensor *x = ct_randn(CT_SHAPE(16, 8)), *t = ct_randn(CT_SHAPE(16, 4));
        for (int scaled = 0; scaled < 2; scaled++) {
            ct_tensor *w = ct_mul_scalar(ct_randn(CT_SHAPE(4, 8)), 0.1);
            ct_set_requires_grad(w, true);
            ct_optimizer *opt = ct_sgd_params((ct_tensor *[]){w}, 1, (ct_sgd_opts){.lr = 1e6});
            ct_grad_scaler *s = ct_grad_scaler_new(.disabled = !scaled);
            double first = 0, last = 0, grad_sum = 0;
            for (int step = 0; step < 20; step++) CT_SCOPE {
                ct_zero_grad(opt);
                ct_tensor *loss = NULL;
                CT_AUTOCAST(CT_DEVICE_CPU, .dtype = CT_FLOAT16) {
                    loss = ct_mul_scalar(ct_mse_loss(ct_linear(x, w, NULL), t), 1e-7);
                }
                CT_EXPECT_INT_EQ(ct_backward(ct_grad_scaler_scale(s, loss)), CT_OK);
                if (step == 0) CT_EXPECT_INT_EQ(ct_grad_scaler_unscale(s, opt), CT_OK);
                if (step == 0) grad_sum = ct_item(ct_sum_all(ct_abs(ct_grad(w))));
                CT_EXPECT_INT_EQ(ct_grad_scaler_step(s, opt), CT_OK);
                CT_EXPECT_INT_EQ(ct_grad_scaler_update(s), CT_OK);
                if (step == 0) first = ct_item(loss);
                last = ct_item(loss);
            }
            if (!scaled) {
                CT_EXPECT_MSG(grad_sum == 0.0 && last == first,
                              "without the scaler the float16 gradients should underflow: |grad| %g, loss %g -> %g",
                              grad_sum, first, last);
            } else {
                CT_EXPECT_MSG(grad_sum > 0.0 && last < 0.8 * first,
                              "with the scaler the model should train: |grad| %g, loss %g -> %g", grad_sum, first,
                              last);
            }
            ct_grad_scaler_free(s);
            ct_optimizer_free(opt);
        }
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_steps_cpu);
    CT_RUN(test_steps_opencl);
    CT_RUN(test_steps_cuda);
    CT_RUN(test_growth);
    CT_RUN(test_errors);
    CT_RUN(test_clip_after_unscale);
    CT_RUN(test_state_dict);
    CT_RUN(test_disabled);
    CT_RUN(test_float16_underflow);
    return ct_test_finish();
}
