/*
 * ctorch/amp.h — automatic mixed precision: autocast regions (PyTorch's
 * torch.autocast).
 *
 * Inside an autocast region for a device type, ops on tensors of that
 * device type run in the precision PyTorch's autocast gives them:
 *  - matmul, mm, bmm, linear and conv2d (the lower-precision list) cast
 *    their floating inputs to the region's dtype: bfloat16 on the CPU,
 *    float16 on cuda and opencl by default;
 *  - the float32 list casts 16-bit inputs up to float32: on the CPU the
 *    losses and prod; on cuda and opencl (which follows CUDA's lists) the
 *    losses, exp, expm1, log, log2, log1p, reciprocal, rsqrt, pow,
 *    softplus, layer_norm, softmax, log_softmax, sum and prod;
 *  - promote ops run in the widest floating input (cat and stack on the
 *    CPU, atan2 on cuda and opencl);
 *  - everything else runs in its inputs' dtype.
 * float64 tensors are never cast, and tensors on another device type are
 * left alone. binary_cross_entropy is refused in a cuda/opencl region, as
 * PyTorch refuses it (use binary_cross_entropy_with_logits).
 *
 * The casts are recorded by autograd, so gradients reach float32 parameters
 * in float32. A float32 leaf that requires grad (a parameter) is cast once
 * per outermost region, however often it is used (the weight-cast cache);
 * the cache is dropped when the outermost region ends. Like PyTorch, the
 * state is per thread; wrap the forward pass and the loss, not backward.
 *
 *   CT_AUTOCAST(CT_DEVICE_CPU) {                       // bfloat16
 *       ct_tensor *loss = ct_cross_entropy(ct_module_forward(model, x), y);
 *       ...
 *   }
 *   CT_AUTOCAST(CT_DEVICE_CUDA, .dtype = CT_BFLOAT16) { ... }
 *   CT_AUTOCAST(CT_DEVICE_CPU, .disabled = true) { ... } // autocast(enabled=False)
 */
#ifndef CTORCH_AMP_H
#define CTORCH_AMP_H

#include <stdbool.h>

#include "device.h"
#include "dtype.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero-initialised options are PyTorch's defaults. */
typedef struct ct_autocast_opts {
    int reserved_;   /* keeps the macros valid with no options; leave it */
    ct_dtype dtype;  /* CT_DTYPE_DEFAULT: bfloat16 on the CPU, float16 on cuda/opencl */
    bool disabled;   /* enabled=False: autocast off inside (nests) */
    bool no_cache;   /* cache_enabled=False: parameters are cast at every use */
} ct_autocast_opts;

/* Enter a region for a device type; regions nest, and each enter needs its
 * exit. A dtype other than float16/bfloat16 is refused (CT_ERR_DTYPE, the
 * region is entered disabled so that the exit still pairs). */
CT_API ct_status ct_autocast_enter(ct_device_type type, ct_autocast_opts opts);
/* Leave the innermost region of that device type (CT_ERR_INVALID_ARG when
 * there is none); the outermost exit drops the weight-cast cache. */
CT_API ct_status ct_autocast_exit(ct_device_type type);
#define ct_autocast_begin(type, ...) ct_autocast_enter((type), (ct_autocast_opts){.reserved_ = 0, __VA_ARGS__})

/* A block run inside an autocast region: CT_AUTOCAST(type, options...) { }.
 * Leaving it with break, goto or return skips the exit, as with CT_SCOPE:
 * call ct_autocast_exit yourself then. */
#define CT_AUTOCAST(type, ...) CT_AUTOCAST_AT_(CT_CONCAT_(ct_autocast_once_, __LINE__), type, __VA_ARGS__)
#define CT_AUTOCAST_AT_(v, type, ...) \
    for (int v = (ct_autocast_begin(type, __VA_ARGS__), 1); v; v = (ct_autocast_exit(type), 0))

/* torch.is_autocast_enabled(device_type) / get_autocast_dtype. */
CT_API bool ct_is_autocast_enabled(ct_device_type type);
CT_API ct_dtype ct_get_autocast_dtype(ct_device_type type);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_AMP_H */
