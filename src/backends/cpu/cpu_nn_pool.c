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
 * Max pooling forward runs branch-free, vectorised kernels (2×2 windows of
 * stride 2 get their own): compares on real data go either way at random,
 * so a branch per element costs more than the arithmetic.
 */
#include <stdint.h>
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

/* ---- 2×2 windows with stride 2, no padding (max_pool2d(x, 2)) ------------------------
 * The common case of CNNs, worth its own forward kernel: every window lies
 * inside the plane, so each output is four loads and three selects, with
 * the same choice rule as max_plane (the first maximum, or the last NaN;
 * candidates in row-major order). Written as selects over a block of a row,
 * which gcc vectorises; branches would be mispredicted on every other
 * element of real data. The winner's position (0..3) is kept in a small
 * integer buffer and turned into h * W + w by a second loop. The backward
 * stays the generic scatter: it is already branch-free. */

/* Does the geometry use the 2×2 kernels: 2×2, stride 2, no padding, no
 * dilation, and every window whole (ceil_mode may add partial ones)? */
static bool is_pool2x2(const ct_pool2d_geom *g) {
    for (int d = 0; d < 2; d++)
        if (g->kernel[d] != 2 || g->stride[d] != 2 || g->padding[d] != 0 ||
            g->dilation[d] != 1 || 2 * g->out_size[d] > g->in_size[d])
            return false;
    return true;
}

/* Outputs of one row handled per pass of the 2×2 kernel. */
#define POOL2X2_BLOCK 64

/* K is an integer type as wide as T, so that the select loop vectorises. */
#define DEFINE_POOL2X2_PLANE(T, K, SFX)                                                       \
    static void max2x2_plane_##SFX(const T *x, T *y, int64_t *ind, const ct_pool2d_geom *g) { \
        const int64_t W = g->in_size[1], OH = g->out_size[0], OW = g->out_size[1];            \
        K pos[POOL2X2_BLOCK];                                                                 \
        for (int64_t oh = 0; oh < OH; oh++) {                                                 \
            for (int64_t o0 = 0; o0 < OW; o0 += POOL2X2_BLOCK) {                              \
                const int64_t n = min_i64(POOL2X2_BLOCK, OW - o0);                            \
                const T *restrict r0 = x + 2 * (oh * W + o0), *restrict r1 = r0 + W;          \
                T *restrict yr = y + oh * OW + o0;                                            \
                K *restrict kr = pos;                                                         \
                for (int64_t i = 0; i < n; i++) {                                             \
                    const T b = r0[2 * i + 1], c = r1[2 * i], d = r1[2 * i + 1];              \
                    T m = r0[2 * i];                                                          \
                    K k = 0;                                                                  \
                    bool t = b > m || b != b;                                                 \
                    m = t ? b : m, k = t ? 1 : k;                                             \
                    t = c > m || c != c;                                                      \
                    m = t ? c : m, k = t ? 2 : k;                                             \
                    t = d > m || d != d;                                                      \
                    m = t ? d : m, k = t ? 3 : k;                                             \
                    yr[i] = m, kr[i] = k;                                                     \
                }                                                                             \
                if (!ind) continue;                                                           \
                int64_t *restrict ir = ind + oh * OW + o0;                                    \
                const int64_t base = 2 * (oh * W + o0);                                       \
                for (int64_t i = 0; i < n; i++)                                               \
                    ir[i] = base + 2 * i + (kr[i] & 1) + (kr[i] >> 1) * W;                   \
            }                                                                                 \
        }                                                                                     \
    }

DEFINE_POOL2X2_PLANE(float, int32_t, f32)
DEFINE_POOL2X2_PLANE(double, int64_t, f64)

/* ---- other max pooling windows ---------------------------------------------------------
 * Row blocks of outputs, one kernel tap at a time: the outputs whose tap
 * lies inside the image form one interval (as in cpu_conv.h), over which
 * the running maxima and their positions are updated with selects that
 * gcc vectorises. Each output still sees its taps in row-major order, from
 * its first in-bounds element, so the choice is max_plane's exactly.
 * Positions are kept in K (as wide as T) while the plane's size fits it;
 * larger planes take max_plane. */

static int64_t ceil_div_i64(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) { return min_i64(max_i64(v, lo), hi); }

#define DEFINE_POOL_ROWS(T, K, K_MAX, SFX)                                                    \
    static void max_rows_##SFX(const T *x, T *y, int64_t *ind, const ct_pool2d_geom *g) {     \
        const int64_t H = g->in_size[0], W = g->in_size[1], OW = g->out_size[1];              \
        const int64_t sh = g->stride[0], sw = g->stride[1], ph = g->padding[0];               \
        const int64_t pw = g->padding[1], dh = g->dilation[0], dw = g->dilation[1];           \
        if (H * W > (int64_t)K_MAX) {                                                         \
            max_plane_##SFX(x, y, ind, g);                                                    \
            return;                                                                           \
        }                                                                                     \
        T m[POOL2X2_BLOCK];                                                                   \
        K best[POOL2X2_BLOCK];                                                                \
        for (int64_t oh = 0; oh < g->out_size[0]; oh++) {                                     \
            const int64_t hs = oh * sh - ph;                                                  \
            int64_t hf = hs; /* the first row inside the image */                             \
            while (hf < 0) hf += dh;                                                          \
            for (int64_t o0 = 0; o0 < OW; o0 += POOL2X2_BLOCK) {                              \
                const int64_t n = min_i64(POOL2X2_BLOCK, OW - o0);                            \
                for (int64_t i = 0; i < n; i++) {                                             \
                    int64_t wf = (o0 + i) * sw - pw;                                          \
                    while (wf < 0) wf += dw;                                                  \
                    m[i] = -INFINITY, best[i] = (K)(hf * W + wf);                             \
                }                                                                             \
                for (int64_t a = 0; a < g->kernel[0]; a++) {                                  \
                    const int64_t h = hs + a * dh;                                            \
                    if (h < 0 || h >= H) continue;                                            \
                    for (int64_t b = 0; b < g->kernel[1]; b++) {                              \
                        const int64_t shift = b * dw - pw;                                    \
                        const int64_t lo = clamp_i64(ceil_div_i64(-shift, sw), o0, o0 + n);   \
                        const int64_t hi = clamp_i64(ceil_div_i64(W - shift, sw), lo, o0 + n); \
                        const T *restrict row = x + h * W + shift + o0 * sw;                  \
                        const K base = (K)(h * W + shift + o0 * sw);                          \
                        for (int64_t i = lo - o0; i < hi - o0; i++) {                         \
                            const T v = row[i * sw], mm = m[i];                               \
                            const bool t = v > mm || v != v;                                  \
                            m[i] = t ? v : mm;                                                \
                            best[i] = t ? base + (K)(i * sw) : best[i];                       \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
                T *restrict yr = y + oh * OW + o0;                                            \
                for (int64_t i = 0; i < n; i++) yr[i] = m[i];                                 \
                if (ind)                                                                      \
                    for (int64_t i = 0; i < n; i++) ind[oh * OW + o0 + i] = best[i];          \
            }                                                                                 \
        }                                                                                     \
    }

DEFINE_POOL_ROWS(float, int32_t, INT32_MAX, f32)
DEFINE_POOL_ROWS(double, int64_t, INT64_MAX, f64)

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
    static const plane_kernel k = {max_rows_f32, max_rows_f64, "max_pool2d"};
    static const plane_kernel k2 = {max2x2_plane_f32, max2x2_plane_f64, "max_pool2d"};
    return run_planes(is_pool2x2(g) ? &k2 : &k, out, in, indices, in_plane(g), out_plane(g), g,
                      window_work(g));
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
