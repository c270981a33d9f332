/*
 * test_tensor.c — tensor creation, properties, dtype conversion (ct_to,
 * ct_from_data, host copies), ct_copy_/ct_fill_ and ct_item.
 *
 * Values are read back element by element with ct_get and compared with
 * expectations computed here; conversions are checked for every pair of
 * dtypes against C's rules (float->int truncates toward zero, ->bool is
 * != 0, ->uint8 wraps like a C cast through an integer). The view ops live
 * in test_tensor_views.c.
 */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype all_dtypes[8] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                       CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};

/* ---- helpers ------------------------------------------------------------------ */

/* Every element of t, read with ct_get in row-major order, equals
 * expected[] exactly (NaN matches NaN). */
static void expect_values_at(const char *file, int line, const ct_tensor *t, const double *expected,
                             int64_t n) {
    if (!t) {
        ct_test_fail(file, line, "tensor is NULL: %s", ct_last_error());
        return;
    }
    if (ct_numel(t) != n) {
        ct_test_fail(file, line, "numel %lld, expected %lld", (long long)ct_numel(t), (long long)n);
        return;
    }
    int nd = ct_ndim(t);
    const int64_t *sz = ct_sizes(t);
    int64_t idx[CT_MAX_DIMS] = {0};
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = ct_get(t, idx);
        bool ok = isnan(expected[k]) ? isnan(v) : v == expected[k];
        if (!ok && bad++ < 4)
            ct_test_fail(file, line, "element %lld (%s): got %.9g, expected %.9g", (long long)k,
                         ct_dtype_name(ct_dtype_of(t)), v, expected[k]);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sz[d]) break;
            idx[d] = 0;
        }
    }
}
#define EXPECT_VALUES(t, n, ...) \
    expect_values_at(__FILE__, __LINE__, (t), (const double[]){__VA_ARGS__}, (n))
#define EXPECT_VALUES_ARR(t, arr, n) expect_values_at(__FILE__, __LINE__, (t), (arr), (n))

static void expect_all_equal_at(const char *file, int line, const ct_tensor *t, double v) {
    int64_t n = ct_numel(t);
    double *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) e[i] = v;
    expect_values_at(file, line, t, e, n);
    free(e);
}
#define EXPECT_ALL(t, v) expect_all_equal_at(__FILE__, __LINE__, (t), (v))

static void expect_meta_at(const char *file, int line, const ct_tensor *t, ct_dtype dt, ct_shape s) {
    if (!t) return; /* reported by the value check */
    if (ct_dtype_of(t) != dt)
        ct_test_fail(file, line, "dtype %s, expected %s", ct_dtype_name(ct_dtype_of(t)), ct_dtype_name(dt));
    ct_test_shape_is(file, line, t, s);
}
#define EXPECT_META(t, dt, s) expect_meta_at(__FILE__, __LINE__, (t), (dt), (s))

/* ---- conversion reference ------------------------------------------------------ */

/* The value v (exactly representable in every float dtype used here)
 * converted to dt by C's rules. */
static double ref_convert(double v, ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: case CT_FLOAT64: case CT_FLOAT16: case CT_BFLOAT16: return v;
    case CT_INT32: case CT_INT64: return trunc(v);
    case CT_UINT8: return (double)(uint8_t)(int64_t)trunc(v);
    case CT_BOOL: return v != 0.0;
    default: return NAN;
    }
}

/* Write v into a host buffer of dtype dt (v exactly representable). */
static void store_as(void *buf, int64_t i, ct_dtype dt, double v) {
    switch (dt) {
    case CT_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case CT_FLOAT64: ((double *)buf)[i] = v; break;
    case CT_FLOAT16: ((uint16_t *)buf)[i] = ct_float_to_half((float)v); break;
    case CT_BFLOAT16: ((uint16_t *)buf)[i] = ct_float_to_bfloat16((float)v); break;
    case CT_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case CT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case CT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case CT_BOOL: ((bool *)buf)[i] = v != 0.0; break;
    default: break;
    }
}

static double load_as(const void *buf, int64_t i, ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return ((const float *)buf)[i];
    case CT_FLOAT64: return ((const double *)buf)[i];
    case CT_FLOAT16: return ct_half_to_float(((const uint16_t *)buf)[i]);
    case CT_BFLOAT16: return ct_bfloat16_to_float(((const uint16_t *)buf)[i]);
    case CT_INT32: return ((const int32_t *)buf)[i];
    case CT_INT64: return (double)((const int64_t *)buf)[i];
    case CT_UINT8: return ((const uint8_t *)buf)[i];
    case CT_BOOL: return ((const uint8_t *)buf)[i];
    default: return NAN;
    }
}

/* Sample values: exact in float16/bfloat16, negative, fractional, and
 * inside [0, 255] once truncated. */
#define NSAMPLE 12
static const double base_samples[NSAMPLE] = {-3.75, -1.0, -0.5, 0.0,   0.25,  1.0,
                                             2.5,   7.0,  100.0, 192.0, 255.0, 127.5};

/* ---- creation ----------------------------------------------------------------- */

static void test_full_family_every_dtype(void) {
    ct_scope_begin();
    for (int i = 0; i < 8; i++) {
        ct_dtype dt = all_dtypes[i];
        ct_tensor *z = ct_zeros(CT_SHAPE(2, 3), .dtype = dt);
        ct_tensor *o = ct_ones(CT_SHAPE(2, 3), .dtype = dt);
        double fv = ct_dtype_is_floating(dt) ? -2.5 : dt == CT_BOOL ? 1 : dt == CT_UINT8 ? 200 : -7;
        ct_tensor *f = ct_full(CT_SHAPE(3, 1, 2), fv, .dtype = dt);
        ct_tensor *e = ct_empty(CT_SHAPE(4, 5), .dtype = dt);
        EXPECT_META(z, dt, CT_SHAPE(2, 3));
        EXPECT_META(f, dt, CT_SHAPE(3, 1, 2));
        EXPECT_META(e, dt, CT_SHAPE(4, 5));
        EXPECT_ALL(z, 0.0);
        EXPECT_ALL(o, 1.0);
        EXPECT_ALL(f, fv);
        CT_EXPECT(ct_is_contiguous(e) && ct_data_ptr(e) != NULL);
    }
    /* full() converts its value like a cast */
    EXPECT_ALL(ct_full(CT_SHAPE(2), 2.9, .dtype = CT_INT64), 2.0);
    EXPECT_ALL(ct_full(CT_SHAPE(2), -2.9, .dtype = CT_INT32), -2.0);
    EXPECT_ALL(ct_full(CT_SHAPE(2), 0.5, .dtype = CT_BOOL), 1.0);
    EXPECT_ALL(ct_full(CT_SHAPE(2), 1.0 / 3, .dtype = CT_FLOAT32), (double)(1.0f / 3));
    EXPECT_ALL(ct_full(CT_SHAPE(2), 1.0 / 3, .dtype = CT_FLOAT64), 1.0 / 3);
    EXPECT_ALL(ct_full(CT_SHAPE(2), 1e6, .dtype = CT_FLOAT16), INFINITY);
    EXPECT_ALL(ct_full(CT_SHAPE(2), NAN), NAN);
    /* unset dtype is the default float dtype */
    CT_EXPECT_INT_EQ(ct_dtype_of(ct_zeros(CT_SHAPE(1))), CT_FLOAT32);
    ct_scope_end();
}

static void test_zero_dim_and_empty_shapes(void) {
    ct_scope_begin();
    ct_tensor *s = ct_scalar_tensor(4.5);
    CT_EXPECT_INT_EQ(ct_ndim(s), 0);
    CT_EXPECT_INT_EQ(ct_numel(s), 1);
    CT_EXPECT(ct_is_contiguous(s));
    CT_EXPECT_NEAR(ct_item(s), 4.5, 0);
    ct_tensor *si = ct_scalar_tensor(-3, .dtype = CT_INT64);
    CT_EXPECT_NEAR(ct_item(si), -3, 0);
    CT_EXPECT_INT_EQ(ct_dtype_of(si), CT_INT64);

    ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
    CT_EXPECT(e != NULL);
    CT_EXPECT_INT_EQ(ct_ndim(e), 2);
    CT_EXPECT_INT_EQ(ct_numel(e), 0);
    CT_EXPECT_INT_EQ(ct_size(e, 1), 3);
    ct_tensor *e2 = ct_ones(CT_SHAPE(4, 0, 2), .dtype = CT_INT32);
    CT_EXPECT(e2 && ct_numel(e2) == 0);
    CT_EXPECT_INT_EQ(ct_fill_(e2, 3), CT_OK);
    ct_tensor *ec = ct_clone(e2);
    CT_EXPECT(ec && ct_numel(ec) == 0 && ct_ndim(ec) == 3);

    ct_tensor *big = ct_zeros(CT_SHAPE(1, 1, 1, 1, 1, 1, 1, 2));
    CT_EXPECT(big && ct_ndim(big) == 8);
    ct_scope_end();
}

static void test_creation_errors(void) {
    ct_clear_error();
    CT_EXPECT(ct_zeros(CT_SHAPE(2, -1)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "-1");
    CT_EXPECT(ct_empty(CT_SHAPE(-3)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "-3");
    int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ct_shape nine = {.ndim = 9};
    memcpy(nine.dims, dims, sizeof nine.dims);
    CT_EXPECT(ct_zeros(nine) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "8");
    CT_EXPECT(ct_ones(CT_SHAPE(2), .dtype = (ct_dtype)42) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "42");
    CT_EXPECT(ct_zeros(CT_SHAPE((int64_t)1 << 40, (int64_t)1 << 40)) == NULL);
    CT_EXPECT(ct_last_status() == CT_ERR_OOM || ct_last_status() == CT_ERR_SHAPE);
    ct_clear_error();
}

static void test_arange(void) {
    ct_scope_begin();
    ct_tensor *a = ct_arange(0, 5, 1);
    EXPECT_META(a, CT_INT64, CT_SHAPE(5));
    EXPECT_VALUES(a, 5, 0, 1, 2, 3, 4);
    ct_tensor *b = ct_arange(0, 1, 0.25);
    EXPECT_META(b, CT_FLOAT32, CT_SHAPE(4));
    EXPECT_VALUES(b, 4, 0, 0.25, 0.5, 0.75);
    ct_tensor *c = ct_arange(5, 0, -1.5);
    EXPECT_META(c, CT_FLOAT32, CT_SHAPE(4));
    EXPECT_VALUES(c, 4, 5, 3.5, 2, 0.5);
    ct_tensor *d = ct_arange(10, 0, -3);
    EXPECT_META(d, CT_INT64, CT_SHAPE(4));
    EXPECT_VALUES(d, 4, 10, 7, 4, 1);
    EXPECT_VALUES(ct_arange(0, 10, 3), 4, 0, 3, 6, 9);
    EXPECT_VALUES(ct_arange(0.5, 3, 1), 3, 0.5, 1.5, 2.5);
    EXPECT_VALUES(ct_arange(-3, 3, 2), 3, -3, -1, 1);
    ct_tensor *f = ct_arange(0, 4, 1, .dtype = CT_FLOAT64);
    EXPECT_META(f, CT_FLOAT64, CT_SHAPE(4));
    EXPECT_VALUES(f, 4, 0, 1, 2, 3);
    ct_tensor *h = ct_arange(0, 3, 0.5, .dtype = CT_FLOAT16);
    EXPECT_META(h, CT_FLOAT16, CT_SHAPE(6));
    EXPECT_VALUES(h, 6, 0, 0.5, 1, 1.5, 2, 2.5);
    ct_tensor *u = ct_arange(250, 256, 1, .dtype = CT_UINT8);
    EXPECT_VALUES(u, 6, 250, 251, 252, 253, 254, 255);
    ct_tensor *empty = ct_arange(3, 3, 1);
    CT_EXPECT(empty && ct_numel(empty) == 0 && ct_ndim(empty) == 1);
    /* large: every element exact (no accumulated error) */
    ct_tensor *big = ct_arange(0, 100000, 1, .dtype = CT_FLOAT64);
    int64_t last = 99999, mid = 54321;
    CT_EXPECT_NEAR(ct_get(big, &last), 99999, 0);
    CT_EXPECT_NEAR(ct_get(big, &mid), 54321, 0);
    ct_tensor *fr = ct_arange(0, 1, 0.1, .dtype = CT_FLOAT64);
    CT_EXPECT_INT_EQ(ct_numel(fr), 10);
    for (int64_t i = 0; i < 10 && fr; i++) CT_EXPECT_NEAR(ct_get(fr, &i), i * 0.1, 1e-15);

    ct_clear_error();
    CT_EXPECT(ct_arange(0, 5, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "step must be nonzero");
    CT_EXPECT(ct_arange(0, 5, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "upper bound and larger bound inconsistent with step sign");
    CT_EXPECT(ct_arange(5, 0, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "inconsistent with step sign");
    CT_EXPECT(ct_arange(0, INFINITY, 1) == NULL);
    CT_EXPECT(ct_last_status() == CT_ERR_INVALID_ARG);
    ct_clear_error();
    ct_scope_end();
}

static void test_linspace(void) {
    ct_scope_begin();
    ct_tensor *a = ct_linspace(2, 5, 4);
    EXPECT_META(a, CT_FLOAT32, CT_SHAPE(4));
    EXPECT_VALUES(a, 4, 2, 3, 4, 5);
    EXPECT_VALUES(ct_linspace(0, 1, 5), 5, 0, 0.25, 0.5, 0.75, 1);
    EXPECT_VALUES(ct_linspace(5, 2, 4), 4, 5, 4, 3, 2);
    ct_tensor *one = ct_linspace(2, 5, 1);
    EXPECT_META(one, CT_FLOAT32, CT_SHAPE(1));
    EXPECT_VALUES(one, 1, 2);
    ct_tensor *zero = ct_linspace(2, 5, 0);
    CT_EXPECT(zero && ct_ndim(zero) == 1 && ct_numel(zero) == 0);
    ct_tensor *d = ct_linspace(0, 1, 7, .dtype = CT_FLOAT64);
    EXPECT_META(d, CT_FLOAT64, CT_SHAPE(7));
    for (int64_t i = 0; i < 7 && d; i++) CT_EXPECT_NEAR(ct_get(d, &i), i / 6.0, 1e-15);
    int64_t last = 6;
    CT_EXPECT_NEAR(ct_get(d, &last), 1.0, 0); /* the end point is exact */
    ct_tensor *big = ct_linspace(-1, 3, 1001);
    int64_t end = 1000;
    CT_EXPECT_NEAR(ct_get(big, &end), 3.0, 0);
    for (int64_t i = 0; i < 1001 && big; i += 37)
        CT_EXPECT_NEAR(ct_get(big, &i), -1 + 4.0 * i / 1000, 1e-6);
    EXPECT_VALUES(ct_linspace(0, 10, 5, .dtype = CT_INT64), 5, 0, 2, 5, 7, 10);
    ct_clear_error();
    CT_EXPECT(ct_linspace(0, 1, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "number of steps must be non-negative");
    ct_scope_end();
}

static void test_eye(void) {
    ct_scope_begin();
    ct_tensor *e = ct_eye(3, 0);
    EXPECT_META(e, CT_FLOAT32, CT_SHAPE(3, 3));
    EXPECT_VALUES(e, 9, 1, 0, 0, 0, 1, 0, 0, 0, 1);
    ct_tensor *w = ct_eye(2, 4, .dtype = CT_INT64);
    EXPECT_META(w, CT_INT64, CT_SHAPE(2, 4));
    EXPECT_VALUES(w, 8, 1, 0, 0, 0, 0, 1, 0, 0);
    ct_tensor *t = ct_eye(4, 2, .dtype = CT_BOOL);
    EXPECT_META(t, CT_BOOL, CT_SHAPE(4, 2));
    EXPECT_VALUES(t, 8, 1, 0, 0, 1, 0, 0, 0, 0);
    ct_tensor *z = ct_eye(0, 0);
    CT_EXPECT(z && ct_numel(z) == 0 && ct_ndim(z) == 2);
    ct_clear_error();
    CT_EXPECT(ct_eye(-1, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "n must be greater or equal to 0, got -1");
    ct_scope_end();
}

/* ---- conversions for every dtype pair ------------------------------------------ */

typedef struct sample_set {
    double vals[NSAMPLE];
    unsigned char buf[NSAMPLE * 8];
} sample_set;

/* The samples as stored in dtype src, and a host buffer holding them. */
static void make_samples(ct_dtype src, sample_set *s) {
    for (int i = 0; i < NSAMPLE; i++) {
        s->vals[i] = ref_convert(base_samples[i], src);
        store_as(s->buf, i, src, s->vals[i]);
    }
}

static void test_conversions_every_pair(void) {
    ct_scope_begin();
    for (int a = 0; a < 8; a++) {
        ct_dtype src = all_dtypes[a];
        sample_set s;
        make_samples(src, &s);
        ct_tensor *t = ct_tensor_from(s.buf, src, CT_SHAPE(3, 4));
        EXPECT_META(t, src, CT_SHAPE(3, 4));
        EXPECT_VALUES_ARR(t, s.vals, NSAMPLE);
        for (int b = 0; b < 8; b++) {
            ct_dtype dst = all_dtypes[b];
            double want[NSAMPLE];
            for (int i = 0; i < NSAMPLE; i++) want[i] = ref_convert(s.vals[i], dst);

            ct_tensor *fd = ct_tensor_from(s.buf, src, CT_SHAPE(12), .dtype = dst);
            EXPECT_META(fd, dst, CT_SHAPE(12));
            EXPECT_VALUES_ARR(fd, want, NSAMPLE);

            ct_tensor *to = ct_to(t, ct_device_cpu(), dst);
            EXPECT_META(to, dst, CT_SHAPE(3, 4));
            EXPECT_VALUES_ARR(to, want, NSAMPLE);
            ct_tensor *td = ct_to_dtype(t, dst);
            EXPECT_VALUES_ARR(td, want, NSAMPLE);
            if (src != dst) CT_EXPECT(!ct_shares_storage(t, to));

            unsigned char out[NSAMPLE * 8];
            memset(out, 0xAB, sizeof out);
            CT_EXPECT_INT_EQ(ct_copy_to_host(t, out, dst, NSAMPLE), CT_OK);
            int bad = 0;
            for (int i = 0; i < NSAMPLE; i++) bad += load_as(out, i, dst) != want[i];
            CT_EXPECT_MSG(bad == 0, "copy_to_host %s -> %s: %d wrong values", ct_dtype_name(src),
                          ct_dtype_name(dst), bad);

            ct_tensor *into = ct_zeros(CT_SHAPE(4, 3), .dtype = dst);
            CT_EXPECT_INT_EQ(ct_copy_from_host(into, s.buf, src, NSAMPLE), CT_OK);
            EXPECT_VALUES_ARR(into, want, NSAMPLE);

            ct_tensor *cp = ct_zeros(CT_SHAPE(3, 4), .dtype = dst);
            CT_EXPECT_INT_EQ(ct_copy_(cp, t), CT_OK);
            EXPECT_VALUES_ARR(cp, want, NSAMPLE);
        }
    }
    ct_scope_end();
}

/* Special values: rounding to 16-bit floats, NaN to bool, large int64. */
static void test_conversion_edge_values(void) {
    ct_scope_begin();
    float f[5] = {1.0f + 0x1p-11f, 65520.0f, -INFINITY, NAN, 0x1p-25f};
    ct_tensor *t = ct_tensor_from(f, CT_FLOAT32, CT_SHAPE(5));
    EXPECT_VALUES(ct_to_dtype(t, CT_FLOAT16), 5, 1.0, INFINITY, -INFINITY, NAN, 0.0);
    EXPECT_VALUES(ct_to_dtype(t, CT_BFLOAT16), 5, 1.0, 65536.0, -INFINITY, NAN, 0x1p-25);
    EXPECT_VALUES(ct_to_dtype(t, CT_BOOL), 5, 1, 1, 1, 1, 1);
    EXPECT_VALUES(ct_to_dtype(ct_scalar_tensor(-0.0), CT_BOOL), 1, 0);

    /* int64 beyond 2^53 survives copies exactly */
    int64_t big[4] = {((int64_t)1 << 62) + 1, -((int64_t)1 << 53) - 1, INT64_MAX, INT64_MIN};
    ct_tensor *b = ct_tensor_from(big, CT_INT64, CT_SHAPE(2, 2));
    ct_tensor *bt = ct_contiguous(ct_t(b));
    ct_tensor *bc = ct_clone(b);
    int64_t back[4] = {0};
    CT_EXPECT_INT_EQ(ct_copy_to_host(bt, back, CT_INT64, 4), CT_OK);
    CT_EXPECT(back[0] == big[0] && back[1] == big[2] && back[2] == big[1] && back[3] == big[3]);
    CT_EXPECT_INT_EQ(ct_copy_to_host(bc, back, CT_INT64, 4), CT_OK);
    CT_EXPECT(memcmp(back, big, sizeof big) == 0);
    ct_tensor *dst = ct_zeros(CT_SHAPE(2, 2), .dtype = CT_INT64);
    CT_EXPECT_INT_EQ(ct_copy_from_host(dst, big, CT_INT64, 4), CT_OK);
    CT_EXPECT_INT_EQ(ct_copy_to_host(dst, back, CT_INT64, 4), CT_OK);
    CT_EXPECT(memcmp(back, big, sizeof big) == 0);
    ct_scope_end();
}

static void test_to_same_dtype_returns_self(void) {
    ct_tensor *t = ct_ones(CT_SHAPE(2, 2), .dtype = CT_INT32);
    ct_tensor *same = ct_to(t, ct_device_cpu(), CT_INT32);
    CT_EXPECT(same == t);
    CT_EXPECT_INT_EQ(ct_refcount(t), 2);
    ct_release(same);
    same = ct_to(t, ct_device_cpu(), CT_DTYPE_DEFAULT); /* DEFAULT keeps the dtype */
    CT_EXPECT(same == t);
    ct_release(same);
    same = ct_to_dtype(t, CT_INT32);
    CT_EXPECT(same == t);
    ct_release(same);
    same = ct_cpu(t);
    CT_EXPECT(same == t);
    ct_release(same);
    same = ct_to_device(t, ct_device_cpu());
    CT_EXPECT(same == t);
    ct_release(same);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_clear_error();
    CT_EXPECT(ct_to_dtype(t, (ct_dtype)77) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "77");
    ct_release(t);
}

static void test_like_functions(void) {
    ct_scope_begin();
    ct_tensor *src = ct_t(ct_full(CT_SHAPE(2, 3), 9, .dtype = CT_FLOAT64));
    ct_tensor *e = ct_empty_like(src);
    ct_tensor *z = ct_zeros_like(src);
    ct_tensor *o = ct_ones_like(src);
    ct_tensor *f = ct_full_like(src, -4.5);
    ct_tensor *r = ct_rand_like(src);
    ct_tensor *n = ct_randn_like(src);
    ct_tensor *all[6] = {e, z, o, f, r, n};
    for (int i = 0; i < 6; i++) {
        EXPECT_META(all[i], CT_FLOAT64, CT_SHAPE(3, 2));
        CT_EXPECT(all[i] && !ct_shares_storage(all[i], src));
    }
    EXPECT_ALL(z, 0);
    EXPECT_ALL(o, 1);
    EXPECT_ALL(f, -4.5);
    double rv[6];
    CT_EXPECT_INT_EQ(ct_copy_to_host(r, rv, CT_FLOAT64, 6), CT_OK);
    for (int i = 0; i < 6; i++) CT_EXPECT(rv[i] >= 0 && rv[i] < 1);
    ct_tensor *iz = ct_zeros_like(ct_arange(0, 4, 1));
    EXPECT_META(iz, CT_INT64, CT_SHAPE(4));
    ct_tensor *ib = ct_full_like(ct_zeros(CT_SHAPE(2), .dtype = CT_UINT8), 200);
    CT_EXPECT_INT_EQ(ct_dtype_of(ib), CT_UINT8);
    EXPECT_ALL(ib, 200);
    ct_clear_error();
    CT_EXPECT(ct_zeros_like(NULL) == NULL && ct_empty_like(NULL) == NULL);
    CT_EXPECT(ct_full_like(NULL, 1) == NULL && ct_ones_like(NULL) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    ct_scope_end();
}

/* ---- properties ---------------------------------------------------------------- */

static void test_properties(void) {
    ct_scope_begin();
    ct_tensor *t = ct_zeros(CT_SHAPE(2, 3, 4), .dtype = CT_INT32);
    CT_EXPECT_INT_EQ(ct_ndim(t), 3);
    CT_EXPECT_INT_EQ(ct_size(t, 0), 2);
    CT_EXPECT_INT_EQ(ct_size(t, 2), 4);
    CT_EXPECT_INT_EQ(ct_size(t, -1), 4);
    CT_EXPECT_INT_EQ(ct_size(t, -3), 2);
    CT_EXPECT_INT_EQ(ct_stride(t, 0), 12);
    CT_EXPECT_INT_EQ(ct_stride(t, 1), 4);
    CT_EXPECT_INT_EQ(ct_stride(t, -1), 1);
    CT_EXPECT_INT_EQ(ct_numel(t), 24);
    CT_EXPECT_INT_EQ(ct_storage_offset(t), 0);
    CT_EXPECT_INT_EQ(ct_element_size(t), 4);
    CT_EXPECT_INT_EQ(ct_dtype_of(t), CT_INT32);
    CT_EXPECT(ct_device_equal(ct_device_of(t), ct_device_cpu()));
    CT_EXPECT(ct_is_contiguous(t));
    const int64_t *sz = ct_sizes(t), *st = ct_strides(t);
    CT_EXPECT(sz[0] == 2 && sz[1] == 3 && sz[2] == 4);
    CT_EXPECT(st[0] == 12 && st[1] == 4 && st[2] == 1);
    ct_shape sh = ct_shape_of(t);
    CT_EXPECT(sh.ndim == 3 && sh.dims[0] == 2 && sh.dims[1] == 3 && sh.dims[2] == 4);
    CT_EXPECT(ct_shares_storage(t, t));
    CT_EXPECT(!ct_shares_storage(t, ct_zeros(CT_SHAPE(1))));

    ct_tensor *n = ct_narrow(t, 1, 1, 2);
    CT_EXPECT_INT_EQ(ct_storage_offset(n), 4);
    CT_EXPECT(!ct_is_contiguous(n));
    CT_EXPECT((char *)ct_data_ptr(n) == (char *)ct_data_ptr(t) + 16);
    CT_EXPECT(!ct_is_contiguous(ct_transpose(t, 0, 2)));
    CT_EXPECT(ct_is_contiguous(ct_narrow(t, 0, 1, 1)));
    /* size-1 and empty dims do not affect contiguity */
    CT_EXPECT(ct_is_contiguous(ct_unsqueeze(t, 1)));
    CT_EXPECT(ct_is_contiguous(ct_transpose(ct_zeros(CT_SHAPE(1, 5)), 0, 1)));

    ct_shape m = ct_shape_make(2, (const int64_t[]){7, 8});
    CT_EXPECT(m.ndim == 2 && m.dims[0] == 7 && m.dims[1] == 8);

    ct_clear_error();
    ct_size(t, 3);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    ct_stride(t, -4);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got -4");
    ct_scope_end();
}

/* ---- item, copy_, fill_, host copies -------------------------------------------- */

static void test_item(void) {
    ct_scope_begin();
    CT_EXPECT_NEAR(ct_item(ct_full(CT_SHAPE(1, 1, 1), 2.5, .dtype = CT_FLOAT16)), 2.5, 0);
    CT_EXPECT_NEAR(ct_item(ct_ones(CT_SHAPE(1), .dtype = CT_BOOL)), 1, 0);
    CT_EXPECT_NEAR(ct_item(ct_full(CT_SHAPE0, -7, .dtype = CT_INT64)), -7, 0);
    ct_tensor *six = ct_arange(0, 6, 1);
    CT_EXPECT_NEAR(ct_item(ct_select(six, 0, -1)), 5, 0);
    double v = 123;
    CT_EXPECT_INT_EQ(ct_item_checked(ct_narrow(six, 0, 2, 1), &v), CT_OK);
    CT_EXPECT_NEAR(v, 2, 0);

    ct_clear_error();
    CT_EXPECT(isnan(ct_item(ct_view(six, CT_SHAPE(2, 3)))));
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "a Tensor with 6 elements cannot be converted to Scalar");
    CT_EXPECT(ct_item_checked(ct_zeros(CT_SHAPE(0)), &v) == CT_ERR_SHAPE);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "a Tensor with 0 elements cannot be converted to Scalar");
    CT_EXPECT(isnan(ct_item(NULL)));
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    int64_t oob[1] = {6};
    CT_EXPECT(isnan(ct_get(six, oob)));
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index 6 is out of bounds for dimension 0 with size 6");
    ct_scope_end();
}

static void test_copy_broadcast(void) {
    ct_scope_begin();
    ct_tensor *dst = ct_zeros(CT_SHAPE(2, 3));
    ct_tensor *row = ct_arange(1, 4, 1); /* int64 [1, 2, 3] */
    CT_EXPECT_INT_EQ(ct_copy_(dst, row), CT_OK);
    EXPECT_VALUES(dst, 6, 1, 2, 3, 1, 2, 3);
    CT_EXPECT_INT_EQ(ct_dtype_of(dst), CT_FLOAT32);
    ct_tensor *col = ct_tensor_from((double[]){-1.5, 2.5}, CT_FLOAT64, CT_SHAPE(2, 1));
    CT_EXPECT_INT_EQ(ct_copy_(dst, col), CT_OK);
    EXPECT_VALUES(dst, 6, -1.5, -1.5, -1.5, 2.5, 2.5, 2.5);
    CT_EXPECT_INT_EQ(ct_copy_(dst, ct_scalar_tensor(8, .dtype = CT_INT32)), CT_OK);
    EXPECT_ALL(dst, 8);
    ct_tensor *r13 = ct_view(ct_arange(0, 3, 1, .dtype = CT_FLOAT32), CT_SHAPE(1, 3));
    CT_EXPECT_INT_EQ(ct_copy_(dst, r13), CT_OK);
    EXPECT_VALUES(dst, 6, 0, 1, 2, 0, 1, 2);

    /* into a transposed (non-contiguous) destination: its base sees it */
    ct_tensor *base = ct_zeros(CT_SHAPE(3, 2), .dtype = CT_INT32);
    ct_tensor *bt = ct_t(base);
    ct_tensor *src = ct_view(ct_arange(0, 6, 1), CT_SHAPE(2, 3));
    CT_EXPECT_INT_EQ(ct_copy_(bt, src), CT_OK);
    EXPECT_VALUES(base, 6, 0, 3, 1, 4, 2, 5);
    /* from a non-contiguous source */
    ct_tensor *d2 = ct_zeros(CT_SHAPE(3, 2), .dtype = CT_FLOAT64);
    CT_EXPECT_INT_EQ(ct_copy_(d2, ct_t(src)), CT_OK);
    EXPECT_VALUES(d2, 6, 0, 3, 1, 4, 2, 5);
    /* self-copy is a no-op */
    CT_EXPECT_INT_EQ(ct_copy_(d2, d2), CT_OK);
    EXPECT_VALUES(d2, 6, 0, 3, 1, 4, 2, 5);
    ct_scope_end();
}

static void test_copy_errors(void) {
    ct_scope_begin();
    ct_tensor *dst = ct_zeros(CT_SHAPE(2, 3));
    ct_clear_error();
    CT_EXPECT(ct_copy_(dst, ct_zeros(CT_SHAPE(4))) == CT_ERR_SHAPE);
    CT_EXPECT_ERROR(CT_ERR_SHAPE,
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
    CT_EXPECT(ct_copy_(ct_zeros(CT_SHAPE(3)), ct_zeros(CT_SHAPE(2, 3))) == CT_ERR_SHAPE);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "[2, 3]");
    CT_EXPECT(ct_copy_(dst, NULL) != CT_OK);
    CT_EXPECT(ct_copy_(NULL, dst) != CT_OK);
    ct_clear_error();
    EXPECT_ALL(dst, 0); /* untouched by the failed copies */
    ct_scope_end();
}

static void test_fill_and_zero(void) {
    ct_scope_begin();
    for (int i = 0; i < 8; i++) {
        ct_tensor *t = ct_zeros(CT_SHAPE(3, 4), .dtype = all_dtypes[i]);
        ct_tensor *v = ct_slice(ct_t(t), 0, 1, 4, 2); /* columns 1 and 3 */
        CT_EXPECT_INT_EQ(ct_fill_(v, 1), CT_OK);
        EXPECT_VALUES(t, 12, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1);
        CT_EXPECT_INT_EQ(ct_fill_(t, 3), CT_OK);
        CT_EXPECT_INT_EQ(ct_zero_(ct_select(t, 0, 1)), CT_OK);
        double k = all_dtypes[i] == CT_BOOL ? 1 : 3; /* bool(3) is true */
        EXPECT_VALUES(t, 12, k, k, k, k, 0, 0, 0, 0, k, k, k, k);
    }
    ct_tensor *h = ct_zeros(CT_SHAPE(2), .dtype = CT_FLOAT16);
    CT_EXPECT_INT_EQ(ct_fill_(h, 1.0 + 1.0 / 4096), CT_OK); /* rounds like a cast */
    EXPECT_ALL(h, 1.0);
    ct_tensor *large = ct_zeros(CT_SHAPE(300, 301));
    CT_EXPECT_INT_EQ(ct_fill_(ct_t(large), 2), CT_OK); /* threaded and strided */
    int64_t idx[2] = {299, 300};
    CT_EXPECT_NEAR(ct_get(large, idx), 2, 0);
    CT_EXPECT(ct_fill_(NULL, 1) != CT_OK);
    ct_clear_error();
    ct_scope_end();
}

static void test_host_copies(void) {
    ct_scope_begin();
    ct_tensor *m = ct_view(ct_arange(0, 6, 1, .dtype = CT_FLOAT32), CT_SHAPE(2, 3));
    ct_tensor *mt = ct_t(m);
    float out[6];
    CT_EXPECT_INT_EQ(ct_copy_to_host(mt, out, CT_FLOAT32, 6), CT_OK);
    static const float want_t[6] = {0, 3, 1, 4, 2, 5};
    CT_EXPECT(memcmp(out, want_t, sizeof out) == 0);
    int32_t in[6] = {10, 11, 12, 13, 14, 15};
    CT_EXPECT_INT_EQ(ct_copy_from_host(mt, in, CT_INT32, 6), CT_OK); /* writes through the view */
    EXPECT_VALUES(m, 6, 10, 12, 14, 11, 13, 15);
    ct_tensor *exp = ct_expand(ct_scalar_tensor(3), CT_SHAPE(2, 2));
    double o4[4];
    CT_EXPECT_INT_EQ(ct_copy_to_host(exp, o4, CT_FLOAT64, 4), CT_OK);
    CT_EXPECT(o4[0] == 3 && o4[3] == 3);

    ct_clear_error();
    CT_EXPECT(ct_copy_to_host(m, out, CT_FLOAT32, 5) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "5");
    CT_EXPECT(ct_copy_to_host(m, out, CT_FLOAT32, 7) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "6");
    CT_EXPECT(ct_copy_from_host(m, in, CT_INT32, 4) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "4");
    CT_EXPECT(ct_copy_from_host(m, NULL, CT_INT32, 6) != CT_OK);
    CT_EXPECT(ct_last_status() != CT_OK);
    CT_EXPECT(ct_copy_to_host(m, out, (ct_dtype)42, 6) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "42");
    EXPECT_VALUES(m, 6, 10, 12, 14, 11, 13, 15);
    ct_scope_end();
}

/* torch.tensor([[1, 2], [3, 4]]): a compound literal goes straight into
 * ct_tensor_from (its commas need no extra parentheses), options after it. */
static void test_tensor_from_literal(void) {
    CT_SCOPE {
        ct_tensor *a = ct_tensor_from((float[]){1, 2, 3, 4}, CT_FLOAT32, CT_SHAPE(2, 2));
        CT_EXPECT(a && ct_dtype_of(a) == CT_FLOAT32 && ct_ndim(a) == 2 && ct_size(a, 1) == 2);
        EXPECT_VALUES(a, 4, 1, 2, 3, 4);
        ct_tensor *b = ct_tensor_from((int64_t[]){7, -8, 9}, CT_INT64, CT_SHAPE(3), .dtype = CT_FLOAT64,
                                      .requires_grad = true);
        CT_EXPECT(b && ct_dtype_of(b) == CT_FLOAT64 && ct_requires_grad(b));
        EXPECT_VALUES(b, 3, 7, -8, 9);
        ct_tensor *c = ct_tensor_from(&(double){2.5}, CT_FLOAT64, CT_SHAPE0);
        CT_EXPECT(c && ct_ndim(c) == 0 && ct_item(c) == 2.5);
        CT_EXPECT(ct_tensor_from((float[]){1, 2}, CT_FLOAT32, CT_SHAPE(2), .device = ct_device_cuda(99)) == NULL);
        CT_EXPECT(ct_last_status() == CT_ERR_DEVICE);
        ct_clear_error();
    }
}

/* A NULL input returns NULL and leaves the last error as it was. */
static void test_null_inputs_propagate(void) {
    ct_scope_begin();
    ct_clear_error();
    ct_tensor *bad = ct_zeros(CT_SHAPE(-2)); /* sets an error */
    CT_EXPECT(bad == NULL);
    ct_status code = ct_last_status();
    char msg[256];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    CT_EXPECT(ct_clone(bad) == NULL);
    CT_EXPECT(ct_contiguous(bad) == NULL);
    CT_EXPECT(ct_to_dtype(bad, CT_FLOAT64) == NULL);
    CT_EXPECT(ct_to(bad, ct_device_cpu(), CT_INT32) == NULL);
    CT_EXPECT(ct_detach(bad) == NULL);
    CT_EXPECT(ct_cpu(bad) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), code);
    CT_EXPECT_STR_EQ(ct_last_error(), msg);
    ct_clear_error();
    ct_scope_end();
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_full_family_every_dtype);
    CT_RUN(test_zero_dim_and_empty_shapes);
    CT_RUN(test_creation_errors);
    CT_RUN(test_arange);
    CT_RUN(test_linspace);
    CT_RUN(test_eye);
    CT_RUN(test_conversions_every_pair);
    CT_RUN(test_conversion_edge_values);
    CT_RUN(test_to_same_dtype_returns_self);
    CT_RUN(test_like_functions);
    CT_RUN(test_properties);
    CT_RUN(test_item);
    CT_RUN(test_copy_broadcast);
    CT_RUN(test_copy_errors);
    CT_RUN(test_fill_and_zero);
    CT_RUN(test_host_copies);
    CT_RUN(test_tensor_from_literal);
    CT_RUN(test_null_inputs_propagate);
    return ct_test_finish();
}
