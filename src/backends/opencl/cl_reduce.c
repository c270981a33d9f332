/*
 * cl_reduce.c — the OpenCL backend's reduction and softmax entries: they
 * pick the kernel shape (a work-group per row for long rows, a work item per
 * row otherwise; see src/kernels/reduce.kh and softmax.kh) and enqueue it on
 * the current stream.
 */
#include "cl_ops.h"
#include "core/internal.h"

/* Rows at least this long get a work-group each... */
#define GROUP_MIN_ROW 256
/* ...unless there are this many rows, which keep the device busy anyway. */
#define GROUP_MAX_ROWS 2048
/* Work-groups of the group kernels (local arrays in the kernels hold 256). */
#define GROUP_CAP 256
/* The group kernels loop over rows, so the launch needs no more groups. */
#define MAX_GROUPS 4096

/* CPU OpenCL devices (PoCL) get one work item per row: a work-group tree buys
 * nothing on a CPU, and on PoCL 3.1 with several threads the group kernels
 * lose and duplicate partial sums between concurrently running work-groups
 * (rows of ones summing to 5303 or 6605 instead of 5408) — see
 * tests/test_backend_ops.c's reduce_ones_rows case. Cached per device. */
static bool is_cpu_device(int dev) {
    static int cache[64]; /* 0 unknown, 1 cpu, 2 other */
    if (dev < 0 || dev >= 64) return false;
    if (!cache[dev]) {
        cl_device_type type = 0;
        clGetDeviceInfo(ct_cl_device_id(dev), CL_DEVICE_TYPE, sizeof type, &type, NULL);
        cache[dev] = (type & CL_DEVICE_TYPE_CPU) ? 1 : 2;
    }
    return cache[dev] == 1;
}

static bool use_groups(int dev, int64_t rows, int64_t row_len) {
    return !is_cpu_device(dev) && row_len >= GROUP_MIN_ROW && rows < GROUP_MAX_ROWS;
}

static size_t group_count(int64_t rows) { return (size_t)(rows < MAX_GROUPS ? rows : MAX_GROUPS); }

ct_status ct_cl_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index,
                       const ct_kview *in, double param) {
    CT_CHECK_STATUS((unsigned)op < CT_RED_COUNT_, CT_ERR_INTERNAL, "reduce: unknown op %d",
                    (int)op);
    const int dev = out->device;
    CT_TRY(ct_clops_check_fp64(dev, in->dtype, cti_reduce_name(op)));
    /* the [O, R] view as the kernels read it */
    ct_cl_meta mi = ct_clops_meta(in);
    mi.ndim = 2;
    mi.shape[0] = in->ndim > 0 ? in->shape[0] : 1;
    mi.shape[1] = in->ndim > 1 ? in->shape[1] : 1;
    mi.strides[0] = in->ndim > 0 ? in->strides[0] : 0;
    mi.strides[1] = in->ndim > 1 ? in->strides[1] : 0;
    mi.numel = mi.shape[0] * mi.shape[1];
    const int64_t O = mi.shape[0], R = mi.shape[1];
    if (O == 0)
        return CT_OK;
    bool extreme =
        op == CT_RED_MAX || op == CT_RED_MIN || op == CT_RED_ARGMAX || op == CT_RED_ARGMIN;
    if (R == 0 && extreme)
        return ct_error_set(CT_ERR_INDEX, "%s: Expected reduction dim to have non-zero size",
                            op == CT_RED_MAX || op == CT_RED_ARGMAX ? "max" : "min");

    ct_cl_meta mo = ct_clops_meta(out);
    ct_cl_meta mx = out_index ? ct_clops_meta(out_index) : mo;
    cl_mem bo = (cl_mem)out->data, bi = (cl_mem)in->data;
    cl_mem bx = out_index ? (cl_mem)out_index->data : NULL;
    cl_int cop = (cl_int)op, has_index = out_index != NULL;
    /* the kernels' k_acc is double exactly when the device has fp64 */
    cl_double pd = param;
    cl_float pf = (cl_float)param;
    ct_clops_arg pa = ct_clops_has_fp64(dev) ? CT_CLOPS_ARG(pd) : CT_CLOPS_ARG(pf);
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(mo), CT_CLOPS_ARG(bx),
                           CT_CLOPS_ARG(mx), CT_CLOPS_ARG(has_index), CT_CLOPS_ARG(bi),
                           CT_CLOPS_ARG(mi), CT_CLOPS_ARG(cop), pa};
    if (!use_groups(dev, O, R))
        return ct_clops_launch(dev, "ct_k_reduce_rows", args, 9, (size_t)O, 0);
    size_t local;
    CT_TRY(ct_clops_group_size(dev, "ct_k_reduce_group", GROUP_CAP, &local));
    return ct_clops_launch(dev, "ct_k_reduce_group", args, 9, group_count(O) * local, local);
}

ct_status ct_cl_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim,
                        int64_t inner, bool log) {
    const int dev = out->device;
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on opencl", log ? "log_softmax" : "softmax",
                    ct_dtype_name(in->dtype));
    CT_TRY(ct_clops_check_fp64(dev, in->dtype, log ? "log_softmax" : "softmax"));
    if (outer == 0 || dim == 0 || inner == 0)
        return CT_OK;
    ct_cl_meta mo = ct_clops_meta(out), mi = ct_clops_meta(in);
    cl_mem bo = (cl_mem)out->data, bi = (cl_mem)in->data;
    cl_long lo = outer, ld = dim, li = inner;
    cl_int want_log = log;
    if (inner == 1 && use_groups(dev, outer, dim)) {
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(mo), CT_CLOPS_ARG(bi),
                               CT_CLOPS_ARG(mi), CT_CLOPS_ARG(lo), CT_CLOPS_ARG(ld),
                               CT_CLOPS_ARG(want_log)};
        size_t local;
        CT_TRY(ct_clops_group_size(dev, "ct_k_softmax_group", GROUP_CAP, &local));
        return ct_clops_launch(dev, "ct_k_softmax_group", args, 7, group_count(outer) * local,
                               local);
    }
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(mo), CT_CLOPS_ARG(bi),
                           CT_CLOPS_ARG(mi), CT_CLOPS_ARG(lo), CT_CLOPS_ARG(ld),
                           CT_CLOPS_ARG(li), CT_CLOPS_ARG(want_log)};
    return ct_clops_launch(dev, "ct_k_softmax", args, 8, (size_t)(outer * inner), 0);
}
