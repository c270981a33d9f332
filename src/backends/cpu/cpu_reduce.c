/*
 * cpu_reduce.c — the CPU backend's reductions: sum, prod, mean, max/min (with
 * optional indices), argmax/argmin and var over the R axis of a strided
 * [O, R] view, written into a contiguous [O] output.
 *
 * Accuracy (chosen to stay at least as close to float64 as PyTorch's cascade
 * sum, which the tests compare against):
 *  - floating inputs of every width accumulate in double, and rows are summed
 *    pairwise (SIMD sums of BLK elements combined in a binary tree), so
 *    the sum of 1e6 float32 ones is exact and the error of float64 sums grows
 *    like log(n) rather than n;
 *  - integer sums and products wrap around in 64-bit two's complement, as
 *    PyTorch's int64 arithmetic does (the core casts integer inputs of sum
 *    and prod to int64 first);
 *  - var is two-pass in double (mean, then squared deviations); pieces of one
 *    row computed in parallel are combined with Chan's formula;
 *  - max/min propagate NaN and report the first extreme index, a NaN counting
 *    as both maximal and minimal, as PyTorch does.
 * Work is cut into tiles (a block of outputs × a piece of R) whose sizes
 * depend only on the shape, so results never depend on the thread count.
 * Layouts: rows with unit stride take vectorisable loops; when neighbouring
 * outputs are closer in memory than neighbouring reduced elements (a column
 * reduction) a block of outputs is accumulated while walking R, which reads
 * memory in order instead of jumping by the row stride.
 */
#include "cpu_reduce.h"

#include <stdlib.h>

#include "../../core/error.h"
#include "cpu_internal.h"
#include "cpu_vec.h"

/* The four kinds of accumulation the reduce ops need. */
enum { FAM_SUM, FAM_PROD, FAM_EXT, FAM_VAR };

#define BLK 128       /* elements gathered and reduced at once; pairwise leaf */
#define TILE_O 128    /* outputs one tile handles at most                     */
#define R_CHUNK 32768 /* piece of a long row when there are few rows          */
#define LANES 8       /* independent accumulators, so SIMD adds pipeline      */

typedef struct red_state {
    double f;    /* float sum, product or extreme; var: mean              */
    double m2;   /* var: sum of squared deviations from the mean          */
    int64_t i;   /* integer sum, product or extreme                       */
    int64_t idx; /* extreme: index of its first occurrence along R        */
    int64_t n;   /* var: number of elements seen                          */
} red_state;

typedef struct red_ctx {
    ct_reduce_op op;
    int fam;
    bool is_max;   /* FAM_EXT: max/argmax rather than min/argmin          */
    bool need_idx; /* FAM_EXT: the index is wanted, not only the value    */
    bool is_float; /* accumulate as double (else as int64)                */
    ct_dtype dt;
    int64_t esz;
    const char *base;
    int64_t O, R;
    int64_t so, sr; /* byte strides of the O and R axes                  */
} red_ctx;

/* Up to BLK elements as doubles: in place for contiguous float64, else
 * gathered into buf. */
static const double *block_f64(const red_ctx *c, const char *p, int64_t n, int64_t step,
                               double *buf) {
    if (c->dt == CT_FLOAT64 && step == 8) return (const double *)(const void *)p;
    ct_cpu_gather_f64(p, n, step, c->dt, buf);
    return buf;
}

/* ---- rows: sums, products, var ----------------------------------------------- */

/* Sum of a block (or of its squared deviations from `mean`) in LANES
 * independent accumulators, so that the adds pipeline. */
#define CT_DEFINE_LEAF_SUM(NAME, T)                                           \
    static double NAME(const T *x, int64_t n, bool squares, double mean) {   \
        double acc[LANES] = {0};                                              \
        int64_t k = 0;                                                        \
        if (squares) {                                                        \
            for (; k + LANES <= n; k += LANES)                                \
                _Pragma("omp simd") for (int j = 0; j < LANES; j++) {         \
                    double d = (double)x[k + j] - mean;                       \
                    acc[j] += d * d;                                          \
                }                                                             \
            for (; k < n; k++) acc[0] += ((double)x[k] - mean) * ((double)x[k] - mean); \
        } else {                                                              \
            for (; k + LANES <= n; k += LANES)                                \
                _Pragma("omp simd") for (int j = 0; j < LANES; j++) acc[j] += (double)x[k + j]; \
            for (; k < n; k++) acc[0] += (double)x[k];                        \
        }                                                                     \
        for (int w = LANES / 2; w > 0; w /= 2)                                \
            for (int j = 0; j < w; j++) acc[j] += acc[j + w];                 \
        return acc[0];                                                        \
    }

CT_DEFINE_LEAF_SUM(leaf_sum_f64, double)
CT_DEFINE_LEAF_SUM(leaf_sum_f32, float)

/* Pairwise sum of a row (or of its squared deviations from `mean`). */
static double row_psum(const red_ctx *c, const char *p, int64_t n, bool squares, double mean) {
    if (n > BLK) {
        int64_t h = n / 2;
        return row_psum(c, p, h, squares, mean) + row_psum(c, p + h * c->sr, n - h, squares, mean);
    }
    if (c->dt == CT_FLOAT32 && c->sr == 4)
        return leaf_sum_f32((const float *)(const void *)p, n, squares, mean);
    double buf[BLK];
    return leaf_sum_f64(block_f64(c, p, n, c->sr, buf), n, squares, mean);
}

static double row_fprod(const red_ctx *c, const char *p, int64_t n) {
    double buf[BLK], acc[LANES];
    for (int j = 0; j < LANES; j++) acc[j] = 1.0;
    for (int64_t k0 = 0; k0 < n; k0 += BLK) {
        int64_t nb = n - k0 < BLK ? n - k0 : BLK, k = 0;
        const double *x = block_f64(c, p + k0 * c->sr, nb, c->sr, buf);
        for (; k + LANES <= nb; k += LANES)
#pragma omp simd
            for (int j = 0; j < LANES; j++) acc[j] *= x[k + j];
        for (; k < nb; k++) acc[0] *= x[k];
    }
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] *= acc[j + w];
    return acc[0];
}

/* Integer sums and products wrap around: unsigned arithmetic gives the
 * two's-complement result without signed-overflow undefined behaviour. */
static int64_t row_iacc(const red_ctx *c, const char *p, int64_t n, bool prod) {
    int64_t buf[BLK];
    uint64_t s = prod ? 1 : 0;
    for (int64_t k0 = 0; k0 < n; k0 += BLK) {
        int64_t nb = n - k0 < BLK ? n - k0 : BLK;
        ct_cpu_gather_i64(p + k0 * c->sr, nb, c->sr, c->dt, buf);
        if (prod) {
            for (int64_t k = 0; k < nb; k++) s *= (uint64_t)buf[k];
        } else {
#pragma omp simd reduction(+ : s)
            for (int64_t k = 0; k < nb; k++) s += (uint64_t)buf[k];
        }
    }
    return (int64_t)s;
}

/* ---- rows: max/min ------------------------------------------------------------- */

/* Extreme of a block in LANES accumulators that skip NaN; *saw_nan is set
 * when x - x was NaN somewhere (a NaN or an infinity: callers look). */
static double block_ext(const double *x, int64_t n, bool is_max, bool *saw_nan) {
    double acc[LANES], chk[LANES];
    for (int j = 0; j < LANES; j++) acc[j] = x[0], chk[j] = 0.0;
    int64_t k = 0;
    if (is_max) {
        for (; k + LANES <= n; k += LANES)
#pragma omp simd
            for (int j = 0; j < LANES; j++) {
                double v = x[k + j];
                acc[j] = v > acc[j] ? v : acc[j];
                chk[j] += v - v;
            }
    } else {
        for (; k + LANES <= n; k += LANES)
#pragma omp simd
            for (int j = 0; j < LANES; j++) {
                double v = x[k + j];
                acc[j] = v < acc[j] ? v : acc[j];
                chk[j] += v - v;
            }
    }
    double m = acc[0], nanchk = chk[0];
    for (int j = 1; j < LANES; j++) {
        m = is_max ? (acc[j] > m ? acc[j] : m) : (acc[j] < m ? acc[j] : m);
        nanchk += chk[j];
    }
    for (; k < n; k++) {
        double v = x[k];
        m = is_max ? (v > m ? v : m) : (v < m ? v : m);
        nanchk += v - v;
    }
    *saw_nan = nanchk != nanchk || m != m;
    return m;
}

static int64_t first_nan(const double *x, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        if (x[k] != x[k]) return k;
    return -1;
}

static int64_t first_equal(const double *x, int64_t n, double v) {
    for (int64_t k = 0; k < n; k++)
        if (x[k] == v) return k;
    return 0;
}

/* Blocks left to right: a later block wins only when strictly better, a
 * NaN ends the search. */
static void row_ext_float(const red_ctx *c, const char *p, int64_t n, int64_t r0, red_state *s) {
    double buf[BLK], best = 0.0;
    int64_t at = -1;
    for (int64_t k0 = 0; k0 < n; k0 += BLK) {
        int64_t nb = n - k0 < BLK ? n - k0 : BLK;
        const double *x = block_f64(c, p + k0 * c->sr, nb, c->sr, buf);
        bool maybe_nan;
        double m = block_ext(x, nb, c->is_max, &maybe_nan);
        int64_t j = maybe_nan ? first_nan(x, nb) : -1;
        if (j >= 0) {
            best = x[j];
            at = k0 + j;
            break;
        }
        if (at < 0 || (c->is_max ? m > best : m < best)) {
            best = m;
            at = k0 + (c->need_idx ? first_equal(x, nb, m) : 0);
        }
    }
    s->f = best;
    s->idx = r0 + at;
}

static void row_ext_int(const red_ctx *c, const char *p, int64_t n, int64_t r0, red_state *s) {
    int64_t buf[BLK], best = 0, at = -1;
    for (int64_t k0 = 0; k0 < n; k0 += BLK) {
        int64_t nb = n - k0 < BLK ? n - k0 : BLK;
        ct_cpu_gather_i64(p + k0 * c->sr, nb, c->sr, c->dt, buf);
        for (int64_t k = 0; k < nb; k++)
            if (at < 0 || (c->is_max ? buf[k] > best : buf[k] < best)) {
                best = buf[k];
                at = k0 + k;
            }
    }
    s->i = best;
    s->idx = r0 + at;
}

static void row_reduce(const red_ctx *c, const char *p, int64_t n, int64_t r0, red_state *s) {
    switch (c->fam) {
    case FAM_SUM:
        if (c->is_float) s->f = row_psum(c, p, n, false, 0.0);
        else s->i = row_iacc(c, p, n, false);
        break;
    case FAM_PROD:
        if (c->is_float) s->f = row_fprod(c, p, n);
        else s->i = row_iacc(c, p, n, true);
        break;
    case FAM_EXT:
        if (c->is_float) row_ext_float(c, p, n, r0, s);
        else row_ext_int(c, p, n, r0, s);
        break;
    default: /* FAM_VAR */
        s->n = n;
        s->f = row_psum(c, p, n, false, 0.0) / (double)n;
        s->m2 = row_psum(c, p, n, true, s->f);
        break;
    }
}

/* ---- columns: a block of adjacent outputs, walking R ------------------------ */

static void col_float_acc(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                          bool prod, double *acc) {
    double buf[TILE_O];
    for (int64_t j = 0; j < nb; j++) acc[j] = prod ? 1.0 : 0.0;
    for (int64_t r = r0; r < r1; r++) {
        const double *x = block_f64(c, p0 + r * c->sr, nb, c->so, buf);
        if (prod) {
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) acc[j] *= x[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) acc[j] += x[j];
        }
    }
}

static void col_int_acc(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                        bool prod, red_state *st) {
    int64_t buf[TILE_O];
    uint64_t acc[TILE_O];
    for (int64_t j = 0; j < nb; j++) acc[j] = prod ? 1 : 0;
    for (int64_t r = r0; r < r1; r++) {
        ct_cpu_gather_i64(p0 + r * c->sr, nb, c->so, c->dt, buf);
        if (prod) {
            for (int64_t j = 0; j < nb; j++) acc[j] *= (uint64_t)buf[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) acc[j] += (uint64_t)buf[j];
        }
    }
    for (int64_t j = 0; j < nb; j++) st[j].i = (int64_t)acc[j];
}

/* Values only: vectorised running extremes that skip NaN, plus x - x
 * sums that flag columns holding a NaN (or an infinity), which are
 * rescanned for a NaN. */
static void col_ext_values(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                           red_state *st) {
    double buf[TILE_O], best[TILE_O], chk[TILE_O];
    const double *x = block_f64(c, p0 + r0 * c->sr, nb, c->so, buf);
    for (int64_t j = 0; j < nb; j++) best[j] = x[j], chk[j] = 0.0;
    for (int64_t r = r0; r < r1; r++) {
        x = block_f64(c, p0 + r * c->sr, nb, c->so, buf);
        if (c->is_max) {
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) {
                best[j] = x[j] > best[j] ? x[j] : best[j];
                chk[j] += x[j] - x[j];
            }
        } else {
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) {
                best[j] = x[j] < best[j] ? x[j] : best[j];
                chk[j] += x[j] - x[j];
            }
        }
    }
    for (int64_t j = 0; j < nb; j++) {
        st[j].f = best[j];
        st[j].idx = r0;
        for (int64_t r = r0; chk[j] != chk[j] && r < r1; r++) {
            double v = ct_cpu_load(p0 + r * c->sr + j * c->so, c->dt);
            if (v != v) {
                st[j].f = v;
                break;
            }
        }
    }
}

/* Running extremes and their indices per output: replaced when strictly
 * better, or by the first NaN; a NaN is never replaced. */
static void col_ext_float(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                          red_state *st) {
    if (!c->need_idx) {
        col_ext_values(c, p0, nb, r0, r1, st);
        return;
    }
    double buf[TILE_O], best[TILE_O];
    int64_t at[TILE_O];
    const double *x = block_f64(c, p0 + r0 * c->sr, nb, c->so, buf);
    for (int64_t j = 0; j < nb; j++) best[j] = x[j], at[j] = r0;
    for (int64_t r = r0 + 1; r < r1; r++) {
        x = block_f64(c, p0 + r * c->sr, nb, c->so, buf);
        for (int64_t j = 0; j < nb; j++) {
            bool take = (c->is_max ? x[j] > best[j] : x[j] < best[j]) ||
                        (x[j] != x[j] && best[j] == best[j]);
            best[j] = take ? x[j] : best[j];
            at[j] = take ? r : at[j];
        }
    }
    for (int64_t j = 0; j < nb; j++) st[j].f = best[j], st[j].idx = at[j];
}

static void col_ext_int(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                        red_state *st) {
    int64_t buf[TILE_O];
    ct_cpu_gather_i64(p0 + r0 * c->sr, nb, c->so, c->dt, buf);
    for (int64_t j = 0; j < nb; j++) st[j].i = buf[j], st[j].idx = r0;
    for (int64_t r = r0 + 1; r < r1; r++) {
        ct_cpu_gather_i64(p0 + r * c->sr, nb, c->so, c->dt, buf);
        for (int64_t j = 0; j < nb; j++)
            if (c->is_max ? buf[j] > st[j].i : buf[j] < st[j].i) st[j].i = buf[j], st[j].idx = r;
    }
}

/* Two passes, as for rows: means, then squared deviations. */
static void col_var(const red_ctx *c, const char *p0, int64_t nb, int64_t r0, int64_t r1,
                    red_state *st) {
    double mean[TILE_O], m2[TILE_O], buf[TILE_O];
    double n = (double)(r1 - r0);
    col_float_acc(c, p0, nb, r0, r1, false, mean);
    for (int64_t j = 0; j < nb; j++) mean[j] /= n, m2[j] = 0.0;
    for (int64_t r = r0; r < r1; r++) {
        const double *x = block_f64(c, p0 + r * c->sr, nb, c->so, buf);
#pragma omp simd
        for (int64_t j = 0; j < nb; j++) m2[j] += (x[j] - mean[j]) * (x[j] - mean[j]);
    }
    for (int64_t j = 0; j < nb; j++) st[j].f = mean[j], st[j].m2 = m2[j], st[j].n = r1 - r0;
}

static void col_tile(const red_ctx *c, int64_t o0, int64_t nb, int64_t r0, int64_t r1,
                     red_state *st) {
    const char *p0 = c->base + o0 * c->so;
    double acc[TILE_O];
    switch (c->fam) {
    case FAM_SUM:
    case FAM_PROD:
        if (!c->is_float) {
            col_int_acc(c, p0, nb, r0, r1, c->fam == FAM_PROD, st);
            break;
        }
        col_float_acc(c, p0, nb, r0, r1, c->fam == FAM_PROD, acc);
        for (int64_t j = 0; j < nb; j++) st[j].f = acc[j];
        break;
    case FAM_EXT:
        if (c->is_float) col_ext_float(c, p0, nb, r0, r1, st);
        else col_ext_int(c, p0, nb, r0, r1, st);
        break;
    default:
        col_var(c, p0, nb, r0, r1, st);
        break;
    }
}

/* ---- tiles, combination and results ---------------------------------------- */

static bool use_columns(const red_ctx *c) {
    int64_t so = c->so < 0 ? -c->so : c->so, sr = c->sr < 0 ? -c->sr : c->sr;
    return c->O > 1 && c->R > 1 && c->sr != c->esz && so < sr;
}

static void reduce_tile(const red_ctx *c, bool columns, int64_t o0, int64_t nb, int64_t r0,
                        int64_t r1, red_state *st) {
    if (columns) {
        col_tile(c, o0, nb, r0, r1, st);
        return;
    }
    for (int64_t j = 0; j < nb; j++)
        row_reduce(c, c->base + (o0 + j) * c->so + r0 * c->sr, r1 - r0, r0, &st[j]);
}

/* a := a then b, where b covers the R elements right after a's. */
static void combine(const red_ctx *c, red_state *a, const red_state *b) {
    switch (c->fam) {
    case FAM_SUM:
        a->f += b->f;
        a->i = (int64_t)((uint64_t)a->i + (uint64_t)b->i);
        break;
    case FAM_PROD:
        a->f *= b->f;
        a->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i);
        break;
    case FAM_EXT:
        if (c->is_float) {
            if (a->f == a->f && (b->f != b->f || (c->is_max ? b->f > a->f : b->f < a->f))) *a = *b;
        } else if (c->is_max ? b->i > a->i : b->i < a->i) {
            *a = *b;
        }
        break;
    default: { /* FAM_VAR: Chan et al. */
        double na = (double)a->n, nb = (double)b->n, n = na + nb;
        double delta = b->f - a->f;
        a->f += delta * nb / n;
        a->m2 += b->m2 + delta * delta * na * nb / n;
        a->n += b->n;
        break;
    }
    }
}

static void finish(const red_ctx *c, const red_state *s, const ct_kview *out,
                   const ct_kview *out_index, int64_t o, double correction) {
    char *dst = ct_cpu_base(out) + o * (int64_t)ct_dtype_size(out->dtype);
    if (out_index) ((int64_t *)(void *)ct_cpu_base(out_index))[o] = s->idx;
    switch (c->op) {
    case CT_RED_ARGMAX:
    case CT_RED_ARGMIN:
        ct_cpu_store_i64(dst, out->dtype, s->idx);
        return;
    case CT_RED_MEAN:
        ct_cpu_store(dst, out->dtype, (c->is_float ? s->f : (double)s->i) / (double)c->R);
        return;
    case CT_RED_VAR:
        ct_cpu_store(dst, out->dtype, s->m2 / fmax(0.0, (double)s->n - correction));
        return;
    default:
        if (c->is_float) ct_cpu_store(dst, out->dtype, s->f);
        else ct_cpu_store_i64(dst, out->dtype, s->i);
        return;
    }
}

static int op_family(ct_reduce_op op) {
    switch (op) {
    case CT_RED_SUM:
    case CT_RED_MEAN: return FAM_SUM;
    case CT_RED_PROD: return FAM_PROD;
    case CT_RED_VAR: return FAM_VAR;
    default: return FAM_EXT;
    }
}

/* Results of empty rows: the identity of the operation (NaN for mean/var). */
static ct_status reduce_empty_rows(const red_ctx *c, const ct_kview *out, double correction) {
    if (c->fam == FAM_EXT)
        return ct_error_set(CT_ERR_INDEX, "%s: Expected reduction dim to have non-zero size",
                            c->is_max ? "max" : "min");
    red_state s = {.f = c->fam == FAM_PROD ? 1.0 : 0.0, .i = c->fam == FAM_PROD ? 1 : 0};
    for (int64_t o = 0; o < c->O; o++) finish(c, &s, out, NULL, o, correction);
    return CT_OK;
}

ct_status ct_cpu_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index,
                        const ct_kview *in, double param) {
    red_ctx c;
    c.op = op;
    c.fam = op_family(op);
    c.is_max = op == CT_RED_MAX || op == CT_RED_ARGMAX;
    c.need_idx = op == CT_RED_ARGMAX || op == CT_RED_ARGMIN || out_index != NULL;
    c.dt = in->dtype;
    c.is_float = ct_dtype_is_floating(in->dtype) || c.fam == FAM_VAR;
    c.esz = (int64_t)ct_dtype_size(in->dtype);
    c.base = ct_cpu_base(in);
    c.O = in->ndim > 0 ? in->shape[0] : 1;
    c.R = in->ndim > 1 ? in->shape[1] : 1;
    c.so = (in->ndim > 0 ? in->strides[0] : 0) * c.esz;
    c.sr = (in->ndim > 1 ? in->strides[1] : 0) * c.esz;
    if (c.O == 0) return CT_OK;
    if (c.R == 0) return reduce_empty_rows(&c, out, param);

    bool columns = use_columns(&c);
    int64_t tile_o = columns ? TILE_O : c.O / 64;
    if (tile_o < 1) tile_o = 1;
    if (tile_o > TILE_O) tile_o = TILE_O;
    int64_t ntiles = (c.O + tile_o - 1) / tile_o;
    int64_t nchunks = (ntiles < 16 && c.R >= 2 * R_CHUNK) ? (c.R + R_CHUNK - 1) / R_CHUNK : 1;
    bool parallel = c.O * c.R >= CT_CPU_GRAIN;

    if (nchunks == 1) {
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t t = 0; t < ntiles; t++) {
            red_state st[TILE_O];
            int64_t o0 = t * tile_o, nb = c.O - o0 < tile_o ? c.O - o0 : tile_o;
            reduce_tile(&c, columns, o0, nb, 0, c.R, st);
            for (int64_t j = 0; j < nb; j++) finish(&c, &st[j], out, out_index, o0 + j, param);
        }
        return CT_OK;
    }

    /* Few rows, long R: pieces of R in parallel, partial states combined in order. */
    red_state *part = malloc((size_t)(nchunks * c.O) * sizeof *part);
    if (!part)
        return ct_error_set(CT_ERR_OOM, "%s: out of memory for %lld partial results",
                            op == CT_RED_VAR ? "var" : "reduce", (long long)(nchunks * c.O));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t item = 0; item < ntiles * nchunks; item++) {
        int64_t t = item / nchunks, ch = item % nchunks;
        int64_t o0 = t * tile_o, nb = c.O - o0 < tile_o ? c.O - o0 : tile_o;
        int64_t r0 = ch * R_CHUNK, r1 = r0 + R_CHUNK < c.R ? r0 + R_CHUNK : c.R;
        reduce_tile(&c, columns, o0, nb, r0, r1, part + ch * c.O + o0);
    }
#pragma omp parallel for schedule(static) if (c.O >= 64)
    for (int64_t o = 0; o < c.O; o++) {
        red_state s = part[o];
        for (int64_t ch = 1; ch < nchunks; ch++) combine(&c, &s, &part[ch * c.O + o]);
        finish(&c, &s, out, out_index, o, param);
    }
    free(part);
    return CT_OK;
}
