/*
 * backend_ops_pointwise.c — the elementwise rows of the cross-backend
 * harness: every unary op, every binary op (broadcasting, mixed dtypes,
 * alpha), the scalar forms and where, on each device against the CPU.
 * Included by tests/test_backend_ops.c (after backend_ops_compare.c, before
 * its table, whose rows are made from the .def lines and BO_POINTWISE_CASES);
 * not a test of its own.
 *
 * Inputs have every shape of variant_shape (0-dim to 100,000+ elements) and
 * every layout, with NaN/±inf/±0 in half the variants. Results are compared
 * per element within a few ulps, with the sign of zero: IEEE arithmetic and
 * C's math functions define it (neg(0) = -0, x * -1, trunc(-0.3) = -0…) and
 * PyTorch follows them.
 */
#include "core/backend.h" /* the op enums: one row per op value */

/* ct_<fn> of every unary op whose function is made from its .def line; the
 * ones with parameters (api HAND) are called in run_unary. */
typedef ct_tensor *(*unary_fn)(const ct_tensor *);
#define BO_UNARY_FN_API(fn) ct_##fn
#define BO_UNARY_FN_HAND(fn) NULL
static const unary_fn g_unary_fns[CT_UN_COUNT_] = {
#define CT_UNARY_OP(code, fn, name, node, api, flags) [CT_UN_##code] = BO_UNARY_FN_##api(fn),
#include "kernels/unary_ops.def"
#undef CT_UNARY_OP
};

static void run_unary(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                      ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    describe(desc, dn, "x", s, l);
    if (c->op == CT_UN_CLAMP) {
        static const double bounds[][2] = {{-1, 1}, {NAN, 0.5}, {-0.5, NAN}, {2, -2}};
        const double *b = bounds[v % 4];
        out[0] = ct_clamp(x, b[0], b[1]);
        snprintf(desc + strlen(desc), dn - strlen(desc), ", clamp(%g, %g)", b[0], b[1]);
        return;
    }
    out[0] = c->op == CT_UN_LEAKY_RELU ? ct_leaky_relu(x, 0.2) : g_unary_fns[c->op](x);
}

typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);
static const binary_fn g_binary_fns[CT_BIN_COUNT_] = {
#define CT_BINARY_OP(code, fn, name, node, flags) [CT_BIN_##code] = ct_##fn,
#include "kernels/binary_ops.def"
#undef CT_BINARY_OP
};

/* Divisors of integer divisions avoid 0, except in every fourth variant,
 * which checks that the device reports the division by zero as the CPU. */
static bo_range divisor_range(const bo_case *c, int v) {
    bool division = (ct_binary_facts_of((ct_binary_op)c->op)->flags & CT_OPF_INT_DIVISION) != 0;
    return division && v % 4 != 3 ? BO_NONZERO : vrange(c->range, v);
}

/* p0 != 0: a second operand of another dtype (type promotion on the device);
 * rows with op -1 are add with alpha p0. */
static void run_binary(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout la;
    variant_shape(v, r, &s, &la);
    int pattern = v % 5;
    ct_shape sb = broadcast_partner(s, pattern == 4 ? 1 : pattern, r);
    bo_layout lb = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_dtype dtb = dt;
    if (c->op != -1 && c->p0 != 0) dtb = g_dtypes[(v + 3) % BO_NDTYPES];
    ct_tensor *a = bo_input(r, pattern == 4 ? sb : s, dt, vrange(c->range, v),
                            pattern == 4 ? lb : la, dev);
    ct_tensor *b = bo_input(r, pattern == 4 ? s : sb, dtb, divisor_range(c, v),
                            pattern == 4 ? la : lb, dev);
    describe(desc, dn, "a", pattern == 4 ? sb : s, pattern == 4 ? lb : la);
    describe(desc, dn, "b", pattern == 4 ? s : sb, pattern == 4 ? la : lb);
    if (dtb != dt) snprintf(desc + strlen(desc), dn - strlen(desc), " (%s)", ct_dtype_name(dtb));
    out[0] = c->op == -1 ? ct_add_scaled(a, b, c->p0) : g_binary_fns[c->op](a, b);
}

typedef ct_tensor *(*scalar_fn)(const ct_tensor *, double);
static scalar_fn scalar_function(int k) {
    static const scalar_fn fns[] = {ct_add_scalar, ct_sub_scalar, ct_mul_scalar, ct_div_scalar,
                                    ct_pow_scalar, ct_rsub_scalar, ct_eq_scalar,  ct_lt_scalar,
                                    ct_ge_scalar};
    return fns[k];
}

/* The scalar cycles through values that matter (pow's 2 and 0.5 shortcuts,
 * -1: the sign of zero). */
static void run_scalar(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    static const double scalars[] = {2.0, 0.5, -1.5, 3.0, 0.0, 1.0, -1.0};
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    double k = scalars[v % 7];
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", scalar %g", k);
    out[0] = scalar_function(c->op)(x, k);
}

static void run_where(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                      ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_shape sa = broadcast_partner(s, v % 4, r), sb = broadcast_partner(s, (v + 1) % 4, r);
    bo_layout la = (bo_layout)bo_int(r, 0, BO_LAYOUTS_), lb = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *cond = bo_input(r, s, CT_BOOL, BO_DEFAULT, l, dev);
    ct_tensor *a = bo_input(r, sa, dt, vrange(c->range, v), la, dev);
    ct_tensor *b = bo_input(r, sb, dt, vrange(c->range, v), lb, dev);
    describe(desc, dn, "cond", s, l);
    describe(desc, dn, "a", sa, la);
    describe(desc, dn, "b", sb, lb);
    out[0] = ct_where(cond, a, b);
}

/* In-place ops and out= forms write into a view of a larger base, and the
 * whole base is compared: a write outside the view, or one missing inside
 * it, shows. op: 0 add_, 1 sub_, 2 mul_, 3 div_, 4 add_(alpha 2.5),
 * 5 add_scalar_(2), 6 mul_scalar_(3), 7 relu_, 8 clamp_(-1, 1), 9 add_out,
 * 10 mul_out. The other operand broadcasts to the view's shape. */
static void run_inplace(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                        ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *base, *self = view_target(r, s, &l, dt, vrange(c->range, v), dev, &base);
    ct_shape sb = broadcast_partner(s, v % 4, r);
    bo_layout lb = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *other = bo_input(r, sb, dt, vrange(c->range, v), lb, dev);
    ct_tensor *a = c->op >= 9 ? bo_input(r, s, dt, vrange(c->range, v), BO_CONTIGUOUS, dev) : NULL;
    describe(desc, dn, "self", s, l);
    describe(desc, dn, "other", sb, lb);
    ct_status st;
    switch (c->op) {
    case 0: st = ct_add_(self, other); break;
    case 1: st = ct_sub_(self, other); break;
    case 2: st = ct_mul_(self, other); break;
    case 3: st = ct_div_(self, other); break;
    case 4: st = ct_add_scaled_(self, other, 2.5); break;
    case 5: st = ct_add_scalar_(self, 2); break;
    case 6: st = ct_mul_scalar_(self, 3); break;
    case 7: st = ct_relu_(self); break;
    case 8: st = ct_clamp_(self, -1, 1); break;
    case 9: st = ct_add_out(self, a, other); break;
    default: st = ct_mul_out(self, a, other); break;
    }
    if (st == CT_OK) out[0] = base;
}

/* ---- reductions, softmax ----------------------------------------------------------------- */

/* Integer floor_divide/remainder by zero is an error (PyTorch's
 * ZeroDivisionError); every fourth variant lets divisors be 0 to check that
 * the device reports it as the cpu. */
static bool division_by_zero(const bo_case *c, ct_dtype dt, int v) {
    return !ct_dtype_is_floating(dt) && v % 4 == 3;
}

/* Integers to a negative integer power is an error (PyTorch's "Integers to
 * negative integer powers are not allowed"): pow_scalar's -1. */
static bool negative_integer_power(const bo_case *c, ct_dtype dt, int v) {
    return !ct_dtype_is_floating(dt) && v % 7 == 6;
}

/* The rows of the elementwise ops, made from their .def lines (the
 * BO_UNARY_ROWS / BO_BINARY_ROWS includes of test_backend_ops.c), so a new
 * op is covered without a row of its own. From the flags: the dtypes
 * (bool refused: no bool; neither a floating function nor integer kernels:
 * floats only), the inputs (positive, tame), and whether either sign of a
 * zero result is right (ops that pick between equal values: of -0 and +0
 * either may be returned; IEEE leaves fmax/fmin's choice open). */
#define BO_OPF_DTYPES(f)                                                                            \
    ((f) & CT_OPF_NO_BOOL ? BO_DT_NOBOOL                                                            \
                          : ((f) & (CT_OPF_FLOATING | CT_OPF_INT_KERNEL)) ? BO_DT_ALL : BO_DT_FLOAT)
#define BO_OPF_RANGE(f) ((f) & CT_OPF_POSITIVE ? BO_POSITIVE : (f) & CT_OPF_TAME ? BO_TAME : BO_DEFAULT)
#define BO_OPF_FLAGS(f) ((f) & CT_OPF_ANY_ZERO_SIGN ? BO_ANY_ZERO_SIGN : 0)
#define BO_UNARY_ROW(code, fn, msg_name, node, api, f)                                                  \
    {.name = #fn, .family = "unary", .run = run_unary, .op = CT_UN_##code, .range = BO_OPF_RANGE(f), \
     .tol = BO_TOL_EW, .dtypes = BO_OPF_DTYPES(f), .flags = BO_OPF_FLAGS(f)},
/* binary ops have integer kernels for every dtype */
#define BO_BINARY_ROW(code, fn, msg_name, node, f)                                                       \
    {.name = #fn, .family = "binary", .run = run_binary, .op = CT_BIN_##code,                        \
     .range = BO_OPF_RANGE(f), .tol = BO_TOL_EW,                                                     \
     .dtypes = (f) & CT_OPF_NO_BOOL ? BO_DT_NOBOOL : BO_DT_ALL, .flags = BO_OPF_FLAGS(f),            \
     .deliberate_error = (f) & CT_OPF_INT_DIVISION ? division_by_zero : NULL},
#define SCALAR(n_, k_, dts_) \
    {.name = n_, .family = "scalar", .run = run_scalar, .op = k_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EW, .dtypes = dts_}

#define INPLACE(n_, k_, dts_) \
    {.name = n_, .family = "inplace", .run = run_inplace, .op = k_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EW, .dtypes = dts_, .flags = BO_ANY_ZERO_SIGN}

/* Besides the rows made from the .def lines: add with alpha (needs floats
 * for a fractional one) and mixed dtypes, the scalar forms, where. */
#define BO_POINTWISE_CASES                                                                         \
    {.name = "add_scaled", .family = "binary", .run = run_binary, .op = -1, .p0 = 2.5,             \
     .range = BO_DEFAULT, .tol = BO_TOL_EW, .dtypes = BO_DT_FLOAT},                                \
    {.name = "add_mixed", .family = "binary", .run = run_binary, .op = CT_BIN_ADD, .p0 = 1,        \
     .range = BO_DEFAULT, .tol = BO_TOL_EW, .dtypes = BO_DT_ALL},                                  \
    {.name = "mul_mixed", .family = "binary", .run = run_binary, .op = CT_BIN_MUL, .p0 = 1,        \
     .range = BO_DEFAULT, .tol = BO_TOL_EW, .dtypes = BO_DT_ALL},                                  \
                                                                                                   \
    SCALAR("add_scalar", 0, BO_DT_ALL),                                                            \
    SCALAR("sub_scalar", 1, BO_DT_NOBOOL),                                                         \
    SCALAR("mul_scalar", 2, BO_DT_ALL),                                                            \
    SCALAR("div_scalar", 3, BO_DT_ALL),                                                            \
    {.name = "pow_scalar", .family = "scalar", .run = run_scalar, .op = 4, .range = BO_DEFAULT,    \
     .tol = BO_TOL_EW, .dtypes = BO_DT_ALL, .deliberate_error = negative_integer_power},           \
    SCALAR("rsub_scalar", 5, BO_DT_NOBOOL),                                                        \
    SCALAR("eq_scalar", 6, BO_DT_ALL),                                                             \
    SCALAR("lt_scalar", 7, BO_DT_ALL),                                                             \
    SCALAR("ge_scalar", 8, BO_DT_ALL),                                                             \
    {.name = "where", .family = "where", .run = run_where, .range = BO_DEFAULT,                    \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    INPLACE("add_", 0, BO_DT_ALL),                                                                 \
    INPLACE("sub_", 1, BO_DT_NOBOOL),                                                              \
    INPLACE("mul_", 2, BO_DT_ALL),                                                                 \
    INPLACE("div_", 3, BO_DT_FLOAT),                                                               \
    INPLACE("add_scaled_", 4, BO_DT_FLOAT),                                                        \
    INPLACE("add_scalar_", 5, BO_DT_NOBOOL),                                                       \
    INPLACE("mul_scalar_", 6, BO_DT_NOBOOL),                                                       \
    INPLACE("relu_", 7, BO_DT_NOBOOL),                                                             \
    INPLACE("clamp_", 8, BO_DT_NOBOOL),                                                            \
    INPLACE("add_out", 9, BO_DT_ALL),                                                              \
    INPLACE("mul_out", 10, BO_DT_ALL),
