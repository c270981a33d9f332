/*
 * dtype.c — dtype facts, PyTorch's type promotion, and the float16/bfloat16
 * conversions.
 *
 * The 16-bit conversions are written out bit by bit (not with compiler
 * _Float16 support) so that every backend and compiler agrees on rounding:
 * round to nearest, ties to even; overflow to infinity; NaN stays NaN.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

static ct_dtype g_default_dtype = CT_FLOAT32;

size_t ct_dtype_size(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: case CT_INT32: return 4;
    case CT_FLOAT64: case CT_INT64: return 8;
    case CT_FLOAT16: case CT_BFLOAT16: return 2;
    case CT_UINT8: case CT_BOOL: case CT_INT8: return 1;
    default: return 0;
    }
}

const char *ct_dtype_name(ct_dtype dt) {
    switch (dt) {
    case CT_DTYPE_DEFAULT: return "default";
    case CT_FLOAT32: return "float32";
    case CT_FLOAT64: return "float64";
    case CT_FLOAT16: return "float16";
    case CT_BFLOAT16: return "bfloat16";
    case CT_INT32: return "int32";
    case CT_INT64: return "int64";
    case CT_UINT8: return "uint8";
    case CT_BOOL: return "bool";
    case CT_INT8: return "int8";
    }
    return "invalid";
}

bool ct_dtype_is_valid(ct_dtype dt) { return dt >= CT_FLOAT32 && dt <= CT_INT8; }

bool ct_dtype_is_floating(ct_dtype dt) {
    return dt == CT_FLOAT32 || dt == CT_FLOAT64 || dt == CT_FLOAT16 || dt == CT_BFLOAT16;
}

bool ct_dtype_is_integral(ct_dtype dt, bool include_bool) {
    return dt == CT_INT32 || dt == CT_INT64 || dt == CT_UINT8 || dt == CT_INT8 ||
           (include_bool && dt == CT_BOOL);
}

/* Category for promotion: 0 bool, 1 integer, 2 floating. */
static int category(ct_dtype dt) {
    if (dt == CT_BOOL) return 0;
    return ct_dtype_is_floating(dt) ? 2 : 1;
}

/* Rank within integers and within floats; the higher rank wins. */
static int int_rank(ct_dtype dt) {
    switch (dt) {
    case CT_BOOL: return 0;
    case CT_UINT8: case CT_INT8: return 1;
    case CT_INT32: return 2;
    case CT_INT64: return 3;
    default: return -1;
    }
}

ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
    a = cti_resolve_dtype(a);
    b = cti_resolve_dtype(b);
    if (!ct_dtype_is_valid(a) || !ct_dtype_is_valid(b)) {
        ct_error_set(CT_ERR_DTYPE, "promote_types: invalid dtype %d", (int)(ct_dtype_is_valid(a) ? b : a));
        return CT_DTYPE_DEFAULT;
    }
    if (a == b) return a;
    int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    if (ca == 2) {
        if (a == CT_FLOAT64 || b == CT_FLOAT64) return CT_FLOAT64;
        /* float16 with bfloat16 (either with float32) meets in float32 */
        return CT_FLOAT32;
    }
    /* int8 with uint8: PyTorch gives int16; int32 is the nearest type here
     * that holds both ranges (documented in dtype.h) */
    if (int_rank(a) == int_rank(b)) return CT_INT32;
    return int_rank(a) > int_rank(b) ? a : b;
}

ct_dtype cti_resolve_dtype(ct_dtype dt) { return dt == CT_DTYPE_DEFAULT ? g_default_dtype : dt; }

ct_status ct_set_default_dtype(ct_dtype dt) {
    CT_CHECK_STATUS(dt == CT_FLOAT32 || dt == CT_FLOAT64, CT_ERR_DTYPE,
                    "set_default_dtype: only floating-point types are supported as the default "
                    "type (float32 or float64), got %s", ct_dtype_name(dt));
    g_default_dtype = dt;
    return CT_OK;
}

ct_dtype ct_get_default_dtype(void) { return g_default_dtype; }

bool cti_is_whole(double v) { return isfinite(v) && v == floor(v); }

bool cti_can_cast(ct_dtype from, ct_dtype to) {
    if (ct_dtype_is_floating(from) && !ct_dtype_is_floating(to)) return false;
    return from == CT_BOOL || to != CT_BOOL;
}

const char *cti_scalar_type_name(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return "Float";
    case CT_FLOAT64: return "Double";
    case CT_FLOAT16: return "Half";
    case CT_BFLOAT16: return "BFloat16";
    case CT_INT32: return "Int";
    case CT_INT64: return "Long";
    case CT_UINT8: return "Byte";
    case CT_INT8: return "Char";
    case CT_BOOL: return "Bool";
    default: return ct_dtype_name(dt);
    }
}

/* torch.result_type: operands are grouped in tiers (dimensioned tensors,
 * then 0-dim tensors, then scalars). A lower tier only matters when it is of
 * a higher category than everything above it. */
static ct_dtype combine_tier(ct_dtype strong, ct_dtype weak, bool weak_is_scalar) {
    if (category(weak) <= category(strong)) return strong;
    if (weak_is_scalar) {
        /* a Python float scalar gives the default dtype; an int scalar over a
         * bool tensor gives int64 */
        return category(weak) == 2 ? g_default_dtype : CT_INT64;
    }
    return weak;
}

ct_dtype cti_result_type(const ct_tensor *a, const ct_tensor *b) {
    bool a_dim = a->ndim > 0, b_dim = b->ndim > 0;
    if (a_dim == b_dim) return ct_promote_types(a->dtype, b->dtype);
    const ct_tensor *strong = a_dim ? a : b, *weak = a_dim ? b : a;
    return combine_tier(strong->dtype, weak->dtype, false);
}

ct_dtype cti_result_type_scalar(const ct_tensor *a, bool is_float) {
    return combine_tier(a->dtype, is_float ? CT_FLOAT64 : CT_INT64, true);
}

/* ---- 16-bit floats --------------------------------------------------------- */

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t ct_float_to_half(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) /* inf or nan (nan kept quiet, with the top payload bits) */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow */
    if (e <= 0) {                                   /* subnormal or zero */
        if (e < -10) return sign;
        mant |= 0x800000u;                          /* implicit bit */
        int shift = 14 - e;                         /* 24-bit mantissa -> 10-bit */
        uint32_t half_mant = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) half_mant++;
        return (uint16_t)(sign | half_mant);        /* carry into exponent is correct */
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may round up to inf: correct */
    return (uint16_t)(sign | h);
}

float ct_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return bits_f32(sign);
        /* subnormal: value = mant * 2^-24 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t ct_float_to_bfloat16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb; /* round to nearest even; overflows to inf correctly */
    return (uint16_t)(x >> 16);
}

float ct_bfloat16_to_float(uint16_t b) { return bits_f32((uint32_t)b << 16); }
