/*
 * cpu_dnnl_matmul.c — bfloat16 products on the CPU's bfloat16 instructions
 * (AMX tiles) through oneDNN's matmul primitive, for cpu_linalg.c.
 *
 * Why: a bfloat16 product widened to float32 (cpu_linalg.c's portable path)
 * runs at float32 speed plus the conversions, while the AMX tiles of a
 * Sapphire Rapids Xeon multiply bfloat16 several times faster than its
 * float32 FMA units (oneDNN 2.6: 1,100–1,700 GFLOP/s). Sums stay float32
 * inside the tiles and each output is rounded once, so the bits agree with
 * the widened path up to the order of the sums.
 *
 * The operands are described by their strides as they are (a transposed
 * weight is read in place); a broadcast batch (stride 0) becomes a batch of
 * one, which oneDNN broadcasts. No plan cache of our own: oneDNN keeps the
 * primitives it built (its primitive cache, 1,024 entries by default), and
 * products too small to repay a primitive lookup stay on the widened path.
 * Scratch memory belongs to each call, so threads may share a primitive.
 * The runner (ct_cpu_dnnl_matmul_run) also serves the int8 products of
 * cpu_dnnl_qgemm.c.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "cpu_dnnl.h"
#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "ctorch/backends.h"

#ifndef CTORCH_HAVE_DNNL

ct_status ct_cpu_dnnl_matmul_bf16(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    (void)out, (void)a, (void)b;
    return CT_ERR_UNSUPPORTED;
}

int64_t ct_cpu_dnnl_matmul_runs(void) { return 0; }

bool ct_cpu_dnnl_matmul_layout_is_plain(const ct_kview *v, int64_t rows, int64_t cols) {
    (void)v, (void)rows, (void)cols;
    return true;
}

#else

/* Multiply-adds per product below which looking the primitive up costs
 * more than the widened product (a lookup is tens of microseconds). */
#define CT_DNNL_MATMUL_MIN_WORK (128 * 128 * 128)

static atomic_llong runs;

/* A [batch, rows, cols] bfloat16 operand as its strides say; a broadcast
 * batch is described as a batch of one. A batch of one gets the dense
 * batch stride rows * cols, not the 0 the core's views carry there: any
 * stride is right for a dimension of size 1, but oneDNN's optimised matmul
 * (brgemm, the AMX one) takes only layouts that match a plain tag (abc, or
 * acb for a transposed weight), and a 0 matches none, which leaves only its
 * reference matmul. */
static bool operand_md(dnnl_memory_desc_t *md, const ct_kview *v, int64_t rows, int64_t cols) {
    const bool one = v->shape[0] == 1 || v->strides[0] == 0;
    const dnnl_dims_t dims = {one ? 1 : v->shape[0], rows, cols};
    const dnnl_dims_t strides = {one ? rows * cols : v->strides[0], v->strides[1], v->strides[2]};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dnnl_bf16, strides) == dnnl_success;
}

/* Whether oneDNN chose something better than its reference implementation. */
static bool fast_impl(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        return false;
    return strstr(impl, "ref") == NULL;
}

/* Runs pd on the three buffers (src, weights, dst) with a scratchpad of
 * this call's own, so threads may share the primitive. */
static ct_cpu_dnnl_result execute(dnnl_engine_t engine, const_dnnl_primitive_desc_t pd,
                                  const dnnl_memory_desc_t mds[3], void *const data[3]) {
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t s = NULL;
    dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
    const dnnl_memory_desc_t *scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const size_t scratch_size = scratch_md ? dnnl_memory_desc_get_size(scratch_md) : 0;
    void *scratch = scratch_size ? aligned_alloc(64, (scratch_size + 63) / 64 * 64) : NULL;
    bool ok = (!scratch_size || scratch) && dnnl_primitive_create(&prim, pd) == dnnl_success &&
              dnnl_stream_create(&s, engine, dnnl_stream_default_flags) == dnnl_success;
    for (int i = 0; ok && i < 3; i++) ok = dnnl_memory_create(&mem[i], &mds[i], engine, data[i]) == dnnl_success;
    if (ok && scratch_size) ok = dnnl_memory_create(&mem[3], scratch_md, engine, scratch) == dnnl_success;
    ct_cpu_dnnl_result r = ok ? CT_CPU_DNNL_RAN : CT_CPU_DNNL_NO_MEMORY;
    if (ok) {
        const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]},
                                         {DNNL_ARG_DST, mem[2]}, {DNNL_ARG_SCRATCHPAD, mem[3]}};
        if (dnnl_primitive_execute(prim, s, scratch_size ? 4 : 3, args) != dnnl_success ||
            dnnl_stream_wait(s) != dnnl_success)
            r = CT_CPU_DNNL_FAILED;
    }
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(mem[i]);
    dnnl_stream_destroy(s);
    dnnl_primitive_destroy(prim);
    free(scratch);
    return r;
}

ct_cpu_dnnl_result ct_cpu_dnnl_matmul_run(const dnnl_memory_desc_t mds[3], void *const data[3], bool accept_ref) {
    dnnl_engine_t engine = ct_cpu_dnnl_engine();
    if (!engine) return CT_CPU_DNNL_DECLINED;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_matmul_desc_init(&md, &mds[0], &mds[1], NULL, &mds[2]) == dnnl_success &&
              dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL) == dnnl_success &&
              (accept_ref || fast_impl(pd));
    ct_cpu_dnnl_result r = ok ? execute(engine, pd, mds, data) : CT_CPU_DNNL_DECLINED;
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return r;
}

ct_status ct_cpu_dnnl_matmul_bf16(const ct_kview *out, const ct_kview *a, const ct_kview *b) {
    const int64_t batch = out->shape[0], m = out->shape[1], n = out->shape[2], k = a->shape[2];
    if (out->dtype != CT_BFLOAT16 || !ct_cpu_dnnl_bf16_native() || !ct_cpu_gemm_shares_openmp() ||
        !ct_backends_mkldnn_get_enabled() || ct_are_deterministic_algorithms_enabled())
        return CT_ERR_UNSUPPORTED;
    const bool forced = ct_cpu_dnnl_bf16_forced();
    if (k == 0 || (!forced && m * n * k < CT_DNNL_MATMUL_MIN_WORK)) return CT_ERR_UNSUPPORTED;
    dnnl_memory_desc_t mds[3];
    const dnnl_dims_t out_dims = {batch, m, n};
    if (!operand_md(&mds[0], a, m, k) || !operand_md(&mds[1], b, k, n) ||
        dnnl_memory_desc_init_by_tag(&mds[2], 3, out_dims, dnnl_bf16, dnnl_abc) != dnnl_success)
        return CT_ERR_UNSUPPORTED;
    /* the reference matmul would be far slower than the widened path: only
     * a test forcing bfloat16 on a CPU without AMX takes it */
    void *const data[3] = {ct_cpu_base(a), ct_cpu_base(b), ct_cpu_base(out)};
    switch (ct_cpu_dnnl_matmul_run(mds, data, forced)) {
    case CT_CPU_DNNL_RAN: atomic_fetch_add(&runs, 1); return CT_OK;
    case CT_CPU_DNNL_NO_MEMORY: return ct_error_set(CT_ERR_OOM, "matmul: out of memory for oneDNN's bfloat16 product");
    case CT_CPU_DNNL_FAILED: return ct_error_set(CT_ERR_BACKEND, "matmul: oneDNN failed to run a bfloat16 product");
    default: return CT_ERR_UNSUPPORTED;
    }
}

int64_t ct_cpu_dnnl_matmul_runs(void) { return (int64_t)atomic_load(&runs); }

bool ct_cpu_dnnl_matmul_layout_is_plain(const ct_kview *v, int64_t rows, int64_t cols) {
    dnnl_memory_desc_t md, abc, acb;
    const int64_t batch = v->shape[0] == 1 || v->strides[0] == 0 ? 1 : v->shape[0];
    const dnnl_dims_t dims = {batch, rows, cols};
    return operand_md(&md, v, rows, cols) &&
           dnnl_memory_desc_init_by_tag(&abc, 3, dims, dnnl_bf16, dnnl_abc) == dnnl_success &&
           dnnl_memory_desc_init_by_tag(&acb, 3, dims, dnnl_bf16, dnnl_acb) == dnnl_success &&
           (dnnl_memory_desc_equal(&md, &abc) || dnnl_memory_desc_equal(&md, &acb));
}

#endif /* CTORCH_HAVE_DNNL */
