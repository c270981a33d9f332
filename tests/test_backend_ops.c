/*
 * test_backend_ops.c — the cross-backend harness (in the spirit of ggml's
 * test-backend-ops): every op × every dtype, run through the PUBLIC API on
 * the CPU and on each OpenCL and CUDA device, at shapes that include 0-dim, empty,
 * one-element, broadcast, transposed, narrowed and expanded inputs; the
 * device results must match the CPU's (per-dtype tolerances, NaN/inf
 * positions identical, integers exact) and land on the device.
 *
 *   test_backend_ops [-o op[,op…]] [-b backend] [-v] [--list]
 *
 * -o runs only the named ops (or families), -b only backends whose name
 * starts with the argument (opencl, opencl:1, cuda), -v prints every result,
 * --list prints the op × backend support matrix. An op a backend reports as
 * CT_ERR_UNSUPPORTED is printed as UNSUPPORTED, never counted as passed.
 * Exits 77 (skipped) when there is no OpenCL or CUDA device.
 *
 * The table `g_cases` drives everything: a new op is one row naming a
 * runner (which builds its inputs from a replayable random source on a given
 * device and calls the op) and a tolerance class.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "backend_ops_util.h"
#include "core/backend.h" /* the op enums: one table row per op value */

#define BO_NDTYPES 8
static const ct_dtype g_dtypes[BO_NDTYPES] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                              CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
static const char *const g_dtype_short[BO_NDTYPES] = {"f32", "f64", "f16", "bf16",
                                                      "i32", "i64", "u8",  "bool"};

typedef struct bo_case bo_case;
/* Build the inputs from r on dev and run the op; out[0..1] receive the
 * results (NULL on error), desc a description of the inputs. Runs inside a
 * scope that keeps only out[]. */
typedef void (*bo_run_fn)(const bo_case *c, ct_dtype dt, int variant, bo_rng *r, ct_device dev,
                          ct_tensor **out, char *desc, size_t desc_size);

struct bo_case {
    const char *name;
    const char *family;
    bo_run_fn run;
    int op;           /* op code or target dtype, per runner */
    double p0;        /* op parameter, per runner */
    bo_range range;
    bo_tol tol;
};

#define BO_VARIANTS 16

/* ---- shapes and layouts per variant ------------------------------------------------ */

/* 0-dim, one element, empty, then growing ranks and every layout, a long
 * row (work-group reductions) and random ones. */
static void variant_shape(int v, bo_rng *r, ct_shape *s, bo_layout *l) {
    static const struct { int ndim; int64_t dims[4]; bo_layout l; } fixed[] = {
        {0, {0}, BO_CONTIGUOUS},          {1, {1}, BO_CONTIGUOUS},
        {2, {0, 3}, BO_CONTIGUOUS},       {1, {6}, BO_NARROWED},
        {2, {4, 5}, BO_TRANSPOSED},       {2, {3, 7}, BO_NARROWED},
        {3, {2, 3, 5}, BO_EXPANDED},      {4, {2, 1, 4, 3}, BO_TRANSPOSED},
        {2, {3, 700}, BO_CONTIGUOUS},     {2, {300, 3}, BO_TRANSPOSED},
    };
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    if (v < nfixed) {
        *s = ct_shape_make(fixed[v].ndim, fixed[v].dims);
        *l = fixed[v].l;
        return;
    }
    s->ndim = (int)bo_int(r, 1, 5);
    for (int d = 0; d < s->ndim; d++) s->dims[d] = bo_int(r, 1, 7);
    *l = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
}

/* Specials (NaN, ±inf, ±0) only in some variants: elsewhere, and in the
 * long rows above all, one NaN would make whole results NaN and hide the
 * values. */
static bo_range vrange(bo_range r, int v) {
    return v % 2 == 1 && v != 9 ? r : (bo_range)(r | BO_NO_SPECIALS);
}

static void describe(char *desc, size_t n, const char *what, ct_shape s, bo_layout l) {
    char sh[96];
    size_t k = strlen(desc);
    bo_shape_str(s, sh, sizeof sh);
    snprintf(desc + k, n - k, "%s%s %s %s", k ? ", " : "", what, sh, bo_layout_name(l));
}

/* A shape broadcastable with s: size-1 dims, fewer dims or 0-dim. */
static ct_shape broadcast_partner(ct_shape s, int pattern, bo_rng *r) {
    ct_shape b = s;
    if (pattern == 1)
        for (int d = 0; d < s.ndim; d++)
            if (bo_int(r, 0, 2)) b.dims[d] = 1;
    if (pattern == 2) b.ndim = 0;
    if (pattern == 3 && s.ndim > 0) {
        int drop = (int)bo_int(r, 1, s.ndim + 1);
        b.ndim = s.ndim - drop;
        memmove(b.dims, s.dims + drop, sizeof(int64_t) * (size_t)b.ndim);
    }
    return b;
}

/* ---- elementwise ----------------------------------------------------------------------- */

typedef ct_tensor *(*unary_fn)(const ct_tensor *);
static ct_tensor *do_leaky(const ct_tensor *a) { return ct_leaky_relu(a, 0.2); }

static unary_fn unary_function(int op) {
    static const unary_fn fns[CT_UN_COUNT_] = {
        ct_neg, ct_abs, ct_sign, ct_square, ct_exp, ct_expm1, ct_log, ct_log1p, ct_log2, ct_sqrt,
        ct_rsqrt, ct_reciprocal, ct_sin, ct_cos, ct_tanh, ct_sigmoid, ct_relu, ct_gelu,
        ct_gelu_tanh, ct_silu, ct_softplus, ct_erf, ct_floor, ct_ceil, ct_round, ct_trunc,
        ct_isnan, ct_isinf, ct_isfinite, ct_logical_not, do_leaky, NULL};
    return fns[op];
}

static void run_unary(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                      ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    describe(desc, dn, "x", s, l);
    if (c->op == CT_UN_CLAMP) {
        static const double bounds[][2] = {{-1, 1}, {NAN, 0.5}, {-0.5, NAN}, {2, -2}};
        const double *b = bounds[v % 4];
        out[0] = ct_clamp(x, b[0], b[1]);
        snprintf(desc + strlen(desc), dn - strlen(desc), ", clamp(%g, %g)", b[0], b[1]);
        return;
    }
    out[0] = unary_function(c->op)(x);
}

typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);
static binary_fn binary_function(int op) {
    static const binary_fn fns[CT_BIN_COUNT_] = {
        ct_add, ct_sub, ct_mul, ct_div, ct_floor_divide, ct_remainder, ct_pow, ct_maximum,
        ct_minimum, ct_atan2, ct_eq, ct_ne, ct_lt, ct_le, ct_gt, ct_ge, ct_logical_and,
        ct_logical_or, ct_logical_xor};
    return fns[op];
}

/* Divisors of integer divisions avoid 0, except in every fourth variant,
 * which checks that the device reports the division by zero as the CPU. */
static bo_range divisor_range(const bo_case *c, int v) {
    bool division = c->op == CT_BIN_FLOOR_DIV || c->op == CT_BIN_REMAINDER;
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
    out[0] = c->op == -1 ? ct_add_scaled(a, b, c->p0) : binary_function(c->op)(a, b);
}

typedef ct_tensor *(*scalar_fn)(const ct_tensor *, double);
static scalar_fn scalar_function(int k) {
    static const scalar_fn fns[] = {ct_add_scalar, ct_sub_scalar, ct_mul_scalar, ct_div_scalar,
                                    ct_pow_scalar, ct_rsub_scalar, ct_eq_scalar,  ct_lt_scalar,
                                    ct_ge_scalar};
    return fns[k];
}

/* The scalar cycles through values that matter (pow's 2 and 0.5 shortcuts). */
static void run_scalar(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    static const double scalars[] = {2.0, 0.5, -1.5, 3.0, 0.0, 1.0};
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    double k = scalars[v % 6];
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

/* ---- reductions, softmax ----------------------------------------------------------------- */

/* A random non-empty subset of the dims (or all, as ndims 0). */
static int pick_dims(int ndim, bo_rng *r, int *dims) {
    if (ndim == 0 || bo_int(r, 0, 4) == 0) return 0;
    int n = 0;
    for (int d = 0; d < ndim; d++)
        if (bo_int(r, 0, 2)) dims[n++] = bo_int(r, 0, 2) ? d : d - ndim;
    if (n == 0) dims[n++] = (int)bo_int(r, 0, ndim);
    return n;
}

static void run_reduce(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    int dims[CT_MAX_DIMS], nd = pick_dims(s.ndim, r, dims);
    if (v == 8) nd = 1, dims[0] = 1; /* the long rows: one work-group per row */
    if (v == 9) nd = 1, dims[0] = 0; /* strided columns of 300 */
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
}

/* Reductions along one dim with indices: max/min (values and indices),
 * argmax/argmin; and the whole-tensor forms. */
static void run_reduce_dim(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                           ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    int dim = s.ndim ? (int)bo_int(r, -s.ndim, s.ndim) : 0;
    if (v == 8) dim = 1;
    bool keepdim = bo_int(r, 0, 2);
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d%s", dim, keepdim ? ", keepdim" : "");
    switch (c->op) {
    case 0: ct_max_dim(x, dim, keepdim, &out[0], &out[1]); break;
    case 1: ct_min_dim(x, dim, keepdim, &out[0], &out[1]); break;
    case 2: out[0] = ct_argmax(x, dim, keepdim); break;
    case 3: out[0] = ct_argmin(x, dim, keepdim); break;
    case 4: out[0] = ct_sum_all(x); break;
    case 5: out[0] = ct_mean_all(x); break;
    case 6: out[0] = ct_max_all(x); break;
    case 7: out[0] = ct_min_all(x); break;
    default: out[0] = ct_argmax_all(x); break;
    }
}

static void run_softmax(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                        ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    int dim = s.ndim ? (int)bo_int(r, -s.ndim, s.ndim) : 0;
    if (v == 8) dim = -1; /* long rows: one work-group per row */
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d", dim);
    out[0] = c->op ? ct_log_softmax(x, dim) : ct_softmax(x, dim);
}

/* ---- indexing, joining, linear algebra ----------------------------------------------------- */

static void run_index_select(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                             ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    if (s.ndim == 0) s = CT_SHAPE(3), l = BO_CONTIGUOUS;
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    int dim = (int)bo_int(r, 0, s.ndim);
    int64_t n = s.dims[dim] ? bo_int(r, 0, 7) : 0, idx[8];
    for (int64_t i = 0; i < n; i++) idx[i] = bo_int(r, 0, s.dims[dim]);
    ct_tensor *index = bo_indices(idx, CT_SHAPE(n), dev);
    if (v % 2) index = ct_to_dtype(index, CT_INT32);
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d, %lld %s indices", dim, (long long)n,
             v % 2 ? "int32" : "int64");
    out[0] = ct_index_select(x, dim, index);
}

static void run_gather(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    int dim = s.ndim ? (int)bo_int(r, 0, s.ndim) : 0;
    ct_shape is = s;
    int64_t n = 1;
    for (int d = 0; d < s.ndim; d++) {
        is.dims[d] = d == dim ? (s.dims[d] ? bo_int(r, 0, 6) : 0) : bo_int(r, 0, s.dims[d] + 1);
        n *= is.dims[d];
    }
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t size = s.ndim ? s.dims[dim] : 1;
    for (int64_t i = 0; i < n; i++) idx[i] = bo_int(r, 0, size);
    ct_tensor *index = bo_indices(idx, is, dev);
    free(idx);
    describe(desc, dn, "x", s, l);
    describe(desc, dn, "index", is, BO_CONTIGUOUS);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d", dim);
    out[0] = ct_gather(x, dim, index);
}

static void run_matmul(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    static const struct { int na, nb; int64_t a[3], b[3]; } shapes[] = {
        {1, 1, {7}, {7}},             {2, 2, {5, 3}, {3, 4}},      {2, 2, {33, 17}, {17, 29}},
        {3, 3, {2, 4, 6}, {2, 6, 3}}, {3, 2, {3, 5, 8}, {8, 2}},   {3, 3, {1, 4, 5}, {3, 5, 6}},
        {1, 2, {6}, {6, 4}},          {2, 1, {4, 6}, {6}},         {2, 2, {4, 0}, {0, 3}},
        {2, 2, {64, 96}, {96, 80}},   {2, 2, {1, 1}, {1, 1}},      {3, 3, {2, 0, 3}, {2, 3, 4}},
    };
    const int k = v % (int)(sizeof shapes / sizeof shapes[0]);
    ct_shape sa = ct_shape_make(shapes[k].na, shapes[k].a);
    ct_shape sb = ct_shape_make(shapes[k].nb, shapes[k].b);
    bo_layout la = sa.ndim >= 2 && bo_int(r, 0, 2) ? BO_TRANSPOSED : BO_NARROWED;
    bo_layout lb = sb.ndim >= 2 && bo_int(r, 0, 2) ? BO_TRANSPOSED : BO_CONTIGUOUS;
    ct_tensor *a = bo_input(r, sa, dt, vrange(c->range, v), la, dev);
    ct_tensor *b = bo_input(r, sb, dt, vrange(c->range, v), lb, dev);
    describe(desc, dn, "a", sa, la);
    describe(desc, dn, "b", sb, lb);
    out[0] = ct_matmul(a, b);
}

/* n tensors of shape s (the cat dim sized per tensor), one of them of
 * another dtype in odd variants. */
static void run_join(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    bool stack = c->op == 1;
    if (!stack && s.ndim == 0) s = CT_SHAPE(2);
    int n = (int)bo_int(r, 1, 4);
    int dim = (int)bo_int(r, 0, s.ndim + (stack ? 1 : 0));
    ct_tensor *ts[3];
    for (int i = 0; i < n; i++) {
        ct_shape si = s;
        if (!stack && s.ndim > 0) si.dims[dim] = bo_int(r, 0, 4);
        bo_layout li = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
        ct_dtype di = v % 2 && i == 1 ? g_dtypes[(v / 2) % BO_NDTYPES] : dt;
        ts[i] = bo_input(r, si, di, vrange(c->range, v), li, dev);
        describe(desc, dn, ct_dtype_name(di), si, li);
    }
    snprintf(desc + strlen(desc), dn - strlen(desc), ", dim %d", dim);
    out[0] = stack ? ct_stack(ts, n, dim) : ct_cat(ts, n, dim);
}

/* ---- data movement, creation, random ------------------------------------------------------ */

/* to(dtype c->op): every source dtype × every target, wide values (integer
 * saturation and wrap-around, rounding ties) in most variants. */
static void run_cast(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(v % 4 == 0 ? BO_DEFAULT : BO_WIDE, v), l, dev);
    describe(desc, dn, "x", s, l);
    out[0] = c->op ? ct_to_dtype(x, (ct_dtype)c->op) : ct_contiguous(x);
}

static int g_opencl_count, g_cuda_count;

/* A round trip through the next device of the backend (device-to-device copies of
 * strided views); on the cpu the identity. The result is back on dev. */
static void run_transfer(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                         ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    describe(desc, dn, "x", s, l);
    ct_device other = dev;
    if (dev.type == CT_DEVICE_OPENCL) other = ct_device_opencl((dev.index + 1) % g_opencl_count);
    if (dev.type == CT_DEVICE_CUDA) other = ct_device_cuda((dev.index + 1) % g_cuda_count);
    out[0] = ct_to_device(ct_to_device(x, other), dev);
}

/* copy_ into a view (transposed, narrowed…) of a zero tensor of another
 * dtype, from a source that may broadcast; the whole base is compared. */
static void run_copy(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    if (l == BO_EXPANDED) l = BO_NARROWED; /* copy_ into an expanded view is an error */
    ct_dtype ddt = g_dtypes[(v + (int)dt) % BO_NDTYPES];
    ct_tensor *base = ct_zeros(bo_base_shape(s, l), .dtype = ddt, .device = dev);
    ct_tensor *dst = bo_view(base, s, l);
    ct_shape ss = broadcast_partner(s, v % 3, r);
    bo_layout ls = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *src = bo_input(r, ss, dt, vrange(c->range, v), ls, dev);
    describe(desc, dn, "dst", s, l);
    describe(desc, dn, "src", ss, ls);
    snprintf(desc + strlen(desc), dn - strlen(desc), " -> %s", ct_dtype_name(ddt));
    if (ct_copy_(dst, src) == CT_OK) out[0] = base;
}

/* fill_ on a view, full, arange. */
static void run_fill(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    static const double values[] = {2.75, -1.5, 0.0, 300.25, -7.0, 1e10};
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    double value = values[v % 6];
    if (c->op == 0) {
        if (l == BO_EXPANDED) l = BO_TRANSPOSED;
        ct_tensor *base = ct_zeros(bo_base_shape(s, l), .dtype = dt, .device = dev);
        describe(desc, dn, "view", s, l);
        snprintf(desc + strlen(desc), dn - strlen(desc), ", value %g", value);
        if (ct_fill_(bo_view(base, s, l), value) == CT_OK) out[0] = base;
    } else if (c->op == 1) {
        describe(desc, dn, "shape", s, BO_CONTIGUOUS);
        snprintf(desc + strlen(desc), dn - strlen(desc), ", value %g", value);
        out[0] = ct_full(s, value, .dtype = dt, .device = dev);
    } else {
        static const double ranges[][3] = {{0, 10, 1},    {-3.5, 7, 0.25}, {10, -5, -3},
                                           {0, 0, 1},     {1, 2000, 1},    {-2, 2, 0.5}};
        const double *a = ranges[v % 6];
        snprintf(desc, dn, "arange(%g, %g, %g)", a[0], a[1], a[2]);
        out[0] = ct_arange(a[0], a[1], a[2], .dtype = dt, .device = dev);
    }
}

/* The generator is reseeded before each call, so the device must produce
 * the CPU's stream exactly (same Philox mapping). */
static void run_random(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                       ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    uint64_t seed = bo_next(r);
    describe(desc, dn, "shape", s, BO_CONTIGUOUS);
    ct_manual_seed(seed);
    switch (c->op) {
    case 0: out[0] = ct_rand(s, .dtype = dt, .device = dev); break;
    case 1: out[0] = ct_randn(s, .dtype = dt, .device = dev); break;
    default:
        out[0] = ct_randint(v % 2 ? -5 : 0, v % 2 ? 1000 : 2, s, .dtype = dt, .device = dev);
        break;
    }
}

/* ---- op families with rows of their own -------------------------------------------------------- */

#include "backend_ops_conv.c" /* BO_CONV_CASES */
#include "backend_ops_nn.c"   /* BO_NN_CASES */
#include "backend_ops_loss.c" /* BO_LOSS_CASES */

/* ---- the table ------------------------------------------------------------------------------- */

#define UN(name, op, range) {name, "unary", run_unary, op, 0, range, BO_TOL_EW}
#define BIN(name, op, range) {name, "binary", run_binary, op, 0, range, BO_TOL_EW}
#define CAST(name, dt) {name, "copy", run_cast, dt, 0, BO_DEFAULT, BO_TOL_EXACT}

static const bo_case g_cases[] = {
    UN("neg", CT_UN_NEG, BO_DEFAULT), UN("abs", CT_UN_ABS, BO_DEFAULT),
    UN("sign", CT_UN_SIGN, BO_DEFAULT), UN("square", CT_UN_SQUARE, BO_DEFAULT),
    UN("exp", CT_UN_EXP, BO_DEFAULT), UN("expm1", CT_UN_EXPM1, BO_DEFAULT),
    UN("log", CT_UN_LOG, BO_POSITIVE), UN("log1p", CT_UN_LOG1P, BO_POSITIVE),
    UN("log2", CT_UN_LOG2, BO_POSITIVE), UN("sqrt", CT_UN_SQRT, BO_POSITIVE),
    UN("rsqrt", CT_UN_RSQRT, BO_POSITIVE), UN("reciprocal", CT_UN_RECIPROCAL, BO_DEFAULT),
    UN("sin", CT_UN_SIN, BO_DEFAULT), UN("cos", CT_UN_COS, BO_DEFAULT),
    UN("tanh", CT_UN_TANH, BO_DEFAULT), UN("sigmoid", CT_UN_SIGMOID, BO_DEFAULT),
    UN("relu", CT_UN_RELU, BO_DEFAULT), UN("gelu", CT_UN_GELU, BO_DEFAULT),
    UN("gelu_tanh", CT_UN_GELU_TANH, BO_DEFAULT), UN("silu", CT_UN_SILU, BO_DEFAULT),
    UN("softplus", CT_UN_SOFTPLUS, BO_DEFAULT), UN("erf", CT_UN_ERF, BO_DEFAULT),
    UN("floor", CT_UN_FLOOR, BO_DEFAULT), UN("ceil", CT_UN_CEIL, BO_DEFAULT),
    UN("round", CT_UN_ROUND, BO_DEFAULT), UN("trunc", CT_UN_TRUNC, BO_DEFAULT),
    UN("isnan", CT_UN_ISNAN, BO_DEFAULT), UN("isinf", CT_UN_ISINF, BO_DEFAULT),
    UN("isfinite", CT_UN_ISFINITE, BO_DEFAULT), UN("logical_not", CT_UN_LOGICAL_NOT, BO_DEFAULT),
    UN("leaky_relu", CT_UN_LEAKY_RELU, BO_DEFAULT), UN("clamp", CT_UN_CLAMP, BO_DEFAULT),

    BIN("add", CT_BIN_ADD, BO_DEFAULT), BIN("sub", CT_BIN_SUB, BO_DEFAULT),
    BIN("mul", CT_BIN_MUL, BO_DEFAULT), BIN("div", CT_BIN_DIV, BO_DEFAULT),
    BIN("floor_divide", CT_BIN_FLOOR_DIV, BO_DEFAULT),
    BIN("remainder", CT_BIN_REMAINDER, BO_DEFAULT),
    BIN("pow", CT_BIN_POW, BO_TAME), BIN("maximum", CT_BIN_MAXIMUM, BO_DEFAULT),
    BIN("minimum", CT_BIN_MINIMUM, BO_DEFAULT), BIN("atan2", CT_BIN_ATAN2, BO_DEFAULT),
    BIN("eq", CT_BIN_EQ, BO_DEFAULT), BIN("ne", CT_BIN_NE, BO_DEFAULT),
    BIN("lt", CT_BIN_LT, BO_DEFAULT), BIN("le", CT_BIN_LE, BO_DEFAULT),
    BIN("gt", CT_BIN_GT, BO_DEFAULT), BIN("ge", CT_BIN_GE, BO_DEFAULT),
    BIN("logical_and", CT_BIN_LOGICAL_AND, BO_DEFAULT),
    BIN("logical_or", CT_BIN_LOGICAL_OR, BO_DEFAULT),
    BIN("logical_xor", CT_BIN_LOGICAL_XOR, BO_DEFAULT),
    {"add_scaled", "binary", run_binary, -1, 2.5, BO_DEFAULT, BO_TOL_EW},
    {"add_mixed", "binary", run_binary, CT_BIN_ADD, 1, BO_DEFAULT, BO_TOL_EW},
    {"mul_mixed", "binary", run_binary, CT_BIN_MUL, 1, BO_DEFAULT, BO_TOL_EW},
    {"add_scalar", "scalar", run_scalar, 0, 0, BO_DEFAULT, BO_TOL_EW},
    {"sub_scalar", "scalar", run_scalar, 1, 0, BO_DEFAULT, BO_TOL_EW},
    {"mul_scalar", "scalar", run_scalar, 2, 0, BO_DEFAULT, BO_TOL_EW},
    {"div_scalar", "scalar", run_scalar, 3, 0, BO_DEFAULT, BO_TOL_EW},
    {"pow_scalar", "scalar", run_scalar, 4, 0, BO_DEFAULT, BO_TOL_EW},
    {"rsub_scalar", "scalar", run_scalar, 5, 0, BO_DEFAULT, BO_TOL_EW},
    {"eq_scalar", "scalar", run_scalar, 6, 0, BO_DEFAULT, BO_TOL_EW},
    {"lt_scalar", "scalar", run_scalar, 7, 0, BO_DEFAULT, BO_TOL_EW},
    {"ge_scalar", "scalar", run_scalar, 8, 0, BO_DEFAULT, BO_TOL_EW},
    {"where", "where", run_where, 0, 0, BO_DEFAULT, BO_TOL_EXACT},

    {"sum", "reduce", run_reduce, CT_RED_SUM, 0, BO_DEFAULT, BO_TOL_EW},
    {"mean", "reduce", run_reduce, CT_RED_MEAN, 0, BO_DEFAULT, BO_TOL_EW},
    {"prod", "reduce", run_reduce, CT_RED_PROD, 0, BO_TAME, BO_TOL_EW},
    {"amax", "reduce", run_reduce, CT_RED_MAX, 0, BO_DEFAULT, BO_TOL_EW},
    {"amin", "reduce", run_reduce, CT_RED_MIN, 0, BO_DEFAULT, BO_TOL_EW},
    {"var", "reduce", run_reduce, CT_RED_VAR, 1, BO_DEFAULT, BO_TOL_EW},
    {"var_biased", "reduce", run_reduce, CT_RED_VAR, 0, BO_FINITE, BO_TOL_EW},
    {"std", "reduce", run_reduce, CT_RED_VAR, -2, BO_FINITE, BO_TOL_EW},
    {"max_dim", "reduce", run_reduce_dim, 0, 0, BO_DEFAULT, BO_TOL_EW},
    {"min_dim", "reduce", run_reduce_dim, 1, 0, BO_DEFAULT, BO_TOL_EW},
    {"argmax", "reduce", run_reduce_dim, 2, 0, BO_DEFAULT, BO_TOL_EW},
    {"argmin", "reduce", run_reduce_dim, 3, 0, BO_DEFAULT, BO_TOL_EW},
    {"sum_all", "reduce", run_reduce_dim, 4, 0, BO_FINITE, BO_TOL_EW},
    {"mean_all", "reduce", run_reduce_dim, 5, 0, BO_FINITE, BO_TOL_EW},
    {"max_all", "reduce", run_reduce_dim, 6, 0, BO_DEFAULT, BO_TOL_EW},
    {"min_all", "reduce", run_reduce_dim, 7, 0, BO_DEFAULT, BO_TOL_EW},
    {"argmax_all", "reduce", run_reduce_dim, 8, 0, BO_DEFAULT, BO_TOL_EW},
    {"softmax", "softmax", run_softmax, 0, 0, BO_DEFAULT, BO_TOL_EW},
    {"log_softmax", "softmax", run_softmax, 1, 0, BO_DEFAULT, BO_TOL_EW},

    {"index_select", "index", run_index_select, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"gather", "index", run_gather, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"matmul", "matmul", run_matmul, 0, 0, BO_FINITE, BO_TOL_MM},
    BO_CONV_CASES
    BO_NN_CASES
    BO_LOSS_CASES
    {"cat", "join", run_join, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"stack", "join", run_join, 1, 0, BO_DEFAULT, BO_TOL_EXACT},

    {"contiguous", "copy", run_cast, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    CAST("to_f32", CT_FLOAT32), CAST("to_f64", CT_FLOAT64), CAST("to_f16", CT_FLOAT16),
    CAST("to_bf16", CT_BFLOAT16), CAST("to_i32", CT_INT32), CAST("to_i64", CT_INT64),
    CAST("to_u8", CT_UINT8), CAST("to_bool", CT_BOOL),
    {"copy_", "copy", run_copy, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"to_device", "copy", run_transfer, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"fill_", "fill", run_fill, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"full", "fill", run_fill, 1, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"arange", "fill", run_fill, 2, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"rand", "random", run_random, 0, 0, BO_DEFAULT, BO_TOL_EXACT},
    {"randn", "random", run_random, 1, 0, BO_DEFAULT, BO_TOL_EW},
    {"randint", "random", run_random, 2, 0, BO_DEFAULT, BO_TOL_EXACT},
};
#define BO_NCASES ((int)(sizeof g_cases / sizeof g_cases[0]))

/* ---- running --------------------------------------------------------------------------------- */

typedef struct bo_options {
    const char *ops;     /* comma-separated names or families; NULL: all */
    const char *backend; /* prefix of a device name; NULL: all */
    bool verbose, list;
} bo_options;

/* One run of a case: outputs (kept references) and the error, if any. */
typedef struct bo_result {
    ct_tensor *out[2];
    ct_status status;
    char error[200];
} bo_result;

static uint64_t g_seed = 20261122;

static void run_case(const bo_case *c, int ci, int di, int v, ct_device dev, bo_result *res,
                     char *desc, size_t dn) {
    bo_rng r = {g_seed ^ ((uint64_t)ci << 40) ^ ((uint64_t)di << 32) ^ ((uint64_t)v << 16)};
    bo_next(&r);
    desc[0] = 0;
    res->out[0] = res->out[1] = NULL;
    ct_clear_error();
    ct_scope_begin();
    c->run(c, g_dtypes[di], v, &r, dev, res->out, desc, dn);
    for (int k = 0; k < 2; k++)
        if (res->out[k]) ct_keep(res->out[k]);
    ct_scope_end();
    res->status = res->out[0] ? CT_OK : ct_last_status();
    snprintf(res->error, sizeof res->error, "%s", res->status ? ct_last_error() : "");
    if (!res->out[0] && res->status == CT_OK) { /* a runner bug must not pass */
        res->status = CT_ERR_INTERNAL;
        snprintf(res->error, sizeof res->error, "no result and no error");
    }
    ct_clear_error();
}

static void release_result(bo_result *res) {
    ct_release(res->out[0]);
    ct_release(res->out[1]);
}

/* Outcome of (case, dtype, device), in increasing priority: one failing
 * variant fails the dtype; BO_NONE: the cpu rejected every variant. */
enum { BO_NONE, BO_PASS, BO_UNSUPPORTED, BO_FAIL };

/* Compare a device run with the cpu run of the same variant. */
static int judge(const bo_case *c, const bo_result *cpu, const bo_result *got, ct_device dev,
                 char *why, size_t wn) {
    if (cpu->status != CT_OK) {
        if (got->status == cpu->status) return BO_NONE; /* both reject the input */
        snprintf(why, wn, "cpu fails with %s (%s) but the device gives %s%s%s",
                 ct_status_str(cpu->status), cpu->error, ct_status_str(got->status),
                 got->status ? ": " : "", got->error);
        return BO_FAIL;
    }
    if (got->status == CT_ERR_UNSUPPORTED) {
        snprintf(why, wn, "%s", got->error);
        return BO_UNSUPPORTED;
    }
    if (got->status != CT_OK) {
        snprintf(why, wn, "fails with %s: %s", ct_status_str(got->status), got->error);
        return BO_FAIL;
    }
    for (int k = 0; k < 2; k++) {
        if (!cpu->out[k]) continue;
        bo_tol tol = k == 1 ? BO_TOL_EXACT : c->tol; /* indices are exact */
        if (!got->out[k] || !bo_compare(cpu->out[k], got->out[k], dev, tol, why, wn)) {
            if (!got->out[k]) snprintf(why, wn, "output %d missing", k);
            return BO_FAIL;
        }
    }
    return BO_PASS;
}

static bool name_selected(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

#define BO_MAX_DEVICES 16

typedef struct bo_totals {
    int passed, failed, unsupported; /* (case, dtype, device) triples */
    long compared;                   /* variants whose results matched */
} bo_totals;

/* Every variant of case c × every dtype on the cpu and on each device. */
static void test_case(const bo_case *c, int ci, const ct_device *devs, int ndev,
                      const bo_options *o, bo_totals *t) {
    int outcome[BO_MAX_DEVICES][BO_NDTYPES] = {{0}};
    static char first_why[BO_MAX_DEVICES][BO_NDTYPES][1200];
    char desc[384], cdesc[384], why[768];
    for (int di = 0; di < BO_NDTYPES; di++) {
        for (int v = 0; v < BO_VARIANTS; v++) {
            bo_result cpu;
            run_case(c, ci, di, v, ct_device_cpu(), &cpu, cdesc, sizeof cdesc);
            for (int k = 0; k < ndev; k++) {
                bo_result got;
                run_case(c, ci, di, v, devs[k], &got, desc, sizeof desc);
                int res = judge(c, &cpu, &got, devs[k], why, sizeof why);
                t->compared += res == BO_PASS;
                if (res > outcome[k][di]) {
                    outcome[k][di] = res;
                    snprintf(first_why[k][di], sizeof first_why[k][di], "%s: %s", desc, why);
                }
                release_result(&got);
            }
            release_result(&cpu);
        }
    }
    for (int k = 0; k < ndev; k++) {
        char dname[32], line[512];
        int n = snprintf(line, sizeof line, "%-14s %-10s", c->name,
                         ct_device_format(devs[k], dname, sizeof dname));
        bool bad = false;
        for (int di = 0; di < BO_NDTYPES; di++) {
            static const char *const marks[] = {"--", "ok", "UNSUPPORTED", "FAIL"};
            int r = outcome[k][di];
            n += snprintf(line + n, sizeof line - (size_t)n, " %s:%s", g_dtype_short[di], marks[r]);
            t->passed += r == BO_PASS;
            t->failed += r == BO_FAIL;
            t->unsupported += r == BO_UNSUPPORTED;
            bad |= r == BO_FAIL || r == BO_UNSUPPORTED;
        }
        if (bad || o->verbose) printf("%s\n", line);
        for (int di = 0; di < BO_NDTYPES; di++)
            if (outcome[k][di] == BO_FAIL || outcome[k][di] == BO_UNSUPPORTED)
                printf("  %s %s(%s) on %s: %s\n",
                       outcome[k][di] == BO_FAIL ? "FAIL" : "UNSUPPORTED", c->name,
                       g_dtype_short[di], dname, first_why[k][di]);
    }
    fflush(stdout);
}

/* --list: what each backend runs, per op and dtype: yes, NO (reported
 * unsupported), ERR (another error where the cpu succeeds) or "-" (the cpu
 * rejects the dtype too). One variant per cell, no comparison. */
static void list_support(const ct_device *devs, int ndev, const bo_options *o) {
    printf("%-14s %-10s", "op", "backend");
    for (int di = 0; di < BO_NDTYPES; di++) printf(" %-5s", g_dtype_short[di]);
    printf("\n");
    for (int ci = 0; ci < BO_NCASES; ci++) {
        const bo_case *c = &g_cases[ci];
        if (!name_selected(o->ops, c->name) && !name_selected(o->ops, c->family)) continue;
        for (int k = -1; k < ndev; k++) {
            ct_device dev = k < 0 ? ct_device_cpu() : devs[k];
            char dname[32], desc[384];
            printf("%-14s %-10s", c->name, ct_device_format(dev, dname, sizeof dname));
            for (int di = 0; di < BO_NDTYPES; di++) {
                bo_result cpu, res;
                run_case(c, ci, di, 3, ct_device_cpu(), &cpu, desc, sizeof desc);
                run_case(c, ci, di, 3, dev, &res, desc, sizeof desc);
                const char *mark = cpu.status != CT_OK              ? "-"
                                   : res.status == CT_OK             ? "yes"
                                   : res.status == CT_ERR_UNSUPPORTED ? "NO"
                                                                      : "ERR";
                printf(" %-5s", mark);
                release_result(&cpu);
                release_result(&res);
            }
            printf("\n");
        }
    }
}

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [-o op[,op...]] [-b backend] [-v] [--list]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    /* PoCL's two CPU devices, one thread each, unless the caller chose */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
    bo_options o = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) o.ops = argv[++i];
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) o.backend = argv[++i];
        else if (!strcmp(argv[i], "-v")) o.verbose = true;
        else if (!strcmp(argv[i], "--list")) o.list = true;
        else return usage(argv[0]);
    }
    const char *env = getenv("CT_TEST_SEED");
    if (env) g_seed = strtoull(env, NULL, 10);

    g_opencl_count = ct_device_count(CT_DEVICE_OPENCL);
    g_cuda_count = ct_device_count(CT_DEVICE_CUDA);
    ct_clear_error();
    if (g_opencl_count + g_cuda_count <= 0) {
        printf("test_backend_ops: no OpenCL or CUDA device, skipping\n");
        return 77;
    }
    ct_device all[BO_MAX_DEVICES], devs[BO_MAX_DEVICES];
    int nall = 0, ndev = 0;
    for (int i = 0; i < g_cuda_count && nall < BO_MAX_DEVICES; i++) all[nall++] = ct_device_cuda(i);
    for (int i = 0; i < g_opencl_count && nall < BO_MAX_DEVICES; i++) all[nall++] = ct_device_opencl(i);
    for (int i = 0; i < nall; i++) {
        char name[32];
        ct_device_format(all[i], name, sizeof name);
        if (!o.backend || strncmp(name, o.backend, strlen(o.backend)) == 0) devs[ndev++] = all[i];
    }
    if (ndev == 0) {
        fprintf(stderr, "test_backend_ops: no backend matches '%s'\n", o.backend);
        return 2;
    }
    int64_t live = ct_live_tensors();
    if (o.list) {
        list_support(devs, ndev, &o);
        return 0;
    }
    printf("test_backend_ops: seed %llu (set CT_TEST_SEED to change), %d device(s)\n",
           (unsigned long long)g_seed, ndev);
    bo_totals t = {0};
    for (int ci = 0; ci < BO_NCASES; ci++)
        if (name_selected(o.ops, g_cases[ci].name) || name_selected(o.ops, g_cases[ci].family))
            test_case(&g_cases[ci], ci, devs, ndev, &o, &t);
    if (ct_live_tensors() != live) {
        printf("FAIL: %lld tensors leaked\n", (long long)(ct_live_tensors() - live));
        t.failed++;
    }
    printf("%ld matching results compared\n", t.compared);
    printf("%d passed, %d failed, %d unsupported\n", t.passed, t.failed, t.unsupported);
    return t.failed ? 1 : 0;
}
