/*
 * elementwise_api.c — the public elementwise functions of ctorch/ops.h.
 *
 * Each is a one-line wrapper over the internal front-ends in elementwise.c
 * that hands the untracked result to the current scope (ct_track). Kept
 * apart so that elementwise.c holds only the rules. The plain ones,
 * ct_<fn>(a) and ct_<fn>(a, b), are made from the lines of
 * src/kernels/unary_ops.def and binary_ops.def; the ones with parameters or
 * scalars are written out.
 */
#include <math.h>

#include "../autograd/autograd.h"
#include "amp/autocast.h"

/* ---- made from the lines of unary_ops.def and binary_ops.def ---- */

#define CT_UNARY_API_API(code, fn) \
    ct_tensor *ct_##fn(const ct_tensor *a) { return ct_track(cti_ac_unary(CT_UN_##code, a, 0.0, 0.0)); }
#define CT_UNARY_API_HAND(code, fn) /* written below */
#define CT_UNARY_OP(code, fn, name, node, api, flags) CT_UNARY_API_##api(code, fn)
#include "kernels/unary_ops.def"
#undef CT_UNARY_OP

#define CT_BINARY_OP(code, fn, name, node, flags) \
    ct_tensor *ct_##fn(const ct_tensor *a, const ct_tensor *b) { return ct_track(cti_ac_binary(CT_BIN_##code, a, b, 1.0)); }
#include "kernels/binary_ops.def"
#undef CT_BINARY_OP

/* ---- alpha and scalar forms ---- */
ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha) { return ct_track(cta_binary(CT_BIN_ADD, a, b, alpha)); }

ct_tensor *ct_add_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_ADD, a, s)); }
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_SUB, a, s)); }
ct_tensor *ct_mul_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_MUL, a, s)); }
ct_tensor *ct_div_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_DIV, a, s)); }
ct_tensor *ct_pow_scalar(const ct_tensor *a, double exponent) { return ct_track(cti_ac_binary_scalar(CT_BIN_POW, a, exponent)); }
/* ct_rsub_scalar is in elementwise.c: it needs the scalar on the left. */

/* ---- comparisons with a scalar ---- */
ct_tensor *ct_eq_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_EQ, a, s)); }
ct_tensor *ct_ne_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_NE, a, s)); }
ct_tensor *ct_lt_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_LT, a, s)); }
ct_tensor *ct_le_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_LE, a, s)); }
ct_tensor *ct_gt_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_GT, a, s)); }
ct_tensor *ct_ge_scalar(const ct_tensor *a, double s) { return ct_track(cta_binary_scalar(CT_BIN_GE, a, s)); }

/* ---- with parameters ---- */
ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope) { return ct_track(cta_unary(CT_UN_LEAKY_RELU, a, negative_slope, 0.0)); }
ct_tensor *ct_clamp(const ct_tensor *a, double lo, double hi) { return ct_track(cta_unary(CT_UN_CLAMP, a, lo, hi)); }
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) { return ct_track(cta_where(cond, a, b)); }
