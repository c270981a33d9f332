/*
 * cpu_nn.c — the CPU backend's nn table (ct_cpu_nn_ops) and its small
 * kernels: the dropout mask and masked scaling, and the embedding gradient.
 *
 * The dropout mask evaluates the shared Philox mapping (src/kernels/
 * philox.h) element by element, and masked_scale computes in exactly the
 * compute type the contract names, so OpenCL and CUDA produce the same
 * bits. The embedding gradient sums each row's list of gradient rows in
 * list order, one row per thread at a time: no two threads write one row.
 */
#include <stdlib.h>

#include "../../core/error.h"
#include "cpu_nn.h"
#include "cpu_vec.h"
#include "kernels/philox.h"

/* ---- dropout ------------------------------------------------------------------------------ */

static ct_status cpu_dropout_mask(const ct_kview *mask, uint64_t seed, uint64_t offset,
                                  uint32_t keep_threshold) {
    const int64_t n = ct_cpu_numel(mask), npairs = (n + 1) / 2;
    uint8_t *m = (uint8_t *)ct_cpu_base(mask);
#pragma omp parallel for schedule(static) if (n >= CT_CPU_GRAIN / 4)
    for (int64_t j = 0; j < npairs; j++) {
        uint32_t r[4];
        uint64_t block = offset + (uint64_t)j;
        ct_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u, (uint32_t)seed,
                         (uint32_t)(seed >> 32), r);
        m[2 * j] = (r[0] >> 8) < keep_threshold;
        if (2 * j + 1 < n) m[2 * j + 1] = (r[2] >> 8) < keep_threshold;
    }
    return CT_OK;
}

static void masked_scale_16bit(const uint16_t *x, const uint8_t *m, uint16_t *y, int64_t n,
                               float scale, ct_dtype dt) {
    for (int64_t i = 0; i < n; i++) {
        float v = dt == CT_FLOAT16 ? ct_cpu_half_bits_to_float(x[i]) : ct_cpu_bf16_bits_to_float(x[i]);
        v = (v * (float)m[i]) * scale;
        y[i] = dt == CT_FLOAT16 ? ct_cpu_float_to_half_bits(v) : ct_cpu_float_to_bf16_bits(v);
    }
}

static ct_status cpu_masked_scale(const ct_kview *out, const ct_kview *in, const ct_kview *mask,
                                  double scale) {
    const int64_t n = ct_cpu_numel(out);
    const uint8_t *m = (const uint8_t *)ct_cpu_base(mask);
    const void *x = ct_cpu_base(in);
    void *y = ct_cpu_base(out);
    const float sf = (float)scale;
    const int64_t chunk = 4096, nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (n >= CT_CPU_GRAIN)
    for (int64_t b = 0; b < nchunks; b++) {
        const int64_t i0 = b * chunk, nb = n - i0 < chunk ? n - i0 : chunk;
        if (in->dtype == CT_FLOAT64) {
            const double *xd = (const double *)x + i0;
            double *yd = (double *)y + i0;
            for (int64_t i = 0; i < nb; i++) yd[i] = (xd[i] * (double)m[i0 + i]) * scale;
        } else if (in->dtype == CT_FLOAT32) {
            const float *xf = (const float *)x + i0;
            float *yf = (float *)y + i0;
#pragma omp simd
            for (int64_t i = 0; i < nb; i++) yf[i] = (xf[i] * (float)m[i0 + i]) * sf;
        } else {
            masked_scale_16bit((const uint16_t *)x + i0, m + i0, (uint16_t *)y + i0, nb, sf,
                               in->dtype);
        }
    }
    return CT_OK;
}

/* ---- embedding ---------------------------------------------------------------------------- */

/* Row v of grad_weight: the sum of its listed grad_out rows, block by block. */
static void embedding_row(char *dst, const char *grad, const int64_t *positions, int64_t k0,
                          int64_t k1, int64_t d, ct_dtype dt) {
    const int64_t esz = (int64_t)ct_dtype_size(dt);
    double acc[CT_CPU_NN_BLOCK], buf[CT_CPU_NN_BLOCK];
    for (int64_t c0 = 0; c0 < d; c0 += CT_CPU_NN_BLOCK) {
        const int64_t nb = d - c0 < CT_CPU_NN_BLOCK ? d - c0 : CT_CPU_NN_BLOCK;
        for (int64_t c = 0; c < nb; c++) acc[c] = 0.0;
        for (int64_t k = k0; k < k1; k++) {
            ct_cpu_gather_f64(grad + (positions[k] * d + c0) * esz, nb, esz, dt, buf);
            for (int64_t c = 0; c < nb; c++) acc[c] += buf[c];
        }
        ct_cpu_nn_store_block(dst + c0 * esz, acc, nb, dt);
    }
}

static ct_status cpu_embedding_backward(const ct_kview *grad_weight, const ct_kview *grad_out,
                                        const ct_kview *offsets, const ct_kview *positions,
                                        int64_t padding_idx) {
    const int64_t v = grad_weight->shape[0], d = grad_weight->shape[1];
    const int64_t esz = (int64_t)ct_dtype_size(grad_weight->dtype);
    const int64_t *off = (const int64_t *)(const void *)ct_cpu_base(offsets);
    const int64_t *pos = (const int64_t *)(const void *)ct_cpu_base(positions);
    const int64_t n = off[v];
#pragma omp parallel for schedule(dynamic, 64) if ((n + v) * d >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < v; r++) {
        bool skip = r == padding_idx;
        embedding_row(ct_cpu_base(grad_weight) + r * d * esz, ct_cpu_base(grad_out), pos,
                      skip ? 0 : off[r], skip ? 0 : off[r + 1], d, grad_weight->dtype);
    }
    return CT_OK;
}

/* ---- the table ------------------------------------------------------------------------------ */

const struct ct_backend_nn ct_cpu_nn_ops = {
    .max_pool2d = ct_cpu_max_pool2d,
    .max_pool2d_backward = ct_cpu_max_pool2d_backward,
    .avg_pool2d = ct_cpu_avg_pool2d,
    .avg_pool2d_backward = ct_cpu_avg_pool2d_backward,
    .adaptive_avg_pool2d = ct_cpu_adaptive_avg_pool2d,
    .adaptive_avg_pool2d_backward = ct_cpu_adaptive_avg_pool2d_backward,
    .batch_norm_stats = ct_cpu_batch_norm_stats,
    .batch_norm_apply = ct_cpu_batch_norm_apply,
    .batch_norm_backward_reduce = ct_cpu_batch_norm_backward_reduce,
    .batch_norm_backward_apply = ct_cpu_batch_norm_backward_apply,
    .layer_norm = ct_cpu_layer_norm,
    .layer_norm_backward = ct_cpu_layer_norm_backward,
    .layer_norm_backward_params = ct_cpu_layer_norm_backward_params,
    .dropout_mask = cpu_dropout_mask,
    .masked_scale = cpu_masked_scale,
    .embedding_backward = cpu_embedding_backward,
};
