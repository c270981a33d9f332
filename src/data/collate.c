/*
 * collate.c — default_collate: n samples in, one batch out, field k of the
 * batch being torch.stack of field k of every sample on a new dim 0.
 *
 * Stacking is a memcpy per sample into a fresh contiguous tensor (samples
 * are small and already contiguous in practice, so no strided kernel is
 * worth it). With pin, the batch lands directly in page-locked memory, so
 * the later host-to-device copy can be asynchronous; when no device backend
 * offers page-locked memory, pinning silently does not happen (PyTorch warns
 * and does not pin).
 */
#include <string.h>

#include "core/internal.h"
#include "ctorch/data.h"
#include "ctorch/device.h"
#include "loader_internal.h"

/* The condition under which the core can allocate pinned storage
 * (src/core/memory.c: the first device backend with host_alloc and at least
 * one device). Asking first keeps a missing device from raising an error,
 * which would call the user's error handler for a fallback that is not one. */
bool ctl_pinning_available(void) {
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++) {
        const ct_backend *b = ct_backend_for((ct_device_type)t);
        if (b && b->host_alloc && b->device_count && b->device_count() > 0) return true;
    }
    return false;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Every sample's field k matches sample 0's in shape, dtype and device. */
static ct_status check_field(const ct_sample *samples, int n, int k) {
    const ct_tensor *ref = samples[0].t[k];
    for (int i = 1; i < n; i++) {
        const ct_tensor *t = samples[i].t[k];
        if (!same_shape(ref, t)) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            return ct_error_set(CT_ERR_SHAPE,
                                "default_collate: field %d: stack expects each tensor to be equal size, "
                                "but got %s at entry 0 and %s at entry %d",
                                k, ct_shape_str(ref->shape, ref->ndim, a, sizeof a),
                                ct_shape_str(t->shape, t->ndim, b, sizeof b), i);
        }
        if (t->dtype != ref->dtype)
            return ct_error_set(CT_ERR_DTYPE,
                                "default_collate: field %d: stack expects each tensor to have the same "
                                "dtype, but got %s at entry 0 and %s at entry %d",
                                k, ct_dtype_name(ref->dtype), ct_dtype_name(t->dtype), i);
        if (!ct_device_equal(t->storage->device, ref->storage->device)) {
            char a[32], b[32];
            return ct_error_set(CT_ERR_DEVICE,
                                "default_collate: field %d: expected all tensors to be on the same device, "
                                "but got %s at entry 0 and %s at entry %d",
                                k, ct_device_str(ref->storage->device, a, sizeof a),
                                ct_device_str(t->storage->device, b, sizeof b), i);
        }
    }
    if (ref->ndim + 1 > CT_MAX_DIMS)
        return ct_error_set(CT_ERR_SHAPE,
                            "default_collate: field %d has %d dims; its batch would need %d (at most %d)", k,
                            ref->ndim, ref->ndim + 1, CT_MAX_DIMS);
    return CT_OK;
}

/* A contiguous CPU tensor of the batch's shape, page-locked when asked and possible. */
static ct_tensor *alloc_cpu_batch(const int64_t *shape, int ndim, ct_dtype dt, bool pin) {
    if (pin && ctl_pinning_available()) {
        size_t nbytes = (size_t)ct_shape_numel(shape, ndim) * ct_dtype_size(dt);
        ct_storage *s = ct_storage_new_pinned(nbytes);
        return s ? ct_tensor_on_storage(s, shape, ndim, dt) : NULL;
    }
    return ct_tensor_alloc(shape, ndim, dt, ct_device_cpu());
}

/* out[i] = sample i's field, for CPU samples: a memcpy each. */
static ct_status fill_from_cpu(ct_tensor *out, const ct_sample *samples, int n, int k) {
    const ct_tensor *ref = samples[0].t[k];
    size_t item_bytes = (size_t)ct_shape_numel(ref->shape, ref->ndim) * ct_dtype_size(ref->dtype);
    char *dst = ct_data_ptr(out);
    if (item_bytes == 0) return CT_OK;
    for (int i = 0; i < n; i++) {
        ct_tensor *src = cti_contiguous(samples[i].t[k]);
        if (!src) return ct_last_status();
        memcpy(dst + (size_t)i * item_bytes, ct_data_ptr(src), item_bytes);
        ct_decref(src);
    }
    return CT_OK;
}

/* out[i] = sample i's field, on any device, through the copy kernels. */
static ct_status fill_by_copy(ct_tensor *out, const ct_sample *samples, int n, int k) {
    for (int i = 0; i < n; i++) {
        ct_tensor *row = cti_select(out, 0, i);
        ct_status st = row ? cti_copy(row, samples[i].t[k]) : ct_last_status();
        ct_decref(row);
        if (st != CT_OK) return st;
    }
    return CT_OK;
}

/* Field k of the batch: [n, *shape] of the samples' dtype. */
static ct_tensor *stack_field(const ct_sample *samples, int n, int k, bool pin) {
    if (check_field(samples, n, k) != CT_OK) return NULL;
    const ct_tensor *ref = samples[0].t[k];
    int64_t shape[CT_MAX_DIMS];
    shape[0] = n;
    memcpy(shape + 1, ref->shape, (size_t)ref->ndim * sizeof *shape);
    ct_device dev = ref->storage->device;
    bool on_cpu = dev.type == CT_DEVICE_CPU;
    if (pin && !on_cpu) {
        ct_error_set(CT_ERR_DEVICE,
                     "default_collate: field %d: cannot pin '%s' tensor: only dense CPU tensors can be pinned",
                     k, ct_device_type_name(dev.type));
        return NULL;
    }
    ct_tensor *out = on_cpu ? alloc_cpu_batch(shape, ref->ndim + 1, ref->dtype, pin)
                            : ct_tensor_alloc(shape, ref->ndim + 1, ref->dtype, dev);
    if (!out) return NULL;
    ct_status st = on_cpu ? fill_from_cpu(out, samples, n, k) : fill_by_copy(out, samples, n, k);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_status ct_default_collate(const ct_sample *samples, int n, ct_sample *batch, bool pin, void *user) {
    (void)user;
    CT_CHECK_STATUS(samples && batch, CT_ERR_INVALID_ARG, "default_collate: NULL argument");
    batch->n = 0;
    CT_CHECK_STATUS(n >= 1, CT_ERR_INVALID_ARG, "default_collate: expected at least one sample, but got %d", n);
    int nfields = samples[0].n;
    CT_CHECK_STATUS(nfields >= 1 && nfields <= CT_SAMPLE_MAX, CT_ERR_INVALID_ARG,
                    "default_collate: sample 0 has %d fields (expected 1 to %d)", nfields, CT_SAMPLE_MAX);
    for (int i = 1; i < n; i++)
        CT_CHECK_STATUS(samples[i].n == nfields, CT_ERR_INVALID_ARG,
                        "default_collate: each element in list of batch should be of equal size, but "
                        "entry 0 has %d fields and entry %d has %d",
                        nfields, i, samples[i].n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nfields; k++)
            CT_CHECK_OBJ_STATUS(samples[i].t[k], "default_collate: field %d of entry %d is NULL", k, i);
    for (int k = 0; k < nfields; k++) {
        ct_tensor *t = stack_field(samples, n, k, pin);
        if (!t) {
            ct_status st = ct_last_status();
            ct_sample_clear(batch);
            return st != CT_OK ? st : CT_ERR_INTERNAL;
        }
        batch->t[k] = t;
        batch->n = k + 1;
    }
    return CT_OK;
}
