/*
 * alloc_cache.h — the caching device allocator (internal), written once for
 * every device backend and following PyTorch's CUDACachingAllocator
 * (../shared/reference/pytorch-memory-streams.md sections 1–3).
 *
 * It never calls a backend directly: it gets raw segments and stream events
 * through ct_alloc_ops, so it can be tested with a fake device and reused by
 * OpenCL and CUDA alike. Streams are opaque keys (the core passes its
 * ct_stream pointers); blocks freed on one stream are reused only by that
 * stream, and record_stream defers reuse until the recorded streams' work
 * at free time has finished.
 *
 * Thread safety: every function locks the allocator's mutex. The ops are
 * called with it held and must not call back into the allocator.
 *
 * Tests drive it with a fake device (tests/alloc_fake.h); they link the
 * static library, where internal symbols are visible.
 */
#ifndef CT_CORE_ALLOC_CACHE_H
#define CT_CORE_ALLOC_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "ctorch/memory.h"

typedef struct ct_alloc_ops {
    void *ctx;                     /* passed back to every call */
    const char *device_title;      /* "OpenCL", "CUDA": used in the OOM message */
    /* raw segments: *segment is an opaque handle (a device pointer or a cl_mem),
     * never dereferenced; its value orders segments in snapshots. Out of
     * device memory: return CT_ERR_OOM without setting an error (the
     * allocator frees its cache, retries, and reports PyTorch's message).
     * Any other failure: set the error and return its code; it is passed on. */
    ct_status (*raw_alloc)(void *ctx, size_t nbytes, void **segment);
    void (*raw_free)(void *ctx, void *segment);
    ct_status (*mem_get_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    /* events: record a new event on `stream`, poll it, wait for it, drop it.
     * All ops are required. */
    ct_status (*event_record)(void *ctx, void *stream, void **event);
    bool (*event_done)(void *ctx, void *event);
    void (*event_wait)(void *ctx, void *event);
    void (*event_destroy)(void *ctx, void *event);
} ct_alloc_ops;

typedef struct ct_alloc_cache ct_alloc_cache;

/* What a successful malloc hands out: the block lives at `offset` bytes
 * into `segment` and spans `size` bytes (>= the request, 512-aligned). */
typedef struct ct_alloc_block_ref {
    void *segment;
    size_t offset;
    size_t size;
    void *block;                   /* pass to free / record_stream */
} ct_alloc_block_ref;

ct_alloc_cache *ct_alloc_cache_create(const ct_alloc_ops *ops, ct_device dev);
/* Waits for pending events and frees every segment; live blocks are
 * reported as leaks on stderr (their memory goes back too). */
void ct_alloc_cache_destroy(ct_alloc_cache *c);

/* Allocate nbytes for use on `stream`. nbytes == 0 gives an empty ref (block
 * NULL) without touching the cache, as PyTorch. On failure after the release-
 * and-retry path, sets CT_ERR_OOM with PyTorch's message and counts num_ooms. */
ct_status ct_alloc_cache_malloc(ct_alloc_cache *c, size_t nbytes, void *stream, ct_alloc_block_ref *out);
/* free(NULL) does nothing. A block freed while other streams were recorded
 * on it stays "active" until events recorded now on those streams complete
 * (polled at the next malloc); a stream whose event cannot be recorded is
 * not waited for (the backend's error stays set). */
void ct_alloc_cache_free(ct_alloc_cache *c, void *block);
/* The block is also used on `stream` (ignored for its own stream). */
void ct_alloc_cache_record_stream(ct_alloc_cache *c, void *block, void *stream);

/* Wait for all pending events, then free every unsplit cached segment. */
ct_status ct_alloc_cache_empty(ct_alloc_cache *c);
/* Raw allocations that would take reserved memory past fraction * total
 * (mem_get_info) fail as out of memory. fraction must be in [0, 1]. */
ct_status ct_alloc_cache_set_fraction(ct_alloc_cache *c, double fraction);
void ct_alloc_cache_stats(ct_alloc_cache *c, ct_memory_stats *out);
void ct_alloc_cache_reset_peak(ct_alloc_cache *c);
void ct_alloc_cache_reset_accumulated(ct_alloc_cache *c);
/* Segments in address order (handle value); free with ct_memory_snapshot_free.
 * Inactive blocks report requested_size 0. */
ct_status ct_alloc_cache_snapshot(ct_alloc_cache *c, ct_segment_info **segments, int *count);

/* Shared by device and host allocators: the stats table, key lookup and
 * summary formatting (PyTorch's memory_summary layout). */
ct_status ct_memory_stats_lookup(const ct_memory_stats *s, const char *key, int64_t *value);
void ct_memory_stats_visit(const ct_memory_stats *s, ct_memory_stat_fn fn, void *user);
int ct_memory_stats_summary(const ct_memory_stats *s, const char *title, int device_index,
                                         bool abbreviated, char *buf, size_t size);

/* ---- pinned host memory: PyTorch's CachingHostAllocator ----------------- */
typedef struct ct_host_ops {
    void *ctx;
    /* page-locked; out of memory: CT_ERR_OOM without setting an error */
    ct_status (*raw_alloc)(void *ctx, size_t nbytes, void **ptr);
    void (*raw_free)(void *ctx, void *ptr);
    ct_status (*event_record)(void *ctx, void *stream, void **event);
    bool (*event_done)(void *ctx, void *event);
    void (*event_wait)(void *ctx, void *event);
    void (*event_destroy)(void *ctx, void *event);
} ct_host_ops;

typedef struct ct_host_cache ct_host_cache;
ct_host_cache *ct_host_cache_create(const ct_host_ops *ops);
void ct_host_cache_destroy(ct_host_cache *c);
/* Power-of-two buckets, no splitting; blocks whose recorded streams still
 * have work are reused only after their events complete. nbytes == 0 gives
 * *ptr = NULL. Stats fill the "all" slot only: allocation, allocated_bytes,
 * requested_bytes, active(_bytes) (allocated + awaiting events), segment and
 * reserved_bytes (raw page-locked blocks), num_device_alloc/free. */
ct_status ct_host_cache_malloc(ct_host_cache *c, size_t nbytes, void **ptr);
void ct_host_cache_free(ct_host_cache *c, void *ptr);
/* Returns false if ptr did not come from this allocator. */
bool ct_host_cache_record_stream(ct_host_cache *c, void *ptr, void *stream);
/* ptr is the start of a block of this allocator (in use or cached). */
bool ct_host_cache_owns(ct_host_cache *c, const void *ptr);
ct_status ct_host_cache_empty(ct_host_cache *c);
void ct_host_cache_stats(ct_host_cache *c, ct_memory_stats *out);

#endif /* CT_CORE_ALLOC_CACHE_H */
