/*
 * cu_ops.cuh — launchers of the data, reduction and softmax kernels
 * (included once, by cu_kernels.cu); elementwise, where and indexing are
 * the shared GPU host layer's (src/backends/gpu/).
 *
 * Each entry is the CUDA twin of the OpenCL one (src/backends/opencl/
 * cl_data.c, cl_ops.c, cl_reduce.c): the same checks and messages, the
 * same ct_kmeta values and dimension merging, the same kernel and launch
 * shape. What differs is only what CUDA makes different: kernels are
 * launched directly with <<<>>> (no shared kernel objects, so no launch
 * lock), float64 always exists, and contiguous copies and byte-pattern
 * fills use cudaMemcpyAsync and cudaMemsetAsync on the current stream.
 */
#include <string.h>

#include "backends/cpu/cpu_internal.h"

/* Op names for messages, defined by the op front-ends (src/ops/); declared
 * here because core/internal.h (C11 atomics) cannot be compiled as C++. */
extern "C" {
const char *cti_unary_name(ct_unary_op op);
const char *cti_binary_name(ct_binary_op op);
}

static_assert(CT_K_MAX_DIMS == CT_MAX_DIMS, "ct_kmeta holds every dimension of a ct_kview");
static_assert(sizeof(k_long) == sizeof(int64_t) && sizeof(k_ulong) == sizeof(uint64_t),
              "kernel integers are 64-bit");

/* ---- helpers ------------------------------------------ */

/* The current stream of dev (also makes dev the thread's device). */
static ct_status cuops_stream(int dev, cudaStream_t *out) {
    *out = ct_cu_stream(dev);
    if (*out) return CT_OK;
    ct_status st = ct_last_status();
    return st != CT_OK ? st : ct_error_set(CT_ERR_DEVICE, "cuda:%d: no stream to launch on", dev);
}

/* A 1-D launch of n work items on the current stream of dev, in blocks of
 * CT_CU_THREADS (kernels check their index against n); n == 0 launches
 * nothing, as ct_cl_launch_1d. */
template <typename... Params, typename... Args>
static ct_status cuops_launch(int dev, void (*kernel)(Params...), const char *name, int64_t n,
                              Args... args) {
    if (n == 0) return CT_OK;
    cudaStream_t s;
    CT_TRY(cuops_stream(dev, &s));
    kernel<<<ct_cu_blocks(n), CT_CU_THREADS, 0, s>>>(args...);
    return ct_cu_launched(name);
}

/* The same with explicit blocks and threads (the work-group kernels). */
template <typename... Params, typename... Args>
static ct_status cuops_launch_groups(int dev, void (*kernel)(Params...), const char *name,
                                     unsigned blocks, unsigned threads, Args... args) {
    if (blocks == 0) return CT_OK;
    cudaStream_t s;
    CT_TRY(cuops_stream(dev, &s));
    kernel<<<blocks, threads, 0, s>>>(args...);
    return ct_cu_launched(name);
}

/* A kernel and its name for messages. */
#define CUOPS_KERNEL(k) k, #k

/* The kernel metadata of a view as it is (no dimension merging), as
 * ct_clops_meta / ct_cl_meta_of. */
static ct_kmeta cuops_meta(const ct_kview *v) {
    ct_kmeta m;
    memset(&m, 0, sizeof m);
    m.ndim = v->ndim;
    m.numel = 1;
    for (int d = 0; d < v->ndim; d++) {
        m.shape[d] = v->shape[d];
        m.strides[d] = v->strides[d];
        m.numel *= v->shape[d];
    }
    m.offset = v->offset;
    m.dtype = v->dtype;
    return m;
}

/* Metas of nv views of one shape (views[0]'s) with size-1 dims dropped and
 * neighbouring dims merged wherever every view is contiguous across them, so
 * kernels mostly index a single dimension (merged_metas of cl_data.c and
 * coalesced_metas of cl_ops.c, which compute the same). Returns numel. */
static int64_t cuops_merged_metas(const ct_kview *const *v, int nv, ct_kmeta *out) {
    for (int k = 0; k < nv; k++) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].offset = v[k]->offset;
        out[k].dtype = v[k]->dtype;
        out[k].numel = 1;
    }
    int n = 0;
    for (int d = 0; d < v[0]->ndim; d++) {
        int64_t size = v[0]->shape[d];
        for (int k = 0; k < nv; k++) out[k].numel *= size;
        if (size == 1) continue;
        bool merge = n > 0;
        for (int k = 0; k < nv && merge; k++) merge = out[k].strides[n - 1] == v[k]->strides[d] * size;
        for (int k = 0; k < nv; k++) {
            if (merge) {
                out[k].shape[n - 1] *= size;
                out[k].strides[n - 1] = v[k]->strides[d];
            } else {
                out[k].shape[n] = size;
                out[k].strides[n] = v[k]->strides[d];
            }
        }
        if (!merge) n++;
    }
    for (int k = 0; k < nv; k++) out[k].ndim = n;
    return out[0].numel;
}

static bool cuops_meta_is_contiguous(const ct_kmeta *m) {
    return m->ndim == 0 || (m->ndim == 1 && m->strides[0] == 1);
}

static int64_t cuops_view_numel(const ct_kview *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* A view's segment as the kernels take it (base pointer; the element
 * offset travels in the meta or as an argument). */
static k_uchar *cuops_buf(const ct_kview *v) { return (k_uchar *)v->data; }
/* Address of a view's element 0, for the runtime's byte-wise copies. */
static char *cuops_addr(const ct_kview *v) {
    return (char *)v->data + v->offset * (int64_t)ct_dtype_size(v->dtype);
}

/* ---- copy, fill ----------------------------------------------------------------------------- */

extern "C" ct_status ct_cu_copy(const ct_kview *dst, const ct_kview *src) {
    const int dev = dst->device;
    cudaStream_t s;
    CT_TRY(cuops_stream(dev, &s));
    const ct_kview *views[2] = {dst, src};
    ct_kmeta m[2];
    cuops_merged_metas(views, 2, m);
    if (m[0].numel == 0) return CT_OK;
    if (dst->dtype == src->dtype && cuops_meta_is_contiguous(&m[0]) && cuops_meta_is_contiguous(&m[1])) {
        size_t nbytes = (size_t)m[0].numel * ct_dtype_size(dst->dtype);
        CT_CU_TRY(cudaMemcpyAsync(cuops_addr(dst), cuops_addr(src), nbytes, cudaMemcpyDeviceToDevice, s));
        return CT_OK;
    }
    return cuops_launch(dev, CUOPS_KERNEL(ct_k_copy), m[0].numel, cuops_buf(dst), m[0],
                        (const k_uchar *)cuops_buf(src), m[1]);
}

/* Whether the first `size` bytes of a fill pattern are one repeated byte
 * (then cudaMemsetAsync writes it: the runtime has no 16/32/64-bit memset). */
static bool cuops_one_byte_pattern(const unsigned char *p, size_t size) {
    for (size_t i = 1; i < size; i++)
        if (p[i] != p[0]) return false;
    return true;
}

extern "C" ct_status ct_cu_fill(const ct_kview *dst, double value) {
    const int dev = dst->device;
    const ct_kview *views[1] = {dst};
    ct_kmeta m;
    cuops_merged_metas(views, 1, &m);
    if (m.numel == 0) return CT_OK;
    uint64_t bits = 0; /* the value in the dtype, converted by the CPU's rules */
    ct_cpu_store(&bits, dst->dtype, value);
    size_t es = ct_dtype_size(dst->dtype);
    unsigned char pattern[sizeof bits];
    memcpy(pattern, &bits, sizeof bits);
    if (cuops_meta_is_contiguous(&m) && cuops_one_byte_pattern(pattern, es)) {
        cudaStream_t s;
        CT_TRY(cuops_stream(dev, &s));
        CT_CU_TRY(cudaMemsetAsync(cuops_addr(dst), pattern[0], (size_t)m.numel * es, s));
        return CT_OK;
    }
    return cuops_launch(dev, CUOPS_KERNEL(ct_k_fill), m.numel, cuops_buf(dst), m, (k_ulong)bits);
}

/* ---- arange, random ----------------------------------------------------------------------------- */

extern "C" ct_status ct_cu_arange(const ct_kview *dst, double start, double step) {
    const int dev = dst->device;
    cudaStream_t s;
    CT_TRY(cuops_stream(dev, &s));
    k_long off = dst->offset, n = cuops_view_numel(dst);
    int dt = dst->dtype;
    if (n == 0) return CT_OK;
    if (ct_dtype_is_integral(dst->dtype, true) && start == (double)(int64_t)start && step == (double)(int64_t)step) {
        k_long s0 = (int64_t)start, st = (int64_t)step;
        return cuops_launch(dev, CUOPS_KERNEL(ct_k_arange_long), n, cuops_buf(dst), off, n, dt, s0, st);
    }
    return cuops_launch(dev, CUOPS_KERNEL(ct_k_arange_double), n, cuops_buf(dst), off, n, dt, start, step);
}

extern "C" ct_status ct_cu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset,
                                  double a, double b) {
    const int dev = dst->device;
    cudaStream_t s;
    CT_TRY(cuops_stream(dev, &s));
    /* lo and range as cpu_random.c computes them (its int64 difference
     * wraps; done here in uint64, where wrapping is defined) */
    k_long off = dst->offset, n = cuops_view_numel(dst), lo = (int64_t)a;
    k_ulong range = (uint64_t)(int64_t)b - (uint64_t)(int64_t)a, sd = seed, o = offset;
    int dt = dst->dtype, k = kind;
    if (n == 0) return CT_OK;
    CT_CHECK_STATUS(kind != CT_RAND_INT || range != 0, CT_ERR_INVALID_ARG,
                    "random_: expects 'from' to be less than 'to', but got from=%.17g >= to=%.17g", a, b);
    return cuops_launch(dev, CUOPS_KERNEL(ct_k_random), n, cuops_buf(dst), off, n, dt, k, sd, o, a, b, lo,
                        range);
}

/* Elementwise, where and indexing run through the shared GPU host layer
 * (src/backends/gpu/gpu_elementwise.c) and this backend's launch table
 * (cu_gpu.c). */

/* ---- reductions, softmax ------------------------------------------------------------------ */

/* The kernel shape is chosen as cl_reduce.c chooses it: a block per row for
 * long rows, a thread per row otherwise (src/kernels/reduce.kh, softmax.kh).
 * Every CUDA device is a GPU, so the block kernels are always eligible
 * (OpenCL keeps CPU devices on the per-row kernels). The block kernels keep
 * their trees in statically sized shared arrays, so they are launched with
 * no dynamic shared memory and at most that many threads. */

/* Rows at least this long get a block each... */
#define CUOPS_GROUP_MIN_ROW 256
/* ...unless there are this many rows, which keep the device busy anyway. */
#define CUOPS_GROUP_MAX_ROWS 2048
/* Threads of the block kernels (their shared arrays hold 256). */
#define CUOPS_GROUP_CAP 256
/* The block kernels loop over rows, so the launch needs no more blocks. */
#define CUOPS_MAX_GROUPS 4096

static_assert(CUOPS_GROUP_CAP <= RED_MAX_GROUP && CUOPS_GROUP_CAP <= SM_MAX_GROUP,
              "block kernels' shared arrays hold a whole block");

static bool cuops_use_groups(int64_t rows, int64_t row_len) {
    return row_len >= CUOPS_GROUP_MIN_ROW && rows < CUOPS_GROUP_MAX_ROWS;
}

static unsigned cuops_group_count(int64_t rows) {
    return (unsigned)(rows < CUOPS_MAX_GROUPS ? rows : CUOPS_MAX_GROUPS);
}

/* The largest power-of-two block size, at most `cap`, that kernel `func`
 * can run with on the current device (the trees need a power of two). */
static ct_status cuops_group_size(int dev, const void *func, const char *name, unsigned cap, unsigned *out) {
    CT_TRY(ct_cu_set_device(dev));
    cudaFuncAttributes attr;
    ct_status st = ct_cu_check(cudaFuncGetAttributes(&attr, func), name);
    if (st != CT_OK) return st;
    unsigned limit = attr.maxThreadsPerBlock > 0 && (unsigned)attr.maxThreadsPerBlock < cap
                         ? (unsigned)attr.maxThreadsPerBlock
                         : cap;
    unsigned p = 1;
    while (p * 2 <= limit) p *= 2;
    *out = p;
    return CT_OK;
}

extern "C" ct_status ct_cu_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index,
                                  const ct_kview *in, double param) {
    CT_CHECK_STATUS((unsigned)op < CT_RED_COUNT_, CT_ERR_INTERNAL, "reduce: unknown op %d", (int)op);
    const int dev = out->device;
    /* the [O, R] view as the kernels read it */
    ct_kmeta mi = cuops_meta(in);
    mi.ndim = 2;
    mi.shape[0] = in->ndim > 0 ? in->shape[0] : 1;
    mi.shape[1] = in->ndim > 1 ? in->shape[1] : 1;
    mi.strides[0] = in->ndim > 0 ? in->strides[0] : 0;
    mi.strides[1] = in->ndim > 1 ? in->strides[1] : 0;
    mi.numel = mi.shape[0] * mi.shape[1];
    const int64_t O = mi.shape[0], R = mi.shape[1];
    if (O == 0) return CT_OK;
    bool extreme = op == CT_RED_MAX || op == CT_RED_MIN || op == CT_RED_ARGMAX || op == CT_RED_ARGMIN;
    if (R == 0 && extreme)
        return ct_error_set(CT_ERR_INDEX, "%s: Expected reduction dim to have non-zero size",
                            op == CT_RED_MAX || op == CT_RED_ARGMAX ? "max" : "min");

    ct_kmeta mo = cuops_meta(out);
    ct_kmeta mx = out_index ? cuops_meta(out_index) : mo;
    k_uchar *bo = cuops_buf(out), *bx = out_index ? cuops_buf(out_index) : NULL;
    const k_uchar *bi = cuops_buf(in);
    const int cop = (int)op, has_index = out_index != NULL;
    const k_acc pa = param; /* k_acc is double: CUDA devices always have fp64 */
    if (!cuops_use_groups(O, R))
        return cuops_launch(dev, CUOPS_KERNEL(ct_k_reduce_rows), O, bo, mo, bx, mx, has_index, bi, mi, cop, pa);
    unsigned local;
    CT_TRY(cuops_group_size(dev, (const void *)ct_k_reduce_group, "cudaFuncGetAttributes (ct_k_reduce_group)",
                            CUOPS_GROUP_CAP, &local));
    return cuops_launch_groups(dev, CUOPS_KERNEL(ct_k_reduce_group), cuops_group_count(O), local, bo, mo, bx, mx,
                               has_index, bi, mi, cop, pa);
}

extern "C" ct_status ct_cu_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim,
                                   int64_t inner, bool log) {
    const int dev = out->device;
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype), CT_ERR_DTYPE, "%s: not implemented for '%s' on cuda",
                    log ? "log_softmax" : "softmax", ct_dtype_name(in->dtype));
    if (outer == 0 || dim == 0 || inner == 0) return CT_OK;
    ct_kmeta mo = cuops_meta(out), mi = cuops_meta(in);
    k_uchar *bo = cuops_buf(out);
    const k_uchar *bi = cuops_buf(in);
    k_long lo = outer, ld = dim, li = inner;
    const int want_log = log;
    if (inner == 1 && cuops_use_groups(outer, dim)) {
        unsigned local;
        CT_TRY(cuops_group_size(dev, (const void *)ct_k_softmax_group,
                                "cudaFuncGetAttributes (ct_k_softmax_group)", CUOPS_GROUP_CAP, &local));
        return cuops_launch_groups(dev, CUOPS_KERNEL(ct_k_softmax_group), cuops_group_count(outer), local, bo, mo,
                                   bi, mi, lo, ld, want_log);
    }
    return cuops_launch(dev, CUOPS_KERNEL(ct_k_softmax), outer * inner, bo, mo, bi, mi, lo, ld, li, want_log);
}
