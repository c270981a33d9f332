/*
 * test_dataloader_workers.c — the DataLoader's worker threads: at most
 * prefetch_factor * num_workers batches ahead, delivery in sampler order
 * when workers finish out of order, errors captured in a worker and raised
 * on the caller's thread, timeouts, persistent and per-epoch workers,
 * iterators ended early or outliving their loader, and pinned batches.
 *
 * Some tests make the dataset sleep so that workers finish in a known order
 * or so that a timeout fires; the waits are short and no test measures time.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */
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

static void test_timeout(void) {
    test_set ts;
    test_set_init(&ts, 4, 1);
    ts.sleep_us = 300000;
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 1, .num_workers = 1, .timeout = 0.05});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    CT_EXPECT(!ct_dataloader_next(it, &b));
    CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "DataLoader timed out after 0.05 seconds");
    CT_EXPECT_INT_EQ(b.n, 0);
    ct_dataloader_iter_free(it);   /* waits for the sleeping worker, then drops its batch */
    ct_dataloader_free(dl);

    /* the caller's thread ignores the timeout; a generous one never fires */
    ts.sleep_us = 2000;
    for (int w = 0; w <= 2; w += 2) {
        dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 1, .num_workers = w,
                                                        .timeout = w ? 60 : 0.0001});
        int64_t y[4];
        CT_EXPECT_INT_EQ(epoch_labels(dl, y, 4), 4);
        ct_dataloader_free(dl);
    }
    ct_dataset_free(ds);
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
    ct_test_init(argc, argv);
    CT_RUN(test_prefetch_bound);
    CT_RUN(test_in_order_delivery);
    CT_RUN(test_worker_error);
    CT_RUN(test_caller_thread_error);
    CT_RUN(test_collate_error_in_worker);
    CT_RUN(test_timeout);
    CT_RUN(test_persistent_workers);
    CT_RUN(test_early_iterator_free);
    CT_RUN(test_loader_freed_under_iterator);
    CT_RUN(test_pin_memory);
    return ct_test_finish();
}
