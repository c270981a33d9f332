/*
 * cpu_dnnl.h — the CPU backend's oneDNN convolutions (internal; cpu_dnnl.c).
 * One entry for the three directions, since they share the plan cache and
 * differ only in which operands go where.
 */
#ifndef CT_CPU_DNNL_H
#define CT_CPU_DNNL_H

#include "../../core/backend_conv.h"

typedef enum ct_cpu_conv_dir {
    CT_CPU_CONV_FORWARD,        /* out = y,  in0 = x,  in1 = w */
    CT_CPU_CONV_BACKWARD_INPUT, /* out = dx, in0 = dy, in1 = w */
    CT_CPU_CONV_BACKWARD_WEIGHT /* out = dw, in0 = dy, in1 = x */
} ct_cpu_conv_dir;

/* Runs one direction of a float32 conv2d through oneDNN (views and geometry
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

#endif /* CT_CPU_DNNL_H */
