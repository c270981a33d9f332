/*
 * test_join_index.c — ct_cat, ct_stack, ct_split, ct_chunk, ct_index_select
 * and ct_gather against references computed in the test from the same
 * inputs: every dim (negative too), mixed dtypes with promotion,
 * non-contiguous inputs, views that must share storage, and every error path.
 */
#include <stdlib.h>

#include "testutil.h"

static const ct_dtype k_all_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                        CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
#define N_ALL_DTYPES ((int)(sizeof k_all_dtypes / sizeof k_all_dtypes[0]))

static int64_t rnd(int64_t lo, int64_t hi) { return ct_test_randint(lo, hi + 1); }

static ct_shape random_shape(int ndim, int64_t lo, int64_t hi) {
    ct_shape s = CT_SHAPE0;
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++) s.dims[i] = rnd(lo, hi);
    return s;
}

static int64_t shape_numel(ct_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.dims[i];
    return n;
}

/* A random tensor, non-contiguous when asked (reversed strides). Values are
 * small integers so that every dtype holds them exactly. */
static ct_tensor *random_tensor(ct_shape s, ct_dtype dt, bool noncontiguous) {
    double *v = malloc(sizeof(double) * (size_t)(shape_numel(s) + 1));
    for (int64_t i = 0; i < shape_numel(s); i++)
        v[i] = dt == CT_BOOL ? (double)rnd(0, 1) : (double)rnd(0, 100);
    ct_tensor *t = noncontiguous ? ct_test_noncontiguous(v, s, dt) : ct_test_tensor(v, s, dt);
    free(v);
    return t;
}

/* Row-major coordinates of flat index i in shape s. */
static void unravel(int64_t i, ct_shape s, int64_t *coord) {
    for (int d = s.ndim - 1; d >= 0; d--) {
        coord[d] = s.dims[d] ? i % s.dims[d] : 0;
        i = s.dims[d] ? i / s.dims[d] : 0;
    }
}

static int64_t ravel(const int64_t *coord, ct_shape s) {
    int64_t i = 0;
    for (int d = 0; d < s.ndim; d++) i = i * s.dims[d] + coord[d];
    return i;
}

/* ---- cat ---------------------------------------------------------------------- */

/* Expected values of cat(parts, dim) computed from each part's values. */
static double *reference_cat(ct_tensor *const *parts, int n, int dim, ct_shape out_shape) {
    int64_t total = shape_numel(out_shape);
    double *ref = malloc(sizeof(double) * (size_t)(total + 1));
    int64_t offset = 0;
    for (int p = 0; p < n; p++) {
        ct_shape s = ct_shape_of(parts[p]);
        if (s.ndim == 1 && s.dims[0] == 0 && out_shape.ndim != 1) continue; /* legacy skip */
        double *v = ct_test_values(parts[p]);
        int64_t coord[CT_MAX_DIMS];
        for (int64_t i = 0; i < shape_numel(s); i++) {
            unravel(i, s, coord);
            coord[dim] += offset;
            ref[ravel(coord, out_shape)] = v[i];
        }
        offset += s.dims[dim];
        free(v);
    }
    return ref;
}

static void check_cat(ct_tensor *const *parts, int n, int dim, ct_dtype expected_dtype) {
    ct_tensor *c = ct_cat(parts, n, dim);
    if (!c) {
        CT_EXPECT_MSG(false, "cat failed: %s", ct_last_error());
        return;
    }
    int nd = ct_ndim(c), d = dim < 0 ? dim + nd : dim;
    ct_shape expected = ct_shape_of(parts[0]);
    expected.dims[d] = 0;
    for (int p = 0; p < n; p++) expected.dims[d] += ct_size(parts[p], d);
    CT_EXPECT_SHAPE(c, expected);
    CT_EXPECT_INT_EQ(ct_dtype_of(c), expected_dtype);
    double *ref = reference_cat(parts, n, d, expected);
    CT_EXPECT_CLOSE(c, ref, shape_numel(expected), 0, 0);
    free(ref);
}

static void test_cat_every_dim_mixed_dtypes(void) {
    struct { ct_dtype a, b, c, result; } combos[] = {
        {CT_FLOAT32, CT_FLOAT32, CT_FLOAT32, CT_FLOAT32},
        {CT_FLOAT32, CT_INT64, CT_FLOAT16, CT_FLOAT32},
        {CT_FLOAT16, CT_BFLOAT16, CT_FLOAT16, CT_FLOAT32},
        {CT_INT32, CT_UINT8, CT_BOOL, CT_INT32},
        {CT_BOOL, CT_UINT8, CT_BOOL, CT_UINT8},
        {CT_INT64, CT_FLOAT64, CT_INT32, CT_FLOAT64},
        {CT_BOOL, CT_BOOL, CT_BOOL, CT_BOOL},
        {CT_UINT8, CT_INT64, CT_FLOAT16, CT_FLOAT16},
    };
    for (size_t k = 0; k < sizeof combos / sizeof combos[0]; k++)
        for (int ndim = 1; ndim <= 4; ndim++)
            for (int dim = -ndim; dim < ndim; dim++) CT_SCOPE {
                    int d = dim < 0 ? dim + ndim : dim;
                    ct_shape s = random_shape(ndim, 1, 4);
                    ct_dtype dts[3] = {combos[k].a, combos[k].b, combos[k].c};
                    ct_tensor *parts[3];
                    for (int p = 0; p < 3; p++) {
                        ct_shape sp = s;
                        sp.dims[d] = rnd(0, 3); /* an empty part along dim is fine */
                        parts[p] = random_tensor(sp, dts[p], p == 1);
                    }
                    check_cat(parts, 3, dim, combos[k].result);
                }
}

static void test_cat_single_and_noncontiguous(void) {
    CT_SCOPE {
        ct_tensor *t = random_tensor(CT_SHAPE(3, 4), CT_FLOAT32, true);
        ct_tensor *one[1] = {t};
        check_cat(one, 1, 1, CT_FLOAT32);
        ct_tensor *c = ct_cat(one, 1, 0);
        CT_EXPECT(!ct_shares_storage(c, t)); /* cat always makes a new tensor */
        /* a transposed and an expanded input */
        ct_tensor *tr = ct_t(random_tensor(CT_SHAPE(4, 3), CT_INT64, false));
        ct_tensor *ex = ct_expand(random_tensor(CT_SHAPE(1, 4), CT_FLOAT64, false), CT_SHAPE(5, 4));
        ct_tensor *parts[3] = {t, tr, ex};
        check_cat(parts, 3, 0, CT_FLOAT64);
    }
}

static void test_cat_legacy_empty_tensors(void) {
    CT_SCOPE {
        ct_tensor *a = random_tensor(CT_SHAPE(2, 3), CT_FLOAT32, false);
        ct_tensor *e = ct_zeros(CT_SHAPE(0), .dtype = CT_FLOAT64);
        ct_tensor *b = random_tensor(CT_SHAPE(2, 2), CT_FLOAT32, false);
        ct_tensor *parts[4] = {e, a, e, b};
        ct_tensor *c = ct_cat(parts, 4, 1);
        CT_EXPECT_SHAPE(c, CT_SHAPE(2, 5));
        CT_EXPECT_INT_EQ(ct_dtype_of(c), CT_FLOAT64); /* skipped inputs still promote */
        ct_tensor *ab[2] = {a, b};
        double *ref = reference_cat(ab, 2, 1, CT_SHAPE(2, 5));
        CT_EXPECT_CLOSE(c, ref, 10, 0, 0);
        free(ref);
        ct_tensor *empties[2] = {e, e};
        CT_EXPECT_SHAPE(ct_cat(empties, 2, 0), CT_SHAPE(0));
        /* a 1-D empty among 1-D tensors is ordinary */
        ct_tensor *v = random_tensor(CT_SHAPE(3), CT_FLOAT64, false);
        ct_tensor *ve[2] = {e, v};
        check_cat(ve, 2, 0, CT_FLOAT64);
    }
}

static void test_cat_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(2, 3)), *b = ct_zeros(CT_SHAPE(2, 4)), *c = ct_zeros(CT_SHAPE(3, 3));
        ct_tensor *ab[2] = {a, b};
        CT_EXPECT(ct_cat(ab, 2, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "Sizes of tensors must match except in dimension 0. Expected size 3 but got size "
                        "4 for tensor number 1 in the list.");
        ct_tensor *ac[2] = {a, c};
        CT_EXPECT(ct_cat(ac, 2, 1) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "Sizes of tensors must match except in dimension 1. Expected size 2 but got size "
                        "3 for tensor number 1 in the list.");
        ct_tensor *a3[2] = {a, ct_zeros(CT_SHAPE(2, 3, 1))};
        CT_EXPECT(ct_cat(a3, 2, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Tensors must have same number of dimensions: got 2 and 3");
        ct_tensor *sc[2] = {a, ct_scalar_tensor(1.0)};
        CT_EXPECT(ct_cat(sc, 2, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "zero-dimensional tensor (at position 1) cannot be concatenated");
        CT_EXPECT(ct_cat(ab, 0, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "expected a non-empty list of Tensors");
        CT_EXPECT(ct_cat(ab, 2, 2) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
        CT_EXPECT(ct_cat(NULL, 2, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "cat");
        /* NULL inputs propagate without a new error */
        ct_tensor *an[2] = {a, NULL};
        CT_EXPECT(ct_cat(an, 2, 0) == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- stack -------------------------------------------------------------------- */

static void test_stack_every_dim(void) {
    for (int ndim = 0; ndim <= 3; ndim++)
        for (int dim = -ndim - 1; dim <= ndim; dim++) CT_SCOPE {
                int d = dim < 0 ? dim + ndim + 1 : dim;
                ct_shape s = random_shape(ndim, 1, 4);
                ct_dtype dts[3] = {CT_INT32, CT_FLOAT16, CT_UINT8};
                ct_tensor *parts[3];
                double *vals[3];
                for (int p = 0; p < 3; p++) {
                    parts[p] = random_tensor(s, dts[p], p == 2);
                    vals[p] = ct_test_values(parts[p]);
                }
                ct_tensor *st = ct_stack(parts, 3, dim);
                ct_shape expected = CT_SHAPE0;
                expected.ndim = ndim + 1;
                for (int i = 0, j = 0; i <= ndim; i++) expected.dims[i] = i == d ? 3 : s.dims[j++];
                CT_EXPECT_SHAPE(st, expected);
                CT_EXPECT_INT_EQ(ct_dtype_of(st), CT_FLOAT16);
                int64_t n = shape_numel(expected);
                double *ref = malloc(sizeof(double) * (size_t)n);
                int64_t coord[CT_MAX_DIMS + 1], inner[CT_MAX_DIMS];
                for (int64_t i = 0; i < n; i++) {
                    unravel(i, expected, coord);
                    for (int k = 0, j = 0; k <= ndim; k++)
                        if (k != d) inner[j++] = coord[k];
                    ref[i] = vals[coord[d]][ravel(inner, s)];
                }
                CT_EXPECT_CLOSE(st, ref, n, 0, 0);
                free(ref);
                for (int p = 0; p < 3; p++) free(vals[p]);
            }
}

static void test_stack_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(2, 3)), *b = ct_zeros(CT_SHAPE(2, 4));
        ct_tensor *ab[2] = {a, b};
        CT_EXPECT(ct_stack(ab, 2, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
        CT_EXPECT(ct_stack(ab, 0, 0) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "stack expects a non-empty TensorList");
        ct_tensor *aa[2] = {a, a};
        CT_EXPECT(ct_stack(aa, 2, 3) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
        ct_tensor *an[2] = {NULL, a};
        CT_EXPECT(ct_stack(an, 2, 0) == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- split / chunk -------------------------------------------------------------- */

/* The pieces lie back to back along dim, share a's storage and hold a's values. */
static void check_pieces(const ct_tensor *a, int dim, ct_tensor **pieces, int count,
                         const int64_t *expected_sizes) {
    int d = dim < 0 ? dim + ct_ndim(a) : dim;
    int64_t start = 0;
    for (int i = 0; i < count; i++) {
        CT_EXPECT_INT_EQ(ct_size(pieces[i], d), expected_sizes[i]);
        CT_EXPECT(ct_shares_storage(pieces[i], a));
        ct_tensor *expected = ct_narrow(a, d, start, expected_sizes[i]);
        double *v = ct_test_values(expected);
        CT_EXPECT_CLOSE(pieces[i], v, ct_numel(expected), 0, 0);
        free(v);
        start += expected_sizes[i];
    }
    CT_EXPECT_INT_EQ(start, ct_size(a, d));
}

static void test_split_every_dim(void) {
    for (int ndim = 1; ndim <= 3; ndim++)
        for (int dim = -ndim; dim < ndim; dim++) CT_SCOPE {
                int d = dim < 0 ? dim + ndim : dim;
                ct_tensor *a = random_tensor(random_shape(ndim, 1, 7), CT_FLOAT32, dim % 2 != 0);
                int64_t size = ct_size(a, d), split = rnd(1, 4);
                int expected = (int)((size + split - 1) / split);
                ct_tensor *pieces[8];
                CT_EXPECT_INT_EQ(ct_split(a, split, dim, NULL, 0), expected);
                CT_EXPECT_INT_EQ(ct_split(a, split, dim, pieces, 8), expected);
                int64_t sizes[8];
                for (int i = 0; i < expected; i++)
                    sizes[i] = size - i * split < split ? size - i * split : split;
                check_pieces(a, dim, pieces, expected, sizes);
            }
}

static void test_split_views_write_through(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(5, 2));
        ct_tensor *pieces[3];
        CT_EXPECT_INT_EQ(ct_split(a, 2, 0, pieces, 3), 3);
        CT_EXPECT_INT_EQ(ct_fill_(pieces[1], 7.0), CT_OK);
        double expected[10] = {0, 0, 0, 0, 7, 7, 7, 7, 0, 0};
        CT_EXPECT_CLOSE(a, expected, 10, 0, 0);
        /* max smaller than the count: only max views are written */
        ct_tensor *two[2] = {NULL, NULL};
        CT_EXPECT_INT_EQ(ct_split(a, 1, 0, two, 2), 5);
        CT_EXPECT_SHAPE(two[1], CT_SHAPE(1, 2));
        /* split larger than the dim: one piece, all of it */
        CT_EXPECT_INT_EQ(ct_split(a, 9, 0, pieces, 3), 1);
        CT_EXPECT_SHAPE(pieces[0], CT_SHAPE(5, 2));
        /* a zero-size dim may be split with split_size 0 */
        ct_tensor *e = ct_zeros(CT_SHAPE(0, 3));
        CT_EXPECT_INT_EQ(ct_split(e, 0, 0, pieces, 3), 1);
        CT_EXPECT_SHAPE(pieces[0], CT_SHAPE(0, 3));
        CT_EXPECT_INT_EQ(ct_split(e, 2, 0, pieces, 3), 1);
    }
}

static void test_chunk(void) {
    CT_SCOPE {
        ct_tensor *a = random_tensor(CT_SHAPE(3, 6), CT_INT64, true);
        ct_tensor *pieces[8];
        CT_EXPECT_INT_EQ(ct_chunk(a, 4, 1, pieces, 8), 3); /* torch.chunk may return fewer */
        check_pieces(a, 1, pieces, 3, (int64_t[]){2, 2, 2});
        CT_EXPECT_INT_EQ(ct_chunk(a, 2, -1, pieces, 8), 2);
        check_pieces(a, -1, pieces, 2, (int64_t[]){3, 3});
        CT_EXPECT_INT_EQ(ct_chunk(a, 6, 1, pieces, 8), 6);
        check_pieces(a, 1, pieces, 6, (int64_t[]){1, 1, 1, 1, 1, 1});
        CT_EXPECT_INT_EQ(ct_chunk(a, 8, 1, pieces, 8), 6);
        CT_EXPECT_INT_EQ(ct_chunk(a, 2, 0, pieces, 8), 2);
        check_pieces(a, 0, pieces, 2, (int64_t[]){2, 1});
        CT_EXPECT_INT_EQ(ct_chunk(a, 1, 0, NULL, 0), 1);
        ct_tensor *b = random_tensor(CT_SHAPE(5), CT_FLOAT32, false);
        CT_EXPECT_INT_EQ(ct_chunk(b, 3, 0, pieces, 8), 3);
        check_pieces(b, 0, pieces, 3, (int64_t[]){2, 2, 1});
        CT_EXPECT_INT_EQ(ct_chunk(b, 4, 0, pieces, 8), 3);
        check_pieces(b, 0, pieces, 3, (int64_t[]){2, 2, 1});
        /* an empty dim still yields `chunks` empty pieces */
        ct_tensor *e = ct_zeros(CT_SHAPE(2, 0));
        CT_EXPECT_INT_EQ(ct_chunk(e, 3, 1, pieces, 8), 3);
        for (int i = 0; i < 3; i++) CT_EXPECT_SHAPE(pieces[i], CT_SHAPE(2, 0));
    }
}

static void test_split_chunk_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(4, 2)), *s = ct_scalar_tensor(1.0);
        ct_tensor *pieces[4];
        CT_EXPECT_INT_EQ(ct_split(a, -1, 0, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "split expects split_size be non-negative, but got split_size=-1");
        CT_EXPECT_INT_EQ(ct_split(a, 0, 0, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "split_size can only be 0 if dimension size is 0, but got dimension size of 4");
        CT_EXPECT_INT_EQ(ct_split(a, 1, 2, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
        CT_EXPECT_INT_EQ(ct_split(s, 1, 0, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "split expects at least a 1-dimensional tensor");
        CT_EXPECT_INT_EQ(ct_split(a, 1, 0, NULL, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "out is NULL");
        CT_EXPECT_INT_EQ(ct_split(a, 1, 0, pieces, -1), -1);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max must be non-negative");
        CT_EXPECT_INT_EQ(ct_chunk(a, 0, 0, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "chunk expects `chunks` to be greater than 0, got: 0");
        CT_EXPECT_INT_EQ(ct_chunk(s, 2, 0, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "chunk expects at least a 1-dimensional tensor");
        CT_EXPECT_INT_EQ(ct_chunk(a, 2, -3, pieces, 4), -1);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range");
        CT_EXPECT_INT_EQ(ct_split(NULL, 1, 0, pieces, 4), -1);
        CT_EXPECT_INT_EQ(ct_chunk(NULL, 1, 0, pieces, 4), -1);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- index_select ------------------------------------------------------------ */

static void check_index_select(const ct_tensor *a, int dim, const ct_tensor *index) {
    ct_tensor *r = ct_index_select(a, dim, index);
    if (!r) {
        CT_EXPECT_MSG(false, "index_select failed: %s", ct_last_error());
        return;
    }
    ct_shape sa = ct_shape_of(a), expected = sa;
    int d = dim < 0 ? dim + sa.ndim : dim;
    double *va = ct_test_values(a), *vi = ct_test_values(index);
    if (sa.ndim > 0) expected.dims[d] = ct_numel(index);
    CT_EXPECT_SHAPE(r, expected);
    CT_EXPECT_INT_EQ(ct_dtype_of(r), ct_dtype_of(a));
    int64_t n = shape_numel(expected);
    double *ref = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t coord[CT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        unravel(i, expected, coord);
        if (sa.ndim > 0) coord[d] = (int64_t)vi[coord[d]];
        ref[i] = va[ravel(coord, sa)];
    }
    CT_EXPECT_CLOSE(r, ref, n, 0, 0);
    free(ref), free(va), free(vi);
}

static ct_tensor *random_index(int64_t n, int64_t bound, ct_dtype dt) {
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)rnd(0, bound - 1);
    ct_tensor *t = ct_test_tensor(v, CT_SHAPE(n), dt);
    free(v);
    return t;
}

static void test_index_select_every_dtype_and_dim(void) {
    for (int t = 0; t < N_ALL_DTYPES; t++)
        for (int ndim = 1; ndim <= 4; ndim++)
            for (int dim = -ndim; dim < ndim; dim++) CT_SCOPE {
                    int d = dim < 0 ? dim + ndim : dim;
                    ct_tensor *a = random_tensor(random_shape(ndim, 1, 5), k_all_dtypes[t], dim % 2 == 0);
                    ct_dtype idt = (dim + t) % 2 ? CT_INT32 : CT_INT64;
                    /* more indices than the dim has: duplicates are allowed */
                    ct_tensor *idx = random_index(rnd(0, 7), ct_size(a, d), idt);
                    check_index_select(a, dim, idx);
                }
}

static void test_index_select_special_indices(void) {
    CT_SCOPE {
        ct_tensor *a = random_tensor(CT_SHAPE(4, 3), CT_FLOAT32, false);
        /* a 0-dim index selects one slice and keeps the dim */
        ct_tensor *i0 = ct_scalar_tensor(2, .dtype = CT_INT64);
        CT_EXPECT_SHAPE(ct_index_select(a, 0, i0), CT_SHAPE(1, 3));
        check_index_select(a, 0, i0);
        /* a strided (non-contiguous) index */
        ct_tensor *wide = ct_tensor_from((int64_t[]){2, 9, 0, 9, 1, 9}, CT_INT64, CT_SHAPE(6));
        ct_tensor *strided = ct_slice(wide, 0, 0, 6, 2);
        check_index_select(a, 1, strided);
        /* an empty index */
        ct_tensor *none = ct_zeros(CT_SHAPE(0), .dtype = CT_INT64);
        CT_EXPECT_SHAPE(ct_index_select(a, 1, none), CT_SHAPE(4, 0));
        /* a 0-dim input takes a one-element index of value 0 */
        ct_tensor *s = ct_scalar_tensor(5.0);
        ct_tensor *zero = ct_zeros(CT_SHAPE(1), .dtype = CT_INT32);
        ct_tensor *r = ct_index_select(s, 0, zero);
        CT_EXPECT_SHAPE(r, CT_SHAPE0);
        CT_EXPECT_NEAR(ct_item(r), 5.0, 0);
    }
}

static void test_index_select_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(4, 3));
        ct_tensor *bad = ct_tensor_from((int64_t[]){0, 5}, CT_INT64, CT_SHAPE(2));
        CT_EXPECT(ct_index_select(a, 0, bad) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index out of range in self");
        CT_EXPECT(ct_index_select(a, 0, bad) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index 5 is out of bounds for dimension 0 with size 4");
        ct_tensor *neg = ct_tensor_from((int32_t[]){-1}, CT_INT32, CT_SHAPE(1));
        CT_EXPECT(ct_index_select(a, -1, neg) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index -1 is out of bounds for dimension 1 with size 3");
        ct_tensor *fidx = ct_zeros(CT_SHAPE(2));
        CT_EXPECT(ct_index_select(a, 0, fidx) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Expected dtype int32/int64 for index but got: float32");
        ct_tensor *idx2d = ct_zeros(CT_SHAPE(2, 2), .dtype = CT_INT64);
        CT_EXPECT(ct_index_select(a, 0, idx2d) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Index is supposed to be a vector");
        ct_tensor *ok = ct_zeros(CT_SHAPE(2), .dtype = CT_INT64);
        CT_EXPECT(ct_index_select(a, 2, ok) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
        CT_EXPECT(ct_index_select(ct_scalar_tensor(1.0), 0, ok) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Index to scalar can have only 1 value, got 2 value(s)");
        CT_EXPECT(ct_index_select(NULL, 0, ok) == NULL);
        CT_EXPECT(ct_index_select(a, 0, NULL) == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

/* ---- gather ------------------------------------------------------------------ */

static void check_gather(const ct_tensor *a, int dim, const ct_tensor *index) {
    ct_tensor *r = ct_gather(a, dim, index);
    if (!r) {
        CT_EXPECT_MSG(false, "gather failed: %s", ct_last_error());
        return;
    }
    ct_shape sa = ct_shape_of(a), si = ct_shape_of(index);
    int d = dim < 0 ? dim + sa.ndim : dim;
    CT_EXPECT_SHAPE(r, si);
    CT_EXPECT_INT_EQ(ct_dtype_of(r), ct_dtype_of(a));
    double *va = ct_test_values(a), *vi = ct_test_values(index);
    int64_t n = shape_numel(si);
    double *ref = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t coord[CT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        unravel(i, si, coord);
        coord[d] = (int64_t)vi[i];
        ref[i] = va[ravel(coord, sa)];
    }
    CT_EXPECT_CLOSE(r, ref, n, 0, 0);
    free(ref), free(va), free(vi);
}

static void test_gather_every_dtype_and_dim(void) {
    for (int t = 0; t < N_ALL_DTYPES; t++)
        for (int ndim = 1; ndim <= 4; ndim++)
            for (int dim = -ndim; dim < ndim; dim++) CT_SCOPE {
                    int d = dim < 0 ? dim + ndim : dim;
                    ct_shape sa = random_shape(ndim, 1, 5), si = sa;
                    for (int i = 0; i < ndim; i++)
                        si.dims[i] = i == d ? rnd(0, 6) : rnd(0, sa.dims[i]); /* smaller, or longer along dim */
                    ct_tensor *a = random_tensor(sa, k_all_dtypes[t], (dim + t) % 2 == 0);
                    double *v = malloc(sizeof(double) * (size_t)(shape_numel(si) + 1));
                    for (int64_t i = 0; i < shape_numel(si); i++) v[i] = (double)rnd(0, sa.dims[d] - 1);
                    ct_tensor *idx = (t % 2) ? ct_test_noncontiguous(v, si, CT_INT64) : ct_test_tensor(v, si, CT_INT64);
                    free(v);
                    check_gather(a, dim, idx);
                }
}

static void test_gather_known_values(void) {
    CT_SCOPE {
        /* torch.gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]])) */
        ct_tensor *a = ct_tensor_from((int64_t[]){1, 2, 3, 4}, CT_INT64, CT_SHAPE(2, 2));
        ct_tensor *idx = ct_tensor_from((int64_t[]){0, 0, 1, 0}, CT_INT64, CT_SHAPE(2, 2));
        CT_EXPECT_CLOSE(ct_gather(a, 1, idx), ((double[]){1, 1, 4, 3}), 4, 0, 0);
        CT_EXPECT_CLOSE(ct_gather(a, 0, idx), ((double[]){1, 2, 3, 2}), 4, 0, 0);
        /* scalars are one-element vectors */
        ct_tensor *s = ct_scalar_tensor(3.0);
        ct_tensor *z = ct_scalar_tensor(0, .dtype = CT_INT64);
        ct_tensor *r = ct_gather(s, 0, z);
        CT_EXPECT_SHAPE(r, CT_SHAPE0);
        CT_EXPECT_NEAR(ct_item(r), 3.0, 0);
        CT_EXPECT_SHAPE(ct_gather(a, 0, ct_zeros(CT_SHAPE(0, 2), .dtype = CT_INT64)), CT_SHAPE(0, 2));
    }
}

static void test_gather_errors(void) {
    CT_SCOPE {
        ct_tensor *a = ct_zeros(CT_SHAPE(2, 4));
        ct_tensor *bad = ct_tensor_from((int64_t[]){0, 5, 1, 2}, CT_INT64, CT_SHAPE(2, 2));
        CT_EXPECT(ct_gather(a, 1, bad) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index 5 is out of bounds for dimension 1 with size 4");
        ct_tensor *neg = ct_tensor_from((int64_t[]){-1, 0}, CT_INT64, CT_SHAPE(1, 2));
        CT_EXPECT(ct_gather(a, 0, neg) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "index -1 is out of bounds for dimension 0 with size 2");
        CT_EXPECT(ct_gather(a, 1, ct_zeros(CT_SHAPE(2, 2), .dtype = CT_INT32)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_DTYPE, "Expected dtype int64 for index");
        CT_EXPECT(ct_gather(a, 1, ct_zeros(CT_SHAPE(2), .dtype = CT_INT64)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "Index tensor must have the same number of dimensions as input tensor");
        CT_EXPECT(ct_gather(a, 1, ct_zeros(CT_SHAPE(3, 2), .dtype = CT_INT64)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_SHAPE,
                        "Size does not match at dimension 0 expected index [3, 2] to be smaller than self [2, 4] "
                        "apart from dimension 1");
        CT_EXPECT(ct_gather(a, -3, ct_zeros(CT_SHAPE(2, 2), .dtype = CT_INT64)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
        CT_EXPECT(ct_gather(NULL, 0, bad) == NULL);
        CT_EXPECT(ct_gather(a, 0, NULL) == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_cat_every_dim_mixed_dtypes);
    CT_RUN(test_cat_single_and_noncontiguous);
    CT_RUN(test_cat_legacy_empty_tensors);
    CT_RUN(test_cat_errors);
    CT_RUN(test_stack_every_dim);
    CT_RUN(test_stack_errors);
    CT_RUN(test_split_every_dim);
    CT_RUN(test_split_views_write_through);
    CT_RUN(test_chunk);
    CT_RUN(test_split_chunk_errors);
    CT_RUN(test_index_select_every_dtype_and_dim);
    CT_RUN(test_index_select_special_indices);
    CT_RUN(test_index_select_errors);
    CT_RUN(test_gather_every_dtype_and_dim);
    CT_RUN(test_gather_known_values);
    CT_RUN(test_gather_errors);
    return ct_test_finish();
}
