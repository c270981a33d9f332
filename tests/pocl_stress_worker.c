/*
 * pocl_stress_worker.c — one process of the PoCL stress test
 * (tests/test_pocl_stress.sh; tools/pocl-stress.sh runs it N times).
 *
 * Optionally loads the CUDA math libraries first (--cuda: cuBLAS, then
 * cuDNN, as a training program on a CUDA build does when it asks for their
 * versions), then on each of --devices N OpenCL devices (one thread each,
 * so the programs of opencl:0 and opencl:1 are built at the same time)
 * runs a conv2d (ctorch's im2col kernel and CLBlast's GEMM) and a relu,
 * and returns from main without waiting for the device. PoCL compiles a
 * kernel's work-group function when the kernel first runs, on its own
 * worker thread, so the process exits while PoCL may still be compiling:
 * the pattern that crashed in issue 15 item 4 (docs/devices.md, "PoCL and
 * process exit").
 *
 * Exit status: 0 when every op succeeded, 1 when one failed (the message
 * on stderr), 77 when there is no OpenCL device. A crash is a signal.
 */
#include <ctorch/ctorch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_done; /* what a successful run_on returns */

static void *run_on(void *arg) {
    int dev = (int)(size_t)arg;
    ct_device d = ct_device_opencl(dev);
    int ok = 0;
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(8, 3, 32, 32), .device = d);
        ct_tensor *w = ct_randn(CT_SHAPE(16, 3, 3, 3), .device = d);
        ct_tensor *y = x && w ? ct_relu(ct_conv2d(x, w, NULL)) : NULL;
        ok = y != NULL;
        if (!ok) fprintf(stderr, "pocl_stress_worker: opencl:%d: %s\n", dev, ct_last_error());
    }
    return ok ? &g_done : NULL;
}

int main(int argc, char **argv) {
    int ndev = 1;
    int cuda = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cuda") == 0) {
            cuda = 1;
        } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
            ndev = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: pocl_stress_worker [--cuda] [--devices N]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed survives a crash */
    int have = ct_device_count(CT_DEVICE_OPENCL);
    if (have < 1) {
        fprintf(stderr, "pocl_stress_worker: no OpenCL device\n");
        return 77;
    }
    if (ndev < 1) ndev = 1;
    if (ndev > have) ndev = have;
    if (ndev > 8) ndev = 8;
    /* Asked first, so the CUDA libraries are in the process before PoCL and
     * LLVM are (0 on a build without CUDA or without the libraries). */
    if (cuda) printf("cublas %d cudnn %d\n", ct_backends_cublas_version(), ct_backends_cudnn_version());

    pthread_t threads[8];
    int started = 0, failed = 0;
    for (int i = 1; i < ndev; i++) {
        if (pthread_create(&threads[started], NULL, run_on, (void *)(size_t)i) == 0) {
            started++;
        } else {
            fprintf(stderr, "pocl_stress_worker: cannot start a thread\n");
            failed = 1;
        }
    }
    if (!run_on((void *)(size_t)0)) failed = 1;
    for (int i = 0; i < started; i++) {
        void *res = NULL;
        pthread_join(threads[i], &res);
        if (!res) failed = 1;
    }
    printf("%s\n", failed ? "failed" : "ok");
    return failed;
}
