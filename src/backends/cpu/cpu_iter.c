/*
 * cpu_iter.c — strided N-d iteration for CPU kernels (a small
 * TensorIterator): merge dimensions that are contiguous in every operand,
 * then call the kernel's inner loop on runs of the innermost dimension,
 * spreading the work over OpenMP threads when there is enough of it.
 */
#include <string.h>
#ifdef CTORCH_HAVE_OPENMP
#include <omp.h>
#endif

#include "cpu_internal.h"

int64_t ct_cpu_numel(const ct_kview *v) {
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
    return n;
}

bool ct_cpu_all_contiguous(const ct_kview *const *views, int nops) {
    for (int k = 0; k < nops; k++) {
        const ct_kview *v = views[k];
        if (v->ndim != views[0]->ndim) return false;
        int64_t expected = 1;
        for (int i = v->ndim - 1; i >= 0; i--) {
            if (v->shape[i] != views[0]->shape[i]) return false;
            if (v->shape[i] != 1 && v->strides[i] != expected) return false;
            expected *= v->shape[i];
        }
    }
    return true;
}

typedef struct iter_plan {
    int ndim, nops;
    int64_t shape[CT_MAX_DIMS];
    int64_t bstride[CT_CPU_ITER_MAX][CT_MAX_DIMS]; /* byte strides */
    char *base[CT_CPU_ITER_MAX];
} iter_plan;

/* Drop size-1 dims and merge neighbours that are contiguous for all operands. */
static void plan_build(iter_plan *p, const ct_kview *const *views, int nops) {
    const ct_kview *v0 = views[0];
    p->nops = nops;
    p->ndim = 0;
    for (int k = 0; k < nops; k++) p->base[k] = ct_cpu_base(views[k]);
    for (int i = 0; i < v0->ndim; i++) {
        if (v0->shape[i] == 1) continue;
        int d = p->ndim;
        bool merge = d > 0;
        for (int k = 0; k < nops && merge; k++) {
            int64_t es = (int64_t)ct_dtype_size(views[k]->dtype);
            merge = p->bstride[k][d - 1] == views[k]->strides[i] * es * v0->shape[i];
        }
        if (merge) {
            p->shape[d - 1] *= v0->shape[i];
            for (int k = 0; k < nops; k++)
                p->bstride[k][d - 1] = views[k]->strides[i] * (int64_t)ct_dtype_size(views[k]->dtype);
            continue;
        }
        p->shape[d] = v0->shape[i];
        for (int k = 0; k < nops; k++)
            p->bstride[k][d] = views[k]->strides[i] * (int64_t)ct_dtype_size(views[k]->dtype);
        p->ndim++;
    }
    if (p->ndim == 0) { /* a single element */
        p->ndim = 1;
        p->shape[0] = 1;
        for (int k = 0; k < nops; k++) p->bstride[k][0] = 0;
    }
}

/* Run outer iterations [o_begin, o_end) over inner range [i_begin, i_end). */
static void plan_run(const iter_plan *p, int64_t o_begin, int64_t o_end, int64_t i_begin, int64_t i_end,
                     ct_cpu_inner_fn fn, void *ctx) {
    int od = p->ndim - 1; /* number of outer dims */
    int64_t idx[CT_MAX_DIMS] = {0};
    int64_t rem = o_begin;
    for (int d = od - 1; d >= 0; d--) {
        idx[d] = rem % p->shape[d];
        rem /= p->shape[d];
    }
    int64_t steps[CT_CPU_ITER_MAX];
    for (int k = 0; k < p->nops; k++) steps[k] = p->bstride[k][od];
    for (int64_t o = o_begin; o < o_end; o++) {
        char *ptrs[CT_CPU_ITER_MAX];
        for (int k = 0; k < p->nops; k++) {
            char *q = p->base[k] + i_begin * steps[k];
            for (int d = 0; d < od; d++) q += idx[d] * p->bstride[k][d];
            ptrs[k] = q;
        }
        fn(ptrs, steps, i_end - i_begin, ctx);
        for (int d = od - 1; d >= 0; d--) { /* odometer */
            if (++idx[d] < p->shape[d]) break;
            idx[d] = 0;
        }
    }
}

void ct_cpu_iter(const ct_kview *const *views, int nops, ct_cpu_inner_fn fn, void *ctx, int64_t grain) {
    if (ct_cpu_numel(views[0]) == 0) return;
    iter_plan p;
    plan_build(&p, views, nops);
    int64_t inner = p.shape[p.ndim - 1], outer = 1;
    for (int d = 0; d < p.ndim - 1; d++) outer *= p.shape[d];
    int64_t total = inner * outer;
#ifdef CTORCH_HAVE_OPENMP
    if (grain > 0 && total >= grain && omp_get_max_threads() > 1 && !omp_in_parallel()) {
        if (outer > 1) {
#pragma omp parallel
            {
                int nt = omp_get_num_threads(), t = omp_get_thread_num();
                int64_t b = outer * t / nt, e = outer * (t + 1) / nt;
                if (b < e) plan_run(&p, b, e, 0, inner, fn, ctx);
            }
        } else {
#pragma omp parallel
            {
                int nt = omp_get_num_threads(), t = omp_get_thread_num();
                int64_t b = inner * t / nt, e = inner * (t + 1) / nt;
                if (b < e) plan_run(&p, 0, 1, b, e, fn, ctx);
            }
        }
        return;
    }
#else
    (void)grain;
    (void)total;
#endif
    plan_run(&p, 0, outer, 0, inner, fn, ctx);
}
