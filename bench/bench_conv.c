/*
 * bench_conv.c — per-layer convolution rates on the CPU: the layers of the
 * W4 CNN and of ResNet-18 at 32×32 (W5/W6), each timed forward and
 * forward+backward (input and weight gradients), once with the default
 * engine (oneDNN where cpu_gemm.c chooses it) and once with
 * ct_backends_mkldnn_set_enabled(false), which runs ctorch's own im2col
 * kernels. The two columns
 * are the measurement behind the engine choice in docs/performance.md.
 *
 * Usage: bench_conv [threads]   (prints GFLOP/s, best of several runs; higher
 * is better). Forward+backward counts 3× the forward's FLOPs, though the
 * first layer of a network needs no input gradient.
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <ctorch/ctorch.h>
#include <ctorch/functional.h>

typedef struct layer {
    const char *name;
    int64_t n, c, o, hw, k, stride, pad;
} layer;

/* W4's two convolutions, and every distinct convolution of ResNet-18 (the
 * torchvision model W5/W6 run) at 32×32 input, batch 64. */
static const layer LAYERS[] = {
    {"W4 c1 1->32 28x28 k3", 128, 1, 32, 28, 3, 1, 0},
    {"W4 c2 32->64 13x13 k3", 128, 32, 64, 13, 3, 1, 0},
    {"R18 stem 3->64 32x32 k7 s2", 64, 3, 64, 32, 7, 2, 3},
    {"R18 64->64 8x8", 64, 64, 64, 8, 3, 1, 1},
    {"R18 64->128 s2 8x8", 64, 64, 128, 8, 3, 2, 1},
    {"R18 128->128 4x4", 64, 128, 128, 4, 3, 1, 1},
    {"R18 128->256 s2 4x4", 64, 128, 256, 4, 3, 2, 1},
    {"R18 256->256 2x2", 64, 256, 256, 2, 3, 1, 1},
    {"R18 256->512 s2 2x2", 64, 256, 512, 2, 3, 2, 1},
    {"R18 512->512 1x1", 64, 512, 512, 1, 3, 1, 1},
    {"R18 1x1 256->512 s2 2x2", 64, 256, 512, 2, 1, 2, 0},
};

static double layer_flops(const layer *l) {
    int64_t oh = (l->hw + 2 * l->pad - l->k) / l->stride + 1;
    return 2.0 * (double)(l->n * l->o * oh * oh) * (double)(l->c * l->k * l->k);
}

/* The best of `reps` runs of one layer in seconds (forward only, or forward
 * and both gradients): on a shared machine the fastest run is the one
 * least disturbed, and both columns are taken the same way. */
static double time_layer(const layer *l, bool backward, int reps) {
    double t[BENCH_MAX_REPEATS];
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(l->n, l->c, l->hw, l->hw), .requires_grad = backward);
        ct_tensor *w = ct_randn(CT_SHAPE(l->o, l->c, l->k, l->k), .requires_grad = backward);
        for (int r = -2; r < reps; r++) { /* two warm-up runs: plans, caches, page faults */
            double t0 = bench_now();
            CT_SCOPE {
                ct_tensor *y = ct_conv2d(x, w, NULL, .stride = {l->stride, l->stride}, .padding = {l->pad, l->pad});
                if (backward) ct_backward_ex(y, ct_ones_like(y), false);
            }
            if (r >= 0) t[r] = bench_now() - t0;
            ct_set_grad(x, NULL), ct_set_grad(w, NULL);
        }
    }
    double best = t[0];
    for (int r = 1; r < reps; r++) best = t[r] < best ? t[r] : best;
    return best;
}

int main(int argc, char **argv) {
    const char *threads = argc > 1 ? argv[1] : "2";
    bench_ensure_threads(argv, threads);
    bench_print_header(CTORCH_VERSION_STRING, threads);
    printf("%-26s %14s %14s %14s %14s\n", "layer (GFLOP/s)", "fwd default", "fwd im2col", "f+b default",
           "f+b im2col");
    for (size_t i = 0; i < sizeof LAYERS / sizeof LAYERS[0]; i++) {
        const layer *l = &LAYERS[i];
        double f = layer_flops(l), r[4];
        for (int mode = 0; mode < 2; mode++) {
            ct_backends_mkldnn_set_enabled(mode == 0);
            r[mode] = f / time_layer(l, false, 9) / 1e9;
            r[2 + mode] = 3 * f / time_layer(l, true, 5) / 1e9;
        }
        ct_backends_mkldnn_set_enabled(true);
        printf("%-26s %14.1f %14.1f %14.1f %14.1f\n", l->name, r[0], r[1], r[2], r[3]);
    }
    if (ct_last_error()[0]) fprintf(stderr, "bench_conv: %s\n", ct_last_error());
    return 0;
}
