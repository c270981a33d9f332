/*
 * data_parallel.c — torch.nn.DataParallel (ctorch/distributed.h): one
 * process drives several devices of one backend. Each forward scatters the
 * batch along dim 0, refreshes the cached replicas from the module, runs
 * the replicas on their own threads, and gathers the outputs on the output
 * device; backward adds every replica's gradients into the module's.
 *
 * Why threads: a forward pass spends host time deciding, checking and
 * enqueueing each op; with one thread per device the devices get work at
 * the same time instead of one after the other. The graph each thread
 * records is joined by the gather (ToCopy and cat are differentiable), so
 * one backward on the caller's thread reaches every replica.
 *
 * Why hooks for the reduction: a replica's parameters are leaves of their
 * own. A post-accumulate-grad hook on each one adds its final gradient into
 * the module's parameter (moved to the module's device) and clears the
 * replica's, which is what PyTorch's Broadcast backward (reduce_add) does.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/internal.h"
#include "core/tensor_impl.h"
#include "ctorch/amp.h"
#include "ctorch/autograd.h"
#include "dist.h"

#define CT_DP_MAX_DEVICES 16

typedef struct replica_hook {
    ct_tensor *master; /* the module's parameter (borrowed) */
} replica_hook;

typedef struct replica {
    ct_module *module;   /* the module itself for devices[0], else a clone (owned) */
    ct_tensor **params, **bufs;
    replica_hook *hooks;
    int nparams, nbufs;
} replica;

struct ct_data_parallel {
    ct_module *module;
    ct_device devices[CT_DP_MAX_DEVICES], output;
    int n;
    replica rep[CT_DP_MAX_DEVICES];
};

/* ---- replicas -------------------------------------------------------------------------- */

static ct_status list_tensors(ct_module *m, replica *r) {
    r->nparams = ct_module_parameters(m, NULL, NULL, 0);
    r->nbufs = ct_module_buffers(m, NULL, NULL, 0);
    r->params = calloc((size_t)r->nparams + 1, sizeof *r->params);
    r->bufs = calloc((size_t)r->nbufs + 1, sizeof *r->bufs);
    CT_CHECK_STATUS(r->params && r->bufs, CT_ERR_OOM, "DataParallel: out of memory");
    ct_module_parameters(m, r->params, NULL, r->nparams);
    ct_module_buffers(m, r->bufs, NULL, r->nbufs);
    return CT_OK;
}

/* A replica's final gradient, added into the module's parameter. */
static ct_status reduce_into_master(ct_tensor *leaf, void *user) {
    replica_hook *h = user;
    ct_tensor *moved = cti_to_device(leaf->grad, h->master->storage->device);
    if (!moved) return ct_last_status();
    ct_status st = CT_OK;
    if (!h->master->grad) {
        ct_tensor *own = cti_clone(moved);
        if (!own) st = ct_last_status();
        h->master->grad = own;
    } else {
        ct_tensor *sum = cti_binary(CT_BIN_ADD, h->master->grad, moved, 1.0);
        if (!sum) st = ct_last_status();
        else ct_decref(h->master->grad), h->master->grad = sum;
    }
    ct_decref(moved);
    ct_decref(leaf->grad); /* the next step starts from none, as the module's does after zero_grad */
    leaf->grad = NULL;
    return st;
}

static ct_status make_replica(ct_data_parallel *dp, int i) {
    replica *r = &dp->rep[i], *m = &dp->rep[0];
    r->module = ct_module_clone(dp->module, dp->devices[i]);
    if (!r->module) return ct_last_status();
    CT_TRY(list_tensors(r->module, r));
    r->hooks = calloc((size_t)r->nparams + 1, sizeof *r->hooks);
    CT_CHECK_STATUS(r->hooks != NULL, CT_ERR_OOM, "DataParallel: out of memory");
    for (int k = 0; k < r->nparams; k++) {
        ct_decref(r->params[k]->grad); /* the clone copied the module's */
        r->params[k]->grad = NULL;
        if (!r->params[k]->requires_grad) continue;
        r->hooks[k].master = m->params[k];
        CT_TRY(ct_register_post_accumulate_grad_hook(r->params[k], reduce_into_master, &r->hooks[k]));
    }
    return CT_OK;
}

/* The module's current values into replica i (no autograd history). */
static ct_status refresh(ct_data_parallel *dp, int i) {
    replica *r = &dp->rep[i], *m = &dp->rep[0];
    for (int k = 0; k < r->nparams; k++) CT_TRY(cti_copy(r->params[k], m->params[k]));
    for (int k = 0; k < r->nbufs; k++) CT_TRY(cti_copy(r->bufs[k], m->bufs[k]));
    ct_module_train(r->module, ct_module_is_training(dp->module));
    return CT_OK;
}

static void free_replica(replica *r, bool owned) {
    if (owned) ct_module_free(r->module);
    free(r->params), free(r->bufs), free(r->hooks);
    memset(r, 0, sizeof *r);
}

ct_data_parallel *ct_data_parallel_new(ct_module *module, const ct_device *devices, int n, ct_device output) {
    const char *op = "DataParallel";
    CT_CHECK_OBJ(module, NULL, "%s: NULL module", op);
    CT_CHECK_NULL(devices && n >= 1 && n <= CT_DP_MAX_DEVICES, CT_ERR_INVALID_ARG,
                  "%s: needs 1 to %d devices, got %d", op, CT_DP_MAX_DEVICES, devices ? n : 0);
    ct_data_parallel *dp = calloc(1, sizeof *dp);
    CT_CHECK_NULL(dp != NULL, CT_ERR_OOM, "%s: out of memory", op);
    dp->module = module, dp->n = n, dp->output = output;
    memcpy(dp->devices, devices, sizeof *devices * (size_t)n);
    ct_status st = list_tensors(module, &dp->rep[0]);
    dp->rep[0].module = module;
    for (int k = 0; st == CT_OK && k < dp->rep[0].nparams + dp->rep[0].nbufs; k++) {
        const ct_tensor *t = k < dp->rep[0].nparams ? dp->rep[0].params[k] : dp->rep[0].bufs[k - dp->rep[0].nparams];
        char want[32], got[32];
        if (ct_device_equal(t->storage->device, devices[0])) continue;
        ct_device_format(devices[0], want, sizeof want), ct_device_format(t->storage->device, got, sizeof got);
        st = ct_error_set(CT_ERR_DEVICE, "%s: module must have its parameters and buffers on device %s "
                          "(device_ids[0]) but found one of them on device: %s", op, want, got);
    }
    for (int i = 1; st == CT_OK && i < n; i++) st = make_replica(dp, i);
    if (st != CT_OK) {
        ct_data_parallel_free(dp); /* the error stays set */
        return NULL;
    }
    return dp;
}

void ct_data_parallel_free(ct_data_parallel *dp) {
    if (!dp) return;
    for (int i = 0; i < dp->n; i++) free_replica(&dp->rep[i], i > 0);
    free(dp);
}

/* ---- forward ----------------------------------------------------------------------------- */

typedef struct job {
    ct_module *module;
    ct_tensor *input, *output; /* untracked references */
    bool grad_enabled, autocast;
    ct_device_type autocast_type;
    ct_dtype autocast_dtype;
    ct_status status;
    char error[512];
} job;

/* One replica's forward, on its own thread with the caller's grad mode and
 * autocast state (both are per thread). */
static void *run_job(void *arg) {
    job *j = arg;
    ct_set_grad_enabled(j->grad_enabled);
    if (j->autocast) ct_autocast_enter(j->autocast_type, (ct_autocast_opts){.dtype = j->autocast_dtype});
    j->output = ct_forward(j->module, j->input); /* no scope on this thread: the reference is ours */
    j->status = j->output ? CT_OK : ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_INTERNAL;
    if (!j->output) snprintf(j->error, sizeof j->error, "%s", ct_last_error());
    if (j->autocast) ct_autocast_exit(j->autocast_type);
    return NULL;
}

/* Starts replica i's forward on its own thread (or runs it here when no
 * thread can be made). */
static bool start_job(job *j, pthread_t *thread) {
    if (pthread_create(thread, NULL, run_job, j) == 0) return true;
    run_job(j);
    return false;
}

static ct_status job_error(const ct_data_parallel *dp, const job *j, int i) {
    char dev[32];
    ct_device_format(dp->devices[i], dev, sizeof dev);
    return ct_error_set(j->status, "DataParallel: replica %d on %s: %s", i, dev, j->error);
}

/* Scatter, replicate, run in parallel, gather (inside the caller's scope). */
static ct_tensor *forward_in_scope(ct_data_parallel *dp, const ct_tensor *input) {
    ct_tensor *parts[CT_DP_MAX_DEVICES], *outs[CT_DP_MAX_DEVICES];
    const int n = ct_chunk(input, dp->n, 0, parts, dp->n); /* fewer when the batch is smaller */
    if (n <= 0) return NULL;
    job jobs[CT_DP_MAX_DEVICES];
    pthread_t threads[CT_DP_MAX_DEVICES];
    bool started[CT_DP_MAX_DEVICES] = {false};
    ct_status st = CT_OK;
    memset(jobs, 0, sizeof jobs);
    for (int i = 1; st == CT_OK && i < n; i++) st = refresh(dp, i);
    for (int i = 0; st == CT_OK && i < n; i++) {
        job *j = &jobs[i];
        j->module = dp->rep[i].module, j->grad_enabled = ct_is_grad_enabled();
        j->autocast_type = dp->devices[i].type, j->autocast = ct_is_autocast_enabled(j->autocast_type);
        j->autocast_dtype = ct_get_autocast_dtype(j->autocast_type);
        if (!(j->input = ct_to(parts[i], dp->devices[i], CT_DTYPE_DEFAULT))) st = ct_last_status();
    }
    for (int i = 0; st == CT_OK && i < n; i++) started[i] = start_job(&jobs[i], &threads[i]);
    for (int i = 0; i < n; i++)
        if (started[i]) pthread_join(threads[i], NULL);
    for (int i = 0; st == CT_OK && i < n; i++)
        if (jobs[i].status != CT_OK) st = job_error(dp, &jobs[i], i);
    for (int i = 0; st == CT_OK && i < n; i++)
        if (!(outs[i] = ct_to(jobs[i].output, dp->output, CT_DTYPE_DEFAULT))) st = ct_last_status();
    ct_tensor *out = st == CT_OK ? ct_cat(outs, n, 0) : NULL;
    for (int i = 0; i < n; i++) ct_decref(jobs[i].output);
    return out;
}

ct_tensor *ct_data_parallel_forward(ct_data_parallel *dp, const ct_tensor *input) {
    CT_CHECK_OBJ(dp, NULL, "DataParallel.forward: NULL wrapper");
    CT_CHECK_OBJ(input, NULL, "DataParallel.forward: NULL input");
    CT_CHECK_NULL(input->ndim >= 1 && input->shape[0] >= 1, CT_ERR_SHAPE,
                  "DataParallel.forward: the input needs a batch dimension with at least one sample");
    ct_tensor *out = NULL;
    CT_SCOPE {
        out = forward_in_scope(dp, input);
        if (out) ct_keep(out);
    }
    return out;
}
