/*
 * cpu_optim.c — the CPU backend's fused optimizer updates (SGD, Adam/AdamW),
 * in place on contiguous tensors.
 *
 * Each element goes through exactly the operations of torch.optim's
 * _single_tensor_sgd / _single_tensor_adam(w), in the same order and in the
 * same precision (float for float32 and 16-bit parameters, double for
 * float64, the hyper-parameters rounded to that type as PyTorch's
 * tensor-scalar ops round them; 16-bit results rounded after each op, as
 * PyTorch's 16-bit tensors are), so results track PyTorch's to the last
 * bit or so. Contiguous float32 and float64 tensors with state of the same
 * type take typed loops; the rest (16-bit parameters, float32 state of
 * 16-bit parameters) load and store through the generic converters.
 */
#include "cpu_internal.h"
#include "cpu_loss.h"

/* Rounding of a float result to a 16-bit storage dtype (identity for the
 * others): 16-bit tensors round after every PyTorch op, so the generic
 * path rounds where PyTorch would (RP: a tensor of param's dtype, RS: of
 * the state's). */
static inline float round_to(float v, ct_dtype dt) {
    if (dt == CT_FLOAT16) return ct_half_to_float(ct_float_to_half(v));
    if (dt == CT_BFLOAT16) return ct_bfloat16_to_float(ct_float_to_bfloat16(v));
    return v;
}
#define NO_ROUND(v, dt) (v)

/* Per-type update functions: T is float or double; the constants are
 * converted once per call; R rounds to a storage dtype. */
#define CT_OPTIM_DEFINE(T, SUF, SQRT, R)                                                        \
    typedef struct sgd_k_##SUF {                                                                \
        T neg_lr, momentum, damp1, wd;                                                          \
        bool nesterov, maximize, first, has_buf, has_wd;                                        \
        ct_dtype pdt, sdt;                                                                      \
    } sgd_k_##SUF;                                                                              \
                                                                                                \
    static sgd_k_##SUF sgd_consts_##SUF(const ct_sgd_args *a, bool has_buf, ct_dtype pdt,      \
                                        ct_dtype sdt) {                                         \
        sgd_k_##SUF k = {(T)-a->lr,      (T)a->momentum, (T)(1.0 - a->dampening),              \
                         (T)a->weight_decay, a->nesterov, a->maximize,                          \
                         a->first_step,  has_buf,        a->weight_decay != 0.0,               \
                         pdt,            sdt};                                                  \
        return k;                                                                               \
    }                                                                                           \
                                                                                                \
    /* returns the new parameter; *buf updated when has_buf (a constant at  \
     * each call site). Options are selects, not branches, so that loops  \
     * over it vectorise. */                                                                   \
    static inline T sgd_elem_##SUF(T p, T g, T *buf, bool has_buf, const sgd_k_##SUF kv) {      \
        const sgd_k_##SUF *k = &kv;                                                             \
        T d = k->maximize ? -g : g;                                                             \
        d = k->has_wd ? R(d + k->wd * p, k->pdt) : d;                                           \
        if (has_buf) {                                                                          \
            T old = *buf;                                                                       \
            T b = k->first ? R(d, k->sdt) : R(R(old * k->momentum, k->sdt) + k->damp1 * d, k->sdt); \
            *buf = b;                                                                           \
            d = k->nesterov ? R(d + k->momentum * b, k->pdt) : b;                               \
        }                                                                                       \
        return R(p + k->neg_lr * d, k->pdt);                                                    \
    }                                                                                           \
                                                                                                \
    typedef struct adam_k_##SUF {                                                               \
        T decay, wd, b1, one_b1, b2, one_b2, eps, neg_step, bc2s;                               \
        bool decoupled, has_wd, amsgrad, maximize;                                              \
        ct_dtype pdt, sdt;                                                                      \
    } adam_k_##SUF;                                                                             \
                                                                                                \
    static adam_k_##SUF adam_consts_##SUF(const ct_adam_args *a, ct_dtype pdt, ct_dtype sdt) {  \
        adam_k_##SUF k = {(T)(1.0 - a->lr * a->weight_decay),                                   \
                          (T)a->weight_decay,                                                   \
                          (T)a->beta1,                                                          \
                          (T)(1.0 - a->beta1),                                                  \
                          (T)a->beta2,                                                          \
                          (T)(1.0 - a->beta2),                                                  \
                          (T)a->eps,                                                            \
                          (T)-a->step_size,                                                     \
                          (T)a->bias_correction2_sqrt,                                          \
                          a->decoupled_weight_decay,                                            \
                          a->weight_decay != 0.0,                                               \
                          a->amsgrad,                                                           \
                          a->maximize,                                                          \
                          pdt,                                                                  \
                          sdt};                                                                 \
        return k;                                                                               \
    }                                                                                           \
                                                                                                \
    /* returns the new parameter; the moments (and the max when amsgrad, a \
     * constant at each call site) updated in place */                                        \
    static inline T adam_elem_##SUF(T p, T g, T *m, T *v, T *vmax, bool amsgrad,                \
                                    const adam_k_##SUF kv) {                                    \
        const adam_k_##SUF *k = &kv;                                                            \
        T d = k->maximize ? -g : g;                                                             \
        T decayed = R(p * k->decay, k->pdt), with_wd = R(d + k->wd * p, k->pdt);                \
        p = k->decoupled ? decayed : p;                                                         \
        d = (!k->decoupled & k->has_wd) ? with_wd : d;                                          \
        T mm = R(R(*m * k->b1, k->sdt) + k->one_b1 * d, k->sdt);                                \
        T vv = R(R(*v * k->b2, k->sdt) + k->one_b2 * d * d, k->sdt);                            \
        *m = mm;                                                                                \
        *v = vv;                                                                                \
        if (amsgrad) {                                                                          \
            T prev = *vmax; /* torch.maximum: NaN wins */                                       \
            vv = prev != prev ? prev : (prev > vv ? prev : vv);                                 \
            *vmax = vv;                                                                         \
        }                                                                                       \
        T denom = R(R(R(SQRT(vv), k->sdt) / k->bc2s, k->sdt) + k->eps, k->sdt);                 \
        return R(p + k->neg_step * mm / denom, k->pdt);                                         \
    }

CT_OPTIM_DEFINE(float, f, sqrtf, NO_ROUND)
CT_OPTIM_DEFINE(double, d, sqrt, NO_ROUND)
CT_OPTIM_DEFINE(float, r, sqrtf, round_to) /* 16-bit parameters or state */

#define ELEM(v, i) (ct_cpu_base(v) + (i) * (int64_t)ct_dtype_size((v)->dtype))

static bool parallel(int64_t n) { return n >= CT_CPU_GRAIN; }

/* ---- SGD ---------------------------------------------------------------------------------- */

/* Typed loops: chunks of CHUNK elements spread over threads; within a
 * chunk a plain loop with the constants in locals and one variant per
 * presence of the optional state tensor, so that it has no branches and
 * vectorises. */
#define CHUNK 4096
#define CHUNKS(n) (((n) + CHUNK - 1) / CHUNK)
#define CHUNK_LEN(n, c) ((n) - (c) * CHUNK < CHUNK ? (n) - (c) * CHUNK : CHUNK)

#define SGD_TYPED(T, SUF)                                                                      \
    static void sgd_##SUF##_chunk(T *restrict p, const T *restrict g, T *restrict b,           \
                                  int64_t n, const sgd_k_##SUF k) {                            \
        if (b) {                                                                               \
            for (int64_t i = 0; i < n; i++) p[i] = sgd_elem_##SUF(p[i], g[i], &b[i], true, k); \
        } else {                                                                               \
            for (int64_t i = 0; i < n; i++) p[i] = sgd_elem_##SUF(p[i], g[i], NULL, false, k); \
        }                                                                                      \
    }                                                                                          \
    static void sgd_##SUF##_loop(T *p, const T *g, T *b, int64_t n, const sgd_k_##SUF *k) {    \
        _Pragma("omp parallel for schedule(static) if (parallel(n))")                          \
        for (int64_t c = 0; c < CHUNKS(n); c++)                                                \
            sgd_##SUF##_chunk(p + c * CHUNK, g + c * CHUNK, b ? b + c * CHUNK : NULL,          \
                              CHUNK_LEN(n, c), *k);                                            \
    }
SGD_TYPED(float, f)
SGD_TYPED(double, d)

/* 16-bit parameters, or state of another dtype: float through converters. */
static void sgd_generic(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                        int64_t n, const sgd_k_r *k) {
#pragma omp parallel for schedule(static) if (parallel(n))
    for (int64_t i = 0; i < n; i++) {
        float b = buf ? (float)ct_cpu_load(ELEM(buf, i), buf->dtype) : 0.0f;
        float p = (float)ct_cpu_load(ELEM(param, i), param->dtype);
        float g = (float)ct_cpu_load(ELEM(grad, i), grad->dtype);
        p = sgd_elem_r(p, g, &b, buf != NULL, *k);
        ct_cpu_store(ELEM(param, i), param->dtype, p);
        if (buf) ct_cpu_store(ELEM(buf, i), buf->dtype, b);
    }
}

ct_status ct_cpu_sgd_update(const ct_kview *param, const ct_kview *grad, const ct_kview *buf,
                            const ct_sgd_args *a) {
    int64_t n = ct_cpu_numel(param);
    ct_dtype dt = param->dtype;
    bool typed = !buf || buf->dtype == dt;
    if (dt == CT_FLOAT64 && typed) {
        sgd_k_d k = sgd_consts_d(a, buf != NULL, dt, dt);
        sgd_d_loop((double *)(void *)ct_cpu_base(param), (const double *)(void *)ct_cpu_base(grad),
                buf ? (double *)(void *)ct_cpu_base(buf) : NULL, n, &k);
        return CT_OK;
    }
    if (dt == CT_FLOAT32 && typed) {
        sgd_k_f k = sgd_consts_f(a, buf != NULL, dt, dt);
        sgd_f_loop((float *)(void *)ct_cpu_base(param), (const float *)(void *)ct_cpu_base(grad),
                buf ? (float *)(void *)ct_cpu_base(buf) : NULL, n, &k);
        return CT_OK;
    }
    sgd_k_r k = sgd_consts_r(a, buf != NULL, dt, buf ? buf->dtype : dt);
    sgd_generic(param, grad, buf, n, &k);
    return CT_OK;
}

/* ---- Adam / AdamW --------------------------------------------------------------------------- */

#define ADAM_TYPED(T, SUF)                                                                     \
    static void adam_##SUF##_chunk(T *restrict p, const T *restrict g, T *restrict m,          \
                                   T *restrict v, T *restrict vmax, int64_t n,                 \
                                   const adam_k_##SUF k) {                                     \
        if (vmax) {                                                                            \
            for (int64_t i = 0; i < n; i++)                                                    \
                p[i] = adam_elem_##SUF(p[i], g[i], &m[i], &v[i], &vmax[i], true, k);           \
        } else {                                                                               \
            for (int64_t i = 0; i < n; i++)                                                    \
                p[i] = adam_elem_##SUF(p[i], g[i], &m[i], &v[i], NULL, false, k);              \
        }                                                                                      \
    }                                                                                          \
    static void adam_##SUF##_loop(T *p, const T *g, T *m, T *v, T *vmax, int64_t n,            \
                                  const adam_k_##SUF *k) {                                     \
        _Pragma("omp parallel for schedule(static) if (parallel(n))")                          \
        for (int64_t c = 0; c < CHUNKS(n); c++)                                                \
            adam_##SUF##_chunk(p + c * CHUNK, g + c * CHUNK, m + c * CHUNK, v + c * CHUNK,     \
                               vmax ? vmax + c * CHUNK : NULL, CHUNK_LEN(n, c), *k);           \
    }
ADAM_TYPED(float, f)
ADAM_TYPED(double, d)

static void adam_generic(const ct_kview *param, const ct_kview *grad, const ct_kview *exp_avg,
                         const ct_kview *exp_avg_sq, const ct_kview *vmax, int64_t n,
                         const adam_k_r *k) {
#pragma omp parallel for schedule(static) if (parallel(n))
    for (int64_t i = 0; i < n; i++) {
        float p = (float)ct_cpu_load(ELEM(param, i), param->dtype);
        float g = (float)ct_cpu_load(ELEM(grad, i), grad->dtype);
        float m = (float)ct_cpu_load(ELEM(exp_avg, i), exp_avg->dtype);
        float v = (float)ct_cpu_load(ELEM(exp_avg_sq, i), exp_avg_sq->dtype);
        float mx = vmax ? (float)ct_cpu_load(ELEM(vmax, i), vmax->dtype) : 0.0f;
        p = adam_elem_r(p, g, &m, &v, &mx, vmax != NULL, *k);
        ct_cpu_store(ELEM(param, i), param->dtype, p);
        ct_cpu_store(ELEM(exp_avg, i), exp_avg->dtype, m);
        ct_cpu_store(ELEM(exp_avg_sq, i), exp_avg_sq->dtype, v);
        if (vmax) ct_cpu_store(ELEM(vmax, i), vmax->dtype, mx);
    }
}

ct_status ct_cpu_adam_update(const ct_kview *param, const ct_kview *grad, const ct_kview *exp_avg,
                             const ct_kview *exp_avg_sq, const ct_kview *max_exp_avg_sq,
                             const ct_adam_args *a) {
    int64_t n = ct_cpu_numel(param);
    ct_dtype dt = param->dtype;
    bool typed = exp_avg->dtype == dt && exp_avg_sq->dtype == dt &&
                 (!max_exp_avg_sq || max_exp_avg_sq->dtype == dt);
#define PTR(T, v) ((v) ? (T *)(void *)ct_cpu_base(v) : NULL)
    if (dt == CT_FLOAT64 && typed) {
        adam_k_d k = adam_consts_d(a, dt, dt);
        adam_d_loop(PTR(double, param), PTR(const double, grad), PTR(double, exp_avg),
                 PTR(double, exp_avg_sq), PTR(double, max_exp_avg_sq), n, &k);
        return CT_OK;
    }
    if (dt == CT_FLOAT32 && typed) {
        adam_k_f k = adam_consts_f(a, dt, dt);
        adam_f_loop(PTR(float, param), PTR(const float, grad), PTR(float, exp_avg),
                 PTR(float, exp_avg_sq), PTR(float, max_exp_avg_sq), n, &k);
    } else {
        adam_k_r k = adam_consts_r(a, dt, exp_avg->dtype);
        adam_generic(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, &k);
    }
#undef PTR
    return CT_OK;
}

/* ---- GradScaler ------------------------------------------------------------------------------ */

/* float32 in place, float (16-bit) or double (float64) products rounded
 * once, as the device kernel (ct_k_amp_unscale). */
static bool unscale_one(const ct_kview *grad, double inv_scale) {
    const int64_t n = ct_cpu_numel(grad);
    const float inv = (float)inv_scale;
    bool found = false;
    if (grad->dtype == CT_FLOAT32) {
        float *g = (float *)(void *)ct_cpu_base(grad);
        for (int64_t i = 0; i < n; i++) {
            found |= !isfinite(g[i]);
            if (inv != 1.0f) g[i] *= inv;
        }
    } else {
        const bool wide = grad->dtype == CT_FLOAT64;
        for (int64_t i = 0; i < n; i++) {
            double v = ct_cpu_load(ELEM(grad, i), grad->dtype);
            found |= !isfinite(v);
            if (inv != 1.0f) ct_cpu_store(ELEM(grad, i), grad->dtype, wide ? v * (double)inv : (double)((float)v * inv));
        }
    }
    return found;
}

ct_status ct_cpu_amp_unscale(const ct_kview *grads, int count, const ct_kview *found_inf, double inv_scale) {
    bool found = false;
    for (int k = 0; k < count; k++) found |= unscale_one(&grads[k], inv_scale);
    if (found) *(float *)(void *)ct_cpu_base(found_inf) = 1.0f;
    return CT_OK;
}
