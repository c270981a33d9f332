/*
 * cpu_alloc.h — the CPU backend's host memory allocator (internal).
 *
 * Large buffers are cached so that a training loop stops paying for a fresh
 * mmap, page faults and munmap on every step; small ones go straight to the
 * C library. The statistics follow the device caching allocator's
 * (ctorch/memory.h) and reach the public API through the backend table's
 * memory hooks. The tuning knobs at the end exist for the tests.
 */
#ifndef CT_CPU_ALLOC_H
#define CT_CPU_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "ctorch/memory.h"
#include "ctorch/status.h"

/* Requests of at least this many bytes are served from the cache (the
 * "large_pool" of the statistics); smaller ones are plain aligned_alloc
 * ("small_pool"). glibc's default mmap threshold: from here up a fresh
 * buffer costs a system call and a page fault per 4 KiB page. */
#define CT_CPU_CACHE_THRESHOLD ((size_t)128 * 1024)
/* A free block serves a request whose own size class is at most this many
 * classes smaller (8 classes per power of two: at most 25% more bytes). */
#define CT_CPU_CACHE_MAX_EXTRA_CLASSES 2
/* The least the cache may hold while free; the default limit is the larger
 * of this and the high-water mark of allocated large bytes. */
#define CT_CPU_CACHE_MIN_LIMIT ((size_t)256 * 1024 * 1024)

/* 64-byte aligned memory of at least nbytes (0 allowed). On failure, after
 * one retry with the cache emptied: CT_ERR_OOM, "DefaultCPUAllocator: not
 * enough memory: you tried to allocate N bytes." */
ct_status ct_cpu_alloc(size_t nbytes, void **ptr);
void ct_cpu_free(void *ptr);

void ct_cpu_alloc_stats(ct_memory_stats *out);  /* fills every field */
void ct_cpu_alloc_reset_peak(void);
void ct_cpu_alloc_reset_accumulated(void);
void ct_cpu_alloc_empty_cache(void);            /* frees every cached block */

/* The size a request is rounded to (64 bytes below the threshold, else one
 * of 8 size classes per power of two). */
size_t ct_cpu_alloc_round(size_t nbytes);

/* Tests: the limit on cached free bytes (-1: the default rule; a smaller
 * limit evicts at once), the limit now in force, and making the next n
 * system allocations of large blocks fail as if memory ran out. */
void ct_cpu_alloc_set_cache_limit(int64_t bytes);
size_t ct_cpu_alloc_cache_limit(void);
void ct_cpu_alloc_fail_next(int n);

#endif /* CT_CPU_ALLOC_H */
