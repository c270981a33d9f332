/*
 * kernel_ext.c — users' own device kernels on ctorch tensors, and the
 * native handles behind tensors, streams and devices (ctorch/extension.h).
 *
 * The core's part: argument checks, the kernel dialect put in front of the
 * user's source (the same kdefs.h ctorch's own kernels are written in, so
 * one source is OpenCL C and CUDA C++), a cache so that compiling the same
 * kernel twice builds it once, and the translation of ct_karg values into
 * (buffer, byte offset) and (size, value) pairs. The backend's kernel_ops
 * (src/core/backend_kernel.h) compile and launch.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_kernel.h"
#include "error.h"
#include "internal.h"
#include "runtime.h"
#include "tensor_impl.h"

/* generated/kernel_dialect_source.c (cmake/embed_kernels.cmake). */
extern const char *const ct_kernel_dialect_lines[];
extern const size_t ct_kernel_dialect_line_count;

#define MAX_KERNEL_ARGS 64

struct ct_kernel {
    int refcount;                   /* under g_lock */
    ct_device device;
    const ct_backend_kernel *ops;
    void *handle;                   /* the backend's compiled kernel */
    int num_args;                   /* -1: unknown */
    char *name, *source, *options;  /* the cache key, with device */
    pthread_mutex_t launch_lock;    /* an OpenCL kernel object's arguments are shared state */
    struct ct_kernel *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_kernel *g_kernels;

/* ---- the dialect ----------------------------------------------------------------------- */

static char *g_dialect;
static pthread_once_t g_dialect_once = PTHREAD_ONCE_INIT;

static void join_dialect(void) {
    size_t n = 1;
    for (size_t i = 0; i < ct_kernel_dialect_line_count; i++) n += strlen(ct_kernel_dialect_lines[i]);
    g_dialect = malloc(n);
    if (!g_dialect) return;
    char *p = g_dialect;
    for (size_t i = 0; i < ct_kernel_dialect_line_count; i++) {
        size_t len = strlen(ct_kernel_dialect_lines[i]);
        memcpy(p, ct_kernel_dialect_lines[i], len);
        p += len;
    }
    *p = '\0';
}

const char *ct_kernel_dialect_source(void) {
    pthread_once(&g_dialect_once, join_dialect);
    return g_dialect ? g_dialect : "";
}

/* ---- the backend's kernel table ------------------------------------------------------- */

static const ct_backend_kernel *kernel_ops_of(ct_device d, const char *what) {
    const ct_backend *b = ct_backend_for(d.type);
    ct_backend_proc f = b && b->get_proc ? b->get_proc("kernel_ops") : NULL;
    const ct_backend_kernel *ops = f ? ((ct_backend_kernel_fn)f)() : NULL;
    if (!ops)
        ct_error_set(CT_ERR_UNSUPPORTED, "%s: the %s device has no kernel compiler (user kernels run on opencl and cuda "
                     "devices)", what, ct_device_type_name(d.type));
    return ops;
}

/* ---- compile -------------------------------------------------------------------------- */

static bool same_key(const ct_kernel *k, ct_device d, const char *source, const char *name, const char *options) {
    return ct_device_equal(k->device, d) && !strcmp(k->name, name) && !strcmp(k->options, options) &&
           !strcmp(k->source, source);
}

static void kernel_destroy(ct_kernel *k) {
    if (!k) return;
    if (k->handle) k->ops->release(k->device.index, k->handle);
    pthread_mutex_destroy(&k->launch_lock);
    free(k->name);
    free(k->source);
    free(k->options);
    free(k);
}

static ct_kernel *build(ct_device d, const ct_backend_kernel *ops, const char *source, const char *name,
                        const char *options) {
    const char *dialect = ct_kernel_dialect_source();
    CT_CHECK_NULL(*dialect, CT_ERR_OOM, "kernel_compile: out of host memory");
    ct_kernel *k = calloc(1, sizeof *k);
    /* The user's lines keep their own numbers in the compiler's messages. */
    size_t n = strlen(dialect) + strlen(name) + strlen(source) + 32;
    char *full = malloc(n);
    if (!k || !full || !(k->name = strdup(name)) || !(k->source = strdup(source)) ||
        !(k->options = strdup(options))) {
        free(full);
        kernel_destroy(k);
        ct_error_set(CT_ERR_OOM, "kernel_compile: out of host memory");
        return NULL;
    }
    pthread_mutex_init(&k->launch_lock, NULL);
    k->refcount = 1;
    k->device = d;
    k->ops = ops;
    snprintf(full, n, "%s\n#line 1 \"%s\"\n%s\n", dialect, name, source);
    ct_status st = ops->compile(d.index, full, name, options, &k->handle);
    free(full);
    if (st != CT_OK) {
        k->handle = NULL;
        kernel_destroy(k);
        return NULL;
    }
    k->num_args = ops->num_args ? ops->num_args(d.index, k->handle) : -1;
    return k;
}

ct_kernel *ct_kernel_compile(ct_device dev, const char *source, const char *name, const char *options) {
    CT_CHECK_NULL(source && name, CT_ERR_INVALID_ARG, "kernel_compile: NULL %s", source ? "kernel name" : "source");
    CT_CHECK_NULL(*name, CT_ERR_INVALID_ARG, "kernel_compile: empty kernel name");
    ct_device d;
    if (ct_device_check(dev, &d) != CT_OK) return NULL;
    const ct_backend_kernel *ops = kernel_ops_of(d, "kernel_compile");
    if (!ops) return NULL;
    if (!options) options = "";
    pthread_mutex_lock(&g_lock);
    for (ct_kernel *k = g_kernels; k; k = k->next)
        if (same_key(k, d, source, name, options)) {
            k->refcount++;
            pthread_mutex_unlock(&g_lock);
            return k;
        }
    pthread_mutex_unlock(&g_lock);
    /* Built outside the lock: compiles take long, and another thread may
     * build the same kernel meanwhile; the first to register wins. */
    ct_kernel *k = build(d, ops, source, name, options);
    if (!k) return NULL;
    pthread_mutex_lock(&g_lock);
    for (ct_kernel *o = g_kernels; o; o = o->next)
        if (same_key(o, d, source, name, options)) {
            o->refcount++;
            pthread_mutex_unlock(&g_lock);
            kernel_destroy(k);
            return o;
        }
    k->next = g_kernels;
    g_kernels = k;
    pthread_mutex_unlock(&g_lock);
    return k;
}

void ct_kernel_free(ct_kernel *k) {
    if (!k) return;
    pthread_mutex_lock(&g_lock);
    bool last = --k->refcount == 0;
    if (last)
        for (ct_kernel **p = &g_kernels; *p; p = &(*p)->next)
            if (*p == k) {
                *p = k->next;
                break;
            }
    pthread_mutex_unlock(&g_lock);
    if (last) kernel_destroy(k);
}

ct_device ct_kernel_device(const ct_kernel *k) { return k ? k->device : ct_device_cpu(); }

/* ---- launch --------------------------------------------------------------------------- */

static size_t karg_value_size(ct_karg_kind kind) {
    switch (kind) {
    case CT_KARG_INT32: return sizeof(int32_t);
    case CT_KARG_INT64: return sizeof(int64_t);
    case CT_KARG_FLOAT32: return sizeof(float);
    case CT_KARG_FLOAT64: return sizeof(double);
    default: return 0;
    }
}

static ct_status translate_arg(const ct_kernel *k, const ct_karg *a, int i, ct_kernel_launch_arg *out,
                               const ct_tensor **first_tensor) {
    memset(out, 0, sizeof *out);
    if (a->kind != CT_KARG_TENSOR) {
        out->size = karg_value_size(a->kind);
        CT_CHECK_STATUS(out->size > 0, CT_ERR_INVALID_ARG, "kernel_launch(%s): argument %d has kind %d, not a "
                        "ct_karg_* value", k->name, i, (int)a->kind);
        out->value = &a->v;
        return CT_OK;
    }
    const ct_tensor *t = a->v.tensor;
    CT_CHECK_OBJ_STATUS(t, "kernel_launch(%s): argument %d is a NULL tensor", k->name, i);
    if (!ct_device_equal(t->storage->device, k->device)) {
        char td[32], kd[32];
        return ct_error_set(CT_ERR_DEVICE, "kernel_launch(%s): argument %d is on %s, the kernel on %s", k->name, i,
                            ct_device_format(t->storage->device, td, sizeof td),
                            ct_device_format(k->device, kd, sizeof kd));
    }
    out->is_buffer = true;
    out->handle = t->storage->data;
    out->byte_offset = t->storage->byte_offset + (size_t)t->offset * ct_dtype_size(t->dtype);
    if (!*first_tensor) *first_tensor = t;
    return CT_OK;
}

ct_status ct_kernel_launch(ct_kernel *k, int64_t global, int local, const ct_karg *args, int nargs) {
    CT_CHECK_OBJ_STATUS(k, "kernel_launch: NULL kernel");
    CT_CHECK_STATUS(global >= 0 && local >= 0, CT_ERR_INVALID_ARG,
                    "kernel_launch(%s): global %lld and local %d must not be negative", k->name, (long long)global,
                    local);
    CT_CHECK_STATUS(nargs >= 0 && nargs <= MAX_KERNEL_ARGS && (args || nargs == 0), CT_ERR_INVALID_ARG,
                    "kernel_launch(%s): %d arguments (at most %d, and an array for them)", k->name, nargs,
                    MAX_KERNEL_ARGS);
    CT_CHECK_STATUS(k->num_args < 0 || k->num_args == nargs, CT_ERR_INVALID_ARG,
                    "kernel_launch(%s): the kernel takes %d arguments, %d given", k->name, k->num_args, nargs);
    ct_kernel_launch_arg la[MAX_KERNEL_ARGS];
    const ct_tensor *first = NULL;
    for (int i = 0; i < nargs; i++) CT_TRY(translate_arg(k, &args[i], i, &la[i], &first));
    if (global == 0) return CT_OK;
    pthread_mutex_lock(&k->launch_lock);
    ct_status st = CTI_PROFILED(first, k->name,
                                k->ops->launch(k->device.index, k->handle, la, nargs, (size_t)global, (size_t)local));
    pthread_mutex_unlock(&k->launch_lock);
    return st;
}

/* ---- native handles ------------------------------------------------------------------- */

ct_status ct_tensor_native_buffer(const ct_tensor *t, ct_native_buffer *out) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "tensor_native_buffer: NULL output");
    memset(out, 0, sizeof *out);
    CT_CHECK_OBJ_STATUS(t, "tensor_native_buffer: NULL tensor");
    const ct_storage *s = t->storage;
    size_t es = ct_dtype_size(t->dtype);
    int64_t last = 0; /* the farthest element the strides reach */
    bool empty = false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) empty = true;
        else last += (t->shape[d] - 1) * (t->strides[d] > 0 ? t->strides[d] : 0);
    }
    out->device = s->device;
    out->buffer = s->data;
    out->byte_offset = s->byte_offset + (size_t)t->offset * es;
    out->nbytes = empty ? 0 : (size_t)(last + 1) * es;
    if (s->device.type == CT_DEVICE_CPU) {
        out->buffer = (char *)s->data + out->byte_offset;
        out->byte_offset = 0;
        out->ptr = out->buffer;
        return CT_OK;
    }
    const ct_backend_kernel *ops = kernel_ops_of(s->device, "tensor_native_buffer");
    out->ptr = ops && ops->address ? ops->address(s->data, out->byte_offset) : NULL;
    ct_clear_error(); /* a backend without kernel_ops still has its buffer */
    return CT_OK;
}

void *ct_stream_native_handle(const ct_stream *s) { return s ? s->handle : NULL; }

ct_status ct_device_native_handles(ct_device dev, ct_native_device *out) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "device_native_handles: NULL output");
    memset(out, 0, sizeof *out);
    out->cuda_ordinal = -1;
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    out->device = d;
    if (d.type == CT_DEVICE_CPU) return CT_OK;
    const ct_backend_kernel *ops = kernel_ops_of(d, "device_native_handles");
    if (!ops || !ops->native_device) return ct_last_status();
    CT_TRY(ops->native_device(d.index, out));
    out->device = d;
    return CT_OK;
}
