/*
 * cpu_reduce.h — the CPU backend's reduction and softmax entries (internal).
 *
 * They have exactly the signatures of ct_backend's `reduce` and `softmax`
 * members, so the CPU table in cpu_backend.c can point at them; see
 * src/core/backend.h for the contract the core guarantees before calling.
 */
#ifndef CT_CPU_REDUCE_H
#define CT_CPU_REDUCE_H

#include "../../core/backend.h"

ct_status ct_cpu_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index,
                        const ct_kview *in, double param);

ct_status ct_cpu_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim,
                         int64_t inner, bool log);

#endif /* CT_CPU_REDUCE_H */
