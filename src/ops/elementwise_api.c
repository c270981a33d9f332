/*
 * elementwise_api.c — the public elementwise functions of ctorch/ops.h.
 *
 * Each is a one-line wrapper over the internal front-ends in elementwise.c
 * that hands the untracked result to the current scope (ct_track). Kept
 * apart so that elementwise.c holds only the rules.
 */
#include <math.h>

#include "../autograd/autograd.h"

/* ---- elementwise binary ---- */
ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_ADD, a, b, 1.0)); }
ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_SUB, a, b, 1.0)); }
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_MUL, a, b, 1.0)); }
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_DIV, a, b, 1.0)); }
ct_tensor *ct_floor_divide(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_FLOOR_DIV, a, b, 1.0)); }
ct_tensor *ct_remainder(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_REMAINDER, a, b, 1.0)); }
ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_POW, a, b, 1.0)); }
ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_MAXIMUM, a, b, 1.0)); }
ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_MINIMUM, a, b, 1.0)); }
ct_tensor *ct_atan2(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_ATAN2, a, b, 1.0)); }
ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha) { return ct_track(cta_binary(CT_BIN_ADD, a, b, alpha)); }

ct_tensor *ct_add_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_ADD, a, s)); }
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_SUB, a, s)); }
ct_tensor *ct_mul_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_MUL, a, s)); }
ct_tensor *ct_div_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_DIV, a, s)); }
ct_tensor *ct_pow_scalar(const ct_tensor *a, double exponent) { return ct_track(cta_binary_scalar(CT_BIN_POW, a, exponent)); }
/* ct_rsub_scalar is in elementwise.c: it needs the scalar on the left. */

/* ---- comparison and logical ---- */
ct_tensor *ct_eq(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_EQ, a, b, 1.0)); }
ct_tensor *ct_ne(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_NE, a, b, 1.0)); }
ct_tensor *ct_lt(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_LT, a, b, 1.0)); }
ct_tensor *ct_le(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_LE, a, b, 1.0)); }
ct_tensor *ct_gt(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_GT, a, b, 1.0)); }
ct_tensor *ct_ge(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_GE, a, b, 1.0)); }
ct_tensor *ct_eq_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_EQ, a, s)); }
ct_tensor *ct_ne_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_NE, a, s)); }
ct_tensor *ct_lt_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_LT, a, s)); }
ct_tensor *ct_le_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_LE, a, s)); }
ct_tensor *ct_gt_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_GT, a, s)); }
ct_tensor *ct_ge_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_GE, a, s)); }
ct_tensor *ct_logical_and(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_LOGICAL_AND, a, b, 1.0)); }
ct_tensor *ct_logical_or(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_LOGICAL_OR, a, b, 1.0)); }
ct_tensor *ct_logical_xor(const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_binary(CT_BIN_LOGICAL_XOR, a, b, 1.0)); }
ct_tensor *ct_logical_not(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_LOGICAL_NOT, a, 0.0, 0.0)); }

/* ---- elementwise unary ---- */
ct_tensor *ct_neg(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_NEG, a, 0.0, 0.0)); }
ct_tensor *ct_abs(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ABS, a, 0.0, 0.0)); }
ct_tensor *ct_sign(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SIGN, a, 0.0, 0.0)); }
ct_tensor *ct_square(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SQUARE, a, 0.0, 0.0)); }
ct_tensor *ct_exp(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_EXP, a, 0.0, 0.0)); }
ct_tensor *ct_expm1(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_EXPM1, a, 0.0, 0.0)); }
ct_tensor *ct_log(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_LOG, a, 0.0, 0.0)); }
ct_tensor *ct_log1p(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_LOG1P, a, 0.0, 0.0)); }
ct_tensor *ct_log2(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_LOG2, a, 0.0, 0.0)); }
ct_tensor *ct_sqrt(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SQRT, a, 0.0, 0.0)); }
ct_tensor *ct_rsqrt(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_RSQRT, a, 0.0, 0.0)); }
ct_tensor *ct_reciprocal(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_RECIPROCAL, a, 0.0, 0.0)); }
ct_tensor *ct_sin(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SIN, a, 0.0, 0.0)); }
ct_tensor *ct_cos(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_COS, a, 0.0, 0.0)); }
ct_tensor *ct_tanh(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_TANH, a, 0.0, 0.0)); }
ct_tensor *ct_sigmoid(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SIGMOID, a, 0.0, 0.0)); }
ct_tensor *ct_relu(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_RELU, a, 0.0, 0.0)); }
ct_tensor *ct_gelu(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_GELU, a, 0.0, 0.0)); }
ct_tensor *ct_gelu_tanh(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_GELU_TANH, a, 0.0, 0.0)); }
ct_tensor *ct_silu(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SILU, a, 0.0, 0.0)); }
ct_tensor *ct_softplus(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_SOFTPLUS, a, 0.0, 0.0)); }
ct_tensor *ct_erf(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ERF, a, 0.0, 0.0)); }
ct_tensor *ct_floor(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_FLOOR, a, 0.0, 0.0)); }
ct_tensor *ct_ceil(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_CEIL, a, 0.0, 0.0)); }
ct_tensor *ct_round(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ROUND, a, 0.0, 0.0)); }
ct_tensor *ct_trunc(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_TRUNC, a, 0.0, 0.0)); }
ct_tensor *ct_isnan(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ISNAN, a, 0.0, 0.0)); }
ct_tensor *ct_isinf(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ISINF, a, 0.0, 0.0)); }
ct_tensor *ct_isfinite(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_ISFINITE, a, 0.0, 0.0)); }
ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope) { return ct_track(cta_unary(CT_UN_LEAKY_RELU, a, negative_slope, 0.0)); }
ct_tensor *ct_hardswish(const ct_tensor *a) { return ct_track(cta_unary(CT_UN_HARDSWISH, a, 0.0, 0.0)); }
ct_tensor *ct_clamp(const ct_tensor *a, double lo, double hi) { return ct_track(cta_unary(CT_UN_CLAMP, a, lo, hi)); }
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_where(cond, a, b)); }
