/*
 * test_custom_kernel.c — users' own kernels (ctorch/extension.h) and custom
 * autograd functions (ct_function_apply): one dialect source compiled and
 * run on opencl:0 and cuda:0 against values computed here, views passed at
 * their first element, compile errors carrying the compiler's log with the
 * user's line numbers, the compile cache, native handles, and a fused
 * activation with its own backward kernel checked by ct_gradcheck. The
 * function machinery itself is also tested on the CPU with ctorch ops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/extension.h"
#include "testutil.h"

#ifdef CTORCH_TEST_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

static const char *k_vec_add =
    "K_KERNEL vec_add(K_GLOBAL const float *a, K_GLOBAL const float *b, K_GLOBAL float *c, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

/* y = x * sigmoid(x) and its gradient, in float64 (gradcheck's dtype). */
static const char *k_silu =
    "K_FUNC double sig(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
    "K_KERNEL silu_fwd(K_GLOBAL const double *x, K_GLOBAL double *y, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) y[i] = x[i] * sig(x[i]);\n"
    "}\n"
    "K_KERNEL silu_bwd(K_GLOBAL const double *x, K_GLOBAL const double *gy, K_GLOBAL double *gx, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) { double s = sig(x[i]); gx[i] = gy[i] * (s + x[i] * s * (1.0 - s)); }\n"
    "}\n";

/* The devices that run user kernels here: opencl:0 and cuda:0 when present. */
static int accel_devices(ct_device *out) {
    int n = 0;
    if (ct_device_count(CT_DEVICE_OPENCL) > 0) out[n++] = ct_device_opencl(0);
    if (ct_device_count(CT_DEVICE_CUDA) > 0) out[n++] = ct_device_cuda(0);
    ct_clear_error();
    return n;
}

static int devices_or_skip(ct_device *devs, const char *what) {
    int n = accel_devices(devs);
    if (n == 0) {
        ct_test_opencl_devices(what); /* fails where OpenCL is expected, else skips */
        ct_test_cuda_devices(what);
    }
    return n;
}

static void expect_vec_add(ct_device dev, int64_t n, int local) {
    CT_SCOPE {
        ct_tensor *a = ct_randn(CT_SHAPE(n)), *b = ct_randn(CT_SHAPE(n));
        ct_tensor *da = ct_to_device(a, dev), *db = ct_to_device(b, dev), *dc = ct_empty(CT_SHAPE(n), .device = dev);
        ct_kernel *k = ct_kernel_compile(dev, k_vec_add, "vec_add", NULL);
        CT_EXPECT_MSG(k != NULL, "compile: %s", ct_last_error());
        if (k) {
            CT_EXPECT_MSG(ct_kernel_launch(k, n, local, CT_KARGS(ct_karg_tensor(da), ct_karg_tensor(db),
                                                                  ct_karg_tensor(dc), ct_karg_i64(n))) == CT_OK,
                          "launch: %s", ct_last_error());
            double *va = ct_test_values(a), *vb = ct_test_values(b), *vc = ct_test_values(dc);
            int bad = 0;
            for (int64_t i = 0; i < n; i++) bad += vc[i] != (double)((float)va[i] + (float)vb[i]);
            CT_EXPECT_MSG(bad == 0, "vec_add n=%lld local=%d: %d of the sums differ", (long long)n, local, bad);
            free(va), free(vb), free(vc);
        }
        ct_kernel_free(k);
    }
}

static void test_vec_add(void) {
    ct_device devs[2];
    int nd = devices_or_skip(devs, "user kernels");
    for (int d = 0; d < nd; d++) {
        expect_vec_add(devs[d], 1000, 0);
        expect_vec_add(devs[d], 1000, 64); /* 1000 is not a multiple of 64: the kernel's bound check */
        expect_vec_add(devs[d], 1, 0);
    }
}

/* A view is passed at its first element: c[0:64] = a[128:192] + b[256:320]. */
static void test_views_at_offsets(void) {
    ct_device devs[2];
    int nd = devices_or_skip(devs, "user kernels on views");
    for (int d = 0; d < nd; d++) CT_SCOPE {
        ct_device dev = devs[d];
        ct_tensor *a = ct_arange(0, 512, 1, .dtype = CT_FLOAT32, .device = dev);
        ct_tensor *b = ct_arange(1000, 1512, 1, .dtype = CT_FLOAT32, .device = dev);
        ct_tensor *c = ct_zeros(CT_SHAPE(512), .device = dev);
        ct_kernel *k = ct_kernel_compile(dev, k_vec_add, "vec_add", NULL);
        ct_status st = ct_kernel_launch(k, 64, 0, CT_KARGS(ct_karg_tensor(ct_narrow(a, 0, 128, 64)),
                                                           ct_karg_tensor(ct_narrow(b, 0, 256, 64)),
                                                           ct_karg_tensor(ct_narrow(c, 0, 64, 64)), ct_karg_i64(64)));
        CT_EXPECT_MSG(st == CT_OK, "%s", ct_last_error());
        double *v = ct_test_values(c);
        for (int i = 0; i < 512; i++) {
            double want = i >= 64 && i < 128 ? (128 + i - 64) + (1256 + i - 64) : 0;
            if (v[i] != want) {
                CT_EXPECT_MSG(0, "c[%d] = %g, expected %g", i, v[i], want);
                break;
            }
        }
        free(v);
        /* one float into a buffer: CUDA takes the address, OpenCL cannot start a sub-buffer there */
        st = ct_kernel_launch(k, 4, 0, CT_KARGS(ct_karg_tensor(ct_narrow(a, 0, 1, 4)), ct_karg_tensor(ct_narrow(b, 0, 0, 4)),
                                                ct_karg_tensor(ct_narrow(c, 0, 0, 4)), ct_karg_i64(4)));
        if (dev.type == CT_DEVICE_CUDA) {
            CT_EXPECT_MSG(st == CT_OK, "%s", ct_last_error());
            CT_EXPECT_NEAR(ct_item(ct_select(c, 0, 0)), 1.0 + 1000.0, 0);
        } else {
            CT_EXPECT_INT_EQ(st, CT_ERR_UNSUPPORTED);
            CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "starts 4 bytes into its OpenCL buffer");
        }
        ct_kernel_free(k);
    }
}

static void test_compile_errors(void) {
    ct_device devs[2];
    int nd = devices_or_skip(devs, "user kernel compile errors");
    for (int d = 0; d < nd; d++) {
        const char *bad = "K_KERNEL broken(K_GLOBAL float *x) {\n    x[0] = undeclared_name;\n}\n";
        CT_EXPECT(ct_kernel_compile(devs[d], bad, "broken", NULL) == NULL);
        char msg[4096];
        snprintf(msg, sizeof msg, "%s", ct_last_error());
        CT_EXPECT_ERROR(CT_ERR_BACKEND, "undeclared_name");
        /* the message points at the user's line 2, not a line of the dialect */
        CT_EXPECT_MSG(strstr(msg, "broken:2:") || strstr(msg, "broken(2)"), "no user line number in: %s", msg);
        CT_EXPECT(ct_kernel_compile(devs[d], k_vec_add, "vec_sub", NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "no kernel named \"vec_sub\"");
        /* options reach the compiler */
        const char *opt = "K_KERNEL fill(K_GLOBAL float *x) { x[k_global_id()] = VALUE; }\n";
        CT_SCOPE {
            ct_kernel *k = ct_kernel_compile(devs[d], opt, "fill", "-DVALUE=7.5f");
            CT_EXPECT_MSG(k != NULL, "%s", ct_last_error());
            ct_tensor *x = ct_zeros(CT_SHAPE(3), .device = devs[d]);
            CT_EXPECT(ct_kernel_launch(k, 3, 0, CT_KARGS(ct_karg_tensor(x))) == CT_OK);
            CT_EXPECT_NEAR(ct_item(ct_sum_all(x)), 22.5, 0);
            ct_kernel_free(k);
        }
    }
}

static void test_launch_errors_and_cache(void) {
    ct_device devs[2];
    int nd = devices_or_skip(devs, "user kernel launches");
    for (int d = 0; d < nd; d++) CT_SCOPE {
        ct_device dev = devs[d];
        ct_kernel *k = ct_kernel_compile(dev, k_vec_add, "vec_add", NULL);
        ct_kernel *again = ct_kernel_compile(dev, k_vec_add, "vec_add", NULL);
        CT_EXPECT_MSG(k && k == again, "the same source compiled twice gave two kernels");
        CT_EXPECT(ct_device_equal(ct_kernel_device(k), dev));
        ct_kernel_free(again);
        ct_tensor *x = ct_zeros(CT_SHAPE(4), .device = dev), *cpu = ct_zeros(CT_SHAPE(4));
        CT_EXPECT_INT_EQ(ct_kernel_launch(k, 4, 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(cpu), ct_karg_tensor(x),
                                                            ct_karg_i64(4))),
                         CT_ERR_DEVICE);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "argument 1 is on cpu");
        if (dev.type == CT_DEVICE_OPENCL) { /* OpenCL knows the parameter count */
            CT_EXPECT_INT_EQ(ct_kernel_launch(k, 4, 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(x))),
                             CT_ERR_INVALID_ARG);
            CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "takes 4 arguments, 2 given");
        }
        CT_EXPECT_INT_EQ(ct_kernel_launch(k, -1, 0, NULL, 0), CT_ERR_INVALID_ARG);
        CT_EXPECT_INT_EQ(ct_kernel_launch(k, 0, 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(x), ct_karg_tensor(x),
                                                            ct_karg_i64(0))),
                         CT_OK); /* nothing to run */
        ct_kernel_free(k);
    }
}

static void test_cpu_and_bad_arguments(void) {
    CT_EXPECT(ct_kernel_compile(ct_device_cpu(), k_vec_add, "vec_add", NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "the cpu device has no kernel compiler");
    CT_EXPECT(ct_kernel_compile(ct_device_cpu(), NULL, "vec_add", NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL source");
    CT_EXPECT(ct_kernel_compile(ct_device_cpu(), k_vec_add, "", NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "empty kernel name");
    CT_EXPECT(ct_kernel_compile(ct_device_opencl(99), k_vec_add, "vec_add", NULL) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    CT_EXPECT_INT_EQ(ct_kernel_launch(NULL, 1, 0, NULL, 0), CT_ERR_INVALID_ARG);
    ct_kernel_free(NULL);
    CT_EXPECT(strstr(ct_kernel_dialect_source(), "K_KERNEL") != NULL);
}

static void test_native_handles(void) {
    CT_SCOPE {
        ct_tensor *t = ct_arange(0, 10, 1, .dtype = CT_FLOAT32);
        ct_native_buffer nb;
        CT_EXPECT_INT_EQ(ct_tensor_native_buffer(ct_narrow(t, 0, 2, 5), &nb), CT_OK);
        CT_EXPECT(nb.ptr == (char *)ct_data_ptr(t) + 2 * sizeof(float) && nb.nbytes == 5 * sizeof(float));
        CT_EXPECT(ct_stream_native_handle(ct_current_stream(ct_device_cpu())) == NULL);
        CT_EXPECT_INT_EQ(ct_tensor_native_buffer(NULL, &nb), CT_ERR_INVALID_ARG);
        CT_EXPECT_INT_EQ(ct_tensor_native_buffer(t, NULL), CT_ERR_INVALID_ARG);
    }
    ct_device devs[2];
    int nd = accel_devices(devs);
    for (int d = 0; d < nd; d++) CT_SCOPE {
        ct_device dev = devs[d];
        ct_tensor *t = ct_arange(0, 256, 1, .dtype = CT_FLOAT32, .device = dev);
        ct_native_buffer nb;
        CT_EXPECT_INT_EQ(ct_tensor_native_buffer(ct_narrow(t, 0, 100, 10), &nb), CT_OK);
        ct_native_buffer whole;
        CT_EXPECT_INT_EQ(ct_tensor_native_buffer(t, &whole), CT_OK);
        CT_EXPECT(nb.buffer == whole.buffer && nb.byte_offset == whole.byte_offset + 100 * sizeof(float));
        CT_EXPECT(nb.nbytes == 10 * sizeof(float) && ct_device_equal(nb.device, dev));
        ct_native_device nd_;
        CT_EXPECT_INT_EQ(ct_device_native_handles(dev, &nd_), CT_OK);
        void *queue = ct_stream_native_handle(ct_current_stream(dev));
        CT_EXPECT(queue != NULL);
        if (dev.type == CT_DEVICE_CUDA) {
            CT_EXPECT(nb.ptr == (char *)nb.buffer + nb.byte_offset && nd_.cuda_ordinal == 0);
        } else {
            CT_EXPECT(nb.ptr == NULL && nd_.cl_context && nd_.cl_device && nd_.cl_platform && nd_.cuda_ordinal == -1);
#ifdef CTORCH_TEST_OPENCL
            /* read element 100 with OpenCL itself, on ctorch's queue */
            float v = -1;
            cl_int err = clEnqueueReadBuffer((cl_command_queue)queue, (cl_mem)nb.buffer, CL_TRUE, nb.byte_offset,
                                             sizeof v, &v, 0, NULL, NULL);
            CT_EXPECT_MSG(err == CL_SUCCESS && v == 100.0f, "clEnqueueReadBuffer: err %d, value %g", (int)err, v);
            cl_context ctx = NULL;
            clGetCommandQueueInfo((cl_command_queue)queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
            CT_EXPECT(ctx == (cl_context)nd_.cl_context);
#endif
        }
    }
}

/* ---- custom functions ---------------------------------------------------------------- */

/* On the CPU with ctorch ops: y = a * b², saving both inputs. */
static ct_tensor *mulsq_forward(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)n;
    ct_ctx_save_for_backward(ctx, in[0]);
    ct_ctx_save_for_backward(ctx, in[1]);
    int *calls = ct_ctx_user(ctx);
    calls[0]++;
    return ct_mul(in[0], ct_mul(in[1], in[1]));
}

static ct_status mulsq_backward(ct_function_ctx *ctx, const ct_tensor *gy, ct_tensor **gin) {
    const ct_tensor *a = ct_ctx_saved_tensor(ctx, 0), *b = ct_ctx_saved_tensor(ctx, 1);
    if (!a || !b) return ct_last_status();
    int *calls = ct_ctx_user(ctx);
    calls[1]++;
    if (ct_ctx_needs_input_grad(ctx, 0)) gin[0] = ct_mul(gy, ct_mul(b, b));
    if (ct_ctx_needs_input_grad(ctx, 1)) gin[1] = ct_mul_scalar(ct_mul(gy, ct_mul(a, b)), 2.0);
    return CT_OK;
}

static const ct_function k_mulsq = {"MulSqBackward", mulsq_forward, mulsq_backward};

static ct_tensor *apply_mulsq(ct_tensor *const *in, int n, void *user) {
    return ct_function_apply(&k_mulsq, in, n, user);
}

static void test_function_on_cpu(void) {
    int calls[2] = {0, 0};
    CT_SCOPE {
        ct_tensor *in[2] = {ct_randn(CT_SHAPE(3, 4), .dtype = CT_FLOAT64), ct_randn(CT_SHAPE(3, 4), .dtype = CT_FLOAT64)};
        ct_set_requires_grad(in[0], true), ct_set_requires_grad(in[1], true);
        bool ok = false;
        CT_EXPECT_INT_EQ(ct_gradcheck(apply_mulsq, in, 2, calls, &ok), CT_OK);
        CT_EXPECT_MSG(ok, "gradcheck: %s", ct_last_error());
        ct_tensor *y = ct_function_apply(&k_mulsq, in, 2, calls);
        CT_EXPECT(y && !strcmp(ct_grad_fn_name(y), "MulSqBackward"));
        /* a saved input modified in place: PyTorch's error, not a wrong gradient */
        CT_NO_GRAD { ct_add_scalar_(in[1] == NULL ? NULL : ct_detach(in[1]), 1.0); }
        CT_EXPECT(ct_backward(ct_sum_all(y)) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_STATE, "modified by an inplace operation");
        /* no grad needed: no node, forward still runs */
        CT_NO_GRAD {
            ct_tensor *z = ct_function_apply(&k_mulsq, in, 2, calls);
            CT_EXPECT(z && ct_grad_fn_name(z) == NULL);
        }
    }
    CT_EXPECT(calls[0] > 2 && calls[1] > 0);
}

static ct_tensor *returns_input(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return in[0];
}
static ct_tensor *saves_too_many(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)n;
    for (int i = 0; i < 5; i++)
        if (ct_ctx_save_for_backward(ctx, in[0]) != CT_OK) return NULL;
    return ct_clone(in[0]);
}
static ct_tensor *plain_copy(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return ct_clone(in[0]);
}
static ct_status wrong_shape_grad(ct_function_ctx *ctx, const ct_tensor *gy, ct_tensor **gin) {
    (void)ctx, (void)gy;
    gin[0] = ct_ones(CT_SHAPE(7));
    return CT_OK;
}
static ct_status float32_grad(ct_function_ctx *ctx, const ct_tensor *gy, ct_tensor **gin) {
    (void)ctx;
    gin[0] = ct_mul_scalar(ct_to_dtype(gy, CT_FLOAT32), 3.0);
    return CT_OK;
}

static void test_function_errors(void) {
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(2, 2), .dtype = CT_FLOAT64);
        ct_set_requires_grad(x, true);
        const ct_function f1 = {"ReturnsInput", returns_input, wrong_shape_grad};
        CT_EXPECT(ct_function_apply(&f1, &x, 1, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "forward returned one of its inputs");
        const ct_function f2 = {"SavesTooMany", saves_too_many, wrong_shape_grad};
        CT_EXPECT(ct_function_apply(&f2, &x, 1, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "at most 4 tensors can be saved");
        const ct_function f3 = {"WrongShape", plain_copy, wrong_shape_grad};
        ct_tensor *y = ct_function_apply(&f3, &x, 1, NULL);
        CT_EXPECT(ct_backward(ct_sum_all(y)) == CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "backward returned a gradient of shape [7] for input 0 of shape [2, 2]");
        /* a float32 gradient for a float64 input is cast, as PyTorch does */
        const ct_function f4 = {"Float32Grad", plain_copy, float32_grad};
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_function_apply(&f4, &x, 1, NULL))), CT_OK);
        CT_EXPECT(ct_grad(x) && ct_dtype_of(ct_grad(x)) == CT_FLOAT64);
        CT_EXPECT_NEAR(ct_item(ct_sum_all(ct_grad(x))), 12.0, 0);
        const ct_function nameless = {NULL, plain_copy, float32_grad};
        CT_EXPECT(ct_function_apply(&nameless, &x, 1, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "needs a name");
        CT_EXPECT(ct_function_apply(&f4, &x, 0, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "0 inputs");
        CT_EXPECT(ct_function_apply(NULL, &x, 1, NULL) == NULL);
        CT_EXPECT_INT_EQ(ct_ctx_save_for_backward(NULL, x), CT_ERR_INVALID_ARG);
        CT_EXPECT(ct_ctx_saved_tensor(NULL, 0) == NULL);
        CT_EXPECT(!ct_ctx_needs_input_grad(NULL, 0) && ct_ctx_user(NULL) == NULL);
    }
}

/* ---- a fused activation on the device, with its backward kernel ------------------------- */

typedef struct silu_kernels {
    ct_kernel *fwd, *bwd;
} silu_kernels;

static ct_tensor *silu_forward(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)n;
    silu_kernels *k = ct_ctx_user(ctx);
    ct_tensor *x = ct_contiguous(in[0]);
    ct_tensor *y = ct_empty_like(x);
    int64_t numel = ct_numel(x);
    if (ct_kernel_launch(k->fwd, numel, 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(y), ct_karg_i64(numel))) != CT_OK)
        return NULL;
    ct_ctx_save_for_backward(ctx, x);
    return y;
}

static ct_status silu_backward(ct_function_ctx *ctx, const ct_tensor *gy, ct_tensor **gin) {
    silu_kernels *k = ct_ctx_user(ctx);
    const ct_tensor *x = ct_ctx_saved_tensor(ctx, 0);
    if (!x) return ct_last_status();
    ct_tensor *g = ct_contiguous(gy);
    ct_tensor *gx = ct_empty_like(x);
    int64_t numel = ct_numel(x);
    ct_status st = ct_kernel_launch(k->bwd, numel, 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(g),
                                                               ct_karg_tensor(gx), ct_karg_i64(numel)));
    gin[0] = st == CT_OK ? gx : NULL;
    return st;
}

static const ct_function k_silu_fn = {"FusedSiluBackward", silu_forward, silu_backward};

static ct_tensor *apply_silu(ct_tensor *const *in, int n, void *user) {
    return ct_function_apply(&k_silu_fn, in, n, user);
}

static void test_fused_activation_gradcheck(void) {
    ct_device devs[2];
    int nd = devices_or_skip(devs, "a fused activation kernel");
    for (int d = 0; d < nd; d++) CT_SCOPE {
        ct_device dev = devs[d];
        silu_kernels k = {ct_kernel_compile(dev, k_silu, "silu_fwd", NULL), ct_kernel_compile(dev, k_silu, "silu_bwd", NULL)};
        CT_EXPECT_MSG(k.fwd && k.bwd, "%s", ct_last_error());
        if (k.fwd && k.bwd) {
            ct_tensor *x = ct_to_device(ct_randn(CT_SHAPE(5, 3), .dtype = CT_FLOAT64), dev);
            ct_set_requires_grad(x, true);
            bool ok = false;
            CT_EXPECT_INT_EQ(ct_gradcheck(apply_silu, &x, 1, &k, &ok), CT_OK);
            CT_EXPECT_MSG(ok, "gradcheck of the fused SiLU on %s: %s", ct_device_type_name(dev.type), ct_last_error());
            /* against ctorch's own silu: x * sigmoid(x) */
            ct_tensor *y = ct_function_apply(&k_silu_fn, &x, 1, &k);
            ct_tensor *ref = ct_mul(x, ct_sigmoid(x));
            CT_EXPECT_NEAR(ct_item(ct_max_all(ct_abs(ct_sub(y, ref)))), 0, 1e-15);
        }
        ct_kernel_free(k.fwd);
        ct_kernel_free(k.bwd);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_vec_add);
    CT_RUN(test_views_at_offsets);
    CT_RUN(test_compile_errors);
    CT_RUN(test_launch_errors_and_cache);
    CT_RUN(test_cpu_and_bad_arguments);
    CT_RUN(test_native_handles);
    CT_RUN(test_function_on_cpu);
    CT_RUN(test_function_errors);
    CT_RUN(test_fused_activation_gradcheck);
    return ct_test_finish();
}
