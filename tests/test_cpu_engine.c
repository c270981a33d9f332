/*
 * test_cpu_engine.c — the CPU's compute engines (cpu_gemm.c, cpu_dnnl.c):
 * float32 products through the GEMM engine chosen for this CPU, in every
 * layout the matmul front-end hands it (transposed views, one output row or
 * column, strided vectors, long sums, broadcast batches), and float32
 * convolutions with oneDNN on and off against float64 results, at the
 * edges of the layout conversions (odd channel counts, batch 1, groups,
 * stride, dilation, padding, a geometry oneDNN cannot express, a
 * non-contiguous input), with and without the bias added inside. A white-box counter checks which path each
 * convolution took, so a silent fallback cannot pass for oneDNN.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/cpu/cpu_dnnl.h"
#include "ctorch/backends.h"
#include "ctorch/functional_conv.h"
#include "testutil.h"

/* ---- GEMM ------------------------------------------------------------------------------ */

/* a @ b in float32 against the same product of the same values in float64;
 * values lie in [-1, 1), so an element's error is bounded by k roundings. */
static void check_matmul(const char *what, ct_tensor *a32, ct_tensor *b32, int64_t k) {
    CT_SCOPE {
        ct_tensor *ref = ct_matmul(ct_to_dtype(a32, CT_FLOAT64), ct_to_dtype(b32, CT_FLOAT64));
        ct_tensor *got = ct_matmul(a32, b32);
        CT_EXPECT_MSG(ref && got, "%s: %s", what, ct_last_error());
        if (ref && got) {
            double *r = ct_test_values(ref);
            int64_t n = ct_numel(ref);
            if (!ct_test_close(__FILE__, __LINE__, what, got, r, n, 1e-5, 2e-7 * (double)k + 1e-6))
                fprintf(stderr, "  (engine %s)\n", ct_backends_cpu_gemm_engine());
            free(r);
        }
    }
}

static ct_tensor *rand32(ct_shape s) { return ct_test_random(s, CT_FLOAT32, -1, 1, NULL); }

static void test_gemm_layouts(void) {
    CT_SCOPE {
        check_matmul("square 65", rand32(CT_SHAPE(65, 65)), rand32(CT_SHAPE(65, 65)), 65);
        check_matmul("one output row", rand32(CT_SHAPE(1, 300)), rand32(CT_SHAPE(300, 70)), 300);
        check_matmul("one output column", rand32(CT_SHAPE(70, 300)), rand32(CT_SHAPE(300, 1)), 300);
        ct_tensor *b = rand32(CT_SHAPE(300, 5));
        check_matmul("strided vector", rand32(CT_SHAPE(40, 300)), ct_select(b, 1, 3), 300);
        check_matmul("row vector times transposed", ct_select(rand32(CT_SHAPE(300, 4)), 1, 2),
                     ct_transpose(rand32(CT_SHAPE(50, 300)), 0, 1), 300);
        check_matmul("transposed a", ct_transpose(rand32(CT_SHAPE(120, 33)), 0, 1),
                     rand32(CT_SHAPE(120, 47)), 120);
        check_matmul("transposed both", ct_transpose(rand32(CT_SHAPE(90, 33)), 0, 1),
                     ct_transpose(rand32(CT_SHAPE(47, 90)), 0, 1), 90);
        check_matmul("long sum (weight-gradient shape)", rand32(CT_SHAPE(16, 20000)),
                     rand32(CT_SHAPE(20000, 24)), 20000);
        check_matmul("batch with a broadcast operand", rand32(CT_SHAPE(6, 20, 130)),
                     rand32(CT_SHAPE(130, 30)), 130);
        check_matmul("batch of large products", rand32(CT_SHAPE(2, 200, 150)),
                     rand32(CT_SHAPE(2, 150, 180)), 150);
    }
}

static void test_engine_names(void) {
    const char *engine = ct_backends_cpu_gemm_engine(), *cap = ct_backends_cpu_get_cpu_capability();
    CT_EXPECT(engine && engine[0]);
    CT_EXPECT(strcmp(cap, "AVX512") == 0 || strcmp(cap, "AVX2") == 0 || strcmp(cap, "DEFAULT") == 0);
    /* oneDNN is the engine exactly when it is available, and only on AVX2 CPUs */
    bool onednn = strncmp(engine, "oneDNN", 6) == 0;
    CT_EXPECT_MSG(onednn == ct_backends_mkldnn_is_available(), "engine '%s'", engine);
    if (onednn) CT_EXPECT_MSG(strcmp(cap, "DEFAULT") != 0, "oneDNN chosen on a %s CPU", cap);
    CT_EXPECT(ct_backends_mkldnn_get_enabled());
    printf("  GEMM engine: %s, CPU capability %s\n", engine, cap);
}

/* ---- convolutions ----------------------------------------------------------------------- */

typedef struct engine_case {
    const char *name;
    int64_t n, c, h, w, o, k, stride, pad, dil, groups;
    bool onednn;     /* oneDNN takes it when available and enabled */
    bool noncontig;  /* the input is a non-contiguous view */
    bool bias;
} engine_case;

static const engine_case CASES[] = {
    {"16->16 8x8 k3 p1", 2, 16, 8, 8, 16, 3, 1, 1, 1, 1, true, false, false},
    {"16->16 8x8 k3 p1 with bias", 2, 16, 8, 8, 16, 3, 1, 1, 1, 1, true, false, true},
    {"odd channels 17->33, batch 1, stride 2, bias", 1, 17, 9, 7, 33, 3, 2, 1, 1, 1, true, false, true},
    {"dilation 2, padding 2", 3, 32, 10, 10, 16, 3, 1, 2, 2, 1, true, false, false},
    {"groups 2, 1x1, 128->64", 2, 128, 6, 6, 64, 1, 1, 0, 1, 2, true, false, false},
    {"1x1 over 16 channels (short sums: im2col)", 2, 16, 6, 6, 32, 1, 1, 0, 1, 1, false, false, false},
    {"3 channels 7x7 stride 2 (a stem oneDNN takes)", 2, 3, 16, 16, 16, 7, 2, 3, 1, 1, true, false, true},
    {"groups 3, 48->48, bias", 2, 48, 5, 5, 48, 3, 1, 1, 1, 3, true, false, true},
    {"non-contiguous input", 2, 16, 7, 9, 24, 3, 1, 1, 1, 1, true, true, false},
    {"needs negative right padding, bias", 2, 16, 7, 7, 16, 2, 2, 0, 1, 1, false, false, true},
    {"3 input channels (im2col wins), bias", 2, 3, 8, 8, 16, 3, 1, 1, 1, 1, false, false, true},
    {"2x2 output (im2col wins)", 4, 32, 4, 4, 32, 3, 2, 1, 1, 1, false, false, false},
};

static int64_t out_size(const engine_case *e, int64_t in) {
    return (in + 2 * e->pad - e->dil * (e->k - 1) - 1) / e->stride + 1;
}

/* The forward and both gradients of one case, in `dt`, from the same values. */
static void conv_results(const engine_case *e, ct_dtype dt, const double *xv, const double *wv,
                         const double *bv, const double *gyv, double **y, double **gx, double **gw,
                         double **gb) {
    CT_SCOPE {
        const ct_shape xs = CT_SHAPE(e->n, e->c, e->h, e->w);
        ct_tensor *x = e->noncontig ? ct_test_noncontiguous(xv, xs, dt) : ct_test_tensor(xv, xs, dt);
        ct_tensor *w = ct_test_tensor(wv, CT_SHAPE(e->o, e->c / e->groups, e->k, e->k), dt);
        ct_tensor *b = e->bias ? ct_test_tensor(bv, CT_SHAPE(e->o), dt) : NULL;
        ct_set_requires_grad(x, true), ct_set_requires_grad(w, true);
        if (b) ct_set_requires_grad(b, true);
        ct_tensor *out = ct_conv2d(x, w, b, .stride = {e->stride, e->stride}, .padding = {e->pad, e->pad},
                                   .dilation = {e->dil, e->dil}, .groups = e->groups);
        CT_EXPECT_MSG(out != NULL, "%s: %s", e->name, ct_last_error());
        ct_tensor *gy = out ? ct_test_tensor(gyv, ct_shape_of(out), dt) : NULL;
        CT_EXPECT_MSG(gy && ct_backward_ex(out, gy, false) == CT_OK, "%s: %s", e->name, ct_last_error());
        *y = out ? ct_test_values(out) : NULL;
        *gx = out ? ct_test_values(ct_grad(x)) : NULL;
        *gw = out ? ct_test_values(ct_grad(w)) : NULL;
        *gb = out && b ? ct_test_values(ct_grad(b)) : NULL;
    }
}

static void compare(const engine_case *e, const char *what, const double *got, const double *ref,
                    int64_t n, int64_t terms) {
    ct_tensor *t = ct_test_tensor(got, CT_SHAPE(n), CT_FLOAT64);
    char label[160];
    snprintf(label, sizeof label, "%s: %s", e->name, what);
    ct_test_close(__FILE__, __LINE__, label, t, ref, n, 1e-5, 2e-7 * (double)terms + 1e-6);
    ct_release(t);
}

static double float_value(double v) { return (float)v; }

/* A case's inputs in [-1, 1), each value exact in the dtype `round` rounds
 * to, so that every dtype starts from the same inputs (free the arrays). */
static void make_inputs(const engine_case *e, double (*round)(double), double **xv, double **wv, double **gyv,
                        double *bv) {
    const int64_t nx = e->n * e->c * e->h * e->w, nw = e->o * (e->c / e->groups) * e->k * e->k;
    const int64_t ny = e->n * e->o * out_size(e, e->h) * out_size(e, e->w);
    *xv = malloc(sizeof(double) * nx), *wv = malloc(sizeof(double) * nw), *gyv = malloc(sizeof(double) * ny);
    ct_test_fill_uniform(*xv, nx, -1, 1), ct_test_fill_uniform(*wv, nw, -1, 1), ct_test_fill_uniform(*gyv, ny, -1, 1);
    for (int64_t i = 0; i < nx; i++) (*xv)[i] = round((*xv)[i]);
    for (int64_t i = 0; i < nw; i++) (*wv)[i] = round((*wv)[i]);
    for (int64_t i = 0; i < ny; i++) (*gyv)[i] = round((*gyv)[i]);
    for (int64_t i = 0; i < e->o; i++) bv[i] = round(ct_test_uniform(-1, 1));
}

static void run_case(const engine_case *e) {
    const int64_t oh = out_size(e, e->h), ow = out_size(e, e->w);
    const int64_t nx = e->n * e->c * e->h * e->w, nw = e->o * (e->c / e->groups) * e->k * e->k;
    const int64_t ny = e->n * e->o * oh * ow;
    double *xv, *wv, *gyv, bv[64];
    make_inputs(e, float_value, &xv, &wv, &gyv, bv);
    double *ry, *rgx, *rgw, *rgb;
    conv_results(e, CT_FLOAT64, xv, wv, bv, gyv, &ry, &rgx, &rgw, &rgb);
    const int64_t fwd_terms = (e->c / e->groups) * e->k * e->k;
    const int64_t dx_terms = (e->o / e->groups) * e->k * e->k, dw_terms = e->n * oh * ow;
    for (int on = 1; on >= 0; on--) {
        ct_backends_mkldnn_set_enabled(on);
        int64_t before = ct_cpu_dnnl_conv_runs();
        double *y, *gx, *gw, *gb;
        conv_results(e, CT_FLOAT32, xv, wv, bv, gyv, &y, &gx, &gw, &gb);
        /* The forward runs on oneDNN wherever it takes the layer; a gradient may
         * still go to im2col where oneDNN has no direct kernel for it. */
        const int64_t runs = ct_cpu_dnnl_conv_runs() - before;
        const bool expect = on && e->onednn && ct_backends_mkldnn_is_available();
        CT_EXPECT_MSG(expect ? runs >= 1 && runs <= 3 : runs == 0, "%s (oneDNN %s): %lld oneDNN runs, expected %s",
                      e->name, on ? "on" : "off", (long long)runs, expect ? "1 to 3" : "none");
        if (y && ry) {
            compare(e, on ? "y (oneDNN on)" : "y (oneDNN off)", y, ry, ny, fwd_terms);
            compare(e, on ? "dx (oneDNN on)" : "dx (oneDNN off)", gx, rgx, nx, dx_terms);
            compare(e, on ? "dw (oneDNN on)" : "dw (oneDNN off)", gw, rgw, nw, dw_terms);
            if (e->bias) compare(e, on ? "db (oneDNN on)" : "db (oneDNN off)", gb, rgb, e->o, dw_terms);
        }
        free(y), free(gx), free(gw), free(gb);
    }
    ct_backends_mkldnn_set_enabled(true);
    free(ry), free(rgx), free(rgw), free(rgb), free(xv), free(wv), free(gyv);
}

static void test_conv_engines(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) run_case(&CASES[i]);
}

/* Deterministic algorithms keep convolutions on ctorch's own kernels, whose
 * sums do not depend on the thread count. */
static void test_deterministic_declines_onednn(void) {
    ct_use_deterministic_algorithms(true);
    int64_t before = ct_cpu_dnnl_conv_runs();
    double *y, *gx, *gw, *gb;
    const engine_case *e = &CASES[0];
    const int64_t nx = e->n * e->c * e->h * e->w, nw = e->o * e->c * e->k * e->k, ny = e->n * e->o * 8 * 8;
    double *xv = calloc((size_t)nx, sizeof(double)), *wv = calloc((size_t)nw, sizeof(double));
    double *gyv = calloc((size_t)ny, sizeof(double));
    conv_results(e, CT_FLOAT32, xv, wv, NULL, gyv, &y, &gx, &gw, &gb);
    CT_EXPECT_INT_EQ(ct_cpu_dnnl_conv_runs() - before, 0);
    ct_use_deterministic_algorithms(false);
    free(y), free(gx), free(gw), free(gb), free(xv), free(wv), free(gyv);
}

/* ---- bfloat16: widened or native, each output rounded once ------------------------------ */

static double bf16_value(double v) { return ct_bfloat16_to_float(ct_float_to_bfloat16((float)v)); }

static void compare_bf16(const engine_case *e, const char *what, const double *got, const double *ref,
                         int64_t n) {
    ct_tensor *t = ct_test_tensor(got, CT_SHAPE(n), CT_FLOAT64);
    char label[160];
    snprintf(label, sizeof label, "%s: %s", e->name, what);
    /* one rounding to bfloat16 (2^-8 relative) after a float32 sum */
    ct_test_close(__FILE__, __LINE__, label, t, ref, n, 1.0 / 256, 1e-4);
    ct_release(t);
}

/* A bfloat16 layer's forward and gradients through oneDNN, against float64
 * results from the same (bfloat16-exact) values. */
static void run_case_bf16(const engine_case *e, ct_cpu_bf16_mode mode) {
    const int64_t oh = out_size(e, e->h), ow = out_size(e, e->w);
    const int64_t nx = e->n * e->c * e->h * e->w, nw = e->o * (e->c / e->groups) * e->k * e->k;
    const int64_t ny = e->n * e->o * oh * ow;
    double *xv, *wv, *gyv, bv[64];
    make_inputs(e, bf16_value, &xv, &wv, &gyv, bv);
    double *ry, *rgx, *rgw, *rgb, *y, *gx, *gw, *gb;
    conv_results(e, CT_FLOAT64, xv, wv, bv, gyv, &ry, &rgx, &rgw, &rgb);
    ct_cpu_dnnl_set_bf16_mode(mode);
    const int64_t before = ct_cpu_dnnl_conv_runs();
    conv_results(e, CT_BFLOAT16, xv, wv, bv, gyv, &y, &gx, &gw, &gb);
    const int64_t runs = ct_cpu_dnnl_conv_runs() - before;
    ct_cpu_dnnl_set_bf16_mode(CT_CPU_BF16_AUTO);
    const char *how = mode == CT_CPU_BF16_NATIVE ? "native" : "auto";
    /* forced native declines to the widened path where oneDNN has no
     * bfloat16 kernels (below AVX-512); the values are checked either way */
    CT_EXPECT_MSG(!ct_backends_mkldnn_is_available() || runs >= 1, "%s (bfloat16 %s): oneDNN did not run",
                  e->name, how);
    if (y && ry) {
        char what[64];
        snprintf(what, sizeof what, "bfloat16 %s y", how), compare_bf16(e, what, y, ry, ny);
        snprintf(what, sizeof what, "bfloat16 %s dx", how), compare_bf16(e, what, gx, rgx, nx);
        snprintf(what, sizeof what, "bfloat16 %s dw", how), compare_bf16(e, what, gw, rgw, nw);
        if (e->bias) snprintf(what, sizeof what, "bfloat16 %s db", how), compare_bf16(e, what, gb, rgb, e->o);
    }
    free(y), free(gx), free(gw), free(gb), free(ry), free(rgx), free(rgw), free(rgb);
    free(xv), free(wv), free(gyv);
}

static void test_conv_bf16(void) {
    printf("  bfloat16 on this CPU: %s\n", ct_cpu_dnnl_bf16_native() ? "native (AMX)" : "widened to float32");
    ct_cpu_dnnl_set_bf16_mode(CT_CPU_BF16_NATIVE);
    if (!ct_cpu_dnnl_bf16_native())
        printf("  (oneDNN has no bfloat16 kernels below AVX-512: the forced native cases check the fallback)\n");
    ct_cpu_dnnl_set_bf16_mode(CT_CPU_BF16_AUTO);
    const engine_case cases[] = {
        {"bf16 16->16 8x8 k3 p1, bias", 2, 16, 8, 8, 16, 3, 1, 1, 1, 1, true, false, true},
        {"bf16 groups 2, 32->32 stride 2", 2, 32, 9, 9, 32, 3, 2, 1, 1, 2, true, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case_bf16(&cases[i], CT_CPU_BF16_AUTO);
        run_case_bf16(&cases[i], CT_CPU_BF16_NATIVE);
    }
}

/* a @ b in bfloat16 against float64 from the same values; `native` forces
 * oneDNN's bfloat16 product (AMX, or its reference kernel elsewhere). */
static void check_matmul_bf16(const char *what, ct_tensor *a, ct_tensor *b, bool native) {
    CT_SCOPE {
        ct_cpu_dnnl_set_bf16_mode(native ? CT_CPU_BF16_NATIVE : CT_CPU_BF16_AUTO);
        const int64_t before = ct_cpu_dnnl_matmul_runs();
        ct_tensor *got = ct_matmul(a, b);
        const int64_t runs = ct_cpu_dnnl_matmul_runs() - before;
        /* forced native declines where oneDNN has no bfloat16 kernels (below
         * AVX-512); auto also leaves products under 128³ multiply-adds to the
         * widened path (cpu_dnnl_matmul.c) */
        const int na = ct_ndim(a), nb = ct_ndim(b);
        const int64_t work = ct_size(a, na - 2) * ct_size(a, na - 1) * ct_size(b, nb - 1);
        const bool expect = ct_cpu_dnnl_bf16_native() && ct_backends_mkldnn_is_available() &&
                            (native || work >= 128 * 128 * 128);
        ct_cpu_dnnl_set_bf16_mode(CT_CPU_BF16_AUTO);
        ct_tensor *ref = ct_matmul(ct_to_dtype(a, CT_FLOAT64), ct_to_dtype(b, CT_FLOAT64));
        CT_EXPECT_MSG(ref && got, "%s: %s", what, ct_last_error());
        CT_EXPECT_MSG(expect ? runs == 1 : runs == 0, "%s (%s): %lld oneDNN bfloat16 products", what,
                      native ? "native" : "auto", (long long)runs);
        if (ref && got) {
            double *r = ct_test_values(ref);
            ct_test_close(__FILE__, __LINE__, what, got, r, ct_numel(ref), 1.0 / 256, 1e-4);
            free(r);
        }
    }
}

/* The operand views ct_cpu_matmul gets (a batch of one carries batch
 * stride 0) reach oneDNN as plain layouts: a 0 there once left only
 * oneDNN's reference matmul, so the AMX path was never taken. */
static void test_matmul_bf16_layouts(void) {
    ct_kview v = {.dtype = CT_BFLOAT16, .ndim = 3, .shape = {1, 64, 32}, .strides = {0, 32, 1}};
    CT_EXPECT_MSG(ct_cpu_dnnl_matmul_layout_is_plain(&v, 64, 32), "a [64, 32] matrix (batch 1, stride 0)");
    ct_kview t = {.dtype = CT_BFLOAT16, .ndim = 3, .shape = {1, 64, 32}, .strides = {0, 1, 64}};
    CT_EXPECT_MSG(ct_cpu_dnnl_matmul_layout_is_plain(&t, 64, 32), "a transposed weight (batch 1, stride 0)");
    ct_kview b = {.dtype = CT_BFLOAT16, .ndim = 3, .shape = {3, 64, 32}, .strides = {64 * 32, 32, 1}};
    CT_EXPECT_MSG(ct_cpu_dnnl_matmul_layout_is_plain(&b, 64, 32), "a batch of 3");
}

static void test_matmul_bf16(void) {
    CT_SCOPE {
        ct_tensor *a = ct_test_random(CT_SHAPE(2, 40, 70), CT_BFLOAT16, -1, 1, NULL);
        ct_tensor *b = ct_test_random(CT_SHAPE(2, 70, 30), CT_BFLOAT16, -1, 1, NULL);
        ct_tensor *wt = ct_test_random(CT_SHAPE(30, 70), CT_BFLOAT16, -1, 1, NULL);
        ct_tensor *big = ct_test_random(CT_SHAPE(160, 130), CT_BFLOAT16, -1, 1, NULL);
        ct_tensor *big_b = ct_test_random(CT_SHAPE(130, 140), CT_BFLOAT16, -1, 1, NULL);
        for (int native = 0; native <= 1; native++) {
            check_matmul_bf16("bf16 batch", a, b, native);
            check_matmul_bf16("bf16 transposed weight (a linear layer)", ct_select(a, 0, 1),
                              ct_transpose(wt, 0, 1), native);
            check_matmul_bf16("bf16 broadcast batch", a, ct_expand(ct_select(b, 0, 0), CT_SHAPE(2, 70, 30)),
                              native);
            check_matmul_bf16("bf16 160x130x140", big, big_b, native);
        }
    }
}

/* ---- results do not depend on the thread count ------------------------------------------- */


/* The values of a @ b with 1 and with 2 threads, bit for bit. */
static void check_matmul_threads(int64_t m, int64_t n, int64_t k) {
    double *r[2];
    for (int t = 0; t < 2; t++) {
        ct_test_set_threads(t + 1);
        ct_manual_seed(11);
        CT_SCOPE { r[t] = ct_test_values(ct_matmul(ct_randn(CT_SHAPE(m, k)), ct_randn(CT_SHAPE(k, n)))); }
    }
    CT_EXPECT_MSG(memcmp(r[0], r[1], sizeof(double) * (size_t)(m * n)) == 0,
                  "matmul %lldx%lldx%lld differs between 1 and 2 threads", (long long)m, (long long)n,
                  (long long)k);
    free(r[0]), free(r[1]);
}

/* A oneDNN convolution's forward and gradients with 1 and with 2 threads. */
static void check_conv_threads(const engine_case *e) {
    double *y[2], *gx[2], *gw[2], *gb[2];
    const int64_t nx = e->n * e->c * e->h * e->w, nw = e->o * (e->c / e->groups) * e->k * e->k;
    const int64_t ny = e->n * e->o * out_size(e, e->h) * out_size(e, e->w);
    double *xv = malloc(sizeof(double) * nx), *wv = malloc(sizeof(double) * nw), *gyv = malloc(sizeof(double) * ny);
    ct_test_fill_uniform(xv, nx, -1, 1), ct_test_fill_uniform(wv, nw, -1, 1), ct_test_fill_uniform(gyv, ny, -1, 1);
    for (int t = 0; t < 2; t++) {
        ct_test_set_threads(t + 1);
        conv_results(e, CT_FLOAT32, xv, wv, NULL, gyv, &y[t], &gx[t], &gw[t], &gb[t]);
    }
    CT_EXPECT_MSG(y[0] && y[1] && memcmp(y[0], y[1], sizeof(double) * ny) == 0, "%s: y differs by threads", e->name);
    CT_EXPECT_MSG(gx[0] && gx[1] && memcmp(gx[0], gx[1], sizeof(double) * nx) == 0, "%s: dx differs by threads",
                  e->name);
    CT_EXPECT_MSG(gw[0] && gw[1] && memcmp(gw[0], gw[1], sizeof(double) * nw) == 0, "%s: dw differs by threads",
                  e->name);
    for (int t = 0; t < 2; t++) free(y[t]), free(gx[t]), free(gw[t]), free(gb[t]);
    free(xv), free(wv), free(gyv);
}

static void test_thread_count_independence(void) {
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#else
    const int saved = 1;
#endif
    check_matmul_threads(16, 24, 20000);  /* long sums into a small output: k in fixed slices */
    check_matmul_threads(64, 64, 50000);
    check_matmul_threads(1, 300, 9000);
    check_matmul_threads(128, 1600, 128); /* a linear layer's weight gradient */
    check_matmul_threads(300, 200, 500);
    check_matmul_threads(1000, 1000, 1000);
    const engine_case big[] = {
        {"64->64 8x8, batch 64", 64, 64, 8, 8, 64, 3, 1, 1, 1, 1, true, false, false},
        {"128->128 4x4, batch 64", 64, 128, 4, 4, 128, 3, 1, 1, 1, 1, true, false, false},
        {"32->64 13x13, batch 128", 128, 32, 13, 13, 64, 3, 1, 0, 1, 1, true, false, false},
    };
    /* With OpenBLAS as the engine (no oneDNN, or a CPU without AVX2) the
     * im2col products of a layer are threaded by OpenBLAS on one thread
     * count and by ctorch on another, whose kernels round differently:
     * there only the product checks above hold (docs/performance.md). */
    if (ct_backends_mkldnn_is_available())
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) check_conv_threads(&big[i]);
    else
        ct_test_skip("convolutions at 1 and 2 threads: GEMM engine is %s", ct_backends_cpu_gemm_engine());
    ct_test_set_threads(saved);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_engine_names);
    CT_RUN(test_gemm_layouts);
    CT_RUN(test_conv_engines);
    CT_RUN(test_deterministic_declines_onednn);
    CT_RUN(test_conv_bf16);
    CT_RUN(test_matmul_bf16_layouts);
    CT_RUN(test_matmul_bf16);
    CT_RUN(test_thread_count_independence);
    return ct_test_finish();
}
