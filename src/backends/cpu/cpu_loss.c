/*
 * cpu_loss.c — the CPU backend's loss kernels and its loss sub-table
 * (ct_cpu_loss_ops; the optimizer entries are in cpu_optim.c).
 *
 * Class losses work row by row (a row is one sample's classes, `inner`
 * elements apart), in blocks gathered as doubles, with rows split across
 * OpenMP threads. log_softmax is never stored: a row's maximum m and
 * sum of exp(x - m) give every term, written so that no large quantities
 * cancel: lse - x_c = log(sum) + (m - x_c) with m - x_c >= 0. exp runs in
 * float (vectorised, about 1 ulp, as PyTorch's float kernels) for float32
 * and 16-bit inputs and in double for float64; sums accumulate in double.
 * Elementwise losses compute in double on blocks gathered from any strides
 * (dims merged where every operand is contiguous across them). Every result
 * of a row depends only on that row, so results do not depend on threads.
 */
#include <stdlib.h>

#include "../../core/error.h"
#include "cpu_internal.h"
#include "cpu_loss.h"
#include "cpu_vec.h"

#define LB 256 /* row elements per block */

/* One row of a class loss. */
typedef struct row_src {
    const char *x;    /* element 0 of the row */
    const char *q;    /* the probability target's row, or NULL */
    int64_t step;     /* bytes between neighbouring classes */
    ct_dtype dt;
    int64_t classes;
    const double *w;  /* class weights, or NULL for all ones */
    double smoothing; /* s */
} row_src;

static double weight_of(const row_src *r, int64_t c) { return r->w ? r->w[c] : 1.0; }

/* e[k] = exp(x[k] - m): float exp (vectorised) for everything but
 * float64, through a float buffer so that each loop is a simple one. */
static void exp_block(double *restrict e, const double *restrict x, int64_t n, double m, bool f64) {
    if (f64) {
        for (int64_t k = 0; k < n; k++) e[k] = exp(x[k] - m);
        return;
    }
    float xf[LB], mf = (float)m;
#pragma omp simd
    for (int64_t k = 0; k < n; k++) xf[k] = (float)x[k] - mf;
#pragma omp simd
    for (int64_t k = 0; k < n; k++) xf[k] = ct_cpu_exp_f32(xf[k]);
#pragma omp simd
    for (int64_t k = 0; k < n; k++) e[k] = xf[k];
}

static double row_max(const row_src *r) {
    double buf[LB], m = -INFINITY;
    for (int64_t c0 = 0; c0 < r->classes; c0 += LB) {
        int64_t n = r->classes - c0 < LB ? r->classes - c0 : LB;
        ct_cpu_gather_f64(r->x + c0 * r->step, n, r->step, r->dt, buf);
        m = ct_cpu_block_max_f64(buf, n, m);
    }
    return m;
}

/* The sums of one pass over a row. */
typedef struct row_sums {
    double sumexp; /* sum_c exp(x_c - m) */
    double wd;     /* sum_c w_c (m - x_c) (class targets, smoothing only) */
    double wq;     /* sum_c w_c q_c        (probability targets) */
    double wqd;    /* sum_c w_c q_c (m - x_c) */
} row_sums;

/* q_c of a probability target: (1 - s) target_c + s / C. */
static void smooth_block(double *q, int64_t n, const row_src *r) {
    double s = r->smoothing, k = s / (double)r->classes;
    if (s == 0.0) return;
    for (int64_t i = 0; i < n; i++) q[i] = (1.0 - s) * q[i] + k;
}

static row_sums row_pass(const row_src *r, double m, bool logits, bool want_wd) {
    row_sums s = {0, 0, 0, 0};
    double x[LB], e[LB], q[LB];
    bool f64 = r->dt == CT_FLOAT64;
    for (int64_t c0 = 0; c0 < r->classes; c0 += LB) {
        int64_t n = r->classes - c0 < LB ? r->classes - c0 : LB;
        ct_cpu_gather_f64(r->x + c0 * r->step, n, r->step, r->dt, x);
        double sumexp = 0, wd = 0, wq = 0, wqd = 0;
        if (logits) {
            exp_block(e, x, n, m, f64);
#pragma omp simd reduction(+ : sumexp)
            for (int64_t k = 0; k < n; k++) sumexp += e[k];
        }
        const double *w = r->w ? r->w + c0 : NULL;
        if (want_wd && w) {
#pragma omp simd reduction(+ : wd)
            for (int64_t k = 0; k < n; k++) wd += w[k] * (m - x[k]);
        } else if (want_wd) {
#pragma omp simd reduction(+ : wd)
            for (int64_t k = 0; k < n; k++) wd += m - x[k];
        }
        if (r->q) {
            ct_cpu_gather_f64(r->q + c0 * r->step, n, r->step, r->dt, q);
            smooth_block(q, n, r);
            if (w)
                for (int64_t k = 0; k < n; k++) q[k] *= w[k];
#pragma omp simd reduction(+ : wq, wqd)
            for (int64_t k = 0; k < n; k++) {
                wq += q[k];
                wqd += q[k] * (m - x[k]);
            }
        }
        s.sumexp += sumexp, s.wd += wd, s.wq += wq, s.wqd += wqd;
    }
    return s;
}

/* Store n doubles into a row of dtype dt, `step` bytes apart. */
static void store_block(char *y, const double *v, int64_t n, int64_t step, ct_dtype dt) {
    if (dt == CT_FLOAT32 && step == 4) {
        float *yf = (float *)(void *)y;
#pragma omp simd
        for (int64_t k = 0; k < n; k++) yf[k] = (float)v[k];
    } else if (dt == CT_FLOAT32) {
        for (int64_t k = 0; k < n; k++) *(float *)(void *)(y + k * step) = (float)v[k];
    } else if (dt == CT_FLOAT64)
        for (int64_t k = 0; k < n; k++) *(double *)(void *)(y + k * step) = v[k];
    else
        for (int64_t k = 0; k < n; k++) ct_cpu_store(y + k * step, dt, v[k]);
}

/* ---- class-index targets ---------------------------------------------------------------- */

/* The loss of one row with target t (not ignored, in range) and its weight. */
static double class_row_loss(const row_src *r, int64_t t, bool logits, double W) {
    double s = r->smoothing, wt = weight_of(r, t);
    double xt = ct_cpu_load(r->x + t * r->step, r->dt);
    if (!logits) { /* log-probabilities: lse = 0 */
        double smooth = 0.0;
        if (s > 0.0) smooth = row_pass(r, 0.0, false, true).wd; /* sum w_c (0 - x_c) */
        return (1.0 - s) * wt * -xt + (s > 0.0 ? s / (double)r->classes * smooth : 0.0);
    }
    double m = row_max(r);
    row_sums sums = row_pass(r, m, true, s > 0.0);
    double lsum = log(sums.sumexp);
    double nll = lsum + (m - xt);
    if (s == 0.0) return wt * nll;
    return (1.0 - s) * wt * nll + s / (double)r->classes * (W * lsum + sums.wd);
}

/* Row r's gradient: g ((1 - s) w_t (p_j - [j == t]) + (s / C)(W p_j - w_j)). */
static void class_row_grad(const row_src *r, char *y, int64_t t, double g, bool logits,
                           double W) {
    double buf[LB], x[LB];
    bool skip = t < 0 || t >= r->classes; /* ignored (or out of range) */
    double s = r->smoothing, B = skip ? 0.0 : (1.0 - s) * weight_of(r, t);
    double cs = s / (double)r->classes, A = B + cs * W, m = 0.0, inv = 0.0;
    if (logits && !skip) {
        m = row_max(r);
        inv = 1.0 / row_pass(r, m, true, false).sumexp;
    }
    for (int64_t c0 = 0; c0 < r->classes; c0 += LB) {
        int64_t n = r->classes - c0 < LB ? r->classes - c0 : LB;
        if (skip) {
            for (int64_t k = 0; k < n; k++) buf[k] = 0.0;
        } else {
            if (logits) {
                ct_cpu_gather_f64(r->x + c0 * r->step, n, r->step, r->dt, x);
                exp_block(buf, x, n, m, r->dt == CT_FLOAT64);
            } else {
                for (int64_t k = 0; k < n; k++) buf[k] = 0.0;
            }
            const double ga = g * A * inv, gc = g * cs, *w = r->w ? r->w + c0 : NULL;
            if (s > 0.0 && w) {
#pragma omp simd
                for (int64_t k = 0; k < n; k++) buf[k] = ga * buf[k] - gc * w[k];
            } else if (s > 0.0) {
#pragma omp simd
                for (int64_t k = 0; k < n; k++) buf[k] = ga * buf[k] - gc;
            } else {
#pragma omp simd
                for (int64_t k = 0; k < n; k++) buf[k] *= ga;
            }
            if (t >= c0 && t < c0 + n) buf[t - c0] -= g * B;
        }
        store_block(y + c0 * r->step, buf, n, r->step, r->dt);
    }
}

/* Class weights as doubles (NULL when absent) and their sum W. */
static bool load_weights(const ct_kview *weight, int64_t classes, double **w, double *W) {
    *w = NULL;
    *W = (double)classes;
    if (!weight) return true;
    *w = malloc(sizeof(double) * (size_t)(classes > 0 ? classes : 1));
    if (!*w) return false;
    ct_cpu_gather_f64(ct_cpu_base(weight), classes, (int64_t)ct_dtype_size(weight->dtype),
                      weight->dtype, *w);
    *W = 0.0;
    for (int64_t c = 0; c < classes; c++) *W += (*w)[c];
    return true;
}

static row_src row_at(const ct_kview *in, const ct_class_loss_args *a, int64_t row,
                      const double *w) {
    int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    int64_t n = row / a->inner, s = row % a->inner;
    row_src r = {ct_cpu_base(in) + (n * a->classes * a->inner + s) * esz, NULL, a->inner * esz,
                 in->dtype, a->classes, w, a->smoothing};
    return r;
}

static bool parallel_rows(const ct_class_loss_args *a) {
    return a->batch * a->inner * (a->classes > 0 ? a->classes : 1) >= CT_CPU_GRAIN;
}

static ct_status oom(const char *what) {
    return ct_error_set(CT_ERR_OOM, "%s: out of memory for the class weights", what);
}

static ct_status cpu_class_forward(const ct_kview *loss, const ct_kview *row_weight,
                                   const ct_kview *in, const ct_kview *target,
                                   const ct_kview *weight, const ct_class_loss_args *a) {
    const char *name = a->logits ? "cross_entropy" : "nll_loss";
    const int64_t rows = a->batch * a->inner;
    const int64_t *tg = (const int64_t *)(const void *)ct_cpu_base(target);
    for (int64_t r = 0; r < rows; r++) /* serially: the first bad target is reported */
        if (tg[r] != a->ignore_index && (tg[r] < 0 || tg[r] >= a->classes))
            return ct_error_set(CT_ERR_INDEX, "%s: Target %lld is out of bounds.", name,
                                (long long)tg[r]);
    double *w, W;
    if (!load_weights(weight, a->classes, &w, &W)) return oom(name);
    char *lo = ct_cpu_base(loss), *rw = row_weight ? ct_cpu_base(row_weight) : NULL;
    int64_t lsz = (int64_t)ct_dtype_size(loss->dtype);
#pragma omp parallel for schedule(static) if (parallel_rows(a))
    for (int64_t r = 0; r < rows; r++) {
        row_src src = row_at(in, a, r, w);
        bool ignored = tg[r] == a->ignore_index;
        double l = ignored ? 0.0 : class_row_loss(&src, tg[r], a->logits, W);
        ct_cpu_store(lo + r * lsz, loss->dtype, l);
        if (rw) ct_cpu_store(rw + r * lsz, row_weight->dtype, ignored ? 0.0 : weight_of(&src, tg[r]));
    }
    free(w);
    return CT_OK;
}

static double row_grad_at(const ct_kview *g, int64_t r) {
    int64_t esz = (int64_t)ct_dtype_size(g->dtype);
    return ct_cpu_load(ct_cpu_base(g) + r * g->strides[0] * esz, g->dtype);
}

static ct_status cpu_class_backward(const ct_kview *grad_in, const ct_kview *grad_row,
                                    const ct_kview *in, const ct_kview *target,
                                    const ct_kview *weight, const ct_class_loss_args *a) {
    const int64_t rows = a->batch * a->inner;
    const int64_t *tg = (const int64_t *)(const void *)ct_cpu_base(target);
    double *w, W;
    if (!load_weights(weight, a->classes, &w, &W)) return oom("cross_entropy_backward");
#pragma omp parallel for schedule(static) if (parallel_rows(a))
    for (int64_t r = 0; r < rows; r++) {
        row_src src = row_at(in, a, r, w);
        /* grad_in has in's (contiguous) layout: the same row, another base */
        char *y = ct_cpu_base(grad_in) + (src.x - ct_cpu_base(in));
        int64_t t = tg[r] == a->ignore_index ? -1 : tg[r];
        class_row_grad(&src, y, t, row_grad_at(grad_row, r), a->logits, W);
    }
    free(w);
    return CT_OK;
}

/* ---- probability targets ---------------------------------------------------------------------- */

static ct_status cpu_prob_forward(const ct_kview *loss, const ct_kview *in, const ct_kview *target,
                                  const ct_kview *weight, const ct_class_loss_args *a) {
    const int64_t rows = a->batch * a->inner;
    double *w, W;
    if (!load_weights(weight, a->classes, &w, &W)) return oom("cross_entropy");
    char *lo = ct_cpu_base(loss);
    int64_t lsz = (int64_t)ct_dtype_size(loss->dtype);
#pragma omp parallel for schedule(static) if (parallel_rows(a))
    for (int64_t r = 0; r < rows; r++) {
        row_src src = row_at(in, a, r, w), qs = row_at(target, a, r, w);
        src.q = qs.x;
        double m = row_max(&src);
        row_sums s = row_pass(&src, m, true, false);
        double l = a->classes ? s.wq * log(s.sumexp) + s.wqd : 0.0; /* an empty sum */
        ct_cpu_store(lo + r * lsz, loss->dtype, l);
    }
    free(w);
    return CT_OK;
}

/* Row r: grad_in_j = g (p_j sum_c w_c q_c - w_j q_j),
 * grad_target_j = -g (1 - s) w_j logp_j. */
static void prob_row_grad(const row_src *r, char *gi, char *gt, double g) {
    double x[LB], e[LB], q[LB], out[LB];
    double m = row_max(r);
    row_sums sums = row_pass(r, m, true, false);
    double inv = 1.0 / sums.sumexp, lsum = log(sums.sumexp), s = r->smoothing;
    for (int64_t c0 = 0; c0 < r->classes; c0 += LB) {
        int64_t n = r->classes - c0 < LB ? r->classes - c0 : LB;
        ct_cpu_gather_f64(r->x + c0 * r->step, n, r->step, r->dt, x);
        if (gi) {
            exp_block(e, x, n, m, r->dt == CT_FLOAT64);
            ct_cpu_gather_f64(r->q + c0 * r->step, n, r->step, r->dt, q);
            smooth_block(q, n, r);
            for (int64_t k = 0; k < n; k++)
                out[k] = g * (e[k] * inv * sums.wq - weight_of(r, c0 + k) * q[k]);
            store_block(gi + c0 * r->step, out, n, r->step, r->dt);
        }
        if (gt) {
            for (int64_t k = 0; k < n; k++)
                out[k] = -g * (1.0 - s) * weight_of(r, c0 + k) * ((x[k] - m) - lsum);
            store_block(gt + c0 * r->step, out, n, r->step, r->dt);
        }
    }
}

static ct_status cpu_prob_backward(const ct_kview *grad_in, const ct_kview *grad_target,
                                   const ct_kview *grad_row, const ct_kview *in,
                                   const ct_kview *target, const ct_kview *weight,
                                   const ct_class_loss_args *a) {
    const int64_t rows = a->batch * a->inner;
    double *w, W;
    if (!load_weights(weight, a->classes, &w, &W)) return oom("cross_entropy_backward");
#pragma omp parallel for schedule(static) if (parallel_rows(a))
    for (int64_t r = 0; r < rows; r++) {
        row_src src = row_at(in, a, r, w), qs = row_at(target, a, r, w);
        src.q = qs.x;
        ptrdiff_t from_in = src.x - ct_cpu_base(in);
        char *gi = grad_in ? ct_cpu_base(grad_in) + from_in : NULL;
        char *gt = grad_target ? ct_cpu_base(grad_target) + from_in : NULL;
        prob_row_grad(&src, gi, gt, row_grad_at(grad_row, r));
    }
    free(w);
    return CT_OK;
}

/* ---- elementwise losses ------------------------------------------------------------------- */

/* Operand slots of an elementwise job; absent ones are NULL. */
enum { PW_OUT, PW_GT, PW_G, PW_X, PW_T, PW_W, PW_PW, PW_N };

typedef struct pw_job {
    ct_pointwise_loss op;
    const ct_kview *v[PW_N]; /* forward: OUT; backward: OUT = grad_in, GT, G */
    bool backward;
    double scale;
    /* the iteration space with size-1 dims dropped and dims merged where
     * every operand is contiguous across them */
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[PW_N][CT_MAX_DIMS];
} pw_job;

static void pw_coalesce(pw_job *j) {
    const ct_kview *ref = j->v[PW_X];
    int nd = 0;
    for (int d = 0; d < ref->ndim; d++) {
        int64_t size = ref->shape[d];
        if (size == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; k < PW_N && merge; k++)
            merge = !j->v[k] || j->strides[k][nd - 1] == j->v[k]->strides[d] * size;
        if (!merge) j->shape[nd++] = 1;
        j->shape[nd - 1] *= size;
        for (int k = 0; k < PW_N; k++) j->strides[k][nd - 1] = j->v[k] ? j->v[k]->strides[d] : 0;
    }
    if (nd == 0) { /* one element */
        j->shape[nd++] = 1;
        for (int k = 0; k < PW_N; k++) j->strides[k][0] = 0;
    }
    j->ndim = nd;
}

/* log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)). */
static double log_sigmoid(double x) { return (x < 0.0 ? x : 0.0) - log1p(exp(-fabs(x))); }

static double sigmoid(double x) {
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* n elements of slot k from element offset off, its innermost stride apart. */
static void pw_gather(const pw_job *j, int k, int64_t off, int64_t n, double *buf) {
    const ct_kview *v = j->v[k];
    int64_t esz = (int64_t)ct_dtype_size(v->dtype);
    ct_cpu_gather_f64((const char *)v->data + off * esz, n, j->strides[k][j->ndim - 1] * esz,
                      v->dtype, buf);
}

static void pw_put(const pw_job *j, int k, int64_t off, int64_t n, const double *buf) {
    const ct_kview *v = j->v[k];
    int64_t esz = (int64_t)ct_dtype_size(v->dtype);
    store_block((char *)v->data + off * esz, buf, n, j->strides[k][j->ndim - 1] * esz, v->dtype);
}

/* Losses (forward) or gradients (backward) of n elements; a and b receive
 * the loss or grad_input and grad_target. */
static void pw_compute(const pw_job *j, const double *x, const double *t, const double *w,
                       const double *pw, const double *g, int64_t n, double *a, double *b) {
    if (j->op == CT_LOSS_MSE) {
        if (!j->backward) {
#pragma omp simd
            for (int64_t k = 0; k < n; k++) a[k] = (x[k] - t[k]) * (x[k] - t[k]);
            return;
        }
        double two = 2.0 * j->scale;
#pragma omp simd
        for (int64_t k = 0; k < n; k++) a[k] = two * (x[k] - t[k]) * g[k], b[k] = -a[k];
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        double wk = w ? w[k] : 1.0, pk = pw ? pw[k] : 1.0, ls = log_sigmoid(x[k]);
        if (!j->backward) {
            a[k] = ((1.0 - t[k]) * x[k] - (1.0 + (pk - 1.0) * t[k]) * ls) * wk;
            continue;
        }
        double gk = g[k] * j->scale;
        a[k] = wk * gk * ((1.0 + (pk - 1.0) * t[k]) * sigmoid(x[k]) - pk * t[k]);
        b[k] = wk * gk * (-x[k] - (pk - 1.0) * ls);
    }
}

/* Up to LB elements starting at flat index i of the innermost dim. */
static void pw_block(const pw_job *j, const int64_t *off, int64_t n) {
    double x[LB], t[LB], w[LB], pw[LB], g[LB], a[LB], b[LB];
    pw_gather(j, PW_X, off[PW_X], n, x);
    pw_gather(j, PW_T, off[PW_T], n, t);
    if (j->v[PW_W]) pw_gather(j, PW_W, off[PW_W], n, w);
    if (j->v[PW_PW]) pw_gather(j, PW_PW, off[PW_PW], n, pw);
    if (j->backward) pw_gather(j, PW_G, off[PW_G], n, g);
    pw_compute(j, x, t, j->v[PW_W] ? w : NULL, j->v[PW_PW] ? pw : NULL, g, n, a, b);
    if (j->v[PW_OUT]) pw_put(j, PW_OUT, off[PW_OUT], n, a);
    if (j->v[PW_GT]) pw_put(j, PW_GT, off[PW_GT], n, b);
}

/* Work items are blocks of the innermost dim; each finds its operands'
 * offsets once. */
static void pw_run(pw_job *j) {
    pw_coalesce(j);
    int64_t inner = j->shape[j->ndim - 1], outer = 1;
    for (int d = 0; d + 1 < j->ndim; d++) outer *= j->shape[d];
    if (inner == 0 || outer == 0) return;
    int64_t nblocks = (inner + LB - 1) / LB;
#pragma omp parallel for schedule(static) if (outer * inner >= CT_CPU_GRAIN)
    for (int64_t item = 0; item < outer * nblocks; item++) {
        int64_t o = item / nblocks, i0 = (item % nblocks) * LB, off[PW_N];
        for (int k = 0; k < PW_N; k++) {
            if (!j->v[k]) continue;
            off[k] = j->v[k]->offset + i0 * j->strides[k][j->ndim - 1];
            for (int64_t d = j->ndim - 2, rest = o; d >= 0; d--) {
                off[k] += (rest % j->shape[d]) * j->strides[k][d];
                rest /= j->shape[d];
            }
        }
        pw_block(j, off, inner - i0 < LB ? inner - i0 : LB);
    }
}

static ct_status cpu_pointwise_forward(ct_pointwise_loss op, const ct_kview *out,
                                       const ct_kview *in, const ct_kview *target,
                                       const ct_kview *weight, const ct_kview *pos_weight) {
    pw_job j = {op, {out, NULL, NULL, in, target, weight, pos_weight}, false, 1.0, 0, {0}, {{0}}};
    pw_run(&j);
    return CT_OK;
}

static ct_status cpu_pointwise_backward(ct_pointwise_loss op, const ct_kview *grad_in,
                                        const ct_kview *grad_target, const ct_kview *grad_out,
                                        const ct_kview *in, const ct_kview *target,
                                        const ct_kview *weight, const ct_kview *pos_weight,
                                        double scale) {
    pw_job j = {op, {grad_in, grad_target, grad_out, in, target, weight, pos_weight}, true, scale,
                0, {0}, {{0}}};
    pw_run(&j);
    return CT_OK;
}

const struct ct_backend_loss ct_cpu_loss_ops = {
    .class_forward = cpu_class_forward,
    .class_backward = cpu_class_backward,
    .prob_forward = cpu_prob_forward,
    .prob_backward = cpu_prob_backward,
    .pointwise_forward = cpu_pointwise_forward,
    .pointwise_backward = cpu_pointwise_backward,
    .sgd_update = ct_cpu_sgd_update,
    .adam_update = ct_cpu_adam_update,
    .amp_unscale = ct_cpu_amp_unscale,
};
