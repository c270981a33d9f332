/*
 * bench_train.c — ctorch's figures for the reference workloads that train or
 * run models (../shared/bench/WORKLOADS.md), printed with the same labels
 * and units as torch_anchor.py so that bench/run.sh can set them beside
 * PyTorch's, and their bfloat16-autocast variants (issue 16):
 *
 *   W1 Linear(10,1) train step (us): …     MSE, SGD lr 0.01, batch 32
 *   W3 100x randn+mm 1000 (s): …           100 × randn(1000,1000) mm randn(1000,1000)
 *   W4 FMNIST CNN train (img/s): …         batch 128, SGD momentum 0.9, cross-entropy
 *   W5 ResNet18 CIFAR train (img/s): …     3×32×32, 10 classes, batch 64, as W4
 *   W6 ResNet18 CIFAR infer (img/s): …     eval mode, no grad, batch 64
 *   W4-bf16 …, W5-bf16 …, W6-bf16 …        the same under bfloat16 autocast
 *   W5-mem float32 step peak (MiB): …      peak allocated bytes of one W5 step,
 *   W5-mem bf16 step peak (MiB): …         without and with bfloat16 autocast
 *
 * A train step is PyTorch's loop body: forward, loss, zero_grad, backward,
 * step, inside a CT_SCOPE so that the step's tensors are released at its end.
 * The -bf16 variants wrap forward and loss in CT_AUTOCAST(device type,
 * .dtype = CT_BFLOAT16), PyTorch's `with torch.autocast(device_type,
 * dtype=torch.bfloat16)`, one region per step; the parameters stay float32
 * (master weights) and backward and the optimizer step run outside it.
 * Each figure is the median of several timed repeats after a warm-up; the
 * repeat counts are small for ResNet-18, which takes a second or more per
 * step on two cores. Threads as in bench_ops.c (bench_common.h).
 *
 * W5-mem reads the allocator statistics of the device (ctorch/memory.h; on
 * the CPU, the host allocator's of src/backends/cpu/cpu_alloc.c): after a
 * warm-up step, ct_reset_peak_memory_stats, one step, then
 * ct_max_memory_allocated: the most bytes of tensor storage live at once
 * during the step, parameters, gradients, momentum and batch included (a
 * "#" line gives those, allocated when the step began). Buffers that
 * oneDNN and OpenBLAS allocate for themselves are not counted.
 *
 * Usage: bench_train [threads] [workload ids, e.g. W1 W4 W5-bf16] [--device D]
 *   No ids: W1 and W3–W6; the -bf16 and -mem workloads run only when named.
 *
 * On a device (e.g. --device cuda:0) the model and its batch live there,
 * each timed repeat ends with a synchronize, and the plans below take more
 * steps per repeat (GPU_PLANS), as bench/torch_workloads.py --device does;
 * autocast there is a bfloat16 region of that device type.
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <ctorch/amp.h>
#include <ctorch/ctorch.h>
#include <ctorch/functional.h>
#include <ctorch/memory.h>

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
    bool autocast; /* forward and loss under bfloat16 autocast */
} train_ctx;

static ct_tensor *forward_loss(const train_ctx *c) {
    ct_tensor *out = ct_forward(c->model, c->x);
    return c->classify ? ct_cross_entropy(out, c->y) : ct_mse_loss(out, c->y);
}

static bool train_step(void *p) {
    train_ctx *c = p;
    CT_SCOPE {
        ct_tensor *loss = NULL;
        if (c->autocast) {
            CT_AUTOCAST(g_args.device.type, .dtype = CT_BFLOAT16) { loss = forward_loss(c); }
        } else {
            loss = forward_loss(c);
        }
        ct_zero_grad(c->opt);
        ct_backward(loss);
        ct_step(c->opt);
    }
    return ct_last_status() == CT_OK;
}

static bool infer_step(void *p) {
    train_ctx *c = p;
    CT_NO_GRAD CT_SCOPE {
        if (c->autocast) {
            CT_AUTOCAST(g_args.device.type, .dtype = CT_BFLOAT16) { ct_forward(c->model, c->x); }
        } else {
            ct_forward(c->model, c->x);
        }
    }
    return ct_last_status() == CT_OK;
}

/* How a model is exercised: a train or an inference step, with or without
 * autocast; timed under plan, or (peak_mib) one step's peak memory. */
typedef struct run_opts {
    bool train, autocast, peak_mib;
    double momentum; /* 0 for W1's plain SGD */
    bench_plan plan;
} run_opts;

/* MiB of tensor storage at most allocated at once during one step (after a
 * warm-up step); a negative value on error. */
static double step_peak_mib(bench_fn fn, train_ctx *c) {
    ct_device d = g_args.device;
    if (!fn(c) || !bench_sync(&g_args) || ct_reset_peak_memory_stats(d) != CT_OK) return -1.0;
    int64_t start = ct_memory_allocated(d);
    if (!fn(c) || !bench_sync(&g_args)) return -1.0;
    int64_t peak = ct_max_memory_allocated(d);
    if (start < 0 || peak < 0) return -1.0;
    printf("# %s: %.3f MiB allocated when the step began (parameters, gradients, momentum, batch)\n",
           c->autocast ? "W5-mem bf16" : "W5-mem float32", (double)start / (1 << 20));
    return (double)peak / (1 << 20);
}

/* Seconds per step (or peak MiB, see run_opts) of model (taken, moved to
 * the device) with batch x and targets y (taken, made on the device). */
static double run_model(ct_module *model, ct_tensor *x, ct_tensor *y, bool classify, run_opts o) {
    train_ctx c = {model, NULL, x, y, classify, o.autocast};
    double t = -1.0;
    if (model && x && y && ct_module_to_checked(model, g_args.device) == CT_OK) {
        bench_fn fn = train_step;
        if (o.train) {
            c.opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.01, .momentum = o.momentum});
        } else {
            ct_module_eval(model);
            fn = infer_step;
        }
        if (!o.train || c.opt) t = o.peak_mib ? step_peak_mib(fn, &c) : median_seconds(fn, &c, o.plan);
    }
    ct_optimizer_free(c.opt);
    ct_module_free(model);
    ct_release(x);
    ct_release(y);
    return t;
}

static double w1_linear_us(void) {
    ct_device d = g_args.device;
    double t = run_model(ct_nn_linear(10, 1, true), ct_randn(CT_SHAPE(32, 10), .device = d),
                         ct_randn(CT_SHAPE(32, 1), .device = d), false, (run_opts){.train = true, .plan = PLAN(W1)});
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

static double fmnist_img_s(bool autocast) {
    ct_device d = g_args.device;
    double t = run_model(ct_model_fmnist_cnn(), ct_randn(CT_SHAPE(128, 1, 28, 28), .device = d),
                         ct_randint(0, 10, CT_SHAPE(128), .device = d), true,
                         (run_opts){.train = true, .autocast = autocast, .momentum = 0.9, .plan = PLAN(W4)});
    return images_per_s(t, 128);
}

static double resnet18_run(run_opts o) {
    ct_device d = g_args.device;
    o.momentum = 0.9;
    return run_model(ct_model_resnet18(10), ct_randn(CT_SHAPE(64, 3, 32, 32), .device = d),
                     ct_randint(0, 10, CT_SHAPE(64), .device = d), true, o);
}

static double resnet18_img_s(bool train, bool autocast, bench_plan plan) {
    return images_per_s(resnet18_run((run_opts){.train = train, .autocast = autocast, .plan = plan}), 64);
}

static double w4_fmnist_img_s(void) { return fmnist_img_s(false); }
static double w5_resnet_train_img_s(void) { return resnet18_img_s(true, false, PLAN(W5)); }
static double w6_resnet_infer_img_s(void) { return resnet18_img_s(false, false, PLAN(W6)); }
static double w4_bf16_img_s(void) { return fmnist_img_s(true); }
static double w5_bf16_img_s(void) { return resnet18_img_s(true, true, PLAN(W5)); }
static double w6_bf16_img_s(void) { return resnet18_img_s(false, true, PLAN(W6)); }
static double w5_mem_float32_mib(void) { return resnet18_run((run_opts){.train = true, .peak_mib = true}); }
static double w5_mem_bf16_mib(void) {
    return resnet18_run((run_opts){.train = true, .autocast = true, .peak_mib = true});
}

typedef struct workload {
    const char *id, *label;
    double (*run)(void);
    bool named_only; /* runs only when its id is named (not part of the W1–W6 default) */
} workload;

static const workload WORKLOADS[] = {
    {"W1", "W1 Linear(10,1) train step (us)", w1_linear_us, false},
    {"W3", "W3 100x randn+mm 1000 (s)", w3_randn_mm_s, false},
    {"W4", "W4 FMNIST CNN train (img/s)", w4_fmnist_img_s, false},
    {"W5", "W5 ResNet18 CIFAR train (img/s)", w5_resnet_train_img_s, false},
    {"W6", "W6 ResNet18 CIFAR infer (img/s)", w6_resnet_infer_img_s, false},
    {"W4-bf16", "W4-bf16 FMNIST CNN train (img/s)", w4_bf16_img_s, true},
    {"W5-bf16", "W5-bf16 ResNet18 CIFAR train (img/s)", w5_bf16_img_s, true},
    {"W6-bf16", "W6-bf16 ResNet18 CIFAR infer (img/s)", w6_bf16_img_s, true},
    {"W5-mem", "W5-mem float32 step peak (MiB)", w5_mem_float32_mib, true},
    {"W5-mem", "W5-mem bf16 step peak (MiB)", w5_mem_bf16_mib, true},
};
#define N_WORKLOADS ((int)(sizeof WORKLOADS / sizeof WORKLOADS[0]))

int main(int argc, char **argv) {
    if (!bench_parse_args(argc, argv, &g_args)) {
        fprintf(stderr, "usage: %s [threads > 0] [W1 W3 W4 W5 W6 W4-bf16 W5-bf16 W6-bf16 W5-mem] [--device D]\n",
                argv[0]);
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
        const workload *w = &WORKLOADS[k];
        if (w->named_only ? !bench_named(&g_args, w->id) : !bench_selected(&g_args, w->id)) continue;
        double v = w->run();
        if (v < 0) {
            fprintf(stderr, "bench_train: %s: %s\n", w->id, ct_last_error());
            ct_clear_error();
            rc = 1;
            continue;
        }
        printf("%s: %.3f\n", w->label, v);
        fflush(stdout);
    }
    if (ct_live_tensors() != 0) {
        fprintf(stderr, "bench_train: %lld tensors leaked\n", (long long)ct_live_tensors());
        rc = 1;
    }
    return rc;
}
