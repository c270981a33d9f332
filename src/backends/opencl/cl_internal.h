/*
 * cl_internal.h — what the OpenCL backend's files share (internal): device
 * state, kernel lookup and launching, and error checking.
 *
 * Memory handles are cl_mem buffers; a ct_kview's `data` is the cl_mem and
 * its `offset` counts elements from the start of that buffer (the caching
 * allocator hands out pieces of larger buffers, so offsets are common).
 * Kernels therefore always receive (buffer, element offset), never a device
 * address. Every op is enqueued on the current stream of its device
 * (ct_cl_queue) and returns without waiting.
 */
#ifndef CT_CL_INTERNAL_H
#define CT_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backends/gpu/gpu.h"
#include "core/backend.h"
#include "core/error.h"

/* Check an OpenCL call; on failure set CT_ERR_BACKEND naming the call and
 * the OpenCL error name, and return it. */
const char *ct_cl_error_name(cl_int err);
#define CT_CL_TRY(call)                                                                   \
    do {                                                                                  \
        cl_int ct_cl_err_ = (call);                                                       \
        if (ct_cl_err_ != CL_SUCCESS)                                                     \
            return ct_error_set(CT_ERR_BACKEND, "OpenCL error %s (%d) in %s",             \
                                ct_cl_error_name(ct_cl_err_), (int)ct_cl_err_, #call);    \
    } while (0)

/* The command queue of the calling thread's current stream on device dev. */
cl_command_queue ct_cl_queue(int dev);
cl_context ct_cl_context(int dev);
cl_device_id ct_cl_device_id(int dev);

/* A kernel of the embedded program, built for device dev on first use and
 * cached. The returned kernel object is shared: set its arguments and
 * enqueue it under ct_cl_kernel_lock/unlock so two threads never interleave
 * clSetKernelArg calls on one kernel. */
ct_status ct_cl_kernel(int dev, const char *name, cl_kernel *out);
/* A user's program (cl_user_kernel.c) built for device dev with the
 * backend's own options plus `options`, under the same PoCL build lock; on
 * failure the error carries the head of the build log. */
ct_status ct_cl_build_user_program(int dev, const char *source, const char *options, cl_program *out);
/* get_proc("kernel_ops") (src/core/backend_kernel.h). */
struct ct_backend_kernel;
const struct ct_backend_kernel *ct_cl_kernel_ops(void);
void ct_cl_kernel_lock(int dev);
void ct_cl_kernel_unlock(int dev);


/* Enqueue a 1-D launch of n work items (rounded up to the work-group size;
 * kernels check their index against n) on the current stream of dev. */
ct_status ct_cl_launch_1d(int dev, cl_kernel k, size_t n);
/* Enqueue with an explicit global/local size (reductions use work-groups). */
ct_status ct_cl_launch(int dev, cl_kernel k, size_t global, size_t local);

#endif /* CT_CL_INTERNAL_H */
