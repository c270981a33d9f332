/*
 * cpu_nn_norm.c — the CPU backend's batch-norm and layer-norm kernels.
 *
 * All statistics and all arithmetic are in double: rows are converted in
 * blocks (ct_cpu_gather_f64), computed, and converted back. Statistics are
 * deterministic for any thread count: batch norm computes one partial sum
 * per contiguous [n, c] row in parallel and then adds each channel's
 * partials in order of n; layer norm gives each row (and, for the
 * parameter gradients, each block of columns) to one thread. Means and
 * variances are two-pass (sum, then squared deviations from the mean).
 */
#include <stdlib.h>

#include "../../core/error.h"
#include "cpu_nn.h"
#include "cpu_vec.h"

#define BLOCK CT_CPU_NN_BLOCK

void ct_cpu_nn_store_block(char *p, const double *buf, int64_t n, ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32:
        for (int64_t k = 0; k < n; k++) ((float *)(void *)p)[k] = (float)buf[k];
        break;
    case CT_FLOAT64:
        for (int64_t k = 0; k < n; k++) ((double *)(void *)p)[k] = buf[k];
        break;
    case CT_FLOAT16:
        for (int64_t k = 0; k < n; k++)
            ((uint16_t *)(void *)p)[k] = ct_cpu_float_to_half_bits((float)buf[k]);
        break;
    case CT_BFLOAT16:
        for (int64_t k = 0; k < n; k++)
            ((uint16_t *)(void *)p)[k] = ct_cpu_float_to_bf16_bits((float)buf[k]);
        break;
    default:
        for (int64_t k = 0; k < n; k++) ct_cpu_store(p + k * (int64_t)ct_dtype_size(dt), dt, buf[k]);
        break;
    }
}

static void store_at(const ct_kview *v, int64_t i, double x) {
    ct_cpu_store(ct_cpu_base(v) + i * (int64_t)ct_dtype_size(v->dtype), v->dtype, x);
}

/* Address of element i of a contiguous view. */
static char *elem(const ct_kview *v, int64_t i) {
    return ct_cpu_base(v) + i * (int64_t)ct_dtype_size(v->dtype);
}

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* sum(x) and sum((x - center)^2) of n contiguous elements. */
static double run_sum(const char *p, int64_t n, ct_dtype dt) {
    double buf[BLOCK], sum = 0.0;
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < n; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, n - k0);
        ct_cpu_gather_f64(p + k0 * esz, nb, esz, dt, buf);
#pragma omp simd reduction(+ : sum)
        for (int64_t k = 0; k < nb; k++) sum += buf[k];
    }
    return sum;
}

static double run_sq_dev(const char *p, int64_t n, ct_dtype dt, double center) {
    double buf[BLOCK], sum = 0.0;
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < n; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, n - k0);
        ct_cpu_gather_f64(p + k0 * esz, nb, esz, dt, buf);
#pragma omp simd reduction(+ : sum)
        for (int64_t k = 0; k < nb; k++) sum += (buf[k] - center) * (buf[k] - center);
    }
    return sum;
}

/* ---- batch norm ------------------------------------------------------------------------ */

/* Per-channel sums of per-row partials part[n * C + c], in order of n. */
static void channel_totals(const double *part, int64_t n, int64_t c, double *total) {
    for (int64_t j = 0; j < c; j++) total[j] = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++) total[j] += part[i * c + j];
}

ct_status ct_cpu_batch_norm_stats(const ct_kview *mean, const ct_kview *var, const ct_kview *in,
                                  int64_t n, int64_t c, int64_t s) {
    const int64_t rows = n * c, esz = (int64_t)ct_dtype_size(in->dtype);
    double *part = malloc(sizeof(double) * (size_t)(rows + 2 * c));
    if (!part) return ct_error_set(CT_ERR_OOM, "batch_norm: out of memory for %lld partial sums",
                                   (long long)rows);
    double *mu = part + rows, *total = mu + c;
    const char *x = ct_cpu_base(in);
    const double m = (double)(n * s);
    const bool par = rows * s >= CT_CPU_GRAIN;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < rows; r++) part[r] = run_sum(x + r * s * esz, s, in->dtype);
    channel_totals(part, n, c, total);
    for (int64_t j = 0; j < c; j++) mu[j] = total[j] / m;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < rows; r++) part[r] = run_sq_dev(x + r * s * esz, s, in->dtype, mu[r % c]);
    channel_totals(part, n, c, total);
    for (int64_t j = 0; j < c; j++) {
        store_at(mean, j, mu[j]);
        store_at(var, j, total[j] / m);
    }
    free(part);
    return CT_OK;
}

/* y = x * a + b over one contiguous row of s elements. */
static void affine_row(const char *x, char *y, int64_t s, ct_dtype dt, double a, double b) {
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    if (dt == CT_FLOAT32) {
        const float *xf = (const float *)(const void *)x;
        float *yf = (float *)(void *)y, af = (float)a, bf = (float)b;
#pragma omp simd
        for (int64_t k = 0; k < s; k++) yf[k] = xf[k] * af + bf;
        return;
    }
    double buf[BLOCK];
    for (int64_t k0 = 0; k0 < s; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, s - k0);
        ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, buf);
#pragma omp simd
        for (int64_t k = 0; k < nb; k++) buf[k] = buf[k] * a + b;
        ct_cpu_nn_store_block(y + k0 * esz, buf, nb, dt);
    }
}

ct_status ct_cpu_batch_norm_apply(const ct_kview *out, const ct_kview *in, const ct_kview *mean,
                                  const ct_kview *invstd, const ct_kview *weight,
                                  const ct_kview *bias, int64_t n, int64_t c, int64_t s) {
    const int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    /* Each channel's scale and shift once, not once per (image, channel)
     * row: deep layers have rows of one to four elements. */
    double *ab = malloc(sizeof(double) * (size_t)(2 * (c > 0 ? c : 1)));
    if (!ab) return ct_error_set(CT_ERR_OOM, "batch_norm: out of memory");
    for (int64_t j = 0; j < c; j++) {
        ab[2 * j] = ct_cpu_nn_at(invstd, j) * (weight ? ct_cpu_nn_at(weight, j) : 1.0);
        ab[2 * j + 1] = (bias ? ct_cpu_nn_at(bias, j) : 0.0) - ct_cpu_nn_at(mean, j) * ab[2 * j];
    }
    const char *src = ct_cpu_base(in);
    char *dst = ct_cpu_base(out);
#pragma omp parallel for schedule(static) if (n * c * s >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < n * c; r++) {
        int64_t j = r % c;
        affine_row(src + r * s * esz, dst + r * s * esz, s, in->dtype, ab[2 * j], ab[2 * j + 1]);
    }
    free(ab);
    return CT_OK;
}

/* sum(dy) and sum(dy * (x - center)) over one row. */
static void grad_sums(const char *dy, const char *x, int64_t s, ct_dtype dt, double center,
                      double *sum_dy, double *sum_dy_xmu) {
    double g[BLOCK], v[BLOCK], a = 0.0, b = 0.0;
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < s; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, s - k0);
        ct_cpu_gather_f64(dy + k0 * esz, nb, esz, dt, g);
        ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, v);
#pragma omp simd reduction(+ : a, b)
        for (int64_t k = 0; k < nb; k++) {
            a += g[k];
            b += g[k] * (v[k] - center);
        }
    }
    *sum_dy = a;
    *sum_dy_xmu = b;
}

ct_status ct_cpu_batch_norm_backward_reduce(const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, int64_t n, int64_t c,
                                            int64_t s) {
    const int64_t rows = n * c, esz = (int64_t)ct_dtype_size(in->dtype);
    double *part = malloc(sizeof(double) * (size_t)(2 * rows + 2 * c));
    if (!part)
        return ct_error_set(CT_ERR_OOM, "batch_norm_backward: out of memory for %lld partial sums",
                            (long long)rows);
    double *part2 = part + rows, *t1 = part2 + rows, *t2 = t1 + c;
#pragma omp parallel for schedule(static) if (rows * s >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++)
        grad_sums(ct_cpu_base(grad_out) + r * s * esz, ct_cpu_base(in) + r * s * esz, s,
                  in->dtype, ct_cpu_nn_at(mean, r % c), &part[r], &part2[r]);
    channel_totals(part, n, c, t1);
    channel_totals(part2, n, c, t2);
    for (int64_t j = 0; j < c; j++) {
        store_at(sum_dy, j, t1[j]);
        store_at(sum_dy_xmu, j, t2[j]);
    }
    free(part);
    return CT_OK;
}

/* dx = (dy - gmean - (x - center) * proj) * scale over one row (proj and
 * gmean 0: dx = dy * scale). */
static void grad_row(char *dx, const char *dy, const char *x, int64_t s, ct_dtype dt,
                     double center, double proj, double gmean, double scale) {
    double g[BLOCK], v[BLOCK];
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < s; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, s - k0);
        ct_cpu_gather_f64(dy + k0 * esz, nb, esz, dt, g);
        if (x) {
            ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, v);
#pragma omp simd
            for (int64_t k = 0; k < nb; k++) g[k] = (g[k] - gmean - (v[k] - center) * proj) * scale;
        } else {
#pragma omp simd
            for (int64_t k = 0; k < nb; k++) g[k] *= scale;
        }
        ct_cpu_nn_store_block(dx + k0 * esz, g, nb, dt);
    }
}

ct_status ct_cpu_batch_norm_backward_apply(const ct_kview *grad_in, const ct_kview *grad_out,
                                           const ct_kview *in, const ct_kview *mean,
                                           const ct_kview *invstd, const ct_kview *weight,
                                           const ct_kview *sum_dy, const ct_kview *sum_dy_xmu,
                                           int64_t n, int64_t c, int64_t s, bool batch_stats) {
    const int64_t esz = (int64_t)ct_dtype_size(grad_out->dtype);
    const double m = (double)(n * s);
#pragma omp parallel for schedule(static) if (n * c * s >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < n * c; r++) {
        int64_t j = r % c;
        double k = ct_cpu_nn_at(invstd, j);
        double scale = k * (weight ? ct_cpu_nn_at(weight, j) : 1.0);
        char *dx = ct_cpu_base(grad_in) + r * s * esz;
        const char *dy = ct_cpu_base(grad_out) + r * s * esz;
        if (!batch_stats) {
            grad_row(dx, dy, NULL, s, grad_out->dtype, 0.0, 0.0, 0.0, scale);
            continue;
        }
        double proj = k * k * ct_cpu_nn_at(sum_dy_xmu, j) / m;
        double gmean = ct_cpu_nn_at(sum_dy, j) / m;
        grad_row(dx, dy, ct_cpu_base(in) + r * s * esz, s, grad_out->dtype, ct_cpu_nn_at(mean, j),
                 proj, gmean, scale);
    }
    return CT_OK;
}

/* ---- layer norm ---------------------------------------------------------------------------- */

/* A [n] stat vector as a malloc'd double array (NULL view: all `fill`). */
static double *param_doubles(const ct_kview *v, int64_t n, double fill) {
    double *a = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!a) return NULL;
    if (v)
        ct_cpu_gather_f64(ct_cpu_base(v), n, (int64_t)ct_dtype_size(v->dtype), v->dtype, a);
    else
        for (int64_t k = 0; k < n; k++) a[k] = fill;
    return a;
}

/* y = (x - mean) * rstd * w + b over one row of length l. */
static void layer_norm_row(const char *x, char *y, int64_t l, ct_dtype dt, double mean,
                           double rstd, const double *w, const double *b) {
    double buf[BLOCK];
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < l; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, l - k0);
        ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, buf);
#pragma omp simd
        for (int64_t k = 0; k < nb; k++) buf[k] = (buf[k] - mean) * rstd * w[k0 + k] + b[k0 + k];
        ct_cpu_nn_store_block(y + k0 * esz, buf, nb, dt);
    }
}

/* float32 rows without block copies: the statistics and the result in
 * double straight from the float data (the same math as the block path). */
static void layer_norm_row_f32(const float *restrict x, float *restrict y, int64_t l, double eps,
                               const double *w, const double *b, double *mean, double *rstd) {
    double sum = 0.0, sq = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t k = 0; k < l; k++) sum += x[k];
    const double mu = sum / (double)l;
#pragma omp simd reduction(+ : sq)
    for (int64_t k = 0; k < l; k++) sq += ((double)x[k] - mu) * ((double)x[k] - mu);
    const double rs = 1.0 / sqrt(sq / (double)l + eps);
#pragma omp simd
    for (int64_t k = 0; k < l; k++) y[k] = (float)(((double)x[k] - mu) * rs * w[k] + b[k]);
    *mean = mu;
    *rstd = rs;
}

ct_status ct_cpu_layer_norm(const ct_kview *out, const ct_kview *mean, const ct_kview *rstd,
                            const ct_kview *in, const ct_kview *weight, const ct_kview *bias,
                            int64_t rows, int64_t cols, double eps) {
    const int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    double *w = param_doubles(weight, cols, 1.0), *b = param_doubles(bias, cols, 0.0);
    if (!w || !b) {
        free(w);
        free(b);
        return ct_error_set(CT_ERR_OOM, "layer_norm: out of memory for %lld parameters",
                            (long long)cols);
    }
#pragma omp parallel for schedule(static) if (rows * cols >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++) {
        const char *x = ct_cpu_base(in) + r * cols * esz;
        if (in->dtype == CT_FLOAT32) {
            double mu, rs;
            layer_norm_row_f32((const float *)(const void *)x,
                               (float *)(void *)(ct_cpu_base(out) + r * cols * esz), cols, eps, w, b,
                               &mu, &rs);
            store_at(mean, r, mu);
            store_at(rstd, r, rs);
            continue;
        }
        double mu = run_sum(x, cols, in->dtype) / (double)cols;
        double var = run_sq_dev(x, cols, in->dtype, mu) / (double)cols;
        double rs = 1.0 / sqrt(var + eps);
        store_at(mean, r, mu);
        store_at(rstd, r, rs);
        layer_norm_row(x, ct_cpu_base(out) + r * cols * esz, cols, in->dtype, mu, rs, w, b);
    }
    free(w);
    free(b);
    return CT_OK;
}

/* One row: the two row means the gradient needs, then dx. */
static void layer_norm_grad_row(char *dx, const char *dy, const char *x, int64_t l, ct_dtype dt,
                                double mean, double rstd, const double *w) {
    double g[BLOCK], v[BLOCK], sum_g = 0.0, sum_gx = 0.0;
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    for (int64_t k0 = 0; k0 < l; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, l - k0);
        ct_cpu_gather_f64(dy + k0 * esz, nb, esz, dt, g);
        ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, v);
#pragma omp simd reduction(+ : sum_g, sum_gx)
        for (int64_t k = 0; k < nb; k++) {
            double gk = g[k] * w[k0 + k];
            sum_g += gk;
            sum_gx += gk * ((v[k] - mean) * rstd);
        }
    }
    const double mg = sum_g / (double)l, mgx = sum_gx / (double)l;
    for (int64_t k0 = 0; k0 < l; k0 += BLOCK) {
        int64_t nb = min_i64(BLOCK, l - k0);
        ct_cpu_gather_f64(dy + k0 * esz, nb, esz, dt, g);
        ct_cpu_gather_f64(x + k0 * esz, nb, esz, dt, v);
#pragma omp simd
        for (int64_t k = 0; k < nb; k++)
            g[k] = rstd * (g[k] * w[k0 + k] - mg - ((v[k] - mean) * rstd) * mgx);
        ct_cpu_nn_store_block(dx + k0 * esz, g, nb, dt);
    }
}

ct_status ct_cpu_layer_norm_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *in, const ct_kview *mean,
                                     const ct_kview *rstd, const ct_kview *weight, int64_t rows,
                                     int64_t cols) {
    const int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    double *w = param_doubles(weight, cols, 1.0);
    if (!w)
        return ct_error_set(CT_ERR_OOM, "layer_norm_backward: out of memory for %lld parameters",
                            (long long)cols);
#pragma omp parallel for schedule(static) if (rows * cols >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++)
        layer_norm_grad_row(ct_cpu_base(grad_in) + r * cols * esz,
                            ct_cpu_base(grad_out) + r * cols * esz,
                            ct_cpu_base(in) + r * cols * esz, cols, in->dtype,
                            ct_cpu_nn_at(mean, r), ct_cpu_nn_at(rstd, r), w);
    free(w);
    return CT_OK;
}

ct_status ct_cpu_layer_norm_backward_params(const ct_kview *grad_weight, const ct_kview *grad_bias,
                                            const ct_kview *grad_out, const ct_kview *in,
                                            const ct_kview *mean, const ct_kview *rstd,
                                            int64_t rows, int64_t cols) {
    const int64_t esz = (int64_t)ct_dtype_size(in->dtype);
    const int64_t nblocks = (cols + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (rows * cols >= CT_CPU_GRAIN)
    for (int64_t bi = 0; bi < nblocks; bi++) {
        const int64_t k0 = bi * BLOCK, nb = min_i64(BLOCK, cols - k0);
        double g[BLOCK], v[BLOCK], sw[BLOCK] = {0}, sb[BLOCK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const int64_t at = (r * cols + k0) * esz;
            double mu = ct_cpu_nn_at(mean, r), rs = ct_cpu_nn_at(rstd, r);
            ct_cpu_gather_f64(ct_cpu_base(grad_out) + at, nb, esz, in->dtype, g);
            ct_cpu_gather_f64(ct_cpu_base(in) + at, nb, esz, in->dtype, v);
#pragma omp simd
            for (int64_t k = 0; k < nb; k++) {
                sw[k] += g[k] * ((v[k] - mu) * rs);
                sb[k] += g[k];
            }
        }
        if (grad_weight) ct_cpu_nn_store_block(elem(grad_weight, k0), sw, nb, grad_weight->dtype);
        if (grad_bias) ct_cpu_nn_store_block(elem(grad_bias, k0), sb, nb, grad_bias->dtype);
    }
    return CT_OK;
}
