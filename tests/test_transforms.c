/*
 * test_transforms.c — torchvision-style transforms (src/data/transform.c):
 * ToTensor's layouts and values, Normalize against hand-computed values,
 * RandomCrop and RandomHorizontalFlip against the documented key -> draw
 * mapping (recomputed here with ct_philox4x32), their distributions over
 * many keys, Compose's order and sub-keys, Lambda, determinism, and every
 * error.
 */
#include <stdlib.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------ */

static ct_tensor *u8_tensor(const uint8_t *v, ct_shape s) { return ct_tensor_from(v, CT_UINT8, s); }

/* Values of t as doubles (row-major); caller frees. */
static double *vals(const ct_tensor *t) { return ct_test_values(t); }

static uint64_t ph64(uint64_t key, uint64_t lo, uint64_t hi, int pair) {
    uint32_t r[4];
    ct_philox4x32(key, lo, hi, r);
    return ((uint64_t)r[2 * pair] << 32) | r[2 * pair + 1];
}

/* The documented RandomCrop offsets for a key. */
static void crop_offsets(uint64_t key, int64_t Hp, int64_t Wp, int64_t size, int64_t *top, int64_t *left) {
    *top = (int64_t)(ph64(key, 0, 0, 0) % (uint64_t)(Hp - size + 1));
    *left = (int64_t)(ph64(key, 0, 0, 1) % (uint64_t)(Wp - size + 1));
}

/* The documented flip decision for a key. */
static bool flip_decision(uint64_t key, double p) {
    uint32_t r[4];
    ct_philox4x32(key, 0, 0, r);
    return (double)(r[0] >> 8) / 16777216.0 < p;
}

/* Element (plane k, row r, col c) of the zero-padded planes x (H×W each). */
static double padded_at(const double *x, int64_t H, int64_t W, int64_t pad, int64_t k, int64_t r, int64_t c) {
    r -= pad, c -= pad;
    return (r < 0 || r >= H || c < 0 || c >= W) ? 0.0 : x[(k * H + r) * W + c];
}

/* Whether out (planes × size × size) is the window at (top, left) of the padded x. */
static bool is_window(const double *out, const double *x, int64_t planes, int64_t H, int64_t W, int64_t pad,
                      int64_t size, int64_t top, int64_t left) {
    for (int64_t k = 0; k < planes; k++)
        for (int64_t r = 0; r < size; r++)
            for (int64_t c = 0; c < size; c++)
                if (out[(k * size + r) * size + c] != padded_at(x, H, W, pad, k, top + r, left + c)) return false;
    return true;
}

/* ---- ToTensor -------------------------------------------------------------------- */

static void test_to_tensor_hw(void) {
    uint8_t px[12];
    double expect[12];
    for (int i = 0; i < 12; i++) px[i] = (uint8_t)ct_test_randint(0, 256);
    px[0] = 0, px[1] = 255;
    for (int i = 0; i < 12; i++) expect[i] = (double)((float)px[i] / 255.0f);
    ct_tensor *x = u8_tensor(px, CT_SHAPE(3, 4));
    ct_transform *tf = ct_transform_to_tensor(false);
    ct_tensor *y = ct_transform_apply(tf, x, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(1, 3, 4));
    CT_EXPECT_INT_EQ(ct_dtype_of(y), CT_FLOAT32);
    CT_EXPECT_CLOSE(y, expect, 12, 0, 0);
    double *v = vals(y);
    CT_EXPECT(v[0] == 0.0 && v[1] == 1.0);
    free(v);
    ct_release(y);
    ct_release(x);
    ct_transform_free(tf);
}

static void test_to_tensor_hwc_and_chw(void) {
    enum { H = 3, W = 5, C = 3 };
    uint8_t px[H * W * C];
    for (int i = 0; i < H * W * C; i++) px[i] = (uint8_t)ct_test_randint(0, 256);
    double expect[C * H * W];
    for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++)
                expect[(c * H + h) * W + w] = (double)((float)px[(h * W + w) * C + c] / 255.0f);
    ct_transform *hwc = ct_transform_to_tensor(false), *chw = ct_transform_to_tensor(true);
    ct_tensor *x = u8_tensor(px, CT_SHAPE(H, W, C));
    ct_tensor *y = ct_transform_apply(hwc, x, 7);
    CT_EXPECT_SHAPE(y, CT_SHAPE(C, H, W));
    CT_EXPECT_CLOSE(y, expect, C * H * W, 0, 0);
    ct_release(y);

    /* a non-contiguous HWC view: x transposed twice in H and W is the same image */
    ct_tensor *xt = ct_transpose(x, 0, 1);
    ct_tensor *xtc = ct_contiguous(xt);
    ct_tensor *xnc = ct_transpose(xtc, 0, 1);
    CT_EXPECT(!ct_is_contiguous(xnc));
    y = ct_transform_apply(hwc, xnc, 0);
    CT_EXPECT_CLOSE(y, expect, C * H * W, 0, 0);
    ct_release(y);

    /* CHW input (as CIFAR stores it): values / 255 in place */
    ct_tensor *xc = ct_permute(x, (const int[]){2, 0, 1});
    y = ct_transform_apply(chw, xc, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(C, H, W));
    CT_EXPECT_CLOSE(y, expect, C * H * W, 0, 0);
    ct_release(y);
    ct_release(xc);
    ct_release(xnc);
    ct_release(xtc);
    ct_release(xt);
    ct_release(x);
    ct_transform_free(hwc);
    ct_transform_free(chw);
}

static void test_to_tensor_non_uint8_and_errors(void) {
    ct_transform *tf = ct_transform_to_tensor(false);
    /* non-uint8 arrays change layout only (torchvision keeps their values) */
    double v[6] = {0.5, 2, -1, 3, 4, 5};
    ct_tensor *x = ct_test_tensor(v, CT_SHAPE(2, 3), CT_FLOAT32);
    ct_tensor *y = ct_transform_apply(tf, x, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(1, 2, 3));
    CT_EXPECT_INT_EQ(ct_dtype_of(y), CT_FLOAT32);
    CT_EXPECT_CLOSE(y, v, 6, 0, 0);
    CT_EXPECT(!ct_shares_storage(x, y));
    ct_release(y);
    /* a transposed (non-contiguous) float image */
    ct_tensor *xt = ct_test_noncontiguous(v, CT_SHAPE(2, 3), CT_FLOAT64);
    y = ct_transform_apply(tf, xt, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(1, 2, 3));
    CT_EXPECT_INT_EQ(ct_dtype_of(y), CT_FLOAT64);
    CT_EXPECT_CLOSE(y, v, 6, 0, 0);
    ct_release(y);
    ct_release(xt);
    ct_release(x);

    uint8_t px[2 * 2 * 5] = {0};
    x = u8_tensor(px, CT_SHAPE(2, 2, 5));
    CT_EXPECT(ct_transform_apply(tf, x, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "at most 4 channels, got shape [2, 2, 5]");
    ct_release(x);
    x = u8_tensor(px, CT_SHAPE(20));
    CT_EXPECT(ct_transform_apply(tf, x, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "ToTensor: expected an HW, HWC or CHW image, got shape [20]");
    ct_release(x);
    x = u8_tensor(px, CT_SHAPE(1, 2, 2, 5));
    CT_EXPECT(ct_transform_apply(tf, x, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "got shape [1, 2, 2, 5]");
    ct_release(x);
    /* NULL inputs propagate without a new error */
    CT_EXPECT(ct_transform_apply(tf, NULL, 0) == NULL);
    CT_EXPECT(ct_transform_apply(NULL, NULL, 0) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    ct_transform_free(tf);
    ct_transform_free(NULL);
}

/* ---- Normalize -------------------------------------------------------------------- */

static void test_normalize_per_channel(void) {
    enum { B = 2, C = 3, H = 4, W = 5, HW = H * W };
    const double mean[C] = {0.4914, 0.4822, 0.4465}, stdv[C] = {0.247, 0.243, 0.261};
    double *x;
    ct_tensor *t = ct_test_random(CT_SHAPE(C, H, W), CT_FLOAT32, 0, 1, &x);
    double expect[B * C * HW];
    for (int i = 0; i < C * HW; i++) {
        int c = i / HW;
        expect[i] = (double)(((float)x[i] - (float)mean[c]) / (float)stdv[c]);
    }
    ct_transform *tf = ct_transform_normalize(mean, stdv, C);
    ct_tensor *y = ct_transform_apply(tf, t, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(C, H, W));
    CT_EXPECT_CLOSE(y, expect, C * HW, 0, 0);   /* float32 math, as torchvision */
    CT_EXPECT(!ct_shares_storage(t, y));
    ct_release(y);
    /* the input is untouched */
    CT_EXPECT_CLOSE(t, x, C * HW, 0, 0);

    /* float64 and a batch (..., C, H, W) of non-contiguous values */
    double *x2;
    ct_tensor *t64 = ct_test_random(CT_SHAPE(B, C, H, W), CT_FLOAT64, -2, 2, &x2);
    for (int i = 0; i < B * C * HW; i++) {
        int c = (i / HW) % C;
        expect[i] = (x2[i] - mean[c]) / stdv[c];
    }
    ct_tensor *nc = ct_test_noncontiguous(x2, CT_SHAPE(B, C, H, W), CT_FLOAT64);
    y = ct_transform_apply(tf, nc, 0);
    CT_EXPECT_INT_EQ(ct_dtype_of(y), CT_FLOAT64);
    CT_EXPECT_CLOSE(y, expect, B * C * HW, 1e-15, 0);
    ct_release(y);
    ct_release(nc);
    ct_release(t64);
    ct_transform_free(tf);

    /* one mean/std for every channel; float16 input comes back as float16 */
    tf = ct_transform_normalize1(0.5, 0.25);
    ct_tensor *h = ct_to_dtype(t, CT_FLOAT16);
    double *xh = vals(h);
    for (int i = 0; i < C * HW; i++) expect[i] = (double)(((float)xh[i] - 0.5f) / 0.25f);
    y = ct_transform_apply(tf, h, 0);
    CT_EXPECT_INT_EQ(ct_dtype_of(y), CT_FLOAT16);
    CT_EXPECT_CLOSE(y, expect, C * HW, 1e-3, 1e-5);   /* one float16 rounding */
    ct_release(y);
    ct_release(h);
    free(xh);
    ct_release(t);
    ct_transform_free(tf);
    free(x);
    free(x2);
}

static void test_normalize_hand_values(void) {
    /* 2 channels of 1×2: ((0, 1), (0.5, 1)) with mean (0.5, 0.25), std (0.5, 0.25) */
    double v[4] = {0, 1, 0.5, 1}, expect[4] = {-1, 1, 1, 3};
    ct_tensor *t = ct_test_tensor(v, CT_SHAPE(2, 1, 2), CT_FLOAT32);
    ct_transform *tf = ct_transform_normalize((const double[]){0.5, 0.25}, (const double[]){0.5, 0.25}, 2);
    ct_tensor *y = ct_transform_apply(tf, t, 0);
    CT_EXPECT_CLOSE(y, expect, 4, 0, 0);
    ct_release(y);
    ct_release(t);
    ct_transform_free(tf);
}

static void test_normalize_errors(void) {
    const double m3[3] = {0, 0, 0}, s3[3] = {1, 0, 1};
    CT_EXPECT(ct_transform_normalize(m3, s3, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG,
                    "std evaluated to zero after conversion to float32, leading to division by zero");
    CT_EXPECT(ct_transform_normalize1(0.5, 1e-50) == NULL);   /* zero once in float32 */
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "std evaluated to zero");
    CT_EXPECT(ct_transform_normalize(m3, s3, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Normalize: expected 1 or more mean and std values, got 0");
    CT_EXPECT(ct_transform_normalize(NULL, s3, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL");

    ct_transform *tf = ct_transform_normalize((const double[]){0.1, 0.2}, (const double[]){1, 2}, 2);
    ct_tensor *t = ct_zeros(CT_SHAPE(3, 4, 4));
    CT_EXPECT(ct_transform_apply(tf, t, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "Normalize: 2 mean/std values for an image of 3 channels");
    ct_release(t);
    t = ct_zeros(CT_SHAPE(4, 4));
    CT_EXPECT(ct_transform_apply(tf, t, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = [4, 4]");
    ct_release(t);
    t = ct_zeros(CT_SHAPE(2, 4, 4), .dtype = CT_UINT8);
    CT_EXPECT(ct_transform_apply(tf, t, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "Input tensor should be a float tensor. Got uint8.");
    ct_release(t);
    ct_transform_free(tf);
}

/* ---- RandomCrop ------------------------------------------------------------------- */

static void test_random_crop_matches_mapping(void) {
    /* uint8 CHW and float32 HW, with and without padding, at the offsets the key picks */
    const struct { int64_t C, H, W, size, pad; ct_dtype dt; } cases[] = {
        {2, 5, 6, 4, 2, CT_UINT8}, {1, 7, 7, 7, 0, CT_FLOAT32}, {0, 6, 5, 5, 1, CT_FLOAT32},
        {3, 8, 8, 8, 4, CT_INT64}, {1, 3, 9, 2, 3, CT_FLOAT64},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int64_t C = cases[ci].C, H = cases[ci].H, W = cases[ci].W, size = cases[ci].size, pad = cases[ci].pad;
        int64_t planes = C ? C : 1;
        double *x;
        ct_shape s = C ? CT_SHAPE(C, H, W) : CT_SHAPE(H, W);
        ct_tensor *t = ct_test_random(s, cases[ci].dt, 1, 200, &x);
        ct_transform *tf = ct_transform_random_crop(size, pad);
        for (int k = 0; k < 40; k++) {
            uint64_t key = ct_test_rand_u64();
            int64_t top, left;
            crop_offsets(key, H + 2 * pad, W + 2 * pad, size, &top, &left);
            ct_tensor *y = ct_transform_apply(tf, t, key);
            CT_EXPECT_SHAPE(y, C ? CT_SHAPE(C, size, size) : CT_SHAPE(size, size));
            CT_EXPECT_INT_EQ(ct_dtype_of(y), cases[ci].dt);
            double *o = vals(y);
            CT_EXPECT_MSG(is_window(o, x, planes, H, W, pad, size, top, left),
                          "case %zu key %llu: output is not the window at (%lld, %lld)", ci,
                          (unsigned long long)key, (long long)top, (long long)left);
            free(o);
            ct_release(y);
        }
        ct_transform_free(tf);
        ct_release(t);
        free(x);
    }
}

static void test_random_crop_distribution(void) {
    /* 28×28 with padding 4 cropped to 28: each offset 0..8 should appear */
    enum { H = 6, W = 6, PAD = 4, SIZE = 6, R = 2 * PAD + 1 };
    double x[H * W];
    for (int i = 0; i < H * W; i++) x[i] = i + 1;   /* every pixel distinct and non-zero */
    ct_tensor *t = ct_test_tensor(x, CT_SHAPE(H, W), CT_FLOAT32);
    ct_transform *tf = ct_transform_random_crop(SIZE, PAD);
    int tops[R] = {0}, lefts[R] = {0};
    ct_tensor *first = NULL;
    int differ = 0;
    for (uint64_t key = 0; key < 600; key++) {
        ct_tensor *y = ct_transform_apply(tf, t, key);
        double *o = vals(y);
        /* find the window by search (independent of the documented mapping) */
        int found = 0;
        for (int top = 0; top < R; top++)
            for (int left = 0; left < R; left++)
                if (is_window(o, x, 1, H, W, PAD, SIZE, top, left)) {
                    tops[top]++, lefts[left]++, found++;
                    int64_t et, el;
                    crop_offsets(key, H + 2 * PAD, W + 2 * PAD, SIZE, &et, &el);
                    CT_EXPECT(et == top && el == left);
                }
        CT_EXPECT_INT_EQ(found, 1);
        free(o);
        if (!first) {
            first = y;
            continue;
        }
        double *a = vals(first), *b = vals(y);
        differ += memcmp(a, b, sizeof(double) * SIZE * SIZE) != 0;
        free(a);
        free(b);
        ct_release(y);
    }
    for (int i = 0; i < R; i++) {
        CT_EXPECT_MSG(tops[i] > 600 / R / 3 && lefts[i] > 600 / R / 3, "offset %d: %d tops, %d lefts", i,
                      tops[i], lefts[i]);
    }
    CT_EXPECT(differ > 500);
    /* the same key gives the same window */
    ct_tensor *again = ct_transform_apply(tf, t, 0);
    double *a = vals(first), *b = vals(again);
    CT_EXPECT(memcmp(a, b, sizeof(double) * SIZE * SIZE) == 0);
    free(a);
    free(b);
    ct_release(again);
    ct_release(first);
    ct_release(t);
    ct_transform_free(tf);
}

static void test_random_crop_errors(void) {
    CT_EXPECT(ct_transform_random_crop(0, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "RandomCrop: size must be positive, got 0");
    CT_EXPECT(ct_transform_random_crop(4, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "padding must be non-negative, got -1");
    ct_transform *tf = ct_transform_random_crop(40, 2);
    ct_tensor *t = ct_zeros(CT_SHAPE(3, 32, 32));
    CT_EXPECT(ct_transform_apply(tf, t, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "Required crop size (40, 40) is larger than input image size (36, 36)");
    ct_release(t);
    t = ct_zeros(CT_SHAPE(50));
    CT_EXPECT(ct_transform_apply(tf, t, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "RandomCrop: expected an HW or CHW image, got shape [50]");
    ct_release(t);
    ct_transform_free(tf);
}

/* ---- RandomHorizontalFlip ------------------------------------------------------------ */

static void test_flip_p0_p1(void) {
    const ct_dtype dts[] = {CT_UINT8, CT_FLOAT16, CT_FLOAT32, CT_FLOAT64, CT_INT64};
    ct_transform *never = ct_transform_random_horizontal_flip(0.0);
    ct_transform *always = ct_transform_random_horizontal_flip(1.0);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        enum { C = 2, H = 3, W = 5 };
        double *x;
        ct_tensor *t = ct_test_random(CT_SHAPE(C, H, W), dts[d], 0, 100, &x);
        double flipped[C * H * W];
        for (int r = 0; r < C * H; r++)
            for (int c = 0; c < W; c++) flipped[r * W + c] = x[r * W + (W - 1 - c)];
        for (int k = 0; k < 20; k++) {
            uint64_t key = ct_test_rand_u64();
            ct_tensor *y0 = ct_transform_apply(never, t, key);
            ct_tensor *y1 = ct_transform_apply(always, t, key);
            CT_EXPECT_CLOSE(y0, x, C * H * W, 0, 0);
            CT_EXPECT_CLOSE(y1, flipped, C * H * W, 0, 0);
            CT_EXPECT_INT_EQ(ct_dtype_of(y1), dts[d]);
            ct_release(y0);
            ct_release(y1);
        }
        /* a non-contiguous input flips the same */
        ct_tensor *nc = ct_test_noncontiguous(x, CT_SHAPE(C, H, W), dts[d]);
        ct_tensor *y = ct_transform_apply(always, nc, 3);
        CT_EXPECT_CLOSE(y, flipped, C * H * W, 0, 0);
        ct_release(y);
        ct_release(nc);
        ct_release(t);
        free(x);
    }
    ct_transform_free(never);
    ct_transform_free(always);
}

static void test_flip_half(void) {
    ct_transform *tf = ct_transform_random_horizontal_flip(0.5);
    double x[4] = {1, 2, 3, 4};
    ct_tensor *t = ct_test_tensor(x, CT_SHAPE(1, 4), CT_FLOAT32);
    int flips = 0;
    for (uint64_t key = 1000; key < 2000; key++) {
        ct_tensor *y = ct_transform_apply(tf, t, key);
        double *o = vals(y);
        bool f = o[0] == 4 && o[3] == 1;
        CT_EXPECT(f || (o[0] == 1 && o[3] == 4));
        CT_EXPECT(f == flip_decision(key, 0.5));
        flips += f;
        free(o);
        ct_release(y);
    }
    /* binomial(1000, 0.5): mean 500, sd 15.8 */
    CT_EXPECT_MSG(flips > 430 && flips < 570, "%d flips of 1000", flips);
    ct_release(t);
    ct_transform_free(tf);

    CT_EXPECT(ct_transform_random_horizontal_flip(1.5) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "RandomHorizontalFlip: p must be a probability in [0, 1], got 1.5");
    CT_EXPECT(ct_transform_random_horizontal_flip(NAN) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "p must be a probability");
}

/* ---- Compose --------------------------------------------------------------------------- */

static void test_compose_order_and_values(void) {
    uint8_t px[2 * 3];
    double expect[6];
    for (int i = 0; i < 6; i++) {
        px[i] = (uint8_t)(i * 40 + 3);
        expect[i] = (double)(((float)px[i] / 255.0f - 0.5f) / 0.25f);
    }
    ct_tensor *x = u8_tensor(px, CT_SHAPE(2, 3));
    ct_transform *tf = CT_COMPOSE(ct_transform_to_tensor(false), ct_transform_normalize1(0.5, 0.25));
    ct_tensor *y = ct_transform_apply(tf, x, 0);
    CT_EXPECT_SHAPE(y, CT_SHAPE(1, 2, 3));
    CT_EXPECT_CLOSE(y, expect, 6, 0, 0);
    ct_release(y);
    ct_transform_free(tf);
    /* the other order fails in Normalize, which sees the uint8 image */
    tf = CT_COMPOSE(ct_transform_normalize1(0.5, 0.25), ct_transform_to_tensor(false));
    CT_EXPECT(ct_transform_apply(tf, x, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DTYPE, "Normalize");
    ct_transform_free(tf);
    /* an empty Compose is the identity; two certain flips cancel */
    const double raw[6] = {3, 43, 83, 123, 163, 203};
    tf = ct_transform_compose(NULL, 0);
    y = ct_transform_apply(tf, x, 5);
    CT_EXPECT_CLOSE(y, raw, 6, 0, 0);
    ct_release(y);
    ct_transform_free(tf);
    tf = CT_COMPOSE(ct_transform_random_horizontal_flip(1), ct_transform_random_horizontal_flip(1));
    y = ct_transform_apply(tf, x, 5);
    CT_EXPECT_CLOSE(y, raw, 6, 0, 0);
    ct_release(y);
    ct_transform_free(tf);
    ct_release(x);
}

static void test_compose_subkeys(void) {
    /* transform i of a Compose sees the sub-key philox(key, i, 1) lanes 0-1 */
    double x[64];
    for (int i = 0; i < 64; i++) x[i] = i + 1;
    ct_tensor *t = ct_test_tensor(x, CT_SHAPE(8, 8), CT_FLOAT32);
    ct_transform *crop = ct_transform_random_crop(6, 3);
    ct_transform *flip = ct_transform_random_horizontal_flip(0.5);
    ct_transform *both = CT_COMPOSE(ct_transform_random_crop(6, 3), ct_transform_random_horizontal_flip(0.5));
    for (int k = 0; k < 30; k++) {
        uint64_t key = ct_test_rand_u64();
        ct_tensor *a = ct_transform_apply(crop, t, ph64(key, 0, 1, 0));
        ct_tensor *b = ct_transform_apply(flip, a, ph64(key, 1, 1, 0));
        ct_tensor *c = ct_transform_apply(both, t, key);
        double *vb = vals(b);
        CT_EXPECT_CLOSE(c, vb, 36, 0, 0);
        free(vb);
        /* determinism: the same key again gives the same result */
        ct_tensor *d = ct_transform_apply(both, t, key);
        double *vc = vals(c);
        CT_EXPECT_CLOSE(d, vc, 36, 0, 0);
        free(vc);
        ct_release(a);
        ct_release(b);
        ct_release(c);
        ct_release(d);
    }
    ct_transform_free(crop);
    ct_transform_free(flip);
    ct_transform_free(both);
    ct_release(t);
}

static void test_compose_errors(void) {
    /* a failed constructor inside CT_COMPOSE: the others are freed (ASan checks) */
    ct_transform *tf = CT_COMPOSE(ct_transform_to_tensor(false), ct_transform_random_crop(-1, 0),
                                  ct_transform_random_horizontal_flip(0.5));
    CT_EXPECT(tf == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "RandomCrop: size must be positive");
    CT_EXPECT(ct_transform_compose(NULL, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Compose: expected a list of transforms");
    /* an error in a later transform names it */
    tf = CT_COMPOSE(ct_transform_random_horizontal_flip(0.5), ct_transform_random_crop(10, 0));
    ct_tensor *t = ct_zeros(CT_SHAPE(4, 4));
    CT_EXPECT(ct_transform_apply(tf, t, 9) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "RandomCrop: Required crop size (10, 10)");
    ct_release(t);
    ct_transform_free(tf);
}

/* ---- Lambda ------------------------------------------------------------------------------ */

typedef struct lambda_state {
    int calls, freed;
    uint64_t last_key;
} lambda_state;

/* x + 1 in a fresh float32 tensor; records the key it saw. */
static ct_tensor *add_one(const ct_tensor *x, uint64_t key, void *state) {
    lambda_state *st = state;
    st->calls++;
    st->last_key = key;
    ct_tensor *y = ct_to_dtype(x, CT_FLOAT32);
    ct_tensor *c = ct_clone(y);
    ct_release(y);
    float *d = ct_data_ptr(c);
    for (int64_t i = 0; i < ct_numel(c); i++) d[i] += 1.0f;
    return c;
}

static ct_tensor *silent_failure(const ct_tensor *x, uint64_t key, void *state) { return NULL; }

static void free_lambda_state(void *state) { ((lambda_state *)state)->freed++; }

static void test_lambda(void) {
    lambda_state st = {0};
    ct_transform *tf = ct_transform_lambda("AddOne", add_one, &st, free_lambda_state);
    double v[4] = {0, 1, 2, 3}, e[4] = {1, 2, 3, 4};
    ct_tensor *x = ct_test_tensor(v, CT_SHAPE(2, 2), CT_FLOAT32);
    ct_tensor *y = ct_transform_apply(tf, x, 77);
    CT_EXPECT_CLOSE(y, e, 4, 0, 0);
    CT_EXPECT_INT_EQ(st.calls, 1);
    CT_EXPECT_INT_EQ(st.last_key, 77);
    ct_release(y);
    /* inside a Compose the function gets its sub-key, and it is freed with the Compose */
    ct_transform *c = CT_COMPOSE(ct_transform_random_horizontal_flip(0), tf);
    y = ct_transform_apply(c, x, 5);
    CT_EXPECT_CLOSE(y, e, 4, 0, 0);
    CT_EXPECT(st.last_key == ph64(5, 1, 1, 0));
    ct_release(y);
    ct_transform_free(c);
    CT_EXPECT_INT_EQ(st.freed, 1);
    /* a function that fails without an error gets one naming it */
    tf = ct_transform_lambda("Quiet", silent_failure, NULL, NULL);
    CT_EXPECT(ct_transform_apply(tf, x, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INTERNAL, "Quiet: the transform function returned NULL without setting an error");
    ct_transform_free(tf);
    CT_EXPECT(ct_transform_lambda("Broken", NULL, NULL, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Lambda Broken: NULL transform function");
    ct_release(x);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_to_tensor_hw);
    CT_RUN(test_to_tensor_hwc_and_chw);
    CT_RUN(test_to_tensor_non_uint8_and_errors);
    CT_RUN(test_normalize_per_channel);
    CT_RUN(test_normalize_hand_values);
    CT_RUN(test_normalize_errors);
    CT_RUN(test_random_crop_matches_mapping);
    CT_RUN(test_random_crop_distribution);
    CT_RUN(test_random_crop_errors);
    CT_RUN(test_flip_p0_p1);
    CT_RUN(test_flip_half);
    CT_RUN(test_compose_order_and_values);
    CT_RUN(test_compose_subkeys);
    CT_RUN(test_compose_errors);
    CT_RUN(test_lambda);
    return ct_test_finish();
}
