/*
 * function.c — custom differentiable functions (ct_function_apply, PyTorch's
 * torch.autograd.Function): a user's forward and backward, typically around
 * the user's own kernels, recorded as one autograd node.
 *
 * The user's callbacks are public-API code: they make ct_* results, which
 * the current scope tracks. Each callback therefore runs in a scope of its
 * own, and what it returns is taken out of that scope with an untracked
 * reference, so a caller's CT_SCOPE (around ct_backward, say) never
 * releases a gradient the engine still holds.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

#define MAX_FN_INPUTS CT_NODE_MAX_INPUTS

struct ct_function_ctx {
    const ct_function *fn;
    void *user;
    int n_inputs;
    bool needs_grad[MAX_FN_INPUTS];
    /* forward: what ct_ctx_save_for_backward kept (own references) */
    ct_tensor *pending[CT_NODE_MAX_SAVED];
    int n_saved;
    /* backward: the node holding the saved values */
    ct_node *node;
};

/* node->extra of a function's node. */
typedef struct fn_extra {
    const ct_function *fn;
    void *user;
    int n_saved;
} fn_extra;

/* ---- the context ---------------------------------------------------------------------- */

ct_status ct_ctx_save_for_backward(ct_function_ctx *ctx, const ct_tensor *t) {
    CT_CHECK_STATUS(ctx != NULL, CT_ERR_INVALID_ARG, "ctx_save_for_backward: NULL context");
    CT_CHECK_OBJ_STATUS(t, "ctx_save_for_backward(%s): NULL tensor", ctx->fn->name);
    CT_CHECK_STATUS(!ctx->node, CT_ERR_INVALID_ARG,
                    "ctx_save_for_backward(%s): only forward can save tensors", ctx->fn->name);
    CT_CHECK_STATUS(ctx->n_saved < CT_NODE_MAX_SAVED, CT_ERR_INVALID_ARG,
                    "ctx_save_for_backward(%s): at most %d tensors can be saved", ctx->fn->name, CT_NODE_MAX_SAVED);
    ctx->pending[ctx->n_saved++] = ct_retain((ct_tensor *)t);
    return CT_OK;
}

const ct_tensor *ct_ctx_saved_tensor(ct_function_ctx *ctx, int i) {
    CT_CHECK_NULL(ctx != NULL, CT_ERR_INVALID_ARG, "ctx_saved_tensor: NULL context");
    CT_CHECK_NULL(ctx->node, CT_ERR_INVALID_ARG, "ctx_saved_tensor(%s): saved tensors are read in backward",
                  ctx->fn->name);
    const fn_extra *x = ctx->node->extra;
    CT_CHECK_NULL(i >= 0 && i < x->n_saved, CT_ERR_INDEX, "ctx_saved_tensor(%s): index %d, but %d tensors were saved",
                  ctx->fn->name, i, x->n_saved);
    return cta_saved(ctx->node, i);
}

bool ct_ctx_needs_input_grad(const ct_function_ctx *ctx, int i) {
    return ctx && i >= 0 && i < ctx->n_inputs && ctx->needs_grad[i];
}

void *ct_ctx_user(const ct_function_ctx *ctx) { return ctx ? ctx->user : NULL; }

static void drop_pending(ct_function_ctx *ctx) {
    for (int i = 0; i < ctx->n_saved; i++) ct_decref(ctx->pending[i]);
    ctx->n_saved = 0;
}

/* ---- backward ------------------------------------------------------------------------- */

/* The user's gradient for input i, checked against the input it is for. */
static ct_status check_grad(const char *name, int i, const ct_input_meta *in, ct_tensor **g) {
    char want[CT_SHAPE_STR_MAX], got[CT_SHAPE_STR_MAX];
    if (!in->needs_grad) {
        ct_decref(*g);
        *g = NULL;
        return CT_OK;
    }
    if ((*g)->ndim != in->ndim || memcmp((*g)->shape, in->shape, sizeof(int64_t) * (size_t)in->ndim) != 0)
        return ct_error_set(CT_ERR_SHAPE, "function %s: backward returned a gradient of shape %s for input %d of "
                            "shape %s", name, ct_shape_str((*g)->shape, (*g)->ndim, got, sizeof got), i,
                            ct_shape_str(in->shape, in->ndim, want, sizeof want));
    if (!ct_device_equal((*g)->storage->device, in->device)) {
        char gd[32], id[32];
        return ct_error_set(CT_ERR_DEVICE, "function %s: backward returned a gradient on %s for input %d on %s", name,
                            ct_device_format((*g)->storage->device, gd, sizeof gd), i,
                            ct_device_format(in->device, id, sizeof id));
    }
    if ((*g)->dtype != in->dtype) { /* PyTorch casts a gradient to its input's dtype */
        ct_tensor *cast = cti_cast(*g, in->dtype);
        ct_decref(*g);
        *g = cast;
        if (!cast) return ct_last_status();
    }
    return CT_OK;
}

static ct_status function_backward(ct_node *n, const ct_tensor *grad_out, ct_tensor **grad_in) {
    const fn_extra *x = n->extra;
    ct_function_ctx ctx = {.fn = x->fn, .user = x->user, .n_inputs = n->n_inputs, .node = n};
    for (int i = 0; i < n->n_inputs; i++) ctx.needs_grad[i] = n->in[i].needs_grad;
    ct_tensor *g[MAX_FN_INPUTS] = {0};
    bool grad_mode = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    ct_scope_begin();
    ct_status st = x->fn->backward(&ctx, grad_out, g);
    for (int i = 0; i < n->n_inputs; i++)
        if (g[i]) g[i] = ct_retain(g[i]); /* out of the scope, untracked */
    ct_scope_end();
    ct_set_grad_enabled(grad_mode);
    for (int i = 0; i < n->n_inputs && st == CT_OK; i++)
        if (g[i]) st = check_grad(x->fn->name, i, &n->in[i], &g[i]);
    if (st != CT_OK) {
        for (int i = 0; i < n->n_inputs; i++) ct_decref(g[i]);
        return ct_error_pending_or(st, "function %s: backward failed", x->fn->name);
    }
    memcpy(grad_in, g, sizeof(ct_tensor *) * (size_t)n->n_inputs);
    return CT_OK;
}

/* ---- apply ---------------------------------------------------------------------------- */

static ct_tensor *run_forward(ct_function_ctx *ctx, ct_tensor *const *inputs, int n) {
    bool grad_mode = ct_is_grad_enabled();
    ct_set_grad_enabled(false);
    ct_scope_begin();
    ct_tensor *out = ctx->fn->forward(ctx, inputs, n);
    bool is_input = false;
    for (int i = 0; i < n; i++) is_input |= out == inputs[i];
    if (out && !is_input) out = ct_retain(out); /* out of the scope, untracked */
    ct_scope_end();
    ct_set_grad_enabled(grad_mode);
    if (!out) {
        (void)ct_error_pending_or(CT_ERR_INVALID_ARG, "function %s: forward returned NULL", ctx->fn->name);
        return NULL;
    }
    if (is_input) {
        ct_error_set(CT_ERR_INVALID_ARG, "function %s: forward returned one of its inputs; return a new tensor "
                     "(ct_clone, or a view such as ct_view_as)", ctx->fn->name);
        return NULL;
    }
    return out;
}

ct_tensor *ct_function_apply(const ct_function *fn, ct_tensor *const *inputs, int n, void *user) {
    CT_CHECK_NULL(fn && fn->forward && fn->backward && fn->name, CT_ERR_INVALID_ARG,
                  "function_apply: %s", !fn ? "NULL function" : "the function needs a name, forward and backward");
    CT_CHECK_NULL(n >= 1 && n <= MAX_FN_INPUTS && inputs, CT_ERR_INVALID_ARG,
                  "function_apply(%s): %d inputs (1 to %d)", fn->name, n, MAX_FN_INPUTS);
    for (int i = 0; i < n; i++) CT_CHECK_OBJ(inputs[i], NULL, "function_apply(%s): input %d is NULL", fn->name, i);
    ct_function_ctx ctx = {.fn = fn, .user = user, .n_inputs = n};
    bool record = cta_needs_grad((const ct_tensor *const *)inputs, n);
    for (int i = 0; i < n; i++) ctx.needs_grad[i] = record && inputs[i]->requires_grad;
    ct_tensor *out = run_forward(&ctx, inputs, n);
    if (!out || !record) {
        drop_pending(&ctx);
        return out ? ct_track(out) : NULL;
    }
    fn_extra *x = malloc(sizeof *x);
    ct_node *node = x ? cta_record(out, fn->name, function_backward, (const ct_tensor *const *)inputs, n) : NULL;
    if (!node) {
        if (!x) {
            ct_decref(out);
            ct_error_set(CT_ERR_OOM, "function %s: out of host memory", fn->name);
        }
        free(x);
        drop_pending(&ctx);
        return NULL;
    }
    *x = (fn_extra){.fn = fn, .user = user, .n_saved = ctx.n_saved};
    node->extra = x;
    ct_status st = CT_OK;
    for (int i = 0; i < ctx.n_saved && st == CT_OK; i++) st = cta_save(node, i, ctx.pending[i]);
    drop_pending(&ctx);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return ct_track(out);
}
