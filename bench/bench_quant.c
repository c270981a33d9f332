/*
 * bench_quant.c — float32 vs dynamically quantized int8 inference on the
 * CPU (docs/quantization.md): a batch-64 784→1024→10 MLP and a batch-64
 * 1024×1024 Linear, median of repeated forwards after a warm-up. The int8
 * GEMM path in use is printed (avx512_vnni, avx_vnni, avx2 or scalar).
 * bench/torch_quant.py times PyTorch's quantize_dynamic on the same shapes.
 *
 *   bench_quant [repeats]     (OMP_NUM_THREADS sets the threads)
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <stdio.h>
#include <stdlib.h>

#include <ctorch/ctorch.h>

static double time_forward(ct_module *m, const ct_tensor *x, int repeats) {
    double *t = malloc(sizeof(double) * (size_t)repeats);
    for (int r = -3; r < repeats; r++) CT_SCOPE CT_NO_GRAD {
        double t0 = bench_now();
        ct_tensor *y = ct_forward(m, x);
        if (!y) fprintf(stderr, "forward failed: %s\n", ct_last_error());
        if (r >= 0) t[r] = bench_now() - t0;
    }
    double med = bench_median(t, repeats);
    free(t);
    return med;
}

static void compare(const char *name, ct_module *model, ct_shape in, int repeats) {
    ct_module_eval(model);
    ct_module *q = ct_quantize_dynamic(model, false);
    CT_SCOPE {
        ct_tensor *x = ct_randn(in);
        double tf = time_forward(model, x, repeats), tq = time_forward(q, x, repeats);
        printf("%-28s float32 %8.3f ms   int8 %8.3f ms   speed-up %.2fx\n", name, 1e3 * tf, 1e3 * tq, tf / tq);
    }
    ct_module_free(q);
    ct_module_free(model);
}

int main(int argc, char **argv) {
    int repeats = argc > 1 ? atoi(argv[1]) : 50;
    if (repeats < 1) repeats = 1;
    ct_manual_seed(0);
    printf("quantized engine: %s\n", ct_quantized_engine());
    const int64_t hidden[] = {1024};
    compare("MLP 784-1024-10, batch 64", ct_model_mlp(784, hidden, 1, 10), CT_SHAPE(64, 784), repeats);
    compare("Linear 1024x1024, batch 64", CT_SEQUENTIAL(ct_nn_linear(1024, 1024, true)), CT_SHAPE(64, 1024), repeats);
    compare("Linear 1024x1024, batch 1", CT_SEQUENTIAL(ct_nn_linear(1024, 1024, true)), CT_SHAPE(1, 1024), repeats);
    return ct_last_status() == CT_OK ? 0 : 1;
}
