/*
 * cpu_backend.c — the CPU backend's table, its memory functions and its
 * data-movement kernels (copy with conversion, fill, arange).
 *
 * The CPU is always compiled in and is the numerical reference for the other
 * backends. Memory comes from cpu_alloc.c (64-byte aligned so that vector
 * loads never straddle cache lines; large buffers cached); kernels in the
 * other cpu_*.c files implement the math.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/error.h"
#include "cpu_alloc.h"
#include "cpu_internal.h"
#include "cpu_vec.h"

/* Kernels implemented in the other cpu_*.c files. */
#include "cpu_elementwise.h"
#include "cpu_linalg.h"
#include "cpu_reduce.h"
ct_status ct_cpu_random(const ct_kview *, ct_random_kind, uint64_t, uint64_t, double, double);
extern const struct ct_backend_conv ct_cpu_conv_ops; /* cpu_conv.c */
extern const struct ct_backend_loss ct_cpu_loss_ops; /* cpu_loss.c */
extern const struct ct_backend_nn ct_cpu_nn_ops; /* cpu_nn.c */

/* ---- devices and memory ------------------------------------------------------- */

static int cpu_device_count(void) { return 1; }

static ct_status cpu_device_name(int dev, char *buf, size_t size) {
    snprintf(buf, size, "cpu");
    return CT_OK;
}

/* Total memory from sysconf; cores are the ones this process may use. */
static ct_status cpu_device_properties(int dev, ct_device_properties *out) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->total_memory = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    out->multi_processor_count = cores > 0 ? (int)cores : 1;
    out->is_host = true;
    return CT_OK;
}

static ct_status cpu_synchronize(int dev) { return CT_OK; }

/* Memory comes from the CPU allocator (cpu_alloc.c), which caches large buffers. */
static ct_status cpu_alloc(int dev, size_t nbytes, void **handle) { return ct_cpu_alloc(nbytes, handle); }
static void cpu_free(int dev, void *handle) { ct_cpu_free(handle); }
static void cpu_memory_stats(int dev, ct_memory_stats *out) { ct_cpu_alloc_stats(out); }
static void cpu_memory_reset_peak(int dev) { ct_cpu_alloc_reset_peak(); }
static void cpu_memory_reset_accumulated(int dev) { ct_cpu_alloc_reset_accumulated(); }
static void cpu_empty_cache(int dev) { ct_cpu_alloc_empty_cache(); }

static ct_status cpu_write(int dev, void *handle, size_t off, const void *src, size_t n) {
    memcpy((char *)handle + off, src, n);
    return CT_OK;
}

static ct_status cpu_read(int dev, void *handle, size_t off, void *dst, size_t n) {
    memcpy(dst, (const char *)handle + off, n);
    return CT_OK;
}

/* ---- copy with conversion ---------------------------------------------------------- */

typedef struct copy_ctx {
    ct_dtype dst, src;
} copy_ctx;

static void copy_same_inner(char **p, const int64_t *s, int64_t n, void *vctx) {
    size_t es = ct_dtype_size(((copy_ctx *)vctx)->dst);
    char *d = p[0], *x = p[1];
    if (s[0] == (int64_t)es && s[1] == (int64_t)es) {
        memcpy(d, x, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) *(uint8_t *)(d + i * s[0]) = *(uint8_t *)(x + i * s[1]); break;
    case 2: for (int64_t i = 0; i < n; i++) *(uint16_t *)(d + i * s[0]) = *(uint16_t *)(x + i * s[1]); break;
    case 4: for (int64_t i = 0; i < n; i++) *(uint32_t *)(d + i * s[0]) = *(uint32_t *)(x + i * s[1]); break;
    default: for (int64_t i = 0; i < n; i++) *(uint64_t *)(d + i * s[0]) = *(uint64_t *)(x + i * s[1]); break;
    }
}

/* float32 into float16/bfloat16 (autocast's casts): branch-free rounding,
 * with a contiguous loop of its own so that it vectorises. */
#define CT_NARROW_LOOP(CONV)                                                                       \
    do {                                                                                           \
        if (s[0] == 2 && s[1] == 4) {                                                              \
            uint16_t *d_ = (uint16_t *)(void *)p[0];                                               \
            const float *x_ = (const float *)(const void *)p[1];                                   \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d_[i] = CONV(x_[i]);               \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                *(uint16_t *)(void *)(p[0] + i * s[0]) = CONV(*(const float *)(const void *)(p[1] + i * s[1])); \
        }                                                                                          \
    } while (0)

static void copy_convert_inner(char **p, const int64_t *s, int64_t n, void *vctx) {
    const copy_ctx *c = vctx;
    if (c->dst == CT_FLOAT32 && (c->src == CT_BFLOAT16 || c->src == CT_FLOAT16) && s[0] == 4) {
        ct_cpu_gather_f32(p[1], n, s[1], c->src, (float *)(void *)p[0]);
    } else if (c->src == CT_FLOAT32 && c->dst == CT_BFLOAT16) {
        CT_NARROW_LOOP(ct_cpu_float_to_bf16_bits);
    } else if (c->src == CT_FLOAT32 && c->dst == CT_FLOAT16) {
        CT_NARROW_LOOP(ct_cpu_float_to_half_bits);
    } else if (c->dst == CT_FLOAT32 && c->src == CT_FLOAT64) {
        for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = (float)*(const double *)(p[1] + i * s[1]);
    } else if (c->dst == CT_FLOAT64 && c->src == CT_FLOAT32) {
        for (int64_t i = 0; i < n; i++) *(double *)(p[0] + i * s[0]) = *(const float *)(p[1] + i * s[1]);
    } else if (c->dst == CT_FLOAT32 && (c->src == CT_BOOL || c->src == CT_UINT8)) {
        for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = (float)*(const uint8_t *)(p[1] + i * s[1]);
    } else if (ct_dtype_is_integral(c->dst, true) && ct_dtype_is_integral(c->src, true)) {
        for (int64_t i = 0; i < n; i++)
            ct_cpu_store_i64(p[0] + i * s[0], c->dst, ct_cpu_load_i64(p[1] + i * s[1], c->src));
    } else {
        for (int64_t i = 0; i < n; i++) ct_cpu_store(p[0] + i * s[0], c->dst, ct_cpu_load(p[1] + i * s[1], c->src));
    }
}

static ct_status cpu_copy(const ct_kview *dst, const ct_kview *src) {
    copy_ctx c = {dst->dtype, src->dtype};
    const ct_kview *v[2] = {dst, src};
    ct_cpu_iter(v, 2, dst->dtype == src->dtype ? copy_same_inner : copy_convert_inner, &c, CT_CPU_GRAIN);
    return CT_OK;
}

/* ---- fill and arange ---------------------------------------------------------------- */

static void fill_inner(char **p, const int64_t *s, int64_t n, void *vctx) {
    const ct_kview *pattern = vctx; /* one element of the dst dtype */
    size_t es = ct_dtype_size(pattern->dtype);
    const char *val = pattern->data;
    switch (es) {
    case 1: { uint8_t v; memcpy(&v, val, 1); for (int64_t i = 0; i < n; i++) *(uint8_t *)(p[0] + i * s[0]) = v; } break;
    case 2: { uint16_t v; memcpy(&v, val, 2); for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * s[0]) = v; } break;
    case 4: { uint32_t v; memcpy(&v, val, 4); for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * s[0]) = v; } break;
    default: { uint64_t v; memcpy(&v, val, 8); for (int64_t i = 0; i < n; i++) *(uint64_t *)(p[0] + i * s[0]) = v; } break;
    }
}

static ct_status cpu_fill(const ct_kview *dst, double value) {
    uint64_t bits = 0;
    ct_cpu_store(&bits, dst->dtype, value);
    ct_kview pattern = {.data = &bits, .dtype = dst->dtype};
    const ct_kview *v[1] = {dst};
    ct_cpu_iter(v, 1, fill_inner, &pattern, CT_CPU_GRAIN);
    return CT_OK;
}

static ct_status cpu_arange(const ct_kview *dst, double start, double step) {
    int64_t n = ct_cpu_numel(dst);
    char *base = ct_cpu_base(dst);
    size_t es = ct_dtype_size(dst->dtype);
    if (ct_dtype_is_integral(dst->dtype, true) && start == (double)(int64_t)start && step == (double)(int64_t)step) {
        int64_t s0 = (int64_t)start, st = (int64_t)step;
        for (int64_t i = 0; i < n; i++) ct_cpu_store_i64(base + i * (int64_t)es, dst->dtype, s0 + i * st);
    } else {
        for (int64_t i = 0; i < n; i++) ct_cpu_store(base + i * (int64_t)es, dst->dtype, start + (double)i * step);
    }
    return CT_OK;
}

/* The CPU computes everything the core accepts (no supports hook). */
static const ct_backend_ops cpu_ops = {
    .copy = cpu_copy,
    .fill = cpu_fill,
    .arange = cpu_arange,
    .random = ct_cpu_random,
    .unary = ct_cpu_unary,
    .binary = ct_cpu_binary,
    .where = ct_cpu_where,
    .reduce = ct_cpu_reduce,
    .matmul = ct_cpu_matmul,
    .softmax = ct_cpu_softmax,
    .index_select = ct_cpu_index_select,
    .gather = ct_cpu_gather,
    .conv = &ct_cpu_conv_ops,
    .loss = &ct_cpu_loss_ops,
    .nn = &ct_cpu_nn_ops,
};

const ct_backend ct_cpu_backend = {
    .api_version = CT_BACKEND_API_VERSION,
    .name = "cpu",
    .type = CT_DEVICE_CPU,
    .ops = &cpu_ops,
    .device_count = cpu_device_count,
    .device_name = cpu_device_name,
    .device_properties = cpu_device_properties,
    .synchronize = cpu_synchronize,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .memory_stats = cpu_memory_stats,
    .memory_reset_peak = cpu_memory_reset_peak,
    .memory_reset_accumulated = cpu_memory_reset_accumulated,
    .empty_cache = cpu_empty_cache,
    .write = cpu_write,
    .read = cpu_read,
};
