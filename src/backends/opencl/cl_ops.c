/*
 * cl_ops.c — the OpenCL backend's elementwise, where and indexing entries,
 * and the launch helpers that cl_reduce.c shares.
 *
 * Each entry checks what the CPU backend checks (same dtype rules, same
 * messages), turns its views into ct_cl_meta values and enqueues one kernel
 * of src/kernels/elementwise.kh or index.kh on the current stream; nothing
 * waits, except integer floor_divide/remainder, which must report a division
 * by zero as the CPU does and so read back a flag the kernel sets.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cl_ops.h"
#include "core/internal.h"

/* ---- launch helpers ----------------------------------------------------------- */

ct_status ct_clops_launch(int dev, const char *name, const ct_clops_arg *args, int nargs,
                          size_t global, size_t local) {
    cl_kernel k;
    CT_TRY(ct_cl_kernel(dev, name, &k));
    ct_cl_kernel_lock(dev);
    ct_status st = CT_OK;
    for (int i = 0; i < nargs && st == CT_OK; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS)
            st = ct_error_set(CT_ERR_BACKEND,
                              "OpenCL error %s (%d) setting argument %d of kernel %s",
                              ct_cl_error_name(err), (int)err, i, name);
    }
    if (st == CT_OK)
        st = local ? ct_cl_launch(dev, k, global, local) : ct_cl_launch_1d(dev, k, global);
    ct_cl_kernel_unlock(dev);
    return st;
}

#define FP64_CACHE 64
static atomic_int g_fp64[FP64_CACHE]; /* 0 unknown, 1 no, 2 yes */

bool ct_clops_has_fp64(int dev) {
    if (dev >= 0 && dev < FP64_CACHE && atomic_load(&g_fp64[dev]))
        return atomic_load(&g_fp64[dev]) == 2;
    cl_device_fp_config cfg = 0;
    if (clGetDeviceInfo(ct_cl_device_id(dev), CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) !=
        CL_SUCCESS)
        cfg = 0;
    if (dev >= 0 && dev < FP64_CACHE)
        atomic_store(&g_fp64[dev], cfg ? 2 : 1);
    return cfg != 0;
}

ct_status ct_clops_check_fp64(int dev, ct_dtype dt, const char *op) {
    if (dt != CT_FLOAT64 || ct_clops_has_fp64(dev))
        return CT_OK;
    return ct_error_set(CT_ERR_UNSUPPORTED,
                        "%s: float64 is not supported on opencl:%d (the device lacks cl_khr_fp64)",
                        op, dev);
}

ct_cl_meta ct_clops_meta(const ct_kview *v) {
    ct_cl_meta m;
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

ct_status ct_clops_group_size(int dev, const char *name, size_t cap, size_t *out) {
    cl_kernel k;
    CT_TRY(ct_cl_kernel(dev, name, &k));
    size_t wg = 1;
    CT_CL_TRY(clGetKernelWorkGroupInfo(k, ct_cl_device_id(dev), CL_KERNEL_WORK_GROUP_SIZE,
                                       sizeof wg, &wg, NULL));
    size_t limit = wg < cap ? wg : cap, p = 1;
    while (p * 2 <= limit) p *= 2;
    *out = p;
    return CT_OK;
}

/* Metas of n views of one shape (views[0]'s) with size-1 dims dropped and
 * neighbouring dims merged where every view is contiguous across them, so
 * that kernels mostly index a single dimension. Returns the element count. */
static int64_t coalesced_metas(const ct_kview *const *views, int n, ct_cl_meta *metas) {
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
        if (size == 1)
            continue;
        bool merge = nd > 0;
        for (int k = 0; k < n && merge; k++)
            merge = metas[k].strides[nd - 1] == views[k]->strides[d] * size;
        if (merge) {
            metas[0].shape[nd - 1] *= size;
            for (int k = 0; k < n; k++)
                metas[k].strides[nd - 1] = views[k]->strides[d];
            continue;
        }
        for (int k = 0; k < n; k++)
            metas[k].strides[nd] = views[k]->strides[d];
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

static cl_mem buffer_of(const ct_kview *v) { return (cl_mem)v->data; }

/* Float-to-integer as the CPU backend converts (NaN 0, saturating). */
static cl_long to_long(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (cl_long)v;
}

/* The compute type of a dtype: 'f' float (float32 and 16-bit), 'd' double,
 * 'l' long (integers and bool). */
static char compute_kind(ct_dtype dt) {
    if (dt == CT_FLOAT64) return 'd';
    return ct_dtype_is_floating(dt) ? 'f' : 'l';
}

/* ---- unary ----------------------------------------------------------------------- */

static bool unary_outputs_bool(ct_unary_op op) {
    return op == CT_UN_ISNAN || op == CT_UN_ISINF || op == CT_UN_ISFINITE ||
           op == CT_UN_LOGICAL_NOT;
}

static bool unary_has_integer_kernel(ct_unary_op op) {
    switch (op) {
    case CT_UN_NEG: case CT_UN_ABS: case CT_UN_SIGN: case CT_UN_SQUARE: case CT_UN_RELU:
    case CT_UN_FLOOR: case CT_UN_CEIL: case CT_UN_ROUND: case CT_UN_TRUNC:
    case CT_UN_ISNAN: case CT_UN_ISINF: case CT_UN_ISFINITE: case CT_UN_LOGICAL_NOT:
    case CT_UN_CLAMP:
        return true;
    default:
        return false;
    }
}

ct_status ct_cl_unary(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0,
                      double p1) {
    CT_CHECK_STATUS((unsigned)op < CT_UN_COUNT_, CT_ERR_INTERNAL, "unary: unknown op %d", (int)op);
    const char *name = cti_unary_name(op);
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype) || unary_has_integer_kernel(op), CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on opencl", name, ct_dtype_name(in->dtype));
    CT_CHECK_STATUS(unary_outputs_bool(op) ? out->dtype == CT_BOOL : out->dtype == in->dtype,
                    CT_ERR_INTERNAL, "%s: unexpected output dtype %s", name,
                    ct_dtype_name(out->dtype));
    CT_TRY(ct_clops_check_fp64(out->device, in->dtype, name));
    ct_cl_meta m[2];
    const ct_kview *views[2] = {out, in};
    int64_t n = coalesced_metas(views, 2, m);
    if (n == 0)
        return CT_OK;
    cl_mem bo = buffer_of(out), bi = buffer_of(in);
    cl_int cop = (cl_int)op;
    /* clamp: a missing (NaN) bound is no bound */
    bool clamp = op == CT_UN_CLAMP;
    double lo = clamp && isnan(p0) ? -INFINITY : p0, hi = clamp && isnan(p1) ? INFINITY : p1;
    switch (compute_kind(in->dtype)) {
    case 'f': {
        cl_float f0 = (cl_float)lo, f1 = (cl_float)hi;
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(bi),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(cop), CT_CLOPS_ARG(f0),
                               CT_CLOPS_ARG(f1)};
        return ct_clops_launch(out->device, "ct_k_unary_f", args, 7, (size_t)n, 0);
    }
    case 'd': {
        cl_double d0 = lo, d1 = hi;
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(bi),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(cop), CT_CLOPS_ARG(d0),
                               CT_CLOPS_ARG(d1)};
        return ct_clops_launch(out->device, "ct_k_unary_d", args, 7, (size_t)n, 0);
    }
    default: {
        cl_long l0 = isnan(p0) ? INT64_MIN : to_long(p0), l1 = isnan(p1) ? INT64_MAX : to_long(p1);
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(bi),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(cop), CT_CLOPS_ARG(l0),
                               CT_CLOPS_ARG(l1)};
        return ct_clops_launch(out->device, "ct_k_unary_l", args, 7, (size_t)n, 0);
    }
    }
}

/* ---- binary ---------------------------------------------------------------------- */

/* Integer floor_divide/remainder: launch with a zero-initialised flag
 * buffer and read it back (waiting for the kernel), as the CPU reports a
 * division by zero synchronously. */
static ct_status binary_long_checked(int dev, const char *name, ct_clops_arg *args, int nargs,
                                     size_t n) {
    cl_int zero = 0, flag = 0, err;
    cl_mem flag_buf = clCreateBuffer(ct_cl_context(dev), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                     sizeof zero, &zero, &err);
    CT_CL_TRY(err);
    args[nargs - 1] = CT_CLOPS_ARG(flag_buf);
    ct_status st = ct_clops_launch(dev, "ct_k_binary_l", args, nargs, n, 0);
    if (st == CT_OK) {
        err = clEnqueueReadBuffer(ct_cl_queue(dev), flag_buf, CL_TRUE, 0, sizeof flag, &flag, 0,
                                  NULL, NULL);
        if (err != CL_SUCCESS)
            st = ct_error_set(CT_ERR_BACKEND, "OpenCL error %s (%d) reading the %s error flag",
                              ct_cl_error_name(err), (int)err, name);
    }
    clReleaseMemObject(flag_buf);
    if (st == CT_OK && flag)
        st = ct_error_set(CT_ERR_INVALID_ARG, "%s: ZeroDivisionError (integer division by zero)",
                          name);
    return st;
}

ct_status ct_cl_binary(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                       double alpha) {
    CT_CHECK_STATUS((unsigned)op < CT_BIN_COUNT_, CT_ERR_INTERNAL, "binary: unknown op %d",
                    (int)op);
    const char *name = cti_binary_name(op);
    CT_CHECK_STATUS(a->dtype == b->dtype, CT_ERR_INTERNAL, "%s: operands of different dtypes",
                    name);
    const bool floating = ct_dtype_is_floating(a->dtype);
    CT_CHECK_STATUS(floating || (op != CT_BIN_DIV && op != CT_BIN_ATAN2), CT_ERR_DTYPE,
                    "\"%s_opencl\" not implemented for '%s'", name, ct_dtype_name(a->dtype));
    const bool bool_out = op >= CT_BIN_EQ;
    CT_CHECK_STATUS(bool_out ? out->dtype == CT_BOOL : out->dtype == a->dtype, CT_ERR_INTERNAL,
                    "%s: unexpected output dtype %s", name, ct_dtype_name(out->dtype));
    CT_TRY(ct_clops_check_fp64(out->device, a->dtype, name));
    ct_cl_meta m[3];
    const ct_kview *views[3] = {out, a, b};
    int64_t n = coalesced_metas(views, 3, m);
    if (n == 0)
        return CT_OK;
    cl_mem bo = buffer_of(out), ba = buffer_of(a), bb = buffer_of(b);
    /* The CPU's pow uses x * x and sqrt for exponents 2 and 0.5 exactly where
     * its inner loop sees a stride-0 b: b constant along the innermost merged
     * dim (they differ at -inf and -0, so the device must follow). */
    cl_int cop = (cl_int)op, b_scalar = m[2].ndim > 0 && m[2].strides[m[2].ndim - 1] == 0;
    switch (compute_kind(a->dtype)) {
    case 'f': {
        cl_float fa = (cl_float)alpha;
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(ba),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(bb), CT_CLOPS_ARG(m[2]),
                               CT_CLOPS_ARG(cop), CT_CLOPS_ARG(fa), CT_CLOPS_ARG(b_scalar)};
        return ct_clops_launch(out->device, "ct_k_binary_f", args, 9, (size_t)n, 0);
    }
    case 'd': {
        cl_double da = alpha;
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(ba),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(bb), CT_CLOPS_ARG(m[2]),
                               CT_CLOPS_ARG(cop), CT_CLOPS_ARG(da), CT_CLOPS_ARG(b_scalar)};
        return ct_clops_launch(out->device, "ct_k_binary_d", args, 9, (size_t)n, 0);
    }
    default: {
        cl_long la = to_long(alpha);
        cl_mem no_flag = NULL; /* only divisions can set it */
        ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(ba),
                               CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(bb), CT_CLOPS_ARG(m[2]),
                               CT_CLOPS_ARG(cop), CT_CLOPS_ARG(la), CT_CLOPS_ARG(no_flag)};
        if (op == CT_BIN_FLOOR_DIV || op == CT_BIN_REMAINDER)
            return binary_long_checked(out->device, name, args, 9, (size_t)n);
        return ct_clops_launch(out->device, "ct_k_binary_l", args, 9, (size_t)n, 0);
    }
    }
}

/* ---- where ----------------------------------------------------------------------- */

ct_status ct_cl_where(const ct_kview *out, const ct_kview *cond, const ct_kview *a,
                      const ct_kview *b) {
    CT_CHECK_STATUS(cond->dtype == CT_BOOL && a->dtype == out->dtype && b->dtype == out->dtype,
                    CT_ERR_INTERNAL, "where: unexpected dtypes (condition %s, %s, %s -> %s)",
                    ct_dtype_name(cond->dtype), ct_dtype_name(a->dtype), ct_dtype_name(b->dtype),
                    ct_dtype_name(out->dtype));
    ct_cl_meta m[4];
    const ct_kview *views[4] = {out, cond, a, b};
    int64_t n = coalesced_metas(views, 4, m);
    if (n == 0)
        return CT_OK;
    cl_mem bo = buffer_of(out), bc = buffer_of(cond), ba = buffer_of(a), bb = buffer_of(b);
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(m[0]), CT_CLOPS_ARG(bc),
                           CT_CLOPS_ARG(m[1]), CT_CLOPS_ARG(ba), CT_CLOPS_ARG(m[2]),
                           CT_CLOPS_ARG(bb), CT_CLOPS_ARG(m[3])};
    return ct_clops_launch(out->device, "ct_k_where", args, 8, (size_t)n, 0);
}

/* ---- indexing --------------------------------------------------------------------- */

ct_status ct_cl_index_select(const ct_kview *out, const ct_kview *in, const ct_kview *index,
                             int64_t outer, int64_t dim_in, int64_t inner) {
    ct_cl_meta mo = ct_clops_meta(out), mi = ct_clops_meta(in), mx = ct_clops_meta(index);
    if (mo.numel == 0)
        return CT_OK;
    cl_mem bo = buffer_of(out), bi = buffer_of(in), bx = buffer_of(index);
    cl_long lo = outer, ld = dim_in, li = inner, ln = mx.numel;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(mo), CT_CLOPS_ARG(bi),
                           CT_CLOPS_ARG(mi), CT_CLOPS_ARG(bx), CT_CLOPS_ARG(mx),
                           CT_CLOPS_ARG(lo), CT_CLOPS_ARG(ld), CT_CLOPS_ARG(li),
                           CT_CLOPS_ARG(ln)};
    return ct_clops_launch(out->device, "ct_k_index_select", args, 10, (size_t)mo.numel, 0);
}

ct_status ct_cl_gather(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim) {
    ct_cl_meta mo = ct_clops_meta(out), mi = ct_clops_meta(in), mx = ct_clops_meta(index);
    if (mo.numel == 0)
        return CT_OK;
    cl_mem bo = buffer_of(out), bi = buffer_of(in), bx = buffer_of(index);
    cl_int d = dim;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(mo), CT_CLOPS_ARG(bi),
                           CT_CLOPS_ARG(mi), CT_CLOPS_ARG(bx), CT_CLOPS_ARG(mx),
                           CT_CLOPS_ARG(d)};
    return ct_clops_launch(out->device, "ct_k_gather", args, 7, (size_t)mo.numel, 0);
}
