/*
 * backend_ops_nn.c — the nn rows of the cross-backend harness: pooling
 * (max with indices, average, adaptive), batch norm (training with the
 * running statistics, eval), layer norm, dropout and embedding, each
 * forward and backward, on each device against the CPU. Included by
 * tests/test_backend_ops.c (after its helpers, before its table, whose rows
 * are BO_NN_CASES); not a test of its own.
 *
 * Inputs come in every layout of the harness (transposed, narrowed,
 * expanded over the batch), unbatched and empty where the op allows, with
 * NaN/inf in the variants that have specials (max pooling must pick the
 * same NaN). Batch norm updates its running statistics in place in views
 * (narrowed, or strided with stride 2) whose whole bases are compared.
 * Several results of one call are concatenated into one tensor
 * (all in the input's dtype) so they are compared together; indices and
 * dropout masks are the exact second output. Integer dtypes run only where
 * the op accepts them (embedding's forward); elsewhere both sides must
 * reject them alike.
 */
#include "ctorch/functional_nn.h"
#include "ops/nn.h"

/* ---- pooling ------------------------------------------------------------------------------ */

typedef struct bo_pool {
    ct_shape in;
    bo_layout layout;
    int64_t k[2], s[2], p[2], d[2];
    bool ceil_mode, count_include_pad;
    int64_t divisor;
} bo_pool;

/* Variant 0 is unbatched, 1 an empty batch, 2 a large plane (many work
 * items per kernel), the first large variant more than 100,000 elements;
 * the rest are random. */
static bo_pool pool_variant(int v, bo_rng *r, bool dilation) {
    bo_pool g;
    memset(&g, 0, sizeof g);
    for (int a = 0; a < 2; a++) {
        g.k[a] = bo_int(r, 1, 4);
        g.s[a] = bo_int(r, 1, 4);
        g.p[a] = bo_int(r, 0, g.k[a] / 2 + 1);
        g.d[a] = dilation ? bo_int(r, 1, 3) : 1;
    }
    int64_t h = g.d[0] * (g.k[0] - 1) + 1 + bo_int(r, 0, 6);
    int64_t w = g.d[1] * (g.k[1] - 1) + 1 + bo_int(r, 0, 6);
    g.in = CT_SHAPE(bo_int(r, 1, 4), bo_int(r, 1, 4), h, w);
    if (v == 0) g.in = CT_SHAPE(bo_int(r, 1, 4), h, w);
    if (v == 1) g.in.dims[0] = 0;
    if (v == 2) g.in = CT_SHAPE(2, 3, 40 + h, 33 + w);
    if (v == BO_LARGE_VARIANT) g.in = CT_SHAPE(4, 8, 60 + h, 61 + w); /* > 100,000 elements */
    g.layout = v < 3 ? BO_CONTIGUOUS : (bo_layout)(v % BO_LAYOUTS_);
    g.ceil_mode = bo_int(r, 0, 2);
    g.count_include_pad = bo_int(r, 0, 2);
    g.divisor = v % 5 == 4 ? bo_int(r, 1, 6) : 0;
    return g;
}

static void describe_pool(char *desc, size_t dn, const bo_pool *g) {
    describe(desc, dn, "x", g->in, g->layout);
    size_t k = strlen(desc);
    snprintf(desc + k, dn - k, ", k %lldx%lld s %lldx%lld p %lldx%lld d %lldx%lld%s%s",
             (long long)g->k[0], (long long)g->k[1], (long long)g->s[0], (long long)g->s[1],
             (long long)g->p[0], (long long)g->p[1], (long long)g->d[0], (long long)g->d[1],
             g->ceil_mode ? " ceil" : "", g->count_include_pad ? "" : " no-pad-count");
}

/* op 0: max_pool2d (values and indices); 1: its backward from the device's
 * own indices; 2/3: avg_pool2d and backward; 4/5: adaptive and backward. */
static void run_pool(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                     ct_tensor **out, char *desc, size_t dn) {
    const bool max = c->op < 2, adaptive = c->op >= 4, backward = c->op % 2 == 1;
    bo_pool g = pool_variant(v, r, max);
    ct_tensor *x = bo_input(r, g.in, dt, vrange(c->range, v), g.layout, dev);
    describe_pool(desc, dn, &g);
    cti_pool2d_params p = cti_pool2d_params_make(g.k, g.s, g.p, max ? g.d : NULL, g.ceil_mode,
                                                 g.count_include_pad, g.divisor);
    const int64_t osz[2] = {bo_int(r, 1, 9), v % 3 ? bo_int(r, 1, 9) : -1};
    ct_tensor *idx = NULL, *y;
    if (max) y = ct_track(cti_max_pool2d_forward(x, &p, &idx));
    else if (adaptive) y = ct_track(cti_adaptive_avg_pool2d_forward(x, osz));
    else y = ct_track(cti_avg_pool2d_forward(x, &p));
    ct_track(idx);
    if (!backward) {
        out[0] = y;
        out[1] = idx;
        return;
    }
    if (!y) return;
    ct_tensor *grad = bo_input(r, ct_shape_of(y), dt, vrange(c->range, v), BO_CONTIGUOUS, dev);
    if (max) out[0] = ct_track(cti_max_pool2d_backward(grad, idx, g.in, &p));
    else if (adaptive) out[0] = ct_track(cti_adaptive_avg_pool2d_backward(grad, g.in));
    else out[0] = ct_track(cti_avg_pool2d_backward(grad, g.in, &p));
}

/* ---- normalisation ---------------------------------------------------------------------------- */

/* One tensor of several results (flattened, in order). */
static ct_tensor *bo_concat(ct_tensor *const *ts, int n) {
    ct_tensor *flat[4];
    for (int i = 0; i < n; i++) {
        if (!ts[i]) return NULL;
        flat[i] = ct_reshape(ts[i], CT_SHAPE(-1));
    }
    return ct_cat(flat, n, 0);
}

/* [N, C, ...] with variant 1 an empty batch and variants 2 and 16 long
 * channels (work-groups that loop). */
static ct_shape bn_shape(int v, bo_rng *r) {
    if (v == 1) return CT_SHAPE(0, 3, 2);
    if (v == 2) return CT_SHAPE(4, 3, 20, 15);
    if (v == BO_LARGE_VARIANT) return CT_SHAPE(8, 16, 30, 29); /* 111,360 elements */
    ct_shape s;
    s.ndim = (int)bo_int(r, 2, 5);
    for (int d = 0; d < s.ndim; d++) s.dims[d] = bo_int(r, 1, 6);
    int64_t per_channel = s.dims[0];
    for (int d = 2; d < s.ndim; d++) per_channel *= s.dims[d];
    if (per_channel == 1) s.dims[0] = 2; /* training needs 2 values per channel */
    return s;
}

/* op 0: training forward (y, then the updated running statistics); 1: eval
 * forward; 2: training backward (grad_input, grad_weight, grad_bias); 3:
 * eval backward. */
static void run_batch_norm(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                           ct_tensor **out, char *desc, size_t dn) {
    ct_shape s = bn_shape(v, r);
    bo_layout l = v < 3 ? BO_CONTIGUOUS : (bo_layout)(v % BO_LAYOUTS_);
    const bool training = c->op % 2 == 0, backward = c->op >= 2;
    ct_shape cs = CT_SHAPE(s.dims[1]);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    ct_tensor *w = bo_input(r, cs, dt, BO_TAME, BO_CONTIGUOUS, dev);
    ct_tensor *b = bo_input(r, cs, dt, BO_FINITE, BO_CONTIGUOUS, dev);
    /* the running statistics, updated in place, are views (stride 2 in odd
     * variants) whose whole bases are compared */
    bo_layout lr = v % 2 ? BO_STRIDED : BO_NARROWED;
    ct_tensor *rm_base, *rm = view_target(r, cs, &lr, dt, BO_FINITE, dev, &rm_base);
    ct_tensor *rv_base, *rv = view_target(r, cs, &lr, dt, BO_TAME, dev, &rv_base);
    bool affine = v % 4 != 3;
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), "%s, running stats %s",
             affine ? "" : ", no weight/bias", bo_layout_name(lr));
    ct_tensor *sm = NULL, *si = NULL;
    ct_tensor *y = ct_track(cti_batch_norm_forward(x, rm, rv, affine ? w : NULL, affine ? b : NULL,
                                                   training, 0.2, 1e-4, &sm, &si));
    ct_track(sm), ct_track(si);
    if (!backward) {
        ct_tensor *all[3] = {y, rm_base, rv_base};
        out[0] = bo_concat(all, 3);
        return;
    }
    if (!y) return;
    ct_tensor *grad = bo_input(r, s, dt, vrange(c->range, v), BO_CONTIGUOUS, dev);
    ct_tensor *gr[3] = {NULL, NULL, NULL};
    if (cti_batch_norm_backward(grad, x, affine ? w : NULL, sm, si, training, &gr[0], &gr[1],
                                &gr[2]) != CT_OK)
        return;
    for (int i = 0; i < 3; i++) ct_track(gr[i]);
    out[0] = bo_concat(gr, 3);
}

/* Input [*, normalized] with the normalised dims last: variant 2 has rows
 * of 700 (work-groups that loop over a row), variant 16 101,000 elements in
 * rows of 1,000. */
static void ln_shapes(int v, bo_rng *r, ct_shape *in, ct_shape *norm) {
    if (v == 2 || v == BO_LARGE_VARIANT) {
        *in = v == 2 ? CT_SHAPE(3, 700) : CT_SHAPE(101, 2, 500);
        *norm = v == 2 ? CT_SHAPE(700) : CT_SHAPE(2, 500);
        return;
    }
    in->ndim = (int)bo_int(r, 1, 5);
    for (int d = 0; d < in->ndim; d++) in->dims[d] = bo_int(r, 1, 7);
    if (v == 1) in->dims[0] = 0;
    norm->ndim = (int)bo_int(r, 1, in->ndim + 1);
    for (int d = 0; d < norm->ndim; d++) norm->dims[d] = in->dims[in->ndim - norm->ndim + d];
}

/* op 0: forward (y, mean, rstd); 1: backward (input, weight, bias). */
static void run_layer_norm(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                           ct_tensor **out, char *desc, size_t dn) {
    ct_shape s, ns;
    ln_shapes(v, r, &s, &ns);
    bo_layout l = v < 3 ? BO_CONTIGUOUS : (bo_layout)(v % BO_LAYOUTS_);
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    ct_tensor *w = bo_input(r, ns, dt, BO_TAME, BO_CONTIGUOUS, dev);
    ct_tensor *b = bo_input(r, ns, dt, BO_FINITE, BO_CONTIGUOUS, dev);
    bool affine = v % 4 != 3;
    describe(desc, dn, "x", s, l);
    describe(desc, dn, "normalized", ns, BO_CONTIGUOUS);
    ct_tensor *sm = NULL, *sr = NULL;
    ct_tensor *y = ct_track(cti_layer_norm_forward(x, ns, affine ? w : NULL, affine ? b : NULL,
                                                   1e-5, &sm, &sr));
    ct_track(sm), ct_track(sr);
    if (c->op == 0) {
        ct_tensor *all[3] = {y, ct_to_dtype(sm, dt), ct_to_dtype(sr, dt)};
        out[0] = bo_concat(all, 3);
        return;
    }
    if (!y) return;
    ct_tensor *grad = bo_input(r, s, dt, vrange(c->range, v), BO_CONTIGUOUS, dev);
    ct_tensor *gr[3] = {NULL, NULL, NULL};
    if (cti_layer_norm_backward(grad, x, ns, affine ? w : NULL, sm, sr, &gr[0], &gr[1], &gr[2]) !=
        CT_OK)
        return;
    for (int i = 0; i < 3; i++) ct_track(gr[i]);
    out[0] = bo_concat(gr, 3);
}

/* ---- dropout, embedding ------------------------------------------------------------------------- */

/* op 0: dropout (output and mask, both exact: the same Philox bits on every
 * device); 1: its backward with that mask. */
static void run_dropout(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                        ct_tensor **out, char *desc, size_t dn) {
    static const double ps[] = {0.5, 0.1, 0.9, 0.0, 1.0, 0.3};
    ct_shape s;
    bo_layout l;
    variant_shape(v, r, &s, &l);
    double p = ps[v % 6];
    ct_tensor *x = bo_input(r, s, dt, vrange(c->range, v), l, dev);
    uint64_t seed = bo_next(r);
    describe(desc, dn, "x", s, l);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", p %g", p);
    ct_manual_seed(seed);
    ct_tensor *mask = NULL;
    ct_tensor *y = ct_track(cti_dropout_forward(x, p, true, &mask));
    ct_track(mask);
    if (c->op == 0) {
        out[0] = y;
        out[1] = mask;
        return;
    }
    if (!y) return;
    ct_tensor *grad = bo_input(r, s, dt, vrange(c->range, v), BO_CONTIGUOUS, dev);
    out[0] = ct_track(cti_dropout_backward(grad, mask, p));
}

/* op 0: embedding of any weight dtype; 1: its backward (with a padding
 * row in odd variants), repeated indices included. */
static void run_embedding(const bo_case *c, ct_dtype dt, int v, bo_rng *r, ct_device dev,
                          ct_tensor **out, char *desc, size_t dn) {
    const int64_t vocab = v == 2 ? 300 : bo_int(r, 1, 9), dim = v == 2 ? 64 : bo_int(r, 1, 6);
    ct_shape is;
    is.ndim = (int)bo_int(r, 0, 4);
    for (int d = 0; d < is.ndim; d++) is.dims[d] = bo_int(r, v == 1 ? 0 : 1, 5);
    if (v == 2) is = CT_SHAPE(40, 25);
    int64_t n = 1;
    for (int d = 0; d < is.ndim; d++) n *= is.dims[d];
    int64_t *vals = malloc(sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) vals[i] = bo_int(r, 0, vocab);
    ct_tensor *idx = bo_indices(vals, is, dev);
    free(vals);
    if (v % 3 == 1) idx = ct_to_dtype(idx, CT_INT32);
    int64_t padding = v % 2 ? bo_int(r, 0, vocab) : -1;
    describe(desc, dn, "indices", is, BO_CONTIGUOUS);
    snprintf(desc + strlen(desc), dn - strlen(desc), ", weight [%lld, %lld], padding %lld",
             (long long)vocab, (long long)dim, (long long)padding);
    if (c->op == 0) {
        bo_layout l = (bo_layout)(v % BO_LAYOUTS_);
        ct_tensor *w = bo_input(r, CT_SHAPE(vocab, dim), dt, vrange(c->range, v), l, dev);
        out[0] = ct_embedding(idx, w, padding < 0 ? CT_NO_PADDING_IDX : padding);
        return;
    }
    ct_shape gs = is;
    gs.dims[gs.ndim++] = dim;
    ct_tensor *grad = bo_input(r, gs, dt, vrange(c->range, v), BO_CONTIGUOUS, dev);
    out[0] = ct_track(cti_embedding_backward(grad, idx, vocab, padding));
}

#define NN(n_, run_, op_, range_, tol_, dts_) \
    {.name = n_, .family = "nn", .run = run_, .op = op_, .range = range_, .tol = tol_, \
     .dtypes = dts_}

/* Everything but the embedding lookup needs floats. max_pool2d picks
 * values (exact, but of -0 and +0 either may win); its backward, pooling
 * averages and norms are sums (BO_TOL_RED); dropout multiplies by the same
 * mask and scale on every device (exact). */
#define BO_NN_CASES                                                                                \
    {.name = "max_pool2d", .family = "nn", .run = run_pool, .range = BO_DEFAULT,                   \
     .tol = BO_TOL_EXACT, .dtypes = BO_DT_FLOAT, .flags = BO_ANY_ZERO_SIGN},                       \
    NN("max_pool2d_bwd", run_pool, 1, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT),                        \
    NN("avg_pool2d", run_pool, 2, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT),                            \
    NN("avg_pool2d_bwd", run_pool, 3, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT),                        \
    NN("adaptive_pool", run_pool, 4, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT),                         \
    NN("adaptive_bwd", run_pool, 5, BO_DEFAULT, BO_TOL_RED, BO_DT_FLOAT),                          \
    NN("batch_norm", run_batch_norm, 0, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                       \
    NN("batch_norm_eval", run_batch_norm, 1, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                  \
    NN("batch_norm_bwd", run_batch_norm, 2, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                   \
    NN("bn_eval_bwd", run_batch_norm, 3, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                      \
    NN("layer_norm", run_layer_norm, 0, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                       \
    NN("layer_norm_bwd", run_layer_norm, 1, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),                   \
    NN("dropout", run_dropout, 0, BO_DEFAULT, BO_TOL_EXACT, BO_DT_FLOAT),                          \
    NN("dropout_bwd", run_dropout, 1, BO_DEFAULT, BO_TOL_EXACT, BO_DT_FLOAT),                      \
    NN("embedding", run_embedding, 0, BO_DEFAULT, BO_TOL_EXACT, BO_DT_ALL),                        \
    NN("embedding_bwd", run_embedding, 1, BO_FINITE, BO_TOL_RED, BO_DT_FLOAT),
