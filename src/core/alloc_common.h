/*
 * alloc_common.h — pieces shared by the device and host caching allocators
 * (internal): PyTorch's Stat updates, the set of streams a block was
 * recorded on, and PyTorch's format_size for messages.
 *
 * Kept apart from alloc_cache.h because only the allocator sources use it.
 */
#ifndef CT_CORE_ALLOC_COMMON_H
#define CT_CORE_ALLOC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctorch/memory.h"

/* Stat::increase / Stat::decrease: `allocated` and `freed` accumulate the
 * changes, `peak` follows `current` upwards. */
static inline void ct_stat_increase(ct_stat *s, int64_t amount) {
    s->current += amount;
    s->allocated += amount;
    if (s->current > s->peak) s->peak = s->current;
}
static inline void ct_stat_decrease(ct_stat *s, int64_t amount) {
    s->current -= amount;
    s->freed += amount;
}
/* A StatArray update touches "all" and the block's pool. */
static inline void ct_stat_array_increase(ct_stat *arr, int pool, int64_t amount) {
    ct_stat_increase(&arr[CT_POOL_ALL], amount);
    ct_stat_increase(&arr[pool], amount);
}
static inline void ct_stat_array_decrease(ct_stat *arr, int pool, int64_t amount) {
    ct_stat_decrease(&arr[CT_POOL_ALL], amount);
    ct_stat_decrease(&arr[pool], amount);
}

/* reset_peak_memory_stats / reset_accumulated_memory_stats on one struct. */
void ct_memory_stats_reset_peak(ct_memory_stats *s);
void ct_memory_stats_reset_accumulated(ct_memory_stats *s);

/* PyTorch's format_size: "<n> bytes" up to 1024, then KiB / MiB / GiB with
 * two decimals (each unit is used up to and including 1024 of it). */
void ct_format_size(uint64_t bytes, char *buf, size_t size);

/* The streams a block was used on (record_stream): a small unordered set.
 * Most blocks have none, so an empty set owns no memory. */
typedef struct ct_ptr_set {
    void **items;
    int count, cap;
} ct_ptr_set;

/* Adds p unless present; false only if memory ran out. */
static inline bool ct_ptr_set_add(ct_ptr_set *s, void *p) {
    for (int i = 0; i < s->count; i++)
        if (s->items[i] == p) return true;
    if (s->count == s->cap) {
        int cap = s->cap ? 2 * s->cap : 2;
        void **items = (void **)realloc(s->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->count++] = p;
    return true;
}
static inline void ct_ptr_set_clear(ct_ptr_set *s) {
    free(s->items);
    s->items = NULL;
    s->count = s->cap = 0;
}

#endif /* CT_CORE_ALLOC_COMMON_H */
