/*
 * rules_util.h — small helpers that keep backward formulas readable
 * (internal): a scratch list that owns the temporaries of one formula, and
 * shorthands for the cti_* ops the formulas combine.
 */
#ifndef CT_AUTOGRAD_RULES_UTIL_H
#define CT_AUTOGRAD_RULES_UTIL_H

#include "autograd.h"

typedef struct scratch {
    ct_tensor *t[32];
    int n;
    bool failed;
} scratch;

/* Own t until scratch_free; NULL marks the formula as failed. */
static inline ct_tensor *own(scratch *s, ct_tensor *t) {
    if (!t) s->failed = true;
    else if (s->n < 32) s->t[s->n++] = t;
    else s->failed = true;
    return t;
}
static inline void scratch_free(scratch *s) {
    for (int i = 0; i < s->n; i++) ct_decref(s->t[i]);
    s->n = 0;
}
/* Hand a result out of the scratch (a new reference for the caller). */
static inline ct_tensor *give(const ct_tensor *t) { return t ? ct_retain((ct_tensor *)t) : NULL; }

#define BIN(s, op, a, b) own((s), cti_binary((op), (a), (b), 1.0))
#define MUL(s, a, b) BIN(s, CT_BIN_MUL, a, b)
#define DIV(s, a, b) BIN(s, CT_BIN_DIV, a, b)
#define ADD(s, a, b) BIN(s, CT_BIN_ADD, a, b)
#define SUB(s, a, b) BIN(s, CT_BIN_SUB, a, b)
#define MULS(s, a, k) own((s), cti_binary_scalar(CT_BIN_MUL, (a), (k)))
#define ADDS(s, a, k) own((s), cti_binary_scalar(CT_BIN_ADD, (a), (k)))
#define UN(s, op, a) own((s), cti_unary((op), (a), 0, 0))
#define CMP(s, op, a, b) own((s), cti_binary((op), (a), (b), 1.0))
#define CMPS(s, op, a, k) own((s), cti_binary_scalar((op), (a), (k)))
/* a bool mask as a float tensor of t's dtype */
#define MASK(s, m, like) own((s), cti_cast((m), (like)->dtype))

#endif /* CT_AUTOGRAD_RULES_UTIL_H */
