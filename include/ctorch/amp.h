/*
 * ctorch/amp.h — automatic mixed precision: autocast regions (PyTorch's
 * torch.autocast) and the gradient scaler (torch.amp.GradScaler).
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
 *       ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
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
#include "optim.h"
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

/* ---- GradScaler (torch.amp.GradScaler) --------------------------------------------------------
 *
 * Scales the loss so that small float16 gradients do not flush to zero,
 * then unscales the gradients before the optimizer step and skips the step
 * when any of them is inf or NaN, adjusting the scale:
 *
 *   ct_grad_scaler *scaler = ct_grad_scaler_new();
 *   for (...) CT_SCOPE {
 *       ct_zero_grad(opt);
 *       ct_tensor *loss = NULL;
 *       CT_AUTOCAST(CT_DEVICE_CUDA) { loss = ct_cross_entropy(ct_forward(model, x), y); }
 *       ct_backward(ct_grad_scaler_scale(scaler, loss));
 *       ct_grad_scaler_step(scaler, opt);     // unscales first, unless done already
 *       ct_grad_scaler_update(scaler);
 *   }
 *
 * To clip gradients, call ct_grad_scaler_unscale(scaler, opt) before
 * ct_clip_grad_norm, then step. The check-and-unscale is one fused kernel
 * per gradient with no host synchronisation; step reads the inf flag once
 * per device. Gradients must not be float16 (keep float32 parameters). */
typedef struct ct_grad_scaler ct_grad_scaler;

/* Zero-initialised options are PyTorch's defaults. */
typedef struct ct_grad_scaler_opts {
    int reserved_;          /* keeps the macro valid with no options; leave it */
    double init_scale;      /* 0: 2^16 */
    double growth_factor;   /* 0: 2.0 (must be > 1) */
    double backoff_factor;  /* 0: 0.5 (must be < 1) */
    int64_t growth_interval; /* 0: 2000 */
    bool disabled;          /* enabled=False: scale returns its input, step just steps */
} ct_grad_scaler_opts;

CT_API ct_grad_scaler *ct_grad_scaler_new_opts(ct_grad_scaler_opts o);
#define ct_grad_scaler_new(...) ct_grad_scaler_new_opts((ct_grad_scaler_opts){.reserved_ = 0, __VA_ARGS__})
CT_API void ct_grad_scaler_free(ct_grad_scaler *s);
/* loss * scale (a new tensor; with a disabled scaler, loss itself). */
CT_API ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss);
/* unscale_(optimizer): once per optimizer between updates. */
CT_API ct_status ct_grad_scaler_unscale(ct_grad_scaler *s, ct_optimizer *opt);
/* step(optimizer): skipped (CT_OK, counted) when a gradient is inf/NaN. */
CT_API ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt);
/* update(): back off after a skipped step, grow after growth_interval
 * clean ones; update_to(new_scale) sets the scale directly. */
CT_API ct_status ct_grad_scaler_update(ct_grad_scaler *s);
CT_API ct_status ct_grad_scaler_update_to(ct_grad_scaler *s, double new_scale);
CT_API double ct_grad_scaler_get_scale(const ct_grad_scaler *s);        /* 1.0 when disabled */
CT_API int64_t ct_grad_scaler_growth_tracker(const ct_grad_scaler *s);  /* clean steps since the last change */
CT_API int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *s);   /* steps skipped so far */
CT_API bool ct_grad_scaler_is_enabled(const ct_grad_scaler *s);
/* PyTorch's state_dict keys: "scale" (float32), "growth_factor",
 * "backoff_factor" (float64), "growth_interval" (int64), "_growth_tracker"
 * (int32); empty for a disabled scaler. Save it beside the optimizer's. */
CT_API struct ct_tensor_dict *ct_grad_scaler_state_dict(const ct_grad_scaler *s);
CT_API ct_status ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const struct ct_tensor_dict *d);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_AMP_H */
