/*
 * cpu_conv_fused.c — whole 2-D convolutions on the CPU: the forward, the
 * input gradient and the weight gradient of float32/float64 operands (the
 * backend's conv2d_* entries; contracts: cpu_conv.h, core/backend_conv.h).
 *
 * Why not the core's composition of im2col + one batched matmul: on a CPU
 * that composition permutes the output and the output gradient between
 * [N, O, L] and [O, N*L] through memory, and alternates OpenMP regions with
 * OpenBLAS's own thread pool once per chunk of images; on a small machine
 * the copies and the hand-overs between the two pools cost more than the
 * arithmetic.
 *
 * Here a chunk of images is one task: its column matrix is built in a
 * per-thread buffer that stays in cache, and single-threaded GEMMs compute
 * y = W @ cols, dcols = W^T @ dY (then col2im into dx) or dW += dY @ cols^T.
 * A chunk is one image when its output plane is large enough to make a good
 * product alone: the products then write and read its NCHW planes in place.
 * Small planes take several images per chunk, staged through an in-cache
 * [O, nb*L] buffer, so the weight is not repacked for a handful of columns.
 * One parallel region covers a layer, and chunks are handed out
 * dynamically, so a thread that the OS preempts does not stall the others.
 *
 * The weight gradient is summed per block of chunks into the block's own
 * buffer, then the blocks are added in order; chunk and block sizes depend
 * only on the shapes, so results do not depend on the thread count. While
 * chunks run on our threads OpenBLAS is switched to one thread (the setting
 * is process-wide, hence the reference count; a BLAS call that another
 * thread makes meanwhile just runs on one thread), and back afterwards. With
 * fewer chunks or blocks than threads (one thread, a batch of one, a weight
 * too large for many partial sums) the chunks run in turn and OpenBLAS
 * threads each product itself.
 */
#include <cblas.h>
#include <limits.h>
#ifdef CTORCH_HAVE_OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "cpu_conv.h"
#include "cpu_gemm.h"
#include "cpu_internal.h"

/* Weight-gradient partial sums: at most this many blocks of images, and
 * at most this many elements in all (large weights get fewer blocks). */
#define CT_CONV_MAX_BLOCKS 32
#define CT_CONV_PARTIAL_BUDGET ((int64_t)1 << 22)
/* Columns a product should have at least, where the batch allows. */
#define CT_CONV_MIN_COLS 256
/* Below this many multiply-adds a layer runs on one thread. */
#define CT_CONV_THREAD_WORK ((int64_t)1 << 18)

/* ---- OpenBLAS thread count while our threads run GEMMs ------------------------------ */

static pthread_mutex_t blas_mode_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_single_users;
static int blas_saved_threads;

/* OpenBLAS's pthreads build would otherwise hand each of our concurrent
 * calls to its own pool, where they queue behind one another. */
static void blas_single_begin(void) {
    pthread_mutex_lock(&blas_mode_lock);
    if (blas_single_users++ == 0) {
        blas_saved_threads = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_mode_lock);
}

static void blas_single_end(void) {
    pthread_mutex_lock(&blas_mode_lock);
    if (--blas_single_users == 0) openblas_set_num_threads(blas_saved_threads);
    pthread_mutex_unlock(&blas_mode_lock);
}

/* Only OpenBLAS has a pool of its own to stand aside: float64 products, and
 * float32 ones where OpenBLAS is the GEMM engine (cpu_gemm.c). */
static bool uses_blas_pool(ct_dtype dt) { return dt == CT_FLOAT64 || !ct_cpu_gemm_shares_openmp(); }

/* ---- shapes of one call ------------------------------------------------------------- */

typedef struct conv_dims {
    int64_t n, c, o, groups;
    int64_t cg, og, kk, kg; /* channels per group in and out; kH*kW; rows per group */
    int64_t hw, l;          /* input and output plane sizes */
    int64_t chunk, chunks;  /* images per product; products per batch */
    int64_t block, blocks;  /* images per partial sum of the weight gradient; sums */
    bool pointwise;         /* 1×1, stride 1, no padding: an image is its own cols */
    bool thread_chunks;     /* forward, input gradient: chunks over OpenMP threads */
    bool thread_blocks;     /* weight gradient: blocks over OpenMP threads */
} conv_dims;

static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The threads a parallel region here would get: one inside another region,
 * and one in a build without OpenMP (the pragmas are then ignored). */
static int region_threads(void) {
#ifdef CTORCH_HAVE_OPENMP
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Chunks: enough images that a product has CT_CONV_MIN_COLS columns (small
 * planes would otherwise repack the weight for a few columns each time),
 * yet at least 8 chunks for the threads where the batch allows. Blocks: whole
 * chunks, as many as CT_CONV_MAX_BLOCKS and CT_CONV_PARTIAL_BUDGET allow.
 * Both depend on the shapes only, so sums group the images the same way on
 * any thread count. With fewer chunks or blocks than threads, our threads
 * would idle: the loop then runs on one thread and OpenBLAS threads each
 * (then larger) product itself. */
static conv_dims dims_of(const ct_conv2d_geom *g, int64_t o, int64_t groups) {
    conv_dims d;
    d.n = g->batch, d.c = g->channels, d.o = o, d.groups = groups;
    d.cg = d.c / groups, d.og = o / groups;
    d.kk = g->kernel[0] * g->kernel[1];
    d.kg = d.cg * d.kk;
    d.hw = g->in_size[0] * g->in_size[1];
    d.l = g->out_size[0] * g->out_size[1];
    d.pointwise = d.kk == 1 && g->stride[0] == 1 && g->stride[1] == 1 && g->padding[0] == 0 &&
                  g->padding[1] == 0;
    const int64_t n = max64(d.n, 1);
    d.chunk = max64(1, min64(ceil_div64(CT_CONV_MIN_COLS, d.l), ceil_div64(n, 8)));
    d.chunks = ceil_div64(d.n, d.chunk);
    const int64_t max_blocks = max64(1, min64(CT_CONV_MAX_BLOCKS,
                                              CT_CONV_PARTIAL_BUDGET / max64(1, d.o * (d.kg + 1))));
    d.block = d.chunk * ceil_div64(ceil_div64(n, max_blocks), d.chunk);
    d.blocks = ceil_div64(d.n, d.block);
    const int threads = region_threads();
    const bool worth = d.n * d.o * d.kg * d.l >= CT_CONV_THREAD_WORK && threads > 1;
    d.thread_chunks = worth && d.chunks >= threads;
    d.thread_blocks = worth && d.blocks >= threads;
    return d;
}

/* ---- per-chunk kernels, once per type ----------------------------------------------- */

/* A chunk of nb images is laid out as the core's column matrix of nb
 * images: cols [C*kk, nb*L] and staged outputs or gradients [O, nb*L],
 * rows `ld` = nb*L apart. A chunk of one image needs no staging: products
 * read and write its NCHW planes in place. */
#define CT_DEFINE_CONV_FUSED(T, SUF, GEMM)                                                     \
    /* The block of cols of one contiguous image [C, H, W]: L columns of                       \
     * each row, rows ld apart; zeros where a tap reads padding. */                            \
    static void im2col_image_##SUF(const ct_conv2d_geom *g, const ct_conv_tap *taps,          \
                                   const T *im, T *restrict cols, int64_t ld) {               \
        const int64_t kk = g->kernel[0] * g->kernel[1], W = g->in_size[1];                    \
        const int64_t OH = g->out_size[0], OW = g->out_size[1];                                \
        const int64_t sh = g->stride[0], sw = g->stride[1], hw = g->in_size[0] * W;           \
        for (int64_t c = 0; c < g->channels; c++) {                                            \
            for (int64_t t = 0; t < kk; t++) {                                                 \
                const ct_conv_tap *tp = &taps[t];                                              \
                T *restrict dst = cols + (c * kk + t) * ld;                                    \
                const T *plane = im + c * hw + tp->shift_w;                                    \
                for (int64_t i = 0; i < tp->h0 * OW; i++) dst[i] = 0;                          \
                for (int64_t oh = tp->h0; oh < tp->h1; oh++) {                                 \
                    T *restrict d = dst + oh * OW;                                             \
                    const T *restrict s = plane + (oh * sh + tp->shift_h) * W;                 \
                    for (int64_t ow = 0; ow < tp->w0; ow++) d[ow] = 0;                         \
                    if (sw == 1)                                                               \
                        for (int64_t ow = tp->w0; ow < tp->w1; ow++) d[ow] = s[ow];            \
                    else                                                                       \
                        for (int64_t ow = tp->w0; ow < tp->w1; ow++) d[ow] = s[ow * sw];       \
                    for (int64_t ow = tp->w1; ow < OW; ow++) d[ow] = 0;                        \
                }                                                                              \
                for (int64_t i = tp->h1 * OW; i < OH * OW; i++) dst[i] = 0;                    \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* im [C, H, W] = the adjoint of im2col_image applied to cols; each pixel                  \
     * adds its taps in kernel order, as the core's col2im does. */                            \
    static void col2im_image_##SUF(const ct_conv2d_geom *g, const ct_conv_tap *taps,          \
                                   const T *cols, int64_t ld, T *restrict im) {               \
        const int64_t kk = g->kernel[0] * g->kernel[1], W = g->in_size[1];                    \
        const int64_t OW = g->out_size[1];                                                     \
        const int64_t sh = g->stride[0], sw = g->stride[1], hw = g->in_size[0] * W;           \
        memset(im, 0, (size_t)(g->channels * hw) * sizeof(T));                                 \
        for (int64_t c = 0; c < g->channels; c++) {                                            \
            for (int64_t t = 0; t < kk; t++) {                                                 \
                const ct_conv_tap *tp = &taps[t];                                              \
                const T *src = cols + (c * kk + t) * ld;                                       \
                T *plane = im + c * hw + tp->shift_w;                                          \
                for (int64_t oh = tp->h0; oh < tp->h1; oh++) {                                 \
                    T *restrict d = plane + (oh * sh + tp->shift_h) * W;                       \
                    const T *restrict s = src + oh * OW;                                       \
                    if (sw == 1) {                                                             \
                        _Pragma("omp simd") for (int64_t ow = tp->w0; ow < tp->w1; ow++)       \
                            d[ow] += s[ow];                                                    \
                    } else {                                                                   \
                        for (int64_t ow = tp->w0; ow < tp->w1; ow++) d[ow * sw] += s[ow];      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* The column matrix of images x[0, nb): x itself for one pointwise                        \
     * image, else built in cols. */                                                           \
    static const T *chunk_cols_##SUF(const conv_dims *d, const ct_conv2d_geom *g,             \
                                     const ct_conv_tap *taps, const T *x, int64_t nb,         \
                                     T *cols) {                                               \
        if (nb == 1 && d->pointwise) return x;                                                 \
        for (int64_t i = 0; i < nb; i++)                                                       \
            im2col_image_##SUF(g, taps, x + i * d->c * d->hw, cols + i * d->l, nb * d->l);     \
        return cols;                                                                           \
    }                                                                                          \
                                                                                               \
    /* dY of images [0, nb) as rows of ld = nb*L: gy itself for one image,                     \
     * else copied into stage. */                                                              \
    static const T *chunk_grad_##SUF(const conv_dims *d, const T *gy, int64_t nb, T *stage) {  \
        if (nb == 1) return gy;                                                                \
        const int64_t ld = nb * d->l;                                                          \
        for (int64_t i = 0; i < nb; i++)                                                       \
            for (int64_t o = 0; o < d->o; o++)                                                 \
                memcpy(stage + o * ld + i * d->l, gy + (i * d->o + o) * d->l,                  \
                       (size_t)d->l * sizeof(T));                                              \
        return stage;                                                                          \
    }                                                                                          \
                                                                                               \
    /* y[0, nb) = W @ cols: straight into one image's planes, or through                       \
     * the stage for several. */                                                               \
    static void forward_chunk_##SUF(const conv_dims *d, const ct_conv2d_geom *g,              \
                                    const ct_conv_tap *taps, const T *x, const T *w, T *y,    \
                                    int64_t nb, T *cols, T *stage) {                          \
        const int64_t ld = nb * d->l;                                                          \
        T *out = nb == 1 ? y : stage;                                                          \
        const T *cm = chunk_cols_##SUF(d, g, taps, x, nb, cols);                               \
        for (int64_t gi = 0; gi < d->groups; gi++)                                             \
            GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)d->og, (blasint)ld,       \
                 (blasint)d->kg, (T)1, w + gi * d->og * d->kg, (blasint)d->kg,                 \
                 cm + gi * d->kg * ld, (blasint)ld, (T)0, out + gi * d->og * ld, (blasint)ld); \
        if (nb == 1) return;                                                                   \
        for (int64_t i = 0; i < nb; i++)                                                       \
            for (int64_t o = 0; o < d->o; o++)                                                 \
                memcpy(y + (i * d->o + o) * d->l, stage + o * ld + i * d->l,                   \
                       (size_t)d->l * sizeof(T));                                              \
    }                                                                                          \
                                                                                               \
    /* dx[0, nb) = col2im(W^T @ dY); a pointwise image takes the product                       \
     * in place. */                                                                            \
    static void grad_input_chunk_##SUF(const conv_dims *d, const ct_conv2d_geom *g,           \
                                       const ct_conv_tap *taps, const T *gy, const T *w,      \
                                       T *dx, int64_t nb, T *cols, T *stage) {                \
        const int64_t ld = nb * d->l;                                                          \
        const T *dy = chunk_grad_##SUF(d, gy, nb, stage);                                      \
        const bool direct = nb == 1 && d->pointwise;                                           \
        T *dcols = direct ? dx : cols;                                                         \
        for (int64_t gi = 0; gi < d->groups; gi++)                                             \
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)d->kg, (blasint)ld,         \
                 (blasint)d->og, (T)1, w + gi * d->og * d->kg, (blasint)d->kg,                 \
                 dy + gi * d->og * ld, (blasint)ld, (T)0, dcols + gi * d->kg * ld,             \
                 (blasint)ld);                                                                 \
        if (!direct)                                                                           \
            for (int64_t i = 0; i < nb; i++)                                                   \
                col2im_image_##SUF(g, taps, dcols + i * d->l, ld, dx + i * d->c * d->hw);      \
    }                                                                                          \
                                                                                               \
    /* gw += dY @ cols^T over images [0, nb) (a block's partial sum). */                       \
    static void grad_weight_chunk_##SUF(const conv_dims *d, const ct_conv2d_geom *g,          \
                                        const ct_conv_tap *taps, const T *gy, const T *x,     \
                                        T *gw, int64_t nb, T *cols, T *stage) {               \
        const int64_t ld = nb * d->l;                                                          \
        const T *dy = chunk_grad_##SUF(d, gy, nb, stage);                                      \
        const T *cm = chunk_cols_##SUF(d, g, taps, x, nb, cols);                               \
        for (int64_t gi = 0; gi < d->groups; gi++)                                             \
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)d->og, (blasint)d->kg,      \
                 (blasint)ld, (T)1, dy + gi * d->og * ld, (blasint)ld, cm + gi * d->kg * ld,   \
                 (blasint)ld, (T)1, gw + gi * d->og * d->kg, (blasint)d->kg);                  \
    }                                                                                          \
                                                                                               \
    /* Per-thread buffers: cols [C*kk, chunk*L] and stage [O, chunk*L]. */                     \
    static T *scratch_##SUF(const conv_dims *d, T **stage) {                                   \
        const int64_t cols = d->c * d->kk * d->chunk * d->l;                                   \
        T *buf = malloc((size_t)max64(1, cols + d->o * d->chunk * d->l) * sizeof(T));          \
        *stage = buf ? buf + cols : NULL;                                                      \
        return buf;                                                                            \
    }                                                                                          \
                                                                                               \
    /* The chunks of the forward (`a` = x, `out` = y) or the input gradient                    \
     * (`a` = grad_y, `out` = grad_x) that fall to this thread: its share of                   \
     * the enclosing parallel region, or all of them outside one (an orphaned                  \
     * `omp for` runs on the calling thread alone).                                            \
     */                                                                                        \
    static void chunk_share_##SUF(const conv_dims *d, const ct_conv2d_geom *g,                \
                                  const ct_conv_tap *taps, bool forward, const T *a,          \
                                  const T *w, T *out, int *failed) {                          \
        const int64_t in_image = forward ? d->c * d->hw : d->o * d->l;                         \
        const int64_t out_image = forward ? d->o * d->l : d->c * d->hw;                        \
        T *stage, *cols = scratch_##SUF(d, &stage);                                            \
        if (!cols) {                                                                           \
            _Pragma("omp atomic write") *failed = 1;                                           \
        }                                                                                      \
        _Pragma("omp for schedule(dynamic, 1)")                                                \
        for (int64_t k = 0; k < d->chunks; k++) {                                              \
            const int64_t n0 = k * d->chunk, nb = min64(d->chunk, d->n - n0);                  \
            if (cols && forward)                                                               \
                forward_chunk_##SUF(d, g, taps, a + n0 * in_image, w, out + n0 * out_image,    \
                                    nb, cols, stage);                                          \
            else if (cols)                                                                     \
                grad_input_chunk_##SUF(d, g, taps, a + n0 * in_image, w,                       \
                                       out + n0 * out_image, nb, cols, stage);                 \
        }                                                                                      \
        free(cols);                                                                            \
    }                                                                                          \
                                                                                               \
    /* Every chunk, spread over our threads or, with too few chunks for them,                  \
     * in turn outside any parallel region, so that each product may thread                    \
     * itself on the same OpenMP pool (a product inside a one-thread region                    \
     * would start a nested team on fresh threads, which contend with the                      \
     * pool's spinning ones for the cores). */                                                 \
    static ct_status per_chunk_##SUF(const conv_dims *d, const ct_conv2d_geom *g,             \
                                     const ct_conv_tap *taps, bool forward, const T *a,       \
                                     const T *w, T *out) {                                    \
        int failed = 0;                                                                        \
        if (d->thread_chunks) {                                                                \
            _Pragma("omp parallel") chunk_share_##SUF(d, g, taps, forward, a, w, out, &failed); \
        } else {                                                                               \
            chunk_share_##SUF(d, g, taps, forward, a, w, out, &failed);                        \
        }                                                                                      \
        return failed ? CT_ERR_OOM : CT_OK;                                                    \
    }                                                                                          \
                                                                                               \
    /* This thread's share of the weight-gradient blocks (as chunk_share).                     \
     * Block b (images [b*block, ...)) adds its chunks into part + b*O*Kg                      \
     * (zeroed). */                                                                            \
    static void block_share_##SUF(const conv_dims *d, const ct_conv2d_geom *g,                \
                                  const ct_conv_tap *taps, const T *gy, const T *x, T *part,  \
                                  int *failed) {                                              \
        const int64_t count = d->o * d->kg;                                                    \
        T *stage, *cols = scratch_##SUF(d, &stage);                                            \
        if (!cols) {                                                                           \
            _Pragma("omp atomic write") *failed = 1;                                           \
        }                                                                                      \
        _Pragma("omp for schedule(dynamic, 1)")                                                \
        for (int64_t b = 0; b < d->blocks; b++) {                                              \
            const int64_t end = min64((b + 1) * d->block, d->n);                               \
            for (int64_t n0 = b * d->block; cols && n0 < end; n0 += d->chunk)                  \
                grad_weight_chunk_##SUF(d, g, taps, gy + n0 * d->o * d->l,                     \
                                        x + n0 * d->c * d->hw, part + b * count,               \
                                        min64(d->chunk, end - n0), cols, stage);               \
        }                                                                                      \
        free(cols);                                                                            \
    }                                                                                          \
                                                                                               \
    /* Every block (threaded as per_chunk), then gw = the blocks' sum, added                   \
     * in block order. */                                                                      \
    static ct_status grad_weight_##SUF(const conv_dims *d, const ct_conv2d_geom *g,           \
                                       const ct_conv_tap *taps, const T *gy, const T *x,      \
                                       T *part, T *gw) {                                      \
        const int64_t count = d->o * d->kg;                                                    \
        int failed = 0;                                                                        \
        if (d->thread_blocks) {                                                                \
            _Pragma("omp parallel") block_share_##SUF(d, g, taps, gy, x, part, &failed);       \
        } else {                                                                               \
            block_share_##SUF(d, g, taps, gy, x, part, &failed);                               \
        }                                                                                      \
        if (failed) return CT_ERR_OOM;                                                         \
        _Pragma("omp parallel for if (count * d->blocks >= CT_CPU_GRAIN)")                     \
        for (int64_t i = 0; i < count; i++) {                                                  \
            T acc = part[i];                                                                   \
            for (int64_t b = 1; b < d->blocks; b++) acc += part[b * count + i];                \
            gw[i] = acc;                                                                       \
        }                                                                                      \
        return CT_OK;                                                                          \
    }

CT_DEFINE_CONV_FUSED(float, f32, ct_cpu_cblas_sgemm)
CT_DEFINE_CONV_FUSED(double, f64, cblas_dgemm)

/* ---- entry points -------------------------------------------------------------------- */

static void *base_of(const ct_kview *v) { return (void *)ct_cpu_base(v); }

/* The checks every entry makes: *declined (CT_ERR_UNSUPPORTED, no error
 * set) for dtypes other than float32/float64, or shapes BLAS cannot take;
 * the core then takes its im2col path. */
static bool declines(const ct_kview *v, const conv_dims *d) {
    if (v->dtype != CT_FLOAT32 && v->dtype != CT_FLOAT64) return true;
    return d->chunk * d->l > INT_MAX || d->kg > INT_MAX || d->og > INT_MAX;
}

/* Runs the forward or the input gradient; op names the entry in errors. */
static ct_status run_chunks(const char *op, const conv_dims *d, const ct_conv2d_geom *g,
                            bool forward, const ct_kview *a, const ct_kview *w,
                            const ct_kview *out) {
    ct_conv_tap *taps = ct_cpu_conv_taps(g);
    if (!taps) return ct_error_set(CT_ERR_OOM, "%s: out of memory", op);
    const bool stand_aside = d->thread_chunks && uses_blas_pool(a->dtype);
    if (stand_aside) blas_single_begin();
    ct_status st;
    if (a->dtype == CT_FLOAT32)
        st = per_chunk_f32(d, g, taps, forward, base_of(a), base_of(w), base_of(out));
    else
        st = per_chunk_f64(d, g, taps, forward, base_of(a), base_of(w), base_of(out));
    if (stand_aside) blas_single_end();
    free(taps);
    return st == CT_OK ? CT_OK : ct_error_set(st, "%s: out of memory for a column matrix", op);
}

ct_status ct_cpu_conv2d_forward(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                const ct_conv2d_geom *g, int64_t groups) {
    const conv_dims d = dims_of(g, y->shape[1], groups);
    if (declines(x, &d)) return CT_ERR_UNSUPPORTED;
    if (ct_cpu_numel(y) == 0) return CT_OK;
    if (d.kg == 0) { /* no input channels: y = 0 */
        memset(base_of(y), 0, (size_t)ct_cpu_numel(y) * ct_dtype_size(y->dtype));
        return CT_OK;
    }
    return run_chunks("conv2d", &d, g, true, x, w, y);
}

ct_status ct_cpu_conv2d_backward_input(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                       const ct_conv2d_geom *g, int64_t groups) {
    const conv_dims d = dims_of(g, dy->shape[1], groups);
    if (declines(dy, &d)) return CT_ERR_UNSUPPORTED;
    if (ct_cpu_numel(dx) == 0) return CT_OK;
    if (d.og == 0) { /* no output channels: dx = 0 */
        memset(base_of(dx), 0, (size_t)ct_cpu_numel(dx) * ct_dtype_size(dx->dtype));
        return CT_OK;
    }
    return run_chunks("conv2d_backward", &d, g, false, dy, w, dx);
}

ct_status ct_cpu_conv2d_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *g, int64_t groups) {
    const conv_dims d = dims_of(g, dy->shape[1], groups);
    if (declines(dy, &d)) return CT_ERR_UNSUPPORTED;
    const int64_t count = ct_cpu_numel(dw);
    if (count == 0) return CT_OK;
    const size_t esz = ct_dtype_size(dy->dtype);
    if (d.n == 0) {
        memset(base_of(dw), 0, (size_t)count * esz);
        return CT_OK;
    }
    void *part = calloc((size_t)(d.blocks * count), esz);
    ct_conv_tap *taps = ct_cpu_conv_taps(g);
    ct_status st = part && taps ? CT_OK : CT_ERR_OOM;
    if (st == CT_OK) {
        const bool stand_aside = d.thread_blocks && uses_blas_pool(dy->dtype);
        if (stand_aside) blas_single_begin();
        if (dy->dtype == CT_FLOAT32)
            st = grad_weight_f32(&d, g, taps, base_of(dy), base_of(x), part, base_of(dw));
        else
            st = grad_weight_f64(&d, g, taps, base_of(dy), base_of(x), part, base_of(dw));
        if (stand_aside) blas_single_end();
    }
    free(part);
    free(taps);
    return st == CT_OK ? CT_OK
                       : ct_error_set(st, "conv2d_backward: out of memory for the weight gradient");
}
