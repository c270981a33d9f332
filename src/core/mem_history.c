/*
 * mem_history.c — memory history (mem_history.h, ctorch/memory.h's
 * ct_memory_record_history): per-block contexts, named lazily by the next
 * kernel dispatched on the allocating thread, and a bounded ring of
 * alloc/free/oom events, as PyTorch's _record_memory_history keeps
 * TraceEntry records for _snapshot()'s device_traces.
 *
 * One mutex guards the ring and the list of unnamed records; the caching
 * allocator calls in with its own lock held, and nothing here calls out.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "mem_history.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_common.h"
#include "error.h"
#include "internal.h"
#include "tensor_impl.h"

#define DEFAULT_MAX_ENTRIES 10000
#define RANGE_DEPTH 16
#define RANGE_NAME 48

atomic_bool cti_mem_history_flag;

struct cti_mem_record {
    ct_alloc_context ctx;
    bool named;
    cti_mem_record *prev, *next; /* in the unnamed list while !named */
    int64_t event_seq;           /* its "alloc" event, to name that too */
};

enum { EV_ALLOC, EV_FREE, EV_OOM };
static const char *const k_action[] = {"alloc", "free_completed", "oom"};

typedef struct mem_event {
    int64_t seq;
    int action;
    ct_device dev;
    uint64_t addr;
    size_t size;
    uintptr_t stream;
    int64_t time_us;
    bool has_ctx;
    ct_alloc_context ctx;
} mem_event;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_event *g_ring;
static int64_t g_max = DEFAULT_MAX_ENTRIES, g_cap, g_first_seq, g_next_seq;
static int64_t g_origin_ns;
static cti_mem_record *g_unnamed;

static _Thread_local int tl_unnamed;
static _Thread_local bool tl_has_tensor;
static _Thread_local int tl_ndim;
static _Thread_local int64_t tl_shape[CT_MAX_DIMS];
static _Thread_local ct_dtype tl_dtype;
_Thread_local int cti_mem_range_depth;
static _Thread_local char tl_ranges[RANGE_DEPTH][RANGE_NAME];

/* ---- switching on and off ------------------------------------------------------------- */

ct_status ct_memory_record_history(bool enabled, int64_t max_entries) {
    CT_CHECK_STATUS(max_entries >= 0, CT_ERR_INVALID_ARG,
                    "memory_record_history: max_entries must be >= 0 (0: the default %d), got %lld",
                    DEFAULT_MAX_ENTRIES, (long long)max_entries);
    pthread_mutex_lock(&g_lock);
    if (enabled) { /* a new history; records of live blocks stay with them */
        free(g_ring);
        g_ring = NULL;
        g_cap = 0;
        g_max = max_entries ? max_entries : DEFAULT_MAX_ENTRIES;
        g_first_seq = g_next_seq;
        g_origin_ns = cti_now_ns();
    }
    atomic_store(&cti_mem_history_flag, enabled);
    pthread_mutex_unlock(&g_lock);
    return CT_OK;
}

/* ---- the event ring (g_lock held) ------------------------------------------------------- */

static mem_event *ring_slot(int64_t seq) { return &g_ring[(seq - g_first_seq) % g_max]; }

/* The slot for the next event, or NULL when the ring cannot grow (the
 * event is dropped: history is a diagnostic and must not fail an op). */
static mem_event *append_event(int action, ct_device dev, uint64_t addr, size_t size, const void *stream) {
    int64_t n = g_next_seq - g_first_seq;
    if (n == g_cap && g_cap < g_max) {
        int64_t cap = g_cap ? 2 * g_cap : 256;
        if (cap > g_max) cap = g_max;
        mem_event *grown = realloc(g_ring, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        g_ring = grown, g_cap = cap;
    }
    if (!g_ring) return NULL;
    mem_event *e = ring_slot(g_next_seq);
    memset(e, 0, sizeof *e);
    e->seq = g_next_seq++;
    e->action = action, e->dev = dev, e->addr = addr, e->size = size, e->stream = (uintptr_t)stream;
    e->time_us = (cti_now_ns() - g_origin_ns) / 1000;
    return e;
}

static const mem_event *event_at(int64_t seq) {
    int64_t oldest = g_next_seq - (g_cap < g_max ? g_cap : g_max);
    if (!g_ring || seq < g_first_seq || seq < oldest || seq >= g_next_seq) return NULL;
    return ring_slot(seq);
}

/* ---- the allocator's calls ------------------------------------------------------------ */

void cti_mem_history_tensor(const int64_t *shape, int ndim, ct_dtype dt) {
    tl_has_tensor = true;
    tl_ndim = ndim < 0 ? 0 : ndim > CT_MAX_DIMS ? CT_MAX_DIMS : ndim;
    if (tl_ndim) memcpy(tl_shape, shape, (size_t)tl_ndim * sizeof *shape);
    tl_dtype = dt;
}

void cti_mem_history_tensor_done(void) { tl_has_tensor = false; }

static void join_ranges(char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    int depth = cti_mem_range_depth < RANGE_DEPTH ? cti_mem_range_depth : RANGE_DEPTH;
    for (int i = 0; i < depth && used + 1 < size; i++) {
        int w = snprintf(out + used, size - used, "%s%s", i ? " > " : "", tl_ranges[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

cti_mem_record *cti_mem_history_alloc(ct_device dev, uint64_t addr, size_t size, size_t requested,
                                      const void *stream) {
    (void)requested;
    cti_mem_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    ct_alloc_context *c = &r->ctx;
    join_ranges(c->range, sizeof c->range);
    c->ndim = tl_has_tensor ? tl_ndim : -1;
    if (tl_has_tensor) memcpy(c->shape, tl_shape, sizeof c->shape), c->dtype = tl_dtype;
    tl_has_tensor = false;
    c->thread = cti_thread_id();
    pthread_mutex_lock(&g_lock);
    c->time_us = (cti_now_ns() - g_origin_ns) / 1000;
    mem_event *e = append_event(EV_ALLOC, dev, addr, size, stream);
    r->event_seq = e ? e->seq : -1;
    if (e) e->has_ctx = true, e->ctx = *c;
    r->next = g_unnamed;
    if (g_unnamed) g_unnamed->prev = r;
    g_unnamed = r;
    pthread_mutex_unlock(&g_lock);
    tl_unnamed++;
    return r;
}

static void unlink_unnamed(cti_mem_record *r) {
    if (r->named) return;
    if (r->prev) r->prev->next = r->next;
    else g_unnamed = r->next;
    if (r->next) r->next->prev = r->prev;
    r->prev = r->next = NULL;
    r->named = true;
}

void cti_mem_history_free(cti_mem_record *r, ct_device dev, uint64_t addr, size_t size, const void *stream,
                          bool log) {
    if (!r) return;
    pthread_mutex_lock(&g_lock);
    unlink_unnamed(r);
    if (log && cti_mem_history_on()) {
        mem_event *e = append_event(EV_FREE, dev, addr, size, stream);
        if (e) e->has_ctx = true, e->ctx = r->ctx;
    }
    pthread_mutex_unlock(&g_lock);
    free(r);
}

void cti_mem_history_oom(ct_device dev, size_t alloc_size, const void *stream) {
    pthread_mutex_lock(&g_lock);
    append_event(EV_OOM, dev, 0, alloc_size, stream);
    pthread_mutex_unlock(&g_lock);
}

bool cti_mem_history_context(const cti_mem_record *r, ct_alloc_context *out) {
    memset(out, 0, sizeof *out);
    out->ndim = -1;
    if (!r) return false;
    pthread_mutex_lock(&g_lock);
    *out = r->ctx;
    pthread_mutex_unlock(&g_lock);
    return true;
}

void cti_mem_history_describe(const cti_mem_record *r, size_t size, char *buf, size_t n) {
    char sz[32], shape[CT_SHAPE_STR_MAX] = "";
    ct_format_size(size, sz, sizeof sz);
    ct_alloc_context ctx;
    if (!cti_mem_history_context(r, &ctx)) {
        snprintf(buf, n, "%s", sz);
        return;
    }
    if (ctx.ndim >= 0) ct_shape_str(ctx.shape, ctx.ndim, shape, sizeof shape);
    snprintf(buf, n, "%s %s%s%s from %s%s%s%s", sz, ctx.ndim >= 0 ? ct_dtype_name(ctx.dtype) : "raw block",
             ctx.ndim >= 0 ? " " : "", shape, ctx.op[0] ? ctx.op : "an unknown op", ctx.range[0] ? " in range '" : "",
             ctx.range, ctx.range[0] ? "'" : "");
}

/* ---- dispatch and ranges --------------------------------------------------------------- */

void cti_mem_history_op(const char *op) {
    if (!tl_unnamed) return;
    tl_unnamed = 0;
    const int tid = cti_thread_id();
    pthread_mutex_lock(&g_lock);
    for (cti_mem_record *r = g_unnamed, *next; r; r = next) {
        next = r->next;
        if (r->ctx.thread != tid) continue;
        snprintf(r->ctx.op, sizeof r->ctx.op, "%s", op ? op : "");
        const mem_event *e = event_at(r->event_seq);
        if (e) memcpy(((mem_event *)e)->ctx.op, r->ctx.op, sizeof r->ctx.op);
        unlink_unnamed(r);
    }
    pthread_mutex_unlock(&g_lock);
}

void cti_mem_history_range_push(const char *name) {
    if (cti_mem_range_depth < RANGE_DEPTH)
        snprintf(tl_ranges[cti_mem_range_depth], RANGE_NAME, "%s", name ? name : "(unnamed)");
    cti_mem_range_depth++;
}

void cti_mem_history_range_pop(void) {
    if (cti_mem_range_depth > 0) cti_mem_range_depth--;
}

/* ---- JSON ------------------------------------------------------------------------------ */

void cti_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* PyTorch's frames are stack frames, innermost first: here the op, then
 * the open ranges from the innermost out. */
static void write_frames(FILE *f, const ct_alloc_context *ctx) {
    fputs(", \"frames\": [", f);
    bool first = true;
    if (ctx->op[0]) fputs("{\"name\": ", f), cti_json_string(f, ctx->op), fputc('}', f), first = false;
    char range[sizeof ctx->range];
    memcpy(range, ctx->range, sizeof range);
    for (;;) {
        char *sep = NULL;
        for (char *p = strstr(range, " > "); p; p = strstr(p + 1, " > ")) sep = p;
        const char *name = sep ? sep + 3 : range;
        if (name[0]) fputs(first ? "{\"name\": " : ", {\"name\": ", f), cti_json_string(f, name), fputc('}', f);
        first = first && !name[0];
        if (!sep) break;
        *sep = '\0';
    }
    fputc(']', f);
}

void cti_mem_history_write_context(FILE *f, const ct_alloc_context *ctx) {
    fputs(", \"op\": ", f);
    cti_json_string(f, ctx->op);
    fputs(", \"range\": ", f);
    cti_json_string(f, ctx->range);
    if (ctx->ndim >= 0) {
        fputs(", \"shape\": [", f);
        for (int d = 0; d < ctx->ndim; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)ctx->shape[d]);
        fprintf(f, "], \"dtype\": \"%s\"", ct_dtype_name(ctx->dtype));
    } else {
        fputs(", \"shape\": null, \"dtype\": null", f);
    }
    fprintf(f, ", \"thread\": %d", ctx->thread);
    write_frames(f, ctx);
}

void cti_mem_history_write_trace(FILE *f, ct_device dev) {
    fputc('[', f);
    bool first = true;
    pthread_mutex_lock(&g_lock);
    for (int64_t seq = g_first_seq; seq < g_next_seq; seq++) {
        const mem_event *e = event_at(seq);
        if (!e || e->dev.type != dev.type || e->dev.index != dev.index) continue;
        fprintf(f, "%s\n    {\"action\": \"%s\", \"addr\": %llu, \"size\": %llu, \"stream\": %llu, \"time_us\": %lld",
                first ? "" : ",", k_action[e->action], (unsigned long long)e->addr, (unsigned long long)e->size,
                (unsigned long long)e->stream, (long long)e->time_us);
        if (e->has_ctx) cti_mem_history_write_context(f, &e->ctx);
        fputc('}', f);
        first = false;
    }
    pthread_mutex_unlock(&g_lock);
    fputs(first ? "]" : "\n  ]", f);
}
