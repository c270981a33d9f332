/*
 * tensor_impl.h — the layout of tensors and storages, shared by the core and
 * the op front-ends (internal; backends see only ct_kview).
 *
 * A storage is a reference-counted block of device memory, allocated through
 * its device's backend. A tensor is a reference-counted view of a storage:
 * shape, strides (in elements, outermost first, as in PyTorch) and an
 * element offset. Several tensors may share one storage.
 */
#ifndef CT_CORE_TENSOR_IMPL_H
#define CT_CORE_TENSOR_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctorch/tensor.h"
#include "backend.h"

struct ct_alloc_cache;
struct ct_stream;

typedef struct ct_storage {
    atomic_int refcount;
    ct_device device;        /* resolved: index >= 0 */
    const ct_backend *backend;
    void *data;              /* host pointer (cpu) or backend buffer handle */
    size_t byte_offset;      /* where this storage starts inside `data` */
    size_t nbytes;
    /* device memory from the caching allocator (NULL: direct allocation) */
    struct ct_alloc_cache *cache;
    void *block;
    struct ct_stream *stream; /* the stream it was allocated on */
    bool pinned;             /* cpu storage in page-locked memory */
    /* PyTorch's version counter, shared by every tensor on the storage (views
     * and detached handles too): every in-place write through the API bumps
     * it, and a value saved for backward that finds it changed refuses to be
     * used, instead of giving a wrong gradient. */
    atomic_uint version;
    /* A view with autograd history was taken on this storage: an in-place op
     * recorded by autograd would have to rebase the other views' history
     * (PyTorch's CopySlices), which ctorch does not do, so it refuses. */
    atomic_bool autograd_view;
    /* Memory owned by someone else (ct_from_dlpack): the last release calls
     * external_free(external_ctx) and never the allocator. */
    void (*external_free)(void *ctx);
    void *external_ctx;
} ct_storage;

struct ct_tensor {
    atomic_int refcount;
    ct_storage *storage;
    int64_t offset;          /* elements */
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS];
    ct_dtype dtype;
    /* autograd (src/autograd) */
    bool requires_grad;
    struct ct_tensor *grad;   /* owned */
    struct ct_node *grad_fn;  /* owned; NULL for leaves */
    struct ct_grad_hook *hooks; /* post-accumulate-grad hooks (leaves), owned */
    int hook_pending;         /* backward scratch: gradient edges still to arrive */
};

/* One hook of ct_register_post_accumulate_grad_hook, in a list. */
typedef struct ct_grad_hook {
    ct_status (*fn)(ct_tensor *leaf, void *user);
    void *user;
    struct ct_grad_hook *next;
} ct_grad_hook;

/* Element offset of t's element 0 from the start of its storage's buffer
 * (storage->data). Cached blocks start at 512-byte multiples, so the
 * division is exact for every dtype. */
static inline int64_t ct_buffer_offset(const ct_tensor *t) {
    return (int64_t)(t->storage->byte_offset / ct_dtype_size(t->dtype)) + t->offset;
}

/* An in-place write through the API happened (see ct_storage.version). */
static inline void ct_tensor_bump_version(const ct_tensor *t) {
    atomic_fetch_add_explicit(&t->storage->version, 1u, memory_order_relaxed);
}
static inline unsigned ct_tensor_version(const ct_tensor *t) {
    return atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

/* storage.c */
ct_storage *ct_storage_new(ct_device dev, size_t nbytes);   /* dev resolved */
/* A CPU storage in page-locked memory (needs a backend with host_alloc). */
ct_storage *ct_storage_new_pinned(size_t nbytes);
/* A storage over memory someone else owns (data: a host pointer or the
 * device's buffer handle, nbytes from it); the last release calls
 * release(ctx). On failure release is not called. */
ct_storage *ct_storage_new_external(ct_device dev, void *data, size_t nbytes, void (*release)(void *ctx),
                                    void *ctx);
void ct_storage_retain(ct_storage *s);
void ct_storage_release(ct_storage *s);

/* tensor.c: untracked constructors for library code. The returned reference
 * belongs to the caller and is not put in any scope; hand it to the user
 * with ct_track(). */
ct_tensor *ct_tensor_alloc(const int64_t *shape, int ndim, ct_dtype dt, ct_device dev);
/* A contiguous tensor over a fresh storage, taking over the storage's reference. */
ct_tensor *ct_tensor_on_storage(ct_storage *s, const int64_t *shape, int ndim, ct_dtype dt);
ct_tensor *ct_tensor_view_of(const ct_tensor *base, const int64_t *shape, const int64_t *strides,
                             int ndim, int64_t offset);
/* Put a fresh reference into the current scope (if any); returns t. */
ct_tensor *ct_track(ct_tensor *t);
/* Drop an internal reference without touching scopes. */
void ct_decref(ct_tensor *t);

/* The kernel view of a tensor for a backend call. */
ct_kview ct_kview_of(const ct_tensor *t);

/* shape.c */
/* Element count; 0 if any size is 0. Overflow-free for every shape that
 * passed ct_shape_check, which every tensor's shape has. */
int64_t ct_shape_numel(const int64_t *shape, int ndim);
void ct_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
/* The gate for sizes that come from outside (users, files): ndim in
 * [0, CT_MAX_DIMS], no negative size, and the sizes, with zeros counted as
 * ones, multiply to at most INT64_MAX, so element counts and contiguous
 * strides never overflow. Sets an error naming op otherwise. numel may be
 * NULL. */
bool ct_shape_check(const char *op, const int64_t *shape, int ndim, int64_t *numel);
bool ct_tensor_is_contiguous(const ct_tensor *t);
/* Wrap a possibly negative dim into [0, ndim); error names op and range. */
bool ct_wrap_dim(const char *op, int dim, int ndim, int *out);
/* Broadcast two shapes; error names both. */
bool ct_broadcast_shapes(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                         int64_t *out, int *nout);
/* Strides of t viewed at a broadcast shape (0 on expanded dims). */
void ct_broadcast_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides);
/* "[2, 3, 4]" into buf. */
const char *ct_shape_str(const int64_t *shape, int ndim, char *buf, size_t size);
#define CT_SHAPE_STR_MAX 192

/* device checks shared by ops: all non-NULL tensors on one device. */
bool ct_check_same_device(const char *op, const ct_tensor *const *ts, int n);
const char *ct_device_str(ct_device d, char *buf, size_t size);

#endif /* CT_CORE_TENSOR_IMPL_H */
