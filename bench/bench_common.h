/*
 * bench_common.h — what bench_ops.c and bench_train.c share: a monotonic
 * clock, medians, the restart that fixes the thread counts before OpenMP and
 * OpenBLAS load, the name of the OpenBLAS core in use (OpenBLAS can
 * mis-detect a virtual CPU, e.g. as "Prescott", which changes GEMM speed
 * several-fold, so every report names it), and the bfloat16 rules both
 * programs and bench/torch_workloads.py follow (bench_bf16_max_n: the
 * largest W2-bf16 size worth timing on this CPU).
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
#include <stdint.h>
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

/* Whether /proc/cpuinfo lists CPU flag `flag` (a whole word of a "flags"
 * line), e.g. "avx512_bf16" or "amx_bf16". */
static inline bool bench_cpu_has_flag(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool found = false;
    size_t n = strlen(flag);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        for (const char *p = strstr(line, flag); p && !found; p = strstr(p + 1, flag))
            found = (p == line || p[-1] == ' ' || p[-1] == '\t') &&
                    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
        break; /* every CPU lists the same flags */
    }
    fclose(f);
    return found;
}

/* The largest W2-bf16 size (bench_ops.c and torch_workloads.py use the same
 * rule): 4096 on a device or on a CPU with bfloat16 instructions
 * (avx512_bf16 or amx_bf16), else 2048, since without them PyTorch's
 * bfloat16 matmul runs at about 1 GFLOP/s (a 4096 product took minutes on an
 * AVX2-only host). CT_BENCH_BF16_MAX_N (e.g. 1024) lowers it for quick
 * checks. */
static inline int64_t bench_bf16_max_n(bool on_host) {
    int64_t n = !on_host || bench_cpu_has_flag("avx512_bf16") || bench_cpu_has_flag("amx_bf16") ? 4096 : 2048;
    const char *env = getenv("CT_BENCH_BF16_MAX_N");
    if (env && atoll(env) > 0 && atoll(env) < n) n = atoll(env);
    return n;
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

/* Whether workload id was named on the command line. */
static inline bool bench_named(const bench_args *a, const char *id) {
    for (int i = 0; i < a->nids; i++)
        if (strcmp(a->ids[i], id) == 0) return true;
    return false;
}

/* Whether to run one of the reference workloads W0–W6: named, or none named. */
static inline bool bench_selected(const bench_args *a, const char *id) {
    return a->nids == 0 || bench_named(a, id);
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
