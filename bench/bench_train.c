/*
 * bench_train.c — ctorch's figures for the reference workloads that train or
 * run models (../shared/bench/WORKLOADS.md), printed with the same labels
 * and units as torch_anchor.py so that bench/run.sh can set them beside
 * PyTorch's:
 *
 *   W1 Linear(10,1) train step (us): …     MSE, SGD lr 0.01, batch 32
 *   W3 100x randn+mm 1000 (s): …           100 × randn(1000,1000) mm randn(1000,1000)
 *   W4 FMNIST CNN train (img/s): …         batch 128, SGD momentum 0.9, cross-entropy
 *   W5 ResNet18 CIFAR train (img/s): …     3×32×32, 10 classes, batch 64, as W4
 *   W6 ResNet18 CIFAR infer (img/s): …     eval mode, no grad, batch 64
 *
 * A train step is PyTorch's loop body: forward, loss, zero_grad, backward,
 * step, inside a CT_SCOPE so that the step's tensors are released at its end.
 * Each figure is the median of several timed repeats after a warm-up; the
 * repeat counts are small for ResNet-18, which takes a second or more per
 * step on two cores. Threads as in bench_ops.c (bench_common.h).
 *
 * Usage: bench_train [threads] [workload ids, e.g. W1 W4; default all] [--device D]
 *
 * On a device (e.g. --device cuda:0) the model and its batch live there,
 * each timed repeat ends with a synchronize, and the plans below take more
 * steps per repeat (GPU_PLANS), as bench/torch_workloads.py --device does.
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <ctorch/ctorch.h>
#include <ctorch/functional.h>

/* Steps per timed repeat, repeats and warm-up steps of each workload. */
typedef struct bench_plan {
    int per_repeat, repeats, warm;
} bench_plan;

static const bench_plan W1_PLAN = {1000, 7, 200};
static const bench_plan W3_PLAN = {1, 3, 1};
static const bench_plan W4_PLAN = {1, 5, 2};
static const bench_plan W5_PLAN = {1, 3, 1};
static const bench_plan W6_PLAN = {1, 5, 1};
/* On a GPU a step takes milliseconds: more steps per repeat, more warm-up
 * (the first steps pick cuDNN algorithms and fill the caching allocator). */
static const bench_plan W1_GPU_PLAN = {200, 7, 50};
static const bench_plan W3_GPU_PLAN = {1, 3, 1};
static const bench_plan W4_GPU_PLAN = {20, 5, 10};
static const bench_plan W5_GPU_PLAN = {10, 5, 5};
static const bench_plan W6_GPU_PLAN = {10, 5, 5};

static bench_args g_args;
#define PLAN(w) (bench_on_host(&g_args) ? w##_PLAN : w##_GPU_PLAN)

/* One unit of work of a workload: returns false when ctorch reported an
 * error (the message is in ct_last_error). */
typedef bool (*bench_fn)(void *ctx);

/* Median seconds per call of fn under plan; a negative value on error. */
static double median_seconds(bench_fn fn, void *ctx, bench_plan plan) {
    double times[BENCH_MAX_REPEATS];
    for (int i = 0; i < plan.warm; i++)
        if (!fn(ctx)) return -1.0;
    if (!bench_sync(&g_args)) return -1.0;
    for (int r = 0; r < plan.repeats && r < BENCH_MAX_REPEATS; r++) {
        double start = bench_now();
        for (int i = 0; i < plan.per_repeat; i++)
            if (!fn(ctx)) return -1.0;
        if (!bench_sync(&g_args)) return -1.0;
        times[r] = (bench_now() - start) / plan.per_repeat;
    }
    return bench_median(times, plan.repeats);
}

/* A model with its optimizer, a fixed batch and its targets. */
typedef struct train_ctx {
    ct_module *model;
    ct_optimizer *opt;
    ct_tensor *x, *y;
    bool classify; /* cross-entropy on class indices, else MSE */
} train_ctx;

static bool train_step(void *p) {
    train_ctx *c = p;
    CT_SCOPE {
        ct_tensor *out = ct_forward(c->model, c->x);
        ct_tensor *loss = c->classify ? ct_cross_entropy(out, c->y) : ct_mse_loss(out, c->y);
        ct_zero_grad(c->opt);
        ct_backward(loss);
        ct_step(c->opt);
    }
    return ct_last_status() == CT_OK;
}

static bool infer_step(void *p) {
    train_ctx *c = p;
    CT_NO_GRAD CT_SCOPE { ct_forward(c->model, c->x); }
    return ct_last_status() == CT_OK;
}

/* Seconds per call of step on model (taken, moved to the device) with batch
 * x and targets y (taken, made on the device); momentum 0 for W1's plain SGD. */
static double time_model(ct_module *model, ct_tensor *x, ct_tensor *y, bool classify,
                         double momentum, bool train, bench_plan plan) {
    train_ctx c = {model, NULL, x, y, classify};
    double t = -1.0;
    if (model && x && y && ct_module_to_checked(model, g_args.device) == CT_OK) {
        if (train) {
            c.opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.01, .momentum = momentum});
            if (c.opt) t = median_seconds(train_step, &c, plan);
        } else {
            ct_module_eval(model);
            t = median_seconds(infer_step, &c, plan);
        }
    }
    ct_optimizer_free(c.opt);
    ct_module_free(model);
    ct_release(x);
    ct_release(y);
    return t;
}

static double w1_linear_us(void) {
    ct_device d = g_args.device;
    double t = time_model(ct_nn_linear(10, 1, true), ct_randn(CT_SHAPE(32, 10), .device = d),
                          ct_randn(CT_SHAPE(32, 1), .device = d), false, 0.0, true, PLAN(W1));
    return t < 0 ? t : t * 1e6;
}

static bool w3_loop(void *unused) {
    (void)unused;
    for (int i = 0; i < 100; i++) CT_SCOPE {
        ct_mm(ct_randn(CT_SHAPE(1000, 1000), .device = g_args.device),
              ct_randn(CT_SHAPE(1000, 1000), .device = g_args.device));
    }
    return ct_last_status() == CT_OK;
}

static double w3_randn_mm_s(void) { return median_seconds(w3_loop, NULL, PLAN(W3)); }

static double images_per_s(double seconds, int batch) { return seconds > 0 ? batch / seconds : -1.0; }

static double w4_fmnist_img_s(void) {
    ct_device d = g_args.device;
    double t = time_model(ct_model_fmnist_cnn(), ct_randn(CT_SHAPE(128, 1, 28, 28), .device = d),
                          ct_randint(0, 10, CT_SHAPE(128), .device = d), true, 0.9, true, PLAN(W4));
    return images_per_s(t, 128);
}

static double resnet18_img_s(bool train, bench_plan plan) {
    ct_device d = g_args.device;
    double t = time_model(ct_model_resnet18(10), ct_randn(CT_SHAPE(64, 3, 32, 32), .device = d),
                          ct_randint(0, 10, CT_SHAPE(64), .device = d), true, 0.9, train, plan);
    return images_per_s(t, 64);
}

static double w5_resnet_train_img_s(void) { return resnet18_img_s(true, PLAN(W5)); }
static double w6_resnet_infer_img_s(void) { return resnet18_img_s(false, PLAN(W6)); }

typedef struct workload {
    const char *id, *label;
    double (*run)(void);
} workload;

static const workload WORKLOADS[] = {
    {"W1", "W1 Linear(10,1) train step (us)", w1_linear_us},
    {"W3", "W3 100x randn+mm 1000 (s)", w3_randn_mm_s},
    {"W4", "W4 FMNIST CNN train (img/s)", w4_fmnist_img_s},
    {"W5", "W5 ResNet18 CIFAR train (img/s)", w5_resnet_train_img_s},
    {"W6", "W6 ResNet18 CIFAR infer (img/s)", w6_resnet_infer_img_s},
};
#define N_WORKLOADS ((int)(sizeof WORKLOADS / sizeof WORKLOADS[0]))

int main(int argc, char **argv) {
    if (!bench_parse_args(argc, argv, &g_args)) {
        fprintf(stderr, "usage: %s [threads > 0] [W1 W3 W4 W5 W6] [--device D]\n", argv[0]);
        return 2;
    }
    const char *threads = g_args.threads;
    bench_ensure_threads(argv, threads);
    bench_print_header(CTORCH_VERSION_STRING, threads);
    if (!bench_print_device(&g_args)) {
        fprintf(stderr, "bench_train: %s\n", ct_last_error());
        return 1;
    }
    ct_manual_seed(0);
    int rc = 0;
    for (int k = 0; k < N_WORKLOADS; k++) {
        if (!bench_selected(&g_args, WORKLOADS[k].id)) continue;
        double v = WORKLOADS[k].run();
        if (v < 0) {
            fprintf(stderr, "bench_train: %s: %s\n", WORKLOADS[k].id, ct_last_error());
            ct_clear_error();
            rc = 1;
            continue;
        }
        printf("%s: %.3f\n", WORKLOADS[k].label, v);
        fflush(stdout);
    }
    if (ct_live_tensors() != 0) {
        fprintf(stderr, "bench_train: %lld tensors leaked\n", (long long)ct_live_tensors());
        rc = 1;
    }
    return rc;
}
