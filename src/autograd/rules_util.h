/*
 * rules_util.h — small helpers that keep backward formulas readable
 * (internal): a scratch list that owns the temporaries of one formula, and
 * shorthands for the cti_* ops the formulas combine.
 */
#ifndef CT_AUTOGRAD_RULES_UTIL_H
#define CT_AUTOGRAD_RULES_UTIL_H

#include <stdlib.h>

#include "autograd.h"
#include "core/error.h"

/* The first CT_SCRATCH_INLINE temporaries live in the struct (every
 * formula today needs fewer); more spill into a heap array that grows, so
 * a long formula neither drops nor leaks a temporary. Zero-initialise. */
#define CT_SCRATCH_INLINE 32

typedef struct scratch {
    ct_tensor *t[CT_SCRATCH_INLINE];
    ct_tensor **more;              /* temporaries past the inline ones */
    int n, n_more, cap_more;
    bool failed;
} scratch;

/* Room for one more temporary past the inline ones; false when out of memory. */
static inline bool scratch_grow(scratch *s) {
    if (s->n_more < s->cap_more) return true;
    int cap = s->cap_more ? 2 * s->cap_more : CT_SCRATCH_INLINE;
    ct_tensor **more = (ct_tensor **)realloc(s->more, sizeof *more * (size_t)cap);
    if (!more) return false;
    s->more = more, s->cap_more = cap;
    return true;
}

/* Own t until scratch_free; NULL (or no memory to hold t) marks the
 * formula as failed, with the error set. */
static inline ct_tensor *own(scratch *s, ct_tensor *t) {
    if (!t) {
        s->failed = true;
    } else if (s->n < CT_SCRATCH_INLINE) {
        s->t[s->n++] = t;
    } else if (scratch_grow(s)) {
        s->more[s->n_more++] = t;
    } else {
        ct_decref(t);
        ct_error_set(CT_ERR_OOM, "backward: out of memory holding a formula's temporaries");
        s->failed = true;
        t = NULL;
    }
    return t;
}
static inline void scratch_free(scratch *s) {
    for (int i = 0; i < s->n; i++) ct_decref(s->t[i]);
    for (int i = 0; i < s->n_more; i++) ct_decref(s->more[i]);
    free(s->more);
    s->more = NULL;
    s->n = s->n_more = s->cap_more = 0;
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
