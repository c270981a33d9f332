/*
 * process_group.c — the default process group (torch.distributed's
 * init_process_group / get_rank / destroy_process_group) over MPI, and the
 * two things every collective needs from it: a wait with a deadline, and
 * the check that the ranks agree on what they are exchanging.
 *
 * Why a deadline: a blocking MPI call waits forever for a rank that never
 * arrives (PyTorch issue #17113, the most reported distributed failure).
 * Every request is therefore non-blocking and polled with MPI_Test until
 * the group's timeout; a timeout marks the group broken, since MPI cannot
 * cancel a collective, and every later call fails at once.
 *
 * Why the agreement check: MPI given different counts on different ranks
 * truncates, overruns buffers or hangs. One small all-gather of each rank's
 * dtype and shape before the data turns that into an error on every rank,
 * with the shapes in the message.
 *
 * Errors from MPI are returned, not fatal: the communicator's error handler
 * is MPI_ERRORS_RETURN, so the library never aborts the program.
 *
 * Backend "nccl" keeps MPI for ranks, ids and host tensors, and sends CUDA
 * tensors through the CUDA backend's NCCL (device_comm.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "dist.h"

#ifndef CTORCH_HAVE_MPI

static ct_status no_mpi(void) {
    return ct_error_set(CT_ERR_UNSUPPORTED, "distributed: this build of ctorch has no MPI "
                                            "(install libopenmpi-dev and rebuild)");
}
bool ct_dist_is_available(void) { return false; }
ct_status ct_dist_init_process_group(ct_dist_opts opts) { (void)opts; return no_mpi(); }
bool ct_dist_is_initialized(void) { return false; }
int ct_dist_get_rank(void) { return -1; }
int ct_dist_get_world_size(void) { return -1; }
ct_status ct_dist_destroy_process_group(void) { return no_mpi(); }

#else

#define CT_DIST_DEFAULT_TIMEOUT_S 1800.0 /* PyTorch's default_pg_timeout, 30 minutes */

/* OpenMPI keeps much of what MPI_Init allocates until exit, in plugins it
 * unloads at MPI_Finalize, so a LeakSanitizer build (ctorch's own tests, or
 * a user's) would report them without a module to suppress by: they are
 * not ctorch's and not leaks, so the sanitizer is told to ignore
 * allocations made inside those two calls. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LSAN_IGNORE_BEGIN() __lsan_disable()
#define LSAN_IGNORE_END() __lsan_enable()
#else
#define LSAN_IGNORE_BEGIN() ((void)0)
#define LSAN_IGNORE_END() ((void)0)
#endif

static struct {
    bool initialized, destroyed, broken, device_lib;
    int rank, world;
    double timeout_s;
    MPI_Comm comm;
} pg;

bool ct_dist_is_available(void) { return true; }
bool ct_dist_is_initialized(void) { return pg.initialized; }
int ct_dist_get_rank(void) { return pg.initialized ? pg.rank : -1; }
int ct_dist_get_world_size(void) { return pg.initialized ? pg.world : -1; }
MPI_Comm cti_dist_comm(void) { return pg.comm; }
int cti_dist_rank(void) { return pg.rank; }
int cti_dist_world(void) { return pg.world; }

/* A launcher's variable, when set, must agree with MPI's view. */
static ct_status check_env(const char *name, int mpi_value) {
    const char *v = getenv(name);
    if (!v || !*v) return CT_OK;
    char *end;
    long x = strtol(v, &end, 10);
    CT_CHECK_STATUS(*end == '\0' && x == mpi_value, CT_ERR_INVALID_ARG,
                    "init_process_group: %s=%s but the MPI launch gives %d: start every rank "
                    "with mpirun (or srun), which sets both", name, v, mpi_value);
    return CT_OK;
}

ct_status ct_dist_init_process_group(ct_dist_opts opts) {
    const char *backend = opts.backend ? opts.backend : "mpi";
    const bool nccl = strcmp(backend, "nccl") == 0, nccl_built = cti_dist_device_lib_available();
    CT_CHECK_STATUS(strcmp(backend, "mpi") == 0 || (nccl && nccl_built), CT_ERR_UNSUPPORTED,
                    "init_process_group: backend '%s' is not available (this build has: mpi%s)", backend,
                    nccl_built ? ", nccl" : "");
    CT_CHECK_STATUS(!nccl || ct_device_count(CT_DEVICE_CUDA) > 0, CT_ERR_UNSUPPORTED,
                    "init_process_group: ProcessGroupNCCL is only supported with GPUs, no GPUs found!");
    CT_CHECK_STATUS(opts.timeout_s >= 0, CT_ERR_INVALID_ARG,
                    "init_process_group: timeout must be >= 0 seconds, got %g", opts.timeout_s);
    CT_CHECK_STATUS(!pg.initialized, CT_ERR_STATE, "trying to initialize the default process group twice!");
    CT_CHECK_STATUS(!pg.destroyed, CT_ERR_STATE,
                    "init_process_group: the group was destroyed and MPI cannot start twice in one process");
    int already = 0, provided = 0, rc = MPI_SUCCESS;
    MPI_Initialized(&already);
    LSAN_IGNORE_BEGIN();
    if (!already) rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    LSAN_IGNORE_END();
    if (rc != MPI_SUCCESS) return ct_error_set(CT_ERR_BACKEND, "init_process_group: MPI_Init_thread failed");
    if (MPI_Comm_dup(MPI_COMM_WORLD, &pg.comm) != MPI_SUCCESS)
        return ct_error_set(CT_ERR_BACKEND, "init_process_group: MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(pg.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(pg.comm, &pg.rank);
    MPI_Comm_size(pg.comm, &pg.world);
    ct_status st = check_env("RANK", pg.rank);
    if (st == CT_OK) st = check_env("WORLD_SIZE", pg.world);
    if (st != CT_OK) {
        MPI_Comm_free(&pg.comm);
        return st;
    }
    pg.timeout_s = opts.timeout_s > 0 ? opts.timeout_s : CT_DIST_DEFAULT_TIMEOUT_S;
    pg.initialized = true, pg.broken = false, pg.device_lib = nccl;
    return CT_OK;
}

ct_status ct_dist_destroy_process_group(void) {
    CT_CHECK_STATUS(pg.initialized, CT_ERR_STATE, "destroy_process_group: Default process group has not been initialized, "
                                                  "please make sure to call init_process_group.");
    pg.initialized = false, pg.destroyed = true;
    cti_dist_device_comms_release(pg.broken);
    if (pg.broken) { /* a collective may still be pending: finalizing would wait for it */
        MPI_Abort(MPI_COMM_WORLD, 1);
        return CT_OK;
    }
    MPI_Comm_free(&pg.comm);
    int finalized = 0;
    MPI_Finalized(&finalized);
    LSAN_IGNORE_BEGIN();
    if (!finalized) MPI_Finalize();
    LSAN_IGNORE_END();
    return CT_OK;
}

double cti_dist_timeout(void) { return pg.timeout_s; }
void cti_dist_mark_broken(void) { pg.broken = true; }
bool cti_dist_uses_device_lib(void) { return pg.device_lib; }

ct_status cti_dist_ready(const char *op) {
    CT_CHECK_STATUS(pg.initialized, CT_ERR_STATE, "%s: Default process group has not been initialized, "
                                                  "please make sure to call init_process_group.", op);
    CT_CHECK_STATUS(!pg.broken, CT_ERR_STATE,
                    "%s: the process group is broken by an earlier timeout or MPI error (rank %d of %d): "
                    "exit and restart the job", op, pg.rank, pg.world);
    return CT_OK;
}

ct_status cti_dist_mpi_error(int rc, const char *op) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    pg.broken = true;
    return ct_error_set(CT_ERR_BACKEND, "%s: MPI failed on rank %d of %d: %s", op, pg.rank, pg.world, text);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ct_status cti_dist_test(MPI_Request *req, const char *op, int *done) {
    const int rc = MPI_Test(req, done, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? CT_OK : cti_dist_mpi_error(rc, op);
}

ct_status cti_dist_wait(MPI_Request *req, const char *op) {
    const double start = now_s();
    const struct timespec nap = {0, 50 * 1000}; /* 50 µs: polls stay cheap without spinning a core */
    for (long polls = 0;; polls++) {
        int done = 0;
        CT_TRY(cti_dist_test(req, op, &done));
        if (done) return CT_OK;
        const double waited = now_s() - start;
        if (waited > pg.timeout_s) {
            pg.broken = true;
            return ct_error_set(CT_ERR_TIMEOUT,
                                "%s: rank %d of %d waited %.1f s for the other ranks (timeout %.1f s): a rank "
                                "stopped, hangs, or calls the collectives in a different order",
                                op, pg.rank, pg.world, waited, pg.timeout_s);
        }
        if (polls > 1000) nanosleep(&nap, NULL);
    }
}

/* ---- do the ranks agree? ------------------------------------------------------------- */

enum { SIG_DTYPE, SIG_NDIM, SIG_EXTRA, SIG_SHAPE, SIG_LEN = SIG_SHAPE + CT_MAX_DIMS };

static void signature_of(const ct_tensor *t, int64_t extra, int64_t *sig) {
    memset(sig, 0, sizeof(int64_t) * SIG_LEN);
    sig[SIG_DTYPE] = t->dtype, sig[SIG_NDIM] = t->ndim, sig[SIG_EXTRA] = extra;
    for (int d = 0; d < t->ndim; d++) sig[SIG_SHAPE + d] = t->shape[d];
}

static void describe_signature(const int64_t *sig, char *out, size_t n) {
    size_t len = (size_t)snprintf(out, n, "%s [", ct_dtype_name((ct_dtype)sig[SIG_DTYPE]));
    for (int d = 0; d < sig[SIG_NDIM] && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? ", " : "", (long long)sig[SIG_SHAPE + d]);
    if (len < n) snprintf(out + len, n - len, "]");
}

static ct_status report_mismatch(const char *op, const int64_t *all, const char *extra_name) {
    char msg[768], one[96];
    size_t len = (size_t)snprintf(msg, sizeof msg, "tensors differ across ranks:");
    for (int r = 0; r < pg.world && r < 8 && len < sizeof msg; r++) {
        describe_signature(all + r * SIG_LEN, one, sizeof one);
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s rank %d %s", r ? "," : "", r, one);
        if (extra_name && len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, " (%s %lld)", extra_name,
                                    (long long)all[r * SIG_LEN + SIG_EXTRA]);
    }
    return ct_error_set(CT_ERR_SHAPE, "%s: %s", op, msg);
}

ct_status cti_dist_check_same(const char *op, const ct_tensor *t, int64_t extra) {
    int64_t mine[SIG_LEN];
    signature_of(t, extra, mine);
    int64_t *all = malloc(sizeof(int64_t) * SIG_LEN * (size_t)pg.world);
    CT_CHECK_STATUS(all != NULL, CT_ERR_OOM, "%s: out of memory", op);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, SIG_LEN, MPI_INT64_T, all, SIG_LEN, MPI_INT64_T, pg.comm, &req);
    ct_status st = rc == MPI_SUCCESS ? cti_dist_wait(&req, op) : cti_dist_mpi_error(rc, op);
    for (int r = 1; st == CT_OK && r < pg.world; r++)
        if (memcmp(all, all + r * SIG_LEN, sizeof mine) != 0)
            st = report_mismatch(op, all, strcmp(op, "broadcast") == 0 ? "src" : NULL);
    free(all);
    return st;
}

#endif /* CTORCH_HAVE_MPI */
