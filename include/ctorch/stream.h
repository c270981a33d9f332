/*
 * ctorch/stream.h — streams and events, as torch.cuda.Stream and
 * torch.cuda.Event, for every device backend.
 *
 * Each device has a default stream and, per thread, a current stream
 * (initially the default). Ops on a device are enqueued on its current
 * stream and return without waiting; work on one stream runs in order, work
 * on different streams may overlap unless ordered with events
 * (ct_stream_wait_event, ct_stream_wait_stream). Reading values on the host
 * (ct_item, printing, copying to the CPU) waits for the current stream.
 * On the CPU every op completes before it returns; CPU streams and events
 * exist so device-agnostic code runs unchanged (events still time).
 *
 * Ownership: ct_stream_create/ct_event_create return objects you destroy
 * with ct_stream_destroy/ct_event_destroy. Default and current streams are
 * borrowed (owned by ctorch). Destroying a stream waits for its work; it
 * must not be current on another thread. Tensors allocated on it stay valid,
 * and their memory returns to the cache when they are released.
 */
#ifndef CTORCH_STREAM_H
#define CTORCH_STREAM_H

#include <stdbool.h>

#include "device.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_stream ct_stream;
typedef struct ct_event ct_event;

/* torch.cuda.Stream(device, priority): lower numbers are higher priority,
 * as in CUDA; the range is ct_stream_priority_range(). */
CT_API ct_stream *ct_stream_create(ct_device dev, int priority);
CT_API void ct_stream_destroy(ct_stream *s);
CT_API ct_stream *ct_default_stream(ct_device dev);  /* borrowed */
CT_API ct_stream *ct_current_stream(ct_device dev);  /* borrowed */
/* torch.cuda.set_stream: makes s current for its device on this thread. */
CT_API ct_status ct_set_stream(ct_stream *s);
/* A NULL stream gives cpu / 0 / true (query) and keeps the pending error
 * (ctorch/status.h), or records CT_ERR_INVALID_ARG when there is none. */
CT_API ct_device ct_stream_device(const ct_stream *s);
CT_API int ct_stream_priority(const ct_stream *s);
CT_API void ct_stream_priority_range(ct_device_type type, int *least, int *greatest);

CT_API ct_status ct_stream_synchronize(ct_stream *s); /* host waits for all work on s */
CT_API bool ct_stream_query(ct_stream *s);            /* true when all work on s is done */
/* Future work on s waits for e / for everything queued on other so far. */
CT_API ct_status ct_stream_wait_event(ct_stream *s, ct_event *e);
CT_API ct_status ct_stream_wait_stream(ct_stream *s, ct_stream *other);

/* with torch.cuda.stream(s): … — the block runs with s current on its
 * device, and the previous current stream is restored at its end. Do not
 * leave the block with return/goto/break. */
typedef struct ct_stream_guard {
    ct_stream *prev;
    int active;
} ct_stream_guard;
CT_API ct_stream_guard ct_stream_guard_begin(ct_stream *s);
CT_API void ct_stream_guard_end(ct_stream_guard *g);
#define CT_WITH_STREAM(s) CT_WITH_STREAM_AT_(s, __LINE__)
#define CT_WITH_STREAM_AT_(s, line) CT_WITH_STREAM_NAMED_(s, CT_CONCAT_(ct_stream_guard_, line))
#define CT_WITH_STREAM_NAMED_(s, g) \
    for (ct_stream_guard g = ct_stream_guard_begin(s); g.active; ct_stream_guard_end(&g))

/* torch.cuda.Event(enable_timing=…). */
typedef struct ct_event_opts {
    int reserved_;
    bool enable_timing;
    bool blocking;           /* host waits by sleeping, not spinning */
} ct_event_opts;
#define ct_event_create(...) ct_event_create_opts((ct_event_opts){.reserved_ = 0, __VA_ARGS__})
CT_API ct_event *ct_event_create_opts(ct_event_opts o);
CT_API void ct_event_destroy(ct_event *e);
/* Record on s (NULL: the current stream of the device the event was first
 * recorded on, or of the current CPU device the first time). */
CT_API ct_status ct_event_record(ct_event *e, ct_stream *s);
CT_API bool ct_event_query(ct_event *e);              /* true if never recorded */
CT_API ct_status ct_event_synchronize(ct_event *e);   /* no-op if never recorded */
CT_API ct_status ct_event_wait(ct_event *e, ct_stream *s); /* s waits for e (NULL: current) */
/* Milliseconds from start to end; both need enable_timing, must be recorded
 * and complete (PyTorch's three errors). */
CT_API ct_status ct_event_elapsed_time(ct_event *start, ct_event *end, float *ms);

/* Tensor.record_stream(s): the tensor's memory is also used on s; the
 * caching allocator will not reuse it until s's work queued before the
 * tensor is freed has finished. */
CT_API ct_status ct_record_stream(const ct_tensor *t, ct_stream *s);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_STREAM_H */
