/*
 * ctorch/tensor.h — the tensor: creation, views, data access and ownership.
 *
 * OWNERSHIP RULES (read these first)
 *  1. Every function that returns a ct_tensor * returns a NEW REFERENCE that
 *     the caller owns. Give it back with ct_release(t). Views are new tensor
 *     handles that share storage with their base; the storage lives until the
 *     last handle on it is released.
 *  2. Scopes release temporaries for you. Between ct_scope_begin() and
 *     ct_scope_end() (or inside a CT_SCOPE { … } block) every reference a
 *     ctorch call returns is owned by the scope and released when it ends,
 *     unless you pass it out with ct_keep(t), which hands that reference to
 *     the enclosing scope (or to you, outside all scopes).
 *     Calling ct_release(t) inside a scope is allowed: it gives the reference
 *     back early and the scope forgets it.
 *  3. ct_retain(t) takes an extra reference, which is yours to release and is
 *     never owned by a scope. (References are interchangeable: inside a
 *     scope, ct_release(t) gives back the scope's reference first, so after
 *     ct_retain(t); ct_release(t); the remaining reference is yours.)
 *  4. Ops never take ownership of their inputs.
 *  5. Tensor handles and scopes are per thread: a scope only tracks tensors
 *     created on its own thread. Reference counts are atomic, so a tensor may
 *     be retained on one thread and released on another.
 *
 * Errors follow ctorch/status.h: NULL on failure, NULL inputs propagate.
 */
#ifndef CTORCH_TENSOR_H
#define CTORCH_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "device.h"
#include "dtype.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CT_MAX_DIMS 8

typedef struct ct_tensor ct_tensor;

/* A shape value: CT_SHAPE(2, 3) is a 2×3 shape, CT_SHAPE0 a 0-dim scalar. */
typedef struct ct_shape {
    int ndim;
    int64_t dims[CT_MAX_DIMS];
} ct_shape;

#define CT_SHAPE(...)                                                               \
    ((ct_shape){.ndim = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                .dims = {__VA_ARGS__}})
#define CT_SHAPE0 ((ct_shape){.ndim = 0, .dims = {0}})
/* A shape from an array. ndim outside [0, CT_MAX_DIMS] or NULL dims record
 * an error and give ndim -1, which every function taking a shape refuses. */
CT_API ct_shape ct_shape_make(int ndim, const int64_t *dims);

/* Every shape a tensor can have: at most CT_MAX_DIMS sizes, none negative,
 * and their product with zero sizes counted as one at most INT64_MAX, so
 * that element counts and contiguous strides cannot overflow. Creation,
 * views, reshape, expand and the file readers refuse other shapes with
 * CT_ERR_SHAPE ("Stride calculation overflowed" / "numel: integer
 * multiplication overflow", as PyTorch), also when a zero size makes the
 * tensor empty. */

/* Options for creation functions, passed as designated initialisers:
 *   ct_zeros(CT_SHAPE(3, 4), .dtype = CT_FLOAT64, .device = dev)
 * Unset fields mean: default dtype, cpu, no grad. */
typedef struct ct_opts {
    int reserved_;      /* keeps the macros valid with no options; leave it   */
    ct_dtype dtype;
    ct_device device;
    bool requires_grad; /* recorded now, used once autograd lands            */
} ct_opts;
#define CT_OPTS(...) ((ct_opts){.reserved_ = 0, __VA_ARGS__})

/* ---- reference counting and scopes ------------------------------------- */
CT_API ct_tensor *ct_retain(ct_tensor *t);
CT_API void ct_release(ct_tensor *t);          /* NULL is a no-op */
CT_API int ct_refcount(const ct_tensor *t);    /* for tests and debugging */

CT_API void ct_scope_begin(void);
CT_API void ct_scope_end(void);
/* CT_SCOPE's own begin/end: `site` names the block (the address of its loop
 * variable), so that a block left by break, goto or return is closed later
 * (see CT_SCOPE). */
CT_API void ct_scope_begin_at(void *site);
CT_API void ct_scope_end_at(void *site);
CT_API ct_tensor *ct_keep(ct_tensor *t);       /* returns t */
CT_API int ct_scope_depth(void);
/* A block whose temporaries are released at its end:
 *   CT_SCOPE { ct_tensor *y = ct_relu(ct_mm(a, b)); … }   // y released here
 * `continue` inside it ends it normally. `break`, `goto` or `return` leave
 * it without its end (`break` leaves the CT_SCOPE's own loop, not yours);
 * such a scope is closed, and its temporaries released, at the next point
 * that can tell it was abandoned: the end of the CT_SCOPE around it, or the
 * next entry into the same CT_SCOPE in the same call. A function that
 * returns from inside a CT_SCOPE with no CT_SCOPE around its call keeps
 * the scope open: pass results out with ct_keep and let the block end, or
 * use ct_scope_begin/ct_scope_end yourself. */
#define CT_SCOPE CT_SCOPE_AT_(__LINE__)
#define CT_SCOPE_AT_(line) CT_SCOPE_NAMED_(CT_CONCAT_(ct_scope_once_, line))
#define CT_SCOPE_NAMED_(v) for (int v = (ct_scope_begin_at(&v), 1); v; v = (ct_scope_end_at(&v), 0))
#define CT_CONCAT_(a, b) CT_CONCAT2_(a, b)
#define CT_CONCAT2_(a, b) a##b

/* Number of live tensor handles and storages in the process: tests use them
 * to prove that nothing leaks. */
CT_API int64_t ct_live_tensors(void);
CT_API int64_t ct_live_storages(void);

/* ---- properties -------------------------------------------------------- */
/* A NULL tensor gives 0 (ct_size/ct_stride: -1), NULL or false and records
 * no error (it is normally the result of a call that already did). */
CT_API int ct_ndim(const ct_tensor *t);
CT_API int64_t ct_size(const ct_tensor *t, int dim);     /* negative dims count from the end */
CT_API int64_t ct_stride(const ct_tensor *t, int dim);   /* in elements */
CT_API ct_shape ct_shape_of(const ct_tensor *t);
CT_API const int64_t *ct_sizes(const ct_tensor *t);      /* ndim entries */
CT_API const int64_t *ct_strides(const ct_tensor *t);
CT_API int64_t ct_storage_offset(const ct_tensor *t);    /* in elements */
CT_API int64_t ct_numel(const ct_tensor *t);
CT_API ct_dtype ct_dtype_of(const ct_tensor *t);
CT_API ct_device ct_device_of(const ct_tensor *t);
CT_API size_t ct_element_size(const ct_tensor *t);
CT_API bool ct_is_contiguous(const ct_tensor *t);
CT_API bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b);
/* Host address of element 0 for CPU tensors; NULL for device tensors. */
CT_API void *ct_data_ptr(const ct_tensor *t);

/* ---- creation ----------------------------------------------------------- */
#define ct_empty(shape, ...) ct_empty_opts((shape), CT_OPTS(__VA_ARGS__))
#define ct_zeros(shape, ...) ct_zeros_opts((shape), CT_OPTS(__VA_ARGS__))
#define ct_ones(shape, ...) ct_ones_opts((shape), CT_OPTS(__VA_ARGS__))
#define ct_full(shape, value, ...) ct_full_opts((shape), (value), CT_OPTS(__VA_ARGS__))
#define ct_rand(shape, ...) ct_rand_opts((shape), CT_OPTS(__VA_ARGS__))
#define ct_randn(shape, ...) ct_randn_opts((shape), CT_OPTS(__VA_ARGS__))
#define ct_randint(low, high, shape, ...) ct_randint_opts((low), (high), (shape), CT_OPTS(__VA_ARGS__))
#define ct_arange(start, end, step, ...) ct_arange_opts((start), (end), (step), CT_OPTS(__VA_ARGS__))
#define ct_linspace(start, end, steps, ...) ct_linspace_opts((start), (end), (steps), CT_OPTS(__VA_ARGS__))
#define ct_eye(n, m, ...) ct_eye_opts((n), (m), CT_OPTS(__VA_ARGS__))
#define ct_scalar_tensor(value, ...) ct_full_opts(CT_SHAPE0, (value), CT_OPTS(__VA_ARGS__))

CT_API ct_tensor *ct_empty_opts(ct_shape shape, ct_opts o);
CT_API ct_tensor *ct_zeros_opts(ct_shape shape, ct_opts o);
CT_API ct_tensor *ct_ones_opts(ct_shape shape, ct_opts o);
CT_API ct_tensor *ct_full_opts(ct_shape shape, double value, ct_opts o);
/* Uniform [0, 1), standard normal, and integers in [low, high), drawn from
 * the default generator (ctorch/random.h); CT_DTYPE_DEFAULT means float32
 * for rand/randn and int64 for randint. */
CT_API ct_tensor *ct_rand_opts(ct_shape shape, ct_opts o);
CT_API ct_tensor *ct_randn_opts(ct_shape shape, ct_opts o);
CT_API ct_tensor *ct_randint_opts(int64_t low, int64_t high, ct_shape shape, ct_opts o);
/* [start, end) in steps; CT_DTYPE_DEFAULT gives int64 when all three are
 * whole numbers and the default float dtype otherwise, as torch.arange. */
CT_API ct_tensor *ct_arange_opts(double start, double end, double step, ct_opts o);
CT_API ct_tensor *ct_linspace_opts(double start, double end, int64_t steps, ct_opts o);
/* n×m identity (m <= 0 means m = n). */
CT_API ct_tensor *ct_eye_opts(int64_t n, int64_t m, ct_opts o);
/* Copy numel(shape) elements of dtype `src_dtype` from a C array. The result
 * has dtype o.dtype (or src_dtype when o.dtype is DEFAULT) and o.device. */
CT_API ct_tensor *ct_from_data(const void *data, ct_dtype src_dtype, ct_shape shape, ct_opts o);
/* torch.tensor(values), from a C array or a compound literal, with the
 * creation options after it:
 *   ct_tensor_from((float[]){1, 2, 3, 4}, CT_FLOAT32, CT_SHAPE(2, 2))
 *   ct_tensor_from(buf, CT_FLOAT64, CT_SHAPE(n), .dtype = CT_FLOAT32, .device = dev)
 * The arguments become one struct initialiser (ct_from_args), which is why
 * the commas inside a compound literal need no extra parentheses. */
typedef struct ct_from_args {
    const void *data;
    ct_dtype src_dtype;
    ct_shape shape;
    ct_dtype dtype;      /* the ct_opts fields, by the same names */
    ct_device device;
    bool requires_grad;
    int reserved_;       /* set by the macro; leave it */
} ct_from_args;
CT_API ct_tensor *ct_tensor_from_args(ct_from_args a);
#define ct_tensor_from(...) ct_tensor_from_args((ct_from_args){__VA_ARGS__, .reserved_ = 0})
/* Same shape/dtype/device as t, like torch.*_like. */
CT_API ct_tensor *ct_empty_like(const ct_tensor *t);
CT_API ct_tensor *ct_zeros_like(const ct_tensor *t);
CT_API ct_tensor *ct_ones_like(const ct_tensor *t);
CT_API ct_tensor *ct_full_like(const ct_tensor *t, double value);
CT_API ct_tensor *ct_rand_like(const ct_tensor *t);
CT_API ct_tensor *ct_randn_like(const ct_tensor *t);

/* ---- views (share storage; see ownership rule 1) ------------------------ */
CT_API ct_tensor *ct_view(const ct_tensor *t, ct_shape shape);      /* one dim may be -1 */
CT_API ct_tensor *ct_reshape(const ct_tensor *t, ct_shape shape);   /* view if possible, else copy */
CT_API ct_tensor *ct_as_strided(const ct_tensor *t, ct_shape shape, const int64_t *strides, int64_t offset);
CT_API ct_tensor *ct_permute(const ct_tensor *t, const int *dims);  /* ndim entries */
CT_API ct_tensor *ct_transpose(const ct_tensor *t, int dim0, int dim1);
CT_API ct_tensor *ct_t(const ct_tensor *t);                         /* 2-D transpose (≤2-D) */
CT_API ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length);
/* t[start:end:step] along dim, Python slice rules (negative and clamped ends). */
CT_API ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
CT_API ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index);
CT_API ct_tensor *ct_expand(const ct_tensor *t, ct_shape shape);    /* -1 keeps a size */
CT_API ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *other);
CT_API ct_tensor *ct_squeeze(const ct_tensor *t);                   /* all size-1 dims */
CT_API ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim);
CT_API ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim);
CT_API ct_tensor *ct_flatten(const ct_tensor *t, int start_dim, int end_dim);
CT_API ct_tensor *ct_unflatten(const ct_tensor *t, int dim, ct_shape sizes);
/* t itself (a new reference) when already contiguous, else a contiguous copy. */
CT_API ct_tensor *ct_contiguous(const ct_tensor *t);
CT_API ct_tensor *ct_clone(const ct_tensor *t);
CT_API ct_tensor *ct_detach(const ct_tensor *t);                    /* same storage, no graph */

/* ---- conversion and data movement --------------------------------------- */
/* torch.Tensor.to: returns t itself (new reference) when dtype and device
 * already match, else a copy. CT_DTYPE_DEFAULT keeps the dtype. */
CT_API ct_tensor *ct_to(const ct_tensor *t, ct_device device, ct_dtype dtype);
CT_API ct_tensor *ct_to_device(const ct_tensor *t, ct_device device);
CT_API ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dtype);
CT_API ct_tensor *ct_cpu(const ct_tensor *t);
/* .to(device, non_blocking=True). From pinned CPU memory to a device, and
 * from a device to the CPU (into new pinned memory), the copy is only
 * enqueued on the current stream: synchronize (the stream, an event or the
 * device) before reading the result on the host or writing to the source.
 * In every other case it behaves as ct_to_device. See ctorch/memory.h for
 * pinned memory. */
CT_API ct_tensor *ct_to_device_nb(const ct_tensor *t, ct_device device, bool non_blocking);
/* dst.copy_(src): broadcasts src to dst's shape, converts dtype, crosses
 * devices. dst may be a view; its storage is written in place. As in
 * PyTorch, copying a tensor onto itself does nothing, and these are refused
 * (CT_ERR_INVALID_ARG, "unsupported operation: ... Please clone() the
 * tensor before performing the operation."): a dst whose elements share
 * memory (an expanded view), and a src that partly overlaps dst. In grad
 * mode dst takes src's history (CopyBackwards); copy_, fill_ and zero_
 * follow the in-place rules of ctorch/ops.h (versions, leaves, views). */
CT_API ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src);
CT_API ct_status ct_fill_(ct_tensor *t, double value);
CT_API ct_status ct_zero_(ct_tensor *t);
/* Copy all elements, in row-major order, to/from a host buffer of `dtype`
 * holding numel elements (converting as needed). Waits for the device. */
CT_API ct_status ct_copy_to_host(const ct_tensor *t, void *dst, ct_dtype dtype, int64_t numel);
CT_API ct_status ct_copy_from_host(ct_tensor *t, const void *src, ct_dtype dtype, int64_t numel);

/* The value of a one-element tensor as a double (waits for the device).
 * On error returns NaN and sets the last error. */
CT_API double ct_item(const ct_tensor *t);
CT_API ct_status ct_item_checked(const ct_tensor *t, double *out);
/* Element at a multi-index (ndim entries), as double. Slow; for tests. */
CT_API double ct_get(const ct_tensor *t, const int64_t *index);

/* ---- printing ----------------------------------------------------------- */
/* Writes like PyTorch's print(t): "tensor([[1.0000, 2.0000], …], dtype=…)"
 * and a newline. Summarises with "..." past 1000 elements. */
CT_API ct_status ct_fprint(FILE *f, const ct_tensor *t);
CT_API ct_status ct_print(const ct_tensor *t);  /* to stdout */
/* Same text (without the newline) into a buffer; returns the length it
 * needed (snprintf rules), or -1 on error. */
CT_API int ct_snprint(char *buf, size_t size, const ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_TENSOR_H */
