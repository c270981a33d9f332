/*
 * device_info.c — which devices ctorch can use; the C version of
 *
 *   torch.cuda.is_available(), torch.cuda.device_count(),
 *   torch.cuda.current_device(), torch.cuda.get_device_name(i),
 *   try_gpu(), try_gpu(10), try_all_gpus()
 *
 * Usage: device_info
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

static void print_devices(const char *label, const ct_device *devs, int n) {
    char name[32];
    printf("%s: [", label);
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? ", " : "", ct_device_format(devs[i], name, sizeof name));
    printf("]\n");
}

int main(void) {
    char name[256], dev_str[32];
    printf("ctorch %s\n", CTORCH_VERSION_STRING);
    ct_device_name(ct_device_cpu(), name, sizeof name);
    printf("cpu: %s\n", name);

    printf("cuda available: %s\n", ct_cuda_is_available() ? "True" : "False");
    printf("cuda device count: %d\n", ct_cuda_device_count());
    if (ct_cuda_is_available()) {
        printf("cuda current device: %d\n", ct_cuda_current_device());
        for (int i = 0; i < ct_cuda_device_count(); i++)
            if (ct_cuda_get_device_name(i, name, sizeof name) == CT_OK)
                printf("  cuda:%d  %s\n", i, name);
    }
    printf("opencl device count: %d\n", ct_device_count(CT_DEVICE_OPENCL));
    for (int i = 0; i < ct_device_count(CT_DEVICE_OPENCL); i++)
        if (ct_device_name(ct_device_opencl(i), name, sizeof name) == CT_OK)
            printf("  opencl:%d  %s\n", i, name);

    ct_device gpu0 = ct_try_gpu(0), gpu10 = ct_try_gpu(10);
    print_devices("try_gpu(), try_gpu(10)", (ct_device[]){gpu0, gpu10}, 2);
    ct_device all[16];
    print_devices("try_all_gpus()", all, ct_try_all_gpus(all, 16));
    printf("best device: %s\n", ct_device_format(ct_best_device(), dev_str, sizeof dev_str));
    return 0;
}
