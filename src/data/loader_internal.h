/*
 * loader_internal.h — what the DataLoader's two halves share (internal):
 * fetching one batch (dataloader.c, used by the caller's thread and by the
 * workers alike, so that both produce the same batches) and the worker pool
 * (dataloader_workers.c) that runs fetches on threads and hands the batches
 * back in sampler order.
 */
#ifndef CT_DATA_LOADER_INTERNAL_H
#define CT_DATA_LOADER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctorch/data.h"

/* collate.c: whether a device backend can give page-locked host memory. */
bool ctl_pinning_available(void);

/* Everything a fetch needs besides the indices; fixed for a loader's life. */
typedef struct ctl_fetch {
    ct_dataset *ds;
    uint64_t seed;
    bool pin;
    ct_collate_fn collate;   /* never NULL: ct_default_collate by default */
    void *collate_user;
} ctl_fetch;

/* Fetch dataset[idx[i]] for i < count with their sample keys of `epoch`,
 * and collate them into *batch. On failure returns the code with the
 * message set on this thread, and *failed_index is the dataset index whose
 * get failed, or -1 when collate failed. When gen is not NULL and *gen
 * moves away from my_gen between samples, the fetch is abandoned: it
 * returns CT_ERR_STATE without setting a message (the caller discards it). */
ct_status ctl_fetch_batch(const ctl_fetch *f, const int64_t *idx, int64_t count, uint64_t epoch,
                          ct_sample *batch, int64_t *failed_index, const _Atomic uint64_t *gen,
                          uint64_t my_gen);

/* ---- the worker pool ---------------------------------------------------------- */
typedef struct ctl_pool ctl_pool;

typedef struct ctl_pool_config {
    ctl_fetch fetch;
    int num_workers;
    int64_t batch_size;
    int64_t capacity;                 /* prefetch_factor * num_workers */
    double timeout;                   /* seconds per batch; 0 waits forever */
    ct_worker_init_fn init; void *init_user;
} ctl_pool_config;

/* Start num_workers threads (each runs init first). NULL with an error set
 * if a thread cannot be started. */
ctl_pool *ctl_pool_start(const ctl_pool_config *cfg);
/* Stop the threads and release every undelivered batch. A worker inside a
 * fetch stops at its next sample, and this waits for it, unless the pool
 * has timed out: then the threads are abandoned (detached; a thread still in
 * a get exits when the get returns, and the last one out frees the pool),
 * so this never waits for a hung get. The caller's handle is gone either way. */
void ctl_pool_stop(ctl_pool *p);
/* Whether ctl_pool_next has reported a timeout: the pool may hold a worker
 * stuck in a get, so it must be stopped (abandoned), never reused. */
bool ctl_pool_timed_out(const ctl_pool *p);
/* Start an epoch over indices[0..nidx) (borrowed until ctl_pool_end_epoch or
 * ctl_pool_stop; workers copy a batch's indices when they take it) in
 * nbatches batches, sending the first `capacity` of them to the workers. */
void ctl_pool_begin_epoch(ctl_pool *p, const int64_t *indices, int64_t nidx, int64_t nbatches,
                          uint64_t epoch);
/* The next batch in sampler order (waiting at most cfg.timeout seconds when
 * it is > 0: then CT_ERR_STATE "DataLoader timed out after <t> seconds" and
 * the pool is marked timed out); sends one more batch to the workers. An
 * error captured in a worker is raised here, on the calling thread. Call it
 * at most nbatches times per epoch. */
ct_status ctl_pool_next(ctl_pool *p, ct_sample *batch);
/* End the epoch early or on time: no new work, wait for busy workers, and
 * release every batch that was not delivered. The threads stay up. Not for
 * a pool that timed out (stop it instead). */
void ctl_pool_end_epoch(ctl_pool *p);

#endif /* CT_DATA_LOADER_INTERNAL_H */
