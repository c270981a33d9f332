/*
 * setup.c — what ctorch-train builds before its loop: the device, the data
 * sets with their transforms, the model, the optimizer and the schedule.
 * Each choice mirrors the PyTorch script a user would write for the same run.
 */
#include <stdlib.h>
#include <string.h>

#include "train.h"

ct_status setup_device(const char *spec, ct_device *dev, char *desc, size_t size) {
    ct_device d = ct_device_cpu();
    if (strcmp(spec, "auto") == 0) {
        /* An OpenCL device that runs on the host CPU (PoCL) shares the cores
         * with the cpu backend and is slower than it, so auto skips it. */
        if (ct_device_count(CT_DEVICE_CUDA) > 0) {
            d = ct_device_cuda(0);
        } else {
            int n = ct_device_count(CT_DEVICE_OPENCL);
            for (int i = 0; i < n; i++) {
                ct_device_properties p;
                if (ct_get_device_properties(ct_device_opencl(i), &p) == CT_OK && !p.is_host) {
                    d = ct_device_opencl(i);
                    break;
                }
            }
        }
    } else {
        ct_status s = ct_device_parse(spec, &d);
        if (s == CT_OK) s = ct_device_check(d, &d);
        if (s != CT_OK) return s;
    }
    char name[256] = "", str[32];
    ct_device_name(d, name, sizeof name);
    ct_device_format(d, str, sizeof str);
    snprintf(desc, size, "%s (%s)", str, name);
    *dev = d;
    return CT_OK;
}

/* ---- data ------------------------------------------------------------------- */

/* 1-channel images for a model built for RGB (resnet18): the torchvision idiom
 * transforms.Lambda(lambda x: x.expand(3, -1, -1)). */
static ct_tensor *gray_to_rgb(const ct_tensor *x, uint64_t key, void *state) {
    (void)key;
    (void)state;
    ct_tensor *e = ct_expand(x, CT_SHAPE(3, ct_size(x, 1), ct_size(x, 2)));
    ct_tensor *c = ct_contiguous(e);
    ct_release(e);
    return c;
}

static ct_transform *make_transform(const train_config *c, bool train, bool mnist_like) {
    ct_transform *tf[4];
    int n = 0;
    if (train && c->augment) {
        tf[n++] = ct_transform_random_crop(mnist_like ? 28 : 32, mnist_like ? 2 : 4);
        tf[n++] = ct_transform_random_horizontal_flip(0.5);
    }
    if (strcmp(c->dataset, "fashion-mnist") == 0) tf[n++] = ct_transform_normalize1(0.2860, 0.3530);
    else if (strcmp(c->dataset, "mnist") == 0) tf[n++] = ct_transform_normalize1(0.1307, 0.3081);
    else {
        static const double mean[3] = {0.4914, 0.4822, 0.4465}, std[3] = {0.2470, 0.2435, 0.2616};
        tf[n++] = ct_transform_normalize(mean, std, 3);
    }
    if (mnist_like && strcmp(c->model, "resnet18") == 0)
        tf[n++] = ct_transform_lambda("GrayToRGB", gray_to_rgb, NULL, NULL);
    for (int i = 0; i < n; i++)
        if (!tf[i]) {
            for (int j = 0; j < n; j++) ct_transform_free(tf[j]);
            return NULL;
        }
    return ct_transform_compose(tf, n);
}

static ct_dataset *open_split(const train_config *c, bool train) {
    bool mnist_like = strcmp(c->dataset, "cifar10") != 0;
    ct_transform *tf = make_transform(c, train, mnist_like);
    if (!tf) return NULL;
    if (strcmp(c->dataset, "fashion-mnist") == 0) return ct_fashion_mnist(c->data_dir, train, tf);
    if (strcmp(c->dataset, "mnist") == 0) return ct_mnist(c->data_dir, train, tf);
    return ct_cifar10(c->data_dir, train, tf);
}

static ct_dataset *first_n(ct_dataset *full, int64_t limit) {
    int64_t n = ct_dataset_len(full);
    if (limit <= 0 || limit >= n) return full;
    int64_t *idx = malloc((size_t)limit * sizeof *idx);
    if (!idx) return NULL;
    for (int64_t i = 0; i < limit; i++) idx[i] = i;
    ct_dataset *sub = ct_subset(full, idx, limit);
    free(idx);
    return sub;
}

ct_status setup_data(const train_config *c, train_data *d) {
    memset(d, 0, sizeof *d);
    d->train_full = open_split(c, true);
    d->test_full = d->train_full ? open_split(c, false) : NULL;
    if (d->test_full) d->train = first_n(d->train_full, c->limit_train);
    if (d->train) d->test = first_n(d->test_full, c->limit_test);
    if (!d->test) {
        ct_status s = ct_last_status();
        train_data_free(d);
        return s != CT_OK ? s : CT_ERR_OOM;
    }
    bool cifar = strcmp(c->dataset, "cifar10") == 0, rgb = cifar || strcmp(c->model, "resnet18") == 0;
    d->num_classes = 10;
    d->sample_shape[0] = rgb ? 3 : 1;
    d->sample_shape[1] = d->sample_shape[2] = cifar ? 32 : 28;
    return CT_OK;
}

void train_data_free(train_data *d) {
    if (d->train != d->train_full) ct_dataset_free(d->train);
    if (d->test != d->test_full) ct_dataset_free(d->test);
    ct_dataset_free(d->train_full);
    ct_dataset_free(d->test_full);
    memset(d, 0, sizeof *d);
}

/* ---- model, optimizer, schedule ------------------------------------------------- */

ct_module *setup_model(const train_config *c, const train_data *d) {
    const int64_t *s = d->sample_shape;
    if (strcmp(c->model, "mlp") == 0) {
        static const int64_t hidden[2] = {512, 256};
        return ct_model_mlp(s[0] * s[1] * s[2], hidden, 2, d->num_classes);
    }
    if (strcmp(c->model, "cnn") == 0) {
        if (s[0] != 1 || s[1] != 28) {
            fprintf(stderr, "ctorch-train: the cnn model takes 1x28x28 images; %s has %lldx%lldx%lld "
                            "(use --model resnet18 or mlp)\n", c->dataset, (long long)s[0], (long long)s[1],
                    (long long)s[2]);
            return NULL;
        }
        return ct_model_fmnist_cnn();
    }
    return ct_model_resnet18(d->num_classes);
}

ct_optimizer *setup_optimizer(const train_config *c, ct_module *model) {
    if (strcmp(c->optimizer, "sgd") == 0)
        return ct_sgd(model, (ct_sgd_opts){.lr = c->lr, .momentum = c->momentum, .weight_decay = c->weight_decay});
    ct_adam_opts o = {.lr = c->lr, .weight_decay = c->weight_decay};
    if (strcmp(c->optimizer, "adam") == 0) return ct_adam(model, o);
    if (o.weight_decay == 0) o.weight_decay = -1; /* AdamW: 0 would mean its default */
    return ct_adamw(model, o);
}

ct_scheduler *setup_scheduler(const train_config *c, ct_optimizer *opt, int64_t total_steps) {
    int total = total_steps > 0 ? (int)total_steps : 1;
    if (strcmp(c->schedule, "cosine") == 0) return ct_cosine_annealing_lr(opt, total, 0.0);
    /* one step per batch, total_steps = epochs * batches, as in PyTorch */
    if (strcmp(c->schedule, "onecycle") == 0) return ct_onecycle_lr(opt, c->lr, total > 1 ? total : 2);
    if (strcmp(c->schedule, "step") == 0) {
        int milestones[2] = {total / 2, total * 3 / 4};
        return ct_multistep_lr(opt, milestones, 2, 0.1);
    }
    return NULL;
}
