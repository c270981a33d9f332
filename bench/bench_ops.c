/*
 * bench_ops.c — ctorch's figures for the reference workloads W0 and W2
 * (../shared/bench/WORKLOADS.md), printed with the same labels and units as
 * torch_anchor.py so that bench/run.sh can set them beside PyTorch's:
 *
 *   W0 add 1-elem (us/op): …      a + b on two 1-element float32 tensors
 *   W2 matmul <n> (GFLOP/s): …    float32 A @ B, n = 1024, 2048, 4096
 *
 * Each figure is the median of several timed repeats after a warm-up.
 * Both sides use 2 threads by default: OpenMP and OpenBLAS read their
 * thread counts when they load, so when OMP_NUM_THREADS is unset the program
 * sets it (and OPENBLAS_NUM_THREADS) and starts itself again.
 *
 * Usage: bench_ops [threads]   (default 2)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ctorch/ctorch.h>

#define W0_REPEATS 7
#define W0_OPS_PER_REPEAT 20000
#define MAX_REPEATS 16

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n) {
    qsort(xs, (size_t)n, sizeof *xs, compare_doubles);
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

/* Thread counts must be in the environment before OpenMP and OpenBLAS
 * start, which is before main: set them and run this program again. */
static void ensure_threads(char **argv, const char *threads) {
    const char *omp = getenv("OMP_NUM_THREADS");
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (omp && blas && strcmp(omp, threads) == 0 && strcmp(blas, threads) == 0) return;
    setenv("OMP_NUM_THREADS", threads, 1);
    setenv("OPENBLAS_NUM_THREADS", threads, 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "bench_ops: could not restart with %s threads; set OMP_NUM_THREADS and "
                    "OPENBLAS_NUM_THREADS yourself\n", threads);
}

/* W0: the cost of one small op: dispatch, allocation of the result and its
 * release, as `a + b` costs in Python on 1-element tensors. */
static double w0_add_us(void) {
    double times[W0_REPEATS];
    ct_tensor *a = ct_ones(CT_SHAPE(1));
    ct_tensor *b = ct_ones(CT_SHAPE(1));
    for (int i = 0; i < 1000; i++) ct_release(ct_add(a, b));
    for (int r = 0; r < W0_REPEATS; r++) {
        double start = now_seconds();
        for (int i = 0; i < W0_OPS_PER_REPEAT; i++) ct_release(ct_add(a, b));
        times[r] = (now_seconds() - start) / W0_OPS_PER_REPEAT * 1e6;
    }
    ct_release(a);
    ct_release(b);
    return median(times, W0_REPEATS);
}

/* W2: float32 square matmul, GFLOP/s = 2n^3 / t. */
static double w2_matmul_gflops(int64_t n, int repeats) {
    double times[MAX_REPEATS];
    double gflops = 0.0;
    CT_SCOPE {
        ct_tensor *a = ct_rand(CT_SHAPE(n, n));
        ct_tensor *b = ct_rand(CT_SHAPE(n, n));
        ct_release(ct_matmul(a, b));
        for (int r = 0; r < repeats; r++) {
            double start = now_seconds();
            ct_tensor *c = ct_matmul(a, b);
            times[r] = now_seconds() - start;
            ct_release(c);
        }
        if (ct_last_status() == CT_OK)
            gflops = 2.0 * (double)n * (double)n * (double)n / median(times, repeats) / 1e9;
    }
    return gflops;
}

int main(int argc, char **argv) {
    const char *threads = argc > 1 ? argv[1] : "2";
    if (atoi(threads) <= 0) {
        fprintf(stderr, "usage: %s [threads > 0]\n", argv[0]);
        return 2;
    }
    ensure_threads(argv, threads);
    printf("# ctorch %s, %s threads (OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s)\n",
           CTORCH_VERSION_STRING, threads, getenv("OMP_NUM_THREADS"),
           getenv("OPENBLAS_NUM_THREADS"));
    printf("W0 add 1-elem (us/op): %.3f\n", w0_add_us());
    fflush(stdout);
    static const int64_t sizes[] = {1024, 2048, 4096};
    for (int k = 0; k < 3; k++) {
        double g = w2_matmul_gflops(sizes[k], sizes[k] < 4096 ? 5 : 3);
        printf("W2 matmul %lld (GFLOP/s): %.3f\n", (long long)sizes[k], g);
        fflush(stdout);
    }
    if (ct_last_status() != CT_OK) {
        fprintf(stderr, "bench_ops: %s\n", ct_last_error());
        return 1;
    }
    return 0;
}
