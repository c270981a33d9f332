/*
 * main.c — ctorch-train, the project's main job: trains a model on
 * Fashion-MNIST (or MNIST, CIFAR-10), evaluates it after every epoch and
 * reports accuracy, speed and memory. The loop is the PyTorch one users
 * know, written with ctorch's public API:
 *
 *   for epoch: model.train(); for x, y in loader: x, y = x.to(dev), y.to(dev)
 *       loss = F.cross_entropy(model(x), y); opt.zero_grad(); loss.backward()
 *       opt.step(); sched.step()
 *   then model.eval(); with torch.no_grad(): accuracy over the test loader.
 *
 * Options and exit codes: options.c (--help). Checkpoints: checkpoint.c.
 */
#define _GNU_SOURCE /* setenv, execv, strcasecmp; getrusage */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "train.h"

/* From OpenBLAS (ctorch's BLAS on the cpu device). */
extern char *openblas_get_corename(void);
extern void openblas_set_num_threads(int n);
#ifdef _OPENMP
#include <omp.h>
#endif

static volatile sig_atomic_t g_interrupted;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* OpenBLAS 0.3.21 does not recognise some recent CPUs (e.g. Sapphire Rapids
 * in a VM) and falls back to its generic "Prescott" kernels, about 3-6x
 * slower. The library avoids it by running float32 GEMM on oneDNN on such
 * CPUs (src/backends/cpu/cpu_gemm.c); only a build without oneDNN still
 * multiplies with OpenBLAS, and OPENBLAS_CORETYPE is read only when
 * OpenBLAS loads, so there the fix is to run ourselves again with it set.
 * The user's own setting always wins. */
static void fix_openblas_core(char **argv) {
    if (getenv("OPENBLAS_CORETYPE")) return;
    if (strncmp(ct_backends_cpu_gemm_engine(), "OpenBLAS", 8) != 0) return;
    const char *core = openblas_get_corename();
    if (!core || strcasecmp(core, "Prescott") != 0) return;
    __builtin_cpu_init();
    const char *better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                         : __builtin_cpu_supports("avx2") ? "Haswell" : NULL;
    if (!better) return;
    setenv("OPENBLAS_CORETYPE", better, 1);
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* exec failed: go on with the generic kernels */
}

static uint64_t random_seed(void) {
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    if (!s) s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return s % 1000000007ULL; /* short enough to type back in */
}

static int exit_code_for(ct_status s) {
    if (s == CT_ERR_OOM) return TRAIN_EXIT_OOM;
    return TRAIN_EXIT_ERROR;
}

static int fail(const char *what, ct_status s) {
    fprintf(stderr, "ctorch-train: %s: %s\n", what, ct_last_error()[0] ? ct_last_error() : ct_status_str(s));
    return exit_code_for(s);
}

/* Moves a batch to the device; non_blocking when the batch is pinned. */
static ct_status batch_to_device(const ct_sample *b, ct_device dev, ct_tensor **x, ct_tensor **y) {
    *x = ct_to_device_nb(b->t[0], dev, ct_is_pinned(b->t[0]));
    *y = ct_to_device_nb(b->t[1], dev, ct_is_pinned(b->t[1]));
    return *x && *y ? CT_OK : ct_last_status();
}

/* Where a training epoch's time goes (host seconds: on an asynchronous
 * device the wait for queued work lands in whichever phase next reads a
 * result, normally "other", which reads the loss). */
enum { PHASE_DATA, PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER, PHASE_COUNT };
static const char *const PHASE_NAMES[PHASE_COUNT] = {"data", "forward", "backward", "optimizer"};

typedef struct epoch_result {
    double loss;          /* mean over samples */
    double accuracy;      /* test only */
    double images_per_s;
    double seconds;
    double phase_seconds[PHASE_COUNT]; /* training only */
    int64_t samples;
} epoch_result;

/* Adds the time since *mark to *phase and moves the mark to now. */
static void phase_lap(double *mark, double *phase) {
    double t = now_s();
    *phase += t - *mark;
    *mark = t;
}

typedef struct run {
    train_config cfg;
    ct_device dev;
    train_data data;
    ct_module *model;
    ct_ddp *ddp;              /* --distributed: the model's DDP wrapper */
    ct_data_parallel *dp;     /* --data-parallel */
    int rank, world;
    int64_t run_steps;        /* steps taken by this process (a resumed run starts at 0) */
    ct_optimizer *opt;
    ct_scheduler *sched;
    ct_grad_scaler *scaler;   /* enabled for --amp fp16 only */
    ct_dataloader *train_dl, *test_dl;
    ct_summary_writer *tb;
    FILE *metrics;
    train_state st;
} run;

/* --amp: autocast around the forward pass and the loss (and evaluation). */
static bool amp_on(const train_config *c) { return strcmp(c->amp, "none") != 0; }
static ct_dtype amp_dtype(const train_config *c) { return strcmp(c->amp, "fp16") == 0 ? CT_FLOAT16 : CT_BFLOAT16; }

/* --profile N: the run's steps 2 to N + 1 (the first one warms caches and
 * compiles kernels), then the kernel table on stdout and the Chrome trace
 * beside the logs (--logdir, else the current folder). */
static void profile_around_step(run *r, int64_t step_index, bool before) {
    if (r->cfg.profile_steps <= 0) return;
    if (before && step_index == 1) ct_profiler_start((ct_profiler_opts){0});
    if (before || step_index != r->cfg.profile_steps || !ct_profiler_is_enabled()) return;
    ct_device_synchronize(r->dev);
    ct_profiler_stop();
    char path[1100];
    snprintf(path, sizeof path, "%s/trace.json", r->cfg.logdir[0] ? r->cfg.logdir : ".");
    printf("profile of %d training steps (host times; device work is asynchronous):\n", r->cfg.profile_steps);
    ct_profiler_print_table(stdout, "cpu_time_total", 15);
    if (ct_profiler_export_chrome_trace(path) == CT_OK) printf("trace: %s (chrome://tracing or ui.perfetto.dev)\n", path);
    else fprintf(stderr, "ctorch-train: --profile: %s\n", ct_last_error());
}

static ct_status train_epoch(run *r, int epoch, epoch_result *res) {
    char desc[48];
    snprintf(desc, sizeof desc, "epoch %d/%d", epoch + 1, r->cfg.epochs);
    ct_module_train(r->model, true);
    ct_dataloader_set_epoch(r->train_dl, (uint64_t)epoch);
    ct_dataloader_iter *it = ct_dataloader_iter_new(r->train_dl);
    if (!it) return ct_last_status();
    progress *bar = progress_new(r->cfg.progress, desc, ct_dataloader_len(r->train_dl), r->cfg.batch_size);
    double loss_sum = 0, t0 = now_s();
    int64_t seen = 0, step = 0;
    ct_status s = CT_OK;
    ct_sample b = {0};
    double *phase = res->phase_seconds, mark = t0;
    memset(res->phase_seconds, 0, sizeof res->phase_seconds);
    while (s == CT_OK && !g_interrupted && ct_dataloader_next(it, &b)) {
        profile_around_step(r, r->run_steps, true);
        CT_SCOPE {
            ct_tensor *x, *y;
            s = batch_to_device(&b, r->dev, &x, &y);
            phase_lap(&mark, &phase[PHASE_DATA]);
            ct_tensor *loss = NULL;
            CT_AUTOCAST(r->dev.type, .dtype = amp_dtype(&r->cfg), .disabled = !amp_on(&r->cfg)) {
                ct_tensor *out = s != CT_OK ? NULL
                                 : r->ddp   ? ct_ddp_forward(r->ddp, x)
                                 : r->dp    ? ct_data_parallel_forward(r->dp, x)
                                            : ct_forward(r->model, x);
                loss = out ? ct_cross_entropy(out, y) : NULL;
            }
            if (s == CT_OK && !loss) s = ct_last_status(); /* the forward's own error, e.g. out of memory */
            phase_lap(&mark, &phase[PHASE_FORWARD]);
            if (s == CT_OK) s = ct_zero_grad(r->opt);
            if (s == CT_OK) s = ct_backward(ct_grad_scaler_scale(r->scaler, loss));
            phase_lap(&mark, &phase[PHASE_BACKWARD]);
            if (s == CT_OK) s = ct_grad_scaler_step(r->scaler, r->opt);
            if (s == CT_OK) s = ct_grad_scaler_update(r->scaler);
            if (s == CT_OK && r->sched) s = ct_scheduler_step(r->sched);
            phase_lap(&mark, &phase[PHASE_OPTIMIZER]);
            double v = 0;
            if (s == CT_OK) s = ct_item_checked(loss, &v);
            if (s == CT_OK) {
                int64_t n = ct_size(b.t[1], 0);
                loss_sum += v * (double)n;
                seen += n;
                step++;
                r->st.global_step++;
                progress_update(bar, step, loss_sum / (double)seen);
                if (r->tb && r->st.global_step % r->cfg.log_every == 0) {
                    ct_summary_add_scalar(r->tb, "Loss/train_step", v, r->st.global_step);
                    ct_summary_add_scalar(r->tb, "LR", ct_optimizer_lr(r->opt), r->st.global_step);
                }
            }
        }
        ct_sample_clear(&b);
        profile_around_step(r, r->run_steps++, false);
        mark = now_s(); /* the loss read and the progress bar count as "other" */
    }
    if (s == CT_OK) s = ct_dataloader_iter_status(it);
    progress_finish(bar);
    ct_dataloader_iter_free(it);
    ct_device_synchronize(r->dev);
    res->seconds = now_s() - t0;
    res->samples = seen;
    res->loss = seen ? loss_sum / (double)seen : 0.0;
    res->images_per_s = res->seconds > 0 ? (double)seen / res->seconds : 0.0;
    return s;
}

static ct_status evaluate(run *r, epoch_result *res) {
    ct_module_train(r->model, false);
    ct_dataloader_iter *it = ct_dataloader_iter_new(r->test_dl);
    if (!it) return ct_last_status();
    double loss_sum = 0, correct = 0, t0 = now_s();
    int64_t seen = 0;
    ct_status s = CT_OK;
    ct_sample b = {0};
    CT_NO_GRAD {
        while (s == CT_OK && !g_interrupted && ct_dataloader_next(it, &b)) {
            CT_SCOPE {
                ct_tensor *x, *y;
                s = batch_to_device(&b, r->dev, &x, &y);
                ct_tensor *logits = NULL;
                CT_AUTOCAST(r->dev.type, .dtype = amp_dtype(&r->cfg), .disabled = !amp_on(&r->cfg)) {
                    logits = s == CT_OK ? ct_forward(r->model, x) : NULL;
                }
                if (s == CT_OK && !logits) s = ct_last_status();
                ct_tensor *loss = ct_cross_entropy(logits, y, .reduction = CT_REDUCTION_SUM);
                ct_tensor *hits = ct_sum_all(ct_eq(ct_argmax(logits, 1, false), y));
                double l = 0, h = 0;
                if (s == CT_OK) s = ct_item_checked(loss, &l);
                if (s == CT_OK) s = ct_item_checked(hits, &h);
                loss_sum += l;
                correct += h;
                seen += ct_size(b.t[1], 0);
            }
            ct_sample_clear(&b);
        }
    }
    if (s == CT_OK) s = ct_dataloader_iter_status(it);
    ct_dataloader_iter_free(it);
    res->seconds = now_s() - t0;
    res->samples = seen;
    res->loss = seen ? loss_sum / (double)seen : 0.0;
    res->accuracy = seen ? correct / (double)seen : 0.0;
    return s;
}

static void log_epoch(run *r, int epoch, const epoch_result *tr, const epoch_result *te, double lr) {
    printf("epoch %d/%d  train loss %.4f  test loss %.4f  test accuracy %.2f%%  %.0f img/s  %.1f s\n", epoch + 1,
           r->cfg.epochs, tr->loss, te->loss, te->accuracy * 100, tr->images_per_s, tr->seconds + te->seconds);
    const double *ph = tr->phase_seconds;
    double other = tr->seconds - ph[PHASE_DATA] - ph[PHASE_FORWARD] - ph[PHASE_BACKWARD] - ph[PHASE_OPTIMIZER];
    printf("  time: data %.1f s  forward %.1f s  backward %.1f s  optimizer %.1f s  other %.1f s  test %.1f s\n",
           ph[PHASE_DATA], ph[PHASE_FORWARD], ph[PHASE_BACKWARD], ph[PHASE_OPTIMIZER], other > 0 ? other : 0,
           te->seconds);
    fflush(stdout);
    if (r->tb) {
        int64_t step = r->st.global_step;
        ct_summary_add_scalar(r->tb, "Loss/train", tr->loss, step);
        ct_summary_add_scalar(r->tb, "Loss/val", te->loss, step);
        ct_summary_add_scalar(r->tb, "Accuracy/val", te->accuracy, step);
        ct_summary_add_scalar(r->tb, "LR", lr, step);
        ct_summary_add_scalar(r->tb, "Throughput/samples_per_s", tr->images_per_s, step);
        ct_summary_flush(r->tb);
    }
    if (r->metrics) {
        fprintf(r->metrics,
                "{\"epoch\": %d, \"global_step\": %" PRId64 ", \"train_loss\": %.17g, \"test_loss\": %.17g, "
                "\"test_accuracy\": %.17g, \"lr\": %.17g, \"images_per_s\": %.1f, \"seconds\": {",
                epoch + 1, r->st.global_step, tr->loss, te->loss, te->accuracy, lr, tr->images_per_s);
        for (int p = 0; p < PHASE_COUNT; p++) fprintf(r->metrics, "\"%s\": %.3f, ", PHASE_NAMES[p], tr->phase_seconds[p]);
        fprintf(r->metrics, "\"train\": %.3f, \"test\": %.3f}}\n", tr->seconds, te->seconds);
        fflush(r->metrics);
    }
}

static void print_summary(run *r, double seconds, const epoch_result *last_test) {
    char dur[64];
    format_duration(seconds, dur, sizeof dur);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("done in %s: test accuracy %.2f%% (best %.2f%%), peak host memory %.0f MiB", dur,
           last_test->accuracy * 100, r->st.best_accuracy * 100, ru.ru_maxrss / 1024.0);
    if (r->dev.type != CT_DEVICE_CPU)
        printf(", peak device memory %.1f MiB", (double)ct_max_memory_allocated(r->dev) / (1024.0 * 1024.0));
    printf("\n");
}

static ct_status make_loaders(run *r) {
    bool pin = r->cfg.pin_memory > 0 || (r->cfg.pin_memory < 0 && r->dev.type != CT_DEVICE_CPU);
    r->cfg.pin_memory = pin;
    ct_dataloader_opts o = {.batch_size = r->cfg.batch_size, .shuffle = true, .num_workers = r->cfg.workers,
                            .pin_memory = pin, .persistent_workers = r->cfg.workers > 0, .seed = r->cfg.seed};
    if (r->cfg.distributed) { /* this rank's share of each epoch */
        o.shuffle = false;
        o.sampler = dist_train_sampler(&r->cfg, ct_dataset_len(r->data.train), r->rank, r->world);
        if (!o.sampler) return ct_last_status();
    }
    r->train_dl = ct_dataloader_new(r->data.train, o);
    o.shuffle = false, o.sampler = NULL;
    o.batch_size = r->cfg.batch_size > 256 ? r->cfg.batch_size : 256;
    r->test_dl = r->train_dl ? ct_dataloader_new(r->data.test, o) : NULL;
    return r->test_dl ? CT_OK : ct_last_status();
}

/* A log that cannot be opened is a bad option value: exit 2 before training. */
static int open_logs(run *r) {
    if (r->cfg.logdir[0]) {
        r->tb = ct_summary_writer_new(r->cfg.logdir);
        if (!r->tb) {
            fprintf(stderr, "ctorch-train: --logdir %s: %s\n", r->cfg.logdir, ct_last_error());
            return TRAIN_EXIT_USAGE;
        }
    }
    if (r->cfg.metrics[0]) {
        r->metrics = fopen(r->cfg.metrics, "a");
        if (!r->metrics) {
            fprintf(stderr, "ctorch-train: cannot open --metrics %s: %s\n", r->cfg.metrics, strerror(errno));
            return TRAIN_EXIT_USAGE;
        }
    }
    return -1;
}

/* The scaler's scale and growth tracker from a checkpoint that has them
 * (an fp16 run's); the rest of its state is the run's options. */
static ct_status restore_scaler(ct_grad_scaler *scaler, const train_state *st) {
    if (!ct_grad_scaler_is_enabled(scaler) || st->amp_scale <= 0) return CT_OK;
    ct_tensor_dict *d = ct_grad_scaler_state_dict(scaler);
    if (!d) return ct_last_status();
    ct_status s = CT_OK;
    CT_SCOPE {
        s = ct_tensor_dict_set(d, "scale", ct_full(CT_SHAPE(), st->amp_scale, .dtype = CT_FLOAT32));
        if (s == CT_OK)
            s = ct_tensor_dict_set(d, "_growth_tracker",
                                   ct_full(CT_SHAPE(), (double)st->amp_growth_tracker, .dtype = CT_INT32));
    }
    if (s == CT_OK) s = ct_grad_scaler_load_state_dict(scaler, d);
    ct_tensor_dict_free(d);
    return s;
}

/* Restores a checkpoint (--resume) or initial weights (--weights). The
 * checkpoint's seed replaces --seed, since the data order depends on it. */
static int restore(run *r) {
    if (r->cfg.resume[0]) {
        char path[2200];
        bool found = false;
        train_state st = {0};
        ct_status s = checkpoint_resume(r->cfg.resume, r->cfg.ckpt_dir, r->model, r->opt, &st, &r->cfg,
                                        r->st.train_samples, path, sizeof path, &found);
        if (s == CT_ERR_OOM) return TRAIN_EXIT_OOM;
        if (s != CT_OK) return TRAIN_EXIT_USAGE; /* an unusable checkpoint (the message is printed) */
        if (found) {
            if (st.seed != r->cfg.seed && r->cfg.seed_given)
                fprintf(stderr, "ctorch-train: note: the checkpoint's seed %llu replaces --seed %llu\n",
                        (unsigned long long)st.seed, (unsigned long long)r->cfg.seed);
            r->cfg.seed = st.seed;
            r->st = st;
            if (restore_scaler(r->scaler, &st) != CT_OK) return fail("cannot restore the gradient scaler", ct_last_status());
            ct_set_rng_state(st.rng_seed, st.rng_offset);
            printf("resumed from %s after epoch %d (step %" PRId64 ")\n", path, st.epoch, st.global_step);
            return -1;
        }
        if (r->cfg.eval_only) {
            fprintf(stderr, "ctorch-train: --eval-only --resume auto: no checkpoint in %s to evaluate\n",
                    r->cfg.ckpt_dir);
            return TRAIN_EXIT_USAGE;
        }
        printf("no checkpoint in %s yet: starting from scratch\n", r->cfg.ckpt_dir);
    }
    if (r->cfg.weights[0]) {
        ct_status s = ct_module_load(r->model, r->cfg.weights, true);
        if (s != CT_OK) return fail("cannot load --weights", s);
    }
    return -1;
}

static int train_all(run *r) {
    double t0 = now_s();
    epoch_result tr = {0}, te = {0};
    if (r->cfg.eval_only || r->st.epoch >= r->cfg.epochs) {
        ct_status s = evaluate(r, &te);
        if (s != CT_OK) return fail("evaluation failed", s);
        printf("test loss %.4f  test accuracy %.2f%% on %" PRId64 " images\n", te.loss, te.accuracy * 100, te.samples);
        return TRAIN_EXIT_OK;
    }
    for (int epoch = r->st.epoch; epoch < r->cfg.epochs; epoch++) {
        ct_status s = train_epoch(r, epoch, &tr);
        if (s == CT_OK && !g_interrupted) s = evaluate(r, &te);
        if (g_interrupted) {
            fprintf(stderr, "ctorch-train: interrupted during epoch %d; the last checkpoint is the one to resume from\n",
                    epoch + 1);
            return TRAIN_EXIT_INTERRUPTED;
        }
        if (s != CT_OK) return fail("training failed", s);
        r->st.epoch = epoch + 1;
        if (te.accuracy > r->st.best_accuracy) r->st.best_accuracy = te.accuracy;
        log_epoch(r, epoch, &tr, &te, ct_optimizer_lr(r->opt));
        if (r->cfg.ckpt_dir[0] && r->rank == 0) { /* one writer: the ranks hold the same weights */
            char saved[2200];
            ct_get_rng_state(&r->st.rng_seed, &r->st.rng_offset);
            r->st.amp_scale = ct_grad_scaler_is_enabled(r->scaler) ? ct_grad_scaler_get_scale(r->scaler) : 0.0;
            r->st.amp_growth_tracker = ct_grad_scaler_growth_tracker(r->scaler);
            r->st.seed = r->cfg.seed;
            s = checkpoint_save(r->cfg.ckpt_dir, r->model, r->opt, &r->st, &r->cfg, saved, sizeof saved);
            if (s == CT_ERR_OOM) return fail("cannot save the checkpoint", s);
            if (s != CT_OK) {
                fprintf(stderr, "ctorch-train: cannot save the checkpoint of epoch %d (see above); %s\n", epoch + 1,
                        epoch > 0 ? "the previous one is intact" : "no checkpoint was written");
                return TRAIN_EXIT_WRITE;
            }
            printf("saved %s\n", saved);
        }
        if (r->cfg.stop_after > 0 && epoch + 1 >= r->cfg.stop_after && epoch + 1 < r->cfg.epochs) {
            printf("stopping after epoch %d as asked (--stop-after)\n", epoch + 1);
            return TRAIN_EXIT_OK;
        }
    }
    print_summary(r, now_s() - t0, &te);
    return TRAIN_EXIT_OK;
}

/* The threads that will run CPU kernels (and call the BLAS). */
static int max_compute_threads(const run *r) {
    if (r->cfg.threads > 0) return r->cfg.threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int setup(run *r) {
    char desc[320];
    if (setup_device(r->cfg.device, &r->dev, desc, sizeof desc) != CT_OK) {
        fprintf(stderr, "ctorch-train: --device %s: %s\n", r->cfg.device, ct_last_error());
        return TRAIN_EXIT_USAGE;
    }
    /* Before the data set loads: under a tight `ulimit -v` the load itself
     * would fail first, with a message that does not say why. */
    int rc = check_memory_headroom(r->dev.type == CT_DEVICE_CPU, max_compute_threads(r), r->cfg.workers);
    if (rc >= 0) return rc;
    ct_status s = setup_data(&r->cfg, &r->data);
    if (s != CT_OK) {
        fprintf(stderr, "ctorch-train: cannot load %s: %s\n", r->cfg.dataset, ct_last_error());
        if (strcmp(r->cfg.data_dir, "/usr/share/datasets/fashion-mnist") == 0)
            fprintf(stderr, "ctorch-train: install it with: apt-get install dataset-fashion-mnist\n");
        return s == CT_ERR_OOM ? TRAIN_EXIT_OOM : TRAIN_EXIT_DATA;
    }
    r->st.train_samples = ct_dataset_len(r->data.train);
    if (r->cfg.ckpt_dir[0]) {
        /* fail now, not after an epoch of training, when checkpoints cannot be written */
        if (checkpoint_check_writable(r->cfg.ckpt_dir) != CT_OK || checkpoint_recover(r->cfg.ckpt_dir) != CT_OK)
            return TRAIN_EXIT_USAGE;
    }
    ct_manual_seed(r->cfg.seed);
    r->model = setup_model(&r->cfg, &r->data);
    if (!r->model) return ct_last_error()[0] ? fail("cannot build the model", ct_last_status()) : TRAIN_EXIT_USAGE;
    if (ct_module_to_checked(r->model, r->dev) != CT_OK) return fail("cannot move the model", ct_last_status());
    if (r->cfg.distributed && !(r->ddp = ct_ddp_new(r->model, (ct_ddp_opts){0})))
        return fail("cannot wrap the model in DistributedDataParallel", ct_last_status());
    int ndev = 1;
    if (r->cfg.data_parallel && !(r->dp = dist_data_parallel(r->model, r->dev, &ndev)) && ndev > 1)
        return fail("cannot wrap the model in DataParallel", ct_last_status());
    r->opt = setup_optimizer(&r->cfg, r->model);
    if (!r->opt) return fail("cannot create the optimizer", ct_last_status());
    r->scaler = ct_grad_scaler_new(.disabled = strcmp(r->cfg.amp, "fp16") != 0);
    if (!r->scaler) return fail("cannot create the gradient scaler", ct_last_status());
    r->st.seed = r->cfg.seed;
    rc = restore(r);
    if (rc >= 0) return rc;
    if (make_loaders(r) != CT_OK) return fail("cannot create the data loaders", ct_last_status());
    /* The schedule's closed form at the restored step gives the same rate
     * the uninterrupted run had there. */
    int64_t total = ct_dataloader_len(r->train_dl) * r->cfg.epochs;
    if (r->st.global_step > 0) ct_optimizer_set_lr(r->opt, r->cfg.lr); /* the schedule's base rate */
    r->sched = setup_scheduler(&r->cfg, r->opt, total);
    if (!r->sched && strcmp(r->cfg.schedule, "none") != 0) return fail("cannot create the schedule", ct_last_status());
    for (int64_t i = 0; r->sched && i < r->st.global_step; i++) ct_scheduler_step(r->sched);
    rc = open_logs(r);
    if (rc >= 0) return rc;
    train_print_config(stdout, &r->cfg, desc);
    printf("%s: %" PRId64 " training and %" PRId64 " test images | %s, %" PRId64 " parameters\n",
           ct_dataset_name(r->data.train_full), ct_dataset_len(r->data.train), ct_dataset_len(r->data.test),
           r->cfg.model, ct_module_num_parameters(r->model));
    fflush(stdout);
    return -1;
}

/* Frees everything; a log that could not be written turns success into
 * TRAIN_EXIT_WRITE. */
static int teardown(run *r, int rc) {
    ct_dataloader_free(r->train_dl);
    ct_dataloader_free(r->test_dl);
    ct_scheduler_free(r->sched);
    ct_grad_scaler_free(r->scaler);
    ct_optimizer_free(r->opt);
    ct_ddp_free(r->ddp);
    ct_data_parallel_free(r->dp);
    ct_module_free(r->model);
    train_data_free(&r->data);
    bool lost = false;
    if (r->tb && ct_summary_writer_close(r->tb) != CT_OK) {
        fprintf(stderr, "ctorch-train: writing the TensorBoard log failed: %s\n", ct_last_error());
        lost = true;
    }
    if (r->metrics && (ferror(r->metrics) | fclose(r->metrics))) {
        fprintf(stderr, "ctorch-train: writing --metrics %s failed\n", r->cfg.metrics);
        lost = true;
    }
    return lost && rc == TRAIN_EXIT_OK ? TRAIN_EXIT_WRITE : rc;
}

int main(int argc, char **argv) {
    static run r;
    train_config_defaults(&r.cfg);
    int rc = train_parse_args(&r.cfg, argc, argv);
    if (rc >= 0) return rc;
    fix_openblas_core(argv);
    if (!r.cfg.seed_given) {
        const char *env = getenv("CT_SEED");
        r.cfg.seed = env && *env ? strtoull(env, NULL, 10) : random_seed();
    }
    if (r.cfg.threads > 0) {
#ifdef _OPENMP
        omp_set_num_threads(r.cfg.threads);
#endif
        openblas_set_num_threads(r.cfg.threads);
    }
    install_signal_handlers(&g_interrupted);
    rc = dist_setup(&r.cfg, &r.rank, &r.world);
    if (rc < 0) rc = setup(&r);
    if (rc < 0) rc = train_all(&r);
    rc = teardown(&r, rc);
    dist_teardown(&r.cfg, rc);
    return rc;
}
