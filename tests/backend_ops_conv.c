/*
 * backend_ops_conv.c — the convolution rows of the cross-backend harness:
 * conv2d forward and its three gradients (input, weight, bias) on each
 * device against the CPU. Included by tests/test_backend_ops.c (after its
 * helpers, before its table, whose rows are BO_CONV_CASES); not a test of
 * its own.
 *
 * Variants cover stride, padding, dilation, groups (depthwise too), no
 * bias, 1×1 kernels (the path without im2col), an unbatched input, an
 * empty batch, and inputs that are transposed (H and W swapped in memory),
 * narrowed or expanded over the batch, and two large ones (131,072 output
 * elements, and a strided grouped one). Integer dtypes run the forward;
 * their gradients and bool are rejected by both sides alike. Results are
 * long sums: compared per element within BO_TOL_MM.
 */
#include "ctorch/functional_conv.h"
#include "ops/conv.h"

typedef struct bo_conv_geom {
    int64_t n, c, h, w, o, kh, kw;
    int64_t stride[2], padding[2], dilation[2], groups;
    bool bias, unbatched;
    bo_layout layout;
} bo_conv_geom;

static bo_conv_geom conv_variant(int v, bo_rng *r) {
    static const bo_conv_geom fixed[] = {
        {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {2, 3, 7, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {1, 4, 9, 8, 6, 3, 2, {2, 3}, {1, 0}, {1, 2}, 2, true, false, BO_NARROWED},
        {3, 2, 8, 8, 2, 2, 3, {1, 1}, {2, 1}, {2, 1}, 1, false, false, BO_TRANSPOSED},
        {2, 4, 6, 7, 4, 3, 3, {1, 2}, {1, 1}, {1, 1}, 4, true, false, BO_CONTIGUOUS},
        {2, 6, 5, 4, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {1, 6, 5, 4, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 2, false, false, BO_CONTIGUOUS},
        {1, 3, 7, 7, 2, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, true, BO_CONTIGUOUS},
        {0, 3, 5, 5, 2, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {2, 3, 16, 16, 8, 5, 5, {2, 2}, {2, 2}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {3, 4, 6, 5, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, false, BO_TRANSPOSED},
        {4, 2, 6, 6, 2, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true, false, BO_EXPANDED},
    };
    static const bo_conv_geom large[] = { /* outputs of 131,072 and 18,432 elements */
        {8, 8, 32, 32, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, false, BO_CONTIGUOUS},
        {2, 16, 48, 48, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 4, true, false, BO_TRANSPOSED},
    };
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    if (v >= BO_LARGE_VARIANT) return large[v - BO_LARGE_VARIANT];
    if (v < nfixed) return fixed[v];
    bo_conv_geom g;
    memset(&g, 0, sizeof g);
    g.groups = bo_int(r, 1, 4);
    g.c = g.groups * bo_int(r, 1, 4), g.o = g.groups * bo_int(r, 1, 4);
    g.n = bo_int(r, 1, 4), g.kh = bo_int(r, 1, 4), g.kw = bo_int(r, 1, 4);
    g.h = g.kh + bo_int(r, 0, 8), g.w = g.kw + bo_int(r, 0, 8);
    for (int a = 0; a < 2; a++) {
        g.stride[a] = bo_int(r, 1, 4);
        g.padding[a] = bo_int(r, 0, 3);
        g.dilation[a] = 1;
    }
    g.bias = bo_int(r, 0, 2);
    g.layout = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    return g;
}

static ct_shape conv_out_shape(const bo_conv_geom *g) {
    int64_t oh = (g->h + 2 * g->padding[0] - g->dilation[0] * (g->kh - 1) - 1) / g->stride[0] + 1;
    int64_t ow = (g->w + 2 * g->padding[1] - g->dilation[1] * (g->kw - 1) - 1) / g->stride[1] + 1;
    return g->unbatched ? CT_SHAPE(g->o, oh, ow) : CT_SHAPE(g->n, g->o, oh, ow);
}

/* c->op: 0 forward, 1 grad_input, 2 grad_weight, 3 grad_bias, 4 the fused
 * relu(conv2d) forward. */
static void run_conv2d(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    bo_conv_geom g = conv_variant(v, r);
    ct_shape xs = g.unbatched ? CT_SHAPE(g.c, g.h, g.w) : CT_SHAPE(g.n, g.c, g.h, g.w);
    ct_shape ws = CT_SHAPE(g.o, g.c / g.groups, g.kh, g.kw);
    ct_tensor *x = bo_input(r, xs, dt, c->range, g.layout, dev);
    ct_tensor *w = bo_input(r, ws, dt, c->range, BO_CONTIGUOUS, dev);
    ct_tensor *b = g.bias ? bo_input(r, CT_SHAPE(g.o), dt, c->range, BO_CONTIGUOUS, dev) : NULL;
    describe(desc, dn, "x", xs, g.layout);
    describe(desc, dn, "w", ws, BO_CONTIGUOUS);
    size_t k = strlen(desc);
    snprintf(desc + k, dn - k, ", stride (%lld, %lld), padding (%lld, %lld), dilation (%lld, %lld), groups %lld%s",
             (long long)g.stride[0], (long long)g.stride[1], (long long)g.padding[0],
             (long long)g.padding[1], (long long)g.dilation[0], (long long)g.dilation[1],
             (long long)g.groups, g.bias ? ", bias" : "");
    if (c->op == 0 || c->op == 4) {
        const ct_conv_opts o = CT_CONV_OPTS(.stride = {g.stride[0], g.stride[1]},
                                            .padding = {g.padding[0], g.padding[1]},
                                            .dilation = {g.dilation[0], g.dilation[1]}, .groups = g.groups);
        out[0] = c->op == 0 ? ct_conv2d_with_opts(x, w, b, o) : ct_conv2d_relu_with_opts(x, w, b, o);
        if (dev.type == CT_DEVICE_CPU) /* the magnitudes of the terms: |x| * |w| + |b| */
            out[2] = ct_conv2d_with_opts(bo_abs64(x), bo_abs64(w), b ? bo_abs64(b) : NULL, o);
        return;
    }
    ct_tensor *gy = bo_input(r, conv_out_shape(&g), dt, c->range, BO_CONTIGUOUS, dev);
    cti_conv2d_params p = cti_conv2d_params_make(g.stride, g.padding, g.dilation, g.groups);
    ct_tensor *grad = NULL;
    ct_status st = cti_conv2d_backward(gy, x, w, &p, c->op == 1 ? &grad : NULL,
                                       c->op == 2 ? &grad : NULL, c->op == 3 ? &grad : NULL);
    if (st == CT_OK) out[0] = ct_track(grad);
}

#define CONV(n_, op_, dts_) \
    {.name = n_, .family = "conv", .run = run_conv2d, .op = op_, .range = BO_FINITE, \
     .tol = BO_TOL_MM, .dtypes = dts_}

/* The forward takes integers (no bool); the gradients need floats. */
#define BO_CONV_CASES                                                                              \
    CONV("conv2d", 0, BO_DT_NOBOOL), CONV("conv2d_grad_input", 1, BO_DT_FLOAT),                    \
    CONV("conv2d_grad_weight", 2, BO_DT_FLOAT), CONV("conv2d_grad_bias", 3, BO_DT_FLOAT),         \
    CONV("conv2d_relu", 4, BO_DT_FLOAT),
