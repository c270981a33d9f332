/*
 * autocast.h — how ops consult autocast (internal; the public side is
 * ctorch/amp.h). An op's public function, before it calls its autograd
 * front-end, passes its tensor arguments through cti_autocast: where an
 * autocast region is active for their device type and the op is on one of
 * that device type's lists, they come back cast (by the autograd-recorded
 * cast, so that gradients flow back to the originals). Outside every
 * region this costs one thread-local load.
 */
#ifndef CT_AMP_AUTOCAST_H
#define CT_AMP_AUTOCAST_H

#include <stdbool.h>

#include "core/backend.h"
#include "ctorch/amp.h"

/* Nonzero while any autocast region is open on this thread. */
extern _Thread_local int cti_autocast_depth;

/* The args[0..n) of op (its name, as PyTorch's lists name it: "matmul",
 * "mse_loss", "exp"), cast as the active region's policy for their device
 * type says: casts replace args[i] and are returned in holders[i] (new
 * references the caller releases with cti_autocast_release; NULL where
 * nothing was cast). NULL entries of args are skipped. Returns false with
 * an error set when a cast failed or autocast refuses the op. */
bool cti_autocast(const char *op, int n, const ct_tensor **args, ct_tensor **holders);
void cti_autocast_release(int n, ct_tensor **holders);

/* How many parameter casts the weight-cast cache holds (tests). */
int cti_autocast_cache_size(void);

/* The usual case: skip everything when no region is open. */
#define CTI_AUTOCAST(op, n, args, holders) (cti_autocast_depth == 0 || cti_autocast((op), (n), (args), (holders)))

/* In a public function whose tensor parameters are a (, b (, c)): replace
 * them by their autocast casts for op, or return NULL when that fails;
 * then return CTI_AUTOCAST_RESULT(the autograd front-end's call), which
 * drops the casts and tracks the result. */
#define CTI_AUTOCAST_ARGS_(op, n, ...)                                   \
    const ct_tensor *ac_in_[n] = {__VA_ARGS__};                           \
    ct_tensor *ac_held_[n] = {NULL};                                      \
    if (!CTI_AUTOCAST((op), (n), ac_in_, ac_held_)) return NULL
#define CTI_AUTOCAST1(op, a) CTI_AUTOCAST_ARGS_(op, 1, a); a = ac_in_[0]
#define CTI_AUTOCAST2(op, a, b) CTI_AUTOCAST_ARGS_(op, 2, a, b); a = ac_in_[0], b = ac_in_[1]
#define CTI_AUTOCAST3(op, a, b, c) \
    CTI_AUTOCAST_ARGS_(op, 3, a, b, c); a = ac_in_[0], b = ac_in_[1], c = ac_in_[2]
#define CTI_AUTOCAST_RESULT(r) cti_autocast_finish((r), (int)(sizeof ac_held_ / sizeof ac_held_[0]), ac_held_)
/* Releases the casts and hands r (untracked, may be NULL) to the scope. */
ct_tensor *cti_autocast_finish(ct_tensor *r, int n, ct_tensor **holders);

/* The elementwise front-ends (cta_unary, cta_binary, cta_binary_scalar)
 * with autocast applied by the op's name in the facts table; untracked
 * results (ops/elementwise_api.c tracks them). */
ct_tensor *cti_ac_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1);
ct_tensor *cti_ac_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *cti_ac_binary_scalar(ct_binary_op op, const ct_tensor *a, double s);

#endif /* CT_AMP_AUTOCAST_H */
