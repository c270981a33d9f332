/*
 * cl_ops.c — the OpenCL backend's table for the shared GPU host layer
 * (src/backends/gpu/): kernel launches by name under the kernel lock, the
 * device questions (fp64, work-group sizes, CPU or not), and contiguous
 * copies and fills with the runtime's own commands. Every op runs through
 * it; no op's host logic lives here.
 */
#include <stdatomic.h>
#include <string.h>

#include "cl_ops.h"
#include "core/internal.h"

/* ---- launch helpers ----------------------------------------------------------- */

/* Look up kernel `name` of device dev, set its arguments and enqueue it on
 * the current stream, all under the kernel lock (kernel objects are shared,
 * so two threads must never interleave clSetKernelArg calls). local == 0: a
 * 1-D launch of `global` work items (ct_cl_launch_1d); else exactly
 * global/local. */
static ct_status launch_by_name(int dev, const char *name, const ct_gpu_arg *args, int nargs, size_t global,
                                size_t local) {
    cl_kernel k;
    CT_TRY(ct_cl_kernel(dev, name, &k));
    ct_cl_kernel_lock(dev);
    ct_status st = CT_OK;
    for (int i = 0; i < nargs && st == CT_OK; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS)
            st = ct_error_set(CT_ERR_BACKEND,
                              "OpenCL error %s (%d) setting argument %d of kernel %s",
                              ct_cl_error_name(err), (int)err, i, name);
    }
    if (st == CT_OK)
        st = local ? ct_cl_launch(dev, k, global, local) : ct_cl_launch_1d(dev, k, global);
    ct_cl_kernel_unlock(dev);
    return st;
}

#define FP64_CACHE 64
static atomic_int g_fp64[FP64_CACHE]; /* 0 unknown, 1 no, 2 yes */

bool ct_clops_has_fp64(int dev) {
    if (dev >= 0 && dev < FP64_CACHE && atomic_load(&g_fp64[dev]))
        return atomic_load(&g_fp64[dev]) == 2;
    cl_device_fp_config cfg = 0;
    if (clGetDeviceInfo(ct_cl_device_id(dev), CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) !=
        CL_SUCCESS)
        cfg = 0;
    if (dev >= 0 && dev < FP64_CACHE)
        atomic_store(&g_fp64[dev], cfg ? 2 : 1);
    return cfg != 0;
}

/* ---- the table of the shared GPU host layer --------------------------------- */

static ct_status gpu_launch(int dev, ct_kernel_id k, const ct_gpu_arg *args, int nargs, size_t global,
                            size_t local) {
    return launch_by_name(dev, ct_gpu_kernel_name(k), args, nargs, global, local);
}

static ct_status gpu_max_group_size(int dev, ct_kernel_id id, size_t *out) {
    cl_kernel k;
    CT_TRY(ct_cl_kernel(dev, ct_gpu_kernel_name(id), &k));
    CT_CL_TRY(clGetKernelWorkGroupInfo(k, ct_cl_device_id(dev), CL_KERNEL_WORK_GROUP_SIZE, sizeof *out, out,
                                       NULL));
    return CT_OK;
}

static ct_status gpu_copy_bytes(int dev, void *dst, size_t dst_offset, void *src, size_t src_offset,
                                size_t nbytes) {
    cl_command_queue q = ct_cl_queue(dev);
    if (!q) return ct_last_status();
    CT_CL_TRY(clEnqueueCopyBuffer(q, (cl_mem)src, (cl_mem)dst, src_offset, dst_offset, nbytes, 0, NULL, NULL));
    return CT_OK;
}

/* clEnqueueFillBuffer takes any power-of-two pattern up to 128 bytes. */
static ct_status gpu_fill_bytes(int dev, void *buf, size_t offset, const void *pattern, size_t pattern_size,
                                size_t nbytes, bool *done) {
    cl_command_queue q = ct_cl_queue(dev);
    if (!q) return ct_last_status();
    CT_CL_TRY(clEnqueueFillBuffer(q, (cl_mem)buf, pattern, pattern_size, offset, nbytes, 0, NULL, NULL));
    *done = true;
    return CT_OK;
}

/* Cached per device: PoCL's CPU devices take the row kernels (gpu_reduce.c). */
static bool gpu_is_cpu(int dev) {
    static atomic_int cache[64]; /* 0 unknown, 1 cpu, 2 other */
    if (dev < 0 || dev >= 64) return false;
    if (!atomic_load(&cache[dev])) {
        cl_device_type type = 0;
        clGetDeviceInfo(ct_cl_device_id(dev), CL_DEVICE_TYPE, sizeof type, &type, NULL);
        atomic_store(&cache[dev], (type & CL_DEVICE_TYPE_CPU) ? 1 : 2);
    }
    return atomic_load(&cache[dev]) == 1;
}

const ct_gpu_device ct_cl_gpu = {
    .launch = gpu_launch,
    .max_group_size = gpu_max_group_size,
    .has_fp64 = ct_clops_has_fp64,
    .is_cpu = gpu_is_cpu,
    .copy_bytes = gpu_copy_bytes,
    .fill_bytes = gpu_fill_bytes,
};
