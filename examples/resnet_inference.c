/*
 * resnet_inference.c — fast CPU inference (workload W6); the C version of
 *
 *   print(torch.backends.cpu.get_cpu_capability(), torch.backends.mkldnn.is_available())
 *   model = torchvision.models.resnet18(num_classes=10).eval()
 *   x = torch.randn(64, 3, 32, 32)
 *   with torch.no_grad():
 *       y = model(x)                                   # timed
 *       fused = torch.ao.quantization.fuse_modules(model, conv_bn_pairs)
 *       print((fused(x) - y).abs().max())              # timed too
 *
 * ctorch picks its CPU kernels from CPUID by itself (docs/performance.md);
 * folding batch norm into the convolutions saves a pass per layer.
 *
 * Usage: resnet_inference [batches]   (default 10)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ctorch/ctorch.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Images per second of `batches` forwards of x (after one warm-up). */
static double images_per_s(ct_module *model, const ct_tensor *x, int batches) {
    CT_SCOPE { ct_forward(model, x); }
    double t0 = seconds();
    for (int i = 0; i < batches; i++) CT_SCOPE { ct_forward(model, x); }
    return (double)batches * (double)ct_size(x, 0) / (seconds() - t0);
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 10;
    printf("CPU capability %s, oneDNN %s, float32 GEMM on %s\n", ct_backends_cpu_get_cpu_capability(),
           ct_backends_mkldnn_is_available() ? "in use" : "not used", ct_backends_cpu_gemm_engine());
    ct_module *model = ct_model_resnet18(10);
    if (!model) return fprintf(stderr, "%s\n", ct_last_error()), 1;
    ct_module_train(model, false); /* model.eval() */
    int rc = 0;
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(64, 3, 32, 32));
        ct_tensor *y = ct_forward(model, x);
        double plain = images_per_s(model, x, batches);
        int pairs = ct_module_fuse_conv_bn_all(model);
        if (!y || pairs < 0) {
            fprintf(stderr, "%s\n", ct_last_error());
            rc = 1;
        } else {
            double fused = images_per_s(model, x, batches);
            double diff = ct_item(ct_max_all(ct_abs(ct_sub(ct_forward(model, x), y))));
            printf("%.0f img/s; with %d batch norms folded: %.0f img/s (largest difference %.2g)\n", plain,
                   pairs, fused, diff);
        }
    }
    ct_module_free(model);
    return rc;
}
