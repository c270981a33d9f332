/*
 * alloc_fake.h — a fake device for the caching allocator tests: raw
 * allocations with a set capacity, counted calls and injected failures,
 * streams as small structs, and events whose completion the test decides.
 *
 * Segment handles are made-up increasing addresses (the allocator never
 * dereferences them), so snapshots come out in allocation order. Pinned
 * host blocks are real malloc'd memory, as callers write into them.
 */
#ifndef CT_TEST_ALLOC_FAKE_H
#define CT_TEST_ALLOC_FAKE_H

#include <stdint.h>
#include <stdlib.h>

#include "core/alloc_cache.h"
#include "testutil.h"

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)
#define FAKE_MAX_SEGMENTS 4096

/* A stream: work recorded on it completes when the test says so. */
typedef struct fake_stream {
    int id;
    uint64_t recorded;  /* events recorded so far */
    uint64_t completed; /* events up to this one have completed */
} fake_stream;

typedef struct fake_event {
    fake_stream *stream;
    uint64_t seq;
} fake_event;

typedef struct fake_device {
    size_t capacity, used;
    uintptr_t next_address;
    struct {
        void *handle;
        size_t size;
    } live[FAKE_MAX_SEGMENTS];
    int num_live;
    int alloc_calls, free_calls;
    ct_status fail_next;     /* returned once by the next raw alloc if set */
    bool real_memory;        /* host blocks: malloc for real */
    bool fail_events;        /* event_record fails */
    int live_events, events_recorded, events_waited;
} fake_device;

static inline void fake_init(fake_device *f, size_t capacity) {
    memset(f, 0, sizeof *f);
    f->capacity = capacity;
    f->next_address = 0x10000000;
}

static inline ct_status fake_raw_alloc(void *ctx, size_t n, void **out) {
    fake_device *f = (fake_device *)ctx;
    f->alloc_calls++;
    if (f->fail_next != CT_OK) {
        ct_status st = f->fail_next;
        f->fail_next = CT_OK;
        return st;
    }
    if (f->used + n > f->capacity || f->num_live == FAKE_MAX_SEGMENTS) return CT_ERR_OOM;
    void *h;
    if (f->real_memory) {
        h = malloc(n);
        if (!h) return CT_ERR_OOM;
    } else {
        h = (void *)f->next_address;
        f->next_address += n + 4096; /* a gap, so adjacent segments never look contiguous */
    }
    f->live[f->num_live].handle = h;
    f->live[f->num_live].size = n;
    f->num_live++;
    f->used += n;
    *out = h;
    return CT_OK;
}

static inline void fake_raw_free(void *ctx, void *h) {
    fake_device *f = (fake_device *)ctx;
    f->free_calls++;
    for (int i = 0; i < f->num_live; i++)
        if (f->live[i].handle == h) {
            f->used -= f->live[i].size;
            f->live[i] = f->live[--f->num_live];
            if (f->real_memory) free(h);
            return;
        }
    ct_test_fail(__FILE__, __LINE__, "raw_free of unknown segment %p", h);
}

static inline ct_status fake_mem_get_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
    fake_device *f = (fake_device *)ctx;
    *free_bytes = f->capacity - f->used;
    *total_bytes = f->capacity;
    return CT_OK;
}

static inline ct_status fake_event_record(void *ctx, void *stream, void **event) {
    fake_device *f = (fake_device *)ctx;
    if (f->fail_events) return CT_ERR_BACKEND;
    fake_event *e = (fake_event *)malloc(sizeof *e);
    if (!e) return CT_ERR_OOM;
    e->stream = (fake_stream *)stream;
    e->seq = ++e->stream->recorded;
    f->live_events++;
    f->events_recorded++;
    *event = e;
    return CT_OK;
}

static inline bool fake_event_done(void *ctx, void *event) {
    fake_event *e = (fake_event *)event;
    return e->stream->completed >= e->seq;
}

static inline void fake_event_wait(void *ctx, void *event) {
    fake_device *f = (fake_device *)ctx;
    fake_event *e = (fake_event *)event;
    f->events_waited++;
    if (e->stream->completed < e->seq) e->stream->completed = e->seq;
}

static inline void fake_event_destroy(void *ctx, void *event) {
    fake_device *f = (fake_device *)ctx;
    f->live_events--;
    free(event);
}

/* All work recorded on the stream so far has finished. */
static inline void fake_stream_finish(fake_stream *s) { s->completed = s->recorded; }

static inline ct_alloc_ops fake_ops(fake_device *f) {
    ct_alloc_ops ops = {f,          "OpenCL",          fake_raw_alloc,  fake_raw_free,     fake_mem_get_info,
                        fake_event_record, fake_event_done, fake_event_wait, fake_event_destroy};
    return ops;
}

static inline ct_host_ops fake_host_ops(fake_device *f) {
    ct_host_ops ops = {f, fake_raw_alloc, fake_raw_free, fake_event_record, fake_event_done, fake_event_wait,
                       fake_event_destroy};
    return ops;
}

#endif /* CT_TEST_ALLOC_FAKE_H */
