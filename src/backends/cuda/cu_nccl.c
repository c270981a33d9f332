/*
 * cu_nccl.c — NCCL for the process group's "nccl" backend: the CUDA
 * backend's ct_backend_comm (src/core/backend_comm.h), handed out by
 * get_proc("comm_ops").
 *
 * NCCL is loaded with dlopen on first use (libnccl.so.2, then the
 * toolkit's lib64), as cuBLAS and cuDNN are (cu_dl.c), so libctorch loads
 * on machines without it and the error names what was tried. Collectives
 * run on the calling thread's current stream of the tensor's device, like
 * every CUDA op, so they order with the kernels around them without a host
 * wait; the process group polls query() against its deadline and aborts
 * the communicator on a timeout, instead of hanging in a blocking call.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <nccl.h>

#include "core/backend_comm.h"
#include "cu_dl.h"
#include "cu_internal.h"

#define CT_NCCL_FN(name) __typeof__(name) *name

typedef struct nccl_api {
    CT_NCCL_FN(ncclGetVersion);
    CT_NCCL_FN(ncclGetUniqueId);
    CT_NCCL_FN(ncclCommInitRank);
    CT_NCCL_FN(ncclCommDestroy);
    CT_NCCL_FN(ncclCommAbort);
    CT_NCCL_FN(ncclCommGetAsyncError);
    CT_NCCL_FN(ncclGetErrorString);
    CT_NCCL_FN(ncclAllReduce);
    CT_NCCL_FN(ncclBroadcast);
    CT_NCCL_FN(ncclAllGather);
    CT_NCCL_FN(ncclReduceScatter);
} nccl_api;

#define NCCL_SYM(fn) {#fn, offsetof(nccl_api, fn)}
static const ct_cu_sym_slot nccl_syms[] = {
    NCCL_SYM(ncclGetVersion),    NCCL_SYM(ncclGetUniqueId),       NCCL_SYM(ncclCommInitRank),
    NCCL_SYM(ncclCommDestroy),   NCCL_SYM(ncclCommAbort),         NCCL_SYM(ncclCommGetAsyncError),
    NCCL_SYM(ncclGetErrorString), NCCL_SYM(ncclAllReduce),        NCCL_SYM(ncclBroadcast),
    NCCL_SYM(ncclAllGather),     NCCL_SYM(ncclReduceScatter),
};

static nccl_api g_api;
static const char *const nccl_candidates[] = {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2",
                                              "/usr/local/cuda/lib64/libnccl.so", NULL};
static ct_cu_dl_lib g_nccl = {"NCCL", nccl_candidates, nccl_syms, sizeof nccl_syms / sizeof nccl_syms[0], &g_api,
                              0, ""};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* NCCL 2.x with bfloat16 and ncclAvg (2.10 on). */
static int nccl_version(ct_cu_dl_lib *lib, char *why, size_t size) {
    (void)lib;
    int v = 0;
    if (g_api.ncclGetVersion(&v) != ncclSuccess || v < 21000) {
        snprintf(why, size, "NCCL %d found; ctorch needs 2.10 or newer (bfloat16, ncclAvg)", v);
        return 0;
    }
    return v;
}

static void load_nccl(void) {
    const char *path = NULL;
    ct_cu_dl_load(&g_nccl, nccl_version, &path);
}

static const nccl_api *api(const char *op) { return ct_cu_dl_table(&g_nccl, &g_once, load_nccl, op); }

static ct_status nccl_error(ncclResult_t r, const char *op) {
    if (r == ncclSuccess) return CT_OK;
    return ct_error_set(CT_ERR_BACKEND, "%s: NCCL error %d: %s", op, (int)r,
                        g_nccl.version > 0 ? g_api.ncclGetErrorString(r) : "(NCCL not loaded)");
}

/* ---- types ------------------------------------------------------------------------------ */

static bool nccl_type(ct_dtype dt, ncclDataType_t *out) {
    switch (dt) {
    case CT_FLOAT32: *out = ncclFloat32; return true;
    case CT_FLOAT64: *out = ncclFloat64; return true;
    case CT_FLOAT16: *out = ncclFloat16; return true;
    case CT_BFLOAT16: *out = ncclBfloat16; return true;
    case CT_INT32: *out = ncclInt32; return true;
    case CT_INT64: *out = ncclInt64; return true;
    case CT_INT8: *out = ncclInt8; return true;
    case CT_UINT8:
    case CT_BOOL: *out = ncclUint8; return true;
    default: return false;
    }
}

/* bool sums and averages are logical ors (max on 0/1), as PyTorch's. */
static ncclRedOp_t nccl_op(int op, ct_dtype dt) {
    if (dt == CT_BOOL && (op == CT_COMM_SUM || op == CT_COMM_AVG)) return ncclMax;
    switch (op) {
    case CT_COMM_AVG: return ncclAvg;
    case CT_COMM_MAX: return ncclMax;
    case CT_COMM_MIN: return ncclMin;
    default: return ncclSum;
    }
}

static void *address(const ct_kview *v) { return (char *)v->data + v->offset * (int64_t)ct_dtype_size(v->dtype); }

static size_t count(const ct_kview *v) {
    size_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= (size_t)v->shape[d];
    return n;
}

/* The API, the element type and the stream of a call, or an error. */
static ct_status prepare(const char *op, const ct_kview *v, const nccl_api **a, ncclDataType_t *type,
                         cudaStream_t *stream) {
    if (!(*a = api(op))) return ct_last_status();
    CT_CHECK_STATUS(nccl_type(v->dtype, type), CT_ERR_DTYPE, "%s: NCCL has no %s", op, ct_dtype_name(v->dtype));
    *stream = ct_cu_stream(v->device);
    return *stream ? CT_OK : ct_last_status();
}

/* ---- the table ------------------------------------------------------------------------------ */

static ct_status make_id(void *id) {
    const nccl_api *a = api("init_process_group(nccl)");
    if (!a) return ct_last_status();
    ncclUniqueId uid;
    CT_TRY(nccl_error(a->ncclGetUniqueId(&uid), "ncclGetUniqueId"));
    memcpy(id, &uid, sizeof uid);
    return CT_OK;
}

static ct_status init(int device, int nranks, int rank, const void *id, void **comm) {
    const nccl_api *a = api("init_process_group(nccl)");
    if (!a) return ct_last_status();
    CT_TRY(ct_cu_set_device(device));
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    ncclComm_t c = NULL;
    CT_TRY(nccl_error(a->ncclCommInitRank(&c, nranks, uid, rank), "ncclCommInitRank"));
    *comm = c;
    return CT_OK;
}

static void destroy(void *comm, bool abort) {
    if (!comm || g_nccl.version <= 0) return;
    if (abort) g_api.ncclCommAbort((ncclComm_t)comm);
    else g_api.ncclCommDestroy((ncclComm_t)comm);
}

static ct_status all_reduce(void *comm, const ct_kview *t, int op) {
    const nccl_api *a = NULL;
    ncclDataType_t type = ncclFloat32;
    cudaStream_t s = NULL;
    CT_TRY(prepare("all_reduce", t, &a, &type, &s));
    void *p = address(t);
    return nccl_error(a->ncclAllReduce(p, p, count(t), type, nccl_op(op, t->dtype), (ncclComm_t)comm, s),
                      "ncclAllReduce");
}

static ct_status broadcast(void *comm, const ct_kview *t, int root) {
    const nccl_api *a = NULL;
    ncclDataType_t type = ncclFloat32;
    cudaStream_t s = NULL;
    CT_TRY(prepare("broadcast", t, &a, &type, &s));
    void *p = address(t);
    return nccl_error(a->ncclBroadcast(p, p, count(t), type, root, (ncclComm_t)comm, s), "ncclBroadcast");
}

static ct_status all_gather(void *comm, const ct_kview *out, const ct_kview *in) {
    const nccl_api *a = NULL;
    ncclDataType_t type = ncclFloat32;
    cudaStream_t s = NULL;
    CT_TRY(prepare("all_gather", in, &a, &type, &s));
    return nccl_error(a->ncclAllGather(address(in), address(out), count(in), type, (ncclComm_t)comm, s),
                      "ncclAllGather");
}

static ct_status reduce_scatter(void *comm, const ct_kview *out, const ct_kview *in, int op) {
    const nccl_api *a = NULL;
    ncclDataType_t type = ncclFloat32;
    cudaStream_t s = NULL;
    CT_TRY(prepare("reduce_scatter", in, &a, &type, &s));
    return nccl_error(a->ncclReduceScatter(address(in), address(out), count(out), type, nccl_op(op, in->dtype),
                                           (ncclComm_t)comm, s),
                      "ncclReduceScatter");
}

static ct_status query(void *comm, int device, bool *done) {
    ncclResult_t async = ncclSuccess;
    if (g_nccl.version > 0 && g_api.ncclCommGetAsyncError((ncclComm_t)comm, &async) == ncclSuccess &&
        async != ncclSuccess && async != ncclInProgress)
        return nccl_error(async, "NCCL (asynchronous error)");
    cudaStream_t s = ct_cu_stream(device);
    if (!s) return ct_last_status();
    cudaError_t e = cudaStreamQuery(s);
    *done = e == cudaSuccess;
    if (e == cudaErrorNotReady) (void)cudaGetLastError(); /* not an error: keep it out of the next launch check */
    return e == cudaSuccess || e == cudaErrorNotReady ? CT_OK : ct_cu_check(e, "cudaStreamQuery");
}

static const ct_backend_comm g_comm = {
    .name = "nccl",
    .id_size = sizeof(ncclUniqueId),
    .make_id = make_id,
    .init = init,
    .destroy = destroy,
    .all_reduce = all_reduce,
    .broadcast = broadcast,
    .all_gather = all_gather,
    .reduce_scatter = reduce_scatter,
    .query = query,
};

const ct_backend_comm *ct_cu_comm_ops(void) { return &g_comm; }
