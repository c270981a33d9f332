/*
 * cuda_driver.c — asks the NVIDIA driver itself (libcuda.so.1, opened with
 * dlopen) for its version, whether it initialises and how many devices it
 * sees. This is what turns "0 CUDA devices" into a reason a user can act
 * on: no driver installed, a driver without devices, devices hidden by
 * CUDA_VISIBLE_DEVICES, or a driver too old for the runtime.
 *
 * Only the soname libcuda.so.1 is tried: the toolkit's stubs/libcuda.so is a
 * link-time placeholder that must never be loaded at run time.
 */
#include <dlfcn.h>
#include <string.h>

#include "info.h"

/* The driver API's types, declared here so that no CUDA header is needed:
 * CUresult is an enum (int), CUdevice an int. */
typedef int cu_result;
typedef cu_result (*cu_init_fn)(unsigned flags);
typedef cu_result (*cu_driver_get_version_fn)(int *version);
typedef cu_result (*cu_device_get_count_fn)(int *count);
typedef cu_result (*cu_device_get_fn)(int *device, int ordinal);
typedef cu_result (*cu_device_get_pci_bus_id_fn)(char *bus_id, int len, int device);
typedef cu_result (*cu_get_error_fn)(cu_result err, const char **str);

static void *g_libcuda;
static bool g_initialised;

/* "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" */
static void describe_error(cu_result err, char *out, size_t size) {
    cu_get_error_fn name_fn = (cu_get_error_fn)dlsym(g_libcuda, "cuGetErrorName");
    cu_get_error_fn string_fn = (cu_get_error_fn)dlsym(g_libcuda, "cuGetErrorString");
    const char *name = NULL, *text = NULL;
    if (name_fn && name_fn(err, &name) != 0) name = NULL;
    if (string_fn && string_fn(err, &text) != 0) text = NULL;
    snprintf(out, size, "%s (%d)%s%s", name ? name : "CUresult", err, text ? ": " : "", text ? text : "");
}

/* The kernel module's version ("535.104.05"), what nvidia-smi calls the
 * driver version; cuDriverGetVersion gives the CUDA version it supports. */
static void kernel_module_version(char *out, size_t size) {
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug …" */
        const char *p = strstr(line, "Kernel Module");
        char version[64];
        if (p && sscanf(p + strlen("Kernel Module"), " %63s", version) == 1)
            snprintf(out, size, "NVIDIA kernel module %s", version);
    }
    fclose(f);
}

void info_probe_cuda_driver(info_cuda_driver *d) {
    static const char *const names[] = {"libcuda.so.1", NULL};
    d->lib.key = "cuda_driver";
    d->lib.label = "CUDA driver";
    d->init_status = -1;
    d->device_count = 0;
    g_libcuda = info_dlopen_first(names, d->lib.detail, sizeof d->lib.detail);
    if (!g_libcuda) return;
    d->lib.found = true;
    kernel_module_version(d->lib.detail, sizeof d->lib.detail);

    cu_driver_get_version_fn get_version = (cu_driver_get_version_fn)dlsym(g_libcuda, "cuDriverGetVersion");
    int v = 0;
    if (get_version && get_version(&v) == 0 && v > 0)
        snprintf(d->lib.version, sizeof d->lib.version, "%d.%d", v / 1000, (v % 1000) / 10);
    info_record_path(&d->lib, (void *)get_version);

    cu_init_fn init = (cu_init_fn)dlsym(g_libcuda, "cuInit");
    cu_device_get_count_fn get_count = (cu_device_get_count_fn)dlsym(g_libcuda, "cuDeviceGetCount");
    if (!init || !get_count) {
        info_copy(d->init_error, sizeof d->init_error, "libcuda.so.1 lacks cuInit/cuDeviceGetCount");
        return;
    }
    d->init_status = init(0);
    if (d->init_status != 0) {
        describe_error(d->init_status, d->init_error, sizeof d->init_error);
        return;
    }
    g_initialised = true;
    cu_result r = get_count(&d->device_count);
    if (r != 0) {
        d->device_count = 0;
        describe_error(r, d->init_error, sizeof d->init_error);
    }
}

bool info_cuda_pci_bus_id(int ordinal, char *buf, size_t size) {
    if (!g_initialised || size < 2) return false;
    cu_device_get_fn get = (cu_device_get_fn)dlsym(g_libcuda, "cuDeviceGet");
    cu_device_get_pci_bus_id_fn bus = (cu_device_get_pci_bus_id_fn)dlsym(g_libcuda, "cuDeviceGetPCIBusId");
    int dev = 0;
    if (!get || !bus || get(&dev, ordinal) != 0) return false;
    int len = size > 64 ? 64 : (int)size;
    if (bus(buf, len, dev) != 0) return false;
    buf[size - 1] = '\0';
    return true;
}
