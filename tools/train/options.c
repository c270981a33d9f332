/*
 * options.c — ctorch-train's command line: defaults, parsing with clear
 * messages for every bad value, and --help, which is the reference for
 * every option (docs/trainer.md repeats it with examples).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "train.h"

#define DEFAULT_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define DEFAULT_MNIST_DIR "/usr/share/datasets/mnist"

void train_config_defaults(train_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "cnn");
    snprintf(c->dataset, sizeof c->dataset, "fashion-mnist");
    snprintf(c->device, sizeof c->device, "auto");
    c->epochs = 5;
    c->batch_size = 64;
    snprintf(c->optimizer, sizeof c->optimizer, "sgd");
    c->lr = -1;               /* per optimizer, see finish_defaults */
    c->momentum = 0.9;
    c->weight_decay = -1;
    snprintf(c->schedule, sizeof c->schedule, "cosine");
    snprintf(c->amp, sizeof c->amp, "none");
    c->workers = 2;
    c->pin_memory = -1;
    c->progress = PROGRESS_AUTO;
    c->log_every = 50;
}

static const char USAGE[] =
    "Usage: ctorch-train [options]\n"
    "\n"
    "Trains a model and reports test accuracy. With no options it trains the\n"
    "Fashion-MNIST CNN for 5 epochs on the best device, from the Debian package\n"
    "dataset-fashion-mnist (" DEFAULT_FMNIST_DIR ").\n"
    "\n"
    "Model and data:\n"
    "  --model NAME          mlp, cnn (default) or resnet18\n"
    "  --dataset NAME        fashion-mnist (default), mnist or cifar10\n"
    "  --data-dir DIR        the data set's folder (IDX files, plain or .gz; for cifar10\n"
    "                        the cifar-10-batches-bin folder). Default: " DEFAULT_FMNIST_DIR "\n"
    "                        for fashion-mnist, " DEFAULT_MNIST_DIR " for mnist\n"
    "  --augment / --no-augment\n"
    "                        random crop (padding 4 on 32x32, 2 on 28x28) and horizontal\n"
    "                        flip for training (default: on for cifar10 only)\n"
    "  --limit-train N       train on the first N samples only (quick runs, tests)\n"
    "  --limit-test N        evaluate on the first N test samples only\n"
    "\n"
    "Device and speed:\n"
    "  --device DEV          auto (default: cuda:0, else an OpenCL GPU, else cpu), cpu,\n"
    "                        cuda, cuda:N, opencl, opencl:N\n"
    "  --threads N           CPU threads for the cpu device (default: OpenMP's)\n"
    "  --distributed         one rank of `mpirun -np N ctorch-train --distributed`: the model\n"
    "                        in DistributedDataParallel, each rank on its share of the\n"
    "                        training set (--batch-size per rank); rank 0 prints and saves\n"
    "  --data-parallel       DataParallel: each batch split over every device of the\n"
    "                        chosen backend (e.g. both PoCL devices); DDP is faster\n"
    "  --workers N           DataLoader worker threads (default 2; 0 loads inline)\n"
    "  --pin-memory / --no-pin-memory\n"
    "                        page-locked batches and non_blocking copies (default: on\n"
    "                        when training on a device other than cpu)\n"
    "\n"
    "Optimisation:\n"
    "  --epochs N            default 5\n"
    "  --batch-size N        default 64 (test batches: 256 or larger)\n"
    "  --optimizer NAME      sgd (default, momentum 0.9), adam or adamw\n"
    "  --lr X                learning rate (default 0.05 for sgd, 1e-3 for adam/adamw)\n"
    "  --momentum X          sgd momentum (default 0.9)\n"
    "  --weight-decay X      default 5e-4 for sgd, 0 for adam, 1e-2 for adamw\n"
    "  --schedule NAME       cosine (default, per step to 0), step (x0.1 at 50% and 75%),\n"
    "                        onecycle (peak --lr) or none\n"
    "  --amp MODE            mixed precision: none (default), bf16 (autocast to bfloat16)\n"
    "                        or fp16 (autocast to float16 with a gradient scaler)\n"
    "  --seed N              seeds weights, shuffling and augmentation (default: random,\n"
    "                        printed, and stored in checkpoints)\n"
    "\n"
    "Checkpoints and logs:\n"
    "  --ckpt-dir DIR        save DIR/epoch-<k>/ (model.safetensors, optim.safetensors)\n"
    "                        after every epoch and point DIR/latest at it\n"
    "  --resume WHAT         auto (the latest in --ckpt-dir, if any) or a checkpoint\n"
    "                        folder; training continues exactly where it stopped\n"
    "  --weights FILE        start from (or, with --eval-only, evaluate) a model.safetensors\n"
    "  --eval-only           evaluate on the test set and exit\n"
    "  --stop-after K        stop after epoch K (after its checkpoint), as if interrupted;\n"
    "                        --resume then continues the same --epochs plan\n"
    "  --logdir DIR          write TensorBoard scalars to DIR (tensorboard --logdir DIR)\n"
    "  --profile N           profile N training steps (after the first), print the\n"
    "                        kernel table and write DIR/trace.json (--logdir, else .)\n"
    "  --log-every N         steps between TensorBoard training points (default 50)\n"
    "  --metrics FILE        append one JSON line per epoch (exact values) to FILE\n"
    "  --progress MODE       auto (default: a bar on a terminal, plain lines otherwise),\n"
    "                        bar, plain or none\n"
    "\n"
    "  -h, --help            this text\n"
    "  --version             ctorch's version\n"
    "\n"
    "Exit status: 0 success, 1 a failure during training, 2 usage error (bad option\n"
    "value, absent device, unusable checkpoint or log folder), 3 data set missing or\n"
    "malformed, 4 out of memory, 5 a checkpoint or log could not be written, 130\n"
    "interrupted (Ctrl-C; a second Ctrl-C ends the process at once).\n";

enum {
    OPT_MODEL = 256, OPT_DATASET, OPT_DATA_DIR, OPT_DEVICE, OPT_EPOCHS, OPT_BATCH, OPT_OPTIM, OPT_LR,
    OPT_MOMENTUM, OPT_WD, OPT_SCHEDULE, OPT_SEED, OPT_WORKERS, OPT_PIN, OPT_NO_PIN, OPT_AUGMENT,
    OPT_NO_AUGMENT, OPT_CKPT, OPT_RESUME, OPT_WEIGHTS, OPT_LOGDIR, OPT_METRICS, OPT_EVAL, OPT_PROGRESS,
    OPT_LOG_EVERY, OPT_LIMIT_TRAIN, OPT_LIMIT_TEST, OPT_THREADS, OPT_STOP_AFTER, OPT_AMP, OPT_DISTRIBUTED, OPT_DATA_PARALLEL, OPT_PROFILE, OPT_VERSION
};

static const struct option LONG_OPTS[] = {
    {"model", required_argument, 0, OPT_MODEL},         {"dataset", required_argument, 0, OPT_DATASET},
    {"data-dir", required_argument, 0, OPT_DATA_DIR},   {"device", required_argument, 0, OPT_DEVICE},
    {"epochs", required_argument, 0, OPT_EPOCHS},       {"batch-size", required_argument, 0, OPT_BATCH},
    {"optimizer", required_argument, 0, OPT_OPTIM},     {"lr", required_argument, 0, OPT_LR},
    {"momentum", required_argument, 0, OPT_MOMENTUM},   {"weight-decay", required_argument, 0, OPT_WD},
    {"schedule", required_argument, 0, OPT_SCHEDULE},   {"seed", required_argument, 0, OPT_SEED},
    {"workers", required_argument, 0, OPT_WORKERS},     {"pin-memory", no_argument, 0, OPT_PIN},
    {"no-pin-memory", no_argument, 0, OPT_NO_PIN},      {"augment", no_argument, 0, OPT_AUGMENT},
    {"no-augment", no_argument, 0, OPT_NO_AUGMENT},     {"ckpt-dir", required_argument, 0, OPT_CKPT},
    {"resume", required_argument, 0, OPT_RESUME},       {"weights", required_argument, 0, OPT_WEIGHTS},
    {"logdir", required_argument, 0, OPT_LOGDIR},       {"metrics", required_argument, 0, OPT_METRICS},
    {"eval-only", no_argument, 0, OPT_EVAL},            {"progress", required_argument, 0, OPT_PROGRESS},
    {"log-every", required_argument, 0, OPT_LOG_EVERY}, {"limit-train", required_argument, 0, OPT_LIMIT_TRAIN},
    {"limit-test", required_argument, 0, OPT_LIMIT_TEST}, {"threads", required_argument, 0, OPT_THREADS},
    {"stop-after", required_argument, 0, OPT_STOP_AFTER}, {"amp", required_argument, 0, OPT_AMP},
    {"distributed", no_argument, 0, OPT_DISTRIBUTED},  {"data-parallel", no_argument, 0, OPT_DATA_PARALLEL},
    {"profile", required_argument, 0, OPT_PROFILE},
    {"help", no_argument, 0, 'h'},                      {"version", no_argument, 0, OPT_VERSION},
    {0, 0, 0, 0}};

static int usage_error(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "ctorch-train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\nTry 'ctorch-train --help' for the options.\n");
    return TRAIN_EXIT_USAGE;
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool one_of(const char *s, const char *const *names) {
    for (; *names; names++)
        if (strcmp(s, *names) == 0) return true;
    return false;
}

/* Copies a string option, refusing values that would not fit. */
static bool copy_opt(char *dst, size_t size, const char *src) {
    if (strlen(src) >= size) return false;
    memcpy(dst, src, strlen(src) + 1);
    return true;
}

static void finish_defaults(train_config *c) {
    bool sgd = strcmp(c->optimizer, "sgd") == 0;
    if (c->lr < 0) c->lr = sgd ? 0.05 : 1e-3;
    if (c->weight_decay < 0) c->weight_decay = sgd ? 5e-4 : (strcmp(c->optimizer, "adamw") == 0 ? 1e-2 : 0.0);
    if (!c->data_dir[0]) {
        if (strcmp(c->dataset, "fashion-mnist") == 0) copy_opt(c->data_dir, sizeof c->data_dir, DEFAULT_FMNIST_DIR);
        if (strcmp(c->dataset, "mnist") == 0) copy_opt(c->data_dir, sizeof c->data_dir, DEFAULT_MNIST_DIR);
    }
}

/* The option's value into c; an exit code on a bad value, -1 if accepted. */
static int apply_option(train_config *c, int opt, const char *arg, const char *name) {
    static const char *const MODELS[] = {"mlp", "cnn", "resnet18", NULL};
    static const char *const DATASETS[] = {"fashion-mnist", "mnist", "cifar10", NULL};
    static const char *const OPTIMS[] = {"sgd", "adam", "adamw", NULL};
    static const char *const SCHEDULES[] = {"none", "cosine", "step", "onecycle", NULL};
    static const char *const AMPS[] = {"none", "bf16", "fp16", NULL};
    int64_t v;
    switch (opt) {
    case OPT_MODEL:
        if (!one_of(arg, MODELS)) return usage_error("unknown model '%s'%s (expected mlp, cnn or resnet18)", arg, "");
        copy_opt(c->model, sizeof c->model, arg);
        break;
    case OPT_DATASET:
        if (!one_of(arg, DATASETS))
            return usage_error("unknown dataset '%s'%s (expected fashion-mnist, mnist or cifar10)", arg, "");
        copy_opt(c->dataset, sizeof c->dataset, arg);
        break;
    case OPT_OPTIM:
        if (!one_of(arg, OPTIMS)) return usage_error("unknown optimizer '%s'%s (expected sgd, adam or adamw)", arg, "");
        copy_opt(c->optimizer, sizeof c->optimizer, arg);
        break;
    case OPT_DISTRIBUTED:
        c->distributed = true;
        break;
    case OPT_DATA_PARALLEL:
        c->data_parallel = true;
        break;
    case OPT_AMP:
        if (!one_of(arg, AMPS)) return usage_error("unknown --amp '%s'%s (expected none, bf16 or fp16)", arg, "");
        copy_opt(c->amp, sizeof c->amp, arg);
        break;
    case OPT_SCHEDULE:
        if (!one_of(arg, SCHEDULES))
            return usage_error("unknown schedule '%s'%s (expected none, cosine, step or onecycle)", arg, "");
        copy_opt(c->schedule, sizeof c->schedule, arg);
        break;
    case OPT_PROGRESS:
        if (strcmp(arg, "auto") == 0) c->progress = PROGRESS_AUTO;
        else if (strcmp(arg, "bar") == 0) c->progress = PROGRESS_BAR;
        else if (strcmp(arg, "plain") == 0) c->progress = PROGRESS_PLAIN;
        else if (strcmp(arg, "none") == 0) c->progress = PROGRESS_NONE;
        else return usage_error("unknown progress mode '%s'%s (expected auto, bar, plain or none)", arg, "");
        break;
    case OPT_EPOCHS:
        if (!parse_i64(arg, 0, 1000000, &v)) return usage_error("--%s expects an integer from 0, got '%s'", name, arg);
        c->epochs = (int)v;
        break;
    case OPT_BATCH:
        if (!parse_i64(arg, 1, INT32_MAX, &v)) return usage_error("--%s expects a positive integer, got '%s'", name, arg);
        c->batch_size = v;
        break;
    case OPT_STOP_AFTER:
        if (!parse_i64(arg, 1, 1000000, &v)) return usage_error("--%s expects a positive integer, got '%s'", name, arg);
        c->stop_after = (int)v;
        break;
    case OPT_PROFILE:
        if (!parse_i64(arg, 1, 1000000, &v)) return usage_error("--%s expects a positive integer, got '%s'", name, arg);
        c->profile_steps = (int)v;
        break;
    case OPT_WORKERS:
    case OPT_THREADS:
    case OPT_LOG_EVERY:
        if (!parse_i64(arg, opt == OPT_WORKERS ? 0 : 1, 4096, &v))
            return usage_error("--%s expects a small non-negative integer, got '%s'", name, arg);
        if (opt == OPT_WORKERS) c->workers = (int)v;
        else if (opt == OPT_THREADS) c->threads = (int)v;
        else c->log_every = (int)v;
        break;
    case OPT_LIMIT_TRAIN:
    case OPT_LIMIT_TEST:
        if (!parse_i64(arg, 1, INT64_MAX, &v)) return usage_error("--%s expects a positive integer, got '%s'", name, arg);
        *(opt == OPT_LIMIT_TRAIN ? &c->limit_train : &c->limit_test) = v;
        break;
    case OPT_SEED: {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-')
            return usage_error("--%s expects a non-negative integer, got '%s'", name, arg);
        c->seed = s;
        c->seed_given = true;
        break;
    }
    case OPT_LR:
    case OPT_MOMENTUM:
    case OPT_WD: {
        double d;
        if (!parse_double(arg, 0.0, &d) || (opt == OPT_LR && d <= 0))
            return usage_error(opt == OPT_LR ? "--%s expects a positive number, got '%s'"
                                             : "--%s expects a non-negative number, got '%s'", name, arg);
        *(opt == OPT_LR ? &c->lr : opt == OPT_MOMENTUM ? &c->momentum : &c->weight_decay) = d;
        break;
    }
    case OPT_PIN: c->pin_memory = 1; break;
    case OPT_NO_PIN: c->pin_memory = 0; break;
    case OPT_AUGMENT: c->augment = true; break;
    case OPT_NO_AUGMENT: c->augment = false; break;
    case OPT_EVAL: c->eval_only = true; break;
    default: {
        char *dst = NULL;
        size_t size = 0;
        if (opt == OPT_DATA_DIR) dst = c->data_dir, size = sizeof c->data_dir;
        if (opt == OPT_DEVICE) dst = c->device, size = sizeof c->device;
        if (opt == OPT_CKPT) dst = c->ckpt_dir, size = sizeof c->ckpt_dir;
        if (opt == OPT_RESUME) dst = c->resume, size = sizeof c->resume;
        if (opt == OPT_WEIGHTS) dst = c->weights, size = sizeof c->weights;
        if (opt == OPT_LOGDIR) dst = c->logdir, size = sizeof c->logdir;
        if (opt == OPT_METRICS) dst = c->metrics, size = sizeof c->metrics;
        if (!dst || !*arg) return usage_error("--%s needs a value%s", name, "");
        if (!copy_opt(dst, size, arg)) return usage_error("the value of --%s is too long: %s", name, arg);
    }
    }
    return -1;
}

int train_parse_args(train_config *c, int argc, char **argv) {
    bool augment_given = false;
    opterr = 0;
    optind = 1;
    for (;;) {
        int idx = -1, opt = getopt_long(argc, argv, ":h", LONG_OPTS, &idx);
        if (opt == -1) break;
        if (opt == 'h') {
            fputs(USAGE, stdout);
            return TRAIN_EXIT_OK;
        }
        if (opt == OPT_VERSION) {
            printf("ctorch-train (ctorch %s)\n", CTORCH_VERSION_STRING);
            return TRAIN_EXIT_OK;
        }
        if (opt == '?') return usage_error("unknown option '%s'%s", argv[optind - 1], "");
        if (opt == ':') return usage_error("option '%s' needs a value%s", argv[optind - 1], "");
        if (opt == OPT_AUGMENT || opt == OPT_NO_AUGMENT) augment_given = true;
        int rc = apply_option(c, opt, optarg ? optarg : "", LONG_OPTS[idx].name);
        if (rc >= 0) return rc;
    }
    if (optind < argc) return usage_error("unexpected argument '%s'%s", argv[optind], "");
    if (!augment_given) c->augment = strcmp(c->dataset, "cifar10") == 0;
    if (strcmp(c->dataset, "cifar10") == 0 && !c->data_dir[0])
        return usage_error("--dataset cifar10 needs --data-dir (the cifar-10-batches-bin folder)%s%s", "", "");
    if (c->resume[0] && strcmp(c->resume, "auto") == 0 && !c->ckpt_dir[0])
        return usage_error("--resume auto needs --ckpt-dir%s%s", "", "");
    if (c->distributed && c->data_parallel)
        return usage_error("--distributed and --data-parallel exclude each other (use one process per device "
                           "with --distributed)%s%s", "", "");
    if (c->eval_only && !c->weights[0] && !c->resume[0])
        return usage_error("--eval-only needs --weights FILE or --resume%s%s", "", "");
    finish_defaults(c);
    return -1;
}

void train_print_config(FILE *f, const train_config *c, const char *device_desc) {
    fprintf(f, "ctorch-train %s | model %s | dataset %s (%s) | device %s\n", CTORCH_VERSION_STRING, c->model,
            c->dataset, c->data_dir, device_desc);
    fprintf(f, "epochs %d | batch %" PRId64 " | %s lr %g", c->epochs, c->batch_size, c->optimizer, c->lr);
    if (strcmp(c->optimizer, "sgd") == 0) fprintf(f, " momentum %g", c->momentum);
    fprintf(f, " weight decay %g | schedule %s | seed %llu | workers %d%s%s\n", c->weight_decay, c->schedule,
            (unsigned long long)c->seed, c->workers, c->pin_memory > 0 ? " | pinned memory" : "",
            c->augment ? " | augment" : "");
    if (c->distributed)
        fprintf(f, "distributed: %d processes, DistributedDataParallel, batch %" PRId64 " per process\n",
                ct_dist_get_world_size(), c->batch_size);
    if (strcmp(c->amp, "none") != 0)
        fprintf(f, "mixed precision: autocast to %s%s\n", strcmp(c->amp, "bf16") == 0 ? "bfloat16" : "float16",
                strcmp(c->amp, "fp16") == 0 ? " with a gradient scaler" : "");
}
