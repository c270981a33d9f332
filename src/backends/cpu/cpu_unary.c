/*
 * cpu_unary.c — the CPU kernels of the unary elementwise ops (neg … clamp).
 *
 * As in cpu_binary.c, each op is written once for float32/float64 (math in
 * the dtype's precision, via <tgmath.h> so one expression serves both) and
 * once for int64; float16/bfloat16 and int32/uint8/bool runs are widened in
 * stack buffers. The front-end (src/ops/elementwise.c) has already chosen
 * the compute dtype, so floating functions never see integers here.
 */
#include "../../core/error.h"
#include "cpu_elementwise.h"

#include <tgmath.h> /* after cpu_vec.h: its inlines call no math functions */

#define CT_SQRT1_2 0.70710678118654752440
#define CT_SQRT_2_OVER_PI 0.79788456080286535588
#define CT_GELU_KAPPA 0.044715
#define CT_SOFTPLUS_THRESHOLD 20.0

typedef struct unary_ctx {
    ct_unary_op op;
    ct_dtype in_dtype;
    ct_dtype out_dtype;
    double p0, p1;
} unary_ctx;

#define HARDSWISH_RELU6(t) ((t) < 0 ? 0 : (t) > 6 ? 6 : (t))

/* One loop: x is the input (type T), EXPR the result stored as O. Uses
 * po/pi (bases), so/si (byte steps) and n. */
#define UN_LOOP(T, O, EXPR)                                                   \
    do {                                                                      \
        if (so == (int64_t)sizeof(O) && si == (int64_t)sizeof(T)) {           \
            const T *restrict ri_ = (const T *)pi;                            \
            O *restrict ro_ = (O *)po;                                        \
            for (int64_t i = 0; i < n; i++) {                                 \
                const T x = ri_[i];                                           \
                ro_[i] = (O)(EXPR);                                           \
            }                                                                 \
        } else {                                                              \
            for (int64_t i = 0; i < n; i++) {                                 \
                const T x = *(const T *)(pi + i * si);                        \
                *(O *)(po + i * so) = (O)(EXPR);                              \
            }                                                                 \
        }                                                                     \
    } while (0)

/* Clamp with PyTorch's rules: NaN input stays NaN, lo > hi gives hi. A NaN
 * bound (no bound) was replaced by an infinity by the caller. */
#define CLAMP_EXPR(x, lo, hi) ((x) != (x) ? (x) : ((x) < (lo) ? (lo) : (x)) > (hi) ? (hi) : ((x) < (lo) ? (lo) : (x)))

#define DEFINE_UNARY_FLOAT(NAME, T, EXP)                                                            \
    static void NAME(ct_unary_op op, double p0, double p1, char *po, const char *pi,           \
                     int64_t so, int64_t si, int64_t n) {                                      \
        switch (op) {                                                                          \
        case CT_UN_NEG: UN_LOOP(T, T, -x); break;                                              \
        case CT_UN_ABS: UN_LOOP(T, T, fabs(x)); break;                                         \
        case CT_UN_SIGN: UN_LOOP(T, T, (T)((0 < x) - (x < 0))); break;                         \
        case CT_UN_SQUARE: UN_LOOP(T, T, x * x); break;                                        \
        case CT_UN_EXP: UN_LOOP(T, T, EXP(x)); break;                                          \
        case CT_UN_EXPM1: UN_LOOP(T, T, expm1(x)); break;                                      \
        case CT_UN_LOG: UN_LOOP(T, T, log(x)); break;                                          \
        case CT_UN_LOG1P: UN_LOOP(T, T, log1p(x)); break;                                      \
        case CT_UN_LOG2: UN_LOOP(T, T, log2(x)); break;                                        \
        case CT_UN_SQRT: UN_LOOP(T, T, sqrt(x)); break;                                        \
        case CT_UN_RSQRT: UN_LOOP(T, T, (T)1 / sqrt(x)); break;                                \
        case CT_UN_RECIPROCAL: UN_LOOP(T, T, (T)1 / x); break;                                 \
        case CT_UN_SIN: UN_LOOP(T, T, sin(x)); break;                                          \
        case CT_UN_COS: UN_LOOP(T, T, cos(x)); break;                                          \
        case CT_UN_TANH: UN_LOOP(T, T, tanh(x)); break;                                        \
        /* exp(-x) overflows to inf for very negative x: the result is 0, not NaN */          \
        case CT_UN_SIGMOID: UN_LOOP(T, T, (T)1 / ((T)1 + EXP(-x))); break;                     \
        case CT_UN_RELU: UN_LOOP(T, T, x < 0 ? (T)0 : x); break;                               \
        case CT_UN_GELU:                                                                       \
            UN_LOOP(T, T, x * (T)0.5 * ((T)1 + erf(x * (T)CT_SQRT1_2)));                       \
            break;                                                                             \
        case CT_UN_GELU_TANH:                                                                  \
            UN_LOOP(T, T,                                                                      \
                    (T)0.5 * x *                                                               \
                        ((T)1 + tanh((T)CT_SQRT_2_OVER_PI * (x + (T)CT_GELU_KAPPA * x * x * x)))); \
            break;                                                                             \
        case CT_UN_SILU: UN_LOOP(T, T, x / ((T)1 + EXP(-x))); break;                           \
        case CT_UN_SOFTPLUS:                                                                   \
            UN_LOOP(T, T, x > (T)CT_SOFTPLUS_THRESHOLD ? x : log1p(EXP(x)));                   \
            break;                                                                             \
        case CT_UN_ERF: UN_LOOP(T, T, erf(x)); break;                                          \
        case CT_UN_FLOOR: UN_LOOP(T, T, floor(x)); break;                                      \
        case CT_UN_CEIL: UN_LOOP(T, T, ceil(x)); break;                                        \
        /* rint rounds half to even in the default rounding mode */                           \
        case CT_UN_ROUND: UN_LOOP(T, T, rint(x)); break;                                       \
        case CT_UN_TRUNC: UN_LOOP(T, T, trunc(x)); break;                                      \
        case CT_UN_ISNAN: UN_LOOP(T, uint8_t, isnan(x)); break;                                \
        case CT_UN_ISINF: UN_LOOP(T, uint8_t, isinf(x)); break;                                \
        case CT_UN_ISFINITE: UN_LOOP(T, uint8_t, isfinite(x)); break;                          \
        case CT_UN_LOGICAL_NOT: UN_LOOP(T, uint8_t, x == 0); break;                            \
        case CT_UN_LEAKY_RELU: {                                                               \
            const T slope = (T)p0;                                                             \
            UN_LOOP(T, T, x > 0 ? x : x * slope);                                              \
            break;                                                                             \
        }                                                                                      \
        case CT_UN_CLAMP: {                                                                    \
            const T lo = isnan(p0) ? (T)-INFINITY : (T)p0;                                     \
            const T hi = isnan(p1) ? (T)INFINITY : (T)p1;                                      \
            UN_LOOP(T, T, CLAMP_EXPR(x, lo, hi));                                              \
            break;                                                                             \
        }                                                                                      \
        /* x * relu6(x + 3) / 6; a NaN stays NaN (no fmin/fmax) */                            \
        case CT_UN_HARDSWISH: UN_LOOP(T, T, x * HARDSWISH_RELU6(x + (T)3) / (T)6); break;     \
        default: break;                                                                        \
        }                                                                                      \
    }

/* float32 exp is cpu_vec.h's (about 1 ulp, vectorisable) as PyTorch uses a
 * vectorised exp too; float64 keeps libm's. */
static inline double exp_f64(double x) { return exp(x); }
DEFINE_UNARY_FLOAT(unary_f32, float, ct_cpu_exp_f32)
DEFINE_UNARY_FLOAT(unary_f64, double, exp_f64)

/* A clamp bound for integers: NaN (no bound) becomes the widest value. */
static int64_t integer_bound(double v, int64_t none) {
    return isnan(v) ? none : ct_cpu_double_to_i64(v);
}

static void unary_i64(ct_unary_op op, double p0, double p1, char *po, const char *pi, int64_t so,
                      int64_t si, int64_t n) {
    switch (op) {
    /* through uint64 so that -INT64_MIN wraps instead of being undefined */
    case CT_UN_NEG: UN_LOOP(int64_t, int64_t, (int64_t)(0 - (uint64_t)x)); break;
    case CT_UN_ABS: UN_LOOP(int64_t, int64_t, x < 0 ? (int64_t)(0 - (uint64_t)x) : x); break;
    case CT_UN_SIGN: UN_LOOP(int64_t, int64_t, (x > 0) - (x < 0)); break;
    case CT_UN_SQUARE: UN_LOOP(int64_t, int64_t, (int64_t)((uint64_t)x * (uint64_t)x)); break;
    case CT_UN_RELU: UN_LOOP(int64_t, int64_t, x < 0 ? 0 : x); break;
    case CT_UN_FLOOR: case CT_UN_CEIL: case CT_UN_ROUND: case CT_UN_TRUNC:
        UN_LOOP(int64_t, int64_t, x);
        break;
    case CT_UN_ISNAN: case CT_UN_ISINF: UN_LOOP(int64_t, uint8_t, 0 * x); break;
    case CT_UN_ISFINITE: UN_LOOP(int64_t, uint8_t, 1 + 0 * x); break;
    case CT_UN_LOGICAL_NOT: UN_LOOP(int64_t, uint8_t, x == 0); break;
    case CT_UN_CLAMP: {
        const int64_t lo = integer_bound(p0, INT64_MIN), hi = integer_bound(p1, INT64_MAX);
        UN_LOOP(int64_t, int64_t, (x < lo ? lo : x) > hi ? hi : (x < lo ? lo : x));
        break;
    }
    default: break; /* floating functions never reach integers (checked below) */
    }
}

/* Widen runs of a narrow dtype into float32 / int64, compute, narrow back. */
static void unary_widened(const unary_ctx *c, char *po, const char *pi, int64_t so, int64_t si,
                          int64_t n) {
    const bool to_float = c->in_dtype == CT_FLOAT16 || c->in_dtype == CT_BFLOAT16;
    const bool bool_out = ct_unary_facts_of(c->op)->bool_result;
    const int64_t wsize = to_float ? (int64_t)sizeof(float) : (int64_t)sizeof(int64_t);
    int64_t xi[CT_CPU_EW_CHUNK], xo[CT_CPU_EW_CHUNK]; /* also used as float buffers */
    for (int64_t off = 0; off < n; off += CT_CPU_EW_CHUNK) {
        const int64_t m = n - off < CT_CPU_EW_CHUNK ? n - off : CT_CPU_EW_CHUNK;
        char *out = po + off * so;
        char *obuf = bool_out ? out : (char *)xo;
        const int64_t ostep = bool_out ? so : wsize;
        if (to_float) {
            ct_cpu_load_f32_run((float *)xi, pi + off * si, si, c->in_dtype, m);
            unary_f32(c->op, c->p0, c->p1, obuf, (const char *)xi, ostep, wsize, m);
            if (!bool_out)
                ct_cpu_store_f32_run(out, so, c->out_dtype, (const float *)xo, m);
        } else {
            ct_cpu_load_i64_run(xi, pi + off * si, si, c->in_dtype, m);
            unary_i64(c->op, c->p0, c->p1, obuf, (const char *)xi, ostep, wsize, m);
            if (!bool_out)
                ct_cpu_store_i64_run(out, so, c->out_dtype, xo, m);
        }
    }
}

static void unary_inner(char **ptrs, const int64_t *steps, int64_t n, void *ctx) {
    const unary_ctx *c = ctx;
    switch (c->in_dtype) {
    case CT_FLOAT32: unary_f32(c->op, c->p0, c->p1, ptrs[0], ptrs[1], steps[0], steps[1], n); break;
    case CT_FLOAT64: unary_f64(c->op, c->p0, c->p1, ptrs[0], ptrs[1], steps[0], steps[1], n); break;
    case CT_INT64: unary_i64(c->op, c->p0, c->p1, ptrs[0], ptrs[1], steps[0], steps[1], n); break;
    default: unary_widened(c, ptrs[0], ptrs[1], steps[0], steps[1], n); break;
    }
}

ct_status ct_cpu_unary(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0, double p1) {
    CT_CHECK_STATUS((unsigned)op < CT_UN_COUNT_, CT_ERR_INTERNAL, "unary: unknown op %d", (int)op);
    CT_CHECK_STATUS(ct_dtype_is_floating(in->dtype) || ct_unary_facts_of(op)->integer_kernel, CT_ERR_DTYPE,
                    "%s: not implemented for '%s' on cpu", ct_unary_facts_of(op)->name, ct_dtype_name(in->dtype));
    CT_CHECK_STATUS(ct_unary_facts_of(op)->bool_result ? out->dtype == CT_BOOL : out->dtype == in->dtype,
                    CT_ERR_INTERNAL, "%s: unexpected output dtype %s", ct_unary_facts_of(op)->name,
                    ct_dtype_name(out->dtype));
    if (ct_cpu_view_numel(out) == 0)
        return CT_OK;
    unary_ctx ctx = {.op = op, .in_dtype = in->dtype, .out_dtype = out->dtype, .p0 = p0, .p1 = p1};
    const ct_kview *views[2] = {out, in};
    ct_cpu_run_elementwise(views, 2, unary_inner, &ctx);
    return CT_OK;
}
