/*
 * matmul_big.c — one big matrix product on a device, timed; the C version of
 *
 *   a = torch.rand(10000, 10000, device=dev)
 *   b = torch.rand(10000, 10000, device=dev)
 *   start = time.time(); c = a @ b; torch.cuda.synchronize()
 *   print(time.time() - start, c[0][0])
 *
 * Usage: matmul_big [n] [device]   (default: n = 10000, the best device)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ctorch/ctorch.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
    ct_device dev = ct_best_device();
    if (n <= 0 || (argc > 2 && ct_device_parse(argv[2], &dev) != CT_OK)) {
        fprintf(stderr, "usage: %s [n > 0] [device]\n", argv[0]);
        if (ct_last_status() != CT_OK) fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    char name[32];
    ct_device_format(dev, name, sizeof name);
    int rc = 0;
    CT_SCOPE {
        ct_tensor *a = ct_rand(CT_SHAPE(n, n), .device = dev);
        ct_tensor *b = ct_rand(CT_SHAPE(n, n), .device = dev);
        ct_device_synchronize(dev);
        double start = now_seconds();
        ct_tensor *c = ct_matmul(a, b);
        ct_device_synchronize(dev);
        double seconds = now_seconds() - start;
        if (!c) {
            fprintf(stderr, "error: %s\n", ct_last_error());
            rc = 1;
        } else {
            double flops = 2.0 * (double)n * (double)n * (double)n;
            printf("%ldx%ld matmul on %s: %.3f s, %.1f GFLOP/s, c[0][0] = %.4f\n", n, n, name,
                   seconds, flops / seconds / 1e9, ct_get(c, (int64_t[]){0, 0}));
        }
    }
    return rc;
}
