/*
 * gpu_reduce.c — the GPU backends' reduction and softmax entries, shared by
 * OpenCL and CUDA (see gpu.h): they pick the kernel shape (a work-group per
 * row for long rows, a work item per row otherwise; src/kernels/reduce.kh
 * and softmax.kh) and enqueue it on the current stream.
 */
#include "gpu.h"
#include "core/internal.h"

/* Rows at least this long get a work-group each... */
#define GROUP_MIN_ROW 256
/* ...unless there are this many rows, which keep the device busy anyway. */
#define GROUP_MAX_ROWS 2048
/* Work-groups of the group kernels (local arrays in the kernels hold 256). */
#define GROUP_CAP 256
/* The group kernels loop over rows, so the launch needs no more groups. */
#define MAX_GROUPS 4096

/* CPU devices (PoCL) get one work item per row: a work-group tree buys
 * nothing on a CPU, and on PoCL 3.1 with several threads the group kernels
 * lose and duplicate partial sums between concurrently running work-groups
 * (rows of ones summing to 5303 or 6605 instead of 5408) — see
 * tests/test_backend_ops.c's reduce_ones_rows case. */
static bool use_groups(const ct_kview *v, int64_t rows, int64_t row_len) {
    return !ct_gpu_of(v)->is_cpu(v->device) && row_len >= GROUP_MIN_ROW && rows < GROUP_MAX_ROWS;
}

static size_t group_count(int64_t rows) { return (size_t)(rows < MAX_GROUPS ? rows : MAX_GROUPS); }

ct_status ct_gpu_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index, const ct_kview *in,
                        double param) {
    CT_CHECK_STATUS((unsigned)op < CT_RED_COUNT_, CT_ERR_INTERNAL, "reduce: unknown op %d", (int)op);
    const ct_gpu_device *g = ct_gpu_of(out);
    const int dev = out->device;
    CT_TRY(ct_gpu_check_fp64(out, in->dtype, cti_reduce_name(op)));
    /* the [O, R] view as the kernels read it */
    ct_gpu_meta mi = ct_gpu_meta_of(in);
    mi.ndim = 2;
    mi.shape[0] = in->ndim > 0 ? in->shape[0] : 1;
    mi.shape[1] = in->ndim > 1 ? in->shape[1] : 1;
    mi.strides[0] = in->ndim > 0 ? in->strides[0] : 0;
    mi.strides[1] = in->ndim > 1 ? in->strides[1] : 0;
    mi.numel = mi.shape[0] * mi.shape[1];
    const int64_t O = mi.shape[0], R = mi.shape[1];
    if (O == 0) return CT_OK;
    bool extreme = op == CT_RED_MAX || op == CT_RED_MIN || op == CT_RED_ARGMAX || op == CT_RED_ARGMIN;
    if (R == 0 && extreme)
        return ct_error_set(CT_ERR_INDEX, "%s: Expected reduction dim to have non-zero size",
                            op == CT_RED_MAX || op == CT_RED_ARGMAX ? "max" : "min");

    ct_gpu_meta mo = ct_gpu_meta_of(out);
    ct_gpu_meta mx = out_index ? ct_gpu_meta_of(out_index) : mo;
    void *bx = out_index ? out_index->data : NULL;
    int32_t cop = (int32_t)op, has_index = out_index != NULL;
    /* the kernels' k_acc is double exactly when the device has fp64 */
    double pd = param;
    float pf = (float)param;
    ct_gpu_arg pa = g->has_fp64(dev) ? CT_GPU_ARG(pd) : CT_GPU_ARG(pf);
    ct_gpu_arg args[] = {CT_GPU_BUF(out),      CT_GPU_ARG(mo), CT_GPU_ARG(bx),  CT_GPU_ARG(mx),
                         CT_GPU_ARG(has_index), CT_GPU_BUF(in), CT_GPU_ARG(mi), CT_GPU_ARG(cop),
                         pa};
    if (!use_groups(out, O, R)) return g->launch(dev, CT_KID(ct_k_reduce_rows), args, 9, (size_t)O, 0);
    size_t local;
    CT_TRY(ct_gpu_group_size(out, CT_KID(ct_k_reduce_group), GROUP_CAP, &local));
    return g->launch(dev, CT_KID(ct_k_reduce_group), args, 9, group_count(O) * local, local);
}

ct_status ct_gpu_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim, int64_t inner,
                         bool log) {
    const ct_gpu_device *g = ct_gpu_of(out);
    const int dev = out->device;
    const char *name = log ? "log_softmax" : "softmax";
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE, "%s: not implemented for '%s' on %s", name,
                    ct_dtype_name(in->dtype), ct_device_type_name(out->device_type));
    CT_TRY(ct_gpu_check_fp64(out, in->dtype, name));
    if (outer == 0 || dim == 0 || inner == 0) return CT_OK;
    ct_gpu_meta mo = ct_gpu_meta_of(out), mi = ct_gpu_meta_of(in);
    int32_t want_log = log;
    if (inner == 1 && use_groups(out, outer, dim)) {
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(mo),  CT_GPU_BUF(in),      CT_GPU_ARG(mi),
                             CT_GPU_ARG(outer), CT_GPU_ARG(dim), CT_GPU_ARG(want_log)};
        size_t local;
        CT_TRY(ct_gpu_group_size(out, CT_KID(ct_k_softmax_group), GROUP_CAP, &local));
        return g->launch(dev, CT_KID(ct_k_softmax_group), args, 7, group_count(outer) * local, local);
    }
    ct_gpu_arg args[] = {CT_GPU_BUF(out),   CT_GPU_ARG(mo),  CT_GPU_BUF(in),    CT_GPU_ARG(mi),
                         CT_GPU_ARG(outer), CT_GPU_ARG(dim), CT_GPU_ARG(inner), CT_GPU_ARG(want_log)};
    return g->launch(dev, CT_KID(ct_k_softmax), args, 8, (size_t)(outer * inner), 0);
}
