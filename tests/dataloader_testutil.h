/*
 * dataloader_testutil.h — the user dataset shared by the DataLoader tests
 * (test_dataloader.c, test_dataloader_workers.c): sample i is
 * (x = [10 i, 10 i + 1, …] float32, y = i int64, key int64), the key field
 * recording the random key the loader passed to get. It can sleep, fail or
 * return a wrongly shaped sample on chosen indices, and it records the
 * largest index fetched and the order in which gets finished.
 */
#ifndef CT_DATALOADER_TESTUTIL_H
#define CT_DATALOADER_TESTUTIL_H

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/error.h"
#include "ctorch/data.h"
#include "ctorch/memory.h"
#include "testutil.h"

/* ---- the test dataset -------------------------------------------------------------- */

typedef struct test_set {
    int64_t n;
    int feat;                     /* length of x */
    atomic_int sleep_us;          /* every get sleeps this long (atomic: tests change it while
                                     workers abandoned by a timeout may still read it) */
    int slow_mod, slow_us;        /* indices i with i % slow_mod == 0 sleep slow_us more */
    int64_t fail_index;           /* get fails here (-1: never) */
    ct_status fail_code;
    int64_t short_index;          /* x has feat - 1 elements here (-1: never) */
    atomic_llong max_index;       /* the largest index fetched so far */
    atomic_llong gets;
    atomic_llong done_seq;
    int64_t done_order[64];       /* completion sequence number of index i (i < 64) */
} test_set;

static inline void sleep_us(int us) {
    if (us <= 0) return;
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static inline int64_t test_set_len(void *state) { return ((test_set *)state)->n; }

static inline ct_status test_set_get(void *state, int64_t i, uint64_t key, ct_sample *out) {
    test_set *s = state;
    long long seen = atomic_load(&s->max_index);
    while (i > seen && !atomic_compare_exchange_weak(&s->max_index, &seen, i)) {
    }
    atomic_fetch_add(&s->gets, 1);
    sleep_us(s->sleep_us + (s->slow_mod && i % s->slow_mod == 0 ? s->slow_us : 0));
    if (i == s->fail_index) return ct_error_set(s->fail_code, "disk on fire at %lld", (long long)i);
    float x[16];
    int feat = i == s->short_index ? s->feat - 1 : s->feat;
    for (int j = 0; j < feat; j++) x[j] = (float)(10 * i + j);
    int64_t kbits;
    memcpy(&kbits, &key, sizeof kbits);
    out->t[0] = ct_tensor_from(x, CT_FLOAT32, CT_SHAPE(feat));
    out->t[1] = ct_tensor_from(&i, CT_INT64, CT_SHAPE0);
    out->t[2] = ct_tensor_from(&kbits, CT_INT64, CT_SHAPE0);
    out->n = 3;
    if (i < 64) s->done_order[i] = atomic_fetch_add(&s->done_seq, 1);
    return CT_OK;
}

static inline void test_set_init(test_set *s, int64_t n, int feat) {
    memset(s, 0, sizeof *s);
    s->n = n;
    s->feat = feat;
    s->fail_index = -1;
    s->short_index = -1;
    atomic_store(&s->max_index, -1);
}

static inline ct_dataset *test_set_dataset(test_set *s) {
    return ct_dataset_new("TestSet", (ct_dataset_fns){test_set_len, test_set_get, NULL}, s);
}

/* The key of the documented formula, computed here independently. */
static inline uint64_t expected_key(uint64_t seed, uint64_t epoch, int64_t i) {
    uint32_t r[4];
    ct_philox4x32(seed, epoch, (uint64_t)i | (UINT64_C(1) << 63), r);
    return (uint64_t)r[0] | (uint64_t)r[1] << 32;
}

/* Check batch b of a loader over test_set: rows are the dataset indices idx. */
static inline void expect_batch(const ct_sample *b, const int64_t *idx, int64_t count, int feat, uint64_t seed,
                         uint64_t epoch) {
    CT_EXPECT_INT_EQ(b->n, 3);
    if (b->n != 3) return;
    CT_EXPECT_SHAPE(b->t[0], CT_SHAPE(count, feat));
    CT_EXPECT_SHAPE(b->t[1], CT_SHAPE(count));
    CT_EXPECT_SHAPE(b->t[2], CT_SHAPE(count));
    CT_EXPECT(ct_dtype_of(b->t[0]) == CT_FLOAT32 && ct_dtype_of(b->t[1]) == CT_INT64);
    const float *x = ct_data_ptr(b->t[0]);
    const int64_t *y = ct_data_ptr(b->t[1]), *k = ct_data_ptr(b->t[2]);
    for (int64_t r = 0; r < count; r++) {
        CT_EXPECT_INT_EQ(y[r], idx[r]);
        for (int j = 0; j < feat; j++) CT_EXPECT_NEAR(x[r * feat + j], 10.0 * idx[r] + j, 0);
        CT_EXPECT_MSG((uint64_t)k[r] == expected_key(seed, epoch, idx[r]),
                      "key of index %lld in epoch %llu differs from the documented formula", (long long)idx[r],
                      (unsigned long long)epoch);
    }
}

/* Run one epoch and append every batch's y values to out (returns the count,
 * or -1 if the iterator failed). */
static inline int64_t epoch_labels(ct_dataloader *dl, int64_t *out, int64_t max) {
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    if (!it) return -1;
    int64_t n = 0;
    ct_sample b;
    while (ct_dataloader_next(it, &b)) {
        const int64_t *y = ct_data_ptr(b.t[1]);
        for (int64_t r = 0; r < ct_size(b.t[1], 0) && n < max; r++) out[n++] = y[r];
        ct_sample_clear(&b);
    }
    if (ct_dataloader_iter_status(it) != CT_OK) n = -1;
    ct_dataloader_iter_free(it);
    return n;
}

static inline bool is_permutation(const int64_t *v, int64_t n) {
    bool seen[256] = {false};
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]]) return false;
        seen[v[i]] = true;
    }
    return true;
}

#endif /* CT_DATALOADER_TESTUTIL_H */
