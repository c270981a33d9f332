/*
 * gpu_loss.c — the GPU backends' loss table (ct_gpu_loss_ops), shared by
 * OpenCL and CUDA (see gpu.h): launchers of the kernels of
 * src/kernels/loss.kh (losses and the optimizer updates), contracts in
 * src/core/backend_loss.h.
 *
 * Every entry enqueues one kernel on the current stream and returns
 * without waiting, except class_forward, which must report a target out of
 * range as the CPU does: its kernel sets a flag in a small device buffer
 * that the host reads back (a blocking read of 16 bytes). Class losses give
 * each row one work item, so no result depends on scheduling and no float
 * atomics are used.
 */
#include <string.h>

#include "gpu.h"
#include "core/backend_loss.h"




/* A view's buffer handle; NULL for an absent view (flagged in the struct). */
static void *buf_of(const ct_kview *v) { return v ? v->data : NULL; }

#define NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* One work item per item (per row for the class losses). */
static ct_status launch_items(const ct_kview *v, ct_kernel_id k, const ct_gpu_arg *args, int nargs,
                              int64_t items) {
    return ct_gpu_of(v)->launch(v->device, k, args, nargs, (size_t)items, 0);
}

static ct_kloss kloss_of(const ct_class_loss_args *a, const ct_kview *in, const ct_kview *target,
                          const ct_kview *weight) {
    ct_kloss k;
    memset(&k, 0, sizeof k);
    k.batch = a->batch, k.classes = a->classes, k.inner = a->inner;
    k.ignore_index = a->ignore_index;
    k.in_off = in->offset, k.tgt_off = target->offset;
    k.w_off = weight ? weight->offset : 0;
    k.in_dtype = in->dtype;
    k.has_w = weight != NULL, k.logits = a->logits;
    return k;
}

static void set_row_grad(ct_kloss *k, const ct_kview *grad_row) {
    k->g_off = grad_row->offset;
    k->g_stride = grad_row->ndim ? grad_row->strides[0] : 0;
    k->g_dtype = grad_row->dtype;
}

/* Every entry starts here: dtype support on this device. */
static ct_status check_input(const ct_kview *in, const char *op) {
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE, "%s: not implemented for '%s' on %s", op,
                    ct_dtype_name(in->dtype), ct_device_type_name(in->device_type));
    return ct_gpu_check_fp64(in, in->dtype, op);
}

/* ---- class-index targets ------------------------------------------------------------------- */

/* Launch ct_k_class_loss with a zeroed flag {set, target} in device memory
 * (the backend's own alloc/write/read/free) and read it back, waiting for
 * the kernel. args' sixth entry is the flag. */
static ct_status class_loss_checked(const ct_kview *in, ct_gpu_arg *args, int nargs, int64_t rows,
                                    int64_t flag[2]) {
    const ct_backend *b = ct_backend_for(in->device_type);
    const int dev = in->device;
    const int64_t zero[2] = {0, 0};
    void *flag_buf = NULL;
    CT_TRY(b->alloc(dev, sizeof zero, &flag_buf));
    ct_status st = b->write(dev, flag_buf, 0, zero, sizeof zero);
    args[5] = CT_GPU_ARG(flag_buf);
    if (st == CT_OK) st = launch_items(in, CT_KID(ct_k_class_loss), args, nargs, rows);
    if (st == CT_OK) st = b->read(dev, flag_buf, 0, flag, 2 * sizeof flag[0]);
    b->free(dev, flag_buf);
    return st;
}

static ct_status gpu_class_forward(const ct_kview *loss, const ct_kview *row_weight, const ct_kview *in,
                                   const ct_kview *target, const ct_kview *weight,
                                   const ct_class_loss_args *a) {
    const char *name = a->logits ? "cross_entropy" : "nll_loss";
    CT_TRY(check_input(in, name));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    ct_kloss k = kloss_of(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    k.aux_off = row_weight ? row_weight->offset : 0, k.has_aux = row_weight != NULL;
    void *bo = buf_of(loss), *bx = buf_of(row_weight), *bi = buf_of(in), *bt = buf_of(target),
         *bw = buf_of(weight), *no_flag = NULL;
    ct_gpu_acc s;
    ct_gpu_arg args[] = {CT_GPU_ARG(bo), CT_GPU_ARG(bx),      CT_GPU_ARG(bi), CT_GPU_ARG(bt),
                         CT_GPU_ARG(bw), CT_GPU_ARG(no_flag), CT_GPU_ARG(k),  ct_gpu_acc_arg(in, &s, a->smoothing)};
    int64_t flag[2] = {0, 0};
    CT_TRY(class_loss_checked(in, args, NARGS(args), rows, flag));
    CT_CHECK_STATUS(!flag[0], CT_ERR_INDEX, "%s: Target %lld is out of bounds.", name, (long long)flag[1]);
    return CT_OK;
}

static ct_status gpu_class_backward(const ct_kview *grad_in, const ct_kview *grad_row, const ct_kview *in,
                                    const ct_kview *target, const ct_kview *weight,
                                    const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    ct_kloss k = kloss_of(a, in, target, weight);
    set_row_grad(&k, grad_row);
    void *bgi = buf_of(grad_in), *bg = buf_of(grad_row), *bi = buf_of(in), *bt = buf_of(target),
         *bw = buf_of(weight);
    int64_t gin_off = grad_in->offset;
    ct_gpu_acc s;
    ct_gpu_arg args[] = {CT_GPU_ARG(bgi), CT_GPU_ARG(bg), CT_GPU_ARG(bi),      CT_GPU_ARG(bt),
                         CT_GPU_ARG(bw),  CT_GPU_ARG(k),  CT_GPU_ARG(gin_off), ct_gpu_acc_arg(in, &s, a->smoothing)};
    return launch_items(in, CT_KID(ct_k_class_loss_grad), args, NARGS(args), rows);
}

/* ---- probability targets ------------------------------------------------------------------------ */

static ct_status gpu_prob_forward(const ct_kview *loss, const ct_kview *in, const ct_kview *target,
                                  const ct_kview *weight, const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0) return CT_OK;
    ct_kloss k = kloss_of(a, in, target, weight);
    k.out_off = loss->offset, k.out_dtype = loss->dtype;
    void *bo = buf_of(loss), *bi = buf_of(in), *bt = buf_of(target), *bw = buf_of(weight);
    ct_gpu_acc s;
    ct_gpu_arg args[] = {CT_GPU_ARG(bo), CT_GPU_ARG(bi), CT_GPU_ARG(bt),
                         CT_GPU_ARG(bw), CT_GPU_ARG(k),  ct_gpu_acc_arg(in, &s, a->smoothing)};
    return launch_items(in, CT_KID(ct_k_prob_loss), args, NARGS(args), rows);
}

static ct_status gpu_prob_backward(const ct_kview *grad_in, const ct_kview *grad_target,
                                   const ct_kview *grad_row, const ct_kview *in, const ct_kview *target,
                                   const ct_kview *weight, const ct_class_loss_args *a) {
    CT_TRY(check_input(in, "cross_entropy_backward"));
    const int64_t rows = a->batch * a->inner;
    if (rows == 0 || a->classes == 0) return CT_OK;
    ct_kloss k = kloss_of(a, in, target, weight);
    set_row_grad(&k, grad_row);
    void *bgi = buf_of(grad_in), *bgt = buf_of(grad_target), *bg = buf_of(grad_row);
    void *bi = buf_of(in), *bt = buf_of(target), *bw = buf_of(weight);
    int64_t gin_off = grad_in->offset, gt_off = grad_target ? grad_target->offset : 0;
    int32_t has_gt = grad_target != NULL;
    ct_gpu_acc s;
    ct_gpu_arg args[] = {CT_GPU_ARG(bgi),    CT_GPU_ARG(bgt),     CT_GPU_ARG(bg),
                         CT_GPU_ARG(bi),     CT_GPU_ARG(bt),      CT_GPU_ARG(bw),
                         CT_GPU_ARG(k),      CT_GPU_ARG(gin_off), CT_GPU_ARG(gt_off),
                         CT_GPU_ARG(has_gt), ct_gpu_acc_arg(in, &s, a->smoothing)};
    return launch_items(in, CT_KID(ct_k_prob_loss_grad), args, NARGS(args), rows);
}

/* ---- elementwise losses --------------------------------------------------------------------------- */

/* v: the operand slots of ct_kpw, NULL when absent; v[3] (the input) sets
 * the shape. */
static ct_status pointwise(ct_pointwise_loss op, const ct_kview *const *v, bool backward, double scale) {
    const ct_kview *ref = v[3];
    CT_TRY(check_input(ref, op == CT_LOSS_MSE ? "mse_loss" : "binary_cross_entropy_with_logits"));
    ct_kpw p;
    memset(&p, 0, sizeof p);
    p.ndim = ref->ndim, p.numel = 1, p.op = op, p.backward = backward;
    for (int d = 0; d < ref->ndim; d++) p.shape[d] = ref->shape[d], p.numel *= ref->shape[d];
    if (p.numel == 0) return CT_OK;
    void *b[KPW_N];
    for (int j = 0; j < KPW_N; j++) {
        b[j] = buf_of(v[j]);
        if (!v[j]) continue;
        p.has[j] = 1, p.offset[j] = v[j]->offset, p.dtype[j] = v[j]->dtype;
        for (int d = 0; d < ref->ndim; d++) p.strides[j][d] = v[j]->strides[d];
    }
    ct_gpu_acc s;
    ct_gpu_arg args[] = {CT_GPU_ARG(b[0]), CT_GPU_ARG(b[1]), CT_GPU_ARG(b[2]), CT_GPU_ARG(b[3]),
                         CT_GPU_ARG(b[4]), CT_GPU_ARG(b[5]), CT_GPU_ARG(b[6]), CT_GPU_ARG(p),
                         ct_gpu_acc_arg(ref, &s, scale)};
    return launch_items(ref, CT_KID(ct_k_pointwise_loss), args, NARGS(args), p.numel);
}

static ct_status gpu_pointwise_forward(ct_pointwise_loss op, const ct_kview *out, const ct_kview *in,
                                       const ct_kview *target, const ct_kview *weight,
                                       const ct_kview *pos_weight) {
    const ct_kview *v[KPW_N] = {out, NULL, NULL, in, target, weight, pos_weight};
    return pointwise(op, v, false, 1.0);
}

static ct_status gpu_pointwise_backward(ct_pointwise_loss op, const ct_kview *grad_in,
                                        const ct_kview *grad_target, const ct_kview *grad_out,
                                        const ct_kview *in, const ct_kview *target, const ct_kview *weight,
                                        const ct_kview *pos_weight, double scale) {
    const ct_kview *v[KPW_N] = {grad_in, grad_target, grad_out, in, target, weight, pos_weight};
    return pointwise(op, v, true, scale);
}

/* ---- optimizer updates -------------------------------------------------------------------------- */

static ct_koptim koptim_of(const ct_kview *param, const ct_kview *grad, const ct_kview *s0,
                            const ct_kview *s1, const ct_kview *s2) {
    ct_koptim o;
    memset(&o, 0, sizeof o);
    o.n = ct_gpu_meta_of(param).numel;
    o.p_off = param->offset, o.g_off = grad->offset;
    o.s0_off = s0 ? s0->offset : 0, o.s1_off = s1 ? s1->offset : 0, o.s2_off = s2 ? s2->offset : 0;
    o.pdt = param->dtype, o.sdt = s0 ? s0->dtype : param->dtype;
    o.has_s0 = s0 != NULL, o.has_s2 = s2 != NULL;
    return o;
}

/* Float64 parameters update in double (ct_k_sgd_d / ct_k_adam_d), the rest
 * in float with the scalars rounded to float first (the _f kernels), as the
 * CPU's optimizer does. The k scalars go to the kernel in order. */
static ct_status launch_optim(const ct_kview *param, ct_kernel_id kd, ct_kernel_id kf, ct_gpu_arg *args,
                              int nbufs, const ct_koptim *o, const double *k, int nk) {
    double kdv[9];
    float kfv[9];
    const bool f64 = param->dtype == CT_FLOAT64;
    args[nbufs] = CT_GPU_ARG(*o);
    for (int i = 0; i < nk; i++) {
        kdv[i] = k[i], kfv[i] = (float)k[i];
        args[nbufs + 1 + i] = f64 ? CT_GPU_ARG(kdv[i]) : CT_GPU_ARG(kfv[i]);
    }
    return launch_items(param, f64 ? kd : kf, args, nbufs + 1 + nk, o->n);
}

static ct_status gpu_sgd_update(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                                const ct_sgd_args *a) {
    CT_TRY(check_input(param, "sgd_update"));
    ct_koptim o = koptim_of(param, grad, buf, NULL, NULL);
    if (o.n == 0) return CT_OK;
    o.first = a->first_step, o.nesterov = a->nesterov, o.maximize = a->maximize;
    o.has_wd = a->weight_decay != 0.0;
    void *bp = buf_of(param), *bg = buf_of(grad), *bb = buf_of(buf);
    /* -lr, momentum, 1 - dampening, weight decay */
    const double k[4] = {-a->lr, a->momentum, 1.0 - a->dampening, a->weight_decay};
    ct_gpu_arg args[3 + 1 + 4] = {CT_GPU_ARG(bp), CT_GPU_ARG(bg), CT_GPU_ARG(bb)};
    return launch_optim(param, CT_KID(ct_k_sgd_d), CT_KID(ct_k_sgd_f), args, 3, &o, k, 4);
}

static ct_status gpu_adam_update(const ct_kview *param, const ct_kview *grad, const ct_kview *exp_avg,
                                 const ct_kview *exp_avg_sq, const ct_kview *max_exp_avg_sq,
                                 const ct_adam_args *a) {
    CT_TRY(check_input(param, a->decoupled_weight_decay ? "adamw_update" : "adam_update"));
    ct_koptim o = koptim_of(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    if (o.n == 0) return CT_OK;
    o.maximize = a->maximize, o.has_wd = a->weight_decay != 0.0;
    o.decoupled = a->decoupled_weight_decay, o.amsgrad = a->amsgrad;
    void *bp = buf_of(param), *bg = buf_of(grad), *bm = buf_of(exp_avg), *bv = buf_of(exp_avg_sq),
         *bx = buf_of(max_exp_avg_sq);
    /* decay, wd, b1, 1 - b1, b2, 1 - b2, eps, -step_size, sqrt(bias correction 2) */
    const double k[9] = {1.0 - a->lr * a->weight_decay, a->weight_decay, a->beta1, 1.0 - a->beta1,
                         a->beta2, 1.0 - a->beta2, a->eps, -a->step_size, a->bias_correction2_sqrt};
    ct_gpu_arg args[5 + 1 + 9] = {CT_GPU_ARG(bp), CT_GPU_ARG(bg), CT_GPU_ARG(bm), CT_GPU_ARG(bv),
                                  CT_GPU_ARG(bx)};
    return launch_optim(param, CT_KID(ct_k_adam_d), CT_KID(ct_k_adam_f), args, 5, &o, k, 9);
}

/* One launch for a group of up to CT_K_AMP_TENSORS non-empty grads. */
static ct_status launch_amp_group(const ct_kview *const *group, int count, const ct_kview *found_inf,
                                  float inv_scale) {
    ct_kamp a;
    memset(&a, 0, sizeof a);
    void *bufs[CT_K_AMP_TENSORS] = {NULL};
    ct_gpu_arg args[CT_K_AMP_TENSORS + 3];
    a.count = count, a.found_off = found_inf->offset;
    for (int j = 0; j < count; j++) {
        a.off[j] = group[j]->offset, a.dtype[j] = group[j]->dtype;
        a.start[j + 1] = a.start[j] + ct_gpu_meta_of(group[j]).numel;
        bufs[j] = buf_of(group[j]);
    }
    for (int j = 0; j < CT_K_AMP_TENSORS; j++) args[j] = CT_GPU_ARG(bufs[j]);
    void *bf = buf_of(found_inf);
    args[CT_K_AMP_TENSORS] = CT_GPU_ARG(a);
    args[CT_K_AMP_TENSORS + 1] = CT_GPU_ARG(inv_scale);
    args[CT_K_AMP_TENSORS + 2] = CT_GPU_ARG(bf);
    return launch_items(found_inf, CT_KID(ct_k_amp_unscale), args, NARGS(args), a.start[count]);
}

static ct_status gpu_amp_unscale(const ct_kview *grads, int count, const ct_kview *found_inf, double inv_scale) {
    const ct_kview *group[CT_K_AMP_TENSORS];
    int n = 0;
    for (int k = 0; k < count; k++) {
        CT_TRY(check_input(&grads[k], "amp_unscale"));
        if (ct_gpu_meta_of(&grads[k]).numel == 0) continue;
        group[n++] = &grads[k];
        if (n == CT_K_AMP_TENSORS) {
            CT_TRY(launch_amp_group(group, n, found_inf, (float)inv_scale));
            n = 0;
        }
    }
    return n ? launch_amp_group(group, n, found_inf, (float)inv_scale) : CT_OK;
}

const struct ct_backend_loss ct_gpu_loss_ops = {
    .class_forward = gpu_class_forward,
    .class_backward = gpu_class_backward,
    .prob_forward = gpu_prob_forward,
    .prob_backward = gpu_prob_backward,
    .pointwise_forward = gpu_pointwise_forward,
    .pointwise_backward = gpu_pointwise_backward,
    .sgd_update = gpu_sgd_update,
    .adam_update = gpu_adam_update,
    .amp_unscale = gpu_amp_unscale,
};
