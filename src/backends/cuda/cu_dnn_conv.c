/*
 * cu_dnn_conv.c — conv2d forward, backward-data and backward-filter through
 * cuDNN (the whole-convolution entries of backend_conv.h), with PyTorch's
 * algorithm policy:
 *  - cudnn.benchmark: cudnnFind*AlgorithmEx times the candidates once per
 *    configuration and the fastest acceptable one is cached;
 *  - otherwise cuDNN's heuristics (cudnnGet*Algorithm_v7) rank them, and
 *    the first acceptable one whose workspace fits is cached;
 *  - deterministic (cudnn.deterministic or use_deterministic_algorithms):
 *    only algorithms cuDNN reports as deterministic are acceptable; if none
 *    is, the documented deterministic defaults (IMPLICIT_GEMM forward,
 *    ALGO_1 for both backwards) are tried, then the call fails naming the
 *    convolution;
 *  - float32 without cudnn.allow_tf32 runs with CUDNN_FMA_MATH and accepts
 *    only FMA algorithms; float16/bfloat16 use tensor-op math.
 * The cache key is every value that changes the choice (PyTorch's
 * ConvolutionParams: device, dtype, sizes, padding, stride, dilation,
 * groups, deterministic, allow_tf32; plus benchmark). Sizes cuDNN cannot
 * index with 32 bits, and non-deterministic cases without an acceptable
 * algorithm, are declined to the im2col path.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/backends.h"
#include "ctorch/memory.h"
#include "cu_dnn.h"

typedef enum conv_kind { CONV_FWD, CONV_BWD_DATA, CONV_BWD_FILTER } conv_kind;

static const char *const kind_op[] = {"conv2d", "conv2d_backward", "conv2d_backward"};

/* ---- the autotuner's cache ----------------------------------------------------------------- */

typedef struct conv_key {
    int64_t kind, dev, dtype;
    int64_t x[4], w[4]; /* [N, C, H, W], [O, C/groups, kH, kW] */
    int64_t pad[2], stride[2], dilation[2], groups;
    int64_t deterministic, allow_tf32, benchmark;
} conv_key;

typedef struct conv_choice {
    int algo;
    cudnnMathType_t math;
    size_t workspace;
} conv_choice;

typedef struct cache_entry {
    conv_key key;
    conv_choice choice;
    struct cache_entry *next;
} cache_entry;

#define CACHE_BUCKETS 256
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *g_cache[CACHE_BUCKETS];
static int g_cache_count;

static unsigned key_hash(const conv_key *k) {
    const unsigned char *p = (const unsigned char *)k;
    unsigned h = 2166136261u; /* FNV-1a over the key's bytes (no padding: all int64) */
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ p[i]) * 16777619u;
    return h % CACHE_BUCKETS;
}

static bool cache_find(const conv_key *k, conv_choice *out) {
    bool found = false;
    pthread_mutex_lock(&g_cache_lock);
    for (cache_entry *e = g_cache[key_hash(k)]; e && !found; e = e->next) {
        if (memcmp(&e->key, k, sizeof *k) == 0) {
            *out = e->choice;
            found = true;
        }
    }
    pthread_mutex_unlock(&g_cache_lock);
    return found;
}

static void cache_insert(const conv_key *k, const conv_choice *c) {
    cache_entry *e = malloc(sizeof *e);
    if (!e) return; /* the choice is made again next time */
    e->key = *k;
    e->choice = *c;
    pthread_mutex_lock(&g_cache_lock);
    unsigned h = key_hash(k);
    e->next = g_cache[h];
    g_cache[h] = e;
    g_cache_count++;
    pthread_mutex_unlock(&g_cache_lock);
}

void ct_dnn_conv_cache_clear(void) {
    pthread_mutex_lock(&g_cache_lock);
    for (int i = 0; i < CACHE_BUCKETS; i++) {
        while (g_cache[i]) {
            cache_entry *e = g_cache[i];
            g_cache[i] = e->next;
            free(e);
        }
    }
    g_cache_count = 0;
    pthread_mutex_unlock(&g_cache_lock);
}

int ct_dnn_conv_cache_size(void) {
    pthread_mutex_lock(&g_cache_lock);
    int n = g_cache_count;
    pthread_mutex_unlock(&g_cache_lock);
    return n;
}

/* ---- one call: descriptors and operands ------------------------------------------------- */

typedef struct conv_call {
    conv_kind kind;
    const char *op;
    int dev;
    ct_dtype dtype;
    const ct_cudnn_api *api;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    /* forward: x, w -> y; backward data: w, dy -> dx; backward filter: x, dy -> dw */
    const void *in0, *in1;
    void *out;
    /* fused forward only: the bias [O] (or NULL) and whether relu follows */
    const void *bias;
    cudnnTensorDescriptor_t b;
    bool relu;
    conv_key key;
} conv_call;

static void release_call(conv_call *c) {
    if (!c->api) return;
    if (c->x) c->api->cudnnDestroyTensorDescriptor(c->x);
    if (c->y) c->api->cudnnDestroyTensorDescriptor(c->y);
    if (c->w) c->api->cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) c->api->cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->b) c->api->cudnnDestroyTensorDescriptor(c->b);
}

static cudnnMathType_t default_math(ct_dtype dt) {
    if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) return CUDNN_TENSOR_OP_MATH;
    if (dt == CT_FLOAT32 && !ct_backends_cudnn_get_allow_tf32()) return CUDNN_FMA_MATH;
    return CUDNN_DEFAULT_MATH;
}

#define DNN_TRY(c, call) CT_TRY(ct_dnn_status((call), (c)->op, #call))

/* Descriptors of x [N, C, H, W], w [O, C/g, kH, kW], y [N, O, OH, OW] and
 * the convolution; declines what cuDNN cannot index. */
static ct_status setup(conv_call *c, const ct_conv2d_geom *g, int64_t groups, int64_t out_ch) {
    const int64_t xs[4] = {g->batch, g->channels, g->in_size[0], g->in_size[1]};
    const int64_t ws[4] = {out_ch, g->channels / groups, g->kernel[0], g->kernel[1]};
    const int64_t ys[4] = {g->batch, out_ch, g->out_size[0], g->out_size[1]};
    const int64_t geo[7] = {g->padding[0], g->padding[1], g->stride[0], g->stride[1],
                            g->dilation[0], g->dilation[1], groups};
    cudnnDataType_t type;
    if (!ct_dnn_data_type(c->dtype, &type) || !ct_dnn_fits_tensor(xs, 4) ||
        !ct_dnn_fits_tensor(ws, 4) || !ct_dnn_fits_tensor(ys, 4) || !ct_dnn_fits_int(geo, 7))
        return CT_DNN_DECLINE;
    const ct_cudnn_api *api = c->api;
    CT_TRY(ct_dnn_tensor4d(api, c->op, type, xs[0], xs[1], xs[2], xs[3], &c->x));
    CT_TRY(ct_dnn_tensor4d(api, c->op, type, ys[0], ys[1], ys[2], ys[3], &c->y));
    DNN_TRY(c, api->cudnnCreateFilterDescriptor(&c->w));
    DNN_TRY(c, api->cudnnSetFilter4dDescriptor(c->w, type, CUDNN_TENSOR_NCHW, (int)ws[0], (int)ws[1],
                                               (int)ws[2], (int)ws[3]));
    DNN_TRY(c, api->cudnnCreateConvolutionDescriptor(&c->conv));
    const cudnnDataType_t compute = c->dtype == CT_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    DNN_TRY(c, api->cudnnSetConvolution2dDescriptor(c->conv, (int)geo[0], (int)geo[1], (int)geo[2],
                                                    (int)geo[3], (int)geo[4], (int)geo[5],
                                                    CUDNN_CROSS_CORRELATION, compute));
    DNN_TRY(c, api->cudnnSetConvolutionGroupCount(c->conv, (int)groups));
    DNN_TRY(c, api->cudnnSetConvolutionMathType(c->conv, default_math(c->dtype)));
    conv_key *k = &c->key;
    memset(k, 0, sizeof *k);
    k->kind = c->kind, k->dev = c->dev, k->dtype = c->dtype;
    memcpy(k->x, xs, sizeof xs);
    memcpy(k->w, ws, sizeof ws);
    k->pad[0] = geo[0], k->pad[1] = geo[1], k->stride[0] = geo[2], k->stride[1] = geo[3];
    k->dilation[0] = geo[4], k->dilation[1] = geo[5], k->groups = groups;
    k->deterministic = ct_dnn_deterministic();
    k->allow_tf32 = ct_backends_cudnn_get_allow_tf32();
    k->benchmark = ct_backends_cudnn_get_benchmark();
    return CT_OK;
}

/* ---- the three kinds behind one interface --------------------------------------------------- */

/* The fields the three cuDNN perf structs share. */
typedef struct algo_perf {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
} algo_perf;

#define MAX_ALGOS 16
#define COPY_PERF(dst, src)                                                                  \
    ((dst).algo = (int)(src).algo, (dst).status = (src).status, (dst).memory = (src).memory, \
     (dst).determinism = (src).determinism, (dst).math = (src).mathType)

/* Heuristic ranking (find == false) or timed ranking in workspace ws. */
static cudnnStatus_t rank_algos(conv_call *c, bool find, void *ws, size_t ws_size, algo_perf *out,
                                int *n) {
    const ct_cudnn_api *a = c->api;
    cudnnStatus_t s;
    *n = 0;
    if (c->kind == CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t r[MAX_ALGOS];
        s = find ? a->cudnnFindConvolutionForwardAlgorithmEx(c->h, c->x, c->in0, c->w, c->in1, c->conv,
                                                             c->y, c->out, MAX_ALGOS, n, r, ws, ws_size)
                 : a->cudnnGetConvolutionForwardAlgorithm_v7(c->h, c->x, c->w, c->conv, c->y, MAX_ALGOS,
                                                             n, r);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < *n; i++) COPY_PERF(out[i], r[i]);
    } else if (c->kind == CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t r[MAX_ALGOS];
        s = find ? a->cudnnFindConvolutionBackwardDataAlgorithmEx(c->h, c->w, c->in0, c->y, c->in1, c->conv,
                                                                  c->x, c->out, MAX_ALGOS, n, r, ws,
                                                                  ws_size)
                 : a->cudnnGetConvolutionBackwardDataAlgorithm_v7(c->h, c->w, c->y, c->conv, c->x,
                                                                  MAX_ALGOS, n, r);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < *n; i++) COPY_PERF(out[i], r[i]);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t r[MAX_ALGOS];
        s = find ? a->cudnnFindConvolutionBackwardFilterAlgorithmEx(c->h, c->x, c->in0, c->y, c->in1,
                                                                    c->conv, c->w, c->out, MAX_ALGOS, n,
                                                                    r, ws, ws_size)
                 : a->cudnnGetConvolutionBackwardFilterAlgorithm_v7(c->h, c->x, c->y, c->conv, c->w,
                                                                    MAX_ALGOS, n, r);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < *n; i++) COPY_PERF(out[i], r[i]);
    }
    if (*n > MAX_ALGOS) *n = MAX_ALGOS;
    return s;
}

static cudnnStatus_t workspace_size(conv_call *c, int algo, size_t *size) {
    const ct_cudnn_api *a = c->api;
    *size = 0;
    if (c->kind == CONV_FWD)
        return a->cudnnGetConvolutionForwardWorkspaceSize(c->h, c->x, c->w, c->conv, c->y,
                                                          (cudnnConvolutionFwdAlgo_t)algo, size);
    if (c->kind == CONV_BWD_DATA)
        return a->cudnnGetConvolutionBackwardDataWorkspaceSize(c->h, c->w, c->y, c->conv, c->x,
                                                               (cudnnConvolutionBwdDataAlgo_t)algo,
                                                               size);
    return a->cudnnGetConvolutionBackwardFilterWorkspaceSize(c->h, c->x, c->y, c->conv, c->w,
                                                             (cudnnConvolutionBwdFilterAlgo_t)algo,
                                                             size);
}

/* max(y, 0) in place; NaN stays NaN, as torch.relu. */
static ct_status relu_in_place(conv_call *c) {
    const ct_cudnn_api *a = c->api;
    cudnnActivationDescriptor_t act = NULL;
    ct_status st = ct_dnn_status(a->cudnnCreateActivationDescriptor(&act), c->op,
                                 "cudnnCreateActivationDescriptor");
    if (st == CT_OK)
        st = ct_dnn_status(a->cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
                           c->op, "cudnnSetActivationDescriptor");
    if (st == CT_OK)
        st = ct_dnn_status(a->cudnnActivationForward(c->h, act, ct_dnn_one(c->dtype), c->y, c->out,
                                                     ct_dnn_zero(c->dtype), c->y, c->out),
                           c->op, "cudnnActivationForward");
    if (act) a->cudnnDestroyActivationDescriptor(act);
    return st;
}

/* The forward: y = conv(x, w), or with a bias, y = bias broadcast first and
 * then y = conv(x, w) + 1 * y, so the sum of the products and the bias is
 * rounded once, in float32, as on the CPU (a bias added after the
 * convolution would round a float16/bfloat16 result twice, losing several
 * units in the last place where the bias cancels most of the sum). */
static ct_status execute_forward(conv_call *c, int algo, void *ws, size_t ws_size) {
    const ct_cudnn_api *a = c->api;
    const void *one = ct_dnn_one(c->dtype), *zero = ct_dnn_zero(c->dtype);
    if (c->bias)
        CT_TRY(ct_dnn_status(a->cudnnAddTensor(c->h, one, c->b, c->bias, zero, c->y, c->out), c->op,
                             "cudnnAddTensor"));
    CT_TRY(ct_dnn_status(a->cudnnConvolutionForward(c->h, one, c->x, c->in0, c->w, c->in1, c->conv,
                                                    (cudnnConvolutionFwdAlgo_t)algo, ws, ws_size,
                                                    c->bias ? one : zero, c->y, c->out),
                         c->op, "cudnnConvolutionForward"));
    return c->relu ? relu_in_place(c) : CT_OK;
}

static ct_status execute(conv_call *c, int algo, void *ws, size_t ws_size) {
    const ct_cudnn_api *a = c->api;
    const void *one = ct_dnn_one(c->dtype), *zero = ct_dnn_zero(c->dtype);
    if (c->kind == CONV_FWD) return execute_forward(c, algo, ws, ws_size);
    if (c->kind == CONV_BWD_DATA)
        return ct_dnn_status(
            a->cudnnConvolutionBackwardData(c->h, one, c->w, c->in0, c->y, c->in1, c->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_size, zero, c->x,
                                            c->out),
            c->op, "cudnnConvolutionBackwardData");
    return ct_dnn_status(
        a->cudnnConvolutionBackwardFilter(c->h, one, c->x, c->in0, c->y, c->in1, c->conv,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, ws_size, zero, c->w,
                                          c->out),
        c->op, "cudnnConvolutionBackwardFilter");
}

/* The documented deterministic default of each kind. */
static int deterministic_default(conv_kind kind) {
    if (kind == CONV_FWD) return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    if (kind == CONV_BWD_DATA) return CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

/* ---- choosing ------------------------------------------------------------------------------ */

/* What a workspace may take: the device's free memory plus what the
 * caching allocator holds unused (PyTorch counts both too). */
static size_t free_device_memory(int dev) {
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
        (void)cudaGetLastError();
        free_b = 0;
    }
    const int64_t cached = ct_memory_reserved(ct_device_cuda(dev)) - ct_memory_allocated(ct_device_cuda(dev));
    return free_b + (size_t)(cached > 0 ? cached : 0);
}

/* Devices before Ampere have no TF32, so there FMA-only also accepts the
 * default math cuDNN may report. */
static bool device_has_tf32(int dev) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return true;
    }
    return major >= 8;
}

static bool acceptable(const conv_call *c, const algo_perf *p) {
    if (p->status != CUDNN_STATUS_SUCCESS) return false;
    if (c->key.deterministic && p->determinism != CUDNN_DETERMINISTIC) return false;
    if (c->dtype == CT_FLOAT32 && !c->key.allow_tf32 && p->math != CUDNN_FMA_MATH)
        return p->math == CUDNN_DEFAULT_MATH && !device_has_tf32(c->dev);
    return true;
}

/* The exact workspace of algo under math (set on the descriptor). */
static ct_status exact_workspace(conv_call *c, int algo, cudnnMathType_t math, size_t *size) {
    DNN_TRY(c, c->api->cudnnSetConvolutionMathType(c->conv, math));
    return ct_dnn_status(workspace_size(c, algo, size), c->op, "cudnnGetConvolution*WorkspaceSize");
}

/* Timing needs a workspace: the largest any ranked algorithm wants, as far
 * as free memory allows (smaller ones are tried on failure). */
static ct_status timing_workspace(conv_call *c, const algo_perf *ranked, int n, ct_tensor **holder,
                                  void **ptr, size_t *size) {
    size_t sizes[MAX_ALGOS];
    int m = 0;
    const size_t limit = free_device_memory(c->dev);
    for (int i = 0; i < n; i++) {
        size_t s;
        if (ranked[i].status != CUDNN_STATUS_SUCCESS ||
            workspace_size(c, ranked[i].algo, &s) != CUDNN_STATUS_SUCCESS || s > limit)
            continue;
        sizes[m++] = s;
    }
    *holder = NULL, *ptr = NULL, *size = 0;
    while (m > 0) {
        int big = 0;
        for (int i = 1; i < m; i++)
            if (sizes[i] > sizes[big]) big = i;
        if (ct_dnn_workspace(c->dev, sizes[big], holder, ptr) == CT_OK) {
            *size = sizes[big];
            return CT_OK;
        }
        ct_clear_error(); /* a smaller one may fit */
        sizes[big] = sizes[--m];
    }
    return CT_OK; /* algorithms without a workspace can still be timed */
}

/* Rank the algorithms as the switches say. */
static ct_status ranked_algos(conv_call *c, algo_perf *out, int *n) {
    CT_TRY(ct_dnn_status(rank_algos(c, false, NULL, 0, out, n), c->op,
                         "cudnnGetConvolution*Algorithm_v7"));
    if (!c->key.benchmark) return CT_OK;
    ct_tensor *holder;
    void *ws;
    size_t ws_size;
    CT_TRY(timing_workspace(c, out, *n, &holder, &ws, &ws_size));
    ct_status st = ct_dnn_status(rank_algos(c, true, ws, ws_size, out, n), c->op,
                                 "cudnnFindConvolution*AlgorithmEx");
    ct_decref(holder);
    return st;
}

static ct_status no_deterministic_algorithm(const conv_call *c) {
    const conv_key *k = &c->key;
    return ct_error_set(
        CT_ERR_UNSUPPORTED,
        "%s: cuDNN has no deterministic algorithm for this convolution (input [%lld, %lld, %lld, "
        "%lld], weight [%lld, %lld, %lld, %lld], stride [%lld, %lld], padding [%lld, %lld], "
        "dilation [%lld, %lld], groups %lld, %s) and deterministic algorithms were requested "
        "(ct_backends_cudnn_set_deterministic / ct_use_deterministic_algorithms); "
        "ct_backends_cudnn_set_enabled(false) uses ctorch's own deterministic kernels",
        c->op, (long long)k->x[0], (long long)k->x[1], (long long)k->x[2], (long long)k->x[3],
        (long long)k->w[0], (long long)k->w[1], (long long)k->w[2], (long long)k->w[3],
        (long long)k->stride[0], (long long)k->stride[1], (long long)k->pad[0], (long long)k->pad[1],
        (long long)k->dilation[0], (long long)k->dilation[1], (long long)k->groups,
        ct_dtype_name(c->dtype));
}

/* The algorithm for this call: cached, or ranked and cached. */
static ct_status choose(conv_call *c, conv_choice *ch) {
    if (cache_find(&c->key, ch)) return CT_OK;
    algo_perf ranked[MAX_ALGOS];
    int n = 0;
    CT_TRY(ranked_algos(c, ranked, &n));
    const size_t limit = free_device_memory(c->dev);
    for (int i = 0; i < n; i++) {
        size_t ws;
        if (!acceptable(c, &ranked[i])) continue;
        ct_status st = exact_workspace(c, ranked[i].algo, ranked[i].math, &ws);
        if (st != CT_OK && st != CT_DNN_DECLINE) ct_clear_error(); /* rules this one out, nothing more */
        if (st != CT_OK || ws > limit) continue;
        conv_choice found = {ranked[i].algo, ranked[i].math, ws};
        *ch = found;
        cache_insert(&c->key, ch);
        return CT_OK;
    }
    if (!c->key.deterministic) return CT_DNN_DECLINE;
    const int algo = deterministic_default(c->kind);
    const cudnnMathType_t math = default_math(c->dtype);
    size_t ws;
    ct_status st = exact_workspace(c, algo, math, &ws);
    if (st != CT_OK) {
        if (st != CT_DNN_DECLINE) ct_clear_error(); /* replaced by the clearer message */
        return no_deterministic_algorithm(c);
    }
    conv_choice fallback = {algo, math, ws};
    *ch = fallback;
    cache_insert(&c->key, ch);
    return CT_OK;
}

/* ---- the entries ------------------------------------------------------------------------------ */

/* bias (forward only) may be NULL. */
static ct_status run_conv(conv_kind kind, const ct_kview *out, const ct_kview *in0, const ct_kview *in1,
                          const ct_kview *bias, bool relu, const ct_conv2d_geom *g, int64_t groups,
                          int64_t out_channels) {
    conv_call c;
    memset(&c, 0, sizeof c);
    c.api = ct_dnn_api();
    if (!c.api) return CT_DNN_DECLINE;
    c.kind = kind;
    c.op = kind_op[kind];
    c.dev = out->device;
    c.dtype = out->dtype;
    c.in0 = ct_dnn_ptr(in0), c.in1 = ct_dnn_ptr(in1), c.out = ct_dnn_ptr(out);
    c.bias = bias ? ct_dnn_ptr(bias) : NULL;
    c.relu = relu;
    ct_status st = setup(&c, g, groups, out_channels);
    cudnnDataType_t type;
    if (st == CT_OK && bias && ct_dnn_data_type(c.dtype, &type))
        st = ct_dnn_tensor4d(c.api, c.op, type, 1, out_channels, 1, 1, &c.b);
    if (st == CT_OK) st = ct_dnn_handle(c.dev, c.op, &c.h);
    conv_choice ch = {0, CUDNN_DEFAULT_MATH, 0};
    if (st == CT_OK) st = choose(&c, &ch);
    if (st == CT_OK) st = ct_dnn_status(c.api->cudnnSetConvolutionMathType(c.conv, ch.math), c.op,
                                        "cudnnSetConvolutionMathType");
    ct_tensor *holder = NULL;
    void *ws = NULL;
    if (st == CT_OK) st = ct_dnn_workspace(c.dev, ch.workspace, &holder, &ws);
    if (st == CT_OK) st = execute(&c, ch.algo, ws, ch.workspace);
    ct_decref(holder); /* enqueued: the block returns to this stream's cache */
    release_call(&c);
    return st;
}

ct_status ct_dnn_conv2d_forward(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                const ct_conv2d_geom *g, int64_t groups) {
    return run_conv(CONV_FWD, y, x, w, NULL, false, g, groups, w->shape[0]);
}

ct_status ct_dnn_conv2d_forward_fused(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                      const ct_kview *bias, bool relu, const ct_conv2d_geom *g,
                                      int64_t groups) {
    return run_conv(CONV_FWD, y, x, w, bias, relu, g, groups, w->shape[0]);
}

ct_status ct_dnn_conv2d_backward_input(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                       const ct_conv2d_geom *g, int64_t groups) {
    return run_conv(CONV_BWD_DATA, dx, w, dy, NULL, false, g, groups, w->shape[0]);
}

ct_status ct_dnn_conv2d_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *g, int64_t groups) {
    return run_conv(CONV_BWD_FILTER, dw, x, dy, NULL, false, g, groups, dw->shape[0]);
}
