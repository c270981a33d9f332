/*
 * test_conv.c — conv2d forward and backward (ct_conv2d, cti_conv2d_backward)
 * on the CPU: against float64 direct-loop references at random shapes
 * (stride, padding, dilation, groups, no bias, batch 1, unbatched input,
 * non-contiguous operands) in every floating dtype, integer convolutions
 * exactly, gradients against central finite differences, the 1×1 and
 * chunked paths, empty batches, every error with PyTorch's message, and
 * PyTorch's own results (tests/fixtures/conv, tools/gen_fixtures_conv.py).
 */
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "conv_fixture.h"
#include "ctorch/functional.h"
#include "ctorch/functional_conv.h"
#include "ctorch/nn.h"
#include "core/backend_conv.h"
#include "ops/conv.h"
#include "testutil.h"

static const ct_dtype g_float_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};

/* ---- cases and the float64 reference ------------------------------------------------ */

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw, groups;
    int64_t stride[2], padding[2], dilation[2];
    bool bias, unbatched;
} conv_case;

/* The functional's options for a case (ctorch/functional_conv.h). */
static ct_conv_opts opts_of(const conv_case *k) {
    return CT_CONV_OPTS(.stride = {k->stride[0], k->stride[1]}, .padding = {k->padding[0], k->padding[1]},
                        .dilation = {k->dilation[0], k->dilation[1]}, .groups = k->groups);
}

static int64_t out_dim(const conv_case *k, int axis) {
    int64_t in = axis ? k->w : k->h, kern = axis ? k->kw : k->kh;
    return (in + 2 * k->padding[axis] - k->dilation[axis] * (kern - 1) - 1) / k->stride[axis] + 1;
}

static int64_t numel_x(const conv_case *k) { return k->n * k->c * k->h * k->w; }
static int64_t numel_w(const conv_case *k) { return k->o * (k->c / k->groups) * k->kh * k->kw; }
static int64_t numel_y(const conv_case *k) { return k->n * k->o * out_dim(k, 0) * out_dim(k, 1); }

static ct_shape shape_x(const conv_case *k) {
    return k->unbatched ? CT_SHAPE(k->c, k->h, k->w) : CT_SHAPE(k->n, k->c, k->h, k->w);
}
static ct_shape shape_w(const conv_case *k) {
    return CT_SHAPE(k->o, k->c / k->groups, k->kh, k->kw);
}
static ct_shape shape_y(const conv_case *k) {
    int64_t oh = out_dim(k, 0), ow = out_dim(k, 1);
    return k->unbatched ? CT_SHAPE(k->o, oh, ow) : CT_SHAPE(k->n, k->o, oh, ow);
}

static cti_conv2d_params params_of(const conv_case *k) {
    return cti_conv2d_params_make(k->stride, k->padding, k->dilation, k->groups);
}

/* The convolution by its definition, in float64. With y: the forward (plus
 * b when not NULL). With gy: accumulates the gradients into gx, gw, gb
 * (each optional, zeroed by the caller). */
static void ref_conv(const conv_case *k, const double *x, const double *w, const double *b,
                     double *y, const double *gy, double *gx, double *gw, double *gb) {
    const int64_t oh_n = out_dim(k, 0), ow_n = out_dim(k, 1);
    const int64_t cg = k->c / k->groups, og = k->o / k->groups;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow++) {
                    const int64_t yi = ((n * k->o + o) * oh_n + oh) * ow_n + ow;
                    double acc = 0.0;
                    for (int64_t cc = 0; cc < cg; cc++)
                        for (int64_t i = 0; i < k->kh; i++)
                            for (int64_t j = 0; j < k->kw; j++) {
                                int64_t iy = oh * k->stride[0] - k->padding[0] + i * k->dilation[0];
                                int64_t ix = ow * k->stride[1] - k->padding[1] + j * k->dilation[1];
                                if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
                                int64_t c = (o / og) * cg + cc;
                                int64_t xi = ((n * k->c + c) * k->h + iy) * k->w + ix;
                                int64_t wi = ((o * cg + cc) * k->kh + i) * k->kw + j;
                                if (y) acc += x[xi] * w[wi];
                                if (gy && gx) gx[xi] += gy[yi] * w[wi];
                                if (gy && gw) gw[wi] += gy[yi] * x[xi];
                            }
                    if (y) y[yi] = acc + (b ? b[o] : 0.0);
                    if (gy && gb) gb[o] += gy[yi];
                }
}

/* PyTorch's tolerance for dt, widened by the rounding a sum of `terms`
 * products of values in [-1, 1] may collect in the compute precision. */
static void tolerance(ct_dtype dt, int64_t terms, double *rtol, double *atol) {
    ct_test_tolerances(dt, rtol, atol);
    *atol += 4.0 * (double)terms * (dt == CT_FLOAT64 ? 1.2e-16 : 6e-8);
}

static conv_case random_case(void) {
    for (;;) {
        conv_case k;
        memset(&k, 0, sizeof k);
        k.groups = ct_test_randint(1, 4);
        k.c = k.groups * ct_test_randint(1, 4);
        k.o = k.groups * ct_test_randint(1, 4);
        k.n = ct_test_randint(1, 4);
        k.h = ct_test_randint(1, 10), k.w = ct_test_randint(1, 10);
        k.kh = ct_test_randint(1, 4), k.kw = ct_test_randint(1, 4);
        for (int a = 0; a < 2; a++) {
            k.stride[a] = ct_test_randint(1, 4);
            k.padding[a] = ct_test_randint(0, 3);
            k.dilation[a] = ct_test_randint(1, 3);
        }
        k.bias = ct_test_randint(0, 2);
        k.unbatched = ct_test_randint(0, 5) == 0;
        if (k.unbatched) k.n = 1;
        if (k.h + 2 * k.padding[0] >= k.dilation[0] * (k.kh - 1) + 1 &&
            k.w + 2 * k.padding[1] >= k.dilation[1] * (k.kw - 1) + 1)
            return k;
    }
}

static void describe(const conv_case *k, ct_dtype dt, char *buf, size_t n) {
    snprintf(buf, n,
             "%s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] s(%lld,%lld) p(%lld,%lld) "
             "d(%lld,%lld) g%lld%s%s",
             ct_dtype_name(dt), (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
             (long long)k->o, (long long)(k->c / k->groups), (long long)k->kh, (long long)k->kw,
             (long long)k->stride[0], (long long)k->stride[1], (long long)k->padding[0],
             (long long)k->padding[1], (long long)k->dilation[0], (long long)k->dilation[1],
             (long long)k->groups, k->bias ? "" : " no-bias", k->unbatched ? " unbatched" : "");
}

/* Operands of a case in dtype dt, with their exact stored values; the
 * input and weight are non-contiguous when asked. */
typedef struct operands {
    ct_tensor *x, *w, *b;
    double *xv, *wv, *bv;
} operands;

static operands make_operands(const conv_case *k, ct_dtype dt, bool strided) {
    operands op;
    op.x = ct_test_random(shape_x(k), dt, -1, 1, &op.xv);
    op.w = ct_test_random(shape_w(k), dt, -1, 1, &op.wv);
    op.b = k->bias ? ct_test_random(CT_SHAPE(k->o), dt, -1, 1, &op.bv) : NULL;
    if (!k->bias) op.bv = NULL;
    if (strided) {
        ct_release(op.x);
        ct_release(op.w);
        op.x = ct_test_noncontiguous(op.xv, shape_x(k), dt);
        op.w = ct_test_noncontiguous(op.wv, shape_w(k), dt);
    }
    return op;
}

static void free_operands(operands *op) {
    ct_release(op->x);
    ct_release(op->w);
    ct_release(op->b);
    free(op->xv);
    free(op->wv);
    free(op->bv);
}

/* ---- forward -------------------------------------------------------------------------- */

static void check_forward(const conv_case *k, ct_dtype dt, bool strided) {
    char what[256];
    describe(k, dt, what, sizeof what);
    operands op = make_operands(k, dt, strided);
    ct_tensor *y = ct_conv2d_with_opts(op.x, op.w, op.b, opts_of(k));
    double *ref = calloc((size_t)numel_y(k) + 1, sizeof(double));
    ref_conv(k, op.xv, op.wv, op.bv, ref, NULL, NULL, NULL, NULL);
    double rtol, atol;
    tolerance(dt, (k->c / k->groups) * k->kh * k->kw + 1, &rtol, &atol);
    CT_EXPECT_MSG(y != NULL, "%s: %s", what, ct_last_error());
    if (y) {
        if (!CT_EXPECT_SHAPE(y, shape_y(k)) || ct_dtype_of(y) != dt ||
            !CT_EXPECT_CLOSE(y, ref, numel_y(k), rtol, atol))
            ct_test_fail(__FILE__, __LINE__, "forward mismatch for %s", what);
    }
    ct_release(y);
    free(ref);
    free_operands(&op);
}

static void test_forward_random(void) {
    for (int t = 0; t < 40; t++) {
        conv_case k = random_case();
        for (size_t d = 0; d < sizeof g_float_dtypes / sizeof g_float_dtypes[0]; d++)
            check_forward(&k, g_float_dtypes[d], t % 3 == 1);
    }
}

/* 1×1 kernels with stride 1 and no padding skip im2col (one product for
 * the batch with one group; the input as its own column matrix otherwise). */
static void test_pointwise(void) {
    static const int64_t shapes[][4] = {{1, 6, 5, 4}, {3, 6, 5, 4}, {2, 2, 1, 7}};
    for (size_t s = 0; s < 3; s++)
        for (int64_t g = 1; g <= 2; g++) {
            conv_case k = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 4, 1, 1, g,
                           {1, 1}, {0, 0}, {1, 1}, g == 1, false};
            check_forward(&k, CT_FLOAT64, s == 1);
            check_forward(&k, CT_FLOAT32, false);
            check_forward(&k, CT_BFLOAT16, false);
        }
    conv_case dil = {2, 4, 5, 5, 2, 1, 1, 1, {1, 1}, {0, 0}, {3, 2}, true, false};
    check_forward(&dil, CT_FLOAT64, false); /* dilation does not matter for 1×1 */
    conv_case strided = {2, 4, 5, 5, 2, 1, 1, 1, {2, 1}, {0, 1}, {1, 1}, true, false};
    check_forward(&strided, CT_FLOAT64, false); /* 1×1 with stride/padding: im2col */
}

/* Integers convolve exactly (same-type arithmetic, as PyTorch). */
static void test_integer_dtypes(void) {
    static const ct_dtype dts[] = {CT_INT32, CT_INT64, CT_UINT8};
    conv_case k = {2, 4, 6, 5, 4, 3, 2, 2, {2, 1}, {1, 1}, {1, 2}, true, false};
    for (size_t d = 0; d < 3; d++) {
        double *xv = malloc(sizeof(double) * (size_t)numel_x(&k));
        double *wv = malloc(sizeof(double) * (size_t)numel_w(&k));
        double bv[4] = {1, 0, 2, 3};
        for (int64_t i = 0; i < numel_x(&k); i++) xv[i] = (double)ct_test_randint(0, 4);
        for (int64_t i = 0; i < numel_w(&k); i++) wv[i] = (double)ct_test_randint(0, 3);
        ct_tensor *x = ct_test_tensor(xv, shape_x(&k), dts[d]);
        ct_tensor *w = ct_test_tensor(wv, shape_w(&k), dts[d]);
        ct_tensor *b = ct_test_tensor(bv, CT_SHAPE(4), dts[d]);
        ct_tensor *y = ct_conv2d_with_opts(x, w, b, opts_of(&k));
        double *ref = malloc(sizeof(double) * (size_t)numel_y(&k));
        ref_conv(&k, xv, wv, bv, ref, NULL, NULL, NULL, NULL);
        CT_EXPECT(y && ct_dtype_of(y) == dts[d]);
        CT_EXPECT_CLOSE(y, ref, numel_y(&k), 0, 0);
        ct_release(x);
        ct_release(w);
        ct_release(b);
        ct_release(y);
        free(xv);
        free(wv);
        free(ref);
    }
}

/* Empty batches and zero input channels give PyTorch's shapes (zeros plus
 * bias where a sum is empty). */
static void test_empty(void) {
    ct_tensor *x = ct_zeros(CT_SHAPE(0, 3, 5, 5));
    ct_tensor *w = ct_ones(CT_SHAPE(4, 3, 3, 3));
    ct_tensor *b = ct_ones(CT_SHAPE(4));
    ct_tensor *y = ct_conv2d(x, w, b, .padding = {1, 1});
    CT_EXPECT(y && CT_EXPECT_SHAPE(y, CT_SHAPE(0, 4, 5, 5)));
    ct_tensor *gy = ct_zeros(CT_SHAPE(0, 4, 5, 5));
    cti_conv2d_params p = cti_conv2d_params_make(NULL, CT_PAIR(1, 1), NULL, 1);
    ct_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    CT_EXPECT_INT_EQ(cti_conv2d_backward(gy, x, w, &p, &gx, &gw, &gb), CT_OK);
    CT_EXPECT(gx && CT_EXPECT_SHAPE(gx, CT_SHAPE(0, 3, 5, 5)));
    double zeros[108] = {0};
    CT_EXPECT(gw && CT_EXPECT_CLOSE(gw, zeros, 108, 0, 0));
    CT_EXPECT(gb && CT_EXPECT_CLOSE(gb, zeros, 4, 0, 0));
    ct_decref(gx);
    ct_decref(gw);
    ct_decref(gb);

    ct_tensor *x0 = ct_zeros(CT_SHAPE(2, 0, 4, 4));
    ct_tensor *w0 = ct_zeros(CT_SHAPE(3, 0, 3, 3));
    ct_tensor *b3 = ct_full(CT_SHAPE(3), 1.5);
    ct_tensor *y0 = ct_conv2d(x0, w0, b3);
    double expect[24];
    for (int i = 0; i < 24; i++) expect[i] = 1.5;
    CT_EXPECT(y0 && CT_EXPECT_SHAPE(y0, CT_SHAPE(2, 3, 2, 2)));
    CT_EXPECT_CLOSE(y0, expect, 24, 0, 0);
    ct_release(x);
    ct_release(w);
    ct_release(b);
    ct_release(y);
    ct_release(gy);
    ct_release(x0);
    ct_release(w0);
    ct_release(b3);
    ct_release(y0);
}

/* ---- backward ------------------------------------------------------------------------ */

/* Gradients of a case in dtype dt against the reference; `mask` picks
 * which are asked for (bit 0 input, 1 weight, 2 bias). grad_out is an
 * expanded (stride-0) view in `expanded` mode, as autograd passes for sums. */
static void check_backward(const conv_case *k, ct_dtype dt, int mask, bool strided, bool expanded) {
    char what[256];
    describe(k, dt, what, sizeof what);
    operands op = make_operands(k, dt, strided);
    double *gyv = NULL;
    ct_tensor *gy;
    if (expanded) {
        double v = 0.75;
        ct_tensor *one = ct_full(CT_SHAPE(1, 1, 1), v, .dtype = dt);
        gy = ct_expand(one, shape_y(k));
        ct_release(one);
        gyv = malloc(sizeof(double) * (size_t)numel_y(k));
        for (int64_t i = 0; i < numel_y(k); i++) gyv[i] = v;
    } else {
        gy = ct_test_random(shape_y(k), dt, -1, 1, &gyv);
    }
    double *rx = calloc((size_t)numel_x(k) + 1, sizeof(double));
    double *rw = calloc((size_t)numel_w(k) + 1, sizeof(double));
    double *rb = calloc((size_t)k->o + 1, sizeof(double));
    ref_conv(k, op.xv, op.wv, NULL, NULL, gyv, rx, rw, rb);
    cti_conv2d_params p = params_of(k);
    ct_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    ct_status st = cti_conv2d_backward(gy, op.x, op.w, &p, mask & 1 ? &gx : NULL,
                                       mask & 2 ? &gw : NULL, mask & 4 ? &gb : NULL);
    CT_EXPECT_MSG(st == CT_OK, "%s: %s", what, ct_last_error());
    double rtol, atol;
    const int64_t pixels = k->n * out_dim(k, 0) * out_dim(k, 1);
    bool ok = true;
    if (mask & 1) {
        tolerance(dt, (k->o / k->groups) * k->kh * k->kw, &rtol, &atol);
        ok &= gx && CT_EXPECT_SHAPE(gx, shape_x(k)) && CT_EXPECT_CLOSE(gx, rx, numel_x(k), rtol, atol);
    }
    if (mask & 2) {
        tolerance(dt, pixels, &rtol, &atol);
        ok &= gw && CT_EXPECT_SHAPE(gw, shape_w(k)) && CT_EXPECT_CLOSE(gw, rw, numel_w(k), rtol, atol);
    }
    if (mask & 4) {
        tolerance(dt, pixels, &rtol, &atol);
        ok &= gb && CT_EXPECT_SHAPE(gb, CT_SHAPE(k->o)) && CT_EXPECT_CLOSE(gb, rb, k->o, rtol, atol);
    }
    if (!ok) ct_test_fail(__FILE__, __LINE__, "backward mismatch (mask %d) for %s", mask, what);
    ct_decref(gx);
    ct_decref(gw);
    ct_decref(gb);
    ct_release(gy);
    free(gyv);
    free(rx);
    free(rw);
    free(rb);
    free_operands(&op);
}

static void test_backward_random(void) {
    for (int t = 0; t < 30; t++) {
        conv_case k = random_case();
        for (size_t d = 0; d < sizeof g_float_dtypes / sizeof g_float_dtypes[0]; d++)
            check_backward(&k, g_float_dtypes[d], t % 7 == 0 ? 1 + t % 6 : 7, t % 4 == 2,
                           t % 5 == 3);
    }
}

static void test_backward_pointwise(void) {
    for (int64_t n = 1; n <= 3; n += 2)
        for (int64_t g = 1; g <= 2; g++) {
            conv_case k = {n, 4, 3, 5, 6, 1, 1, g, {1, 1}, {0, 0}, {1, 1}, true, false};
            check_backward(&k, CT_FLOAT64, 7, n == 3, false);
            check_backward(&k, CT_FLOAT32, 1, false, false);
            check_backward(&k, CT_FLOAT16, 3, false, false);
        }
    conv_case unb = {1, 4, 3, 5, 6, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, true, true};
    check_backward(&unb, CT_FLOAT64, 7, false, false);
}

/* L(x, w, b) = sum(conv2d(x, w, b) * R): backward with grad_out = R must
 * match central differences of L in every element of x, w and b. */
static double fd_loss(const conv_case *k, const double *xv, const double *wv, const double *bv,
                      const double *r) {
    ct_tensor *x = ct_test_tensor(xv, shape_x(k), CT_FLOAT64);
    ct_tensor *w = ct_test_tensor(wv, shape_w(k), CT_FLOAT64);
    ct_tensor *b = ct_test_tensor(bv, CT_SHAPE(k->o), CT_FLOAT64);
    ct_tensor *y = ct_conv2d_with_opts(x, w, b, opts_of(k));
    double *yv = y ? ct_test_values(y) : NULL, loss = NAN;
    if (yv) {
        loss = 0.0;
        for (int64_t i = 0; i < numel_y(k); i++) loss += yv[i] * r[i];
    }
    free(yv);
    ct_release(x);
    ct_release(w);
    ct_release(b);
    ct_release(y);
    return loss;
}

static void fd_check(const conv_case *k, double *vals, int64_t n, const ct_tensor *grad,
                     const char *what, double *xv, double *wv, double *bv, const double *r) {
    const double h = 1e-6;
    double *got = grad ? ct_test_values(grad) : NULL;
    CT_EXPECT_MSG(got != NULL, "%s: no gradient", what);
    for (int64_t i = 0; got && i < n; i++) {
        double keep = vals[i];
        vals[i] = keep + h;
        double up = fd_loss(k, xv, wv, bv, r);
        vals[i] = keep - h;
        double down = fd_loss(k, xv, wv, bv, r);
        vals[i] = keep;
        double numeric = (up - down) / (2 * h);
        CT_EXPECT_MSG(fabs(numeric - got[i]) <= 1e-7 * (1 + fabs(numeric)),
                      "%s[%lld]: backward %.12g, finite differences %.12g", what, (long long)i,
                      got[i], numeric);
    }
    free(got);
}

static void test_backward_finite_differences(void) {
    const conv_case cases[] = {
        {2, 4, 5, 6, 4, 3, 2, 2, {2, 1}, {1, 1}, {2, 1}, true, false},
        {1, 3, 4, 4, 2, 2, 2, 1, {1, 2}, {0, 1}, {1, 1}, true, true},
        {2, 2, 3, 3, 2, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, true, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const conv_case *k = &cases[c];
        double *xv, *wv, *bv, *r;
        ct_tensor *x = ct_test_random(shape_x(k), CT_FLOAT64, -1, 1, &xv);
        ct_tensor *w = ct_test_random(shape_w(k), CT_FLOAT64, -1, 1, &wv);
        ct_tensor *b = ct_test_random(CT_SHAPE(k->o), CT_FLOAT64, -1, 1, &bv);
        ct_tensor *gy = ct_test_random(shape_y(k), CT_FLOAT64, -1, 1, &r);
        cti_conv2d_params p = params_of(k);
        ct_tensor *gx = NULL, *gw = NULL, *gb = NULL;
        CT_EXPECT_INT_EQ(cti_conv2d_backward(gy, x, w, &p, &gx, &gw, &gb), CT_OK);
        fd_check(k, xv, numel_x(k), gx, "grad_input", xv, wv, bv, r);
        fd_check(k, wv, numel_w(k), gw, "grad_weight", xv, wv, bv, r);
        fd_check(k, bv, k->o, gb, "grad_bias", xv, wv, bv, r);
        ct_decref(gx);
        ct_decref(gw);
        ct_decref(gb);
        ct_release(x);
        ct_release(w);
        ct_release(b);
        ct_release(gy);
        free(xv);
        free(wv);
        free(bv);
        free(r);
    }
}

/* Kernels that hang over the padding for every output (the CPU runs them
 * as the smaller convolution of the taps that read the image,
 * cpu_conv_crop.c): the cropped rows, columns or both, with stride,
 * dilation, groups and negative effective padding, against the float64
 * definition. */
static void test_cropped_kernels(void) {
    const conv_case cases[] = {
        {3, 8, 1, 1, 6, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, true, false},   /* centre tap only */
        {2, 6, 2, 2, 4, 3, 3, 1, {2, 2}, {1, 1}, {1, 1}, false, false},  /* 2×2 -> 1×1, stride 2 */
        {2, 4, 1, 5, 4, 3, 3, 2, {1, 1}, {1, 1}, {1, 1}, true, false},   /* rows cut, groups */
        {2, 3, 1, 1, 2, 3, 3, 1, {1, 1}, {2, 2}, {2, 2}, true, false},   /* dilation 2 */
        {1, 2, 2, 3, 3, 5, 4, 1, {3, 2}, {3, 2}, {1, 1}, false, true},   /* wide padding, unbatched */
        {2, 4, 3, 3, 4, 3, 3, 4, {5, 5}, {1, 1}, {1, 1}, true, false},   /* depthwise, stride past the image */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int d = 0; d < 2; d++) {
            check_forward(&cases[c], d ? CT_FLOAT64 : CT_FLOAT32, false);
            check_backward(&cases[c], d ? CT_FLOAT64 : CT_FLOAT32, 7, false, false);
        }
        check_backward(&cases[c], CT_FLOAT32, 7, true, false);
    }
}

/* relu(conv2d) as one op (ct_conv2d_relu, ct_forward_relu): the values and
 * gradients of ct_relu(ct_conv2d(…)) exactly (relu is exact, and the fused
 * kernel sums in the same order as the unfused one), on layers that oneDNN
 * takes (16+ channels) and on layers that go to im2col, with and without
 * bias, batched and not. */
static void check_conv_relu(const conv_case *k, ct_dtype dt) {
    CT_SCOPE {
        ct_tensor *x = ct_randn(shape_x(k), .dtype = dt, .requires_grad = true);
        ct_tensor *w = ct_randn(shape_w(k), .dtype = dt, .requires_grad = true);
        ct_tensor *b = k->bias ? ct_randn(CT_SHAPE(k->o), .dtype = dt, .requires_grad = true) : NULL;
        ct_tensor *fused = ct_conv2d_relu_with_opts(x, w, b, opts_of(k));
        ct_tensor *plain = ct_relu(ct_conv2d_with_opts(x, w, b, opts_of(k)));
        CT_EXPECT_MSG(fused && plain, "conv2d_relu: %s", ct_last_error());
        if (fused && plain) {
            CT_EXPECT(ct_grad_fn_name(fused) && strcmp(ct_grad_fn_name(fused), "ConvolutionReluBackward0") == 0);
            double *want = ct_test_values(plain);
            CT_EXPECT_CLOSE(fused, want, ct_numel(plain), 0, 0);
            free(want);
            ct_tensor *gy = ct_randn(ct_shape_of(fused), .dtype = dt);
            ct_tensor *leaves[3] = {x, w, b};
            double *grads[2][3] = {{0}};
            ct_tensor *roots[2] = {fused, plain};
            for (int r = 0; r < 2; r++) {
                CT_EXPECT_INT_EQ(ct_backward_ex(roots[r], gy, false), CT_OK);
                for (int i = 0; i < 3; i++)
                    if (leaves[i]) grads[r][i] = ct_test_values(ct_grad(leaves[i])), ct_set_grad(leaves[i], NULL);
            }
            for (int i = 0; i < 3; i++) {
                if (!leaves[i]) continue;
                ct_tensor *got = ct_test_tensor(grads[0][i], ct_shape_of(leaves[i]), CT_FLOAT64);
                CT_EXPECT_CLOSE(got, grads[1][i], ct_numel(leaves[i]), 0, 0);
                free(grads[0][i]), free(grads[1][i]);
            }
        }
    }
}

static void test_conv_relu(void) {
    const conv_case cases[] = {
        {4, 16, 8, 8, 32, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, true, false},   /* oneDNN, bias + relu inside */
        {4, 16, 8, 8, 16, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, false, false},  /* oneDNN, relu inside */
        {2, 3, 7, 6, 5, 3, 2, 1, {2, 1}, {1, 0}, {1, 1}, true, false},     /* im2col, then relu */
        {1, 4, 5, 5, 4, 3, 3, 2, {1, 1}, {1, 1}, {1, 1}, true, true},      /* unbatched, groups */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        check_conv_relu(&cases[c], CT_FLOAT32);
        check_conv_relu(&cases[c], CT_FLOAT64);
    }
    CT_SCOPE { /* the module form, and its fallback for a module that is not a Conv2d */
        ct_module *conv = ct_nn_conv2d(16, 16, 3, (ct_conv2d_opts){.padding = 1});
        ct_module *lin = ct_nn_linear(5, 3, true);
        ct_tensor *x = ct_randn(CT_SHAPE(2, 16, 8, 8)), *v = ct_randn(CT_SHAPE(4, 5));
        double *want = ct_test_values(ct_relu(ct_forward(conv, x)));
        CT_EXPECT_CLOSE(ct_forward_relu(conv, x), want, 2 * 16 * 64, 0, 0);
        free(want);
        want = ct_test_values(ct_relu(ct_forward(lin, v)));
        CT_EXPECT_CLOSE(ct_forward_relu(lin, v), want, 12, 0, 0);
        free(want);
        ct_module_free(conv), ct_module_free(lin);
    }
}

/* Through autograd: ct_conv2d records ConvolutionBackward0, and
 * gradcheck (finite differences of the public op) accepts its gradients. */
static ct_tensor *gradcheck_conv(ct_tensor *const *in, int n, void *user) {
    const conv_case *k = user;
    return ct_conv2d_with_opts(in[0], in[1], n > 2 ? in[2] : NULL, opts_of(k));
}

static void test_autograd(void) {
    const conv_case cases[] = {
        {2, 4, 5, 6, 4, 3, 2, 2, {2, 1}, {1, 1}, {2, 1}, true, false},
        {1, 3, 4, 4, 2, 2, 2, 1, {1, 2}, {0, 1}, {1, 1}, false, true},
        {3, 2, 3, 3, 4, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, true, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const conv_case *k = &cases[c];
        ct_tensor *in[3] = {ct_randn(shape_x(k), .dtype = CT_FLOAT64, .requires_grad = true),
                            ct_randn(shape_w(k), .dtype = CT_FLOAT64, .requires_grad = true),
                            ct_randn(CT_SHAPE(k->o), .dtype = CT_FLOAT64, .requires_grad = true)};
        ct_tensor *y = gradcheck_conv(in, k->bias ? 3 : 2, (void *)k);
        CT_EXPECT(y && ct_grad_fn_name(y) && strcmp(ct_grad_fn_name(y), "ConvolutionBackward0") == 0);
        bool ok = false;
        CT_EXPECT_INT_EQ(ct_gradcheck(gradcheck_conv, in, k->bias ? 3 : 2, (void *)k, &ok), CT_OK);
        CT_EXPECT_MSG(ok, "gradcheck case %zu: %s", c, ct_last_error());
        ct_clear_error();
        for (int i = 0; i < 3; i++) ct_release(in[i]);
        ct_release(y);
    }
}

/* A batch whose column matrix exceeds the backend's cols_budget is done a
 * few images at a time (and an image above it alone); results must not
 * depend on it. */
static void test_chunked(void) {
    const struct ct_backend_conv *cv = ct_backend_for(CT_DEVICE_CPU)->ops->conv;
    CT_EXPECT(cv && cv->cols_budget > 0);
    if (!cv || cv->cols_budget <= 0) return;
    const int64_t per_image = 4 * 3 * 3 * 32 * 32, chunk = cv->cols_budget / per_image;
    CT_EXPECT(chunk >= 1 && chunk <= 64); /* else pick other sizes here */
    conv_case k = {2 * chunk + 3, 4, 32, 32, 6, 3, 3, 2, {1, 1}, {1, 1}, {1, 1}, true, false};
    check_forward(&k, CT_FLOAT32, false);
    check_backward(&k, CT_FLOAT64, 7, false, false);
    int64_t side = 8;
    while (8 * 25 * side * side <= cv->cols_budget) side *= 2;
    conv_case big = {2, 8, side, side, 2, 5, 5, 1, {1, 1}, {2, 2}, {1, 1}, true, false};
    check_forward(&big, CT_FLOAT32, false);
    check_backward(&big, CT_FLOAT32, 7, true, false);
}

/* ---- PyTorch fixtures ------------------------------------------------------------------- */

static ct_tensor *fixture_tensor(const cf_tensor *t, ct_dtype dt) {
    return ct_test_tensor(t->values, ct_shape_make(t->ndim, t->dims), dt);
}

static void check_fixture(const char *name, const cf_file *f, ct_dtype dt) {
    const cf_tensor *pr = cf_get(f, "params"), *bias = cf_get(f, "bias");
    const cf_tensor *xin = cf_get(f, "input"), *win = cf_get(f, "weight");
    const double *pv = pr->values;
    const int64_t stride[2] = {(int64_t)pv[0], (int64_t)pv[1]};
    const int64_t padding[2] = {(int64_t)pv[2], (int64_t)pv[3]};
    const int64_t dilation[2] = {(int64_t)pv[4], (int64_t)pv[5]};
    ct_tensor *x = fixture_tensor(xin, dt), *w = fixture_tensor(win, dt);
    ct_tensor *b = bias ? fixture_tensor(bias, dt) : NULL;
    ct_tensor *gy = fixture_tensor(cf_get(f, "grad_out"), dt);
    double rtol = dt == CT_FLOAT64 ? 1e-10 : 1e-5, atol = dt == CT_FLOAT64 ? 1e-12 : 1e-5;
    ct_tensor *y = ct_conv2d(x, w, b, .stride = {stride[0], stride[1]}, .padding = {padding[0], padding[1]},
                             .dilation = {dilation[0], dilation[1]}, .groups = (int64_t)pv[6]);
    const cf_tensor *out = cf_get(f, "out");
    if (!CT_EXPECT_CLOSE(y, out->values, out->numel, rtol, atol))
        ct_test_fail(__FILE__, __LINE__, "fixture %s (%s): forward", name, ct_dtype_name(dt));
    cti_conv2d_params p = cti_conv2d_params_make(stride, padding, dilation, (int64_t)pv[6]);
    ct_tensor *g[3] = {NULL, NULL, NULL};
    CT_EXPECT_INT_EQ(cti_conv2d_backward(gy, x, w, &p, &g[0], &g[1], &g[2]), CT_OK);
    static const char *const names[3] = {"grad_input", "grad_weight", "grad_bias"};
    for (int i = 0; i < 3; i++) {
        const cf_tensor *want = cf_get(f, names[i]);
        if (!CT_EXPECT_CLOSE(g[i], want->values, want->numel, rtol, atol))
            ct_test_fail(__FILE__, __LINE__, "fixture %s (%s): %s", name, ct_dtype_name(dt),
                         names[i]);
        ct_decref(g[i]);
    }
    ct_release(x);
    ct_release(w);
    ct_release(b);
    ct_release(gy);
    ct_release(y);
}

static void test_pytorch_fixtures(void) {
    static const char *const cases[] = {"basic",     "strided_groups",   "dilated_nobias",
                                        "depthwise", "pointwise",        "pointwise_groups",
                                        "unbatched", "wide_kernel"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf_file f;
        if (!cf_load(__FILE__, cases[i], &f)) {
            ct_test_fail(__FILE__, __LINE__, "cannot read fixture %s (run tools/gen_fixtures_conv.py)",
                         cases[i]);
            continue;
        }
        check_fixture(cases[i], &f, CT_FLOAT64);
        check_fixture(cases[i], &f, CT_FLOAT32);
        cf_free(&f);
    }
}

/* ---- errors -------------------------------------------------------------------------------- */

/* conv2d(x of shape xs, w of shape ws, bias of bs or none) must fail with
 * code and a message containing needle. */
static void expect_conv_error(ct_shape xs, ct_shape ws, const ct_shape *bs, ct_conv_opts o, ct_status code,
                              const char *needle) {
    ct_tensor *x = ct_zeros(xs), *w = ct_zeros(ws), *b = bs ? ct_zeros(*bs) : NULL;
    ct_tensor *y = ct_conv2d_with_opts(x, w, b, o);
    CT_EXPECT(y == NULL);
    CT_EXPECT_ERROR(code, needle);
    ct_release(x);
    ct_release(w);
    ct_release(b);
    ct_release(y);
}

static void test_shape_errors(void) {
    const ct_shape b3 = CT_SHAPE(3), b41 = CT_SHAPE(4, 1);
    const ct_conv_opts none = CT_CONV_OPTS();
    expect_conv_error(CT_SHAPE(1, 4, 32, 32), CT_SHAPE(64, 3, 7, 7), NULL, none, CT_ERR_SHAPE,
                      "conv2d: Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, "
                      "32, 32] to have 3 channels, but got 4 channels instead");
    expect_conv_error(CT_SHAPE(4, 5, 5), CT_SHAPE(2, 3, 3, 3), NULL, none, CT_ERR_SHAPE,
                      "expected input[1, 4, 5, 5] to have 3 channels, but got 4");
    expect_conv_error(CT_SHAPE(2, 3), CT_SHAPE(4, 3, 3, 3), NULL, none, CT_ERR_SHAPE,
                      "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
                      "size: [2, 3]");
    expect_conv_error(CT_SHAPE(1, 2, 3, 4, 5), CT_SHAPE(4, 3, 3, 3), NULL, none, CT_ERR_SHAPE,
                      "but got input of size: [1, 2, 3, 4, 5]");
    expect_conv_error(CT_SHAPE(1, 3, 8, 8), CT_SHAPE(4, 3, 3), NULL, none, CT_ERR_SHAPE,
                      "Expected 4-dimensional weight for 4-dimensional input [1, 3, 8, 8], but got "
                      "3-dimensional weight of size [4, 3, 3] instead");
    expect_conv_error(CT_SHAPE(1, 3, 8, 8), CT_SHAPE(4, 3, 0, 3), NULL, none, CT_ERR_SHAPE,
                      "kernel size should be greater than zero, but got kernel_height: 0 "
                      "kernel_width: 3");
    expect_conv_error(CT_SHAPE(1, 3, 8, 8), CT_SHAPE(4, 3, 3, 3), &b3, none, CT_ERR_SHAPE,
                      "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 "
                      "elements, but got bias of size [3] instead");
    expect_conv_error(CT_SHAPE(1, 3, 8, 8), CT_SHAPE(4, 3, 3, 3), &b41, none, CT_ERR_SHAPE,
                      "but got bias of size [4, 1] instead");
    expect_conv_error(CT_SHAPE(1, 6, 8, 8), CT_SHAPE(4, 3, 3, 3), NULL, CT_CONV_OPTS(.groups = 8),
                      CT_ERR_SHAPE,
                      "Given groups=8, expected weight to be at least 8 at dimension 0, but got "
                      "weight of size [4, 3, 3, 3] instead");
    expect_conv_error(CT_SHAPE(1, 6, 8, 8), CT_SHAPE(5, 3, 3, 3), NULL, CT_CONV_OPTS(.groups = 2),
                      CT_ERR_SHAPE,
                      "Given groups=2, expected weight to be divisible by 2 at dimension 0, but "
                      "got weight of size [[5, 3, 3, 3]] instead");
    expect_conv_error(CT_SHAPE(1, 3, 2, 2), CT_SHAPE(4, 3, 3, 3), NULL, none, CT_ERR_SHAPE,
                      "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
                      "Kernel size can't be greater than actual input size");
    expect_conv_error(CT_SHAPE(1, 3, 2, 8), CT_SHAPE(4, 3, 3, 3), NULL, CT_CONV_OPTS(.dilation = {2, 2}),
                      CT_ERR_SHAPE, "(2 x 8). Kernel size: (5 x 5)");
    expect_conv_error(CT_SHAPE(1, 3, 8, 0), CT_SHAPE(4, 3, 1, 1), NULL, none, CT_ERR_SHAPE,
                      "Calculated padded input size per channel: (8 x 0)");
}

/* A zero stride, dilation or groups is "not given" in ct_conv_opts (only
 * the all-zero pair); a pair with one zero entry is refused as in PyTorch. */
static void test_param_errors(void) {
    const ct_shape xs = CT_SHAPE(1, 3, 8, 8), ws = CT_SHAPE(4, 3, 3, 3);
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.stride = {0, 1}), CT_ERR_INVALID_ARG,
                      "conv2d: non-positive stride is not supported");
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.stride = {2}), CT_ERR_INVALID_ARG,
                      "conv2d: non-positive stride is not supported");
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.stride = {1, -1}), CT_ERR_INVALID_ARG,
                      "non-positive stride is not supported");
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.padding = {0, -1}), CT_ERR_INVALID_ARG,
                      "conv2d: negative padding is not supported");
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.dilation = {1, 0}), CT_ERR_INVALID_ARG,
                      "conv2d: dilation should be greater than zero, but got [1, 0]");
    expect_conv_error(xs, ws, NULL, CT_CONV_OPTS(.groups = -2), CT_ERR_INVALID_ARG,
                      "conv2d: non-positive groups is not supported");
}

static void test_dtype_and_device_errors(void) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 3, 8, 8));
    ct_tensor *wd = ct_zeros(CT_SHAPE(4, 3, 3, 3), .dtype = CT_FLOAT64);
    ct_tensor *w = ct_zeros(CT_SHAPE(4, 3, 3, 3));
    ct_tensor *bd = ct_zeros(CT_SHAPE(4), .dtype = CT_FLOAT64);
    ct_tensor *bh = ct_zeros(CT_SHAPE(4), .dtype = CT_FLOAT16);
    CT_EXPECT(ct_conv2d(x, wd, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "conv2d: expected scalar type Float but found Double");
    CT_EXPECT(ct_conv2d(x, w, bd) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "conv2d: Input type (float) and bias type (double) should be the same");
    CT_EXPECT(ct_conv2d(x, w, bh) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "Input type (float) and bias type (c10::Half) should be the same");
    ct_tensor *xb = ct_zeros(CT_SHAPE(1, 3, 8, 8), .dtype = CT_BOOL);
    ct_tensor *wb = ct_zeros(CT_SHAPE(4, 3, 3, 3), .dtype = CT_BOOL);
    CT_EXPECT(ct_conv2d(xb, wb, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"slow_conv2d_cpu\" not implemented for 'Bool'");
    if (ct_test_opencl_devices("conv2d across devices") > 0) {
        ct_tensor *wcl = ct_to_device(w, ct_device_opencl(0));
        CT_EXPECT(ct_conv2d(x, wcl, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "conv2d: Expected all tensors to be on the same device");
        ct_release(wcl);
    }
    ct_clear_error();
    ct_release(x);
    ct_release(wd);
    ct_release(w);
    ct_release(bd);
    ct_release(bh);
    ct_release(xb);
    ct_release(wb);
}

static void test_backward_errors(void) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 3, 8, 8)), *w = ct_zeros(CT_SHAPE(4, 3, 3, 3));
    ct_tensor *bad = ct_zeros(CT_SHAPE(1, 4, 5, 6)), *gd = ct_zeros(CT_SHAPE(1, 4, 6, 6), .dtype = CT_FLOAT64);
    cti_conv2d_params p = cti_conv2d_params_make(NULL, NULL, NULL, 1);
    ct_tensor *gx = x, *gw = x, *gb = x; /* must be reset to NULL on failure */
    CT_EXPECT_INT_EQ(cti_conv2d_backward(bad, x, w, &p, &gx, &gw, &gb), CT_ERR_SHAPE);
    CT_EXPECT(gx == NULL && gw == NULL && gb == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "conv2d_backward: expected grad_output of size [1, 4, 6, 6] (the "
                                  "output of conv2d), but got [1, 4, 5, 6]");
    CT_EXPECT_INT_EQ(cti_conv2d_backward(gd, x, w, &p, &gx, NULL, NULL), CT_ERR_DTYPE);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "conv2d_backward: expected scalar type Float but found Double");
    ct_tensor *xl = ct_zeros(CT_SHAPE(1, 3, 4, 4), .dtype = CT_INT64);
    ct_tensor *wl = ct_zeros(CT_SHAPE(2, 3, 3, 3), .dtype = CT_INT64);
    ct_tensor *gl = ct_zeros(CT_SHAPE(1, 2, 2, 2), .dtype = CT_INT64);
    CT_EXPECT_INT_EQ(cti_conv2d_backward(gl, xl, wl, &p, &gx, NULL, NULL), CT_ERR_DTYPE);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "\"slow_conv2d_cpu_grad_input\" not implemented for 'Long'");
    cti_conv2d_params p0 = cti_conv2d_params_make(CT_PAIR(0, 1), NULL, NULL, 1);
    CT_EXPECT_INT_EQ(cti_conv2d_backward(bad, x, w, &p0, NULL, &gw, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "conv2d_backward: non-positive stride is not supported");
    ct_release(x);
    ct_release(w);
    ct_release(bad);
    ct_release(gd);
    ct_release(xl);
    ct_release(wl);
    ct_release(gl);
}

/* A NULL operand (an earlier failure) gives NULL without a new error. */
static void test_null_propagation(void) {
    ct_tensor *x = ct_zeros(CT_SHAPE(1, 3, 8, 8)), *w = ct_zeros(CT_SHAPE(4, 3, 3, 3));
    ct_clear_error();
    CT_EXPECT(ct_conv2d(NULL, w, NULL) == NULL);
    CT_EXPECT(ct_conv2d(x, NULL, NULL) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    ct_tensor *gx = NULL;
    cti_conv2d_params p = cti_conv2d_params_make(NULL, NULL, NULL, 1);
    CT_EXPECT(cti_conv2d_backward(NULL, x, w, &p, &gx, NULL, NULL) != CT_OK && gx == NULL);
    ct_clear_error();
    ct_release(x);
    ct_release(w);
}

/* It covers what the random cases
 * (batches of at most 3) do not reach in the CPU backend's whole-convolution
 * kernels (src/backends/cpu/cpu_conv_fused.c): several images per product
 * (small output planes, N > 8), batches spread over threads, weight
 * gradients summed over many blocks, pointwise chunks, groups, strides,
 * padding and dilation; and that the results do not depend on the thread
 * count. */

/* OpenMP's thread count; a build without OpenMP runs on one thread, and
 * the comparison below then checks one thread against itself. */
static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}


/* y and all three gradients of case k, as float64 values in one array
 * (caller frees). */
static double *conv_all(const conv_case *k, const operands *op, const ct_tensor *gy) {
    cti_conv2d_params p = params_of(k);
    ct_tensor *y = ct_conv2d_with_opts(op->x, op->w, op->b, opts_of(k));
    ct_tensor *g[3] = {NULL, NULL, NULL};
    CT_EXPECT_INT_EQ(cti_conv2d_backward(gy, op->x, op->w, &p, &g[0], &g[1], &g[2]), CT_OK);
    const int64_t counts[4] = {numel_y(k), numel_x(k), numel_w(k), k->o};
    const ct_tensor *parts[4] = {y, g[0], g[1], g[2]};
    double *all = calloc((size_t)(counts[0] + counts[1] + counts[2] + counts[3]), sizeof(double));
    double *dst = all;
    for (int i = 0; i < 4; i++) {
        double *v = parts[i] ? ct_test_values(parts[i]) : NULL;
        CT_EXPECT(v != NULL);
        if (v) memcpy(dst, v, sizeof(double) * (size_t)counts[i]);
        free(v);
        dst += counts[i];
    }
    ct_release(y);
    for (int i = 0; i < 3; i++) ct_decref(g[i]);
    return all;
}

static void test_large_batches(void) {
    const conv_case cases[] = {
        /* n, c, h, w, o, kh, kw, groups, stride, padding, dilation, bias, unbatched */
        {37, 4, 9, 7, 6, 3, 3, 2, {1, 2}, {1, 0}, {1, 1}, true, false},   /* small planes: staged chunks */
        {45, 3, 13, 13, 8, 3, 3, 1, {1, 1}, {0, 0}, {1, 1}, true, false}, /* W4's second layer, smaller */
        {19, 6, 6, 6, 4, 1, 1, 2, {1, 1}, {0, 0}, {1, 1}, false, false},  /* pointwise, several per chunk */
        {12, 2, 30, 30, 4, 3, 2, 1, {2, 1}, {2, 1}, {2, 1}, true, false}, /* one image per chunk */
        {70, 2, 5, 5, 3, 2, 2, 1, {1, 1}, {1, 1}, {1, 1}, true, false},   /* 70 images: blocks of chunks */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const conv_case *k = &cases[i];
        check_forward(k, CT_FLOAT32, false);
        check_forward(k, CT_FLOAT64, i % 2 == 1);
        check_backward(k, CT_FLOAT64, 7, i % 2 == 0, false);
        check_backward(k, CT_FLOAT32, i == 3 ? 2 : 7, false, i == 4);
        /* the same results, bit for bit, on one thread and on several */
        operands op = make_operands(k, CT_FLOAT32, false);
        ct_tensor *gy = ct_test_random(shape_y(k), CT_FLOAT32, -1, 1, NULL);
        const int threads = max_threads();
        ct_test_set_threads(1);
        double *one = conv_all(k, &op, gy);
        ct_test_set_threads(threads > 1 ? threads : 2);
        double *many = conv_all(k, &op, gy);
        ct_test_set_threads(threads);
        const int64_t total = numel_y(k) + numel_x(k) + numel_w(k) + k->o;
        CT_EXPECT_MSG(memcmp(one, many, sizeof(double) * (size_t)total) == 0,
                      "case %zu: results differ between 1 and %d threads", i, threads);
        free(one);
        free(many);
        ct_release(gy);
        free_operands(&op);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_forward_random);
    CT_RUN(test_pointwise);
    CT_RUN(test_integer_dtypes);
    CT_RUN(test_empty);
    CT_RUN(test_backward_random);
    CT_RUN(test_backward_pointwise);
    CT_RUN(test_backward_finite_differences);
    CT_RUN(test_autograd);
    CT_RUN(test_chunked);
    CT_RUN(test_cropped_kernels);
    CT_RUN(test_conv_relu);
    CT_RUN(test_large_batches);
    CT_RUN(test_pytorch_fixtures);
    CT_RUN(test_shape_errors);
    CT_RUN(test_param_errors);
    CT_RUN(test_dtype_and_device_errors);
    CT_RUN(test_backward_errors);
    CT_RUN(test_null_propagation);
    return ct_test_finish();
}
