/*
 * ctorch/memory.h — device memory management, as torch.cuda.memory:
 * statistics of the caching allocator, emptying the cache, a per-process
 * memory limit, readable summaries and snapshots, and pinned host memory.
 *
 * Device backends (opencl, cuda) allocate through a caching allocator that
 * follows PyTorch's design (docs/device-runtime.md). The CPU backend caches
 * large host buffers (>= 128 KiB) and reports the same statistics for
 * device "cpu": its "small_pool" holds the uncached small buffers, its
 * "large_pool" the cached ones (docs/device-runtime.md, "The CPU allocator").
 */
#ifndef CTORCH_MEMORY_H
#define CTORCH_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "device.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One statistic: PyTorch's Stat. */
typedef struct ct_stat {
    int64_t current, peak, allocated, freed;
} ct_stat;

/* Index of a stat array: PyTorch's "all", "small_pool", "large_pool". */
enum { CT_POOL_ALL = 0, CT_POOL_SMALL = 1, CT_POOL_LARGE = 2, CT_POOL_COUNT = 3 };

typedef struct ct_memory_stats {
    ct_stat allocation[CT_POOL_COUNT];           /* live allocated blocks            */
    ct_stat allocated_bytes[CT_POOL_COUNT];      /* their rounded sizes              */
    ct_stat requested_bytes[CT_POOL_COUNT];      /* sizes asked for                  */
    ct_stat active[CT_POOL_COUNT];               /* allocated + awaiting stream events */
    ct_stat active_bytes[CT_POOL_COUNT];
    ct_stat segment[CT_POOL_COUNT];              /* raw device allocations           */
    ct_stat reserved_bytes[CT_POOL_COUNT];
    ct_stat inactive_split[CT_POOL_COUNT];       /* free blocks of split segments    */
    ct_stat inactive_split_bytes[CT_POOL_COUNT];
    ct_stat oversize_allocations;
    ct_stat oversize_segments;
    int64_t num_alloc_retries, num_ooms, num_sync_all_streams, num_device_alloc, num_device_free;
    int64_t max_split_size;                      /* -1: unlimited                    */
} ct_memory_stats;

/* torch.cuda.memory_stats(device); for the CPU, its host allocator's. */
CT_API ct_status ct_memory_stats_get(ct_device dev, ct_memory_stats *out);
/* One value by PyTorch's flattened key, e.g. "allocated_bytes.all.current",
 * "num_ooms", "oversize_segments.peak". Unknown key: CT_ERR_INVALID_ARG. */
CT_API ct_status ct_memory_stat(ct_device dev, const char *key, int64_t *value);
/* Visit every key/value pair in PyTorch's sorted key order. */
typedef void (*ct_memory_stat_fn)(const char *key, int64_t value, void *user);
CT_API ct_status ct_memory_stats_foreach(ct_device dev, ct_memory_stat_fn fn, void *user);

CT_API int64_t ct_memory_allocated(ct_device dev);     /* allocated_bytes.all.current */
CT_API int64_t ct_max_memory_allocated(ct_device dev); /* allocated_bytes.all.peak    */
CT_API int64_t ct_memory_reserved(ct_device dev);      /* reserved_bytes.all.current  */
CT_API int64_t ct_max_memory_reserved(ct_device dev);  /* reserved_bytes.all.peak     */
CT_API ct_status ct_reset_peak_memory_stats(ct_device dev);
CT_API ct_status ct_reset_accumulated_memory_stats(ct_device dev);

/* Return every unused cached segment of the device to the driver (waiting
 * first for pending cross-stream uses), as torch.cuda.empty_cache. For the
 * CPU: every cached host buffer goes back to the C library. */
CT_API ct_status ct_empty_cache(ct_device dev);
/* Limit this process to fraction * total device memory (0..1). Only devices
 * with a caching allocator (cuda, opencl) have a limit: on the CPU this is
 * CT_ERR_DEVICE ("Expected a cuda or opencl device, but got: cpu"), as
 * torch.cuda.set_per_process_memory_fraction refuses non-CUDA devices. */
CT_API ct_status ct_set_per_process_memory_fraction(double fraction, ct_device dev);
/* Free and total device memory, as reported by the driver. */
CT_API ct_status ct_mem_get_info(ct_device dev, size_t *free_bytes, size_t *total_bytes);

/* The table of torch.cuda.memory_summary, into buf (snprintf rules: returns
 * the length needed, -1 on error). */
CT_API int ct_memory_summary(ct_device dev, bool abbreviated, char *buf, size_t size);

/* torch.cuda.memory_snapshot(): segments in address order with their blocks. */
typedef enum ct_block_state {
    CT_BLOCK_INACTIVE = 0,          /* free, in the cache                        */
    CT_BLOCK_ACTIVE_ALLOCATED = 1,  /* in use by a tensor                        */
    CT_BLOCK_ACTIVE_PENDING_FREE = 2 /* freed, waiting for other streams' work   */
} ct_block_state;
/* What made a block: recorded while ct_memory_record_history is on. */
typedef struct ct_alloc_context {
    char op[32];                    /* the kernel that first wrote it, e.g. "matmul" ("" unknown) */
    char range[96];                 /* CT_RECORD_FUNCTION ranges open at allocation, outermost first, " > " between */
    int ndim;                       /* -1: not made by a tensor constructor (shape, dtype unknown) */
    int64_t shape[CT_MAX_DIMS];
    ct_dtype dtype;
    int64_t time_us;                /* when, since history was switched on */
    int thread;                     /* small id of the allocating thread */
} ct_alloc_context;
typedef struct ct_block_info {
    uint64_t address;               /* offset-based id: segment address + offset */
    size_t size, requested_size;
    ct_block_state state;
    bool has_context;               /* allocated while history was recorded */
    ct_alloc_context context;
} ct_block_info;
typedef struct ct_segment_info {
    ct_device device;
    uint64_t address;
    size_t total_size, allocated_size, active_size, requested_size;
    const void *stream;             /* the ct_stream it belongs to               */
    bool is_large;                  /* segment_type "large" / "small"            */
    int num_blocks;
    ct_block_info *blocks;
} ct_segment_info;
/* Allocates *segments (free with ct_memory_snapshot_free). */
CT_API ct_status ct_memory_snapshot(ct_device dev, ct_segment_info **segments, int *count);
CT_API void ct_memory_snapshot_free(ct_segment_info *segments, int count);

/* torch.cuda.memory._record_memory_history(enabled, max_entries): while on,
 * every device block allocated records its context (ct_alloc_context: the
 * kernel, the open ranges, the tensor's shape and dtype) and the alloc, free
 * and out-of-memory events go to a history that keeps the last max_entries
 * (0: 10000; negative: CT_ERR_INVALID_ARG). Switching on again starts a new
 * history; switching off keeps what was recorded for snapshots. The contexts
 * also name the largest live tensors in out-of-memory messages. Applies to
 * devices with the caching allocator (cuda, opencl); the CPU's buffers are
 * not recorded. */
CT_API ct_status ct_memory_record_history(bool enabled, int64_t max_entries);
/* torch.cuda.memory._dump_snapshot(path): the device's segments and blocks
 * (with their contexts) and its event history as JSON, replacing path
 * atomically. The CPU has no segments: CT_ERR_DEVICE. */
CT_API ct_status ct_memory_dump_snapshot(ct_device dev, const char *path);

/* ---- pinned (page-locked) host memory ---------------------------------- */
/* Tensor.pin_memory(): t itself (new reference) if already pinned, else a
 * pinned copy. Needs a device backend that provides pinned memory. */
CT_API ct_tensor *ct_pin_memory(const ct_tensor *t);
CT_API bool ct_is_pinned(const ct_tensor *t);
/* Return cached pinned blocks that no stream still uses. */
CT_API ct_status ct_host_empty_cache(void);
/* Statistics of the pinned host allocator, in the "all" slot only:
 * allocation, allocated_bytes, requested_bytes, active, active_bytes,
 * segment, reserved_bytes; num_device_alloc/free count raw page-locked
 * allocations. */
CT_API ct_status ct_host_memory_stats(ct_memory_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_MEMORY_H */
