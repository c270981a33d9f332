/*
 * test_dtype.c — dtype properties, PyTorch's type promotion table, the
 * default dtype, and the float16/bfloat16 conversions.
 *
 * The 16-bit conversions are checked against references written here with
 * double arithmetic (scale to an integer quantum, nearbyint, scale back), so
 * the library's bit-twiddling is compared with an independent derivation of
 * IEEE round-to-nearest-even. The promotion table was verified with
 * torch.promote_types (PyTorch 1.13).
 */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

static const ct_dtype all_dtypes[8] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                       CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};

/* Deterministic generator for the conversion samples (independent of the
 * harness seed so that a failure always reproduces). */
static uint64_t sample_state = 0x243F6A8885A308D3ull;
static uint32_t sample_u32(void) {
    uint64_t z = (sample_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static float float_of_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits_of_float(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* ---- references ---------------------------------------------------------- */

static double ref_half_to_double(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 0) v = ldexp((double)man, -24);
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = ldexp((double)(1024 + man), exp - 25);
    return sign ? -v : v;
}

/* Bits of a non-negative finite value that is exactly a half. */
static uint16_t half_bits_of_exact(double v) {
    if (v < 0x1p-14) return (uint16_t)(v / 0x1p-24);
    int e;
    double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
    return (uint16_t)(((e - 1 + 15) << 10) | (int)((m * 2.0 - 1.0) * 1024.0));
}

/* IEEE binary16 round-to-nearest-even from first principles. NaN maps to a
 * canonical quiet NaN (callers compare NaN-ness only). */
static uint16_t ref_float_to_half(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (isnan(f)) return sign | 0x7E00;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7C00; /* 65520 is the tie above 65504: to inf */
    double quantum;
    if (a < 0x1p-14) {
        quantum = 0x1p-24;
    } else {
        int e;
        frexp(a, &e); /* a in [2^(e-1), 2^e) */
        quantum = ldexp(1.0, e - 1 - 10);
    }
    return sign | half_bits_of_exact(nearbyint(a / quantum) * quantum);
}

/* bfloat16 round-to-nearest-even: 8 significant bits, float's exponent range. */
static uint16_t ref_float_to_bf16(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (isnan(f)) return sign | 0x7FC0;
    if (isinf(f)) return sign | 0x7F80;
    double a = fabs((double)f);
    double quantum;
    if (a < 0x1p-126) {
        quantum = 0x1p-133;
    } else {
        int e;
        frexp(a, &e);
        quantum = ldexp(1.0, e - 1 - 7);
    }
    double v = nearbyint(a / quantum) * quantum;
    if (v >= 0x1p128) return sign | 0x7F80;
    return sign | (uint16_t)(bits_of_float((float)v) >> 16);
}

static bool half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }
static bool bf16_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; }

/* ---- dtype properties ------------------------------------------------------ */

static void test_dtype_size_and_name(void) {
    static const size_t sizes[8] = {4, 8, 2, 2, 4, 8, 1, 1};
    static const char *names[8] = {"float32", "float64", "float16", "bfloat16",
                                   "int32",   "int64",   "uint8",   "bool"};
    for (int i = 0; i < 8; i++) {
        CT_EXPECT_INT_EQ(ct_dtype_size(all_dtypes[i]), sizes[i]);
        CT_EXPECT_STR_EQ(ct_dtype_name(all_dtypes[i]), names[i]);
        CT_EXPECT(ct_dtype_is_valid(all_dtypes[i]));
    }
    CT_EXPECT_INT_EQ(ct_dtype_size((ct_dtype)99), 0);
    CT_EXPECT_INT_EQ(ct_dtype_size((ct_dtype)-1), 0);
    CT_EXPECT(ct_dtype_name((ct_dtype)99) != NULL);
    CT_EXPECT(!ct_dtype_is_valid(CT_DTYPE_DEFAULT));
    CT_EXPECT(!ct_dtype_is_valid((ct_dtype)CT_NUM_DTYPES));
    CT_EXPECT(!ct_dtype_is_valid((ct_dtype)-1));
}

static void test_dtype_kinds(void) {
    static const bool floating[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    static const bool integral[8] = {0, 0, 0, 0, 1, 1, 1, 0};
    for (int i = 0; i < 8; i++) {
        ct_dtype dt = all_dtypes[i];
        CT_EXPECT_MSG(ct_dtype_is_floating(dt) == floating[i], "is_floating(%s)", ct_dtype_name(dt));
        CT_EXPECT_MSG(ct_dtype_is_integral(dt, false) == integral[i], "is_integral(%s, false)",
                      ct_dtype_name(dt));
        bool with_bool = integral[i] || dt == CT_BOOL;
        CT_EXPECT_MSG(ct_dtype_is_integral(dt, true) == with_bool, "is_integral(%s, true)",
                      ct_dtype_name(dt));
    }
}

/* torch.promote_types over all pairs, rows/cols in all_dtypes order. */
static void test_promote_types_table(void) {
#define F32 CT_FLOAT32
#define F64 CT_FLOAT64
#define F16 CT_FLOAT16
#define BF16 CT_BFLOAT16
#define I32 CT_INT32
#define I64 CT_INT64
#define U8 CT_UINT8
#define B CT_BOOL
    static const ct_dtype expected[8][8] = {
        /*          f32  f64  f16   bf16  i32  i64  u8   bool */
        /* f32  */ {F32, F64, F32,  F32,  F32, F32, F32, F32},
        /* f64  */ {F64, F64, F64,  F64,  F64, F64, F64, F64},
        /* f16  */ {F32, F64, F16,  F32,  F16, F16, F16, F16},
        /* bf16 */ {F32, F64, F32,  BF16, BF16, BF16, BF16, BF16},
        /* i32  */ {F32, F64, F16,  BF16, I32, I64, I32, I32},
        /* i64  */ {F32, F64, F16,  BF16, I64, I64, I64, I64},
        /* u8   */ {F32, F64, F16,  BF16, I32, I64, U8,  U8},
        /* bool */ {F32, F64, F16,  BF16, I32, I64, U8,  B},
    };
#undef F32
#undef F64
#undef F16
#undef BF16
#undef I32
#undef I64
#undef U8
#undef B
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            ct_dtype got = ct_promote_types(all_dtypes[i], all_dtypes[j]);
            CT_EXPECT_MSG(got == expected[i][j], "promote_types(%s, %s) = %s, expected %s",
                          ct_dtype_name(all_dtypes[i]), ct_dtype_name(all_dtypes[j]),
                          ct_dtype_name(got), ct_dtype_name(expected[i][j]));
        }
}

static void test_default_dtype(void) {
    CT_EXPECT_INT_EQ(ct_get_default_dtype(), CT_FLOAT32);

    CT_EXPECT_INT_EQ(ct_set_default_dtype(CT_FLOAT64), CT_OK);
    CT_EXPECT_INT_EQ(ct_get_default_dtype(), CT_FLOAT64);
    ct_tensor *z = ct_zeros(CT_SHAPE(2));
    ct_tensor *r = ct_arange(0, 1, 0.5);
    ct_tensor *ri = ct_arange(0, 3, 1);
    ct_tensor *l = ct_linspace(0, 1, 3);
    CT_EXPECT(z && ct_dtype_of(z) == CT_FLOAT64);
    CT_EXPECT(r && ct_dtype_of(r) == CT_FLOAT64);
    CT_EXPECT(ri && ct_dtype_of(ri) == CT_INT64);
    CT_EXPECT(l && ct_dtype_of(l) == CT_FLOAT64);
    ct_release(z);
    ct_release(r);
    ct_release(ri);
    ct_release(l);

    /* Only float32/float64, as torch.set_default_dtype; the default stays. */
    static const ct_dtype rejected[] = {CT_INT32, CT_INT64, CT_UINT8, CT_BOOL, CT_FLOAT16,
                                        CT_BFLOAT16};
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
        ct_clear_error();
        CT_EXPECT(ct_set_default_dtype(rejected[i]) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "only floating-point types are supported as the default type");
        CT_EXPECT_INT_EQ(ct_get_default_dtype(), CT_FLOAT64);
    }
    CT_EXPECT(ct_set_default_dtype((ct_dtype)42) != CT_OK);
    ct_clear_error();

    CT_EXPECT_INT_EQ(ct_set_default_dtype(CT_FLOAT32), CT_OK);
    CT_EXPECT_INT_EQ(ct_get_default_dtype(), CT_FLOAT32);
    z = ct_zeros(CT_SHAPE(2));
    CT_EXPECT(z && ct_dtype_of(z) == CT_FLOAT32);
    ct_release(z);
}

/* ---- float16 ----------------------------------------------------------------- */

static void expect_half(float f, uint16_t bits) {
    uint16_t got = ct_float_to_half(f);
    CT_EXPECT_MSG(got == bits, "float_to_half(%a) = 0x%04x, expected 0x%04x", (double)f, got, bits);
}

static void test_half_special_values(void) {
    expect_half(0.0f, 0x0000);
    expect_half(-0.0f, 0x8000);
    expect_half(1.0f, 0x3C00);
    expect_half(-2.0f, 0xC000);
    expect_half(0.5f, 0x3800);
    expect_half(65504.0f, 0x7BFF);           /* largest finite */
    expect_half(65519.99f, 0x7BFF);          /* just below the tie rounds down */
    expect_half(65520.0f, 0x7C00);           /* tie between 65504 and 2^16: to even = inf */
    expect_half(1e6f, 0x7C00);
    expect_half(-1e6f, 0xFC00);
    expect_half(3.0e38f, 0x7C00);
    expect_half(INFINITY, 0x7C00);
    expect_half(-INFINITY, 0xFC00);
    expect_half(0x1p-14f, 0x0400);           /* smallest normal */
    expect_half(0x1p-24f, 0x0001);           /* smallest subnormal */
    expect_half(-0x1p-24f, 0x8001);
    expect_half(0x3FFp-24f, 0x03FF);         /* largest subnormal */
    expect_half(0x1p-25f, 0x0000);           /* tie between 0 and 2^-24: to even = 0 */
    expect_half(-0x1p-25f, 0x8000);          /* ... keeping the sign */
    expect_half(0x1.000002p-25f, 0x0001);    /* just above the tie */
    expect_half(0x3p-25f, 0x0002);           /* tie between 1 and 2 quanta: to even = 2 */
    expect_half(0x5p-25f, 0x0002);           /* tie between 2 and 3 quanta: to even = 2 */
    expect_half(0x1p-30f, 0x0000);           /* underflow */
    expect_half(1.0f + 0x1p-11f, 0x3C00);    /* tie: to even (down) */
    expect_half(1.0f + 0x3p-11f, 0x3C02);    /* tie: to even (up) */
    expect_half(1.0f + 0x1p-11f + 0x1p-23f, 0x3C01);
    expect_half(0x1.ffcp-15f, 0x0400);       /* subnormal rounding up into the normals */
    expect_half(2047.5f, 0x6800);            /* 2047.5 -> 2048 (tie, even) */

    uint16_t n = ct_float_to_half(NAN);
    CT_EXPECT_MSG(half_is_nan(n), "float_to_half(NaN) = 0x%04x is not a NaN", n);
    n = ct_float_to_half(-NAN);
    CT_EXPECT_MSG(half_is_nan(n) && (n & 0x8000), "float_to_half(-NaN) = 0x%04x", n);
    /* A NaN whose payload lives only in the low mantissa bits must not
     * become an infinity when truncated. */
    n = ct_float_to_half(float_of_bits(0x7F800001u));
    CT_EXPECT_MSG(half_is_nan(n), "float_to_half(sNaN 0x7f800001) = 0x%04x is not a NaN", n);
    n = ct_float_to_half(float_of_bits(0x7F801000u));
    CT_EXPECT_MSG(half_is_nan(n), "float_to_half(NaN 0x7f801000) = 0x%04x is not a NaN", n);

    CT_EXPECT(ct_half_to_float(0x3C00) == 1.0f);
    CT_EXPECT(ct_half_to_float(0x0001) == 0x1p-24f);
    CT_EXPECT(ct_half_to_float(0x03FF) == 0x3FFp-24f);
    CT_EXPECT(ct_half_to_float(0x7BFF) == 65504.0f);
    CT_EXPECT(ct_half_to_float(0x7C00) == INFINITY);
    CT_EXPECT(ct_half_to_float(0xFC00) == -INFINITY);
    CT_EXPECT(isnan(ct_half_to_float(0x7E00)));
    CT_EXPECT(isnan(ct_half_to_float(0x7C01)));
    float nz = ct_half_to_float(0x8000);
    CT_EXPECT(nz == 0.0f && signbit(nz));
}

/* Every half bit pattern decodes exactly and survives a round trip. */
static void test_half_exhaustive_round_trip(void) {
    int bad_decode = 0, bad_trip = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ct_half_to_float((uint16_t)h);
        double want = ref_half_to_double((uint16_t)h);
        bool ok = isnan(want) ? isnan(f) : ((double)f == want && !signbit(f) == !signbit(want));
        if (!ok && bad_decode++ < 5)
            ct_test_fail(__FILE__, __LINE__, "half_to_float(0x%04x) = %a, expected %a", h,
                         (double)f, want);
        uint16_t back = ct_float_to_half(f);
        if (half_is_nan((uint16_t)h))
            ok = half_is_nan(back) && (back & 0x8000) == (h & 0x8000);
        else
            ok = back == h;
        if (!ok && bad_trip++ < 5)
            ct_test_fail(__FILE__, __LINE__, "float_to_half(half_to_float(0x%04x)) = 0x%04x", h,
                         back);
    }
    CT_EXPECT_INT_EQ(bad_decode, 0);
    CT_EXPECT_INT_EQ(bad_trip, 0);
}

static int check_half_against_ref(float f, int bad) {
    uint16_t got = ct_float_to_half(f), want = ref_float_to_half(f);
    bool ok = half_is_nan(want) ? half_is_nan(got) && (got & 0x8000) == (want & 0x8000)
                                : got == want;
    if (!ok && bad < 5)
        ct_test_fail(__FILE__, __LINE__, "float_to_half(%a [0x%08x]) = 0x%04x, expected 0x%04x",
                     (double)f, bits_of_float(f), got, want);
    return bad + !ok;
}

/* Random float bit patterns, floats in half's range, and every tie between
 * two neighbouring halves with its float neighbours. */
static void test_half_from_float_sample(void) {
    int bad = 0;
    for (int i = 0; i < (1 << 20); i++) bad = check_half_against_ref(float_of_bits(sample_u32()), bad);
    for (int i = 0; i < (1 << 20); i++) {
        uint32_t r = sample_u32();
        int exp = -27 + (int)(r % 45); /* 2^-27 .. 2^17 */
        float f = ldexpf(1.0f + (float)(sample_u32() >> 9) * 0x1p-23f, exp);
        bad = check_half_against_ref((r & 0x80000000u) ? -f : f, bad);
    }
    for (uint32_t h = 0; h < 0x7C00; h++) {
        double lo = ref_half_to_double((uint16_t)h);
        double hi = h + 1 < 0x7C00 ? ref_half_to_double((uint16_t)(h + 1)) : 65536.0;
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
        float fs[3] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (int k = 0; k < 3; k++) {
            bad = check_half_against_ref(fs[k], bad);
            bad = check_half_against_ref(-fs[k], bad);
        }
    }
    CT_EXPECT_INT_EQ(bad, 0);
}

/* ---- bfloat16 ---------------------------------------------------------------- */

static void expect_bf16(float f, uint16_t bits) {
    uint16_t got = ct_float_to_bfloat16(f);
    CT_EXPECT_MSG(got == bits, "float_to_bfloat16(%a) = 0x%04x, expected 0x%04x", (double)f, got,
                  bits);
}

static void test_bf16_special_values(void) {
    expect_bf16(0.0f, 0x0000);
    expect_bf16(-0.0f, 0x8000);
    expect_bf16(1.0f, 0x3F80);
    expect_bf16(-2.0f, 0xC000);
    expect_bf16(float_of_bits(0x3F808000u), 0x3F80); /* tie: to even (down) */
    expect_bf16(float_of_bits(0x3F818000u), 0x3F82); /* tie: to even (up) */
    expect_bf16(float_of_bits(0x3F808001u), 0x3F81);
    expect_bf16(200.5f, 0x4348);                     /* 200.5 -> 200 */
    expect_bf16(65520.0f, 0x4780);                   /* 65536 */
    expect_bf16(float_of_bits(0x7F7FFFFFu), 0x7F80); /* FLT_MAX rounds to inf */
    expect_bf16(float_of_bits(0x7F7F7FFFu), 0x7F7F); /* largest finite bf16 stays */
    expect_bf16(float_of_bits(0xFF7FFFFFu), 0xFF80);
    expect_bf16(INFINITY, 0x7F80);
    expect_bf16(-INFINITY, 0xFF80);
    expect_bf16(float_of_bits(0x00000001u), 0x0000); /* smallest float subnormal */
    expect_bf16(float_of_bits(0x00010000u), 0x0001); /* smallest bf16 subnormal */
    expect_bf16(float_of_bits(0x00018000u), 0x0002); /* subnormal tie: to even (up) */
    expect_bf16(float_of_bits(0x00008000u), 0x0000); /* subnormal tie: to even (down) */
    expect_bf16(float_of_bits(0x80010000u), 0x8001);

    static const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u,
                                    0x7FFFFFFFu, 0x7F807FFFu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t b = ct_float_to_bfloat16(float_of_bits(nans[i]));
        CT_EXPECT_MSG(bf16_is_nan(b) && (b & 0x8000) == ((nans[i] >> 16) & 0x8000),
                      "float_to_bfloat16(NaN 0x%08x) = 0x%04x", nans[i], b);
    }

    CT_EXPECT(ct_bfloat16_to_float(0x3F80) == 1.0f);
    CT_EXPECT(ct_bfloat16_to_float(0x7F80) == INFINITY);
    CT_EXPECT(ct_bfloat16_to_float(0xFF80) == -INFINITY);
    CT_EXPECT(ct_bfloat16_to_float(0x0001) == float_of_bits(0x00010000u));
    CT_EXPECT(isnan(ct_bfloat16_to_float(0x7FC0)));
    CT_EXPECT(isnan(ct_bfloat16_to_float(0x7F81)));
    float nz = ct_bfloat16_to_float(0x8000);
    CT_EXPECT(nz == 0.0f && signbit(nz));
}

static void test_bf16_exhaustive_round_trip(void) {
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = ct_bfloat16_to_float((uint16_t)b);
        bool ok;
        if (bf16_is_nan((uint16_t)b)) {
            uint16_t back = ct_float_to_bfloat16(f);
            ok = isnan(f) && bf16_is_nan(back) && (back & 0x8000) == (b & 0x8000);
        } else {
            ok = bits_of_float(f) == b << 16 && ct_float_to_bfloat16(f) == b;
        }
        if (!ok && bad++ < 5)
            ct_test_fail(__FILE__, __LINE__, "bfloat16 0x%04x -> %a -> 0x%04x", b, (double)f,
                         ct_float_to_bfloat16(f));
    }
    CT_EXPECT_INT_EQ(bad, 0);
}

static int check_bf16_against_ref(float f, int bad) {
    uint16_t got = ct_float_to_bfloat16(f), want = ref_float_to_bf16(f);
    bool ok = bf16_is_nan(want) ? bf16_is_nan(got) && (got & 0x8000) == (want & 0x8000)
                                : got == want;
    if (!ok && bad < 5)
        ct_test_fail(__FILE__, __LINE__,
                     "float_to_bfloat16(%a [0x%08x]) = 0x%04x, expected 0x%04x", (double)f,
                     bits_of_float(f), got, want);
    return bad + !ok;
}

static void test_bf16_from_float_sample(void) {
    int bad = 0;
    for (int i = 0; i < (1 << 21); i++) bad = check_bf16_against_ref(float_of_bits(sample_u32()), bad);
    /* every tie between neighbouring bfloat16 values, and its neighbours */
    for (uint32_t b = 0; b < 0x7F80; b++) {
        uint32_t lo = b << 16, mid = lo + 0x8000u;
        uint32_t cases[3] = {mid, mid - 1, mid + 1};
        for (int k = 0; k < 3; k++) {
            bad = check_bf16_against_ref(float_of_bits(cases[k]), bad);
            bad = check_bf16_against_ref(float_of_bits(cases[k] | 0x80000000u), bad);
        }
    }
    CT_EXPECT_INT_EQ(bad, 0);
}

/* Tensor casts between float32 and float16/bfloat16 (the CPU's vectorised
 * copy loops, which autocast's casts run through) give the scalar
 * converters' bits, contiguous and strided, both ways. */
static void check_tensor_cast(ct_dtype dt, const uint32_t *bits, int64_t n) {
    CT_SCOPE {
        ct_tensor *f = ct_from_data(bits, CT_FLOAT32, CT_SHAPE(n / 64, 64), (ct_opts){0});
        ct_tensor *strided = ct_contiguous(ct_transpose(ct_to_dtype(ct_transpose(f, 0, 1), dt), 0, 1));
        ct_tensor *views[2] = {ct_to_dtype(f, dt), strided};
        int bad = 0;
        for (int v = 0; v < 2 && views[v]; v++) {
            const uint16_t *h = ct_data_ptr(views[v]);
            ct_tensor *back = ct_to_dtype(v ? ct_transpose(ct_transpose(views[v], 0, 1), 0, 1) : views[v], CT_FLOAT32);
            const uint32_t *fb = back ? ct_data_ptr(back) : NULL;
            for (int64_t i = 0; fb && i < n; i++) {
                const float x = float_of_bits(bits[i]);
                const uint16_t want = dt == CT_BFLOAT16 ? ct_float_to_bfloat16(x) : ct_float_to_half(x);
                const float wide = dt == CT_BFLOAT16 ? ct_bfloat16_to_float(h[i]) : ct_half_to_float(h[i]);
                /* a NaN may lose its payload on the vectorised path, not its sign */
                const bool nan = x != x, same = nan ? wide != wide && (h[i] & 0x8000) == (want & 0x8000)
                                                    : h[i] == want;
                const float wide_back = float_of_bits(fb[i]);
                const bool back_ok = nan ? wide_back != wide_back : bits_of_float(wide) == fb[i];
                if ((!same || !back_ok) && bad++ < 5)
                    ct_test_fail(__FILE__, __LINE__, "%s cast of 0x%08x (%s): 0x%04x, expected 0x%04x",
                                 ct_dtype_name(dt), bits[i], v ? "strided" : "contiguous", h[i], want);
            }
            CT_EXPECT_MSG(fb != NULL, "%s", ct_last_error());
        }
        CT_EXPECT_INT_EQ(bad, 0);
    }
}

static void test_tensor_casts_match_scalar(void) {
    const int64_t n = 64 * 1024;
    uint32_t *bits = malloc(sizeof(uint32_t) * (size_t)n);
    const uint32_t special[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
                                0x00000001u, 0x80000001u, 0x477ff000u, 0x477fefffu, 0x33000000u,
                                0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7fffffu};
    for (int64_t i = 0; i < n; i++) bits[i] = i < 14 ? special[i] : sample_u32();
    check_tensor_cast(CT_BFLOAT16, bits, n);
    check_tensor_cast(CT_FLOAT16, bits, n);
    free(bits);
}

/* The references themselves must agree with the library on values whose
 * answer is known, or a broken reference would hide bugs. */
static void test_references_are_sound(void) {
    CT_EXPECT_INT_EQ(ref_float_to_half(65520.0f), 0x7C00);
    CT_EXPECT_INT_EQ(ref_float_to_half(0x3p-25f), 0x0002);
    CT_EXPECT_INT_EQ(ref_float_to_half(0x1.ffcp-15f), 0x0400);
    CT_EXPECT_INT_EQ(ref_float_to_half(-1.0f + 0x1p-12f), 0xBC00);
    CT_EXPECT_INT_EQ(ref_float_to_bf16(float_of_bits(0x3F818000u)), 0x3F82);
    CT_EXPECT_INT_EQ(ref_float_to_bf16(float_of_bits(0x7F7FFFFFu)), 0x7F80);
    CT_EXPECT_INT_EQ(ref_float_to_bf16(float_of_bits(0x00018000u)), 0x0002);
    for (uint32_t h = 0; h < 0x7C00; h++)
        if (ref_float_to_half((float)ref_half_to_double((uint16_t)h)) != h) {
            CT_EXPECT_MSG(false, "reference half round trip broken at 0x%04x", h);
            break;
        }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_dtype_size_and_name);
    CT_RUN(test_dtype_kinds);
    CT_RUN(test_promote_types_table);
    CT_RUN(test_default_dtype);
    CT_RUN(test_references_are_sound);
    CT_RUN(test_half_special_values);
    CT_RUN(test_half_exhaustive_round_trip);
    CT_RUN(test_half_from_float_sample);
    CT_RUN(test_bf16_special_values);
    CT_RUN(test_bf16_exhaustive_round_trip);
    CT_RUN(test_bf16_from_float_sample);
    CT_RUN(test_tensor_casts_match_scalar);
    return ct_test_finish();
}
