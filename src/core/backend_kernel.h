/*
 * backend_kernel.h — what a device backend offers for users' own kernels
 * (ctorch/extension.h), reached through its get_proc("kernel_ops") so that
 * the core names no backend: compiling a source in the portable kernel
 * dialect (OpenCL C program, NVRTC), launching it on the current stream with
 * ctorch tensors among its arguments, and the native handles (context,
 * device, buffer addresses) users pass to their own code.
 *
 * The core (src/core/kernel_ext.c) validates arguments, caches compiled
 * kernels and prepends the dialect; a backend only translates.
 */
#ifndef CT_CORE_BACKEND_KERNEL_H
#define CT_CORE_BACKEND_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "ctorch/extension.h"

/* One launch argument: a buffer (a storage handle and the byte offset of
 * the tensor's first element in it) or a value of `size` bytes. */
typedef struct ct_kernel_launch_arg {
    bool is_buffer;
    void *handle;        /* buffer: the storage handle (cl_mem, device pointer) */
    size_t byte_offset;  /* buffer: where element 0 lies in it */
    size_t size;         /* value: its size in bytes */
    const void *value;   /* value: its address */
} ct_kernel_launch_arg;

typedef struct ct_backend_kernel {
    /* Compile `source` (the dialect already in front) for device dev and
     * find kernel `name` in it. On failure set an error that includes the
     * compiler's log. */
    ct_status (*compile)(int dev, const char *source, const char *name, const char *options, void **kernel);
    void (*release)(int dev, void *kernel);
    /* Enqueue on dev's current stream: `global` work items in groups of
     * `local` (0: the backend's usual size; global is then rounded up to a
     * multiple of it). */
    ct_status (*launch)(int dev, void *kernel, const ct_kernel_launch_arg *args, int nargs, size_t global,
                        size_t local);
    /* The number of parameters the kernel declares, or -1 when the runtime
     * cannot tell (CUDA). */
    int (*num_args)(int dev, void *kernel);
    /* The device address of byte_offset into handle, or NULL where buffers
     * are not addresses (OpenCL). */
    void *(*address)(void *handle, size_t byte_offset);
    /* The runtime objects behind device dev. */
    ct_status (*native_device)(int dev, ct_native_device *out);
} ct_backend_kernel;

/* What get_proc("kernel_ops") returns. */
typedef const ct_backend_kernel *(*ct_backend_kernel_fn)(void);

#endif /* CT_CORE_BACKEND_KERNEL_H */
