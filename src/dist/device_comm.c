/*
 * device_comm.c — the process group's "nccl" path: CUDA tensors go
 * through the CUDA backend's collective library (NCCL,
 * src/core/backend_comm.h) instead of host memory and MPI. One
 * communicator per device, made on first use: rank 0 creates the unique
 * id, MPI carries it to the others (the way PyTorch shares it through its
 * store), and every rank joins. Waits poll the library against the
 * group's deadline; a timeout aborts the communicator, so a dead peer
 * cannot hold the GPU forever.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */
#include <string.h>
#include <time.h>

#include "core/backend_comm.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "dist.h"

#ifdef CTORCH_HAVE_MPI

#define CT_DIST_MAX_DEVICE_COMMS 64

static void *comms[CT_DIST_MAX_DEVICE_COMMS];

static const ct_backend_comm *comm_ops(void) {
    const ct_backend *b = ct_backend_for(CT_DEVICE_CUDA);
    ct_backend_proc f = b && b->get_proc ? b->get_proc("comm_ops") : NULL;
    return f ? ((ct_backend_comm_fn)f)() : NULL;
}

bool cti_dist_device_lib_available(void) { return comm_ops() != NULL; }

/* Rank 0's unique id on every rank, then this rank's communicator. */
static ct_status join(const ct_backend_comm *ops, int device, void **comm) {
    unsigned char id[CT_COMM_ID_MAX] = {0};
    CT_CHECK_STATUS(ops->id_size <= sizeof id, CT_ERR_INTERNAL, "nccl: unique id of %zu bytes", ops->id_size);
    if (cti_dist_rank() == 0) CT_TRY(ops->make_id(id));
    MPI_Request req;
    int rc = MPI_Ibcast(id, (int)ops->id_size, MPI_BYTE, 0, cti_dist_comm(), &req);
    CT_TRY(rc == MPI_SUCCESS ? cti_dist_wait(&req, "init_process_group(nccl)")
                             : cti_dist_mpi_error(rc, "init_process_group(nccl)"));
    return ops->init(device, cti_dist_world(), cti_dist_rank(), id, comm);
}

ct_status cti_dist_device_comm(const ct_tensor *t, const ct_backend_comm **ops, void **comm) {
    *ops = NULL, *comm = NULL;
    if (!cti_dist_uses_device_lib() || t->storage->device.type != CT_DEVICE_CUDA) return CT_OK;
    const int dev = t->storage->device.index;
    CT_CHECK_STATUS(dev >= 0 && dev < CT_DIST_MAX_DEVICE_COMMS, CT_ERR_DEVICE, "nccl: device index %d", dev);
    const ct_backend_comm *o = comm_ops();
    CT_CHECK_STATUS(o != NULL, CT_ERR_UNSUPPORTED, "nccl: this build of ctorch has no CUDA backend");
    if (!comms[dev]) CT_TRY(join(o, dev, &comms[dev]));
    *ops = o, *comm = comms[dev];
    return CT_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ct_status cti_dist_device_test(const ct_backend_comm *ops, void *comm, int device, const char *op, bool *done) {
    ct_status st = ops->query(comm, device, done);
    if (st != CT_OK) cti_dist_mark_broken();
    return st == CT_OK ? CT_OK : ct_error_set(st, "%s: %s", op, ct_last_error());
}

ct_status cti_dist_device_wait(const ct_backend_comm *ops, void *comm, int device, const char *op) {
    const double start = now_s();
    const struct timespec nap = {0, 50 * 1000};
    for (;;) {
        bool done = false;
        CT_TRY(cti_dist_device_test(ops, comm, device, op, &done));
        if (done) return CT_OK;
        const double waited = now_s() - start;
        if (waited > cti_dist_timeout()) {
            ops->destroy(comm, true); /* ncclCommAbort: the peer may never come */
            comms[device] = NULL;
            cti_dist_mark_broken();
            return ct_error_set(CT_ERR_TIMEOUT, "%s: rank %d of %d waited %.1f s for NCCL on cuda:%d (timeout %.1f s); "
                                "the communicator was aborted", op, cti_dist_rank(), cti_dist_world(), waited,
                                device, cti_dist_timeout());
        }
        nanosleep(&nap, NULL);
    }
}

void cti_dist_device_comms_release(bool abort) {
    const ct_backend_comm *ops = comm_ops();
    for (int d = 0; d < CT_DIST_MAX_DEVICE_COMMS; d++) {
        if (comms[d] && ops) ops->destroy(comms[d], abort);
        comms[d] = NULL;
    }
}

#endif /* CTORCH_HAVE_MPI */
