/*
 * cuda_testutil.h — holding a CUDA stream for the runtime tests: work
 * enqueued on a held stream cannot start until the test releases it, which
 * makes "still running" deterministic (the OpenCL tests do the same with a
 * user event).
 *
 * The hold is a one-thread kernel that spins until a flag in mapped pinned
 * host memory is set (tests/cuda_testutil.cu). It is not a host function
 * (cudaLaunchHostFunc) that waits: CUDA may serialise host functions with
 * the work of other streams, so a blocked one stalled every stream of the
 * device on an H100 and the tests that expect another stream to finish
 * meanwhile hung.
 *
 * While a stream is held the test must not wait for it (synchronize, a
 * blocking copy on it, cudaFree, which waits for the whole device).
 */
#ifndef CT_TEST_CUDA_TESTUTIL_H
#define CT_TEST_CUDA_TESTUTIL_H

#include <stddef.h>
#include <stdlib.h>

#include "core/runtime.h"
#include "testutil.h"

typedef struct ct_cu_gate ct_cu_gate;

/* Call first in main, before anything touches CUDA. By default (CUDA 12+)
 * the driver loads a kernel on its first launch, and loading may wait for
 * the whole context, so the first launch of a kernel behind a held stream
 * (or on another stream while one is held) would wait for the spinning
 * kernel forever: the CUDA guide's "Lazy Loading" names this deadlock.
 * Eager loading loads every kernel when the context is created. */
static inline void ct_cu_load_kernels_eagerly(void) { setenv("CUDA_MODULE_LOADING", "EAGER", 1); }


/* In cuda_testutil.cu (nvcc): queue the spinning kernel on a cudaStream_t.
 * NULL, with the reason in err, when it cannot. */
ct_cu_gate *ct_cu_hold_stream(void *cuda_stream, char *err, size_t err_size);

/* Release the held stream. Each gate is used once (a process has 256). */
void ct_cu_gate_open(ct_cu_gate *g);

/* Hold stream s (a ct_stream of a CUDA device) until ct_cu_gate_open. */
static inline ct_cu_gate *ct_cu_hold(ct_stream *s) {
    char why[256] = "";
    ct_cu_gate *g = ct_cu_hold_stream(s->handle, why, sizeof why);
    CT_EXPECT_MSG(g != NULL, "could not hold the stream: %s", why);
    return g;
}

#endif /* CT_TEST_CUDA_TESTUTIL_H */
