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
#include <ctorch/device.h>
#include <ctorch/status.h>
#include <stdbool.h>
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

/* The command line both programs take: [threads] [workload ids…], and
 * "--device D" (or "-d D") anywhere, e.g. cuda:0 (default: the CPU). */
#define BENCH_MAX_IDS 16
typedef struct bench_args {
    const char *threads; /* "2" unless given */
    ct_device device;
    char device_name[32];
    const char *ids[BENCH_MAX_IDS]; /* the workloads to run; none given: all */
    int nids;
} bench_args;

static inline bool bench_parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.threads = NULL, .device = ct_device_cpu()};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") || !strcmp(argv[i], "-d")) {
            if (i + 1 >= argc || ct_device_parse(argv[++i], &a->device) != CT_OK) return false;
        } else if (!a->threads && a->nids == 0 && argv[i][0] != 'W') {
            a->threads = argv[i];
        } else if (a->nids < BENCH_MAX_IDS) {
            a->ids[a->nids++] = argv[i];
        } else {
            return false;
        }
    }
    if (!a->threads) a->threads = "2";
    ct_device_format(a->device, a->device_name, sizeof a->device_name);
    return atoi(a->threads) > 0;
}

static inline bool bench_selected(const bench_args *a, const char *id) {
    if (a->nids == 0) return true;
    for (int i = 0; i < a->nids; i++)
        if (strcmp(a->ids[i], id) == 0) return true;
    return false;
}

static inline bool bench_on_host(const bench_args *a) { return a->device.type == CT_DEVICE_CPU; }

/* Device work is queued: wait for it before reading the clock (a no-op on
 * the CPU). */
static inline bool bench_sync(const bench_args *a) {
    return bench_on_host(a) || ct_device_synchronize(a->device) == CT_OK;
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

/* "# device: …" when the workloads run on a device; false when it is
 * not usable (the message is in ct_last_error). */
static inline bool bench_print_device(const bench_args *a) {
    if (bench_on_host(a)) return true;
    ct_device_properties p;
    if (ct_get_device_properties(a->device, &p) != CT_OK) return false;
    printf("# device: %s (%s, %d.%d, %zu MiB); timings wait for the device (synchronize)\n",
           a->device_name, p.name, p.major, p.minor, p.total_memory >> 20);
    return true;
}

#endif /* CTORCH_BENCH_COMMON_H */
