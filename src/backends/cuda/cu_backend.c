/*
 * cu_backend.c — the CUDA backend's table and its device runtime: device
 * enumeration and properties, raw segments for the caching allocator
 * (cudaMalloc), blocking and asynchronous host transfers, streams (non-
 * blocking CUDA streams with priorities), events, pinned host memory
 * (cudaHostAlloc), and the error mapping every CUDA file uses (ct_cu_check).
 *
 * It mirrors the OpenCL backend (src/backends/opencl/cl_backend.c): one
 * ct_stream is one cudaStream_t, created by the core through stream_create,
 * so the op entries enqueue on the current stream of their device
 * (ct_cu_stream) and CUDA's legacy default stream is never used. The ops
 * themselves are the shared GPU host layer (src/backends/gpu/, launching
 * the kernels of cu_kernels.cu through cu_gpu.c), cuBLAS (cu_blas.c) and
 * cuDNN (cu_dnn.c).
 *
 * The CUDA runtime is linked statically and loads the driver itself: with no
 * driver or no GPU, cudaGetDeviceCount fails and the backend has 0 devices,
 * which the core reports as "cuda:0: no CUDA devices are available: <why>"
 * (no_device_reason).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_common.h" /* ct_format_size */
#include "core/backend_conv.h"
#include "core/backend_nn.h"
#include "core/runtime.h"
#include "backends/gpu/gpu.h"
#include "cu_dl.h"
#include "cu_internal.h"

#ifndef CTORCH_CUDA_ARCHS
#define CTORCH_CUDA_ARCHS "?"
#endif

/* The core keeps per-device arrays of this size (stream.c, memory.c). */
#define CT_CU_MAX_DEVICES 64

/* ---- errors ------------------------------------------------------------------------ */

static bool is_device_error(cudaError_t err) {
    switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorInitializationError: return true;
    default: return false;
    }
}

/* Errors after which the context is unusable; CUDA reports them at whatever
 * call comes next, so the message says so, as PyTorch's does. */
static bool is_sticky_error(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorECCUncorrectable: return true;
    default: return false;
    }
}

ct_status ct_cu_check(cudaError_t err, const char *what) {
    if (err == cudaSuccess) return CT_OK;
    /* reset the runtime's last-error (a sticky error stays in the context anyway) */
    (void)cudaGetLastError();
    const char *name = cudaGetErrorName(err), *text = cudaGetErrorString(err);
    if (err == cudaErrorMemoryAllocation)
        return ct_error_set(CT_ERR_OOM, "CUDA out of memory: %s (%s) in %s", text, name, what);
    if (is_device_error(err))
        return ct_error_set(CT_ERR_DEVICE, "CUDA error: %s (%s) in %s", text, name, what);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorUnsupportedPtxVersion ||
        err == cudaErrorInvalidPtx)
        return ct_error_set(CT_ERR_DEVICE,
                            "CUDA error: %s (%s) in %s; ctorch was built for CUDA architectures %s and this "
                            "GPU (or its driver) cannot run them",
                            text, name, what, CTORCH_CUDA_ARCHS);
    if (is_sticky_error(err))
        return ct_error_set(CT_ERR_BACKEND,
                            "CUDA error: %s (%s) in %s. CUDA kernel errors might be asynchronously reported at "
                            "some other API call; for debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                            text, name, what);
    return ct_error_set(CT_ERR_BACKEND, "CUDA error: %s (%s) in %s", text, name, what);
}

ct_status ct_cu_launched(const char *kernel) {
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) return CT_OK;
    char what[160];
    snprintf(what, sizeof what, "launching kernel %s", kernel);
    return ct_cu_check(err, what);
}

/* ---- enumeration -------------------------------------------------------------------- */

typedef struct cu_device {
    char name[256];
    size_t total_memory;
    int major, minor, sm_count;
} cu_device;

static cu_device g_devices[CT_CU_MAX_DEVICES];
static int g_count;
static cudaError_t g_count_error; /* why there are none, for the error message */
static pthread_once_t g_enum_once = PTHREAD_ONCE_INIT;

/* Device queries that create no context, so that asking how many GPUs there
 * are costs no GPU memory (as torch.cuda.is_available). */
static void enumerate(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver or no GPU: 0 devices, not an error */
        g_count_error = e;
        return;
    }
    if (n > CT_CU_MAX_DEVICES) n = CT_CU_MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        struct cudaDeviceProp p;
        cu_device *d = &g_devices[i];
        if (cudaGetDeviceProperties(&p, i) == cudaSuccess) {
            snprintf(d->name, sizeof d->name, "%s", p.name);
            d->total_memory = p.totalGlobalMem;
            d->major = p.major;
            d->minor = p.minor;
            d->sm_count = p.multiProcessorCount;
        } else {
            (void)cudaGetLastError();
            snprintf(d->name, sizeof d->name, "CUDA device %d", i);
        }
    }
    g_count = n;
}

int ct_cu_count(void) {
    pthread_once(&g_enum_once, enumerate);
    return g_count;
}

/* Why the runtime found no device, in the user's terms (ctorch-info prints
 * the same facts at length). */
static void no_device_reason(char *buf, size_t size) {
    (void)ct_cu_count(); /* the enumeration records the runtime's error */
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (g_count_error == cudaErrorInsufficientDriver)
        snprintf(buf, size, "no usable NVIDIA driver (libcuda.so.1 missing, or older than this CUDA runtime %d)",
                 CUDART_VERSION);
    else if (g_count_error == cudaErrorNoDevice && visible)
        snprintf(buf, size, "CUDA_VISIBLE_DEVICES=\"%s\" hides every device, or the driver found no GPU", visible);
    else if (g_count_error == cudaErrorNoDevice)
        snprintf(buf, size, "the NVIDIA driver found no GPU");
    else if (g_count_error != cudaSuccess)
        snprintf(buf, size, "cudaGetDeviceCount failed: %s: %s", cudaGetErrorName(g_count_error),
                 cudaGetErrorString(g_count_error));
    else
        snprintf(buf, size, "the driver reports 0 devices%s%s%s", visible ? " (CUDA_VISIBLE_DEVICES=\"" : "",
                 visible ? visible : "", visible ? "\")" : "");
}

static const cu_device *cu_dev(int dev) {
    int n = ct_cu_count();
    if (dev < 0 || dev >= n) {
        char why[192];
        if (n == 0) no_device_reason(why, sizeof why);
        if (n == 0)
            ct_error_set(CT_ERR_DEVICE, "cuda:%d: no CUDA devices are available: %s", dev,
                         why);
        else
            ct_error_set(CT_ERR_DEVICE, "cuda:%d: invalid device ordinal; %d CUDA device%s available", dev, n,
                         n == 1 ? " is" : "s are");
        return NULL;
    }
    return &g_devices[dev];
}

ct_status ct_cu_set_device(int dev) {
    if (!cu_dev(dev)) return ct_last_status();
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == dev) return CT_OK;
    char what[48];
    snprintf(what, sizeof what, "cudaSetDevice(%d)", dev);
    return ct_cu_check(cudaSetDevice(dev), what);
}

/* For the void entries (free, destroy), which must not leave an error behind
 * for the caller to find: false when dev cannot be made current. */
static bool set_device_quietly(int dev) {
    if (dev < 0 || dev >= ct_cu_count()) return false;
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == dev) return true;
    if (cudaSetDevice(dev) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
}

cudaStream_t ct_cu_stream(int dev) {
    if (ct_cu_set_device(dev) != CT_OK) return NULL;
    return (cudaStream_t)cti_current_stream_handle(CT_DEVICE_CUDA, dev);
}

/* An explicit stream handle, or the current stream of dev; sets dev. */
static cudaStream_t stream_or_current(int dev, void *stream) {
    if (!stream) return ct_cu_stream(dev);
    return ct_cu_set_device(dev) == CT_OK ? (cudaStream_t)stream : NULL;
}

/* ---- devices ------------------------------------------------------------------------- */

static int cu_device_count(void) { return ct_cu_count(); }

static ct_status cu_device_name(int dev, char *buf, size_t size) {
    const cu_device *d = cu_dev(dev);
    if (!d) return ct_last_status();
    snprintf(buf, size, "%s", d->name);
    return CT_OK;
}

static ct_status cu_device_properties(int dev, ct_device_properties *out) {
    const cu_device *d = cu_dev(dev);
    if (!d) return ct_last_status();
    out->total_memory = d->total_memory;
    out->major = d->major;
    out->minor = d->minor;
    out->multi_processor_count = d->sm_count;
    out->is_host = false;
    return CT_OK;
}

/* Waits for every stream of the device (torch.cuda.synchronize). */
static ct_status cu_synchronize(int dev) {
    CT_TRY(ct_cu_set_device(dev));
    CT_CU_TRY(cudaDeviceSynchronize());
    return CT_OK;
}

/* ---- memory --------------------------------------------------------------------------- */

/* CT_ERR_OOM lets the caching allocator free its cache and retry, then
 * report PyTorch's message (alloc_cache.c), which replaces this one. */
static ct_status cu_alloc(int dev, size_t nbytes, void **handle) {
    CT_TRY(ct_cu_set_device(dev));
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, nbytes ? nbytes : 1);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        char want[32];
        ct_format_size(nbytes, want, sizeof want);
        return ct_error_set(CT_ERR_OOM, "CUDA out of memory. Tried to allocate %s on cuda:%d (%s)", want, dev,
                            g_devices[dev].name);
    }
    CT_CU_TRY(err);
    *handle = p;
    return CT_OK;
}

/* cudaFree waits for the device to finish the work that may still use it. */
static void cu_free(int dev, void *handle) {
    if (!handle || !set_device_quietly(dev)) return;
    if (cudaFree(handle) != cudaSuccess) (void)cudaGetLastError(); /* e.g. at exit, runtime unloading */
}

static ct_status copy_on_stream(int dev, void *handle, size_t off, void *host, size_t n, bool to_device,
                                void *stream, bool wait) {
    if (n == 0) return CT_OK;
    cudaStream_t s = stream_or_current(dev, stream);
    if (!s) return ct_last_status();
    char *device_ptr = (char *)handle + off;
    if (to_device)
        CT_CU_TRY(cudaMemcpyAsync(device_ptr, host, n, cudaMemcpyHostToDevice, s));
    else
        CT_CU_TRY(cudaMemcpyAsync(host, device_ptr, n, cudaMemcpyDeviceToHost, s));
    if (wait) CT_CU_TRY(cudaStreamSynchronize(s));
    return CT_OK;
}

/* On the current stream, so that it follows the work already queued there
 * (the block may be recycled memory that earlier kernels still use), and
 * waited for: the source is pageable memory that may change right after. */
static ct_status cu_write(int dev, void *handle, size_t off, const void *src, size_t n) {
    return copy_on_stream(dev, handle, off, (void *)src, n, true, NULL, true);
}

/* Waits for the current stream, so earlier work on it finishes first. */
static ct_status cu_read(int dev, void *handle, size_t off, void *dst, size_t n) {
    return copy_on_stream(dev, handle, off, dst, n, false, NULL, true);
}

static ct_status cu_write_async(int dev, void *handle, size_t off, const void *src, size_t n, void *stream) {
    return copy_on_stream(dev, handle, off, (void *)src, n, true, stream, false);
}

static ct_status cu_read_async(int dev, void *handle, size_t off, void *dst, size_t n, void *stream) {
    return copy_on_stream(dev, handle, off, dst, n, false, stream, false);
}

static ct_status cu_mem_get_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    CT_TRY(ct_cu_set_device(dev));
    size_t f = 0, t = 0;
    CT_CU_TRY(cudaMemGetInfo(&f, &t));
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return CT_OK;
}

/* ---- streams ----------------------------------------------------------------------------- */

/* Non-blocking: never implicitly ordered with CUDA's legacy default stream
 * (another library's work there must not serialise ours), as PyTorch's pool
 * streams. The core has already clamped priority into priority_range. */
static ct_status cu_stream_create(int dev, int priority, void **stream) {
    CT_TRY(ct_cu_set_device(dev));
    cudaStream_t s = NULL;
    CT_CU_TRY(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
    *stream = s;
    return CT_OK;
}

/* Work still queued completes; CUDA releases the stream afterwards. */
static void cu_stream_destroy(int dev, void *stream) {
    if (!stream || !set_device_quietly(dev)) return;
    if (cudaStreamDestroy((cudaStream_t)stream) != cudaSuccess) (void)cudaGetLastError();
}

static ct_status cu_stream_synchronize(int dev, void *stream) {
    cudaStream_t s = stream_or_current(dev, stream);
    if (!s) return ct_last_status();
    CT_CU_TRY(cudaStreamSynchronize(s));
    return CT_OK;
}

/* "Not ready" is an answer, not an error (and must not linger as one). */
static ct_status query_result(cudaError_t err, bool *done, const char *what) {
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        *done = false;
        return CT_OK;
    }
    *done = err == cudaSuccess;
    return ct_cu_check(err, what);
}

static ct_status cu_stream_query(int dev, void *stream, bool *done) {
    cudaStream_t s = stream_or_current(dev, stream);
    if (!s) return ct_last_status();
    return query_result(cudaStreamQuery(s), done, "cudaStreamQuery");
}

/* CUDA's numbers are the contract's: least = 0 (the default), greatest
 * negative (-5 on recent GPUs). Asked of device 0 once a device is in use;
 * (0, 0) without devices. */
static pthread_once_t g_priority_once = PTHREAD_ONCE_INIT;
static int g_least_priority, g_greatest_priority;

static void query_priority_range(void) {
    int least = 0, greatest = 0;
    if (ct_cu_count() == 0) return;
    if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    g_least_priority = least;
    g_greatest_priority = greatest;
}

static void cu_priority_range(int *least, int *greatest) {
    pthread_once(&g_priority_once, query_priority_range);
    if (least) *least = g_least_priority;
    if (greatest) *greatest = g_greatest_priority;
}

/* ---- events --------------------------------------------------------------------------------- */

/* Timing costs a little on every record, so only events that ask get it. */
static ct_status cu_event_create(int dev, bool enable_timing, void **event) {
    CT_TRY(ct_cu_set_device(dev));
    cudaEvent_t e = NULL;
    CT_CU_TRY(cudaEventCreateWithFlags(&e, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
    *event = e;
    return CT_OK;
}

static void cu_event_destroy(int dev, void *event) {
    if (event && cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
}

static ct_status cu_event_record(int dev, void *event, void *stream) {
    cudaStream_t s = stream_or_current(dev, stream);
    if (!s) return ct_last_status();
    CT_CU_TRY(cudaEventRecord((cudaEvent_t)event, s));
    return CT_OK;
}

static ct_status cu_event_query(int dev, void *event, bool *done) {
    return query_result(cudaEventQuery((cudaEvent_t)event), done, "cudaEventQuery");
}

static ct_status cu_event_synchronize(int dev, void *event) {
    CT_CU_TRY(cudaEventSynchronize((cudaEvent_t)event));
    return CT_OK;
}

static ct_status cu_stream_wait_event(int dev, void *stream, void *event) {
    cudaStream_t s = stream_or_current(dev, stream);
    if (!s) return ct_last_status();
    CT_CU_TRY(cudaStreamWaitEvent(s, (cudaEvent_t)event, 0));
    return CT_OK;
}

/* The core has checked that both are timing events, recorded and complete. */
static ct_status cu_event_elapsed_ms(int dev, void *start, void *end, float *ms) {
    CT_CU_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
    return CT_OK;
}

/* ---- pinned host memory ------------------------------------------------------------------------ */

/* Portable: page-locked for every device, so one host cache serves them all.
 * CT_ERR_OOM lets the host cache empty itself and retry. */
static ct_status cu_host_alloc(size_t nbytes, void **ptr) {
    if (ct_cu_count() == 0) return ct_error_set(CT_ERR_DEVICE, "pin_memory: no CUDA devices are available");
    void *p = NULL;
    cudaError_t err = cudaHostAlloc(&p, nbytes ? nbytes : 1, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        char want[32];
        ct_format_size(nbytes, want, sizeof want);
        return ct_error_set(CT_ERR_OOM, "pin_memory: could not allocate %s of page-locked memory (cudaHostAlloc)",
                            want);
    }
    CT_CU_TRY(err);
    *ptr = p;
    return CT_OK;
}

static void cu_host_free(void *ptr) {
    if (ptr && cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- the table ---------------------------------------------------------------------------------- */

/* What the core asks of CUDA by name (ct_backend.get_proc). */
static ct_backend_proc cu_get_proc(const char *name) {
    if (!strcmp(name, "cublas_version")) return (ct_backend_proc)ct_cu_dl_cublas_version;
    if (!strcmp(name, "cudnn_version")) return (ct_backend_proc)ct_cu_dl_cudnn_version;
    if (!strcmp(name, "comm_ops")) return (ct_backend_proc)ct_cu_comm_ops;
    if (!strcmp(name, "kernel_ops")) return (ct_backend_proc)ct_cu_kernel_ops;
    if (!strcmp(name, "range_push")) return (ct_backend_proc)ct_cu_nvtx_push;
    if (!strcmp(name, "range_pop")) return (ct_backend_proc)ct_cu_nvtx_pop;
    return NULL;
}

/* The shared GPU table with cuBLAS's matmul and cuDNN's convolution,
 * pooling and batch-norm entries put over it (cu_dnn.c). */
static ct_backend_ops g_cu_ops;
static struct ct_backend_conv g_cu_conv;
static struct ct_backend_nn g_cu_nn;

static void cu_prepare(void) {
    g_cu_conv = ct_gpu_conv_ops;
    g_cu_nn = ct_gpu_nn_ops;
    ct_cu_dnn_override(&g_cu_conv, &g_cu_nn);
    g_cu_ops = ct_gpu_ops;
    g_cu_ops.matmul = ct_cu_matmul;
    g_cu_ops.conv = &g_cu_conv;
    g_cu_ops.nn = &g_cu_nn;
}

const ct_backend ct_cuda_backend = {
    .api_version = CT_BACKEND_API_VERSION,
    .name = "cuda",
    .type = CT_DEVICE_CUDA,
    .gpu = &ct_cu_gpu,
    .prepare = cu_prepare,
    .ops = &g_cu_ops,
    .get_proc = cu_get_proc,
    .device_count = cu_device_count,
    .no_device_reason = no_device_reason,
    .device_name = cu_device_name,
    .device_properties = cu_device_properties,
    .synchronize = cu_synchronize,
    .alloc = cu_alloc,
    .free = cu_free,
    .write = cu_write,
    .read = cu_read,
    .uses_caching_allocator = true,
    .mem_get_info = cu_mem_get_info,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .stream_synchronize = cu_stream_synchronize,
    .stream_query = cu_stream_query,
    .priority_range = cu_priority_range,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_synchronize = cu_event_synchronize,
    .stream_wait_event = cu_stream_wait_event,
    .event_elapsed_ms = cu_event_elapsed_ms,
    .write_async = cu_write_async,
    .read_async = cu_read_async,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
};
