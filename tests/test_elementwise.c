/*
 * test_elementwise.c — the unary elementwise ops of ctorch/ops.h on the CPU
 * (neg … isfinite, logical_not, clamp, leaky_relu), and views as inputs.
 *
 * Each op is checked against a float64 reference computed here from the
 * values actually stored (after rounding to the dtype), for every dtype,
 * at random shapes, contiguous and non-contiguous; dtypes the op refuses
 * must fail with CT_ERR_DTYPE. Then special values (inf, NaN, -0, large |x|),
 * integer edge cases, strided/expanded views and NULL propagation. Binary
 * ops, type promotion and where are in test_elementwise_binary.c.
 */
#include "elementwise_testutil.h"

/* ==== unary ============================================================== */

typedef struct unary_case {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *);
    ct_unary_op op;
    domain dom;
} unary_case;

static const unary_case unary_cases[] = {
    {"neg", ct_neg, CT_UN_NEG, DOM_ANY},           {"abs", ct_abs, CT_UN_ABS, DOM_ANY},
    {"sign", ct_sign, CT_UN_SIGN, DOM_DISCRETE},   {"square", ct_square, CT_UN_SQUARE, DOM_ANY},
    {"exp", ct_exp, CT_UN_EXP, DOM_ANY},           {"expm1", ct_expm1, CT_UN_EXPM1, DOM_ANY},
    {"log", ct_log, CT_UN_LOG, DOM_POSITIVE},      {"log1p", ct_log1p, CT_UN_LOG1P, DOM_ABOVE_M1},
    {"log2", ct_log2, CT_UN_LOG2, DOM_POSITIVE},   {"sqrt", ct_sqrt, CT_UN_SQRT, DOM_POSITIVE},
    {"rsqrt", ct_rsqrt, CT_UN_RSQRT, DOM_POSITIVE}, {"reciprocal", ct_reciprocal, CT_UN_RECIPROCAL, DOM_NONZERO},
    {"sin", ct_sin, CT_UN_SIN, DOM_ANY},           {"cos", ct_cos, CT_UN_COS, DOM_ANY},
    {"tanh", ct_tanh, CT_UN_TANH, DOM_ANY},        {"sigmoid", ct_sigmoid, CT_UN_SIGMOID, DOM_ANY},
    {"relu", ct_relu, CT_UN_RELU, DOM_ANY},        {"gelu", ct_gelu, CT_UN_GELU, DOM_ANY},
    {"gelu_tanh", ct_gelu_tanh, CT_UN_GELU_TANH, DOM_ANY}, {"silu", ct_silu, CT_UN_SILU, DOM_ANY},
    {"softplus", ct_softplus, CT_UN_SOFTPLUS, DOM_ANY}, {"erf", ct_erf, CT_UN_ERF, DOM_ANY},
    {"floor", ct_floor, CT_UN_FLOOR, DOM_ANY},     {"ceil", ct_ceil, CT_UN_CEIL, DOM_ANY},
    {"round", ct_round, CT_UN_ROUND, DOM_DISCRETE}, {"trunc", ct_trunc, CT_UN_TRUNC, DOM_ANY},
    {"isnan", ct_isnan, CT_UN_ISNAN, DOM_ANY},     {"isinf", ct_isinf, CT_UN_ISINF, DOM_ANY},
    {"isfinite", ct_isfinite, CT_UN_ISFINITE, DOM_ANY},
    {"logical_not", ct_logical_not, CT_UN_LOGICAL_NOT, DOM_DISCRETE},
};
#define N_UNARY (int)(sizeof unary_cases / sizeof unary_cases[0])

/* Half to even, derived independently of rint. */
static double round_half_even(double x) {
    double r = floor(x), d = x - r;
    if (d > 0.5) return r + 1;
    if (d < 0.5) return r;
    return fmod(r, 2) == 0 ? r : r + 1;
}

static double ref_unary(ct_unary_op op, double x, double p0, double p1) {
    switch (op) {
    case CT_UN_NEG: return -x;
    case CT_UN_ABS: return fabs(x);
    case CT_UN_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case CT_UN_SQUARE: return x * x;
    case CT_UN_EXP: return exp(x);
    case CT_UN_EXPM1: return expm1(x);
    case CT_UN_LOG: return log(x);
    case CT_UN_LOG1P: return log1p(x);
    case CT_UN_LOG2: return log2(x);
    case CT_UN_SQRT: return sqrt(x);
    case CT_UN_RSQRT: return 1 / sqrt(x);
    case CT_UN_RECIPROCAL: return 1 / x;
    case CT_UN_SIN: return sin(x);
    case CT_UN_COS: return cos(x);
    case CT_UN_TANH: return tanh(x);
    case CT_UN_SIGMOID: return 1 / (1 + exp(-x));
    case CT_UN_RELU: return isnan(x) ? x : x > 0 ? x : 0;
    case CT_UN_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case CT_UN_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case CT_UN_SILU: return x / (1 + exp(-x));
    case CT_UN_SOFTPLUS: return x > 20 ? x : log1p(exp(x));
    case CT_UN_ERF: return erf(x);
    case CT_UN_FLOOR: return floor(x);
    case CT_UN_CEIL: return ceil(x);
    case CT_UN_ROUND: return round_half_even(x);
    case CT_UN_TRUNC: return trunc(x);
    case CT_UN_ISNAN: return isnan(x);
    case CT_UN_ISINF: return isinf(x) != 0;
    case CT_UN_ISFINITE: return isfinite(x);
    case CT_UN_LOGICAL_NOT: return x == 0;
    case CT_UN_LEAKY_RELU: return isnan(x) ? x : x > 0 ? x : x * p0;
    case CT_UN_CLAMP:
        if (isnan(x)) return x;
        if (!isnan(p0) && x < p0) x = p0;
        if (!isnan(p1) && x > p1) x = p1;
        return x;
    default: return NAN;
    }
}

static bool unary_is_float_fn(ct_unary_op op) {
    return (op >= CT_UN_EXP && op <= CT_UN_ERF && op != CT_UN_RELU);
}

/* PyTorch's rules: the dtype of op(dt), or CT_DTYPE_DEFAULT if refused. */
static ct_dtype expected_unary_dtype(ct_unary_op op, ct_dtype dt) {
    if (op == CT_UN_ISNAN || op == CT_UN_ISINF || op == CT_UN_ISFINITE || op == CT_UN_LOGICAL_NOT)
        return CT_BOOL;
    if (unary_is_float_fn(op)) return is_float(dt) ? dt : ct_get_default_dtype();
    if (dt == CT_BOOL) {
        if (op == CT_UN_SQUARE) return CT_INT64;
        if (op == CT_UN_SIGN) return CT_BOOL;
        return CT_DTYPE_DEFAULT;
    }
    return dt;
}

/* Run op on a random input of dtype dt and compare with the reference. */
static void check_unary_once(const unary_case *c, ct_dtype dt, bool noncontig) {
    ct_shape s = random_shape(4);
    int64_t n = shape_numel(s);
    double *vals = draw_array(c->dom, dt, n), *stored;
    ct_scope_begin();
    ct_tensor *x = make_input(vals, s, dt, noncontig, &stored);
    ct_tensor *y = c->fn(x);
    ct_dtype want = expected_unary_dtype(c->op, dt);
    if (want == CT_DTYPE_DEFAULT) {
        CT_EXPECT_MSG(y == NULL, "%s(%s) should be refused", c->name, ct_dtype_name(dt));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, c->name);
    } else if (CT_EXPECT_SHAPE(y, s)) {
        CT_EXPECT_MSG(ct_dtype_of(y) == want, "%s(%s) gave %s, expected %s", c->name, ct_dtype_name(dt),
                      ct_dtype_name(ct_dtype_of(y)), ct_dtype_name(want));
        double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(want, ref_unary(c->op, stored[i], 0, 0));
        double rtol, atol;
        tolerances(want, &rtol, &atol);
        if (!ct_test_close(__FILE__, __LINE__, c->name, y, ref, n, rtol, atol))
            fprintf(stderr, "  (op %s, dtype %s, %s)\n", c->name, ct_dtype_name(dt),
                    noncontig ? "non-contiguous" : "contiguous");
        free(ref);
    }
    ct_scope_end();
    free(vals);
    free(stored);
}

static void test_unary_all_ops_all_dtypes(void) {
    for (int k = 0; k < N_UNARY; k++)
        for (int d = 0; d < 8; d++)
            for (int rep = 0; rep < 3; rep++) check_unary_once(&unary_cases[k], all_dtypes[d], rep == 2);
}

/* Integer inputs to floating functions follow the default dtype. */
static void test_unary_int_to_default_float64(void) {
    CT_EXPECT_INT_EQ(ct_set_default_dtype(CT_FLOAT64), CT_OK);
    check_unary_once(&unary_cases[4], CT_INT32, false); /* exp */
    check_unary_once(&unary_cases[15], CT_BOOL, true);  /* sigmoid */
    ct_set_default_dtype(CT_FLOAT32);
}

static void check_param_unary(const char *name, ct_unary_op op, ct_dtype dt, double p0, double p1,
                              ct_dtype want) {
    ct_shape s = CT_SHAPE(3, 5);
    double *vals = draw_array(DOM_ANY, dt, 15), *stored;
    ct_scope_begin();
    ct_tensor *x = make_input(vals, s, dt, true, &stored);
    ct_tensor *y = op == CT_UN_CLAMP ? ct_clamp(x, p0, p1) : ct_leaky_relu(x, p0);
    if (want == CT_DTYPE_DEFAULT) {
        CT_EXPECT(y == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, name);
    } else if (CT_EXPECT_SHAPE(y, s)) {
        CT_EXPECT_MSG(ct_dtype_of(y) == want, "%s(%s) gave %s", name, ct_dtype_name(dt),
                      ct_dtype_name(ct_dtype_of(y)));
        double ref[15], rtol, atol;
        for (int i = 0; i < 15; i++) ref[i] = wrap_to(want, ref_unary(op, stored[i], p0, p1));
        tolerances(want, &rtol, &atol);
        CT_EXPECT_CLOSE(y, ref, 15, rtol, atol);
    }
    ct_scope_end();
    free(vals);
    free(stored);
}

/* F.hardswish against PyTorch 2.15 (tests/fixtures/hardswish.py prints
 * these): values, the -0.0 of negative x, NaN, gradients at PyTorch's
 * boundaries (0 at x <= -3, 1 from 3 on and for NaN), and ints refused. */
static void test_hardswish(void) {
    static const double x[8] = {-4, -3, -1.5, 0, 1, 3, 4, NAN};
    static const double y[8] = {-0.0, -0.0, -0.375, 0, 0.6666666865348816, 3, 4, NAN};
    static const double g[8] = {0, 0, 0, 0.5, 0.8333333730697632, 1, 1, 1};
    CT_SCOPE {
        ct_tensor *t = ct_test_tensor(x, CT_SHAPE(8), CT_FLOAT32);
        ct_set_requires_grad(t, true);
        ct_tensor *out = ct_hardswish(t);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(out), "HardswishBackward0");
        CT_EXPECT_CLOSE(out, y, 8, 0, 0);
        CT_EXPECT(signbit(ct_get(out, (int64_t[]){0})) && signbit(ct_get(out, (int64_t[]){1})));
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(out)), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(t), g, 8, 0, 0);
        ct_tensor *d = ct_hardswish(ct_test_tensor(x, CT_SHAPE(8), CT_FLOAT64));
        for (int i = 0; i < 7; i++)
            CT_EXPECT_NEAR(ct_get(d, (int64_t[]){i}), x[i] * fmin(fmax(x[i] + 3, 0), 6) / 6, 1e-15);
        CT_EXPECT(ct_hardswish(ct_test_tensor(x, CT_SHAPE(2), CT_INT64)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "hardswish");
    }
}

static void test_clamp_and_leaky_relu(void) {
    for (int d = 0; d < 8; d++) {
        ct_dtype dt = all_dtypes[d];
        bool fl = is_float(dt);
        /* whole bounds keep integer dtypes (bool becomes int64, as torch) */
        ct_dtype keep = dt == CT_BOOL ? CT_INT64 : dt;
        check_param_unary("clamp", CT_UN_CLAMP, dt, -2, 3, keep);
        check_param_unary("clamp", CT_UN_CLAMP, dt, NAN, 1, keep);
        check_param_unary("clamp", CT_UN_CLAMP, dt, -1, NAN, keep);
        check_param_unary("clamp", CT_UN_CLAMP, dt, 2, -1, keep); /* lo > hi: everything is hi */
        /* a fractional bound promotes integers to the default float dtype */
        check_param_unary("clamp", CT_UN_CLAMP, dt, -1.5, 2.25, fl ? dt : CT_FLOAT32);
        check_param_unary("leaky_relu", CT_UN_LEAKY_RELU, dt, 0.1, 0, fl ? dt : CT_DTYPE_DEFAULT);
    }
}

static void test_unary_special_values(void) {
    const double v[] = {INFINITY, -INFINITY, NAN, 0.0, -0.0, 1000.0, -1000.0, 100.0, -100.0,
                        0.5, 1.5, 2.5, -0.5, -2.5, 21.0, 1e-30};
    const int n = (int)(sizeof v / sizeof v[0]);
    for (int dti = 0; dti < 2; dti++) {
        ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
        ct_scope_begin();
        ct_tensor *x = ct_test_tensor(v, CT_SHAPE(n), dt);
        for (int k = 0; k < N_UNARY; k++) {
            double ref[32], rtol, atol;
            for (int i = 0; i < n; i++) ref[i] = wrap_to(dt, ref_unary(unary_cases[k].op, wrap_to(dt, v[i]), 0, 0));
            tolerances(dt, &rtol, &atol);
            ct_tensor *y = unary_cases[k].fn(x);
            if (!ct_test_close(__FILE__, __LINE__, unary_cases[k].name, y, ref, n, rtol, atol))
                fprintf(stderr, "  (special values, %s)\n", ct_dtype_name(dt));
        }
        /* sigmoid and tanh saturate without NaN; exact values at the ends */
        double *sg = ct_test_values(ct_sigmoid(x)), *th = ct_test_values(ct_tanh(x));
        CT_EXPECT(sg[0] == 1 && sg[1] == 0 && sg[5] == 1 && sg[6] == 0 && isnan(sg[2]));
        CT_EXPECT(th[0] == 1 && th[1] == -1 && th[5] == 1 && th[6] == -1);
        free(sg);
        free(th);
        /* -0 keeps its sign through neg(0), sqrt and round; relu(-0) is not negative */
        double *ng = ct_test_values(ct_neg(x)), *sq = ct_test_values(ct_sqrt(x)),
               *rd = ct_test_values(ct_round(x));
        CT_EXPECT(ng[3] == 0 && signbit(ng[3]) && !signbit(ng[4]));
        CT_EXPECT(sq[4] == 0 && signbit(sq[4]));
        CT_EXPECT(rd[12] == 0 && signbit(rd[12])); /* round(-0.5) = -0 */
        free(ng);
        free(sq);
        free(rd);
        /* clamp: NaN stays NaN, infinities are clamped */
        double *cl = ct_test_values(ct_clamp(x, -1, 1));
        CT_EXPECT(cl[0] == 1 && cl[1] == -1 && isnan(cl[2]));
        free(cl);
        ct_scope_end();
    }
}

/* Near 0 these functions are about c * x, and the point of expm1 and log1p
 * is to stay accurate there: an absolute tolerance would accept 0 for
 * expm1(1e-30), so this probe is relative only. 3e-8 and 1e-5 are where
 * exp(x) - 1 and log(1 + x) in float32 lose every or most digits. */
static void test_unary_tiny_arguments(void) {
    static const double v[] = {1e-30, -1e-30, 3e-8, -3e-8, 1e-5, -1e-5, 1e-3};
    static const ct_unary_op ops[] = {CT_UN_EXPM1, CT_UN_LOG1P, CT_UN_SIN, CT_UN_TANH, CT_UN_ERF,
                                      CT_UN_SILU, CT_UN_GELU, CT_UN_GELU_TANH, CT_UN_SOFTPLUS};
    const int n = (int)(sizeof v / sizeof v[0]);
    for (int dti = 0; dti < 2; dti++) {
        ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
        CT_SCOPE {
            ct_tensor *x = ct_test_tensor(v, CT_SHAPE(n), dt);
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
                const unary_case *c = NULL;
                for (int j = 0; j < N_UNARY; j++)
                    if (unary_cases[j].op == ops[k]) c = &unary_cases[j];
                double ref[16], rtol, atol;
                for (int i = 0; i < n; i++) ref[i] = wrap_to(dt, ref_unary(ops[k], wrap_to(dt, v[i]), 0, 0));
                tolerances(dt, &rtol, &atol);
                if (!ct_test_close(__FILE__, __LINE__, c->name, c->fn(x), ref, n, rtol, 0))
                    fprintf(stderr, "  (tiny arguments, %s)\n", ct_dtype_name(dt));
            }
        }
    }
}

/* float32 exp is a vectorised polynomial, not libm's: sweep its whole range
 * (normal results within ~2 ulp, subnormal ones within 1 ulp absolute, the
 * overflow and underflow ends exact), and sigmoid, which is built on it. */
static void test_exp_float32_sweep(void) {
    const int64_t n = 200003;
    double *x = malloc(sizeof(double) * (size_t)n), *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (double)(float)(-104.5 + 193.5 * (double)i / (double)(n - 1));
    for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(CT_FLOAT32, exp(x[i]));
    CT_SCOPE {
        ct_tensor *t = ct_test_tensor(x, CT_SHAPE(n), CT_FLOAT32);
        CT_EXPECT_CLOSE(ct_exp(t), ref, n, 2.5e-7, 1.5e-45);
        for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(CT_FLOAT32, 1 / (1 + exp(-x[i])));
        /* 1 / (1 + exp(-x)) as PyTorch: 0 once exp(-x) overflows (x < -88.7) */
        CT_EXPECT_CLOSE(ct_sigmoid(t), ref, n, 4e-7, 1.2e-38);
    }
    free(x);
    free(ref);
}

static void test_unary_integer_edges(void) {
    CT_SCOPE {
        int64_t big[4] = {INT64_MIN, INT64_MAX, -((int64_t)1 << 60) - 1, 7};
        ct_tensor *x = ct_tensor_from(big, CT_INT64, CT_SHAPE(4));
        int64_t out[4];
        ct_copy_to_host(ct_neg(x), out, CT_INT64, 4); /* -INT64_MIN wraps, as in PyTorch */
        CT_EXPECT(out[0] == INT64_MIN && out[1] == -INT64_MAX && out[2] == ((int64_t)1 << 60) + 1 && out[3] == -7);
        ct_copy_to_host(ct_abs(x), out, CT_INT64, 4);
        CT_EXPECT(out[0] == INT64_MIN && out[1] == INT64_MAX && out[2] == ((int64_t)1 << 60) + 1);
        ct_copy_to_host(ct_floor(x), out, CT_INT64, 4); /* identity, exact above 2^53 */
        CT_EXPECT(out[2] == -((int64_t)1 << 60) - 1);
        ct_copy_to_host(ct_clamp(x, -5, 5), out, CT_INT64, 4);
        CT_EXPECT(out[0] == -5 && out[1] == 5 && out[2] == -5 && out[3] == 5);
        uint8_t u[3] = {0, 1, 200}, uo[3];
        ct_tensor *xu = ct_tensor_from(u, CT_UINT8, CT_SHAPE(3));
        ct_copy_to_host(ct_neg(xu), uo, CT_UINT8, 3); /* uint8 negation wraps */
        CT_EXPECT(uo[0] == 0 && uo[1] == 255 && uo[2] == 56);
        ct_copy_to_host(ct_square(xu), uo, CT_UINT8, 3);
        CT_EXPECT(uo[2] == (uint8_t)(200 * 200));
    }
}

/* Strided, narrowed and expanded views as inputs (the kernels read them in
 * place: no contiguous copy is assumed). */
static void test_views_as_inputs(void) {
    const ct_dtype dts[3] = {CT_FLOAT32, CT_BFLOAT16, CT_INT64};
    for (int d = 0; d < 3; d++) {
        ct_dtype dt = dts[d];
        double vx[48], vr[4];
        for (int i = 0; i < 48; i++) vx[i] = draw(DOM_ANY, dt);
        for (int i = 0; i < 4; i++) vr[i] = draw(DOM_ANY, dt);
        ct_scope_begin();
        ct_tensor *x = ct_test_tensor(vx, CT_SHAPE(4, 12), dt);
        ct_tensor *sl = ct_slice(x, 1, 1, 12, 3);                                     /* (4, 4), stride 3 */
        ct_tensor *nr = ct_narrow(ct_t(ct_narrow(x, 1, 2, 4)), 0, 1, 3);              /* (3, 4), transposed */
        ct_tensor *ex = ct_expand(ct_test_tensor(vr, CT_SHAPE(4, 1), dt), CT_SHAPE(4, 4)); /* stride 0 */
        ct_tensor *row = ct_expand(ct_select(ct_test_tensor(vr, CT_SHAPE(1, 4), dt), 0, 0), CT_SHAPE(3, 4));
        /* the views' values, indexed here from vx and vr */
        double xs[16], xn[12], xe[16], xr[12], ref[16], rtol, atol;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                xs[i * 4 + j] = wrap_to(dt, vx[i * 12 + 1 + 3 * j]); /* x[i, 1 + 3j] */
                xe[i * 4 + j] = wrap_to(dt, vr[i]);
                if (i < 3) xn[i * 4 + j] = wrap_to(dt, vx[j * 12 + 3 + i]); /* x[j, 2 + (1 + i)] */
                if (i < 3) xr[i * 4 + j] = wrap_to(dt, vr[j]);
            }
        tolerances(dt, &rtol, &atol);
        for (int i = 0; i < 16; i++) ref[i] = wrap_to(dt, xs[i] * xe[i]);
        CT_EXPECT_CLOSE(ct_mul(sl, ex), ref, 16, rtol, atol);
        for (int i = 0; i < 12; i++) ref[i] = wrap_to(dt, xn[i] - xr[i]);
        CT_EXPECT_CLOSE(ct_sub(nr, row), ref, 12, rtol, atol);
        for (int i = 0; i < 16; i++) ref[i] = wrap_to(dt, fabs(xe[i]));
        CT_EXPECT_CLOSE(ct_abs(ex), ref, 16, rtol, atol);
        ct_dtype fdt = is_float(dt) ? dt : CT_FLOAT32;
        tolerances(fdt, &rtol, &atol);
        for (int i = 0; i < 12; i++) ref[i] = wrap_to(fdt, tanh(xn[i]));
        CT_EXPECT_CLOSE(ct_tanh(nr), ref, 12, rtol, atol);
        ct_tensor *cond = ct_gt(sl, ex);
        for (int i = 0; i < 16; i++) ref[i] = xs[i] > xe[i] ? xs[i] : xe[i];
        CT_EXPECT_CLOSE(ct_where(cond, sl, ex), ref, 16, 0, 0);
        ct_scope_end();
    }
}

static void test_empty_and_zero_dim(void) {
    CT_SCOPE {
        ct_tensor *e = ct_zeros(CT_SHAPE(0, 3)), *r = ct_ones(CT_SHAPE(1, 3));
        ct_tensor *y = ct_add(e, r);
        CT_EXPECT_SHAPE(y, CT_SHAPE(0, 3));
        CT_EXPECT_SHAPE(ct_exp(e), CT_SHAPE(0, 3));
        CT_EXPECT_SHAPE(ct_where(ct_zeros(CT_SHAPE(0, 1), .dtype = CT_BOOL), e, r), CT_SHAPE(0, 3));
        ct_tensor *s = ct_scalar_tensor(2.0), *t = ct_scalar_tensor(3.0);
        ct_tensor *p = ct_mul(s, t);
        CT_EXPECT(p && ct_ndim(p) == 0 && ct_item(p) == 6);
        CT_EXPECT(ct_item(ct_add(ct_full(CT_SHAPE(1), 1.5), ct_full(CT_SHAPE(1), 2.25))) == 3.75); /* W0 */
    }
}

/* NULL inputs give NULL and leave the stored error alone. */
static void test_unary_null_propagation(void) {
    ct_clear_error();
    for (int k = 0; k < N_UNARY; k++) CT_EXPECT(unary_cases[k].fn(NULL) == NULL);
    CT_EXPECT(ct_leaky_relu(NULL, 0.1) == NULL);
    CT_EXPECT(ct_clamp(NULL, 0, 1) == NULL);
    CT_EXPECT(ct_relu(ct_exp(NULL)) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    CT_EXPECT_STR_EQ(ct_last_error(), "");
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_unary_all_ops_all_dtypes);
    CT_RUN(test_unary_int_to_default_float64);
    CT_RUN(test_clamp_and_leaky_relu);
    CT_RUN(test_hardswish);
    CT_RUN(test_unary_special_values);
    CT_RUN(test_unary_tiny_arguments);
    CT_RUN(test_exp_float32_sweep);
    CT_RUN(test_unary_integer_edges);
    CT_RUN(test_views_as_inputs);
    CT_RUN(test_empty_and_zero_dim);
    CT_RUN(test_unary_null_propagation);
    return ct_test_finish();
}
