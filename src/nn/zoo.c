/*
 * zoo.c — ready-made models: an MLP, the Fashion-MNIST CNN of
 * WORKLOADS.md, and ResNet-18 with torchvision's layout, initialisation and
 * state_dict names (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc…),
 * so that weights saved from PyTorch load by name.
 */
#include <math.h>
#include <stdio.h>

#include "ctorch/functional.h"
#include "module_impl.h"

ct_module *ct_model_mlp(int64_t in_features, const int64_t *hidden, int n_hidden, int64_t num_classes) {
    CT_CHECK_NULL(n_hidden >= 0 && (hidden || n_hidden == 0), CT_ERR_INVALID_ARG,
                  "mlp: expected n_hidden >= 0 hidden sizes in a non-NULL array, got n_hidden = %d%s", n_hidden,
                  hidden ? "" : " and a NULL array");
    ct_module *m = ct_nn_sequential(NULL, 0);
    if (!m) return NULL;
    int64_t prev = in_features;
    ct_status st = ct_sequential_append(m, ct_nn_flatten(1, -1));
    for (int i = 0; i < n_hidden && st == CT_OK; i++) {
        st = ct_sequential_append(m, ct_nn_linear(prev, hidden[i], true));
        if (st == CT_OK) st = ct_sequential_append(m, ct_nn_relu());
        prev = hidden[i];
    }
    if (st == CT_OK) st = ct_sequential_append(m, ct_nn_linear(prev, num_classes, true));
    if (st != CT_OK) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- Fashion-MNIST CNN --------------------------------------------------------------- */

static ct_tensor *fmnist_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *h = ct_forward_relu(ct_module_child(m, "c1"), x);
        h = ct_max_pool2d(h, CT_PAIR(2, 2));
        h = ct_forward_relu(ct_module_child(m, "c2"), h);
        h = ct_max_pool2d(h, CT_PAIR(2, 2));
        h = ct_relu(ct_forward(ct_module_child(m, "f1"), ct_flatten(h, 1, -1)));
        out = ct_retain(ct_forward(ct_module_child(m, "f2"), h));
    }
    return ct_track(out);
}

ct_module *ct_model_fmnist_cnn(void) {
    ct_module *m = ct_module_new("FashionCNN", fmnist_forward, NULL, NULL);
    if (!m) return NULL;
    if (ct_module_add_child(m, "c1", ct_nn_conv2d(1, 32, 3, (ct_conv2d_opts){0})) ||
        ct_module_add_child(m, "c2", ct_nn_conv2d(32, 64, 3, (ct_conv2d_opts){0})) ||
        ct_module_add_child(m, "f1", ct_nn_linear(64 * 5 * 5, 128, true)) ||
        ct_module_add_child(m, "f2", ct_nn_linear(128, 10, true))) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- ResNet-18 ------------------------------------------------------------------------- */

/* torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu") for convs. */
static ct_module *conv_kaiming(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding) {
    ct_module *c = ct_nn_conv2d(in, out, k, (ct_conv2d_opts){.stride = stride, .padding = padding, .no_bias = true});
    if (!c) return NULL;
    double std = sqrt(2.0 / (double)(out * k * k));
    CT_NO_GRAD CT_SCOPE {
        ct_tensor *w = ct_module_param(c, "weight");
        ct_copy_(w, ct_mul_scalar(ct_randn_like(w), std));
    }
    return c;
}

static ct_tensor *block_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *h = ct_relu(ct_forward(ct_module_child(m, "bn1"), ct_forward(ct_module_child(m, "conv1"), x)));
        h = ct_forward(ct_module_child(m, "bn2"), ct_forward(ct_module_child(m, "conv2"), h));
        ct_module *down = ct_module_child(m, "downsample");
        const ct_tensor *identity = down ? ct_forward(down, x) : x;
        out = ct_retain(ct_relu(ct_add(h, identity)));
    }
    return ct_track(out);
}

/* torchvision's BasicBlock: conv3x3-bn-relu-conv3x3-bn plus the shortcut. */
static ct_module *basic_block(int64_t in, int64_t out, int64_t stride) {
    ct_module *b = ct_module_new("BasicBlock", block_forward, NULL, NULL);
    if (!b) return NULL;
    bool ok = !ct_module_add_child(b, "conv1", conv_kaiming(in, out, 3, stride, 1)) &&
              !ct_module_add_child(b, "bn1", ct_nn_batchnorm2d(out, (ct_batchnorm_opts){0})) &&
              !ct_module_add_child(b, "relu", ct_nn_relu()) &&
              !ct_module_add_child(b, "conv2", conv_kaiming(out, out, 3, 1, 1)) &&
              !ct_module_add_child(b, "bn2", ct_nn_batchnorm2d(out, (ct_batchnorm_opts){0}));
    if (ok && (stride != 1 || in != out))
        ok = !ct_module_add_child(b, "downsample",
                                  CT_SEQUENTIAL(conv_kaiming(in, out, 1, stride, 0),
                                                ct_nn_batchnorm2d(out, (ct_batchnorm_opts){0})));
    if (!ok) {
        ct_module_free(b);
        return NULL;
    }
    return b;
}

static ct_tensor *resnet_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *h = ct_relu(ct_forward(ct_module_child(m, "bn1"), ct_forward(ct_module_child(m, "conv1"), x)));
        h = ct_forward(ct_module_child(m, "maxpool"), h);
        const char *layers[4] = {"layer1", "layer2", "layer3", "layer4"};
        for (int i = 0; i < 4; i++) h = ct_forward(ct_module_child(m, layers[i]), h);
        h = ct_flatten(ct_forward(ct_module_child(m, "avgpool"), h), 1, -1);
        out = ct_retain(ct_forward(ct_module_child(m, "fc"), h));
    }
    return ct_track(out);
}

ct_module *ct_model_resnet18(int64_t num_classes) {
    ct_module *m = ct_module_new("ResNet", resnet_forward, NULL, NULL);
    if (!m) return NULL;
    bool ok = !ct_module_add_child(m, "conv1", conv_kaiming(3, 64, 7, 2, 3)) &&
              !ct_module_add_child(m, "bn1", ct_nn_batchnorm2d(64, (ct_batchnorm_opts){0})) &&
              !ct_module_add_child(m, "relu", ct_nn_relu()) &&
              !ct_module_add_child(m, "maxpool", ct_nn_maxpool2d(3, 2, 1));
    int64_t widths[4] = {64, 128, 256, 512}, in = 64;
    for (int l = 0; l < 4 && ok; l++) {
        char name[8];
        snprintf(name, sizeof name, "layer%d", l + 1);
        int64_t stride = l == 0 ? 1 : 2;
        ok = !ct_module_add_child(m, name, CT_SEQUENTIAL(basic_block(in, widths[l], stride),
                                                         basic_block(widths[l], widths[l], 1)));
        in = widths[l];
    }
    ok = ok && !ct_module_add_child(m, "avgpool", ct_nn_adaptive_avgpool2d(1, 1)) &&
         !ct_module_add_child(m, "fc", ct_nn_linear(512, num_classes, true));
    if (!ok) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}
