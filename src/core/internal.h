/*
 * internal.h — the library's internal API, used by the core, the op
 * front-ends (src/ops) and later by autograd/nn (internal).
 *
 * Naming: public functions are ct_*; they return references that the current
 * scope tracks. Internal tensor-returning helpers are cti_* and return
 * UNTRACKED references that the caller must give back with ct_decref (or hand
 * to the user with ct_track). Library code never passes a ct_* result to
 * ct_decref; it uses cti_* functions instead, so scopes stay consistent.
 * Every cti_* function accepts NULL inputs and returns NULL (the error was
 * already set by whoever produced the NULL).
 */
#ifndef CT_CORE_INTERNAL_H
#define CT_CORE_INTERNAL_H

#include "backend.h"
#include "error.h"
#include "tensor_impl.h"
#include "ctorch/ops.h"
#include "ctorch/random.h"

/* ---- dtypes (dtype.c) ---- */
/* torch.result_type for two tensors: dimensioned tensors decide first, 0-dim
 * tensors only raise the category (bool < integer < float). */
ct_dtype cti_result_type(const ct_tensor *a, const ct_tensor *b);
/* Tensor with a C scalar (a weak float if is_float, else a weak int). */
ct_dtype cti_result_type_scalar(const ct_tensor *a, bool is_float);
/* Resolve CT_DTYPE_DEFAULT. */
ct_dtype cti_resolve_dtype(ct_dtype dt);
/* int64 or float of the default kind for a double scalar. */
bool cti_is_whole(double v);
/* torch.can_cast: may a result of dtype `from` be written into a tensor of
 * dtype `to`? (not floating to integral, nor anything else to bool) */
bool cti_can_cast(ct_dtype from, ct_dtype to);
/* PyTorch's ScalarType name ("Float", "Long"), as its messages print it. */
const char *cti_scalar_type_name(ct_dtype dt);

/* ---- creation and conversion (tensor.c, creation.c, copy.c) ---- */
ct_tensor *cti_empty(const int64_t *shape, int ndim, ct_dtype dt, ct_device dev);
ct_tensor *cti_empty_like(const ct_tensor *t);
/* 0-dim tensor holding v. */
ct_tensor *cti_scalar(double v, ct_dtype dt, ct_device dev);
ct_tensor *cti_full(const int64_t *shape, int ndim, double v, ct_dtype dt, ct_device dev);
ct_tensor *cti_zeros_like(const ct_tensor *t);
ct_tensor *cti_ones_like(const ct_tensor *t);
/* t itself (retained) when it already has dtype dt, else a converted copy. */
ct_tensor *cti_cast(const ct_tensor *t, ct_dtype dt);
/* t itself (retained) when contiguous, else a contiguous copy. */
ct_tensor *cti_contiguous(const ct_tensor *t);
ct_tensor *cti_clone(const ct_tensor *t);
ct_tensor *cti_to_device(const ct_tensor *t, ct_device dev);
/* dst[...] = src broadcast to dst's shape (dtype converted, any devices). */
ct_status cti_copy(ct_tensor *dst, const ct_tensor *src);
/* Every element of t = value (no autograd, no version bump). */
ct_status cti_fill(ct_tensor *t, double value);
/* PyTorch's aliasing rules for writing into dst, reading src (may be
 * NULL): dst must not have elements sharing memory (an expanded view), and
 * src must not partly overlap it (MemOverlap.cpp). Errors name op. */
ct_status cti_check_write(const char *op, const ct_tensor *dst, const ct_tensor *src);
/* a and b are the same elements (same storage, offset, shape, strides, dtype). */
bool cti_same_data(const ct_tensor *a, const ct_tensor *b);

/* ---- views (view.c); all share storage ---- */
ct_tensor *cti_view(const ct_tensor *t, const int64_t *shape, int ndim);     /* -1 allowed */
ct_tensor *cti_reshape(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *cti_permute(const ct_tensor *t, const int *dims);
ct_tensor *cti_transpose(const ct_tensor *t, int d0, int d1);
ct_tensor *cti_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length);
ct_tensor *cti_select(const ct_tensor *t, int dim, int64_t index);
ct_tensor *cti_expand(const ct_tensor *t, const int64_t *shape, int ndim);   /* broadcast view */
ct_tensor *cti_unsqueeze(const ct_tensor *t, int dim);
ct_tensor *cti_squeeze_dim(const ct_tensor *t, int dim);
ct_tensor *cti_flatten(const ct_tensor *t, int start_dim, int end_dim);
/* A view with the given shape and strides over t's storage. */
ct_tensor *cti_as_strided(const ct_tensor *t, const int64_t *shape, const int64_t *strides,
                          int ndim, int64_t offset);

/* ---- op front-ends (src/ops) ---- */
ct_tensor *cti_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1);
ct_tensor *cti_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *cti_binary_scalar(ct_binary_op op, const ct_tensor *a, double s);
/* The same ops written into out (in-place ops, out= forms): out must have
 * the result's shape and a dtype the result can be cast to (errors, named
 * by `name`, say so as PyTorch does); written directly when its dtype is the
 * result's. No autograd, no aliasing checks: callers do those. */
ct_status cti_unary_into(const char *name, ct_unary_op op, ct_tensor *out, const ct_tensor *a, double p0,
                         double p1);
ct_status cti_binary_into(const char *name, ct_binary_op op, ct_tensor *out, const ct_tensor *a,
                          const ct_tensor *b, double alpha);
ct_status cti_binary_scalar_into(const char *name, ct_binary_op op, ct_tensor *out, const ct_tensor *a,
                                 double s);
/* The shape and dtype rule of writing a result (shape, dtype) into out. */
ct_status cti_check_into(const char *op, const ct_tensor *out, const int64_t *shape, int ndim, ct_dtype result);
ct_tensor *cti_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
ct_tensor *cti_reduce(ct_reduce_op op, const ct_tensor *a, const int *dims, int ndims,
                      bool keepdim, double param);
ct_tensor *cti_matmul(const ct_tensor *a, const ct_tensor *b);
ct_tensor *cti_softmax(const ct_tensor *a, int dim, bool log);

/* ---- random (random.c) ---- */
/* Reserve `n` 32-bit draws (rounded up to whole Philox blocks) from the
 * default generator; returns the seed and the starting counter. */
void cti_rng_reserve(uint64_t n, uint64_t *seed, uint64_t *offset);

/* ---- backends ---- */
/* The backend of a tensor's storage. */
static inline const ct_backend *cti_backend(const ct_tensor *t) { return t->storage->backend; }
/* The profiler's record of one kernel (profiler.c): begin before the
 * backend call, end with its status (returned). Cheap while it is off. */
/* Monotonic nanoseconds, and a small number for the calling thread (the
 * same one in profiler traces and memory snapshots). */
int64_t cti_now_ns(void);
int cti_thread_id(void);
void cti_prof_begin(const char *op, const ct_tensor *t);
ct_status cti_prof_end(ct_status st);
/* The allocator made nbytes on dev for this thread (profile_memory). */
void cti_prof_memory(ct_device dev, size_t nbytes);
#define CTI_PROFILED(t, opname, call) (cti_prof_begin((opname), (t)), cti_prof_end(call))

/* Backend table entries may be NULL (not implemented yet on that backend). */
#define CTI_BACKEND_CALL(t, fn, opname, ...)                                                      \
    (cti_backend(t)->ops->fn ? CTI_PROFILED(t, opname, cti_backend(t)->ops->fn(__VA_ARGS__))      \
                             : ct_error_set(CT_ERR_UNSUPPORTED, "%s: not implemented on %s",      \
                                            (opname), cti_backend(t)->name))

/* Names of ops for messages ("add", "exp", …). */
const char *cti_unary_name(ct_unary_op op);
const char *cti_binary_name(ct_binary_op op);
const char *cti_reduce_name(ct_reduce_op op);

#endif /* CT_CORE_INTERNAL_H */
