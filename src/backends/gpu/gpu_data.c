/*
 * gpu_data.c — the GPU backends' data-movement entries, shared by OpenCL
 * and CUDA (see gpu.h): copy with dtype conversion, fill, arange, random.
 *
 * The CPU backend is the reference: the kernels of src/kernels/data.kh
 * reproduce its conversions and its random streams bit for bit. Contiguous
 * same-dtype copies and fills whose pattern the runtime can write go
 * through the runtime's own copy/fill (ct_gpu_device.copy_bytes,
 * fill_bytes). Devices without fp64 compute arange and random on the host,
 * through the CPU backend, and upload the result, so their values still
 * match.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "backends/cpu/cpu_internal.h" /* ct_cpu_store: a value in a dtype, by the CPU's rules */

static bool meta_is_contiguous(const ct_gpu_meta *m) { return m->ndim == 0 || (m->ndim == 1 && m->strides[0] == 1); }

static int64_t view_numel(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

static size_t byte_offset(const ct_kview *v) { return (size_t)v->offset * ct_dtype_size(v->dtype); }

/* ---- copy, fill -------------------------------------------------------------------------------- */

ct_status ct_gpu_copy(const ct_kview *dst, const ct_kview *src) {
    const ct_gpu_device *g = ct_gpu_of(dst);
    const ct_kview *views[2] = {dst, src};
    ct_gpu_meta m[2];
    int64_t n = ct_gpu_coalesced_metas(views, 2, m);
    if (n == 0) return CT_OK;
    if (dst->dtype != src->dtype && (dst->dtype == CT_FLOAT64 || src->dtype == CT_FLOAT64))
        CT_TRY(ct_gpu_check_fp64(dst, CT_FLOAT64, "copy_"));
    if (dst->dtype == src->dtype && meta_is_contiguous(&m[0]) && meta_is_contiguous(&m[1]))
        return g->copy_bytes(dst->device, dst->data, byte_offset(dst), src->data, byte_offset(src),
                             (size_t)n * ct_dtype_size(dst->dtype));
    ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_ARG(m[0]), CT_GPU_BUF(src), CT_GPU_ARG(m[1])};
    return g->launch(dst->device, CT_KID(ct_k_copy), args, 4, (size_t)n, 0);
}

ct_status ct_gpu_fill(const ct_kview *dst, double value) {
    const ct_gpu_device *g = ct_gpu_of(dst);
    const ct_kview *views[1] = {dst};
    ct_gpu_meta m;
    int64_t n = ct_gpu_coalesced_metas(views, 1, &m);
    if (n == 0) return CT_OK;
    uint64_t bits = 0; /* the value in the dtype, converted by the CPU's rules */
    ct_cpu_store(&bits, dst->dtype, value);
    if (meta_is_contiguous(&m)) {
        size_t es = ct_dtype_size(dst->dtype);
        bool done = false;
        CT_TRY(g->fill_bytes(dst->device, dst->data, byte_offset(dst), &bits, es, (size_t)n * es, &done));
        if (done) return CT_OK;
    }
    ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_ARG(m), CT_GPU_ARG(bits)};
    return g->launch(dst->device, CT_KID(ct_k_fill), args, 3, (size_t)n, 0);
}

/* ---- arange, random ------------------------------------------------------------------------------ */

/* What the CPU backend would write into a contiguous dst, computed on the
 * host and uploaded: for devices that cannot do the double math. */
typedef ct_status (*host_fill_fn)(const ct_kview *host, const void *args);

static ct_status fill_via_host(const ct_kview *dst, host_fill_fn fn, const void *args) {
    int64_t n = view_numel(dst);
    size_t nbytes = (size_t)n * ct_dtype_size(dst->dtype);
    void *host = malloc(nbytes ? nbytes : 1);
    if (!host)
        return ct_error_set(CT_ERR_OOM, "%s: out of host memory staging %zu bytes",
                            ct_device_type_name(dst->device_type), nbytes);
    ct_kview h;
    memset(&h, 0, sizeof h);
    h.data = host;
    h.dtype = dst->dtype;
    h.ndim = 1;
    h.shape[0] = n;
    h.strides[0] = 1;
    ct_status st = fn(&h, args);
    if (st == CT_OK) st = ct_backend_for(dst->device_type)->write(dst->device, dst->data, byte_offset(dst), host, nbytes);
    free(host);
    return st;
}

typedef struct arange_args {
    double start, step;
} arange_args;

static ct_status host_arange(const ct_kview *h, const void *p) {
    const arange_args *a = p;
    return ct_backend_for(CT_DEVICE_CPU)->ops->arange(h, a->start, a->step);
}

ct_status ct_gpu_arange(const ct_kview *dst, double start, double step) {
    const ct_gpu_device *g = ct_gpu_of(dst);
    int64_t off = dst->offset, n = view_numel(dst);
    int32_t dt = dst->dtype;
    if (n == 0) return CT_OK;
    if (ct_dtype_is_integral(dst->dtype, true) && start == (double)(int64_t)start && step == (double)(int64_t)step) {
        int64_t s0 = (int64_t)start, st = (int64_t)step;
        ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_ARG(off), CT_GPU_ARG(n), CT_GPU_ARG(dt), CT_GPU_ARG(s0),
                             CT_GPU_ARG(st)};
        return g->launch(dst->device, CT_KID(ct_k_arange_long), args, 6, (size_t)n, 0);
    }
    if (!g->has_fp64(dst->device)) {
        if (dst->dtype == CT_FLOAT64) CT_TRY(ct_gpu_check_fp64(dst, CT_FLOAT64, "arange"));
        arange_args a = {start, step};
        return fill_via_host(dst, host_arange, &a);
    }
    ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_ARG(off),   CT_GPU_ARG(n),
                         CT_GPU_ARG(dt),  CT_GPU_ARG(start), CT_GPU_ARG(step)};
    return g->launch(dst->device, CT_KID(ct_k_arange_double), args, 6, (size_t)n, 0);
}

typedef struct random_args {
    ct_random_kind kind;
    uint64_t seed, offset;
    double a, b;
} random_args;

static ct_status host_random(const ct_kview *h, const void *p) {
    const random_args *r = p;
    return ct_backend_for(CT_DEVICE_CPU)->ops->random(h, r->kind, r->seed, r->offset, r->a, r->b);
}

ct_status ct_gpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b) {
    const ct_gpu_device *g = ct_gpu_of(dst);
    /* lo and range as cpu_random.c computes them (its int64 difference
     * wraps; done here in uint64, where wrapping is defined) */
    int64_t off = dst->offset, n = view_numel(dst), lo = (int64_t)a;
    uint64_t range = (uint64_t)(int64_t)b - (uint64_t)(int64_t)a;
    int32_t dt = dst->dtype, k = kind;
    if (n == 0) return CT_OK;
    CT_CHECK_STATUS(kind != CT_RAND_INT || range != 0, CT_ERR_INVALID_ARG,
                    "random_: expects 'from' to be less than 'to', but got from=%.17g >= to=%.17g", a, b);
    if (!g->has_fp64(dst->device)) {
        if (dst->dtype == CT_FLOAT64) CT_TRY(ct_gpu_check_fp64(dst, CT_FLOAT64, "random_"));
        random_args r = {kind, seed, offset, a, b};
        return fill_via_host(dst, host_random, &r);
    }
    ct_gpu_arg args[] = {CT_GPU_BUF(dst), CT_GPU_ARG(off),    CT_GPU_ARG(n), CT_GPU_ARG(dt),
                         CT_GPU_ARG(k),   CT_GPU_ARG(seed),   CT_GPU_ARG(offset), CT_GPU_ARG(a),
                         CT_GPU_ARG(b),   CT_GPU_ARG(lo),     CT_GPU_ARG(range)};
    return g->launch(dst->device, CT_KID(ct_k_random), args, 11, (size_t)n, 0);
}
