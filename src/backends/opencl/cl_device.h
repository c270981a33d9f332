/*
 * cl_device.h — the per-device state of the OpenCL backend (internal to
 * cl_backend.c, cl_program.c and cl_blas.c; op files use cl_internal.h).
 *
 * Devices are enumerated once from every installed platform. A device's
 * context, default queue, compiled program and kernels are created on first
 * use, so a program that never touches OpenCL pays only for enumeration.
 * Devices of one platform share one context, so events and buffers can be
 * used across them (a stream on opencl:1 can wait for an event of opencl:0).
 */
#ifndef CT_CL_DEVICE_H
#define CT_CL_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cl_internal.h"

/* Devices beyond this many are ignored. */
#define CT_CL_MAX_DEVICES 64

typedef struct ct_cl_kernel_entry {
    struct ct_cl_kernel_entry *next;
    cl_kernel kernel;
    char name[];
} ct_cl_kernel_entry;

typedef struct ct_cl_device {
    /* fixed at enumeration */
    cl_platform_id platform;
    cl_device_id id;
    cl_device_type type;
    char name[256];
    char driver[128];            /* driver version, part of the program cache key */
    bool has_fp64;
    bool has_cl12;               /* OpenCL C 1.2 or later: build with -cl-std=CL1.2 */
    bool exact_fp32_divide;      /* supports -cl-fp32-correctly-rounded-divide-sqrt */
    bool amd_free_memory;        /* cl_amd_device_attribute_query: free memory known */
    cl_ulong global_mem;
    cl_ulong max_alloc;
    size_t max_group;

    /* created on first use (ct_cl_ready) */
    atomic_bool ready;
    cl_context context;          /* shared with the platform's other devices */
    cl_command_queue queue;      /* the backend's own in-order queue */

    /* every live queue of this device, for synchronize */
    pthread_mutex_t queues_mutex;
    cl_command_queue *queues;
    bool *queue_idle;           /* known to have no pending work (see cl_stream_query) */
    int nqueues, queues_cap;

    /* the embedded program, built on first use, and its kernels by name */
    pthread_mutex_t program_mutex;
    bool program_tried;
    cl_program program;
    ct_status program_status;
    char *program_error;         /* the message of a failed build, repeated on later calls */
    ct_cl_kernel_entry *kernels;

    /* held while setting a shared kernel's arguments and enqueueing it */
    pthread_mutex_t launch_mutex;

    atomic_ullong held_bytes;    /* bytes of live buffers this process allocated */
} ct_cl_device;

/* Number of enumerated devices (enumerates on the first call). */
int ct_cl_count(void);
/* Device dev, or NULL with CT_ERR_DEVICE set when dev is not an ordinal. */
ct_cl_device *ct_cl_dev(int dev);
/* Device dev with its context and default queue created; NULL with the
 * error set if dev does not exist or its context cannot be created. */
ct_cl_device *ct_cl_ready(int dev);

/* A readable byte count for messages ("2.00 GiB"), PyTorch's format. */
const char *ct_cl_format_bytes(size_t n, char *buf, size_t size);

#endif /* CT_CL_DEVICE_H */
