/*
 * ctorch/autograd.h — reverse-mode automatic differentiation, as
 * torch.autograd: requires_grad, a dynamic graph recorded by ops, backward,
 * gradients accumulated into .grad, retain_graph, detach, no-grad blocks,
 * and a float64 gradcheck.
 *
 * Rules, as in PyTorch:
 *  - Tensors you create are leaves. A leaf requires grad only when you set
 *    it (floating dtypes only). An op whose inputs require grad returns a
 *    non-leaf that records how it was made (its grad_fn).
 *  - ct_backward(loss) computes gradients of loss with respect to every leaf
 *    that requires grad and adds them into the leaf's .grad (ct_grad).
 *    Non-leaf tensors get no .grad.
 *  - The graph's saved values are freed by backward unless retain_graph is
 *    set; a second backward through it is then an error.
 *  - Inside CT_NO_GRAD { … } (or after ct_set_grad_enabled(false)) ops record
 *    nothing. ct_detach(t) shares t's data without its history.
 *  - Gradients are computed by the ops' own kernels on the tensors' device.
 */
#ifndef CTORCH_AUTOGRAD_H
#define CTORCH_AUTOGRAD_H

#include <stdbool.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* t.requires_grad_(flag): leaves only; floating dtypes only. */
CT_API ct_status ct_set_requires_grad(ct_tensor *t, bool requires_grad);
CT_API bool ct_requires_grad(const ct_tensor *t);
CT_API bool ct_is_leaf(const ct_tensor *t);
/* The name of the op that made t ("MulBackward0"), or NULL for leaves. */
CT_API const char *ct_grad_fn_name(const ct_tensor *t);

/* t.grad: a new reference to the accumulated gradient, or NULL if none
 * (not an error: check ct_last_status only if you passed NULL). */
CT_API ct_tensor *ct_grad(const ct_tensor *t);
/* t.grad = grad (NULL clears it, as zero_grad(set_to_none=True)). */
CT_API ct_status ct_set_grad(ct_tensor *t, const ct_tensor *grad);

/* t.register_post_accumulate_grad_hook(hook): after backward has added
 * every gradient of this backward into the leaf t's .grad, fn(t, user)
 * runs (once per backward in which t received a gradient, in registration
 * order, with grad mode off). A status other than CT_OK stops backward
 * with that error. DistributedDataParallel uses it to start a bucket's
 * all-reduce as soon as its gradients are ready. Leaves that require
 * grad only. */
typedef ct_status (*ct_grad_hook_fn)(ct_tensor *leaf, void *user);
CT_API ct_status ct_register_post_accumulate_grad_hook(ct_tensor *t, ct_grad_hook_fn fn, void *user);
/* Removes the first hook registered with this fn and user (the handle's
 * remove()); CT_ERR_INVALID_ARG if there is none. */
CT_API ct_status ct_remove_post_accumulate_grad_hook(ct_tensor *t, ct_grad_hook_fn fn, void *user);

/* loss.backward(): loss must be a one-element tensor. */
CT_API ct_status ct_backward(const ct_tensor *root);
/* loss.backward(gradient, retain_graph): gradient has root's shape (NULL
 * for a one-element root). */
CT_API ct_status ct_backward_ex(const ct_tensor *root, const ct_tensor *gradient, bool retain_graph);

/* Grad mode (per thread), as torch.no_grad / torch.set_grad_enabled. */
CT_API bool ct_is_grad_enabled(void);
CT_API void ct_set_grad_enabled(bool enabled);
#define CT_NO_GRAD CT_NO_GRAD_AT_(__LINE__)
#define CT_NO_GRAD_AT_(line) CT_NO_GRAD_NAMED_(CT_CONCAT_(ct_no_grad_prev_, line), CT_CONCAT_(ct_no_grad_once_, line))
#define CT_NO_GRAD_NAMED_(prev, once)                                                             \
    for (bool prev = ct_is_grad_enabled(), once = (ct_set_grad_enabled(false), true); once; \
         once = false, ct_set_grad_enabled(prev))

/* torch.autograd.gradcheck: compares the analytical gradients of fn with
 * central finite differences in float64 (inputs must be float64 leaves
 * that require grad). fn returns a new tensor (any shape). As PyTorch's
 * default mode, it compares whole Jacobians for outputs of up to 256
 * elements (every output against every input element); larger outputs are
 * compared through 8 fixed random projections v (vᵀJ against vᵀJ_num).
 * *ok receives the verdict; on a mismatch the last error names the output
 * (or projection), the input, the element and both values. */
typedef ct_tensor *(*ct_gradcheck_fn)(ct_tensor *const *inputs, int n, void *user);
typedef struct ct_gradcheck_opts {
    int reserved_;
    double eps;   /* default 1e-6 */
    double atol;  /* default 1e-5 */
    double rtol;  /* default 1e-3 */
} ct_gradcheck_opts;
CT_API ct_status ct_gradcheck_opts_run(ct_gradcheck_fn fn, ct_tensor *const *inputs, int n, void *user,
                                       ct_gradcheck_opts o, bool *ok);
#define ct_gradcheck(fn, inputs, n, user, ok, ...) \
    ct_gradcheck_opts_run((fn), (inputs), (n), (user), (ct_gradcheck_opts){.reserved_ = 0, __VA_ARGS__}, (ok))

/* ---- custom differentiable functions (torch.autograd.Function) ----
 * A function with its own forward and backward, typically around your own
 * kernels (ctorch/extension.h). forward runs with grad mode off and returns
 * a new tensor; it may keep up to 4 tensors for backward with
 * ct_ctx_save_for_backward (inputs or its output). backward runs with grad
 * mode off, receives the gradient of the output and stores in
 * grad_inputs[i] a new reference to the gradient of input i (the input's
 * shape; NULL when input i needs none, see ct_ctx_needs_input_grad).
 * ct_function_apply takes 1 to 8 inputs; `user` reaches both callbacks
 * (ct_ctx_user) and must stay valid until the graph is freed, as must fn
 * and its name (the output's grad_fn name). */
typedef struct ct_function_ctx ct_function_ctx;
typedef struct ct_function {
    const char *name;
    ct_tensor *(*forward)(ct_function_ctx *ctx, ct_tensor *const *inputs, int n);
    ct_status (*backward)(ct_function_ctx *ctx, const ct_tensor *grad_output, ct_tensor **grad_inputs);
} ct_function;

CT_API ct_tensor *ct_function_apply(const ct_function *fn, ct_tensor *const *inputs, int n, void *user);
CT_API ct_status ct_ctx_save_for_backward(ct_function_ctx *ctx, const ct_tensor *t);
/* Saved tensor i (in saving order), or NULL with PyTorch's errors when it
 * was freed by an earlier backward or modified in place since. */
CT_API const ct_tensor *ct_ctx_saved_tensor(ct_function_ctx *ctx, int i);
CT_API bool ct_ctx_needs_input_grad(const ct_function_ctx *ctx, int i);
CT_API void *ct_ctx_user(const ct_function_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_AUTOGRAD_H */
