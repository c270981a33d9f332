/*
 * gpu_elementwise.c — the GPU backends' elementwise, where and indexing
 * entries, shared by OpenCL and CUDA (see gpu.h).
 *
 * Each entry checks what the CPU backend checks (same dtype rules, same
 * messages), turns its views into kernel metadata and enqueues one kernel
 * of src/kernels/elementwise.kh or index.kh on the current stream; nothing
 * waits, except integer floor_divide/remainder, which must report a division
 * by zero as the CPU does and so read back a flag the kernel sets.
 */
#include <math.h>

#include "gpu.h"
#include "core/internal.h"

/* ---- unary ----------------------------------------------------------------------- */

ct_status ct_gpu_unary(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0, double p1) {
    CT_CHECK_STATUS((unsigned)op < CT_UN_COUNT_, CT_ERR_INTERNAL, "unary: unknown op %d", (int)op);
    const char *name = cti_unary_name(op);
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype) || ct_unary_facts_of(op)->integer_kernel, CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on %s", name, ct_dtype_name(in->dtype),
                    ct_device_type_name(out->device_type));
    CT_CHECK_STATUS(ct_unary_facts_of(op)->bool_result ? out->dtype == CT_BOOL : out->dtype == in->dtype, CT_ERR_INTERNAL,
                    "%s: unexpected output dtype %s", name, ct_dtype_name(out->dtype));
    CT_TRY(ct_gpu_check_fp64(out, in->dtype, name));
    ct_gpu_meta m[2];
    const ct_kview *views[2] = {out, in};
    int64_t n = ct_gpu_coalesced_metas(views, 2, m);
    if (n == 0) return CT_OK;
    const ct_gpu_device *g = ct_gpu_of(out);
    int32_t cop = (int32_t)op;
    /* clamp: a missing (NaN) bound is no bound */
    bool clamp = op == CT_UN_CLAMP;
    double lo = clamp && isnan(p0) ? -INFINITY : p0, hi = clamp && isnan(p1) ? INFINITY : p1;
    switch (ct_gpu_compute_kind(in->dtype)) {
    case 'f': {
        float f0 = (float)lo, f1 = (float)hi;
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(in), CT_GPU_ARG(m[1]),
                             CT_GPU_ARG(cop), CT_GPU_ARG(f0), CT_GPU_ARG(f1)};
        return g->launch(out->device, CT_KID(ct_k_unary_f), args, 7, (size_t)n, 0);
    }
    case 'd': {
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(in), CT_GPU_ARG(m[1]),
                             CT_GPU_ARG(cop), CT_GPU_ARG(lo), CT_GPU_ARG(hi)};
        return g->launch(out->device, CT_KID(ct_k_unary_d), args, 7, (size_t)n, 0);
    }
    default: {
        int64_t l0 = isnan(p0) ? INT64_MIN : ct_gpu_to_long(p0), l1 = isnan(p1) ? INT64_MAX : ct_gpu_to_long(p1);
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(in), CT_GPU_ARG(m[1]),
                             CT_GPU_ARG(cop), CT_GPU_ARG(l0), CT_GPU_ARG(l1)};
        return g->launch(out->device, CT_KID(ct_k_unary_l), args, 7, (size_t)n, 0);
    }
    }
}

/* ---- binary ---------------------------------------------------------------------- */

/* Integer floor_divide/remainder: launch with a zeroed flag in device
 * memory and read it back (waiting for the kernel), as the CPU reports a
 * division by zero synchronously. args' last entry is the flag. */
static ct_status binary_long_checked(const ct_kview *out, const char *name, ct_gpu_arg *args, int nargs,
                                     size_t n) {
    const ct_backend *b = ct_backend_for(out->device_type);
    int dev = out->device;
    int32_t zero = 0, flag = 0;
    void *flag_buf = NULL;
    CT_TRY(b->alloc(dev, sizeof flag, &flag_buf));
    ct_status st = b->write(dev, flag_buf, 0, &zero, sizeof zero);
    args[nargs - 1] = CT_GPU_ARG(flag_buf);
    if (st == CT_OK) st = ct_gpu_of(out)->launch(dev, CT_KID(ct_k_binary_l), args, nargs, n, 0);
    if (st == CT_OK) st = b->read(dev, flag_buf, 0, &flag, sizeof flag);
    b->free(dev, flag_buf);
    if (st == CT_OK && flag)
        st = ct_error_set(CT_ERR_INVALID_ARG, "%s: ZeroDivisionError (integer division by zero)", name);
    return st;
}

ct_status ct_gpu_binary(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                        double alpha) {
    CT_CHECK_STATUS((unsigned)op < CT_BIN_COUNT_, CT_ERR_INTERNAL, "binary: unknown op %d", (int)op);
    const char *name = cti_binary_name(op);
    CT_CHECK_STATUS(a->dtype == b->dtype, CT_ERR_INTERNAL, "%s: operands of different dtypes", name);
    const bool floating = ct_dtype_is_floating(a->dtype);
    CT_CHECK_STATUS(floating || (op != CT_BIN_DIV && op != CT_BIN_ATAN2), CT_ERR_DTYPE,
                    "\"%s_%s\" not implemented for '%s'", name, ct_device_type_name(out->device_type),
                    ct_dtype_name(a->dtype));
    const bool bool_out = ct_binary_facts_of(op)->bool_result;
    CT_CHECK_STATUS(bool_out ? out->dtype == CT_BOOL : out->dtype == a->dtype, CT_ERR_INTERNAL,
                    "%s: unexpected output dtype %s", name, ct_dtype_name(out->dtype));
    CT_TRY(ct_gpu_check_fp64(out, a->dtype, name));
    ct_gpu_meta m[3];
    const ct_kview *views[3] = {out, a, b};
    int64_t n = ct_gpu_coalesced_metas(views, 3, m);
    if (n == 0) return CT_OK;
    const ct_gpu_device *g = ct_gpu_of(out);
    /* The CPU's pow uses x * x and sqrt for exponents 2 and 0.5 exactly where
     * its inner loop sees a stride-0 b: b constant along the innermost merged
     * dim (they differ at -inf and -0, so the device must follow). */
    int32_t cop = (int32_t)op, b_scalar = m[2].ndim > 0 && m[2].strides[m[2].ndim - 1] == 0;
    switch (ct_gpu_compute_kind(a->dtype)) {
    case 'f': {
        float fa = (float)alpha;
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(a),     CT_GPU_ARG(m[1]),
                             CT_GPU_BUF(b),   CT_GPU_ARG(m[2]), CT_GPU_ARG(cop),   CT_GPU_ARG(fa),
                             CT_GPU_ARG(b_scalar)};
        return g->launch(out->device, CT_KID(ct_k_binary_f), args, 9, (size_t)n, 0);
    }
    case 'd': {
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(a),     CT_GPU_ARG(m[1]),
                             CT_GPU_BUF(b),   CT_GPU_ARG(m[2]), CT_GPU_ARG(cop),   CT_GPU_ARG(alpha),
                             CT_GPU_ARG(b_scalar)};
        return g->launch(out->device, CT_KID(ct_k_binary_d), args, 9, (size_t)n, 0);
    }
    default: {
        int64_t la = ct_gpu_to_long(alpha);
        void *no_flag = NULL; /* only divisions can set it */
        ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(a),   CT_GPU_ARG(m[1]),
                             CT_GPU_BUF(b),   CT_GPU_ARG(m[2]), CT_GPU_ARG(cop), CT_GPU_ARG(la),
                             CT_GPU_ARG(no_flag)};
        if (op == CT_BIN_FLOOR_DIV || op == CT_BIN_REMAINDER) return binary_long_checked(out, name, args, 9, (size_t)n);
        return g->launch(out->device, CT_KID(ct_k_binary_l), args, 9, (size_t)n, 0);
    }
    }
}

/* ---- where ----------------------------------------------------------------------- */

ct_status ct_gpu_where(const ct_kview *out, const ct_kview *cond, const ct_kview *a, const ct_kview *b) {
    CT_CHECK_STATUS(cond->dtype == CT_BOOL && a->dtype == out->dtype && b->dtype == out->dtype, CT_ERR_INTERNAL,
                    "where: unexpected dtypes (condition %s, %s, %s -> %s)", ct_dtype_name(cond->dtype),
                    ct_dtype_name(a->dtype), ct_dtype_name(b->dtype), ct_dtype_name(out->dtype));
    ct_gpu_meta m[4];
    const ct_kview *views[4] = {out, cond, a, b};
    int64_t n = ct_gpu_coalesced_metas(views, 4, m);
    if (n == 0) return CT_OK;
    ct_gpu_arg args[] = {CT_GPU_BUF(out), CT_GPU_ARG(m[0]), CT_GPU_BUF(cond), CT_GPU_ARG(m[1]),
                         CT_GPU_BUF(a),   CT_GPU_ARG(m[2]), CT_GPU_BUF(b),    CT_GPU_ARG(m[3])};
    return ct_gpu_of(out)->launch(out->device, CT_KID(ct_k_where), args, 8, (size_t)n, 0);
}

/* ---- indexing --------------------------------------------------------------------- */

ct_status ct_gpu_index_select(const ct_kview *out, const ct_kview *in, const ct_kview *index, int64_t outer,
                              int64_t dim_in, int64_t inner) {
    ct_gpu_meta mo = ct_gpu_meta_of(out), mi = ct_gpu_meta_of(in), mx = ct_gpu_meta_of(index);
    if (mo.numel == 0) return CT_OK;
    int64_t ln = mx.numel;
    ct_gpu_arg args[] = {CT_GPU_BUF(out),   CT_GPU_ARG(mo),     CT_GPU_BUF(in),    CT_GPU_ARG(mi),
                         CT_GPU_BUF(index), CT_GPU_ARG(mx),     CT_GPU_ARG(outer), CT_GPU_ARG(dim_in),
                         CT_GPU_ARG(inner), CT_GPU_ARG(ln)};
    return ct_gpu_of(out)->launch(out->device, CT_KID(ct_k_index_select), args, 10, (size_t)mo.numel, 0);
}

ct_status ct_gpu_gather(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim) {
    ct_gpu_meta mo = ct_gpu_meta_of(out), mi = ct_gpu_meta_of(in), mx = ct_gpu_meta_of(index);
    if (mo.numel == 0) return CT_OK;
    int32_t d = dim;
    ct_gpu_arg args[] = {CT_GPU_BUF(out),   CT_GPU_ARG(mo), CT_GPU_BUF(in), CT_GPU_ARG(mi),
                         CT_GPU_BUF(index), CT_GPU_ARG(mx), CT_GPU_ARG(d)};
    return ct_gpu_of(out)->launch(out->device, CT_KID(ct_k_gather), args, 7, (size_t)mo.numel, 0);
}
