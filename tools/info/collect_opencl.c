/*
 * collect_opencl.c — the OpenCL platforms and devices the ICD loader
 * (libOpenCL.so.1, opened with dlopen) reports, independently of ctorch's
 * OpenCL backend: a platform listed here but missing from ctorch's device
 * table points at ctorch's build or device filter, one missing here at the
 * driver installation.
 *
 * The few OpenCL types and constants needed are declared here (values from
 * the Khronos cl.h), so the tool builds without OpenCL headers.
 */
#include <dlfcn.h>
#include <string.h>

#include "info.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef void *cl_platform_id;
typedef void *cl_device_id;

enum {
    CL_PLATFORM_VERSION_ = 0x0901,
    CL_PLATFORM_NAME_ = 0x0902,
    CL_PLATFORM_VENDOR_ = 0x0903,
    CL_DEVICE_TYPE_ = 0x1000,
    CL_DEVICE_MAX_COMPUTE_UNITS_ = 0x1002,
    CL_DEVICE_GLOBAL_MEM_SIZE_ = 0x101F,
    CL_DEVICE_NAME_ = 0x102B,
    CL_DRIVER_VERSION_ = 0x102D,
    CL_DEVICE_VERSION_ = 0x102F
};
#define CL_DEVICE_TYPE_CPU_ ((cl_ulong)1 << 1)
#define CL_DEVICE_TYPE_GPU_ ((cl_ulong)1 << 2)
#define CL_DEVICE_TYPE_ACCELERATOR_ ((cl_ulong)1 << 3)
#define CL_DEVICE_TYPE_ALL_ ((cl_ulong)0xFFFFFFFF)
#define CL_PLATFORM_NOT_FOUND_KHR_ (-1001)

typedef cl_int (*get_platform_ids_fn)(cl_uint n, cl_platform_id *platforms, cl_uint *count);
typedef cl_int (*get_platform_info_fn)(cl_platform_id p, cl_uint param, size_t size, void *value, size_t *ret);
typedef cl_int (*get_device_ids_fn)(cl_platform_id p, cl_ulong type, cl_uint n, cl_device_id *devices,
                                    cl_uint *count);
typedef cl_int (*get_device_info_fn)(cl_device_id d, cl_uint param, size_t size, void *value, size_t *ret);

typedef struct cl_api {
    get_platform_ids_fn platform_ids;
    get_platform_info_fn platform_info;
    get_device_ids_fn device_ids;
    get_device_info_fn device_info;
} cl_api;

static void platform_string(const cl_api *api, cl_platform_id p, cl_uint param, char *out, size_t size) {
    out[0] = '\0';
    if (api->platform_info(p, param, size - 1, out, NULL) != 0) out[0] = '\0';
    out[size - 1] = '\0';
    info_trim(out);
}

static void device_string(const cl_api *api, cl_device_id d, cl_uint param, char *out, size_t size) {
    out[0] = '\0';
    if (api->device_info(d, param, size - 1, out, NULL) != 0) out[0] = '\0';
    out[size - 1] = '\0';
    info_trim(out);
}

static const char *device_type_name(cl_ulong type) {
    if (type & CL_DEVICE_TYPE_GPU_) return "gpu";
    if (type & CL_DEVICE_TYPE_CPU_) return "cpu";
    if (type & CL_DEVICE_TYPE_ACCELERATOR_) return "accelerator";
    return "other";
}

static void list_devices(const cl_api *api, cl_platform_id p, info_cl_platform *out) {
    cl_device_id ids[INFO_MAX_CL_DEVICES];
    cl_uint count = 0;
    if (api->device_ids(p, CL_DEVICE_TYPE_ALL_, INFO_MAX_CL_DEVICES, ids, &count) != 0) count = 0;
    out->num_devices = (int)count;
    out->num_listed = count < INFO_MAX_CL_DEVICES ? (int)count : INFO_MAX_CL_DEVICES;
    for (int i = 0; i < out->num_listed; i++) {
        info_cl_device *d = &out->devices[i];
        cl_ulong type = 0, mem = 0;
        cl_uint units = 0;
        device_string(api, ids[i], CL_DEVICE_NAME_, d->name, sizeof d->name);
        device_string(api, ids[i], CL_DEVICE_VERSION_, d->version, sizeof d->version);
        device_string(api, ids[i], CL_DRIVER_VERSION_, d->driver, sizeof d->driver);
        if (api->device_info(ids[i], CL_DEVICE_TYPE_, sizeof type, &type, NULL) != 0) type = 0;
        if (api->device_info(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE_, sizeof mem, &mem, NULL) != 0) mem = 0;
        if (api->device_info(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS_, sizeof units, &units, NULL) != 0) units = 0;
        d->type = device_type_name(type);
        d->global_mem = mem;
        d->compute_units = units;
    }
}

void info_probe_opencl(info_opencl *cl) {
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
    cl->lib.key = "opencl";
    cl->lib.label = "OpenCL";
    void *h = info_dlopen_first(names, cl->lib.detail, sizeof cl->lib.detail);
    if (!h) return;
    cl->lib.found = true;
    cl_api api = {
        .platform_ids = (get_platform_ids_fn)dlsym(h, "clGetPlatformIDs"),
        .platform_info = (get_platform_info_fn)dlsym(h, "clGetPlatformInfo"),
        .device_ids = (get_device_ids_fn)dlsym(h, "clGetDeviceIDs"),
        .device_info = (get_device_info_fn)dlsym(h, "clGetDeviceInfo"),
    };
    info_record_path(&cl->lib, (void *)api.platform_ids);
    if (!api.platform_ids || !api.platform_info || !api.device_ids || !api.device_info) {
        info_copy(cl->lib.detail, sizeof cl->lib.detail, "the OpenCL library lacks the platform/device queries");
        return;
    }
    cl_platform_id ids[INFO_MAX_CL_PLATFORMS];
    cl_uint count = 0;
    cl_int err = api.platform_ids(INFO_MAX_CL_PLATFORMS, ids, &count);
    if (err == CL_PLATFORM_NOT_FOUND_KHR_ || (err == 0 && count == 0)) {
        info_copy(cl->lib.detail, sizeof cl->lib.detail, "ICD loader found, but no OpenCL driver is installed");
        return;
    }
    if (err != 0) {
        snprintf(cl->lib.detail, sizeof cl->lib.detail, "clGetPlatformIDs failed with error %d", (int)err);
        return;
    }
    cl->num_platforms = count < INFO_MAX_CL_PLATFORMS ? (int)count : INFO_MAX_CL_PLATFORMS;
    for (int i = 0; i < cl->num_platforms; i++) {
        info_cl_platform *p = &cl->platforms[i];
        platform_string(&api, ids[i], CL_PLATFORM_NAME_, p->name, sizeof p->name);
        platform_string(&api, ids[i], CL_PLATFORM_VENDOR_, p->vendor, sizeof p->vendor);
        platform_string(&api, ids[i], CL_PLATFORM_VERSION_, p->version, sizeof p->version);
        list_devices(&api, ids[i], p);
    }
    /* The ICD loader has no version of its own: each platform's version
     * ("OpenCL 3.0 PoCL 3.1 …") is what matters, and is listed. */
}
