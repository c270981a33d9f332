/*
 * test_alloc_stats.c — the allocator statistics as PyTorch presents them
 * (src/core/alloc_stats.c): every flattened key, visited in memory_stats()'s
 * sorted order and found by lookup, and the memory_summary() table with
 * PyTorch's unit rules, for stats made by hand and by the caching allocator.
 */
#include <stdio.h>
#include <string.h>

#include "alloc_fake.h"

enum { NUM_KEYS = 9 * 3 * 4 + 2 * 4 + 6 };

typedef struct visited {
    char keys[NUM_KEYS + 8][64];
    int64_t values[NUM_KEYS + 8];
    int count;
} visited;

static void collect(const char *key, int64_t value, void *user) {
    visited *v = (visited *)user;
    if (v->count < NUM_KEYS + 8) {
        snprintf(v->keys[v->count], sizeof v->keys[0], "%s", key);
        v->values[v->count] = value;
    }
    v->count++;
}

/* Every field gets its own value, so a key read from the wrong field shows. */
static ct_memory_stats distinct_stats(void) {
    ct_memory_stats s;
    int64_t *words = (int64_t *)&s;
    for (size_t i = 0; i < sizeof s / sizeof(int64_t); i++) words[i] = 1000 + (int64_t)i;
    return s;
}

/* The field a key names, found independently of the code under test. */
static bool expected_value(const ct_memory_stats *s, const char *key, int64_t *out) {
    static const char *const arrays[] = {"allocation", "allocated_bytes", "requested_bytes",
                                         "active",     "active_bytes",    "segment",
                                         "reserved_bytes", "inactive_split", "inactive_split_bytes"};
    const ct_stat *bases[] = {s->allocation, s->allocated_bytes, s->requested_bytes, s->active, s->active_bytes,
                              s->segment,    s->reserved_bytes,  s->inactive_split,  s->inactive_split_bytes};
    static const char *const pools[] = {"all", "small_pool", "large_pool"};
    static const char *const fields[] = {"current", "peak", "allocated", "freed"};
    char name[64];
    for (int a = 0; a < 9; a++)
        for (int p = 0; p < 3; p++)
            for (int f = 0; f < 4; f++) {
                snprintf(name, sizeof name, "%s.%s.%s", arrays[a], pools[p], fields[f]);
                if (strcmp(name, key) == 0) {
                    const ct_stat *st = &bases[a][p];
                    *out = f == 0 ? st->current : f == 1 ? st->peak : f == 2 ? st->allocated : st->freed;
                    return true;
                }
            }
    const ct_stat *over[] = {&s->oversize_allocations, &s->oversize_segments};
    const char *over_names[] = {"oversize_allocations", "oversize_segments"};
    for (int o = 0; o < 2; o++)
        for (int f = 0; f < 4; f++) {
            snprintf(name, sizeof name, "%s.%s", over_names[o], fields[f]);
            if (strcmp(name, key) == 0) {
                *out = f == 0 ? over[o]->current : f == 1 ? over[o]->peak : f == 2 ? over[o]->allocated
                                                                                  : over[o]->freed;
                return true;
            }
        }
    const struct {
        const char *name;
        int64_t value;
    } scalars[] = {{"num_alloc_retries", s->num_alloc_retries}, {"num_ooms", s->num_ooms},
                   {"num_sync_all_streams", s->num_sync_all_streams}, {"num_device_alloc", s->num_device_alloc},
                   {"num_device_free", s->num_device_free},         {"max_split_size", s->max_split_size}};
    for (int i = 0; i < 6; i++)
        if (strcmp(scalars[i].name, key) == 0) {
            *out = scalars[i].value;
            return true;
        }
    return false;
}

static void test_visit_every_key_in_sorted_order(void) {
    ct_memory_stats s = distinct_stats();
    static visited v;
    memset(&v, 0, sizeof v);
    ct_memory_stats_visit(&s, collect, &v);
    CT_EXPECT_INT_EQ(v.count, NUM_KEYS);
    if (v.count != NUM_KEYS) return;
    for (int i = 0; i + 1 < v.count; i++)
        CT_EXPECT_MSG(strcmp(v.keys[i], v.keys[i + 1]) < 0, "keys out of order: %s, %s", v.keys[i], v.keys[i + 1]);
    /* the order memory_stats() shows, at its seams */
    const char *first[] = {"active.all.allocated", "active.all.current", "active.all.freed", "active.all.peak",
                           "active.large_pool.allocated"};
    for (int i = 0; i < 5; i++) CT_EXPECT_STR_EQ(v.keys[i], first[i]);
    CT_EXPECT_STR_EQ(v.keys[12], "active_bytes.all.allocated");
    CT_EXPECT_STR_EQ(v.keys[24], "allocated_bytes.all.allocated");
    CT_EXPECT_STR_EQ(v.keys[36], "allocation.all.allocated");
    const char *scalars[] = {"max_split_size",  "num_alloc_retries", "num_device_alloc",
                             "num_device_free", "num_ooms",          "num_sync_all_streams",
                             "oversize_allocations.allocated"};
    for (int i = 0; i < 7; i++) CT_EXPECT_STR_EQ(v.keys[72 + i], scalars[i]);
    CT_EXPECT_STR_EQ(v.keys[NUM_KEYS - 1], "segment.small_pool.peak");
    /* each value is the one its key names, and lookup agrees */
    for (int i = 0; i < v.count; i++) {
        int64_t want = -1, got = -1;
        CT_EXPECT_MSG(expected_value(&s, v.keys[i], &want), "unexpected key %s", v.keys[i]);
        CT_EXPECT_MSG(v.values[i] == want, "%s visited as %lld, expected %lld", v.keys[i], (long long)v.values[i],
                      (long long)want);
        CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, v.keys[i], &got), CT_OK);
        CT_EXPECT_MSG(got == want, "%s looked up as %lld, expected %lld", v.keys[i], (long long)got, (long long)want);
    }
}

static void test_lookup_errors(void) {
    ct_memory_stats s = distinct_stats();
    int64_t v = 7;
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, "allocated_bytes.all", &v), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "memory_stats: unknown key 'allocated_bytes.all'");
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, "allocated.all.current", &v), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown key 'allocated.all.current'");
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, "", &v), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown key ''");
    CT_EXPECT_INT_EQ(v, 7);
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, NULL, &v), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL");
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(NULL, "num_ooms", &v), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL");
    CT_EXPECT_INT_EQ(ct_memory_stats_lookup(&s, "num_ooms", &v), CT_OK);
    CT_EXPECT_INT_EQ(v, s.num_ooms);
}

/* The summary's lines, split; returns how many. */
static int split_lines(char *text, char **lines, int max) {
    int n = 0;
    for (char *p = text; *p && n < max;) {
        lines[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }
    return n;
}

/* 3 x 1000 bytes on the fake OpenCL device 0, as in PyTorch's layout. */
static void test_summary_of_a_real_cache(void) {
    fake_device f;
    fake_stream a = {1, 0, 0};
    fake_init(&f, 1024 * MiB);
    ct_alloc_ops ops = fake_ops(&f);
    ct_alloc_cache *c = ct_alloc_cache_create(&ops, ct_device_opencl(0));
    ct_alloc_block_ref r[3];
    for (int i = 0; i < 3; i++) CT_EXPECT_INT_EQ(ct_alloc_cache_malloc(c, 1000, &a, &r[i]), CT_OK);
    ct_memory_stats s;
    ct_alloc_cache_stats(c, &s);
    static char text[8192];
    int len = ct_memory_stats_summary(&s, "OpenCL", 0, false, text, sizeof text);
    CT_EXPECT_INT_EQ(len, (int)strlen(text));
    char *lines[64];
    int n = split_lines(text, lines, 64);
    CT_EXPECT_INT_EQ(n, 47);
    for (int i = 0; i < n; i++)
        CT_EXPECT_MSG(strlen(lines[i]) == 77, "line %d is %zu wide: \"%s\"", i, strlen(lines[i]), lines[i]);
    if (n == 47) {
        CT_EXPECT_STR_EQ(lines[0], "|===========================================================================|");
        CT_EXPECT_STR_EQ(lines[1], "|                  ctorch OpenCL memory summary, device ID 0                |");
        CT_EXPECT_STR_EQ(lines[2], "|---------------------------------------------------------------------------|");
        CT_EXPECT_STR_EQ(lines[3], "|          OpenCL OOMs: 0            |      OpenCL alloc retries: 0         |");
        CT_EXPECT_STR_EQ(lines[5], "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |");
        CT_EXPECT_STR_EQ(lines[7], "| Allocated memory      |   3072 B   |   3072 B   |   3072 B   |      0 B   |");
        CT_EXPECT_STR_EQ(lines[8], "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |");
        CT_EXPECT_STR_EQ(lines[9], "|       from small pool |   3072 B   |   3072 B   |   3072 B   |      0 B   |");
        CT_EXPECT_STR_EQ(lines[15], "| Requested memory      |   3000 B   |   3000 B   |   3000 B   |      0 B   |");
        /* not a GPU's memory: PyTorch's "GPU reserved" rows say "Reserved" off CUDA */
        CT_EXPECT_STR_EQ(lines[19], "| Reserved memory       |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |");
        CT_EXPECT_STR_EQ(lines[20], "|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |");
        CT_EXPECT_STR_EQ(lines[23], "| Non-releasable memory |   2045 KiB |   2047 KiB |   2047 KiB |   2048 B   |");
        CT_EXPECT_STR_EQ(lines[27], "| Allocations           |       3    |       3    |       3    |       0    |");
        CT_EXPECT_STR_EQ(lines[35], "| Reserved segments     |       1    |       1    |       1    |       0    |");
        CT_EXPECT_STR_EQ(lines[39], "| Non-releasable allocs |       1    |       1    |       1    |       0    |");
        CT_EXPECT_STR_EQ(lines[43], "| Oversize allocations  |       0    |       0    |       0    |       0    |");
        CT_EXPECT_STR_EQ(lines[45], "| Oversize segments     |       0    |       0    |       0    |       0    |");
        CT_EXPECT_STR_EQ(lines[46], "|===========================================================================|");
    }
    /* abbreviated: no pool rows */
    len = ct_memory_stats_summary(&s, "OpenCL", 0, true, text, sizeof text);
    CT_EXPECT_INT_EQ(len, (int)strlen(text));
    n = split_lines(text, lines, 64);
    CT_EXPECT_INT_EQ(n, 29);
    if (n == 29)
        CT_EXPECT_STR_EQ(lines[9], "| Active memory         |   3072 B   |   3072 B   |   3072 B   |      0 B   |");
    for (int i = 0; i < 3; i++) ct_alloc_cache_free(c, r[i].block);
    ct_alloc_cache_destroy(c);
}

/* Units follow the group's first row: 5 GiB shows as 5120 MiB and a pool
 * row under it in MiB too; counts switch to K at 750,000. */
static void test_summary_units(void) {
    ct_memory_stats s;
    memset(&s, 0, sizeof s);
    s.allocated_bytes[CT_POOL_ALL] = (ct_stat){5 * 1024 * (int64_t)MiB, 6 * 1024 * (int64_t)MiB, 786432, 786431};
    s.allocated_bytes[CT_POOL_LARGE] = (ct_stat){3 * (int64_t)MiB + 5, 0, 1023, 786431};
    s.allocation[CT_POOL_ALL] = (ct_stat){1234567, 749999, 750000, 2000000000};
    s.num_ooms = 12;
    s.num_alloc_retries = 123456789;
    static char text[8192];
    ct_memory_stats_summary(&s, "CUDA", 3, false, text, sizeof text);
    char *lines[64];
    int n = split_lines(text, lines, 64);
    CT_EXPECT_INT_EQ(n, 47);
    if (n != 47) return;
    CT_EXPECT_STR_EQ(lines[1], "|                  ctorch CUDA memory summary, device ID 3                  |");
    /* PyTorch: "  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: {n:<8d}  ";
     * a number too wide for its field takes from the padding (PyTorch's line grows) */
    CT_EXPECT_STR_EQ(lines[3], "|            CUDA OOMs: 12           |       CUDA alloc retries: 123456789  |");
    CT_EXPECT_STR_EQ(lines[7], "| Allocated memory      |   5120 MiB |   6144 MiB |    768 KiB | 786431 B   |");
    CT_EXPECT_STR_EQ(lines[8], "|       from large pool |      3 MiB |      0 MiB |      0 KiB | 786431 B   |");
    CT_EXPECT_STR_EQ(lines[27], "| Allocations           |    1234 K  |  749999    |     750 K  |    2000 M  |");
    /* PyTorch's words on CUDA */
    CT_EXPECT(strncmp(lines[19], "| GPU reserved memory   |", 25) == 0);
    CT_EXPECT(strncmp(lines[35], "| GPU reserved segments |", 25) == 0);
    CT_EXPECT(strncmp(lines[45], "| Oversize GPU segments |", 25) == 0);
}

static void test_summary_buffer_rules(void) {
    ct_memory_stats s;
    memset(&s, 0, sizeof s);
    static char full[8192];
    int len = ct_memory_stats_summary(&s, "OpenCL", 1, false, full, sizeof full);
    CT_EXPECT_INT_EQ(len, 47 * 78);
    CT_EXPECT_INT_EQ(ct_memory_stats_summary(&s, "OpenCL", 1, false, NULL, 0), len);
    char small[100];
    memset(small, 'x', sizeof small);
    CT_EXPECT_INT_EQ(ct_memory_stats_summary(&s, "OpenCL", 1, false, small, sizeof small), len);
    CT_EXPECT_INT_EQ(strlen(small), 99);
    CT_EXPECT(strncmp(small, full, 99) == 0);
    CT_EXPECT_INT_EQ(ct_memory_stats_summary(NULL, "OpenCL", 1, false, small, sizeof small), -1);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "memory_summary: NULL argument");
    /* a long title still gives 75-wide lines */
    ct_memory_stats_summary(&s, "A-very-long-device-title-for-testing", 1234, true, full, sizeof full);
    char *lines[64];
    int n = split_lines(full, lines, 64);
    for (int i = 0; i < n; i++) CT_EXPECT_MSG(strlen(lines[i]) == 77, "line %d: \"%s\"", i, lines[i]);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_visit_every_key_in_sorted_order);
    CT_RUN(test_lookup_errors);
    CT_RUN(test_summary_of_a_real_cache);
    CT_RUN(test_summary_units);
    CT_RUN(test_summary_buffer_rules);
    return ct_test_finish();
}
