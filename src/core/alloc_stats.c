/*
 * alloc_stats.c — the statistics of the caching allocators as PyTorch shows
 * them: flattened keys ("allocated_bytes.all.current", "num_ooms", …) for
 * lookup and for a visit in memory_stats()'s sorted order, the
 * memory_summary() table, format_size for messages, and the peak and
 * accumulated resets. Shared by the device and pinned host allocators.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_cache.h"
#include "alloc_common.h"
#include "error.h"

/* ---- resets --------------------------------------------------------------- */

static ct_stat *stat_arrays(ct_memory_stats *s, int i) {
    ct_stat *arrays[] = {s->allocation,     s->allocated_bytes, s->requested_bytes,
                         s->active,         s->active_bytes,    s->segment,
                         s->reserved_bytes, s->inactive_split,  s->inactive_split_bytes};
    return arrays[i];
}
enum { NUM_STAT_ARRAYS = 9 };

void ct_memory_stats_reset_peak(ct_memory_stats *s) {
    for (int i = 0; i < NUM_STAT_ARRAYS; i++)
        for (int p = 0; p < CT_POOL_COUNT; p++) stat_arrays(s, i)[p].peak = stat_arrays(s, i)[p].current;
    s->oversize_allocations.peak = s->oversize_allocations.current;
    s->oversize_segments.peak = s->oversize_segments.current;
}

static void reset_accumulated(ct_stat *st) { st->allocated = st->freed = 0; }

void ct_memory_stats_reset_accumulated(ct_memory_stats *s) {
    for (int i = 0; i < NUM_STAT_ARRAYS; i++)
        for (int p = 0; p < CT_POOL_COUNT; p++) reset_accumulated(&stat_arrays(s, i)[p]);
    reset_accumulated(&s->oversize_allocations);
    reset_accumulated(&s->oversize_segments);
    s->num_alloc_retries = s->num_ooms = s->num_sync_all_streams = 0;
    s->num_device_alloc = s->num_device_free = 0;
}

/* ---- format_size ---------------------------------------------------------- */

void ct_format_size(uint64_t bytes, char *buf, size_t size) {
    if (bytes <= 1024)
        snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
    else if (bytes <= 1048576)
        snprintf(buf, size, "%.2f KiB", (double)bytes / 1024.0);
    else if (bytes <= 1073741824ULL)
        snprintf(buf, size, "%.2f MiB", (double)bytes / 1048576.0);
    else
        snprintf(buf, size, "%.2f GiB", (double)bytes / 1073741824.0);
}

/* ---- flattened keys ----------------------------------------------------- */

/* Torch's Module.cpp builds a nested dict with these names; memory_stats()
 * flattens it with "." and sorts the keys. */
static const char *const k_array_names[NUM_STAT_ARRAYS] = {
    "allocation",     "allocated_bytes", "requested_bytes",
    "active",         "active_bytes",    "segment",
    "reserved_bytes", "inactive_split",  "inactive_split_bytes"};
static const char *const k_pool_names[CT_POOL_COUNT] = {"all", "small_pool", "large_pool"};
static const char *const k_field_names[4] = {"current", "peak", "allocated", "freed"};

enum { NUM_STAT_KEYS = NUM_STAT_ARRAYS * CT_POOL_COUNT * 4 + 2 * 4 + 6, KEY_MAX = 64, PREFIX_MAX = 40 };

typedef struct stat_entry {
    char key[KEY_MAX];
    int64_t value;
} stat_entry;

static int64_t field_of(const ct_stat *st, int f) {
    const int64_t v[4] = {st->current, st->peak, st->allocated, st->freed};
    return v[f];
}

static int add_stat_fields(stat_entry *out, int n, const char *prefix, const ct_stat *st) {
    for (int f = 0; f < 4; f++) {
        snprintf(out[n].key, KEY_MAX, "%s.%s", prefix, k_field_names[f]);
        out[n++].value = field_of(st, f);
    }
    return n;
}

static int add_scalar(stat_entry *out, int n, const char *key, int64_t value) {
    snprintf(out[n].key, KEY_MAX, "%s", key);
    out[n].value = value;
    return n + 1;
}

/* Every key/value pair, unsorted; returns NUM_STAT_KEYS. */
static int collect_stats(const ct_memory_stats *s, stat_entry *out) {
    ct_memory_stats copy = *s; /* stat_arrays takes a mutable struct */
    int n = 0;
    char prefix[PREFIX_MAX];
    for (int i = 0; i < NUM_STAT_ARRAYS; i++)
        for (int p = 0; p < CT_POOL_COUNT; p++) {
            snprintf(prefix, sizeof prefix, "%s.%s", k_array_names[i], k_pool_names[p]);
            n = add_stat_fields(out, n, prefix, &stat_arrays(&copy, i)[p]);
        }
    n = add_stat_fields(out, n, "oversize_allocations", &s->oversize_allocations);
    n = add_stat_fields(out, n, "oversize_segments", &s->oversize_segments);
    n = add_scalar(out, n, "num_alloc_retries", s->num_alloc_retries);
    n = add_scalar(out, n, "num_ooms", s->num_ooms);
    n = add_scalar(out, n, "num_sync_all_streams", s->num_sync_all_streams);
    n = add_scalar(out, n, "num_device_alloc", s->num_device_alloc);
    n = add_scalar(out, n, "num_device_free", s->num_device_free);
    n = add_scalar(out, n, "max_split_size", s->max_split_size);
    return n;
}

ct_status ct_memory_stats_lookup(const ct_memory_stats *s, const char *key, int64_t *value) {
    CT_CHECK_STATUS(s && key && value, CT_ERR_INVALID_ARG, "memory_stats: NULL argument");
    stat_entry entries[NUM_STAT_KEYS];
    int n = collect_stats(s, entries);
    for (int i = 0; i < n; i++)
        if (strcmp(entries[i].key, key) == 0) {
            *value = entries[i].value;
            return CT_OK;
        }
    return ct_error_set(CT_ERR_INVALID_ARG, "memory_stats: unknown key '%s'", key);
}

static int compare_keys(const void *a, const void *b) {
    return strcmp(((const stat_entry *)a)->key, ((const stat_entry *)b)->key);
}

void ct_memory_stats_visit(const ct_memory_stats *s, ct_memory_stat_fn fn, void *user) {
    if (!s || !fn) return;
    stat_entry entries[NUM_STAT_KEYS];
    int n = collect_stats(s, entries);
    qsort(entries, (size_t)n, sizeof entries[0], compare_keys);
    for (int i = 0; i < n; i++) fn(entries[i].key, entries[i].value, user);
}

/* ---- memory_summary ------------------------------------------------------ */

/* Appends with snprintf semantics: the length keeps counting past `size`. */
typedef struct text_out {
    char *buf;
    size_t size, len;
} text_out;

static void out_str(text_out *o, const char *str) {
    size_t n = strlen(str);
    if (o->buf && o->len < o->size) {
        size_t room = o->size - o->len - 1, k = n < room ? n : room;
        memcpy(o->buf + o->len, str, k);
        o->buf[o->len + k] = '\0';
    }
    o->len += n;
}

enum { SUMMARY_WIDTH = 75 };

static void out_line(text_out *o, const char *content) {
    out_str(o, "|");
    out_str(o, content);
    out_str(o, "|\n");
}

static void out_rule(text_out *o, char c) {
    char line[SUMMARY_WIDTH + 1];
    memset(line, c, SUMMARY_WIDTH);
    line[SUMMARY_WIDTH] = '\0';
    out_line(o, line);
}

/* _format_size: the unit is picked from the group's reference value. */
static void format_bytes_cell(int64_t sz, int64_t pref, char *cell, size_t size) {
    static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double pref_sz = (double)pref;
    int u = 0;
    while (u + 1 < 6 && !(pref_sz < 768.0 * 1024.0)) {
        u++;
        sz /= 1024;
        pref_sz /= 1024.0;
    }
    snprintf(cell, size, "%6lld %s", (long long)sz, units[u]);
}

/* _format_count: " ", "K", "M" with a 750,000 threshold. */
static void format_count_cell(int64_t cnt, int64_t pref, char *cell, size_t size) {
    static const char *const units[] = {" ", "K", "M"};
    double pref_cnt = (double)pref;
    int u = 0;
    while (u + 1 < 3 && !(pref_cnt < 750.0 * 1000.0)) {
        u++;
        cnt /= 1000;
        pref_cnt /= 1000.0;
    }
    snprintf(cell, size, "%7lld %s ", (long long)cnt, units[u]);
}

typedef void (*cell_fn)(int64_t value, int64_t pref, char *cell, size_t size);

/* " <name:<21> | cur | peak | alloc | freed " with units taken from ref. */
static void out_metric_row(text_out *o, const char *name, const ct_stat *st, const ct_stat *ref, cell_fn fmt) {
    char cells[4][32], line[160];
    for (int f = 0; f < 4; f++) fmt(field_of(st, f), field_of(ref, f), cells[f], sizeof cells[f]);
    snprintf(line, sizeof line, " %-21s | %s | %s | %s | %s ", name, cells[0], cells[1], cells[2], cells[3]);
    out_line(o, line);
}

/* PyTorch: "  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: {n:<8d}  ",
 * the '|' in column 37. A title too long for that drops out of the labels. */
static void format_oom_line(char *line, size_t size, const char *title, const ct_memory_stats *s) {
    char left[SUMMARY_WIDTH + 1], right[SUMMARY_WIDTH + 1];
    const char *space = *title ? " " : "";
    snprintf(left, sizeof left, "%s%sOOMs: %-12lld", title, space, (long long)s->num_ooms);
    snprintf(right, sizeof right, "%s%salloc retries: %-8lld  ", title, space, (long long)s->num_alloc_retries);
    int lpad = 35 - (int)strlen(left), rpad = 38 - (int)strlen(right);
    if ((lpad < 1 || rpad < 1) && *title) {
        format_oom_line(line, size, "", s);
        return;
    }
    snprintf(line, size, "%*s%s |%*s%s", lpad > 1 ? lpad : 1, "", left, rpad > 1 ? rpad : 1, "", right);
}

static void out_header(text_out *o, const char *title, int device_index, const ct_memory_stats *s) {
    char text[SUMMARY_WIDTH + 1], line[256];
    out_rule(o, '=');
    /* PyTorch puts the title 18 columns in: " {_:16} PyTorch CUDA memory ..." */
    int n = snprintf(text, sizeof text, "ctorch %s memory summary, device ID %d", title, device_index);
    int lead = SUMMARY_WIDTH - n < 18 ? (SUMMARY_WIDTH - n > 0 ? SUMMARY_WIDTH - n : 0) : 18;
    snprintf(line, sizeof line, "%*s%-*s", lead, "", SUMMARY_WIDTH - lead, text);
    out_line(o, line);
    out_rule(o, '-');
    format_oom_line(line, sizeof line, title, s);
    out_line(o, line);
    out_rule(o, '=');
    out_line(o, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
}

int ct_memory_stats_summary(const ct_memory_stats *s, const char *title, int device_index, bool abbreviated,
                            char *buf, size_t size) {
    if (!s || !title || (!buf && size > 0)) {
        ct_error_set(CT_ERR_INVALID_ARG, "memory_summary: NULL argument");
        return -1;
    }
    static const struct {
        int array;
        const char *name;
        bool bytes;
    } metrics[] = {
        {1, "Allocated memory", true},     {4, "Active memory", true},
        {2, "Requested memory", true},     {6, "%sreserved memory", true},
        {8, "Non-releasable memory", true}, {0, "Allocations", false},
        {3, "Active allocs", false},        {5, "%sreserved segments", false},
        {7, "Non-releasable allocs", false},
    };
    /* PyTorch's words on CUDA ("GPU reserved memory"); elsewhere the memory
     * is not a GPU's (an OpenCL device may be a CPU, as PoCL's is), so the
     * rows say "Reserved" and "Oversize segments". */
    const bool gpu = strcmp(title, "CUDA") == 0;
    const char *prefix = gpu ? "GPU " : "";
    text_out o = {buf, size, 0};
    if (buf && size > 0) buf[0] = '\0';
    ct_memory_stats copy = *s;
    out_header(&o, title, device_index, s);
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
        const ct_stat *arr = stat_arrays(&copy, metrics[m].array);
        cell_fn fmt = metrics[m].bytes ? format_bytes_cell : format_count_cell;
        out_rule(&o, '-');
        char name[32];
        snprintf(name, sizeof name, metrics[m].name, prefix);
        if (!gpu && name[0] == 'r') name[0] = 'R';
        out_metric_row(&o, name, &arr[CT_POOL_ALL], &arr[CT_POOL_ALL], fmt);
        if (!abbreviated) {
            out_metric_row(&o, "      from large pool", &arr[CT_POOL_LARGE], &arr[CT_POOL_ALL], fmt);
            out_metric_row(&o, "      from small pool", &arr[CT_POOL_SMALL], &arr[CT_POOL_ALL], fmt);
        }
    }
    out_rule(&o, '-');
    out_metric_row(&o, "Oversize allocations", &s->oversize_allocations, &s->oversize_allocations,
                   format_count_cell);
    out_rule(&o, '-');
    out_metric_row(&o, gpu ? "Oversize GPU segments" : "Oversize segments", &s->oversize_segments,
                   &s->oversize_segments, format_count_cell);
    out_rule(&o, '=');
    return (int)o.len;
}
