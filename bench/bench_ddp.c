/*
 * bench_ddp.c — W4 (the Fashion-MNIST CNN's training step, batch 128 per
 * process) under DistributedDataParallel, for issue 17's scaling figures.
 * Run it under mpirun; with one process it is plain DDP over a world of
 * one. Rank 0 prints:
 *
 *   W4-ddp <N> procs (img/s per process): …    steps of 128 images on each rank
 *   W4-ddp <N> procs (img/s total): …
 *   W4-ddp all-reduce alone (ms per step): …   the step's gradients all-reduced
 *                                              outside backward (blocking)
 *   W4-ddp all-reduce exposed (ms per step): … waiting after backward's last gradient
 *   W4-ddp all-reduce hidden (%): …            1 - exposed / alone
 *
 * Usage: mpirun -np N bench_ddp [threads per process] [bucket MiB]
 * (bench/run-ddp.sh runs 1 and 2 processes beside bench_train's W4.)
 */
#include "bench_common.h" /* first: it sets _POSIX_C_SOURCE */

#include <stdlib.h>

#include <ctorch/ctorch.h>

#define BATCH 128
#define WARM 3
#define STEPS 20

typedef struct ctx {
    ct_ddp *ddp;
    ct_optimizer *opt;
    ct_tensor *x, *y;
} ctx;

static bool step(ctx *c) {
    CT_SCOPE {
        ct_zero_grad(c->opt);
        ct_backward(ct_cross_entropy(ct_ddp_forward(c->ddp, c->x), c->y));
        ct_step(c->opt);
    }
    return ct_last_status() == CT_OK;
}

/* Seconds to all-reduce every gradient once, blocking, bucket by bucket as
 * DDP would (one tensor of the model's size stands for the buckets). */
static double allreduce_alone_s(ct_module *model) {
    double best = 1e9;
    CT_SCOPE {
        ct_tensor *flat = ct_zeros(CT_SHAPE(ct_module_num_parameters(model)));
        for (int i = 0; i < 10; i++) {
            ct_dist_barrier();
            double t = bench_now();
            ct_dist_all_reduce(flat, CT_DIST_AVG);
            t = bench_now() - t;
            if (t < best) best = t;
        }
    }
    return best;
}

int main(int argc, char **argv) {
    const char *threads = argc > 1 ? argv[1] : "1";
    bench_ensure_threads(argv, threads);
    if (ct_dist_init_process_group((ct_dist_opts){0}) != CT_OK) {
        fprintf(stderr, "bench_ddp: %s\n", ct_last_error());
        return 1;
    }
    const int rank = ct_dist_get_rank(), world = ct_dist_get_world_size();
    ct_manual_seed(1);
    ct_module *model = ct_model_fmnist_cnn();
    ct_ddp *ddp = ct_ddp_new(model, (ct_ddp_opts){.bucket_cap_mb = argc > 2 ? atof(argv[2]) : 0});
    ctx c = {ddp, ddp ? ct_sgd(model, (ct_sgd_opts){.lr = 0.01, .momentum = 0.9}) : NULL, NULL, NULL};
    c.x = ct_randn(CT_SHAPE(BATCH, 1, 28, 28)), c.y = ct_randint(0, 10, CT_SHAPE(BATCH));
    bool ok = c.opt != NULL;
    for (int i = 0; ok && i < WARM; i++) ok = step(&c);
    ct_ddp_stats before = {0}, after = {0};
    ct_ddp_get_stats(ddp, &before);
    ct_dist_barrier();
    double t = bench_now();
    for (int i = 0; ok && i < STEPS; i++) ok = step(&c);
    t = bench_now() - t;
    ct_ddp_get_stats(ddp, &after);
    const double alone = ok ? allreduce_alone_s(model) : 0;
    if (!ok) fprintf(stderr, "bench_ddp (rank %d): %s\n", rank, ct_last_error());
    if (ok && rank == 0) {
        const double exposed = (after.wait_s - before.wait_s) / STEPS, per = BATCH * STEPS / t;
        printf("# ctorch %s, %d processes x %s threads, %d buckets, %lld all-reduces started during backward\n",
               CTORCH_VERSION_STRING, world, threads, after.buckets,
               (long long)(after.launched_before_last - before.launched_before_last));
        printf("W4-ddp %d procs (img/s per process): %.1f\n", world, per);
        printf("W4-ddp %d procs (img/s total): %.1f\n", world, per * world);
        printf("W4-ddp all-reduce alone (ms per step): %.3f\n", alone * 1e3);
        printf("W4-ddp all-reduce exposed (ms per step): %.3f\n", exposed * 1e3);
        printf("W4-ddp all-reduce hidden (%%): %.1f\n", alone > 0 ? 100.0 * (1.0 - exposed / alone) : 0.0);
    }
    ct_release(c.x), ct_release(c.y);
    ct_optimizer_free(c.opt);
    ct_ddp_free(ddp);
    ct_module_free(model);
    ct_dist_destroy_process_group();
    return ok ? 0 : 1;
}
