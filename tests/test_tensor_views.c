/*
 * test_tensor_views.c — every view op of ctorch/tensor.h: view, reshape,
 * as_strided, permute, transpose, t, narrow, slice, select, expand,
 * squeeze/unsqueeze, flatten/unflatten, contiguous, clone and detach.
 *
 * Each view is checked for its shape, its values (element by element with
 * ct_get against indices computed here), whether it shares storage with its
 * base, that writes through it (ct_copy_, ct_fill_) reach the base, and for
 * its error messages in PyTorch's wording.
 */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef double (*value_fn)(const int64_t *idx);

/* Every element of t (row-major walk, read with ct_get) equals f(index). */
static void expect_fn_at(const char *file, int line, const ct_tensor *t, value_fn f) {
    if (!t) {
        ct_test_fail(file, line, "tensor is NULL: %s", ct_last_error());
        return;
    }
    int nd = ct_ndim(t);
    const int64_t *sz = ct_sizes(t);
    int64_t n = ct_numel(t), idx[CT_MAX_DIMS] = {0};
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = ct_get(t, idx), want = f(idx);
        if (v != want && bad++ < 4)
            ct_test_fail(file, line, "element %lld: got %.9g, expected %.9g", (long long)k, v, want);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sz[d]) break;
            idx[d] = 0;
        }
    }
}
#define EXPECT_FN(t, f) expect_fn_at(__FILE__, __LINE__, (t), (f))

static void expect_values_at(const char *file, int line, const ct_tensor *t, const double *e, int64_t n) {
    if (!t) {
        ct_test_fail(file, line, "tensor is NULL: %s", ct_last_error());
        return;
    }
    if (ct_numel(t) != n) {
        ct_test_fail(file, line, "numel %lld, expected %lld", (long long)ct_numel(t), (long long)n);
        return;
    }
    int nd = ct_ndim(t);
    const int64_t *sz = ct_sizes(t);
    int64_t idx[CT_MAX_DIMS] = {0};
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = ct_get(t, idx);
        if (v != e[k] && bad++ < 4)
            ct_test_fail(file, line, "element %lld: got %.9g, expected %.9g", (long long)k, v, e[k]);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sz[d]) break;
            idx[d] = 0;
        }
    }
}
#define EXPECT_VALUES(t, n, ...) expect_values_at(__FILE__, __LINE__, (t), (const double[]){__VA_ARGS__}, (n))

static void expect_strides_at(const char *file, int line, const ct_tensor *t, ct_shape s) {
    if (!t) return;
    bool ok = ct_ndim(t) == s.ndim;
    for (int i = 0; ok && i < s.ndim; i++) ok = ct_strides(t)[i] == s.dims[i];
    if (!ok) ct_test_fail(file, line, "unexpected strides");
}
#define EXPECT_STRIDES(t, s) expect_strides_at(__FILE__, __LINE__, (t), (s))

/* x = arange(24) as a float32 [2, 3, 4]: x[i][j][k] = 12i + 4j + k. */
static ct_tensor *make_x(void) {
    return ct_view(ct_arange(0, 24, 1, .dtype = CT_FLOAT32), CT_SHAPE(2, 3, 4));
}

/* ---- view / reshape / as_strided ---------------------------------------------- */

static double v_flat(const int64_t *i) { return (double)i[0]; }
static double v_4x6(const int64_t *i) { return (double)(i[0] * 6 + i[1]); }
/* [4, 6] transposed to [6, 4], then split into [6, 2, 2] */
static double v_t_split(const int64_t *i) { return (double)((i[1] * 2 + i[2]) * 6 + i[0]); }
/* row-major values of the [6, 4] transpose of a [4, 6] arange */
static double v_t_flat(const int64_t *i) { return (double)((i[0] % 4) * 6 + i[0] / 4); }

static void test_view(void) {
    ct_scope_begin();
    ct_tensor *a = ct_arange(0, 24, 1);
    ct_tensor *v = ct_view(a, CT_SHAPE(4, -1));
    CT_EXPECT_SHAPE(v, CT_SHAPE(4, 6));
    EXPECT_STRIDES(v, CT_SHAPE(6, 1));
    CT_EXPECT(ct_shares_storage(a, v));
    EXPECT_FN(v, v_4x6);
    ct_tensor *flat = ct_view(v, CT_SHAPE(-1));
    CT_EXPECT_SHAPE(flat, CT_SHAPE(24));
    EXPECT_FN(flat, v_flat);
    CT_EXPECT_SHAPE(ct_view(a, CT_SHAPE(2, 3, 4)), CT_SHAPE(2, 3, 4));
    CT_EXPECT_SHAPE(ct_view(a, CT_SHAPE(1, 24, 1)), CT_SHAPE(1, 24, 1));
    CT_EXPECT_SHAPE(ct_view(ct_scalar_tensor(1), CT_SHAPE(1, 1)), CT_SHAPE(1, 1));
    CT_EXPECT_SHAPE(ct_view(ct_zeros(CT_SHAPE(1)), CT_SHAPE0), CT_SHAPE0);
    CT_EXPECT_SHAPE(ct_view(ct_zeros(CT_SHAPE(0, 4)), CT_SHAPE(2, 0, 3)), CT_SHAPE(2, 0, 3));
    CT_EXPECT_SHAPE(ct_view(ct_zeros(CT_SHAPE(0, 4)), CT_SHAPE(-1, 2)), CT_SHAPE(0, 2));
    /* with a zero dim, -1 is ambiguous: torch rejects it */
    CT_EXPECT(ct_view(ct_zeros(CT_SHAPE(0, 4)), CT_SHAPE(2, 0, -1)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "shape '[2, 0, -1]' is invalid for input of size 0");

    /* a non-contiguous tensor can still be viewed when no dim spans two
     * contiguous chunks */
    ct_tensor *t = ct_t(v);
    ct_tensor *split = ct_view(t, CT_SHAPE(6, 2, 2));
    CT_EXPECT_SHAPE(split, CT_SHAPE(6, 2, 2));
    CT_EXPECT(ct_shares_storage(split, a));
    EXPECT_FN(split, v_t_split);

    /* writes through a view reach the base */
    CT_EXPECT_INT_EQ(ct_fill_(ct_select(split, 0, 5), -1), CT_OK);
    int64_t i5[1] = {5}, i11[1] = {11}, i23[1] = {23}, i4[1] = {4};
    CT_EXPECT_NEAR(ct_get(a, i5), -1, 0);
    CT_EXPECT_NEAR(ct_get(a, i11), -1, 0);
    CT_EXPECT_NEAR(ct_get(a, i23), -1, 0);
    CT_EXPECT_NEAR(ct_get(a, i4), 4, 0);

    ct_clear_error();
    CT_EXPECT(ct_view(t, CT_SHAPE(24)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE,
                    "view size is not compatible with input tensor's size and stride (at least one "
                    "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    CT_EXPECT(ct_view(a, CT_SHAPE(5, -1)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "shape '[5, -1]' is invalid for input of size 24");
    CT_EXPECT(ct_view(a, CT_SHAPE(5, 5)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "shape '[5, 5]' is invalid for input of size 24");
    CT_EXPECT(ct_view(a, CT_SHAPE(-1, -1)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "only one dimension can be inferred");
    CT_EXPECT(ct_view(a, CT_SHAPE(-2, -12)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "-2");
    ct_scope_end();
}

static void test_reshape(void) {
    ct_scope_begin();
    ct_tensor *a = ct_view(ct_arange(0, 24, 1), CT_SHAPE(4, 6));
    ct_tensor *r = ct_reshape(a, CT_SHAPE(2, -1, 3));
    CT_EXPECT_SHAPE(r, CT_SHAPE(2, 4, 3));
    CT_EXPECT(ct_shares_storage(r, a)); /* a view when possible */

    ct_tensor *t = ct_t(a);
    ct_tensor *c = ct_reshape(t, CT_SHAPE(24));
    CT_EXPECT_SHAPE(c, CT_SHAPE(24));
    CT_EXPECT(!ct_shares_storage(c, a)); /* copied when not */
    CT_EXPECT(ct_is_contiguous(c));
    EXPECT_FN(c, v_t_flat);
    CT_EXPECT_INT_EQ(ct_dtype_of(c), CT_INT64);
    ct_tensor *split = ct_reshape(t, CT_SHAPE(6, 2, 2)); /* viewable: no copy */
    CT_EXPECT(ct_shares_storage(split, a));
    EXPECT_FN(split, v_t_split);

    ct_clear_error();
    CT_EXPECT(ct_reshape(a, CT_SHAPE(7, -1)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "shape '[7, -1]' is invalid for input of size 24");
    ct_scope_end();
}

static void test_as_strided(void) {
    ct_scope_begin();
    ct_tensor *a = ct_arange(0, 10, 1, .dtype = CT_FLOAT64);
    /* sliding windows of 3, stepping by 2, starting at element 1 */
    ct_tensor *w = ct_as_strided(a, CT_SHAPE(4, 3), (const int64_t[]){2, 1}, 1);
    CT_EXPECT_SHAPE(w, CT_SHAPE(4, 3));
    CT_EXPECT_INT_EQ(ct_storage_offset(w), 1);
    EXPECT_VALUES(w, 12, 1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9);
    CT_EXPECT(ct_shares_storage(w, a));
    ct_tensor *tr = ct_as_strided(a, CT_SHAPE(3, 3), (const int64_t[]){1, 3}, 0);
    EXPECT_VALUES(tr, 9, 0, 3, 6, 1, 4, 7, 2, 5, 8);
    ct_clear_error();
    CT_EXPECT(ct_as_strided(a, CT_SHAPE(3, 4), (const int64_t[]){1, 3}, 0) == NULL);
    CT_EXPECT(ct_last_status() == CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "out of bounds");
    CT_EXPECT(ct_as_strided(a, CT_SHAPE(2), (const int64_t[]){1}, 9) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "out of bounds");
    CT_EXPECT(ct_as_strided(a, CT_SHAPE(2), (const int64_t[]){1}, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "-1");
    ct_scope_end();
}

/* ---- permute / transpose / t ---------------------------------------------------- */

static double v_perm201(const int64_t *i) { return (double)(12 * i[1] + 4 * i[2] + i[0]); }
static double v_tr02(const int64_t *i) { return (double)(12 * i[2] + 4 * i[1] + i[0]); }
static double v_tr12(const int64_t *i) { return (double)(12 * i[0] + 4 * i[2] + i[1]); }

static void test_permute(void) {
    ct_scope_begin();
    ct_tensor *x = make_x();
    ct_tensor *p = ct_permute(x, (const int[]){2, 0, 1});
    CT_EXPECT_SHAPE(p, CT_SHAPE(4, 2, 3));
    EXPECT_STRIDES(p, CT_SHAPE(1, 12, 4));
    CT_EXPECT(ct_shares_storage(p, x));
    EXPECT_FN(p, v_perm201);
    ct_tensor *pn = ct_permute(x, (const int[]){-1, 0, -2});
    EXPECT_FN(pn, v_perm201);
    ct_tensor *id = ct_permute(x, (const int[]){0, 1, 2});
    CT_EXPECT(ct_is_contiguous(id));
    ct_tensor *pc = ct_contiguous(p);
    CT_EXPECT(ct_is_contiguous(pc) && !ct_shares_storage(pc, x));
    EXPECT_FN(pc, v_perm201);

    ct_clear_error();
    CT_EXPECT(ct_permute(x, (const int[]){0, 0, 1}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "permute(): duplicate dims are not allowed");
    CT_EXPECT(ct_permute(x, (const int[]){0, 1, 3}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    ct_scope_end();
}

static void test_transpose_and_t(void) {
    ct_scope_begin();
    ct_tensor *x = make_x();
    ct_tensor *t02 = ct_transpose(x, 0, 2);
    CT_EXPECT_SHAPE(t02, CT_SHAPE(4, 3, 2));
    EXPECT_STRIDES(t02, CT_SHAPE(1, 4, 12));
    EXPECT_FN(t02, v_tr02);
    EXPECT_FN(ct_transpose(x, -1, 0), v_tr02);
    EXPECT_FN(ct_transpose(x, 1, -1), v_tr12);
    CT_EXPECT(ct_is_contiguous(ct_transpose(x, 1, 1)));
    CT_EXPECT(ct_shares_storage(t02, x));

    ct_tensor *m = ct_view(ct_arange(0, 6, 1), CT_SHAPE(2, 3));
    ct_tensor *mt = ct_t(m);
    CT_EXPECT_SHAPE(mt, CT_SHAPE(3, 2));
    EXPECT_VALUES(mt, 6, 0, 3, 1, 4, 2, 5);
    EXPECT_VALUES(ct_t(mt), 6, 0, 1, 2, 3, 4, 5);
    ct_tensor *v = ct_arange(0, 3, 1);
    CT_EXPECT_SHAPE(ct_t(v), CT_SHAPE(3)); /* 1-D: unchanged */
    CT_EXPECT_SHAPE(ct_t(ct_scalar_tensor(1)), CT_SHAPE0);

    ct_clear_error();
    CT_EXPECT(ct_t(x) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is 3D");
    CT_EXPECT(ct_transpose(x, 0, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    CT_EXPECT(ct_transpose(x, -4, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got -4");
    ct_scope_end();
}

/* ---- narrow / slice / select ------------------------------------------------------ */

static double v_narrow(const int64_t *i) { return (double)(12 * i[0] + 4 * (i[1] + 1) + i[2]); }
static double v_narrow_last(const int64_t *i) { return (double)(12 * i[0] + 4 * i[1] + i[2] + 2); }

static void test_narrow(void) {
    ct_scope_begin();
    ct_tensor *x = make_x();
    ct_tensor *n = ct_narrow(x, 1, 1, 2);
    CT_EXPECT_SHAPE(n, CT_SHAPE(2, 2, 4));
    CT_EXPECT_INT_EQ(ct_storage_offset(n), 4);
    CT_EXPECT(ct_shares_storage(n, x));
    EXPECT_FN(n, v_narrow);
    EXPECT_FN(ct_narrow(x, -1, 2, 2), v_narrow_last);
    EXPECT_FN(ct_narrow(x, 2, -2, 2), v_narrow_last); /* negative start wraps */
    CT_EXPECT_SHAPE(ct_narrow(x, 0, 2, 0), CT_SHAPE(0, 3, 4));

    ct_clear_error();
    CT_EXPECT(ct_narrow(x, 1, 2, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "start (2) + length (2) exceeds dimension size (3).");
    CT_EXPECT(ct_narrow(x, 1, 0, -1) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    CT_EXPECT(ct_narrow(x, 1, 5, 0) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    CT_EXPECT(ct_narrow(x, 3, 0, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range");
    CT_EXPECT(ct_narrow(ct_scalar_tensor(1), 0, 0, 1) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    ct_scope_end();
}

static void test_slice(void) {
    ct_scope_begin();
    ct_tensor *a = ct_arange(0, 10, 1);
    ct_tensor *s = ct_slice(a, 0, 2, 8, 2);
    CT_EXPECT_SHAPE(s, CT_SHAPE(3));
    EXPECT_STRIDES(s, CT_SHAPE(2));
    CT_EXPECT_INT_EQ(ct_storage_offset(s), 2);
    EXPECT_VALUES(s, 3, 2, 4, 6);
    EXPECT_VALUES(ct_slice(a, 0, 2, 9, 2), 4, 2, 4, 6, 8);
    EXPECT_VALUES(ct_slice(a, 0, -3, 10, 1), 3, 7, 8, 9);
    EXPECT_VALUES(ct_slice(a, 0, 0, 100, 3), 4, 0, 3, 6, 9);
    EXPECT_VALUES(ct_slice(a, 0, -100, 2, 1), 2, 0, 1);
    EXPECT_VALUES(ct_slice(a, 0, 3, INT64_MAX, 4), 2, 3, 7);
    EXPECT_VALUES(ct_slice(a, -1, -4, -1, 1), 3, 6, 7, 8);
    CT_EXPECT_SHAPE(ct_slice(a, 0, 5, 2, 1), CT_SHAPE(0));
    CT_EXPECT_SHAPE(ct_slice(a, 0, 20, 30, 1), CT_SHAPE(0));
    CT_EXPECT_SHAPE(ct_slice(a, 0, -20, -15, 1), CT_SHAPE(0));

    /* along an inner dim, then written through */
    ct_tensor *m = ct_zeros(CT_SHAPE(2, 5), .dtype = CT_INT32);
    ct_tensor *cols = ct_slice(m, 1, 1, 5, 3); /* columns 1 and 4 */
    CT_EXPECT_SHAPE(cols, CT_SHAPE(2, 2));
    CT_EXPECT_INT_EQ(ct_copy_(cols, ct_view(ct_arange(1, 5, 1), CT_SHAPE(2, 2))), CT_OK);
    EXPECT_VALUES(m, 10, 0, 1, 0, 0, 2, 0, 3, 0, 0, 4);

    ct_clear_error();
    CT_EXPECT(ct_slice(a, 0, 0, 5, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "step");
    CT_EXPECT(ct_slice(a, 0, 5, 0, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "step");
    CT_EXPECT(ct_slice(a, 1, 0, 5, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range");
    ct_scope_end();
}

static double v_sel1(const int64_t *i) { return (double)(12 * i[0] + 8 + i[1]); }

static void test_select(void) {
    ct_scope_begin();
    ct_tensor *x = make_x();
    ct_tensor *s = ct_select(x, 1, -1);
    CT_EXPECT_SHAPE(s, CT_SHAPE(2, 4));
    CT_EXPECT(ct_shares_storage(s, x));
    EXPECT_FN(s, v_sel1);
    EXPECT_FN(ct_select(x, 1, 2), v_sel1);
    ct_tensor *s0 = ct_select(ct_select(ct_select(x, 0, 1), 0, 2), 0, 3);
    CT_EXPECT_SHAPE(s0, CT_SHAPE0);
    CT_EXPECT_NEAR(ct_item(s0), 23, 0);
    CT_EXPECT_INT_EQ(ct_fill_(s0, 100), CT_OK);
    int64_t last[3] = {1, 2, 3};
    CT_EXPECT_NEAR(ct_get(x, last), 100, 0);

    ct_clear_error();
    CT_EXPECT(ct_select(x, 1, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "select(): index 3 out of range for tensor of size [2, 3, 4] at dimension 1");
    CT_EXPECT(ct_select(x, 1, -4) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index -4 out of range");
    CT_EXPECT(ct_select(x, 3, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range");
    CT_EXPECT(ct_select(s0, 0, 0) == NULL);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    ct_scope_end();
}

/* ---- expand / squeeze / unsqueeze / flatten / unflatten ---------------------------- */

static double v_col(const int64_t *i) { return (double)i[0]; }
static double v_row_last(const int64_t *i) { return (double)i[2]; }

static void test_expand(void) {
    ct_scope_begin();
    ct_tensor *r = ct_arange(0, 3, 1, .dtype = CT_FLOAT32);
    ct_tensor *e = ct_expand(r, CT_SHAPE(2, 3));
    CT_EXPECT_SHAPE(e, CT_SHAPE(2, 3));
    EXPECT_STRIDES(e, CT_SHAPE(0, 1));
    CT_EXPECT(ct_shares_storage(e, r));
    EXPECT_VALUES(e, 6, 0, 1, 2, 0, 1, 2);
    ct_tensor *c = ct_view(r, CT_SHAPE(3, 1));
    ct_tensor *ce = ct_expand(c, CT_SHAPE(-1, 4));
    CT_EXPECT_SHAPE(ce, CT_SHAPE(3, 4));
    EXPECT_FN(ce, v_col);
    ct_tensor *lead = ct_expand(ct_view(r, CT_SHAPE(1, 3)), CT_SHAPE(4, 2, -1));
    CT_EXPECT_SHAPE(lead, CT_SHAPE(4, 2, 3));
    EXPECT_FN(lead, v_row_last);
    ct_tensor *ea = ct_expand_as(c, ct_zeros(CT_SHAPE(2, 3, 5)));
    CT_EXPECT_SHAPE(ea, CT_SHAPE(2, 3, 5));
    CT_EXPECT_SHAPE(ct_expand(ct_scalar_tensor(2), CT_SHAPE(2, 2)), CT_SHAPE(2, 2));
    CT_EXPECT_SHAPE(ct_expand(r, CT_SHAPE(0, 3)), CT_SHAPE(0, 3));
    /* an expanded tensor is not contiguous; contiguous() materialises it */
    CT_EXPECT(!ct_is_contiguous(e));
    ct_tensor *m = ct_contiguous(e);
    CT_EXPECT(ct_is_contiguous(m) && !ct_shares_storage(m, r));
    EXPECT_VALUES(m, 6, 0, 1, 2, 0, 1, 2);

    ct_clear_error();
    CT_EXPECT(ct_expand(ct_zeros(CT_SHAPE(2, 3)), CT_SHAPE(2, 4)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "The expanded size of the tensor (4) must match the existing size (3) "
                                  "at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [2, 3]");
    CT_EXPECT(ct_expand(ct_zeros(CT_SHAPE(2, 3)), CT_SHAPE(3)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "the number of sizes provided (1) must be greater or equal to the number "
                                  "of dimensions in the tensor (2)");
    CT_EXPECT(ct_expand(r, CT_SHAPE(-1, 3)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "-1");
    ct_scope_end();
}

static void test_squeeze_unsqueeze(void) {
    ct_scope_begin();
    ct_tensor *a = ct_view(ct_arange(0, 6, 1), CT_SHAPE(1, 3, 1, 2));
    ct_tensor *s = ct_squeeze(a);
    CT_EXPECT_SHAPE(s, CT_SHAPE(3, 2));
    CT_EXPECT(ct_shares_storage(s, a));
    EXPECT_VALUES(s, 6, 0, 1, 2, 3, 4, 5);
    CT_EXPECT_SHAPE(ct_squeeze_dim(a, 0), CT_SHAPE(3, 1, 2));
    CT_EXPECT_SHAPE(ct_squeeze_dim(a, 1), CT_SHAPE(1, 3, 1, 2)); /* size 3: unchanged */
    CT_EXPECT_SHAPE(ct_squeeze_dim(a, -2), CT_SHAPE(1, 3, 2));
    CT_EXPECT_SHAPE(ct_squeeze(ct_zeros(CT_SHAPE(1, 1))), CT_SHAPE0);
    CT_EXPECT_SHAPE(ct_squeeze(ct_scalar_tensor(3)), CT_SHAPE0);

    ct_tensor *b = ct_view(ct_arange(0, 6, 1), CT_SHAPE(2, 3));
    CT_EXPECT_SHAPE(ct_unsqueeze(b, 0), CT_SHAPE(1, 2, 3));
    CT_EXPECT_SHAPE(ct_unsqueeze(b, 1), CT_SHAPE(2, 1, 3));
    CT_EXPECT_SHAPE(ct_unsqueeze(b, 2), CT_SHAPE(2, 3, 1));
    CT_EXPECT_SHAPE(ct_unsqueeze(b, -1), CT_SHAPE(2, 3, 1));
    CT_EXPECT_SHAPE(ct_unsqueeze(b, -3), CT_SHAPE(1, 2, 3));
    CT_EXPECT_SHAPE(ct_unsqueeze(ct_scalar_tensor(1), 0), CT_SHAPE(1));
    ct_tensor *u = ct_unsqueeze(ct_t(b), 1); /* on a non-contiguous tensor */
    CT_EXPECT_SHAPE(u, CT_SHAPE(3, 1, 2));
    EXPECT_VALUES(u, 6, 0, 3, 1, 4, 2, 5);
    CT_EXPECT(ct_shares_storage(u, b));

    ct_clear_error();
    CT_EXPECT(ct_unsqueeze(b, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    CT_EXPECT(ct_unsqueeze(b, -4) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "but got -4");
    CT_EXPECT(ct_squeeze_dim(a, 4) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-4, 3], but got 4)");
    CT_EXPECT(ct_unsqueeze(ct_zeros(CT_SHAPE(1, 1, 1, 1, 1, 1, 1, 1)), 0) == NULL);
    CT_EXPECT(ct_last_status() == CT_ERR_SHAPE);
    ct_clear_error();
    ct_scope_end();
}

static void test_flatten_unflatten(void) {
    ct_scope_begin();
    ct_tensor *x = make_x();
    ct_tensor *f = ct_flatten(x, 0, -1);
    CT_EXPECT_SHAPE(f, CT_SHAPE(24));
    CT_EXPECT(ct_shares_storage(f, x));
    EXPECT_FN(f, v_flat);
    CT_EXPECT_SHAPE(ct_flatten(x, 1, 2), CT_SHAPE(2, 12));
    CT_EXPECT_SHAPE(ct_flatten(x, 0, 1), CT_SHAPE(6, 4));
    CT_EXPECT_SHAPE(ct_flatten(x, 1, 1), CT_SHAPE(2, 3, 4));
    CT_EXPECT_SHAPE(ct_flatten(ct_scalar_tensor(5), 0, -1), CT_SHAPE(1));
    /* non-contiguous input: flatten copies like reshape */
    ct_tensor *t = ct_t(ct_view(ct_arange(0, 24, 1), CT_SHAPE(4, 6)));
    EXPECT_FN(ct_flatten(t, 0, -1), v_t_flat);

    ct_tensor *y = ct_view(x, CT_SHAPE(2, 12));
    ct_tensor *u = ct_unflatten(y, 1, CT_SHAPE(3, 4));
    CT_EXPECT_SHAPE(u, CT_SHAPE(2, 3, 4));
    CT_EXPECT(ct_shares_storage(u, x));
    CT_EXPECT_SHAPE(ct_unflatten(y, -1, CT_SHAPE(3, -1)), CT_SHAPE(2, 3, 4));
    CT_EXPECT_SHAPE(ct_unflatten(y, 0, CT_SHAPE(1, 2)), CT_SHAPE(1, 2, 12));
    ct_tensor *back = ct_unflatten(f, 0, CT_SHAPE(2, 3, 4));
    int64_t idx[3] = {1, 2, 3};
    CT_EXPECT_NEAR(ct_get(back, idx), 23, 0);

    ct_clear_error();
    CT_EXPECT(ct_flatten(x, 2, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "flatten() has invalid args: start_dim cannot come after end_dim");
    CT_EXPECT(ct_flatten(x, 0, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range");
    CT_EXPECT(ct_unflatten(ct_zeros(CT_SHAPE(2, 3)), 1, CT_SHAPE(2, 2)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3)");
    ct_scope_end();
}

/* ---- contiguous / clone / detach ---------------------------------------------------- */

static void test_contiguous_clone_detach(void) {
    ct_scope_begin();
    ct_tensor *a = ct_view(ct_arange(0, 6, 1, .dtype = CT_FLOAT64), CT_SHAPE(2, 3));
    ct_tensor *same = ct_contiguous(a);
    CT_EXPECT(same == a);
    CT_EXPECT_INT_EQ(ct_refcount(a), 2);

    ct_tensor *t = ct_t(a);
    ct_tensor *c = ct_contiguous(t);
    CT_EXPECT(c != t && ct_is_contiguous(c) && !ct_shares_storage(c, a));
    CT_EXPECT_SHAPE(c, CT_SHAPE(3, 2));
    EXPECT_STRIDES(c, CT_SHAPE(2, 1));
    EXPECT_VALUES(c, 6, 0, 3, 1, 4, 2, 5);

    ct_tensor *k = ct_clone(a);
    CT_EXPECT(k != a && !ct_shares_storage(k, a));
    CT_EXPECT_INT_EQ(ct_dtype_of(k), CT_FLOAT64);
    CT_EXPECT_INT_EQ(ct_fill_(k, 9), CT_OK);
    EXPECT_VALUES(a, 6, 0, 1, 2, 3, 4, 5); /* the clone does not alias */
    ct_tensor *kt = ct_clone(t);
    EXPECT_VALUES(kt, 6, 0, 3, 1, 4, 2, 5);
    ct_tensor *ks = ct_clone(ct_slice(ct_arange(0, 10, 1), 0, 1, 10, 3));
    EXPECT_VALUES(ks, 3, 1, 4, 7);
    CT_EXPECT_INT_EQ(ct_storage_offset(ks), 0);

    ct_tensor *d = ct_detach(t);
    CT_EXPECT(ct_shares_storage(d, a));
    CT_EXPECT_SHAPE(d, CT_SHAPE(3, 2));
    EXPECT_VALUES(d, 6, 0, 3, 1, 4, 2, 5);
    ct_scope_end();
}

/* Composed views write into the right elements of the base. */
static void test_writes_through_composed_views(void) {
    ct_scope_begin();
    ct_tensor *base = ct_zeros(CT_SHAPE(4, 5), .dtype = CT_FLOAT64);
    /* rows 1..3, columns 0, 2, 4, transposed: a [3, 3] view */
    ct_tensor *v = ct_t(ct_slice(ct_narrow(base, 0, 1, 3), 1, 0, 5, 2));
    CT_EXPECT_SHAPE(v, CT_SHAPE(3, 3));
    ct_tensor *src = ct_view(ct_arange(1, 10, 1), CT_SHAPE(3, 3));
    CT_EXPECT_INT_EQ(ct_copy_(v, src), CT_OK);
    /* v[i][j] = base[1 + j][2 * i] = 3i + j + 1 */
    EXPECT_VALUES(base, 20,
                  0, 0, 0, 0, 0,
                  1, 0, 4, 0, 7,
                  2, 0, 5, 0, 8,
                  3, 0, 6, 0, 9);
    CT_EXPECT_INT_EQ(ct_fill_(ct_select(v, 1, 0), -1), CT_OK); /* base row 1, columns 0, 2, 4 */
    EXPECT_VALUES(ct_select(base, 0, 1), 5, -1, 0, -1, 0, -1);
    CT_EXPECT_INT_EQ(ct_zero_(ct_unsqueeze(ct_select(base, 1, 4), 0)), CT_OK);
    EXPECT_VALUES(ct_select(base, 1, 4), 4, 0, 0, 0, 0);
    ct_scope_end();
}

/* NULL inputs return NULL without setting a new error. */
static void test_views_propagate_null(void) {
    ct_clear_error();
    CT_EXPECT(ct_view(NULL, CT_SHAPE(2)) == NULL);
    CT_EXPECT(ct_reshape(NULL, CT_SHAPE(2)) == NULL);
    CT_EXPECT(ct_permute(NULL, (const int[]){0}) == NULL);
    CT_EXPECT(ct_transpose(NULL, 0, 1) == NULL);
    CT_EXPECT(ct_t(NULL) == NULL);
    CT_EXPECT(ct_narrow(NULL, 0, 0, 1) == NULL);
    CT_EXPECT(ct_slice(NULL, 0, 0, 1, 1) == NULL);
    CT_EXPECT(ct_select(NULL, 0, 0) == NULL);
    CT_EXPECT(ct_expand(NULL, CT_SHAPE(2)) == NULL);
    CT_EXPECT(ct_expand_as(NULL, NULL) == NULL);
    CT_EXPECT(ct_squeeze(NULL) == NULL);
    CT_EXPECT(ct_squeeze_dim(NULL, 0) == NULL);
    CT_EXPECT(ct_unsqueeze(NULL, 0) == NULL);
    CT_EXPECT(ct_flatten(NULL, 0, -1) == NULL);
    CT_EXPECT(ct_unflatten(NULL, 0, CT_SHAPE(1)) == NULL);
    CT_EXPECT(ct_as_strided(NULL, CT_SHAPE(1), (const int64_t[]){1}, 0) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_view);
    CT_RUN(test_reshape);
    CT_RUN(test_as_strided);
    CT_RUN(test_permute);
    CT_RUN(test_transpose_and_t);
    CT_RUN(test_narrow);
    CT_RUN(test_slice);
    CT_RUN(test_select);
    CT_RUN(test_expand);
    CT_RUN(test_squeeze_unsqueeze);
    CT_RUN(test_flatten_unflatten);
    CT_RUN(test_contiguous_clone_detach);
    CT_RUN(test_writes_through_composed_views);
    CT_RUN(test_views_propagate_null);
    return ct_test_finish();
}
