/*
 * ctorch/ops.h — tensor math: elementwise, reductions, linear algebra,
 * softmax, joining and indexing.
 *
 * Binary ops broadcast like NumPy/PyTorch and promote dtypes like
 * torch.result_type: tensors with dimensions decide the category first,
 * 0-dim tensors and C scalars only raise the category (an int tensor plus a
 * float scalar becomes the default float dtype; a float32 tensor plus a
 * float64 scalar stays float32). All tensor arguments must be on one device.
 * Every function returns a new reference (see ctorch/tensor.h) or NULL.
 */
#ifndef CTORCH_OPS_H
#define CTORCH_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise binary (broadcasting) ---------------------------------- */
CT_API ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b);       /* true division */
CT_API ct_tensor *ct_floor_divide(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_remainder(const ct_tensor *a, const ct_tensor *b); /* Python %: sign of b */
CT_API ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_atan2(const ct_tensor *a, const ct_tensor *b);
/* a + alpha * b, as torch.add(a, b, alpha=…). */
CT_API ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha);

/* with a C scalar on the right (weak type, like a Python number) */
CT_API ct_tensor *ct_add_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_sub_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_mul_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_div_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_pow_scalar(const ct_tensor *a, double exponent);
CT_API ct_tensor *ct_rsub_scalar(const ct_tensor *a, double s);        /* s - a */

/* ---- comparison and logical (result dtype bool) ------------------------- */
CT_API ct_tensor *ct_eq(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ne(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_lt(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_le(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_gt(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_ge(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_eq_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_ne_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_lt_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_le_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_gt_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_ge_scalar(const ct_tensor *a, double s);
CT_API ct_tensor *ct_logical_and(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_or(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_xor(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_logical_not(const ct_tensor *a);

/* ---- elementwise unary --------------------------------------------------
 * Integer inputs to floating functions (exp, log, sqrt, …) give the default
 * float dtype, as in PyTorch; neg/abs/relu/sign/square keep the dtype. */
CT_API ct_tensor *ct_neg(const ct_tensor *a);
CT_API ct_tensor *ct_abs(const ct_tensor *a);
CT_API ct_tensor *ct_sign(const ct_tensor *a);
CT_API ct_tensor *ct_square(const ct_tensor *a);
CT_API ct_tensor *ct_exp(const ct_tensor *a);
CT_API ct_tensor *ct_expm1(const ct_tensor *a);
CT_API ct_tensor *ct_log(const ct_tensor *a);
CT_API ct_tensor *ct_log1p(const ct_tensor *a);
CT_API ct_tensor *ct_log2(const ct_tensor *a);
CT_API ct_tensor *ct_sqrt(const ct_tensor *a);
CT_API ct_tensor *ct_rsqrt(const ct_tensor *a);
CT_API ct_tensor *ct_reciprocal(const ct_tensor *a);
CT_API ct_tensor *ct_sin(const ct_tensor *a);
CT_API ct_tensor *ct_cos(const ct_tensor *a);
CT_API ct_tensor *ct_tanh(const ct_tensor *a);
CT_API ct_tensor *ct_sigmoid(const ct_tensor *a);
CT_API ct_tensor *ct_relu(const ct_tensor *a);
CT_API ct_tensor *ct_gelu(const ct_tensor *a);        /* exact (erf) form, torch default */
CT_API ct_tensor *ct_gelu_tanh(const ct_tensor *a);   /* approximate='tanh' */
CT_API ct_tensor *ct_silu(const ct_tensor *a);
CT_API ct_tensor *ct_softplus(const ct_tensor *a);    /* beta 1, threshold 20 */
CT_API ct_tensor *ct_erf(const ct_tensor *a);
CT_API ct_tensor *ct_floor(const ct_tensor *a);
CT_API ct_tensor *ct_ceil(const ct_tensor *a);
CT_API ct_tensor *ct_round(const ct_tensor *a);       /* half to even */
CT_API ct_tensor *ct_trunc(const ct_tensor *a);
CT_API ct_tensor *ct_isnan(const ct_tensor *a);       /* bool */
CT_API ct_tensor *ct_isinf(const ct_tensor *a);       /* bool */
CT_API ct_tensor *ct_isfinite(const ct_tensor *a);    /* bool */
CT_API ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope);
/* F.hardswish: x * relu6(x + 3) / 6; floating dtypes only, as PyTorch. */
CT_API ct_tensor *ct_hardswish(const ct_tensor *a);
/* clamp to [lo, hi]; pass NAN for a missing bound (at least one needed). */
CT_API ct_tensor *ct_clamp(const ct_tensor *a, double lo, double hi);
/* cond ? a : b, broadcasting all three; cond must be bool. */
CT_API ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

/* ---- in place (x.add_(y)) and out= forms (torch.add(a, b, out=c)) ---------
 * Write into an existing tensor and return CT_OK or an error (docs/training.md,
 * "In-place ops and out="). As in PyTorch:
 *  - other broadcasts to self's shape; the result's dtype must be castable to
 *    self's ("result type Float can't be cast to the desired output type
 *    Long"); an expanded self, or an input that partly overlaps it, is refused;
 *  - every write bumps the version counter of self's memory: a value saved
 *    for backward that was changed since makes backward fail with "one of the
 *    variables needed for gradient computation has been modified by an
 *    inplace operation";
 *  - in grad mode the op is recorded (self's grad_fn becomes e.g.
 *    MulBackward0), a leaf that requires grad is refused (change parameters
 *    under CT_NO_GRAD), and so is a tensor sharing memory with a view that has
 *    autograd history (ctorch does not rebase views' history).
 * out= forms never record: an argument that requires grad in grad mode is
 * refused. An out with zero elements is resized to the result's shape; one
 * with elements must already have it. out may be one of the inputs. */
CT_API ct_status ct_add_(ct_tensor *self, const ct_tensor *other);
CT_API ct_status ct_sub_(ct_tensor *self, const ct_tensor *other);
CT_API ct_status ct_mul_(ct_tensor *self, const ct_tensor *other);
CT_API ct_status ct_div_(ct_tensor *self, const ct_tensor *other);
/* self.add_(other, alpha=alpha) */
CT_API ct_status ct_add_scaled_(ct_tensor *self, const ct_tensor *other, double alpha);
CT_API ct_status ct_add_scalar_(ct_tensor *self, double s);
CT_API ct_status ct_sub_scalar_(ct_tensor *self, double s);
CT_API ct_status ct_mul_scalar_(ct_tensor *self, double s);
CT_API ct_status ct_div_scalar_(ct_tensor *self, double s);
CT_API ct_status ct_relu_(ct_tensor *self);
/* NAN for a missing bound, as ct_clamp. */
CT_API ct_status ct_clamp_(ct_tensor *self, double lo, double hi);
CT_API ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_status ct_sub_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_status ct_div_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
CT_API ct_status ct_clamp_out(ct_tensor *out, const ct_tensor *a, double lo, double hi);

/* ---- reductions ----------------------------------------------------------
 * `dims`/`ndims` list the dimensions to reduce (negative allowed); ndims 0
 * reduces over all. keepdim keeps reduced dims with size 1. Integer and bool
 * sums give int64, as in PyTorch; mean/var/std need a floating dtype. */
CT_API ct_tensor *ct_sum(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
CT_API ct_tensor *ct_mean(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
CT_API ct_tensor *ct_prod(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
CT_API ct_tensor *ct_amax(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
CT_API ct_tensor *ct_amin(const ct_tensor *a, const int *dims, int ndims, bool keepdim);
/* correction: 1 for the unbiased estimator (torch default), 0 for biased. */
CT_API ct_tensor *ct_var(const ct_tensor *a, const int *dims, int ndims, double correction, bool keepdim);
CT_API ct_tensor *ct_std(const ct_tensor *a, const int *dims, int ndims, double correction, bool keepdim);
CT_API ct_tensor *ct_sum_all(const ct_tensor *a);
CT_API ct_tensor *ct_mean_all(const ct_tensor *a);
CT_API ct_tensor *ct_max_all(const ct_tensor *a);
CT_API ct_tensor *ct_min_all(const ct_tensor *a);
/* torch.max(a, dim) / torch.min(a, dim): values and int64 indices (first
 * occurrence). Either out pointer may be NULL if not wanted. */
CT_API ct_status ct_max_dim(const ct_tensor *a, int dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
CT_API ct_status ct_min_dim(const ct_tensor *a, int dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
CT_API ct_tensor *ct_argmax(const ct_tensor *a, int dim, bool keepdim);
CT_API ct_tensor *ct_argmin(const ct_tensor *a, int dim, bool keepdim);
/* Over all elements (index into the flattened tensor), as torch.argmax(a). */
CT_API ct_tensor *ct_argmax_all(const ct_tensor *a);

/* ---- linear algebra ------------------------------------------------------ */
/* torch.matmul: 1-D·1-D dot, 2-D mm, batched with broadcast batch dims. */
CT_API ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);
CT_API ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b);    /* 2-D only */
CT_API ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b);   /* 3-D only, same batch */

/* ---- softmax --------------------------------------------------------------- */
CT_API ct_tensor *ct_softmax(const ct_tensor *a, int dim);
CT_API ct_tensor *ct_log_softmax(const ct_tensor *a, int dim);

/* ---- joining, splitting, indexing ------------------------------------------- */
CT_API ct_tensor *ct_cat(ct_tensor *const *tensors, int n, int dim);
CT_API ct_tensor *ct_stack(ct_tensor *const *tensors, int n, int dim);
/* Split into chunks of split_size along dim (the last may be smaller).
 * Writes up to max views into out and returns how many chunks there are
 * (call with max 0 to count), or -1 on error. */
CT_API int ct_split(const ct_tensor *a, int64_t split_size, int dim, ct_tensor **out, int max);
CT_API int ct_chunk(const ct_tensor *a, int chunks, int dim, ct_tensor **out, int max);
/* index: 1-D int64 or int32. */
CT_API ct_tensor *ct_index_select(const ct_tensor *a, int dim, const ct_tensor *index);
/* torch.gather: out[i][j] = a[index[i][j]][j] for dim 0, and so on. */
CT_API ct_tensor *ct_gather(const ct_tensor *a, int dim, const ct_tensor *index);

/* ---- comparison of whole tensors ------------------------------------------- */
/* |a - b| <= atol + rtol * |b| everywhere (broadcasting); NaNs equal only if
 * equal_nan. Sets *result; returns an error for shape/device mismatch. */
CT_API ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol,
                             bool equal_nan, bool *result);
CT_API bool ct_equal(const ct_tensor *a, const ct_tensor *b); /* same shape and values */

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_OPS_H */
