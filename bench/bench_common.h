/*
 * bench_common.h — what bench_ops.c and bench_train.c share: a monotonic
 * clock, medians, the restart that fixes the thread counts before OpenMP and
 * OpenBLAS load, and the name of the OpenBLAS core in use (OpenBLAS can
 * mis-detect a virtual CPU, e.g. as "Prescott", which changes GEMM speed
 * several-fold, so every report names it).
 */
#ifndef CTORCH_BENCH_COMMON_H
#define CTORCH_BENCH_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include <ctorch/backends.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_REPEATS 64

/* Exported by OpenBLAS (not declared in cblas.h on every distribution). */
extern char *openblas_get_corename(void);

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *xs, int n) {
    qsort(xs, (size_t)n, sizeof *xs, bench_compare_doubles);
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

/* Thread counts must be in the environment before OpenMP and OpenBLAS
 * start, which is before main: set them and run this program again. */
static inline void bench_ensure_threads(char **argv, const char *threads) {
    const char *omp = getenv("OMP_NUM_THREADS");
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (omp && blas && strcmp(omp, threads) == 0 && strcmp(blas, threads) == 0) return;
    setenv("OMP_NUM_THREADS", threads, 1);
    setenv("OPENBLAS_NUM_THREADS", threads, 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "%s: could not restart with %s threads; set OMP_NUM_THREADS and "
                    "OPENBLAS_NUM_THREADS yourself\n", argv[0], threads);
}

/* The "# …" header line both programs print before their figures. */
static inline void bench_print_header(const char *version, const char *threads) {
    const char *forced = getenv("OPENBLAS_CORETYPE");
    printf("# ctorch %s, %s threads (OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s)\n", version,
           threads, getenv("OMP_NUM_THREADS"), getenv("OPENBLAS_NUM_THREADS"));
    printf("# OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(),
           forced ? forced : "unset");
    printf("# CPU engine: float32 GEMM on %s, convolutions on %s, CPU capability %s\n",
           ct_backends_cpu_gemm_engine(), ct_backends_mkldnn_is_available() ? "oneDNN" : "im2col",
           ct_backends_cpu_get_cpu_capability());
}

#endif /* CTORCH_BENCH_COMMON_H */
