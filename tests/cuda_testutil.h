/*
 * cuda_testutil.h — holding a CUDA stream for the runtime tests: work
 * enqueued on a held stream cannot start until the test releases it, which
 * makes "still running" deterministic (the OpenCL tests do the same with a
 * user event). The hold is a host function (cudaLaunchHostFunc) that waits
 * for a flag; it makes no CUDA call, as host functions must not.
 *
 * While a stream is held the test must not wait for it (synchronize, a
 * blocking copy on it, cudaFree, which waits for the whole device).
 * Includers define _POSIX_C_SOURCE (nanosleep) before any include.
 */
#ifndef CT_TEST_CUDA_TESTUTIL_H
#define CT_TEST_CUDA_TESTUTIL_H

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/runtime.h"
#include "testutil.h"

typedef struct ct_cu_gate {
    atomic_int open;
} ct_cu_gate;

/* Runs on CUDA's callback thread: waits for the gate, then frees it. */
static inline void CUDART_CB ct_cu_gate_wait(void *arg) {
    ct_cu_gate *g = (ct_cu_gate *)arg;
    while (!atomic_load(&g->open)) {
        struct timespec nap = {0, 50 * 1000};
        nanosleep(&nap, NULL);
    }
    free(g);
}

/* Hold stream s (a ct_stream of a CUDA device) until ct_cu_gate_open. */
static inline ct_cu_gate *ct_cu_hold(ct_stream *s) {
    ct_cu_gate *g = (ct_cu_gate *)calloc(1, sizeof *g);
    cudaError_t err = cudaLaunchHostFunc((cudaStream_t)s->handle, ct_cu_gate_wait, g);
    CT_EXPECT_MSG(err == cudaSuccess, "could not hold the stream: %s", cudaGetErrorString(err));
    if (err != cudaSuccess) {
        free(g);
        return NULL;
    }
    return g;
}

static inline void ct_cu_gate_open(ct_cu_gate *g) {
    if (g) atomic_store(&g->open, 1); /* the host function frees it */
}

#endif /* CT_TEST_CUDA_TESTUTIL_H */
