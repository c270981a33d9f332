/*
 * collectives.c — torch.distributed's collectives over MPI: all_reduce
 * (also asynchronous, with a work handle), broadcast, all_gather,
 * reduce_scatter and barrier, on tensors of any device and layout.
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

/* ---- all_reduce, synchronous and asynchronous --------------------------------------------- */

struct ct_work {
    MPI_Request req;
    ct_tensor *user, *host; /* host: the buffer the exchange works on (on the device for NCCL) */
    ct_dist_reduce_op op;
    const ct_backend_comm *dev_ops; /* NCCL's path, else NULL (MPI) */
    void *dev_comm;
    bool done;
    ct_status status;
};

static ct_status all_reduce_checks(const char *op, ct_tensor *t, ct_dist_reduce_op r) {
    CT_TRY(cti_dist_ready(op));
    CT_TRY(check_tensor(op, "tensor", t));
    CT_TRY(check_reduce_op(op, r));
    CT_TRY(check_count(op, t));
    CT_TRY(cti_check_write(op, t, NULL));
    return cti_dist_check_same(op, t, r);
}

/* Starts the all-reduce of w->host; w->done when there is nothing to send. */
static ct_status all_reduce_start(ct_work *w, const char *op) {
    w->req = MPI_REQUEST_NULL;
    if (ct_numel(w->host) == 0) return CT_OK;
    if (w->dev_ops) {
        const ct_kview v = ct_kview_of(w->host);
        return w->dev_ops->all_reduce(w->dev_comm, &v, (int)w->op);
    }
    const int rc = MPI_Iallreduce(MPI_IN_PLACE, ct_data_ptr(w->host), count_of(w->host),
                                  mpi_type(w->host->dtype), mpi_op(w->op, w->host->dtype),
                                  cti_dist_comm(), &w->req);
    return rc == MPI_SUCCESS ? CT_OK : cti_dist_mpi_error(rc, op);
}

static ct_status all_reduce_finish(ct_work *w) {
    w->done = true;
    if (w->status == CT_OK && w->op == CT_DIST_AVG && !w->dev_ops) divide_by_world(w->host);
    if (w->status == CT_OK) w->status = write_back(w->user, w->host);
    return w->status;
}

ct_work *ct_dist_all_reduce_async(ct_tensor *t, ct_dist_reduce_op op) {
    const char *name = "all_reduce";
    if (all_reduce_checks(name, t, op) != CT_OK) return NULL;
    ct_work *w = calloc(1, sizeof *w);
    if (!w) {
        ct_error_set(CT_ERR_OOM, "%s: out of memory", name);
        return NULL;
    }
    w->user = ct_retain(t), w->op = op; /* the tensor outlives the caller's handle until the work is freed */
    w->status = cti_dist_device_comm(t, &w->dev_ops, &w->dev_comm);
    if (w->status == CT_OK) w->host = w->dev_ops ? cti_contiguous(t) : host_copy(t);
    if (w->status == CT_OK) w->status = w->host ? all_reduce_start(w, name) : ct_last_status();
    if (w->status != CT_OK) { /* the error stays set */
        w->done = true;
        ct_work_free(w);
        return NULL;
    }
    return w;
}

bool ct_work_is_completed(ct_work *w) {
    if (!w) return false;
    if (w->done) return true;
    int finished = 1;
    if (w->dev_ops) {
        bool ready = false;
        w->status = cti_dist_device_test(w->dev_ops, w->dev_comm, w->host->storage->device.index, "all_reduce",
                                         &ready);
        finished = ready;
    } else if (w->req != MPI_REQUEST_NULL) {
        w->status = cti_dist_test(&w->req, "all_reduce", &finished);
    }
    if (w->status != CT_OK || finished) all_reduce_finish(w);
    return w->done;
}

ct_status ct_work_wait(ct_work *w) {
    CT_CHECK_STATUS(w != NULL, CT_ERR_INVALID_ARG, "work.wait: NULL work");
    if (w->done) return w->status == CT_OK ? CT_OK : ct_error_set(w->status, "work.wait: the operation failed");
    if (w->dev_ops)
        w->status = cti_dist_device_wait(w->dev_ops, w->dev_comm, w->host->storage->device.index, "all_reduce");
    else if (w->req != MPI_REQUEST_NULL)
        w->status = cti_dist_wait(&w->req, "all_reduce");
    return all_reduce_finish(w);
}

void ct_work_free(ct_work *w) {
    if (!w) return;
    if (!w->done) ct_work_wait(w);
    ct_decref(w->host);
    ct_decref(w->user);
    free(w);
}

ct_status ct_dist_all_reduce(ct_tensor *t, ct_dist_reduce_op op) {
    ct_work *w = ct_dist_all_reduce_async(t, op);
    if (!w) return ct_last_status();
    ct_status st = ct_work_wait(w);
    ct_work_free(w);
    return st;
}

/* ---- broadcast, all_gather, reduce_scatter, barrier ---------------------------------------- */

/* ---- the device library's path (backend "nccl", CUDA tensors) ------------------------ */

/* A contiguous tensor on out's device for the library to write out's
 * result into (out itself when contiguous). */
static ct_tensor *device_result(const ct_tensor *out) {
    if (ct_is_contiguous(out)) return ct_retain((ct_tensor *)out);
    return cti_empty(out->shape, out->ndim, out->dtype, out->storage->device);
}

/* What a collective asks of the library, between the contiguous buffers. */
typedef ct_status (*device_call)(const ct_backend_comm *ops, void *comm, const ct_kview *out, const ct_kview *in,
                                 int arg);

/* Runs call on contiguous copies of `in` and a buffer for `out` (the same
 * tensor for in-place collectives), waits with the deadline and writes
 * out's result back unless write is false. */
static ct_status run_on_device(const char *op, const ct_backend_comm *ops, void *comm, ct_tensor *out,
                               const ct_tensor *in, device_call call, int arg, bool write) {
    CT_CHECK_STATUS(ct_device_equal(out->storage->device, in->storage->device), CT_ERR_DEVICE,
                    "%s: output and input must be on the same device for nccl", op);
    ct_tensor *win = cti_contiguous(in), *wout = win && out != in ? device_result(out) : win ? ct_retain(win) : NULL;
    ct_status st = win && wout ? CT_OK : ct_last_status();
    if (st == CT_OK) {
        const ct_kview vo = ct_kview_of(wout), vi = ct_kview_of(win);
        st = call(ops, comm, &vo, &vi, arg);
    }
    if (st == CT_OK) st = cti_dist_device_wait(ops, comm, in->storage->device.index, op);
    if (st == CT_OK && write) st = write_back(out, wout);
    ct_decref(win), ct_decref(wout);
    return st;
}

static ct_status call_broadcast(const ct_backend_comm *ops, void *comm, const ct_kview *out, const ct_kview *in,
                                int root) {
    (void)in;
    return ops->broadcast(comm, out, root);
}
static ct_status call_all_gather(const ct_backend_comm *ops, void *comm, const ct_kview *out, const ct_kview *in,
                                 int unused) {
    (void)unused;
    return ops->all_gather(comm, out, in);
}
static ct_status call_reduce_scatter(const ct_backend_comm *ops, void *comm, const ct_kview *out,
                                     const ct_kview *in, int op) {
    return ops->reduce_scatter(comm, out, in, op);
}

/* Runs one started request to its end, or reports the start's failure. */
static ct_status finish(int rc, MPI_Request *req, const char *op) {
    return rc == MPI_SUCCESS ? cti_dist_wait(req, op) : cti_dist_mpi_error(rc, op);
}

ct_status ct_dist_broadcast(ct_tensor *t, int src) {
    const char *op = "broadcast";
    CT_TRY(cti_dist_ready(op));
    CT_TRY(check_tensor(op, "tensor", t));
    CT_TRY(check_count(op, t));
    CT_CHECK_STATUS(src >= 0 && src < cti_dist_world(), CT_ERR_INVALID_ARG,
                    "broadcast: Invalid src rank %d, rank should be in the interval [0, %d]", src,
                    cti_dist_world() - 1);
    CT_TRY(cti_check_write(op, t, NULL));
    CT_TRY(cti_dist_check_same(op, t, src));
    if (ct_numel(t) == 0) return CT_OK;
    const ct_backend_comm *ops;
    void *comm;
    CT_TRY(cti_dist_device_comm(t, &ops, &comm));
    if (ops) return run_on_device(op, ops, comm, t, t, call_broadcast, src, cti_dist_rank() != src);
    ct_tensor *host = host_copy(t);
    if (!host) return ct_last_status();
    MPI_Request req;
    int rc = MPI_Ibcast(ct_data_ptr(host), count_of(host), mpi_type(host->dtype), src, cti_dist_comm(), &req);
    ct_status st = finish(rc, &req, op);
    if (st == CT_OK && cti_dist_rank() != src) st = write_back(t, host);
    ct_decref(host);
    return st;
}

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

static ct_status gather_checks(const char *op, ct_tensor *out, const ct_tensor *in, bool gather) {
    CT_TRY(cti_dist_ready(op));
    CT_TRY(check_tensor(op, "output", out));
    CT_TRY(check_tensor(op, "input", in));
    CT_TRY(check_count(op, gather ? out : in));
    CT_TRY(check_scaled(op, out, in, gather));
    return cti_check_write(op, out, in);
}

ct_status ct_dist_all_gather(ct_tensor *out, const ct_tensor *in) {
    const char *op = "all_gather";
    CT_TRY(gather_checks(op, out, in, true));
    CT_TRY(cti_dist_check_same(op, in, 0));
    if (ct_numel(in) == 0) return CT_OK;
    const ct_backend_comm *ops;
    void *comm;
    CT_TRY(cti_dist_device_comm(in, &ops, &comm));
    if (ops) return run_on_device(op, ops, comm, out, in, call_all_gather, 0, true);
    ct_tensor *hin = host_copy(in), *hout = hin ? host_result(out) : NULL;
    ct_status st = ct_last_status();
    if (hin && hout) {
        MPI_Request req;
        const MPI_Datatype type = mpi_type(hin->dtype);
        int rc = MPI_Iallgather(ct_data_ptr(hin), count_of(hin), type, ct_data_ptr(hout), count_of(hin), type,
                                cti_dist_comm(), &req);
        st = finish(rc, &req, op);
        if (st == CT_OK) st = write_back(out, hout);
    }
    ct_decref(hin), ct_decref(hout);
    return st;
}

ct_status ct_dist_reduce_scatter(ct_tensor *out, const ct_tensor *in, ct_dist_reduce_op r) {
    const char *op = "reduce_scatter";
    CT_TRY(check_reduce_op(op, r));
    CT_TRY(gather_checks(op, out, in, false));
    CT_TRY(cti_dist_check_same(op, in, r));
    if (ct_numel(out) == 0) return CT_OK;
    const ct_backend_comm *ops;
    void *comm;
    CT_TRY(cti_dist_device_comm(in, &ops, &comm));
    if (ops) return run_on_device(op, ops, comm, out, in, call_reduce_scatter, (int)r, true);
    ct_tensor *hin = host_copy(in), *hout = hin ? host_result(out) : NULL;
    ct_status st = ct_last_status();
    if (hin && hout) {
        MPI_Request req;
        int rc = MPI_Ireduce_scatter_block(ct_data_ptr(hin), ct_data_ptr(hout), count_of(hout),
                                           mpi_type(hin->dtype), mpi_op(r, hin->dtype), cti_dist_comm(), &req);
        st = finish(rc, &req, op);
        if (st == CT_OK && r == CT_DIST_AVG) divide_by_world(hout);
        if (st == CT_OK) st = write_back(out, hout);
    }
    ct_decref(hin), ct_decref(hout);
    return st;
}

ct_status ct_dist_barrier(void) {
    CT_TRY(cti_dist_ready("barrier"));
    MPI_Request req;
    return finish(MPI_Ibarrier(cti_dist_comm(), &req), &req, "barrier");
}

#endif /* CTORCH_HAVE_MPI */
