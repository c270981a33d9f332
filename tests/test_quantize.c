/*
 * test_quantize.c — the int8 dtype and dynamic quantization: int8 facts,
 * promotion, conversions (truncate then wrap), printing, arithmetic and
 * safetensors; the uint8×int8 GEMM bit-exact against an int64 reference on
 * every kernel this CPU runs (and the path choice), in full range and
 * 7-bit, with the fused dequantization, strided operands, and the oneDNN
 * (AMX) path forced by name wherever oneDNN is built in; the vectorised activation and
 * row-sum helpers against their scalar forms; ct_int_mm; the quantized
 * linear within the error bound its scales give and with 7-bit activations;
 * quantize_dynamic on an MLP (every Linear replaced, outputs close,
 * state_dict, clone) and its cached row sums following weight changes; the
 * refusals; the same ops on OpenCL.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_qgemm.h"
#include "ops/quantized.h"
#include "ctorch/quantization.h"
#include "testutil.h"

/* ---- the dtype ------------------------------------------------------------------------ */

static void test_int8_dtype_facts(void) {
    CT_EXPECT_INT_EQ(CT_INT8, 9);
    CT_EXPECT_INT_EQ(CT_NUM_DTYPES, 10);
    CT_EXPECT_INT_EQ((int)ct_dtype_size(CT_INT8), 1);
    CT_EXPECT_STR_EQ(ct_dtype_name(CT_INT8), "int8");
    CT_EXPECT(ct_dtype_is_valid(CT_INT8));
    CT_EXPECT(ct_dtype_is_integral(CT_INT8, false));
    CT_EXPECT(!ct_dtype_is_floating(CT_INT8));
    CT_EXPECT(!ct_dtype_is_valid((ct_dtype)10));
    /* torch.promote_types, except int8+uint8 (PyTorch: int16, absent here) */
    struct { ct_dtype other, want; } rows[] = {
        {CT_INT8, CT_INT8},       {CT_BOOL, CT_INT8},         {CT_UINT8, CT_INT32},
        {CT_INT32, CT_INT32},     {CT_INT64, CT_INT64},       {CT_FLOAT16, CT_FLOAT16},
        {CT_BFLOAT16, CT_BFLOAT16}, {CT_FLOAT32, CT_FLOAT32}, {CT_FLOAT64, CT_FLOAT64},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CT_EXPECT_INT_EQ(ct_promote_types(CT_INT8, rows[i].other), rows[i].want);
        CT_EXPECT_INT_EQ(ct_promote_types(rows[i].other, CT_INT8), rows[i].want);
    }
}

static void test_int8_conversions(void) {
    CT_SCOPE {
        /* float → int8: truncate toward zero, then wrap modulo 256 */
        const double f[] = {-1.7, 2.9, 127.0, -128.0, 130.0, -129.5, 300.0, 0.5, -0.9};
        const double want[] = {-1, 2, 127, -128, -126, 127, 44, 0, 0};
        ct_tensor *t = ct_to_dtype(ct_test_tensor(f, CT_SHAPE(9), CT_FLOAT32), CT_INT8);
        CT_EXPECT(ct_test_holds(t, want, 9, CT_INT8));
        ct_tensor *t64 = ct_to_dtype(ct_test_tensor(f, CT_SHAPE(9), CT_FLOAT64), CT_INT8);
        CT_EXPECT(ct_test_holds(t64, want, 9, CT_INT8));
        /* integers wrap */
        const double iv[] = {200, -56, 1000, -1};
        const double iwant[] = {-56, -56, -24, -1};
        CT_EXPECT(ct_test_holds(ct_to_dtype(ct_test_tensor(iv, CT_SHAPE(4), CT_INT32), CT_INT8), iwant, 4, CT_INT8));
        CT_EXPECT(ct_test_holds(ct_to_dtype(ct_test_tensor(iv, CT_SHAPE(4), CT_INT64), CT_INT8), iwant, 4, CT_INT8));
        /* int8 → others */
        const double s[] = {-128, -1, 0, 127};
        ct_tensor *i8 = ct_to_dtype(ct_test_tensor(s, CT_SHAPE(4), CT_INT64), CT_INT8);
        CT_EXPECT(ct_test_holds(ct_to_dtype(i8, CT_FLOAT32), s, 4, CT_FLOAT32));
        CT_EXPECT(ct_test_holds(ct_to_dtype(i8, CT_INT64), s, 4, CT_INT64));
        const double as_u8[] = {128, 255, 0, 127}, as_bool[] = {1, 1, 0, 1};
        CT_EXPECT(ct_test_holds(ct_to_dtype(i8, CT_UINT8), as_u8, 4, CT_UINT8));
        CT_EXPECT(ct_test_holds(ct_to_dtype(i8, CT_BOOL), as_bool, 4, CT_BOOL));
        int8_t raw[4];
        CT_EXPECT(ct_copy_to_host(i8, raw, CT_INT8, 4) == CT_OK);
        CT_EXPECT(raw[0] == -128 && raw[1] == -1 && raw[3] == 127);
        /* fill and creation */
        ct_tensor *full = ct_full(CT_SHAPE(3), -5.0, .dtype = CT_INT8);
        const double fw[] = {-5, -5, -5};
        CT_EXPECT(ct_test_holds(full, fw, 3, CT_INT8));
    }
}

static void test_int8_print(void) {
    CT_SCOPE {
        const double v[] = {-128, 0, 127};
        ct_tensor *t = ct_to_dtype(ct_test_tensor(v, CT_SHAPE(3), CT_INT64), CT_INT8);
        char buf[128];
        CT_EXPECT(ct_snprint(buf, sizeof buf, t) > 0);
        CT_EXPECT_STR_EQ(buf, "tensor([-128,    0,  127], dtype=torch.int8)");
    }
}

static void test_int8_arithmetic(void) {
    CT_SCOPE {
        const double a[] = {100, -100, 7, -128}, b[] = {100, -100, -3, 1};
        ct_tensor *ta = ct_to_dtype(ct_test_tensor(a, CT_SHAPE(4), CT_INT64), CT_INT8);
        ct_tensor *tb = ct_to_dtype(ct_test_tensor(b, CT_SHAPE(4), CT_INT64), CT_INT8);
        ct_tensor *sum = ct_add(ta, tb), *prod = ct_mul(ta, tb);
        CT_EXPECT_INT_EQ(ct_dtype_of(sum), CT_INT8);
        const double ws[] = {-56, 56, 4, -127}, wp[] = {16, 16, -21, -128};
        CT_EXPECT(ct_test_holds(sum, ws, 4, CT_INT8));
        CT_EXPECT(ct_test_holds(prod, wp, 4, CT_INT8));
        const double lt[] = {0, 0, 0, 1};
        CT_EXPECT(ct_test_holds(ct_lt(ta, tb), lt, 4, CT_BOOL));
        /* mixed with uint8: int32 here (documented deviation) */
        ct_tensor *u = ct_to_dtype(ct_test_tensor(a, CT_SHAPE(4), CT_FLOAT32), CT_UINT8);
        CT_EXPECT_INT_EQ(ct_dtype_of(ct_add(ta, u)), CT_INT32);
        /* with float: float */
        ct_tensor *f = ct_add(ta, ct_test_tensor(b, CT_SHAPE(4), CT_FLOAT32));
        const double wf[] = {200, -200, 4, -127};
        CT_EXPECT(ct_test_holds(f, wf, 4, CT_FLOAT32));
        double s = 0;
        CT_EXPECT(ct_item_checked(ct_sum_all(ta), &s) == CT_OK);
        CT_EXPECT_NEAR(s, -121.0, 0.0);
        /* int8 matmul keeps the low bits, as PyTorch's */
        ct_tensor *mm = ct_matmul(ct_reshape(ta, CT_SHAPE(1, 4)), ct_reshape(tb, CT_SHAPE(4, 1)));
        const double wm[] = {(double)(int8_t)(uint8_t)(10000 + 10000 - 21 - 128)};
        CT_EXPECT(ct_test_holds(mm, wm, 1, CT_INT8));
    }
}

static void test_int8_safetensors(void) {
    CT_SCOPE {
        const double v[] = {-128, -1, 0, 1, 127, 5};
        ct_tensor *t = ct_to_dtype(ct_test_tensor(v, CT_SHAPE(2, 3), CT_INT64), CT_INT8);
        ct_tensor_dict *d = ct_tensor_dict_new();
        CT_EXPECT(ct_tensor_dict_set(d, "q", t) == CT_OK);
        void *buf = NULL;
        size_t size = 0;
        CT_EXPECT(ct_safetensors_save_buffer(d, &buf, &size) == CT_OK);
        bool has_i8 = false;
        for (size_t i = 0; buf && i + 4 <= size && !has_i8; i++) has_i8 = !memcmp((char *)buf + i, "\"I8\"", 4);
        CT_EXPECT(has_i8);
        ct_tensor_dict *back = NULL;
        CT_EXPECT(ct_safetensors_load_buffer(buf, size, ct_device_cpu(), &back) == CT_OK);
        ct_tensor *q = back ? ct_tensor_dict_get(back, "q") : NULL;
        CT_EXPECT(q && ct_dtype_of(q) == CT_INT8 && ct_test_holds(q, v, 6, CT_INT8));
        free(buf);
        ct_tensor_dict_free(d);
        ct_tensor_dict_free(back);
    }
}

/* ---- the int8 GEMM ------------------------------------------------------------------------ */

static void reference(int64_t m, int64_t n, int64_t k, const uint8_t *a, const int8_t *b, int64_t *c) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t s = 0;
            for (int64_t p = 0; p < k; p++) s += (int64_t)a[i * k + p] * b[j * k + p];
            c[i * n + j] = s;
        }
}

static const int64_t g_shapes[][3] = {{1, 1, 1},   {3, 17, 5},  {2, 4, 16},   {5, 3, 33}, {7, 9, 64},
                                      {1, 10, 784}, {64, 129, 300}, {65, 65, 1024}, {4, 1, 0}, {3, 5, 50}};

/* Shapes of g_shapes oneDNN takes (k > 0): a path forced by name runs
 * each of them through it, with no work threshold. */
static int64_t g_onednn_shapes(void) {
    int64_t count = 0;
    for (size_t s = 0; s < sizeof g_shapes / sizeof *g_shapes; s++) count += g_shapes[s][2] > 0;
    return count;
}

static void test_qgemm_exact_every_path(void) {
    int ran = 0;
    for (int path = CT_QGEMM_AUTO; path < CT_QGEMM_NPATHS; path++) {
        if (!ct_cpu_qgemm_supported((ct_qgemm_path)path)) {
            printf("  qgemm path %s: not on this CPU\n", ct_cpu_qgemm_name((ct_qgemm_path)path));
            continue;
        }
        ran++;
        const int64_t runs0 = ct_cpu_dnnl_qgemm_runs();
        for (size_t s = 0; s < sizeof g_shapes / sizeof *g_shapes; s++) {
            const int64_t m = g_shapes[s][0], n = g_shapes[s][1], k = g_shapes[s][2];
            uint8_t *a = malloc((size_t)(m * k + 1));
            int8_t *b = malloc((size_t)(n * k + 1));
            int32_t *c = malloc(sizeof(int32_t) * (size_t)(m * n));
            int64_t *r = malloc(sizeof(int64_t) * (size_t)(m * n));
            /* extremes included: 255 and -128 */
            for (int64_t i = 0; i < m * k; i++) a[i] = (uint8_t)(s % 2 ? ct_test_randint(0, 256) : (i % 7 ? 255 : 0));
            for (int64_t i = 0; i < n * k; i++) b[i] = (int8_t)(s % 2 ? ct_test_randint(-128, 128) : (i % 5 ? -128 : 127));
            reference(m, n, k, a, b, r);
            ct_cpu_qgemm_u8s8((ct_qgemm_path)path, m, n, k, a, k, b, k, c, n);
            int64_t bad = 0;
            for (int64_t i = 0; i < m * n; i++) bad += c[i] != r[i];
            CT_EXPECT_MSG(bad == 0, "path %s, %lldx%lldx%lld: %lld wrong", ct_cpu_qgemm_name((ct_qgemm_path)path),
                          (long long)m, (long long)n, (long long)k, (long long)bad);
            free(a), free(b), free(c), free(r);
        }
        printf("  qgemm path %s: exact on %d shapes\n", ct_cpu_qgemm_name((ct_qgemm_path)path),
               (int)(sizeof g_shapes / sizeof *g_shapes));
        /* the forced oneDNN path really ran oneDNN (k = 0 went native);
         * below AVX-512 VNNI full-range bytes go native, since oneDNN's
         * int8 sums would saturate there */
        if (path == CT_QGEMM_AMX) {
            CT_EXPECT_INT_EQ(ct_cpu_dnnl_qgemm_runs() - runs0, ct_cpu_dnnl_qgemm_full_range() ? g_onednn_shapes() : 0);
            printf("  (%lld of them through oneDNN)\n", (long long)(ct_cpu_dnnl_qgemm_runs() - runs0));
        }
    }
    CT_EXPECT(ran >= 2); /* auto and scalar at least */
}

/* The 7-bit kernel (A in 0..127, B any int8: pair sums stay within int16)
 * and the fused dequantization, on every path: the integers exact, the
 * floats the same bits as the epilogue's formula computed here. */
static void test_qgemm_u7_and_fused_every_path(void) {
    for (int path = CT_QGEMM_AUTO; path < CT_QGEMM_NPATHS; path++) {
        if (!ct_cpu_qgemm_supported((ct_qgemm_path)path)) continue;
        const int64_t runs0 = ct_cpu_dnnl_qgemm_runs();
        for (size_t s = 0; s < sizeof g_shapes / sizeof *g_shapes; s++) {
            const int64_t m = g_shapes[s][0], n = g_shapes[s][1], k = g_shapes[s][2];
            uint8_t *a = malloc((size_t)(m * k + 1));
            int8_t *b = malloc((size_t)(n * k + 1));
            int32_t *c = malloc(sizeof(int32_t) * (size_t)(m * n)), *rs = malloc(sizeof(int32_t) * (size_t)n);
            int64_t *r = malloc(sizeof(int64_t) * (size_t)(m * n));
            float *y = malloc(sizeof(float) * (size_t)(m * n)), *bs = malloc(sizeof(float) * (size_t)n);
            float *bias = malloc(sizeof(float) * (size_t)n);
            /* extremes: 127 × -128 gives the most negative pair sum, -32512 */
            for (int64_t i = 0; i < m * k; i++) a[i] = (uint8_t)(s % 2 ? ct_test_randint(0, 128) : (i % 7 ? 127 : 0));
            for (int64_t i = 0; i < n * k; i++) b[i] = (int8_t)(s % 2 ? ct_test_randint(-128, 128) : (i % 5 ? -128 : 127));
            for (int64_t j = 0; j < n; j++) bs[j] = 0.001f * (float)(j + 1), bias[j] = 0.25f * (float)j - 1.0f;
            reference(m, n, k, a, b, r);
            ct_cpu_qgemm_u7s8((ct_qgemm_path)path, m, n, k, a, k, b, k, c, n);
            int64_t bad = 0;
            for (int64_t i = 0; i < m * n; i++) bad += c[i] != r[i];
            ct_cpu_qrow_sums(n, k, b, k, rs);
            for (int64_t j = 0; j < n; j++) {
                int64_t want = 0;
                for (int64_t p = 0; p < k; p++) want += b[j * k + p];
                bad += rs[j] != want;
            }
            const int32_t zp = 37;
            const float as = 0.0123f;
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const ct_qgemm_dequant dq = {zp, as, rs, bs, with_bias ? bias : NULL, y, n};
                ct_cpu_qlinear_u7s8((ct_qgemm_path)path, m, n, k, a, k, b, k, &dq);
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        float v = (float)(r[i * n + j] - (int64_t)zp * rs[j]) * (as * bs[j]);
                        if (with_bias) v += bias[j];
                        bad += memcmp(&v, &y[i * n + j], sizeof v) != 0;
                    }
            }
            CT_EXPECT_MSG(bad == 0, "7-bit path %s, %lldx%lldx%lld: %lld wrong", ct_cpu_qgemm_name((ct_qgemm_path)path),
                          (long long)m, (long long)n, (long long)k, (long long)bad);
            free(a), free(b), free(c), free(rs), free(r), free(y), free(bs), free(bias);
        }
        /* per shape: the 7-bit product, then the fused form without and with bias */
        if (path == CT_QGEMM_AMX) {
            CT_EXPECT_INT_EQ(ct_cpu_dnnl_qgemm_runs() - runs0, 3 * g_onednn_shapes());
            printf("  7-bit path %s: exact, fused too, %lld products through oneDNN\n", ct_cpu_qgemm_name(CT_QGEMM_AMX),
                   (long long)(ct_cpu_dnnl_qgemm_runs() - runs0));
        }
    }
}

/* Operands and output with gaps between rows (lda > k, ldb > k, ldc > n),
 * as oneDNN sees them through its strides, on every path, full-range and
 * 7-bit; the gaps of the output stay untouched. With oneDNN switched off
 * the forced path declines and its native fallback gives the same
 * integers. */
static void test_qgemm_strided_every_path(void) {
    const int64_t m = 37, n = 70, k = 131, lda = k + 3, ldb = k + 9, ldc = n + 5;
    uint8_t *a = malloc((size_t)(m * lda)), *ad = malloc((size_t)(m * k));
    int8_t *b = malloc((size_t)(n * ldb)), *bd = malloc((size_t)(n * k));
    int32_t *c = malloc(sizeof(int32_t) * (size_t)(m * ldc));
    int64_t *r = malloc(sizeof(int64_t) * (size_t)(m * n));
    for (int a7 = 0; a7 < 2; a7++) {
        for (int64_t i = 0; i < m * lda; i++) a[i] = (uint8_t)ct_test_randint(0, a7 ? 128 : 256);
        for (int64_t i = 0; i < n * ldb; i++) b[i] = (int8_t)ct_test_randint(-128, 128);
        for (int64_t i = 0; i < m; i++) memcpy(ad + i * k, a + i * lda, (size_t)k);
        for (int64_t j = 0; j < n; j++) memcpy(bd + j * k, b + j * ldb, (size_t)k);
        reference(m, n, k, ad, bd, r);
        for (int off = 0; off < 2; off++) {
            ct_backends_mkldnn_set_enabled(off == 0);
            for (int path = CT_QGEMM_AUTO; path < CT_QGEMM_NPATHS; path++) {
                if (!ct_cpu_qgemm_supported((ct_qgemm_path)path)) continue;
                const int64_t runs0 = ct_cpu_dnnl_qgemm_runs();
                for (int64_t i = 0; i < m * ldc; i++) c[i] = 0x5a5a5a5a;
                if (a7) ct_cpu_qgemm_u7s8((ct_qgemm_path)path, m, n, k, a, lda, b, ldb, c, ldc);
                else ct_cpu_qgemm_u8s8((ct_qgemm_path)path, m, n, k, a, lda, b, ldb, c, ldc);
                int64_t bad = 0, gaps = 0;
                for (int64_t i = 0; i < m; i++) {
                    for (int64_t j = 0; j < n; j++) bad += c[i * ldc + j] != r[i * n + j];
                    for (int64_t j = n; j < ldc; j++) gaps += c[i * ldc + j] != 0x5a5a5a5a;
                }
                CT_EXPECT_MSG(bad == 0 && gaps == 0, "strided %s path %s, oneDNN %s: %lld wrong, %lld gaps written",
                              a7 ? "7-bit" : "full-range", ct_cpu_qgemm_name((ct_qgemm_path)path), off ? "off" : "on",
                              (long long)bad, (long long)gaps);
                const bool onednn = path == CT_QGEMM_AMX && !off && (a7 || ct_cpu_dnnl_qgemm_full_range());
                CT_EXPECT_INT_EQ(ct_cpu_dnnl_qgemm_runs() - runs0, onednn ? 1 : 0);
            }
        }
    }
    ct_backends_mkldnn_set_enabled(true);
    free(a), free(b), free(c), free(r), free(ad), free(bd);
}

/* The vectorised activation passes give the scalar forms' bits: ties round
 * to even, out-of-range values clamp, NaN quantizes to 0 and is skipped by
 * min/max; lengths that are not a multiple of the vector width. */
static void test_activation_helpers(void) {
    const int64_t n = 203;
    float *x = malloc(sizeof(float) * (size_t)n);
    uint8_t *q = malloc((size_t)n);
    const float inv = 4.0f; /* x · 4 is exact, so k + 0.5 ties are real ties */
    for (int64_t i = 0; i < n; i++) x[i] = ((float)(i % 61) - 20.0f) / 8.0f; /* steps of 0.5 after scaling */
    x[7] = NAN, x[50] = 1e9f, x[51] = -1e9f;
    ct_cpu_quantize_u8(x, n, inv, 9, 127, q);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = isnan(x[i]) ? 0.0f : nearbyintf(x[i] * inv) + 9.0f;
        v = v < 0 ? 0 : v > 127 ? 127 : v;
        bad += q[i] != (uint8_t)v;
    }
    CT_EXPECT_MSG(bad == 0, "%lld quantized values differ from the scalar form", (long long)bad);
    CT_EXPECT(q[7] == 0 && q[50] == 127 && q[51] == 0);
    /* 2.5 → 2 and 3.5 → 4 (half to even): x = 0.625 and 0.875 */
    const float ties[2] = {0.625f, 0.875f};
    uint8_t tq[2];
    ct_cpu_quantize_u8(ties, 2, inv, 0, 127, tq);
    CT_EXPECT(tq[0] == 2 && tq[1] == 4);
    float lo = 0, hi = 0;
    ct_cpu_minmax_f32(x, n, &lo, &hi);
    CT_EXPECT(lo == -1e9f && hi == 1e9f);
    x[50] = 0, x[51] = 0;
    ct_cpu_minmax_f32(x, n, &lo, &hi);
    CT_EXPECT_NEAR(lo, -20.0 / 8.0, 0.0);
    CT_EXPECT_NEAR(hi, 40.0 / 8.0, 0.0);
    ct_cpu_minmax_f32(x, 0, &lo, &hi);
    CT_EXPECT(isinf(lo) && lo > 0 && isinf(hi) && hi < 0);
    free(x), free(q);
}

/* The choice follows CPUID: the best path is supported, and every faster
 * path is not. */
static void test_qgemm_path_choice(void) {
    ct_qgemm_path best = ct_cpu_qgemm_best();
    printf("  qgemm best path here: %s\n", ct_cpu_qgemm_name(best));
    CT_EXPECT(ct_cpu_qgemm_supported(best));
    /* native paths: every faster one is missing; oneDNN's is runnable by
     * name wherever oneDNN is built in, but chosen only with AMX tiles */
    for (int p = best + 1; p < CT_QGEMM_AMX; p++) CT_EXPECT(!ct_cpu_qgemm_supported((ct_qgemm_path)p));
    CT_EXPECT(ct_cpu_qgemm_supported(CT_QGEMM_AMX) == ct_cpu_dnnl_qgemm_available());
    CT_EXPECT((best == CT_QGEMM_AMX) == ct_cpu_dnnl_qgemm_amx());
    printf("  oneDNN int8 path: %s\n", !ct_cpu_dnnl_qgemm_available() ? "not built in"
                                       : ct_cpu_dnnl_qgemm_amx()      ? "AMX tiles (chosen)"
                                                                      : "runnable by name only (no AMX)");
    /* a small product through AUTO never pays for a oneDNN primitive */
    const int64_t runs0 = ct_cpu_dnnl_qgemm_runs();
    const uint8_t a1[4] = {1, 2, 3, 4};
    const int8_t b1[4] = {-1, 2, -3, 4};
    int32_t c1 = 0;
    ct_cpu_qgemm_u8s8(CT_QGEMM_AUTO, 1, 1, 4, a1, 4, b1, 4, &c1, 1);
    CT_EXPECT_INT_EQ(c1, 10);
    CT_EXPECT_INT_EQ(ct_cpu_dnnl_qgemm_runs(), runs0);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    CT_EXPECT(ct_cpu_qgemm_supported(CT_QGEMM_AVX2) == (bool)__builtin_cpu_supports("avx2"));
    CT_EXPECT(ct_cpu_qgemm_supported(CT_QGEMM_AVX512_VNNI) == (bool)(__builtin_cpu_supports("avx512vnni") &&
                                                                       __builtin_cpu_supports("avx512bw")));
#endif
    CT_EXPECT(!ct_cpu_qgemm_supported((ct_qgemm_path)-1) && !ct_cpu_qgemm_supported(CT_QGEMM_NPATHS));
    CT_EXPECT_STR_EQ(ct_cpu_qgemm_name(CT_QGEMM_AVX512_VNNI), "avx512_vnni");
    CT_EXPECT_STR_EQ(ct_cpu_qgemm_name(CT_QGEMM_AMX), "amx_int8 (oneDNN)");
}

static void test_int_mm(void) {
    CT_SCOPE {
        const int64_t m = 5, k = 37, n = 11;
        double *av = malloc(sizeof(double) * (size_t)(m * k)), *bv = malloc(sizeof(double) * (size_t)(k * n));
        for (int64_t i = 0; i < m * k; i++) av[i] = (double)ct_test_randint(-128, 128);
        for (int64_t i = 0; i < k * n; i++) bv[i] = (double)ct_test_randint(-128, 128);
        av[0] = -128, bv[0] = -128;
        ct_tensor *a = ct_to_dtype(ct_test_tensor(av, CT_SHAPE(m, k), CT_FLOAT64), CT_INT8);
        ct_tensor *b = ct_to_dtype(ct_test_tensor(bv, CT_SHAPE(k, n), CT_FLOAT64), CT_INT8);
        double *want = malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += av[i * k + p] * bv[p * n + j];
                want[i * n + j] = s;
            }
        ct_tensor *c = ct_int_mm(a, b);
        CT_EXPECT(c && ct_dtype_of(c) == CT_INT32 && ct_test_holds(c, want, m * n, CT_INT32));
        /* a transposed view as mat2 (a weight's .t()) */
        ct_tensor *bt = ct_contiguous(ct_t(b));
        CT_EXPECT(ct_test_holds(ct_int_mm(a, ct_t(bt)), want, m * n, CT_INT32));
        for (int d = 0; d < ct_test_opencl_devices("int_mm on OpenCL"); d++) {
            ct_device dev = ct_device_opencl(d);
            ct_tensor *cd = ct_int_mm(ct_to_device(a, dev), ct_to_device(b, dev));
            CT_EXPECT(cd && ct_test_holds(ct_to_device(cd, ct_device_cpu()), want, m * n, CT_INT32));
        }
        free(av), free(bv), free(want);
    }
}

/* ---- the quantized linear ---------------------------------------------------------------- */

/* |y_q − y| per element, from the scales: x̂ = x + e_x with |e_x| ≤ s_x
 * (half a step from rounding, plus up to half a step where the zero point's
 * rounding moves the clamped range), ŵ = w + e_w with |e_w| ≤ s_w/2, so
 * |Σ x̂ŵ − Σ xw| ≤ s_x Σ|w| + (s_w/2) Σ|x| + k s_x s_w/2, plus float32
 * rounding of the dequantization. */
static void check_against_float(const double *x, int64_t m, int64_t k, const double *w, int64_t n, const double *b,
                                 const ct_tensor *y, const ct_tensor *wscale) {
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < m * k; i++) lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
    const double sx = (hi - lo) / CT_QLINEAR_ACT_QMAX; /* 7-bit activations */
    double *sw = ct_test_values(wscale), *got = ct_test_values(y);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = b ? b[j] : 0, sabsw = 0, sabsx = 0;
            for (int64_t p = 0; p < k; p++) {
                ref += x[i * k + p] * w[j * k + p];
                sabsw += fabs(w[j * k + p]), sabsx += fabs(x[i * k + p]);
            }
            double bound = sx * sabsw + sw[j] / 2 * sabsx + (double)k * sx * sw[j] / 2;
            bound = bound * 1.001 + 1e-5 * (fabs(ref) + 1);
            double err = fabs(got[i * n + j] - ref);
            worst = fmax(worst, err / bound);
            bad += err > bound;
        }
    CT_EXPECT_MSG(bad == 0, "%lld of %lld outputs outside the quantization bound (worst %.3g of it)", (long long)bad,
                  (long long)(m * n), worst);
    free(sw), free(got);
}

static void test_quantized_linear_bound(void) {
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {64, 300, 129}, {8, 784, 32}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) CT_SCOPE {
        const int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        double *xv = NULL, *wv = NULL, *bv = NULL;
        ct_tensor *x = ct_test_random(CT_SHAPE(m, k), CT_FLOAT32, s == 2 ? 0.0 : -2.0, 3.0, &xv);
        ct_tensor *w = ct_test_random(CT_SHAPE(n, k), CT_FLOAT32, -0.5, 0.5, &wv);
        ct_tensor *b = ct_test_random(CT_SHAPE(n), CT_FLOAT32, -1, 1, &bv);
        ct_tensor *q = NULL, *sc = NULL;
        CT_EXPECT(ct_quantize_weight_int8(w, &q, &sc) == CT_OK);
        /* the weight scale is max|w_row| / 127 and q = round(w / scale) */
        double *qv = ct_test_values(q), *scv = ct_test_values(sc);
        for (int64_t j = 0; j < n && qv && scv; j++) {
            double amax = 0;
            for (int64_t p = 0; p < k; p++) amax = fmax(amax, fabs(wv[j * k + p]));
            CT_EXPECT_NEAR(scv[j], (float)(amax / 127.0), 0.0);
            for (int64_t p = 0; p < k; p++) CT_EXPECT_NEAR(qv[j * k + p], nearbyint(wv[j * k + p] / scv[j]), 0.0);
        }
        free(qv), free(scv);
        ct_tensor *y = ct_quantized_linear_dynamic(x, q, sc, b);
        CT_EXPECT(y && ct_dtype_of(y) == CT_FLOAT32 && ct_size(y, 0) == m && ct_size(y, 1) == n);
        if (y) check_against_float(xv, m, k, wv, n, bv, y, sc);
        /* leading dimensions are kept: [2, m, k] → [2, m, n] */
        ct_tensor *x3 = ct_stack((ct_tensor *const[]){x, x}, 2, 0);
        ct_tensor *y3 = ct_quantized_linear_dynamic(x3, q, sc, NULL);
        CT_EXPECT(y3 && ct_ndim(y3) == 3 && ct_size(y3, 2) == n);
        free(xv), free(wv), free(bv);
    }
}

/* Activations get 7 bits (0..127, PyTorch's reduce_range): with w = 1
 * (q = 127, scale 1/127) and x in [0, 1], y = round(127·x) / 127. */
static void test_quantized_linear_7bit(void) {
    CT_SCOPE {
        const double xv[] = {0.0, 1.0, 0.5, 0.25}, wv[] = {1.0};
        ct_tensor *q = NULL, *sc = NULL;
        CT_EXPECT(ct_quantize_weight_int8(ct_test_tensor(wv, CT_SHAPE(1, 1), CT_FLOAT32), &q, &sc) == CT_OK);
        ct_tensor *y = ct_quantized_linear_dynamic(ct_test_tensor(xv, CT_SHAPE(4, 1), CT_FLOAT32), q, sc, NULL);
        double *g = ct_test_values(y);
        /* 0.5·127 = 63.5 → 64 (even), 0.25·127 = 31.75 → 32; with 255 levels
         * 0.5 would give 128/255 = 0.50196 */
        const double want[] = {0.0, 1.0, 64.0 / 127.0, 32.0 / 127.0};
        for (int i = 0; g && i < 4; i++) CT_EXPECT_NEAR(g[i], want[i], 1e-6);
        free(g);
    }
}

static ct_module *small_mlp(void) {
    return CT_SEQUENTIAL(ct_nn_flatten(1, -1), ct_nn_linear(64, 48, true), ct_nn_relu(),
                         CT_SEQUENTIAL(ct_nn_linear(48, 32, false), ct_nn_tanh()), ct_nn_linear(32, 10, true));
}

static int count_type(ct_module *m, const char *type) {
    int c = !strcmp(ct_module_type(m), type);
    for (int i = 0; i < ct_module_num_children(m); i++) c += count_type(ct_module_child_at(m, i), type);
    return c;
}

static void test_quantize_dynamic_mlp(void) {
    ct_module *model = small_mlp();
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(16, 4, 16), CT_FLOAT32, -1, 1, NULL);
        ct_tensor *ref = NULL, *got = NULL;
        CT_NO_GRAD { ref = ct_forward(model, x); }
        ct_module *q = ct_quantize_dynamic(model, false);
        CT_EXPECT(q && q != model);
        CT_EXPECT_INT_EQ(count_type(model, "Linear"), 3); /* untouched */
        CT_EXPECT_INT_EQ(count_type(q, "Linear"), 0);
        CT_EXPECT_INT_EQ(count_type(q, "DynamicQuantizedLinear"), 3);
        CT_EXPECT(!ct_module_is_training(q));
        CT_NO_GRAD { got = ct_forward(q, x); }
        double *r = ct_test_values(ref), *g = ct_test_values(got), num = 0, den = 0;
        for (int i = 0; r && g && i < 160; i++) num += (r[i] - g[i]) * (r[i] - g[i]), den += r[i] * r[i];
        printf("  MLP int8 vs float relative error %.4f\n", sqrt(num / den));
        CT_EXPECT(sqrt(num / den) < 0.03);
        free(r), free(g);
        /* state_dict: int8 weights and float scales and bias */
        CT_EXPECT(ct_dtype_of(ct_module_get(q, "1.weight")) == CT_INT8);
        CT_EXPECT(ct_dtype_of(ct_module_get(q, "1.weight_scale")) == CT_FLOAT32);
        CT_EXPECT(ct_module_get(q, "1.bias") != NULL && ct_module_get(q, "3.0.bias") == NULL);
        CT_EXPECT(ct_module_num_parameters(q) == 0);
        ct_tensor_dict *sd = ct_module_state_dict(q);
        CT_EXPECT(sd && ct_tensor_dict_contains(sd, "4.weight_scale"));
        ct_tensor_dict_free(sd);
        /* clone gives the same outputs */
        ct_module *c = ct_module_clone(q, ct_device_cpu());
        CT_EXPECT(c != NULL);
        ct_tensor *gc = NULL;
        CT_NO_GRAD { gc = ct_forward(c, x); }
        double *want = ct_test_values(got);
        CT_EXPECT(gc && ct_test_close(__FILE__, __LINE__, "clone", gc, want, 160, 0, 0));
        free(want);
        ct_module_free(c);
        /* in place: the same pointer comes back */
        CT_EXPECT(ct_quantize_dynamic(model, true) == model);
        CT_EXPECT_INT_EQ(count_type(model, "DynamicQuantizedLinear"), 3);
        ct_module_free(q);
    }
    ct_module_free(model);
}

/* The module's cached weight row sums: its output is the op's on the same
 * buffers, bit for bit, and follows in-place writes to the weight (the
 * version changes) and a replaced weight buffer; a clone starts fresh. */
static void expect_module_matches_op(ct_module *q, const ct_tensor *x, const char *what) {
    CT_SCOPE CT_NO_GRAD {
        ct_tensor *ym = ct_forward(q, x);
        ct_tensor *yo = ct_quantized_linear_dynamic(x, ct_module_buffer(q, "weight"),
                                                    ct_module_buffer(q, "weight_scale"), ct_module_buffer(q, "bias"));
        double *o = ct_test_values(yo);
        CT_EXPECT_MSG(ym && o && ct_test_close(__FILE__, __LINE__, what, ym, o, ct_numel(yo), 0, 0), "%s", what);
        free(o);
    }
}

static void test_quantize_dynamic_row_sum_cache(void) {
    ct_module *lin = ct_nn_linear(70, 33, true);
    ct_module *q = ct_quantize_dynamic(lin, false);
    CT_EXPECT(q != NULL);
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(5, 70), CT_FLOAT32, -1, 2, NULL);
        expect_module_matches_op(q, x, "fresh module");
        expect_module_matches_op(q, ct_narrow(x, 0, 0, 1), "batch 1");
        /* in place, through the API: the version moves, the sums follow */
        ct_tensor *w = ct_module_buffer(q, "weight");
        ct_tensor *w2 = ct_to_dtype(ct_test_random(CT_SHAPE(33, 70), CT_FLOAT32, -128, 127, NULL), CT_INT8);
        CT_EXPECT(ct_copy_(w, w2) == CT_OK);
        expect_module_matches_op(q, x, "after copy_ into the weight");
        CT_EXPECT(ct_fill_(w, 3.0) == CT_OK);
        expect_module_matches_op(q, x, "after fill_ of the weight");
        /* load_state_dict writes in place as well */
        ct_tensor_dict *sd = ct_tensor_dict_new();
        CT_EXPECT(ct_tensor_dict_set(sd, "weight", w2) == CT_OK);
        CT_EXPECT(ct_module_load_state_dict(q, sd, false) == CT_OK);
        ct_tensor_dict_free(sd);
        expect_module_matches_op(q, x, "after load_state_dict");
        /* a clone computes its own */
        ct_module *c = ct_module_clone(q, ct_device_cpu());
        CT_EXPECT(c != NULL);
        if (c) expect_module_matches_op(c, x, "clone");
        ct_module_free(c);
    }
    ct_module_free(q), ct_module_free(lin);
}

static void test_quantize_errors(void) {
    CT_EXPECT(ct_quantize_dynamic(NULL, false) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "quantize_dynamic: NULL model");
    CT_EXPECT(ct_nnqd_linear_from_float(NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL module");
    ct_module *relu = ct_nn_relu();
    CT_EXPECT(ct_nnqd_linear_from_float(relu) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "expected a Linear (ct_nn_linear), got ReLU");
    ct_module *lin = ct_nn_linear(4, 3, true);
    CT_EXPECT(ct_quantize_dynamic(lin, true) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "bare Linear, which cannot be replaced in place");
    ct_module *ql = ct_quantize_dynamic(lin, false);
    CT_EXPECT(ql && !strcmp(ct_module_type(ql), "DynamicQuantizedLinear"));
    CT_SCOPE {
        ct_tensor *x = ct_test_random(CT_SHAPE(2, 4), CT_FLOAT32, -1, 1, NULL);
        ct_module_train(ql, true);
        CT_EXPECT(ct_forward(ql, x) == NULL);
        CT_EXPECT_ERROR(CT_ERR_STATE, "in training mode; call ct_module_eval");
        ct_module_eval(ql);
        ct_tensor *xg = ct_test_random(CT_SHAPE(2, 4), CT_FLOAT32, -1, 1, NULL);
        ct_set_requires_grad(xg, true);
        CT_EXPECT(ct_forward(ql, xg) == NULL);
        CT_EXPECT_ERROR(CT_ERR_STATE, "inference-only (no backward), but the input requires grad");
        CT_NO_GRAD { CT_EXPECT(ct_forward(ql, xg) != NULL); }
        CT_EXPECT(ct_forward(ql, ct_to_dtype(x, CT_FLOAT64)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected a float32 input, got float64");
        CT_EXPECT(ct_forward(ql, ct_test_random(CT_SHAPE(2, 5), CT_FLOAT32, -1, 1, NULL)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "input's last dimension (5) must equal in_features (4)");
        ct_tensor *w = ct_module_buffer(ql, "weight"), *s = ct_module_buffer(ql, "weight_scale");
        CT_EXPECT(ct_quantized_linear_dynamic(x, s, s, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected a 2-D int8 weight, got 1-D float32");
        CT_EXPECT(ct_quantized_linear_dynamic(x, w, NULL, NULL) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL weight_scale");
        CT_EXPECT(ct_int_mm(x, x) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "_int_mm: expected self and mat2 to be int8, got float32 and float32");
        CT_EXPECT(ct_int_mm(w, w) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "self.size(1) needs to match mat2.size(0), got 4 and 3");
        ct_tensor *q = NULL, *sc = NULL;
        CT_EXPECT(ct_quantize_weight_int8(w, &q, &sc) != CT_OK && q == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected a floating-point weight, got int8");
    }
    ct_module_free(ql), ct_module_free(lin), ct_module_free(relu);
}

/* The quantized Linear on a device against the CPU's. */
static void quantized_on(ct_device dev) {
    {
        ct_module *model = small_mlp();
        ct_module *q = ct_quantize_dynamic(model, true);
        ct_module *qd = ct_module_clone(q, dev);
        CT_EXPECT(qd != NULL);
        CT_SCOPE CT_NO_GRAD {
            ct_tensor *x = ct_test_random(CT_SHAPE(8, 64), CT_FLOAT32, -1, 1, NULL);
            ct_tensor *yc = ct_forward(q, x);
            ct_tensor *yd = ct_forward(qd, ct_to_device(x, dev));
            CT_EXPECT(yd && ct_device_equal(ct_device_of(yd), dev));
            /* the same integers; float steps may differ in the last bit, and
             * a tie in activation rounding can move one value by a step */
            double *r = ct_test_values(yc), *g = ct_test_values(ct_to_device(yd, ct_device_cpu()));
            double worst = 0;
            for (int i = 0; r && g && i < 80; i++) worst = fmax(worst, fabs(r[i] - g[i]));
            CT_EXPECT_MSG(r && g && worst < 2e-3, "%s vs CPU differ by %g", ct_device_type_name(dev.type), worst);
            free(r), free(g);
        }
        ct_module_free(qd);
        ct_module_free(model);
    }
}

static void test_quantized_on_opencl(void) {
    int ndev = ct_test_opencl_devices("quantized Linear on OpenCL");
    for (int d = 0; d < ndev; d++) quantized_on(ct_device_opencl(d));
}

static void test_quantized_on_cuda(void) {
    if (ct_test_cuda_devices("quantized Linear on CUDA")) quantized_on(ct_device_cuda(0));
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_int8_dtype_facts);
    CT_RUN(test_int8_conversions);
    CT_RUN(test_int8_print);
    CT_RUN(test_int8_arithmetic);
    CT_RUN(test_int8_safetensors);
    CT_RUN(test_qgemm_exact_every_path);
    CT_RUN(test_qgemm_u7_and_fused_every_path);
    CT_RUN(test_qgemm_strided_every_path);
    CT_RUN(test_activation_helpers);
    CT_RUN(test_qgemm_path_choice);
    CT_RUN(test_int_mm);
    CT_RUN(test_quantized_linear_bound);
    CT_RUN(test_quantized_linear_7bit);
    CT_RUN(test_quantize_dynamic_mlp);
    CT_RUN(test_quantize_dynamic_row_sum_cache);
    CT_RUN(test_quantize_errors);
    CT_RUN(test_quantized_on_opencl);
    CT_RUN(test_quantized_on_cuda);
    return ct_test_finish();
}
