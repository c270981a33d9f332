/*
 * test_elementwise_binary.c — the binary elementwise ops of ctorch/ops.h on
 * the CPU (arithmetic, comparisons, logical ops, scalar variants), PyTorch's
 * type promotion, and where.
 *
 * Each op is checked against a float64 reference computed here from the
 * values actually stored, for every dtype, at random broadcast shapes with
 * contiguous and non-contiguous inputs; dtypes the op refuses must fail with
 * CT_ERR_DTYPE. Then the promotion table, special values, exact int64
 * arithmetic beyond 2^53, tensors large enough for OpenMP threads, and every
 * error path.
 */
#include "elementwise_testutil.h"
#include "core/tensor_impl.h" /* to fake a tensor on another device */

/* ==== binary ============================================================= */

typedef struct binary_case {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
    ct_binary_op op;
    domain da, db;
} binary_case;

static const binary_case binary_cases[] = {
    {"add", ct_add, CT_BIN_ADD, DOM_ANY, DOM_ANY},
    {"sub", ct_sub, CT_BIN_SUB, DOM_ANY, DOM_ANY},
    {"mul", ct_mul, CT_BIN_MUL, DOM_ANY, DOM_ANY},
    {"div", ct_div, CT_BIN_DIV, DOM_ANY, DOM_NONZERO},
    {"floor_divide", ct_floor_divide, CT_BIN_FLOOR_DIV, DOM_ANY, DOM_NONZERO},
    {"remainder", ct_remainder, CT_BIN_REMAINDER, DOM_ANY, DOM_NONZERO},
    {"pow", ct_pow, CT_BIN_POW, DOM_POW_BASE, DOM_POW_EXP},
    {"maximum", ct_maximum, CT_BIN_MAXIMUM, DOM_DISCRETE, DOM_DISCRETE},
    {"minimum", ct_minimum, CT_BIN_MINIMUM, DOM_DISCRETE, DOM_DISCRETE},
    {"atan2", ct_atan2, CT_BIN_ATAN2, DOM_ANY, DOM_ANY},
    {"eq", ct_eq, CT_BIN_EQ, DOM_DISCRETE, DOM_DISCRETE},
    {"ne", ct_ne, CT_BIN_NE, DOM_DISCRETE, DOM_DISCRETE},
    {"lt", ct_lt, CT_BIN_LT, DOM_DISCRETE, DOM_DISCRETE},
    {"le", ct_le, CT_BIN_LE, DOM_DISCRETE, DOM_DISCRETE},
    {"gt", ct_gt, CT_BIN_GT, DOM_DISCRETE, DOM_DISCRETE},
    {"ge", ct_ge, CT_BIN_GE, DOM_DISCRETE, DOM_DISCRETE},
    {"logical_and", ct_logical_and, CT_BIN_LOGICAL_AND, DOM_DISCRETE, DOM_DISCRETE},
    {"logical_or", ct_logical_or, CT_BIN_LOGICAL_OR, DOM_DISCRETE, DOM_DISCRETE},
    {"logical_xor", ct_logical_xor, CT_BIN_LOGICAL_XOR, DOM_DISCRETE, DOM_DISCRETE},
};
#define N_BINARY (int)(sizeof binary_cases / sizeof binary_cases[0])

static double ref_binary(ct_binary_op op, double x, double y, double alpha, bool integral) {
    switch (op) {
    case CT_BIN_ADD: return x + alpha * y;
    case CT_BIN_SUB: return x - alpha * y;
    case CT_BIN_MUL: return x * y;
    case CT_BIN_DIV: return x / y;
    case CT_BIN_FLOOR_DIV: return floor(x / y);
    case CT_BIN_REMAINDER: {
        double m = fmod(x, y);
        return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
    }
    case CT_BIN_POW:
        if (integral && y < 0) return x == 1 ? 1 : x == -1 ? (fmod(y, 2) != 0 ? -1 : 1) : 0;
        return pow(x, y);
    case CT_BIN_MAXIMUM: return isnan(x) || isnan(y) ? NAN : fmax(x, y);
    case CT_BIN_MINIMUM: return isnan(x) || isnan(y) ? NAN : fmin(x, y);
    case CT_BIN_ATAN2: return atan2(x, y);
    case CT_BIN_EQ: return x == y;
    case CT_BIN_NE: return x != y;
    case CT_BIN_LT: return x < y;
    case CT_BIN_LE: return x <= y;
    case CT_BIN_GT: return x > y;
    case CT_BIN_GE: return x >= y;
    case CT_BIN_LOGICAL_AND: return (x != 0) && (y != 0);
    case CT_BIN_LOGICAL_OR: return (x != 0) || (y != 0);
    case CT_BIN_LOGICAL_XOR: return (x != 0) != (y != 0);
    default: return NAN;
    }
}

/* Output dtype for two operands of dtype dt, or CT_DTYPE_DEFAULT if refused. */
static ct_dtype expected_binary_dtype(ct_binary_op op, ct_dtype dt) {
    if (op >= CT_BIN_EQ) return CT_BOOL;
    if ((op == CT_BIN_DIV || op == CT_BIN_ATAN2) && !is_float(dt)) return ct_get_default_dtype();
    if (dt == CT_BOOL && (op == CT_BIN_SUB || op == CT_BIN_FLOOR_DIV || op == CT_BIN_REMAINDER || op == CT_BIN_POW))
        return CT_DTYPE_DEFAULT;
    return dt;
}

static void check_binary_once(const binary_case *c, ct_dtype dt, bool noncontig) {
    ct_shape so = random_shape(4);
    ct_shape sa = broadcastable_from(so), sb = broadcastable_from(so);
    ct_shape s = broadcast2(sa, sb);
    int64_t n = shape_numel(s), na = shape_numel(sa), nb = shape_numel(sb);
    double *va = draw_array(c->da, dt, na), *vb = draw_array(c->db, dt, nb), *xa, *xb;
    ct_scope_begin();
    ct_tensor *a = make_input(va, sa, dt, noncontig, &xa);
    ct_tensor *b = make_input(vb, sb, dt, noncontig, &xb);
    ct_tensor *y = c->fn(a, b);
    ct_dtype want = expected_binary_dtype(c->op, dt);
    if (want == CT_DTYPE_DEFAULT) {
        CT_EXPECT_MSG(y == NULL, "%s(%s) should be refused", c->name, ct_dtype_name(dt));
        CT_EXPECT_ERROR(CT_ERR_DTYPE, c->op == CT_BIN_SUB ? "Subtraction" : c->name);
    } else if (CT_EXPECT_SHAPE(y, s)) {
        CT_EXPECT_MSG(ct_dtype_of(y) == want, "%s(%s) gave %s, expected %s", c->name, ct_dtype_name(dt),
                      ct_dtype_name(ct_dtype_of(y)), ct_dtype_name(want));
        double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++)
            ref[i] = wrap_to(want, ref_binary(c->op, xa[bcast_index(i, s, sa)], xb[bcast_index(i, s, sb)], 1.0,
                                              !is_float(dt)));
        double rtol, atol;
        tolerances(want, &rtol, &atol);
        if (!ct_test_close(__FILE__, __LINE__, c->name, y, ref, n, rtol, atol))
            fprintf(stderr, "  (op %s, dtype %s, %s)\n", c->name, ct_dtype_name(dt),
                    noncontig ? "non-contiguous" : "contiguous");
        free(ref);
    }
    ct_scope_end();
    free(va);
    free(vb);
    free(xa);
    free(xb);
}

static void test_binary_all_ops_all_dtypes(void) {
    for (int k = 0; k < N_BINARY; k++)
        for (int d = 0; d < 8; d++)
            for (int rep = 0; rep < 4; rep++) check_binary_once(&binary_cases[k], all_dtypes[d], rep >= 2);
}

/* Every public scalar variant against the tensor op with a 0-dim operand. */
static void test_binary_scalar_variants(void) {
    const ct_dtype dts[3] = {CT_FLOAT32, CT_INT32, CT_FLOAT16};
    for (int d = 0; d < 3; d++) {
        ct_dtype dt = dts[d];
        double vals[12], *x;
        for (int i = 0; i < 12; i++) vals[i] = draw(DOM_POW_BASE, dt);
        ct_scope_begin();
        ct_tensor *a = make_input(vals, CT_SHAPE(3, 4), dt, true, &x);
        const double s = 2;
        struct { ct_tensor *got; ct_binary_op op; bool flip; } r[] = {
            {ct_add_scalar(a, s), CT_BIN_ADD, false}, {ct_sub_scalar(a, s), CT_BIN_SUB, false},
            {ct_mul_scalar(a, s), CT_BIN_MUL, false}, {ct_div_scalar(a, s), CT_BIN_DIV, false},
            {ct_pow_scalar(a, s), CT_BIN_POW, false}, {ct_rsub_scalar(a, s), CT_BIN_SUB, true},
            {ct_eq_scalar(a, s), CT_BIN_EQ, false},   {ct_ne_scalar(a, s), CT_BIN_NE, false},
            {ct_lt_scalar(a, s), CT_BIN_LT, false},   {ct_le_scalar(a, s), CT_BIN_LE, false},
            {ct_gt_scalar(a, s), CT_BIN_GT, false},   {ct_ge_scalar(a, s), CT_BIN_GE, false},
        };
        for (size_t k = 0; k < sizeof r / sizeof r[0]; k++) {
            ct_dtype want = expected_binary_dtype(r[k].op, dt); /* a whole scalar keeps the dtype */
            CT_EXPECT_MSG(ct_dtype_of(r[k].got) == want, "scalar op %zu on %s gave %s", k, ct_dtype_name(dt),
                          ct_dtype_name(ct_dtype_of(r[k].got)));
            double ref[12], rtol, atol;
            for (int i = 0; i < 12; i++)
                ref[i] = wrap_to(want, r[k].flip ? ref_binary(r[k].op, s, x[i], 1, false)
                                                 : ref_binary(r[k].op, x[i], s, 1, false));
            tolerances(want, &rtol, &atol);
            CT_EXPECT_CLOSE(r[k].got, ref, 12, rtol, atol);
        }
        /* a fractional scalar: int tensors become the default float dtype */
        ct_tensor *h = ct_mul_scalar(a, 0.5);
        CT_EXPECT(ct_dtype_of(h) == (is_float(dt) ? dt : CT_FLOAT32));
        double ref[12], rtol, atol;
        for (int i = 0; i < 12; i++) ref[i] = x[i] * 0.5;
        tolerances(ct_dtype_of(h), &rtol, &atol);
        CT_EXPECT_CLOSE(h, ref, 12, rtol, atol);
        ct_scope_end();
        free(x);
    }
}

static void test_add_scaled(void) {
    double va[6] = {1, 2, 3, 4, 5, 6}, vb[3] = {10, -20, 30};
    CT_SCOPE {
        ct_tensor *a = ct_test_tensor(va, CT_SHAPE(2, 3), CT_FLOAT32);
        ct_tensor *b = ct_test_tensor(vb, CT_SHAPE(3), CT_FLOAT32);
        double ref[6];
        for (int i = 0; i < 6; i++) ref[i] = va[i] + 0.5 * vb[i % 3];
        CT_EXPECT_CLOSE(ct_add_scaled(a, b, 0.5), ref, 6, 1.3e-6, 1e-5);
        ct_tensor *ai = ct_test_tensor(va, CT_SHAPE(2, 3), CT_INT64);
        ct_tensor *bi = ct_test_tensor(vb, CT_SHAPE(3), CT_INT64);
        for (int i = 0; i < 6; i++) ref[i] = va[i] - 3 * vb[i % 3];
        CT_EXPECT_CLOSE(ct_add_scaled(ai, bi, -3), ref, 6, 0, 0);
        /* integer tensors refuse a fractional alpha, as torch.add */
        CT_EXPECT(ct_add_scaled(ai, bi, 0.5) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "alpha must not be a floating point number");
    }
}

/* ==== type promotion ===================================================== */

static void expect_binary_dtype(ct_dtype da, ct_shape sa, ct_dtype db, ct_shape sb, ct_dtype want,
                                ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *), int line) {
    ct_scope_begin();
    ct_tensor *a = ct_ones(sa, .dtype = da), *b = ct_ones(sb, .dtype = db);
    ct_tensor *y = fn(a, b);
    if (!y || ct_dtype_of(y) != want)
        ct_test_fail(__FILE__, line, "%s with %s gave %s, expected %s (%s)", ct_dtype_name(da), ct_dtype_name(db),
                     y ? ct_dtype_name(ct_dtype_of(y)) : "NULL", ct_dtype_name(want), ct_last_error());
    ct_scope_end();
}
#define EXPECT_PROMOTION(da, sa, db, sb, want, fn) expect_binary_dtype(da, sa, db, sb, want, fn, __LINE__)

static void test_type_promotion(void) {
    ct_shape v = CT_SHAPE(3);
    EXPECT_PROMOTION(CT_INT32, v, CT_FLOAT32, v, CT_FLOAT32, ct_add);
    EXPECT_PROMOTION(CT_FLOAT16, v, CT_BFLOAT16, v, CT_FLOAT32, ct_add);
    EXPECT_PROMOTION(CT_UINT8, v, CT_BOOL, v, CT_UINT8, ct_add);
    EXPECT_PROMOTION(CT_INT32, v, CT_INT64, v, CT_INT64, ct_mul);
    EXPECT_PROMOTION(CT_UINT8, v, CT_INT32, v, CT_INT32, ct_add);
    EXPECT_PROMOTION(CT_FLOAT32, v, CT_FLOAT64, CT_SHAPE0, CT_FLOAT32, ct_add); /* 0-dim does not win */
    EXPECT_PROMOTION(CT_INT32, v, CT_FLOAT64, CT_SHAPE0, CT_FLOAT64, ct_add);   /* but raises the category */
    EXPECT_PROMOTION(CT_FLOAT64, CT_SHAPE0, CT_FLOAT16, CT_SHAPE0, CT_FLOAT64, ct_add);
    EXPECT_PROMOTION(CT_INT32, v, CT_INT32, v, CT_FLOAT32, ct_div);            /* int / int -> float32 */
    EXPECT_PROMOTION(CT_BOOL, v, CT_BOOL, v, CT_FLOAT32, ct_div);
    EXPECT_PROMOTION(CT_INT64, v, CT_INT64, v, CT_INT64, ct_pow);              /* int ** int stays int */
    EXPECT_PROMOTION(CT_INT64, v, CT_INT64, v, CT_INT64, ct_floor_divide);
    EXPECT_PROMOTION(CT_INT32, v, CT_FLOAT64, v, CT_BOOL, ct_lt);
    EXPECT_PROMOTION(CT_FLOAT16, v, CT_INT64, v, CT_BOOL, ct_logical_and);
    EXPECT_PROMOTION(CT_BOOL, v, CT_BOOL, v, CT_BOOL, ct_add);
    EXPECT_PROMOTION(CT_INT32, v, CT_UINT8, v, CT_FLOAT32, ct_atan2);

    CT_SCOPE {
        /* int64 tensor + float scalar -> float32; + whole scalar stays int64 */
        ct_tensor *i = ct_arange(0, 4, 1);
        CT_EXPECT(ct_dtype_of(i) == CT_INT64);
        ct_tensor *f = ct_add_scalar(i, 0.5);
        CT_EXPECT(ct_dtype_of(f) == CT_FLOAT32);
        double ref[4] = {0.5, 1.5, 2.5, 3.5};
        CT_EXPECT_CLOSE(f, ref, 4, 0, 0);
        CT_EXPECT(ct_dtype_of(ct_add_scalar(i, 2)) == CT_INT64);
        CT_EXPECT(ct_dtype_of(ct_add_scalar(i, INFINITY)) == CT_FLOAT32);
        /* bool tensor + int scalar -> int64; float16 tensor * float scalar stays float16 */
        ct_tensor *bl = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
        CT_EXPECT(ct_dtype_of(ct_add_scalar(bl, 1)) == CT_INT64);
        CT_EXPECT(ct_dtype_of(ct_mul_scalar(ct_ones(CT_SHAPE(2), .dtype = CT_FLOAT16), 0.1)) == CT_FLOAT16);
        /* int tensor ** fractional -> float; int / whole scalar -> float (true division) */
        CT_EXPECT(ct_dtype_of(ct_pow_scalar(i, 0.5)) == CT_FLOAT32);
        ct_tensor *q = ct_div_scalar(i, 2);
        double rq[4] = {0, 0.5, 1, 1.5};
        CT_EXPECT(ct_dtype_of(q) == CT_FLOAT32);
        CT_EXPECT_CLOSE(q, rq, 4, 0, 0);
        /* with float64 as the default, int / int gives float64 */
        ct_set_default_dtype(CT_FLOAT64);
        CT_EXPECT(ct_dtype_of(ct_div(i, i)) == CT_FLOAT64);
        CT_EXPECT(ct_dtype_of(ct_add_scalar(i, 0.5)) == CT_FLOAT64);
        ct_set_default_dtype(CT_FLOAT32);
        /* mixed dtypes compute in the promoted dtype: int32 + float32 keeps fractions */
        double va[3] = {1, 2, 3}, vb[3] = {0.25, 0.5, -0.75};
        ct_tensor *m = ct_add(ct_test_tensor(va, CT_SHAPE(3), CT_INT32), ct_test_tensor(vb, CT_SHAPE(3), CT_FLOAT32));
        double rm[3] = {1.25, 2.5, 2.25};
        CT_EXPECT_CLOSE(m, rm, 3, 0, 0);
        /* comparisons compute in the promoted dtype: 2 (int) < 2.5 (float) */
        double v25 = 2.5, v2 = 2;
        ct_tensor *lt = ct_lt(ct_test_tensor(&v2, CT_SHAPE(1), CT_INT32), ct_test_tensor(&v25, CT_SHAPE(1), CT_FLOAT32));
        CT_EXPECT(ct_dtype_of(lt) == CT_BOOL && ct_item(lt) == 1);
        CT_EXPECT(ct_item(ct_eq_scalar(ct_test_tensor(&v2, CT_SHAPE(1), CT_INT32), 2.5)) == 0);
    }
}

/* ==== special values and exactness ======================================= */

static void test_binary_special_values(void) {
    CT_SCOPE {
        double a[] = {1, -1, 0, -0.0, NAN, INFINITY, 5, -5, 5, -5, 7.5};
        double b[] = {0, 0, 0, 1, 1, 2, 3, 3, -3, -3, 2};
        ct_tensor *ta = ct_test_tensor(a, CT_SHAPE(11), CT_FLOAT64), *tb = ct_test_tensor(b, CT_SHAPE(11), CT_FLOAT64);
        double *d = ct_test_values(ct_div(ta, tb));
        CT_EXPECT(d[0] == INFINITY && d[1] == -INFINITY && isnan(d[2]) && d[3] == 0 && signbit(d[3]));
        free(d);
        double *fd = ct_test_values(ct_floor_divide(ta, tb)), *rm = ct_test_values(ct_remainder(ta, tb));
        CT_EXPECT(fd[0] == INFINITY && fd[6] == 1 && fd[7] == -2 && fd[8] == -2 && fd[9] == 1 && fd[10] == 3);
        CT_EXPECT(rm[6] == 2 && rm[7] == 1 && rm[8] == -1 && rm[9] == -2 && rm[10] == 1.5);
        free(fd);
        free(rm);
        /* maximum/minimum propagate NaN */
        double *mx = ct_test_values(ct_maximum(ta, tb)), *mn = ct_test_values(ct_minimum(tb, ta));
        CT_EXPECT(isnan(mx[4]) && isnan(mn[4]) && mx[5] == INFINITY && mn[5] == 2);
        free(mx);
        free(mn);
        /* NaN compares unequal to itself and is "true" for logical ops */
        double *eq = ct_test_values(ct_eq(ta, ta)), *ne = ct_test_values(ct_ne(ta, ta)),
               *la = ct_test_values(ct_logical_and(ta, ta));
        CT_EXPECT(eq[4] == 0 && ne[4] == 1 && eq[3] == 1 && la[4] == 1 && la[2] == 0);
        free(eq);
        free(ne);
        free(la);
        /* float32 math: 1/3 rounded to float, (0.1f + 0.2f) in float */
        ct_tensor *f = ct_full(CT_SHAPE(1), 1.0), *g = ct_full(CT_SHAPE(1), 3.0);
        CT_EXPECT(ct_item(ct_div(f, g)) == (double)(1.0f / 3.0f));
        /* pow with a broadcast exponent of 2 or 0.5 */
        double pv[3] = {-3, 0.25, 9};
        ct_tensor *p = ct_test_tensor(pv, CT_SHAPE(3), CT_FLOAT32);
        double r2[3] = {9, 0.0625, 81}, r05[3] = {NAN, 0.5, 3};
        CT_EXPECT_CLOSE(ct_pow_scalar(p, 2), r2, 3, 0, 0);
        CT_EXPECT_CLOSE(ct_pow_scalar(p, 0.5), r05, 3, 0, 0);
    }
}

static void test_integer_exactness(void) {
    CT_SCOPE {
        const int64_t big = ((int64_t)1 << 53) + 1;
        int64_t va[5] = {big, INT64_MAX, -7, 7, INT64_MIN}, vb[5] = {1, 1, 2, -2, -1}, out[5];
        ct_tensor *a = ct_tensor_from(va, CT_INT64, CT_SHAPE(5)), *b = ct_tensor_from(vb, CT_INT64, CT_SHAPE(5));
        ct_copy_to_host(ct_add(a, b), out, CT_INT64, 5);
        CT_EXPECT(out[0] == big + 1 && out[1] == INT64_MIN && out[2] == -5); /* exact; overflow wraps */
        ct_copy_to_host(ct_mul(a, b), out, CT_INT64, 5);
        CT_EXPECT(out[0] == big && out[2] == -14 && out[4] == INT64_MIN);
        ct_copy_to_host(ct_floor_divide(a, b), out, CT_INT64, 5);
        CT_EXPECT(out[0] == big && out[2] == -4 && out[3] == -4 && out[4] == INT64_MIN);
        ct_copy_to_host(ct_remainder(a, b), out, CT_INT64, 5);
        CT_EXPECT(out[2] == 1 && out[3] == -1 && out[4] == 0);
        ct_copy_to_host(ct_sub_scalar(a, 1), out, CT_INT64, 5);
        CT_EXPECT(out[0] == big - 1);
        /* 2^53 + 1 == 2^53 would be true through double */
        CT_EXPECT(ct_item(ct_eq_scalar(ct_select(a, 0, 0), (double)(big - 1))) == 0);
        int64_t eqv[2] = {big, big - 1};
        ct_tensor *e = ct_tensor_from(eqv, CT_INT64, CT_SHAPE(2));
        CT_EXPECT(ct_item(ct_eq(ct_select(e, 0, 0), ct_select(e, 0, 1))) == 0); /* not via double */
        /* int pow: negative exponents give 0 except for bases 1 and -1 */
        int64_t pb[4] = {2, 1, -1, -1}, pe[4] = {-1, -5, -3, -4};
        ct_copy_to_host(ct_pow(ct_tensor_from(pb, CT_INT64, CT_SHAPE(4)), ct_tensor_from(pe, CT_INT64, CT_SHAPE(4))),
                        out, CT_INT64, 4);
        CT_EXPECT(out[0] == 0 && out[1] == 1 && out[2] == -1 && out[3] == 1);
        /* uint8 arithmetic wraps */
        uint8_t u[2] = {3, 250}, w[2] = {5, 10}, uo[2];
        ct_tensor *ua = ct_tensor_from(u, CT_UINT8, CT_SHAPE(2)), *ub = ct_tensor_from(w, CT_UINT8, CT_SHAPE(2));
        ct_copy_to_host(ct_sub(ua, ub), uo, CT_UINT8, 2);
        CT_EXPECT(uo[0] == 254 && uo[1] == 240);
        ct_copy_to_host(ct_add(ua, ub), uo, CT_UINT8, 2);
        CT_EXPECT(uo[1] == 4);
    }
}

/* ==== where ============================================================== */

static void test_where(void) {
    for (int rep = 0; rep < 12; rep++) {
        ct_shape so = random_shape(3);
        ct_shape sc = broadcastable_from(so), sa = broadcastable_from(so), sb = broadcastable_from(so);
        ct_shape s = broadcast2(broadcast2(sc, sa), sb);
        const ct_dtype da = rep % 2 ? CT_INT32 : CT_FLOAT16, db = rep % 3 ? CT_FLOAT32 : CT_INT32;
        const ct_dtype want = result_type(da, sa.ndim, db, sb.ndim);
        int64_t n = shape_numel(s);
        double *vc = draw_array(DOM_ANY, CT_BOOL, shape_numel(sc)), *va = draw_array(DOM_ANY, da, shape_numel(sa));
        double *vb = draw_array(DOM_ANY, db, shape_numel(sb)), *xc, *xa, *xb;
        ct_scope_begin();
        ct_tensor *c = make_input(vc, sc, CT_BOOL, rep % 4 == 1, &xc);
        ct_tensor *a = make_input(va, sa, da, rep % 4 == 2, &xa);
        ct_tensor *b = make_input(vb, sb, db, rep % 4 == 3, &xb);
        ct_tensor *y = ct_where(c, a, b);
        if (CT_EXPECT_SHAPE(y, s)) {
            CT_EXPECT_MSG(ct_dtype_of(y) == want, "where(%s, %s) gave %s", ct_dtype_name(da), ct_dtype_name(db),
                          ct_dtype_name(ct_dtype_of(y)));
            double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
            for (int64_t i = 0; i < n; i++)
                ref[i] = xc[bcast_index(i, s, sc)] ? xa[bcast_index(i, s, sa)] : xb[bcast_index(i, s, sb)];
            double rtol, atol;
            tolerances(want, &rtol, &atol);
            CT_EXPECT_CLOSE(y, ref, n, rtol, atol);
            free(ref);
        }
        ct_scope_end();
        free(vc), free(va), free(vb), free(xc), free(xa), free(xb);
    }
    /* raw bits move: NaN and -0 survive */
    CT_SCOPE {
        double v[2] = {NAN, -0.0}, z[2] = {1, 1};
        ct_tensor *cnd = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
        double *got = ct_test_values(ct_where(cnd, ct_test_tensor(v, CT_SHAPE(2), CT_FLOAT64),
                                              ct_test_tensor(z, CT_SHAPE(2), CT_FLOAT64)));
        CT_EXPECT(isnan(got[0]) && got[1] == 0 && signbit(got[1]));
        free(got);
    }
}

/* ==== large tensors: OpenMP paths ======================================== */

static void test_large_tensors_threads(void) {
    const ct_shape s = CT_SHAPE(257, 263); /* above CT_CPU_GRAIN */
    const int64_t n = 257 * 263;
    const ct_dtype dts[3] = {CT_FLOAT32, CT_FLOAT16, CT_INT32};
    for (int d = 0; d < 3; d++) {
        double *va = draw_array(DOM_ANY, dts[d], n), *vb = draw_array(DOM_NONZERO, dts[d], n), *xa, *xb;
        ct_scope_begin();
        for (int nc = 0; nc < 2; nc++) {
            ct_tensor *a = make_input(va, s, dts[d], nc, &xa);
            ct_tensor *b = make_input(vb, s, dts[d], !nc, &xb);
            double *ref = malloc(sizeof(double) * (size_t)n), rtol, atol;
            tolerances(dts[d], &rtol, &atol);
            for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(dts[d], xa[i] * xb[i]);
            CT_EXPECT_CLOSE(ct_mul(a, b), ref, n, rtol, atol);
            for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(dts[d], xa[i] + 3);
            CT_EXPECT_CLOSE(ct_add_scalar(a, 3), ref, n, rtol, atol);
            for (int64_t i = 0; i < n; i++) ref[i] = wrap_to(dts[d], xa[i] > 0 ? xa[i] : 0);
            CT_EXPECT_CLOSE(ct_relu(a), ref, n, rtol, atol);
            if (is_float(dts[d])) {
                for (int64_t i = 0; i < n; i++) ref[i] = exp(xa[i]);
                CT_EXPECT_CLOSE(ct_exp(a), ref, n, rtol, atol);
            }
            free(ref), free(xa), free(xb);
        }
        ct_scope_end();
        free(va), free(vb);
    }
    /* integer division by zero found by a worker thread is still reported */
    CT_SCOPE {
        ct_tensor *a = ct_ones(s, .dtype = CT_INT64), *b = ct_ones(s, .dtype = CT_INT64);
        ct_tensor *z = ct_zeros(CT_SHAPE(1), .dtype = CT_INT64);
        ct_copy_(ct_narrow(ct_select(b, 0, 200), 0, 100, 1), z);
        CT_EXPECT(ct_floor_divide(a, b) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ZeroDivisionError");
    }
}

/* ==== errors ============================================================= */

static void test_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(2, 4));
        CT_EXPECT(ct_add(a, b) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
        CT_EXPECT(ct_lt(a, b) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "lt: The size of tensor a (3)");
        CT_EXPECT(ct_where(ct_ones(CT_SHAPE(5), .dtype = CT_BOOL), a, a) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "where: The size of tensor a (5) must match the size of tensor b (3)");
        CT_EXPECT(ct_where(a, a, a) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "expected condition to be a boolean tensor, but got a tensor with dtype float32");

        ct_tensor *bl = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
        CT_EXPECT(ct_neg(bl) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Negation, the `-` operator, on a bool tensor is not supported.");
        CT_EXPECT(ct_sub(bl, bl) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "with two bool tensors is not supported");
        CT_EXPECT(ct_rsub_scalar(bl, 1) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "with a bool tensor is not supported");
        CT_EXPECT(ct_relu(bl) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Boolean inputs not supported for relu");
        CT_EXPECT(ct_pow(bl, bl) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "pow: \"pow\" not implemented for 'bool'");
        CT_EXPECT(ct_leaky_relu(ct_ones(CT_SHAPE(2), .dtype = CT_INT32), 0.1) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "not implemented for 'int32'");
        CT_EXPECT(ct_clamp(a, NAN, NAN) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "At least one of 'min' or 'max' must not be None");
        ct_tensor *ia = ct_ones(CT_SHAPE(3), .dtype = CT_INT32);
        CT_EXPECT(ct_pow_scalar(ia, -1) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Integers to negative integer powers are not allowed.");

        /* integer division by zero is an error, not a crash (float gives inf) */
        ct_tensor *iz = ct_zeros(CT_SHAPE(3), .dtype = CT_INT32);
        CT_EXPECT(ct_floor_divide(ia, iz) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "floor_divide: ZeroDivisionError");
        CT_EXPECT(ct_remainder(ct_ones(CT_SHAPE(3), .dtype = CT_UINT8), ct_zeros(CT_SHAPE(1), .dtype = CT_UINT8)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "remainder: ZeroDivisionError");
        CT_EXPECT(ct_isinf(ct_div(ia, iz)) != NULL); /* true division: inf */
        CT_EXPECT(ct_last_status() == CT_OK);

        /* device mismatch: fake a second device on one tensor's storage */
        ct_tensor *other = ct_ones(CT_SHAPE(2, 3));
        other->storage->device.type = CT_DEVICE_CUDA;
        CT_EXPECT(ct_add(a, other) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "add: Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!");
        CT_EXPECT(ct_where(ct_ones(CT_SHAPE(2, 3), .dtype = CT_BOOL), a, other) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "where: Expected all tensors to be on the same device");
        other->storage->device.type = CT_DEVICE_CPU;
    }
}

/* NULL inputs give NULL and leave the stored error alone. */
static void test_binary_null_propagation(void) {
    ct_tensor *one = ct_ones(CT_SHAPE(2));
    ct_clear_error();
    for (int k = 0; k < N_BINARY; k++) {
        CT_EXPECT(binary_cases[k].fn(NULL, one) == NULL);
        CT_EXPECT(binary_cases[k].fn(one, NULL) == NULL);
    }
    CT_EXPECT(ct_add_scaled(NULL, one, 2) == NULL);
    ct_tensor *(*scalar_fns[])(const ct_tensor *, double) = {
        ct_add_scalar, ct_sub_scalar, ct_mul_scalar, ct_div_scalar, ct_pow_scalar, ct_rsub_scalar,
        ct_eq_scalar, ct_ne_scalar, ct_lt_scalar, ct_le_scalar, ct_gt_scalar, ct_ge_scalar};
    for (size_t k = 0; k < sizeof scalar_fns / sizeof scalar_fns[0]; k++) CT_EXPECT(scalar_fns[k](NULL, 1) == NULL);
    CT_EXPECT(ct_where(NULL, one, one) == NULL);
    CT_EXPECT(ct_where(one, NULL, one) == NULL);
    CT_EXPECT(ct_where(one, one, NULL) == NULL);
    CT_EXPECT(ct_relu(ct_add(one, NULL)) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    CT_EXPECT_STR_EQ(ct_last_error(), "");
    ct_release(one);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_binary_all_ops_all_dtypes);
    CT_RUN(test_binary_scalar_variants);
    CT_RUN(test_add_scaled);
    CT_RUN(test_type_promotion);
    CT_RUN(test_binary_special_values);
    CT_RUN(test_integer_exactness);
    CT_RUN(test_where);
    CT_RUN(test_large_tensors_threads);
    CT_RUN(test_errors);
    CT_RUN(test_binary_null_propagation);
    return ct_test_finish();
}
