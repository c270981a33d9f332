/*
 * op_facts.c — the facts of every elementwise op as a table, made from the
 * lines of src/kernels/unary_ops.def, binary_ops.def and reduce_ops.def:
 * its name (for
 * messages), its autograd node (PyTorch's name, NULL when it is not
 * differentiable) and its CT_OPF_* flags (a floating function, integer
 * kernels, a bool result, bool inputs refused, ...). The front-ends' dtype
 * rules, every backend's checks, the autograd rules and the cross-backend
 * harness read these rows (core/backend.h), so they cannot disagree, and a
 * new elementwise op is one line in a .def file plus its kernel, CPU
 * reference and formula.
 */
#include "backend.h"

#define UNARY_FACTS(flags) \
    ((flags) & CT_OPF_FLOATING) != 0, ((flags) & CT_OPF_INT_KERNEL) != 0, ((flags) & CT_OPF_BOOL_RESULT) != 0, (flags)
static const ct_unary_facts k_unary[CT_UN_COUNT_] = {
#define CT_UNARY_OP(code, fn, name, node, api, flags) [CT_UN_##code] = {name, node, UNARY_FACTS(flags)},
#include "kernels/unary_ops.def"
#undef CT_UNARY_OP
};

static const ct_binary_facts k_binary[CT_BIN_COUNT_] = {
#define CT_BINARY_OP(code, fn, name, node, flags) [CT_BIN_##code] = {name, node, ((flags) & CT_OPF_BOOL_RESULT) != 0, (flags)},
#include "kernels/binary_ops.def"
#undef CT_BINARY_OP
};

static const ct_reduce_facts k_reduce[CT_RED_COUNT_] = {
#define CT_REDUCE_OP(code, name, flags) [CT_RED_##code] = {name, (flags)},
#include "kernels/reduce_ops.def"
#undef CT_REDUCE_OP
};

static const ct_unary_facts k_unary_unknown = {"unary", NULL, false, false, false, 0};
static const ct_binary_facts k_binary_unknown = {"binary", NULL, false, 0};
static const ct_reduce_facts k_reduce_unknown = {"reduce", 0};

const ct_unary_facts *ct_unary_facts_of(ct_unary_op op) {
    return (unsigned)op < CT_UN_COUNT_ && k_unary[op].name ? &k_unary[op] : &k_unary_unknown;
}

const ct_binary_facts *ct_binary_facts_of(ct_binary_op op) {
    return (unsigned)op < CT_BIN_COUNT_ && k_binary[op].name ? &k_binary[op] : &k_binary_unknown;
}

const ct_reduce_facts *ct_reduce_facts_of(ct_reduce_op op) {
    return (unsigned)op < CT_RED_COUNT_ && k_reduce[op].name ? &k_reduce[op] : &k_reduce_unknown;
}
