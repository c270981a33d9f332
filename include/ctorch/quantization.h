/*
 * ctorch/quantization.h — int8 inference: dynamic quantization of Linear
 * layers (torch.ao.quantization.quantize_dynamic) and the integer product
 * under it (torch._int_mm). docs/quantization.md has the scheme, the error
 * bound and measurements.
 *
 * Scheme (PyTorch's qint8 dynamic Linear, with the deviations noted):
 * - weights: int8, symmetric, per output channel: scale[n] =
 *   max(max_k |w[n,k]| / 127, FLT_EPSILON), q = round(w / scale) in
 *   [-127, 127]; the bias stays float32.
 * - activations: quantized at every forward, per tensor, asymmetric 7-bit
 *   uint8 over [min(x, 0), max(x, 0)]: scale = (max - min) / 127,
 *   zero_point = round(-min / scale), q = clamp(round(x / scale) +
 *   zero_point, 0, 127): PyTorch's reduce_range, which its x86 dynamic
 *   Linear always uses; ctorch uses it on every CPU path, so results do not
 *   depend on the CPU and the AVX2 kernel can use vpmaddubsw exactly.
 * - y[m,n] = x_scale · w_scale[n] · Σ_k (xq[m,k] − zp) · wq[n,k] + bias[n],
 *   the sum exact in int32 (in_features ≤ 132104).
 * Inference only: no backward; a quantized module refuses training mode
 * and inputs that require grad while grad mode is on.
 */
#ifndef CTORCH_QUANTIZATION_H
#define CTORCH_QUANTIZATION_H

#include <stdbool.h>

#include "nn.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.backends.quantized.engine, with the kernel the CPU runs: "x86
 * (amx_int8, oneDNN)" (AMX tiles through oneDNN), "x86 (avx512_vnni)",
 * "x86 (avx_vnni)", "x86 (avx2)" or "x86 (scalar)". */
CT_API const char *ct_quantized_engine(void);

/* torch._int_mm(a, b): int8 a [m, k] @ int8 b [k, n] → int32 [m, n], exact
 * (sums that overflow int32 wrap, as PyTorch's). On the CPU it runs the
 * VNNI/AVX2 int8 GEMM; on other devices the integer matmul kernel. */
CT_API ct_tensor *ct_int_mm(const ct_tensor *a, const ct_tensor *b);

/* Per-output-channel symmetric int8 quantization of a 2-D float weight
 * [out, in]: *q (int8, same shape) and *scale (float32 [out]), new
 * references on weight's device. */
CT_API ct_status ct_quantize_weight_int8(const ct_tensor *weight, ct_tensor **q, ct_tensor **scale);

/* torch.ops.quantized.linear_dynamic: F.linear with a quantized weight.
 * input float32 [*, in]; weight int8 [out, in]; weight_scale float32
 * [out]; bias float32 [out] or NULL. Returns float32 [*, out]. */
CT_API ct_tensor *ct_quantized_linear_dynamic(const ct_tensor *input, const ct_tensor *weight,
                                              const ct_tensor *weight_scale, const ct_tensor *bias);

/* torch.ao.nn.quantized.dynamic.Linear.from_float(linear): a new
 * DynamicQuantizedLinear (in eval mode) built from a Linear's weight and
 * bias; linear is not changed. Its buffers: "weight" (int8),
 * "weight_scale" (float32) and "bias" (float32, when linear has one). */
CT_API ct_module *ct_nnqd_linear_from_float(ct_module *linear);

/* torch.ao.quantization.quantize_dynamic(model, {nn.Linear},
 * dtype=torch.qint8, inplace=inplace): every Linear in the tree becomes a
 * DynamicQuantizedLinear (all or none: on failure nothing changed) and the
 * model goes to eval mode. inplace: model itself is changed and returned;
 * otherwise a quantized copy (ct_module_clone on the model's device) is
 * returned and model is untouched. A bare Linear cannot be replaced in
 * place: with inplace=false its quantized copy is returned, with true it is
 * an error. */
CT_API ct_module *ct_quantize_dynamic(ct_module *model, bool inplace);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_QUANTIZATION_H */
