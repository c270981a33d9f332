/*
 * custom_function.c — a fused activation with its own forward and backward
 * kernels, wrapped as an autograd function and checked by gradcheck. The
 * PyTorch original:
 *
 *   class FusedSiLU(torch.autograd.Function):
 *       @staticmethod
 *       def forward(ctx, x):
 *           ctx.save_for_backward(x); return ext.silu_fwd(x)
 *       @staticmethod
 *       def backward(ctx, gy):
 *           x, = ctx.saved_tensors; return ext.silu_bwd(x, gy)
 *   x = torch.randn(8, 5, dtype=torch.float64, device="cuda", requires_grad=True)
 *   assert torch.autograd.gradcheck(FusedSiLU.apply, (x,))
 *
 * Usage: custom_function [device]   (default: the best device; opencl or cuda)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

static const char *silu_source =
    "K_FUNC double sig(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
    "K_KERNEL silu_fwd(K_GLOBAL const double *x, K_GLOBAL double *y, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) y[i] = x[i] * sig(x[i]);\n"
    "}\n"
    "K_KERNEL silu_bwd(K_GLOBAL const double *x, K_GLOBAL const double *gy, K_GLOBAL double *gx, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) { double s = sig(x[i]); gx[i] = gy[i] * (s + x[i] * s * (1.0 - s)); }\n"
    "}\n";

typedef struct kernels { ct_kernel *fwd, *bwd; } kernels;

static ct_tensor *silu_forward(ct_function_ctx *ctx, ct_tensor *const *in, int n) {
    (void)n;
    kernels *k = ct_ctx_user(ctx);
    ct_tensor *x = ct_contiguous(in[0]), *y = ct_empty_like(x);
    ct_status st = ct_kernel_launch(k->fwd, ct_numel(x), 0,
                                    CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(y), ct_karg_i64(ct_numel(x))));
    if (st == CT_OK) st = ct_ctx_save_for_backward(ctx, x);
    return st == CT_OK ? y : NULL;
}

static ct_status silu_backward(ct_function_ctx *ctx, const ct_tensor *gy, ct_tensor **grad_inputs) {
    kernels *k = ct_ctx_user(ctx);
    const ct_tensor *x = ct_ctx_saved_tensor(ctx, 0);
    if (!x) return ct_last_status();
    ct_tensor *g = ct_contiguous(gy), *gx = ct_empty_like(x);
    grad_inputs[0] = gx;
    return ct_kernel_launch(k->bwd, ct_numel(x), 0, CT_KARGS(ct_karg_tensor(x), ct_karg_tensor(g),
                                                             ct_karg_tensor(gx), ct_karg_i64(ct_numel(x))));
}

static const ct_function fused_silu = {"FusedSiLUBackward", silu_forward, silu_backward};

static ct_tensor *apply(ct_tensor *const *in, int n, void *user) { return ct_function_apply(&fused_silu, in, n, user); }

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) return fprintf(stderr, "%s\n", ct_last_error()), 2;
    kernels k = {ct_kernel_compile(dev, silu_source, "silu_fwd", NULL), ct_kernel_compile(dev, silu_source, "silu_bwd", NULL)};
    bool ok = false;
    if (k.fwd && k.bwd) CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(8, 5), .dtype = CT_FLOAT64, .device = dev);
        ct_set_requires_grad(x, true);
        if (ct_gradcheck(apply, &x, 1, &k, &ok) == CT_OK && ok)
            printf("gradcheck of FusedSiLU on %s: passed\n", ct_device_type_name(dev.type));
    }
    if (!ok) fprintf(stderr, "error: %s\n", ct_last_error());
    ct_kernel_free(k.fwd);
    ct_kernel_free(k.bwd);
    return ok ? 0 : 1;
}
