/*
 * dist.h — what the distributed files share (internal to src/dist): the
 * default process group's state, the deadline-bounded wait every MPI
 * request goes through, and the check that every rank passed the same
 * kind of tensor. process_group.c holds them; collectives.c uses them.
 */
#ifndef CT_DIST_DIST_H
#define CT_DIST_DIST_H

#include <stdint.h>

#include "ctorch/distributed.h"

#ifdef CTORCH_HAVE_MPI
#include <mpi.h>

/* CT_OK when the default group can run a collective now; else the error
 * (not initialized, destroyed, or broken by an earlier failure). */
ct_status cti_dist_ready(const char *op);
MPI_Comm cti_dist_comm(void);
int cti_dist_rank(void);
int cti_dist_world(void);

/* Waits for req until the group's deadline, making MPI progress. On a
 * timeout or an MPI error the group is marked broken and the error names
 * op, the rank and how long it waited. */
ct_status cti_dist_wait(MPI_Request *req, const char *op);
/* Whether req has finished (CT_OK and *done), or an MPI error. */
ct_status cti_dist_test(MPI_Request *req, const char *op, int *done);
/* The error for an MPI return code rc (marks the group broken). */
ct_status cti_dist_mpi_error(int rc, const char *op);

/* Every rank passes its tensor's dtype and shape (and `extra`, e.g. the
 * root rank of a broadcast); fails on every rank, naming each rank's
 * tensor, when they differ. */
ct_status cti_dist_check_same(const char *op, const ct_tensor *t, int64_t extra);

/* The group's deadline (seconds), and marking it broken (process_group.c). */
double cti_dist_timeout(void);
void cti_dist_mark_broken(void);
/* Whether the group was made with backend "nccl" (CUDA tensors through the
 * device library). */
bool cti_dist_uses_device_lib(void);

/* device_comm.c: the device library's path. */
struct ct_backend_comm;
bool cti_dist_device_lib_available(void);
/* The library and this device's communicator for t (made on first use), or
 * *ops NULL when t goes through MPI (not a CUDA tensor, or backend mpi). */
ct_status cti_dist_device_comm(const ct_tensor *t, const struct ct_backend_comm **ops, void **comm);
ct_status cti_dist_device_test(const struct ct_backend_comm *ops, void *comm, int device, const char *op,
                               bool *done);
/* Waits for the device's queued collectives until the deadline; a timeout
 * aborts the communicator and breaks the group. */
ct_status cti_dist_device_wait(const struct ct_backend_comm *ops, void *comm, int device, const char *op);
void cti_dist_device_comms_release(bool abort);
#endif

#endif /* CT_DIST_DIST_H */
