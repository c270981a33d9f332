/*
 * runtime.h — the device runtime seen from backends and the core (internal):
 * the current stream of a device and the objects behind ct_stream/ct_event.
 *
 * A backend op asks for the stream to enqueue on with
 * cti_current_stream_handle(type, dev): the backend handle (an OpenCL
 * command queue, a cudaStream_t) of the calling thread's current stream for
 * that device, creating the default stream on first use. This mirrors
 * PyTorch's getCurrentCUDAStream() and keeps the op signatures of
 * backend.h free of stream arguments.
 */
#ifndef CT_CORE_RUNTIME_H
#define CT_CORE_RUNTIME_H

#include <stdbool.h>

#include "backend.h"
#include "ctorch/stream.h"

struct ct_stream {
    ct_device device;          /* resolved */
    const ct_backend *backend;
    void *handle;              /* backend stream (NULL for the CPU) */
    int priority;
    bool is_default;
    bool destroyed;            /* kept as a key of cached blocks after destroy */
    unsigned long long id;     /* for printing and snapshots */
    struct ct_stream *next_retired;
};

/* The current stream of a device on this thread (default if none set);
 * NULL with an error set if the device does not exist. */
ct_stream *cti_current_stream(ct_device dev);
void *cti_current_stream_handle(ct_device_type type, int dev);
/* Release all default streams (at exit; tests). */
void cti_runtime_shutdown(void);

#endif /* CT_CORE_RUNTIME_H */
