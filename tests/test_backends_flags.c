/*
 * test_backends_flags.c — the torch.backends switches of ctorch/backends.h:
 * PyTorch's defaults, set/get of each, that each switch is independent and
 * process-wide (visible across threads), the float32 matmul precision
 * strings and their error, the library versions (cuBLAS/cuDNN load from the
 * toolkit when the CUDA backend is built in, with or without a GPU), and
 * that no switch changes a CPU result: matmul, conv2d (forward and
 * gradients) and training batch_norm give bit-identical results with every
 * switch flipped, and match float64 references.
 */
#define _POSIX_C_SOURCE 200809L /* access */

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/backend.h"
#include "ctorch/backends.h"
#include "testutil.h"

/* Every switch back to PyTorch's default. */
static void reset_switches(void) {
    ct_backends_cuda_matmul_set_allow_tf32(false);
    ct_backends_cudnn_set_allow_tf32(true);
    ct_backends_cudnn_set_benchmark(false);
    ct_backends_cudnn_set_deterministic(false);
    ct_backends_cudnn_set_enabled(true);
    ct_use_deterministic_algorithms(false);
}

/* Every switch away from its default. */
static void flip_switches(void) {
    ct_backends_cuda_matmul_set_allow_tf32(true);
    ct_backends_cudnn_set_allow_tf32(false);
    ct_backends_cudnn_set_benchmark(true);
    ct_backends_cudnn_set_deterministic(true);
    ct_backends_cudnn_set_enabled(false);
    ct_use_deterministic_algorithms(true);
}

/* Runs first: nothing has touched the switches yet. */
static void test_defaults(void) {
    CT_EXPECT(!ct_backends_cuda_matmul_get_allow_tf32());
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "highest");
    CT_EXPECT(ct_backends_cudnn_get_allow_tf32());
    CT_EXPECT(!ct_backends_cudnn_get_benchmark());
    CT_EXPECT(!ct_backends_cudnn_get_deterministic());
    CT_EXPECT(ct_backends_cudnn_get_enabled());
    CT_EXPECT(!ct_are_deterministic_algorithms_enabled());
}

static void test_set_get_each_alone(void) {
    flip_switches();
    CT_EXPECT(ct_backends_cuda_matmul_get_allow_tf32());
    CT_EXPECT(!ct_backends_cudnn_get_allow_tf32());
    CT_EXPECT(ct_backends_cudnn_get_benchmark());
    CT_EXPECT(ct_backends_cudnn_get_deterministic());
    CT_EXPECT(!ct_backends_cudnn_get_enabled());
    CT_EXPECT(ct_are_deterministic_algorithms_enabled());
    reset_switches();
    /* one at a time: the others keep their defaults */
    ct_backends_cudnn_set_benchmark(true);
    CT_EXPECT(ct_backends_cudnn_get_benchmark());
    CT_EXPECT(!ct_backends_cudnn_get_deterministic());
    CT_EXPECT(!ct_are_deterministic_algorithms_enabled());
    reset_switches();
    ct_use_deterministic_algorithms(true);
    CT_EXPECT(ct_are_deterministic_algorithms_enabled());
    CT_EXPECT(!ct_backends_cudnn_get_deterministic()); /* separate flags, as in PyTorch */
    reset_switches();
    ct_backends_cudnn_set_allow_tf32(false);
    CT_EXPECT(!ct_backends_cudnn_get_allow_tf32());
    CT_EXPECT(!ct_backends_cuda_matmul_get_allow_tf32());
    reset_switches();
    ct_backends_cudnn_set_enabled(false);
    CT_EXPECT(!ct_backends_cudnn_get_enabled());
    CT_EXPECT(ct_backends_cudnn_get_allow_tf32());
    reset_switches();
    test_defaults();
}

static void test_float32_matmul_precision(void) {
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision("high"), CT_OK);
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "high");
    CT_EXPECT(ct_backends_cuda_matmul_get_allow_tf32());
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision("medium"), CT_OK);
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "medium");
    CT_EXPECT(ct_backends_cuda_matmul_get_allow_tf32());
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision("highest"), CT_OK);
    CT_EXPECT(!ct_backends_cuda_matmul_get_allow_tf32());
    /* allow_tf32 drives the precision as in PyTorch */
    ct_backends_cuda_matmul_set_allow_tf32(true);
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "high");
    ct_backends_cuda_matmul_set_allow_tf32(false);
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "highest");
    /* errors leave the setting alone */
    ct_backends_cuda_matmul_set_allow_tf32(true);
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision("low"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "set_float32_matmul_precision: Invalid precision");
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision("High"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "but got \"High\"");
    CT_EXPECT_INT_EQ(ct_set_float32_matmul_precision(NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "\"highest\", \"high\", \"medium\"");
    CT_EXPECT_STR_EQ(ct_get_float32_matmul_precision(), "high");
    reset_switches();
}

static void *flip_in_thread(void *arg) {
    (void)arg;
    flip_switches();
    return NULL;
}

/* Like PyTorch's at::Context flags: one value for the whole process. */
static void test_switches_are_process_wide(void) {
    pthread_t t;
    CT_EXPECT_INT_EQ(pthread_create(&t, NULL, flip_in_thread, NULL), 0);
    pthread_join(t, NULL);
    CT_EXPECT(ct_backends_cuda_matmul_get_allow_tf32());
    CT_EXPECT(!ct_backends_cudnn_get_allow_tf32());
    CT_EXPECT(ct_backends_cudnn_get_benchmark());
    CT_EXPECT(ct_backends_cudnn_get_deterministic());
    CT_EXPECT(!ct_backends_cudnn_get_enabled());
    CT_EXPECT(ct_are_deterministic_algorithms_enabled());
    reset_switches();
}

/* Versions need no GPU: with the CUDA backend built in they come from the
 * libraries themselves (both are in the toolkit's lib64 here). */
static void test_library_versions(void) {
    const bool cuda_built = ct_backend_for(CT_DEVICE_CUDA) != NULL;
    const int cudnn = ct_backends_cudnn_version(), cublas = ct_backends_cublas_version();
    CT_EXPECT(ct_backends_cudnn_is_available() == (cudnn > 0));
    CT_EXPECT_INT_EQ(ct_backends_cudnn_version(), cudnn); /* loaded once, stable */
    if (!cuda_built) {
        CT_EXPECT_INT_EQ(cudnn, 0);
        CT_EXPECT_INT_EQ(cublas, 0);
        CT_EXPECT(!ct_backends_cudnn_is_available());
        return;
    }
    CT_EXPECT(cudnn == 0 || (cudnn >= 90000 && cudnn < 100000));
    CT_EXPECT(cublas == 0 || (cublas >= 130000 && cublas < 140000));
    if (access("/usr/local/cuda/lib64/libcudnn.so.9", R_OK) == 0)
        CT_EXPECT_MSG(cudnn >= 90000, "libcudnn.so.9 is installed but cuDNN version is %d", cudnn);
    if (access("/usr/local/cuda/lib64/libcublas.so.13", R_OK) == 0)
        CT_EXPECT_MSG(cublas >= 130000, "libcublas.so.13 is installed but cuBLAS version is %d", cublas);
}

/* ---- CPU results do not depend on the switches -------------------------------------------- */

/* a [b, m, k] @ bt^T with bt [n, k] (a transposed view), against float64. */
static void test_cpu_matmul_unaffected(void) {
    const int64_t b = 3, m = 17, k = 33, n = 9;
    CT_SCOPE {
        double *va, *vb;
        ct_tensor *a = ct_test_random(CT_SHAPE(b, m, k), CT_FLOAT32, -1, 1, &va);
        ct_tensor *bt = ct_test_random(CT_SHAPE(n, k), CT_FLOAT32, -1, 1, &vb);
        ct_tensor *bm = ct_transpose(bt, 0, 1);
        ct_tensor *ref_run = ct_matmul(a, bm);
        flip_switches();
        ct_tensor *flipped = ct_matmul(a, bm);
        reset_switches();
        CT_EXPECT(ct_equal(ref_run, flipped));
        double *want = malloc(sizeof(double) * (size_t)(b * m * n));
        for (int64_t i = 0; i < b; i++)
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < n; c++) {
                    double s = 0;
                    for (int64_t q = 0; q < k; q++) s += va[(i * m + r) * k + q] * vb[c * k + q];
                    want[(i * m + r) * n + c] = s;
                }
        double rtol, atol;
        ct_test_tolerances(CT_FLOAT32, &rtol, &atol);
        CT_EXPECT_CLOSE(flipped, want, b * m * n, rtol, atol);
        free(want);
        free(va);
        free(vb);
    }
}

/* conv2d forward and input/weight gradients (stride 2, padding 1, two
 * groups) with and without the switches, plus a float64 reference of the
 * forward. */
static void conv_once(ct_tensor *x, ct_tensor *w, ct_tensor **y, ct_tensor **gx, ct_tensor **gw) {
    ct_set_grad(x, NULL);
    ct_set_grad(w, NULL);
    *y = ct_conv2d(x, w, NULL, .stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}, .groups = 2);
    ct_backward(ct_sum_all(*y));
    *gx = ct_grad(x);
    *gw = ct_grad(w);
}

static void test_cpu_conv_unaffected(void) {
    const int64_t n = 2, c = 4, h = 7, wd = 6, o = 6, kh = 3, kw = 2;
    CT_SCOPE {
        double *vx, *vw;
        ct_tensor *x = ct_test_random(CT_SHAPE(n, c, h, wd), CT_FLOAT32, -1, 1, &vx);
        ct_tensor *w = ct_test_random(CT_SHAPE(o, c / 2, kh, kw), CT_FLOAT32, -1, 1, &vw);
        ct_set_requires_grad(x, true);
        ct_set_requires_grad(w, true);
        ct_tensor *y0, *gx0, *gw0, *y1, *gx1, *gw1;
        conv_once(x, w, &y0, &gx0, &gw0);
        flip_switches();
        conv_once(x, w, &y1, &gx1, &gw1);
        reset_switches();
        CT_EXPECT(ct_equal(y0, y1));
        CT_EXPECT(ct_equal(gx0, gx1));
        CT_EXPECT(ct_equal(gw0, gw1));
        /* OH = (7 + 2 - 2 - 1) / 2 + 1 = 4, OW = (6 + 2 - 2 - 1) / 1 + 1 = 6 */
        const int64_t oh = 4, ow = 6, cg = c / 2, og = o / 2;
        double *want = calloc((size_t)(n * o * oh * ow), sizeof(double));
        for (int64_t i = 0; i < n; i++)
            for (int64_t oc = 0; oc < o; oc++)
                for (int64_t r = 0; r < oh; r++)
                    for (int64_t q = 0; q < ow; q++) {
                        double s = 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t u = 0; u < kh; u++)
                                for (int64_t v = 0; v < kw; v++) {
                                    int64_t hi = r * 2 - 1 + u, wi = q - 1 + v * 2;
                                    if (hi < 0 || hi >= h || wi < 0 || wi >= wd) continue;
                                    int64_t cin = (oc / og) * cg + ci;
                                    s += vx[((i * c + cin) * h + hi) * wd + wi] *
                                         vw[((oc * cg + ci) * kh + u) * kw + v];
                                }
                        want[((i * o + oc) * oh + r) * ow + q] = s;
                    }
        double rtol, atol;
        ct_test_tolerances(CT_FLOAT32, &rtol, &atol);
        CT_EXPECT_CLOSE(y1, want, n * o * oh * ow, rtol, atol);
        free(want);
        free(vx);
        free(vw);
    }
}

/* Training batch_norm: output and running statistics are the same with
 * the switches flipped (the cuDNN path's entries are absent on the CPU). */
static void test_cpu_batch_norm_unaffected(void) {
    const int64_t n = 4, c = 3, s = 5;
    CT_SCOPE {
        double *vx;
        ct_tensor *x = ct_test_random(CT_SHAPE(n, c, s), CT_FLOAT32, -2, 2, &vx);
        ct_tensor *w = ct_test_random(CT_SHAPE(c), CT_FLOAT32, 0.5, 1.5, NULL);
        ct_tensor *b = ct_test_random(CT_SHAPE(c), CT_FLOAT32, -1, 1, NULL);
        ct_tensor *rm0 = ct_zeros(CT_SHAPE(c)), *rv0 = ct_zeros(CT_SHAPE(c));
        ct_tensor *rm1 = ct_zeros(CT_SHAPE(c)), *rv1 = ct_zeros(CT_SHAPE(c));
        ct_tensor *y0 = ct_batch_norm(x, rm0, rv0, w, b, .training = true);
        flip_switches();
        ct_tensor *y1 = ct_batch_norm(x, rm1, rv1, w, b, .training = true);
        reset_switches();
        CT_EXPECT(ct_equal(y0, y1));
        CT_EXPECT(ct_equal(rm0, rm1));
        CT_EXPECT(ct_equal(rv0, rv1));
        double want_rm[3], want_rv[3];
        for (int64_t j = 0; j < c; j++) {
            double sum = 0, sq = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t q = 0; q < s; q++) sum += vx[(i * c + j) * s + q];
            double mu = sum / (double)(n * s);
            for (int64_t i = 0; i < n; i++)
                for (int64_t q = 0; q < s; q++) sq += pow(vx[(i * c + j) * s + q] - mu, 2);
            want_rm[j] = 0.1 * mu;
            want_rv[j] = 0.1 * sq / (double)(n * s - 1);
        }
        double rtol, atol;
        ct_test_tolerances(CT_FLOAT32, &rtol, &atol);
        CT_EXPECT_CLOSE(rm1, want_rm, c, rtol, atol);
        CT_EXPECT_CLOSE(rv1, want_rv, c, rtol, atol);
        free(vx);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_defaults);
    CT_RUN(test_set_get_each_alone);
    CT_RUN(test_float32_matmul_precision);
    CT_RUN(test_switches_are_process_wide);
    CT_RUN(test_library_versions);
    CT_RUN(test_cpu_matmul_unaffected);
    CT_RUN(test_cpu_conv_unaffected);
    CT_RUN(test_cpu_batch_norm_unaffected);
    return ct_test_finish();
}
