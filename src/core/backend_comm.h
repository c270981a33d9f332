/*
 * backend_comm.h — a device backend's collective-communication library
 * (NCCL for CUDA), offered to the process group (src/dist) through the
 * backend's get_proc("comm_ops"), so that the distributed code reaches it
 * without naming a backend. Every operation is enqueued on the calling
 * thread's current stream of the tensor's device and returns at once;
 * query reports completion (and the library's asynchronous errors).
 */
#ifndef CT_CORE_BACKEND_COMM_H
#define CT_CORE_BACKEND_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

/* Reduce ops, in ct_dist_reduce_op's order. */
enum { CT_COMM_SUM, CT_COMM_AVG, CT_COMM_MAX, CT_COMM_MIN };

#define CT_COMM_ID_MAX 256 /* bytes of a unique id (NCCL's: 128) */

typedef struct ct_backend_comm {
    const char *name;  /* "nccl" */
    size_t id_size;    /* bytes of the unique id rank 0 makes and the others receive */
    ct_status (*make_id)(void *id);
    /* The communicator of rank `rank` of `nranks` on device `device`. */
    ct_status (*init)(int device, int nranks, int rank, const void *id, void **comm);
    /* abort: tear down without waiting for pending work (after a timeout). */
    void (*destroy)(void *comm, bool abort);
    /* In place on a contiguous view; dtypes the library has. */
    ct_status (*all_reduce)(void *comm, const ct_kview *t, int op);
    ct_status (*broadcast)(void *comm, const ct_kview *t, int root);
    /* out: nranks × in's elements, contiguous. */
    ct_status (*all_gather)(void *comm, const ct_kview *out, const ct_kview *in);
    /* in: nranks × out's elements. */
    ct_status (*reduce_scatter)(void *comm, const ct_kview *out, const ct_kview *in, int op);
    /* Whether everything enqueued so far on device's current stream has
     * finished (*done), or the library's asynchronous error. */
    ct_status (*query)(void *comm, int device, bool *done);
} ct_backend_comm;

/* What get_proc("comm_ops") returns. */
typedef const ct_backend_comm *(*ct_backend_comm_fn)(void);

#endif /* CT_CORE_BACKEND_COMM_H */
