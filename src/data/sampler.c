/*
 * sampler.c — samplers: the order in which a DataLoader visits a dataset,
 * as torch.utils.data.{SequentialSampler, RandomSampler, DistributedSampler}
 * plus samplers from user functions.
 *
 * Shuffles are Fisher–Yates permutations whose draws come from Philox, so an
 * epoch's order depends only on (seed, epoch) — never on threads or on the
 * order of calls — and a run resumed at epoch k sees the same order as an
 * uninterrupted one. The exact mapping (ct_permutation below):
 *
 *   idx = 0, 1, …, n-1
 *   for i = n-1 down to 1:
 *       j = a uniform draw from [0, i]            (bound = i + 1)
 *       swap idx[i] and idx[j]
 *
 * The draws for position i come from the Philox blocks
 *   ct_philox4x32(key, counter_lo = ctr, counter_hi = i + a * 2^56),  a = 0, 1, …
 * each giving two 64-bit candidates x = r0 | r1 << 32 and r2 | r3 << 32, in
 * that order. A candidate is rejected when x < 2^64 mod bound (so that every
 * residue is equally likely), otherwise j = x mod bound. Rejection is rare
 * (probability < bound / 2^64), so almost always j comes from (r0, r1) of
 * block a = 0.
 *
 * RandomSampler uses key = seed, ctr = epoch. DistributedSampler follows
 * PyTorch, which seeds a generator with seed + epoch: key = seed + epoch,
 * ctr = 0. Bit 63 of counter_hi stays clear here; the DataLoader's sample
 * keys set it (dataloader.c), so the two streams never share a block.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ctorch/data.h"
#include "ctorch/random.h"

typedef enum sampler_kind {
    SAMPLER_SEQUENTIAL,
    SAMPLER_RANDOM,
    SAMPLER_DISTRIBUTED,
    SAMPLER_USER
} sampler_kind;

struct ct_sampler {
    sampler_kind kind;
    int64_t n;              /* dataset length (built-in samplers) */
    uint64_t seed;
    uint64_t epoch;
    /* DistributedSampler */
    int num_replicas, rank;
    bool shuffle, drop_last;
    int64_t num_samples;
    /* user sampler */
    ct_sampler_fns fns;
    void *state;
};

/* ---- the Philox permutation ----------------------------------------------------- */

/* A uniform draw from [0, bound) for Fisher–Yates position `pos` (bound >= 1). */
static uint64_t bounded_draw(uint64_t key, uint64_t ctr, uint64_t pos, uint64_t bound) {
    const uint64_t reject_below = (0 - bound) % bound;   /* 2^64 mod bound */
    for (uint64_t a = 0;; a++) {
        uint32_t r[4];
        ct_philox4x32(key, ctr, pos + (a << 56), r);
        uint64_t x0 = (uint64_t)r[0] | (uint64_t)r[1] << 32;
        if (x0 >= reject_below) return x0 % bound;
        uint64_t x1 = (uint64_t)r[2] | (uint64_t)r[3] << 32;
        if (x1 >= reject_below) return x1 % bound;
    }
}

/* idx[0..n) = the permutation of 0..n-1 keyed by (key, ctr); see the top. */
static void ct_permutation(int64_t n, uint64_t key, uint64_t ctr, int64_t *idx) {
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    for (int64_t i = n - 1; i >= 1; i--) {
        int64_t j = (int64_t)bounded_draw(key, ctr, (uint64_t)i, (uint64_t)i + 1);
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* ---- construction ------------------------------------------------------------------ */

static ct_sampler *sampler_alloc(sampler_kind kind, const char *what) {
    ct_sampler *s = calloc(1, sizeof *s);
    if (!s) ct_error_set(CT_ERR_OOM, "%s: out of memory", what);
    else s->kind = kind;
    return s;
}

static bool check_length(const char *what, int64_t n) {
    if (n >= 0) return true;
    ct_error_set(CT_ERR_INVALID_ARG, "%s: the dataset length must be non-negative, but got %lld", what,
                 (long long)n);
    return false;
}

ct_sampler *ct_sequential_sampler(int64_t n) {
    if (!check_length("SequentialSampler", n)) return NULL;
    ct_sampler *s = sampler_alloc(SAMPLER_SEQUENTIAL, "SequentialSampler");
    if (s) s->n = n;
    return s;
}

ct_sampler *ct_random_sampler(int64_t n, uint64_t seed) {
    if (!check_length("RandomSampler", n)) return NULL;
    ct_sampler *s = sampler_alloc(SAMPLER_RANDOM, "RandomSampler");
    if (s) {
        s->n = n;
        s->seed = seed;
    }
    return s;
}

ct_sampler *ct_distributed_sampler(int64_t n, int num_replicas, int rank, bool shuffle,
                                   uint64_t seed, bool drop_last) {
    if (!check_length("DistributedSampler", n)) return NULL;
    CT_CHECK_NULL(num_replicas >= 1, CT_ERR_INVALID_ARG,
                  "DistributedSampler: num_replicas should be a positive integer, but got num_replicas=%d",
                  num_replicas);
    CT_CHECK_NULL(rank >= 0 && rank < num_replicas, CT_ERR_INVALID_ARG,
                  "Invalid rank %d, rank should be in the interval [0, %d]", rank, num_replicas - 1);
    ct_sampler *s = sampler_alloc(SAMPLER_DISTRIBUTED, "DistributedSampler");
    if (!s) return NULL;
    s->n = n;
    s->num_replicas = num_replicas;
    s->rank = rank;
    s->shuffle = shuffle;
    s->seed = seed;
    s->drop_last = drop_last;
    /* PyTorch: ceil((N - W) / W) with drop_last when W does not divide N,
     * which is floor(N / W); otherwise ceil(N / W). */
    if (drop_last && n % num_replicas != 0)
        s->num_samples = n / num_replicas;
    else
        s->num_samples = (n + num_replicas - 1) / num_replicas;
    return s;
}

ct_sampler *ct_sampler_new(ct_sampler_fns fns, void *state) {
    CT_CHECK_NULL(fns.len && fns.fill, CT_ERR_INVALID_ARG,
                  "ct_sampler_new: the len and fill functions are required");
    ct_sampler *s = sampler_alloc(SAMPLER_USER, "ct_sampler_new");
    if (s) {
        s->fns = fns;
        s->state = state;
    }
    return s;
}

void ct_sampler_free(ct_sampler *s) {
    if (!s) return;
    if (s->kind == SAMPLER_USER && s->fns.free_state) s->fns.free_state(s->state);
    free(s);
}

/* ---- queries ---------------------------------------------------------------------------- */

int64_t ct_sampler_len(const ct_sampler *s) {
    if (!s) return 0;
    switch (s->kind) {
    case SAMPLER_DISTRIBUTED: return s->num_samples;
    case SAMPLER_USER: return s->fns.len(s->state);
    default: return s->n;
    }
}

void ct_sampler_set_epoch(ct_sampler *s, uint64_t epoch) {
    if (s) s->epoch = epoch;
}

/* Rank r takes every W-th entry of the padded list, starting at r. The
 * padded list repeats the (shuffled) indices cyclically, and drop_last only
 * cuts it, so entry p of it is perm[p mod N]. */
static ct_status distributed_indices(const ct_sampler *s, int64_t *idx) {
    if (s->num_samples == 0) return CT_OK;
    int64_t *perm = malloc((size_t)s->n * sizeof *perm);
    CT_CHECK_STATUS(perm != NULL, CT_ERR_OOM, "DistributedSampler: out of memory for %lld indices",
                    (long long)s->n);
    if (s->shuffle)
        ct_permutation(s->n, s->seed + s->epoch, 0, perm);
    else
        for (int64_t i = 0; i < s->n; i++) perm[i] = i;
    for (int64_t k = 0; k < s->num_samples; k++)
        idx[k] = perm[(s->rank + k * s->num_replicas) % s->n];
    free(perm);
    return CT_OK;
}

ct_status ct_sampler_indices(ct_sampler *s, int64_t *idx) {
    CT_CHECK_OBJ_STATUS(s, "ct_sampler_indices: NULL argument");
    CT_CHECK_STATUS(idx != NULL, CT_ERR_INVALID_ARG, "ct_sampler_indices: NULL argument");
    switch (s->kind) {
    case SAMPLER_SEQUENTIAL:
        for (int64_t i = 0; i < s->n; i++) idx[i] = i;
        return CT_OK;
    case SAMPLER_RANDOM:
        ct_permutation(s->n, s->seed, s->epoch, idx);
        return CT_OK;
    case SAMPLER_DISTRIBUTED:
        return distributed_indices(s, idx);
    case SAMPLER_USER: {
        /* a stale message must not pass for the callback's own */
        ct_clear_error();
        ct_status st = s->fns.fill(s->state, s->epoch, idx);
        if (st != CT_OK && ct_last_status() == CT_OK)
            ct_error_set(st, "Sampler: fill(epoch %llu) failed with %s without setting an error",
                         (unsigned long long)s->epoch, ct_status_str(st));
        return st;
    }
    }
    return ct_error_set(CT_ERR_INTERNAL, "ct_sampler_indices: unknown sampler kind %d", (int)s->kind);
}
