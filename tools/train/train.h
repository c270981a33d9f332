/*
 * train.h — the pieces of ctorch-train, the training CLI (the project's main
 * job): its configuration, the progress display, checkpoints and the data
 * and model setup. The program uses only ctorch's public API, so it is also
 * a worked example of a complete training loop in C.
 */
#ifndef CTORCH_TRAIN_H
#define CTORCH_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ctorch/ctorch.h>

/* Exit codes (documented in --help and docs/trainer.md). */
enum {
    TRAIN_EXIT_OK = 0,
    TRAIN_EXIT_ERROR = 1,     /* a failure inside ctorch during training     */
    TRAIN_EXIT_USAGE = 2,     /* bad command line                            */
    TRAIN_EXIT_DATA = 3,      /* the data set is missing or malformed        */
    TRAIN_EXIT_OOM = 4,       /* out of memory on the device or the host     */
    TRAIN_EXIT_WRITE = 5,     /* a checkpoint or log could not be written    */
    TRAIN_EXIT_INTERRUPTED = 130
};

typedef enum { PROGRESS_AUTO, PROGRESS_BAR, PROGRESS_PLAIN, PROGRESS_NONE } progress_mode;

typedef struct train_config {
    char model[16];           /* mlp, cnn, resnet18                           */
    char dataset[16];         /* fashion-mnist, mnist, cifar10                */
    char data_dir[1024];
    char device[32];          /* auto, cpu, cuda[:N], opencl[:N]              */
    int epochs;
    int64_t batch_size;
    char optimizer[8];        /* sgd, adam, adamw                             */
    double lr, momentum, weight_decay;
    char schedule[16];        /* none, cosine, step, onecycle                 */
    uint64_t seed;
    bool seed_given;
    int workers;
    int pin_memory;           /* -1 auto (on for device training), 0, 1       */
    bool augment;             /* random crop + flip (on for cifar10)          */
    char ckpt_dir[1024];      /* empty: no checkpoints                        */
    char resume[1024];        /* "", "auto" or a checkpoint folder            */
    char weights[1024];       /* a model.safetensors to start from            */
    char logdir[1024];        /* TensorBoard folder; empty: none              */
    char metrics[1024];       /* JSON-lines metrics file; empty: none         */
    bool eval_only;
    progress_mode progress;
    int log_every;            /* steps between TensorBoard points            */
    int64_t limit_train, limit_test;  /* use the first N samples (0: all)     */
    int threads;              /* CPU threads (0: OpenMP's default)            */
    int stop_after;           /* stop after this epoch, as if interrupted (0: no) */
    char amp[8];              /* none, bf16, fp16: autocast (and the scaler for fp16) */
    bool distributed;         /* one rank of an mpirun job: DDP + DistributedSampler */
    bool data_parallel;       /* DataParallel over every device of the chosen backend */
    int profile_steps;        /* --profile N: profile N steps (0: none)            */
} train_config;

/* options.c */
void train_config_defaults(train_config *c);
/* Parses argv into c. Returns -1 to continue, or an exit code (after --help,
 * --version or a usage error, whose message it has printed). */
int train_parse_args(train_config *c, int argc, char **argv);
void train_print_config(FILE *f, const train_config *c, const char *device_desc);

/* progress.c — a tqdm-like bar on a terminal, plain lines otherwise. */
typedef struct progress progress;
progress *progress_new(progress_mode mode, const char *desc, int64_t total, int64_t batch_size);
/* Report step n of total (1-based) with the running mean loss. */
void progress_update(progress *p, int64_t n, double loss);
void progress_finish(progress *p);
/* "1:02:03" or "02:03". */
void format_duration(double seconds, char *buf, size_t size);

/* checkpoint.c */
typedef struct train_state {
    int epoch;                /* epochs completed                             */
    int64_t global_step;
    uint64_t seed;
    uint64_t rng_seed, rng_offset;   /* the default generator                 */
    double best_accuracy;
    int64_t train_samples;    /* the training set's size (steps per epoch follow) */
    double amp_scale;         /* the GradScaler's scale (0: no scaler)        */
    int64_t amp_growth_tracker;
} train_state;
/* Writes <dir>/epoch-<k>/{model,optim}.safetensors, checksummed, puts the
 * folder in place and points <dir>/latest at it (crash-safe; checkpoint.c). */
ct_status checkpoint_save(const char *dir, ct_module *model, ct_optimizer *opt, const train_state *st,
                          const train_config *c, char *saved_path, size_t size);
/* Completes or undoes what a crash interrupted in dir; run before reading it. */
ct_status checkpoint_recover(const char *dir);
/* Creates dir if needed and checks that files can be created in it. */
ct_status checkpoint_check_writable(const char *dir);
/* The checkpoint folders of dir to try, best first: the one latest names,
 * then epoch-<k> by k descending. */
ct_status checkpoint_candidates(const char *dir, char (*names)[64], int max, int *n);
/* Restores model, optimizer and *st from `resume` (a folder) or, for "auto",
 * from the newest intact checkpoint in dir (damaged ones are skipped with a
 * warning). *found is false when "auto" finds no checkpoint at all. Errors:
 * CT_ERR_FORMAT damaged, CT_ERR_INVALID_ARG not this run's, CT_ERR_OOM. */
ct_status checkpoint_resume(const char *resume, const char *dir, ct_module *model, ct_optimizer *opt,
                            train_state *st, const train_config *c, int64_t train_samples, char *path,
                            size_t size, bool *found);

/* safety.c */
/* SIGINT/SIGTERM set *flag once, then end the process; SIGXFSZ is ignored. */
void install_signal_handlers(volatile sig_atomic_t *flag);
/* Kills the process at a named point of a save when CT_TRAIN_CRASH_AT asks
 * (a testing hook). */
void crash_point(const char *name);
/* TRAIN_EXIT_OOM (after a message) when `ulimit -v` leaves too little for
 * the threads that will run, else -1. */
int check_memory_headroom(bool cpu_blas, int compute_threads, int loader_threads);

/* distributed.c (--distributed) */
/* Joins the group (rank 0's seed everywhere, other ranks quiet): -1 to go
 * on, or an exit code. Rank 0 of 1 without --distributed. */
int dist_setup(train_config *c, int *rank, int *world);
ct_sampler *dist_train_sampler(const train_config *c, int64_t n, int rank, int world);
/* Leaves the group after a clean run; after a failure it exits without
 * MPI_Finalize, which could wait for ranks that still train: mpirun then
 * ends the job and names this rank. */
void dist_teardown(const train_config *c, int rc);
/* --data-parallel: model (on dev) wrapped for every device of dev's type;
 * NULL with the error set, or (one device) with a note and no error. */
ct_data_parallel *dist_data_parallel(ct_module *model, ct_device dev, int *ndevices);

/* setup.c */
typedef struct train_data {
    ct_dataset *train, *test;            /* what the loaders read             */
    ct_dataset *train_full, *test_full;  /* the files (train/test may be subsets of them) */
    int64_t num_classes;
    int64_t sample_shape[3];             /* C, H, W                           */
} train_data;
/* "auto" picks cuda:0, else an OpenCL device that is not the host CPU, else
 * cpu. desc receives e.g. "opencl:0 (pthread-…)". */
ct_status setup_device(const char *spec, ct_device *dev, char *desc, size_t size);
/* Exit code TRAIN_EXIT_DATA cases print their message; returns CT_OK or the error. */
ct_status setup_data(const train_config *c, train_data *d);
void train_data_free(train_data *d);
ct_module *setup_model(const train_config *c, const train_data *d);
ct_optimizer *setup_optimizer(const train_config *c, ct_module *model);
/* NULL (no error) when the schedule is "none"; stepped once per batch. */
ct_scheduler *setup_scheduler(const train_config *c, ct_optimizer *opt, int64_t total_steps);

#endif /* CTORCH_TRAIN_H */
