/*
 * test_autograd_views.c — gradients of the view ops, the copies
 * (contiguous, clone, to), cat/stack/split/chunk and index_select/gather:
 * float64 gradchecks at contiguous and non-contiguous inputs with negative
 * dims and step slices, the grad_fn names PyTorch gives, and the rules
 * around them (detach, no-op conversions, inputs that need no grad).
 */
#include <stdlib.h>

#include "testutil.h"

static ct_tensor *leaf64(ct_shape s) {
    ct_tensor *t = ct_test_random(s, CT_FLOAT64, -2.0, 2.0, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

/* The same values in a reversed-stride layout. */
static ct_tensor *leaf64_strided(ct_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.dims[i];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    ct_test_fill_uniform(v, n, -2.0, 2.0);
    ct_tensor *t = ct_test_noncontiguous(v, s, CT_FLOAT64);
    free(v);
    ct_set_requires_grad(t, true);
    return t;
}

/* ---- one-input views: gradcheck, requires_grad and grad_fn name ---- */

typedef ct_tensor *(*view_fn)(const ct_tensor *x);
typedef struct view_case {
    view_fn fn;
} view_case;

static ct_tensor *apply_view(ct_tensor *const *in, int n, void *user) {
    (void)n;
    return ((view_case *)user)->fn(in[0]);
}

/* grad_fn: the expected name at a contiguous input; a reshape of the
 * reversed-stride input copies where the contiguous one views and back, so
 * their names swap there. */
static const char *strided_name(const char *name) {
    if (!name) return NULL;
    if (!strcmp(name, "ViewBackward0")) return "UnsafeViewBackward0";
    if (!strcmp(name, "UnsafeViewBackward0")) return "ViewBackward0";
    return name;
}

static void check_view(const char *what, ct_shape s, view_fn fn, const char *grad_fn, bool layout_named) {
    for (int strided = 0; strided < 2; strided++) {
        const char *expect = strided && layout_named ? strided_name(grad_fn) : grad_fn;
        CT_SCOPE {
            ct_tensor *x = strided ? leaf64_strided(s) : leaf64(s);
            view_case c = {fn};
            bool ok = false;
            ct_status st = ct_gradcheck(apply_view, &x, 1, &c, &ok);
            CT_EXPECT_MSG(st == CT_OK && ok, "%s (strided %d): %s", what, strided, ct_last_error());
            ct_clear_error();
            ct_tensor *y = fn(x);
            CT_EXPECT_MSG(y && ct_requires_grad(y) && !ct_is_leaf(y), "%s: result must require grad", what);
            if (y && expect) CT_EXPECT_STR_EQ(ct_grad_fn_name(y), expect);
            CT_NO_GRAD {
                ct_tensor *z = fn(x);
                CT_EXPECT_MSG(z && !ct_requires_grad(z), "%s: recorded under no-grad", what);
            }
        }
    }
}

static ct_tensor *f_view(const ct_tensor *x) { return ct_view(ct_contiguous(x), CT_SHAPE(-1, 5)); }
static ct_tensor *f_view_flat(const ct_tensor *x) { return ct_view(ct_contiguous(x), CT_SHAPE(60)); }
static ct_tensor *f_reshape(const ct_tensor *x) { return ct_reshape(x, CT_SHAPE(5, -1, 2)); }
static ct_tensor *f_reshape_copy(const ct_tensor *x) { return ct_reshape(ct_transpose(x, 0, 2), CT_SHAPE(-1)); }
static ct_tensor *f_permute(const ct_tensor *x) { return ct_permute(x, (int[]){2, 0, 1}); }
static ct_tensor *f_permute_neg(const ct_tensor *x) { return ct_permute(x, (int[]){-1, -3, -2}); }
static ct_tensor *f_transpose(const ct_tensor *x) { return ct_transpose(x, 0, -1); }
static ct_tensor *f_t2(const ct_tensor *x) { return ct_t(ct_select(x, 2, 1)); }
static ct_tensor *f_narrow(const ct_tensor *x) { return ct_narrow(x, 1, 1, 2); }
static ct_tensor *f_narrow_neg(const ct_tensor *x) { return ct_narrow(x, -1, -3, 2); }
static ct_tensor *f_slice_step(const ct_tensor *x) { return ct_slice(x, 2, 1, 5, 2); }
static ct_tensor *f_slice_neg(const ct_tensor *x) { return ct_slice(x, -2, -3, 100, 2); }
static ct_tensor *f_select(const ct_tensor *x) { return ct_select(x, 1, 2); }
static ct_tensor *f_select_neg(const ct_tensor *x) { return ct_select(x, -1, -1); }
static ct_tensor *f_expand(const ct_tensor *x) { return ct_expand(ct_narrow(x, 1, 0, 1), CT_SHAPE(2, 3, 4, -1)); }
static ct_tensor *f_expand_as(const ct_tensor *x) {
    return ct_expand_as(ct_narrow(x, 2, 3, 1), ct_zeros(CT_SHAPE(3, 4, 6)));
}
static ct_tensor *f_squeeze(const ct_tensor *x) { return ct_squeeze(ct_narrow(ct_narrow(x, 1, 2, 1), 2, 0, 1)); }
static ct_tensor *f_squeeze_dim(const ct_tensor *x) { return ct_squeeze_dim(ct_narrow(x, 1, 2, 1), -2); }
static ct_tensor *f_unsqueeze(const ct_tensor *x) { return ct_unsqueeze(x, 1); }
static ct_tensor *f_unsqueeze_neg(const ct_tensor *x) { return ct_unsqueeze(x, -1); }
static ct_tensor *f_flatten(const ct_tensor *x) { return ct_flatten(ct_contiguous(x), 0, 1); }
static ct_tensor *f_flatten_neg(const ct_tensor *x) { return ct_flatten(x, -2, -1); }
static ct_tensor *f_unflatten(const ct_tensor *x) { return ct_unflatten(x, 1, CT_SHAPE(2, -1)); }
static ct_tensor *f_contiguous(const ct_tensor *x) { return ct_contiguous(ct_transpose(x, 0, 1)); }
static ct_tensor *f_clone(const ct_tensor *x) { return ct_clone(x); }
static ct_tensor *f_chain(const ct_tensor *x) {
    ct_tensor *y = ct_slice(ct_transpose(x, 0, 2), 0, 0, 5, 2);        /* [3, 4, 3] */
    y = ct_unsqueeze(ct_select(ct_permute(y, (int[]){1, 2, 0}), 0, -1), 0); /* [1, 3, 3] */
    y = ct_expand(y, CT_SHAPE(2, 3, 3));
    return ct_flatten(ct_narrow(ct_reshape(y, CT_SHAPE(3, 6)), 1, 1, 4), 0, -1);
}

static void test_view_gradients(void) {
    const ct_shape s = CT_SHAPE(3, 4, 5);
    check_view("view", s, f_view, "ViewBackward0", false);
    check_view("view flat", s, f_view_flat, "ViewBackward0", false);
    check_view("reshape", s, f_reshape, NULL, false); /* a view when contiguous, a copy otherwise */
    check_view("reshape copy", s, f_reshape_copy, "UnsafeViewBackward0", true);
    check_view("permute", s, f_permute, "PermuteBackward0", false);
    check_view("permute neg", s, f_permute_neg, "PermuteBackward0", false);
    check_view("transpose", s, f_transpose, "TransposeBackward0", false);
    check_view("t", s, f_t2, "TBackward0", false);
    check_view("narrow", s, f_narrow, "SliceBackward0", false);
    check_view("narrow neg", s, f_narrow_neg, "SliceBackward0", false);
    check_view("slice step", s, f_slice_step, "SliceBackward0", false);
    check_view("slice neg", s, f_slice_neg, "SliceBackward0", false);
    check_view("select", s, f_select, "SelectBackward0", false);
    check_view("select neg", s, f_select_neg, "SelectBackward0", false);
    check_view("expand", s, f_expand, "ExpandBackward0", false);
    check_view("expand_as", CT_SHAPE(3, 4, 5), f_expand_as, "ExpandBackward0", false);
    check_view("squeeze", s, f_squeeze, "SqueezeBackward0", false);
    check_view("squeeze dim", s, f_squeeze_dim, "SqueezeBackward1", false);
    check_view("unsqueeze", s, f_unsqueeze, "UnsqueezeBackward0", false);
    check_view("unsqueeze neg", s, f_unsqueeze_neg, "UnsqueezeBackward0", false);
    check_view("flatten", s, f_flatten, "ViewBackward0", false);
    check_view("flatten neg", s, f_flatten_neg, NULL, false);
    check_view("unflatten", s, f_unflatten, "ViewBackward0", false);
    check_view("contiguous", s, f_contiguous, "CloneBackward0", false);
    check_view("clone", s, f_clone, "CloneBackward0", false);
    check_view("chain", s, f_chain, "UnsafeViewBackward0", false); /* the narrowed copy cannot be viewed flat */
}

/* Known values: the gradient of sum(w * view(x)) lands where the view looked. */
static void test_slice_gradient_values(void) {
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(2, 6), .dtype = CT_FLOAT64);
        ct_set_requires_grad(x, true);
        ct_tensor *w = ct_tensor_from((double[]){1, 2, 3, 4, 5, 6}, CT_FLOAT64, CT_SHAPE(2, 3), .dtype = CT_FLOAT64);
        ct_tensor *y = ct_slice(x, 1, 1, 6, 2); /* columns 1, 3, 5 */
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(y, w))), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6}), 12, 0, 0);
        /* expand sums the gradient back over the broadcast copies */
        ct_tensor *a = ct_ones(CT_SHAPE(3, 1), .dtype = CT_FLOAT32);
        ct_set_requires_grad(a, true);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_expand(a, CT_SHAPE(2, 3, 4)))), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(a), ((double[]){8, 8, 8}), 3, 0, 0);
        CT_EXPECT_SHAPE(ct_grad(a), CT_SHAPE(3, 1));
    }
}

static void test_view_rules(void) {
    CT_SCOPE {
        ct_tensor *x = leaf64(CT_SHAPE(2, 3));
        /* views of a leaf that needs no grad need none */
        ct_tensor *plain = ct_ones(CT_SHAPE(2, 3));
        CT_EXPECT(!ct_requires_grad(ct_transpose(plain, 0, 1)) && ct_is_leaf(ct_view(plain, CT_SHAPE(6))));
        /* detach: same data, no history */
        ct_tensor *y = ct_mul_scalar(x, 3.0);
        ct_tensor *d = ct_detach(y);
        CT_EXPECT(!ct_requires_grad(d) && ct_is_leaf(d) && ct_grad_fn_name(d) == NULL);
        CT_EXPECT(!ct_requires_grad(ct_transpose(d, 0, 1)));
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(d, x))), CT_OK); /* d/dx sum(d * x) = d only */
        double *dv = ct_test_values(d);
        CT_EXPECT_CLOSE(ct_grad(x), dv, 6, 1e-12, 0);
        free(dv);
        /* no-op conversions return the input itself, history included */
        CT_EXPECT(ct_contiguous(x) == x && ct_to_dtype(x, CT_FLOAT64) == x && ct_cpu(x) == x);
        CT_EXPECT(ct_contiguous(y) == y && ct_is_leaf(ct_contiguous(x)));
        /* a float -> integer cast is not differentiable */
        CT_EXPECT(!ct_requires_grad(ct_to_dtype(x, CT_INT64)));
        CT_EXPECT(!ct_requires_grad(ct_to_dtype(x, CT_BOOL)));
    }
}

static void test_as_strided_not_differentiable(void) {
    CT_SCOPE {
        ct_tensor *x = leaf64(CT_SHAPE(6));
        ct_tensor *y = ct_as_strided(x, CT_SHAPE(2, 2), (int64_t[]){2, 1}, 1);
        CT_EXPECT(ct_requires_grad(y));
        CT_EXPECT_STR_EQ(ct_grad_fn_name(y), "AsStridedBackward0");
        CT_EXPECT(ct_backward(ct_sum_all(y)) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "as_strided backward is not supported");
        CT_EXPECT(ct_grad(x) == NULL);
    }
}

/* float64 -> float32 -> float64: the gradient comes back as float64. */
static void test_to_dtype_gradient(void) {
    CT_SCOPE {
        double xv[4] = {0.5, -1.25, 2.0, 3.5}, wv[4] = {1.5, 2.0, -3.0, 0.25};
        ct_tensor *x = ct_tensor_from(xv, CT_FLOAT64, CT_SHAPE(2, 2), .dtype = CT_FLOAT64);
        ct_set_requires_grad(x, true);
        ct_tensor *w = ct_tensor_from(wv, CT_FLOAT64, CT_SHAPE(2, 2), .dtype = CT_FLOAT32);
        ct_tensor *x32 = ct_to_dtype(x, CT_FLOAT32);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(x32), "ToCopyBackward0");
        ct_tensor *back = ct_to(ct_mul(x32, w), ct_device_cpu(), CT_FLOAT64);
        CT_EXPECT(ct_dtype_of(back) == CT_FLOAT64);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(back), "ToCopyBackward0");
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(back, back))), CT_OK); /* d/dx (w x)^2 = 2 w^2 x */
        ct_tensor *g = ct_grad(x);
        CT_EXPECT(ct_dtype_of(g) == CT_FLOAT64);
        double expect[4];
        for (int i = 0; i < 4; i++) expect[i] = 2 * wv[i] * wv[i] * xv[i];
        CT_EXPECT_CLOSE(g, expect, 4, 1e-6, 1e-6);
        /* float32 leaf through float64 */
        ct_tensor *a = ct_tensor_from(xv, CT_FLOAT64, CT_SHAPE(4), .dtype = CT_FLOAT32);
        ct_set_requires_grad(a, true);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul_scalar(ct_to_dtype(a, CT_FLOAT64), 2.0))), CT_OK);
        CT_EXPECT(ct_dtype_of(ct_grad(a)) == CT_FLOAT32);
        CT_EXPECT_CLOSE(ct_grad(a), ((double[]){2, 2, 2, 2}), 4, 0, 0);
    }
}

/* to(device): the gradient comes back to the input's device (every device present). */
static void test_to_device_gradient(void) {
    int ndev = ct_test_opencl_devices("to(device) gradients");
    for (int i = 0; i < ndev; i++) {
        CT_SCOPE {
            double xv[3] = {1.5, -2.0, 0.25};
            ct_tensor *x = ct_tensor_from(xv, CT_FLOAT64, CT_SHAPE(3), .dtype = CT_FLOAT32);
            ct_set_requires_grad(x, true);
            ct_tensor *on_dev = ct_to_device(x, ct_device_opencl(i));
            CT_EXPECT_STR_EQ(ct_grad_fn_name(on_dev), "ToCopyBackward0");
            ct_tensor *back = ct_cpu(ct_mul(on_dev, on_dev));
            CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(back)), CT_OK);
            ct_tensor *g = ct_grad(x);
            CT_EXPECT(g && ct_device_of(g).type == CT_DEVICE_CPU);
            CT_EXPECT_CLOSE(g, ((double[]){3.0, -4.0, 0.5}), 3, 1e-6, 0);
            /* the composed index_select gradient runs on the device too */
            ct_tensor *idx = ct_tensor_from((int64_t[]){2, 2, 0}, CT_INT64, CT_SHAPE(3), .dtype = CT_INT64,
                                            .device = ct_device_opencl(i));
            ct_tensor *y = ct_index_select(ct_to_device(x, ct_device_opencl(i)), 0, idx);
            CT_EXPECT_INT_EQ(ct_set_grad(x, NULL), CT_OK);
            CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_cpu(y))), CT_OK);
            CT_EXPECT_CLOSE(ct_grad(x), ((double[]){1, 0, 2}), 3, 0, 0);
        }
    }
}

/* ---- cat, stack, split, chunk ---- */

typedef struct join_case {
    int dim;
    bool stack;
    bool transpose;        /* join transposed views of the inputs */
    const ct_tensor *extra; /* an input that needs no grad, joined in the middle */
} join_case;

static ct_tensor *apply_join(ct_tensor *const *in, int n, void *user) {
    const join_case *c = user;
    ct_tensor *parts[80];
    int k = 0;
    for (int i = 0; i < n; i++) {
        parts[k++] = c->transpose ? ct_transpose(in[i], 0, 1) : in[i];
        if (c->extra && i == n / 2) parts[k++] = (ct_tensor *)c->extra;
    }
    return c->stack ? ct_stack(parts, k, c->dim) : ct_cat(parts, k, c->dim);
}

static void check_join(const char *what, int n, ct_shape s, int grow_dim, join_case c) {
    CT_SCOPE {
        ct_tensor *in[80];
        for (int i = 0; i < n; i++) {
            ct_shape si = s;
            if (grow_dim >= 0) si.dims[grow_dim] = 1 + i % 3; /* cat: different extents */
            in[i] = i % 2 ? leaf64_strided(si) : leaf64(si);
        }
        bool ok = false;
        ct_status st = ct_gradcheck(apply_join, in, n, &c, &ok);
        CT_EXPECT_MSG(st == CT_OK && ok, "%s: %s", what, ct_last_error());
        ct_clear_error();
        ct_tensor *y = apply_join(in, n, &c);
        CT_EXPECT_STR_EQ(ct_grad_fn_name(y), c.stack ? "StackBackward0" : "CatBackward0");
    }
}

static void test_cat_stack_gradients(void) {
    CT_SCOPE {
        check_join("cat dim 1", 3, CT_SHAPE(2, 3, 4), 1, (join_case){.dim = 1});
        check_join("cat dim -1", 3, CT_SHAPE(2, 3, 4), 2, (join_case){.dim = -1});
        check_join("cat transposed", 3, CT_SHAPE(3, 2), 1, (join_case){.dim = 0, .transpose = true});
        check_join("cat with a constant", 2, CT_SHAPE(2, 3), 0,
                   (join_case){.dim = 0, .extra = ct_ones(CT_SHAPE(4, 3), .dtype = CT_FLOAT64)});
        check_join("cat of 11 (grouped nodes)", 11, CT_SHAPE(2, 2), 1, (join_case){.dim = 1});
        check_join("cat of 70 (nested groups)", 70, CT_SHAPE(1, 2), 0, (join_case){.dim = 0});
        check_join("stack dim 0", 3, CT_SHAPE(2, 3), -1, (join_case){.dim = 0, .stack = true});
        check_join("stack dim -1", 3, CT_SHAPE(2, 3), -1, (join_case){.dim = -1, .stack = true});
        check_join("stack with a constant", 2, CT_SHAPE(3, 2), -1,
                   (join_case){.dim = 1, .stack = true, .transpose = true,
                               .extra = ct_zeros(CT_SHAPE(2, 3), .dtype = CT_FLOAT64)});
        check_join("stack of 9", 9, CT_SHAPE(2), -1, (join_case){.dim = 1, .stack = true});
    }
}

static void test_cat_mixed_inputs(void) {
    CT_SCOPE {
        /* float32 + float64 (promoted), a legacy-empty [0] and an input that needs no grad */
        ct_tensor *a = ct_ones(CT_SHAPE(2, 2), .dtype = CT_FLOAT32);
        ct_tensor *e = ct_zeros(CT_SHAPE(0), .dtype = CT_FLOAT64);
        ct_tensor *b = ct_ones(CT_SHAPE(1, 2), .dtype = CT_FLOAT64);
        ct_tensor *c = ct_ones(CT_SHAPE(3, 2), .dtype = CT_FLOAT64);
        ct_set_requires_grad(a, true);
        ct_set_requires_grad(e, true);
        ct_set_requires_grad(b, true);
        ct_tensor *w = ct_arange(0, 12, 1, .dtype = CT_FLOAT64);
        ct_tensor *y = ct_cat((ct_tensor *[]){a, e, c, b}, 4, 0);
        CT_EXPECT(ct_dtype_of(y) == CT_FLOAT64);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_mul(ct_flatten(y, 0, -1), w))), CT_OK);
        CT_EXPECT(ct_dtype_of(ct_grad(a)) == CT_FLOAT32);
        CT_EXPECT_CLOSE(ct_grad(a), ((double[]){0, 1, 2, 3}), 4, 0, 0);
        CT_EXPECT_SHAPE(ct_grad(e), CT_SHAPE(0));
        CT_EXPECT_CLOSE(ct_grad(b), ((double[]){10, 11}), 2, 0, 0);
        CT_EXPECT(ct_grad(c) == NULL);
        /* nothing requires grad: no node */
        CT_EXPECT(!ct_requires_grad(ct_cat((ct_tensor *[]){c, c}, 2, 0)));
        CT_EXPECT(!ct_requires_grad(ct_stack((ct_tensor *[]){c, c}, 2, 0)));
    }
}

typedef struct split_case {
    bool chunk;
} split_case;

/* pieces re-joined in reverse order, so each piece's gradient must land right */
static ct_tensor *apply_split(ct_tensor *const *in, int n, void *user) {
    (void)n;
    ct_tensor *pieces[8];
    int k = ((split_case *)user)->chunk ? ct_chunk(in[0], 3, -1, pieces, 8) : ct_split(in[0], 2, 1, pieces, 8);
    if (k <= 0) return NULL;
    ct_tensor *rev[8];
    for (int i = 0; i < k; i++) rev[i] = pieces[k - 1 - i];
    return ct_cat(rev, k, 1);
}

static void test_split_chunk_gradients(void) {
    for (int chunk = 0; chunk < 2; chunk++) {
        CT_SCOPE {
            ct_tensor *x = chunk ? leaf64_strided(CT_SHAPE(3, 7)) : leaf64(CT_SHAPE(3, 7));
            split_case c = {chunk != 0};
            bool ok = false;
            ct_status st = ct_gradcheck(apply_split, &x, 1, &c, &ok);
            CT_EXPECT_MSG(st == CT_OK && ok, "%s: %s", chunk ? "chunk" : "split", ct_last_error());
            ct_clear_error();
            ct_tensor *pieces[4];
            CT_EXPECT(ct_split(x, 3, -1, pieces, 4) == 3);
            CT_EXPECT_STR_EQ(ct_grad_fn_name(pieces[2]), "SplitBackward0");
        }
    }
}

/* ---- index_select and gather ---- */

typedef struct index_case {
    int dim;
    const ct_tensor *index;
    bool gather;
    bool transpose;
} index_case;

static ct_tensor *apply_index(ct_tensor *const *in, int n, void *user) {
    (void)n;
    const index_case *c = user;
    const ct_tensor *x = c->transpose ? ct_transpose(in[0], 0, -1) : in[0];
    return c->gather ? ct_gather(x, c->dim, c->index) : ct_index_select(x, c->dim, c->index);
}

static void check_index(const char *what, ct_shape s, index_case c) {
    CT_SCOPE {
        ct_tensor *x = leaf64(s);
        bool ok = false;
        ct_status st = ct_gradcheck(apply_index, &x, 1, &c, &ok);
        CT_EXPECT_MSG(st == CT_OK && ok, "%s: %s", what, ct_last_error());
        ct_clear_error();
        CT_EXPECT_STR_EQ(ct_grad_fn_name(apply_index(&x, 1, &c)), c.gather ? "GatherBackward0" : "IndexSelectBackward0");
    }
}

static void test_index_gradients(void) {
    CT_SCOPE {
        ct_tensor *rep = ct_tensor_from((int64_t[]){2, 0, 2, 3, 2}, CT_INT64, CT_SHAPE(5), .dtype = CT_INT64);
        ct_tensor *rep32 = ct_to_dtype(rep, CT_INT32);
        check_index("index_select dim 1", CT_SHAPE(3, 4, 2), (index_case){.dim = 1, .index = rep});
        check_index("index_select dim -1 int32", CT_SHAPE(2, 3, 4), (index_case){.dim = -1, .index = rep32});
        check_index("index_select dim 0 strided", CT_SHAPE(3, 4), (index_case){.dim = 0, .index = rep, .transpose = true});
        check_index("index_select 1-D", CT_SHAPE(5), (index_case){.dim = 0, .index = rep});
        ct_tensor *zero = ct_scalar_tensor(0, .dtype = CT_INT64);
        check_index("index_select 0-dim", CT_SHAPE0, (index_case){.dim = 0, .index = zero});
        check_index("index_select 0-dim index", CT_SHAPE(4, 2), (index_case){.dim = 0, .index = ct_scalar_tensor(3, .dtype = CT_INT64)});

        /* gather: repeated indices, index smaller than the input in the other dim */
        ct_tensor *gi = ct_tensor_from((int64_t[]){0, 3, 3, 1, 1, 1, 2, 0, 3}, CT_INT64, CT_SHAPE(3, 3),
                                       .dtype = CT_INT64);
        check_index("gather dim 1", CT_SHAPE(4, 4), (index_case){.dim = 1, .index = gi, .gather = true});
        check_index("gather dim -2", CT_SHAPE(5, 3), (index_case){.dim = -2, .index = gi, .gather = true});
        check_index("gather strided", CT_SHAPE(4, 4),
                    (index_case){.dim = 0, .index = gi, .gather = true, .transpose = true});
        check_index("gather 3-D", CT_SHAPE(2, 4, 3),
                    (index_case){.dim = 1, .index = ct_reshape(ct_narrow(ct_flatten(gi, 0, -1), 0, 0, 6), CT_SHAPE(2, 1, 3)),
                                 .gather = true});
        check_index("gather 1-D", CT_SHAPE(4), (index_case){.dim = 0, .index = ct_flatten(gi, 0, -1), .gather = true});
        check_index("gather 0-dim", CT_SHAPE0, (index_case){.dim = 0, .index = zero, .gather = true});
    }
}

/* sum(index_select(x, 0, idx)): each row gets its number of uses */
static void test_index_select_counts(void) {
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(4, 2), .dtype = CT_FLOAT32);
        ct_set_requires_grad(x, true);
        ct_tensor *idx = ct_tensor_from((int64_t[]){3, 1, 3, 3}, CT_INT64, CT_SHAPE(4), .dtype = CT_INT64);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(ct_index_select(x, 0, idx))), CT_OK);
        CT_EXPECT_CLOSE(ct_grad(x), ((double[]){0, 0, 1, 1, 0, 0, 3, 3}), 8, 0, 0);
        CT_EXPECT(ct_dtype_of(ct_grad(x)) == CT_FLOAT32);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_view_gradients);
    CT_RUN(test_slice_gradient_values);
    CT_RUN(test_view_rules);
    CT_RUN(test_as_strided_not_differentiable);
    CT_RUN(test_to_dtype_gradient);
    CT_RUN(test_to_device_gradient);
    CT_RUN(test_cat_stack_gradients);
    CT_RUN(test_cat_mixed_inputs);
    CT_RUN(test_split_chunk_gradients);
    CT_RUN(test_index_gradients);
    CT_RUN(test_index_select_counts);
    return ct_test_finish();
}
