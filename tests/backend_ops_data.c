/*
 * backend_ops_data.c — the data-movement rows of the cross-backend harness:
 * index_select, gather, cat/stack, casts between every pair of dtypes,
 * copies (within a device, across devices, from and to host buffers),
 * fill_/zero_/full/arange and the Philox generators, on each device against
 * the CPU. Included by tests/test_backend_ops.c (before its table, whose
 * rows are BO_DATA_CASES); not a test of its own.
 *
 * The in-place rows write into views (transposed, narrowed, strided) of a
 * base of random values, and the whole base is compared: a write outside
 * the view, or one missing inside it, fails. Nothing here is computed, so
 * results must be identical, the sign of zero included.
 */

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
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
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

/* The device a copy crosses from: the next one of dev's backend (dev on
 * the cpu, where the run is the reference). */
static ct_device other_device(ct_device dev) {
    if (dev.type == CT_DEVICE_OPENCL) return ct_device_opencl((dev.index + 1) % g_opencl_count);
    if (dev.type == CT_DEVICE_CUDA) return ct_device_cuda((dev.index + 1) % g_cuda_count);
    return dev;
}

/* A round trip through the next device of the backend (device-to-device copies of
 * strided views); on the cpu the identity. The result is back on dev. */
static void run_transfer(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                         ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    ct_tensor *x = variant_input(c->range, dt, v, r, dev, &s, &l);
    describe(desc, dn, "x", s, l);
    out[0] = ct_to_device(ct_to_device(x, other_device(dev)), dev);
}

/* copy_ into a view (transposed, narrowed, strided…) of another dtype, from
 * a source that may broadcast. */
static void run_copy(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_dtype ddt = g_dtypes[(v + (int)dt) % BO_NDTYPES];
    ct_tensor *base, *dst = view_target(r, s, &l, ddt, BO_FINITE, dev, &base);
    ct_shape ss = broadcast_partner(s, v % 3, r);
    bo_layout ls = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *src = bo_input(r, ss, dt, vrange(c->range, v), ls, dev);
    describe(desc, dn, "dst", s, l);
    describe(desc, dn, "src", ss, ls);
    snprintf(desc + strlen(desc), dn - strlen(desc), " -> %s", ct_dtype_name(ddt));
    if (ct_copy_(dst, src) == CT_OK) out[0] = base;
}

/* Writes into a view that cross devices: op 0 copy_ from a cpu tensor
 * (host to device), 1 copy_ of a device tensor into a view of a cpu tensor
 * (device to host; the base is then moved to dev), 2 copy_ from the next
 * device of the backend, 3 ct_copy_from_host of a host buffer of dt, 4
 * zero_. The source has any layout, the view another dtype in odd
 * variants. */
static void run_copy_across(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                            ct_tensor **out, char *desc, size_t dn) {
    static const char *const what[] = {"from cpu", "to cpu", "from the next device",
                                       "from a host buffer", "zero_"};
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    ct_dtype ddt = v % 2 ? g_dtypes[(v / 2 + (int)dt) % BO_NDTYPES] : dt;
    ct_device dst_dev = c->op == 1 ? ct_device_cpu() : dev;
    ct_tensor *base, *dst = view_target(r, s, &l, ddt, BO_FINITE, dst_dev, &base);
    ct_device src_dev = c->op == 0 ? ct_device_cpu() : c->op == 1 ? dev : other_device(dev);
    bo_layout ls = (bo_layout)bo_int(r, 0, BO_LAYOUTS_);
    ct_tensor *src = bo_input(r, s, dt, vrange(c->range, v), ls, src_dev);
    describe(desc, dn, "dst", s, l);
    describe(desc, dn, "src", s, ls);
    snprintf(desc + strlen(desc), dn - strlen(desc), " %s, %s -> %s", what[c->op],
             ct_dtype_name(dt), ct_dtype_name(ddt));
    ct_status st;
    if (c->op == 3) {
        int64_t n = ct_numel(src);
        void *host = malloc(ct_dtype_size(dt) * (size_t)(n + 1));
        st = ct_copy_to_host(src, host, dt, n);
        if (st == CT_OK) st = ct_copy_from_host(dst, host, dt, n);
        free(host);
    } else {
        st = c->op == 4 ? ct_zero_(dst) : ct_copy_(dst, src);
    }
    if (st == CT_OK) out[0] = c->op == 1 ? ct_to_device(base, dev) : base;
}

/* fill_ on a view, full, arange. */
static void run_fill(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    static const double values[] = {2.75, -1.5, 0.0, 300.25, -7.0, 1e10, -0.0};
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    double value = values[v % 7];
    if (c->op == 0) {
        ct_tensor *base, *view = view_target(r, s, &l, dt, BO_FINITE, dev, &base);
        describe(desc, dn, "view", s, l);
        snprintf(desc + strlen(desc), dn - strlen(desc), ", value %g", value);
        if (ct_fill_(view, value) == CT_OK) out[0] = base;
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

#define COPY(n_, run_, op_) \
    {.name = n_, .family = "copy", .run = run_, .op = op_, .range = BO_DEFAULT, \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL}

/* rand/randn draw floats only, as PyTorch's ("not implemented for 'Long'"). */
#define BO_DATA_CASES                                                                              \
    {.name = "index_select", .family = "index", .run = run_index_select, .range = BO_DEFAULT,      \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "gather", .family = "index", .run = run_gather, .range = BO_DEFAULT,                  \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "cat", .family = "join", .run = run_join, .range = BO_DEFAULT,                        \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "stack", .family = "join", .run = run_join, .op = 1, .range = BO_DEFAULT,             \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    COPY("contiguous", run_cast, 0), COPY("to_f32", run_cast, CT_FLOAT32),                         \
    COPY("to_f64", run_cast, CT_FLOAT64), COPY("to_f16", run_cast, CT_FLOAT16),                    \
    COPY("to_bf16", run_cast, CT_BFLOAT16), COPY("to_i32", run_cast, CT_INT32),                    \
    COPY("to_i64", run_cast, CT_INT64), COPY("to_u8", run_cast, CT_UINT8),                         \
    COPY("to_bool", run_cast, CT_BOOL), COPY("to_i8", run_cast, CT_INT8),                          \
    COPY("copy_", run_copy, 0),                                                                    \
    COPY("to_device", run_transfer, 0), COPY("copy_h2d_view", run_copy_across, 0),                 \
    COPY("copy_d2h_view", run_copy_across, 1), COPY("copy_d2d_view", run_copy_across, 2),          \
    COPY("from_host_view", run_copy_across, 3), COPY("zero_", run_copy_across, 4),                 \
    {.name = "fill_", .family = "fill", .run = run_fill, .range = BO_DEFAULT,                      \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "full", .family = "fill", .run = run_fill, .op = 1, .range = BO_DEFAULT,              \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "arange", .family = "fill", .run = run_fill, .op = 2, .range = BO_DEFAULT,            \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},                                                    \
    {.name = "rand", .family = "random", .run = run_random, .range = BO_DEFAULT,                   \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_FLOAT},                                                  \
    {.name = "randn", .family = "random", .run = run_random, .op = 1, .range = BO_DEFAULT,         \
     .tol = BO_TOL_EW, .dtypes = BO_DT_FLOAT},                                                     \
    {.name = "randint", .family = "random", .run = run_random, .op = 2, .range = BO_DEFAULT,       \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_ALL},
