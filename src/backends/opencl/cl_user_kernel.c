/*
 * cl_user_kernel.c — users' own kernels on OpenCL (ctorch/extension.h):
 * the backend half of get_proc("kernel_ops").
 *
 * A user kernel takes a tensor as a plain `K_GLOBAL T *` pointing at its
 * first element. OpenCL buffers have no addresses, and ctorch's allocator
 * hands out pieces of larger buffers, so a tensor that does not start at
 * its buffer's start is passed as a sub-buffer beginning at its first byte
 * (OpenCL requires that start to be a multiple of the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN; ctorch's allocations are, views may not
 * be). The sub-buffer is released right after the enqueue: OpenCL keeps it
 * until the commands that use it are done.
 */
#include <stdlib.h>
#include <string.h>

#include "cl_device.h"
#include "cl_internal.h"
#include "core/backend_kernel.h"
#include "core/runtime.h"

typedef struct cl_user_kernel {
    cl_program program;
    cl_kernel kernel;
} cl_user_kernel;

static ct_status cl_user_compile(int dev, const char *source, const char *name, const char *options,
                                 void **out) {
    cl_user_kernel *u = calloc(1, sizeof *u);
    CT_CHECK_STATUS(u != NULL, CT_ERR_OOM, "kernel_compile: out of host memory");
    ct_status st = ct_cl_build_user_program(dev, source, options, &u->program);
    if (st != CT_OK) {
        free(u);
        return st;
    }
    cl_int err = CL_SUCCESS;
    u->kernel = clCreateKernel(u->program, name, &err);
    if (err != CL_SUCCESS) {
        clReleaseProgram(u->program);
        free(u);
        return ct_error_set(err == CL_INVALID_KERNEL_NAME ? CT_ERR_INVALID_ARG : CT_ERR_BACKEND,
                            "kernel_compile: opencl:%d: no kernel named \"%s\" in the source (%s)", dev, name,
                            ct_cl_error_name(err));
    }
    *out = u;
    return CT_OK;
}

static void cl_user_release(int dev, void *kernel) {
    (void)dev;
    cl_user_kernel *u = kernel;
    if (!u) return;
    clReleaseKernel(u->kernel);
    clReleaseProgram(u->program);
    free(u);
}

static int cl_user_num_args(int dev, void *kernel) {
    (void)dev;
    cl_uint n = 0;
    const cl_user_kernel *u = kernel;
    return clGetKernelInfo(u->kernel, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL) == CL_SUCCESS ? (int)n : -1;
}

/* The buffer argument for a tensor's first byte: the buffer itself, or a
 * sub-buffer from that byte (*sub, for the caller to release). */
static ct_status buffer_at(const ct_cl_device *d, int dev, int i, cl_mem buf, size_t offset, cl_mem *arg,
                           cl_mem *sub) {
    *sub = NULL;
    *arg = buf;
    if (offset == 0) return CT_OK;
    cl_uint align_bits = 0;
    size_t size = 0;
    CT_CL_TRY(clGetDeviceInfo(d->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    CT_CL_TRY(clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof size, &size, NULL));
    size_t align = align_bits / 8 ? align_bits / 8 : 1;
    CT_CHECK_STATUS(offset % align == 0, CT_ERR_UNSUPPORTED,
                    "kernel_launch: opencl:%d: argument %d starts %zu bytes into its OpenCL buffer, and OpenCL "
                    "sub-buffers must start on a multiple of %zu bytes (the device's base address alignment): "
                    "pass a copy (ct_clone) of this view, or pass the buffer and offset of ct_tensor_native_buffer",
                    dev, i, offset, align);
    cl_buffer_region region = {offset, size - offset};
    cl_int err = CL_SUCCESS;
    *sub = clCreateSubBuffer(buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (err != CL_SUCCESS)
        return ct_error_set(CT_ERR_BACKEND, "kernel_launch: opencl:%d: clCreateSubBuffer for argument %d failed: %s",
                            dev, i, ct_cl_error_name(err));
    *arg = *sub;
    return CT_OK;
}

static ct_status set_args(const ct_cl_device *d, int dev, cl_kernel k, const ct_kernel_launch_arg *args, int nargs,
                          cl_mem *subs) {
    for (int i = 0; i < nargs; i++) {
        cl_int err;
        if (args[i].is_buffer) {
            cl_mem m;
            CT_TRY(buffer_at(d, dev, i, (cl_mem)args[i].handle, args[i].byte_offset, &m, &subs[i]));
            err = clSetKernelArg(k, (cl_uint)i, sizeof m, &m);
        } else {
            err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        }
        if (err != CL_SUCCESS)
            return ct_error_set(err == CL_INVALID_ARG_SIZE ? CT_ERR_INVALID_ARG : CT_ERR_BACKEND,
                                "kernel_launch: opencl:%d: argument %d: %s%s", dev, i, ct_cl_error_name(err),
                                err == CL_INVALID_ARG_SIZE ? " (its ct_karg kind does not match the parameter's type)"
                                                           : "");
    }
    return CT_OK;
}

static ct_status cl_user_launch(int dev, void *kernel, const ct_kernel_launch_arg *args, int nargs, size_t global,
                                size_t local) {
    const ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    cl_command_queue q = ct_cl_queue(dev);
    if (!q) return ct_last_status();
    cl_user_kernel *u = kernel;
    cl_mem subs[64] = {0};
    ct_status st = set_args(d, dev, u->kernel, args, nargs < 64 ? nargs : 64, subs);
    if (st == CT_OK) {
        size_t g = local ? (global + local - 1) / local * local : global;
        cl_int err = clEnqueueNDRangeKernel(q, u->kernel, 1, NULL, &g, local ? &local : NULL, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = ct_error_set(err == CL_INVALID_WORK_GROUP_SIZE ? CT_ERR_INVALID_ARG : CT_ERR_BACKEND,
                              "kernel_launch: opencl:%d: clEnqueueNDRangeKernel (global %zu, local %zu) failed: %s",
                              dev, g, local, ct_cl_error_name(err));
    }
    for (int i = 0; i < nargs && i < 64; i++)
        if (subs[i]) clReleaseMemObject(subs[i]);
    return st;
}

static ct_status cl_native_device(int dev, ct_native_device *out) {
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    out->cl_platform = d->platform;
    out->cl_device = d->id;
    out->cl_context = d->context;
    return CT_OK;
}

static const ct_backend_kernel g_cl_kernel_ops = {
    .compile = cl_user_compile,
    .release = cl_user_release,
    .launch = cl_user_launch,
    .num_args = cl_user_num_args,
    .address = NULL,
    .native_device = cl_native_device,
};

const struct ct_backend_kernel *ct_cl_kernel_ops(void) { return &g_cl_kernel_ops; }
