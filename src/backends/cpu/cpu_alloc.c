/*
 * cpu_alloc.c — the CPU backend's host memory allocator: a cache of large
 * freed buffers in front of aligned_alloc, with the device allocator's
 * statistics.
 *
 * Why: a training step frees and re-creates the same large activations and
 * gradients every step. Straight from the C library each one is a fresh
 * mmap whose pages fault in (and are zeroed by the kernel) one by one, then
 * a munmap; profiles of the CNN benchmark spent a fifth of the time there.
 * Keeping freed large buffers and handing them out again removes that.
 *
 * Design (docs/device-runtime.md, "The CPU allocator"):
 *  - Every buffer carries a 16-byte tag right in front of the pointer
 *    handed out, so free() knows its kind and size without a lookup. Small
 *    requests (< CT_CPU_CACHE_THRESHOLD) are malloc'd with room to align the
 *    data to 64 bytes by hand: glibc serves malloc from its per-thread cache
 *    (about 10 ns for malloc+free) but aligned_alloc from the arena bins
 *    (about 50 ns), so tiny tensors get cheaper than with aligned_alloc,
 *    statistics included. Large blocks have a 64-byte header (their links
 *    in the free lists) ending with the same tag.
 *  - Large requests round up to one of 8 size classes per power of two
 *    (waste < 12.5%). A free block is reused for a request of its class or
 *    of up to two classes below (at most 25% more bytes), so a 1 MiB request
 *    never pins a 64 MiB block. Free lists per class are LIFO (the most
 *    recently freed block is the warmest in the CPU caches).
 *  - Free (cached) bytes are bounded: by default by the larger of 256 MiB
 *    and the high-water mark of allocated large bytes — the most a loop
 *    needs to get back from one step to the next — so memory held beyond
 *    what the program ever used at once is bounded by about its peak. Over
 *    the limit the least recently freed blocks go back to the system.
 *  - When the system has no memory, the whole cache is given back and the
 *    allocation tried once more before out-of-memory is reported.
 *  - One lock guards lists and statistics; system calls happen outside it.
 *    It is a spin-then-yield lock on a C11 atomic flag, not a pthread
 *    mutex: every small tensor takes it twice and the sections are a few
 *    counter updates, where a mutex lock/unlock pair cost about 12 ns more
 *    (measured) — a few percent of a 1-element add. ThreadSanitizer sees
 *    its acquire/release ordering.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/alloc_common.h"
#include "../../core/error.h"
#include "cpu_alloc.h"

enum {
    HDR = 64,                     /* large-block header in front of the data */
    SMALL_PAD = 80,               /* tag + alignment slack of a small buffer */
    MIN_CLASS_LOG2 = 17,          /* log2(CT_CPU_CACHE_THRESHOLD) */
    CLASSES_PER_POW2 = 8,
    MAX_LOG2 = 62,                /* larger requests cannot be rounded */
    NUM_CLASSES = (MAX_LOG2 + 1 - MIN_CLASS_LOG2) * CLASSES_PER_POW2
};
_Static_assert(CT_CPU_CACHE_THRESHOLD == (size_t)1 << MIN_CLASS_LOG2, "threshold is the first size class");
_Static_assert(CT_CPU_CACHE_THRESHOLD < UINT32_MAX, "small requests fit the tag");

#define MAGIC_SMALL 0x43545331u   /* "CTS1" */
#define MAGIC_LARGE 0x4354424cu   /* "CTBL": a large block in use */
#define MAGIC_CACHED 0x43544243u  /* "CTBC": a large block in the free lists */

/* Right in front of every buffer handed out. */
typedef struct tag {
    void *raw;                    /* what malloc returned (small buffers) */
    uint32_t small_requested;     /* bytes asked for (small buffers) */
    uint32_t magic;
} tag;

typedef struct blk {
    struct blk *lru_prev, *lru_next; /* all free blocks, most recently freed first */
    struct blk *cls_prev, *cls_next; /* free blocks of this class, LIFO */
    size_t size;                  /* usable bytes after the header (a class size) */
    size_t requested;             /* bytes asked for, while allocated */
    tag t;
} blk;
_Static_assert(sizeof(blk) == HDR && offsetof(blk, t) + sizeof(tag) == HDR, "the tag ends the header");

static struct {
    blk *free_head[NUM_CLASSES];
    blk *lru_head, *lru_tail;
    size_t cached_bytes;          /* free blocks in the cache */
    size_t large_high_water;      /* most large bytes ever allocated at once (not reset) */
    int64_t limit;                /* -1: the default rule */
    ct_memory_stats stats;        /* active* are derived when read */
} g = {.limit = -1};

static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static atomic_int g_fail_next;

static void lock(void) {
    /* the holder is a few stores from done unless it was preempted */
    for (unsigned spins = 1; atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire); spins++)
        if (spins % 64 == 0) sched_yield();
}
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static inline tag *tag_of(void *p) { return (tag *)((char *)p - sizeof(tag)); }
static inline blk *header_of(void *p) { return (blk *)((char *)p - HDR); }
static inline void *data_of(blk *b) { return (char *)b + HDR; }

/* ---- size classes ------------------------------------------------------------ */

static int floor_log2(size_t n) {
#if defined(__GNUC__)
    return 63 - __builtin_clzll((unsigned long long)n);
#else
    int k = 0;
    while (n >>= 1) k++;
    return k;
#endif
}

/* The class-rounded size of a large request (n >= threshold, n < 2^62). */
static size_t round_large(size_t n, int *cls) {
    int p = floor_log2(n);
    size_t step = (size_t)1 << (p - 3);
    size_t r = (n + step - 1) & ~(step - 1);
    int q = floor_log2(r);
    *cls = (q - MIN_CLASS_LOG2) * CLASSES_PER_POW2 + (int)(r >> (q - 3)) - CLASSES_PER_POW2;
    return r;
}

static size_t round_small(size_t n) { return n ? (n + 63) & ~(size_t)63 : 64; }

static int class_of(const blk *b) {
    int cls;
    round_large(b->size, &cls);
    return cls;
}

size_t ct_cpu_alloc_round(size_t nbytes) {
    int cls;
    if (nbytes < CT_CPU_CACHE_THRESHOLD) return round_small(nbytes);
    return nbytes >> MAX_LOG2 ? nbytes : round_large(nbytes, &cls);
}

/* ---- free lists (caller holds the lock) ------------------------------------------ */

static void cache_push(blk *b) {
    int cls = class_of(b);
    b->t.magic = MAGIC_CACHED;
    b->cls_prev = NULL;
    b->cls_next = g.free_head[cls];
    if (b->cls_next) b->cls_next->cls_prev = b;
    g.free_head[cls] = b;
    b->lru_prev = NULL;
    b->lru_next = g.lru_head;
    if (g.lru_head) g.lru_head->lru_prev = b;
    else g.lru_tail = b;
    g.lru_head = b;
    g.cached_bytes += b->size;
}

static void cache_unlink(blk *b) {
    if (b->cls_prev) b->cls_prev->cls_next = b->cls_next;
    else g.free_head[class_of(b)] = b->cls_next;
    if (b->cls_next) b->cls_next->cls_prev = b->cls_prev;
    if (b->lru_prev) b->lru_prev->lru_next = b->lru_next;
    else g.lru_head = b->lru_next;
    if (b->lru_next) b->lru_next->lru_prev = b->lru_prev;
    else g.lru_tail = b->lru_prev;
    b->t.magic = MAGIC_LARGE;
    g.cached_bytes -= b->size;
}

/* Best fit: the smallest class that has a free block, within the waste bound. */
static blk *cache_take(int cls) {
    int last = cls + CT_CPU_CACHE_MAX_EXTRA_CLASSES;
    for (int c = cls; c <= last && c < NUM_CLASSES; c++)
        if (g.free_head[c]) {
            blk *b = g.free_head[c];
            cache_unlink(b);
            return b;
        }
    return NULL;
}

static size_t current_limit(void) {
    if (g.limit >= 0) return (size_t)g.limit;
    return g.large_high_water > CT_CPU_CACHE_MIN_LIMIT ? g.large_high_water : CT_CPU_CACHE_MIN_LIMIT;
}

/* A block leaves the cache for the system: count it and chain it on `out`
 * (through lru_next) to be freed once the lock is released. */
static void retire(blk *b, blk **out) {
    ct_stat_array_decrease(g.stats.segment, CT_POOL_LARGE, 1);
    ct_stat_array_decrease(g.stats.reserved_bytes, CT_POOL_LARGE, (int64_t)b->size);
    g.stats.num_device_free++;
    b->lru_next = *out;
    *out = b;
}

/* Evict least recently freed blocks until the cache fits in `limit`. */
static blk *trim_to(size_t limit) {
    blk *victims = NULL;
    while (g.cached_bytes > limit) {
        blk *b = g.lru_tail;
        cache_unlink(b);
        retire(b, &victims);
    }
    return victims;
}

static void release_all(blk *victims) {
    while (victims) {
        blk *next = victims->lru_next;
        free(victims);
        victims = next;
    }
}

/* Empties the cache; true when something was given back. */
static bool give_back_cache(bool count_retry) {
    lock();
    blk *victims = trim_to(0);
    if (victims && count_retry) g.stats.num_alloc_retries++;
    unlock();
    release_all(victims);
    return victims != NULL;
}

/* ---- allocation -------------------------------------------------------------------- */

static ct_status out_of_memory(size_t nbytes) {
    lock();
    g.stats.num_ooms++;
    unlock();
    return ct_error_set(CT_ERR_OOM, "DefaultCPUAllocator: not enough memory: you tried to allocate %zu bytes.",
                        nbytes);
}

/* The system allocation of a large block; the tests can make it fail. */
static blk *system_alloc_large(size_t size) {
    int k = atomic_load_explicit(&g_fail_next, memory_order_relaxed);
    while (k > 0 && !atomic_compare_exchange_weak(&g_fail_next, &k, k - 1)) {}
    if (k > 0) return NULL;
    return (blk *)aligned_alloc(64, HDR + size);
}

static void count_alloc(int pool, size_t size, size_t requested) {
    ct_stat_array_increase(g.stats.allocation, pool, 1);
    ct_stat_array_increase(g.stats.allocated_bytes, pool, (int64_t)size);
    ct_stat_array_increase(g.stats.requested_bytes, pool, (int64_t)requested);
}
static void count_free(int pool, size_t size, size_t requested) {
    ct_stat_array_decrease(g.stats.allocation, pool, 1);
    ct_stat_array_decrease(g.stats.allocated_bytes, pool, (int64_t)size);
    ct_stat_array_decrease(g.stats.requested_bytes, pool, (int64_t)requested);
}
static void count_segment(int pool, size_t size) {
    ct_stat_array_increase(g.stats.segment, pool, 1);
    ct_stat_array_increase(g.stats.reserved_bytes, pool, (int64_t)size);
    g.stats.num_device_alloc++;
}

static ct_status alloc_small(size_t nbytes, void **ptr) {
    size_t size = round_small(nbytes);
    void *raw = malloc(size + SMALL_PAD);
    if (!raw && give_back_cache(true)) raw = malloc(size + SMALL_PAD);
    if (!raw) return out_of_memory(nbytes);
    /* at least a tag's room in front, and size bytes behind: raw + SMALL_PAD
     * >= data + size since data <= raw + sizeof(tag) + 63 */
    char *data = (char *)(((uintptr_t)raw + sizeof(tag) + 63) & ~(uintptr_t)63);
    tag *t = tag_of(data);
    t->raw = raw;
    t->small_requested = (uint32_t)nbytes;
    t->magic = MAGIC_SMALL;
    lock();
    count_segment(CT_POOL_SMALL, size);
    count_alloc(CT_POOL_SMALL, size, nbytes);
    unlock();
    *ptr = data;
    return CT_OK;
}

static void note_large_allocated(void) {
    size_t now = (size_t)g.stats.allocated_bytes[CT_POOL_LARGE].current;
    if (now > g.large_high_water) g.large_high_water = now;
}

static ct_status alloc_large(size_t nbytes, void **ptr) {
    if (nbytes >> MAX_LOG2) return out_of_memory(nbytes); /* more than any machine has */
    int cls;
    size_t size = round_large(nbytes, &cls);
    lock();
    blk *b = cache_take(cls);
    if (b) {
        b->requested = nbytes;
        count_alloc(CT_POOL_LARGE, b->size, nbytes);
        note_large_allocated();
        unlock();
        *ptr = data_of(b);
        return CT_OK;
    }
    unlock();

    b = system_alloc_large(size);
    if (!b && give_back_cache(true)) b = system_alloc_large(size);
    if (!b) return out_of_memory(nbytes);
    b->t.raw = b;
    b->t.small_requested = 0;
    b->t.magic = MAGIC_LARGE;
    b->size = size;
    b->requested = nbytes;
    lock();
    count_segment(CT_POOL_LARGE, size);
    count_alloc(CT_POOL_LARGE, size, nbytes);
    note_large_allocated();
    unlock();
    *ptr = data_of(b);
    return CT_OK;
}

ct_status ct_cpu_alloc(size_t nbytes, void **ptr) {
    return nbytes < CT_CPU_CACHE_THRESHOLD ? alloc_small(nbytes, ptr) : alloc_large(nbytes, ptr);
}

void ct_cpu_free(void *ptr) {
    if (!ptr) return;
    tag *t = tag_of(ptr);
    if (t->magic == MAGIC_SMALL) {
        size_t requested = t->small_requested, size = round_small(requested);
        lock();
        count_free(CT_POOL_SMALL, size, requested);
        ct_stat_array_decrease(g.stats.segment, CT_POOL_SMALL, 1);
        ct_stat_array_decrease(g.stats.reserved_bytes, CT_POOL_SMALL, (int64_t)size);
        g.stats.num_device_free++;
        unlock();
        t->magic = 0; /* a second free of the same pointer then trips the assertion */
        free(t->raw);
        return;
    }
    /* anything else is a ctorch bug: a foreign pointer or a second free */
    CT_ASSERT(t->magic == MAGIC_LARGE);
    blk *b = header_of(ptr);
    blk *victims = NULL;
    lock();
    count_free(CT_POOL_LARGE, b->size, b->requested);
    b->requested = 0;
    size_t limit = current_limit();
    if (b->size > limit) {
        retire(b, &victims); /* caching it would push out everything else */
    } else {
        cache_push(b);
        victims = trim_to(limit);
    }
    unlock();
    release_all(victims);
}

/* ---- statistics and control ------------------------------------------------------------ */

void ct_cpu_alloc_stats(ct_memory_stats *out) {
    lock();
    *out = g.stats;
    unlock();
    /* nothing waits on streams on the CPU: every allocated block is active */
    memcpy(out->active, out->allocation, sizeof out->active);
    memcpy(out->active_bytes, out->allocated_bytes, sizeof out->active_bytes);
    out->max_split_size = -1;
}

void ct_cpu_alloc_reset_peak(void) {
    lock();
    ct_memory_stats_reset_peak(&g.stats);
    unlock();
}

void ct_cpu_alloc_reset_accumulated(void) {
    lock();
    ct_memory_stats_reset_accumulated(&g.stats);
    unlock();
}

void ct_cpu_alloc_empty_cache(void) { give_back_cache(false); }

void ct_cpu_alloc_set_cache_limit(int64_t bytes) {
    lock();
    g.limit = bytes < 0 ? -1 : bytes;
    blk *victims = trim_to(current_limit());
    unlock();
    release_all(victims);
}

size_t ct_cpu_alloc_cache_limit(void) {
    lock();
    size_t limit = current_limit();
    unlock();
    return limit;
}

void ct_cpu_alloc_fail_next(int n) { atomic_store(&g_fail_next, n > 0 ? n : 0); }
