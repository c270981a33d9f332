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
} worker_arg;

struct ctl_pool {
    ctl_pool_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, result_cv, idle_cv;
    pthread_t *threads;
    worker_arg *args;
    int nthreads;             /* threads started */
    bool stop;
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

/* Fetch batch b of the current epoch; called without the lock. */
static void run_task(ctl_pool *p, int w, int64_t b, const int64_t *indices, int64_t nidx,
                     uint64_t epoch, uint64_t gen, slot *out) {
    int64_t start = b * p->cfg.batch_size;
    int64_t count = nidx - start < p->cfg.batch_size ? nidx - start : p->cfg.batch_size;
    int64_t failed = -1;
    memset(out, 0, sizeof *out);
    ct_clear_error();
    out->status = ctl_fetch_batch(&p->cfg.fetch, indices + start, count, epoch, &out->batch, &failed,
                                  &p->gen, gen);
    if (out->status != CT_OK && atomic_load(&p->gen) == gen)
        out->message = caught_message(out->status, w, failed, b);
}

static void release_slot(slot *s) {
    ct_sample_clear(&s->batch);
    free(s->message);
    memset(s, 0, sizeof *s);
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    ctl_pool *p = a->pool;
    const int w = a->id, nw = p->cfg.num_workers;
#ifdef _OPENMP
    omp_set_num_threads(1);   /* as torch.set_num_threads(1) in PyTorch's workers */
#endif
    if (p->cfg.init) p->cfg.init(w, p->cfg.init_user);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next_task[w] >= p->sent) pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop) break;
        int64_t b = p->next_task[w];
        p->next_task[w] += nw;
        uint64_t gen = atomic_load(&p->gen);
        const int64_t *indices = p->indices;
        int64_t nidx = p->nidx;
        uint64_t epoch = p->epoch;
        p->busy++;
        pthread_mutex_unlock(&p->mu);

        slot result;
        run_task(p, w, b, indices, nidx, epoch, gen, &result);

        pthread_mutex_lock(&p->mu);
        p->busy--;
        bool current = !p->stop && atomic_load(&p->gen) == gen;
        if (current) {
            result.ready = true;
            p->slots[b % p->cfg.capacity] = result;
            pthread_cond_broadcast(&p->result_cv);
        }
        if (p->busy == 0) pthread_cond_broadcast(&p->idle_cv);
        if (!current) {   /* abandoned: release outside the lock */
            pthread_mutex_unlock(&p->mu);
            release_slot(&result);
            pthread_mutex_lock(&p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the pool --------------------------------------------------------------------- */

static void pool_destroy(ctl_pool *p) {
    for (int64_t i = 0; p->slots && i < p->cfg.capacity; i++) release_slot(&p->slots[i]);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->result_cv);
    pthread_cond_destroy(&p->idle_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->slots);
    free(p->next_task);
    free(p->threads);
    free(p->args);
    free(p);
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

ctl_pool *ctl_pool_start(const ctl_pool_config *cfg) {
    int nw = cfg->num_workers;
    ctl_pool *p = calloc(1, sizeof *p);
    if (p) {
        p->cfg = *cfg;
        p->threads = calloc((size_t)nw, sizeof *p->threads);
        p->args = calloc((size_t)nw, sizeof *p->args);
        p->next_task = calloc((size_t)nw, sizeof *p->next_task);
        p->slots = calloc((size_t)cfg->capacity, sizeof *p->slots);
    }
    if (!p || !p->threads || !p->args || !p->next_task || !p->slots) {
        if (p) {
            free(p->threads);
            free(p->args);
            free(p->next_task);
            free(p->slots);
            free(p);
        }
        ct_error_set(CT_ERR_OOM, "DataLoader: out of memory starting %d workers", nw);
        return NULL;
    }
    if (!init_sync(p)) {
        free(p->threads);
        free(p->args);
        free(p->next_task);
        free(p->slots);
        free(p);
        ct_error_set(CT_ERR_INTERNAL, "DataLoader: cannot create the workers' mutex and condition variables");
        return NULL;
    }
    for (int w = 0; w < nw; w++) {
        p->next_task[w] = w;
        p->args[w] = (worker_arg){p, w};
        int rc = pthread_create(&p->threads[w], NULL, worker_main, &p->args[w]);
        if (rc != 0) {
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
    pthread_mutex_unlock(&p->mu);
    for (int w = 0; w < p->nthreads; w++) pthread_join(p->threads[w], NULL);
    pool_destroy(p);
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

ct_status ctl_pool_next(ctl_pool *p, double timeout, ct_sample *batch) {
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
