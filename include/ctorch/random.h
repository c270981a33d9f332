/*
 * ctorch/random.h — random number generation.
 *
 * ctorch uses the counter-based Philox4x32-10 generator: the value of element
 * i of a random tensor depends only on (seed, offset, i), never on the number
 * of threads or on the device, so CPU, OpenCL and CUDA produce the same
 * streams from the same seed. A generator is a seed plus an offset counted
 * in Philox blocks; each random tensor of n elements uses ceil(n/2) blocks
 * (src/kernels/philox.h gives the exact mapping).
 */
#ifndef CTORCH_RANDOM_H
#define CTORCH_RANDOM_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.manual_seed: reseed the default generator (offset back to 0). */
CT_API void ct_manual_seed(uint64_t seed);
CT_API uint64_t ct_initial_seed(void);
/* Get/set the default generator's state (seed, offset) for exact resume;
 * either output pointer may be NULL. */
CT_API void ct_get_rng_state(uint64_t *seed, uint64_t *offset);
CT_API void ct_set_rng_state(uint64_t seed, uint64_t offset);

/* One Philox4x32-10 block: four 32-bit outputs for a 128-bit counter and a
 * 64-bit key. Exposed so that tests and other backends can check streams. */
CT_API void ct_philox4x32(uint64_t key, uint64_t counter_lo, uint64_t counter_hi, uint32_t out[4]);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_RANDOM_H */
