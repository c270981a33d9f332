/*
 * move_between_devices.c — move tensors between the CPU and a device; the C
 * version of
 *
 *   x = torch.ones(2, 3)
 *   x_dev = x.to(dev)          # copy to the device
 *   y = x_dev * 2 + 1          # computed on the device
 *   y_cpu = y.cpu()            # and back
 *   x + x_dev                  # RuntimeError: Expected all tensors to be on
 *                              # the same device ...
 *
 * Usage: move_between_devices [device]   (default: the best device)
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
    char name[32];
    ct_device_format(dev, name, sizeof name);
    int rc = 0;
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(2, 3));
        ct_tensor *x_dev = ct_to_device(x, dev);
        ct_tensor *y = ct_add_scalar(ct_mul_scalar(x_dev, 2), 1);
        ct_tensor *y_cpu = ct_cpu(y);
        if (!y_cpu) {
            fprintf(stderr, "error: %s\n", ct_last_error());
            rc = 1;
        } else {
            printf("device: %s\n", name);
            show("x_dev = x.to(dev); x_dev", x_dev);
            show("y = x_dev * 2 + 1; y", y);
            show("y.cpu()", y_cpu);

            if (dev.type == CT_DEVICE_CPU) {
                printf("only the cpu is in use: skipping the mixed-device error\n");
            } else if (ct_add(x, x_dev) == NULL) {
                printf(">>> x + x_dev\n%s: %s\n", ct_status_str(ct_last_status()), ct_last_error());
                ct_clear_error();
            } else {
                fprintf(stderr, "error: x + x_dev should have failed\n");
                rc = 1;
            }
        }
    }
    return rc;
}
