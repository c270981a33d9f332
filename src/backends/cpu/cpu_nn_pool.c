/*
 * cpu_nn_pool.c — the CPU backend's pooling kernels (the pooling entries of
 * struct ct_backend_nn, src/core/backend_nn.h): max, average and adaptive
 * average pooling over [planes, H, W], forward and backward.
 *
 * Each kernel is written once per compute type (float, double) by a macro
 * and works on whole planes; planes are split across OpenMP threads, so a
 * backward that adds several gradients into one element does it inside one
 * plane on one thread, scattering in increasing output order (the order
 * of the device kernels' gathers): the results never depend on the thread
 * count. float16/bfloat16 planes are converted to float scratch planes
 * around the float kernel. Average pooling forward sums in double.
 */
#include <stdlib.h>

#include "../../core/backend_nn.h"
#include "../../core/error.h"
#include "cpu_internal.h"
#include "cpu_nn.h"
#include "cpu_vec.h"

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- window arithmetic shared by the kernels ---------------------------------------- */

/* Average pooling window of output o along one dim: [*lo, *hi) clipped to
 * the input, and its size before clipping (PyTorch's pool_size). */
static int64_t avg_window(const ct_pool2d_geom *g, int d, int64_t o, int64_t *lo, int64_t *hi) {
    int64_t start = o * g->stride[d] - g->padding[d];
    int64_t end = min_i64(start + g->kernel[d], g->in_size[d] + g->padding[d]);
    int64_t size = end - start;
    *lo = max_i64(start, 0);
    *hi = min_i64(end, g->in_size[d]);
    return size;
}

static double avg_divisor(const ct_pool2d_geom *g, int64_t oh, int64_t ow) {
    int64_t h0, h1, w0, w1;
    int64_t size = avg_window(g, 0, oh, &h0, &h1) * avg_window(g, 1, ow, &w0, &w1);
    if (g->divisor_override) return (double)g->divisor_override;
    return (double)(g->count_include_pad ? size : (h1 - h0) * (w1 - w0));
}

/* Adaptive window of output o: [floor(o*in/out), ceil((o+1)*in/out)). */
static int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
static int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
    return ((o + 1) * in + out - 1) / out;
}

/* ---- plane kernels, once per compute type -------------------------------------------
 * Signature: (in plane, out plane, index plane [OH*OW] or NULL, geometry). */

#define DEFINE_POOL_PLANES(T, SFX)                                                            \
    static void max_plane_##SFX(const T *x, T *y, int64_t *ind, const ct_pool2d_geom *g) {   \
        const int64_t H = g->in_size[0], W = g->in_size[1];                                   \
        for (int64_t oh = 0; oh < g->out_size[0]; oh++) {                                     \
            int64_t h0 = oh * g->stride[0] - g->padding[0];                                   \
            int64_t h1 = min_i64(h0 + (g->kernel[0] - 1) * g->dilation[0] + 1, H);            \
            while (h0 < 0) h0 += g->dilation[0];                                              \
            for (int64_t ow = 0; ow < g->out_size[1]; ow++) {                                 \
                int64_t w0 = ow * g->stride[1] - g->padding[1];                               \
                int64_t w1 = min_i64(w0 + (g->kernel[1] - 1) * g->dilation[1] + 1, W);        \
                while (w0 < 0) w0 += g->dilation[1];                                          \
                int64_t best = h0 * W + w0;                                                   \
                T m = -INFINITY;                                                              \
                for (int64_t h = h0; h < h1; h += g->dilation[0])                             \
                    for (int64_t w = w0; w < w1; w += g->dilation[1]) {                       \
                        T v = x[h * W + w];                                                   \
                        if (v > m || isnan(v)) m = v, best = h * W + w;                       \
                    }                                                                         \
                y[oh * g->out_size[1] + ow] = m;                                              \
                if (ind) ind[oh * g->out_size[1] + ow] = best;                                \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    /* scatter in output order: the same order as a gather over outputs */                   \
    static void max_back_plane_##SFX(const T *dy, T *dx, int64_t *ind,                        \
                                     const ct_pool2d_geom *g) {                               \
        const int64_t n_in = g->in_size[0] * g->in_size[1];                                   \
        for (int64_t i = 0; i < n_in; i++) dx[i] = 0;                                         \
        for (int64_t o = 0; o < g->out_size[0] * g->out_size[1]; o++)                         \
            if (ind[o] >= 0 && ind[o] < n_in) dx[ind[o]] += dy[o];                            \
    }                                                                                         \
    static void avg_plane_##SFX(const T *x, T *y, int64_t *unused, const ct_pool2d_geom *g) { \
        const int64_t W = g->in_size[1];                                                      \
        for (int64_t oh = 0; oh < g->out_size[0]; oh++)                                       \
            for (int64_t ow = 0; ow < g->out_size[1]; ow++) {                                 \
                int64_t h0, h1, w0, w1;                                                       \
                avg_window(g, 0, oh, &h0, &h1);                                               \
                avg_window(g, 1, ow, &w0, &w1);                                               \
                double sum = 0;                                                               \
                for (int64_t h = h0; h < h1; h++)                                             \
                    for (int64_t w = w0; w < w1; w++) sum += x[h * W + w];                    \
                bool empty = h0 >= h1 || w0 >= w1;                                            \
                y[oh * g->out_size[1] + ow] = empty ? 0 : (T)(sum / avg_divisor(g, oh, ow));  \
            }                                                                                 \
    }                                                                                         \
    /* scatter in output order: the same order as a gather over outputs */                   \
    static void avg_back_plane_##SFX(const T *dy, T *dx, int64_t *unused,                     \
                                     const ct_pool2d_geom *g) {                               \
        const int64_t W = g->in_size[1], OW = g->out_size[1];                                 \
        for (int64_t i = 0; i < g->in_size[0] * W; i++) dx[i] = 0;                            \
        for (int64_t oh = 0; oh < g->out_size[0]; oh++)                                       \
            for (int64_t ow = 0; ow < OW; ow++) {                                             \
                int64_t h0, h1, w0, w1;                                                       \
                avg_window(g, 0, oh, &h0, &h1);                                               \
                avg_window(g, 1, ow, &w0, &w1);                                               \
                if (h0 >= h1 || w0 >= w1) continue;                                           \
                T v = (T)(dy[oh * OW + ow] / avg_divisor(g, oh, ow));                         \
                for (int64_t h = h0; h < h1; h++)                                             \
                    for (int64_t w = w0; w < w1; w++) dx[h * W + w] += v;                     \
            }                                                                                 \
    }                                                                                         \
    static void adaptive_plane_##SFX(const T *x, T *y, int64_t *unused,                       \
                                     const ct_pool2d_geom *g) {                               \
        const int64_t H = g->in_size[0], W = g->in_size[1];                                   \
        const int64_t OH = g->out_size[0], OW = g->out_size[1];                               \
        for (int64_t oh = 0; oh < OH; oh++) {                                                 \
            int64_t h0 = adaptive_start(oh, OH, H), h1 = adaptive_end(oh, OH, H);             \
            for (int64_t ow = 0; ow < OW; ow++) {                                             \
                int64_t w0 = adaptive_start(ow, OW, W), w1 = adaptive_end(ow, OW, W);         \
                double sum = 0;                                                               \
                for (int64_t h = h0; h < h1; h++)                                             \
                    for (int64_t w = w0; w < w1; w++) sum += x[h * W + w];                    \
                y[oh * OW + ow] = (T)(sum / (double)((h1 - h0) * (w1 - w0)));                 \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    static void adaptive_back_plane_##SFX(const T *dy, T *dx, int64_t *unused,                \
                                          const ct_pool2d_geom *g) {                          \
        const int64_t H = g->in_size[0], W = g->in_size[1];                                   \
        const int64_t OH = g->out_size[0], OW = g->out_size[1];                               \
        for (int64_t i = 0; i < H * W; i++) dx[i] = 0;                                        \
        for (int64_t oh = 0; oh < OH; oh++) {                                                 \
            int64_t h0 = adaptive_start(oh, OH, H), h1 = adaptive_end(oh, OH, H);             \
            for (int64_t ow = 0; ow < OW; ow++) {                                             \
                int64_t w0 = adaptive_start(ow, OW, W), w1 = adaptive_end(ow, OW, W);         \
                T v = (T)(dy[oh * OW + ow] / (double)((h1 - h0) * (w1 - w0)));                \
                for (int64_t h = h0; h < h1; h++)                                             \
                    for (int64_t w = w0; w < w1; w++) dx[h * W + w] += v;                     \
            }                                                                                 \
        }                                                                                     \
    }

DEFINE_POOL_PLANES(float, f32)
DEFINE_POOL_PLANES(double, f64)

/* ---- running plane kernels over all planes ----------------------------------------------- */

typedef struct plane_kernel {
    void (*f32)(const float *in, float *out, int64_t *ind, const ct_pool2d_geom *g);
    void (*f64)(const double *in, double *out, int64_t *ind, const ct_pool2d_geom *g);
    const char *name;
} plane_kernel;

/* Convert n floats to a 16-bit dtype. */
static void store_16bit(char *dst, const float *src, int64_t n, ct_dtype dt) {
    uint16_t *d = (uint16_t *)(void *)dst;
    if (dt == CT_FLOAT16)
        for (int64_t i = 0; i < n; i++) d[i] = ct_cpu_float_to_half_bits(src[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = ct_cpu_float_to_bf16_bits(src[i]);
}

/* One plane p of a 16-bit dtype through the float kernel, with scratch
 * planes sx (in_plane floats) and sy (out_plane floats). */
static void plane_16bit(const plane_kernel *k, const char *x, char *y, int64_t *ind,
                        int64_t in_plane, int64_t out_plane, ct_dtype dt, float *sx, float *sy,
                        const ct_pool2d_geom *g) {
    ct_cpu_gather_f32(x, in_plane, 2, dt, sx);
    k->f32(sx, sy, ind, g);
    store_16bit(y, sy, out_plane, dt);
}

/* in planes of in_plane elements -> out planes of out_plane elements; ind
 * planes (when given) are [OH * OW]. */
static ct_status run_planes(const plane_kernel *k, const ct_kview *out, const ct_kview *in,
                            const ct_kview *ind, int64_t in_plane, int64_t out_plane,
                            const ct_pool2d_geom *g, int64_t work) {
    const ct_dtype dt = in->dtype;
    const int64_t esz = (int64_t)ct_dtype_size(dt), ind_plane = g->out_size[0] * g->out_size[1];
    const char *xb = ct_cpu_base(in);
    char *yb = ct_cpu_base(out);
    int64_t *ib = ind ? (int64_t *)(void *)ct_cpu_base(ind) : NULL;
    const bool is16 = dt == CT_FLOAT16 || dt == CT_BFLOAT16;
    int failed = 0;
#pragma omp parallel if (work >= CT_CPU_GRAIN)
    {
        float *sx = is16 ? malloc(sizeof(float) * (size_t)(in_plane + out_plane)) : NULL;
        if (is16 && !sx) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t p = 0; p < g->planes; p++) {
            const char *x = xb + p * in_plane * esz;
            char *y = yb + p * out_plane * esz;
            int64_t *ip = ib ? ib + p * ind_plane : NULL;
            if (dt == CT_FLOAT32)
                k->f32((const float *)(const void *)x, (float *)(void *)y, ip, g);
            else if (dt == CT_FLOAT64)
                k->f64((const double *)(const void *)x, (double *)(void *)y, ip, g);
            else if (sx)
                plane_16bit(k, x, y, ip, in_plane, out_plane, dt, sx, sx + in_plane, g);
        }
        free(sx);
    }
    if (failed)
        return ct_error_set(CT_ERR_OOM, "%s: out of memory for scratch planes", k->name);
    return CT_OK;
}

static int64_t in_plane(const ct_pool2d_geom *g) { return g->in_size[0] * g->in_size[1]; }
static int64_t out_plane(const ct_pool2d_geom *g) { return g->out_size[0] * g->out_size[1]; }

/* Work estimate for the threading decision: elements times window size. */
static int64_t window_work(const ct_pool2d_geom *g) {
    return g->planes * out_plane(g) * g->kernel[0] * g->kernel[1] + g->planes * in_plane(g);
}

ct_status ct_cpu_max_pool2d(const ct_kview *out, const ct_kview *indices, const ct_kview *in,
                            const ct_pool2d_geom *g) {
    static const plane_kernel k = {max_plane_f32, max_plane_f64, "max_pool2d"};
    return run_planes(&k, out, in, indices, in_plane(g), out_plane(g), g, window_work(g));
}

ct_status ct_cpu_max_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_kview *indices, const ct_pool2d_geom *g) {
    static const plane_kernel k = {max_back_plane_f32, max_back_plane_f64, "max_pool2d_backward"};
    return run_planes(&k, grad_in, grad_out, indices, out_plane(g), in_plane(g), g,
                      g->planes * (in_plane(g) + out_plane(g)));
}

ct_status ct_cpu_avg_pool2d(const ct_kview *out, const ct_kview *in, const ct_pool2d_geom *g) {
    static const plane_kernel k = {avg_plane_f32, avg_plane_f64, "avg_pool2d"};
    return run_planes(&k, out, in, NULL, in_plane(g), out_plane(g), g, window_work(g));
}

ct_status ct_cpu_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                     const ct_pool2d_geom *g) {
    static const plane_kernel k = {avg_back_plane_f32, avg_back_plane_f64, "avg_pool2d_backward"};
    return run_planes(&k, grad_in, grad_out, NULL, out_plane(g), in_plane(g), g, window_work(g));
}

ct_status ct_cpu_adaptive_avg_pool2d(const ct_kview *out, const ct_kview *in,
                                     const ct_pool2d_geom *g) {
    static const plane_kernel k = {adaptive_plane_f32, adaptive_plane_f64, "adaptive_avg_pool2d"};
    return run_planes(&k, out, in, NULL, in_plane(g), out_plane(g), g,
                      g->planes * (in_plane(g) + out_plane(g)));
}

ct_status ct_cpu_adaptive_avg_pool2d_backward(const ct_kview *grad_in, const ct_kview *grad_out,
                                              const ct_pool2d_geom *g) {
    static const plane_kernel k = {adaptive_back_plane_f32, adaptive_back_plane_f64,
                                   "adaptive_avg_pool2d_backward"};
    return run_planes(&k, grad_in, grad_out, NULL, out_plane(g), in_plane(g), g,
                      g->planes * (in_plane(g) + out_plane(g)));
}
