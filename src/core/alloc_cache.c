/*
 * alloc_cache.c — the caching device allocator, PyTorch's
 * CUDACachingAllocator written once for every device backend
 * (../shared/reference/pytorch-memory-streams.md sections 1–3).
 *
 * Why a cache: raw device allocations are slow and synchronising, so freed
 * blocks are kept and reused. Requests round up to 512 bytes; those up to
 * 1 MiB come from 2 MiB "small" segments, larger ones from 20 MiB segments
 * (or their own size rounded to 2 MiB from 10 MiB up). Free blocks sit in a
 * balanced tree per pool ordered by (stream, size, address) so the best fit
 * of the same stream is one O(log n) search; a block is split when the rest
 * is worth keeping and merged with free neighbours when freed. Memory goes
 * back to the driver only in empty_cache or on the out-of-memory path.
 *
 * The stats follow PyTorch's updates line for line so that memory_stats()
 * and memory_summary() read the same as in PyTorch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "alloc_cache.h"
#include "alloc_common.h"
#include "error.h"
#include "mem_history.h"

#define MIN_BLOCK_SIZE ((size_t)512)           /* kMinBlockSize  */
#define SMALL_SIZE ((size_t)1 << 20)           /* kSmallSize     */
#define SMALL_BUFFER ((size_t)2 << 20)         /* kSmallBuffer   */
#define MIN_LARGE_ALLOC ((size_t)10 << 20)     /* kMinLargeAlloc */
#define LARGE_BUFFER ((size_t)20 << 20)        /* kLargeBuffer   */
#define ROUND_LARGE ((size_t)2 << 20)          /* kRoundLarge    */
#define ONE_EXA_BYTES ((size_t)1 << 60)

typedef struct segment segment;
typedef struct block block;

struct block {
    segment *seg;
    size_t offset, size;
    size_t requested;       /* the caller's size while active, else 0 */
    void *stream;           /* the segment's stream */
    block *prev, *next;     /* neighbours in the segment, by address */
    block *left, *right;    /* children in the pool's free tree */
    int height;             /* > 0 exactly while in a free tree */
    bool allocated;
    int event_count;        /* end-of-life events still outstanding */
    ct_ptr_set stream_uses; /* other streams recorded while allocated */
    cti_mem_record *hist;   /* its context, when allocated with history on */
};

struct segment {
    void *handle;
    size_t size;
    void *stream;
    bool is_large;
    block *head;            /* lowest-addressed block */
    segment *prev_seg, *next_seg;
};

/* One end-of-life event of a block, queued per stream (FIFO). */
typedef struct pending_event {
    void *event;
    block *blk;
    struct pending_event *next;
} pending_event;

typedef struct stream_queue {
    void *stream;
    pending_event *head, *tail;
} stream_queue;

struct ct_alloc_cache {
    ct_alloc_ops ops;
    ct_device dev;
    pthread_mutex_t lock;
    block *free_tree[2];    /* [0] small pool, [1] large pool */
    segment *segments;
    stream_queue *queues;
    int num_queues, cap_queues;
    size_t reserved;        /* total_allocated_memory */
    bool fraction_set;
    size_t allowed;         /* allowed_memory_maximum */
    ct_memory_stats stats;
};

static int pool_of(const block *b) { return b->seg->is_large ? CT_POOL_LARGE : CT_POOL_SMALL; }
static block **tree_of(ct_alloc_cache *c, const block *b) { return &c->free_tree[b->seg->is_large]; }
static bool is_split(const block *b) { return b->prev || b->next; }

/* ---- the free tree: an AVL tree keyed by (stream, size, address) ------------ */

typedef struct tree_key {
    uintptr_t stream;
    size_t size;
    uintptr_t handle;
    size_t offset;
} tree_key;

static tree_key key_of(const block *b) {
    tree_key k = {(uintptr_t)b->stream, b->size, (uintptr_t)b->seg->handle, b->offset};
    return k;
}

/* The address part is (handle, offset): opaque handles need not be byte
 * addresses, and this keeps every key unique. */
static int key_cmp(tree_key a, tree_key b) {
    if (a.stream != b.stream) return a.stream < b.stream ? -1 : 1;
    if (a.size != b.size) return a.size < b.size ? -1 : 1;
    if (a.handle != b.handle) return a.handle < b.handle ? -1 : 1;
    if (a.offset != b.offset) return a.offset < b.offset ? -1 : 1;
    return 0;
}

static int height(const block *n) { return n ? n->height : 0; }

static void update_height(block *n) {
    int l = height(n->left), r = height(n->right);
    n->height = 1 + (l > r ? l : r);
}

static block *rotate_right(block *n) {
    block *l = n->left;
    n->left = l->right;
    l->right = n;
    update_height(n);
    update_height(l);
    return l;
}

static block *rotate_left(block *n) {
    block *r = n->right;
    n->right = r->left;
    r->left = n;
    update_height(n);
    update_height(r);
    return r;
}

static block *rebalance(block *n) {
    update_height(n);
    int balance = height(n->left) - height(n->right);
    if (balance > 1) {
        if (height(n->left->left) < height(n->left->right)) n->left = rotate_left(n->left);
        return rotate_right(n);
    }
    if (balance < -1) {
        if (height(n->right->right) < height(n->right->left)) n->right = rotate_right(n->right);
        return rotate_left(n);
    }
    return n;
}

static block *tree_insert(block *root, block *b) {
    if (!root) {
        b->left = b->right = NULL;
        b->height = 1;
        return b;
    }
    if (key_cmp(key_of(b), key_of(root)) < 0)
        root->left = tree_insert(root->left, b);
    else
        root->right = tree_insert(root->right, b);
    return rebalance(root);
}

static block *tree_take_min(block *root, block **min) {
    if (!root->left) {
        *min = root;
        return root->right;
    }
    root->left = tree_take_min(root->left, min);
    return rebalance(root);
}

/* b must be in the tree rooted at root. */
static block *tree_remove(block *root, block *b) {
    int cmp = key_cmp(key_of(b), key_of(root));
    if (cmp < 0) {
        root->left = tree_remove(root->left, b);
    } else if (cmp > 0) {
        root->right = tree_remove(root->right, b);
    } else {
        block *l = root->left, *r = root->right;
        b->left = b->right = NULL;
        b->height = 0;
        if (!r) return l;
        block *min;
        r = tree_take_min(r, &min);
        min->left = l;
        min->right = r;
        return rebalance(min);
    }
    return rebalance(root);
}

/* lower_bound({stream, size}): the smallest free block of `stream` with at
 * least `size` bytes, or NULL (a hit of another stream is a miss). */
static block *tree_best_fit(block *root, void *stream, size_t size) {
    tree_key want = {(uintptr_t)stream, size, 0, 0};
    block *best = NULL;
    while (root) {
        if (key_cmp(key_of(root), want) >= 0) {
            best = root;
            root = root->left;
        } else {
            root = root->right;
        }
    }
    return best && best->stream == stream ? best : NULL;
}

static void pool_insert(ct_alloc_cache *c, block *b) { *tree_of(c, b) = tree_insert(*tree_of(c, b), b); }
static void pool_remove(ct_alloc_cache *c, block *b) { *tree_of(c, b) = tree_remove(*tree_of(c, b), b); }

/* ---- sizes ---------------------------------------------------------------------- */

static size_t round_size(size_t size) {
    if (size < MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
    return (size + MIN_BLOCK_SIZE - 1) / MIN_BLOCK_SIZE * MIN_BLOCK_SIZE;
}

/* get_allocation_size: how big a new segment for this rounded size is. */
static size_t segment_size_for(size_t size) {
    if (size <= SMALL_SIZE) return SMALL_BUFFER;
    if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
    return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static bool should_split(const block *b, size_t size) {
    size_t remaining = b->size - size;
    if (b->seg->is_large) return remaining > SMALL_SIZE;
    return remaining >= MIN_BLOCK_SIZE;
}

/* ---- returning blocks to the pool ------------------------------------------------ */

/* Merges free neighbour src into dst (not in the tree); returns the bytes
 * taken over, 0 if src is absent or busy. */
static size_t try_merge(ct_alloc_cache *c, block *dst, block *src) {
    if (!src || src->allocated || src->event_count > 0 || src->stream_uses.count > 0) return 0;
    pool_remove(c, src);
    if (dst->prev == src) {
        dst->offset = src->offset;
        dst->prev = src->prev;
        if (dst->prev)
            dst->prev->next = dst;
        else
            dst->seg->head = dst;
    } else {
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    size_t subsumed = src->size;
    dst->size += subsumed;
    ct_ptr_set_clear(&src->stream_uses);
    free(src);
    return subsumed;
}

/* free_block: the block is really free now; merge and cache it. */
static void free_block(ct_alloc_cache *c, block *b) {
    ct_memory_stats *s = &c->stats;
    int pool = pool_of(b);
    size_t original_size = b->size, requested = b->requested;
    int64_t net_blocks = 0, net_bytes = 0;
    block *neighbours[2] = {b->prev, b->next};
    for (int i = 0; i < 2; i++) {
        size_t subsumed = try_merge(c, b, neighbours[i]);
        if (subsumed > 0) {
            net_blocks -= 1;
            net_bytes -= (int64_t)subsumed;
        }
    }
    b->requested = 0;
    pool_insert(c, b);
    if (is_split(b)) {
        net_blocks += 1;
        net_bytes += (int64_t)b->size;
    }
    if (net_blocks > 0) ct_stat_array_increase(s->inactive_split, pool, net_blocks);
    if (net_blocks < 0) ct_stat_array_decrease(s->inactive_split, pool, -net_blocks);
    if (net_bytes > 0) ct_stat_array_increase(s->inactive_split_bytes, pool, net_bytes);
    if (net_bytes < 0) ct_stat_array_decrease(s->inactive_split_bytes, pool, -net_bytes);
    ct_stat_array_decrease(s->active, pool, 1);
    ct_stat_array_decrease(s->active_bytes, pool, (int64_t)original_size);
    ct_stat_array_decrease(s->requested_bytes, pool, (int64_t)requested);
}

/* ---- end-of-life events for blocks used on other streams ---------------------- */

static stream_queue *queue_for(ct_alloc_cache *c, void *stream) {
    for (int i = 0; i < c->num_queues; i++)
        if (c->queues[i].stream == stream) return &c->queues[i];
    if (c->num_queues == c->cap_queues) {
        int cap = c->cap_queues ? 2 * c->cap_queues : 4;
        stream_queue *q = (stream_queue *)realloc(c->queues, (size_t)cap * sizeof *q);
        if (!q) return NULL;
        c->queues = q;
        c->cap_queues = cap;
    }
    stream_queue *q = &c->queues[c->num_queues++];
    q->stream = stream;
    q->head = q->tail = NULL;
    return q;
}

/* insert_events: one event per recorded stream, recorded now. A stream whose
 * event cannot be recorded or queued is skipped (its error stays set). */
static void insert_events(ct_alloc_cache *c, block *b) {
    ct_ptr_set streams = b->stream_uses;
    b->stream_uses = (ct_ptr_set){0};
    for (int i = 0; i < streams.count; i++) {
        stream_queue *q = queue_for(c, streams.items[i]);
        pending_event *pe = q ? (pending_event *)malloc(sizeof *pe) : NULL;
        if (!pe) {
            ct_error_set(CT_ERR_OOM, "caching allocator: out of host memory queueing a stream event");
            continue;
        }
        if (c->ops.event_record(c->ops.ctx, streams.items[i], &pe->event) != CT_OK) {
            free(pe);
            continue;
        }
        pe->blk = b;
        pe->next = NULL;
        if (q->tail)
            q->tail->next = pe;
        else
            q->head = pe;
        q->tail = pe;
        b->event_count++;
    }
    ct_ptr_set_clear(&streams);
    if (b->event_count == 0) free_block(c, b);
}

static void complete_event(ct_alloc_cache *c, pending_event *pe) {
    block *b = pe->blk;
    c->ops.event_destroy(c->ops.ctx, pe->event);
    free(pe);
    if (--b->event_count == 0) free_block(c, b);
}

static void drop_queue(ct_alloc_cache *c, int i) { c->queues[i] = c->queues[--c->num_queues]; }

/* process_events: poll each stream's queue in order; a pending event holds
 * back only the later events of its own stream. */
static void process_events(ct_alloc_cache *c) {
    for (int i = 0; i < c->num_queues;) {
        stream_queue *q = &c->queues[i];
        while (q->head && c->ops.event_done(c->ops.ctx, q->head->event)) {
            pending_event *pe = q->head;
            q->head = pe->next;
            if (!q->head) q->tail = NULL;
            complete_event(c, pe);
        }
        if (!q->head)
            drop_queue(c, i);
        else
            i++;
    }
}

/* synchronize_and_free_events: wait for every outstanding event. */
static void synchronize_and_free_events(ct_alloc_cache *c) {
    c->stats.num_sync_all_streams++;
    while (c->num_queues > 0) {
        stream_queue *q = &c->queues[0];
        pending_event *pe = q->head;
        q->head = q->tail = NULL;
        drop_queue(c, 0);
        while (pe) {
            pending_event *next = pe->next;
            c->ops.event_wait(c->ops.ctx, pe->event);
            complete_event(c, pe);
            pe = next;
        }
    }
}

/* ---- segments ------------------------------------------------------------------ */

static void release_segment(ct_alloc_cache *c, segment *seg) {
    block *b = seg->head;
    int pool = seg->is_large ? CT_POOL_LARGE : CT_POOL_SMALL;
    pool_remove(c, b);
    c->ops.raw_free(c->ops.ctx, seg->handle);
    c->stats.num_device_free++;
    c->reserved -= seg->size;
    ct_stat_array_decrease(c->stats.segment, pool, 1);
    ct_stat_array_decrease(c->stats.reserved_bytes, pool, (int64_t)seg->size);
    if (seg->prev_seg)
        seg->prev_seg->next_seg = seg->next_seg;
    else
        c->segments = seg->next_seg;
    if (seg->next_seg) seg->next_seg->prev_seg = seg->prev_seg;
    free(b);
    free(seg);
}

/* release_cached_blocks: wait for pending events, then give every unsplit
 * cached segment back to the driver. */
static void release_cached_blocks(ct_alloc_cache *c) {
    synchronize_and_free_events(c);
    segment *seg = c->segments;
    while (seg) {
        segment *next = seg->next_seg;
        block *b = seg->head;
        if (!b->next && !b->allocated && b->event_count == 0) release_segment(c, seg);
        seg = next;
    }
}

typedef enum { SEGMENT_OK, SEGMENT_DEVICE_OOM, SEGMENT_FAILED } segment_result;

/* alloc_block: a new segment of alloc_size bytes as one free block (not in
 * the tree). SEGMENT_DEVICE_OOM (no error set) is also the answer, without
 * asking the driver, when the memory fraction would be exceeded;
 * SEGMENT_FAILED comes with its error set and code in *err. */
static segment_result alloc_segment(ct_alloc_cache *c, bool large, void *stream, size_t alloc_size, bool is_retry,
                                    block **out, ct_status *err) {
    if (is_retry) c->stats.num_alloc_retries++;
    if (c->fraction_set && c->reserved + alloc_size > c->allowed) return SEGMENT_DEVICE_OOM;
    segment *seg = (segment *)calloc(1, sizeof *seg);
    block *b = (block *)calloc(1, sizeof *b);
    if (!seg || !b) {
        free(seg);
        free(b);
        *err = ct_error_set(CT_ERR_OOM, "caching allocator: out of host memory for block records");
        return SEGMENT_FAILED;
    }
    ct_status st = c->ops.raw_alloc(c->ops.ctx, alloc_size, &seg->handle);
    if (st != CT_OK) {
        free(seg);
        free(b);
        *err = st;
        return st == CT_ERR_OOM ? SEGMENT_DEVICE_OOM : SEGMENT_FAILED;
    }
    int pool = large ? CT_POOL_LARGE : CT_POOL_SMALL;
    seg->size = alloc_size;
    seg->stream = stream;
    seg->is_large = large;
    seg->head = b;
    seg->next_seg = c->segments;
    if (c->segments) c->segments->prev_seg = seg;
    c->segments = seg;
    b->seg = seg;
    b->size = alloc_size;
    b->stream = stream;
    c->reserved += alloc_size;
    ct_stat_array_increase(c->stats.segment, pool, 1);
    ct_stat_array_increase(c->stats.reserved_bytes, pool, (int64_t)alloc_size);
    c->stats.num_device_alloc++;
    *out = b;
    return SEGMENT_OK;
}

/* alloc_found_block: split off the front if the rest is worth keeping, mark
 * allocated, count. If no record for the front can be made, the block is
 * handed out whole. */
static block *hand_out(ct_alloc_cache *c, block *b, size_t size, size_t requested) {
    ct_memory_stats *s = &c->stats;
    int pool = pool_of(b);
    bool already_split = is_split(b);
    block *front = should_split(b, size) ? (block *)calloc(1, sizeof *front) : NULL;
    if (front) {
        front->seg = b->seg;
        front->offset = b->offset;
        front->size = size;
        front->stream = b->stream;
        front->prev = b->prev;
        if (front->prev)
            front->prev->next = front;
        else
            b->seg->head = front;
        front->next = b;
        b->prev = front;
        b->offset += size;
        b->size -= size;
        pool_insert(c, b);
        if (already_split) {
            ct_stat_array_decrease(s->inactive_split_bytes, pool, (int64_t)size);
        } else {
            ct_stat_array_increase(s->inactive_split_bytes, pool, (int64_t)b->size);
            ct_stat_array_increase(s->inactive_split, pool, 1);
        }
        b = front;
    } else if (already_split) {
        ct_stat_array_decrease(s->inactive_split_bytes, pool, (int64_t)b->size);
        ct_stat_array_decrease(s->inactive_split, pool, 1);
    }
    b->allocated = true;
    b->requested = requested;
    ct_stat_array_increase(s->allocation, pool, 1);
    ct_stat_array_increase(s->allocated_bytes, pool, (int64_t)b->size);
    ct_stat_array_increase(s->active, pool, 1);
    ct_stat_array_increase(s->active_bytes, pool, (int64_t)b->size);
    ct_stat_array_increase(s->requested_bytes, pool, (int64_t)requested);
    return b;
}

/* ---- the API ------------------------------------------------------------------------ */

ct_alloc_cache *ct_alloc_cache_create(const ct_alloc_ops *ops, ct_device dev) {
    CT_CHECK_NULL(ops && ops->raw_alloc && ops->raw_free && ops->mem_get_info && ops->event_record &&
                      ops->event_done && ops->event_wait && ops->event_destroy,
                  CT_ERR_INVALID_ARG, "caching allocator: every op of ct_alloc_ops is required");
    ct_alloc_cache *c = (ct_alloc_cache *)calloc(1, sizeof *c);
    CT_CHECK_NULL(c, CT_ERR_OOM, "caching allocator: out of host memory");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        ct_error_set(CT_ERR_INTERNAL, "caching allocator: cannot create its mutex");
        return NULL;
    }
    c->ops = *ops;
    if (!c->ops.device_title) c->ops.device_title = "Device";
    c->dev = dev;
    c->stats.max_split_size = -1;
    return c;
}

void ct_alloc_cache_destroy(ct_alloc_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    synchronize_and_free_events(c);
    int64_t live = c->stats.allocation[CT_POOL_ALL].current;
    if (live > 0)
        fprintf(stderr, "ctorch: %s caching allocator of device %d destroyed with %lld live blocks (%lld bytes)\n",
                c->ops.device_title, c->dev.index, (long long)live,
                (long long)c->stats.allocated_bytes[CT_POOL_ALL].current);
    while (c->segments) {
        segment *seg = c->segments;
        c->segments = seg->next_seg;
        c->ops.raw_free(c->ops.ctx, seg->handle);
        for (block *b = seg->head; b;) {
            block *next = b->next;
            cti_mem_history_free(b->hist, c->dev, 0, 0, NULL, false);
            ct_ptr_set_clear(&b->stream_uses);
            free(b);
            b = next;
        }
        free(seg);
    }
    free(c->queues);
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* get_free_block, else a new segment, else release the cache and retry. */
static segment_result find_block(ct_alloc_cache *c, size_t size, size_t alloc_size, void *stream, block **out,
                                 ct_status *err) {
    bool large = size > SMALL_SIZE;
    block *b = tree_best_fit(c->free_tree[large], stream, size);
    if (b) {
        pool_remove(c, b);
        *out = b;
        return SEGMENT_OK;
    }
    segment_result r = alloc_segment(c, large, stream, alloc_size, false, out, err);
    if (r != SEGMENT_DEVICE_OOM) return r;
    release_cached_blocks(c);
    return alloc_segment(c, large, stream, alloc_size, true, out, err);
}

#define OOM_LIST 5

/* The OOM_LIST largest allocated blocks, largest first; returns how many. */
static int largest_live_blocks(ct_alloc_cache *c, const block **top) {
    int n = 0;
    for (const segment *seg = c->segments; seg; seg = seg->next_seg)
        for (const block *b = seg->head; b; b = b->next) {
            if (!b->allocated || (n == OOM_LIST && b->size <= top[n - 1]->size)) continue;
            int i = n < OOM_LIST ? n++ : n - 1;
            for (; i > 0 && top[i - 1]->size < b->size; i--) top[i] = top[i - 1];
            top[i] = b;
        }
    return n;
}

/* "Largest live tensors: A; B; ... " ("blocks" without history; bounded: OOM_LIST entries of at
 * most ~200 characters), or "" when nothing is allocated. */
static void format_live_tensors(ct_alloc_cache *c, char *buf, size_t size) {
    const block *top[OOM_LIST];
    int n = largest_live_blocks(c, top);
    size_t used = 0;
    buf[0] = '\0';
    bool any_context = false;
    for (int i = 0; i < n; i++) any_context = any_context || top[i]->hist;
    for (int i = 0; i < n && used + 1 < size; i++) {
        char one[200];
        cti_mem_history_describe(top[i]->hist, top[i]->size, one, sizeof one);
        int w = snprintf(buf + used, size - used, "%s%s", i ? "; " : any_context ? "Largest live tensors: " : "Largest live blocks: ", one);
        used += w > 0 ? (size_t)w : 0;
    }
    if (n && used + 1 < size)
        snprintf(buf + used, size - used, "%s",
                 any_context ? ". " : " (ct_memory_record_history(true, 0) records the op, shape and range of each). ");
}

static void format_oom_message(ct_alloc_cache *c, size_t alloc_size, char *msg, size_t size) {
    size_t device_free = 0, device_total = 0;
    if (c->ops.mem_get_info(c->ops.ctx, &device_free, &device_total) != CT_OK) device_free = device_total = 0;
    char tried[32], total[32], freeb[32], allowed[48] = "", allocated[32], unallocated[32], in_use[32], mine[32];
    ct_format_size(alloc_size, tried, sizeof tried);
    ct_format_size(device_total, total, sizeof total);
    ct_format_size(device_free, freeb, sizeof freeb);
    if (c->fraction_set) {
        ct_format_size(c->allowed, allowed, sizeof allowed);
        strcat(allowed, " allowed; ");
    }
    int64_t allocated_bytes = c->stats.allocated_bytes[CT_POOL_ALL].current;
    int64_t reserved_bytes = c->stats.reserved_bytes[CT_POOL_ALL].current;
    ct_format_size((uint64_t)allocated_bytes, allocated, sizeof allocated);
    ct_format_size((uint64_t)(reserved_bytes - allocated_bytes), unallocated, sizeof unallocated);
    ct_format_size((uint64_t)reserved_bytes, mine, sizeof mine);
    /* PyTorch's "Including non-PyTorch memory, this process has X in use"
     * needs NVML's per-process figure; the device's own count (total -
     * free) is what every backend can give, and this process's memory is
     * what ctorch reserved. */
    ct_format_size(device_total - device_free, in_use, sizeof in_use);
    char live[OOM_LIST * 200 + 128];
    format_live_tensors(c, live, sizeof live);
    snprintf(msg, size,
             "%s out of memory. Tried to allocate %s. Device %d has a total capacity of %s of which %s is free. "
             "Including memory not reserved by ctorch, %s of it is in use; this process has %s memory in use. "
             "%sOf the allocated memory %s is allocated by ctorch, and %s is reserved by ctorch but unallocated. "
             "%sIf reserved but unallocated memory is large, ct_empty_cache() gives it back to the device; otherwise "
             "release tensors you no longer need, use a smaller batch%s.",
             c->ops.device_title, tried, c->dev.index, total, freeb, in_use, mine, allowed, allocated, unallocated,
             live, c->fraction_set ? ", or raise the limit of ct_set_per_process_memory_fraction()" : "");
}

ct_status ct_alloc_cache_malloc(ct_alloc_cache *c, size_t nbytes, void *stream, ct_alloc_block_ref *out) {
    CT_CHECK_STATUS(c && out, CT_ERR_INVALID_ARG, "caching allocator malloc: NULL argument");
    memset(out, 0, sizeof *out);
    if (nbytes == 0) return CT_OK;
    CT_CHECK_STATUS(nbytes < ONE_EXA_BYTES, CT_ERR_OOM, "%s out of memory. Tried to allocate more than 1EB memory.",
                    c->ops.device_title);
    pthread_mutex_lock(&c->lock);
    process_events(c);
    size_t size = round_size(nbytes), alloc_size = segment_size_for(size);
    block *b = NULL;
    ct_status err = CT_OK;
    segment_result r = find_block(c, size, alloc_size, stream, &b, &err);
    if (r == SEGMENT_OK) {
        b = hand_out(c, b, size, nbytes);
        if (cti_mem_history_on())
            b->hist = cti_mem_history_alloc(c->dev, (uint64_t)(uintptr_t)b->seg->handle + b->offset, b->size, nbytes,
                                            stream);
        out->segment = b->seg->handle;
        out->offset = b->offset;
        out->size = b->size;
        out->block = b;
        pthread_mutex_unlock(&c->lock);
        return CT_OK;
    }
    if (r == SEGMENT_FAILED) {
        pthread_mutex_unlock(&c->lock);
        return err;
    }
    char msg[2048];
    c->stats.num_ooms++;
    if (cti_mem_history_on()) cti_mem_history_oom(c->dev, alloc_size, stream);
    format_oom_message(c, alloc_size, msg, sizeof msg);
    pthread_mutex_unlock(&c->lock);
    return ct_error_set(CT_ERR_OOM, "%s", msg);
}

void ct_alloc_cache_free(ct_alloc_cache *c, void *blk) {
    if (!c || !blk) return;
    block *b = (block *)blk;
    pthread_mutex_lock(&c->lock);
    if (!b->allocated) {
        pthread_mutex_unlock(&c->lock);
        ct_error_set(CT_ERR_INTERNAL, "caching allocator: free of a block that is not allocated (double free?)");
        return;
    }
    int pool = pool_of(b);
    b->allocated = false;
    if (b->hist) {
        cti_mem_history_free(b->hist, c->dev, (uint64_t)(uintptr_t)b->seg->handle + b->offset, b->size, b->stream, true);
        b->hist = NULL;
    }
    ct_stat_array_decrease(c->stats.allocation, pool, 1);
    ct_stat_array_decrease(c->stats.allocated_bytes, pool, (int64_t)b->size);
    if (b->stream_uses.count > 0)
        insert_events(c, b);
    else
        free_block(c, b);
    pthread_mutex_unlock(&c->lock);
}

void ct_alloc_cache_record_stream(ct_alloc_cache *c, void *blk, void *stream) {
    if (!c || !blk) return;
    block *b = (block *)blk;
    pthread_mutex_lock(&c->lock);
    bool ok = stream == b->stream || !b->allocated || ct_ptr_set_add(&b->stream_uses, stream);
    pthread_mutex_unlock(&c->lock);
    if (!ok) ct_error_set(CT_ERR_OOM, "record_stream: out of host memory");
}

ct_status ct_alloc_cache_empty(ct_alloc_cache *c) {
    CT_CHECK_STATUS(c, CT_ERR_INVALID_ARG, "empty_cache: NULL allocator");
    pthread_mutex_lock(&c->lock);
    release_cached_blocks(c);
    pthread_mutex_unlock(&c->lock);
    return CT_OK;
}

ct_status ct_alloc_cache_set_fraction(ct_alloc_cache *c, double fraction) {
    CT_CHECK_STATUS(c, CT_ERR_INVALID_ARG, "set_per_process_memory_fraction: NULL allocator");
    CT_CHECK_STATUS(fraction >= 0.0 && fraction <= 1.0, CT_ERR_INVALID_ARG,
                    "set_per_process_memory_fraction: Invalid fraction value: %g. Allowed range: 0~1", fraction);
    size_t device_free = 0, device_total = 0;
    pthread_mutex_lock(&c->lock);
    ct_status st = c->ops.mem_get_info(c->ops.ctx, &device_free, &device_total);
    if (st == CT_OK) {
        double allowed = fraction * (double)device_total; /* a backend may report SIZE_MAX */
        c->allowed = allowed >= (double)SIZE_MAX ? SIZE_MAX : (size_t)allowed;
        c->fraction_set = true;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

void ct_alloc_cache_stats(ct_alloc_cache *c, ct_memory_stats *out) {
    if (!c || !out) return;
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}

void ct_alloc_cache_reset_peak(ct_alloc_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    ct_memory_stats_reset_peak(&c->stats);
    pthread_mutex_unlock(&c->lock);
}

void ct_alloc_cache_reset_accumulated(ct_alloc_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    ct_memory_stats_reset_accumulated(&c->stats);
    pthread_mutex_unlock(&c->lock);
}

/* ---- snapshot ----------------------------------------------------------------- */

static int compare_segment_address(const void *a, const void *b) {
    uint64_t x = ((const ct_segment_info *)a)->address, y = ((const ct_segment_info *)b)->address;
    return x < y ? -1 : x > y;
}

static ct_block_state state_of(const block *b) {
    if (b->allocated) return CT_BLOCK_ACTIVE_ALLOCATED;
    if (b->event_count > 0 || b->stream_uses.count > 0) return CT_BLOCK_ACTIVE_PENDING_FREE;
    return CT_BLOCK_INACTIVE;
}

static bool describe_segment(ct_alloc_cache *c, const segment *seg, ct_segment_info *info) {
    int n = 0;
    for (const block *b = seg->head; b; b = b->next) n++;
    info->blocks = (ct_block_info *)calloc((size_t)n, sizeof *info->blocks);
    if (!info->blocks) return false;
    info->device = c->dev;
    info->address = (uint64_t)(uintptr_t)seg->handle;
    info->stream = seg->stream;
    info->is_large = seg->is_large;
    info->num_blocks = n;
    int i = 0;
    for (const block *b = seg->head; b; b = b->next, i++) {
        ct_block_info *bi = &info->blocks[i];
        bi->address = info->address + b->offset;
        bi->size = b->size;
        bi->requested_size = b->requested;
        bi->state = state_of(b);
        bi->has_context = cti_mem_history_context(b->hist, &bi->context);
        info->total_size += b->size;
        if (bi->state == CT_BLOCK_ACTIVE_ALLOCATED) info->allocated_size += b->size;
        if (bi->state != CT_BLOCK_INACTIVE) {
            info->active_size += b->size;
            info->requested_size += b->requested;
        }
    }
    return true;
}

ct_status ct_alloc_cache_snapshot(ct_alloc_cache *c, ct_segment_info **segments, int *count) {
    CT_CHECK_STATUS(c && segments && count, CT_ERR_INVALID_ARG, "memory_snapshot: NULL argument");
    *segments = NULL;
    *count = 0;
    pthread_mutex_lock(&c->lock);
    int n = 0;
    for (segment *seg = c->segments; seg; seg = seg->next_seg) n++;
    ct_segment_info *infos = n ? (ct_segment_info *)calloc((size_t)n, sizeof *infos) : NULL;
    int done = 0;
    if (infos)
        for (segment *seg = c->segments; seg && describe_segment(c, seg, &infos[done]); seg = seg->next_seg) done++;
    pthread_mutex_unlock(&c->lock);
    if (done < n) {
        ct_memory_snapshot_free(infos, done);
        return ct_error_set(CT_ERR_OOM, "memory_snapshot: out of host memory");
    }
    if (n) qsort(infos, (size_t)n, sizeof *infos, compare_segment_address);
    *segments = infos;
    *count = n;
    return CT_OK;
}
