/*
 * cl_backend.c — the OpenCL backend's table and its device runtime: device
 * enumeration across all installed platforms, contexts and queues, raw
 * memory, blocking and asynchronous host transfers, streams (in-order
 * command queues with profiling), events (markers), and pinned host memory.
 *
 * One ct_stream is one cl_command_queue; the op entries enqueue on the
 * current stream of their device (ct_cl_queue) and return without waiting.
 * Kernels are built in cl_program.c and launched through the device table
 * of cl_ops.c; the ops are the shared GPU layer's (src/backends/gpu/), with
 * CLBlast's GEMM from cl_blas.c.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* getpid */

#include "cl_device.h"
#include "cl_ops.h"
#include "core/runtime.h"

/* Implemented in cl_blas.c. */
ct_status ct_cl_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* ---- enumeration ------------------------------------------------------------------ */

static ct_cl_device g_devices[CT_CL_MAX_DEVICES];
static int g_count;
static pthread_once_t g_enum_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_init_mutex = PTHREAD_MUTEX_INITIALIZER;

static bool has_extension(cl_device_id id, const char *ext) {
    size_t n = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return false;
    char *s = malloc(n + 1);
    if (!s) return false;
    bool found = false;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
        s[n] = '\0';
        size_t len = strlen(ext);
        for (const char *p = strstr(s, ext); p && !found; p = strstr(p + 1, ext))
            found = (p == s || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0');
    }
    free(s);
    return found;
}

static void describe_device(ct_cl_device *d) {
    clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
    clGetDeviceInfo(d->id, CL_DRIVER_VERSION, sizeof d->driver - 1, d->driver, NULL);
    cl_device_fp_config fp64 = 0, fp32 = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) != CL_SUCCESS) fp64 = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp32, &fp32, NULL) != CL_SUCCESS) fp32 = 0;
    d->has_fp64 = fp64 != 0;
    d->exact_fp32_divide = (fp32 & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    char cver[64] = "";
    clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_VERSION, sizeof cver - 1, cver, NULL);
    int major = 0, minor = 0;
    d->has_cl12 = sscanf(cver, "OpenCL C %d.%d", &major, &minor) == 2 && (major > 1 || minor >= 2);
    d->amd_free_memory = has_extension(d->id, "cl_amd_device_attribute_query");
    clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_group, &d->max_group, NULL);
    if (d->max_group == 0) d->max_group = 1;
    pthread_mutex_init(&d->queues_mutex, NULL);
    pthread_mutex_init(&d->program_mutex, NULL);
    pthread_mutex_init(&d->launch_mutex, NULL);
}

/* Devices of one type from every platform, in platform order. */
static void add_devices_of_type(const cl_platform_id *platforms, cl_uint np, cl_device_type type) {
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], type, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id *ids = malloc(nd * sizeof *ids);
        if (!ids) continue;
        if (clGetDeviceIDs(platforms[p], type, nd, ids, NULL) == CL_SUCCESS) {
            for (cl_uint i = 0; i < nd && g_count < CT_CL_MAX_DEVICES; i++) {
                cl_bool available = CL_FALSE;
                clGetDeviceInfo(ids[i], CL_DEVICE_AVAILABLE, sizeof available, &available, NULL);
                if (!available) continue;
                ct_cl_device *d = &g_devices[g_count++];
                d->platform = platforms[p];
                d->id = ids[i];
                d->type = type;
                describe_device(d);
            }
        }
        free(ids);
    }
}

/* GPUs first, then accelerators, then CPUs, so that opencl:0 is the fastest
 * kind of device present. */
static void arm_exit_wait(void);

static void enumerate(void) {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return;
    cl_platform_id *platforms = malloc(np * sizeof *platforms);
    if (!platforms) return;
    if (clGetPlatformIDs(np, platforms, NULL) == CL_SUCCESS) {
        add_devices_of_type(platforms, np, CL_DEVICE_TYPE_GPU);
        add_devices_of_type(platforms, np, CL_DEVICE_TYPE_ACCELERATOR);
        add_devices_of_type(platforms, np, CL_DEVICE_TYPE_CPU);
    }
    free(platforms);
    arm_exit_wait(); /* after the drivers (libpocl, its LLVM) are loaded */
}

int ct_cl_count(void) {
    pthread_once(&g_enum_once, enumerate);
    return g_count;
}

ct_cl_device *ct_cl_dev(int dev) {
    int n = ct_cl_count();
    if (dev < 0 || dev >= n) {
        ct_error_set(CT_ERR_DEVICE, "opencl:%d: invalid device ordinal; %d OpenCL device%s available", dev, n,
                     n == 1 ? " is" : "s are");
        return NULL;
    }
    return &g_devices[dev];
}

/* ---- process exit: no PoCL compilation outlives main ------------------------------------
 *
 * Issue 15 item 4 (docs/devices.md, "PoCL and process exit"). PoCL compiles
 * a kernel's work-group function with LLVM when the kernel first runs, on
 * its device's worker thread; ctorch's ops return without waiting, so a
 * program that returns from main right after an op runs exit() while that
 * thread is inside LLVM. exit() then destroys LLVM's and PoCL's static
 * objects under it: llvm::PassRegistry is a function-local static whose
 * destructor libpocl's pass registrations put on the atexit list when it
 * loads; the code generator's type tables and PoCL's pass lists are built
 * (and their destructors registered) by the first compile. Every crash seen
 * (gdb, core files) had the main thread in __run_exit_handlers and a PoCL
 * worker in pocl_check_kernel_dlhandle_cache -> llvm::legacy::PassManager
 * (PMDataManager::freePass / recordAvailableAnalysis, or PoCL's own pass
 * code); PoCL's "Failed to create kernel compiler pass inline-kernels"
 * abort is the same worker looking the pass up in the destroyed registry.
 * The CUDA libraries only widen the window: loaded before PoCL, libcublasLt
 * and libcublas register ~12,600 exit handlers (12,388 + 213, counted with
 * gdb on __cxa_atexit), all run after the registry's destructor (cold-cache
 * conv2d then exit: 8 crashes in 10 runs; 2 in 20 without cuBLAS, where
 * libz3's and CLBlast's ~1400 remain). No symbol is shared (libcublas
 * and libcublasLt export only cublas* names and link no LLVM;
 * LD_DEBUG=bindings shows them binding to libc, libm and libgcc_s only), so
 * RTLD_DEEPBIND changes nothing and loading PoCL first would only bring the
 * rate back to the no-CUDA one.
 *
 * So ctorch waits for every queue before the first static destructor runs.
 * exit() calls the exiting thread's thread_local destructors
 * (__cxa_thread_atexit_impl, glibc >= 2.18) before any atexit handler,
 * whatever the registration order, and LLVM, clang, PoCL and CLBlast have
 * none; the thread that loads ctorch (the main thread) gets one that
 * finishes every queue of every ready device. An atexit handler registered
 * just after enumeration (once libpocl and its LLVM are loaded) covers
 * exit() from another thread: it runs before the registry's destructor,
 * though after those of statics first built later. Nothing is waited for
 * in a forked child (its copy of PoCL has no worker threads) or when no
 * device was used. */

extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso) __attribute__((weak));
extern void *__dso_handle;

static atomic_bool g_enumerated; /* g_count and g_devices are final */
static pid_t g_enumerated_pid;

static void finish_all_queues(void) {
    if (!atomic_load_explicit(&g_enumerated, memory_order_acquire) || getpid() != g_enumerated_pid) return;
    for (int i = 0; i < g_count; i++) {
        ct_cl_device *d = &g_devices[i];
        if (!atomic_load_explicit(&d->ready, memory_order_acquire)) continue;
        pthread_mutex_lock(&d->queues_mutex);
        for (int q = 0; q < d->nqueues; q++) clFinish(d->queues[q]);
        pthread_mutex_unlock(&d->queues_mutex);
    }
}

static void finish_at_thread_exit(void *unused) { finish_all_queues(); }
static void finish_at_exit(void) { finish_all_queues(); }

__attribute__((constructor)) static void register_thread_exit_wait(void) {
    if (__cxa_thread_atexit_impl) __cxa_thread_atexit_impl(finish_at_thread_exit, NULL, &__dso_handle);
}

static void arm_exit_wait(void) {
    g_enumerated_pid = getpid();
    atomic_store_explicit(&g_enumerated, true, memory_order_release);
    atexit(finish_at_exit);
}

/* ---- contexts and queues ------------------------------------------------------------- */

static ct_status register_queue(ct_cl_device *d, cl_command_queue q) {
    pthread_mutex_lock(&d->queues_mutex);
    if (d->nqueues == d->queues_cap) {
        int cap = d->queues_cap ? 2 * d->queues_cap : 8;
        cl_command_queue *grown = realloc(d->queues, (size_t)cap * sizeof *grown);
        if (grown) d->queues = grown;
        bool *idle = grown ? realloc(d->queue_idle, (size_t)cap * sizeof *idle) : NULL;
        if (!idle) {
            pthread_mutex_unlock(&d->queues_mutex);
            return ct_error_set(CT_ERR_OOM, "opencl: out of host memory registering a stream");
        }
        d->queue_idle = idle;
        d->queues_cap = cap;
    }
    d->queue_idle[d->nqueues] = true;
    d->queues[d->nqueues++] = q;
    pthread_mutex_unlock(&d->queues_mutex);
    return CT_OK;
}

static void unregister_queue(ct_cl_device *d, cl_command_queue q) {
    pthread_mutex_lock(&d->queues_mutex);
    for (int i = 0; i < d->nqueues; i++)
        if (d->queues[i] == q) {
            --d->nqueues;
            d->queues[i] = d->queues[d->nqueues];
            d->queue_idle[i] = d->queue_idle[d->nqueues];
            break;
        }
    pthread_mutex_unlock(&d->queues_mutex);
}

static ct_status create_queue(ct_cl_device *d, int dev, cl_command_queue *out) {
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(d->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS)
        return ct_error_set(err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES ? CT_ERR_OOM : CT_ERR_BACKEND,
                            "opencl:%d: creating a command queue failed: %s (%d)", dev, ct_cl_error_name(err),
                            (int)err);
    if (register_queue(d, q) != CT_OK) {
        clReleaseCommandQueue(q);
        return ct_last_status();
    }
    *out = q;
    return CT_OK;
}

/* One context for all enumerated devices of d's platform; if the driver
 * refuses a multi-device context, one for d alone. */
static ct_status create_context(ct_cl_device *d, int dev) {
    for (int i = 0; i < g_count; i++)
        if (g_devices[i].platform == d->platform && g_devices[i].context) {
            d->context = g_devices[i].context;
            return CT_OK;
        }
    cl_device_id ids[CT_CL_MAX_DEVICES];
    cl_uint n = 0;
    for (int i = 0; i < g_count; i++)
        if (g_devices[i].platform == d->platform) ids[n++] = g_devices[i].id;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(props, n, ids, NULL, NULL, &err);
    if (err == CL_SUCCESS) {
        for (int i = 0; i < g_count; i++)
            if (g_devices[i].platform == d->platform) {
                if (i != dev) clRetainContext(ctx);
                g_devices[i].context = ctx;
            }
        return CT_OK;
    }
    ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return ct_error_set(CT_ERR_BACKEND, "opencl:%d (%s): creating a context failed: %s (%d)", dev, d->name,
                            ct_cl_error_name(err), (int)err);
    d->context = ctx;
    return CT_OK;
}

ct_cl_device *ct_cl_ready(int dev) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d || atomic_load_explicit(&d->ready, memory_order_acquire)) return d;
    pthread_mutex_lock(&g_init_mutex);
    ct_status st = CT_OK;
    if (!atomic_load(&d->ready)) {
        if (!d->context) st = create_context(d, dev);
        if (st == CT_OK) st = create_queue(d, dev, &d->queue);
        if (st == CT_OK) atomic_store_explicit(&d->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&g_init_mutex);
    return st == CT_OK ? d : NULL;
}

cl_context ct_cl_context(int dev) {
    ct_cl_device *d = ct_cl_ready(dev);
    return d ? d->context : NULL;
}

cl_device_id ct_cl_device_id(int dev) {
    ct_cl_device *d = ct_cl_dev(dev);
    return d ? d->id : NULL;
}

/* The current ct_stream's queue (the core creates the default stream through
 * cl_stream_create on first use). */
/* Whether a queue is known to be idle. An in-order queue has no "is it
 * idle" query, and a marker enqueued to ask completes asynchronously even on
 * an idle queue, so the backend remembers: synchronize (and a query that saw
 * its marker complete) marks a queue idle, and handing the queue out for new
 * work marks it busy. */
static void set_idle(int dev, cl_command_queue q, bool idle) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d || !q) return;
    pthread_mutex_lock(&d->queues_mutex);
    for (int i = 0; i < d->nqueues; i++)
        if (d->queues[i] == q) d->queue_idle[i] = idle;
    pthread_mutex_unlock(&d->queues_mutex);
}

static bool is_idle(int dev, cl_command_queue q) {
    ct_cl_device *d = ct_cl_dev(dev);
    bool idle = false;
    if (!d || !q) return false;
    pthread_mutex_lock(&d->queues_mutex);
    for (int i = 0; i < d->nqueues; i++)
        if (d->queues[i] == q) idle = d->queue_idle[i];
    pthread_mutex_unlock(&d->queues_mutex);
    return idle;
}

/* The queue new work goes to: it is busy from now on. */
cl_command_queue ct_cl_queue(int dev) {
    cl_command_queue q = (cl_command_queue)cti_current_stream_handle(CT_DEVICE_OPENCL, dev);
    set_idle(dev, q, false);
    return q;
}

/* The queue of an explicit stream handle, or the current one. */
static cl_command_queue queue_or_current(int dev, void *stream) {
    if (!stream) return ct_cl_queue(dev);
    set_idle(dev, (cl_command_queue)stream, false);
    return (cl_command_queue)stream;
}

/* For synchronize and query, which add no work of their own. */
static cl_command_queue queue_to_inspect(int dev, void *stream) {
    return stream ? (cl_command_queue)stream
                  : (cl_command_queue)cti_current_stream_handle(CT_DEVICE_OPENCL, dev);
}

const char *ct_cl_format_bytes(size_t n, char *buf, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%zu bytes", n);
        return buf;
    }
    double v = (double)n / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) v /= 1024.0, u++;
    snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}

/* ---- devices --------------------------------------------------------------------------- */

static int cl_device_count(void) { return ct_cl_count(); }

static ct_status cl_device_name(int dev, char *buf, size_t size) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d) return ct_last_status();
    snprintf(buf, size, "%s", d->name);
    return CT_OK;
}

static ct_status cl_device_properties(int dev, ct_device_properties *out) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d) return ct_last_status();
    char version[128] = "";
    cl_uint units = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    if (sscanf(version, "OpenCL %d.%d", &out->major, &out->minor) != 2) out->major = out->minor = 0;
    out->total_memory = (size_t)d->global_mem;
    out->multi_processor_count = (int)units;
    out->is_host = (d->type & CL_DEVICE_TYPE_CPU) != 0;
    return CT_OK;
}

/* Waits for every stream of the device, as cudaDeviceSynchronize. */
static ct_status cl_synchronize(int dev) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d) return ct_last_status();
    if (!atomic_load(&d->ready)) return CT_OK;
    pthread_mutex_lock(&d->queues_mutex);
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < d->nqueues && err == CL_SUCCESS; i++) err = clFinish(d->queues[i]);
    pthread_mutex_unlock(&d->queues_mutex);
    CT_CL_TRY(err);
    return CT_OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

static ct_status oom(int dev, const ct_cl_device *d, size_t nbytes, const char *why) {
    char want[32], total[32];
    return ct_error_set(CT_ERR_OOM, "OpenCL out of memory. Tried to allocate %s (%zu bytes) on opencl:%d (%s, %s total): %s",
                        ct_cl_format_bytes(nbytes, want, sizeof want), nbytes, dev, d->name,
                        ct_cl_format_bytes((size_t)d->global_mem, total, sizeof total), why);
}

static ct_status cl_alloc(int dev, size_t nbytes, void **handle) {
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    size_t n = nbytes ? nbytes : 1; /* OpenCL has no empty buffers */
    if (n > d->max_alloc) {
        char limit[32], why[96];
        snprintf(why, sizeof why, "larger than the device's largest buffer (%s)",
                 ct_cl_format_bytes((size_t)d->max_alloc, limit, sizeof limit));
        return oom(dev, d, nbytes, why);
    }
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->context, CL_MEM_READ_WRITE, n, NULL, &err);
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY ||
        err == CL_INVALID_BUFFER_SIZE)
        return oom(dev, d, nbytes, ct_cl_error_name(err));
    if (err != CL_SUCCESS)
        return ct_error_set(CT_ERR_BACKEND, "opencl:%d: clCreateBuffer of %zu bytes failed: %s (%d)", dev, nbytes,
                            ct_cl_error_name(err), (int)err);
    atomic_fetch_add(&d->held_bytes, (unsigned long long)n);
    *handle = m;
    return CT_OK;
}

/* Pending commands keep the buffer alive: OpenCL deletes it once they end. */
static void cl_free(int dev, void *handle) {
    if (!handle) return;
    ct_cl_device *d = ct_cl_dev(dev);
    size_t n = 0;
    if (d && clGetMemObjectInfo((cl_mem)handle, CL_MEM_SIZE, sizeof n, &n, NULL) == CL_SUCCESS)
        atomic_fetch_sub(&d->held_bytes, (unsigned long long)n);
    clReleaseMemObject((cl_mem)handle);
}

static ct_status transfer(int dev, void *handle, size_t off, void *host, size_t n, bool to_device, bool blocking,
                          void *stream) {
    if (n == 0) return CT_OK;
    if (!ct_cl_ready(dev)) return ct_last_status();
    cl_command_queue q = queue_or_current(dev, stream);
    if (!q) return ct_last_status();
    cl_bool block = blocking ? CL_TRUE : CL_FALSE;
    if (to_device)
        CT_CL_TRY(clEnqueueWriteBuffer(q, (cl_mem)handle, block, off, n, host, 0, NULL, NULL));
    else
        CT_CL_TRY(clEnqueueReadBuffer(q, (cl_mem)handle, block, off, n, host, 0, NULL, NULL));
    if (!blocking) CT_CL_TRY(clFlush(q));
    return CT_OK;
}

/* Blocking: the source is pageable user memory that may change right after. */
static ct_status cl_write(int dev, void *handle, size_t off, const void *src, size_t n) {
    return transfer(dev, handle, off, (void *)src, n, true, true, NULL);
}

/* Blocking on the current queue, so earlier work on it finishes first. */
static ct_status cl_read(int dev, void *handle, size_t off, void *dst, size_t n) {
    return transfer(dev, handle, off, dst, n, false, true, NULL);
}

static ct_status cl_write_async(int dev, void *handle, size_t off, const void *src, size_t n, void *stream) {
    return transfer(dev, handle, off, (void *)src, n, true, false, stream);
}

static ct_status cl_read_async(int dev, void *handle, size_t off, void *dst, size_t n, void *stream) {
    return transfer(dev, handle, off, dst, n, false, false, stream);
}

/* AMD's drivers report free memory (in KiB); elsewhere free = total minus
 * what this process holds. */
static ct_status cl_mem_get_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d) return ct_last_status();
    size_t total = (size_t)d->global_mem, held = (size_t)atomic_load(&d->held_bytes);
    size_t free_now = held < total ? total - held : 0;
    size_t amd_free_kib[2] = {0, 0};
    if (d->amd_free_memory &&
        clGetDeviceInfo(d->id, 0x4039 /* CL_DEVICE_GLOBAL_FREE_MEMORY_AMD */, sizeof amd_free_kib, amd_free_kib,
                        NULL) == CL_SUCCESS)
        free_now = amd_free_kib[0] * 1024 < total ? amd_free_kib[0] * 1024 : total;
    if (free_bytes) *free_bytes = free_now;
    if (total_bytes) *total_bytes = total;
    return CT_OK;
}

/* ---- streams: in-order queues with profiling -------------------------------------------- */

/* OpenCL 1.2 queues have no priorities: the core records the value. */
static ct_status cl_stream_create(int dev, int priority, void **stream) {
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    cl_command_queue q = NULL;
    CT_TRY(create_queue(d, dev, &q));
    *stream = q;
    return CT_OK;
}

static void cl_stream_destroy(int dev, void *stream) {
    if (!stream) return;
    ct_cl_device *d = ct_cl_dev(dev);
    if (d) unregister_queue(d, (cl_command_queue)stream);
    clReleaseCommandQueue((cl_command_queue)stream); /* flushes; queued work still runs */
}

static ct_status cl_stream_synchronize(int dev, void *stream) {
    cl_command_queue q = queue_to_inspect(dev, stream);
    if (!q) return ct_last_status();
    CT_CL_TRY(clFinish(q));
    set_idle(dev, q, true);
    return CT_OK;
}

static ct_status event_status(int dev, cl_event ev, bool *done) {
    cl_int status = CL_COMPLETE;
    CT_CL_TRY(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    if (status < 0)
        return ct_error_set(CT_ERR_BACKEND, "opencl:%d: a command on the stream failed: %s (%d)", dev,
                            ct_cl_error_name(status), (int)status);
    *done = status == CL_COMPLETE;
    return CT_OK;
}

/* A marker completes when everything queued before it has. Drivers complete
 * even a marker on an idle queue asynchronously (PoCL: tens of microseconds,
 * milliseconds when the machine is busy), so the answer is awaited for a few
 * milliseconds, sleeping to leave the CPU to the driver, before saying
 * "still busy". */
static ct_status cl_stream_query(int dev, void *stream, bool *done) {
    cl_command_queue q = queue_to_inspect(dev, stream);
    if (!q) return ct_last_status();
    if (is_idle(dev, q)) {
        *done = true;
        return CT_OK;
    }
    cl_event ev;
    CT_CL_TRY(clEnqueueMarkerWithWaitList(q, 0, NULL, &ev));
    cl_int err = clFlush(q);
    ct_status st = CT_OK;
    long waited_us = 0, nap_us = 20;
    while (err == CL_SUCCESS && (st = event_status(dev, ev, done)) == CT_OK && !*done && waited_us < 5000) {
        struct timespec nap = {0, nap_us * 1000};
        nanosleep(&nap, NULL);
        waited_us += nap_us;
        if (nap_us < 500) nap_us *= 2;
    }
    clReleaseEvent(ev);
    CT_CL_TRY(err);
    if (st == CT_OK && *done) set_idle(dev, q, true);
    return st;
}

/* CUDA's convention, which PyTorch exposes: (least, greatest) = (0, -1). */
static void cl_priority_range(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -1;
}

/* ---- events: markers --------------------------------------------------------------------- */

typedef struct cl_event_obj {
    cl_event marker; /* NULL until recorded */
    bool timing;
} cl_event_obj;

static ct_status cl_event_create(int dev, bool enable_timing, void **event) {
    cl_event_obj *e = calloc(1, sizeof *e);
    if (!e) return ct_error_set(CT_ERR_OOM, "opencl: out of host memory creating an event");
    e->timing = enable_timing;
    *event = e;
    return CT_OK;
}

static void cl_event_destroy(int dev, void *event) {
    cl_event_obj *e = event;
    if (!e) return;
    if (e->marker) clReleaseEvent(e->marker);
    free(e);
}

static ct_status cl_event_record(int dev, void *event, void *stream) {
    cl_event_obj *e = event;
    cl_command_queue q = queue_or_current(dev, stream);
    if (!q) return ct_last_status();
    cl_event ev;
    CT_CL_TRY(clEnqueueMarkerWithWaitList(q, 0, NULL, &ev));
    if (e->marker) clReleaseEvent(e->marker);
    e->marker = ev;
    CT_CL_TRY(clFlush(q)); /* so that waiting on the marker cannot wait forever */
    return CT_OK;
}

static ct_status cl_event_query(int dev, void *event, bool *done) {
    cl_event_obj *e = event;
    *done = true;
    return e->marker ? event_status(dev, e->marker, done) : CT_OK;
}

static ct_status cl_event_synchronize(int dev, void *event) {
    cl_event_obj *e = event;
    if (e->marker) CT_CL_TRY(clWaitForEvents(1, &e->marker));
    return CT_OK;
}

/* Events of another platform cannot enter this queue's wait list: then the
 * host waits instead. */
static ct_status cl_stream_wait_event(int dev, void *stream, void *event) {
    cl_event_obj *e = event;
    if (!e->marker) return CT_OK;
    cl_command_queue q = queue_or_current(dev, stream);
    if (!q) return ct_last_status();
    cl_context qc = NULL, ec = NULL;
    CT_CL_TRY(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL));
    CT_CL_TRY(clGetEventInfo(e->marker, CL_EVENT_CONTEXT, sizeof ec, &ec, NULL));
    if (qc == ec)
        CT_CL_TRY(clEnqueueBarrierWithWaitList(q, 1, &e->marker, NULL));
    else
        CT_CL_TRY(clWaitForEvents(1, &e->marker));
    return CT_OK;
}

static ct_status cl_event_elapsed_ms(int dev, void *start, void *end, float *ms) {
    cl_event_obj *s = start, *e = end;
    CT_CHECK_STATUS(s->marker && e->marker, CT_ERR_STATE,
                    "elapsed_time: both events must be recorded before calculating elapsed time");
    CT_CHECK_STATUS(s->timing && e->timing, CT_ERR_STATE,
                    "elapsed_time: both events must be created with enable_timing=True");
    cl_ulong t0 = 0, t1 = 0;
    CT_CL_TRY(clGetEventProfilingInfo(s->marker, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL));
    CT_CL_TRY(clGetEventProfilingInfo(e->marker, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
    return CT_OK;
}

/* ---- pinned host memory: mapped CL_MEM_ALLOC_HOST_PTR buffers ---------------------------- */

typedef struct pinned_block {
    struct pinned_block *next;
    void *ptr;
    cl_mem buffer;
} pinned_block;

static pinned_block *g_pinned;
static pthread_mutex_t g_pinned_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Allocated in opencl:0's context: page-locked memory serves transfers to
 * every device of the platform (and is plain host memory for the others). */
static ct_status cl_host_alloc(size_t nbytes, void **ptr) {
    if (ct_cl_count() == 0)
        return ct_error_set(CT_ERR_DEVICE, "pin_memory: no OpenCL devices are available");
    ct_cl_device *d = ct_cl_ready(0);
    if (!d) return ct_last_status();
    pinned_block *b = malloc(sizeof *b);
    if (!b) return ct_error_set(CT_ERR_OOM, "pin_memory: out of host memory");
    size_t n = nbytes ? nbytes : 1;
    cl_int err = CL_SUCCESS;
    b->buffer = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    if (err == CL_SUCCESS) {
        b->ptr = clEnqueueMapBuffer(d->queue, b->buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, NULL, NULL,
                                    &err);
        if (err != CL_SUCCESS) clReleaseMemObject(b->buffer);
    }
    if (err != CL_SUCCESS) {
        free(b);
        char want[32];
        return ct_error_set(CT_ERR_OOM, "pin_memory: could not allocate %s of page-locked memory: %s (%d)",
                            ct_cl_format_bytes(nbytes, want, sizeof want), ct_cl_error_name(err), (int)err);
    }
    pthread_mutex_lock(&g_pinned_mutex);
    b->next = g_pinned;
    g_pinned = b;
    pthread_mutex_unlock(&g_pinned_mutex);
    *ptr = b->ptr;
    return CT_OK;
}

static void cl_host_free(void *ptr) {
    if (!ptr) return;
    pthread_mutex_lock(&g_pinned_mutex);
    pinned_block **link = &g_pinned;
    while (*link && (*link)->ptr != ptr) link = &(*link)->next;
    pinned_block *b = *link;
    if (b) *link = b->next;
    pthread_mutex_unlock(&g_pinned_mutex);
    if (!b) return;
    ct_cl_device *d = ct_cl_ready(0);
    if (d) {
        clEnqueueUnmapMemObject(d->queue, b->buffer, b->ptr, 0, NULL, NULL);
        clFinish(d->queue);
    }
    clReleaseMemObject(b->buffer);
    free(b);
}

/* ---- the tables --------------------------------------------------------------------------- */

/* A device without cl_khr_fp64 gets no double kernels: every float64 op
 * declines there. */
static bool cl_supports(int dev, const char *op, ct_dtype dtype) {
    (void)op;
    return dtype != CT_FLOAT64 || ct_clops_has_fp64(dev);
}

/* The shared GPU table, with CLBlast's matmul and the fp64 query over it. */
static ct_backend_ops g_cl_ops;

static void cl_prepare(void) {
    g_cl_ops = ct_gpu_ops;
    g_cl_ops.matmul = ct_cl_matmul;
    g_cl_ops.supports = cl_supports;
}

/* What the core asks of OpenCL by name (ct_backend.get_proc). */
static ct_backend_proc cl_get_proc(const char *name) {
    if (!strcmp(name, "kernel_ops")) return (ct_backend_proc)ct_cl_kernel_ops;
    return NULL;
}

const ct_backend ct_opencl_backend = {
    .api_version = CT_BACKEND_API_VERSION,
    .name = "opencl",
    .type = CT_DEVICE_OPENCL,
    .gpu = &ct_cl_gpu,
    .prepare = cl_prepare,
    .ops = &g_cl_ops,
    .get_proc = cl_get_proc,
    .device_count = cl_device_count,
    .device_name = cl_device_name,
    .device_properties = cl_device_properties,
    .synchronize = cl_synchronize,
    .alloc = cl_alloc,
    .free = cl_free,
    .write = cl_write,
    .read = cl_read,
    .uses_caching_allocator = true,
    .mem_get_info = cl_mem_get_info,
    .stream_create = cl_stream_create,
    .stream_destroy = cl_stream_destroy,
    .stream_synchronize = cl_stream_synchronize,
    .stream_query = cl_stream_query,
    .priority_range = cl_priority_range,
    .event_create = cl_event_create,
    .event_destroy = cl_event_destroy,
    .event_record = cl_event_record,
    .event_query = cl_event_query,
    .event_synchronize = cl_event_synchronize,
    .stream_wait_event = cl_stream_wait_event,
    .event_elapsed_ms = cl_event_elapsed_ms,
    .write_async = cl_write_async,
    .read_async = cl_read_async,
    .host_alloc = cl_host_alloc,
    .host_free = cl_host_free,
};
