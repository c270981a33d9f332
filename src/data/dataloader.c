/*
 * dataloader.c — torch.utils.data.DataLoader: the options and their checks
 * (PyTorch's messages), epochs, the batch fetch, and iterators that load in
 * the caller's thread (num_workers == 0) or take batches from the worker
 * pool (dataloader_workers.c).
 *
 * SAMPLE KEYS. The random key handed to ct_dataset_get for dataset index i
 * in epoch e of a loader with seed s is
 *
 *   ct_philox4x32(key = s, counter_lo = e, counter_hi = i | 2^63) -> r0..r3
 *   sample key = r0 | r1 << 32
 *
 * (ct_dataloader_sample_key). Bit 63 of the counter keeps these blocks apart
 * from the RandomSampler's shuffle draws, which use the same key and
 * counter_lo (sampler.c). The key depends on nothing else, so augmentations
 * are the same for any num_workers and for a resumed run.
 *
 * EPOCHS. Each iterator runs the loader's current epoch and advances it by
 * one; the sampler gets ct_sampler_set_epoch(epoch) first, so the default
 * RandomSampler reshuffles every epoch and a DistributedSampler follows.
 *
 * TIMEOUTS apply to workers only, as in PyTorch (whose single-process
 * iterator asserts timeout == 0): a thread cannot bound its own call into
 * get, so a timeout with num_workers == 0 is refused when the loader is
 * made. After a timeout the iterator's pool is abandoned, never reused: a
 * persistent loader starts fresh workers with its next iterator.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ctorch/random.h"
#include "loader_internal.h"

struct ct_dataloader {
    ct_dataset *ds;             /* borrowed */
    ct_sampler *sampler;        /* owned */
    ctl_pool_config pool_cfg;   /* fetch settings and worker counts */
    bool drop_last;
    bool persistent_workers;
    uint64_t epoch;
    ct_dataloader_iter *active; /* the live iterator, if any */
    ctl_pool *pool;             /* persistent workers, once started */
};

struct ct_dataloader_iter {
    ct_dataloader *dl;          /* NULL once the loader was freed under it */
    int64_t *indices;
    int64_t nidx, nbatches, pos;
    uint64_t epoch;
    ct_status status;
    bool finished;
    ctl_pool *pool;             /* the loader's (persistent) or this iterator's */
};

uint64_t ct_dataloader_sample_key(uint64_t seed, uint64_t epoch, int64_t index) {
    uint32_t r[4];
    ct_philox4x32(seed, epoch, (uint64_t)index | (UINT64_C(1) << 63), r);
    return (uint64_t)r[0] | (uint64_t)r[1] << 32;
}

/* ---- fetching one batch (both paths) -------------------------------------------- */

static ct_status check_collated(const ct_sample *batch, ct_status st) {
    if (st != CT_OK) {
        if (ct_last_status() == CT_OK)
            ct_error_set(st, "DataLoader: collate_fn failed with %s without setting an error", ct_status_str(st));
        return st;
    }
    if (batch->n < 1 || batch->n > CT_SAMPLE_MAX)
        return ct_error_set(CT_ERR_INVALID_ARG, "DataLoader: collate_fn returned a batch of %d tensors (expected 1 to %d)",
                            batch->n, CT_SAMPLE_MAX);
    for (int k = 0; k < batch->n; k++)
        if (!batch->t[k])
            return ct_error_set(CT_ERR_INTERNAL, "DataLoader: collate_fn returned a NULL tensor %d without an error", k);
    return CT_OK;
}

static bool fetch_abandoned(const _Atomic uint64_t *gen, uint64_t my_gen) {
    return gen && atomic_load(gen) != my_gen;
}

ct_status ctl_fetch_batch(const ctl_fetch *f, const int64_t *idx, int64_t count, uint64_t epoch,
                          ct_sample *batch, int64_t *failed_index, const _Atomic uint64_t *gen,
                          uint64_t my_gen) {
    batch->n = 0;
    *failed_index = -1;
    ct_sample *samples = calloc((size_t)count, sizeof *samples);
    CT_CHECK_STATUS(samples != NULL, CT_ERR_OOM, "DataLoader: out of memory for a batch of %lld samples",
                    (long long)count);
    ct_status st = CT_OK;
    int64_t got = 0;
    for (; got < count; got++) {
        if (fetch_abandoned(gen, my_gen)) {
            st = CT_ERR_STATE;   /* the result is discarded, no message */
            break;
        }
        st = ct_dataset_get(f->ds, idx[got], ct_dataloader_sample_key(f->seed, epoch, idx[got]), &samples[got]);
        if (st != CT_OK) {
            if (ct_last_status() == CT_OK)
                ct_error_set(st, "%s: get(%lld) failed with %s without setting an error",
                             ct_dataset_name(f->ds), (long long)idx[got], ct_status_str(st));
            *failed_index = idx[got];
            break;
        }
    }
    /* checked again after the last get: an abandoned fetch does not collate,
     * so a worker left running after a timeout calls no user code but the
     * get it was in */
    if (st == CT_OK && fetch_abandoned(gen, my_gen)) st = CT_ERR_STATE;
    if (st == CT_OK) {
        ct_clear_error(); /* so that a silent collate_fn gets check_collated's message, not a stale one */
        st = check_collated(batch, f->collate(samples, (int)count, batch, f->pin, f->collate_user));
        if (st != CT_OK) {
            /* a failing collate may have filled part of the batch */
            if (batch->n < 0 || batch->n > CT_SAMPLE_MAX) batch->n = 0;
            ct_sample_clear(batch);
        }
    }
    for (int64_t i = 0; i < got; i++) ct_sample_clear(&samples[i]);
    free(samples);
    return st;
}

/* ---- the loader --------------------------------------------------------------------- */

/* PyTorch's checks in its order; every message is PyTorch's. */
static ct_status check_options(const ct_dataloader_opts *o) {
    CT_CHECK_STATUS(o->num_workers >= 0, CT_ERR_INVALID_ARG,
                    "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.");
    CT_CHECK_STATUS(o->timeout >= 0, CT_ERR_INVALID_ARG, "timeout option should be non-negative");
    CT_CHECK_STATUS(!(o->timeout > 0 && o->num_workers == 0), CT_ERR_INVALID_ARG,
                    "timeout option needs num_workers > 0 (got timeout=%g with num_workers=0; PyTorch's "
                    "single-process iterator asserts timeout == 0)",
                    o->timeout);
    CT_CHECK_STATUS(!(o->num_workers == 0 && o->prefetch_factor != 0), CT_ERR_INVALID_ARG,
                    "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                    "to enable multiprocessing, otherwise set prefetch_factor to None. (got prefetch_factor=%d "
                    "with num_workers=0; 0 means None here)",
                    o->prefetch_factor);
    CT_CHECK_STATUS(o->prefetch_factor >= 0, CT_ERR_INVALID_ARG,
                    "prefetch_factor option should be non-negative (got %d)", o->prefetch_factor);
    CT_CHECK_STATUS(!(o->persistent_workers && o->num_workers == 0), CT_ERR_INVALID_ARG,
                    "persistent_workers option needs num_workers > 0");
    CT_CHECK_STATUS(!(o->sampler && o->shuffle), CT_ERR_INVALID_ARG,
                    "sampler option is mutually exclusive with shuffle");
    CT_CHECK_STATUS(o->batch_size >= 0, CT_ERR_INVALID_ARG,
                    "batch_size should be a positive integer value, but got batch_size=%lld",
                    (long long)o->batch_size);
    return CT_OK;
}

ct_dataloader *ct_dataloader_new(ct_dataset *ds, ct_dataloader_opts o) {
    if (!ds) {   /* a failed dataset constructor already said why */
        ct_sampler_free(o.sampler);
        return NULL;
    }
    if (check_options(&o) != CT_OK) {
        ct_sampler_free(o.sampler);
        return NULL;
    }
    int64_t n = ct_dataset_len(ds);
    ct_sampler *sampler = o.sampler ? o.sampler
                                    : o.shuffle ? ct_random_sampler(n, o.seed) : ct_sequential_sampler(n);
    if (!sampler) return NULL;
    ct_dataloader *dl = calloc(1, sizeof *dl);
    if (!dl) {
        ct_sampler_free(sampler);
        ct_error_set(CT_ERR_OOM, "DataLoader: out of memory");
        return NULL;
    }
    dl->ds = ds;
    dl->sampler = sampler;
    dl->drop_last = o.drop_last;
    dl->persistent_workers = o.persistent_workers;
    int prefetch = o.prefetch_factor ? o.prefetch_factor : 2;
    dl->pool_cfg = (ctl_pool_config){
        .fetch = {.ds = ds,
                  .seed = o.seed,
                  /* without a device PyTorch warns and does not pin */
                  .pin = o.pin_memory && ctl_pinning_available(),
                  .collate = o.collate_fn ? o.collate_fn : ct_default_collate,
                  .collate_user = o.collate_user},
        .num_workers = o.num_workers,
        .batch_size = o.batch_size ? o.batch_size : 1,
        .capacity = (int64_t)prefetch * o.num_workers,
        .timeout = o.timeout,
        .init = o.worker_init_fn,
        .init_user = o.worker_init_user,
    };
    return dl;
}

static void iter_finish(ct_dataloader_iter *it);

void ct_dataloader_free(ct_dataloader *dl) {
    if (!dl) return;
    if (dl->active) {   /* the iterator outlives its loader: end it, leave the struct to its owner */
        ct_dataloader_iter *it = dl->active;
        iter_finish(it);
        if (it->status == CT_OK) it->status = CT_ERR_STATE;
        it->dl = NULL;
    }
    ctl_pool_stop(dl->pool);
    ct_sampler_free(dl->sampler);
    free(dl);
}

static int64_t batches_for(const ct_dataloader *dl, int64_t nidx) {
    int64_t bs = dl->pool_cfg.batch_size;
    return dl->drop_last ? nidx / bs : (nidx + bs - 1) / bs;
}

int64_t ct_dataloader_len(const ct_dataloader *dl) {
    return dl ? batches_for(dl, ct_sampler_len(dl->sampler)) : 0;
}

void ct_dataloader_set_epoch(ct_dataloader *dl, uint64_t epoch) {
    if (dl) dl->epoch = epoch;
}

uint64_t ct_dataloader_epoch(const ct_dataloader *dl) { return dl ? dl->epoch : 0; }

/* ---- iterators ---------------------------------------------------------------------- */

/* The epoch's indices from the sampler. */
static ct_status iter_indices(ct_dataloader_iter *it, ct_dataloader *dl) {
    ct_sampler_set_epoch(dl->sampler, it->epoch);
    int64_t n = ct_sampler_len(dl->sampler);
    CT_CHECK_STATUS(n >= 0, CT_ERR_INVALID_ARG, "DataLoader: the sampler's length is negative (%lld)", (long long)n);
    it->indices = malloc((size_t)(n ? n : 1) * sizeof *it->indices);
    CT_CHECK_STATUS(it->indices != NULL, CT_ERR_OOM, "DataLoader: out of memory for %lld indices", (long long)n);
    CT_TRY(ct_sampler_indices(dl->sampler, it->indices));
    it->nidx = n;
    it->nbatches = batches_for(dl, n);
    return CT_OK;
}

/* Workers for this epoch: the persistent pool (started once) or a new one. */
static ct_status iter_workers(ct_dataloader_iter *it, ct_dataloader *dl) {
    if (dl->persistent_workers) {
        if (!dl->pool) dl->pool = ctl_pool_start(&dl->pool_cfg);
        it->pool = dl->pool;
    } else {
        it->pool = ctl_pool_start(&dl->pool_cfg);
    }
    if (!it->pool) return ct_last_status();
    ctl_pool_begin_epoch(it->pool, it->indices, it->nidx, it->nbatches, it->epoch);
    return CT_OK;
}

ct_dataloader_iter *ct_dataloader_iter_new(ct_dataloader *dl) {
    if (!dl) return NULL;
    CT_CHECK_NULL(dl->active == NULL, CT_ERR_STATE,
                  "DataLoader: an iterator of this loader is still alive (at batch %lld of epoch %llu); "
                  "free it with ct_dataloader_iter_free before creating another",
                  (long long)dl->active->pos, (unsigned long long)dl->active->epoch);
    ct_dataloader_iter *it = calloc(1, sizeof *it);
    CT_CHECK_NULL(it != NULL, CT_ERR_OOM, "DataLoader: out of memory for an iterator");
    it->dl = dl;
    it->epoch = dl->epoch;
    ct_status st = iter_indices(it, dl);
    if (st == CT_OK && dl->pool_cfg.num_workers > 0) st = iter_workers(it, dl);
    if (st != CT_OK) {
        free(it->indices);
        free(it);
        return NULL;
    }
    dl->epoch++;
    dl->active = it;
    return it;
}

/* Stop the epoch's work: the workers drop what they have not delivered.
 * A persistent pool is kept for the next epoch unless it timed out; a pool
 * that timed out is stopped without waiting for its stuck worker. */
static void iter_finish(ct_dataloader_iter *it) {
    if (it->finished) return;
    it->finished = true;
    if (!it->pool) return;
    bool persistent = it->dl && it->pool == it->dl->pool;
    if (persistent && !ctl_pool_timed_out(it->pool)) {
        ctl_pool_end_epoch(it->pool);
    } else {
        if (persistent) it->dl->pool = NULL;
        ctl_pool_stop(it->pool);
    }
    it->pool = NULL;
}

static ct_status next_in_caller(ct_dataloader_iter *it, ct_sample *batch) {
    const ct_dataloader *dl = it->dl;
    int64_t bs = dl->pool_cfg.batch_size, start = it->pos * bs;
    int64_t count = it->nidx - start < bs ? it->nidx - start : bs;
    int64_t failed;
    return ctl_fetch_batch(&dl->pool_cfg.fetch, it->indices + start, count, it->epoch, batch, &failed, NULL, 0);
}

bool ct_dataloader_next(ct_dataloader_iter *it, ct_sample *batch) {
    if (batch) batch->n = 0;
    if (!it || !batch) {
        if (it && !batch) ct_error_set(CT_ERR_INVALID_ARG, "ct_dataloader_next: NULL batch");
        return false;
    }
    if (!it->dl) {
        ct_error_set(CT_ERR_STATE, "DataLoader: the loader of this iterator was freed");
        return false;
    }
    if (it->status != CT_OK || it->pos >= it->nbatches) {
        iter_finish(it);
        return false;
    }
    ct_status st = it->pool ? ctl_pool_next(it->pool, batch) : next_in_caller(it, batch);
    if (st != CT_OK) {
        it->status = st;
        iter_finish(it);   /* the message stays: workers only touch their own */
        return false;
    }
    it->pos++;
    return true;
}

ct_status ct_dataloader_iter_status(const ct_dataloader_iter *it) { return it ? it->status : CT_OK; }

int64_t ct_dataloader_iter_pos(const ct_dataloader_iter *it) { return it ? it->pos : 0; }

void ct_dataloader_iter_free(ct_dataloader_iter *it) {
    if (!it) return;
    iter_finish(it);
    if (it->dl) it->dl->active = NULL;
    free(it->indices);
    free(it);
}
