/*
 * cl_loss.c — the OpenCL backend's loss sub-table (ct_cl_loss_ops):
 * launchers of the kernels of src/kernels/loss.kh, contracts in
 * src/core/backend_loss.h.
 *
 * Every entry enqueues one kernel on the current stream and returns
 * without waiting, except class_forward, which must report a target out of
 * range as the CPU does: its kernel sets a flag that the host reads back
 * (a blocking read of 16 bytes). Class losses give each row one work item,
 * so no result depends on scheduling and no float atomics are used.
 */
#include <string.h>

#include "cl_ops.h"
#include "core/backend_loss.h"

/* Same layout as ct_kloss in loss.kh. */
typedef struct cl_kloss {
    cl_long batch, classes, inner, ignore_index;
    cl_long in_off, tgt_off, w_off, out_off, aux_off, g_off, g_stride;
    cl_long in_dtype, out_dtype, g_dtype;
    cl_long has_w, has_aux, logits;
} cl_kloss;

/* Same layout as ct_kpw in loss.kh. */
#define KPW_N 7
typedef struct cl_kpw {
    cl_long shape[8];
    cl_long strides[KPW_N][8];
    cl_long offset[KPW_N];
    cl_long dtype[KPW_N];
    cl_long has[KPW_N];
    cl_long ndim, numel, op, backward;
} cl_kpw;

/* Same layout as ct_koptim in loss.kh. */
typedef struct cl_koptim {
    cl_long n;
    cl_long p_off, g_off, s0_off, s1_off, s2_off;
    cl_long pdt, sdt;
    cl_long has_s0, has_s2, first, nesterov, maximize, has_wd, decoupled, amsgrad;
} cl_koptim;

static cl_mem buf_of(const ct_kview *v) { return v ? (cl_mem)v->data : NULL; }

/* A double kernel scalar is double exactly when the device has fp64 (k_acc). */
typedef struct acc_arg {
    cl_double d;
    cl_float f;
} acc_arg;

static ct_clops_arg acc_value(int dev, acc_arg *a, double v) {
    a->d = v;
    a->f = (cl_float)v;
    return ct_clops_has_fp64(dev) ? CT_CLOPS_ARG(a->d) : CT_CLOPS_ARG(a->f);
}

static cl_kloss kloss_of(const ct_class_loss_args *a, const ct_kview *in, const ct_kview *target,
                         const ct_kview *weight) {
    cl_kloss k;
    memset(&k, 0, sizeof k);
    k.batch = a->batch, k.classes = a->classes, k.inner = a->inner;
    k.ignore_index = a->ignore_index;
    k.in_off = in->offset, k.tgt_off = target->offset;
    k.w_off = weight ? weight->offset : 0;
    k.in_dtype = in->dtype;
    k.has_w = weight != NULL, k.logits = a->logits;
    return k;
}

static void set_row_grad(cl_kloss *k, const ct_kview *grad_row) {
    k->g_off = grad_row->offset;
    k->g_stride = grad_row->ndim ? grad_row->strides[0] : 0;
    k->g_dtype = grad_row->dtype;
}

/* Every class-loss entry starts here: dtype support on this device. */
static ct_status check_input(const ct_kview *in, const char *op) {
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on opencl", op, ct_dtype_name(in->dtype));
    return ct_clops_check_fp64(in->device, in->dtype, op);
}

/* ---- class-index targets ------------------------------------------------------------------- */

static ct_status read_flag(int dev, cl_mem flag, cl_long *out) {
    CT_CL_TRY(clEnqueueReadBuffer(ct_cl_queue(dev), flag, CL_TRUE, 0, 2 * sizeof(cl_long), out, 0,
                                  NULL, NULL));
    return CT_OK;
}

static ct_status cl_class_forward(const ct_kview *loss, const ct_kview *row_weight,
                                  const ct_kview *in, const ct_kview *target, const ct_kview *weight,
                                  const ct_class_loss_args *a) {
    const char *name = a->logits ? "cross_entropy" : "nll_loss";
    CT_TRY(check_input(in, name));
    const int dev = in->device;
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    cl_kloss k = kloss_of(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    k.aux_off = row_weight ? row_weight->offset : 0, k.has_aux = row_weight != NULL;
    cl_long zero[2] = {0, 0}, flag[2] = {0, 0};
    cl_int err;
    cl_mem fbuf = clCreateBuffer(ct_cl_context(dev), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof zero, zero, &err);
    CT_CL_TRY(err);
    cl_mem bo = buf_of(loss), bx = buf_of(row_weight), bi = buf_of(in), bt = buf_of(target),
           bw = buf_of(weight);
    acc_arg s;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(bx), CT_CLOPS_ARG(bi), CT_CLOPS_ARG(bt),
                           CT_CLOPS_ARG(bw), CT_CLOPS_ARG(fbuf), CT_CLOPS_ARG(k),
                           acc_value(dev, &s, a->smoothing)};
    ct_status st = ct_clops_launch(dev, "ct_k_class_loss", args, 8, (size_t)rows, 0);
    if (st == CT_OK) st = read_flag(dev, fbuf, flag);
    clReleaseMemObject(fbuf);
    if (st == CT_OK && flag[0])
        st = ct_error_set(CT_ERR_INDEX, "%s: Target %lld is out of bounds.", name,
                          (long long)flag[1]);
    return st;
}

static ct_status cl_class_backward(const ct_kview *grad_in, const ct_kview *grad_row,
                                   const ct_kview *in, const ct_kview *target,
                                   const ct_kview *weight, const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    cl_kloss k = kloss_of(a, in, target, weight);
    set_row_grad(&k, grad_row);
    cl_mem bgi = buf_of(grad_in), bg = buf_of(grad_row), bi = buf_of(in), bt = buf_of(target),
           bw = buf_of(weight);
    cl_long gin_off = grad_in->offset;
    acc_arg s;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bgi), CT_CLOPS_ARG(bg), CT_CLOPS_ARG(bi),
                           CT_CLOPS_ARG(bt),  CT_CLOPS_ARG(bw), CT_CLOPS_ARG(k),
                           CT_CLOPS_ARG(gin_off), acc_value(in->device, &s, a->smoothing)};
    return ct_clops_launch(in->device, "ct_k_class_loss_grad", args, 8, (size_t)rows, 0);
}

/* ---- probability targets ------------------------------------------------------------------------ */

static ct_status cl_prob_forward(const ct_kview *loss, const ct_kview *in, const ct_kview *target,
                                 const ct_kview *weight, const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    cl_kloss k = kloss_of(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    cl_mem bo = buf_of(loss), bi = buf_of(in), bt = buf_of(target), bw = buf_of(weight);
    acc_arg s;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bo), CT_CLOPS_ARG(bi), CT_CLOPS_ARG(bt), CT_CLOPS_ARG(bw),
                           CT_CLOPS_ARG(k), acc_value(in->device, &s, a->smoothing)};
    return ct_clops_launch(in->device, "ct_k_prob_loss", args, 6, (size_t)rows, 0);
}

static ct_status cl_prob_backward(const ct_kview *grad_in, const ct_kview *grad_target,
                                  const ct_kview *grad_row, const ct_kview *in,
                                  const ct_kview *target, const ct_kview *weight,
                                  const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    cl_kloss k = kloss_of(a, in, target, weight);
    set_row_grad(&k, grad_row);
    cl_mem bgi = buf_of(grad_in), bgt = buf_of(grad_target), bg = buf_of(grad_row);
    cl_mem bi = buf_of(in), bt = buf_of(target), bw = buf_of(weight);
    cl_long gin_off = grad_in->offset, gt_off = grad_target ? grad_target->offset : 0;
    cl_int has_gt = grad_target != NULL;
    acc_arg s;
    ct_clops_arg args[] = {CT_CLOPS_ARG(bgi),     CT_CLOPS_ARG(bgt),    CT_CLOPS_ARG(bg),
                           CT_CLOPS_ARG(bi),      CT_CLOPS_ARG(bt),     CT_CLOPS_ARG(bw),
                           CT_CLOPS_ARG(k),       CT_CLOPS_ARG(gin_off), CT_CLOPS_ARG(gt_off),
                           CT_CLOPS_ARG(has_gt),  acc_value(in->device, &s, a->smoothing)};
    return ct_clops_launch(in->device, "ct_k_prob_loss_grad", args, 11, (size_t)rows, 0);
}

/* ---- elementwise losses --------------------------------------------------------------------------- */

static ct_status pointwise(ct_pointwise_loss op, const ct_kview *const *v, bool backward,
                           double scale) {
    const ct_kview *ref = v[3];
    CT_TRY(check_input(ref, op == CT_LOSS_MSE ? "mse_loss" : "binary_cross_entropy_with_logits"));
    cl_kpw p;
    memset(&p, 0, sizeof p);
    p.ndim = ref->ndim, p.numel = 1, p.op = op, p.backward = backward;
    for (int d = 0; d < ref->ndim; d++) p.shape[d] = ref->shape[d], p.numel *= ref->shape[d];
    if (p.numel == 0) return CT_OK;
    cl_mem b[KPW_N];
    for (int j = 0; j < KPW_N; j++) {
        b[j] = buf_of(v[j]);
        if (!v[j]) continue;
        p.has[j] = 1, p.offset[j] = v[j]->offset, p.dtype[j] = v[j]->dtype;
        for (int d = 0; d < ref->ndim; d++) p.strides[j][d] = v[j]->strides[d];
    }
    acc_arg s;
    ct_clops_arg args[] = {CT_CLOPS_ARG(b[0]), CT_CLOPS_ARG(b[1]), CT_CLOPS_ARG(b[2]),
                           CT_CLOPS_ARG(b[3]), CT_CLOPS_ARG(b[4]), CT_CLOPS_ARG(b[5]),
                           CT_CLOPS_ARG(b[6]), CT_CLOPS_ARG(p),    acc_value(ref->device, &s, scale)};
    return ct_clops_launch(ref->device, "ct_k_pointwise_loss", args, 9, (size_t)p.numel, 0);
}

static ct_status cl_pointwise_forward(ct_pointwise_loss op, const ct_kview *out,
                                      const ct_kview *in, const ct_kview *target,
                                      const ct_kview *weight, const ct_kview *pos_weight) {
    const ct_kview *v[KPW_N] = {out, NULL, NULL, in, target, weight, pos_weight};
    return pointwise(op, v, false, 1.0);
}

static ct_status cl_pointwise_backward(ct_pointwise_loss op, const ct_kview *grad_in,
                                       const ct_kview *grad_target, const ct_kview *grad_out,
                                       const ct_kview *in, const ct_kview *target,
                                       const ct_kview *weight, const ct_kview *pos_weight,
                                       double scale) {
    const ct_kview *v[KPW_N] = {grad_in, grad_target, grad_out, in, target, weight, pos_weight};
    return pointwise(op, v, true, scale);
}

/* ---- optimizer updates -------------------------------------------------------------------------- */

static int64_t numel_of(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

static cl_koptim koptim_of(const ct_kview *param, const ct_kview *grad, const ct_kview *s0,
                           const ct_kview *s1, const ct_kview *s2) {
    cl_koptim o;
    memset(&o, 0, sizeof o);
    o.n = numel_of(param);
    o.p_off = param->offset, o.g_off = grad->offset;
    o.s0_off = s0 ? s0->offset : 0, o.s1_off = s1 ? s1->offset : 0, o.s2_off = s2 ? s2->offset : 0;
    o.pdt = param->dtype, o.sdt = s0 ? s0->dtype : param->dtype;
    o.has_s0 = s0 != NULL, o.has_s2 = s2 != NULL;
    return o;
}

static ct_status cl_sgd_update(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                               const ct_sgd_args *a) {
    const int dev = param->device;
    CT_TRY(check_input(param, "sgd_update"));
    cl_koptim o = koptim_of(param, grad, buf, NULL, NULL);
    if (o.n == 0) return CT_OK;
    o.first = a->first_step, o.nesterov = a->nesterov, o.maximize = a->maximize;
    o.has_wd = a->weight_decay != 0.0;
    cl_mem bp = buf_of(param), bg = buf_of(grad), bb = buf_of(buf);
    if (param->dtype == CT_FLOAT64) {
        cl_double k[4] = {-a->lr, a->momentum, 1.0 - a->dampening, a->weight_decay};
        ct_clops_arg args[] = {CT_CLOPS_ARG(bp),   CT_CLOPS_ARG(bg),   CT_CLOPS_ARG(bb),
                               CT_CLOPS_ARG(o),    CT_CLOPS_ARG(k[0]), CT_CLOPS_ARG(k[1]),
                               CT_CLOPS_ARG(k[2]), CT_CLOPS_ARG(k[3])};
        return ct_clops_launch(dev, "ct_k_sgd_d", args, 8, (size_t)o.n, 0);
    }
    cl_float k[4] = {(cl_float)-a->lr, (cl_float)a->momentum, (cl_float)(1.0 - a->dampening),
                     (cl_float)a->weight_decay};
    ct_clops_arg args[] = {CT_CLOPS_ARG(bp),   CT_CLOPS_ARG(bg),   CT_CLOPS_ARG(bb),
                           CT_CLOPS_ARG(o),    CT_CLOPS_ARG(k[0]), CT_CLOPS_ARG(k[1]),
                           CT_CLOPS_ARG(k[2]), CT_CLOPS_ARG(k[3])};
    return ct_clops_launch(dev, "ct_k_sgd_f", args, 8, (size_t)o.n, 0);
}

static ct_status cl_adam_update(const ct_kview *param, const ct_kview *grad,
                                const ct_kview *exp_avg, const ct_kview *exp_avg_sq,
                                const ct_kview *max_exp_avg_sq, const ct_adam_args *a) {
    const int dev = param->device;
    CT_TRY(check_input(param, a->decoupled_weight_decay ? "adamw_update" : "adam_update"));
    cl_koptim o = koptim_of(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    if (o.n == 0) return CT_OK;
    o.maximize = a->maximize, o.has_wd = a->weight_decay != 0.0;
    o.decoupled = a->decoupled_weight_decay, o.amsgrad = a->amsgrad;
    cl_mem bp = buf_of(param), bg = buf_of(grad), bm = buf_of(exp_avg), bv = buf_of(exp_avg_sq);
    cl_mem bx = buf_of(max_exp_avg_sq);
    double k[9] = {1.0 - a->lr * a->weight_decay, a->weight_decay, a->beta1, 1.0 - a->beta1,
                   a->beta2, 1.0 - a->beta2, a->eps, -a->step_size, a->bias_correction2_sqrt};
    cl_double kd[9];
    cl_float kf[9];
    ct_clops_arg args[5 + 1 + 9] = {CT_CLOPS_ARG(bp), CT_CLOPS_ARG(bg), CT_CLOPS_ARG(bm),
                                    CT_CLOPS_ARG(bv), CT_CLOPS_ARG(bx), CT_CLOPS_ARG(o)};
    bool f64 = param->dtype == CT_FLOAT64;
    for (int i = 0; i < 9; i++) {
        kd[i] = k[i], kf[i] = (cl_float)k[i];
        args[6 + i] = f64 ? CT_CLOPS_ARG(kd[i]) : CT_CLOPS_ARG(kf[i]);
    }
    return ct_clops_launch(dev, f64 ? "ct_k_adam_d" : "ct_k_adam_f", args, 15, (size_t)o.n, 0);
}

const struct ct_backend_loss ct_cl_loss_ops = {
    .class_forward = cl_class_forward,
    .class_backward = cl_class_backward,
    .prob_forward = cl_prob_forward,
    .prob_backward = cl_prob_backward,
    .pointwise_forward = cl_pointwise_forward,
    .pointwise_backward = cl_pointwise_backward,
    .sgd_update = cl_sgd_update,
    .adam_update = cl_adam_update,
};
