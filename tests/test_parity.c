/*
 * test_parity.c — end-to-end parity with PyTorch: whole models loaded from
 * PyTorch's weights must give PyTorch's numbers. The fixtures
 * (tests/fixtures/parity/, written by tools/gen_parity_fixtures.py) hold the
 * Fashion-MNIST CNN's loss, gradients and parameters after one SGD or AdamW
 * step, and a ResNet-18's eval-mode logits. Each tensor is compared by its
 * largest absolute error relative to its largest |value|, which is how a
 * float32 rounding difference shows up regardless of the tensor's scale.
 * The CNN checks also run on every OpenCL and CUDA device.
 */
#include "testutil.h"

#include "ctorch/functional_loss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* float32 CPU: a few ulps of accumulated rounding; devices may reorder
 * reductions (and use fused multiply-adds), so they get more room. */
#define CPU_TOL 1e-5
#define DEVICE_TOL 1e-4
#define LOGITS_TOL 1e-4

static char *fixture_path(const char *file) {
    const char *env = getenv("CT_FIXTURES_DIR");
    char *p = malloc(4096);
    if (env) {
        snprintf(p, 4096, "%s/parity/%s", env, file);
    } else {
        const char *slash = strrchr(__FILE__, '/');
        snprintf(p, 4096, "%.*s/fixtures/parity/%s", slash ? (int)(slash - __FILE__) : 1,
                 slash ? __FILE__ : ".", file);
    }
    return p;
}

static ct_tensor_dict *load_fixture(const char *file) {
    char *path = fixture_path(file);
    ct_tensor_dict *d = NULL;
    ct_status st = ct_safetensors_load(path, ct_device_cpu(), &d);
    CT_EXPECT_MSG(st == CT_OK, "cannot load %s: %s", path, ct_last_error());
    free(path);
    return d;
}

/* The fixture's entries that are the model's state_dict (everything but
 * the inputs and expected values), so that the load can be strict. */
static bool is_model_entry(const char *name) {
    static const char *const extra[] = {"x", "y", "loss", "input", "logits"};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (strcmp(name, extra[i]) == 0) return false;
    return strncmp(name, "grad.", 5) != 0 && strncmp(name, "after.", 6) != 0;
}

static bool load_model(ct_module *m, const ct_tensor_dict *fx) {
    ct_tensor_dict *sd = ct_tensor_dict_new();
    CT_SCOPE {
        for (int i = 0; i < ct_tensor_dict_size(fx); i++) {
            const char *name = ct_tensor_dict_name(fx, i);
            if (is_model_entry(name)) ct_tensor_dict_set(sd, name, ct_tensor_dict_value(fx, i));
        }
    }
    ct_status st = ct_module_load_state_dict(m, sd, true);
    CT_EXPECT_MSG(st == CT_OK, "load_state_dict(strict): %s", ct_last_error());
    ct_tensor_dict_free(sd);
    return st == CT_OK;
}

static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
    ct_shape sa = ct_shape_of(a), sb = ct_shape_of(b);
    if (sa.ndim != sb.ndim) return false;
    for (int i = 0; i < sa.ndim; i++)
        if (sa.dims[i] != sb.dims[i]) return false;
    return true;
}

/* max |got - want| / max |want|, computed here in double from the values
 * (not with ctorch's own sub/abs/max, which a wrong kernel could make
 * report 0); prints it and checks it against tol. */
static double expect_match(const char *what, const ct_tensor *got, const ct_tensor *want, double tol) {
    double err = INFINITY;
    if (!got) {
        ct_test_fail(__FILE__, __LINE__, "%s: no tensor (%s)", what, ct_last_error());
    } else if (!same_shape(got, want)) {
        ct_test_fail(__FILE__, __LINE__, "%s: shape differs from PyTorch's", what);
    } else {
        int64_t n = ct_numel(want);
        double *g = ct_test_values(got), *w = ct_test_values(want), scale = 0, worst = 0;
        for (int64_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(w[i]));
            double d = fabs(g[i] - w[i]);
            worst = isnan(d) ? INFINITY : fmax(worst, d);
        }
        err = worst / (scale > 0 ? scale : 1.0);
        printf("    %-22s max|err|/max|ref| = %.3g  (max|ref| %.3g)\n", what, err, scale);
        CT_EXPECT_MSG(err <= tol, "%s: relative error %.3g exceeds %.1g", what, err, tol);
        free(g);
        free(w);
    }
    return err;
}

/* ---- Fashion-MNIST CNN: loss, gradients and one optimizer step -------------------------- */

typedef ct_optimizer *(*make_optimizer_fn)(ct_module *m);

static ct_optimizer *make_sgd(ct_module *m) {
    return ct_sgd(m, (ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
}

static ct_optimizer *make_adamw(ct_module *m) {
    return ct_adamw(m, (ct_adam_opts){.lr = 1e-3, .weight_decay = 0.01});
}

static void cnn_step_parity(const char *file, make_optimizer_fn make_opt, ct_device dev, double tol) {
    char devname[64];
    printf("  %s on %s\n", file, ct_device_format(dev, devname, sizeof devname));
    ct_tensor_dict *fx = load_fixture(file);
    if (!fx) return;
    ct_module *m = ct_model_fmnist_cnn();
    bool loaded = load_model(m, fx);
    ct_status moved = loaded ? ct_module_to_checked(m, dev) : CT_OK;
    CT_EXPECT_MSG(moved == CT_OK, "module_to(%s): %s", devname, ct_last_error());
    if (loaded && moved == CT_OK) {
        ct_optimizer *opt = make_opt(m);
        CT_SCOPE {
            ct_tensor *x = ct_to_device(ct_tensor_dict_get(fx, "x"), dev);
            ct_tensor *y = ct_to_device(ct_tensor_dict_get(fx, "y"), dev);
            ct_tensor *loss = ct_cross_entropy(ct_forward(m, x), y);
            ct_zero_grad(opt);
            CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
            expect_match("loss", loss, ct_tensor_dict_get(fx, "loss"), tol);

            ct_tensor *params[8];
            const char *names[8];
            int n = ct_module_parameters(m, params, names, 8);
            CT_EXPECT_INT_EQ(n, 8);
            char key[96];
            for (int i = 0; i < n && i < 8; i++) {
                snprintf(key, sizeof key, "grad.%s", names[i]);
                expect_match(key, ct_grad(params[i]), ct_tensor_dict_get(fx, key), tol);
            }
            /* The step starts from PyTorch's gradients, so that it tests the
             * optimizer alone: AdamW's first update is lr * g / (|g| + eps),
             * which turns a float32 rounding difference in a gradient near
             * eps (1e-8) into a visible change of the parameter. */
            for (int i = 0; i < n && i < 8; i++) {
                snprintf(key, sizeof key, "grad.%s", names[i]);
                ct_set_grad(params[i], ct_to_device(ct_tensor_dict_get(fx, key), dev));
            }
            CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
            for (int i = 0; i < n && i < 8; i++) {
                snprintf(key, sizeof key, "after.%s", names[i]);
                expect_match(key, params[i], ct_tensor_dict_get(fx, key), tol);
            }
        }
        ct_optimizer_free(opt);
    }
    ct_module_free(m);
    ct_tensor_dict_free(fx);
}

/* PyTorch's own accuracy tests turn TF32 off (@tf32_off): cuDNN's default
 * allow_tf32 rounds convolution inputs to a 10-bit mantissa, which on an
 * H100 put the first convolution's weight gradient 3.5e-4 away from the
 * float32 reference. The parity checks compare float32 arithmetic. */
static bool tf32_off(void) {
    bool was = ct_backends_cudnn_get_allow_tf32();
    ct_backends_cudnn_set_allow_tf32(false);
    return was;
}

/* The CPU, then every OpenCL and CUDA device the build and machine have. */
static void cnn_parity_everywhere(const char *file, make_optimizer_fn make_opt) {
    cnn_step_parity(file, make_opt, ct_device_cpu(), CPU_TOL);
    bool tf32 = tf32_off();
    int ncl = ct_test_opencl_devices("CNN step parity on OpenCL");
    for (int i = 0; i < ncl; i++) cnn_step_parity(file, make_opt, ct_device_opencl(i), DEVICE_TOL);
    int ncu = ct_test_cuda_devices("CNN step parity on CUDA");
    for (int i = 0; i < ncu; i++) cnn_step_parity(file, make_opt, ct_device_cuda(i), DEVICE_TOL);
    ct_backends_cudnn_set_allow_tf32(tf32);
}

static void test_fmnist_cnn_sgd(void) {
    cnn_parity_everywhere("fmnist_cnn_sgd.safetensors", make_sgd);
}

static void test_fmnist_cnn_adamw(void) {
    cnn_parity_everywhere("fmnist_cnn_adamw.safetensors", make_adamw);
}

/* ---- ResNet-18 eval-mode logits ------------------------------------------------------------ */

static void resnet18_on(ct_module *m, const ct_tensor_dict *fx, ct_device dev) {
    char what[64], name[32];
    snprintf(what, sizeof what, "resnet18 logits (%s)", ct_device_format(dev, name, sizeof name));
    ct_status moved = ct_module_to_checked(m, dev);
    CT_EXPECT_MSG(moved == CT_OK, "module_to(%s): %s", name, ct_last_error());
    if (moved != CT_OK) return;
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *logits = ct_forward(m, ct_to_device(ct_tensor_dict_get(fx, "input"), dev));
        CT_EXPECT_MSG(logits && ct_device_equal(ct_device_of(logits), dev), "%s: logits not on the device", what);
        expect_match(what, logits, ct_tensor_dict_get(fx, "logits"), 10 * LOGITS_TOL);
    }
}

static void test_resnet18_logits(void) {
    ct_tensor_dict *fx = load_fixture("resnet18_logits.safetensors");
    if (!fx) return;
    ct_module *m = ct_model_resnet18(10);
    if (load_model(m, fx)) {
        ct_module_eval(m);
        CT_NO_GRAD CT_SCOPE {
            ct_tensor *logits = ct_forward(m, ct_tensor_dict_get(fx, "input"));
            CT_EXPECT(ct_dtype_of(logits) == CT_FLOAT32);
            expect_match("resnet18 logits", logits, ct_tensor_dict_get(fx, "logits"), LOGITS_TOL);
        }
        /* the same model moved to each OpenCL and CUDA device */
        bool tf32 = tf32_off();
        int ncl = ct_test_opencl_devices("ResNet-18 logits on OpenCL");
        for (int i = 0; i < ncl; i++) resnet18_on(m, fx, ct_device_opencl(i));
        int ncu = ct_test_cuda_devices("ResNet-18 logits on CUDA");
        for (int i = 0; i < ncu; i++) resnet18_on(m, fx, ct_device_cuda(i));
        ct_backends_cudnn_set_allow_tf32(tf32);
    }
    ct_module_free(m);
    ct_tensor_dict_free(fx);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_fmnist_cnn_sgd);
    CT_RUN(test_fmnist_cnn_adamw);
    CT_RUN(test_resnet18_logits);
    return ct_test_finish();
}
