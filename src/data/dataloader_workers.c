/*
 * dataloader_workers.c — the DataLoader's worker threads, PyTorch's
 * _MultiProcessingDataLoaderIter with threads instead of processes.
 *
 * Batches of an epoch are numbered by send index b = 0, 1, … in sampler
 * order, and batch b belongs to worker b mod W (PyTorch's round-robin over
 * its workers). At most `capacity` = prefetch_factor * W batches are sent
 * and not yet delivered: `sent` batches are released to the workers, and
 * each delivery releases one more. Worker w simply processes its batches
 * w, w + W, … while they are below `sent`, so no task queue is needed.
 *
 * A finished batch b is kept in slot b mod capacity until its turn, so
 * delivery follows sampler order whatever order the workers finish in; the
 * capacity bound guarantees that the slots of outstanding batches differ.
 * An error in a worker travels in its slot (code and copied message, as the
 * message store is per thread) and is raised on the caller's thread at that
 * batch's turn.
 *
 * Ending an epoch early bumps a generation counter: a worker drops the
 * result of a task from an old generation, and stops fetching its samples
 * at the next sample boundary. One mutex guards the pool; workers wait on
 * work_cv, the caller on result_cv (deliveries) and idle_cv (draining).
 *
 * TIMEOUTS AND HUNG WORKERS. A thread cannot be killed safely (it may hold
 * a lock of the allocator, of stdio, of the dataset), so a worker stuck in
 * a get is abandoned instead: once ctl_pool_next has reported a timeout,
 * ctl_pool_stop marks the pool abandoned, detaches its threads and returns
 * without waiting. The pool is reference-counted (the owner plus one per
 * thread); each thread drops its reference when it exits, and the last one
 * out frees the pool, so nothing the caller frees is touched afterwards:
 * a worker copies its batch's indices when it takes the batch, and
 * undelivered batches are released by ctl_pool_stop itself. What the
 * abandoned thread still uses is the dataset (and the worker_init_fn's or
 * collate function's state) until its get or init returns; `abandoned_threads` counts such threads
 * for ct_dataloader_abandoned_workers. Without a timeout, stopping still
 * joins every thread, so a loader freed normally leaves nothing running.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_condattr_setclock, clock_gettime */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "loader_internal.h"

typedef struct slot {
    bool ready;
    ct_status status;
    ct_sample batch;
    char *message;            /* "Caught …" when status != CT_OK (malloc'd) */
} slot;

typedef struct worker_arg {
    ctl_pool *pool;
    int id;
    int64_t *idx;             /* batch_size entries: the indices of the task at hand */
} worker_arg;

struct ctl_pool {
    ctl_pool_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, result_cv, idle_cv;
    pthread_t *threads;
    worker_arg *args;
    int64_t *idx_bufs;        /* the workers' idx arrays, one block */
    int nthreads;             /* threads started */
    int alive;                /* threads that have not exited yet */
    _Atomic int refs;         /* the owner's, plus one per thread that has not exited */
    bool stop;
    bool timed_out;           /* ctl_pool_next gave up on a batch */
    bool abandoned;           /* stopped without waiting: threads count in abandoned_threads */
    _Atomic uint64_t gen;     /* changes when an epoch's work is abandoned */
    /* the epoch: changed only while no worker is busy */
    const int64_t *indices;
    int64_t nidx, nbatches;
    uint64_t epoch;
    int64_t sent, rcvd;
    int64_t *next_task;       /* per worker: the send index it processes next */
    int busy;                 /* workers inside a fetch */
    slot *slots;              /* capacity entries */
};

/* Threads of abandoned pools that have not exited yet (all loaders). */
static atomic_int abandoned_threads;

int ct_dataloader_abandoned_workers(void) { return atomic_load(&abandoned_threads); }

/* ---- the worker thread ----------------------------------------------------------- */

/* The message a failed task carries to the caller's thread. */
static char *caught_message(ct_status st, int worker, int64_t failed_index, int64_t batch) {
    const char *orig = ct_last_status() != CT_OK ? ct_last_error() : "(no message)";
    char where[64];
    if (failed_index >= 0)
        snprintf(where, sizeof where, "sample %lld", (long long)failed_index);
    else
        snprintf(where, sizeof where, "batch %lld", (long long)batch);
    const char *fmt = "Caught %s in DataLoader worker %d (%s): %s";
    int len = snprintf(NULL, 0, fmt, ct_status_str(st), worker, where, orig);
    char *msg = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (msg) snprintf(msg, (size_t)len + 1, fmt, ct_status_str(st), worker, where, orig);
    return msg;   /* NULL: the caller reports the code alone */
}

/* What a worker needs of its task, copied under the lock so that the
 * fetch reads nothing the caller may free meanwhile. */
typedef struct task {
    int64_t b, count;
    uint64_t epoch, gen;
} task;

/* Take the worker's next task (lock held, p->next_task[w] < p->sent). */
static task take_task(ctl_pool *p, worker_arg *a) {
    task t = {.b = p->next_task[a->id], .epoch = p->epoch, .gen = atomic_load(&p->gen)};
    p->next_task[a->id] += p->cfg.num_workers;
    int64_t start = t.b * p->cfg.batch_size;
    t.count = p->nidx - start < p->cfg.batch_size ? p->nidx - start : p->cfg.batch_size;
    memcpy(a->idx, p->indices + start, (size_t)t.count * sizeof *a->idx);
    return t;
}

/* Fetch the task's batch; called without the lock. */
static void run_task(ctl_pool *p, const worker_arg *a, const task *t, slot *out) {
    int64_t failed = -1;
    memset(out, 0, sizeof *out);
    ct_clear_error();
    out->status = ctl_fetch_batch(&p->cfg.fetch, a->idx, t->count, t->epoch, &out->batch, &failed, &p->gen,
                                  t->gen);
    if (out->status != CT_OK && atomic_load(&p->gen) == t->gen)
        out->message = caught_message(out->status, a->id, failed, t->b);
}

static void release_slot(slot *s) {
    ct_sample_clear(&s->batch);
    free(s->message);
    memset(s, 0, sizeof *s);
}

static void pool_destroy(ctl_pool *p);

/* Drop one reference; the last one frees the pool. */
static void pool_unref(ctl_pool *p) {
    if (atomic_fetch_sub(&p->refs, 1) == 1) pool_destroy(p);
}

/* Hand a finished task to the caller, or drop it if its epoch was ended
 * (lock held on entry and on return). */
static void finish_task(ctl_pool *p, const task *t, slot *result) {
    p->busy--;
    bool current = !p->stop && atomic_load(&p->gen) == t->gen;
    if (current) {
        result->ready = true;
        p->slots[t->b % p->cfg.capacity] = *result;
        pthread_cond_broadcast(&p->result_cv);
    }
    if (p->busy == 0) pthread_cond_broadcast(&p->idle_cv);
    if (!current) {   /* abandoned: release outside the lock */
        pthread_mutex_unlock(&p->mu);
        release_slot(result);
        pthread_mutex_lock(&p->mu);
    }
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    ctl_pool *p = a->pool;
    const int w = a->id;
#ifdef _OPENMP
    omp_set_num_threads(1);   /* as torch.set_num_threads(1) in PyTorch's workers */
#endif
    if (p->cfg.init) p->cfg.init(w, p->cfg.init_user);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next_task[w] >= p->sent) pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop) break;
        task t = take_task(p, a);
        p->busy++;
        pthread_mutex_unlock(&p->mu);

        slot result;
        run_task(p, a, &t, &result);

        pthread_mutex_lock(&p->mu);
        finish_task(p, &t, &result);
    }
    /* done with the dataset: an abandoned thread stops counting here */
    p->alive--;
    if (p->abandoned) atomic_fetch_sub(&abandoned_threads, 1);
    pthread_mutex_unlock(&p->mu);
    pool_unref(p);
    return NULL;
}

/* ---- the pool --------------------------------------------------------------------- */

/* The pool's memory (its slots already released). */
static void pool_free(ctl_pool *p) {
    free(p->slots);
    free(p->next_task);
    free(p->threads);
    free(p->args);
    free(p->idx_bufs);
    free(p);
}

static void pool_destroy(ctl_pool *p) {
    for (int64_t i = 0; i < p->cfg.capacity; i++) release_slot(&p->slots[i]);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->result_cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_mutex_destroy(&p->mu);
    pool_free(p);
}

/* result_cv measures timeouts on the monotonic clock, immune to clock changes. */
static bool init_sync(ctl_pool *p) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_mutex_init(&p->mu, NULL) == 0;
    if (ok && pthread_cond_init(&p->result_cv, &attr) != 0) {
        pthread_mutex_destroy(&p->mu);
        ok = false;
    }
    if (ok && pthread_cond_init(&p->work_cv, NULL) != 0) {
        pthread_cond_destroy(&p->result_cv);
        pthread_mutex_destroy(&p->mu);
        ok = false;
    }
    if (ok && pthread_cond_init(&p->idle_cv, NULL) != 0) {
        pthread_cond_destroy(&p->work_cv);
        pthread_cond_destroy(&p->result_cv);
        pthread_mutex_destroy(&p->mu);
        ok = false;
    }
    pthread_condattr_destroy(&attr);
    return ok;
}

/* The pool's memory, without threads or synchronisation; NULL on OOM. */
static ctl_pool *pool_alloc(const ctl_pool_config *cfg) {
    int nw = cfg->num_workers;
    if (cfg->batch_size > (int64_t)(SIZE_MAX / sizeof(int64_t) / (size_t)nw)) return NULL;
    ctl_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cfg = *cfg;
    p->threads = calloc((size_t)nw, sizeof *p->threads);
    p->args = calloc((size_t)nw, sizeof *p->args);
    p->idx_bufs = malloc((size_t)nw * (size_t)cfg->batch_size * sizeof *p->idx_bufs);
    p->next_task = calloc((size_t)nw, sizeof *p->next_task);
    p->slots = calloc((size_t)cfg->capacity, sizeof *p->slots);
    if (!p->threads || !p->args || !p->idx_bufs || !p->next_task || !p->slots) {
        pool_free(p);
        return NULL;
    }
    for (int w = 0; w < nw; w++) {
        p->next_task[w] = w;
        p->args[w] = (worker_arg){p, w, p->idx_bufs + (size_t)w * (size_t)cfg->batch_size};
    }
    return p;
}

ctl_pool *ctl_pool_start(const ctl_pool_config *cfg) {
    int nw = cfg->num_workers;
    ctl_pool *p = pool_alloc(cfg);
    if (!p) {
        ct_error_set(CT_ERR_OOM, "DataLoader: out of memory starting %d workers", nw);
        return NULL;
    }
    if (!init_sync(p)) {
        pool_free(p);
        ct_error_set(CT_ERR_INTERNAL, "DataLoader: cannot create the workers' mutex and condition variables");
        return NULL;
    }
    atomic_init(&p->refs, 1);
    for (int w = 0; w < nw; w++) {
        /* the thread's reference exists before it runs; a thread that
         * exits at once then cannot free the pool under this loop */
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->refs, 1);
        p->alive++;
        pthread_mutex_unlock(&p->mu);
        int rc = pthread_create(&p->threads[w], NULL, worker_main, &p->args[w]);
        if (rc != 0) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_sub(&p->refs, 1);
            p->alive--;
            pthread_mutex_unlock(&p->mu);
            ctl_pool_stop(p);
            ct_error_set(rc == EAGAIN ? CT_ERR_OOM : CT_ERR_INTERNAL,
                         "DataLoader: cannot start worker thread %d of %d: %s", w, nw, strerror(rc));
            return NULL;
        }
        p->nthreads = w + 1;
    }
    return p;
}

void ctl_pool_stop(ctl_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->work_cv);
    /* after a timeout a worker may never come back: leave the threads to
     * finish on their own (see TIMEOUTS AND HUNG WORKERS) */
    bool abandon = p->timed_out;
    if (abandon) {
        p->abandoned = true;
        atomic_fetch_add(&abandoned_threads, p->alive);
    }
    pthread_mutex_unlock(&p->mu);
    for (int w = 0; w < p->nthreads; w++) {
        if (abandon)
            pthread_detach(p->threads[w]);
        else
            pthread_join(p->threads[w], NULL);
    }
    /* no worker stores into a slot once stop is set: they are ours */
    for (int64_t i = 0; i < p->cfg.capacity; i++) release_slot(&p->slots[i]);
    pool_unref(p);
}

bool ctl_pool_timed_out(const ctl_pool *p) {
    /* only the owner's thread sets the flag (ctl_pool_next), and only it asks */
    return p->timed_out;
}

void ctl_pool_begin_epoch(ctl_pool *p, const int64_t *indices, int64_t nidx, int64_t nbatches,
                          uint64_t epoch) {
    pthread_mutex_lock(&p->mu);
    p->indices = indices;
    p->nidx = nidx;
    p->nbatches = nbatches;
    p->epoch = epoch;
    p->rcvd = 0;
    for (int w = 0; w < p->cfg.num_workers; w++) p->next_task[w] = w;
    p->sent = nbatches < p->cfg.capacity ? nbatches : p->cfg.capacity;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
}

/* Absolute monotonic deadline `seconds` from now (at most ~30 years, so
 * that the conversion to time_t cannot overflow). */
static struct timespec deadline_after(double seconds) {
    if (seconds > 1e9) seconds = 1e9;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double whole = (double)(int64_t)seconds;
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

ct_status ctl_pool_next(ctl_pool *p, ct_sample *batch) {
    const double timeout = p->cfg.timeout;
    batch->n = 0;
    pthread_mutex_lock(&p->mu);
    if (p->rcvd >= p->nbatches) {
        pthread_mutex_unlock(&p->mu);
        return ct_error_set(CT_ERR_INTERNAL, "DataLoader: no batch left in this epoch");
    }
    slot *s = &p->slots[p->rcvd % p->cfg.capacity];
    struct timespec deadline;
    if (timeout > 0) deadline = deadline_after(timeout);
    while (!s->ready) {
        if (timeout > 0) {
            int rc = pthread_cond_timedwait(&p->result_cv, &p->mu, &deadline);
            if (rc == ETIMEDOUT && !s->ready) {
                p->timed_out = true;
                pthread_mutex_unlock(&p->mu);
                return ct_error_set(CT_ERR_STATE, "DataLoader timed out after %g seconds", timeout);
            }
        } else {
            pthread_cond_wait(&p->result_cv, &p->mu);
        }
    }
    slot taken = *s;
    memset(s, 0, sizeof *s);
    p->rcvd++;
    if (p->sent < p->nbatches) {
        p->sent++;
        pthread_cond_broadcast(&p->work_cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (taken.status != CT_OK) {
        ct_status st = taken.status;
        if (taken.message)
            ct_error_set(st, "%s", taken.message);
        else
            ct_error_set(st, "Caught %s in DataLoader worker %lld", ct_status_str(st),
                         (long long)((p->rcvd - 1) % p->cfg.num_workers));
        release_slot(&taken);
        return st;
    }
    *batch = taken.batch;
    return CT_OK;
}

void ctl_pool_end_epoch(ctl_pool *p) {
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1);
    p->sent = 0;   /* no worker finds new work */
    for (int w = 0; w < p->cfg.num_workers; w++) p->next_task[w] = w;
    while (p->busy > 0) pthread_cond_wait(&p->idle_cv, &p->mu);
    p->indices = NULL;
    p->nidx = p->nbatches = p->rcvd = 0;
    pthread_mutex_unlock(&p->mu);
    /* every worker now waits for work, so the slots are the caller's alone */
    for (int64_t i = 0; i < p->cfg.capacity; i++) release_slot(&p->slots[i]);
}
