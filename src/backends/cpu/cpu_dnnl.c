/*
 * cpu_dnnl.c — float32 and bfloat16 convolutions on the CPU through oneDNN: forward,
 * input gradient and weight gradient (the backend's conv2d_* entries try
 * these first; cpu_conv.c). Why: oneDNN's JIT convolutions run in the
 * blocked layouts the vector units want (nChw8c on AVX2, nChw16c on
 * AVX-512, NHWC with AMX) and reach 1.5–3× the im2col + GEMM path on the
 * layers CNNs have (docs/performance.md has the figures).
 *
 * ctorch tensors stay NCHW: each call reorders its operands into the layout
 * oneDNN chose for that shape and the result back, which costs a few
 * percent of the convolution (the layouts are memory-bound copies) and
 * keeps every other op, view and the autograd engine unchanged.
 *
 * bfloat16 tensors ride the same reorders where the CPU has AMX: the
 * convolution runs in bfloat16 with float32 sums, in the NHWC-like layouts
 * the tiles want. Elsewhere (and for float16) the operands are widened to
 * float32 first and the float32 kernels run (ct_cpu_dnnl_bf16_native).
 * Either way each output is rounded once, from a float32 sum, as
 * PyTorch's are.
 *
 * A plan — the convolution primitive for one shape and direction, the
 * layouts it chose and the reorders in and out — is built once (oneDNN
 * JIT-compiles kernels, 3–30 ms) and kept in a small cache; plans are
 * reference-counted so that one being evicted is destroyed only after the
 * calls running it return. Scratch buffers belong to each call (oneDNN's
 * "user" scratchpad mode), so two threads may run one plan at once.
 *
 * Declining (CT_ERR_UNSUPPORTED, no error set) hands the call to the
 * im2col path (cpu_conv_fused.c): oneDNN absent or not the engine for this
 * CPU (cpu_gemm.c) or switched off (ct_backends_mkldnn_set_enabled), dtypes
 * other than float32/bfloat16/float16, layers with few channels, short sums or tiny outputs, geometries oneDNN cannot
 * express (an output size that would need negative right padding) or has
 * no direct kernel for (it would fall back to its own GEMM-based or
 * reference convolution), and
 * deterministic algorithms switched on — oneDNN's weight gradient sums
 * per-thread partials, so its bits may change with the thread count, while
 * the im2col path sums in an order fixed by the shapes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "cpu_conv.h"
#include "cpu_dnnl.h"
#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "cpu_vec.h"
#include "ctorch/backends.h"

#ifndef CTORCH_HAVE_DNNL

int64_t ct_cpu_dnnl_conv_runs(void) { return 0; }
void ct_cpu_dnnl_set_bf16_mode(ct_cpu_bf16_mode mode) { (void)mode; }
bool ct_cpu_dnnl_bf16_native(void) { return false; }
bool ct_cpu_dnnl_bf16_forced(void) { return false; }

ct_status ct_cpu_dnnl_conv2d(ct_cpu_conv_dir dir, const ct_kview *out, const ct_kview *in0,
                             const ct_kview *in1, const ct_kview *bias, bool relu,
                             const ct_conv2d_geom *g, int64_t groups) {
    (void)dir, (void)out, (void)in0, (void)in1, (void)bias, (void)relu, (void)g, (void)groups;
    return CT_ERR_UNSUPPORTED;
}

#else

#include <oneapi/dnnl/dnnl.h>

/* Below these the im2col kernels win: oneDNN's blocked kernels pad
 * channels to the vector width, so a layer with few output channels, or
 * with a short sum per output (input channels per group × kernel taps),
 * wastes most of each vector: the W4 stem (1 channel, 3×3: 9 terms) ran at
 * 72 GFLOP/s on oneDNN and 100 on im2col, while ResNet-18's stem (3
 * channels, 7×7: 147 terms) ran at 189 against 128 (bench/bench_conv). */
#define CT_DNNL_MIN_OUT_CHANNELS 16
#define CT_DNNL_MIN_SUM_TERMS 64
/* Output positions per image below which the im2col kernels win: on the
 * ResNet-18 layers with 2×2 and 1×1 outputs oneDNN's forward ran at 55–97
 * GFLOP/s where im2col ran at 90–134, and its weight gradient falls back to
 * GEMM-based kernels (bench/bench_conv on AVX2; docs/performance.md). */
#define CT_DNNL_MIN_OUTPUT_POSITIONS 16

/* Plans kept at once: a ResNet-18 training step uses about 30. */
#define CT_DNNL_PLANS 64

typedef struct conv_key {
    int64_t dir, n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups;
    int64_t dtype;   /* the tensors' dnnl_data_type_t */
    int64_t compute; /* the convolution's (ct_cpu_dnnl_compute_type) */
    int64_t bias; /* forward only: 1 when the bias is added inside */
    int64_t relu; /* forward only: 1 when max(y, 0) is applied inside */
} conv_key;

/* Operands in argument order: two inputs, then the output. */
enum { OP_IN0, OP_IN1, OP_OUT, OP_COUNT };

typedef struct conv_plan {
    conv_key key;
    int refs;             /* callers running it, plus one while cached */
    bool declined;        /* oneDNN has no direct kernel for it: remembered, not retried */
    dnnl_primitive_t conv;
    int arg[OP_COUNT];    /* DNNL_ARG_* of each operand */
    dnnl_memory_desc_t user_md[OP_COUNT], inner_md[OP_COUNT], scratch_md, bias_md;
    dnnl_primitive_t reorder[OP_COUNT]; /* user→inner for inputs, inner→user for the output; NULL: same layout */
} conv_plan;

static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;
static atomic_llong runs;
static atomic_int bf16_mode = CT_CPU_BF16_AUTO;
static dnnl_engine_t engine;
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static conv_plan *plans[CT_DNNL_PLANS];
static int next_victim;

static void create_engine(void) {
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

static void plan_destroy(conv_plan *p) {
    if (!p) return;
    dnnl_primitive_destroy(p->conv);
    for (int i = 0; i < OP_COUNT; i++) dnnl_primitive_destroy(p->reorder[i]);
    free(p);
}

static void plan_release(conv_plan *p) {
    pthread_mutex_lock(&plans_lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&plans_lock);
    if (last) plan_destroy(p);
}

/* ---- building a plan ------------------------------------------------------------------ */

static bool md_of(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims, int64_t dt,
                  dnnl_format_tag_t tag) {
    return dnnl_memory_desc_init_by_tag(md, nd, dims, (dnnl_data_type_t)dt, tag) == dnnl_success;
}

/* The reorder from `from` to `to`, or NULL (in *r) when they are the same layout. */
static bool make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                         dnnl_primitive_t *r) {
    *r = NULL;
    if (dnnl_memory_desc_equal(from, to)) return true;
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL) != dnnl_success)
        return false;
    bool ok = dnnl_primitive_create(r, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* The descriptors of one direction: user layouts (NCHW, OIHW or GOIHW) in
 * the tensors' dtype, and "any" (oneDNN chooses) layouts in the compute
 * type, in the order of the descriptors' init functions: src, weights, dst.
 * The weight gradient is kept in float32 inside (any_dwei) and rounded once
 * on the way out; the bias is always float32. */
typedef struct conv_mds {
    dnnl_memory_desc_t user_src, user_wei, user_dst, any_src, any_wei, any_dst, any_dwei, bias;
    dnnl_dims_t strides, dilates, pad_l, pad_r;
} conv_mds;

static bool describe(const conv_key *k, conv_mds *m) {
    const dnnl_dims_t src = {k->n, k->c, k->h, k->w}, dst = {k->n, k->o, k->oh, k->ow};
    const dnnl_dims_t wei_g = {k->groups, k->o / k->groups, k->c / k->groups, k->kh, k->kw};
    const dnnl_dims_t wei = {k->o, k->c / k->groups, k->kh, k->kw};
    const bool grouped = k->groups > 1;
    m->strides[0] = k->sh, m->strides[1] = k->sw;
    m->dilates[0] = k->dh - 1, m->dilates[1] = k->dw - 1;
    m->pad_l[0] = k->ph, m->pad_l[1] = k->pw;
    /* PyTorch rounds the output size down; oneDNN wants the right padding
     * that makes the sizes agree exactly. */
    m->pad_r[0] = (k->oh - 1) * k->sh + (k->kh - 1) * k->dh + 1 - k->h - k->ph;
    m->pad_r[1] = (k->ow - 1) * k->sw + (k->kw - 1) * k->dw + 1 - k->w - k->pw;
    if (m->pad_r[0] < 0 || m->pad_r[1] < 0) return false;
    const dnnl_dims_t bias = {k->o};
    const int wnd = grouped ? 5 : 4;
    const dnnl_dim_t *wdims = grouped ? wei_g : wei;
    const int64_t dt = k->dtype, ct = k->compute, any = dnnl_format_tag_any;
    return md_of(&m->bias, 1, bias, dnnl_f32, dnnl_x) &&
           md_of(&m->user_src, 4, src, dt, dnnl_nchw) && md_of(&m->user_dst, 4, dst, dt, dnnl_nchw) &&
           md_of(&m->user_wei, wnd, wdims, dt, grouped ? dnnl_goihw : dnnl_oihw) &&
           md_of(&m->any_src, 4, src, ct, any) && md_of(&m->any_dst, 4, dst, ct, any) &&
           md_of(&m->any_wei, wnd, wdims, ct, any) && md_of(&m->any_dwei, wnd, wdims, dnnl_f32, any);
}

/* The forward primitive descriptor: the plan itself for a forward call,
 * the hint oneDNN needs to build either backward one. */
static dnnl_primitive_desc_t forward_pd(conv_mds *m, bool bias, const_dnnl_primitive_attr_t attr) {
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct,
                                                   &m->any_src, &m->any_wei, bias ? &m->bias : NULL,
                                                   &m->any_dst,
                                                   m->strides, m->dilates, m->pad_l,
                                                   m->pad_r) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

static dnnl_primitive_desc_t direction_pd(int dir, conv_mds *m, const_dnnl_primitive_attr_t attr,
                                          const_dnnl_primitive_desc_t hint) {
    dnnl_convolution_desc_t cd;
    dnnl_status_t s;
    if (dir == CT_CPU_CONV_BACKWARD_INPUT)
        s = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &m->any_src,
                                                             &m->any_wei, &m->any_dst, m->strides,
                                                             m->dilates, m->pad_l, m->pad_r);
    else
        s = dnnl_dilated_convolution_backward_weights_desc_init(
            &cd, dnnl_convolution_direct, &m->any_src, &m->any_dwei, NULL, &m->any_dst, m->strides,
            m->dilates, m->pad_l, m->pad_r);
    dnnl_primitive_desc_t pd = NULL;
    if (s != dnnl_success || dnnl_primitive_desc_create(&pd, &cd, attr, engine, hint) != dnnl_success)
        return NULL;
    return pd;
}

/* Which layout each operand has in the user's call and inside oneDNN. */
static void bind_operands(conv_plan *p, const conv_mds *m, const_dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *user[OP_COUNT];
    dnnl_query_t query[OP_COUNT];
    switch (p->key.dir) {
    case CT_CPU_CONV_FORWARD: /* in0 = x, in1 = w, out = y */
        user[OP_IN0] = &m->user_src, user[OP_IN1] = &m->user_wei, user[OP_OUT] = &m->user_dst;
        query[OP_IN0] = dnnl_query_src_md, query[OP_IN1] = dnnl_query_weights_md;
        query[OP_OUT] = dnnl_query_dst_md;
        p->arg[OP_IN0] = DNNL_ARG_SRC, p->arg[OP_IN1] = DNNL_ARG_WEIGHTS, p->arg[OP_OUT] = DNNL_ARG_DST;
        break;
    case CT_CPU_CONV_BACKWARD_INPUT: /* in0 = dy, in1 = w, out = dx */
        user[OP_IN0] = &m->user_dst, user[OP_IN1] = &m->user_wei, user[OP_OUT] = &m->user_src;
        query[OP_IN0] = dnnl_query_diff_dst_md, query[OP_IN1] = dnnl_query_weights_md;
        query[OP_OUT] = dnnl_query_diff_src_md;
        p->arg[OP_IN0] = DNNL_ARG_DIFF_DST, p->arg[OP_IN1] = DNNL_ARG_WEIGHTS;
        p->arg[OP_OUT] = DNNL_ARG_DIFF_SRC;
        break;
    default: /* weight gradient: in0 = dy, in1 = x, out = dw */
        user[OP_IN0] = &m->user_dst, user[OP_IN1] = &m->user_src, user[OP_OUT] = &m->user_wei;
        query[OP_IN0] = dnnl_query_diff_dst_md, query[OP_IN1] = dnnl_query_src_md;
        query[OP_OUT] = dnnl_query_diff_weights_md;
        p->arg[OP_IN0] = DNNL_ARG_DIFF_DST, p->arg[OP_IN1] = DNNL_ARG_SRC;
        p->arg[OP_OUT] = DNNL_ARG_DIFF_WEIGHTS;
        break;
    }
    for (int i = 0; i < OP_COUNT; i++) {
        p->user_md[i] = *user[i];
        p->inner_md[i] = *dnnl_primitive_desc_query_md(pd, query[i], 0);
    }
    p->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->bias_md = m->bias;
}

/* A direct JIT convolution, not oneDNN's own GEMM-based or reference
 * fallback: for those (the weight gradient of layers with 1×1 or 2×2
 * outputs on AVX2: 6–64 GFLOP/s) ctorch's im2col kernels are faster.
 * Tests that force bfloat16 compute on a CPU without it take any kernel,
 * so that the plumbing around a bfloat16 convolution runs everywhere. */
static bool direct_kernel(const_dnnl_primitive_desc_t pd) {
    if (ct_cpu_dnnl_bf16_forced()) return true;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        return false;
    return strstr(impl, "gemm") == NULL && strstr(impl, "ref") == NULL;
}

/* A plan that declines every call: kept in the cache so that a shape oneDNN
 * cannot serve well is not rebuilt on every call. */
static conv_plan *declined_plan(const conv_key *k) {
    conv_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->key = *k;
    p->declined = true;
    p->refs = 1;
    return p;
}

/* max(y, 0) applied by the convolution's kernel as it writes y. */
static bool set_relu(dnnl_primitive_attr_t attr) {
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success) return false;
    bool ok = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) == dnnl_success &&
              dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    dnnl_post_ops_destroy(po);
    return ok;
}

static conv_plan *plan_build(const conv_key *k) {
    conv_mds m;
    if (!describe(k, &m)) return declined_plan(k);
    conv_plan *p = calloc(1, sizeof *p);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    bool ok = p && dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
              (!k->relu || set_relu(attr));
    if (ok) {
        p->key = *k;
        fwd = forward_pd(&m, k->bias != 0, attr);
        pd = k->dir == CT_CPU_CONV_FORWARD ? fwd : fwd ? direction_pd((int)k->dir, &m, attr, fwd) : NULL;
        ok = pd != NULL && direct_kernel(pd);
    }
    if (ok) {
        bind_operands(p, &m, pd);
        ok = dnnl_primitive_create(&p->conv, pd) == dnnl_success &&
             make_reorder(&p->user_md[OP_IN0], &p->inner_md[OP_IN0], &p->reorder[OP_IN0]) &&
             make_reorder(&p->user_md[OP_IN1], &p->inner_md[OP_IN1], &p->reorder[OP_IN1]) &&
             make_reorder(&p->inner_md[OP_OUT], &p->user_md[OP_OUT], &p->reorder[OP_OUT]);
    }
    if (pd && pd != fwd) dnnl_primitive_desc_destroy(pd);
    if (fwd) dnnl_primitive_desc_destroy(fwd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) {
        plan_destroy(p);
        return declined_plan(k);
    }
    p->refs = 1;
    return p;
}

/* The cached plan for `k` with a reference for the caller, building it on
 * a miss (a declined plan when oneDNN should not run this convolution);
 * NULL only when out of memory. */
static conv_plan *plan_acquire(const conv_key *k) {
    pthread_mutex_lock(&plans_lock);
    for (int i = 0; i < CT_DNNL_PLANS; i++)
        if (plans[i] && memcmp(&plans[i]->key, k, sizeof *k) == 0) {
            plans[i]->refs++;
            pthread_mutex_unlock(&plans_lock);
            return plans[i];
        }
    pthread_mutex_unlock(&plans_lock);
    conv_plan *p = plan_build(k); /* outside the lock: JIT compilation takes milliseconds */
    if (!p) return NULL;
    conv_plan *evicted = NULL;
    pthread_mutex_lock(&plans_lock);
    int slot = -1;
    for (int i = 0; i < CT_DNNL_PLANS && slot < 0; i++)
        if (!plans[i]) slot = i;
    if (slot < 0) {
        slot = next_victim;
        next_victim = (next_victim + 1) % CT_DNNL_PLANS;
        evicted = plans[slot];
        if (--evicted->refs > 0) evicted = NULL; /* its last caller destroys it */
    }
    plans[slot] = p;
    p->refs++; /* the cache's reference plus the caller's */
    pthread_mutex_unlock(&plans_lock);
    plan_destroy(evicted);
    return p;
}

/* ---- running a plan ------------------------------------------------------------------- */

typedef struct call_buffers {
    void *inner[OP_COUNT];
    void *scratch;
    dnnl_memory_t user_mem[OP_COUNT], inner_mem[OP_COUNT], scratch_mem;
} call_buffers;

static void *aligned_buffer(const dnnl_memory_desc_t *md) {
    size_t n = dnnl_memory_desc_get_size(md);
    return aligned_alloc(64, (n + 63) / 64 * 64 + 64);
}

static void buffers_free(call_buffers *b) {
    for (int i = 0; i < OP_COUNT; i++) {
        dnnl_memory_destroy(b->user_mem[i]);
        dnnl_memory_destroy(b->inner_mem[i]);
        free(b->inner[i]);
    }
    dnnl_memory_destroy(b->scratch_mem);
    free(b->scratch);
}

/* Memory objects for every operand: the user's tensor, and a buffer in
 * oneDNN's layout where that differs. */
static bool buffers_make(const conv_plan *p, void *const user[OP_COUNT], call_buffers *b) {
    for (int i = 0; i < OP_COUNT; i++) {
        if (dnnl_memory_create(&b->user_mem[i], &p->user_md[i], engine, user[i]) != dnnl_success)
            return false;
        if (!p->reorder[i]) continue;
        b->inner[i] = aligned_buffer(&p->inner_md[i]);
        if (!b->inner[i] ||
            dnnl_memory_create(&b->inner_mem[i], &p->inner_md[i], engine, b->inner[i]) != dnnl_success)
            return false;
    }
    if (dnnl_memory_desc_get_size(&p->scratch_md) > 0) {
        b->scratch = aligned_buffer(&p->scratch_md);
        if (!b->scratch ||
            dnnl_memory_create(&b->scratch_mem, &p->scratch_md, engine, b->scratch) != dnnl_success)
            return false;
    }
    return true;
}

static bool reorder_run(dnnl_stream_t s, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return dnnl_primitive_execute(r, s, 2, args) == dnnl_success;
}

static ct_status plan_run(const conv_plan *p, void *const user[OP_COUNT], void *bias) {
    call_buffers b;
    memset(&b, 0, sizeof b);
    dnnl_stream_t s = NULL;
    dnnl_memory_t bias_mem = NULL;
    bool ok = buffers_make(p, user, &b) &&
              (!bias || dnnl_memory_create(&bias_mem, &p->bias_md, engine, bias) == dnnl_success) &&
              dnnl_stream_create(&s, engine, dnnl_stream_default_flags) == dnnl_success;
    if (!ok) {
        buffers_free(&b);
        return ct_error_set(CT_ERR_OOM, "conv2d: out of memory for oneDNN's working buffers");
    }
    dnnl_memory_t used[OP_COUNT];
    for (int i = 0; i < OP_COUNT; i++) used[i] = p->reorder[i] ? b.inner_mem[i] : b.user_mem[i];
    ok = (!p->reorder[OP_IN0] || reorder_run(s, p->reorder[OP_IN0], b.user_mem[OP_IN0], used[OP_IN0])) &&
         (!p->reorder[OP_IN1] || reorder_run(s, p->reorder[OP_IN1], b.user_mem[OP_IN1], used[OP_IN1]));
    if (ok) {
        dnnl_exec_arg_t args[OP_COUNT + 2];
        int nargs = 0;
        for (int i = 0; i < OP_COUNT; i++) args[nargs++] = (dnnl_exec_arg_t){p->arg[i], used[i]};
        if (bias_mem) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias_mem};
        if (b.scratch_mem) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, b.scratch_mem};
        ok = dnnl_primitive_execute(p->conv, s, nargs, args) == dnnl_success;
    }
    if (ok && p->reorder[OP_OUT]) ok = reorder_run(s, p->reorder[OP_OUT], used[OP_OUT], b.user_mem[OP_OUT]);
    if (ok) ok = dnnl_stream_wait(s) == dnnl_success;
    dnnl_stream_destroy(s);
    dnnl_memory_destroy(bias_mem);
    buffers_free(&b);
    return ok ? CT_OK : ct_error_set(CT_ERR_BACKEND, "conv2d: oneDNN failed to run a convolution");
}

/* ---- dtypes ------------------------------------------------------------------------- */

void ct_cpu_dnnl_set_bf16_mode(ct_cpu_bf16_mode mode) { atomic_store(&bf16_mode, mode); }

bool ct_cpu_dnnl_bf16_forced(void) { return atomic_load(&bf16_mode) == CT_CPU_BF16_NATIVE; }

dnnl_engine_t ct_cpu_dnnl_engine(void) {
    pthread_once(&dnnl_once, create_engine);
    return engine;
}

static bool isa_has(dnnl_cpu_isa_t isa) {
    const unsigned have = (unsigned)dnnl_get_effective_cpu_isa();
    return (have & (unsigned)isa) == (unsigned)isa;
}

/* bfloat16 math runs natively only where oneDNN has AMX tiles for it: on
 * CPUs without them its bfloat16 kernels lose to its float32 ones (the
 * issue-16 measurements on a Sapphire Rapids Xeon with AMX switched off),
 * so there the operands are widened by the reorders that change their
 * layout anyway, and the result is rounded once on the way out. Forced by
 * a test, it needs AVX-512 at least: oneDNN has no bfloat16 kernels at all,
 * not even reference ones, below that. */
bool ct_cpu_dnnl_bf16_native(void) {
    switch (atomic_load(&bf16_mode)) {
    case CT_CPU_BF16_NATIVE: return isa_has(dnnl_cpu_isa_avx512_core);
    case CT_CPU_BF16_WIDEN: return false;
    default: return isa_has(dnnl_cpu_isa_avx512_core_amx);
    }
}

/* The dnnl data type of a ctorch dtype oneDNN convolves, or dnnl_data_type_undef. */
static dnnl_data_type_t dnnl_type_of(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return dnnl_f32;
    case CT_BFLOAT16: return dnnl_bf16;
    case CT_FLOAT16: return dnnl_f16; /* always widened: no float16 kernels before AVX512-FP16 */
    default: return dnnl_data_type_undef;
    }
}

static dnnl_data_type_t compute_type_of(dnnl_data_type_t dt) {
    return dt == dnnl_bf16 && ct_cpu_dnnl_bf16_native() ? dnnl_bf16 : dnnl_f32;
}

/* ---- entry -------------------------------------------------------------------------- */

static bool worth_onednn(const ct_kview *v) {
    if (dnnl_type_of(v->dtype) == dnnl_data_type_undef || !ct_cpu_gemm_shares_openmp()) return false;
    if (ct_are_deterministic_algorithms_enabled() || !ct_backends_mkldnn_get_enabled()) return false;
    return ct_cpu_dnnl_engine() != NULL;
}

/* The bias as float32, which oneDNN adds in every compute type: the
 * tensor itself, or a widened copy in *owned (freed by the caller). */
static ct_status bias_as_float(const ct_kview *bias, float **owned, void **data) {
    *owned = NULL;
    *data = bias ? ct_cpu_base(bias) : NULL;
    if (!bias || bias->dtype == CT_FLOAT32) return CT_OK;
    const int64_t n = bias->shape[0];
    const uint16_t *src = *data;
    if (!(*owned = malloc((size_t)n * sizeof(float))))
        return ct_error_set(CT_ERR_OOM, "conv2d: out of memory widening the bias");
    for (int64_t i = 0; i < n; i++)
        (*owned)[i] = bias->dtype == CT_FLOAT16 ? ct_half_to_float(src[i * bias->strides[0]])
                                                : ct_bfloat16_to_float(src[i * bias->strides[0]]);
    *data = *owned;
    return CT_OK;
}

/* A contiguous 16-bit operand widened into a new float32 buffer. oneDNN's
 * own reorders could convert on the way into its layout, but on AVX2 they
 * take a scalar path (290 ms for a 64×64×32×32 batch), while this loop
 * vectorises and the float32 reorders after it are JIT-compiled. */
static float *widened(const ct_kview *v) {
    const int64_t n = ct_cpu_numel(v), chunk = 8192;
    float *dst = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64 + 64);
    if (!dst) return NULL;
    const char *src = ct_cpu_base(v);
    #pragma omp parallel for if (n >= CT_CPU_GRAIN)
    for (int64_t i = 0; i < n; i += chunk)
        ct_cpu_gather_f32(src + i * 2, n - i < chunk ? n - i : chunk, 2, v->dtype, dst + i);
    return dst;
}

static void round_into(const float *src, const ct_kview *out) {
    const int64_t n = ct_cpu_numel(out);
    uint16_t *dst = (uint16_t *)(void *)ct_cpu_base(out);
    if (out->dtype == CT_BFLOAT16) {
        #pragma omp parallel for simd if (n >= CT_CPU_GRAIN)
        for (int64_t i = 0; i < n; i++) dst[i] = ct_cpu_float_to_bf16_bits(src[i]);
    } else {
        #pragma omp parallel for simd if (n >= CT_CPU_GRAIN)
        for (int64_t i = 0; i < n; i++) dst[i] = ct_cpu_float_to_half_bits(src[i]);
    }
}

/* Runs a plan on float32 copies of 16-bit operands and rounds the result
 * once into `out` (the widened path: compute type float32). */
static ct_status run_widened(const conv_plan *p, const ct_kview *out, const ct_kview *in0,
                             const ct_kview *in1, void *bias) {
    float *w0 = widened(in0), *w1 = widened(in1);
    float *wo = aligned_alloc(64, ((size_t)ct_cpu_numel(out) * sizeof(float) + 63) / 64 * 64 + 64);
    ct_status st = CT_OK;
    if (!w0 || !w1 || !wo) {
        st = ct_error_set(CT_ERR_OOM, "conv2d: out of memory widening %s operands to float32",
                          ct_dtype_name(in0->dtype));
    } else {
        void *const user[OP_COUNT] = {w0, w1, wo};
        st = plan_run(p, user, bias);
        if (st == CT_OK) round_into(wo, out);
    }
    free(w0), free(w1), free(wo);
    return st;
}

ct_status ct_cpu_dnnl_conv2d(ct_cpu_conv_dir dir, const ct_kview *out, const ct_kview *in0,
                             const ct_kview *in1, const ct_kview *bias, bool relu,
                             const ct_conv2d_geom *g, int64_t groups) {
    if (!worth_onednn(in0)) return CT_ERR_UNSUPPORTED;
    const ct_kview *y = dir == CT_CPU_CONV_FORWARD ? out : in0;
    const int64_t o = y->shape[1];
    if (g->batch < 1 || g->channels % groups || o % groups) return CT_ERR_UNSUPPORTED;
    if (g->channels / groups * g->kernel[0] * g->kernel[1] < CT_DNNL_MIN_SUM_TERMS ||
        o / groups < CT_DNNL_MIN_OUT_CHANNELS || g->out_size[0] * g->out_size[1] < CT_DNNL_MIN_OUTPUT_POSITIONS)
        return CT_ERR_UNSUPPORTED;
    const dnnl_data_type_t compute = compute_type_of(dnnl_type_of(in0->dtype));
    const bool widen = in0->dtype != CT_FLOAT32 && compute == dnnl_f32;
    /* the plan sees float32 tensors when this call widens them itself */
    const conv_key k = {dir, g->batch, g->channels, g->in_size[0], g->in_size[1], o,
                        g->out_size[0], g->out_size[1], g->kernel[0], g->kernel[1],
                        g->stride[0], g->stride[1], g->padding[0], g->padding[1],
                        g->dilation[0], g->dilation[1], groups,
                        widen ? dnnl_f32 : dnnl_type_of(in0->dtype), compute, bias != NULL, relu};
    conv_plan *p = plan_acquire(&k);
    if (!p || p->declined) {
        if (p) plan_release(p);
        return CT_ERR_UNSUPPORTED;
    }
    float *widened_bias;
    void *bias_data;
    ct_status st = bias_as_float(bias, &widened_bias, &bias_data);
    void *const user[OP_COUNT] = {ct_cpu_base(in0), ct_cpu_base(in1), ct_cpu_base(out)};
    if (st == CT_OK) st = widen ? run_widened(p, out, in0, in1, bias_data) : plan_run(p, user, bias_data);
    free(widened_bias);
    plan_release(p);
    if (st == CT_OK) atomic_fetch_add(&runs, 1);
    return st;
}

int64_t ct_cpu_dnnl_conv_runs(void) { return (int64_t)atomic_load(&runs); }

#endif /* CTORCH_HAVE_DNNL */
