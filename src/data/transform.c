/*
 * transform.c — torchvision.transforms for ctorch's data pipeline: ToTensor,
 * Normalize, RandomCrop, RandomHorizontalFlip, Lambda and Compose, plus the
 * pixel conversion that the image datasets share with ToTensor.
 *
 * Transforms run once per sample, tens of thousands of times per epoch, on
 * small CPU images, so each one is a plain loop over contiguous memory that
 * allocates only its result. They are read-only after construction, so the
 * DataLoader's workers may apply one transform object concurrently.
 *
 * RANDOMNESS comes only from the key passed to ct_transform_apply, never
 * from the global generator, so a sample's augmentation is a function of its
 * key alone. The exact mapping (tests recompute it; keep it stable, resumed
 * runs depend on it): r0..r3 = ct_philox4x32(key, counter_lo, counter_hi).
 *   RandomCrop(size, padding) on an H×W image, Hp = H + 2·padding,
 *     Wp = W + 2·padding; r = philox(key, 0, 0):
 *       top  = ((r0 << 32) | r1) mod (Hp − size + 1)
 *       left = ((r2 << 32) | r3) mod (Wp − size + 1)
 *     and the output is rows top..top+size−1, columns left..left+size−1 of
 *     the zero-padded image (torchvision: pad, then i = randint(0, Hp−size+1)).
 *   RandomHorizontalFlip(p); r = philox(key, 0, 0): u = (r0 >> 8) · 2^−24,
 *     a uniform in [0, 1) on a 24-bit grid; flip when u < p (torchvision:
 *     torch.rand(1) < p), so p = 0 never flips and p = 1 always does.
 *   Compose(t_0 … t_{n−1}): t_i gets the sub-key
 *       r = philox(key, i, 1), sub_i = (r0 << 32) | r1,
 *     so the transforms draw independently of each other.
 * Key 0 is an ordinary key (deterministic like any other).
 */
#include <math.h>
#include <string.h>

#include "data_internal.h"

typedef enum tf_kind { TF_TO_TENSOR, TF_NORMALIZE, TF_RANDOM_CROP, TF_FLIP, TF_COMPOSE, TF_LAMBDA } tf_kind;

struct ct_transform {
    tf_kind kind;
    bool chw;                 /* ToTensor */
    int n;                    /* Normalize: values in mean/std; Compose: transforms */
    double *mean, *std;       /* Normalize */
    int64_t size, padding;    /* RandomCrop */
    double p;                 /* RandomHorizontalFlip */
    ct_transform **tfs;       /* Compose (owned) */
    char name[64];            /* Lambda: the user's name, for messages */
    ct_transform_fn fn;       /* Lambda */
    void *state;
    void (*free_state)(void *);
};

static const char *tf_name(const ct_transform *tf) {
    switch (tf->kind) {
    case TF_TO_TENSOR: return "ToTensor";
    case TF_NORMALIZE: return "Normalize";
    case TF_RANDOM_CROP: return "RandomCrop";
    case TF_FLIP: return "RandomHorizontalFlip";
    case TF_COMPOSE: return "Compose";
    case TF_LAMBDA: return tf->name;
    }
    return "transform";
}

static ct_transform *tf_new(tf_kind kind, const char *who) {
    ct_transform *tf = calloc(1, sizeof *tf);
    if (!tf) ct_error_set(CT_ERR_OOM, "%s: out of memory", who);
    else tf->kind = kind;
    return tf;
}

static ct_tensor *cpu_tensor(const int64_t *shape, int ndim, ct_dtype dt) {
    return ct_tensor_alloc(shape, ndim, dt, ct_device_cpu());
}

/* ---- pixel conversion shared with the datasets ------------------------------- */

/* Division (not multiplication by 1/255) gives torchvision's values exactly. */
static void pixels_to_float01(const uint8_t *restrict src, float *restrict dst, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i] / 255.0f;
}

ct_tensor *ctd_pixels_to_float(const uint8_t *pixels, const int64_t *shape, int ndim) {
    ct_tensor *out = cpu_tensor(shape, ndim, CT_FLOAT32);
    if (out) pixels_to_float01(pixels, ct_data_ptr(out), ct_shape_numel(shape, ndim));
    return out;
}

ct_status ctd_image_sample(const uint8_t *pixels, const int64_t *shape, int ndim,
                           int64_t label, const ct_transform *tf, uint64_t key, ct_sample *out) {
    out->n = 0;
    ct_tensor *img = ctd_pixels_to_float(pixels, shape, ndim);
    if (img && tf) {
        ct_tensor *t = ct_transform_apply(tf, img, key);
        ct_decref(img);
        img = t;
    }
    if (!img) return ct_last_status() ? ct_last_status() : CT_ERR_INTERNAL;
    int64_t no_dims[1] = {0};
    ct_tensor *lab = cpu_tensor(no_dims, 0, CT_INT64);
    if (!lab) {
        ct_decref(img);
        return ct_last_status();
    }
    *(int64_t *)ct_data_ptr(lab) = label;
    out->t[0] = img;
    out->t[1] = lab;
    out->n = 2;
    return CT_OK;
}

/* ---- ToTensor ------------------------------------------------------------------- */

ct_transform *ct_transform_to_tensor(bool chw) {
    ct_transform *tf = tf_new(TF_TO_TENSOR, "ToTensor");
    if (tf) tf->chw = chw;
    return tf;
}

/* uint8 HW, HWC or CHW -> float32 CHW / 255. Other dtypes only change layout
 * and keep their dtype, as torchvision's ToTensor does for non-uint8 arrays. */
static ct_tensor *to_tensor_apply(const ct_transform *tf, const ct_tensor *x) {
    char sb[CT_SHAPE_STR_MAX];
    int64_t C, H, W;
    bool hwc = false;
    if (x->ndim == 2) {
        C = 1, H = x->shape[0], W = x->shape[1];
    } else if (x->ndim == 3 && tf->chw) {
        C = x->shape[0], H = x->shape[1], W = x->shape[2];
    } else if (x->ndim == 3) {
        H = x->shape[0], W = x->shape[1], C = x->shape[2];
        hwc = true;
        CT_CHECK_NULL(C <= 4, CT_ERR_SHAPE,
                      "ToTensor: expected an HW or HWC image with at most 4 channels, got shape %s "
                      "(create the transform with chw = true for CHW images)",
                      ct_shape_str(x->shape, x->ndim, sb, sizeof sb));
    } else {
        ct_error_set(CT_ERR_SHAPE, "ToTensor: expected an HW, HWC or CHW image, got shape %s",
                     ct_shape_str(x->shape, x->ndim, sb, sizeof sb));
        return NULL;
    }
    int64_t chw_shape[3] = {C, H, W};
    if (x->dtype != CT_UINT8) {
        /* layout only: a CHW view copied into a fresh tensor */
        ct_tensor *v = hwc ? cti_permute(x, (const int[]){2, 0, 1})
                           : x->ndim == 2 ? cti_unsqueeze(x, 0) : ct_retain((ct_tensor *)x);
        ct_tensor *out = v ? cpu_tensor(chw_shape, 3, x->dtype) : NULL;
        if (out && cti_copy(out, v) != CT_OK) {
            ct_decref(out);
            out = NULL;
        }
        ct_decref(v);
        return out;
    }
    ct_tensor *xc = cti_contiguous(x);
    if (!xc) return NULL;
    const uint8_t *src = ct_data_ptr(xc);
    ct_tensor *out = NULL;
    if (!hwc) {
        out = ctd_pixels_to_float(src, chw_shape, 3);
    } else if ((out = cpu_tensor(chw_shape, 3, CT_FLOAT32)) != NULL) {
        float *dst = ct_data_ptr(out);
        int64_t hw = H * W;
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < hw; i++) dst[c * hw + i] = (float)src[i * C + c] / 255.0f;
    }
    ct_decref(xc);
    return out;
}

/* ---- Normalize ------------------------------------------------------------------- */

ct_transform *ct_transform_normalize(const double *mean, const double *std, int n) {
    if (!mean || !std || n < 1) {
        ct_error_set(CT_ERR_INVALID_ARG, "Normalize: expected 1 or more mean and std values, got %d%s", n,
                     (!mean || !std) ? " (NULL array)" : "");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if ((float)std[i] == 0.0f) {
            ct_error_set(CT_ERR_INVALID_ARG,
                         "Normalize: std evaluated to zero after conversion to float32, leading to "
                         "division by zero (std[%d] = %g)", i, std[i]);
            return NULL;
        }
    ct_transform *tf = tf_new(TF_NORMALIZE, "Normalize");
    if (!tf) return NULL;
    tf->n = n;
    tf->mean = malloc(sizeof(double) * (size_t)n);
    tf->std = malloc(sizeof(double) * (size_t)n);
    if (!tf->mean || !tf->std) {
        ct_transform_free(tf);
        ct_error_set(CT_ERR_OOM, "Normalize: out of memory");
        return NULL;
    }
    memcpy(tf->mean, mean, sizeof(double) * (size_t)n);
    memcpy(tf->std, std, sizeof(double) * (size_t)n);
    return tf;
}

ct_transform *ct_transform_normalize1(double mean, double std) {
    return ct_transform_normalize(&mean, &std, 1);
}

/* (x - mean) / std in float, as tensor.sub_(mean).div_(std) with float32
 * mean and std tensors. */
static void normalize_f32(const float *restrict src, float *restrict dst, int64_t planes, int64_t C,
                          int64_t hw, const ct_transform *tf) {
    for (int64_t k = 0; k < planes; k++) {
        int c = tf->n == 1 ? 0 : (int)(k % C);
        float m = (float)tf->mean[c], s = (float)tf->std[c];
        const float *in = src + k * hw;
        float *o = dst + k * hw;
#pragma omp simd
        for (int64_t i = 0; i < hw; i++) o[i] = (in[i] - m) / s;
    }
}

static void normalize_f64(const double *restrict src, double *restrict dst, int64_t planes, int64_t C,
                          int64_t hw, const ct_transform *tf) {
    for (int64_t k = 0; k < planes; k++) {
        int c = tf->n == 1 ? 0 : (int)(k % C);
        double m = tf->mean[c], s = tf->std[c];
        const double *in = src + k * hw;
        double *o = dst + k * hw;
#pragma omp simd
        for (int64_t i = 0; i < hw; i++) o[i] = (in[i] - m) / s;
    }
}

static ct_tensor *normalize_apply(const ct_transform *tf, const ct_tensor *x) {
    char sb[CT_SHAPE_STR_MAX];
    /* torchvision's order of checks: dtype, then rank */
    CT_CHECK_NULL(ct_dtype_is_floating(x->dtype), CT_ERR_DTYPE,
                  "Normalize: Input tensor should be a float tensor. Got %s.", ct_dtype_name(x->dtype));
    CT_CHECK_NULL(x->ndim >= 3, CT_ERR_SHAPE,
                  "Normalize: Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = %s",
                  ct_shape_str(x->shape, x->ndim, sb, sizeof sb));
    int64_t C = x->shape[x->ndim - 3];
    CT_CHECK_NULL(tf->n == 1 || tf->n == C, CT_ERR_SHAPE,
                  "Normalize: %d mean/std values for an image of %lld channels (shape %s); expected 1 or %lld",
                  tf->n, (long long)C, ct_shape_str(x->shape, x->ndim, sb, sizeof sb), (long long)C);
    /* float16 and bfloat16 are normalised in float32 and rounded once */
    ct_dtype work = x->dtype == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32;
    ct_tensor *xc = cti_cast(x, work);
    ct_tensor *xcc = cti_contiguous(xc);
    ct_decref(xc);
    ct_tensor *out = xcc ? cpu_tensor(x->shape, x->ndim, work) : NULL;
    if (out) {
        int64_t hw = x->shape[x->ndim - 2] * x->shape[x->ndim - 1];
        int64_t planes = hw ? ct_shape_numel(x->shape, x->ndim) / hw : 0;
        if (work == CT_FLOAT32) normalize_f32(ct_data_ptr(xcc), ct_data_ptr(out), planes, C, hw, tf);
        else normalize_f64(ct_data_ptr(xcc), ct_data_ptr(out), planes, C, hw, tf);
    }
    ct_decref(xcc);
    if (out && work != x->dtype) {
        ct_tensor *o = cti_cast(out, x->dtype);
        ct_decref(out);
        out = o;
    }
    return out;
}

/* ---- random draws ------------------------------------------------------------------ */

static uint64_t philox_u64(uint64_t key, uint64_t lo, uint64_t hi, int pair) {
    uint32_t r[4];
    ct_philox4x32(key, lo, hi, r);
    return ((uint64_t)r[2 * pair] << 32) | r[2 * pair + 1];
}

/* ---- RandomCrop -------------------------------------------------------------------- */

ct_transform *ct_transform_random_crop(int64_t size, int64_t padding) {
    CT_CHECK_NULL(size > 0, CT_ERR_INVALID_ARG, "RandomCrop: size must be positive, got %lld", (long long)size);
    CT_CHECK_NULL(padding >= 0, CT_ERR_INVALID_ARG, "RandomCrop: padding must be non-negative, got %lld",
                  (long long)padding);
    CT_CHECK_NULL(size <= (INT64_C(1) << 31) && padding <= (INT64_C(1) << 31), CT_ERR_INVALID_ARG,
                  "RandomCrop: size %lld or padding %lld is too large", (long long)size, (long long)padding);
    ct_transform *tf = tf_new(TF_RANDOM_CROP, "RandomCrop");
    if (tf) tf->size = size, tf->padding = padding;
    return tf;
}

/* One size×size window of one zero-padded plane: padded row r is source row
 * r - pad (zero outside the plane), likewise for columns. */
static void crop_plane(const char *restrict src, char *restrict dst, int64_t H, int64_t W, int64_t size,
                       int64_t pad, int64_t top, int64_t left, size_t es) {
    int64_t c0 = left - pad;                                  /* source column of output column 0 */
    int64_t lo = c0 < 0 ? (-c0 < size ? -c0 : size) : 0;      /* first output column inside */
    int64_t hi = W - c0 < size ? W - c0 : size;               /* one past the last inside */
    if (hi < lo) hi = lo;                                     /* the window misses the plane */
    for (int64_t r = 0; r < size; r++) {
        char *o = dst + (size_t)(r * size) * es;
        int64_t sr = top + r - pad;
        if (sr < 0 || sr >= H) {
            memset(o, 0, (size_t)size * es);
            continue;
        }
        memset(o, 0, (size_t)lo * es);
        memcpy(o + (size_t)lo * es, src + (size_t)(sr * W + c0 + lo) * es, (size_t)(hi - lo) * es);
        memset(o + (size_t)hi * es, 0, (size_t)(size - hi) * es);
    }
}

static ct_tensor *random_crop_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key) {
    char sb[CT_SHAPE_STR_MAX];
    CT_CHECK_NULL(x->ndim >= 2, CT_ERR_SHAPE, "RandomCrop: expected an HW or CHW image, got shape %s",
                  ct_shape_str(x->shape, x->ndim, sb, sizeof sb));
    int nd = x->ndim;
    int64_t H = x->shape[nd - 2], W = x->shape[nd - 1], pad = tf->padding, size = tf->size;
    int64_t Hp = H + 2 * pad, Wp = W + 2 * pad;
    CT_CHECK_NULL(Hp >= size && Wp >= size, CT_ERR_SHAPE,
                  "RandomCrop: Required crop size (%lld, %lld) is larger than input image size (%lld, %lld) "
                  "(image %lldx%lld with padding %lld)",
                  (long long)size, (long long)size, (long long)Hp, (long long)Wp, (long long)H, (long long)W,
                  (long long)pad);
    int64_t top = (int64_t)(philox_u64(key, 0, 0, 0) % (uint64_t)(Hp - size + 1));
    int64_t left = (int64_t)(philox_u64(key, 0, 0, 1) % (uint64_t)(Wp - size + 1));
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 2] = shape[nd - 1] = size;
    ct_tensor *xc = cti_contiguous(x);
    ct_tensor *out = xc ? cpu_tensor(shape, nd, x->dtype) : NULL;
    if (out) {
        size_t es = ct_dtype_size(x->dtype);
        int64_t planes = ct_shape_numel(x->shape, nd - 2);
        const char *src = ct_data_ptr(xc);
        char *dst = ct_data_ptr(out);
        for (int64_t k = 0; k < planes; k++)
            crop_plane(src + (size_t)(k * H * W) * es, dst + (size_t)(k * size * size) * es, H, W, size, pad,
                       top, left, es);
    }
    ct_decref(xc);
    return out;
}

/* ---- RandomHorizontalFlip ------------------------------------------------------------ */

ct_transform *ct_transform_random_horizontal_flip(double p) {
    CT_CHECK_NULL(p >= 0.0 && p <= 1.0, CT_ERR_INVALID_ARG,
                  "RandomHorizontalFlip: p must be a probability in [0, 1], got %g", p);
    ct_transform *tf = tf_new(TF_FLIP, "RandomHorizontalFlip");
    if (tf) tf->p = p;
    return tf;
}

#define DEFINE_FLIP_ROWS(name, type)                                                      \
    static void name(const void *src_, void *dst_, int64_t rows, int64_t W) {             \
        const type *restrict src = src_;                                                  \
        type *restrict dst = dst_;                                                        \
        for (int64_t r = 0; r < rows; r++)                                                \
            for (int64_t c = 0; c < W; c++) dst[r * W + c] = src[r * W + (W - 1 - c)];    \
    }
DEFINE_FLIP_ROWS(flip_rows_1, uint8_t)
DEFINE_FLIP_ROWS(flip_rows_2, uint16_t)
DEFINE_FLIP_ROWS(flip_rows_4, uint32_t)
DEFINE_FLIP_ROWS(flip_rows_8, uint64_t)

static ct_tensor *flip_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key) {
    uint32_t r[4];
    ct_philox4x32(key, 0, 0, r);
    double u = (double)(r[0] >> 8) * (1.0 / 16777216.0);
    /* not flipped: the input itself, as torchvision returns img unchanged */
    if (!(u < tf->p) || x->ndim == 0) return ct_retain((ct_tensor *)x);
    ct_tensor *xc = cti_contiguous(x);
    ct_tensor *out = xc ? cpu_tensor(x->shape, x->ndim, x->dtype) : NULL;
    if (out) {
        int64_t W = x->shape[x->ndim - 1];
        int64_t rows = W ? ct_shape_numel(x->shape, x->ndim) / W : 0;
        const void *src = ct_data_ptr(xc);
        void *dst = ct_data_ptr(out);
        switch (ct_dtype_size(x->dtype)) {
        case 1: flip_rows_1(src, dst, rows, W); break;
        case 2: flip_rows_2(src, dst, rows, W); break;
        case 4: flip_rows_4(src, dst, rows, W); break;
        default: flip_rows_8(src, dst, rows, W); break;
        }
    }
    ct_decref(xc);
    return out;
}

/* ---- Compose ------------------------------------------------------------------------- */

ct_transform *ct_transform_compose(ct_transform *const *tfs, int n) {
    if (n < 0 || (n > 0 && !tfs)) {
        ct_error_set(CT_ERR_INVALID_ARG, "Compose: expected a list of transforms, got %d%s", n,
                     tfs ? "" : " (NULL array)");
        return NULL;
    }
    bool missing = false;   /* a failed constructor already set the error */
    for (int i = 0; i < n; i++) missing |= tfs[i] == NULL;
    ct_transform *tf = missing ? NULL : tf_new(TF_COMPOSE, "Compose");
    if (tf && n > 0 && !(tf->tfs = malloc(sizeof *tf->tfs * (size_t)n))) {
        free(tf);
        tf = NULL;
        ct_error_set(CT_ERR_OOM, "Compose: out of memory");
    }
    if (!tf) {   /* the compose owns its transforms even when it fails */
        for (int i = 0; i < n; i++) ct_transform_free(tfs[i]);
        return NULL;
    }
    tf->n = n;
    if (n > 0) memcpy(tf->tfs, tfs, sizeof *tf->tfs * (size_t)n);
    return tf;
}

static ct_tensor *compose_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key) {
    ct_tensor *cur = ct_retain((ct_tensor *)x);
    for (int i = 0; i < tf->n && cur; i++) {
        ct_tensor *next = ct_transform_apply(tf->tfs[i], cur, philox_u64(key, (uint64_t)i, 1, 0));
        ct_decref(cur);
        cur = next;
    }
    return cur;
}

/* ---- Lambda ------------------------------------------------------------------------------ */

ct_transform *ct_transform_lambda(const char *name, ct_transform_fn fn, void *state, void (*free_state)(void *)) {
    CT_CHECK_NULL(fn, CT_ERR_INVALID_ARG, "Lambda%s%s: NULL transform function", name ? " " : "", name ? name : "");
    ct_transform *tf = tf_new(TF_LAMBDA, "Lambda");
    if (!tf) return NULL;
    snprintf(tf->name, sizeof tf->name, "%s", name && *name ? name : "Lambda");
    tf->fn = fn, tf->state = state, tf->free_state = free_state;
    return tf;
}

/* The user function decides which devices it accepts. The stale error of an
 * earlier call is cleared first, or it would hide a function that returns
 * NULL without raising one. */
static ct_tensor *lambda_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key) {
    ct_clear_error();
    ct_tensor *y = tf->fn(x, key, tf->state);
    if (!y && ct_last_status() == CT_OK)
        ct_error_set(CT_ERR_INTERNAL, "%s: the transform function returned NULL without setting an error",
                     tf->name);
    return y;
}

/* ---- dispatch --------------------------------------------------------------------------- */

ct_tensor *ct_transform_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key) {
    if (!tf || !x) return NULL;
    if (tf->kind != TF_COMPOSE && tf->kind != TF_LAMBDA && x->storage->device.type != CT_DEVICE_CPU) {
        char db[32];
        ct_error_set(CT_ERR_DEVICE, "%s: transforms run on CPU tensors, got a tensor on %s", tf_name(tf),
                     ct_device_str(x->storage->device, db, sizeof db));
        return NULL;
    }
    switch (tf->kind) {
    case TF_TO_TENSOR: return to_tensor_apply(tf, x);
    case TF_NORMALIZE: return normalize_apply(tf, x);
    case TF_RANDOM_CROP: return random_crop_apply(tf, x, key);
    case TF_FLIP: return flip_apply(tf, x, key);
    case TF_COMPOSE: return compose_apply(tf, x, key);
    case TF_LAMBDA: return lambda_apply(tf, x, key);
    }
    ct_error_set(CT_ERR_INTERNAL, "ct_transform_apply: unknown transform kind %d", (int)tf->kind);
    return NULL;
}

void ct_transform_free(ct_transform *tf) {
    if (!tf) return;
    for (int i = 0; tf->kind == TF_COMPOSE && i < tf->n; i++) ct_transform_free(tf->tfs[i]);
    if (tf->kind == TF_LAMBDA && tf->free_state) tf->free_state(tf->state);
    free(tf->tfs);
    free(tf->mean);
    free(tf->std);
    free(tf);
}
