/*
 * cpu_linalg.h — the CPU backend's matrix multiply and indexing kernels
 * (internal). Their signatures are exactly those of the `matmul`,
 * `index_select` and `gather` entries of ct_backend, so the CPU table can
 * point at them directly; the contracts are documented in core/backend.h.
 */
#ifndef CT_CPU_LINALG_H
#define CT_CPU_LINALG_H

#include "../../core/backend.h"

/* out [B, M, N] contiguous = a [B, M, K] @ b [B, K, N]; any input strides. */
ct_status ct_cpu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* in [outer, dim_in, inner] and out [outer, n, inner] contiguous; index int64 [n]. */
ct_status ct_cpu_index_select(const ct_kview *out, const ct_kview *in, const ct_kview *index,
                              int64_t outer, int64_t dim_in, int64_t inner);

/* out (index's shape, contiguous) = in gathered along dim by index (int64, contiguous). */
ct_status ct_cpu_gather(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim);

#endif /* CT_CPU_LINALG_H */
