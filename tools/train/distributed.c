/*
 * distributed.c — ctorch-train --distributed: one process per rank under
 * mpirun, the model wrapped in DistributedDataParallel, each rank training
 * on its DistributedSampler share of every epoch (PyTorch's DDP recipe).
 * Rank 0 alone prints progress and writes logs and checkpoints; every rank
 * evaluates the whole test set with the same weights, so every rank knows
 * the accuracy without another exchange.
 */
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* Joins the process group and makes every rank use rank 0's seed (a
 * random default differs per process). Other ranks' progress and reports
 * go to /dev/null; their errors still reach stderr. */
int dist_setup(train_config *c, int *rank, int *world) {
    *rank = 0, *world = 1;
    if (!c->distributed) return -1;
    if (ct_dist_init_process_group((ct_dist_opts){0}) != CT_OK) {
        fprintf(stderr, "ctorch-train: --distributed: %s\n", ct_last_error());
        return TRAIN_EXIT_USAGE;
    }
    *rank = ct_dist_get_rank(), *world = ct_dist_get_world_size();
    ct_status s = CT_OK;
    CT_SCOPE {
        ct_tensor *seed = ct_full(CT_SHAPE(1), (double)c->seed, .dtype = CT_INT64);
        s = ct_dist_broadcast(seed, 0);
        if (s == CT_OK) c->seed = (uint64_t)ct_item(seed);
    }
    if (s != CT_OK) {
        fprintf(stderr, "ctorch-train: --distributed: %s\n", ct_last_error());
        return TRAIN_EXIT_ERROR;
    }
    if (*rank != 0) {
        c->progress = PROGRESS_NONE;
        c->logdir[0] = c->metrics[0] = '\0';
        if (!freopen("/dev/null", "w", stdout)) return TRAIN_EXIT_ERROR;
    }
    return -1;
}

/* The training split's sampler: this rank's share, reshuffled each epoch. */
ct_sampler *dist_train_sampler(const train_config *c, int64_t n, int rank, int world) {
    return ct_distributed_sampler(n, world, rank, true, c->seed, false);
}

ct_data_parallel *dist_data_parallel(ct_module *model, ct_device dev, int *ndevices) {
    ct_device devs[16];
    int n = ct_device_count(dev.type);
    if (n > 16) n = 16;
    devs[0] = dev;
    for (int i = 0, k = 1; i < n && k < n; i++) /* dev first, then the others in order */
        if (i != dev.index) devs[k++] = (ct_device){dev.type, i};
    *ndevices = n;
    if (n < 2) {
        printf("--data-parallel: only one %s device: training on it alone\n", ct_device_type_name(dev.type));
        return NULL;
    }
    return ct_data_parallel_new(model, devs, n, dev);
}

void dist_teardown(const train_config *c, int rc) {
    if (c->distributed && ct_dist_is_initialized() && rc == TRAIN_EXIT_OK) ct_dist_destroy_process_group();
}
