/*
 * copy.c — moving and converting data: copy_ (with broadcasting, dtype
 * conversion and device crossing), to(device, dtype), contiguous, clone,
 * fill_, and reading values back to the host (item, get, copy_to_host).
 *
 * Crossing devices goes through host memory in two steps (source device ->
 * host -> destination device), each done by the devices' own backends, so
 * the core needs no pairwise device code. Reading on the host waits for the
 * device, as PyTorch does for .item() and .cpu().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "autograd/autograd.h"
#include "runtime.h"

/* A contiguous kview over host memory, for conversions through the CPU backend. */
static ct_kview host_kview(void *data, ct_dtype dt, int64_t numel) {
    ct_kview v;
    memset(&v, 0, sizeof v);
    v.data = data;
    v.dtype = dt;
    v.ndim = 1;
    v.shape[0] = numel;
    v.strides[0] = 1;
    for (int i = 1; i < CT_MAX_DIMS; i++) v.shape[i] = 1;
    return v;
}

static ct_status host_convert(void *dst, ct_dtype dst_dt, const void *src, ct_dtype src_dt, int64_t n) {
    if (n == 0) return CT_OK;
    if (dst_dt == src_dt) {
        memcpy(dst, src, (size_t)n * ct_dtype_size(dst_dt));
        return CT_OK;
    }
    ct_kview d = host_kview(dst, dst_dt, n), s = host_kview((void *)src, src_dt, n);
    return ct_backend_for(CT_DEVICE_CPU)->ops->copy(&d, &s);
}

static bool ranges_overlap(const ct_tensor *a, const ct_tensor *b) {
    return a->storage == b->storage; /* conservative: same storage may overlap */
}

/* Same-device copy of src (already broadcast-compatible) into dst. */
static ct_status copy_same_device(ct_tensor *dst, const ct_tensor *src) {
    ct_kview d = ct_kview_of(dst), s = ct_kview_of(src);
    ct_broadcast_strides(src, dst->shape, dst->ndim, s.strides);
    s.ndim = dst->ndim;
    memcpy(s.shape, d.shape, sizeof s.shape);
    for (int i = s.ndim; i < CT_MAX_DIMS; i++) s.strides[i] = 0;
    return CTI_BACKEND_CALL(dst, copy, "copy_", &d, &s);
}

/* Bring a contiguous copy of src into host memory of the same dtype. */
static ct_status read_to_host(const ct_tensor *src, void *host) {
    ct_tensor *c = cti_contiguous(src);
    if (!c) return ct_last_status();
    size_t nbytes = (size_t)ct_shape_numel(c->shape, c->ndim) * ct_dtype_size(c->dtype);
    ct_status st = nbytes == 0 ? CT_OK
                               : cti_backend(c)->read(c->storage->device.index, c->storage->data,
                                                      (size_t)ct_buffer_offset(c) * ct_dtype_size(c->dtype), host,
                                                      nbytes);
    ct_decref(c);
    return st;
}

ct_status cti_copy(ct_tensor *dst, const ct_tensor *src) {
    if (!dst || !src) return ct_error_null_input("copy_");
    int64_t shape[CT_MAX_DIMS];
    int n;
    if (!ct_broadcast_shapes("copy_", dst->shape, dst->ndim, src->shape, src->ndim, shape, &n))
        return ct_last_status();
    char b1[CT_SHAPE_STR_MAX], b2[CT_SHAPE_STR_MAX];
    CT_CHECK_STATUS(n == dst->ndim && memcmp(shape, dst->shape, sizeof(int64_t) * (size_t)n) == 0,
                    CT_ERR_SHAPE, "copy_: source of shape %s cannot be broadcast to destination shape %s",
                    ct_shape_str(src->shape, src->ndim, b1, sizeof b1),
                    ct_shape_str(dst->shape, dst->ndim, b2, sizeof b2));
    if (ct_shape_numel(dst->shape, dst->ndim) == 0) return CT_OK;

    if (ct_device_equal(dst->storage->device, src->storage->device)) {
        if (!ranges_overlap(dst, src)) return copy_same_device(dst, src);
        ct_tensor *tmp = cti_clone(src); /* dst and src may alias: copy out first */
        if (!tmp) return ct_last_status();
        ct_status st = copy_same_device(dst, tmp);
        ct_decref(tmp);
        return st;
    }
    /* across devices: src -> host (in a CPU tensor) -> dst's device -> dst */
    ct_tensor *host = cti_empty(src->shape, src->ndim, src->dtype, ct_device_cpu());
    if (!host) return ct_last_status();
    ct_status st = read_to_host(src, host->storage->data);
    if (st == CT_OK && dst->storage->device.type == CT_DEVICE_CPU) {
        st = copy_same_device(dst, host);
    } else if (st == CT_OK) {
        ct_tensor *staged = cti_empty(src->shape, src->ndim, src->dtype, dst->storage->device);
        st = staged ? cti_backend(staged)->write(staged->storage->device.index, staged->storage->data,
                                                 staged->storage->byte_offset, host->storage->data,
                                                 host->storage->nbytes)
                    : ct_last_status();
        if (st == CT_OK) st = copy_same_device(dst, staged);
        ct_decref(staged);
    }
    ct_decref(host);
    return st;
}

ct_tensor *cti_empty(const int64_t *shape, int ndim, ct_dtype dt, ct_device dev) {
    return ct_tensor_alloc(shape, ndim, dt, dev);
}

ct_tensor *cti_empty_like(const ct_tensor *t) {
    return t ? ct_tensor_alloc(t->shape, t->ndim, t->dtype, t->storage->device) : NULL;
}

ct_tensor *cti_clone(const ct_tensor *t) {
    if (!t) return NULL;
    ct_tensor *out = cti_empty_like(t);
    if (out && copy_same_device(out, t) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *cti_contiguous(const ct_tensor *t) {
    if (!t) return NULL;
    if (ct_tensor_is_contiguous(t)) return ct_retain((ct_tensor *)t);
    return cti_clone(t);
}

ct_tensor *cti_cast(const ct_tensor *t, ct_dtype dt) {
    if (!t) return NULL;
    dt = cti_resolve_dtype(dt);
    if (t->dtype == dt) return ct_retain((ct_tensor *)t);
    ct_tensor *out = ct_tensor_alloc(t->shape, t->ndim, dt, t->storage->device);
    if (out && copy_same_device(out, t) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *cti_to_device(const ct_tensor *t, ct_device dev) {
    if (!t) return NULL;
    ct_device d;
    if (ct_device_check(dev, &d) != CT_OK) return NULL;
    if (ct_device_equal(d, t->storage->device)) return ct_retain((ct_tensor *)t);
    ct_tensor *out = ct_tensor_alloc(t->shape, t->ndim, t->dtype, d);
    if (out && cti_copy(out, t) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *cti_scalar(double v, ct_dtype dt, ct_device dev) { return cti_full(NULL, 0, v, dt, dev); }

ct_tensor *cti_full(const int64_t *shape, int ndim, double v, ct_dtype dt, ct_device dev) {
    ct_tensor *t = ct_tensor_alloc(shape, ndim, dt, dev);
    if (t && cti_fill(t, v) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return t;
}

ct_tensor *cti_zeros_like(const ct_tensor *t) {
    return t ? cti_full(t->shape, t->ndim, 0.0, t->dtype, t->storage->device) : NULL;
}
ct_tensor *cti_ones_like(const ct_tensor *t) {
    return t ? cti_full(t->shape, t->ndim, 1.0, t->dtype, t->storage->device) : NULL;
}

/* ---- public API ------------------------------------------------------------------ */

ct_tensor *ct_contiguous(const ct_tensor *t) { return ct_track(cta_contiguous(t)); }
ct_tensor *ct_clone(const ct_tensor *t) { return ct_track(cta_clone(t)); }

ct_tensor *ct_to(const ct_tensor *t, ct_device device, ct_dtype dtype) {
    if (!t) return NULL;
    ct_tensor *c = cti_to_device(t, device);
    if (dtype == CT_DTYPE_DEFAULT || !c) return ct_track(cta_record_to(c, t));
    ct_tensor *r = cti_cast(c, dtype); /* a new reference, even when it is c itself */
    ct_decref(c);
    return ct_track(cta_record_to(r, t));
}
ct_tensor *ct_to_device(const ct_tensor *t, ct_device d) { return ct_track(cta_to_device(t, d)); }
ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dt) {
    if (t && !ct_dtype_is_valid(dt)) {
        ct_error_set(CT_ERR_DTYPE, "to: invalid dtype %d", (int)dt);
        return NULL;
    }
    return ct_track(cta_to_dtype(t, dt));
}
ct_tensor *ct_cpu(const ct_tensor *t) { return ct_track(cta_to_device(t, ct_device_cpu())); }

/* Host -> device from pinned memory, enqueued on the device's current stream. */
static ct_tensor *upload_async(const ct_tensor *t, ct_device d) {
    ct_tensor *out = cti_empty(t->shape, t->ndim, t->dtype, d);
    ct_stream *s = out ? cti_current_stream(d) : NULL;
    if (!s) goto fail;
    size_t nbytes = (size_t)ct_shape_numel(t->shape, t->ndim) * ct_dtype_size(t->dtype);
    if (nbytes && cti_backend(out)->write_async(d.index, out->storage->data, out->storage->byte_offset,
                                                ct_data_ptr(t), nbytes, s->handle) != CT_OK)
        goto fail;
    /* the pinned block must not be reused before the stream has read it */
    if (ct_record_stream(t, s) != CT_OK) goto fail;
    return out;
fail:
    ct_decref(out);
    return NULL;
}

/* Device -> new pinned host memory, enqueued on the device's current stream. */
static ct_tensor *download_async(const ct_tensor *t) {
    size_t nbytes = (size_t)ct_shape_numel(t->shape, t->ndim) * ct_dtype_size(t->dtype);
    ct_storage *st = ct_storage_new_pinned(nbytes);
    ct_tensor *out = st ? ct_tensor_on_storage(st, t->shape, t->ndim, t->dtype) : NULL;
    ct_stream *s = out ? cti_current_stream(t->storage->device) : NULL;
    if (!s) goto fail;
    if (nbytes && cti_backend(t)->read_async(t->storage->device.index, t->storage->data,
                                             (size_t)ct_buffer_offset(t) * ct_dtype_size(t->dtype),
                                             out->storage->data, nbytes, s->handle) != CT_OK)
        goto fail;
    if (ct_record_stream(out, s) != CT_OK) goto fail;
    return out;
fail:
    ct_decref(out);
    return NULL;
}

ct_tensor *ct_to_device_nb(const ct_tensor *t, ct_device device, bool non_blocking) {
    if (!t) return NULL;
    ct_device d;
    if (ct_device_check(device, &d) != CT_OK) return NULL;
    const ct_device src = t->storage->device;
    if (non_blocking && !ct_device_equal(src, d) && ct_tensor_is_contiguous(t)) {
        const ct_backend *db = ct_backend_for(d.type);
        if (src.type == CT_DEVICE_CPU && t->storage->pinned && db->write_async)
            return ct_track(cta_record_to(upload_async(t, d), t));
        if (d.type == CT_DEVICE_CPU && cti_backend(t)->read_async) {
            ct_clear_error();
            ct_tensor *out = download_async(t);
            if (out) return ct_track(cta_record_to(out, t));
            if (ct_last_status() != CT_ERR_UNSUPPORTED) return NULL; /* no pinned memory: copy synchronously */
        }
    }
    return ct_track(cta_to_device(t, d));
}

/* ---- copy_'s aliasing rules (PyTorch's MemOverlap.cpp) ---------------------------- */

/* A size > 1 dim with stride 0: several elements are one memory location. */
static bool has_internal_overlap(const ct_tensor *t) {
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] > 1 && t->strides[i] == 0) return true;
    return false;
}

/* Some permutation of the dims makes t contiguous: its elements fill one
 * range of memory exactly once. */
static bool non_overlapping_and_dense(const ct_tensor *t) {
    int perm[CT_MAX_DIMS], n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != 1) perm[n++] = i;
    for (int i = 1; i < n; i++)   /* insertion sort by stride */
        for (int j = i; j > 0 && t->strides[perm[j]] < t->strides[perm[j - 1]]; j--) {
            int k = perm[j];
            perm[j] = perm[j - 1], perm[j - 1] = k;
        }
    int64_t expected = 1;
    for (int k = 0; k < n; k++) {
        if (t->strides[perm[k]] != expected) return false;
        expected *= t->shape[perm[k]];
    }
    return true;
}

static int64_t byte_begin(const ct_tensor *t) {
    return (int64_t)t->storage->byte_offset + t->offset * (int64_t)ct_dtype_size(t->dtype);
}

/* get_overlap_status == Partial: the two cover intersecting but different
 * memory. Only decidable when both are dense (PyTorch: "TooHard" otherwise,
 * which it lets through, as here: the copy then goes through a clone). */
static bool partial_overlap(const ct_tensor *a, const ct_tensor *b) {
    int64_t na = ct_shape_numel(a->shape, a->ndim), nb = ct_shape_numel(b->shape, b->ndim);
    if (a->storage != b->storage || na == 0 || nb == 0) return false;
    if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return false;
    int64_t a0 = byte_begin(a), a1 = a0 + na * (int64_t)ct_dtype_size(a->dtype);
    int64_t b0 = byte_begin(b), b1 = b0 + nb * (int64_t)ct_dtype_size(b->dtype);
    if (a0 == b0 && a1 == b1)
        return a->ndim != b->ndim || memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim) != 0;
    return a0 < b1 && b0 < a1;
}

static bool same_data(const ct_tensor *a, const ct_tensor *b) {
    return a->storage == b->storage && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0 &&
           memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

ct_status cti_check_write(const char *op, const ct_tensor *dst, const ct_tensor *src) {
    CT_CHECK_STATUS(!has_internal_overlap(dst), CT_ERR_INVALID_ARG,
                    "%s: unsupported operation: more than one element of the written-to tensor refers to a "
                    "single memory location. Please clone() the tensor before performing the operation.", op);
    CT_CHECK_STATUS(!src || !partial_overlap(dst, src), CT_ERR_INVALID_ARG,
                    "%s: unsupported operation: some elements of the input tensor and the written-to tensor "
                    "refer to a single memory location. Please clone() the tensor before performing the "
                    "operation.", op);
    return CT_OK;
}

bool cti_same_data(const ct_tensor *a, const ct_tensor *b) { return a == b || same_data(a, b); }

ct_status cti_fill(ct_tensor *t, double value) {
    if (!t) return ct_error_null_input("fill_");
    if (ct_shape_numel(t->shape, t->ndim) == 0) return CT_OK;
    ct_kview v = ct_kview_of(t);
    return CTI_BACKEND_CALL(t, fill, "fill_", &v, value);
}

ct_status ct_copy_to_host(const ct_tensor *t, void *dst, ct_dtype dtype, int64_t numel) {
    CT_CHECK_OBJ_STATUS(t, "copy_to_host: NULL argument");
    CT_CHECK_STATUS(dst != NULL, CT_ERR_INVALID_ARG, "copy_to_host: NULL argument");
    CT_CHECK_STATUS(ct_dtype_is_valid(dtype), CT_ERR_DTYPE, "copy_to_host: invalid dtype %d", (int)dtype);
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    CT_CHECK_STATUS(numel == n, CT_ERR_SHAPE,
                    "copy_to_host: the buffer holds %lld elements but the tensor has %lld",
                    (long long)numel, (long long)n);
    if (n == 0) return CT_OK;
    if (t->storage->device.type == CT_DEVICE_CPU) {
        ct_kview d = host_kview(dst, dtype, n);
        ct_kview s = ct_kview_of(t);
        memcpy(d.shape, s.shape, sizeof d.shape);   /* view dst with t's shape */
        d.ndim = s.ndim;
        ct_contiguous_strides(s.shape, s.ndim, d.strides);
        return ct_backend_for(CT_DEVICE_CPU)->ops->copy(&d, &s);
    }
    void *tmp = malloc((size_t)n * ct_dtype_size(t->dtype));
    CT_CHECK_STATUS(tmp != NULL, CT_ERR_OOM, "copy_to_host: out of host memory");
    ct_status st = read_to_host(t, tmp);
    if (st == CT_OK) st = host_convert(dst, dtype, tmp, t->dtype, n);
    free(tmp);
    return st;
}

ct_status ct_copy_from_host(ct_tensor *t, const void *src, ct_dtype dtype, int64_t numel) {
    CT_CHECK_OBJ_STATUS(t, "copy_from_host: NULL argument");
    CT_CHECK_STATUS(src != NULL, CT_ERR_INVALID_ARG, "copy_from_host: NULL argument");
    CT_CHECK_STATUS(ct_dtype_is_valid(dtype), CT_ERR_DTYPE, "copy_from_host: invalid dtype %d", (int)dtype);
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    CT_CHECK_STATUS(numel == n, CT_ERR_SHAPE,
                    "copy_from_host: the buffer holds %lld elements but the tensor has %lld",
                    (long long)numel, (long long)n);
    if (n == 0) return CT_OK;
    /* wrap the host buffer as a temporary CPU tensor and copy_ from it */
    ct_tensor *host = ct_tensor_alloc(t->shape, t->ndim, dtype, ct_device_cpu());
    if (!host) return ct_last_status();
    memcpy(host->storage->data, src, (size_t)n * ct_dtype_size(dtype));
    ct_status st = cti_copy(t, host);
    ct_decref(host);
    return st;
}

ct_status ct_item_checked(const ct_tensor *t, double *out) {
    CT_CHECK_OBJ_STATUS(t, "item: NULL argument");
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "item: NULL argument");
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    CT_CHECK_STATUS(n == 1, CT_ERR_SHAPE, "item: a Tensor with %lld elements cannot be converted to Scalar",
                    (long long)n);
    return ct_copy_to_host(t, out, CT_FLOAT64, 1);
}

double ct_item(const ct_tensor *t) {
    double v;
    if (!t) return NAN;
    return ct_item_checked(t, &v) == CT_OK ? v : NAN;
}

double ct_get(const ct_tensor *t, const int64_t *index) {
    if (!t) return NAN;
    if (!index && t->ndim > 0) {
        ct_error_set(CT_ERR_INVALID_ARG, "get: NULL index for a %d-D tensor", t->ndim);
        return NAN;
    }
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        int64_t k = index[i] < 0 ? index[i] + t->shape[i] : index[i];
        if (k < 0 || k >= t->shape[i]) {
            ct_error_set(CT_ERR_INDEX, "get: index %lld is out of bounds for dimension %d with size %lld",
                         (long long)index[i], i, (long long)t->shape[i]);
            return NAN;
        }
        off += k * t->strides[i];
    }
    ct_tensor *elem = ct_tensor_view_of(t, NULL, NULL, 0, off);
    double v = NAN;
    if (elem) ct_copy_to_host(elem, &v, CT_FLOAT64, 1);
    ct_decref(elem);
    return v;
}
