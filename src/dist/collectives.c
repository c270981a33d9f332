/*
 * collectives.c — torch.distributed's collectives over MPI: all_reduce,
 * broadcast, all_gather and reduce_scatter (each also asynchronous, with a
 * work handle) and barrier, on tensors of any device and layout.
 *
 * MPI reads and writes host memory of its own types, so each call works on
 * a host tensor: the caller's tensor itself when it is a contiguous CPU
 * tensor of a type MPI has, else a contiguous CPU copy (float16/bfloat16
 * widened to float32, so their sums round once) whose result is copied
 * back. Every request is non-blocking and waited for with the group's
 * deadline (process_group.c), and every call first checks that the ranks
 * agree on dtype and shape. Under backend "nccl", CUDA tensors skip the
 * host copy: a contiguous tensor on the device goes to NCCL
 * (device_comm.c), queued on the device's current stream.
 *
 * Every collective is one work object: buffers chosen, exchange started,
 * then waited for (at once by the synchronous form, by ct_work_wait for the
 * asynchronous one) and its result written back.
 */
#include <stdlib.h>

#include "core/backend_comm.h"
#include "core/error.h"
#include "core/internal.h"
#include "core/tensor_impl.h"
#include "dist.h"

#ifndef CTORCH_HAVE_MPI

static ct_status no_mpi(void) {
    return ct_error_set(CT_ERR_UNSUPPORTED, "distributed: this build of ctorch has no MPI "
                                            "(install libopenmpi-dev and rebuild)");
}
ct_status ct_dist_all_reduce(ct_tensor *t, ct_dist_reduce_op op) { (void)t, (void)op; return no_mpi(); }
ct_status ct_dist_broadcast(ct_tensor *t, int src) { (void)t, (void)src; return no_mpi(); }
ct_status ct_dist_all_gather(ct_tensor *out, const ct_tensor *in) { (void)out, (void)in; return no_mpi(); }
ct_status ct_dist_reduce_scatter(ct_tensor *out, const ct_tensor *in, ct_dist_reduce_op op) {
    (void)out, (void)in, (void)op;
    return no_mpi();
}
ct_status ct_dist_barrier(void) { return no_mpi(); }
ct_work *ct_dist_all_reduce_async(ct_tensor *t, ct_dist_reduce_op op) {
    (void)t, (void)op;
    no_mpi();
    return NULL;
}
ct_work *ct_dist_broadcast_async(ct_tensor *t, int src) {
    (void)t, (void)src;
    no_mpi();
    return NULL;
}
ct_work *ct_dist_all_gather_async(ct_tensor *out, const ct_tensor *in) {
    (void)out, (void)in;
    no_mpi();
    return NULL;
}
ct_work *ct_dist_reduce_scatter_async(ct_tensor *out, const ct_tensor *in, ct_dist_reduce_op op) {
    (void)out, (void)in, (void)op;
    no_mpi();
    return NULL;
}
bool ct_work_is_completed(ct_work *w) { (void)w; return false; }
ct_status ct_work_wait(ct_work *w) { (void)w; return no_mpi(); }
void ct_work_free(ct_work *w) { (void)w; }

#else

/* ---- types and host copies ----------------------------------------------------------- */

static bool is_16bit(ct_dtype dt) { return dt == CT_FLOAT16 || dt == CT_BFLOAT16; }

/* The dtype a tensor has while MPI holds it. */
static ct_dtype host_dtype(ct_dtype dt) { return is_16bit(dt) ? CT_FLOAT32 : dt; }

static MPI_Datatype mpi_type(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return MPI_FLOAT;
    case CT_FLOAT64: return MPI_DOUBLE;
    case CT_INT32: return MPI_INT32_T;
    case CT_INT64: return MPI_INT64_T;
    case CT_INT8: return MPI_INT8_T;
    case CT_UINT8:
    case CT_BOOL: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* bool sums are logical ors and bool averages too (as NCCL's in PyTorch). */
static MPI_Op mpi_op(ct_dist_reduce_op op, ct_dtype dt) {
    switch (op) {
    case CT_DIST_MAX: return MPI_MAX;
    case CT_DIST_MIN: return MPI_MIN;
    default: return dt == CT_BOOL ? MPI_LOR : MPI_SUM;
    }
}

static ct_status check_tensor(const char *op, const char *what, const ct_tensor *t) {
    CT_CHECK_STATUS(t != NULL, CT_ERR_INVALID_ARG, "%s: %s is NULL", op, what);
    CT_CHECK_STATUS(mpi_type(host_dtype(t->dtype)) != MPI_DATATYPE_NULL, CT_ERR_DTYPE,
                    "%s: %s has dtype %s, which the mpi backend does not exchange", op, what,
                    ct_dtype_name(t->dtype));
    return CT_OK;
}

static ct_status check_reduce_op(const char *op, ct_dist_reduce_op r) {
    CT_CHECK_STATUS(r >= CT_DIST_SUM && r <= CT_DIST_MIN, CT_ERR_INVALID_ARG,
                    "%s: unknown reduce op %d (CT_DIST_SUM, AVG, MAX or MIN)", op, (int)r);
    return CT_OK;
}

static bool host_ready(const ct_tensor *t) {
    return t->storage->device.type == CT_DEVICE_CPU && ct_is_contiguous(t) && !is_16bit(t->dtype);
}

/* A contiguous CPU tensor of host_dtype holding t's values (t itself,
 * retained, when it already is one); NULL with the error set. */
static ct_tensor *host_copy(const ct_tensor *t) {
    if (host_ready(t)) return ct_retain((ct_tensor *)t);
    ct_tensor *on_cpu = cti_to_device(t, ct_device_cpu());
    ct_tensor *cast = on_cpu ? cti_cast(on_cpu, host_dtype(t->dtype)) : NULL;
    ct_tensor *out = cast ? cti_contiguous(cast) : NULL;
    ct_decref(on_cpu), ct_decref(cast);
    return out;
}

/* A host tensor for MPI to write t's result into (values not needed). */
static ct_tensor *host_result(const ct_tensor *t) {
    if (host_ready(t)) return ct_retain((ct_tensor *)t);
    return cti_empty(t->shape, t->ndim, host_dtype(t->dtype), ct_device_cpu());
}

/* Writes a host result back into the caller's tensor (when it is a copy). */
static ct_status write_back(ct_tensor *user, ct_tensor *host) {
    if (user != host) CT_TRY(cti_copy(user, host));
    ct_tensor_bump_version(user);
    return CT_OK;
}

/* AVG: the sum divided by the world size (integers truncate). */
static void divide_by_world(ct_tensor *host) {
    const int64_t n = ct_numel(host), w = cti_dist_world();
    void *p = ct_data_ptr(host);
    switch (host->dtype) {
    case CT_FLOAT32: for (int64_t i = 0; i < n; i++) ((float *)p)[i] /= (float)w; break;
    case CT_FLOAT64: for (int64_t i = 0; i < n; i++) ((double *)p)[i] /= (double)w; break;
    case CT_INT32: for (int64_t i = 0; i < n; i++) ((int32_t *)p)[i] /= (int32_t)w; break;
    case CT_INT64: for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] /= w; break;
    case CT_UINT8: for (int64_t i = 0; i < n; i++) ((uint8_t *)p)[i] /= (uint8_t)w; break;
    case CT_INT8: for (int64_t i = 0; i < n; i++) ((int8_t *)p)[i] = (int8_t)(((int8_t *)p)[i] / w); break;
    default: break; /* bool: the logical or is its own average */
    }
}

static int count_of(const ct_tensor *t) { return (int)ct_numel(t); }

static ct_status check_count(const char *op, const ct_tensor *t) {
    CT_CHECK_STATUS(ct_numel(t) <= 0x7fffffff, CT_ERR_INVALID_ARG,
                    "%s: %lld elements exceed MPI's count limit (2^31 - 1): split the tensor", op,
                    (long long)ct_numel(t));
    return CT_OK;
}

/* ---- work objects: one exchange from start to write-back ------------------------------- */

typedef enum { W_ALL_REDUCE, W_BROADCAST, W_ALL_GATHER, W_REDUCE_SCATTER } work_kind;

struct ct_work {
    work_kind kind;
    const char *name;
    MPI_Request req;
    ct_tensor *user;                /* where the result goes (held until the work is freed) */
    ct_tensor *in, *out;            /* the exchange's buffers (the same for in-place kinds) */
    ct_dist_reduce_op op;
    int root;
    const ct_backend_comm *dev_ops; /* NCCL's path, else NULL (MPI) */
    void *dev_comm;
    bool done, write;
    ct_status status;
};

/* A contiguous tensor on the device for the library to write out into. */
static ct_tensor *device_result(const ct_tensor *out) {
    if (ct_is_contiguous(out)) return ct_retain((ct_tensor *)out);
    return cti_empty(out->shape, out->ndim, out->dtype, out->storage->device);
}

/* The buffers: `in` for the input (NULL for in-place kinds, which use
 * user's values), out for the result. */
static ct_status choose_buffers(ct_work *w, const ct_tensor *in) {
    const ct_tensor *src = in ? in : w->user;
    CT_TRY(cti_dist_device_comm(src, &w->dev_ops, &w->dev_comm));
    if (w->dev_ops && in)
        CT_CHECK_STATUS(ct_device_equal(w->user->storage->device, in->storage->device), CT_ERR_DEVICE,
                        "%s: output and input must be on the same device for nccl", w->name);
    w->in = w->dev_ops ? cti_contiguous(src) : host_copy(src);
    if (!w->in) return ct_last_status();
    w->out = !in ? ct_retain(w->in) : w->dev_ops ? device_result(w->user) : host_result(w->user);
    return w->out ? CT_OK : ct_last_status();
}

static ct_status start_mpi(ct_work *w) {
    void *in = ct_data_ptr(w->in), *out = ct_data_ptr(w->out);
    const MPI_Datatype type = mpi_type(w->in->dtype);
    const MPI_Comm comm = cti_dist_comm();
    int rc;
    switch (w->kind) {
    case W_ALL_REDUCE:
        rc = MPI_Iallreduce(MPI_IN_PLACE, out, count_of(w->out), type, mpi_op(w->op, w->out->dtype), comm, &w->req);
        break;
    case W_BROADCAST: rc = MPI_Ibcast(out, count_of(w->out), type, w->root, comm, &w->req); break;
    case W_ALL_GATHER: rc = MPI_Iallgather(in, count_of(w->in), type, out, count_of(w->in), type, comm, &w->req); break;
    default:
        rc = MPI_Ireduce_scatter_block(in, out, count_of(w->out), type, mpi_op(w->op, w->in->dtype), comm, &w->req);
        break;
    }
    return rc == MPI_SUCCESS ? CT_OK : cti_dist_mpi_error(rc, w->name);
}

static ct_status start_device(ct_work *w) {
    const ct_kview in = ct_kview_of(w->in), out = ct_kview_of(w->out);
    switch (w->kind) {
    case W_ALL_REDUCE: return w->dev_ops->all_reduce(w->dev_comm, &out, (int)w->op);
    case W_BROADCAST: return w->dev_ops->broadcast(w->dev_comm, &out, w->root);
    case W_ALL_GATHER: return w->dev_ops->all_gather(w->dev_comm, &out, &in);
    default: return w->dev_ops->reduce_scatter(w->dev_comm, &out, &in, (int)w->op);
    }
}

static ct_status work_finish(ct_work *w) {
    w->done = true;
    const bool reduces = w->kind == W_ALL_REDUCE || w->kind == W_REDUCE_SCATTER;
    if (w->status == CT_OK && reduces && w->op == CT_DIST_AVG && !w->dev_ops) divide_by_world(w->out);
    if (w->status == CT_OK && w->write) w->status = write_back(w->user, w->out);
    return w->status;
}

void ct_work_free(ct_work *w) {
    if (!w) return;
    if (!w->done) ct_work_wait(w);
    ct_decref(w->in), ct_decref(w->out), ct_decref(w->user);
    free(w);
}

/* A work object whose exchange has started (the caller's checks done); NULL
 * with the error set. `in` is NULL for in-place kinds. */
static ct_work *work_start(work_kind kind, const char *name, ct_tensor *user, const ct_tensor *in,
                           ct_dist_reduce_op op, int root) {
    ct_work *w = calloc(1, sizeof *w);
    if (!w) {
        ct_error_set(CT_ERR_OOM, "%s: out of memory", name);
        return NULL;
    }
    *w = (ct_work){.kind = kind, .name = name, .req = MPI_REQUEST_NULL, .op = op, .root = root};
    w->user = ct_retain(user); /* the tensor outlives the caller's handle until the work is freed */
    w->write = kind != W_BROADCAST || cti_dist_rank() != root;
    const bool empty = ct_numel(in ? in : user) == 0 || ct_numel(user) == 0;
    w->status = empty ? CT_OK : choose_buffers(w, in);
    if (w->status == CT_OK && !empty) w->status = w->dev_ops ? start_device(w) : start_mpi(w);
    if (w->status != CT_OK || empty) {
        w->done = true, w->write = false; /* nothing to wait for; the error (if any) stays set */
        if (w->status != CT_OK) {
            ct_work_free(w);
            return NULL;
        }
    }
    return w;
}

bool ct_work_is_completed(ct_work *w) {
    if (!w) return false;
    if (w->done) return true;
    int finished = 1;
    if (w->dev_ops) {
        bool ready = false;
        w->status = cti_dist_device_test(w->dev_ops, w->dev_comm, w->in->storage->device.index, w->name, &ready);
        finished = ready;
    } else if (w->req != MPI_REQUEST_NULL) {
        w->status = cti_dist_test(&w->req, w->name, &finished);
    }
    if (w->status != CT_OK || finished) work_finish(w);
    return w->done;
}

ct_status ct_work_wait(ct_work *w) {
    CT_CHECK_STATUS(w != NULL, CT_ERR_INVALID_ARG, "work.wait: NULL work");
    if (w->done) return w->status == CT_OK ? CT_OK : ct_error_set(w->status, "work.wait: the operation failed");
    if (w->dev_ops)
        w->status = cti_dist_device_wait(w->dev_ops, w->dev_comm, w->in->storage->device.index, w->name);
    else if (w->req != MPI_REQUEST_NULL)
        w->status = cti_dist_wait(&w->req, w->name);
    return work_finish(w);
}

/* The synchronous form of an asynchronous collective. */
static ct_status run_sync(ct_work *w) {
    if (!w) return ct_last_status();
    ct_status st = ct_work_wait(w);
    ct_work_free(w);
    return st;
}

/* ---- the collectives ------------------------------------------------------------------------ */

ct_work *ct_dist_all_reduce_async(ct_tensor *t, ct_dist_reduce_op op) {
    const char *name = "all_reduce";
    if (cti_dist_ready(name) != CT_OK || check_tensor(name, "tensor", t) != CT_OK ||
        check_reduce_op(name, op) != CT_OK || check_count(name, t) != CT_OK ||
        cti_check_write(name, t, NULL) != CT_OK || cti_dist_check_same(name, t, op) != CT_OK)
        return NULL;
    return work_start(W_ALL_REDUCE, name, t, NULL, op, 0);
}

ct_status ct_dist_all_reduce(ct_tensor *t, ct_dist_reduce_op op) { return run_sync(ct_dist_all_reduce_async(t, op)); }

ct_work *ct_dist_broadcast_async(ct_tensor *t, int src) {
    const char *name = "broadcast";
    if (cti_dist_ready(name) != CT_OK || check_tensor(name, "tensor", t) != CT_OK || check_count(name, t) != CT_OK)
        return NULL;
    CT_CHECK_NULL(src >= 0 && src < cti_dist_world(), CT_ERR_INVALID_ARG,
                  "broadcast: Invalid src rank %d, rank should be in the interval [0, %d]", src,
                  cti_dist_world() - 1);
    if (cti_check_write(name, t, NULL) != CT_OK || cti_dist_check_same(name, t, src) != CT_OK) return NULL;
    return work_start(W_BROADCAST, name, t, NULL, CT_DIST_SUM, src);
}

ct_status ct_dist_broadcast(ct_tensor *t, int src) { return run_sync(ct_dist_broadcast_async(t, src)); }

/* out's shape must be input's with dim 0 scaled: by the world size
 * (gather) or divided by it (scatter); a 0-dim input counts as [1]. */
static ct_status check_scaled(const char *op, const ct_tensor *out, const ct_tensor *in, bool gather) {
    const int64_t w = cti_dist_world(), d0 = in->ndim ? in->shape[0] : 1;
    CT_CHECK_STATUS(out->dtype == in->dtype, CT_ERR_DTYPE, "%s: output has dtype %s but input has dtype %s", op,
                    ct_dtype_name(out->dtype), ct_dtype_name(in->dtype));
    CT_CHECK_STATUS(gather || d0 % w == 0, CT_ERR_SHAPE,
                    "%s: input dim 0 (%lld) is not divisible by the world size %lld", op, (long long)d0,
                    (long long)w);
    const int64_t want0 = gather ? d0 * w : d0 / w;
    bool ok = out->ndim == (in->ndim ? in->ndim : 1) && out->shape[0] == want0;
    for (int d = 1; ok && d < in->ndim; d++) ok = out->shape[d] == in->shape[d];
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    CT_CHECK_STATUS(ok, CT_ERR_SHAPE, "%s: output of shape %s does not fit input of shape %s and world size %lld "
                                      "(dim 0 must be %lld)", op, ct_shape_str(out->shape, out->ndim, a, sizeof a),
                    ct_shape_str(in->shape, in->ndim, b, sizeof b), (long long)w, (long long)want0);
    return CT_OK;
}

static bool gather_checks(const char *op, ct_tensor *out, const ct_tensor *in, bool gather, int64_t extra) {
    return cti_dist_ready(op) == CT_OK && check_tensor(op, "output", out) == CT_OK &&
           check_tensor(op, "input", in) == CT_OK && check_count(op, gather ? out : in) == CT_OK &&
           check_scaled(op, out, in, gather) == CT_OK && cti_check_write(op, out, in) == CT_OK &&
           cti_dist_check_same(op, in, extra) == CT_OK;
}

ct_work *ct_dist_all_gather_async(ct_tensor *out, const ct_tensor *in) {
    const char *name = "all_gather";
    if (!gather_checks(name, out, in, true, 0)) return NULL;
    return work_start(W_ALL_GATHER, name, out, in, CT_DIST_SUM, 0);
}

ct_status ct_dist_all_gather(ct_tensor *out, const ct_tensor *in) { return run_sync(ct_dist_all_gather_async(out, in)); }

ct_work *ct_dist_reduce_scatter_async(ct_tensor *out, const ct_tensor *in, ct_dist_reduce_op op) {
    const char *name = "reduce_scatter";
    if (check_reduce_op(name, op) != CT_OK || !gather_checks(name, out, in, false, op)) return NULL;
    return work_start(W_REDUCE_SCATTER, name, out, in, op, 0);
}

ct_status ct_dist_reduce_scatter(ct_tensor *out, const ct_tensor *in, ct_dist_reduce_op op) {
    return run_sync(ct_dist_reduce_scatter_async(out, in, op));
}

ct_status ct_dist_barrier(void) {
    CT_TRY(cti_dist_ready("barrier"));
    MPI_Request req;
    const int rc = MPI_Ibarrier(cti_dist_comm(), &req);
    return rc == MPI_SUCCESS ? cti_dist_wait(&req, "barrier") : cti_dist_mpi_error(rc, "barrier");
}

#endif /* CTORCH_HAVE_MPI */
