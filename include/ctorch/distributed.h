/*
 * ctorch/distributed.h — torch.distributed's process group and collectives,
 * over MPI: one process per rank, started by `mpirun -np N` (or srun), the
 * transport clusters already use. CPU tensors go to MPI directly; device
 * tensors are staged through host memory.
 *
 *     dist.init_process_group("mpi")        ct_dist_init_process_group((ct_dist_opts){0});
 *     rank = dist.get_rank()                int rank = ct_dist_get_rank();
 *     dist.all_reduce(t, op=ReduceOp.SUM)   ct_dist_all_reduce(t, CT_DIST_SUM);
 *     work = dist.all_reduce(t, async_op=True)
 *     work.wait()                           ct_work *w = ct_dist_all_reduce_async(t, CT_DIST_SUM);
 *                                           ct_work_wait(w); ct_work_free(w);
 *     (broadcast, all_gather, reduce_scatter have _async forms too)
 *     dist.destroy_process_group()          ct_dist_destroy_process_group();
 *
 * Every collective is called by every rank in the same order with tensors
 * of the same dtype and shape; ctorch checks this (a small extra exchange)
 * and fails on every rank with the shapes it saw, where MPI would corrupt
 * memory or hang. Every wait has a deadline (the group's timeout, 30
 * minutes by default as PyTorch's): a rank that never arrives makes the
 * others fail with CT_ERR_TIMEOUT, never hang. After a timeout or an
 * error inside MPI the group is broken: later collectives fail at once,
 * and the program should exit with an error (mpirun then ends the job).
 * A rank that dies makes mpirun end the others.
 */
#ifndef CTORCH_DISTRIBUTED_H
#define CTORCH_DISTRIBUTED_H

#include <stdbool.h>

#include "nn.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.distributed.ReduceOp. AVG divides the sum by the world size
 * (integer tensors: truncated, as PyTorch). */
typedef enum ct_dist_reduce_op { CT_DIST_SUM, CT_DIST_AVG, CT_DIST_MAX, CT_DIST_MIN } ct_dist_reduce_op;

/* init_process_group's options; zero fields mean PyTorch's defaults. */
typedef struct ct_dist_opts {
    const char *backend; /* "mpi" (NULL: "mpi") */
    double timeout_s;    /* deadline of each collective; 0: 1800 s */
} ct_dist_opts;

/* Whether this build has a distributed transport (MPI). */
CT_API bool ct_dist_is_available(void);
/* Joins the default process group: rank and world size come from the MPI
 * launch. RANK and WORLD_SIZE, when set (torchrun's variables), must agree
 * with MPI's. A second call fails ("trying to initialize the default
 * process group twice!"). */
CT_API ct_status ct_dist_init_process_group(ct_dist_opts opts);
CT_API bool ct_dist_is_initialized(void);
/* -1 when no group is initialized. */
CT_API int ct_dist_get_rank(void);
CT_API int ct_dist_get_world_size(void);
/* Leaves the group (MPI_Finalize); the group cannot be joined again in this
 * process, as MPI allows one initialisation per process. */
CT_API ct_status ct_dist_destroy_process_group(void);

/* ---- collectives (every rank calls them, in the same order) ---- */
/* t = op over every rank's t, in place, on every rank. */
CT_API ct_status ct_dist_all_reduce(ct_tensor *t, ct_dist_reduce_op op);
/* t = rank src's t, on every rank. */
CT_API ct_status ct_dist_broadcast(ct_tensor *t, int src);
/* out ([world_size * n, ...]: the ranks' inputs concatenated along dim 0)
 * from each rank's input. all_gather_into_tensor. */
CT_API ct_status ct_dist_all_gather(ct_tensor *out, const ct_tensor *input);
/* out (input's shape with dim 0 divided by the world size) = rank r's
 * slice r of op over every rank's input. reduce_scatter_tensor. */
CT_API ct_status ct_dist_reduce_scatter(ct_tensor *out, const ct_tensor *input, ct_dist_reduce_op op);
CT_API ct_status ct_dist_barrier(void);

/* ---- asynchronous form (async_op=True) ---- */
typedef struct ct_work ct_work;
/* Each starts its collective and returns at once; the tensors must not be
 * read or written until ct_work_wait returns (the work holds them). NULL
 * with the error set on failure. */
CT_API ct_work *ct_dist_all_reduce_async(ct_tensor *t, ct_dist_reduce_op op);
CT_API ct_work *ct_dist_broadcast_async(ct_tensor *t, int src);
CT_API ct_work *ct_dist_all_gather_async(ct_tensor *out, const ct_tensor *input);
CT_API ct_work *ct_dist_reduce_scatter_async(ct_tensor *out, const ct_tensor *input, ct_dist_reduce_op op);
/* Whether the operation has finished (it also makes MPI progress). */
CT_API bool ct_work_is_completed(ct_work *w);
/* Waits (up to the group's timeout) and finishes the operation. */
CT_API ct_status ct_work_wait(ct_work *w);
/* Frees a work handle; an unfinished one is waited for first. */
CT_API void ct_work_free(ct_work *w);

/* ---- DataParallel (torch.nn.DataParallel): one process, several devices ----
 *
 *     model = nn.DataParallel(model, device_ids=[0, 1])
 *     out = model(x)                  ct_data_parallel *dp = ct_data_parallel_new(model, devs, 2, devs[0]);
 *                                     ct_tensor *out = ct_data_parallel_forward(dp, x);
 *
 * Each forward scatters the batch along dim 0 over the devices, runs the
 * module on the first device and a replica on each other one, each on its
 * own thread (the devices' queues then run side by side), and gathers the
 * outputs on the output device. Replicas are made once (ct_module_clone)
 * and refreshed from the module's parameters and buffers at every forward,
 * as PyTorch's replicate does; during backward each replica's gradients are
 * added into the module's, so the optimizer steps the module alone. The
 * module must be on devices[0]. As in PyTorch, DDP is the better choice
 * even on one machine: DataParallel copies the weights every step, does
 * the scatter, gather and gradient reduction through the first device, and
 * runs backward on one host thread (docs/distributed.md). */
typedef struct ct_data_parallel ct_data_parallel;
/* module borrowed (it must outlive the wrapper); devices copied. */
CT_API ct_data_parallel *ct_data_parallel_new(ct_module *module, const ct_device *devices, int n,
                                              ct_device output_device);
CT_API ct_tensor *ct_data_parallel_forward(ct_data_parallel *dp, const ct_tensor *input);
CT_API void ct_data_parallel_free(ct_data_parallel *dp);

/* ---- DistributedDataParallel ----
 *
 *     model = DDP(model)                       ct_ddp *ddp = ct_ddp_new(model, (ct_ddp_opts){0});
 *     out = model(x)                           ct_tensor *out = ct_ddp_forward(ddp, x);
 *     loss.backward()   # grads all-reduced    ct_backward(loss);
 *     with model.no_sync(): ...                CT_DDP_NO_SYNC(ddp) { ... }
 *
 * At construction (a collective: every rank calls it) the module's
 * parameters and buffers are broadcast from rank 0, and the parameters
 * that require grad are grouped into buckets in reverse registration order
 * (a first bucket of 1 MiB, then bucket_cap_mb each, one dtype and device
 * per bucket). During backward, as soon as every gradient of a bucket is
 * final (a post-accumulate-grad hook), the bucket is all-reduced
 * asynchronously, buckets strictly in order, while backward goes on; after
 * the last one the averaged gradients are written back into .grad. Every
 * forward broadcasts the buffers from rank 0 (batch-norm statistics), as
 * PyTorch's broadcast_buffers=True. Every parameter that requires grad
 * must receive a gradient in each synchronised backward, or the next
 * forward fails with PyTorch's "Expected to have finished reduction in the
 * prior iteration" error, unless find_unused_parameters: then each forward
 * walks the graph from its output and counts the parameters it cannot
 * reach as ready with a zero gradient (unlike PyTorch, a parameter unused
 * on every rank then gets a zero .grad rather than none). */
typedef struct ct_ddp ct_ddp;
typedef struct ct_ddp_opts {
    double bucket_cap_mb;        /* 0: 25 */
    bool no_broadcast_buffers;   /* broadcast_buffers=False */
    bool find_unused_parameters; /* walk the graph after each forward (costs a traversal) */
} ct_ddp_opts;
/* Wraps module (borrowed: it must outlive the wrapper). NULL with the error
 * set on failure, e.g. when the ranks' modules differ in shapes. */
CT_API ct_ddp *ct_ddp_new(ct_module *module, ct_ddp_opts opts);
CT_API ct_tensor *ct_ddp_forward(ct_ddp *ddp, const ct_tensor *input);
CT_API ct_module *ct_ddp_module(ct_ddp *ddp); /* ddp.module, borrowed */
/* False: backward leaves gradients local and accumulating (no_sync); the
 * next synchronised backward all-reduces the accumulated sums. */
CT_API void ct_ddp_set_require_sync(ct_ddp *ddp, bool sync);
#define CT_DDP_NO_SYNC(ddp) CT_DDP_NO_SYNC_AT_((ddp), CT_CONCAT_(ct_ddp_once_, __LINE__))
#define CT_DDP_NO_SYNC_AT_(ddp, once) \
    for (int once = (ct_ddp_set_require_sync((ddp), false), 1); once; once = 0, ct_ddp_set_require_sync((ddp), true))
/* What the wrapper did, for tests and benchmarks. */
typedef struct ct_ddp_stats {
    int buckets;                   /* buckets of gradients */
    int64_t reductions;            /* synchronised backward passes finished */
    int64_t launched_before_last;  /* bucket all-reduces started while some gradient was not yet computed */
    double wait_s;                 /* time spent waiting for all-reduces after the last gradient
                                    * (the communication backward did not hide) */
} ct_ddp_stats;
CT_API ct_status ct_ddp_get_stats(const ct_ddp *ddp, ct_ddp_stats *out);
/* Unwraps (the module stays yours); waits for an unfinished reduction. */
CT_API void ct_ddp_free(ct_ddp *ddp);

#ifdef __cplusplus
}
#endif

#endif /* CTORCH_DISTRIBUTED_H */
