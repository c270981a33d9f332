/*
 * custom_kernel.c — your own kernel on ctorch tensors: the classic vector
 * add, one source for OpenCL and CUDA. The PyTorch original:
 *
 *   src = "__global__ void vec_add(const float *a, const float *b, float *c, long n) {...}"
 *   mod = torch.utils.cpp_extension.load_inline(name="ext", cuda_sources=src, ...)
 *   a = torch.randn(n, device="cuda"); b = torch.randn(n, device="cuda")
 *   c = torch.empty_like(a)
 *   mod.vec_add(a, b, c)          # a launch of (n + 255) // 256 blocks of 256
 *   assert torch.equal(c, a + b)
 *
 * Usage: custom_kernel [device]   (default: the best device; opencl or cuda)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

static const char *vec_add_source =
    "K_KERNEL vec_add(K_GLOBAL const float *a, K_GLOBAL const float *b, K_GLOBAL float *c, k_long n) {\n"
    "    k_long i = k_global_id();\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) return fprintf(stderr, "%s\n", ct_last_error()), 2;
    const int64_t n = 1 << 20;
    ct_kernel *k = ct_kernel_compile(dev, vec_add_source, "vec_add", NULL);
    if (!k) return fprintf(stderr, "error: %s\n", ct_last_error()), 1;
    int rc = 1;
    CT_SCOPE {
        ct_tensor *a = ct_randn(CT_SHAPE(n), .device = dev), *b = ct_randn(CT_SHAPE(n), .device = dev);
        ct_tensor *c = ct_empty_like(a);
        if (ct_kernel_launch(k, n, 256, CT_KARGS(ct_karg_tensor(a), ct_karg_tensor(b), ct_karg_tensor(c),
                                                 ct_karg_i64(n))) == CT_OK && ct_equal(c, ct_add(a, b))) {
            printf("vec_add on %s: c == a + b for %lld elements\n", ct_device_type_name(dev.type), (long long)n);
            rc = 0;
        }
    }
    if (rc) fprintf(stderr, "error: %s\n", ct_last_status() != CT_OK ? ct_last_error() : "c != a + b");
    ct_kernel_free(k);
    return rc;
}
