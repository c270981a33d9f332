/*
 * gpu_util.c — what every family of the shared GPU host code needs: kernel
 * names, the device table of a view, kernel metadata with dimension merging
 * (one implementation, where each GPU backend used to have its own), and
 * the small dtype rules the launchers share.
 */
#include <string.h>

#include "gpu.h"

_Static_assert(CT_GPU_MAX_DIMS == CT_MAX_DIMS, "kernel metadata holds every dimension of a view");

const char *ct_gpu_kernel_name(ct_kernel_id k) {
    static const char *const names[CT_KID_COUNT_] = {
#define CT_KERNEL(name) #name,
#include "kernels/kernels.def"
#undef CT_KERNEL
    };
    return (unsigned)k < CT_KID_COUNT_ ? names[k] : "unknown kernel";
}

const ct_gpu_device *ct_gpu_of(const ct_kview *v) {
    const ct_backend *b = ct_backend_for(v->device_type);
    return b ? b->gpu : NULL;
}

ct_gpu_meta ct_gpu_meta_of(const ct_kview *v) {
    ct_gpu_meta m;
    memset(&m, 0, sizeof m);
    m.ndim = v->ndim;
    m.numel = 1;
    for (int d = 0; d < v->ndim; d++) {
        m.shape[d] = v->shape[d];
        m.strides[d] = v->strides[d];
        m.numel *= v->shape[d];
    }
    m.offset = v->offset;
    m.dtype = v->dtype;
    return m;
}

int64_t ct_gpu_coalesced_metas(const ct_kview *const *views, int n, ct_gpu_meta *metas) {
    const ct_kview *ref = views[0];
    for (int k = 0; k < n; k++) {
        memset(&metas[k], 0, sizeof metas[k]);
        metas[k].offset = views[k]->offset;
        metas[k].dtype = views[k]->dtype;
    }
    int nd = 0;
    int64_t numel = 1;
    for (int d = 0; d < ref->ndim; d++) {
        int64_t size = ref->shape[d];
        numel *= size;
        if (size == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; k < n && merge; k++) merge = metas[k].strides[nd - 1] == views[k]->strides[d] * size;
        if (merge) {
            metas[0].shape[nd - 1] *= size;
            for (int k = 0; k < n; k++) metas[k].strides[nd - 1] = views[k]->strides[d];
            continue;
        }
        for (int k = 0; k < n; k++) metas[k].strides[nd] = views[k]->strides[d];
        metas[0].shape[nd] = size;
        nd++;
    }
    for (int k = 0; k < n; k++) {
        memcpy(metas[k].shape, metas[0].shape, sizeof metas[0].shape);
        metas[k].ndim = nd;
        metas[k].numel = numel;
    }
    return numel;
}

char ct_gpu_compute_kind(ct_dtype dt) {
    if (dt == CT_FLOAT64) return 'd';
    return ct_dtype_is_floating(dt) ? 'f' : 'l';
}

int64_t ct_gpu_to_long(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

ct_status ct_gpu_check_fp64(const ct_kview *v, ct_dtype dt, const char *op) {
    if (dt != CT_FLOAT64 || ct_gpu_of(v)->has_fp64(v->device)) return CT_OK;
    return ct_error_set(CT_ERR_UNSUPPORTED, "%s: float64 is not supported on %s:%d (the device lacks fp64)", op,
                        ct_device_type_name(v->device_type), v->device);
}

ct_status ct_gpu_group_size(const ct_kview *v, ct_kernel_id k, size_t cap, size_t *out) {
    size_t wg = 1;
    CT_TRY(ct_gpu_of(v)->max_group_size(v->device, k, &wg));
    size_t limit = wg < cap ? wg : cap, p = 1;
    while (p * 2 <= limit) p *= 2;
    *out = p;
    return CT_OK;
}
