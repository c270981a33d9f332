/*
 * test_dataloader.c — samplers, default_collate and the DataLoader's
 * batches: values, drop_last and len, epochs and shuffles, determinism
 * across num_workers, sample keys, custom collate functions and PyTorch's
 * argument checks. The worker machinery (prefetch bound, ordering, errors,
 * timeouts, persistence, early ends, pinning) is in test_dataloader_workers.c.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "dataloader_testutil.h"

/* ---- samplers ---------------------------------------------------------------------- */

/* The documented Fisher–Yates mapping, re-implemented (without rejection:
 * with bounds this small a rejection has probability ~2^-60). */
static void reference_permutation(int64_t n, uint64_t key, uint64_t ctr, int64_t *idx) {
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    for (int64_t i = n - 1; i >= 1; i--) {
        uint32_t r[4];
        ct_philox4x32(key, ctr, (uint64_t)i, r);
        uint64_t x = (uint64_t)r[0] | (uint64_t)r[1] << 32;
        int64_t j = (int64_t)(x % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

static void test_sequential_and_random_sampler(void) {
    ct_sampler *s = ct_sequential_sampler(5);
    int64_t idx[64], idx2[64], ref[64];
    CT_EXPECT_INT_EQ(ct_sampler_len(s), 5);
    CT_EXPECT_INT_EQ(ct_sampler_indices(s, idx), CT_OK);
    for (int i = 0; i < 5; i++) CT_EXPECT_INT_EQ(idx[i], i);
    ct_sampler_free(s);

    ct_sampler *r = ct_random_sampler(50, 1234);
    CT_EXPECT_INT_EQ(ct_sampler_len(r), 50);
    CT_EXPECT_INT_EQ(ct_sampler_indices(r, idx), CT_OK);
    CT_EXPECT(is_permutation(idx, 50));
    reference_permutation(50, 1234, 0, ref);
    CT_EXPECT(memcmp(idx, ref, 50 * sizeof *idx) == 0);
    CT_EXPECT_INT_EQ(ct_sampler_indices(r, idx2), CT_OK);           /* same epoch: same order */
    CT_EXPECT(memcmp(idx, idx2, sizeof idx[0] * 50) == 0);
    ct_sampler_set_epoch(r, 1);
    CT_EXPECT_INT_EQ(ct_sampler_indices(r, idx2), CT_OK);
    CT_EXPECT(is_permutation(idx2, 50));
    CT_EXPECT(memcmp(idx, idx2, sizeof idx[0] * 50) != 0);          /* new epoch: new order */
    reference_permutation(50, 1234, 1, ref);
    CT_EXPECT(memcmp(idx2, ref, 50 * sizeof *idx) == 0);
    ct_sampler_free(r);

    ct_sampler *other = ct_random_sampler(50, 1235);
    CT_EXPECT_INT_EQ(ct_sampler_indices(other, idx2), CT_OK);
    CT_EXPECT(memcmp(idx, idx2, sizeof idx[0] * 50) != 0);          /* other seed: other order */
    ct_sampler_free(other);

    ct_sampler *empty = ct_random_sampler(0, 1), *one = ct_random_sampler(1, 1);
    CT_EXPECT_INT_EQ(ct_sampler_len(empty), 0);
    CT_EXPECT_INT_EQ(ct_sampler_indices(empty, idx), CT_OK);
    CT_EXPECT_INT_EQ(ct_sampler_indices(one, idx), CT_OK);
    CT_EXPECT_INT_EQ(idx[0], 0);
    ct_sampler_free(empty);
    ct_sampler_free(one);

    CT_EXPECT(ct_sequential_sampler(-1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "SequentialSampler: the dataset length must be non-negative, but got -1");
    CT_EXPECT(ct_random_sampler(-3, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "RandomSampler: the dataset length must be non-negative, but got -3");
    CT_EXPECT(ct_sampler_new((ct_sampler_fns){NULL, NULL, NULL}, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ct_sampler_new: the len and fill functions are required");
    CT_EXPECT_INT_EQ(ct_sampler_indices(NULL, idx), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ct_sampler_indices: NULL argument");
    ct_sampler_free(NULL);
}

static void expect_rank(int64_t n, int w, int rank, bool drop_last, const int64_t *want, int64_t count) {
    ct_sampler *s = ct_distributed_sampler(n, w, rank, false, 0, drop_last);
    int64_t idx[64];
    CT_EXPECT_INT_EQ(ct_sampler_len(s), count);
    CT_EXPECT_INT_EQ(ct_sampler_indices(s, idx), CT_OK);
    for (int64_t k = 0; k < count; k++)
        CT_EXPECT_MSG(idx[k] == want[k], "N=%lld W=%d rank %d drop_last=%d: entry %lld is %lld, want %lld",
                      (long long)n, w, rank, drop_last, (long long)k, (long long)idx[k], (long long)want[k]);
    ct_sampler_free(s);
}

static void test_distributed_sampler(void) {
    /* PyTorch: DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False) */
    expect_rank(10, 3, 0, false, (int64_t[]){0, 3, 6, 9}, 4);
    expect_rank(10, 3, 1, false, (int64_t[]){1, 4, 7, 0}, 4);
    expect_rank(10, 3, 2, false, (int64_t[]){2, 5, 8, 1}, 4);
    expect_rank(10, 3, 0, true, (int64_t[]){0, 3, 6}, 3);
    expect_rank(10, 3, 1, true, (int64_t[]){1, 4, 7}, 3);
    expect_rank(10, 3, 2, true, (int64_t[]){2, 5, 8}, 3);
    expect_rank(9, 3, 2, true, (int64_t[]){2, 5, 8}, 3);           /* divisible: drop_last changes nothing */
    /* padding longer than N cycles the list: [0, 1, 0, 1, 0] */
    expect_rank(2, 5, 2, false, (int64_t[]){0}, 1);
    expect_rank(2, 5, 3, false, (int64_t[]){1}, 1);
    expect_rank(2, 5, 4, true, (int64_t[]){0}, 0);

    /* shuffled: every rank takes perm[r::W] of the padded permutation keyed by seed + epoch */
    int64_t perm[16], mine[16], count[16] = {0};
    ct_sampler *all = ct_distributed_sampler(10, 1, 0, true, 42, false);
    CT_EXPECT_INT_EQ(ct_sampler_indices(all, perm), CT_OK);
    CT_EXPECT(is_permutation(perm, 10));
    int64_t ref[16];
    reference_permutation(10, 42, 0, ref);
    CT_EXPECT(memcmp(perm, ref, 10 * sizeof *ref) == 0);
    for (int r = 0; r < 3; r++) {
        ct_sampler *s = ct_distributed_sampler(10, 3, r, true, 42, false);
        CT_EXPECT_INT_EQ(ct_sampler_indices(s, mine), CT_OK);
        for (int k = 0; k < 4; k++) {
            CT_EXPECT_INT_EQ(mine[k], perm[(r + 3 * k) % 10]);
            count[mine[k]]++;
        }
        ct_sampler_free(s);
    }
    for (int i = 0; i < 10; i++) CT_EXPECT(count[i] >= 1);          /* the union covers every index */

    int64_t e0[16], e1[16];
    memcpy(e0, perm, sizeof e0);
    ct_sampler_set_epoch(all, 1);
    CT_EXPECT_INT_EQ(ct_sampler_indices(all, e1), CT_OK);
    CT_EXPECT(is_permutation(e1, 10));
    CT_EXPECT(memcmp(e0, e1, 10 * sizeof *e0) != 0);                  /* set_epoch reshuffles */
    ct_sampler *next_seed = ct_distributed_sampler(10, 1, 0, true, 43, false);
    CT_EXPECT_INT_EQ(ct_sampler_indices(next_seed, e0), CT_OK);
    CT_EXPECT(memcmp(e0, e1, 10 * sizeof *e0) == 0);                  /* keyed by seed + epoch, as PyTorch */
    ct_sampler_free(next_seed);
    ct_sampler_free(all);

    CT_EXPECT(ct_distributed_sampler(10, 3, 3, false, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid rank 3, rank should be in the interval [0, 2]");
    CT_EXPECT(ct_distributed_sampler(10, 3, -1, false, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid rank -1, rank should be in the interval [0, 2]");
    CT_EXPECT(ct_distributed_sampler(10, 0, 0, false, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "num_replicas should be a positive integer, but got num_replicas=0");
    CT_EXPECT(ct_distributed_sampler(-1, 2, 0, false, 0, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "DistributedSampler: the dataset length must be non-negative");
}

/* A user sampler: the indices in reverse, shifted by the epoch. */
typedef struct rev_sampler {
    int64_t n;
    int *freed;
    uint64_t last_epoch;
} rev_sampler;
static int64_t rev_len(void *st) { return ((rev_sampler *)st)->n; }
static ct_status rev_fill(void *st, uint64_t epoch, int64_t *idx) {
    rev_sampler *s = st;
    s->last_epoch = epoch;
    for (int64_t i = 0; i < s->n; i++) idx[i] = (s->n - 1 - i + (int64_t)epoch) % s->n;
    return CT_OK;
}
static void rev_free(void *st) { (*((rev_sampler *)st)->freed)++; }

static void test_user_sampler(void) {
    test_set ts;
    test_set_init(&ts, 6, 2);
    ct_dataset *ds = test_set_dataset(&ts);
    int freed = 0;
    rev_sampler rs = {6, &freed, 99};
    ct_sampler *s = ct_sampler_new((ct_sampler_fns){rev_len, rev_fill, rev_free}, &rs);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 4, .sampler = s, .num_workers = 2});
    CT_EXPECT_INT_EQ(ct_dataloader_len(dl), 2);
    int64_t y[8];
    CT_EXPECT_INT_EQ(epoch_labels(dl, y, 8), 6);
    for (int i = 0; i < 6; i++) CT_EXPECT_INT_EQ(y[i], 5 - i);
    CT_EXPECT_INT_EQ(rs.last_epoch, 0);
    CT_EXPECT_INT_EQ(epoch_labels(dl, y, 8), 6);
    CT_EXPECT_INT_EQ(rs.last_epoch, 1);
    CT_EXPECT_INT_EQ(y[0], 0);                                        /* (5 + 1) % 6 */
    ct_dataloader_free(dl);
    CT_EXPECT_INT_EQ(freed, 1);                                       /* the loader owned the sampler */
    ct_dataset_free(ds);
}

/* ---- batches --------------------------------------------------------------------------- */

static void run_sequential(int workers) {
    test_set ts;
    test_set_init(&ts, 10, 3);
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 4, .num_workers = workers, .seed = 5});
    CT_EXPECT_INT_EQ(ct_dataloader_len(dl), 3);
    CT_EXPECT_INT_EQ(ct_dataloader_epoch(dl), 0);
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    CT_EXPECT_INT_EQ(ct_dataloader_epoch(dl), 1);
    ct_sample b;
    int64_t nb = 0;
    while (ct_dataloader_next(it, &b)) {
        int64_t idx[4], count = nb < 2 ? 4 : 2;
        for (int r = 0; r < count; r++) idx[r] = nb * 4 + r;
        expect_batch(&b, idx, count, 3, 5, 0);
        CT_EXPECT(!ct_is_pinned(b.t[0]));
        ct_sample_clear(&b);
        nb++;
        CT_EXPECT_INT_EQ(ct_dataloader_iter_pos(it), nb);
    }
    CT_EXPECT_INT_EQ(nb, 3);
    CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_OK);
    CT_EXPECT(!ct_dataloader_next(it, &b));                           /* stays finished */
    CT_EXPECT_INT_EQ(b.n, 0);
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

static void test_sequential_batches(void) {
    run_sequential(0);
    run_sequential(1);
    run_sequential(3);
    CT_EXPECT(ct_dataloader_sample_key(5, 2, 7) == expected_key(5, 2, 7));
}

static void test_drop_last_and_len(void) {
    test_set ts;
    test_set_init(&ts, 10, 1);
    ct_dataset *ds = test_set_dataset(&ts);
    int64_t y[16];
    struct { int64_t bs; bool drop; int64_t len, samples; } cases[] = {
        {4, false, 3, 10}, {4, true, 2, 8}, {5, true, 2, 10}, {0, false, 10, 10}, {11, true, 0, 0}, {11, false, 1, 10},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int w = 0; w <= 2; w += 2) {
            ct_dataloader *dl = ct_dataloader_new(
                ds, (ct_dataloader_opts){.batch_size = cases[c].bs, .drop_last = cases[c].drop, .num_workers = w});
            CT_EXPECT_INT_EQ(ct_dataloader_len(dl), cases[c].len);
            CT_EXPECT_INT_EQ(epoch_labels(dl, y, 16), cases[c].samples);
            for (int64_t i = 0; i < cases[c].samples; i++) CT_EXPECT_INT_EQ(y[i], i);
            ct_dataloader_free(dl);
        }
    ct_dataset_free(ds);
}

/* All batches of `epochs` epochs, concatenated as raw bytes of every field. */
typedef struct run_bytes {
    unsigned char *data;
    size_t len, cap;
} run_bytes;
static void append(run_bytes *r, const void *p, size_t n) {
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->data = realloc(r->data, r->cap);
    }
    memcpy(r->data + r->len, p, n);
    r->len += n;
}
static run_bytes shuffled_run(ct_dataset *ds, int workers, uint64_t seed, int epochs) {
    run_bytes r = {0};
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 5, .shuffle = true,
                                                                   .num_workers = workers, .seed = seed});
    for (int e = 0; e < epochs; e++) {
        ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
        ct_sample b;
        while (ct_dataloader_next(it, &b)) {
            for (int k = 0; k < b.n; k++)
                append(&r, ct_data_ptr(b.t[k]), (size_t)ct_numel(b.t[k]) * ct_element_size(b.t[k]));
            ct_sample_clear(&b);
        }
        CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_OK);
        ct_dataloader_iter_free(it);
    }
    ct_dataloader_free(dl);
    return r;
}

static void test_shuffle(void) {
    test_set ts;
    test_set_init(&ts, 37, 2);
    ct_dataset *ds = test_set_dataset(&ts);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 5, .shuffle = true, .seed = 7});
    CT_EXPECT_INT_EQ(ct_dataloader_len(dl), 8);
    int64_t e0[64], e1[64], again[64], perm[64];
    CT_EXPECT_INT_EQ(epoch_labels(dl, e0, 64), 37);
    CT_EXPECT_INT_EQ(epoch_labels(dl, e1, 64), 37);
    CT_EXPECT(is_permutation(e0, 37) && is_permutation(e1, 37));
    CT_EXPECT(memcmp(e0, e1, 37 * sizeof *e0) != 0);
    reference_permutation(37, 7, 0, perm);                           /* RandomSampler keyed by (seed, epoch) */
    CT_EXPECT(memcmp(e0, perm, 37 * sizeof *e0) == 0);
    ct_dataloader_set_epoch(dl, 1);                                    /* resume at epoch 1 */
    CT_EXPECT_INT_EQ(epoch_labels(dl, again, 64), 37);
    CT_EXPECT(memcmp(e1, again, 37 * sizeof *e1) == 0);
    CT_EXPECT_INT_EQ(ct_dataloader_epoch(dl), 2);
    ct_dataloader_free(dl);

    ct_dataloader *same = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 5, .shuffle = true, .seed = 7});
    CT_EXPECT_INT_EQ(epoch_labels(same, again, 64), 37);
    CT_EXPECT(memcmp(e0, again, 37 * sizeof *e0) == 0);               /* same seed, same order */
    ct_dataloader_free(same);

    /* batches and keys identical to the bit for 0, 1 and 3 workers */
    run_bytes r0 = shuffled_run(ds, 0, 11, 2), r1 = shuffled_run(ds, 1, 11, 2), r3 = shuffled_run(ds, 3, 11, 2);
    CT_EXPECT(r0.len > 0 && r0.len == r1.len && r0.len == r3.len);
    CT_EXPECT(r0.len == r1.len && memcmp(r0.data, r1.data, r0.len) == 0);
    CT_EXPECT(r0.len == r3.len && memcmp(r0.data, r3.data, r0.len) == 0);
    free(r0.data);
    free(r1.data);
    free(r3.data);
    ct_dataset_free(ds);
}

static void test_keys_per_epoch(void) {
    test_set ts;
    test_set_init(&ts, 6, 1);
    ct_dataset *ds = test_set_dataset(&ts);
    for (int w = 0; w <= 2; w += 2) {
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 6, .num_workers = w, .seed = 99});
        for (uint64_t e = 0; e < 3; e++) {
            ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
            ct_sample b;
            CT_EXPECT(ct_dataloader_next(it, &b));
            expect_batch(&b, (int64_t[]){0, 1, 2, 3, 4, 5}, 6, 1, 99, e);
            const int64_t *k = ct_data_ptr(b.t[2]);
            CT_EXPECT(k[0] != k[1]);
            ct_sample_clear(&b);
            ct_dataloader_iter_free(it);
        }
        ct_dataloader_free(dl);
    }
    ct_dataset_free(ds);
}

static void test_tensor_dataset_loader(void) {
    double xv[12], yv[4] = {3, 1, 4, 1};
    for (int i = 0; i < 12; i++) xv[i] = i * 0.5;
    ct_tensor *xt = ct_test_tensor(xv, CT_SHAPE(3, 4), CT_FLOAT64);   /* stored [3,4], used as its [4,3] transpose */
    ct_tensor *x = ct_transpose(xt, 0, 1);
    ct_tensor *y = ct_test_tensor(yv, CT_SHAPE(4), CT_INT64);
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *const[]){x, y}, 2);
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 3, .num_workers = 2});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_sample b;
    for (int64_t nb = 0; ct_dataloader_next(it, &b); nb++) {
        int64_t rows = nb == 0 ? 3 : 1;
        CT_EXPECT_SHAPE(b.t[0], CT_SHAPE(rows, 3));
        CT_EXPECT(ct_is_contiguous(b.t[0]));
        double want[9], wy[3];
        for (int64_t r = 0; r < rows; r++) {
            for (int c = 0; c < 3; c++) want[r * 3 + c] = xv[c * 4 + (nb * 3 + r)];
            wy[r] = yv[nb * 3 + r];
        }
        CT_EXPECT_CLOSE(b.t[0], want, rows * 3, 0, 0);
        CT_EXPECT_CLOSE(b.t[1], wy, rows, 0, 0);
        ct_sample_clear(&b);
    }
    CT_EXPECT_INT_EQ(ct_dataloader_iter_pos(it), 2);
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
    ct_release(x);
    ct_release(xt);
    ct_release(y);
}

/* ---- collate ------------------------------------------------------------------------- */

static void release_samples(ct_sample *s, int n) {
    for (int i = 0; i < n; i++) ct_sample_clear(&s[i]);
}

static void test_default_collate(void) {
    /* every dtype, with a non-contiguous sample among contiguous ones */
    const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT32, CT_INT64, CT_UINT8, CT_BOOL};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        ct_sample s[3] = {{0}};
        double *vals[3], want[3 * 6];
        for (int i = 0; i < 3; i++) {
            ct_tensor *t = ct_test_random(CT_SHAPE(2, 3), dts[d], 0, 5, &vals[i]);
            if (i == 1) {   /* same values, reversed strides */
                s[i].t[0] = ct_test_noncontiguous(vals[i], CT_SHAPE(2, 3), dts[d]);
                ct_release(t);
                CT_EXPECT(!ct_is_contiguous(s[i].t[0]));
            } else {
                s[i].t[0] = t;
            }
            s[i].t[1] = ct_tensor_from(&(int64_t){i * 7}, CT_INT64, CT_SHAPE0);
            s[i].t[2] = ct_empty(CT_SHAPE(0), .dtype = dts[d]);
            s[i].n = 3;
            memcpy(want + i * 6, vals[i], 6 * sizeof *want);
            free(vals[i]);
        }
        ct_sample b = {0};
        CT_EXPECT_INT_EQ(ct_default_collate(s, 3, &b, false, NULL), CT_OK);
        CT_EXPECT_INT_EQ(b.n, 3);
        CT_EXPECT_SHAPE(b.t[0], CT_SHAPE(3, 2, 3));
        CT_EXPECT(ct_dtype_of(b.t[0]) == dts[d] && ct_is_contiguous(b.t[0]));
        CT_EXPECT_CLOSE(b.t[0], want, 18, 0, 0);
        CT_EXPECT_SHAPE(b.t[1], CT_SHAPE(3));
        CT_EXPECT_CLOSE(b.t[1], ((double[]){0, 7, 14}), 3, 0, 0);
        CT_EXPECT_SHAPE(b.t[2], CT_SHAPE(3, 0));
        CT_EXPECT(!ct_shares_storage(b.t[0], s[0].t[0]));
        ct_sample_clear(&b);
        release_samples(s, 3);
    }

    /* PyTorch's stack message, naming the field and both entries */
    ct_sample s[4] = {{0}};
    for (int i = 0; i < 4; i++) {
        s[i].t[0] = ct_zeros(CT_SHAPE(1, 28, i == 3 ? 27 : 28));
        s[i].t[1] = ct_zeros(CT_SHAPE0, .dtype = i == 2 ? CT_FLOAT32 : CT_INT64);
        s[i].n = 2;
    }
    ct_sample b = {0};
    CT_EXPECT_INT_EQ(ct_default_collate(s, 4, &b, false, NULL), CT_ERR_SHAPE);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "default_collate: field 0: stack expects each tensor to be equal size, "
                                  "but got [1, 28, 28] at entry 0 and [1, 28, 27] at entry 3");
    CT_EXPECT_INT_EQ(b.n, 0);
    CT_EXPECT_INT_EQ(ct_default_collate(s, 3, &b, false, NULL), CT_ERR_DTYPE);   /* field 0 matches in 0..2 */
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "default_collate: field 1: stack expects each tensor to have the same dtype, "
                                  "but got int64 at entry 0 and float32 at entry 2");
    CT_EXPECT_INT_EQ(b.n, 0);
    ct_tensor *keep = s[1].t[1];
    s[1].n = 1;
    CT_EXPECT_INT_EQ(ct_default_collate(s, 2, &b, false, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "each element in list of batch should be of equal size, but entry 0 has "
                                        "2 fields and entry 1 has 1");
    s[1].n = 2;
    s[1].t[1] = NULL;
    CT_EXPECT_INT_EQ(ct_default_collate(s, 2, &b, false, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "default_collate: field 1 of entry 1 is NULL");
    s[1].t[1] = keep;
    CT_EXPECT_INT_EQ(ct_default_collate(s, 0, &b, false, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "default_collate: expected at least one sample, but got 0");
    CT_EXPECT_INT_EQ(ct_default_collate(NULL, 1, &b, false, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "default_collate: NULL argument");
    release_samples(s, 4);

    ct_sample big = {1, {ct_zeros(CT_SHAPE(1, 1, 1, 1, 1, 1, 1, 2))}};
    CT_EXPECT_INT_EQ(ct_default_collate(&big, 1, &b, false, NULL), CT_ERR_SHAPE);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "default_collate: field 0 has 8 dims; its batch would need 9 (at most 8)");
    ct_sample_clear(&big);

    /* pinning: page-locked when a device backend provides it, plain memory otherwise */
    ct_sample one = {1, {ct_arange(0, 4, 1, .dtype = CT_FLOAT32)}};
    CT_EXPECT_INT_EQ(ct_default_collate(&one, 1, &b, true, NULL), CT_OK);
    CT_EXPECT(ct_is_pinned(b.t[0]) == (ct_device_count(CT_DEVICE_OPENCL) > 0 || ct_device_count(CT_DEVICE_CUDA) > 0));
    CT_EXPECT_CLOSE(b.t[0], ((double[]){0, 1, 2, 3}), 4, 0, 0);
    ct_sample_clear(&b);
    ct_sample_clear(&one);
}

/* A collate_fn that stacks with the default one and appends the batch size. */
typedef struct collate_log {
    atomic_int calls;
    atomic_int pinned_calls;
    ct_status fail;          /* CT_OK, or fail with this code */
    bool empty;              /* return CT_OK with no tensors */
} collate_log;

static ct_status counting_collate(const ct_sample *samples, int n, ct_sample *batch, bool pin, void *user) {
    collate_log *log = user;
    atomic_fetch_add(&log->calls, 1);
    if (pin) atomic_fetch_add(&log->pinned_calls, 1);
    if (log->fail != CT_OK) return ct_error_set(log->fail, "my collate broke on %d samples", n);
    if (log->empty) return CT_OK;
    CT_TRY(ct_default_collate(samples, n, batch, pin, NULL));
    batch->t[batch->n++] = ct_tensor_from(&(int64_t){n}, CT_INT64, CT_SHAPE0);
    return CT_OK;
}

static void test_custom_collate(void) {
    test_set ts;
    test_set_init(&ts, 7, 2);
    ct_dataset *ds = test_set_dataset(&ts);
    for (int w = 0; w <= 2; w += 2) {
        collate_log log = {0};
        ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 3, .num_workers = w,
                                                                       .collate_fn = counting_collate,
                                                                       .collate_user = &log});
        ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
        ct_sample b;
        int64_t nb = 0;
        while (ct_dataloader_next(it, &b)) {
            CT_EXPECT_INT_EQ(b.n, 4);
            CT_EXPECT_INT_EQ(ct_item(b.t[3]), nb < 2 ? 3 : 1);
            int64_t idx[3] = {nb * 3, nb * 3 + 1, nb * 3 + 2};
            b.n = 3;   /* check the default part, then release all four */
            expect_batch(&b, idx, nb < 2 ? 3 : 1, 2, 0, 0);
            b.n = 4;
            ct_sample_clear(&b);
            nb++;
        }
        CT_EXPECT_INT_EQ(nb, 3);
        CT_EXPECT_INT_EQ(atomic_load(&log.calls), 3);
        CT_EXPECT_INT_EQ(atomic_load(&log.pinned_calls), 0);
        ct_dataloader_iter_free(it);

        log.fail = CT_ERR_FORMAT;
        it = ct_dataloader_iter_new(dl);
        CT_EXPECT(!ct_dataloader_next(it, &b));
        CT_EXPECT_INT_EQ(ct_dataloader_iter_status(it), CT_ERR_FORMAT);
        if (w == 0)
            CT_EXPECT_ERROR(CT_ERR_FORMAT, "my collate broke on 3 samples");
        else
            CT_EXPECT_ERROR(CT_ERR_FORMAT, "Caught CT_ERR_FORMAT in DataLoader worker 0 (batch 0): my collate broke on 3 samples");
        ct_dataloader_iter_free(it);

        log.fail = CT_OK;
        log.empty = true;
        it = ct_dataloader_iter_new(dl);
        CT_EXPECT(!ct_dataloader_next(it, &b));
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "DataLoader: collate_fn returned a batch of 0 tensors (expected 1 to 4)");
        ct_dataloader_iter_free(it);
        ct_dataloader_free(dl);
    }
    ct_dataset_free(ds);
}

/* ---- argument checks ---------------------------------------------------------------- */

static void test_argument_errors(void) {
    test_set ts;
    test_set_init(&ts, 5, 1);
    ct_dataset *ds = test_set_dataset(&ts);
    int freed = 0;
    rev_sampler rs = {5, &freed, 0};
    struct { ct_dataloader_opts o; const char *msg; } cases[] = {
        {{.num_workers = -1}, "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."},
        {{.timeout = -0.5}, "timeout option should be non-negative"},
        {{.prefetch_factor = 3}, "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                                 "to enable multiprocessing, otherwise set prefetch_factor to None."},
        {{.prefetch_factor = -1, .num_workers = 2}, "prefetch_factor option should be non-negative"},
        {{.persistent_workers = true}, "persistent_workers option needs num_workers > 0"},
        /* PyTorch's single-process iterator asserts timeout == 0 */
        {{.timeout = 0.5}, "timeout option needs num_workers > 0 (got timeout=0.5 with num_workers=0"},
        {{.batch_size = -2}, "batch_size should be a positive integer value, but got batch_size=-2"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CT_EXPECT(ct_dataloader_new(ds, cases[c].o) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, cases[c].msg);
    }
    /* the loader takes the sampler even when it refuses it */
    ct_sampler *s = ct_sampler_new((ct_sampler_fns){rev_len, rev_fill, rev_free}, &rs);
    CT_EXPECT(ct_dataloader_new(ds, (ct_dataloader_opts){.sampler = s, .shuffle = true}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "sampler option is mutually exclusive with shuffle");
    CT_EXPECT_INT_EQ(freed, 1);
    s = ct_sampler_new((ct_sampler_fns){rev_len, rev_fill, rev_free}, &rs);
    ct_clear_error();
    CT_EXPECT(ct_dataloader_new(NULL, (ct_dataloader_opts){.sampler = s}) == NULL);   /* NULL propagates */
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    CT_EXPECT_INT_EQ(freed, 2);

    /* one iterator at a time */
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 2, .num_workers = 1,
                                                                   .prefetch_factor = 1});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    CT_EXPECT(ct_dataloader_iter_new(dl) == NULL);
    CT_EXPECT_ERROR(CT_ERR_STATE, "DataLoader: an iterator of this loader is still alive (at batch 0 of epoch 0)");
    ct_sample b;
    CT_EXPECT(!ct_dataloader_next(it, NULL));
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ct_dataloader_next: NULL batch");
    ct_dataloader_iter_free(it);
    it = ct_dataloader_iter_new(dl);                                   /* the first one is gone: fine now */
    CT_EXPECT(it != NULL && ct_dataloader_next(it, &b));
    ct_sample_clear(&b);
    ct_dataloader_iter_free(it);
    CT_EXPECT(!ct_dataloader_next(NULL, &b));
    CT_EXPECT(ct_dataloader_iter_new(NULL) == NULL);
    CT_EXPECT_INT_EQ(ct_dataloader_len(NULL), 0);
    ct_dataloader_iter_free(NULL);
    ct_dataloader_free(NULL);
    ct_dataloader_free(dl);

    /* an index out of the dataset's range from a user sampler surfaces as get's error */
    rev_sampler wide = {7, &freed, 0};
    dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 2,
                                                    .sampler = ct_sampler_new((ct_sampler_fns){rev_len, rev_fill, rev_free}, &wide)});
    it = ct_dataloader_iter_new(dl);
    CT_EXPECT(!ct_dataloader_next(it, &b));
    CT_EXPECT_ERROR(CT_ERR_INDEX, "TestSet: index 6 is out of range for a dataset of length 5");
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_sequential_and_random_sampler);
    CT_RUN(test_distributed_sampler);
    CT_RUN(test_user_sampler);
    CT_RUN(test_sequential_batches);
    CT_RUN(test_drop_last_and_len);
    CT_RUN(test_shuffle);
    CT_RUN(test_keys_per_epoch);
    CT_RUN(test_tensor_dataset_loader);
    CT_RUN(test_default_collate);
    CT_RUN(test_custom_collate);
    CT_RUN(test_argument_errors);
    return ct_test_finish();
}
