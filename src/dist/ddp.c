/*
 * ddp.c — DistributedDataParallel (ctorch/distributed.h): parameters and
 * buffers broadcast from rank 0 at wrap time, gradients in buckets that are
 * all-reduced asynchronously during backward, buffers broadcast each
 * forward, no_sync. PyTorch's reducer (torch/csrc/distributed/c10d/
 * reducer.cpp) is the model; ../shared/reference/pytorch-train-semantics.md
 * has its rules.
 *
 * Why buckets: one all-reduce per parameter pays MPI's latency sixty times
 * a step for ResNet-18; one for the whole model cannot start before the
 * last gradient. Buckets in reverse registration order (roughly the order
 * backward produces gradients) start as soon as their last gradient is
 * final — a post-accumulate-grad hook tells us — and overlap the rest of
 * backward. They are launched strictly in order, so every rank issues the
 * same collectives in the same order whatever its timing.
 *
 * A bucket is one flat tensor on its parameters' device: the hook copies a
 * gradient into its slice, the bucket is averaged across ranks (AVG), and
 * after the last bucket the slices are copied back into .grad.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/internal.h"
#include "autograd/autograd.h"
#include "core/tensor_impl.h"
#include "ctorch/autograd.h"
#include "dist.h"

#define CT_DDP_FIRST_BUCKET_BYTES (1 << 20) /* PyTorch's _DEFAULT_FIRST_BUCKET_BYTES */
#define CT_DDP_DEFAULT_CAP_MB 25.0

#ifndef CTORCH_HAVE_MPI

ct_ddp *ct_ddp_new(ct_module *module, ct_ddp_opts opts) {
    (void)module, (void)opts;
    ct_error_set(CT_ERR_UNSUPPORTED, "DistributedDataParallel: this build of ctorch has no MPI");
    return NULL;
}
ct_tensor *ct_ddp_forward(ct_ddp *ddp, const ct_tensor *input) {
    (void)ddp, (void)input;
    ct_error_set(CT_ERR_UNSUPPORTED, "DistributedDataParallel: this build of ctorch has no MPI");
    return NULL;
}
ct_module *ct_ddp_module(ct_ddp *ddp) { (void)ddp; return NULL; }
void ct_ddp_set_require_sync(ct_ddp *ddp, bool sync) { (void)ddp, (void)sync; }
ct_status ct_ddp_get_stats(const ct_ddp *ddp, ct_ddp_stats *out) {
    (void)ddp, (void)out;
    return ct_error_set(CT_ERR_UNSUPPORTED, "DistributedDataParallel: this build of ctorch has no MPI");
}
void ct_ddp_free(ct_ddp *ddp) { (void)ddp; }

#else

typedef struct bucket {
    int first, count;  /* its parameters: order[first .. first + count) */
    ct_tensor *flat;   /* 1-D, the parameters' dtype and device */
    int pending;       /* gradients not yet final in this backward */
    ct_work *work;
} bucket;

typedef struct hook_ctx {
    ct_ddp *ddp;
    int index; /* into params */
} hook_ctx;

struct ct_ddp {
    ct_module *module;
    bool broadcast_buffers, sync, find_unused;
    bool *used;          /* find_unused: reached from this forward's output */
    int nparams;         /* parameters that require grad */
    ct_tensor **params;  /* borrowed from the module */
    int *order;          /* parameter indices, bucket by bucket (reverse registration order) */
    int *bucket_of;      /* params[i]'s bucket */
    int64_t *offset;     /* params[i]'s first element in its bucket */
    hook_ctx *hooks;
    bucket *buckets;
    int nbuckets, next_launch, ready;
    ct_ddp_stats stats;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- buckets ---------------------------------------------------------------------- */

/* params[i]'s slice of its bucket, shaped like the parameter. */
static ct_tensor *slice_of(const ct_ddp *d, int i) {
    const ct_tensor *p = d->params[i];
    ct_tensor *flat = cti_narrow(d->buckets[d->bucket_of[i]].flat, 0, d->offset[i], ct_numel(p));
    ct_tensor *shaped = flat ? cti_view(flat, p->shape, p->ndim) : NULL;
    ct_decref(flat);
    return shaped;
}

static bool same_kind(const ct_tensor *a, const ct_tensor *b) {
    return a->dtype == b->dtype && ct_device_equal(a->storage->device, b->storage->device);
}

/* Walks the parameters in reverse, closing a bucket once it holds at least
 * its limit (1 MiB for the first, the cap after; a cap below 1 MiB caps the
 * first one too) or the dtype or device changes; then makes each bucket's
 * flat tensor. */
static ct_status build_buckets(ct_ddp *d, double cap_mb) {
    const int64_t cap = (int64_t)(cap_mb * (1 << 20));
    d->buckets = calloc((size_t)d->nparams, sizeof *d->buckets);
    CT_CHECK_STATUS(d->buckets != NULL, CT_ERR_OOM, "DistributedDataParallel: out of memory");
    int64_t bytes = 0, numel = 0;
    for (int k = 0; k < d->nparams; k++) {
        const int i = d->nparams - 1 - k;
        ct_tensor *p = d->params[i];
        bucket *b = &d->buckets[d->nbuckets];
        if (b->count > 0 && !same_kind(p, d->params[d->order[b->first]])) {
            b = &d->buckets[++d->nbuckets], bytes = numel = 0;
        }
        if (b->count == 0) b->first = k;
        d->order[k] = i, d->bucket_of[i] = d->nbuckets, d->offset[i] = numel;
        b->count++;
        numel += ct_numel(p), bytes += ct_numel(p) * (int64_t)ct_dtype_size(p->dtype);
        /* a cap below 1 MiB also caps the first bucket */
        const int64_t limit = d->nbuckets == 0 && cap > CT_DDP_FIRST_BUCKET_BYTES ? CT_DDP_FIRST_BUCKET_BYTES : cap;
        if (bytes >= limit && k + 1 < d->nparams) d->nbuckets++, bytes = numel = 0;
    }
    if (d->nparams > 0) d->nbuckets++;
    for (int j = 0; j < d->nbuckets; j++) {
        bucket *b = &d->buckets[j];
        const ct_tensor *last = d->params[d->order[b->first + b->count - 1]];
        const int64_t n = d->offset[d->order[b->first + b->count - 1]] + ct_numel(last);
        b->flat = cti_empty(&n, 1, last->dtype, last->storage->device);
        if (!b->flat) return ct_last_status();
        b->pending = b->count;
    }
    d->stats.buckets = d->nbuckets;
    return CT_OK;
}

/* ---- during backward ---------------------------------------------------------------- */

/* After the last bucket: wait for every all-reduce, in order, and write
 * the averaged gradients back. */
static ct_status finalize(ct_ddp *d) {
    const double start = now_s();
    ct_status st = CT_OK;
    for (int j = 0; j < d->nbuckets; j++) {
        bucket *b = &d->buckets[j];
        if (st == CT_OK) st = ct_work_wait(b->work);
        ct_work_free(b->work);
        b->work = NULL;
        b->pending = b->count;
    }
    d->stats.wait_s += now_s() - start; /* the exposed communication: not the copies below */
    for (int i = 0; st == CT_OK && i < d->nparams; i++) {
        ct_tensor *slice = slice_of(d, i);
        ct_tensor *p = d->params[i];
        if (!slice) st = ct_last_status();
        else if (p->grad) st = cti_copy(p->grad, slice);
        else if (!(p->grad = cti_clone(slice))) st = ct_last_status(); /* unused here, maybe not elsewhere */
        ct_decref(slice);
    }
    d->next_launch = d->ready = 0;
    if (st == CT_OK) d->stats.reductions++;
    return st;
}

/* Starts every ready bucket whose predecessors have started. */
static ct_status launch_ready(ct_ddp *d) {
    while (d->next_launch < d->nbuckets && d->buckets[d->next_launch].pending == 0) {
        bucket *b = &d->buckets[d->next_launch++];
        b->work = ct_dist_all_reduce_async(b->flat, CT_DIST_AVG);
        if (!b->work) return ct_last_status();
        if (d->ready < d->nparams) d->stats.launched_before_last++;
    }
    return d->next_launch == d->nbuckets ? finalize(d) : CT_OK;
}

static ct_status grad_ready(ct_tensor *leaf, void *user) {
    hook_ctx *h = user;
    ct_ddp *d = h->ddp;
    if (!d->sync) return CT_OK;
    bucket *b = &d->buckets[d->bucket_of[h->index]];
    CT_CHECK_STATUS(b->pending > 0, CT_ERR_STATE,
                    "DistributedDataParallel: a parameter's gradient became final twice in one backward "
                    "(backward called again before the reduction finished?)");
    ct_tensor *slice = slice_of(d, h->index);
    ct_status st = slice ? cti_copy(slice, leaf->grad) : ct_last_status();
    ct_decref(slice);
    if (st != CT_OK) return st;
    b->pending--, d->ready++;
    return launch_ready(d);
}

/* ---- the wrapper --------------------------------------------------------------------- */

/* Every parameter and buffer = rank 0's (a collective; shapes checked). */
static ct_status broadcast_state(ct_module *m, bool params) {
    const int n = params ? ct_module_parameters(m, NULL, NULL, 0) : ct_module_buffers(m, NULL, NULL, 0);
    if (n <= 0) return CT_OK;
    ct_tensor **ts = malloc(sizeof *ts * (size_t)n);
    CT_CHECK_STATUS(ts != NULL, CT_ERR_OOM, "DistributedDataParallel: out of memory");
    if (params) ct_module_parameters(m, ts, NULL, n);
    else ct_module_buffers(m, ts, NULL, n);
    ct_status st = CT_OK;
    bool prev = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    for (int i = 0; st == CT_OK && i < n; i++) st = ct_dist_broadcast(ts[i], 0);
    ct_set_grad_enabled(prev);
    free(ts);
    return st;
}

static ct_status take_params(ct_ddp *d) {
    const int n = ct_module_parameters(d->module, NULL, NULL, 0);
    ct_tensor **all = malloc(sizeof *all * (size_t)(n > 0 ? n : 1));
    CT_CHECK_STATUS(all != NULL, CT_ERR_OOM, "DistributedDataParallel: out of memory");
    ct_module_parameters(d->module, all, NULL, n);
    d->params = all;
    for (int i = 0; i < n; i++)
        if (all[i]->requires_grad) all[d->nparams++] = all[i];
    const size_t np = (size_t)(d->nparams > 0 ? d->nparams : 1);
    d->order = calloc(np, sizeof *d->order), d->bucket_of = calloc(np, sizeof *d->bucket_of);
    d->offset = calloc(np, sizeof *d->offset), d->hooks = calloc(np, sizeof *d->hooks);
    d->used = calloc(np, sizeof *d->used);
    CT_CHECK_STATUS(d->order && d->bucket_of && d->offset && d->hooks && d->used, CT_ERR_OOM,
                    "DistributedDataParallel: out of memory");
    return CT_OK;
}

static ct_status register_hooks(ct_ddp *d) {
    for (int i = 0; i < d->nparams; i++) {
        d->hooks[i] = (hook_ctx){d, i};
        CT_TRY(ct_register_post_accumulate_grad_hook(d->params[i], grad_ready, &d->hooks[i]));
    }
    return CT_OK;
}

ct_ddp *ct_ddp_new(ct_module *module, ct_ddp_opts opts) {
    const char *op = "DistributedDataParallel";
    CT_CHECK_OBJ(module, NULL, "%s: NULL module", op);
    CT_CHECK_NULL(opts.bucket_cap_mb >= 0, CT_ERR_INVALID_ARG, "%s: bucket_cap_mb must be >= 0, got %g", op,
                  opts.bucket_cap_mb);
    if (cti_dist_ready(op) != CT_OK) return NULL;
    ct_ddp *d = calloc(1, sizeof *d);
    CT_CHECK_NULL(d != NULL, CT_ERR_OOM, "%s: out of memory", op);
    d->module = module, d->sync = true, d->broadcast_buffers = !opts.no_broadcast_buffers;
    d->find_unused = opts.find_unused_parameters;
    ct_status st = take_params(d);
    if (st == CT_OK) st = broadcast_state(module, true);
    if (st == CT_OK) st = broadcast_state(module, false);
    if (st == CT_OK) st = build_buckets(d, opts.bucket_cap_mb > 0 ? opts.bucket_cap_mb : CT_DDP_DEFAULT_CAP_MB);
    if (st == CT_OK) st = register_hooks(d);
    if (st != CT_OK) {
        ct_ddp_free(d); /* the error stays set */
        return NULL;
    }
    return d;
}

static void mark_used(ct_tensor *leaf, void *user) {
    ct_ddp *d = user;
    for (int i = 0; i < d->nparams; i++)
        if (d->params[i] == leaf) d->used[i] = true;
}

/* find_unused_parameters: the parameters this output cannot reach are
 * ready now, with a zero gradient in their slice. */
static ct_status mark_unused_ready(ct_ddp *d, const ct_tensor *out) {
    memset(d->used, 0, sizeof *d->used * (size_t)d->nparams);
    CT_TRY(cta_visit_leaves(out, mark_used, d));
    for (int i = 0; i < d->nparams; i++) {
        if (d->used[i]) continue;
        ct_tensor *slice = slice_of(d, i);
        ct_status st = slice ? cti_fill(slice, 0.0) : ct_last_status();
        ct_decref(slice);
        CT_TRY(st);
        d->buckets[d->bucket_of[i]].pending--, d->ready++;
    }
    return launch_ready(d);
}

ct_tensor *ct_ddp_forward(ct_ddp *d, const ct_tensor *input) {
    CT_CHECK_OBJ(d, NULL, "DistributedDataParallel.forward: NULL wrapper");
    CT_CHECK_NULL(d->ready == 0 || !d->sync, CT_ERR_STATE,
                  "Expected to have finished reduction in the prior iteration before starting a new one. This "
                  "error indicates that your module has parameters that were not used in producing loss "
                  "(%d of %d gradients arrived in the last backward); every parameter that requires grad must "
                  "take part in the loss on every rank", d->ready, d->nparams);
    if (d->sync && d->broadcast_buffers && broadcast_state(d->module, false) != CT_OK) return NULL;
    ct_tensor *out = ct_forward(d->module, input);
    if (out && d->sync && d->find_unused && ct_is_grad_enabled() && mark_unused_ready(d, out) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_module *ct_ddp_module(ct_ddp *d) { return d ? d->module : NULL; }

void ct_ddp_set_require_sync(ct_ddp *d, bool sync) {
    if (d) d->sync = sync;
}

ct_status ct_ddp_get_stats(const ct_ddp *d, ct_ddp_stats *out) {
    CT_CHECK_OBJ_STATUS(d, "DistributedDataParallel: NULL wrapper");
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "DistributedDataParallel.stats: NULL argument");
    *out = d->stats;
    return CT_OK;
}

void ct_ddp_free(ct_ddp *d) {
    if (!d) return;
    for (int i = 0; d->hooks && i < d->nparams; i++)
        if (d->hooks[i].ddp) ct_remove_post_accumulate_grad_hook(d->params[i], grad_ready, &d->hooks[i]);
    for (int j = 0; d->buckets && j < d->nbuckets; j++) {
        ct_work_free(d->buckets[j].work);
        ct_decref(d->buckets[j].flat);
    }
    free(d->buckets), free(d->hooks), free(d->offset), free(d->bucket_of), free(d->order), free(d->params);
    free(d->used);
    free(d);
}

#endif /* CTORCH_HAVE_MPI */
