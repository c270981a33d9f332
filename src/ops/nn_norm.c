/*
 * nn_norm.c — the batch_norm and layer_norm front-ends, forward and
 * backward.
 *
 * Statistics live in the "stat dtype" (float64 for float64 input, float32
 * otherwise); parameters and running statistics of any floating dtype are
 * converted to it for the kernels. batch_norm works on the input as
 * [N, C, S] (S = product of the spatial dims); layer_norm as [R, L] rows.
 * The running-statistics update of training batch_norm is composed from
 * the generic binary ops (it touches only [C] tensors) and written back
 * into the caller's tensors with cti_copy, whatever their dtype or strides.
 */
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "amp/autocast.h"
#include "nn_internal.h"

/* ---- shared --------------------------------------------------------------------- */

/* A [n]-element floating parameter as a contiguous 1-D vector of dtype dt. */
static ct_tensor *as_vector(const ct_tensor *t, ct_dtype dt, int64_t n) {
    if (!t) return NULL;
    ct_tensor *c = cti_nn_contiguous_as(t, dt);
    ct_tensor *v = cti_reshape(c, &n, 1);
    ct_decref(c);
    return v;
}

/* 1/sqrt(var + eps) for a [C] stat tensor. */
static ct_tensor *inverse_std(const ct_tensor *var, double eps) {
    ct_tensor *shifted = cti_binary_scalar(CT_BIN_ADD, var, eps);
    ct_tensor *out = cti_unary(CT_UN_RSQRT, shifted, 0, 0);
    ct_decref(shifted);
    return out;
}

/* A gradient of a parameter: reshaped to shape and converted to dt. */
static ct_tensor *param_grad(ct_tensor *g, const int64_t *shape, int ndim, ct_dtype dt) {
    ct_tensor *r = cti_reshape(g, shape, ndim);
    ct_tensor *out = cti_cast(r, dt);
    ct_decref(r);
    ct_decref(g);
    return out;
}

/* Clear the out pointers of a multi-result backward (on entry). */
static void clear_outs(ct_tensor **a, ct_tensor **b, ct_tensor **c) {
    if (a) *a = NULL;
    if (b) *b = NULL;
    if (c) *c = NULL;
}

/* Hand over each computed result whose out pointer is set, or release all of
 * them on failure; returns the status. */
static ct_status finish_outs(ct_status st, ct_tensor **outs[3], ct_tensor *vals[3]) {
    for (int i = 0; i < 3; i++) {
        if (st == CT_OK && outs[i]) *outs[i] = vals[i];
        else ct_decref(vals[i]);
    }
    return st;
}

/* ---- batch norm: validation ----------------------------------------------------------- */

/* A [C] parameter (or NULL): numel C and a floating dtype. */
static bool check_channel_param(const char *name, const ct_tensor *t, int64_t c) {
    if (!t) return true;
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    CT_CHECK_RET(n == c, false, CT_ERR_SHAPE, "batch_norm: %s should contain %lld elements not %lld",
                 name, (long long)c, (long long)n);
    CT_CHECK_RET(ct_dtype_is_floating(t->dtype), false, CT_ERR_DTYPE,
                 "batch_norm: expected %s to have a floating dtype, but got %s", name,
                 ct_dtype_name(t->dtype));
    return true;
}

static bool check_batch_norm(const ct_tensor *input, const ct_tensor *rm, const ct_tensor *rv,
                             const ct_tensor *w, const ct_tensor *b, bool training) {
    const ct_tensor *all[5] = {input, rm, rv, w, b};
    char sb[CT_SHAPE_STR_MAX];
    if (!ct_check_same_device("batch_norm", all, 5) || !cti_nn_check_floating("batch_norm", input))
        return false;
    CT_CHECK_RET(input->ndim >= 2, false, CT_ERR_SHAPE,
                 "batch_norm: Expected input of shape [N, C] or [N, C, *], but got input of size %s",
                 ct_shape_str(input->shape, input->ndim, sb, sizeof sb));
    const int64_t c = input->shape[1];
    if (!check_channel_param("running_mean", rm, c) || !check_channel_param("running_var", rv, c) ||
        !check_channel_param("weight", w, c) || !check_channel_param("bias", b, c))
        return false;
    const int64_t per_channel = ct_shape_numel(input->shape, input->ndim) / (c ? c : 1);
    CT_CHECK_RET(!training || per_channel != 1 || c == 0, false, CT_ERR_INVALID_ARG,
                 "batch_norm: Expected more than 1 value per channel when training, got input "
                 "size %s", ct_shape_str(input->shape, input->ndim, sb, sizeof sb));
    CT_CHECK_RET(training || rm, false, CT_ERR_INVALID_ARG,
                 "batch_norm: running_mean must be defined in evaluation mode");
    CT_CHECK_RET(training || rv, false, CT_ERR_INVALID_ARG,
                 "batch_norm: running_var must be defined in evaluation mode");
    return true;
}

/* [N, C, S] of a batch_norm input. */
static void nc_s(const ct_tensor *t, int64_t *n, int64_t *c, int64_t *s) {
    *n = t->shape[0];
    *c = t->shape[1];
    *s = ct_shape_numel(t->shape + 2, t->ndim - 2);
}

/* ---- batch norm: forward ----------------------------------------------------------------- */

/* running = (1 - momentum) * running + momentum * factor * batch, in place. */
static ct_status update_running(ct_tensor *running, const ct_tensor *batch, double momentum,
                                double factor) {
    if (!running) return CT_OK;
    ct_tensor *kept = cti_binary_scalar(CT_BIN_MUL, running, 1.0 - momentum);
    ct_tensor *b = cti_reshape(batch, running->shape, running->ndim);
    ct_tensor *sum = cti_binary(CT_BIN_ADD, kept, b, momentum * factor);
    ct_status st = sum ? cti_copy(running, sum) : ct_last_status();
    ct_decref(kept);
    ct_decref(b);
    ct_decref(sum);
    return st;
}

/* Batch mean and invstd of x ([N, C, S], contiguous), updating the running
 * statistics. */
static ct_status batch_stats(const ct_tensor *x, ct_tensor *rm, ct_tensor *rv, double momentum,
                             double eps, ct_tensor **mean, ct_tensor **invstd) {
    int64_t n, c, s;
    nc_s(x, &n, &c, &s);
    ct_dtype sd = cti_nn_stat_dtype(x->dtype);
    ct_tensor *var = cti_empty(&c, 1, sd, x->storage->device);
    *mean = cti_empty(&c, 1, sd, x->storage->device);
    ct_status st = var && *mean ? CT_OK : ct_last_status();
    if (st == CT_OK) {
        ct_kview km = ct_kview_of(*mean), kv = ct_kview_of(var), kx = ct_kview_of(x);
        st = CTI_NN_CALL(x, batch_norm_stats, "batch_norm", &km, &kv, &kx, n, c, s);
    }
    if (st == CT_OK) st = update_running(rm, *mean, momentum, 1.0);
    if (st == CT_OK) st = update_running(rv, var, momentum, (double)(n * s) / (double)(n * s - 1));
    if (st == CT_OK) *invstd = inverse_std(var, eps);
    if (st == CT_OK && !*invstd) st = ct_last_status();
    ct_decref(var);
    return st;
}

/* The statistics an input is normalised with: [C] mean and invstd. */
static ct_status norm_stats(const ct_tensor *x, ct_tensor *rm, ct_tensor *rv, bool training,
                            double momentum, double eps, ct_tensor **mean, ct_tensor **invstd) {
    int64_t n, c, s;
    nc_s(x, &n, &c, &s);
    ct_dtype sd = cti_nn_stat_dtype(x->dtype);
    *mean = *invstd = NULL;
    if (n * s == 0) { /* nothing to normalise: PyTorch leaves the running stats alone */
        *mean = cti_full(&c, 1, 0.0, sd, x->storage->device);
        *invstd = cti_full(&c, 1, 0.0, sd, x->storage->device);
    } else if (training) {
        return batch_stats(x, rm, rv, momentum, eps, mean, invstd);
    } else {
        ct_tensor *var = as_vector(rv, sd, c);
        *mean = as_vector(rm, sd, c);
        *invstd = inverse_std(var, eps);
        ct_decref(var);
    }
    return *mean && *invstd ? CT_OK : ct_last_status();
}

/* ---- batch norm: whole operations of the backend (backend_nn.h: cuDNN) ----------------- */

/* A running statistic as the contiguous stat-dtype [C] buffer the backend
 * updates in place (NULL passes through). */
static ct_tensor *running_buffer(const ct_tensor *running, ct_dtype sd, int64_t c) {
    return running ? as_vector(running, sd, c) : NULL;
}

/* Write an updated buffer back when it is a copy of the caller's tensor. */
static ct_status write_back(ct_tensor *running, const ct_tensor *buffer) {
    if (!running || buffer->storage == running->storage) return CT_OK;
    ct_tensor *shaped = cti_reshape(buffer, running->shape, running->ndim);
    ct_status st = shaped ? cti_copy(running, shaped) : ct_last_status();
    ct_decref(shaped);
    return st;
}

/* The forward through the backend's whole batch-norm entries. t holds
 * x, weight, bias (as in cti_batch_norm_forward); on success t[1], t[2]
 * and t[5] get mean, invstd and out. *declined (nothing done, no error)
 * when the backend has no entry or declines. */
static ct_status bn_forward_whole(ct_tensor **t, ct_tensor *rm, ct_tensor *rv, bool training,
                                  double momentum, double eps, bool *declined) {
    const struct ct_backend_nn *nn = cti_backend(t[0])->ops->nn;
    int64_t n, c, s;
    nc_s(t[0], &n, &c, &s);
    *declined = true;
    const bool has_entry = training ? nn && nn->batch_norm_forward_training
                                    : nn && nn->batch_norm_forward_inference;
    if (!has_entry || n * c * s == 0) return CT_OK;
    const ct_dtype sd = cti_nn_stat_dtype(t[0]->dtype);
    const ct_device dev = t[0]->storage->device;
    /* running mean, running var, out, mean, invstd */
    ct_tensor *r[5] = {running_buffer(rm, sd, c), running_buffer(rv, sd, c), cti_empty_like(t[0]),
                       training ? cti_empty(&c, 1, sd, dev) : NULL,
                       training ? cti_empty(&c, 1, sd, dev) : NULL};
    ct_status st = (r[0] || !rm) && (r[1] || !rv) && r[2] && (!training || (r[3] && r[4]))
                       ? CT_OK : ct_last_status();
    if (st != CT_OK) *declined = false;
    ct_kview k[8];
    if (st == CT_OK) {
        k[0] = ct_kview_of(r[2]), k[1] = ct_kview_of(t[0]);
        const ct_kview *kw = cti_nn_kview(t[3], &k[2]), *kb = cti_nn_kview(t[4], &k[3]),
                       *krm = cti_nn_kview(r[0], &k[4]), *krv = cti_nn_kview(r[1], &k[5]);
        if (training) {
            k[6] = ct_kview_of(r[3]), k[7] = ct_kview_of(r[4]);
            st = nn->batch_norm_forward_training(&k[0], &k[6], &k[7], krm, krv, &k[1], kw, kb, n, c, s,
                                                 momentum, eps);
        } else {
            st = nn->batch_norm_forward_inference(&k[0], &k[1], krm, krv, kw, kb, n, c, s, eps);
        }
        *declined = st == CT_ERR_UNSUPPORTED;
    }
    if (st == CT_OK && training) st = write_back(rm, r[0]);
    if (st == CT_OK && training) st = write_back(rv, r[1]);
    if (st == CT_OK && !training) { /* the evaluation statistics, for the backward */
        r[3] = ct_retain(r[0]);
        r[4] = inverse_std(r[1], eps);
        if (!r[4]) st = ct_last_status();
    }
    if (st == CT_OK) {
        t[5] = r[2], t[1] = r[3], t[2] = r[4];
        r[2] = r[3] = r[4] = NULL;
    }
    cti_nn_release(r, 5);
    return *declined ? CT_OK : st;
}

ct_tensor *cti_batch_norm_forward(const ct_tensor *input, ct_tensor *running_mean,
                                  ct_tensor *running_var, const ct_tensor *weight,
                                  const ct_tensor *bias, bool training, double momentum,
                                  double eps, ct_tensor **save_mean, ct_tensor **save_invstd) {
    clear_outs(save_mean, save_invstd, NULL);
    if (!input) return NULL;
    if (!check_batch_norm(input, running_mean, running_var, weight, bias, training)) return NULL;
    int64_t n, c, s;
    nc_s(input, &n, &c, &s);
    ct_dtype sd = cti_nn_stat_dtype(input->dtype);
    /* x, mean, invstd, weight, bias, out */
    ct_tensor *t[6] = {cti_contiguous(input), NULL, NULL, as_vector(weight, sd, c),
                       as_vector(bias, sd, c), NULL};
    ct_status st = t[0] && (t[3] || !weight) && (t[4] || !bias) ? CT_OK : ct_last_status();
    bool declined = true;
    if (st == CT_OK)
        st = bn_forward_whole(t, running_mean, running_var, training, momentum, eps, &declined);
    if (st == CT_OK && declined)
        st = norm_stats(t[0], running_mean, running_var, training, momentum, eps, &t[1], &t[2]);
    if (st == CT_OK && declined) st = (t[5] = cti_empty_like(t[0])) ? CT_OK : ct_last_status();
    if (st == CT_OK && declined && n * c * s > 0) {
        ct_kview ko = ct_kview_of(t[5]), kx = ct_kview_of(t[0]), km = ct_kview_of(t[1]),
                 ki = ct_kview_of(t[2]), kw, kb;
        st = CTI_NN_CALL(t[0], batch_norm_apply, "batch_norm", &ko, &kx, &km, &ki,
                         cti_nn_kview(t[3], &kw), cti_nn_kview(t[4], &kb), n, c, s);
    }
    ct_tensor *out = st == CT_OK ? t[5] : NULL;
    if (out && save_mean) *save_mean = t[1], t[1] = NULL;
    if (out && save_invstd) *save_invstd = t[2], t[2] = NULL;
    if (out) t[5] = NULL;
    cti_nn_release(t, 6);
    return out;
}

/* ct_norm_opts: zero momentum and eps are PyTorch's defaults. */
ct_tensor *ct_batch_norm_opts(const ct_tensor *input, ct_tensor *running_mean,
                              ct_tensor *running_var, const ct_tensor *weight,
                              const ct_tensor *bias, ct_norm_opts o) {
    return ct_track(cta_batch_norm(input, running_mean, running_var, weight, bias, o.training,
                                   o.momentum != 0 ? o.momentum : 0.1, o.eps != 0 ? o.eps : 1e-5));
}

/* ---- batch norm: backward -------------------------------------------------------------- */

static bool check_batch_norm_grad(const ct_tensor *grad, const ct_tensor *input,
                                  const ct_tensor *weight, const ct_tensor *mean,
                                  const ct_tensor *invstd) {
    const char *op = "batch_norm_backward";
    const ct_tensor *all[5] = {grad, input, weight, mean, invstd};
    if (!ct_check_same_device(op, all, 5) || !cti_nn_check_floating(op, grad) ||
        !cti_nn_check_floating(op, input))
        return false;
    CT_CHECK_RET(input->ndim >= 2 && cti_nn_shape_equal(grad, input->shape, input->ndim), false,
                 CT_ERR_SHAPE, "%s: grad_output must have the input's shape (at least 2-D)", op);
    const int64_t c = input->shape[1];
    return check_channel_param("weight", weight, c) && check_channel_param("save_mean", mean, c) &&
           check_channel_param("save_invstd", invstd, c);
}

/* sum(dy) and sum(dy * (x - mean)) per channel. */
static ct_status bn_reduce(const ct_tensor *dy, const ct_tensor *x, const ct_tensor *mean,
                           ct_tensor **sum_dy, ct_tensor **sum_dy_xmu) {
    int64_t n, c, s;
    nc_s(x, &n, &c, &s);
    *sum_dy = cti_empty(&c, 1, mean->dtype, x->storage->device);
    *sum_dy_xmu = cti_empty(&c, 1, mean->dtype, x->storage->device);
    if (!*sum_dy || !*sum_dy_xmu) return ct_last_status();
    if (n * s == 0) {
        CT_TRY(cti_fill(*sum_dy, 0.0));
        return cti_fill(*sum_dy_xmu, 0.0);
    }
    ct_kview k1 = ct_kview_of(*sum_dy), k2 = ct_kview_of(*sum_dy_xmu), kg = ct_kview_of(dy),
             kx = ct_kview_of(x), km = ct_kview_of(mean);
    return CTI_NN_CALL(x, batch_norm_backward_reduce, "batch_norm_backward", &k1, &k2, &kg, &kx,
                       &km, n, c, s);
}

/* The backward with batch statistics through the backend's whole entry:
 * res[0..2] = grad_input (x dtype), grad_weight and grad_bias (stat dtype,
 * [C]), all computed. t as in cti_batch_norm_backward. *declined (nothing
 * done, no error) when the backend has no entry or declines. */
static ct_status bn_backward_whole(ct_tensor **t, ct_tensor **res, bool *declined) {
    const struct ct_backend_nn *nn = cti_backend(t[1])->ops->nn;
    int64_t n, c, s;
    nc_s(t[1], &n, &c, &s);
    *declined = true;
    if (!nn || !nn->batch_norm_backward || n * c * s == 0) return CT_OK;
    const ct_device dev = t[1]->storage->device;
    res[0] = cti_empty_like(t[0]);
    res[1] = cti_empty(&c, 1, t[2]->dtype, dev);
    res[2] = cti_empty(&c, 1, t[2]->dtype, dev);
    ct_status st = res[0] && res[1] && res[2] ? CT_OK : ct_last_status();
    if (st == CT_OK) {
        ct_kview k0 = ct_kview_of(res[0]), k1 = ct_kview_of(res[1]), k2 = ct_kview_of(res[2]),
                 kg = ct_kview_of(t[0]), kx = ct_kview_of(t[1]), km = ct_kview_of(t[2]),
                 ki = ct_kview_of(t[3]), kw;
        st = nn->batch_norm_backward(&k0, &k1, &k2, &kg, &kx, &km, &ki, cti_nn_kview(t[4], &kw), n, c,
                                     s);
    }
    *declined = st == CT_ERR_UNSUPPORTED && res[0] && res[1] && res[2];
    if (st != CT_OK) cti_nn_release(res, 3);
    return *declined ? CT_OK : st;
}

ct_status cti_batch_norm_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                  const ct_tensor *weight, const ct_tensor *save_mean,
                                  const ct_tensor *save_invstd, bool batch_stats,
                                  ct_tensor **grad_input, ct_tensor **grad_weight,
                                  ct_tensor **grad_bias) {
    clear_outs(grad_input, grad_weight, grad_bias);
    if (!grad_output || !input || !save_mean || !save_invstd)
        return cti_nn_null_status("batch_norm_backward");
    if (!check_batch_norm_grad(grad_output, input, weight, save_mean, save_invstd))
        return ct_last_status();
    int64_t n, c, s;
    nc_s(input, &n, &c, &s);
    const ct_dtype dt = grad_output->dtype, sd = cti_nn_stat_dtype(dt);
    /* dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu */
    ct_tensor *t[7] = {cti_contiguous(grad_output), cti_nn_contiguous_as(input, dt),
                       as_vector(save_mean, sd, c), as_vector(save_invstd, sd, c),
                       as_vector(weight, sd, c), NULL, NULL};
    ct_tensor *res[3] = {NULL, NULL, NULL};
    ct_status st = t[0] && t[1] && t[2] && t[3] && (t[4] || !weight) ? CT_OK : ct_last_status();
    bool declined = true;
    if (st == CT_OK && batch_stats && (grad_input || grad_weight || grad_bias))
        st = bn_backward_whole(t, res, &declined);
    if (st == CT_OK && !declined) {
        const ct_dtype pdt = weight ? weight->dtype : dt;
        for (int i = 1; i < 3 && st == CT_OK; i++) {
            res[i] = param_grad(res[i], &c, 1, pdt);
            if (!res[i]) st = ct_last_status();
        }
        cti_nn_release(t, 7);
        ct_tensor **outs[3] = {grad_input, grad_weight, grad_bias};
        return finish_outs(st, outs, res);
    }
    if (st == CT_OK && ((batch_stats && grad_input) || grad_weight || grad_bias))
        st = bn_reduce(t[0], t[1], t[2], &t[5], &t[6]);
    if (st == CT_OK && grad_input) {
        st = (res[0] = cti_empty_like(t[0])) ? CT_OK : ct_last_status();
        if (st == CT_OK && n * c * s > 0) {
            ct_kview kgi = ct_kview_of(res[0]), kg = ct_kview_of(t[0]), kx = ct_kview_of(t[1]),
                     km = ct_kview_of(t[2]), ki = ct_kview_of(t[3]), kw, k5, k6;
            st = CTI_NN_CALL(t[0], batch_norm_backward_apply, "batch_norm_backward", &kgi, &kg,
                             &kx, &km, &ki, cti_nn_kview(t[4], &kw), cti_nn_kview(t[5], &k5),
                             cti_nn_kview(t[6], &k6), n, c, s, batch_stats);
        }
    }
    const ct_dtype pdt = weight ? weight->dtype : dt;
    if (st == CT_OK && grad_weight) {
        res[1] = param_grad(cti_binary(CT_BIN_MUL, t[6], t[3], 1.0), &c, 1, pdt);
        if (!res[1]) st = ct_last_status();
    }
    if (st == CT_OK && grad_bias) {
        res[2] = param_grad(ct_retain(t[5]), &c, 1, pdt);
        if (!res[2]) st = ct_last_status();
    }
    cti_nn_release(t, 7);
    ct_tensor **outs[3] = {grad_input, grad_weight, grad_bias};
    return finish_outs(st, outs, res);
}

/* ---- layer norm ------------------------------------------------------------------------ */

static bool check_layer_norm_param(const char *name, const ct_tensor *t, ct_shape ns) {
    if (!t || cti_nn_shape_equal(t, ns.dims, ns.ndim)) return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_error_set(CT_ERR_SHAPE,
                 "layer_norm: Expected %s to be of same shape as normalized_shape, but got %s of "
                 "shape %s and normalized_shape = %s", name, name,
                 ct_shape_str(t->shape, t->ndim, a, sizeof a), ct_shape_str(ns.dims, ns.ndim, b, sizeof b));
    return false;
}

/* The input ends with normalized_shape; *rows and *cols describe [R, L]. */
static bool check_layer_norm(const char *op, const ct_tensor *input, ct_shape ns,
                             const ct_tensor *weight, const ct_tensor *bias, int64_t *rows,
                             int64_t *cols) {
    const ct_tensor *all[3] = {input, weight, bias};
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (!ct_check_same_device(op, all, 3) || !cti_nn_check_floating("LayerNormKernelImpl", input))
        return false;
    CT_CHECK_RET(ns.ndim <= CT_MAX_DIMS, false, CT_ERR_SHAPE,
                 "%s: normalized_shape has %d dimensions; tensors have at most %d", op, ns.ndim, CT_MAX_DIMS);
    CT_CHECK_RET(ns.ndim >= 1, false, CT_ERR_SHAPE,
                 "%s: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                 "least one element, but got normalized_shape = %s", op,
                 ct_shape_str(ns.dims, 0, a, sizeof a));
    bool match = input->ndim >= ns.ndim;
    for (int i = 0; match && i < ns.ndim; i++)
        match = input->shape[input->ndim - ns.ndim + i] == ns.dims[i];
    if (!match) {
        ct_error_set(CT_ERR_SHAPE,
                     "%s: Given normalized_shape=%s, expected input with shape [*%s%s, but got "
                     "input of size%s", op, ct_shape_str(ns.dims, ns.ndim, a, sizeof a), ", ",
                     a + 1, ct_shape_str(input->shape, input->ndim, b, sizeof b));
        return false;
    }
    if (!check_layer_norm_param("weight", weight, ns) || !check_layer_norm_param("bias", bias, ns))
        return false;
    CT_CHECK_RET(!weight || ct_dtype_is_floating(weight->dtype), false, CT_ERR_DTYPE,
                 "%s: expected weight to have a floating dtype, but got %s", op,
                 ct_dtype_name(weight->dtype));
    CT_CHECK_RET(!bias || ct_dtype_is_floating(bias->dtype), false, CT_ERR_DTYPE,
                 "%s: expected bias to have a floating dtype, but got %s", op,
                 ct_dtype_name(bias->dtype));
    *cols = ct_shape_numel(ns.dims, ns.ndim);
    *rows = ct_shape_numel(input->shape, input->ndim - ns.ndim);
    return true;
}

ct_tensor *cti_layer_norm_forward(const ct_tensor *input, ct_shape normalized_shape,
                                  const ct_tensor *weight, const ct_tensor *bias, double eps,
                                  ct_tensor **save_mean, ct_tensor **save_rstd) {
    clear_outs(save_mean, save_rstd, NULL);
    if (!input) return NULL;
    int64_t rows, cols;
    if (!check_layer_norm("layer_norm", input, normalized_shape, weight, bias, &rows, &cols))
        return NULL;
    const ct_dtype sd = cti_nn_stat_dtype(input->dtype);
    const ct_device dev = input->storage->device;
    /* x, weight, bias, out, mean, rstd */
    ct_tensor *t[6] = {cti_contiguous(input), as_vector(weight, sd, cols),
                       as_vector(bias, sd, cols), NULL, cti_full(&rows, 1, 0.0, sd, dev),
                       cti_full(&rows, 1, 0.0, sd, dev)};
    ct_status st = t[0] && (t[1] || !weight) && (t[2] || !bias) && t[4] && t[5]
                       ? CT_OK : ct_last_status();
    if (st == CT_OK) st = (t[3] = cti_empty_like(t[0])) ? CT_OK : ct_last_status();
    if (st == CT_OK && rows * cols > 0) {
        ct_kview ko = ct_kview_of(t[3]), km = ct_kview_of(t[4]), kr = ct_kview_of(t[5]),
                 kx = ct_kview_of(t[0]), kw, kb;
        st = CTI_NN_CALL(t[0], layer_norm, "layer_norm", &ko, &km, &kr, &kx,
                         cti_nn_kview(t[1], &kw), cti_nn_kview(t[2], &kb), rows, cols, eps);
    }
    ct_tensor *out = st == CT_OK ? t[3] : NULL;
    if (out && save_mean) *save_mean = t[4], t[4] = NULL;
    if (out && save_rstd) *save_rstd = t[5], t[5] = NULL;
    if (out) t[3] = NULL;
    cti_nn_release(t, 6);
    return out;
}

/* layer_norm has only eps: batch_norm's options are refused as PyTorch
 * refuses the keywords. */
ct_tensor *ct_layer_norm_opts(const ct_tensor *input, ct_shape normalized_shape,
                              const ct_tensor *weight, const ct_tensor *bias, ct_norm_opts o) {
    if (!input) return NULL;
    CT_CHECK_NULL(!o.training && o.momentum == 0, CT_ERR_INVALID_ARG,
                  "layer_norm() got an unexpected keyword argument '%s'",
                  o.training ? "training" : "momentum");
    CTI_AUTOCAST3("layer_norm", input, weight, bias);
    return CTI_AUTOCAST_RESULT(cta_layer_norm(input, normalized_shape, weight, bias, o.eps != 0 ? o.eps : 1e-5));
}

/* grad_weight/grad_bias [cols] in the stat dtype (either may be skipped). */
static ct_status ln_param_grads(const ct_tensor *dy, const ct_tensor *x, const ct_tensor *mean,
                                const ct_tensor *rstd, int64_t rows, int64_t cols, bool want_w,
                                bool want_b, ct_tensor **gw, ct_tensor **gb) {
    const ct_device dev = x->storage->device;
    if (want_w) *gw = cti_full(&cols, 1, 0.0, mean->dtype, dev);
    if (want_b) *gb = cti_full(&cols, 1, 0.0, mean->dtype, dev);
    if ((want_w && !*gw) || (want_b && !*gb)) return ct_last_status();
    if (rows * cols == 0 || (!want_w && !want_b)) return CT_OK;
    ct_kview kw, kb, kg = ct_kview_of(dy), kx = ct_kview_of(x), km = ct_kview_of(mean),
                     kr = ct_kview_of(rstd);
    return CTI_NN_CALL(x, layer_norm_backward_params, "layer_norm_backward",
                       want_w ? cti_nn_kview(*gw, &kw) : NULL,
                       want_b ? cti_nn_kview(*gb, &kb) : NULL, &kg, &kx, &km, &kr, rows, cols);
}

ct_status cti_layer_norm_backward(const ct_tensor *grad_output, const ct_tensor *input,
                                  ct_shape normalized_shape, const ct_tensor *weight,
                                  const ct_tensor *save_mean, const ct_tensor *save_rstd,
                                  ct_tensor **grad_input, ct_tensor **grad_weight,
                                  ct_tensor **grad_bias) {
    const char *op = "layer_norm_backward";
    clear_outs(grad_input, grad_weight, grad_bias);
    if (!grad_output || !input || !save_mean || !save_rstd) return cti_nn_null_status(op);
    int64_t rows, cols;
    if (!check_layer_norm(op, input, normalized_shape, weight, NULL, &rows, &cols) ||
        !cti_nn_check_floating(op, grad_output))
        return ct_last_status();
    const ct_tensor *all[4] = {grad_output, input, save_mean, save_rstd};
    if (!ct_check_same_device(op, all, 4)) return ct_last_status();
    CT_CHECK_STATUS(cti_nn_shape_equal(grad_output, input->shape, input->ndim), CT_ERR_SHAPE,
                    "%s: grad_output must have the input's shape", op);
    CT_CHECK_STATUS(ct_shape_numel(save_mean->shape, save_mean->ndim) == rows &&
                        ct_shape_numel(save_rstd->shape, save_rstd->ndim) == rows,
                    CT_ERR_SHAPE, "%s: save_mean and save_rstd must hold %lld values", op,
                    (long long)rows);
    const ct_dtype dt = grad_output->dtype, sd = cti_nn_stat_dtype(dt);
    /* dy, x, mean, rstd, weight */
    ct_tensor *t[5] = {cti_contiguous(grad_output), cti_nn_contiguous_as(input, dt),
                       as_vector(save_mean, sd, rows), as_vector(save_rstd, sd, rows),
                       as_vector(weight, sd, cols)};
    ct_tensor *res[3] = {NULL, NULL, NULL};
    ct_status st = t[0] && t[1] && t[2] && t[3] && (t[4] || !weight) ? CT_OK : ct_last_status();
    if (st == CT_OK && grad_input) {
        st = (res[0] = cti_empty_like(t[0])) ? CT_OK : ct_last_status();
        if (st == CT_OK && rows * cols > 0) {
            ct_kview kgi = ct_kview_of(res[0]), kg = ct_kview_of(t[0]), kx = ct_kview_of(t[1]),
                     km = ct_kview_of(t[2]), kr = ct_kview_of(t[3]), kw;
            st = CTI_NN_CALL(t[0], layer_norm_backward, op, &kgi, &kg, &kx, &km, &kr,
                             cti_nn_kview(t[4], &kw), rows, cols);
        }
    }
    if (st == CT_OK && (grad_weight || grad_bias))
        st = ln_param_grads(t[0], t[1], t[2], t[3], rows, cols, grad_weight != NULL,
                            grad_bias != NULL, &res[1],
                            &res[2]);
    const ct_dtype pdt = weight ? weight->dtype : dt;
    for (int i = 1; i < 3 && st == CT_OK; i++) {
        if (!res[i]) continue;
        res[i] = param_grad(res[i], normalized_shape.dims, normalized_shape.ndim, pdt);
        if (!res[i]) st = ct_last_status();
    }
    cti_nn_release(t, 5);
    ct_tensor **outs[3] = {grad_input, grad_weight, grad_bias};
    return finish_outs(st, outs, res);
}
