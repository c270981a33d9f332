/*
 * quantized.h — the quantized linear with a caller-kept weight row-sum
 * cache (internal): DynamicQuantizedLinear (src/nn/quantize_dynamic.c)
 * computes Σ_k wq[n,k] once per weight instead of on every forward.
 */
#ifndef CT_OPS_QUANTIZED_H
#define CT_OPS_QUANTIZED_H

#include <stdint.h>

#include "ctorch/quantization.h"

/* Activations are quantized to 7 bits (0..127, PyTorch's reduce_range),
 * so the AVX2 kernel can use vpmaddubsw exactly. */
#define CT_QLINEAR_ACT_QMAX 127

/* Σ_k w[j,k] for a contiguous CPU int8 weight [n, k] into sums (n
 * entries). */
void cti_qlinear_row_sums(const ct_tensor *weight, int32_t *sums);

/* ct_quantized_linear_dynamic with row_sums (n entries, from
 * cti_qlinear_row_sums on this weight) or NULL to compute them; row_sums
 * is only read on the CPU. */
ct_tensor *cti_quantized_linear_dynamic(const ct_tensor *input, const ct_tensor *weight,
                                        const ct_tensor *weight_scale, const ct_tensor *bias,
                                        const int32_t *row_sums);

#endif /* CT_OPS_QUANTIZED_H */
