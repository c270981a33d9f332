/*
 * cpu_dnnl.h — the CPU backend's oneDNN convolutions (internal; cpu_dnnl.c)
 * and its bfloat16 products (cpu_dnnl_matmul.c). One convolution entry for
 * the three directions, since they share the plan cache and differ only in
 * which operands go where.
 */
#ifndef CT_CPU_DNNL_H
#define CT_CPU_DNNL_H

#include "../../core/backend_conv.h"

typedef enum ct_cpu_conv_dir {
    CT_CPU_CONV_FORWARD,        /* out = y,  in0 = x,  in1 = w */
    CT_CPU_CONV_BACKWARD_INPUT, /* out = dx, in0 = dy, in1 = w */
    CT_CPU_CONV_BACKWARD_WEIGHT /* out = dw, in0 = dy, in1 = x */
} ct_cpu_conv_dir;

/* How bfloat16 convolutions and products compute: natively where the CPU
 * has AMX (AUTO), or widened to float32 and rounded once. Tests force
 * NATIVE, which then also accepts oneDNN's reference kernels, to run the
 * bfloat16 plumbing on CPUs without AMX; users never need to set it. */
typedef enum ct_cpu_bf16_mode {
    CT_CPU_BF16_AUTO = -1,
    CT_CPU_BF16_WIDEN = 0,
    CT_CPU_BF16_NATIVE = 1
} ct_cpu_bf16_mode;

void ct_cpu_dnnl_set_bf16_mode(ct_cpu_bf16_mode mode);

/* True when bfloat16 math runs on the CPU's bfloat16 instructions. */
bool ct_cpu_dnnl_bf16_native(void);

/* True when a test forced NATIVE (reference kernels accepted). */
bool ct_cpu_dnnl_bf16_forced(void);

/* Runs one direction of a float32, bfloat16 or float16 conv2d through oneDNN (views and geometry
 * as in src/core/backend_conv.h's whole-convolution entries); `bias` [O]
 * (forward only, NULL for none) is added and, with `relu` (forward only),
 * max(y, 0) applied inside the convolution. Returns
 * CT_ERR_UNSUPPORTED without setting an error when oneDNN does not take
 * this call (see cpu_dnnl.c); the caller then uses its own kernels. */
ct_status ct_cpu_dnnl_conv2d(ct_cpu_conv_dir dir, const ct_kview *out, const ct_kview *in0,
                             const ct_kview *in1, const ct_kview *bias, bool relu,
                             const ct_conv2d_geom *g, int64_t groups);

/* Convolutions oneDNN has run in this process (all directions), so that
 * tests can check which path a call took. */
int64_t ct_cpu_dnnl_conv_runs(void);

/* out[b] = a[b] @ b[b] for bfloat16 operands in bfloat16 instructions with
 * float32 sums, each output rounded once (views as ct_cpu_matmul's).
 * CT_ERR_UNSUPPORTED without an error set when this CPU widens instead
 * (ct_cpu_dnnl_bf16_native) or oneDNN cannot take the layouts. */
ct_status ct_cpu_dnnl_matmul_bf16(const ct_kview *out, const ct_kview *a, const ct_kview *b);

/* bfloat16 products oneDNN has run in this process (for tests). */
int64_t ct_cpu_dnnl_matmul_runs(void);

/* For tests: whether the oneDNN descriptor of a [batch, rows, cols]
 * operand view (as ct_cpu_matmul receives it) is a plain layout (abc, or
 * acb for a transposed matrix), which oneDNN's optimised matmul needs
 * (true without oneDNN). */
bool ct_cpu_dnnl_matmul_layout_is_plain(const ct_kview *v, int64_t rows, int64_t cols);

#ifdef CTORCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
/* The process's oneDNN CPU engine, created on first use; NULL if it failed. */
dnnl_engine_t ct_cpu_dnnl_engine(void);

/* One oneDNN matmul (cpu_dnnl_matmul.c; the bfloat16 products and the int8
 * ones of cpu_dnnl_qgemm.c): src @ weights into dst as the three
 * descriptors say, run on data[3] with a scratchpad of the call's own, so
 * threads may run it at once. Declined when oneDNN cannot take the layouts,
 * or offers only its reference implementation and accept_ref is false. */
typedef enum ct_cpu_dnnl_result {
    CT_CPU_DNNL_RAN,
    CT_CPU_DNNL_DECLINED,
    CT_CPU_DNNL_NO_MEMORY, /* for the primitive, its memories or the scratchpad */
    CT_CPU_DNNL_FAILED     /* oneDNN's execution failed */
} ct_cpu_dnnl_result;
ct_cpu_dnnl_result ct_cpu_dnnl_matmul_run(const dnnl_memory_desc_t mds[3], void *const data[3], bool accept_ref);
#endif

#endif /* CT_CPU_DNNL_H */
