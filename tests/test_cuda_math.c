/*
 * test_cuda_math.c — the CUDA backend's math libraries: cuBLAS matmul and
 * the cuDNN paths of conv2d, batch_norm and pooling, with the
 * torch.backends switches (ctorch/backends.h).
 *
 * Without a GPU it checks what needs none (white-box, when built with
 * CTORCH_TEST_CUDA): cuBLAS and cuDNN load through dlopen and report their
 * versions, status names and the errors built from them, the decline rules
 * (cuDNN switched off, integer dtypes, missing weights, bfloat16 batch
 * norm) that send a call to ctorch's own kernels without an error, and
 * that creating a library handle without a device fails with a clear
 * error; then it exits 77.
 *
 * With a GPU, against the CPU backend on the same inputs: matmul for every
 * dtype, batched and broadcast, transposed and expanded operands (the
 * packing path), vectors, K = 0, with TF32 off (float32 accuracy) and on;
 * conv2d forward and input/weight/bias gradients with cuDNN on (heuristics,
 * benchmark, deterministic, TF32 off) and off; deterministic gradients
 * bit-identical run to run; the autotuner's cache; batch_norm training
 * (output, saved statistics through the gradients, running statistics) and
 * evaluation with and without affine parameters; max/avg pooling in the
 * cases cuDNN takes and those it declines (ceil_mode, divisor_override),
 * NaN propagation.
 */
#define _POSIX_C_SOURCE 200809L /* access */
#include <stdlib.h>
#include <unistd.h>

#include "core/backend.h"
#include "ctorch/backends.h"
#include "testutil.h"

#ifdef CTORCH_TEST_CUDA
#include "backends/cuda/cu_dl.h"
#include "backends/cuda/cu_dnn.h"
#endif

static ct_device cu0(void) { return ct_device_cuda(0); }
static ct_device cpu(void) { return ct_device_cpu(); }

static void reset_switches(void) {
    ct_backends_cuda_matmul_set_allow_tf32(false);
    ct_backends_cudnn_set_allow_tf32(true);
    ct_backends_cudnn_set_benchmark(false);
    ct_backends_cudnn_set_deterministic(false);
    ct_backends_cudnn_set_enabled(true);
    ct_use_deterministic_algorithms(false);
}

/* Tolerances for a GPU result against the CPU's: summation orders differ,
 * so 16-bit results may differ by one rounding. */
static void gpu_tolerances(ct_dtype dt, double *rtol, double *atol) {
    ct_test_tolerances(dt, rtol, atol);
    if (dt == CT_FLOAT16) *rtol = 2e-3, *atol = 2e-3;
    if (dt == CT_BFLOAT16) *rtol = 1.6e-2, *atol = 1.6e-2;
    if (dt == CT_FLOAT32) *atol = 2e-5;
}

/* gpu (any device) equals cpu within tolerance. */
#define EXPECT_LIKE_CPU(gpu, cpu_t, rtol, atol) expect_like_cpu(__FILE__, __LINE__, #gpu, gpu, cpu_t, rtol, atol)
static void expect_like_cpu(const char *file, int line, const char *what, const ct_tensor *gpu,
                            const ct_tensor *cpu_t, double rtol, double atol) {
    if (!gpu || !cpu_t) {
        ct_test_fail(file, line, "%s: missing result: %s", what, ct_last_error());
        return;
    }
    double *want = ct_test_values(cpu_t);
    ct_tensor *back = ct_to_device(gpu, cpu());
    ct_test_close(file, line, what, back, want, ct_numel(cpu_t), rtol, atol);
    free(want);
}

static ct_tensor *on_gpu(const ct_tensor *t) { return ct_to_device(t, cu0()); }

/* ---- without a GPU (white-box) ------------------------------------------------------------- */

#ifdef CTORCH_TEST_CUDA
static void test_libraries_load(void) {
    if (access("/usr/local/cuda/lib64/libcublas.so.13", R_OK) == 0) {
        const ct_cublas_api *b = ct_cu_cublas("test");
        CT_EXPECT_MSG(b != NULL, "cuBLAS did not load: %s", ct_last_error());
        CT_EXPECT(b && b->cublasGemmStridedBatchedEx_64 && b->cublasCreate_v2);
        CT_EXPECT(ct_cu_dl_cublas_version() / 10000 == 13);
    }
    if (access("/usr/local/cuda/lib64/libcudnn.so.9", R_OK) == 0) {
        const ct_cudnn_api *d = ct_cu_cudnn("test");
        CT_EXPECT_MSG(d != NULL, "cuDNN did not load: %s", ct_last_error());
        CT_EXPECT(d && d->cudnnConvolutionForward && d->cudnnBatchNormalizationBackward);
        CT_EXPECT(d && (int)d->cudnnGetVersion() == ct_backends_cudnn_version());
    }
    ct_clear_error();
}

static void test_status_names_and_errors(void) {
    if (ct_backends_cublas_version() > 0) {
        CT_EXPECT_STR_EQ(ct_cu_cublas_status_name(CUBLAS_STATUS_NOT_INITIALIZED),
                         "CUBLAS_STATUS_NOT_INITIALIZED");
        CT_EXPECT_INT_EQ(ct_cu_cublas_error(CUBLAS_STATUS_ALLOC_FAILED, "matmul", "cublasGemmEx(...)"),
                         CT_ERR_OOM);
        CT_EXPECT_ERROR(CT_ERR_OOM, "matmul: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasGemmEx(...)");
        CT_EXPECT_INT_EQ(ct_cu_cublas_error(CUBLAS_STATUS_EXECUTION_FAILED, "matmul", "x"), CT_ERR_BACKEND);
        CT_EXPECT_ERROR(CT_ERR_BACKEND, "CUBLAS_STATUS_EXECUTION_FAILED");
        CT_EXPECT_INT_EQ(ct_cu_cublas_error(CUBLAS_STATUS_SUCCESS, "matmul", "x"), CT_OK);
    }
    if (ct_backends_cudnn_is_available()) {
        CT_EXPECT_STR_EQ(ct_cu_cudnn_status_name(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
        CT_EXPECT_INT_EQ(ct_cu_cudnn_error(CUDNN_STATUS_EXECUTION_FAILED, "conv2d", "cudnnConvolutionForward"),
                         CT_ERR_BACKEND);
        CT_EXPECT_ERROR(CT_ERR_BACKEND, "conv2d: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED when calling "
                                        "cudnnConvolutionForward");
        CT_EXPECT_INT_EQ(ct_dnn_status(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "conv2d", "x"),
                         CT_ERR_OOM);
        CT_EXPECT_ERROR(CT_ERR_OOM, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED");
        /* the NOT_SUPPORTED family declines: no error */
        CT_EXPECT_INT_EQ(ct_dnn_status(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "conv2d", "x"), CT_DNN_DECLINE);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
        CT_EXPECT_INT_EQ(ct_dnn_status(CUDNN_STATUS_SUCCESS, "conv2d", "x"), CT_OK);
    }
}

/* A 4-D view description (no memory behind it: declining touches none). */
static ct_kview fake_view(ct_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d) {
    ct_kview v;
    memset(&v, 0, sizeof v);
    v.dtype = dt, v.ndim = 4;
    v.shape[0] = a, v.shape[1] = b, v.shape[2] = c, v.shape[3] = d;
    v.strides[3] = 1, v.strides[2] = d, v.strides[1] = c * d, v.strides[0] = b * c * d;
    return v;
}

static void test_decline_rules(void) {
    const ct_conv2d_geom g = {2, 3, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {3, 3}};
    ct_kview y = fake_view(CT_FLOAT32, 2, 4, 3, 3), x = fake_view(CT_FLOAT32, 2, 3, 5, 5),
             w = fake_view(CT_FLOAT32, 4, 3, 3, 3);
    const struct ct_backend_conv *cu_conv = ct_backend_for(CT_DEVICE_CUDA)->ops->conv;
    const struct ct_backend_nn *cu_nn = ct_backend_for(CT_DEVICE_CUDA)->ops->nn;
    ct_backends_cudnn_set_enabled(false);
    CT_EXPECT(ct_dnn_api() == NULL);
    CT_EXPECT_INT_EQ(cu_conv->conv2d_forward(&y, &x, &w, &g, 1), CT_DNN_DECLINE);
    CT_EXPECT_INT_EQ(cu_conv->conv2d_backward_input(&x, &y, &w, &g, 1), CT_DNN_DECLINE);
    CT_EXPECT_INT_EQ(cu_conv->conv2d_backward_weight(&w, &y, &x, &g, 1), CT_DNN_DECLINE);
    ct_kview c1 = fake_view(CT_FLOAT32, 1, 3, 1, 1);
    CT_EXPECT_INT_EQ(cu_nn->batch_norm_forward_training(&x, &c1, &c1, NULL, NULL, &x, &c1, &c1, 2, 3,
                                                              25, 0.1, 1e-5),
                     CT_DNN_DECLINE);
    reset_switches();
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    if (!ct_backends_cudnn_is_available()) return;
    CT_EXPECT(ct_dnn_api() != NULL);
    /* cases cuDNN does not take, decided before any device call */
    ct_kview yi = fake_view(CT_INT32, 2, 4, 3, 3), xi = fake_view(CT_INT32, 2, 3, 5, 5),
             wi = fake_view(CT_INT32, 4, 3, 3, 3);
    CT_EXPECT_INT_EQ(cu_conv->conv2d_forward(&yi, &xi, &wi, &g, 1), CT_DNN_DECLINE);
    CT_EXPECT_INT_EQ(cu_nn->batch_norm_forward_training(&x, &c1, &c1, NULL, NULL, &x, NULL, NULL, 2,
                                                              3, 25, 0.1, 1e-5),
                     CT_DNN_DECLINE); /* no weight/bias: PyTorch's rule */
    ct_kview xb = fake_view(CT_BFLOAT16, 2, 3, 5, 5);
    CT_EXPECT_INT_EQ(cu_nn->batch_norm_forward_inference(&xb, &xb, &c1, &c1, &c1, &c1, 2, 3, 25, 1e-5),
                     CT_DNN_DECLINE);
    CT_EXPECT_INT_EQ(cu_nn->batch_norm_backward(&x, &c1, &c1, &x, &x, &c1, &c1, NULL, 2, 3, 25),
                     CT_DNN_DECLINE);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 0);
}

/* No device: the library loads, but a handle cannot be made; the error says
 * which call failed and why. */
static void test_handles_without_device(void) {
    if (ct_cuda_is_available()) return;
    if (ct_backends_cublas_version() > 0) {
        cublasHandle_t h;
        CT_EXPECT(ct_cu_cublas_handle(0, NULL, "matmul", &h) != CT_OK);
        CT_EXPECT_MSG(strstr(ct_last_error(), "matmul: CUDA error: CUBLAS_STATUS_") &&
                          strstr(ct_last_error(), "when calling cublasCreate(handle)"),
                      "unexpected error: %s", ct_last_error());
        ct_clear_error();
    }
    if (ct_backends_cudnn_is_available()) {
        cudnnHandle_t h;
        CT_EXPECT(ct_cu_cudnn_handle(0, NULL, "conv2d", &h) != CT_OK);
        CT_EXPECT_MSG(strstr(ct_last_error(), "conv2d: cuDNN error: CUDNN_STATUS_") &&
                          strstr(ct_last_error(), "when calling cudnnCreate(handle)"),
                      "unexpected error: %s", ct_last_error());
        ct_clear_error();
    }
    if (ct_backends_cublas_version() > 0) {
        cublasHandle_t h;
        CT_EXPECT(ct_cu_cublas_handle(CT_CU_MAX_DEVICES, NULL, "matmul", &h) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "beyond the 64 devices");
    }
}
#endif

/* ---- matmul ----------------------------------------------------------------------------------- */

static const ct_dtype g_mm_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                       CT_INT32,   CT_INT64,   CT_UINT8};

/* a @ b on both devices (the GPU operands are copies of the CPU ones, laid
 * out by make: a function of the CPU tensor). */
static void check_matmul(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
    ct_tensor *want = ct_matmul(a, b);
    ct_tensor *got = ct_matmul(on_gpu(a), on_gpu(b));
    EXPECT_LIKE_CPU(got, want, rtol, atol);
}

static void test_matmul_like_cpu(void) {
    for (size_t di = 0; di < sizeof g_mm_dtypes / sizeof g_mm_dtypes[0]; di++) {
        const ct_dtype dt = g_mm_dtypes[di];
        const bool is_int = !ct_dtype_is_floating(dt);
        double rtol, atol;
        gpu_tolerances(dt, &rtol, &atol);
        CT_SCOPE {
            const double lo = is_int ? 0 : -1, hi = is_int ? 5 : 1;
            const int64_t m = 19, k = 37, n = 23;
            ct_tensor *a3 = ct_test_random(CT_SHAPE(3, m, k), dt, lo, hi, NULL);
            ct_tensor *b2 = ct_test_random(CT_SHAPE(k, n), dt, lo, hi, NULL);
            ct_tensor *b3 = ct_test_random(CT_SHAPE(3, k, n), dt, lo, hi, NULL);
            ct_tensor *a2 = ct_test_random(CT_SHAPE(m, k), dt, lo, hi, NULL);
            check_matmul(a2, b2, rtol, atol);                     /* plain GEMM */
            check_matmul(a3, b3, rtol, atol);                     /* strided batch */
            check_matmul(a3, b2, rtol, atol);                     /* b broadcast: folded into rows */
            check_matmul(a2, b3, rtol, atol);                     /* a broadcast: batch stride 0 */
            /* transposed operands on the GPU: views of GPU tensors */
            ct_tensor *at = ct_test_random(CT_SHAPE(k, m), dt, lo, hi, NULL);
            ct_tensor *bt = ct_test_random(CT_SHAPE(3, n, k), dt, lo, hi, NULL);
            ct_tensor *want = ct_matmul(ct_transpose(at, 0, 1), ct_transpose(bt, 1, 2));
            ct_tensor *got = ct_matmul(ct_transpose(on_gpu(at), 0, 1), ct_transpose(on_gpu(bt), 1, 2));
            EXPECT_LIKE_CPU(got, want, rtol, atol);
            /* an expanded row (row stride 0): packed before cuBLAS */
            ct_tensor *row = ct_test_random(CT_SHAPE(1, k), dt, lo, hi, NULL);
            want = ct_matmul(ct_expand(row, CT_SHAPE(m, k)), b2);
            got = ct_matmul(ct_expand(on_gpu(row), CT_SHAPE(m, k)), on_gpu(b2));
            EXPECT_LIKE_CPU(got, want, rtol, atol);
            /* vectors */
            ct_tensor *v = ct_test_random(CT_SHAPE(k), dt, lo, hi, NULL);
            check_matmul(v, b2, rtol, atol);
            check_matmul(a2, v, rtol, atol);
            check_matmul(v, v, rtol, atol);
        }
    }
}

static void test_matmul_empty_and_zero_k(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(4, 0)), *b = ct_zeros(CT_SHAPE(0, 3));
        ct_tensor *got = ct_matmul(on_gpu(a), on_gpu(b));
        double zeros[12] = {0};
        ct_tensor *back = ct_to_device(got, cpu());
        CT_EXPECT_CLOSE(back, zeros, 12, 0, 0);
        got = ct_matmul(on_gpu(ct_zeros(CT_SHAPE(0, 5))), on_gpu(ct_zeros(CT_SHAPE(5, 2))));
        CT_EXPECT(got && ct_numel(got) == 0);
    }
}

/* TF32 off (the default): float32 accuracy, which TF32 (10-bit mantissa)
 * would miss by orders of magnitude on Ampere and newer. On: still close. */
static void test_matmul_tf32_switch(void) {
    CT_SCOPE {
        const int64_t m = 64, k = 512, n = 48;
        double *va, *vb;
        ct_tensor *a = ct_test_random(CT_SHAPE(m, k), CT_FLOAT32, -1, 1, &va);
        ct_tensor *b = ct_test_random(CT_SHAPE(k, n), CT_FLOAT32, -1, 1, &vb);
        double *want = malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < k; q++) s += va[i * k + q] * vb[q * n + j];
                want[i * n + j] = s;
            }
        ct_tensor *ga = on_gpu(a), *gb = on_gpu(b);
        ct_tensor *exact = ct_to_device(ct_matmul(ga, gb), cpu());
        CT_EXPECT_CLOSE(exact, want, m * n, 1e-5, 1e-4);
        ct_backends_cuda_matmul_set_allow_tf32(true);
        ct_tensor *fast = ct_to_device(ct_matmul(ga, gb), cpu());
        reset_switches();
        CT_EXPECT_CLOSE(fast, want, m * n, 2e-2, 5e-2);
        free(want);
        free(va);
        free(vb);
    }
}

/* ---- conv2d ------------------------------------------------------------------------------------- */

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw, stride[2], padding[2], dilation[2], groups;
} conv_case;

static const conv_case g_conv_cases[] = {
    {2, 3, 9, 8, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1},
    {3, 4, 11, 7, 6, 3, 2, {2, 1}, {1, 0}, {1, 2}, 2},
    {2, 6, 8, 8, 6, 3, 3, {1, 2}, {2, 1}, {2, 1}, 6}, /* depthwise */
    {1, 8, 5, 5, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1}, /* 1x1 */
};

/* The case's options for ct_conv2d_with_opts (ctorch/functional_conv.h). */
static ct_conv_opts opts_of(const conv_case *cc) {
    return CT_CONV_OPTS(.stride = {cc->stride[0], cc->stride[1]}, .padding = {cc->padding[0], cc->padding[1]},
                        .dilation = {cc->dilation[0], cc->dilation[1]}, .groups = cc->groups);
}

typedef struct conv_result {
    ct_tensor *y, *gx, *gw, *gb;
} conv_result;

/* y = conv2d(x, w, b) and the gradients of sum(y * proj) on x's device. */
static conv_result run_conv(const conv_case *cc, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor *proj) {
    conv_result r = {NULL, NULL, NULL, NULL};
    ct_set_requires_grad(x, true);
    ct_set_requires_grad(w, true);
    ct_set_requires_grad(b, true);
    r.y = ct_conv2d_with_opts(x, w, b, opts_of(cc));
    if (!r.y) return r;
    CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(r.y, proj))), CT_OK);
    r.gx = ct_grad(x), r.gw = ct_grad(w), r.gb = ct_grad(b);
    return r;
}

/* One case in one dtype under the current switches, against the CPU. */
static void check_conv(const conv_case *cc, ct_dtype dt, double rtol, double atol) {
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(cc->n, cc->c, cc->h, cc->w), dt, -1, 1, NULL);
        ct_tensor *w = ct_test_random(CT_SHAPE(cc->o, cc->c / cc->groups, cc->kh, cc->kw), dt, -1, 1, NULL);
        ct_tensor *b = ct_test_random(CT_SHAPE(cc->o), dt, -1, 1, NULL);
        ct_tensor *y_cpu = ct_conv2d_with_opts(x, w, b, opts_of(cc));
        ct_tensor *proj = ct_randn_like(y_cpu);
        conv_result want = run_conv(cc, ct_clone(x), ct_clone(w), ct_clone(b), proj);
        conv_result got = run_conv(cc, on_gpu(x), on_gpu(w), on_gpu(b), on_gpu(proj));
        EXPECT_LIKE_CPU(got.y, want.y, rtol, atol);
        /* gradients sum over more terms: scale the absolute tolerance */
        EXPECT_LIKE_CPU(got.gx, want.gx, rtol, atol * 8);
        EXPECT_LIKE_CPU(got.gw, want.gw, rtol, atol * 8);
        EXPECT_LIKE_CPU(got.gb, want.gb, rtol, atol * 8);
    }
}

static void test_conv_like_cpu(void) {
    static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16};
    for (int mode = 0; mode < 5; mode++) {
        reset_switches();
        ct_backends_cudnn_set_allow_tf32(false); /* float32 accuracy; TF32 has its own test */
        if (mode == 1) ct_backends_cudnn_set_benchmark(true);
        if (mode == 2) ct_backends_cudnn_set_deterministic(true);
        if (mode == 3) ct_use_deterministic_algorithms(true), ct_backends_cudnn_set_benchmark(true);
        if (mode == 4) ct_backends_cudnn_set_enabled(false);
        for (size_t i = 0; i < sizeof g_conv_cases / sizeof g_conv_cases[0]; i++)
            for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                double rtol, atol;
                gpu_tolerances(dts[d], &rtol, &atol);
                check_conv(&g_conv_cases[i], dts[d], rtol, atol);
            }
    }
    reset_switches();
    /* cuDNN's default allows TF32 for convolutions: close, not exact */
    check_conv(&g_conv_cases[1], CT_FLOAT32, 1e-2, 1e-2);
}

/* Deterministic: the same gradients, bit for bit, run after run. */
static void test_conv_deterministic_bitwise(void) {
    ct_backends_cudnn_set_deterministic(true);
    const conv_case *cc = &g_conv_cases[1];
    CT_SCOPE {
        ct_tensor *x = on_gpu(ct_test_random(CT_SHAPE(8, cc->c, 32, 32), CT_FLOAT32, -1, 1, NULL));
        ct_tensor *w = on_gpu(ct_test_random(CT_SHAPE(cc->o, cc->c / cc->groups, cc->kh, cc->kw),
                                             CT_FLOAT32, -1, 1, NULL));
        ct_tensor *y = ct_conv2d_with_opts(x, w, NULL, opts_of(cc));
        ct_tensor *proj = ct_randn_like(y);
        ct_tensor *first[2] = {NULL, NULL};
        for (int run = 0; run < 3; run++) {
            ct_tensor *xr = ct_clone(x), *wr = ct_clone(w);
            conv_result r = run_conv(cc, xr, wr, NULL, proj);
            if (run == 0) {
                first[0] = r.gx, first[1] = r.gw;
            } else {
                CT_EXPECT(ct_equal(r.gx, first[0]));
                CT_EXPECT(ct_equal(r.gw, first[1]));
            }
        }
    }
    reset_switches();
}

#ifdef CTORCH_TEST_CUDA
/* The autotuner's cache: one entry per (kind, configuration, switches). */
static void test_conv_choice_cache(void) {
    ct_dnn_conv_cache_clear();
    ct_backends_cudnn_set_benchmark(true);
    CT_SCOPE {
        ct_tensor *x = on_gpu(ct_randn(CT_SHAPE(2, 3, 16, 16)));
        ct_tensor *w = on_gpu(ct_randn(CT_SHAPE(4, 3, 3, 3)));
        CT_EXPECT(ct_conv2d(x, w, NULL, .padding = {1, 1}) != NULL);
        CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 1);
        CT_EXPECT(ct_conv2d(x, w, NULL, .padding = {1, 1}) != NULL);
        CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 1); /* reused */
        ct_tensor *x2 = on_gpu(ct_randn(CT_SHAPE(2, 3, 20, 16)));
        CT_EXPECT(ct_conv2d(x2, w, NULL, .padding = {1, 1}) != NULL);
        CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 2); /* a new shape is tuned once */
        ct_backends_cudnn_set_benchmark(false);
        CT_EXPECT(ct_conv2d(x, w, NULL, .padding = {1, 1}) != NULL);
        CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 3); /* heuristics choice: its own key */
        ct_backends_cudnn_set_enabled(false);
        CT_EXPECT(ct_conv2d(x2, w, NULL) != NULL);
        CT_EXPECT_INT_EQ(ct_dnn_conv_cache_size(), 3); /* cuDNN off: not consulted */
    }
    reset_switches();
}
#endif

/* ---- batch norm -------------------------------------------------------------------------------- */

static void check_batch_norm(ct_dtype dt, bool affine, bool training, ct_shape shape) {
    double rtol, atol;
    gpu_tolerances(dt, &rtol, &atol);
    const ct_dtype sd = dt == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32;
    const int64_t c = shape.dims[1];
    CT_SCOPE {
        ct_tensor *x = ct_test_random(shape, dt, -2, 3, NULL);
        ct_tensor *w = affine ? ct_test_random(CT_SHAPE(c), dt, 0.5, 1.5, NULL) : NULL;
        ct_tensor *b = affine ? ct_test_random(CT_SHAPE(c), dt, -1, 1, NULL) : NULL;
        ct_tensor *rm = ct_test_random(CT_SHAPE(c), sd, -0.5, 0.5, NULL);
        ct_tensor *rv = ct_test_random(CT_SHAPE(c), sd, 0.5, 2, NULL);
        ct_tensor *proj = ct_randn(shape, .dtype = dt);
        ct_tensor *dev_t[5] = {on_gpu(x), affine ? on_gpu(w) : NULL, affine ? on_gpu(b) : NULL, on_gpu(rm),
                               on_gpu(rv)};
        ct_tensor *cpu_t[5] = {ct_clone(x), affine ? ct_clone(w) : NULL, affine ? ct_clone(b) : NULL, rm, rv};
        ct_tensor *ys[2], *gs[2][3];
        for (int side = 0; side < 2; side++) {
            ct_tensor **t = side ? dev_t : cpu_t;
            for (int i = 0; i < 3; i++)
                if (t[i]) ct_set_requires_grad(t[i], true);
            ys[side] = ct_batch_norm(t[0], t[3], t[4], t[1], t[2], .training = training);
            CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(ys[side], side ? on_gpu(proj) : proj))), CT_OK);
            for (int i = 0; i < 3; i++) gs[side][i] = t[i] ? ct_grad(t[i]) : NULL;
        }
        EXPECT_LIKE_CPU(ys[1], ys[0], rtol, atol * 10);
        EXPECT_LIKE_CPU(dev_t[3], cpu_t[3], 1e-5, 1e-5); /* running statistics */
        EXPECT_LIKE_CPU(dev_t[4], cpu_t[4], 1e-5, 1e-5);
        for (int i = 0; i < 3; i++)
            if (gs[0][i]) EXPECT_LIKE_CPU(gs[1][i], gs[0][i], rtol * 4, atol * 50);
    }
}

static void test_batch_norm_like_cpu(void) {
    static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
    for (int enabled = 1; enabled >= 0; enabled--) {
        ct_backends_cudnn_set_enabled(enabled);
        for (size_t d = 0; d < 4; d++) {
            check_batch_norm(dts[d], true, true, CT_SHAPE(4, 3, 5, 6));
            check_batch_norm(dts[d], true, false, CT_SHAPE(4, 3, 5, 6));
            check_batch_norm(dts[d], false, true, CT_SHAPE(4, 3, 7));
            check_batch_norm(dts[d], true, true, CT_SHAPE(16, 5));
        }
    }
    reset_switches();
}

/* ---- pooling ------------------------------------------------------------------------------------------ */

static void check_pool(ct_dtype dt, bool max, const int64_t k[2], ct_pool_opts o) {
    double rtol, atol;
    gpu_tolerances(dt, &rtol, &atol);
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 3, 11, 9), dt, -3, 3, NULL);
        ct_tensor *want = max ? ct_max_pool2d_opts(x, k, o) : ct_avg_pool2d_opts(x, k, o);
        ct_tensor *gx = on_gpu(x);
        ct_tensor *got = max ? ct_max_pool2d_opts(gx, k, o) : ct_avg_pool2d_opts(gx, k, o);
        EXPECT_LIKE_CPU(got, want, rtol, atol);
    }
}

static void test_pooling_like_cpu(void) {
    static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
    const int64_t k3[2] = {3, 3}, k2[2] = {2, 3};
    const ct_pool_opts s2p1 = CT_POOL_OPTS(.stride = {2, 2}, .padding = {1, 1});
    const ct_pool_opts s1p0_ceil = CT_POOL_OPTS(.stride = {1, 2}, .padding = {0, 1}, .ceil_mode = true);
    const ct_pool_opts exclude_pad = CT_POOL_OPTS(.stride = {2, 2}, .padding = {1, 1}, .no_count_include_pad = true);
    const ct_pool_opts divisor = CT_POOL_OPTS(.stride = {2, 2}, .padding = {1, 1}, .divisor_override = 5);
    for (int enabled = 1; enabled >= 0; enabled--) {
        ct_backends_cudnn_set_enabled(enabled);
        for (size_t d = 0; d < 4; d++) {
            check_pool(dts[d], true, k3, s2p1);
            check_pool(dts[d], true, k2, s1p0_ceil); /* ceil_mode: declined */
            check_pool(dts[d], false, k3, s2p1);
            check_pool(dts[d], false, k3, exclude_pad);
            check_pool(dts[d], false, k2, s1p0_ceil);
            check_pool(dts[d], false, k3, divisor); /* divisor_override: declined */
        }
    }
    reset_switches();
}

static void test_max_pool_nan(void) {
    CT_SCOPE {
        double vals[16];
        for (int i = 0; i < 16; i++) vals[i] = i;
        vals[5] = NAN;
        ct_tensor *x = on_gpu(ct_test_tensor(vals, CT_SHAPE(1, 1, 4, 4), CT_FLOAT32));
        const int64_t k[2] = {2, 2};
        ct_tensor *y = ct_to_device(ct_max_pool2d(x, k), cpu());
        const double want[4] = {NAN, 7, 13, 15};
        CT_EXPECT_CLOSE(y, want, 4, 0, 0);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
#ifdef CTORCH_TEST_CUDA
    CT_RUN(test_libraries_load);
    CT_RUN(test_status_names_and_errors);
    CT_RUN(test_decline_rules);
    CT_RUN(test_handles_without_device);
#endif
    if (!ct_cuda_is_available()) {
        int rc = ct_test_finish();
        return rc != 0 ? rc : 77;
    }
    CT_RUN(test_matmul_like_cpu);
    CT_RUN(test_matmul_empty_and_zero_k);
    CT_RUN(test_matmul_tf32_switch);
    CT_RUN(test_conv_like_cpu);
    CT_RUN(test_conv_deterministic_bitwise);
#ifdef CTORCH_TEST_CUDA
    CT_RUN(test_conv_choice_cache);
#endif
    CT_RUN(test_batch_norm_like_cpu);
    CT_RUN(test_pooling_like_cpu);
    CT_RUN(test_max_pool_nan);
    return ct_test_finish();
}
