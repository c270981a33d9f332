/*
 * quantized.c — the int8 ops under dynamic quantization: ct_int_mm, the
 * per-channel weight quantizer and the dynamically quantized linear
 * (ctorch/quantization.h has the scheme).
 *
 * On the CPU the work happens on host memory around the int8 GEMM of
 * cpu_gemm_int8.c: one vectorised pass for the activations' range, one to
 * quantize them (the only temporary: m·k bytes), then the GEMM with the
 * dequantization and bias fused into its stores, writing the float output
 * directly. The weight row sums for the zero-point correction come cached
 * from the module (ops/quantized.h) or are computed here. Other devices have no
 * int8 GEMM of their own yet, so they compute the same integers with
 * tensor ops: the quantized values as int32 tensors and the integer matmul
 * kernel (matmul_int.kh), which is exact; the float steps may differ from
 * the CPU's in the last bit.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_qgemm.h"
#include "core/internal.h"
#include "ctorch/autograd.h"
#include "ops/quantized.h"

/* |Σ_k (xq - zp)·wq| ≤ k·127·128 must fit an int32. */
#define QLINEAR_MAX_K 132104

static bool on_cpu(const ct_tensor *t) { return ct_device_of(t).type == CT_DEVICE_CPU; }

const char *ct_quantized_engine(void) {
    switch (ct_cpu_qgemm_best()) {
    case CT_QGEMM_AMX: return "x86 (amx_int8, oneDNN)";
    case CT_QGEMM_AVX512_VNNI: return "x86 (avx512_vnni)";
    case CT_QGEMM_AVX_VNNI: return "x86 (avx_vnni)";
    case CT_QGEMM_AVX2: return "x86 (avx2)";
    default: return "x86 (scalar)";
    }
}

/* ---- ct_int_mm ------------------------------------------------------------------ */

static bool int_mm_check(const ct_tensor *a, const ct_tensor *b) {
    CT_CHECK_OBJ(a, false, "_int_mm: NULL self");
    CT_CHECK_OBJ(b, false, "_int_mm: NULL mat2");
    CT_CHECK_RET(ct_ndim(a) == 2 && ct_ndim(b) == 2, false, CT_ERR_SHAPE,
                 "_int_mm: expected 2D tensors, got self %d-D and mat2 %d-D", ct_ndim(a), ct_ndim(b));
    CT_CHECK_RET(ct_dtype_of(a) == CT_INT8 && ct_dtype_of(b) == CT_INT8, false, CT_ERR_DTYPE,
                 "_int_mm: expected self and mat2 to be int8, got %s and %s", ct_dtype_name(ct_dtype_of(a)),
                 ct_dtype_name(ct_dtype_of(b)));
    CT_CHECK_RET(ct_size(a, 1) == ct_size(b, 0), false, CT_ERR_SHAPE,
                 "_int_mm: self.size(1) needs to match mat2.size(0), got %lld and %lld", (long long)ct_size(a, 1),
                 (long long)ct_size(b, 0));
    const ct_tensor *both[2] = {a, b};
    return ct_check_same_device("_int_mm", both, 2);
}

/* a·b with a shifted to uint8 (a + 128) and the shift taken back out:
 * Σ (a+128)·b − 128·Σ b, exact modulo 2^32. */
static void int_mm_cpu(const ct_tensor *ac, const ct_tensor *bt, ct_tensor *out, uint8_t *au, int32_t *colsum) {
    const int64_t m = ct_size(ac, 0), k = ct_size(ac, 1), n = ct_size(bt, 0);
    const int8_t *ap = ct_data_ptr(ac), *bp = ct_data_ptr(bt);
    int32_t *c = ct_data_ptr(out);
    for (int64_t i = 0; i < m * k; i++) au[i] = (uint8_t)((uint8_t)ap[i] ^ 0x80u);
    for (int64_t j = 0; j < n; j++) {
        uint32_t s = 0;
        for (int64_t p = 0; p < k; p++) s += (uint32_t)(int32_t)bp[j * k + p];
        colsum[j] = (int32_t)(s * 128u);
    }
    ct_cpu_qgemm_u8s8(CT_QGEMM_AUTO, m, n, k, au, k, bp, k, c, n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * n + j] = (int32_t)((uint32_t)c[i * n + j] - (uint32_t)colsum[j]);
}

ct_tensor *ct_int_mm(const ct_tensor *a, const ct_tensor *b) {
    if (!int_mm_check(a, b)) return NULL;
    ct_tensor *result = NULL;
    if (!on_cpu(a)) {
        CT_SCOPE { result = ct_keep(ct_mm(ct_to_dtype(a, CT_INT32), ct_to_dtype(b, CT_INT32))); }
        return result;
    }
    const int64_t m = ct_size(a, 0), k = ct_size(a, 1), n = ct_size(b, 1);
    CT_SCOPE {
        ct_tensor *ac = ct_contiguous(a), *bt = ct_contiguous(ct_t(b)); /* [n, k] rows */
        ct_tensor *out = ct_empty(CT_SHAPE(m, n), .dtype = CT_INT32);
        uint8_t *au = malloc((size_t)(m * k > 0 ? m * k : 1));
        int32_t *colsum = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        if (!au || !colsum) ct_error_set(CT_ERR_OOM, "_int_mm: out of memory for %lldx%lld", (long long)m, (long long)k);
        else if (out && bt && ac) {
            int_mm_cpu(ac, bt, out, au, colsum);
            result = ct_keep(out);
        }
        free(au);
        free(colsum);
    }
    return result;
}

/* ---- weight quantization ---------------------------------------------------------- */

/* Row n of w (host float64, rows of k) into q with its scale. */
static float quantize_row(const double *w, int64_t k, int8_t *q) {
    double amax = 0.0;
    for (int64_t p = 0; p < k; p++) amax = fmax(amax, fabs(w[p]));
    const float scale = (float)fmax(amax / 127.0, (double)FLT_EPSILON);
    for (int64_t p = 0; p < k; p++) {
        double v = nearbyint(w[p] / (double)scale);
        q[p] = (int8_t)(v > 127.0 ? 127 : v < -127.0 ? -127 : (int)v);
    }
    return scale;
}

ct_status ct_quantize_weight_int8(const ct_tensor *weight, ct_tensor **q, ct_tensor **scale) {
    CT_CHECK_STATUS(q && scale, CT_ERR_INVALID_ARG, "quantize_weight_int8: NULL %s", q ? "scale" : "q");
    *q = *scale = NULL;
    CT_CHECK_OBJ_STATUS(weight, "quantize_weight_int8: NULL weight");
    CT_CHECK_STATUS(ct_ndim(weight) == 2, CT_ERR_SHAPE,
                    "quantize_weight_int8: expected a 2-D weight [out_features, in_features], got %d-D",
                    ct_ndim(weight));
    CT_CHECK_STATUS(ct_dtype_is_floating(ct_dtype_of(weight)), CT_ERR_DTYPE,
                    "quantize_weight_int8: expected a floating-point weight, got %s", ct_dtype_name(ct_dtype_of(weight)));
    const int64_t n = ct_size(weight, 0), k = ct_size(weight, 1);
    double *w = malloc(sizeof(double) * (size_t)(n * k > 0 ? n * k : 1));
    int8_t *qv = malloc((size_t)(n * k > 0 ? n * k : 1));
    float *sv = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    ct_status st = w && qv && sv ? CT_OK : ct_error_set(CT_ERR_OOM, "quantize_weight_int8: out of memory");
    if (st == CT_OK) st = ct_copy_to_host(weight, w, CT_FLOAT64, n * k);
    if (st == CT_OK) {
        for (int64_t j = 0; j < n; j++) sv[j] = quantize_row(w + j * k, k, qv + j * k);
        const int64_t wshape[2] = {n, k};
        ct_tensor *tq = cti_empty(wshape, 2, CT_INT8, ct_device_of(weight));
        ct_tensor *ts = tq ? cti_empty(&n, 1, CT_FLOAT32, ct_device_of(weight)) : NULL;
        st = ts ? ct_copy_from_host(tq, qv, CT_INT8, n * k) : ct_last_status();
        if (st == CT_OK) st = ct_copy_from_host(ts, sv, CT_FLOAT32, n);
        if (st == CT_OK) *q = ct_track(tq), *scale = ct_track(ts);
        else ct_decref(tq), ct_decref(ts);
    }
    free(w), free(qv), free(sv);
    return st;
}

/* ---- the dynamically quantized linear -------------------------------------------------- */

typedef struct act_qparams {
    float scale, inv_scale;
    int32_t zero_point;
} act_qparams;

/* PyTorch's choose_qparams for quint8 with reduce_range (0..127) over
 * [min(lo, 0), max(hi, 0)]. */
static act_qparams choose_qparams(double lo, double hi) {
    lo = fmin(lo, 0.0), hi = fmax(hi, 0.0);
    act_qparams p;
    p.scale = (float)((hi - lo) / CT_QLINEAR_ACT_QMAX);
    if (!(p.scale > 0.0f) || !isfinite(p.scale)) p.scale = 1.0f; /* all zeros: any scale is exact */
    p.inv_scale = 1.0f / p.scale;
    double zp = nearbyint(-lo / (double)p.scale);
    p.zero_point = (int32_t)(zp < 0 ? 0 : zp > CT_QLINEAR_ACT_QMAX ? CT_QLINEAR_ACT_QMAX : zp);
    return p;
}

static bool qlinear_check(const ct_tensor *x, const ct_tensor *w, const ct_tensor *s, const ct_tensor *b) {
    const char *op = "quantized::linear_dynamic";
    CT_CHECK_OBJ(x, false, "%s: NULL input", op);
    CT_CHECK_OBJ(w, false, "%s: NULL weight", op);
    CT_CHECK_OBJ(s, false, "%s: NULL weight_scale", op);
    CT_CHECK_RET(ct_dtype_of(x) == CT_FLOAT32, false, CT_ERR_DTYPE, "%s: expected a float32 input, got %s", op,
                 ct_dtype_name(ct_dtype_of(x)));
    CT_CHECK_RET(ct_dtype_of(w) == CT_INT8 && ct_ndim(w) == 2, false, CT_ERR_DTYPE,
                 "%s: expected a 2-D int8 weight, got %d-D %s", op, ct_ndim(w), ct_dtype_name(ct_dtype_of(w)));
    const int64_t n = ct_size(w, 0), k = ct_size(w, 1);
    CT_CHECK_RET(ct_dtype_of(s) == CT_FLOAT32 && ct_numel(s) == n, false, CT_ERR_SHAPE,
                 "%s: weight_scale must be float32 with %lld elements (one per output channel), got %s with %lld",
                 op, (long long)n, ct_dtype_name(ct_dtype_of(s)), (long long)ct_numel(s));
    CT_CHECK_RET(!b || (ct_dtype_of(b) == CT_FLOAT32 && ct_numel(b) == n), false, CT_ERR_SHAPE,
                 "%s: bias must be float32 with %lld elements, got %s with %lld", op, (long long)n,
                 ct_dtype_name(ct_dtype_of(b)), (long long)(b ? ct_numel(b) : 0));
    CT_CHECK_RET(ct_ndim(x) >= 1 && ct_size(x, -1) == k, false, CT_ERR_SHAPE,
                 "%s: input's last dimension (%lld) must equal in_features (%lld)", op,
                 (long long)(ct_ndim(x) >= 1 ? ct_size(x, -1) : 0), (long long)k);
    CT_CHECK_RET(k <= QLINEAR_MAX_K, false, CT_ERR_INVALID_ARG,
                 "%s: in_features %lld is above %d, where int32 sums of 7-bit·int8 products could overflow", op,
                 (long long)k, QLINEAR_MAX_K);
    CT_CHECK_RET(!(ct_is_grad_enabled() && ct_requires_grad(x)), false, CT_ERR_STATE,
                 "%s: quantized ops are inference-only (no backward), but the input requires grad; run it under "
                 "CT_NO_GRAD or detach the input", op);
    const ct_tensor *all[4] = {x, w, s, b};
    return ct_check_same_device(op, all, b ? 4 : 3);
}

/* The CPU path, on contiguous x [m, k]; y [m, n] float32; xq m·k bytes. */
static void qlinear_cpu(const float *x, int64_t m, int64_t k, const int8_t *w, int64_t n, const float *ws,
                        const float *bias, const int32_t *wsum, float *y, uint8_t *xq) {
    float lo, hi;
    ct_cpu_minmax_f32(x, m * k, &lo, &hi);
    const act_qparams qp = choose_qparams(lo, hi);
    ct_cpu_quantize_u8(x, m * k, qp.inv_scale, qp.zero_point, CT_QLINEAR_ACT_QMAX, xq);
    const ct_qgemm_dequant dq = {qp.zero_point, qp.scale, wsum, ws, bias, y, n};
    ct_cpu_qlinear_u7s8(CT_QGEMM_AUTO, m, n, k, xq, k, w, k, &dq);
}

void cti_qlinear_row_sums(const ct_tensor *weight, int32_t *sums) {
    ct_cpu_qrow_sums(ct_size(weight, 0), ct_size(weight, 1), ct_data_ptr(weight), ct_size(weight, 1), sums);
}

/* The same integers with tensor ops, for devices without an int8 GEMM. */
static ct_tensor *qlinear_generic(const ct_tensor *x2, const ct_tensor *w, const ct_tensor *ws, const ct_tensor *b) {
    double lo, hi;
    if (ct_item_checked(ct_min_all(x2), &lo) != CT_OK || ct_item_checked(ct_max_all(x2), &hi) != CT_OK) return NULL;
    const act_qparams qp = choose_qparams(lo, hi);
    ct_tensor *q = ct_clamp(ct_add_scalar(ct_round(ct_mul_scalar(x2, (double)qp.inv_scale)), qp.zero_point), 0,
                            CT_QLINEAR_ACT_QMAX);
    q = ct_to_dtype(ct_sub_scalar(q, qp.zero_point), CT_INT32);
    ct_tensor *acc = ct_mm(q, ct_t(ct_to_dtype(w, CT_INT32)));
    ct_tensor *y = ct_mul(ct_to_dtype(acc, CT_FLOAT32), ct_mul_scalar(ws, (double)qp.scale));
    return b ? ct_add(y, b) : y;
}

/* The CPU forward on x2 [m, k]: the output, or NULL with the error set. */
static ct_tensor *qlinear_cpu_tensor(const ct_tensor *x2, const ct_tensor *weight, const ct_tensor *weight_scale,
                                     const ct_tensor *bias, const int32_t *row_sums) {
    const int64_t m = ct_size(x2, 0), k = ct_size(x2, 1), n = ct_size(weight, 0);
    ct_tensor *xc = ct_contiguous(x2), *wc = ct_contiguous(weight), *sc = ct_contiguous(weight_scale);
    ct_tensor *bc = bias ? ct_contiguous(bias) : NULL;
    ct_tensor *out = ct_empty(CT_SHAPE(m, n), .dtype = CT_FLOAT32);
    if (!xc || !wc || !sc || !out || (bias && !bc)) return NULL;
    uint8_t *xq = malloc((size_t)(m * k > 0 ? m * k : 1));
    int32_t *wsum = row_sums ? NULL : malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    ct_tensor *y = NULL;
    if (!xq || (!row_sums && !wsum)) {
        ct_error_set(CT_ERR_OOM, "quantized::linear_dynamic: out of memory for a %lldx%lld input", (long long)m,
                     (long long)k);
    } else {
        if (!row_sums) cti_qlinear_row_sums(wc, wsum);
        qlinear_cpu(ct_data_ptr(xc), m, k, ct_data_ptr(wc), n, ct_data_ptr(sc), bc ? ct_data_ptr(bc) : NULL,
                    row_sums ? row_sums : wsum, ct_data_ptr(out), xq);
        y = out;
    }
    free(xq), free(wsum);
    return y;
}

ct_tensor *cti_quantized_linear_dynamic(const ct_tensor *input, const ct_tensor *weight,
                                        const ct_tensor *weight_scale, const ct_tensor *bias,
                                        const int32_t *row_sums) {
    if (!qlinear_check(input, weight, weight_scale, bias)) return NULL;
    const int64_t n = ct_size(weight, 0), k = ct_size(weight, 1), m = k ? ct_numel(input) / k : 0;
    int64_t shape[CT_MAX_DIMS];
    const int nd = ct_ndim(input);
    memcpy(shape, ct_sizes(input), sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = n;
    ct_tensor *result = NULL;
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *x2 = ct_reshape(input, CT_SHAPE(m, k));
        ct_tensor *y = NULL;
        if (x2 && !on_cpu(input)) y = qlinear_generic(x2, weight, weight_scale, bias);
        else if (x2) y = qlinear_cpu_tensor(x2, weight, weight_scale, bias, row_sums);
        if (y) result = ct_keep(nd == 2 ? y : ct_reshape(y, ct_shape_make(nd, shape)));
    }
    return result;
}

ct_tensor *ct_quantized_linear_dynamic(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *weight_scale,
                                       const ct_tensor *bias) {
    return cti_quantized_linear_dynamic(input, weight, weight_scale, bias, NULL);
}
