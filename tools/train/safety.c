/*
 * safety.c — the trainer's defences against the ways a long run ends badly:
 * signals (the first Ctrl-C or SIGTERM stops cleanly after the batch; the
 * second one ends the process at once, since a stuck computation may never
 * see the flag), a file-size limit (SIGXFSZ would kill without a word; the
 * write then fails with EFBIG and is reported), an address-space limit too
 * small for the CPU BLAS (OpenBLAS 0.3.21 retries a failed buffer allocation
 * forever instead of failing), and named crash points through which the
 * crash-safety tests kill the process at exact moments of a save.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "train.h"

static volatile sig_atomic_t *g_flag;

static void on_stop_signal(int sig) {
    (void)sig;
    *g_flag = 1;
}

void install_signal_handlers(volatile sig_atomic_t *flag) {
    g_flag = flag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* the second signal takes the default action: the process ends */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN); /* past `ulimit -f`, write() fails with EFBIG instead */
}

/* CT_TRAIN_CRASH_AT=NAME or NAME@K: SIGKILL the K-th time (default the first)
 * the save reaches point NAME. A testing hook: tests/test_train_crash.sh. */
void crash_point(const char *name) {
    static int hits[16];
    static const char *names[16];
    const char *want = getenv("CT_TRAIN_CRASH_AT");
    if (!want) return;
    size_t len = strcspn(want, "@");
    if (strlen(name) != len || strncmp(want, name, len) != 0) return;
    int slot = 0;
    while (slot < 15 && names[slot] && strcmp(names[slot], name) != 0) slot++;
    names[slot] = name;
    long k = want[len] == '@' ? strtol(want + len + 1, NULL, 10) : 1;
    if (++hits[slot] == k) raise(SIGKILL);
}

/* Virtual memory in use, in bytes (0 if unknown). */
static uint64_t address_space_used(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* OpenBLAS 0.3.21 (x86-64) takes a 128 MiB buffer (BUFFER_SIZE, 32 << 22)
 * per thread that calls it, and glibc reserves a 64 MiB malloc arena per
 * thread; both count against `ulimit -v` though little of them is touched. */
#define BLAS_BUFFER_BYTES ((uint64_t)129 << 20)
#define ARENA_BYTES ((uint64_t)64 << 20)
#define HEADROOM_MARGIN ((uint64_t)96 << 20)

int check_memory_headroom(bool cpu_blas, int compute_threads, int loader_threads) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
    uint64_t used = address_space_used(), limit = rl.rlim_cur;
    uint64_t need = HEADROOM_MARGIN + (uint64_t)(compute_threads + loader_threads) * ARENA_BYTES;
    if (cpu_blas) need += (uint64_t)compute_threads * BLAS_BUFFER_BYTES;
    if (used + need <= limit) return -1;
    fprintf(stderr,
            "ctorch-train: out of memory: the address-space limit (ulimit -v) is %llu MiB, %llu MiB of it is in "
            "use, and training with %d compute and %d loader threads needs about %llu MiB more%s; raise the "
            "limit, or use fewer --threads / --workers\n",
            (unsigned long long)(limit >> 20), (unsigned long long)(used >> 20), compute_threads, loader_threads,
            (unsigned long long)(need >> 20), cpu_blas ? " (OpenBLAS alone takes 128 MiB per thread)" : "");
    return TRAIN_EXIT_OOM;
}
