/*
 * cpu_binary.c — the CPU kernels of the binary elementwise ops (add … atan2,
 * comparisons, logical ops) and of where().
 *
 * Each op is written once for float32/float64 (math in the dtype's own
 * precision, as PyTorch does) and once for int64 (exact integer arithmetic,
 * never through double). Float16/bfloat16 runs are widened to float32 and
 * int32/uint8/bool runs to int64 in stack buffers (see cpu_elementwise.h).
 * Every loop has variants for contiguous operands and for a broadcast scalar
 * on either side, which gcc vectorises; anything else walks byte strides.
 */
#include <stdatomic.h>

#include "../../core/error.h"
#include "cpu_elementwise.h"

#include <tgmath.h> /* after cpu_vec.h: its inlines call no math functions */

typedef struct binary_ctx {
    ct_binary_op op;
    ct_dtype in_dtype;
    ct_dtype out_dtype;
    double alpha;
    atomic_int zero_division; /* set by integer floor_divide/remainder by 0 */
} binary_ctx;

/* One elementwise loop: x and y are the operands (type T), EXPR the result
 * (stored as O). Uses po/pa/pb (bases), so/sa/sb (byte steps) and n. */
#define BIN_LOOP(T, O, EXPR)                                                          \
    do {                                                                              \
        const int64_t ts_ = (int64_t)sizeof(T);                                       \
        if (so == (int64_t)sizeof(O) && sa == ts_ && sb == ts_) {                     \
            const T *restrict ra_ = (const T *)pa;                                    \
            const T *restrict rb_ = (const T *)pb;                                    \
            O *restrict ro_ = (O *)po;                                                \
            for (int64_t i = 0; i < n; i++) {                                         \
                const T x = ra_[i], y = rb_[i];                                       \
                (void)y;                                                              \
                ro_[i] = (O)(EXPR);                                                   \
            }                                                                         \
        } else if (so == (int64_t)sizeof(O) && sa == ts_ && sb == 0) {                \
            const T *restrict ra_ = (const T *)pa;                                    \
            const T y = *(const T *)pb;                                               \
            O *restrict ro_ = (O *)po;                                                \
            (void)y;                                                                  \
            for (int64_t i = 0; i < n; i++) {                                         \
                const T x = ra_[i];                                                   \
                ro_[i] = (O)(EXPR);                                                   \
            }                                                                         \
        } else if (so == (int64_t)sizeof(O) && sa == 0 && sb == ts_) {                \
            const T x = *(const T *)pa;                                               \
            const T *restrict rb_ = (const T *)pb;                                    \
            O *restrict ro_ = (O *)po;                                                \
            for (int64_t i = 0; i < n; i++) {                                         \
                const T y = rb_[i];                                                   \
                (void)y;                                                              \
                ro_[i] = (O)(EXPR);                                                   \
            }                                                                         \
        } else {                                                                      \
            for (int64_t i = 0; i < n; i++) {                                         \
                const T x = *(const T *)(pa + i * sa), y = *(const T *)(pb + i * sb); \
                (void)y;                                                              \
                *(O *)(po + i * so) = (O)(EXPR);                                      \
            }                                                                         \
        }                                                                             \
    } while (0)

/* ---- floating point ---------------------------------------------------- */

/* Python's float floor division: the quotient rounded toward -inf, with
 * the IEEE result for a zero divisor. */
#define DEFINE_FLOAT_HELPERS(SUFFIX, T)                                  \
    static inline T floordiv_##SUFFIX(T a, T b) {                        \
        if (b == 0)                                                      \
            return a / b;                                                \
        T mod = fmod(a, b);                                              \
        T div = (a - mod) / b;                                           \
        if (mod != 0 && ((b < 0) != (mod < 0)))                          \
            div -= 1;                                                    \
        if (div == 0)                                                    \
            return copysign((T)0, a / b);                                \
        T rounded = floor(div);                                          \
        if (div - rounded > (T)0.5)                                      \
            rounded += 1;                                                \
        return rounded;                                                  \
    }                                                                    \
    /* Python's %: the result takes the sign of the divisor. */          \
    static inline T remainder_##SUFFIX(T a, T b) {                       \
        T mod = fmod(a, b);                                              \
        if (mod != 0 && ((b < 0) != (mod < 0)))                          \
            mod += b;                                                    \
        return mod;                                                      \
    }                                                                    \
    /* NaN in either operand gives NaN, as torch.maximum/minimum. */     \
    static inline T maximum_##SUFFIX(T a, T b) {                         \
        return (a != a || b != b) ? (T)NAN : (a < b ? b : a);            \
    }                                                                    \
    static inline T minimum_##SUFFIX(T a, T b) {                         \
        return (a != a || b != b) ? (T)NAN : (b < a ? b : a);            \
    }

DEFINE_FLOAT_HELPERS(f32, float)
DEFINE_FLOAT_HELPERS(f64, double)

/* pow with a broadcast exponent of 2 or 0.5 is common (x ** 2): use the
 * exact cheaper forms, as PyTorch does. Returns true when it handled it. */
#define POW_SCALAR_SHORTCUT(T)                                  \
    do {                                                        \
        if (sb == 0) {                                          \
            const T e_ = *(const T *)pb;                        \
            if (e_ == (T)2) {                                   \
                BIN_LOOP(T, T, x * x);                          \
                return;                                         \
            }                                                   \
            if (e_ == (T)0.5) {                                 \
                BIN_LOOP(T, T, sqrt(x));                        \
                return;                                         \
            }                                                   \
        }                                                       \
    } while (0)

#define DEFINE_BINARY_FLOAT(NAME, SUFFIX, T)                                              \
    static void NAME(ct_binary_op op, double alpha_d, char *po, const char *pa,           \
                     const char *pb, int64_t so, int64_t sa, int64_t sb, int64_t n) {     \
        const T alpha = (T)alpha_d;                                                       \
        switch (op) {                                                                     \
        case CT_BIN_ADD:                                                                  \
            if (alpha_d == 1.0)                                                           \
                BIN_LOOP(T, T, x + y);                                                    \
            else                                                                          \
                BIN_LOOP(T, T, x + alpha * y);                                            \
            break;                                                                        \
        case CT_BIN_SUB:                                                                  \
            if (alpha_d == 1.0)                                                           \
                BIN_LOOP(T, T, x - y);                                                    \
            else                                                                          \
                BIN_LOOP(T, T, x - alpha * y);                                            \
            break;                                                                        \
        case CT_BIN_MUL: BIN_LOOP(T, T, x * y); break;                                    \
        case CT_BIN_DIV: BIN_LOOP(T, T, x / y); break;                                    \
        case CT_BIN_FLOOR_DIV: BIN_LOOP(T, T, floordiv_##SUFFIX(x, y)); break;            \
        case CT_BIN_REMAINDER: BIN_LOOP(T, T, remainder_##SUFFIX(x, y)); break;           \
        case CT_BIN_POW:                                                                  \
            POW_SCALAR_SHORTCUT(T);                                                       \
            BIN_LOOP(T, T, pow(x, y));                                                    \
            break;                                                                        \
        case CT_BIN_MAXIMUM: BIN_LOOP(T, T, maximum_##SUFFIX(x, y)); break;               \
        case CT_BIN_MINIMUM: BIN_LOOP(T, T, minimum_##SUFFIX(x, y)); break;               \
        case CT_BIN_ATAN2: BIN_LOOP(T, T, atan2(x, y)); break;                            \
        case CT_BIN_EQ: BIN_LOOP(T, uint8_t, x == y); break;                              \
        case CT_BIN_NE: BIN_LOOP(T, uint8_t, x != y); break;                              \
        case CT_BIN_LT: BIN_LOOP(T, uint8_t, x < y); break;                               \
        case CT_BIN_LE: BIN_LOOP(T, uint8_t, x <= y); break;                              \
        case CT_BIN_GT: BIN_LOOP(T, uint8_t, x > y); break;                               \
        case CT_BIN_GE: BIN_LOOP(T, uint8_t, x >= y); break;                              \
        case CT_BIN_LOGICAL_AND: BIN_LOOP(T, uint8_t, (x != 0) & (y != 0)); break;        \
        case CT_BIN_LOGICAL_OR: BIN_LOOP(T, uint8_t, (x != 0) | (y != 0)); break;         \
        case CT_BIN_LOGICAL_XOR: BIN_LOOP(T, uint8_t, (x != 0) ^ (y != 0)); break;        \
        default: break;                                                                   \
        }                                                                                 \
    }

DEFINE_BINARY_FLOAT(binary_f32, f32, float)
DEFINE_BINARY_FLOAT(binary_f64, f64, double)

/* ---- integers (exact, in int64) ---------------------------------------- */

/* Two's-complement wrap-around, as PyTorch's integer ops (signed overflow
 * would be undefined behaviour in C). */
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Rounds toward -inf; a zero divisor sets *zero and gives 0. */
static inline int64_t floordiv_i64(int64_t a, int64_t b, int *zero) {
    if (b == 0) {
        *zero = 1;
        return 0;
    }
    if (b == -1)
        return wrap_sub(0, a); /* INT64_MIN / -1 overflows */
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        q -= 1;
    return q;
}

static inline int64_t remainder_i64(int64_t a, int64_t b, int *zero) {
    if (b == 0) {
        *zero = 1;
        return 0;
    }
    if (b == -1)
        return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

/* Negative exponents give 0 except for bases 1 and -1, as torch.pow. */
static inline int64_t pow_i64(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 1)
            return 1;
        if (base == -1)
            return (exp & 1) ? -1 : 1;
        return 0;
    }
    uint64_t result = 1, b = (uint64_t)base;
    while (exp) {
        if (exp & 1)
            result *= b;
        b *= b;
        exp >>= 1;
    }
    return (int64_t)result;
}

static void binary_i64(ct_binary_op op, double alpha_d, char *po, const char *pa, const char *pb,
                       int64_t so, int64_t sa, int64_t sb, int64_t n, atomic_int *zero_division) {
    const int64_t alpha = ct_cpu_double_to_i64(alpha_d);
    int zero = 0;
    switch (op) {
    case CT_BIN_ADD:
        if (alpha == 1)
            BIN_LOOP(int64_t, int64_t, wrap_add(x, y));
        else
            BIN_LOOP(int64_t, int64_t, wrap_add(x, wrap_mul(alpha, y)));
        break;
    case CT_BIN_SUB:
        if (alpha == 1)
            BIN_LOOP(int64_t, int64_t, wrap_sub(x, y));
        else
            BIN_LOOP(int64_t, int64_t, wrap_sub(x, wrap_mul(alpha, y)));
        break;
    case CT_BIN_MUL: BIN_LOOP(int64_t, int64_t, wrap_mul(x, y)); break;
    case CT_BIN_FLOOR_DIV: BIN_LOOP(int64_t, int64_t, floordiv_i64(x, y, &zero)); break;
    case CT_BIN_REMAINDER: BIN_LOOP(int64_t, int64_t, remainder_i64(x, y, &zero)); break;
    case CT_BIN_POW: BIN_LOOP(int64_t, int64_t, pow_i64(x, y)); break;
    case CT_BIN_MAXIMUM: BIN_LOOP(int64_t, int64_t, x < y ? y : x); break;
    case CT_BIN_MINIMUM: BIN_LOOP(int64_t, int64_t, y < x ? y : x); break;
    case CT_BIN_EQ: BIN_LOOP(int64_t, uint8_t, x == y); break;
    case CT_BIN_NE: BIN_LOOP(int64_t, uint8_t, x != y); break;
    case CT_BIN_LT: BIN_LOOP(int64_t, uint8_t, x < y); break;
    case CT_BIN_LE: BIN_LOOP(int64_t, uint8_t, x <= y); break;
    case CT_BIN_GT: BIN_LOOP(int64_t, uint8_t, x > y); break;
    case CT_BIN_GE: BIN_LOOP(int64_t, uint8_t, x >= y); break;
    case CT_BIN_LOGICAL_AND: BIN_LOOP(int64_t, uint8_t, (x != 0) & (y != 0)); break;
    case CT_BIN_LOGICAL_OR: BIN_LOOP(int64_t, uint8_t, (x != 0) | (y != 0)); break;
    case CT_BIN_LOGICAL_XOR: BIN_LOOP(int64_t, uint8_t, (x != 0) ^ (y != 0)); break;
    default: break; /* div/atan2 never reach integers (checked in ct_cpu_binary) */
    }
    if (zero)
        atomic_store_explicit(zero_division, 1, memory_order_relaxed);
}

/* ---- dispatch ------------------------------------------------------------ */

/* Widen runs of a narrow dtype into float32 / int64 buffers, compute, and
 * narrow the result back (comparisons write their bool output directly). */
static void binary_widened(binary_ctx *c, char *po, const char *pa, const char *pb, int64_t so,
                           int64_t sa, int64_t sb, int64_t n) {
    const bool to_float = c->in_dtype == CT_FLOAT16 || c->in_dtype == CT_BFLOAT16;
    const bool bool_out = ct_binary_facts_of(c->op)->bool_result;
    const int64_t wsize = to_float ? (int64_t)sizeof(float) : (int64_t)sizeof(int64_t);
    /* int64 buffers, also used as float storage: both are 8-byte aligned */
    int64_t xa[CT_CPU_EW_CHUNK], xb[CT_CPU_EW_CHUNK], xo[CT_CPU_EW_CHUNK];
    for (int64_t off = 0; off < n; off += CT_CPU_EW_CHUNK) {
        const int64_t m = n - off < CT_CPU_EW_CHUNK ? n - off : CT_CPU_EW_CHUNK;
        /* a broadcast scalar stays a scalar: one element, step 0 */
        const int64_t ma = sa == 0 ? 1 : m, mb = sb == 0 ? 1 : m;
        char *out = po + off * so;
        char *obuf = bool_out ? out : (char *)xo;
        const int64_t ostep = bool_out ? so : wsize;
        if (to_float) {
            ct_cpu_load_f32_run((float *)xa, pa + off * sa, sa, c->in_dtype, ma);
            ct_cpu_load_f32_run((float *)xb, pb + off * sb, sb, c->in_dtype, mb);
            binary_f32(c->op, c->alpha, obuf, (char *)xa, (char *)xb, ostep, sa ? wsize : 0,
                       sb ? wsize : 0, m);
            if (!bool_out)
                ct_cpu_store_f32_run(out, so, c->out_dtype, (const float *)xo, m);
        } else {
            ct_cpu_load_i64_run(xa, pa + off * sa, sa, c->in_dtype, ma);
            ct_cpu_load_i64_run(xb, pb + off * sb, sb, c->in_dtype, mb);
            binary_i64(c->op, c->alpha, obuf, (char *)xa, (char *)xb, ostep, sa ? wsize : 0,
                       sb ? wsize : 0, m, &c->zero_division);
            if (!bool_out)
                ct_cpu_store_i64_run(out, so, c->out_dtype, xo, m);
        }
    }
}

static void binary_inner(char **ptrs, const int64_t *steps, int64_t n, void *ctx) {
    binary_ctx *c = ctx;
    switch (c->in_dtype) {
    case CT_FLOAT32:
        binary_f32(c->op, c->alpha, ptrs[0], ptrs[1], ptrs[2], steps[0], steps[1], steps[2], n);
        break;
    case CT_FLOAT64:
        binary_f64(c->op, c->alpha, ptrs[0], ptrs[1], ptrs[2], steps[0], steps[1], steps[2], n);
        break;
    case CT_INT64:
        binary_i64(c->op, c->alpha, ptrs[0], ptrs[1], ptrs[2], steps[0], steps[1], steps[2], n,
                   &c->zero_division);
        break;
    default:
        binary_widened(c, ptrs[0], ptrs[1], ptrs[2], steps[0], steps[1], steps[2], n);
        break;
    }
}

static const char *binary_kernel_name(ct_binary_op op) {
    static const char *const names[CT_BIN_COUNT_] = {
        "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum",
        "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"};
    return (unsigned)op < CT_BIN_COUNT_ ? names[op] : "binary";
}

ct_status ct_cpu_binary(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                        double alpha) {
    CT_CHECK_STATUS((unsigned)op < CT_BIN_COUNT_, CT_ERR_INTERNAL, "binary: unknown op %d", (int)op);
    CT_CHECK_STATUS(a->dtype == b->dtype, CT_ERR_INTERNAL, "%s: operands of different dtypes",
                    binary_kernel_name(op));
    const bool floating = ct_dtype_is_floating(a->dtype);
    CT_CHECK_STATUS(floating || (op != CT_BIN_DIV && op != CT_BIN_ATAN2), CT_ERR_DTYPE,
                    "\"%s_cpu\" not implemented for '%s'", binary_kernel_name(op),
                    ct_dtype_name(a->dtype));
    CT_CHECK_STATUS(ct_binary_facts_of(op)->bool_result ? out->dtype == CT_BOOL : out->dtype == a->dtype,
                    CT_ERR_INTERNAL, "%s: unexpected output dtype %s", binary_kernel_name(op),
                    ct_dtype_name(out->dtype));
    if (ct_cpu_view_numel(out) == 0)
        return CT_OK;
    binary_ctx ctx = {.op = op, .in_dtype = a->dtype, .out_dtype = out->dtype, .alpha = alpha};
    atomic_init(&ctx.zero_division, 0);
    const ct_kview *views[3] = {out, a, b};
    ct_cpu_run_elementwise(views, 3, binary_inner, &ctx);
    if (atomic_load(&ctx.zero_division))
        return ct_error_set(CT_ERR_INVALID_ARG, "%s: ZeroDivisionError (integer division by zero)",
                            binary_kernel_name(op));
    return CT_OK;
}

/* ---- where ------------------------------------------------------------ */

#define WHERE_LOOP(T)                                                                     \
    do {                                                                                  \
        const int64_t ts_ = (int64_t)sizeof(T);                                           \
        if (so == ts_ && sc == 1 && sa == ts_ && sb == ts_) {                             \
            const uint8_t *restrict rc_ = (const uint8_t *)pc;                            \
            const T *restrict ra_ = (const T *)pa;                                        \
            const T *restrict rb_ = (const T *)pb;                                        \
            T *restrict ro_ = (T *)po;                                                    \
            for (int64_t i = 0; i < n; i++)                                               \
                ro_[i] = rc_[i] ? ra_[i] : rb_[i];                                        \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++)                                               \
                *(T *)(po + i * so) =                                                     \
                    pc[i * sc] ? *(const T *)(pa + i * sa) : *(const T *)(pb + i * sb);   \
        }                                                                                 \
    } while (0)

/* Elements are moved as raw bits (NaN payloads and -0 survive). */
static void where_inner(char **ptrs, const int64_t *steps, int64_t n, void *ctx) {
    const size_t esize = *(const size_t *)ctx;
    char *po = ptrs[0];
    const char *pc = ptrs[1], *pa = ptrs[2], *pb = ptrs[3];
    const int64_t so = steps[0], sc = steps[1], sa = steps[2], sb = steps[3];
    switch (esize) {
    case 1: WHERE_LOOP(uint8_t); break;
    case 2: WHERE_LOOP(uint16_t); break;
    case 4: WHERE_LOOP(uint32_t); break;
    default: WHERE_LOOP(uint64_t); break;
    }
}

ct_status ct_cpu_where(const ct_kview *out, const ct_kview *cond, const ct_kview *a, const ct_kview *b) {
    CT_CHECK_STATUS(cond->dtype == CT_BOOL && a->dtype == out->dtype && b->dtype == out->dtype,
                    CT_ERR_INTERNAL, "where: unexpected dtypes (condition %s, %s, %s -> %s)",
                    ct_dtype_name(cond->dtype), ct_dtype_name(a->dtype), ct_dtype_name(b->dtype),
                    ct_dtype_name(out->dtype));
    if (ct_cpu_view_numel(out) == 0)
        return CT_OK;
    size_t esize = ct_dtype_size(out->dtype);
    const ct_kview *views[4] = {out, cond, a, b};
    ct_cpu_run_elementwise(views, 4, where_inner, &esize);
    return CT_OK;
}
