/*
 * stream.c — streams and events for every backend (torch.cuda.Stream and
 * torch.cuda.Event semantics), and the per-thread current stream.
 *
 * Default streams are created lazily, one per device, and live for the
 * process. The current stream is thread-local per device; NULL means the
 * default. On synchronous backends (the CPU has no stream functions) every
 * stream is always complete and events record a host timestamp, so timing
 * code works unchanged on the CPU.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_MONOTONIC */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "runtime.h"

#define CT_MAX_DEVICES 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_stream *g_default[CT_NUM_DEVICE_TYPES][CT_MAX_DEVICES];
static unsigned long long g_next_id = 1;
/* Destroyed streams stay allocated (freed at shutdown): the caching
 * allocator keys cached blocks by stream, so a stream's address must never
 * be reused for another stream while blocks allocated on it exist. */
static ct_stream *g_retired;
static _Thread_local ct_stream *tl_current[CT_NUM_DEVICE_TYPES][CT_MAX_DEVICES];

struct ct_event {
    bool enable_timing, blocking;
    bool recorded;
    ct_device device;            /* set by the first record */
    const ct_backend *backend;
    void *handle;                /* backend event, created on first record */
    double host_ms;              /* synchronous backends: time of the record */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static ct_stream *stream_new(ct_device d, int priority, bool is_default) {
    const ct_backend *b = ct_backend_for(d.type);
    ct_stream *s = calloc(1, sizeof *s);
    if (!s) {
        ct_error_set(CT_ERR_OOM, "out of memory creating a stream");
        return NULL;
    }
    s->device = d;
    s->backend = b;
    s->priority = priority;
    s->is_default = is_default;
    if (b->stream_create && b->stream_create(d.index, priority, &s->handle) != CT_OK) {
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&g_lock);
    s->id = g_next_id++;
    pthread_mutex_unlock(&g_lock);
    return s;
}

static bool resolve(const char *op, ct_device dev, ct_device *out) {
    if (ct_device_check(dev, out) != CT_OK) return false;
    CT_CHECK_RET(out->index < CT_MAX_DEVICES, false, CT_ERR_DEVICE, "%s: at most %d devices per type are supported",
                 op, CT_MAX_DEVICES);
    return true;
}

ct_stream *ct_default_stream(ct_device dev) {
    ct_device d;
    if (!resolve("default_stream", dev, &d)) return NULL;
    pthread_mutex_lock(&g_lock);
    ct_stream *s = g_default[d.type][d.index];
    pthread_mutex_unlock(&g_lock);
    if (s) return s;
    ct_stream *fresh = stream_new(d, 0, true);
    if (!fresh) return NULL;
    pthread_mutex_lock(&g_lock);
    if (!g_default[d.type][d.index]) g_default[d.type][d.index] = fresh, fresh = NULL;
    s = g_default[d.type][d.index];
    pthread_mutex_unlock(&g_lock);
    if (fresh) { /* another thread won the race */
        if (fresh->handle) fresh->backend->stream_destroy(d.index, fresh->handle);
        free(fresh);
    }
    return s;
}

ct_stream *cti_current_stream(ct_device dev) {
    ct_device d;
    if (!resolve("current_stream", dev, &d)) return NULL;
    ct_stream *s = tl_current[d.type][d.index];
    return s ? s : ct_default_stream(d);
}

ct_stream *ct_current_stream(ct_device dev) { return cti_current_stream(dev); }

void *cti_current_stream_handle(ct_device_type type, int dev) {
    ct_device d = {type, dev};
    ct_stream *s = cti_current_stream(d);
    return s ? s->handle : NULL;
}

ct_stream *ct_stream_create(ct_device dev, int priority) {
    ct_device d;
    if (!resolve("Stream", dev, &d)) return NULL;
    int least = 0, greatest = 0;
    ct_stream_priority_range(d.type, &least, &greatest);
    /* like CUDA, out-of-range priorities are clamped */
    if (priority > least) priority = least;
    if (priority < greatest) priority = greatest;
    return stream_new(d, priority, false);
}

void ct_stream_destroy(ct_stream *s) {
    if (!s) return;
    if (s->is_default) {
        ct_error_set(CT_ERR_INVALID_ARG, "stream_destroy: the default stream belongs to ctorch");
        return;
    }
    if (s->destroyed) return;
    if (tl_current[s->device.type][s->device.index] == s) tl_current[s->device.type][s->device.index] = NULL;
    if (s->handle) {
        s->backend->stream_synchronize(s->device.index, s->handle);
        s->backend->stream_destroy(s->device.index, s->handle);
        s->handle = NULL;
    }
    pthread_mutex_lock(&g_lock);
    s->destroyed = true;
    s->next_retired = g_retired;
    g_retired = s;
    pthread_mutex_unlock(&g_lock);
}

ct_status ct_set_stream(ct_stream *s) {
    CT_CHECK_OBJ_STATUS(s, "set_stream: NULL stream");
    CT_CHECK_STATUS(!s->destroyed, CT_ERR_STATE, "set_stream: the stream was destroyed");
    tl_current[s->device.type][s->device.index] = s->is_default ? NULL : s;
    /* torch.cuda.set_stream also makes the stream's device current */
    return ct_set_device(s->device);
}

/* Getters of a NULL stream answer the CPU / priority 0, and say why (or
 * keep the error of the call that failed to make it). */
ct_device ct_stream_device(const ct_stream *s) {
    CT_CHECK_OBJ(s, ct_device_cpu(), "stream_device: NULL stream");
    return s->device;
}
int ct_stream_priority(const ct_stream *s) {
    CT_CHECK_OBJ(s, 0, "stream_priority: NULL stream");
    return s->priority;
}

void ct_stream_priority_range(ct_device_type type, int *least, int *greatest) {
    int l = 0, g = 0;
    const ct_backend *b = (unsigned)type < CT_NUM_DEVICE_TYPES ? ct_backend_for(type) : NULL;
    if (b && b->priority_range) b->priority_range(&l, &g);
    if (least) *least = l;
    if (greatest) *greatest = g;
}

ct_status ct_stream_synchronize(ct_stream *s) {
    CT_CHECK_OBJ_STATUS(s, "stream_synchronize: NULL stream");
    return s->handle ? s->backend->stream_synchronize(s->device.index, s->handle) : CT_OK;
}

bool ct_stream_query(ct_stream *s) {
    bool done = true;
    CT_CHECK_OBJ(s, true, "stream_query: NULL stream");
    if (s->handle && s->backend->stream_query(s->device.index, s->handle, &done) != CT_OK) return false;
    return done;
}

ct_status ct_stream_wait_event(ct_stream *s, ct_event *e) {
    CT_CHECK_OBJ_STATUS(s, "stream_wait_event: NULL stream");
    return ct_event_wait(e, s);
}

ct_status ct_stream_wait_stream(ct_stream *s, ct_stream *other) {
    CT_CHECK_OBJ_STATUS(s && other, "wait_stream: NULL stream");
    if (s == other || !other->handle) return CT_OK;
    ct_event *e = ct_event_create();
    if (!e) return ct_last_status();
    ct_status st = ct_event_record(e, other);
    if (st == CT_OK) st = ct_event_wait(e, s);
    ct_event_destroy(e); /* the backend keeps a waited-on event alive as needed */
    return st;
}

ct_stream_guard ct_stream_guard_begin(ct_stream *s) {
    ct_stream_guard g = {NULL, 1};
    if (!s) return g; /* torch.cuda.stream(None) is a no-op */
    g.prev = cti_current_stream(s->device);
    tl_current[s->device.type][s->device.index] = s->is_default ? NULL : s;
    return g;
}

void ct_stream_guard_end(ct_stream_guard *g) {
    if (!g) return;
    g->active = 0;
    if (g->prev) tl_current[g->prev->device.type][g->prev->device.index] = g->prev->is_default ? NULL : g->prev;
}

/* ---- events ------------------------------------------------------------------ */

ct_event *ct_event_create_opts(ct_event_opts o) {
    ct_event *e = calloc(1, sizeof *e);
    CT_CHECK_NULL(e != NULL, CT_ERR_OOM, "out of memory creating an event");
    e->enable_timing = o.enable_timing;
    e->blocking = o.blocking;
    return e;
}

void ct_event_destroy(ct_event *e) {
    if (!e) return;
    if (e->handle) e->backend->event_destroy(e->device.index, e->handle);
    free(e);
}

ct_status ct_event_record(ct_event *e, ct_stream *s) {
    CT_CHECK_OBJ_STATUS(e, "event_record: NULL event");
    if (!s) {
        s = cti_current_stream(e->recorded ? e->device : ct_device_cpu());
        if (!s) return ct_last_status();
    }
    if (e->recorded || e->handle) {
        char a[32], b[32];
        CT_CHECK_STATUS(ct_device_equal(e->device, s->device), CT_ERR_DEVICE,
                        "Event device %s does not match recording stream's device %s.",
                        ct_device_format(e->device, a, sizeof a), ct_device_format(s->device, b, sizeof b));
    }
    e->device = s->device;
    e->backend = s->backend;
    if (s->handle && !e->handle)
        CT_TRY(s->backend->event_create(s->device.index, e->enable_timing, &e->handle));
    if (e->handle) CT_TRY(s->backend->event_record(s->device.index, e->handle, s->handle));
    e->host_ms = now_ms();
    e->recorded = true;
    return CT_OK;
}

bool ct_event_query(ct_event *e) {
    CT_CHECK_OBJ(e, true, "event_query: NULL event");
    if (!e->handle) return true;
    bool done = true;
    if (e->backend->event_query(e->device.index, e->handle, &done) != CT_OK) return false;
    return done;
}

ct_status ct_event_synchronize(ct_event *e) {
    CT_CHECK_OBJ_STATUS(e, "event_synchronize: NULL event");
    return e->handle ? e->backend->event_synchronize(e->device.index, e->handle) : CT_OK;
}

ct_status ct_event_wait(ct_event *e, ct_stream *s) {
    CT_CHECK_OBJ_STATUS(e, "event_wait: NULL event");
    if (!e->handle) return CT_OK; /* never recorded, or recorded on a synchronous device */
    if (!s) {
        s = cti_current_stream(e->device);
        if (!s) return ct_last_status();
    }
    if (!s->handle) return ct_event_synchronize(e); /* a synchronous stream waits on the host */
    if (s->backend != e->backend || s->device.index != e->device.index) {
        /* a stream of another device cannot wait on the device; wait on the host */
        return ct_event_synchronize(e);
    }
    return s->backend->stream_wait_event(s->device.index, s->handle, e->handle);
}

ct_status ct_event_elapsed_time(ct_event *start, ct_event *end, float *ms) {
    CT_CHECK_OBJ_STATUS(start && end, "elapsed_time: NULL argument");
    CT_CHECK_STATUS(ms != NULL, CT_ERR_INVALID_ARG, "elapsed_time: NULL argument");
    CT_CHECK_STATUS(start->enable_timing && end->enable_timing, CT_ERR_INVALID_ARG,
                    "Both events must be created with argument 'enable_timing=True'.");
    CT_CHECK_STATUS(start->recorded && end->recorded, CT_ERR_STATE,
                    "Both events must be recorded before calculating elapsed time.");
    CT_CHECK_STATUS(ct_event_query(start) && ct_event_query(end), CT_ERR_STATE,
                    "Both events must be completed before calculating elapsed time.");
    if (start->handle && end->handle && start->backend == end->backend &&
        start->device.index == end->device.index)
        return start->backend->event_elapsed_ms(start->device.index, start->handle, end->handle, ms);
    *ms = (float)(end->host_ms - start->host_ms);
    return CT_OK;
}

void cti_runtime_shutdown(void) {
    pthread_mutex_lock(&g_lock);
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++)
        for (int i = 0; i < CT_MAX_DEVICES; i++) {
            ct_stream *s = g_default[t][i];
            if (!s) continue;
            if (s->handle) s->backend->stream_destroy(i, s->handle);
            free(s);
            g_default[t][i] = NULL;
        }
    while (g_retired) {
        ct_stream *next = g_retired->next_retired;
        free(g_retired);
        g_retired = next;
    }
    pthread_mutex_unlock(&g_lock);
}
