/*
 * test_cpu_alloc.c — the CPU backend's host allocator
 * (src/backends/cpu/cpu_alloc.c): a cache of large freed buffers with the
 * device allocator's statistics, read through the public memory API for
 * device "cpu".
 *
 * Checked: size classes and alignment, exact statistics after tensors of
 * known sizes, reuse of a freed block (same pointer, a hit, no system
 * allocation), empty_cache, the waste bound (a small request never takes a
 * much larger block), the limit on cached bytes with least-recently-freed
 * eviction, a multi-threaded alloc/free storm with consistent statistics
 * afterwards, and out-of-memory: the cache given back and one retry, then
 * PyTorch's DefaultCPUAllocator message.
 *
 * The allocator is process-wide, so each test starts from an emptied cache
 * and compares statistics with the values before it acted.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu_alloc.h"
#include "testutil.h"

#define KiB ((int64_t)1024)
#define MiB ((int64_t)1024 * 1024)

static int64_t cpu_stat(const char *key) {
    int64_t v = -12345;
    if (ct_memory_stat(ct_device_cpu(), key, &v) != CT_OK)
        ct_test_fail(__FILE__, __LINE__, "memory_stat(cpu, \"%s\") failed: %s", key, ct_last_error());
    return v;
}
/* Cached (free) bytes: reserved but not allocated. */
static int64_t cpu_cached(void) { return cpu_stat("reserved_bytes.all.current") - cpu_stat("allocated_bytes.all.current"); }
/* Large requests served from the cache without a system allocation. */
static int64_t cpu_hits(void) {
    return cpu_stat("allocation.large_pool.allocated") - cpu_stat("segment.large_pool.allocated");
}

/* A uint8 tensor of exactly n bytes. */
static ct_tensor *bytes_tensor(int64_t n) {
    ct_tensor *t = ct_empty(CT_SHAPE(n), .dtype = CT_UINT8);
    CT_EXPECT_MSG(t != NULL, "empty(%lld bytes) failed: %s", (long long)n, ct_last_error());
    return t;
}

static void fresh_start(void) {
    ct_cpu_alloc_set_cache_limit(-1);
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
}

static void test_size_classes_and_alignment(void) {
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(0), 64);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(1), 64);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(64), 64);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(65), 128);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(128 * KiB - 1), 128 * KiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(128 * KiB), 128 * KiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(128 * KiB + 1), 144 * KiB);  /* 8 classes per doubling */
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(1 * MiB), 1 * MiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(1 * MiB + 1), 1 * MiB + 128 * KiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(15 * 128 * KiB + 1), 2 * MiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_round(((size_t)1 << 30) + 1), ((int64_t)1 << 30) + ((int64_t)1 << 27));
    /* rounding wastes less than 1/8 of any large request, in page multiples */
    for (int i = 0; i < 2000; i++) {
        size_t n = (size_t)ct_test_randint(128 * KiB, 512 * MiB);
        size_t r = ct_cpu_alloc_round(n);
        CT_EXPECT_MSG(r >= n && r - n < n / 8 && r % (16 * KiB) == 0, "round(%zu) = %zu", n, r);
    }
    fresh_start();
    static const int64_t sizes[] = {0, 1, 63, 64, 65, 4000, 128 * KiB - 1, 128 * KiB, 128 * KiB + 1, 5 * MiB + 3};
    for (int rep = 0; rep < 2; rep++) /* the second round reuses cached blocks */
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            void *p = NULL;
            CT_EXPECT_INT_EQ(ct_cpu_alloc((size_t)sizes[i], &p), CT_OK);
            CT_EXPECT_MSG(p && (uintptr_t)p % 64 == 0, "alloc(%lld) = %p is not 64-byte aligned", (long long)sizes[i], p);
            if (p) memset(p, 0x5A, (size_t)sizes[i]); /* every byte is writable (ASan checks the bound) */
            ct_cpu_free(p);
        }
    ct_cpu_free(NULL);
}

static void test_statistics_exact(void) {
    fresh_start();
    ct_device cpu = ct_device_cpu();
    CT_EXPECT_INT_EQ(ct_reset_peak_memory_stats(cpu), CT_OK);
    int64_t alloc0 = cpu_stat("allocation.all.current"), bytes0 = cpu_stat("allocated_bytes.all.current");
    int64_t req0 = cpu_stat("requested_bytes.all.current"), res0 = cpu_stat("reserved_bytes.all.current");
    int64_t seg0 = cpu_stat("segment.all.current"), small0 = cpu_stat("allocated_bytes.small_pool.current");
    int64_t dev_alloc0 = cpu_stat("num_device_alloc"), dev_free0 = cpu_stat("num_device_free");
    CT_EXPECT_INT_EQ(ct_memory_allocated(cpu), bytes0);
    CT_EXPECT_INT_EQ(ct_max_memory_allocated(cpu), bytes0); /* right after reset_peak */

    ct_tensor *a = ct_empty(CT_SHAPE(1000));            /* float32: 4000 B -> 4032 (small) */
    ct_tensor *b = ct_empty(CT_SHAPE(256 * 1024));      /* 1 MiB, a class of its own */
    ct_tensor *c = ct_empty(CT_SHAPE(300000));          /* 1 200 000 B -> 10 x 128 KiB */
    int64_t sa = 4032, sb = 1 * MiB, sc = 10 * 128 * KiB, total = sa + sb + sc;
    CT_EXPECT_INT_EQ(cpu_stat("allocation.all.current") - alloc0, 3);
    CT_EXPECT_INT_EQ(cpu_stat("active.all.current") - alloc0, 3);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.all.current") - bytes0, total);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.small_pool.current") - small0, sa);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.current"), sb + sc); /* nothing else is large */
    CT_EXPECT_INT_EQ(cpu_stat("active_bytes.all.current") - bytes0, total);
    CT_EXPECT_INT_EQ(cpu_stat("requested_bytes.all.current") - req0, 4000 + 1 * MiB + 1200000);
    CT_EXPECT_INT_EQ(cpu_stat("reserved_bytes.all.current") - res0, total);
    CT_EXPECT_INT_EQ(cpu_stat("segment.all.current") - seg0, 3);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 3);
    CT_EXPECT_INT_EQ(ct_memory_allocated(cpu) - bytes0, total);
    CT_EXPECT_INT_EQ(ct_max_memory_allocated(cpu) - bytes0, total);
    CT_EXPECT_INT_EQ(ct_memory_reserved(cpu) - res0, total);
    CT_EXPECT_INT_EQ(cpu_stat("max_split_size"), -1);
    CT_EXPECT_INT_EQ(cpu_stat("inactive_split.all.current"), 0);

    /* a large block goes to the cache: allocated drops, reserved stays */
    ct_release(c);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.all.current") - bytes0, sa + sb);
    CT_EXPECT_INT_EQ(cpu_stat("reserved_bytes.all.current") - res0, total);
    CT_EXPECT_INT_EQ(cpu_stat("segment.large_pool.current"), 2);
    CT_EXPECT_INT_EQ(cpu_cached(), sc);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 0);
    /* a small one goes straight back to the system */
    ct_release(a);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.all.current") - bytes0, sb);
    CT_EXPECT_INT_EQ(cpu_stat("reserved_bytes.all.current") - res0, sb + sc);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 1);
    /* peaks stay until reset */
    CT_EXPECT_INT_EQ(ct_max_memory_allocated(cpu) - bytes0, total);
    CT_EXPECT_INT_EQ(ct_max_memory_reserved(cpu) - res0, total);
    CT_EXPECT_INT_EQ(cpu_stat("allocation.all.peak") - alloc0, 3);
    CT_EXPECT_INT_EQ(ct_reset_peak_memory_stats(cpu), CT_OK);
    CT_EXPECT_INT_EQ(ct_max_memory_allocated(cpu) - bytes0, sb);
    CT_EXPECT_INT_EQ(ct_max_memory_reserved(cpu) - res0, sb + sc);

    /* the summary table and the visit see the same numbers */
    char buf[8192];
    int n = ct_memory_summary(cpu, false, buf, sizeof buf);
    CT_EXPECT_MSG(n > 0 && n < (int)sizeof buf && strstr(buf, "CPU"), "memory_summary(cpu) = %d:\n%s", n, buf);
    int segments_n = -1;
    ct_segment_info *segments = NULL;
    CT_EXPECT_INT_EQ(ct_memory_snapshot(cpu, &segments, &segments_n), CT_OK);
    CT_EXPECT_INT_EQ(segments_n, 0); /* no segments to show: blocks are not split */
    ct_memory_snapshot_free(segments, segments_n);

    CT_EXPECT_INT_EQ(ct_reset_accumulated_memory_stats(cpu), CT_OK);
    CT_EXPECT_INT_EQ(cpu_stat("allocation.all.allocated"), 0);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc"), 0);
    ct_release(b);
    CT_EXPECT_INT_EQ(cpu_stat("allocation.all.freed"), 1);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.freed"), sb);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.current"), 0);
    /* the limit is a device feature still */
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction(0.5, cpu), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected a cuda or opencl device, but got: cpu");
}

static void test_reuse(void) {
    fresh_start();
    int64_t dev_alloc0 = cpu_stat("num_device_alloc"), hits0 = cpu_hits();
    ct_tensor *x = bytes_tensor(2 * MiB);
    void *p = ct_data_ptr(x);
    memset(p, 1, 2 * MiB);
    ct_release(x);
    CT_EXPECT_INT_EQ(cpu_cached(), 2 * MiB);
    /* the same size, and a smaller one of the same class, get the same block */
    ct_tensor *y = bytes_tensor(2 * MiB);
    CT_EXPECT(ct_data_ptr(y) == p);
    CT_EXPECT_INT_EQ(cpu_hits() - hits0, 1);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 1);
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    ct_release(y);
    ct_tensor *z = bytes_tensor(2 * MiB - 200 * KiB);
    CT_EXPECT(ct_data_ptr(z) == p);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.current"), 2 * MiB); /* the block's size */
    CT_EXPECT_INT_EQ(cpu_stat("requested_bytes.large_pool.current"), 2 * MiB - 200 * KiB);
    CT_EXPECT_INT_EQ(cpu_hits() - hits0, 2);
    ct_release(z);
    /* blocks of one class come back last freed first */
    ct_tensor *u = bytes_tensor(2 * MiB), *v = bytes_tensor(2 * MiB);
    void *pu = ct_data_ptr(u), *pv = ct_data_ptr(v);
    CT_EXPECT(pu == p);                 /* the cached one, then a new one */
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 2);
    ct_release(u);
    ct_release(v);
    ct_tensor *w = bytes_tensor(2 * MiB);
    CT_EXPECT(ct_data_ptr(w) == pv);
    ct_release(w);
    CT_EXPECT_INT_EQ(cpu_cached(), 4 * MiB);
    /* a training-loop pattern: after the first step every large buffer comes
     * from the cache */
    int64_t segments_after_first = 0, hits_after_first = 0;
    for (int step = 0; step < 4; step++) {
        CT_SCOPE {
            ct_tensor *act = ct_randn(CT_SHAPE(64, 1024));                      /* 256 KiB */
            ct_tensor *h = ct_relu(ct_matmul(act, ct_randn(CT_SHAPE(1024, 512)))); /* 2 MiB, 2 x 128 KiB */
            CT_EXPECT(h != NULL);
        }
        if (step == 0) segments_after_first = cpu_stat("segment.large_pool.allocated"), hits_after_first = cpu_hits();
    }
    CT_EXPECT_INT_EQ(cpu_stat("segment.large_pool.allocated"), segments_after_first);
    CT_EXPECT(cpu_hits() - hits_after_first >= 3 * 4);
}

static void test_empty_cache(void) {
    fresh_start();
    ct_device cpu = ct_device_cpu();
    int64_t dev_free0 = cpu_stat("num_device_free");
    ct_tensor *a = bytes_tensor(3 * MiB), *b = bytes_tensor(1 * MiB), *c = bytes_tensor(600 * KiB);
    memset(ct_data_ptr(a), 7, 3 * MiB);
    ct_release(b);
    ct_release(c);
    CT_EXPECT_INT_EQ(cpu_cached(), 1 * MiB + 640 * KiB);
    CT_EXPECT_INT_EQ(cpu_stat("segment.large_pool.current"), 3);
    CT_EXPECT_INT_EQ(ct_empty_cache(cpu), CT_OK);
    CT_EXPECT_INT_EQ(ct_memory_reserved(cpu), ct_memory_allocated(cpu));
    CT_EXPECT_INT_EQ(cpu_stat("reserved_bytes.large_pool.current"), 3 * MiB);
    CT_EXPECT_INT_EQ(cpu_stat("segment.large_pool.current"), 1);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 2);
    /* the live block is untouched */
    const unsigned char *pa = ct_data_ptr(a);
    CT_EXPECT(pa[0] == 7 && pa[3 * MiB - 1] == 7);
    ct_release(a);
    CT_EXPECT_INT_EQ(cpu_cached(), 3 * MiB);
    ct_device parsed;
    CT_EXPECT_INT_EQ(ct_device_parse("cpu", &parsed), CT_OK);
    CT_EXPECT_INT_EQ(ct_empty_cache(parsed), CT_OK);
    CT_EXPECT_INT_EQ(cpu_stat("reserved_bytes.large_pool.current"), 0);
    CT_EXPECT_INT_EQ(cpu_stat("segment.large_pool.current"), 0);
    CT_EXPECT_INT_EQ(ct_empty_cache(cpu), CT_OK); /* nothing left: still fine */
}

static void test_waste_bound(void) {
    fresh_start();
    int64_t dev_alloc0 = cpu_stat("num_device_alloc");
    /* a 64 MiB free block does not serve a 1 MiB request */
    ct_tensor *big = bytes_tensor(64 * MiB);
    void *pbig = ct_data_ptr(big);
    ct_release(big);
    ct_tensor *small = bytes_tensor(1 * MiB);
    CT_EXPECT(ct_data_ptr(small) != pbig);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 2);
    CT_EXPECT_INT_EQ(cpu_cached(), 64 * MiB);
    ct_release(small);
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    /* a block up to two classes larger is used (1.25 MiB for 1 MiB: 25% more),
     * three classes larger is not (1.375 MiB) */
    ct_tensor *b2 = bytes_tensor(1 * MiB + 256 * KiB);
    void *p2 = ct_data_ptr(b2);
    ct_release(b2);
    ct_tensor *r = bytes_tensor(1 * MiB);
    CT_EXPECT(ct_data_ptr(r) == p2);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.current"), 1 * MiB + 256 * KiB);
    CT_EXPECT_INT_EQ(cpu_stat("requested_bytes.large_pool.current"), 1 * MiB);
    ct_release(r);
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    ct_tensor *b3 = bytes_tensor(1 * MiB + 384 * KiB);
    int64_t hits0 = cpu_hits();
    ct_release(b3);
    r = bytes_tensor(1 * MiB);
    CT_EXPECT_INT_EQ(cpu_hits(), hits0);
    CT_EXPECT_INT_EQ(cpu_stat("allocated_bytes.large_pool.current"), 1 * MiB);
    CT_EXPECT_INT_EQ(cpu_cached(), 1 * MiB + 384 * KiB);
    ct_release(r);
    /* the smallest fitting block wins over a larger one that also fits */
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    ct_tensor *fit1 = bytes_tensor(1 * MiB + 256 * KiB), *fit0 = bytes_tensor(1 * MiB + 128 * KiB);
    void *p0 = ct_data_ptr(fit0);
    ct_release(fit0);
    ct_release(fit1);
    r = bytes_tensor(1 * MiB);
    CT_EXPECT(ct_data_ptr(r) == p0);
    ct_release(r);
}

static void test_cache_limit(void) {
    fresh_start();
    /* by default at least 256 MiB, and at least the most ever allocated */
    CT_EXPECT(ct_cpu_alloc_cache_limit() >= CT_CPU_CACHE_MIN_LIMIT);
    ct_tensor *big[5];
    for (int i = 0; i < 5; i++) big[i] = bytes_tensor(64 * MiB); /* untouched: address space only */
    CT_EXPECT(ct_cpu_alloc_cache_limit() >= (size_t)(320 * MiB));
    for (int i = 0; i < 5; i++) ct_release(big[i]);
    CT_EXPECT_INT_EQ(cpu_cached(), 320 * MiB); /* what one step used, kept for the next */

    /* a smaller limit evicts at once */
    int64_t dev_free0 = cpu_stat("num_device_free");
    ct_cpu_alloc_set_cache_limit(4 * MiB);
    CT_EXPECT_INT_EQ(ct_cpu_alloc_cache_limit(), 4 * MiB);
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 5);
    /* over the limit, the least recently freed block goes */
    ct_tensor *a = bytes_tensor(2 * MiB), *b = bytes_tensor(2 * MiB), *c = bytes_tensor(2 * MiB);
    void *pb = ct_data_ptr(b), *pc = ct_data_ptr(c);
    int64_t dev_alloc0 = cpu_stat("num_device_alloc");
    dev_free0 = cpu_stat("num_device_free");
    ct_release(a);
    ct_release(b);
    CT_EXPECT_INT_EQ(cpu_cached(), 4 * MiB);
    ct_release(c);
    CT_EXPECT_INT_EQ(cpu_cached(), 4 * MiB);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 1);
    /* a block larger than the limit is not cached, and evicts nothing */
    ct_tensor *huge = bytes_tensor(8 * MiB);
    ct_release(huge);
    CT_EXPECT_INT_EQ(cpu_cached(), 4 * MiB);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_free") - dev_free0, 2);
    /* c and b are still there (c first); a was the one evicted */
    ct_tensor *x = bytes_tensor(2 * MiB), *y = bytes_tensor(2 * MiB);
    CT_EXPECT(ct_data_ptr(x) == pc);
    CT_EXPECT(ct_data_ptr(y) == pb);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 1); /* only huge */
    ct_tensor *z = bytes_tensor(2 * MiB);
    CT_EXPECT_INT_EQ(cpu_stat("num_device_alloc") - dev_alloc0, 2);
    ct_release(x);
    ct_release(y);
    ct_release(z);
    CT_EXPECT_INT_EQ(cpu_cached(), 4 * MiB);
    /* a limit of zero caches nothing */
    ct_cpu_alloc_set_cache_limit(0);
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    ct_release(bytes_tensor(1 * MiB));
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    ct_cpu_alloc_set_cache_limit(-1);
    CT_EXPECT(ct_cpu_alloc_cache_limit() >= (size_t)(320 * MiB)); /* the high-water mark is kept */
}

/* ---- threads ------------------------------------------------------------------------ */

enum { STORM_THREADS = 4, STORM_ITERS = 3000, STORM_LIVE = 6 };

typedef struct storm_arg {
    int id;
    uint64_t seed;
    int64_t allocs, failures;
} storm_arg;

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Each buffer carries its owner's tag at both ends: two threads handed the
 * same block would overwrite each other's tags. */
static void *storm(void *varg) {
    storm_arg *arg = varg;
    static const size_t sizes[] = {48, 4096, 100 * 1024, 128 * 1024, 200 * 1024, 1024 * 1024, 3 * 1024 * 1024};
    void *live[STORM_LIVE] = {0};
    size_t live_size[STORM_LIVE] = {0};
    uint64_t tag[STORM_LIVE] = {0};
    for (int it = 0; it < STORM_ITERS; it++) {
        int slot = (int)(next_rand(&arg->seed) % STORM_LIVE);
        if (live[slot]) {
            uint64_t head, tail;
            memcpy(&head, live[slot], 8);
            memcpy(&tail, (char *)live[slot] + live_size[slot] - 8, 8);
            if (head != tag[slot] || tail != tag[slot]) arg->failures++;
            ct_cpu_free(live[slot]);
            live[slot] = NULL;
        }
        size_t n = sizes[next_rand(&arg->seed) % (sizeof sizes / sizeof *sizes)];
        if (ct_cpu_alloc(n, &live[slot]) != CT_OK) {
            arg->failures++;
            continue;
        }
        arg->allocs++;
        live_size[slot] = n;
        tag[slot] = ((uint64_t)arg->id << 32) | (uint64_t)it;
        memcpy(live[slot], &tag[slot], 8);
        memcpy((char *)live[slot] + n - 8, &tag[slot], 8);
        if (it % 500 == 0 && arg->id == 0) ct_cpu_alloc_empty_cache(); /* races with the others */
    }
    for (int i = 0; i < STORM_LIVE; i++) ct_cpu_free(live[i]);
    return NULL;
}

static void test_threads(void) {
    fresh_start();
    ct_cpu_alloc_set_cache_limit(8 * MiB); /* evictions race with reuse too */
    ct_memory_stats s0, s1;
    CT_EXPECT_INT_EQ(ct_memory_stats_get(ct_device_cpu(), &s0), CT_OK);
    pthread_t th[STORM_THREADS];
    storm_arg args[STORM_THREADS];
    for (int i = 0; i < STORM_THREADS; i++) {
        args[i] = (storm_arg){i, ct_test_rand_u64() | 1, 0, 0};
        CT_EXPECT_INT_EQ(pthread_create(&th[i], NULL, storm, &args[i]), 0);
    }
    int64_t allocs = 0;
    for (int i = 0; i < STORM_THREADS; i++) {
        pthread_join(th[i], NULL);
        CT_EXPECT_MSG(args[i].failures == 0, "thread %d: %lld blocks shared or failed", i, (long long)args[i].failures);
        allocs += args[i].allocs;
    }
    CT_EXPECT_INT_EQ(allocs, (int64_t)STORM_THREADS * STORM_ITERS);
    CT_EXPECT_INT_EQ(ct_memory_stats_get(ct_device_cpu(), &s1), CT_OK);
    /* everything given back: the counts return to where they were */
    for (int p = 0; p < CT_POOL_COUNT; p++) {
        CT_EXPECT_INT_EQ(s1.allocation[p].current, s0.allocation[p].current);
        CT_EXPECT_INT_EQ(s1.allocated_bytes[p].current, s0.allocated_bytes[p].current);
        CT_EXPECT_INT_EQ(s1.requested_bytes[p].current, s0.requested_bytes[p].current);
        CT_EXPECT_INT_EQ(s1.active[p].current, s1.allocation[p].current);
        /* over the storm, the change of current = allocated - freed */
#define EXPECT_BALANCED(field)                                                                    \
    CT_EXPECT_INT_EQ((s1.field[p].allocated - s0.field[p].allocated) - (s1.field[p].freed - s0.field[p].freed), \
                     s1.field[p].current - s0.field[p].current)
        EXPECT_BALANCED(allocation);
        EXPECT_BALANCED(allocated_bytes);
        EXPECT_BALANCED(requested_bytes);
        EXPECT_BALANCED(segment);
        EXPECT_BALANCED(reserved_bytes);
#undef EXPECT_BALANCED
    }
    CT_EXPECT_INT_EQ(s1.allocation[CT_POOL_ALL].allocated - s0.allocation[CT_POOL_ALL].allocated,
                     (int64_t)STORM_THREADS * STORM_ITERS);
    CT_EXPECT_INT_EQ((s1.num_device_alloc - s0.num_device_alloc) - (s1.num_device_free - s0.num_device_free),
                     s1.segment[CT_POOL_ALL].current - s0.segment[CT_POOL_ALL].current);
    CT_EXPECT(s1.allocation[CT_POOL_ALL].peak - s0.allocation[CT_POOL_ALL].current <= STORM_THREADS * STORM_LIVE);
    CT_EXPECT(s1.allocated_bytes[CT_POOL_ALL].peak <= s0.allocated_bytes[CT_POOL_ALL].peak +
                                                          (int64_t)STORM_THREADS * STORM_LIVE * 3 * MiB);
    CT_EXPECT(s1.reserved_bytes[CT_POOL_ALL].current - s1.allocated_bytes[CT_POOL_ALL].current <= 8 * MiB);
    CT_EXPECT(s1.num_alloc_retries == s0.num_alloc_retries && s1.num_ooms == s0.num_ooms);
    /* the cache was used */
    CT_EXPECT(s1.allocation[CT_POOL_LARGE].allocated - s0.allocation[CT_POOL_LARGE].allocated >
              s1.segment[CT_POOL_LARGE].allocated - s0.segment[CT_POOL_LARGE].allocated);
    ct_cpu_alloc_set_cache_limit(-1);
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    CT_EXPECT_INT_EQ(ct_memory_reserved(ct_device_cpu()), ct_memory_allocated(ct_device_cpu()));
}

/* ---- out of memory -------------------------------------------------------------------- */

static void test_out_of_memory(void) {
    fresh_start();
    int64_t retries0 = cpu_stat("num_alloc_retries"), ooms0 = cpu_stat("num_ooms");
    /* the system fails once: the cache goes back and the retry succeeds */
    ct_release(bytes_tensor(2 * MiB));
    CT_EXPECT_INT_EQ(cpu_cached(), 2 * MiB);
    ct_cpu_alloc_fail_next(1);
    ct_tensor *t = bytes_tensor(4 * MiB);
    CT_EXPECT(t != NULL);
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    CT_EXPECT_INT_EQ(cpu_stat("num_alloc_retries") - retries0, 1);
    CT_EXPECT_INT_EQ(cpu_stat("num_ooms") - ooms0, 0);
    ct_release(t);
    /* it fails twice: PyTorch's message, the cache given back, nothing leaked */
    CT_EXPECT_INT_EQ(ct_empty_cache(ct_device_cpu()), CT_OK);
    ct_release(bytes_tensor(2 * MiB));
    int64_t allocated0 = ct_memory_allocated(ct_device_cpu()), storages0 = ct_live_storages();
    ct_cpu_alloc_fail_next(2);
    t = ct_empty(CT_SHAPE(1024, 1024), .dtype = CT_FLOAT32);
    CT_EXPECT(t == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "DefaultCPUAllocator: not enough memory: you tried to allocate 4194304 bytes.");
    CT_EXPECT_INT_EQ(cpu_cached(), 0);
    CT_EXPECT_INT_EQ(cpu_stat("num_alloc_retries") - retries0, 2);
    CT_EXPECT_INT_EQ(cpu_stat("num_ooms") - ooms0, 1);
    CT_EXPECT_INT_EQ(ct_memory_allocated(ct_device_cpu()), allocated0);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages0);
    /* with nothing cached, no retry is counted */
    ct_cpu_alloc_fail_next(1);
    CT_EXPECT(ct_empty(CT_SHAPE(1024, 1024)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "you tried to allocate 4194304 bytes");
    CT_EXPECT_INT_EQ(cpu_stat("num_alloc_retries") - retries0, 2);
    CT_EXPECT_INT_EQ(cpu_stat("num_ooms") - ooms0, 2);
    /* more than any machine has (tensors that large are refused before) */
    void *p = (void *)&p;
    CT_EXPECT_INT_EQ(ct_cpu_alloc((size_t)1 << 62, &p), CT_ERR_OOM);
    CT_EXPECT(p == (void *)&p); /* untouched on failure */
    CT_EXPECT_ERROR(CT_ERR_OOM, "DefaultCPUAllocator: not enough memory: you tried to allocate 4611686018427387904 bytes.");
    CT_EXPECT_INT_EQ(cpu_stat("num_ooms") - ooms0, 3);
    /* and everything works afterwards */
    t = bytes_tensor(4 * MiB);
    CT_EXPECT(t != NULL);
    ct_release(t);
    ct_cpu_alloc_fail_next(0);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_size_classes_and_alignment);
    CT_RUN(test_statistics_exact);
    CT_RUN(test_reuse);
    CT_RUN(test_empty_cache);
    CT_RUN(test_waste_bound);
    CT_RUN(test_cache_limit);
    CT_RUN(test_threads);
    CT_RUN(test_out_of_memory);
    return ct_test_finish();
}
