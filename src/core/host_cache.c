/*
 * host_cache.c — the pinned (page-locked) host memory cache, PyTorch's
 * CachingHostAllocator (reference section 5.2).
 *
 * Why: page-locking memory is slow and takes a driver-wide lock, and
 * non_blocking copies need pinned buffers over and over. Requests round up
 * to a power of two and freed blocks go to a LIFO list per power; blocks are
 * never split or merged. A block used by a stream's asynchronous copy
 * (record_stream) is reused only once an event recorded on that stream at
 * free time has completed; events are polled oldest first at each malloc.
 * Freed pointers are found through a small hash table keyed by address.
 * One addition to PyTorch: when the driver has no page-locked memory left,
 * the cached free blocks are given back and the allocation tried once more.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "alloc_cache.h"
#include "alloc_common.h"
#include "error.h"

enum { NUM_BUCKETS = 64, MIN_TABLE = 64 };

typedef struct host_block {
    void *ptr;
    size_t size;                 /* a power of two */
    size_t requested;            /* while active, else 0 */
    bool allocated;
    int event_count;
    ct_ptr_set streams;          /* recorded while allocated */
    struct host_block *next_free;  /* in its bucket's free list */
    struct host_block *next_hash;  /* in its hash chain */
} host_block;

typedef struct host_event {
    void *event;
    host_block *blk;
    struct host_event *next;
} host_event;

struct ct_host_cache {
    ct_host_ops ops;
    pthread_mutex_t lock;
    host_block *free_list[NUM_BUCKETS];
    host_block **table;          /* every block, by ptr */
    size_t table_size, num_blocks;
    host_event *events_head, *events_tail; /* oldest first */
    ct_memory_stats stats;
};

/* ---- the ptr -> block table ---------------------------------------------------- */

static size_t hash_ptr(const void *p, size_t table_size) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)(x & (table_size - 1));
}

static host_block *find_block(const ct_host_cache *c, const void *p) {
    if (!c->table || !p) return NULL;
    for (host_block *b = c->table[hash_ptr(p, c->table_size)]; b; b = b->next_hash)
        if (b->ptr == p) return b;
    return NULL;
}

static bool grow_table(ct_host_cache *c) {
    size_t size = c->table_size ? 2 * c->table_size : MIN_TABLE;
    host_block **table = (host_block **)calloc(size, sizeof *table);
    if (!table) return false;
    for (size_t i = 0; i < c->table_size; i++)
        for (host_block *b = c->table[i], *next; b; b = next) {
            next = b->next_hash;
            size_t h = hash_ptr(b->ptr, size);
            b->next_hash = table[h];
            table[h] = b;
        }
    free(c->table);
    c->table = table;
    c->table_size = size;
    return true;
}

static bool table_insert(ct_host_cache *c, host_block *b) {
    if (c->num_blocks + 1 > c->table_size && !grow_table(c)) return false;
    size_t h = hash_ptr(b->ptr, c->table_size);
    b->next_hash = c->table[h];
    c->table[h] = b;
    c->num_blocks++;
    return true;
}

static void table_remove(ct_host_cache *c, host_block *b) {
    host_block **link = &c->table[hash_ptr(b->ptr, c->table_size)];
    while (*link != b) link = &(*link)->next_hash;
    *link = b->next_hash;
    c->num_blocks--;
}

/* ---- buckets ------------------------------------------------------------------ */

/* PowerOf2Ceil and its log2: the bucket of a rounded size. */
static int bucket_of(size_t size) {
    int k = 0;
    while (((size_t)1 << k) < size) k++;
    return k;
}

static void push_free(ct_host_cache *c, host_block *b) {
    int k = bucket_of(b->size);
    b->next_free = c->free_list[k];
    c->free_list[k] = b;
}

/* The block is free for reuse: no longer active. */
static void make_available(ct_host_cache *c, host_block *b) {
    ct_stat_decrease(&c->stats.active[CT_POOL_ALL], 1);
    ct_stat_decrease(&c->stats.active_bytes[CT_POOL_ALL], (int64_t)b->size);
    ct_stat_decrease(&c->stats.requested_bytes[CT_POOL_ALL], (int64_t)b->requested);
    b->requested = 0;
    push_free(c, b);
}

/* ---- events ------------------------------------------------------------------- */

static void complete_event(ct_host_cache *c, host_event *e) {
    host_block *b = e->blk;
    c->ops.event_destroy(c->ops.ctx, e->event);
    free(e);
    if (--b->event_count == 0) make_available(c, b);
}

static host_event *pop_event(ct_host_cache *c) {
    host_event *e = c->events_head;
    c->events_head = e->next;
    if (!c->events_head) c->events_tail = NULL;
    return e;
}

/* Oldest first; the first event not yet complete stops the walk. */
static void process_events(ct_host_cache *c) {
    while (c->events_head && c->ops.event_done(c->ops.ctx, c->events_head->event))
        complete_event(c, pop_event(c));
}

static void wait_all_events(ct_host_cache *c) {
    while (c->events_head) {
        host_event *e = pop_event(c);
        c->ops.event_wait(c->ops.ctx, e->event);
        complete_event(c, e);
    }
}

/* One event per recorded stream; a stream whose event cannot be recorded
 * is skipped (its error stays set). */
static void record_free_events(ct_host_cache *c, host_block *b) {
    ct_ptr_set streams = b->streams;
    b->streams = (ct_ptr_set){0};
    for (int i = 0; i < streams.count; i++) {
        host_event *e = (host_event *)malloc(sizeof *e);
        if (!e) {
            ct_error_set(CT_ERR_OOM, "pinned memory: out of host memory queueing a stream event");
            continue;
        }
        if (c->ops.event_record(c->ops.ctx, streams.items[i], &e->event) != CT_OK) {
            free(e);
            continue;
        }
        e->blk = b;
        e->next = NULL;
        if (c->events_tail)
            c->events_tail->next = e;
        else
            c->events_head = e;
        c->events_tail = e;
        b->event_count++;
    }
    ct_ptr_set_clear(&streams);
    if (b->event_count == 0) make_available(c, b);
}

/* ---- raw blocks ----------------------------------------------------------------- */

static void release_block(ct_host_cache *c, host_block *b) {
    table_remove(c, b);
    c->ops.raw_free(c->ops.ctx, b->ptr);
    c->stats.num_device_free++;
    ct_stat_decrease(&c->stats.segment[CT_POOL_ALL], 1);
    ct_stat_decrease(&c->stats.reserved_bytes[CT_POOL_ALL], (int64_t)b->size);
    ct_ptr_set_clear(&b->streams);
    free(b);
}

/* Give every cached (free-listed) block back. */
static void release_free_blocks(ct_host_cache *c) {
    for (int k = 0; k < NUM_BUCKETS; k++)
        while (c->free_list[k]) {
            host_block *b = c->free_list[k];
            c->free_list[k] = b->next_free;
            release_block(c, b);
        }
}

/* A fresh page-locked block. When the driver is out of memory, the cached
 * blocks are given back and the allocation tried once more. */
static ct_status new_block(ct_host_cache *c, size_t size, host_block **out) {
    host_block *b = (host_block *)calloc(1, sizeof *b);
    if (!b) return ct_error_set(CT_ERR_OOM, "pinned memory: out of host memory for block records");
    ct_status st = c->ops.raw_alloc(c->ops.ctx, size, &b->ptr);
    if (st == CT_ERR_OOM) {
        release_free_blocks(c);
        st = c->ops.raw_alloc(c->ops.ctx, size, &b->ptr);
    }
    if (st != CT_OK) {
        free(b);
        if (st != CT_ERR_OOM) return st;
        char tried[32];
        ct_format_size(size, tried, sizeof tried);
        return ct_error_set(CT_ERR_OOM, "pinned memory: out of page-locked host memory. Tried to allocate %s.", tried);
    }
    if (!table_insert(c, b)) {
        c->ops.raw_free(c->ops.ctx, b->ptr);
        free(b);
        return ct_error_set(CT_ERR_OOM, "pinned memory: out of host memory for block records");
    }
    b->size = size;
    c->stats.num_device_alloc++;
    ct_stat_increase(&c->stats.segment[CT_POOL_ALL], 1);
    ct_stat_increase(&c->stats.reserved_bytes[CT_POOL_ALL], (int64_t)size);
    *out = b;
    return CT_OK;
}

/* ---- the API ------------------------------------------------------------------------ */

ct_host_cache *ct_host_cache_create(const ct_host_ops *ops) {
    CT_CHECK_NULL(ops && ops->raw_alloc && ops->raw_free && ops->event_record && ops->event_done &&
                      ops->event_wait && ops->event_destroy,
                  CT_ERR_INVALID_ARG, "pinned memory: every op of ct_host_ops is required");
    ct_host_cache *c = (ct_host_cache *)calloc(1, sizeof *c);
    CT_CHECK_NULL(c, CT_ERR_OOM, "pinned memory: out of host memory");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        ct_error_set(CT_ERR_INTERNAL, "pinned memory: cannot create its mutex");
        return NULL;
    }
    c->ops = *ops;
    c->stats.max_split_size = -1;
    return c;
}

void ct_host_cache_destroy(ct_host_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    wait_all_events(c);
    int64_t live = c->stats.allocation[CT_POOL_ALL].current;
    if (live > 0)
        fprintf(stderr, "ctorch: pinned host allocator destroyed with %lld live blocks (%lld bytes)\n",
                (long long)live, (long long)c->stats.allocated_bytes[CT_POOL_ALL].current);
    for (size_t i = 0; i < c->table_size; i++)
        for (host_block *b = c->table[i], *next; b; b = next) {
            next = b->next_hash;
            c->ops.raw_free(c->ops.ctx, b->ptr);
            ct_ptr_set_clear(&b->streams);
            free(b);
        }
    free(c->table);
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

ct_status ct_host_cache_malloc(ct_host_cache *c, size_t nbytes, void **ptr) {
    CT_CHECK_STATUS(c && ptr, CT_ERR_INVALID_ARG, "pinned memory malloc: NULL argument");
    *ptr = NULL;
    if (nbytes == 0) return CT_OK;
    CT_CHECK_STATUS(nbytes <= (SIZE_MAX >> 1) + 1, CT_ERR_OOM,
                    "pinned memory: out of page-locked host memory. Tried to allocate %zu bytes.", nbytes);
    pthread_mutex_lock(&c->lock);
    process_events(c);
    int k = bucket_of(nbytes);
    size_t size = (size_t)1 << k;
    host_block *b = c->free_list[k];
    ct_status st = CT_OK;
    if (b)
        c->free_list[k] = b->next_free;
    else
        st = new_block(c, size, &b);
    if (st == CT_OK) {
        b->allocated = true;
        b->requested = nbytes;
        ct_stat_increase(&c->stats.allocation[CT_POOL_ALL], 1);
        ct_stat_increase(&c->stats.allocated_bytes[CT_POOL_ALL], (int64_t)size);
        ct_stat_increase(&c->stats.active[CT_POOL_ALL], 1);
        ct_stat_increase(&c->stats.active_bytes[CT_POOL_ALL], (int64_t)size);
        ct_stat_increase(&c->stats.requested_bytes[CT_POOL_ALL], (int64_t)nbytes);
        *ptr = b->ptr;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

void ct_host_cache_free(ct_host_cache *c, void *ptr) {
    if (!c || !ptr) return;
    pthread_mutex_lock(&c->lock);
    host_block *b = find_block(c, ptr);
    if (!b || !b->allocated) {
        pthread_mutex_unlock(&c->lock);
        ct_error_set(CT_ERR_INVALID_ARG, "pinned memory free: %p is not an allocated block of the pinned allocator",
                     ptr);
        return;
    }
    b->allocated = false;
    ct_stat_decrease(&c->stats.allocation[CT_POOL_ALL], 1);
    ct_stat_decrease(&c->stats.allocated_bytes[CT_POOL_ALL], (int64_t)b->size);
    if (b->streams.count > 0)
        record_free_events(c, b);
    else
        make_available(c, b);
    pthread_mutex_unlock(&c->lock);
}

bool ct_host_cache_record_stream(ct_host_cache *c, void *ptr, void *stream) {
    if (!c || !ptr) return false;
    pthread_mutex_lock(&c->lock);
    host_block *b = find_block(c, ptr);
    bool added = !b || !b->allocated || ct_ptr_set_add(&b->streams, stream);
    pthread_mutex_unlock(&c->lock);
    if (!added) ct_error_set(CT_ERR_OOM, "record_stream: out of host memory");
    return b != NULL;
}

bool ct_host_cache_owns(ct_host_cache *c, const void *ptr) {
    if (!c || !ptr) return false;
    pthread_mutex_lock(&c->lock);
    bool owned = find_block(c, ptr) != NULL;
    pthread_mutex_unlock(&c->lock);
    return owned;
}

ct_status ct_host_cache_empty(ct_host_cache *c) {
    CT_CHECK_STATUS(c, CT_ERR_INVALID_ARG, "host_empty_cache: NULL allocator");
    pthread_mutex_lock(&c->lock);
    process_events(c);
    release_free_blocks(c);
    pthread_mutex_unlock(&c->lock);
    return CT_OK;
}

void ct_host_cache_stats(ct_host_cache *c, ct_memory_stats *out) {
    if (!c || !out) return;
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}
