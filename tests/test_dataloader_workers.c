/*
 * test_dataloader_workers.c — the DataLoader's worker threads: at most
 * prefetch_factor * num_workers batches ahead, delivery in sampler order
 * when workers finish out of order, errors captured in a worker and raised
 * on the caller's thread, timeouts, persistent and per-epoch workers,
 * iterators ended early or outliving their loader, and pinned batches.
 *
 * Some tests make the dataset sleep so that workers finish in a known order
 * or so that a timeout fires. Only the timeout tests measure time, with
 * wide margins: a timeout of 0.2 s must end the wait within 1 s although
 * the get takes 3 s, or never returns (that case runs in a child process,
 * which must also exit while its worker is still blocked).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime, posix_spawn, kill */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "dataloader_testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read every batch, checking that after k + 1 deliveries no index of batch
 * k + 1 + capacity or later was fetched. */
static void check_prefetch(int workers, int prefetch) {
    const int64_t bs = 2, cap = (int64_t)workers * (prefetch ? prefetch : 2);   /* 0 means 2 */
    test_set ts;
    test_set_init(&ts, 40, 1);
    ts.sleep_us = 300;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = bs, .num_workers = workers,
                                                                   .prefetch_factor = prefetch});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    int64_t k = 0;
    while (ct_dataloader_next(it, &b)) {
        CT_EXPECT_INT_EQ(((const int64_t *)ct_data_ptr(b.t[1]))[0], k * bs);
        if (k == 0) {
            /* the workers fill the prefetch window, and no more */
            int64_t want = (1 + cap) * bs - 1;
            double give_up = now_s() + 20;
            while (atomic_load(&ts.max_index) < want && now_s() < give_up) sleep_us(200);
            CT_EXPECT_INT_EQ(atomic_load(&ts.max_index), want);
            sleep_us(20000);
            CT_EXPECT_INT_EQ(atomic_load(&ts.max_index), want);
        }
        long long seen = atomic_load(&ts.max_index);
        CT_EXPECT_MSG(seen <= (k + 1 + cap) * bs - 1,
                      "W=%d prefetch=%d: after %lld batches index %lld was fetched (limit %lld)", workers,
                      prefetch, (long long)(k + 1), seen, (long long)((k + 1 + cap) * bs - 1));
        ct_sample_clear(&b);
        k++;
    }
    CT_EXPECT_INT_EQ(k, 20);
    CT_EXPECT_INT_EQ(atomic_load(&ts.gets), 40);
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

static void test_prefetch_bound(void) {
    check_prefetch(2, 0);   /* default prefetch_factor 2 */
    check_prefetch(3, 1);
    check_prefetch(1, 3);
}

static void test_in_order_delivery(void) {
    test_set ts;
    test_set_init(&ts, 12, 2);
    ts.slow_mod = 3;          /* worker 0 gets indices 0, 3, 6, 9: the slow ones */
    ts.slow_us = 40000;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 1, .num_workers = 3});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    int64_t k = 0;
    while (ct_dataloader_next(it, &b)) {
        expect_batch(&b, &k, 1, 2, 0, 0);
        ct_sample_clear(&b);
        k++;
    }
    CT_EXPECT_INT_EQ(k, 12);
    /* the workers did finish out of order: index 1 and 2 before index 0 */
    CT_EXPECT(ts.done_order[1] < ts.done_order[0] && ts.done_order[2] < ts.done_order[0]);
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

/* Batches before the failing one arrive, then the error with its code. */
static void expect_worker_failure(int64_t fail_index, bool persistent, const char *want) {
    test_set ts;
    test_set_init(&ts, 12, 2);
    ts.fail_index = fail_index;
    ts.fail_code = CT_ERR_IO;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 3, .num_workers = 2,
                                                                   .persistent_workers = persistent});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    int64_t good = 0;
    while (ct_dataloader_next(it, &b)) {
        ct_sample_clear(&b);
        good++;
    }
    CT_EXPECT_INT_EQ(good, fail_index / 3);
    CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_IO);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_ERR_IO);
    CT_EXPECT_STR_EQ(ct_last_error(), want);
    ct_clear_error();
    CT_EXPECT(!ct_dataloader_next(it, &b));                          /* finished for good */
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    CT_EXPECT_INT_EQ(ct_dataloader_iter_pos(it), good);
    ct_dataloader_iter_free(it);
    /* the next epoch works again (the same workers when persistent) */
    ts.fail_index = -1;
    int64_t y[16];
    CT_EXPECT_INT_EQ(epoch_labels(dl, y, 16), 12);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

static void test_worker_error(void) {
    expect_worker_failure(7, false, "Caught CT_ERR_IO in DataLoader worker 0 (sample 7): disk on fire at 7");
    expect_worker_failure(4, true, "Caught CT_ERR_IO in DataLoader worker 1 (sample 4): disk on fire at 4");
    expect_worker_failure(0, false, "Caught CT_ERR_IO in DataLoader worker 0 (sample 0): disk on fire at 0");
}

static void test_caller_thread_error(void) {
    test_set ts;
    test_set_init(&ts, 12, 2);
    ts.fail_index = 7;
    ts.fail_code = CT_ERR_FORMAT;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 3});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    int64_t good = 0;
    while (ct_dataloader_next(it, &b)) {
        ct_sample_clear(&b);
        good++;
    }
    CT_EXPECT_INT_EQ(good, 2);
    CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_FORMAT);
    CT_EXPECT_STR_EQ(ct_last_error(), "disk on fire at 7");            /* as PyTorch: the original error */
    ct_clear_error();
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

static void test_collate_error_in_worker(void) {
    test_set ts;
    test_set_init(&ts, 12, 2);
    ts.short_index = 5;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 3, .num_workers = 2});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    CT_EXPECT(ct_dataloader_next(it, &b));
    ct_sample_clear(&b);
    CT_EXPECT(!ct_dataloader_next(it, &b));
    CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_SHAPE);
    CT_EXPECT_STR_EQ(ct_last_error(), "Caught CT_ERR_SHAPE in DataLoader worker 1 (batch 1): default_collate: "
                                      "field 0: stack expects each tensor to be equal size, but got [2] at "
                                      "entry 0 and [1] at entry 2");
    ct_clear_error();
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

/* Wait until no worker abandoned by a timeout is left (they may still use
 * the dataset until then, see TIMEOUTS in ctorch/data.h). */
static void wait_abandoned_gone(double limit_s) {
    double give_up = now_s() + limit_s;
    while (ct_dataloader_abandoned_workers() > 0 && now_s() < give_up) sleep_us(5000);
    CT_EXPECT_INT_EQ(ct_dataloader_abandoned_workers(), 0);
}

/* A get that takes 3 s and a timeout of 0.2 s: the error comes at the
 * timeout, not when the get returns, and ending the iteration and freeing
 * the loader do not wait for the sleeping workers. A persistent loader then
 * runs its next epoch on new workers. */
static void test_timeout_bounds_the_wait(void) {
    test_set ts;
    test_set_init(&ts, 4, 1);
    ts.sleep_us = 3000000;
    ct_dataset *ds = test_set_dataset(&ts);
    for (int persistent = 0; persistent <= 1; persistent++) {
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){
            .batch_size = 1, .num_workers = 2, .timeout = 0.2, .persistent_workers = persistent});
        ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
        ct_sample b;
        double t0 = now_s();
        CT_EXPECT(!ct_dataloader_next(it, &b));
        double waited = now_s() - t0;
        CT_EXPECT_MSG(waited >= 0.19 && waited < 1.0, "persistent=%d: next returned after %.3f s (timeout 0.2 s)",
                      persistent, waited);
        CT_EXPECT_ERROR(CT_ERR_STATE, "DataLoader timed out after 0.2 seconds");
        CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_STATE);
        CT_EXPECT_INT_EQ(b.n, 0);
        CT_EXPECT(ct_dataloader_abandoned_workers() >= 1);   /* the sleeping ones are left behind */
        t0 = now_s();
        ct_dataloader_iter_free(it);
        if (persistent) {
            /* the timed-out workers are not reused: new ones load this epoch */
            ts.sleep_us = 0;
            int64_t y[4];
            CT_EXPECT_INT_EQ(epoch_labels(dl, y, 4), 4);
            for (int i = 0; i < 4; i++) CT_EXPECT_INT_EQ(y[i], i);
            ts.sleep_us = 3000000;
        }
        ct_dataloader_free(dl);
        double freed = now_s() - t0;
        CT_EXPECT_MSG(freed < 0.5, "persistent=%d: freeing the iterator and the loader took %.3f s", persistent,
                      freed);
    }
    /* the abandoned gets return after their 3 s and their threads exit */
    wait_abandoned_gone(20);
    ct_dataset_free(ds);

    /* a generous timeout never fires */
    test_set_init(&ts, 4, 1);
    ts.sleep_us = 2000;
    ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 1, .num_workers = 2, .timeout = 60});
    int64_t y[4];
    CT_EXPECT_INT_EQ(epoch_labels(dl, y, 4), 4);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

/* ---- a get that never returns, in a child process ----------------------------------- */

static pthread_mutex_t hang_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cv = PTHREAD_COND_INITIALIZER;

static int64_t hung_len(void *state) { return 8; }

/* Blocks for good: nothing ever signals hang_cv. */
static ct_status hung_get(void *state, int64_t i, uint64_t key, ct_sample *out) {
    pthread_mutex_lock(&hang_mu);
    for (;;) pthread_cond_wait(&hang_cv, &hang_mu);
    return CT_OK;
}

#define HUNG_CHILD_ARG "--hung-worker-child"

/* The child's whole run: the timeout comes in time, the frees return, and
 * main returns with the hung workers still blocked, which must not stop
 * exit(). The dataset is never freed: its get is still running. Returns the
 * exit code (problems are printed). */
static int hung_child(void) {
    int bad = 0;
    ct_dataset *ds = ct_dataset_new("Hung", (ct_dataset_fns){hung_len, hung_get, NULL}, NULL);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 1, .num_workers = 2, .timeout = 0.2});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    double t0 = now_s();
    bool got = ct_dataloader_next(it, &b);
    double waited = now_s() - t0;
    if (got || waited >= 1.0 || ct_last_status() != CT_ERR_STATE ||
        strcmp(ct_last_error(), "DataLoader timed out after 0.2 seconds") != 0) {
        fprintf(stderr, "hung child: next returned %d after %.3f s with %s: %s\n", got, waited,
                ct_status_str(ct_last_status()), ct_last_error());
        bad = 1;
    }
    t0 = now_s();
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    double freed = now_s() - t0;
    if (freed >= 0.5) {
        fprintf(stderr, "hung child: freeing the iterator and the loader took %.3f s\n", freed);
        bad = 1;
    }
    /* both workers were left behind; one that had not reached its get yet
     * may have exited already, the hung one never does */
    int left = ct_dataloader_abandoned_workers();
    if (left < 1 || left > 2) {
        fprintf(stderr, "hung child: %d abandoned workers, expected 1 or 2\n", left);
        bad = 1;
    }
    return bad;
}

/* Runs hung_child in a new process and requires it to exit, cleanly and
 * promptly, while its workers are blocked; kills it after 20 s otherwise. */
static void test_timeout_hung_worker(void) {
    extern char **environ;
    char *argv[] = {"/proc/self/exe", HUNG_CHILD_ARG, NULL};
    pid_t pid;
    double t0 = now_s();
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    CT_EXPECT_MSG(rc == 0, "posix_spawn: %s", strerror(rc));
    if (rc != 0) return;
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - t0 < 20) sleep_us(10000);
    double took = now_s() - t0;
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        CT_EXPECT_MSG(false, "the child with a hung worker did not exit within 20 s (killed)");
        return;
    }
    CT_EXPECT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)", status);
    CT_EXPECT_MSG(took < 10, "the child took %.1f s to exit", took);
}

typedef struct init_log {
    atomic_int calls;
    atomic_int ids;           /* bit w set when worker w started */
    atomic_int omp_not_one;   /* workers whose OpenMP thread count was not 1 */
} init_log;

static void log_init(int worker_id, void *user) {
    init_log *log = user;
    atomic_fetch_add(&log->calls, 1);
    atomic_fetch_or(&log->ids, 1 << worker_id);
#ifdef _OPENMP
    if (omp_get_max_threads() != 1) atomic_fetch_add(&log->omp_not_one, 1);
#endif
}

static void test_persistent_workers(void) {
    test_set ts;
    test_set_init(&ts, 23, 1);
    ct_dataset *ds = test_set_dataset(&ts);
    for (int persistent = 0; persistent <= 1; persistent++) {
        init_log log = {0};
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){
            .batch_size = 4, .num_workers = 2, .shuffle = true, .seed = 3, .persistent_workers = persistent,
            .worker_init_fn = log_init, .worker_init_user = &log});
        int64_t y[3][32];
        for (int e = 0; e < 3; e++) {
            CT_EXPECT_INT_EQ(epoch_labels(dl, y[e], 32), 23);
            CT_EXPECT(is_permutation(y[e], 23));
        }
        CT_EXPECT(memcmp(y[0], y[1], 23 * sizeof y[0][0]) != 0);
        CT_EXPECT_INT_EQ(atomic_load(&log.calls), persistent ? 2 : 6);
        CT_EXPECT_INT_EQ(atomic_load(&log.ids), 3);
        CT_EXPECT_INT_EQ(atomic_load(&log.omp_not_one), 0);
        ct_dataloader_free(dl);
        CT_EXPECT_INT_EQ(atomic_load(&log.calls), persistent ? 2 : 6);
    }
    ct_dataset_free(ds);
}

static void test_early_iterator_free(void) {
    test_set ts;
    test_set_init(&ts, 200, 4);
    ts.sleep_us = 200;
    ct_dataset *ds = test_set_dataset(&ts);
    for (int persistent = 0; persistent <= 1; persistent++) {
        init_log log = {0};
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){
            .batch_size = 2, .num_workers = 3, .prefetch_factor = 4, .persistent_workers = persistent,
            .worker_init_fn = log_init, .worker_init_user = &log});
        for (int stop_after = 0; stop_after < 4; stop_after++) {
            ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
            ct_sample b;
            for (int k = 0; k < stop_after && ct_dataloader_next(it, &b); k++) {
                int64_t idx[2] = {2 * k, 2 * k + 1};
                expect_batch(&b, idx, 2, 4, 0, (uint64_t)stop_after);
                ct_sample_clear(&b);
            }
            ct_dataloader_iter_free(it);   /* mid-epoch, with batches in flight and waiting */
        }
        int64_t y[256];
        CT_EXPECT_INT_EQ(epoch_labels(dl, y, 256), 200);   /* a full epoch afterwards */
        for (int i = 0; i < 200; i++) CT_EXPECT_INT_EQ(y[i], i);
        CT_EXPECT_INT_EQ(ct_dataloader_epoch(dl), 5);
        CT_EXPECT_INT_EQ(atomic_load(&log.calls), persistent ? 3 : 15);
        ct_dataloader_free(dl);
    }
    ct_dataset_free(ds);
}

static void test_loader_freed_under_iterator(void) {
    test_set ts;
    test_set_init(&ts, 20, 1);
    ct_dataset *ds = test_set_dataset(&ts);
    for (int w = 0; w <= 2; w++) {
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 2, .num_workers = w,
                                                                       .persistent_workers = w == 2});
        ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
        ct_sample b;
        CT_EXPECT(ct_dataloader_next(it, &b));
        ct_sample_clear(&b);
        ct_dataloader_free(dl);
        CT_EXPECT(!ct_dataloader_next(it, &b));
        CT_EXPECT_ERROR(CT_ERR_STATE, "DataLoader: the loader of this iterator was freed");
        CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_STATE);
        CT_EXPECT_INT_EQ(ct_dataloader_iter_pos(it), 1);
        ct_dataloader_iter_free(it);
    }
    ct_dataset_free(ds);
}

static void test_pin_memory(void) {
    bool device = ct_device_count(CT_DEVICE_OPENCL) > 0 || ct_device_count(CT_DEVICE_CUDA) > 0;
    test_set ts;
    test_set_init(&ts, 9, 3);
    ct_dataset *ds = test_set_dataset(&ts);
    for (int w = 0; w <= 2; w++) {
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 4, .num_workers = w,
                                                                       .pin_memory = true, .seed = 8});
        ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
        ct_sample b;
        int64_t nb = 0;
        while (ct_dataloader_next(it, &b)) {
            int64_t idx[4], count = nb < 2 ? 4 : 1;
            for (int r = 0; r < count; r++) idx[r] = nb * 4 + r;
            expect_batch(&b, idx, count, 3, 8, 0);
            for (int k = 0; k < b.n; k++)
                CT_EXPECT_MSG(ct_is_pinned(b.t[k]) == device, "W=%d batch %lld field %d: pinned %d, device %d", w,
                              (long long)nb, k, ct_is_pinned(b.t[k]), device);
            ct_sample_clear(&b);
            nb++;
        }
        CT_EXPECT_INT_EQ(nb, 3);
        CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_OK);
        ct_dataloader_iter_free(it);
        ct_dataloader_free(dl);
    }
    ct_dataset_free(ds);
    if (!device) printf("  (no device backend: batches checked unpinned)\n");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], HUNG_CHILD_ARG) == 0) return hung_child();
    ct_test_init(argc, argv);
    CT_RUN(test_prefetch_bound);
    CT_RUN(test_in_order_delivery);
    CT_RUN(test_worker_error);
    CT_RUN(test_caller_thread_error);
    CT_RUN(test_collate_error_in_worker);
    CT_RUN(test_timeout_bounds_the_wait);
    CT_RUN(test_timeout_hung_worker);
    CT_RUN(test_persistent_workers);
    CT_RUN(test_early_iterator_free);
    CT_RUN(test_loader_freed_under_iterator);
    CT_RUN(test_pin_memory);
    return ct_test_finish();
}
