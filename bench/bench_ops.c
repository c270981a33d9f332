/*
 * bench_ops.c — ctorch's figures for the reference workloads W0 and W2
 * (../shared/bench/WORKLOADS.md), printed with the same labels and units as
 * torch_anchor.py so that bench/run.sh can set them beside PyTorch's, and
 * W2's bfloat16 variant (issue 16), beside PyTorch's bfloat16 matmul:
 *
 *   W0 add 1-elem (us/op): …            a + b on two 1-element float32 tensors
 *   W2 matmul <n> (GFLOP/s): …          float32 A @ B, n = 1024, 2048, 4096
 *   W2-bf16 matmul <n> (GFLOP/s): …     bfloat16 A @ B (float32 sums, as PyTorch),
 *                                       n = 1024, 2048, and 4096 only on a device or
 *                                       a CPU with avx512_bf16 or amx_bf16
 *                                       (bench_bf16_max_n in bench_common.h)
 *
 * Each figure is the median of several timed repeats after a warm-up.
 * Both sides use 2 threads by default: OpenMP and OpenBLAS read their
 * thread counts when they load, so when OMP_NUM_THREADS is unset the program
 * sets it (and OPENBLAS_NUM_THREADS) and starts itself again.
 *
 * The header names the OpenBLAS core in use (see bench_common.h).
 *
 * Usage: bench_ops [threads] [W0 W2 W2-bf16] [--device D]   (default 2
 * threads, W0 and W2, the CPU; W2-bf16 runs only when named).
 * CT_BENCH_BF16_MAX_N=1024 limits W2-bf16 to 1024 for a quick check. On a
 * device (e.g. --device cuda:0) the tensors live there and each timed repeat
 * ends with a synchronize; a W2 repeat is then GPU_MATMULS products, so that
 * a launch and a synchronize do not dominate (bench/torch_workloads.py
 * --device does the same).
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <ctorch/ctorch.h>

#define W0_REPEATS 7
#define W0_OPS_PER_REPEAT 20000
#define GPU_MATMULS 10

static bench_args g_args;

/* W0: the cost of one small op: dispatch, allocation of the result and its
 * release, as `a + b` costs in Python on 1-element tensors. */
static double w0_add_us(void) {
    double times[W0_REPEATS];
    ct_tensor *a = ct_ones(CT_SHAPE(1), .device = g_args.device);
    ct_tensor *b = ct_ones(CT_SHAPE(1), .device = g_args.device);
    for (int i = 0; i < 1000; i++) ct_release(ct_add(a, b));
    bench_sync(&g_args);
    for (int r = 0; r < W0_REPEATS; r++) {
        double start = bench_now();
        for (int i = 0; i < W0_OPS_PER_REPEAT; i++) ct_release(ct_add(a, b));
        bench_sync(&g_args);
        times[r] = (bench_now() - start) / W0_OPS_PER_REPEAT * 1e6;
    }
    ct_release(a);
    ct_release(b);
    return bench_median(times, W0_REPEATS);
}

/* W2: square matmul in dtype (float32 or bfloat16), GFLOP/s = 2n^3 / t. */
static double w2_matmul_gflops(int64_t n, int repeats, ct_dtype dtype) {
    double times[BENCH_MAX_REPEATS];
    double gflops = 0.0;
    int per_repeat = bench_on_host(&g_args) ? 1 : GPU_MATMULS;
    CT_SCOPE {
        ct_tensor *a = ct_rand(CT_SHAPE(n, n), .dtype = dtype, .device = g_args.device);
        ct_tensor *b = ct_rand(CT_SHAPE(n, n), .dtype = dtype, .device = g_args.device);
        ct_release(ct_matmul(a, b));
        bench_sync(&g_args);
        for (int r = 0; r < repeats; r++) {
            double start = bench_now();
            for (int i = 0; i < per_repeat; i++) ct_release(ct_matmul(a, b));
            bench_sync(&g_args);
            times[r] = (bench_now() - start) / per_repeat;
        }
        if (ct_last_status() == CT_OK)
            gflops = 2.0 * (double)n * (double)n * (double)n / bench_median(times, repeats) / 1e9;
    }
    return gflops;
}

int main(int argc, char **argv) {
    if (!bench_parse_args(argc, argv, &g_args)) {
        fprintf(stderr, "usage: %s [threads > 0] [W0 W2 W2-bf16] [--device D]\n", argv[0]);
        return 2;
    }
    const char *threads = g_args.threads;
    bench_ensure_threads(argv, threads);
    bench_print_header(CTORCH_VERSION_STRING, threads);
    if (!bench_print_device(&g_args)) {
        fprintf(stderr, "bench_ops: %s\n", ct_last_error());
        return 1;
    }
    if (bench_selected(&g_args, "W0")) {
        printf("W0 add 1-elem (us/op): %.3f\n", w0_add_us());
        fflush(stdout);
    }
    static const int64_t sizes[] = {1024, 2048, 4096};
    for (int k = 0; k < 3 && bench_selected(&g_args, "W2"); k++) {
        double g = w2_matmul_gflops(sizes[k], sizes[k] < 4096 ? 5 : 3, CT_FLOAT32);
        printf("W2 matmul %lld (GFLOP/s): %.3f\n", (long long)sizes[k], g);
        fflush(stdout);
    }
    /* bfloat16: 3 repeats at every size (a 2048 product takes ~20 s where
     * PyTorch has no bfloat16 instructions to use); the same on both sides. */
    if (bench_named(&g_args, "W2-bf16")) {
        int64_t max_n = bench_bf16_max_n(bench_on_host(&g_args));
        if (max_n < 4096)
            printf("# W2-bf16: sizes up to %lld (%s)\n", (long long)max_n,
                   getenv("CT_BENCH_BF16_MAX_N") ? "CT_BENCH_BF16_MAX_N" : "no avx512_bf16/amx_bf16 in /proc/cpuinfo");
        for (int k = 0; k < 3 && sizes[k] <= max_n; k++) {
            double g = w2_matmul_gflops(sizes[k], 3, CT_BFLOAT16);
            printf("W2-bf16 matmul %lld (GFLOP/s): %.3f\n", (long long)sizes[k], g);
            fflush(stdout);
        }
    }
    if (ct_last_status() != CT_OK) {
        fprintf(stderr, "bench_ops: %s\n", ct_last_error());
        return 1;
    }
    return 0;
}
