/*
 * backend_ops_reduce.c — the reduction rows of the cross-backend harness:
 * sum, mean, prod, amax/amin, var/std over any set of dims, max/min with
 * indices, argmax/argmin, the whole-tensor forms, softmax/log_softmax and
 * matmul, on each device against the CPU. Included by
 * tests/test_backend_ops.c (before its table, whose rows are
 * BO_REDUCE_CASES); not a test of its own.
 *
 * Shapes include long rows (one work-group per row), strided columns, a
 * sum of 100,000 terms into one value and matrices with K = 257. Sums in
 * another order are compared per element within a tolerance scaled by the
 * result's largest magnitude (BO_TOL_RED, BO_TOL_MM); values chosen by
 * max/min and indices are exact.
 */

/* A random non-empty subset of the dims (or all, as ndims 0). */
static int pick_dims(int ndim, bo_rng *r, int *dims) {
    if (ndim == 0 || bo_int(r, 0, 4) == 0) return 0;
    int n = 0;
    for (int d = 0; d < ndim; d++)
        if (bo_int(r, 0, 2)) dims[n++] = bo_int(r, 0, 2) ? d : d - ndim;
    if (n == 0) dims[n++] = (int)bo_int(r, 0, ndim);
    return n;
}

/* The magnitudes of the terms summed into each element of result (see
 * backend_ops_compare.c): sum and mean of |x|; n * |result| for products
 * and variances (sums of nonnegative terms); none for max/min. */
static ct_tensor *reduce_magnitude(int op, const ct_tensor *x, const ct_tensor *result,
                                   const int *dims, int nd, bool keepdim) {
    int64_t n = ct_numel(result) ? ct_numel(x) / ct_numel(result) : 0;
    switch (op) {
    case CT_RED_SUM: return ct_sum(bo_abs64(x), dims, nd, keepdim);
    case CT_RED_MEAN: return ct_mean(bo_abs64(x), dims, nd, keepdim);
    case CT_RED_PROD:
    case CT_RED_VAR: return bo_scaled_abs(result, n);
    default: return NULL;
    }
}

static void run_reduce(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    int dims[CT_MAX_DIMS], nd = pick_dims(s.ndim, r, dims);
    if (v == 8) nd = 1, dims[0] = 1; /* the long rows: one work-group per row */
    if (v == 9) nd = 1, dims[0] = 0; /* strided columns of 300 */
    if (v == BO_LARGE_VARIANT) nd = 0; /* 100,000 terms into one */
    if (v == BO_LARGE_VARIANT + 1) nd = 1, dims[0] = -1; /* strided rows */
    bool keepdim = bo_int(r, 0, 2);
    describe(desc, dn, "x", s, l);
    size_t k = strlen(desc);
    k += (size_t)snprintf(desc + k, dn - k, ", dims {");
    for (int i = 0; i < nd; i++)
        k += (size_t)snprintf(desc + k, dn - k, i ? ", %d" : "%d", dims[i]);
    snprintf(desc + k, dn - k, "}%s", keepdim ? ", keepdim" : "");
    switch (c->op) {
    case CT_RED_SUM: out[0] = ct_sum(x, dims, nd, keepdim); break;
    case CT_RED_MEAN: out[0] = ct_mean(x, dims, nd, keepdim); break;
    case CT_RED_PROD: out[0] = ct_prod(x, dims, nd, keepdim); break;
    case CT_RED_MAX: out[0] = ct_amax(x, dims, nd, keepdim); break;
    case CT_RED_MIN: out[0] = ct_amin(x, dims, nd, keepdim); break;
    case CT_RED_VAR:
        out[0] = c->p0 < 0 ? ct_std(x, dims, nd, -c->p0 - 1, keepdim)
                           : ct_var(x, dims, nd, c->p0, keepdim);
        break;
    default: break;
    }
    if (dev.type == CT_DEVICE_CPU && out[0])
        out[2] = reduce_magnitude(c->op, x, out[0], dims, nd, keepdim);
}

/* Reductions along one dim with indices: max/min (values and indices),
 * argmax/argmin; and the whole-tensor forms. */
static void run_reduce_dim(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                           ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    int dim = s.ndim ? (int)bo_int(r, -s.ndim, s.ndim) : 0;
    if (v == 8 || v == BO_LARGE_VARIANT) dim = 1;
    bool keepdim = bo_int(r, 0, 2);
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d%s", dim, keepdim ? ", keepdim" : "");
    switch (c->op) {
    case 0: ct_max_dim(x, dim, keepdim, &out[0], &out[1]); break;
    case 1: ct_min_dim(x, dim, keepdim, &out[0], &out[1]); break;
    case 2: out[0] = ct_argmax(x, dim, keepdim); break;
    case 3: out[0] = ct_argmin(x, dim, keepdim); break;
    case 4:
        out[0] = ct_sum_all(x);
        if (dev.type == CT_DEVICE_CPU) out[2] = ct_sum_all(bo_abs64(x));
        break;
    case 5:
        out[0] = ct_mean_all(x);
        if (dev.type == CT_DEVICE_CPU) out[2] = ct_mean_all(bo_abs64(x));
        break;
    case 6: out[0] = ct_max_all(x); break;
    case 7: out[0] = ct_min_all(x); break;
    default: out[0] = ct_argmax_all(x); break;
    }
}

static void run_softmax(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                        ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    int dim = s.ndim ? (int)bo_int(r, -s.ndim, s.ndim) : 0;
    if (v == 8 || v == BO_LARGE_VARIANT) dim = -1; /* long rows: one work-group per row */
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d", dim);
    out[0] = c->op ? ct_log_softmax(x, dim) : ct_softmax(x, dim);
}

static void run_matmul(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    static const struct { int na, nb; int64_t a[3], b[3]; } shapes[] = {
        {1, 1, {7}, {7}},             {2, 2, {5, 3}, {3, 4}},      {2, 2, {33, 17}, {17, 29}},
        {3, 3, {2, 4, 6}, {2, 6, 3}}, {3, 2, {3, 5, 8}, {8, 2}},   {3, 3, {1, 4, 5}, {3, 5, 6}},
        {1, 2, {6}, {6, 4}},          {2, 1, {4, 6}, {6}},         {2, 2, {4, 0}, {0, 3}},
        {2, 2, {64, 96}, {96, 80}},   {2, 2, {1, 1}, {1, 1}},      {3, 3, {2, 0, 3}, {2, 3, 4}},
        {2, 2, {150, 257}, {257, 130}}, {3, 3, {4, 65, 129}, {4, 129, 67}}, /* the large variants */
    };
    const int k = v >= BO_LARGE_VARIANT ? 12 + v - BO_LARGE_VARIANT : v % 12;
    ct_shape sa = ct_shape_make(shapes[k].na, shapes[k].a);
    ct_shape sb = ct_shape_make(shapes[k].nb, shapes[k].b);
    bo_layout la = sa.ndim >= 2 && bo_int(r, 0, 2) ? BO_TRANSPOSED : BO_NARROWED;
    bo_layout lb = sb.ndim >= 2 && bo_int(r, 0, 2) ? BO_TRANSPOSED : BO_CONTIGUOUS;
    ct_tensor *a = bo_input(r, sa, dt, vrange(c->range, v), la, dev);
    ct_tensor *b = bo_input(r, sb, dt, vrange(c->range, v), lb, dev);
    describe(desc, dn, "a", sa, la);
    describe(desc, dn, "b", sb, lb);
    out[0] = ct_matmul(a, b);
    if (dev.type == CT_DEVICE_CPU) out[2] = ct_matmul(bo_abs64(a), bo_abs64(b)); /* sum |a||b| */
}

/* max/min/argmax/argmin over an empty dim is an error in PyTorch ("Expected
 * reduction dim 0 to have non-zero size"): variant 2 is [0, 3]. */
static bool empty_reduction(const bo_case *c, ct_dtype dt, int v) { return v == 2; }

#define REDUCE(n_, run_, op_, p0_, range_, tol_, dts_, err_) \
    {.name = n_, .family = "reduce", .run = run_, .op = op_, .p0 = p0_, .range = range_, \
     .tol = tol_, .dtypes = dts_, .deliberate_error = err_}
/* max/min pick a value, exactly; but of -0 and +0, equal, either may win
 * depending on the order of comparisons. */
#define ARG(n_, op_) \
    {.name = n_, .family = "reduce", .run = run_reduce_dim, .op = op_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_NOBOOL, .deliberate_error = empty_reduction}
#define SELECT(n_, run_, op_, dts_) \
    {.name = n_, .family = "reduce", .run = run_, .op = op_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EXACT, .dtypes = dts_, .flags = BO_ANY_ZERO_SIGN,                \
     .deliberate_error = empty_reduction}

/* mean/var/std and softmax need floats (PyTorch: "mean(): could not infer
 * output dtype"); argmax/argmin and matmul have no bool kernels. */
#define BO_REDUCE_CASES                                                                            \
    REDUCE("sum", run_reduce, CT_RED_SUM, 0, BO_DEFAULT, BO_TOL_RED, BO_DT_ALL, NULL),             \
    REDUCE("mean", run_reduce, CT_RED_MEAN, 0, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT, NULL),         \
    REDUCE("prod", run_reduce, CT_RED_PROD, 0, BO_TAME, BO_TOL_RED, BO_DT_ALL, NULL),              \
    SELECT("amax", run_reduce, CT_RED_MAX, BO_DT_ALL),                                             \
    SELECT("amin", run_reduce, CT_RED_MIN, BO_DT_ALL),                                             \
    REDUCE("var", run_reduce, CT_RED_VAR, 1, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT, NULL),           \
    REDUCE("var_biased", run_reduce, CT_RED_VAR, 0, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT, NULL),     \
    REDUCE("std", run_reduce, CT_RED_VAR, -2, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT, NULL),           \
    SELECT("max_dim", run_reduce_dim, 0, BO_DT_ALL),                                               \
    SELECT("min_dim", run_reduce_dim, 1, BO_DT_ALL),                                               \
    ARG("argmax", 2),                                                                              \
    ARG("argmin", 3),                                                                              \
    REDUCE("sum_all", run_reduce_dim, 4, 0, BO_FINITE, BO_TOL_RED, BO_DT_ALL, NULL),               \
    REDUCE("mean_all", run_reduce_dim, 5, 0, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT, NULL),            \
    SELECT("max_all", run_reduce_dim, 6, BO_DT_ALL),                                               \
    SELECT("min_all", run_reduce_dim, 7, BO_DT_ALL),                                               \
    ARG("argmax_all", 8),                                                                          \
    {.name = "softmax", .family = "softmax", .run = run_softmax, .range = BO_DEFAULT,              \
     .tol = BO_TOL_RED, .dtypes = BO_DT_FLOAT},                                                    \
    {.name = "log_softmax", .family = "softmax", .run = run_softmax, .op = 1,                      \
     .range = BO_DEFAULT, .tol = BO_TOL_RED, .dtypes = BO_DT_FLOAT},                               \
    {.name = "matmul", .family = "matmul", .run = run_matmul, .range = BO_FINITE,                  \
     .tol = BO_TOL_MM, .dtypes = BO_DT_NOBOOL},
