/*
 * random.c — the default generator: a seed and a Philox block offset.
 *
 * Each random op reserves the blocks it will use (one per two elements) by
 * advancing the offset atomically, then the backend computes every element
 * independently from (seed, offset, index). Results therefore do not depend
 * on thread count or device, and (seed, offset) is the whole state to save
 * for an exact resume.
 */
#include <stdatomic.h>

#include "internal.h"
#include "kernels/philox.h"

#define CT_DEFAULT_SEED 67280421310721ull /* PyTorch's default seed */

static atomic_ullong g_seed = CT_DEFAULT_SEED;
static atomic_ullong g_offset = 0;

void ct_manual_seed(uint64_t seed) {
    atomic_store(&g_seed, seed);
    atomic_store(&g_offset, 0);
}

uint64_t ct_initial_seed(void) { return atomic_load(&g_seed); }

void ct_get_rng_state(uint64_t *seed, uint64_t *offset) {
    if (seed) *seed = atomic_load(&g_seed);
    if (offset) *offset = atomic_load(&g_offset);
}

void ct_set_rng_state(uint64_t seed, uint64_t offset) {
    atomic_store(&g_seed, seed);
    atomic_store(&g_offset, offset);
}

void cti_rng_reserve(uint64_t n, uint64_t *seed, uint64_t *offset) {
    *seed = atomic_load(&g_seed);
    *offset = atomic_fetch_add(&g_offset, (n + 1) / 2);
}

void ct_philox4x32(uint64_t key, uint64_t counter_lo, uint64_t counter_hi, uint32_t out[4]) {
    if (!out) {
        ct_error_set(CT_ERR_INVALID_ARG, "philox4x32: NULL output array");
        return;
    }
    ct_philox4x32_10((uint32_t)counter_lo, (uint32_t)(counter_lo >> 32), (uint32_t)counter_hi,
                     (uint32_t)(counter_hi >> 32), (uint32_t)key, (uint32_t)(key >> 32), out);
}
