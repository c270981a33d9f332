/*
 * cpu_softmax.c — the CPU backend's softmax and log_softmax over the middle
 * axis of a contiguous [outer, dim, inner] tensor.
 *
 * Numerically stable: the maximum of each slice is subtracted before exp, so
 * large inputs do not overflow; log_softmax is x - max - log(sum(exp(x - max)))
 * rather than log(softmax), which keeps precision for tiny probabilities.
 * A NaN anywhere in a slice makes the whole slice NaN, as in PyTorch.
 * float32, float16 and bfloat16 compute in float with a vectorised exp
 * (ct_cpu_exp_f32, about 1 ulp) as PyTorch does; float64 uses libm's exp.
 * Sums of exponentials are accumulated in double.
 * Layouts: with inner == 1 each slice is a contiguous row, walked in blocks;
 * otherwise a block of adjacent inner positions is processed together, so
 * every pass reads memory in order and the loops over the block vectorise.
 */
#include "cpu_reduce.h"

#include "cpu_internal.h"
#include "cpu_vec.h"

#define SM_BLOCK 64 /* elements (rows) or inner positions (columns) at once */

/* Write n computed floats to y (a floating dtype, `step` bytes apart). */
static void store_floats(char *y, const float *v, int64_t n, int64_t step, ct_dtype dt) {
    if (dt == CT_FLOAT32) {
#pragma omp simd
        for (int64_t k = 0; k < n; k++) *(float *)(void *)(y + k * step) = v[k];
    } else if (dt == CT_FLOAT16) {
#pragma omp simd
        for (int64_t k = 0; k < n; k++)
            *(uint16_t *)(void *)(y + k * step) = ct_cpu_float_to_half_bits(v[k]);
    } else if (dt == CT_BFLOAT16) {
#pragma omp simd
        for (int64_t k = 0; k < n; k++)
            *(uint16_t *)(void *)(y + k * step) = ct_cpu_float_to_bf16_bits(v[k]);
    } else {
        for (int64_t k = 0; k < n; k++) ct_cpu_store(y + k * step, dt, v[k]);
    }
}

/* One output block: softmax exp(x - m) * (1 / sum), or log_softmax
 * x - (m + log(sum)); `k` holds those per-slice constants. */
static void finish_block(const float *x, float *out, int64_t n, const float *m, const double *k,
                         bool per_lane, bool want_log) {
    if (want_log && per_lane) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) out[i] = (float)((double)x[i] - k[i]);
    } else if (want_log) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) out[i] = (float)((double)x[i] - k[0]);
    } else if (per_lane) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((double)ct_cpu_exp_f32(x[i] - m[i]) * k[i]);
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((double)ct_cpu_exp_f32(x[i] - m[0]) * k[0]);
    }
}

/* The per-slice constant of finish_block. */
static double finish_constant(float m, double sum, bool want_log) {
    return want_log ? (double)m + log(sum) : 1.0 / sum;
}

/* float32 softmax keeps the exponentials of the second pass in y and
 * only scales them in the third; other cases recompute exp there (16-bit
 * outputs would lose precision if stored between passes). */
static bool keep_exps(ct_dtype dt, bool want_log) { return dt == CT_FLOAT32 && !want_log; }

/* A contiguous row of a float32/float16/bfloat16 tensor, in blocks. */
static void softmax_row_float(const char *x, char *y, int64_t n, ct_dtype dt, bool want_log) {
    int64_t esz = (int64_t)ct_dtype_size(dt);
    bool keep = keep_exps(dt, want_log);
    float buf[SM_BLOCK], out[SM_BLOCK], m = -INFINITY;
    for (int64_t k0 = 0; k0 < n; k0 += SM_BLOCK) {
        int64_t nb = n - k0 < SM_BLOCK ? n - k0 : SM_BLOCK;
        ct_cpu_gather_f32(x + k0 * esz, nb, esz, dt, buf);
        m = ct_cpu_block_max_f32(buf, nb, m);
    }
    double sum = 0.0;
    for (int64_t k0 = 0; k0 < n; k0 += SM_BLOCK) {
        int64_t nb = n - k0 < SM_BLOCK ? n - k0 : SM_BLOCK;
        float *e = keep ? (float *)(void *)(y + k0 * esz) : out;
        ct_cpu_gather_f32(x + k0 * esz, nb, esz, dt, buf);
#pragma omp simd reduction(+ : sum)
        for (int64_t k = 0; k < nb; k++) {
            e[k] = ct_cpu_exp_f32(buf[k] - m);
            sum += (double)e[k];
        }
    }
    double k = finish_constant(m, sum, want_log);
    if (keep) {
        float *yf = (float *)(void *)y;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) yf[i] = (float)((double)yf[i] * k);
        return;
    }
    for (int64_t k0 = 0; k0 < n; k0 += SM_BLOCK) {
        int64_t nb = n - k0 < SM_BLOCK ? n - k0 : SM_BLOCK;
        ct_cpu_gather_f32(x + k0 * esz, nb, esz, dt, buf);
        finish_block(buf, out, nb, &m, &k, false, want_log);
        store_floats(y + k0 * esz, out, nb, esz, dt);
    }
}

/* nb adjacent inner positions of one outer index (float32/16-bit types):
 * x and y point at [o, 0, j0]; element (d, j) is d * inner + j elements on. */
static void softmax_cols_float(const char *x, char *y, int64_t dim, int64_t inner, int64_t nb,
                               ct_dtype dt, bool want_log) {
    int64_t esz = (int64_t)ct_dtype_size(dt), row = inner * esz;
    bool keep = keep_exps(dt, want_log);
    float buf[SM_BLOCK], out[SM_BLOCK], m[SM_BLOCK];
    double sum[SM_BLOCK];
    for (int64_t j = 0; j < nb; j++) m[j] = -INFINITY, sum[j] = 0.0;
    for (int64_t d = 0; d < dim; d++) {
        ct_cpu_gather_f32(x + d * row, nb, esz, dt, buf);
#pragma omp simd
        for (int64_t j = 0; j < nb; j++) m[j] = buf[j] > m[j] ? buf[j] : m[j];
    }
    for (int64_t d = 0; d < dim; d++) {
        float *e = keep ? (float *)(void *)(y + d * row) : out;
        ct_cpu_gather_f32(x + d * row, nb, esz, dt, buf);
#pragma omp simd
        for (int64_t j = 0; j < nb; j++) {
            e[j] = ct_cpu_exp_f32(buf[j] - m[j]);
            sum[j] += (double)e[j];
        }
    }
    for (int64_t j = 0; j < nb; j++) sum[j] = finish_constant(m[j], sum[j], want_log);
    for (int64_t d = 0; d < dim; d++) {
        if (keep) {
            float *yf = (float *)(void *)(y + d * row);
#pragma omp simd
            for (int64_t j = 0; j < nb; j++) yf[j] = (float)((double)yf[j] * sum[j]);
            continue;
        }
        ct_cpu_gather_f32(x + d * row, nb, esz, dt, buf);
        finish_block(buf, out, nb, m, sum, true, want_log);
        store_floats(y + d * row, out, nb, esz, dt);
    }
}

/* A contiguous float64 row: max, exp and sum (y holds the exponentials),
 * then normalise. */
static void softmax_row_f64(const double *restrict x, double *restrict y, int64_t n,
                            bool want_log) {
    double m = ct_cpu_block_max_f64(x, n, -INFINITY), sum = 0.0;
    int64_t k;
    for (k = 0; k < n; k++) {
        y[k] = exp(x[k] - m);
        sum += y[k];
    }
    if (want_log) {
        double shift = m + log(sum);
        for (k = 0; k < n; k++) y[k] = x[k] - shift;
    } else {
        double inv = 1.0 / sum;
        for (k = 0; k < n; k++) y[k] *= inv;
    }
}

/* float64 columns: nb adjacent slices whose elements are `inner` apart;
 * y holds the exponentials between the second and third pass. */
static void softmax_cols_f64(const double *restrict x, double *restrict y, int64_t dim,
                             int64_t inner, int64_t nb, bool want_log) {
    double m[SM_BLOCK], sum[SM_BLOCK];
    for (int64_t j = 0; j < nb; j++) m[j] = -INFINITY, sum[j] = 0.0;
    for (int64_t d = 0; d < dim; d++)
#pragma omp simd
        for (int64_t j = 0; j < nb; j++) m[j] = x[d * inner + j] > m[j] ? x[d * inner + j] : m[j];
    for (int64_t d = 0; d < dim; d++)
        for (int64_t j = 0; j < nb; j++) {
            double e = exp(x[d * inner + j] - m[j]);
            y[d * inner + j] = e;
            sum[j] += e;
        }
    for (int64_t j = 0; j < nb; j++) sum[j] = want_log ? m[j] + log(sum[j]) : 1.0 / sum[j];
    for (int64_t d = 0; d < dim; d++)
        for (int64_t j = 0; j < nb; j++)
            y[d * inner + j] = want_log ? x[d * inner + j] - sum[j] : y[d * inner + j] * sum[j];
}

static void softmax_slice(const ct_kview *out, const ct_kview *in, int64_t o, int64_t j0,
                          int64_t nb, int64_t dim, int64_t inner, bool want_log) {
    int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    int64_t first = o * dim * inner + j0;
    const char *x = ct_cpu_base(in) + first * esz;
    char *y = ct_cpu_base(out) + first * esz;
    if (in->dtype == CT_FLOAT64 && inner == 1)
        softmax_row_f64((const double *)(const void *)x, (double *)(void *)y, dim, want_log);
    else if (in->dtype == CT_FLOAT64)
        softmax_cols_f64((const double *)(const void *)x, (double *)(void *)y, dim, inner, nb,
                         want_log);
    else if (inner == 1)
        softmax_row_float(x, y, dim, in->dtype, want_log);
    else
        softmax_cols_float(x, y, dim, inner, nb, in->dtype, want_log);
}

ct_status ct_cpu_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim,
                         int64_t inner, bool want_log) {
    if (outer == 0 || dim == 0 || inner == 0) return CT_OK;
    int64_t block = inner < SM_BLOCK ? inner : SM_BLOCK;
    int64_t nblocks = (inner + block - 1) / block;
    bool parallel = outer * dim * inner >= CT_CPU_GRAIN;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t item = 0; item < outer * nblocks; item++) {
        int64_t o = item / nblocks, j0 = (item % nblocks) * block;
        int64_t nb = inner - j0 < block ? inner - j0 : block;
        softmax_slice(out, in, o, j0, nb, dim, inner, want_log);
    }
    return CT_OK;
}
