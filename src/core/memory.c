/*
 * memory.c — the public memory API (ctorch/memory.h) and the glue between
 * storages, the caching allocators and the backends.
 *
 * Each device of a backend that sets uses_caching_allocator gets one
 * ct_alloc_cache, created on first use, whose raw segments and stream
 * events come from that backend. Pinned host memory comes from one
 * ct_host_cache over the first device backend that can page-lock memory.
 * A backend without the caching allocator may keep its own cache and
 * statistics behind its alloc/free (the CPU does, for large buffers) and
 * report them through the table's memory hooks; without hooks the
 * statistics are all zero.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_cache.h"
#include "internal.h"
#include "runtime.h"

#define CT_MAX_DEVICES 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_alloc_cache *g_caches[CT_NUM_DEVICE_TYPES][CT_MAX_DEVICES];
static struct device_ctx {
    const ct_backend *backend;
    int index;
} g_ctx[CT_NUM_DEVICE_TYPES][CT_MAX_DEVICES];

/* ---- ct_alloc_ops over a backend ------------------------------------------------ */

static ct_status dev_raw_alloc(void *ctx, size_t n, void **seg) {
    struct device_ctx *c = ctx;
    return c->backend->alloc(c->index, n, seg);
}
static void dev_raw_free(void *ctx, void *seg) {
    struct device_ctx *c = ctx;
    c->backend->free(c->index, seg);
}
static ct_status dev_mem_info(void *ctx, size_t *free_b, size_t *total_b) {
    struct device_ctx *c = ctx;
    if (!c->backend->mem_get_info) {
        *free_b = *total_b = SIZE_MAX;
        return CT_OK;
    }
    return c->backend->mem_get_info(c->index, free_b, total_b);
}
/* Events for record_stream: `stream` is a ct_stream of this device. */
static ct_status dev_event_record(void *ctx, void *stream, void **event) {
    struct device_ctx *c = ctx;
    ct_stream *s = stream;
    *event = NULL;
    if (!s->handle) return CT_OK; /* synchronous: nothing to wait for */
    CT_TRY(c->backend->event_create(c->index, false, event));
    ct_status st = c->backend->event_record(c->index, *event, s->handle);
    if (st != CT_OK) {
        c->backend->event_destroy(c->index, *event);
        *event = NULL;
    }
    return st;
}
static bool dev_event_done(void *ctx, void *event) {
    struct device_ctx *c = ctx;
    bool done = true;
    if (event && c->backend->event_query(c->index, event, &done) != CT_OK) done = true;
    return done;
}
static void dev_event_wait(void *ctx, void *event) {
    struct device_ctx *c = ctx;
    if (event) c->backend->event_synchronize(c->index, event);
}
static void dev_event_destroy(void *ctx, void *event) {
    struct device_ctx *c = ctx;
    if (event) c->backend->event_destroy(c->index, event);
}

static const char *device_title(ct_device_type t) {
    return t == CT_DEVICE_CUDA ? "CUDA" : t == CT_DEVICE_OPENCL ? "OpenCL" : "CPU";
}

/* The cache of a device, or NULL when its backend does not cache. */
static ct_alloc_cache *device_cache(ct_device d) {
    const ct_backend *b = ct_backend_for(d.type);
    if (!b || !b->uses_caching_allocator || d.index < 0 || d.index >= CT_MAX_DEVICES) return NULL;
    pthread_mutex_lock(&g_lock);
    ct_alloc_cache *c = g_caches[d.type][d.index];
    if (!c) {
        struct device_ctx *ctx = &g_ctx[d.type][d.index];
        ctx->backend = b;
        ctx->index = d.index;
        ct_alloc_ops ops = {ctx, device_title(d.type), dev_raw_alloc, dev_raw_free, dev_mem_info,
                            dev_event_record, dev_event_done, dev_event_wait, dev_event_destroy};
        c = g_caches[d.type][d.index] = ct_alloc_cache_create(&ops, d);
    }
    pthread_mutex_unlock(&g_lock);
    return c;
}

/* ---- storages ---------------------------------------------------------------- */

static atomic_llong g_live_storages;
int64_t ct_live_storages(void) { return (int64_t)atomic_load(&g_live_storages); }

static ct_storage *storage_header(ct_device dev, const ct_backend *b, size_t nbytes) {
    ct_storage *s = calloc(1, sizeof *s);
    if (!s) {
        ct_error_set(CT_ERR_OOM, "out of memory allocating a storage header");
        return NULL;
    }
    s->device = dev;
    s->backend = b;
    s->nbytes = nbytes;
    atomic_init(&s->refcount, 1);
    atomic_init(&s->version, 0u);
    atomic_init(&s->autograd_view, false);
    return s;
}

ct_storage *ct_storage_new(ct_device dev, size_t nbytes) {
    const ct_backend *b = ct_backend_for(dev.type);
    CT_ASSERT(b != NULL && dev.index >= 0);
    ct_storage *s = storage_header(dev, b, nbytes);
    if (!s) return NULL;
    ct_alloc_cache *cache = device_cache(dev);
    ct_status st;
    size_t got = nbytes; /* a cached block's rounded size */
    if (cache && nbytes > 0) {
        ct_alloc_block_ref ref;
        s->stream = cti_current_stream(dev);
        st = s->stream ? ct_alloc_cache_malloc(cache, nbytes, s->stream, &ref) : ct_last_status();
        if (st == CT_OK) s->data = ref.segment, s->byte_offset = ref.offset, s->block = ref.block, s->cache = cache;
        got = st == CT_OK ? ref.size : 0;
    } else if (cache) {
        st = CT_OK; /* empty device storage: no memory, like PyTorch's nullptr */
    } else {
        st = b->alloc(dev.index, nbytes, &s->data);
    }
    if (st != CT_OK) {
        free(s);
        return NULL;
    }
    cti_prof_memory(dev, got); /* the profiler's profile_memory: one atomic load while off */
    atomic_fetch_add(&g_live_storages, 1);
    return s;
}

ct_storage *ct_storage_new_external(ct_device dev, void *data, size_t nbytes, void (*release)(void *ctx),
                                    void *ctx) {
    const ct_backend *b = ct_backend_for(dev.type);
    CT_ASSERT(b != NULL && dev.index >= 0 && release != NULL);
    ct_storage *s = storage_header(dev, b, nbytes);
    if (!s) return NULL;
    s->data = data;
    s->external_free = release;
    s->external_ctx = ctx;
    atomic_fetch_add(&g_live_storages, 1);
    return s;
}

void ct_storage_retain(ct_storage *s) { atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed); }

static ct_host_cache *pinned_cache(bool create);

void ct_storage_release(ct_storage *s) {
    if (!s) return;
    int old = atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel);
    CT_ASSERT(old > 0);
    if (old != 1) return;
    if (s->external_free)
        s->external_free(s->external_ctx);
    else if (s->block)
        ct_alloc_cache_free(s->cache, s->block);
    else if (s->pinned)
        ct_host_cache_free(pinned_cache(false), s->data);
    else if (!s->cache && (s->data || !s->backend->uses_caching_allocator))
        s->backend->free(s->device.index, s->data);
    free(s);
    atomic_fetch_sub(&g_live_storages, 1);
}

ct_status ct_record_stream(const ct_tensor *t, ct_stream *s) {
    CT_CHECK_OBJ_STATUS(t && s, "record_stream: NULL argument");
    ct_storage *st = t->storage;
    if (st->pinned) {
        ct_host_cache_record_stream(pinned_cache(false), st->data, s);
        return CT_OK;
    }
    char a[32], b[32];
    CT_CHECK_STATUS(ct_device_equal(st->device, s->device), CT_ERR_DEVICE,
                    "record_stream: the tensor is on %s but the stream is on %s",
                    ct_device_format(st->device, a, sizeof a), ct_device_format(s->device, b, sizeof b));
    if (st->block) ct_alloc_cache_record_stream(st->cache, st->block, s);
    return CT_OK;
}

/* ---- pinned host memory ----------------------------------------------------------- */

static ct_host_cache *g_pinned;
static const ct_backend *g_pinned_backend;

static ct_status host_raw_alloc(void *ctx, size_t n, void **p) { return g_pinned_backend->host_alloc(n, p); }
static void host_raw_free(void *ctx, void *p) { g_pinned_backend->host_free(p); }
/* host blocks may be used by streams of any device: the stream knows its backend */
static ct_status host_event_record(void *ctx, void *stream, void **event) {
    ct_stream *s = stream;
    *event = NULL;
    if (!s->handle) return CT_OK;
    CT_TRY(s->backend->event_create(s->device.index, false, event));
    /* remember the stream with the event: pack both in a small record */
    void **rec = malloc(2 * sizeof *rec);
    if (!rec) {
        s->backend->event_destroy(s->device.index, *event);
        return ct_error_set(CT_ERR_OOM, "out of memory recording a pinned-memory event");
    }
    rec[0] = s;
    rec[1] = *event;
    ct_status st = s->backend->event_record(s->device.index, rec[1], s->handle);
    *event = rec;
    return st;
}
static bool host_event_done(void *ctx, void *event) {
    if (!event) return true;
    void **rec = event;
    ct_stream *s = rec[0];
    bool done = true;
    if (s->backend->event_query(s->device.index, rec[1], &done) != CT_OK) done = true;
    return done;
}
static void host_event_wait(void *ctx, void *event) {
    if (!event) return;
    void **rec = event;
    ct_stream *s = rec[0];
    s->backend->event_synchronize(s->device.index, rec[1]);
}
static void host_event_destroy(void *ctx, void *event) {
    if (!event) return;
    void **rec = event;
    ct_stream *s = rec[0];
    s->backend->event_destroy(s->device.index, rec[1]);
    free(rec);
}

static ct_host_cache *pinned_cache(bool create) {
    pthread_mutex_lock(&g_lock);
    if (!g_pinned && create) {
        for (int t = 0; t < CT_NUM_DEVICE_TYPES && !g_pinned_backend; t++) {
            const ct_backend *b = ct_backend_for((ct_device_type)t);
            if (b && b->host_alloc && b->device_count() > 0) g_pinned_backend = b;
        }
        if (g_pinned_backend) {
            ct_host_ops ops = {NULL, host_raw_alloc, host_raw_free, host_event_record, host_event_done,
                               host_event_wait, host_event_destroy};
            g_pinned = ct_host_cache_create(&ops);
        }
    }
    ct_host_cache *c = g_pinned;
    pthread_mutex_unlock(&g_lock);
    return c;
}

ct_storage *ct_storage_new_pinned(size_t nbytes) {
    ct_host_cache *hc = pinned_cache(true);
    CT_CHECK_NULL(hc != NULL, CT_ERR_UNSUPPORTED,
                  "pin_memory: no device backend that provides page-locked memory is available");
    ct_storage *s = storage_header(ct_device_cpu(), ct_backend_for(CT_DEVICE_CPU), nbytes);
    if (!s) return NULL;
    if (ct_host_cache_malloc(hc, nbytes ? nbytes : 1, &s->data) != CT_OK) {
        free(s);
        return NULL;
    }
    s->pinned = true;
    atomic_fetch_add(&g_live_storages, 1);
    return s;
}

bool ct_is_pinned(const ct_tensor *t) { return t && t->storage->pinned; }

ct_tensor *ct_pin_memory(const ct_tensor *t) {
    if (!t) return NULL;
    CT_CHECK_NULL(t->storage->device.type == CT_DEVICE_CPU, CT_ERR_DEVICE,
                  "cannot pin '%s' tensor: only dense CPU tensors can be pinned",
                  ct_device_type_name(t->storage->device.type));
    if (t->storage->pinned) return ct_track(ct_retain((ct_tensor *)t));
    int64_t n = ct_shape_numel(t->shape, t->ndim);
    ct_storage *s = ct_storage_new_pinned((size_t)n * ct_dtype_size(t->dtype));
    if (!s) return NULL;
    ct_tensor *out = ct_tensor_on_storage(s, t->shape, t->ndim, t->dtype);
    if (out && cti_copy(out, t) != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return ct_track(out);
}

ct_status ct_host_empty_cache(void) {
    ct_host_cache *hc = pinned_cache(false);
    return hc ? ct_host_cache_empty(hc) : CT_OK;
}

ct_status ct_host_memory_stats(ct_memory_stats *out) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "host_memory_stats: NULL argument");
    memset(out, 0, sizeof *out);
    out->max_split_size = -1;
    ct_host_cache *hc = pinned_cache(false);
    if (hc) ct_host_cache_stats(hc, out);
    return CT_OK;
}

/* ---- public statistics API ---------------------------------------------------------- */

/* Resolve a device for a memory query: the cache, or NULL for non-caching
 * backends (their stats are zero). */
static ct_status query_cache(ct_device dev, ct_alloc_cache **out) {
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    *out = device_cache(d);
    return CT_OK;
}

/* For a device without a ct_alloc_cache: its backend when that keeps memory
 * statistics of its own (the memory hooks of backend.h), else NULL; *index
 * is the resolved device index. */
static ct_status query_own(ct_device dev, const ct_backend **own, int *index) {
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    const ct_backend *b = ct_backend_for(d.type);
    *own = b && !b->uses_caching_allocator && b->memory_stats ? b : NULL;
    *index = d.index;
    return CT_OK;
}

ct_status ct_memory_stats_get(ct_device dev, ct_memory_stats *out) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "memory_stats: NULL argument");
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    memset(out, 0, sizeof *out);
    out->max_split_size = -1;
    const ct_backend *own;
    int index;
    if (c) ct_alloc_cache_stats(c, out);
    else if (query_own(dev, &own, &index) == CT_OK && own) own->memory_stats(index, out);
    return CT_OK;
}

ct_status ct_memory_stat(ct_device dev, const char *key, int64_t *value) {
    CT_CHECK_STATUS(key && value, CT_ERR_INVALID_ARG, "memory_stat: NULL argument");
    ct_memory_stats s;
    CT_TRY(ct_memory_stats_get(dev, &s));
    return ct_memory_stats_lookup(&s, key, value);
}

ct_status ct_memory_stats_foreach(ct_device dev, ct_memory_stat_fn fn, void *user) {
    CT_CHECK_STATUS(fn != NULL, CT_ERR_INVALID_ARG, "memory_stats_foreach: NULL callback");
    ct_memory_stats s;
    CT_TRY(ct_memory_stats_get(dev, &s));
    ct_memory_stats_visit(&s, fn, user);
    return CT_OK;
}

static int64_t stat_or_zero(ct_device dev, const char *key) {
    int64_t v = 0;
    return ct_memory_stat(dev, key, &v) == CT_OK ? v : 0;
}
int64_t ct_memory_allocated(ct_device d) { return stat_or_zero(d, "allocated_bytes.all.current"); }
int64_t ct_max_memory_allocated(ct_device d) { return stat_or_zero(d, "allocated_bytes.all.peak"); }
int64_t ct_memory_reserved(ct_device d) { return stat_or_zero(d, "reserved_bytes.all.current"); }
int64_t ct_max_memory_reserved(ct_device d) { return stat_or_zero(d, "reserved_bytes.all.peak"); }

ct_status ct_reset_peak_memory_stats(ct_device dev) {
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    const ct_backend *own;
    int index;
    if (c) ct_alloc_cache_reset_peak(c);
    else if (query_own(dev, &own, &index) == CT_OK && own && own->memory_reset_peak) own->memory_reset_peak(index);
    return CT_OK;
}

ct_status ct_reset_accumulated_memory_stats(ct_device dev) {
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    const ct_backend *own;
    int index;
    if (c) ct_alloc_cache_reset_accumulated(c);
    else if (query_own(dev, &own, &index) == CT_OK && own && own->memory_reset_accumulated)
        own->memory_reset_accumulated(index);
    return CT_OK;
}

ct_status ct_empty_cache(ct_device dev) {
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    if (c) return ct_alloc_cache_empty(c);
    const ct_backend *own;
    int index;
    CT_TRY(query_own(dev, &own, &index));
    if (own && own->empty_cache) own->empty_cache(index);
    return CT_OK;
}

ct_status ct_set_per_process_memory_fraction(double fraction, ct_device dev) {
    CT_CHECK_STATUS(fraction >= 0.0 && fraction <= 1.0, CT_ERR_INVALID_ARG,
                    "Invalid fraction value: %g. Allowed range: 0~1", fraction);
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    if (!c) { /* torch.cuda's limit is a device caching-allocator feature; host memory has none */
        char name[32];
        ct_device_format(dev, name, sizeof name);
        return ct_error_set(CT_ERR_DEVICE,
                            "set_per_process_memory_fraction: Expected a cuda or opencl device, but got: %s (the "
                            "limit applies to device memory only)",
                            name);
    }
    return ct_alloc_cache_set_fraction(c, fraction);
}

ct_status ct_mem_get_info(ct_device dev, size_t *free_bytes, size_t *total_bytes) {
    ct_device d;
    CT_CHECK_STATUS(free_bytes && total_bytes, CT_ERR_INVALID_ARG, "mem_get_info: NULL argument");
    CT_TRY(ct_device_check(dev, &d));
    const ct_backend *b = ct_backend_for(d.type);
    CT_CHECK_STATUS(b->mem_get_info != NULL, CT_ERR_UNSUPPORTED, "mem_get_info: not available on %s", b->name);
    return b->mem_get_info(d.index, free_bytes, total_bytes);
}

int ct_memory_summary(ct_device dev, bool abbreviated, char *buf, size_t size) {
    ct_memory_stats s;
    ct_device d;
    if (ct_device_check(dev, &d) != CT_OK || ct_memory_stats_get(d, &s) != CT_OK) return -1;
    return ct_memory_stats_summary(&s, device_title(d.type), d.index, abbreviated, buf, size);
}

ct_status ct_memory_snapshot(ct_device dev, ct_segment_info **segments, int *count) {
    CT_CHECK_STATUS(segments && count, CT_ERR_INVALID_ARG, "memory_snapshot: NULL argument");
    ct_alloc_cache *c;
    CT_TRY(query_cache(dev, &c));
    *segments = NULL;
    *count = 0;
    return c ? ct_alloc_cache_snapshot(c, segments, count) : CT_OK;
}

void ct_memory_snapshot_free(ct_segment_info *segments, int count) {
    for (int i = 0; segments && i < count; i++) free(segments[i].blocks);
    free(segments);
}
