/*
 * pinned_transfer.c — pinned host memory and non_blocking copies; the C
 * version of
 *
 *   x = torch.randn(4096, 1024).pin_memory()
 *   y = x.to(dev, non_blocking=True)   # returns at once; the copy is queued
 *   z = y * 2                          # same stream: runs after the copy
 *   back = z.to("cpu", non_blocking=True)
 *   torch.cuda.synchronize()           # before reading `back` on the host
 *
 * Usage: pinned_transfer [device]   (needs a device backend; on the CPU it says so)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    if (dev.type == CT_DEVICE_CPU) {
        printf("pinned_transfer: no accelerator device; pinned memory needs one (skipping)\n");
        return 0;
    }
    int rc = 0;
    CT_SCOPE {
        ct_tensor *x = ct_pin_memory(ct_randn(CT_SHAPE(4096, 1024)));
        ct_tensor *y = ct_to_device_nb(x, dev, true);
        ct_tensor *z = ct_mul_scalar(y, 2.0);
        ct_tensor *back = ct_to_device_nb(z, ct_device_cpu(), true);
        ct_device_synchronize(dev);
        bool same = false;
        if (ct_allclose(back, ct_mul_scalar(x, 2.0), 0, 0, false, &same) != CT_OK) {
            fprintf(stderr, "%s\n", ct_last_error());
            rc = 1;
        } else {
            printf("x pinned: %s, result pinned: %s, round trip exact: %s\n", ct_is_pinned(x) ? "yes" : "no",
                   ct_is_pinned(back) ? "yes" : "no", same ? "yes" : "no");
            rc = same ? 0 : 1;
        }
    }
    return rc;
}
