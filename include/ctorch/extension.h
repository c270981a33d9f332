/*
 * ctorch/extension.h — your own device kernels on ctorch tensors, and the
 * native objects behind tensors, streams and devices for other libraries.
 *
 * PyTorch users write a CUDA kernel and load it with
 * torch.utils.cpp_extension.load_inline, or hand tensor.data_ptr() and
 * torch.cuda.current_stream().cuda_stream to their own code. ctorch offers
 * the same, for OpenCL and CUDA with one source:
 *
 *   static const char *src =
 *       "K_KERNEL vec_add(K_GLOBAL const float *a, K_GLOBAL const float *b,\n"
 *       "                 K_GLOBAL float *c, k_long n) {\n"
 *       "    k_long i = k_global_id();\n"
 *       "    if (i < n) c[i] = a[i] + b[i];\n"
 *       "}\n";
 *   ct_kernel *k = ct_kernel_compile(dev, src, "vec_add", NULL);
 *   ct_kernel_launch(k, n, 0, CT_KARGS(ct_karg_tensor(a), ct_karg_tensor(b),
 *                                      ct_karg_tensor(c), ct_karg_i64(n)));
 *
 * The source is written in ctorch's kernel dialect (docs/extension.md): the
 * macros its own kernels use (K_KERNEL, K_GLOBAL, K_LOCAL, k_global_id(),
 * k_barrier(), k_long, …), put in front of the source, so the same text is
 * OpenCL C on OpenCL devices and CUDA C++ (compiled by NVRTC) on CUDA ones.
 *
 * Ownership: ct_kernel_compile returns a handle you free with
 * ct_kernel_free; compiling the same (device, source, name, options) again
 * while a handle is alive returns the same compiled kernel, so keep the
 * handle to compile once. Native handles are borrowed: they stay valid as
 * long as the tensor, stream or device they came from.
 */
#ifndef CTORCH_EXTENSION_H
#define CTORCH_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "status.h"
#include "stream.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- native handles ------------------------------------------------------------------- */

/* Where a tensor's first element lies.
 *   CPU:    buffer = ptr = the host address of element 0.
 *   CUDA:   buffer = the device allocation (a block of the caching
 *           allocator), ptr = the device address of element 0 (what a CUDA
 *           kernel takes; data_ptr() in PyTorch).
 *   OpenCL: buffer = the cl_mem holding the tensor, byte_offset = where
 *           element 0 lies in it (allocations share buffers, so offsets are
 *           common), ptr = NULL (an OpenCL buffer has no address).
 * nbytes spans element 0 to the last element the tensor's strides reach. */
typedef struct ct_native_buffer {
    ct_device device;
    void *buffer;
    size_t byte_offset;
    void *ptr;
    size_t nbytes;
} ct_native_buffer;

CT_API ct_status ct_tensor_native_buffer(const ct_tensor *t, ct_native_buffer *out);

/* The stream's cl_command_queue or cudaStream_t (NULL for the CPU, which
 * has no streams). ct_current_stream(dev) gives the stream ctorch enqueues
 * on: enqueue your own work there to keep ctorch's ordering. */
CT_API void *ct_stream_native_handle(const ct_stream *s);

/* The runtime objects of a device: OpenCL's cl_platform_id, cl_device_id
 * and cl_context; CUDA's device ordinal (its primary context is current
 * after any ctorch work on it). */
typedef struct ct_native_device {
    ct_device device;
    void *cl_platform;
    void *cl_device;
    void *cl_context;
    int cuda_ordinal; /* -1 unless CUDA */
} ct_native_device;

CT_API ct_status ct_device_native_handles(ct_device dev, ct_native_device *out);

/* ---- user kernels --------------------------------------------------------------------- */

typedef struct ct_kernel ct_kernel;

/* Compile `source` (kernel dialect) for dev and find kernel `name` in it.
 * options: extra compiler flags (e.g. "-DTILE=16"), or NULL. NULL with
 * CT_ERR_UNSUPPORTED on the CPU (no kernel compiler) or without NVRTC, and
 * with CT_ERR_BACKEND and the compiler's log when the source does not
 * compile. */
CT_API ct_kernel *ct_kernel_compile(ct_device dev, const char *source, const char *name, const char *options);
CT_API void ct_kernel_free(ct_kernel *k);
CT_API ct_device ct_kernel_device(const ct_kernel *k);

/* A launch argument: a tensor (the kernel receives a pointer to its first
 * element: `K_GLOBAL float *x`) or a scalar of the kernel parameter's type. */
typedef enum ct_karg_kind {
    CT_KARG_TENSOR = 1,
    CT_KARG_INT32,
    CT_KARG_INT64,
    CT_KARG_FLOAT32,
    CT_KARG_FLOAT64
} ct_karg_kind;

typedef struct ct_karg {
    ct_karg_kind kind;
    union {
        const ct_tensor *tensor;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
    } v;
} ct_karg;

static inline ct_karg ct_karg_tensor(const ct_tensor *t) { ct_karg a; a.kind = CT_KARG_TENSOR; a.v.tensor = t; return a; }
static inline ct_karg ct_karg_i32(int32_t x) { ct_karg a; a.kind = CT_KARG_INT32; a.v.i32 = x; return a; }
static inline ct_karg ct_karg_i64(int64_t x) { ct_karg a; a.kind = CT_KARG_INT64; a.v.i64 = x; return a; }
static inline ct_karg ct_karg_f32(float x) { ct_karg a; a.kind = CT_KARG_FLOAT32; a.v.f32 = x; return a; }
static inline ct_karg ct_karg_f64(double x) { ct_karg a; a.kind = CT_KARG_FLOAT64; a.v.f64 = x; return a; }

/* Enqueue k on the current stream of its device and return without
 * waiting: `global` work items in work groups (CUDA blocks) of `local`
 * threads; local 0 lets ctorch choose (256 on CUDA, the runtime's choice on
 * OpenCL). global is rounded up to a multiple of local, so kernels check
 * their index against their element count. Tensors must be on k's device;
 * their dtype and layout are the kernel's business (pass sizes and strides
 * as scalars). 1-D launches: the dialect's k_global_id() is dimension 0. */
CT_API ct_status ct_kernel_launch(ct_kernel *k, int64_t global, int local, const ct_karg *args, int nargs);

/* ct_kernel_launch(k, n, 0, CT_KARGS(a, b, c)): the array and its count. */
#define CT_KARGS(...) ((const ct_karg[]){__VA_ARGS__}), \
    (int)(sizeof((const ct_karg[]){__VA_ARGS__}) / sizeof(ct_karg))

/* The dialect's text as compiled in front of every user kernel (for
 * reading; not needed to compile). */
CT_API const char *ct_kernel_dialect_source(void);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_EXTENSION_H */
