/*
 * op_facts.c — the facts of every elementwise op, one row per op: its name
 * (for messages), its autograd node (PyTorch's name, NULL when it is not
 * differentiable), whether it computes a floating function (integer inputs
 * become the default float dtype), whether kernels exist for integer dtypes,
 * and whether it returns bool. The front-ends' dtype rules, every backend's
 * checks, the autograd rules and the cross-backend harness read these rows
 * (core/backend.h), so they cannot disagree, and a new elementwise op is
 * one row here plus its kernel and formula.
 */
#include "backend.h"

/* Columns: name, autograd node, floating function, integer kernel, bool result. */
static const ct_unary_facts k_unary[CT_UN_COUNT_] = {
    [CT_UN_NEG] = {"neg", "NegBackward0", false, true, false},
    [CT_UN_ABS] = {"abs", "AbsBackward0", false, true, false},
    [CT_UN_SIGN] = {"sign", "SignBackward0", false, true, false},
    [CT_UN_SQUARE] = {"square", "PowBackward0", false, true, false},
    [CT_UN_EXP] = {"exp", "ExpBackward0", true, false, false},
    [CT_UN_EXPM1] = {"expm1", "Expm1Backward0", true, false, false},
    [CT_UN_LOG] = {"log", "LogBackward0", true, false, false},
    [CT_UN_LOG1P] = {"log1p", "Log1PBackward0", true, false, false},
    [CT_UN_LOG2] = {"log2", "Log2Backward0", true, false, false},
    [CT_UN_SQRT] = {"sqrt", "SqrtBackward0", true, false, false},
    [CT_UN_RSQRT] = {"rsqrt", "RsqrtBackward0", true, false, false},
    [CT_UN_RECIPROCAL] = {"reciprocal", "ReciprocalBackward0", true, false, false},
    [CT_UN_SIN] = {"sin", "SinBackward0", true, false, false},
    [CT_UN_COS] = {"cos", "CosBackward0", true, false, false},
    [CT_UN_TANH] = {"tanh", "TanhBackward0", true, false, false},
    [CT_UN_SIGMOID] = {"sigmoid", "SigmoidBackward0", true, false, false},
    [CT_UN_RELU] = {"relu", "ReluBackward0", false, true, false},
    [CT_UN_GELU] = {"gelu", "GeluBackward0", true, false, false},
    [CT_UN_GELU_TANH] = {"gelu", "GeluBackward0", true, false, false},
    [CT_UN_SILU] = {"silu", "SiluBackward0", true, false, false},
    [CT_UN_SOFTPLUS] = {"softplus", "SoftplusBackward0", true, false, false},
    [CT_UN_ERF] = {"erf", "ErfBackward0", true, false, false},
    [CT_UN_FLOOR] = {"floor", "FloorBackward0", false, true, false},
    [CT_UN_CEIL] = {"ceil", "CeilBackward0", false, true, false},
    [CT_UN_ROUND] = {"round", "RoundBackward0", false, true, false},
    [CT_UN_TRUNC] = {"trunc", "TruncBackward0", false, true, false},
    [CT_UN_ISNAN] = {"isnan", NULL, false, true, true},
    [CT_UN_ISINF] = {"isinf", NULL, false, true, true},
    [CT_UN_ISFINITE] = {"isfinite", NULL, false, true, true},
    [CT_UN_LOGICAL_NOT] = {"logical_not", NULL, false, true, true},
    [CT_UN_LEAKY_RELU] = {"leaky_relu", "LeakyReluBackward0", false, false, false},
    [CT_UN_CLAMP] = {"clamp", "ClampBackward1", false, true, false},
    [CT_UN_HARDSWISH] = {"hardswish", "HardswishBackward0", false, false, false},
};

/* Columns: name, autograd node, bool result. */
static const ct_binary_facts k_binary[CT_BIN_COUNT_] = {
    [CT_BIN_ADD] = {"add", "AddBackward0", false},
    [CT_BIN_SUB] = {"sub", "SubBackward0", false},
    [CT_BIN_MUL] = {"mul", "MulBackward0", false},
    [CT_BIN_DIV] = {"div", "DivBackward0", false},
    [CT_BIN_FLOOR_DIV] = {"floor_divide", NULL, false},
    [CT_BIN_REMAINDER] = {"remainder", NULL, false},
    [CT_BIN_POW] = {"pow", "PowBackward1", false},
    [CT_BIN_MAXIMUM] = {"maximum", "MaximumBackward0", false},
    [CT_BIN_MINIMUM] = {"minimum", "MinimumBackward0", false},
    [CT_BIN_ATAN2] = {"atan2", "Atan2Backward0", false},
    [CT_BIN_EQ] = {"eq", NULL, true},
    [CT_BIN_NE] = {"ne", NULL, true},
    [CT_BIN_LT] = {"lt", NULL, true},
    [CT_BIN_LE] = {"le", NULL, true},
    [CT_BIN_GT] = {"gt", NULL, true},
    [CT_BIN_GE] = {"ge", NULL, true},
    [CT_BIN_LOGICAL_AND] = {"logical_and", NULL, true},
    [CT_BIN_LOGICAL_OR] = {"logical_or", NULL, true},
    [CT_BIN_LOGICAL_XOR] = {"logical_xor", NULL, true},
};

static const ct_unary_facts k_unary_unknown = {"unary", NULL, false, false, false};
static const ct_binary_facts k_binary_unknown = {"binary", NULL, false};

const ct_unary_facts *ct_unary_facts_of(ct_unary_op op) {
    return (unsigned)op < CT_UN_COUNT_ && k_unary[op].name ? &k_unary[op] : &k_unary_unknown;
}

const ct_binary_facts *ct_binary_facts_of(ct_binary_op op) {
    return (unsigned)op < CT_BIN_COUNT_ && k_binary[op].name ? &k_binary[op] : &k_binary_unknown;
}
