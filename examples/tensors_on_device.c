/*
 * tensors_on_device.c — create tensors on a device and compute there; the C
 * version of
 *
 *   x = torch.ones(2, 3, device=dev)
 *   y = torch.rand(2, 3, device=dev)
 *   x + y
 *
 * Usage: tensors_on_device [device]   (e.g. cpu, cuda:0, opencl:0; default:
 * the best device available)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

/* The Python line, then what it prints. */
static void show(const char *python, const ct_tensor *t) {
    printf(">>> %s\n", python);
    ct_print(t);
}

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    int rc = 0;
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(2, 3), .device = dev);
        ct_tensor *y = ct_rand(CT_SHAPE(2, 3), .device = dev);
        ct_tensor *z = ct_add(x, y);
        if (!z) {
            fprintf(stderr, "error: %s\n", ct_last_error());
            rc = 1;
        } else {
            char name[32];
            printf("device: %s\n", ct_device_format(ct_device_of(z), name, sizeof name));
            show("x = torch.ones(2, 3, device=dev); x", x);
            show("y = torch.rand(2, 3, device=dev); y", y);
            show("x + y", z);
        }
    }
    return rc;
}
