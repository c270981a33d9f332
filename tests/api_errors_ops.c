/*
 * api_errors_ops.c — rows of test_api_errors.c for ops.h (included into
 * test_api_errors.c): a NULL operand propagates; shapes that do not
 * broadcast, dims out of range and NULL arrays are refused by name.
 */

static void rows_elementwise(void) {
    PROP_PTR(ct_add, (F.t, NT));
    ERR_PTR(ct_add, (F.t, F.img), "add: The size of tensor a");
    PROP_PTR(ct_sub, (NT, F.t));
    PROP_PTR(ct_mul, (F.t, NT));
    PROP_PTR(ct_div, (F.t, NT));
    PROP_PTR(ct_floor_divide, (F.t, NT));
    PROP_PTR(ct_remainder, (F.t, NT));
    PROP_PTR(ct_pow, (F.t, NT));
    PROP_PTR(ct_maximum, (F.t, NT));
    PROP_PTR(ct_minimum, (F.t, NT));
    PROP_PTR(ct_atan2, (F.t, NT));
    PROP_PTR(ct_add_scaled, (F.t, NT, 2.0));
    PROP_PTR(ct_add_scalar, (NT, 1.0));
    PROP_PTR(ct_sub_scalar, (NT, 1.0));
    PROP_PTR(ct_mul_scalar, (NT, 1.0));
    PROP_PTR(ct_div_scalar, (NT, 1.0));
    PROP_PTR(ct_pow_scalar, (NT, 2.0));
    PROP_PTR(ct_rsub_scalar, (NT, 1.0));
    PROP_PTR(ct_eq, (F.t, NT));
    ERR_PTR(ct_eq, (F.t, F.img), "The size of tensor a");
    PROP_PTR(ct_ne, (F.t, NT));
    PROP_PTR(ct_lt, (F.t, NT));
    PROP_PTR(ct_le, (F.t, NT));
    PROP_PTR(ct_gt, (F.t, NT));
    PROP_PTR(ct_ge, (F.t, NT));
    PROP_PTR(ct_eq_scalar, (NT, 0));
    PROP_PTR(ct_ne_scalar, (NT, 0));
    PROP_PTR(ct_lt_scalar, (NT, 0));
    PROP_PTR(ct_le_scalar, (NT, 0));
    PROP_PTR(ct_gt_scalar, (NT, 0));
    PROP_PTR(ct_ge_scalar, (NT, 0));
    PROP_PTR(ct_logical_and, (F.t, NT));
    PROP_PTR(ct_logical_or, (F.t, NT));
    PROP_PTR(ct_logical_xor, (F.t, NT));
    PROP_PTR(ct_logical_not, (NT));
    PROP_PTR(ct_neg, (NT));
    PROP_PTR(ct_abs, (NT));
    PROP_PTR(ct_sign, (NT));
    PROP_PTR(ct_square, (NT));
    PROP_PTR(ct_exp, (NT));
    PROP_PTR(ct_expm1, (NT));
    PROP_PTR(ct_log, (NT));
    PROP_PTR(ct_log1p, (NT));
    PROP_PTR(ct_log2, (NT));
    PROP_PTR(ct_sqrt, (NT));
    PROP_PTR(ct_rsqrt, (NT));
    PROP_PTR(ct_reciprocal, (NT));
    PROP_PTR(ct_sin, (NT));
    PROP_PTR(ct_cos, (NT));
    PROP_PTR(ct_tanh, (NT));
    PROP_PTR(ct_sigmoid, (NT));
    PROP_PTR(ct_relu, (NT));
    PROP_PTR(ct_gelu, (NT));
    PROP_PTR(ct_gelu_tanh, (NT));
    PROP_PTR(ct_silu, (NT));
    PROP_PTR(ct_softplus, (NT));
    PROP_PTR(ct_erf, (NT));
    PROP_PTR(ct_floor, (NT));
    PROP_PTR(ct_ceil, (NT));
    PROP_PTR(ct_round, (NT));
    PROP_PTR(ct_trunc, (NT));
    PROP_PTR(ct_isnan, (NT));
    PROP_PTR(ct_isinf, (NT));
    PROP_PTR(ct_isfinite, (NT));
    PROP_PTR(ct_leaky_relu, (NT, 0.1));
    PROP_PTR(ct_hardswish, (NT));
    ERR_PTR(ct_hardswish, (F.idx), "hardswish");
    PROP_PTR(ct_clamp, (NT, 0, 1));
    PROP_PTR(ct_where, (NT, F.t, F.t));
    PROP_PTR(ct_where, (F.mask, F.t, NT));
    ERR_PTR(ct_where, (F.mask, F.t, F.img), "where: The size of tensor a");
}

static void rows_reductions(void) {
    PROP_PTR(ct_sum, (NT, NULL, 0, false));
    ERR_PTR(ct_sum, (F.t, NULL, 1, false), "sum: invalid dims list (ndims 1, dims NULL)");
    ERR_PTR(ct_sum, (F.t, ((int[]){5}), 1, false), "sum: Dimension out of range");
    ERR_PTR(ct_sum, (F.t, ((int[]){0}), -1, false), "sum: ");
    ERR_PTR(ct_sum, (F.t, ((int[]){0, 0}), 2, false), "sum: dim 0 appears multiple times");
    PROP_PTR(ct_mean, (NT, NULL, 0, false));
    ERR_PTR(ct_mean, (F.t, NULL, 2, false), "mean: invalid dims list");
    ERR_PTR(ct_mean, (F.idx, NULL, 0, false), "mean");
    PROP_PTR(ct_prod, (NT, NULL, 0, false));
    ERR_PTR(ct_prod, (F.t, ((int[]){-3}), 1, false), "prod: Dimension out of range");
    PROP_PTR(ct_amax, (NT, NULL, 0, false));
    ERR_PTR(ct_amax, (F.t, ((int[]){2}), 1, false), "amax: Dimension out of range");
    PROP_PTR(ct_amin, (NT, NULL, 0, false));
    ERR_PTR(ct_amin, (F.empty, NULL, 0, false), "amin");
    PROP_PTR(ct_var, (NT, NULL, 0, 1, false));
    ERR_PTR(ct_var, (F.t, NULL, 1, 1, false), "var: invalid dims list");
    PROP_PTR(ct_std, (NT, NULL, 0, 1, false));
    ERR_PTR(ct_std, (F.t, ((int[]){7}), 1, 1, false), "std: Dimension out of range");
    PROP_PTR(ct_sum_all, (NT));
    PROP_PTR(ct_mean_all, (NT));
    PROP_PTR(ct_max_all, (NT));
    ERR_PTR(ct_max_all, (F.empty), "max");
    PROP_PTR(ct_min_all, (NT));
    ct_tensor *v = NULL, *i = NULL;
    PROP_STATUS(ct_max_dim, (NT, 0, false, &v, &i), "max:");
    QUIET_VAL(ct_max_dim, (F.t, 0, false, NULL, NULL), r_ == CT_OK); /* either output may be NULL */
    ERR_STATUS(ct_max_dim, (F.t, 4, false, &v, &i), "max: Dimension out of range");
    PROP_STATUS(ct_min_dim, (NT, 0, false, &v, &i), "min:");
    QUIET_VAL(ct_min_dim, (F.t, 0, false, &v, NULL), r_ == CT_OK && (ct_release(v), true));
    PROP_PTR(ct_argmax, (NT, 0, false));
    ERR_PTR(ct_argmax, (F.t, 3, false), "argmax: Dimension out of range");
    PROP_PTR(ct_argmin, (NT, 0, false));
    ERR_PTR(ct_argmin, (F.t, -3, false), "argmin: Dimension out of range");
    PROP_PTR(ct_argmax_all, (NT));
}

static void rows_linalg_join(void) {
    ct_tensor *out[4];
    PROP_PTR(ct_matmul, (F.t, NT));
    ERR_PTR(ct_matmul, (F.t, F.t), "shapes cannot be multiplied (2x3 and 2x3)");
    PROP_PTR(ct_mm, (NT, F.t));
    ERR_PTR(ct_mm, (F.t, F.img), "mm");
    PROP_PTR(ct_bmm, (F.t, NT));
    ERR_PTR(ct_bmm, (F.t, F.t), "bmm");
    PROP_PTR(ct_softmax, (NT, 0));
    ERR_PTR(ct_softmax, (F.t, 2), "softmax: Dimension out of range");
    PROP_PTR(ct_log_softmax, (NT, 0));
    ERR_PTR(ct_log_softmax, (F.t, -3), "log_softmax: Dimension out of range");
    ERR_PTR(ct_cat, (NULL, 2, 0), "cat: the tensor list is NULL");
    ERR_PTR(ct_cat, (((ct_tensor *[]){F.t}), -1, 0), "cat");
    ERR_PTR(ct_cat, (((ct_tensor *[]){F.t, F.t}), 2, 5), "cat: Dimension out of range");
    ERR_PTR(ct_cat, (((ct_tensor *[]){F.huge, F.huge, F.huge}), 3, 0), "cat: the sizes in dimension 0 add up past INT64_MAX");
    PROP_PTR(ct_cat, (((ct_tensor *[]){F.t, NT}), 2, 0));
    ERR_PTR(ct_stack, (NULL, 2, 0), "stack: the tensor list is NULL");
    ERR_PTR(ct_stack, (((ct_tensor *[]){F.t}), 0, 0), "stack expects a non-empty TensorList");
    ERR_PTR(ct_stack, (((ct_tensor *[]){F.t, F.img}), 2, 0), "stack");
    PROP_PTR(ct_stack, (((ct_tensor *[]){NT, F.t}), 2, 0));
    PROP_VAL(ct_split, (NT, 1, 0, out, 4), r_ == -1);
    ERR_VAL(ct_split, (F.t, 0, 0, out, 4), r_ == -1, "split");
    ERR_VAL(ct_split, (F.t, 1, 0, NULL, 4), r_ == -1, "split: out is NULL but max is 4");
    ERR_VAL(ct_split, (F.t, 1, 0, out, -1), r_ == -1, "split");
    ERR_VAL(ct_split, (F.t, 1, 5, out, 4), r_ == -1, "split: Dimension out of range");
    QUIET_VAL(ct_split, (F.t, INT64_MAX, 1, out, 4), r_ == 1 && (ct_release(out[0]), true));
    PROP_VAL(ct_chunk, (NT, 2, 0, out, 4), r_ == -1);
    ERR_VAL(ct_chunk, (F.t, 0, 0, out, 4), r_ == -1, "chunk");
    ERR_VAL(ct_chunk, (F.t, 2, 0, NULL, 4), r_ == -1, "chunk: out is NULL but max is 4");
    PROP_PTR(ct_index_select, (F.t, 0, NT));
    PROP_PTR(ct_index_select, (NT, 0, F.idx));
    ERR_PTR(ct_index_select, (F.t, 5, F.idx), "index_select: Dimension out of range");
    ERR_PTR(ct_index_select, (F.t, 0, F.t), "index_select");
    ERR_PTR(ct_index_select, (F.t, 0, F.bad_idx), "index_select");
    PROP_PTR(ct_gather, (F.t, 0, NT));
    ERR_PTR(ct_gather, (F.t, 5, F.idx), "gather");
    ERR_PTR(ct_gather, (F.t, 0, F.t), "gather");
    bool same = false;
    PROP_STATUS(ct_allclose, (NT, F.t, 1e-5, 1e-8, false, &same), "allclose: a tensor argument is NULL");
    PROP_STATUS(ct_allclose, (F.t, NT, 1e-5, 1e-8, false, NULL), "allclose: a tensor argument is NULL");
    ERR_STATUS(ct_allclose, (F.t, F.t, 1e-5, 1e-8, false, NULL), "allclose: the result pointer is NULL");
    ERR_STATUS(ct_allclose, (F.t, F.img, 1e-5, 1e-8, false, &same), "allclose");
    PROP_VAL(ct_equal, (NT, F.t), !r_);
}

/* In-place ops and out= forms: a NULL operand keeps the earlier error; bad
 * shapes, dtypes and aliasing are refused by name (test_inplace.c checks
 * values and autograd). */
static void rows_inplace(void) {
    PROP_STATUS(ct_add_, (F.t, NT), "add_: a tensor argument is NULL");
    ERR_STATUS(ct_add_, (F.one, F.t), "add_: output with shape [1] doesn't match the broadcast shape [2, 3]");
    PROP_STATUS(ct_sub_, (NT, F.t), "sub_:");
    ERR_STATUS(ct_sub_, (F.expanded, F.one), "sub_: unsupported operation: more than one element");
    PROP_STATUS(ct_mul_, (F.t, NT), "mul_:");
    ERR_STATUS(ct_mul_, (F.row1, F.row0), "mul_: unsupported operation: some elements of the input tensor");
    PROP_STATUS(ct_div_, (NT, F.t), "div_:");
    ERR_STATUS(ct_div_, (F.idx, F.idx), "div_: result type Float can't be cast to the desired output type Long");
    PROP_STATUS(ct_add_scaled_, (F.t, NT, 2.0), "add_:");
    ERR_STATUS(ct_add_scaled_, (F.idx, F.idx, 0.5), "alpha must not be a floating point number");
    PROP_STATUS(ct_add_scalar_, (NT, 1.0), "add_:");
    ERR_STATUS(ct_add_scalar_, (F.idx, 0.5), "result type Float can't be cast to the desired output type Long");
    PROP_STATUS(ct_sub_scalar_, (NT, 1.0), "sub_:");
    ERR_STATUS(ct_sub_scalar_, (F.mask, 1.0), "sub");
    PROP_STATUS(ct_mul_scalar_, (NT, 1.0), "mul_:");
    ERR_STATUS(ct_mul_scalar_, (F.expanded, 2.0), "mul_: unsupported operation");
    PROP_STATUS(ct_div_scalar_, (NT, 1.0), "div_:");
    ERR_STATUS(ct_div_scalar_, (F.idx, 2.0), "div_: result type Float can't be cast");
    PROP_STATUS(ct_relu_, (NT), "relu_:");
    ERR_STATUS(ct_relu_, (F.mask), "relu: Boolean inputs not supported for relu");
    PROP_STATUS(ct_clamp_, (NT, 0.0, 1.0), "clamp_:");
    ERR_STATUS(ct_clamp_, (F.t, NAN, NAN), "clamp: At least one of 'min' or 'max' must not be None");
    PROP_STATUS(ct_add_out, (F.t, NT, F.t), "add:");
    ERR_STATUS(ct_add_out, (F.one, F.t, F.t), "add: output with shape [1] doesn't match the broadcast shape [2, 3]");
    PROP_STATUS(ct_sub_out, (NT, F.t, F.t), "sub:");
    ERR_STATUS(ct_sub_out, (F.idx, F.t, F.t), "sub: output with shape [2] doesn't match");
    PROP_STATUS(ct_mul_out, (F.t, F.t, NT), "mul:");
    ERR_STATUS(ct_mul_out, (F.row1, F.row0, F.row0), "mul: unsupported operation: some elements");
    PROP_STATUS(ct_div_out, (F.t, NT, F.t), "div:");
    ERR_STATUS(ct_div_out, (F.bad_label, F.bad_label, F.bad_label),
               "div: result type Float can't be cast to the desired output type Long");
    PROP_STATUS(ct_clamp_out, (NT, F.t, 0.0, 1.0), "clamp:");
    ERR_STATUS(ct_clamp_out, (F.expanded, F.one, 0.0, 1.0), "clamp: unsupported operation: more than one element");
}

static void rows_ops(void) {
    rows_elementwise();
    rows_reductions();
    rows_linalg_join();
    rows_inplace();
}
