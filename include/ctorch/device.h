/*
 * ctorch/device.h — devices and the backend registry, as torch.device and
 * torch.cuda's device queries.
 *
 * A ct_device is a plain value (type, index). Index -1 means "the current
 * device of that type" and is resolved when a tensor is created. The zero
 * value {CT_DEVICE_CPU, 0} is the CPU, so zero-initialised options mean CPU.
 *
 * Backends (cpu always; cuda and opencl when compiled in) register
 * themselves; asking for a device type whose backend is absent gives
 * CT_ERR_DEVICE with "ctorch was not compiled with CUDA enabled" and a bad
 * ordinal names the ordinals that exist.
 */
#ifndef CTORCH_DEVICE_H
#define CTORCH_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_device_type {
    CT_DEVICE_CPU = 0,
    CT_DEVICE_CUDA = 1,
    CT_DEVICE_OPENCL = 2
} ct_device_type;

#define CT_NUM_DEVICE_TYPES 3

typedef struct ct_device {
    ct_device_type type;
    int index; /* -1: the current device of this type */
} ct_device;

/* Constructors, for readable code: ct_device_cuda(1) is "cuda:1". */
static inline ct_device ct_device_cpu(void) { ct_device d = {CT_DEVICE_CPU, 0}; return d; }
static inline ct_device ct_device_cuda(int index) { ct_device d = {CT_DEVICE_CUDA, index}; return d; }
static inline ct_device ct_device_opencl(int index) { ct_device d = {CT_DEVICE_OPENCL, index}; return d; }

/* Parse "cpu", "cuda", "cuda:1", "opencl:0" (torch.device rules: lowercase
 * type, optional ":N" with no leading zeros). Parsing checks syntax only;
 * whether the device exists is checked when it is used. */
CT_API ct_status ct_device_parse(const char *str, ct_device *out);

/* Format as torch does: "cpu", "cuda" (index -1), "cuda:1". Writes at most
 * size bytes including the terminator; returns buf. */
CT_API char *ct_device_format(ct_device dev, char *buf, size_t size);

/* Name of a device type: "cpu", "cuda", "opencl". */
CT_API const char *ct_device_type_name(ct_device_type type);

CT_API bool ct_device_equal(ct_device a, ct_device b);

/* Is the backend for this device type compiled in and does it have at least
 * one device? The CPU always is. */
CT_API bool ct_device_type_available(ct_device_type type);
/* Number of devices of a type (0 if the backend is absent; 1 for cpu). */
CT_API int ct_device_count(ct_device_type type);
/* Resolve index -1 to the current device and check the ordinal exists.
 * Errors: CT_ERR_DEVICE naming the valid ordinals or the missing backend;
 * any other negative index is refused ("Device index must be -1 or
 * non-negative, got -5"), and a CPU index other than -1 and 0. */
CT_API ct_status ct_device_check(ct_device dev, ct_device *resolved);
/* Human-readable device name ("cpu", "NVIDIA H100 80GB HBM3", "pthread-…"). */
CT_API ct_status ct_device_name(ct_device dev, char *buf, size_t size);

/* torch.cuda.get_device_properties: what a device is. For OpenCL devices
 * major.minor is the OpenCL version and multi_processor_count the compute
 * units; is_host is true for devices that run on the host CPU (the cpu
 * device, PoCL and other CPU OpenCL drivers). */
typedef struct ct_device_properties {
    char name[256];
    size_t total_memory;        /* bytes                                     */
    int major, minor;           /* CUDA compute capability / OpenCL version  */
    int multi_processor_count;  /* SMs / compute units / cores               */
    bool is_host;
} ct_device_properties;
CT_API ct_status ct_get_device_properties(ct_device dev, ct_device_properties *out);

/* Per-thread current device of a type (torch.cuda.set_device /
 * current_device); 0 at start. current_device on a type with no devices
 * (or an invalid type) returns -1 and sets CT_ERR_DEVICE, as PyTorch
 * raises. */
CT_API ct_status ct_set_device(ct_device dev);
CT_API int ct_current_device(ct_device_type type);

/* torch.cuda conveniences. */
CT_API bool ct_cuda_is_available(void);
CT_API int ct_cuda_device_count(void);
CT_API int ct_cuda_current_device(void);
CT_API ct_status ct_cuda_set_device(int index);
CT_API ct_status ct_cuda_get_device_name(int index, char *buf, size_t size);

/* d2l's helpers: cuda:i if it exists, else cpu; and every CUDA device, or
 * [cpu] if there is none. ct_try_all_gpus writes up to max devices and
 * returns how many it wrote (0 and CT_ERR_INVALID_ARG for a NULL out or a
 * negative max). */
CT_API ct_device ct_try_gpu(int i);
CT_API int ct_try_all_gpus(ct_device *out, int max);

/* The best accelerator available: cuda:0, else opencl:0, else cpu. */
CT_API ct_device ct_best_device(void);

/* Wait for all work queued on a device (torch.cuda.synchronize). */
CT_API ct_status ct_device_synchronize(ct_device dev);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_DEVICE_H */
