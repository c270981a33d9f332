/*
 * backend.h — the interface every backend implements (internal).
 *
 * The core validates arguments, infers shapes and dtypes, allocates outputs
 * and then calls one entry of a backend's ops table (ct_backend_ops); the
 * rest of the table (ct_backend) is the runtime: devices, memory, streams,
 * events, host transfers. It names no backend: the
 * table for a device type comes from ct_backend_for() (src/backends/
 * registry.c, the only file that knows which backends were compiled in).
 *
 * Tensors reach a backend as ct_kview values: a storage handle, an element
 * offset, dtype, shape and strides. For the CPU the handle is a host pointer;
 * for a device it is whatever the backend's alloc returned (an OpenCL buffer
 * is a handle, not an address, so kernels always take handle + offset).
 *
 * Contracts (the core guarantees these before calling):
 *  - all views of one call live on the same device as the backend;
 *  - `out` views are freshly allocated and contiguous unless stated;
 *  - inputs of unary/binary/where already have the compute dtype and the
 *    output's shape (broadcast dims have stride 0);
 *  - a backend returns CT_OK or sets an error with ct_error_set and returns
 *    its code. Device backends enqueue on the current stream of the device
 *    (cti_current_stream_handle in runtime.h) and return before the work is
 *    done; `read` waits for the current stream before copying.
 */
#ifndef CT_CORE_BACKEND_H
#define CT_CORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctorch/device.h"
#include "ctorch/dtype.h"
#include "ctorch/status.h"
#include "ctorch/tensor.h"

#define CT_BACKEND_API_VERSION 1

struct ct_memory_stats; /* ctorch/memory.h */

typedef struct ct_kview {
    void *data;                   /* storage base: host pointer or backend handle */
    int64_t offset;               /* elements from data to element 0 */
    ct_dtype dtype;
    int ndim;
    int device;                   /* device index within the backend */
    ct_device_type device_type;   /* whose handle `data` is (shared GPU code needs it) */
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS]; /* elements; 0 on broadcast dims */
} ct_kview;

/* Elementwise ops, numbered from the lists the kernels number them from
 * (src/kernels/unary_ops.def, binary_ops.def). Parameters: leaky_relu's p0
 * is the negative slope; clamp's p0/p1 are lo/hi (NAN: no bound); add and
 * sub compute a + alpha * b and a - alpha * b. Comparisons, logical ops,
 * isnan/isinf/isfinite and logical_not return bool (ct_*_facts_of). */
typedef enum ct_unary_op {
#define CT_UNARY_OP(code, ...) CT_UN_##code,
#include "kernels/unary_ops.def"
#undef CT_UNARY_OP
    CT_UN_COUNT_
} ct_unary_op;

typedef enum ct_binary_op {
#define CT_BINARY_OP(code, ...) CT_BIN_##code,
#include "kernels/binary_ops.def"
#undef CT_BINARY_OP
    CT_BIN_COUNT_
} ct_binary_op;

/* The flags column of unary_ops.def, binary_ops.def and reduce_ops.def. */
enum {
    CT_OPF_FLOATING = 1 << 0,       /* a floating function: integer inputs give the default float */
    CT_OPF_INT_KERNEL = 1 << 1,     /* kernels exist for integer dtypes (and bool) */
    CT_OPF_BOOL_RESULT = 1 << 2,    /* returns bool (isnan, comparisons, logical ops) */
    CT_OPF_NO_BOOL = 1 << 3,        /* refuses bool inputs, as PyTorch does */
    CT_OPF_POSITIVE = 1 << 4,       /* defined for positive inputs (tests draw those) */
    CT_OPF_ANY_ZERO_SIGN = 1 << 5,  /* the sign of a zero result is unspecified */
    CT_OPF_INT_DIVISION = 1 << 6,   /* integer division: a zero divisor is an error */
    CT_OPF_TAME = 1 << 7,           /* results overflow easily: tests draw small inputs */
    CT_OPF_EXTREME = 1 << 8,        /* reductions: picks an element (no identity, no empty rows) */
    CT_OPF_INDEX_RESULT = 1 << 9,   /* reductions: returns int64 indices */
    CT_OPF_INT_WIDENS = 1 << 10     /* reductions: integer inputs accumulate into int64 */
};

/* The facts of an elementwise op (core/op_facts.c makes them from the .def
 * lines; read by the front-ends, every backend, the autograd rules and the
 * tests). */
typedef struct ct_unary_facts {
    const char *name;       /* "exp", as messages name it */
    const char *node;       /* autograd node ("ExpBackward0"); NULL: not differentiable */
    bool floating;          /* CT_OPF_FLOATING */
    bool integer_kernel;    /* CT_OPF_INT_KERNEL */
    bool bool_result;       /* CT_OPF_BOOL_RESULT */
    unsigned flags;         /* all of them */
} ct_unary_facts;
typedef struct ct_binary_facts {
    const char *name;
    const char *node;
    bool bool_result;       /* comparisons and logical ops */
    unsigned flags;
} ct_binary_facts;
/* Never NULL: an unknown op gets a row named "unary"/"binary". */
const ct_unary_facts *ct_unary_facts_of(ct_unary_op op);
const ct_binary_facts *ct_binary_facts_of(ct_binary_op op);

/* Reductions, numbered from src/kernels/reduce_ops.def as the kernels
 * number them. MAX/MIN: out_index (int64) optional, first occurrence;
 * ARGMAX/ARGMIN: out is int64; VAR: param = correction (std is its sqrt). */
typedef enum ct_reduce_op {
#define CT_REDUCE_OP(code, ...) CT_RED_##code,
#include "kernels/reduce_ops.def"
#undef CT_REDUCE_OP
    CT_RED_COUNT_
} ct_reduce_op;

typedef struct ct_reduce_facts {
    const char *name;       /* "amax", as messages name it */
    unsigned flags;         /* CT_OPF_EXTREME, CT_OPF_INDEX_RESULT, CT_OPF_INT_WIDENS, CT_OPF_FLOATING */
} ct_reduce_facts;
/* Never NULL: an unknown op gets a row named "reduce". */
const ct_reduce_facts *ct_reduce_facts_of(ct_reduce_op op);

typedef enum ct_random_kind {
    CT_RAND_UNIFORM,              /* [a, b) */
    CT_RAND_NORMAL,               /* mean a, std b */
    CT_RAND_INT                   /* integers in [a, b) */
} ct_random_kind;

struct ct_gpu_device; /* src/backends/gpu/gpu.h */
/* A backend-specific function, cast back to its own type by the caller. */
typedef void (*ct_backend_proc)(void);

/* What a backend computes: every entry takes ct_kviews of one device. A
 * GPU backend's table is a copy of the shared one (src/backends/gpu/,
 * ct_gpu_ops) with its own entries put over it (copy-and-override, in its
 * prepare hook); nothing forwards to anything. */
typedef struct ct_backend_ops {
    /* data movement on one device: dst[i] = (dst.dtype) src[i]; any strides,
     * same shape; dst may be a non-contiguous view. */
    ct_status (*copy)(const ct_kview *dst, const ct_kview *src);
    ct_status (*fill)(const ct_kview *dst, double value);                 /* any strides */
    ct_status (*arange)(const ct_kview *dst, double start, double step);  /* contiguous */
    /* Philox4x32-10 stream, dst contiguous: element i is computed from
     * (seed, offset, i) exactly as src/kernels/philox.h maps it. */
    ct_status (*random)(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset,
                        double a, double b);

    /* elementwise */
    ct_status (*unary)(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0, double p1);
    ct_status (*binary)(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                        double alpha);
    ct_status (*where)(const ct_kview *out, const ct_kview *cond, const ct_kview *a, const ct_kview *b);

    /* reductions: `in` is 2-D [O, R] with any strides; the R axis is reduced
     * into contiguous out [O] (and out_index [O], int64, for MAX/MIN when not
     * NULL). Input dtype equals output dtype except ARGMAX/ARGMIN (int64 out).
     * Float16/bfloat16 accumulate in float32. */
    ct_status (*reduce)(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index,
                        const ct_kview *in, double param);

    /* out [B, M, N] contiguous = a [B, M, K] @ b [B, K, N]; a and b may have
     * any strides (batch stride 0 when broadcast); all one dtype. */
    ct_status (*matmul)(const ct_kview *out, const ct_kview *a, const ct_kview *b);

    /* in and out contiguous, seen as [outer, dim, inner]; softmax over dim. */
    ct_status (*softmax)(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim,
                         int64_t inner, bool log);

    /* in contiguous [outer, dim_in, inner], index 1-D int64 contiguous [n],
     * out contiguous [outer, n, inner]. Indices already validated. */
    ct_status (*index_select)(const ct_kview *out, const ct_kview *in, const ct_kview *index,
                              int64_t outer, int64_t dim_in, int64_t inner);
    /* out (contiguous, index's shape)[...i_dim...] = in[...index[...]...];
     * index int64 contiguous; in any strides; indices already validated. */
    ct_status (*gather)(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim);

    /* ---- neural-network op families (issue 4), each a table of its own so
     * that a family can grow without touching this file. NULL: the backend
     * does not implement the family (the core reports "not implemented"). */
    const struct ct_backend_conv *conv;       /* src/core/backend_conv.h */
    const struct ct_backend_nn *nn;           /* src/core/backend_nn.h: pooling, norms, dropout, embedding */
    const struct ct_backend_loss *loss;       /* src/core/backend_loss.h: losses and optimizer updates */

    /* Optional: whether device dev runs op (its name as messages and the
     * harness give it: "add", "conv2d") in dtype. False exactly where the
     * backend declines with CT_ERR_UNSUPPORTED for that device's lack of a
     * capability (float64 on a GPU without fp64); an entry that is NULL is
     * unsupported whatever this says. NULL: everything the core accepts. */
    bool (*supports)(int dev, const char *op, ct_dtype dtype);
} ct_backend_ops;

/* A backend: who it is, its devices, memory, streams, events and host
 * transfers (the runtime), and its ops table. */
typedef struct ct_backend {
    int api_version;
    const char *name;
    ct_device_type type;
    /* GPU backends: the kernel-launch table the shared host code of
     * src/backends/gpu/ drives (NULL for the CPU). */
    const struct ct_gpu_device *gpu;
    /* Backend-specific entry points by name (ggml's get_proc_address), so
     * that the core can ask for them without naming the backend: NULL when
     * the backend has no such thing. Names in use: "cublas_version" and
     * "cudnn_version" (int (*)(void): 0 when the library is not found). */
    ct_backend_proc (*get_proc)(const char *name);
    /* Optional: called once, before ct_backend_for first returns any table
     * (it only fills tables: no device is touched). GPU backends build their
     * ops table here by copy-and-override. */
    void (*prepare)(void);
    /* the computations; never NULL */
    const ct_backend_ops *ops;

    /* devices */
    int (*device_count)(void);
    /* Optional: why device_count is 0, in the user's terms ("the NVIDIA
     * driver found no GPU"), for the core's "no ... devices" error. */
    void (*no_device_reason)(char *buf, size_t size);
    ct_status (*device_name)(int dev, char *buf, size_t size);
    ct_status (*device_properties)(int dev, ct_device_properties *out);  /* name already filled */
    ct_status (*synchronize)(int dev);

    /* memory: raw allocations and host transfers (read waits for the data) */
    ct_status (*alloc)(int dev, size_t nbytes, void **handle);
    void (*free)(int dev, void *handle);
    ct_status (*write)(int dev, void *handle, size_t byte_offset, const void *src, size_t nbytes);
    ct_status (*read)(int dev, void *handle, size_t byte_offset, void *dst, size_t nbytes);

    /* ---- device runtime (issue 3). Synchronous backends (cpu) leave these
     * NULL; the core then treats streams and events as already complete. ---- */
    /* alloc/free above are raw segment calls for the caching allocator */
    bool uses_caching_allocator;
    ct_status (*mem_get_info)(int dev, size_t *free_bytes, size_t *total_bytes);
    /* A backend without the caching allocator whose alloc/free keep their
     * own cache and statistics (the CPU's) reports them here, for
     * memory_stats, reset_*_memory_stats and empty_cache. NULL: all-zero
     * statistics and nothing to empty. */
    void (*memory_stats)(int dev, struct ct_memory_stats *out);  /* fills every field */
    void (*memory_reset_peak)(int dev);
    void (*memory_reset_accumulated)(int dev);
    void (*empty_cache)(int dev);
    /* streams: an in-order queue of work on one device */
    ct_status (*stream_create)(int dev, int priority, void **stream);
    void (*stream_destroy)(int dev, void *stream);
    ct_status (*stream_synchronize)(int dev, void *stream);
    ct_status (*stream_query)(int dev, void *stream, bool *done);
    void (*priority_range)(int *least, int *greatest);
    /* events: a marker in a stream; timing ones can measure elapsed time */
    ct_status (*event_create)(int dev, bool enable_timing, void **event);
    void (*event_destroy)(int dev, void *event);
    ct_status (*event_record)(int dev, void *event, void *stream);
    ct_status (*event_query)(int dev, void *event, bool *done);
    ct_status (*event_synchronize)(int dev, void *event);
    ct_status (*stream_wait_event)(int dev, void *stream, void *event);
    ct_status (*event_elapsed_ms)(int dev, void *start, void *end, float *ms);
    /* host transfers enqueued on a stream without waiting; the host memory
     * must stay valid until the stream reaches them (pinned memory) */
    ct_status (*write_async)(int dev, void *handle, size_t byte_offset, const void *src, size_t nbytes,
                             void *stream);
    ct_status (*read_async)(int dev, void *handle, size_t byte_offset, void *dst, size_t nbytes,
                            void *stream);
    /* page-locked host memory for fast and asynchronous transfers */
    ct_status (*host_alloc)(size_t nbytes, void **ptr);
    void (*host_free)(void *ptr);
} ct_backend;

/* registry.c: the table for a device type, or NULL when not compiled in
 * (every compiled-in backend's prepare hook has run before it returns). */
const ct_backend *ct_backend_for(ct_device_type type);
/* Whether device dev of backend b runs op in dtype (ct_backend_ops.supports;
 * true when the backend has no such hook). */
bool ct_backend_supports(const ct_backend *b, int dev, const char *op, ct_dtype dtype);

#endif /* CT_CORE_BACKEND_H */
