/*
 * test_dist.c — torch.distributed's process group and collectives over MPI
 * (ctorch/distributed.h). ctest runs it twice: alone (a world of one) and
 * under `mpirun -np 2` (test_dist_np2), where every rank checks the values
 * every other rank contributed. Values are small integers, exact in every
 * dtype, so results are compared exactly, including float16/bfloat16
 * (staged through float32), non-contiguous views and OpenCL tensors
 * (staged through host memory). Also the errors: ranks that disagree on
 * shapes (an error on every rank, naming both shapes), bad ranks, a
 * reduce_scatter that does not divide, a second init.
 * (test_dist_fail.sh covers a rank that stops or hangs.)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch/distributed.h"
#include "testutil.h"


static int rank, world;

/* [n] with element i = (rank + 1) * (i + 1), in dt on dev. */
static ct_tensor *ranked(int64_t n, ct_dtype dt, ct_device dev) {
    return ct_mul_scalar(ct_arange(1, (double)n + 1, 1, .dtype = dt, .device = dev), rank + 1);
}

static void expect_values(const char *what, ct_tensor *t, const double *want, int64_t n) {
    CT_EXPECT_MSG(t != NULL, "%s: %s", what, ct_last_error());
    if (!t) return;
    double *got = ct_test_values(t);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ < 3)
            ct_test_fail(__FILE__, __LINE__, "%s (rank %d): element %lld is %g, expected %g", what, rank,
                         (long long)i, got[i], want[i]);
    free(got);
}

static void test_init(void) {
    CT_EXPECT(ct_dist_is_available());
    CT_EXPECT(!ct_dist_is_initialized());
    CT_EXPECT_INT_EQ(ct_dist_get_rank(), -1);
    CT_EXPECT_INT_EQ(ct_dist_all_reduce(NULL, CT_DIST_SUM), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "has not been initialized");
    CT_EXPECT_INT_EQ(ct_dist_init_process_group((ct_dist_opts){.backend = "gloo"}), CT_ERR_UNSUPPORTED);
    CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "backend 'gloo' is not available (this build has: mpi");
    if (ct_device_count(CT_DEVICE_CUDA) == 0) { /* nccl wants GPUs, as PyTorch's does */
        CT_EXPECT_INT_EQ(ct_dist_init_process_group((ct_dist_opts){.backend = "nccl"}), CT_ERR_UNSUPPORTED);
        ct_clear_error();
    }
    CT_EXPECT_INT_EQ(ct_dist_init_process_group((ct_dist_opts){0}), CT_OK);
    rank = ct_dist_get_rank(), world = ct_dist_get_world_size();
    CT_EXPECT(ct_dist_is_initialized() && rank >= 0 && rank < world);
    CT_EXPECT_INT_EQ(ct_dist_init_process_group((ct_dist_opts){0}), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "trying to initialize the default process group twice!");
    printf("  rank %d of %d\n", rank, world);
}

/* Sum over ranks r of (r + 1) = world (world + 1) / 2. */
static void test_all_reduce_ops(void) {
    const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_INT64, CT_INT32, CT_BFLOAT16, CT_FLOAT16};
    const int64_t n = 12;
    double sum[12], avg[12], max[12], min[12];
    for (int64_t i = 0; i < n; i++) {
        sum[i] = (double)(i + 1) * world * (world + 1) / 2;
        max[i] = (double)(i + 1) * world, min[i] = (double)(i + 1);
        avg[i] = sum[i] / world;
    }
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) CT_SCOPE {
        const ct_device cpu = ct_device_cpu();
        ct_tensor *t[4];
        const ct_dist_reduce_op ops[4] = {CT_DIST_SUM, CT_DIST_AVG, CT_DIST_MAX, CT_DIST_MIN};
        const double *want[4] = {sum, avg, max, min};
        for (int o = 0; o < 4; o++) {
            t[o] = ranked(n, dts[k], cpu);
            CT_EXPECT_MSG(ct_dist_all_reduce(t[o], ops[o]) == CT_OK, "%s", ct_last_error());
            /* integer averages truncate */
            double w[12];
            for (int64_t i = 0; i < n; i++)
                w[i] = ct_dtype_is_floating(dts[k]) || o != 1 ? want[o][i] : (double)(int64_t)want[o][i];
            char what[64];
            snprintf(what, sizeof what, "all_reduce op %d in %s", o, ct_dtype_name(dts[k]));
            expect_values(what, t[o], w, n);
        }
    }
}

/* A transposed view and a tensor on an OpenCL device reduce in place too. */
static void test_all_reduce_layouts(void) {
    CT_SCOPE {
        ct_tensor *m = ct_reshape(ranked(6, CT_FLOAT32, ct_device_cpu()), CT_SHAPE(2, 3));
        ct_tensor *view = ct_transpose(m, 0, 1);
        CT_EXPECT(ct_dist_all_reduce(view, CT_DIST_SUM) == CT_OK);
        double want[6];
        for (int i = 0; i < 6; i++) want[i] = (double)(i + 1) * world * (world + 1) / 2;
        expect_values("all_reduce of a transposed view (through its base)", m, want, 6);
        if (ct_device_count(CT_DEVICE_OPENCL) > 0) {
            ct_device cl;
            ct_device_parse("opencl:0", &cl);
            ct_tensor *d = ranked(6, CT_FLOAT32, cl);
            CT_EXPECT_MSG(ct_dist_all_reduce(d, CT_DIST_SUM) == CT_OK, "%s", ct_last_error());
            CT_EXPECT(ct_device_of(d).type == CT_DEVICE_OPENCL);
            expect_values("all_reduce of an OpenCL tensor", d, want, 6);
        } else {
            ct_test_skip("no OpenCL device: device tensors not staged");
        }
    }
}

static void test_broadcast_gather_scatter(void) {
    CT_SCOPE {
        const ct_device cpu = ct_device_cpu();
        const int src = world - 1;
        ct_tensor *b = ranked(5, CT_INT64, cpu);
        CT_EXPECT(ct_dist_broadcast(b, src) == CT_OK);
        double want[16];
        for (int i = 0; i < 5; i++) want[i] = (double)(src + 1) * (i + 1);
        expect_values("broadcast from the last rank", b, want, 5);

        ct_tensor *out = ct_zeros(CT_SHAPE(2 * world), .dtype = CT_FLOAT64);
        CT_EXPECT(ct_dist_all_gather(out, ranked(2, CT_FLOAT64, cpu)) == CT_OK);
        for (int r = 0; r < world && r < 8; r++) want[2 * r] = r + 1, want[2 * r + 1] = 2 * (r + 1);
        expect_values("all_gather", out, want, 2 * world);

        /* input [2 * world]: element i = (rank + 1)(i + 1); rank r keeps the
         * sums of elements 2r and 2r + 1 */
        ct_tensor *rs = ct_zeros(CT_SHAPE(2), .dtype = CT_FLOAT32);
        CT_EXPECT(ct_dist_reduce_scatter(rs, ranked(2 * world, CT_FLOAT32, cpu), CT_DIST_SUM) == CT_OK);
        for (int i = 0; i < 2; i++) want[i] = (double)(2 * rank + i + 1) * world * (world + 1) / 2;
        expect_values("reduce_scatter", rs, want, 2);
        CT_EXPECT(ct_dist_barrier() == CT_OK);
    }
}

static void test_async(void) {
    CT_SCOPE {
        const int64_t n = 1 << 20;
        ct_tensor *t = ct_full(CT_SHAPE(n), rank + 1.0);
        ct_work *w = ct_dist_all_reduce_async(t, CT_DIST_SUM);
        CT_EXPECT_MSG(w != NULL, "%s", ct_last_error());
        long polls = 0;
        while (w && !ct_work_is_completed(w)) polls++;
        CT_EXPECT(w && ct_work_wait(w) == CT_OK);
        ct_work_free(w);
        const double total = (double)world * (world + 1) / 2;
        CT_EXPECT_NEAR(ct_item(ct_sum_all(t)), total * (double)n, 0.0);
        printf("  async all_reduce of %lld floats completed after %ld polls\n", (long long)n, polls);
        /* the other collectives' asynchronous forms, started together and waited in order */
        ct_tensor *b = ct_full(CT_SHAPE(4), rank + 1.0), *g = ct_zeros(CT_SHAPE(world));
        ct_tensor *rs = ct_zeros(CT_SHAPE(1)), *rsin = ct_full(CT_SHAPE(world), rank + 1.0);
        ct_work *wb = ct_dist_broadcast_async(b, 0);
        ct_work *wg = ct_dist_all_gather_async(g, ct_full(CT_SHAPE(1), rank + 1.0));
        ct_work *wr = ct_dist_reduce_scatter_async(rs, rsin, CT_DIST_MAX);
        CT_EXPECT_MSG(wb && wg && wr, "%s", ct_last_error());
        CT_EXPECT(ct_work_wait(wb) == CT_OK && ct_work_wait(wg) == CT_OK && ct_work_wait(wr) == CT_OK);
        ct_work_free(wb), ct_work_free(wg), ct_work_free(wr);
        CT_EXPECT_NEAR(ct_item(ct_sum_all(b)), 4.0, 0.0);                 /* rank 0's ones */
        CT_EXPECT_NEAR(ct_item(ct_sum_all(g)), total, 0.0);               /* 1 + 2 + ... + world */
        CT_EXPECT_NEAR(ct_item(ct_sum_all(rs)), (double)world, 0.0);      /* the largest rank's value */
    }
}

static void test_errors(void) {
    CT_SCOPE {
        /* ranks that disagree: an error on every rank, naming each rank's tensor */
        if (world > 1) {
            ct_tensor *t = ct_zeros(CT_SHAPE(3 + rank));
            CT_EXPECT_INT_EQ(ct_dist_all_reduce(t, CT_DIST_SUM), CT_ERR_SHAPE);
            CT_EXPECT_ERROR(CT_ERR_SHAPE, "rank 0 float32 [3], rank 1 float32 [4]");
            CT_EXPECT_INT_EQ(ct_dist_broadcast(ct_zeros(CT_SHAPE(2)), rank), CT_ERR_SHAPE);
            CT_EXPECT_ERROR(CT_ERR_SHAPE, "rank 0 float32 [2] (src 0), rank 1 float32 [2] (src 1)");
        }
        CT_EXPECT_INT_EQ(ct_dist_broadcast(ct_zeros(CT_SHAPE(2)), world), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid src rank");
        CT_EXPECT_INT_EQ(ct_dist_all_reduce(ct_zeros(CT_SHAPE(2)), (ct_dist_reduce_op)9), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown reduce op 9");
        CT_EXPECT_INT_EQ(ct_dist_all_reduce(NULL, CT_DIST_SUM), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "tensor is NULL");
        CT_EXPECT_INT_EQ(ct_dist_all_gather(ct_zeros(CT_SHAPE(3)), ct_zeros(CT_SHAPE(2))), CT_ERR_SHAPE);
        CT_EXPECT_ERROR(CT_ERR_SHAPE, "does not fit input of shape");
        if (world > 1) {
            CT_EXPECT_INT_EQ(ct_dist_reduce_scatter(ct_zeros(CT_SHAPE(1)), ct_zeros(CT_SHAPE(2 * world + 1)),
                                                    CT_DIST_SUM), CT_ERR_SHAPE);
            CT_EXPECT_ERROR(CT_ERR_SHAPE, "is not divisible by the world size");
        }
        CT_EXPECT_INT_EQ(ct_dist_all_reduce(ct_expand(ct_zeros(CT_SHAPE(1)), CT_SHAPE(4)), CT_DIST_SUM),
                         CT_ERR_INVALID_ARG);
        ct_clear_error();
        /* the group still works after refused calls */
        ct_tensor *ok = ct_ones(CT_SHAPE(2));
        CT_EXPECT(ct_dist_all_reduce(ok, CT_DIST_SUM) == CT_OK);
        CT_EXPECT_NEAR(ct_item(ct_sum_all(ok)), 2.0 * world, 0.0);
    }
}

/* ---- DistributedDataParallel ---- */

static ct_module *mlp(int64_t hidden) {
    return CT_SEQUENTIAL(ct_nn_linear(8, hidden, true), ct_nn_relu(), ct_nn_linear(hidden, 16, true), ct_nn_relu(),
                         ct_nn_linear(16, 4, true));
}

/* world ranks × G/world samples each, averaged by DDP, against one process
 * on all G samples: the same parameters after 3 SGD steps. Each rank starts
 * from different weights; the broadcast at wrap time makes them rank 0's. */
static void test_ddp_matches_single_process(void) {
    const int64_t global = 8 * world, local = global / world;
    ct_manual_seed(5 + (uint64_t)rank);
    ct_module *model = mlp(32);
    ct_ddp *ddp = ct_ddp_new(model, (ct_ddp_opts){.bucket_cap_mb = 0.0002}); /* ~210 bytes: 3 buckets */
    CT_EXPECT_MSG(ddp != NULL, "%s", ct_last_error());
    if (!ddp) return ct_module_free(model);
    ct_module *single = ct_module_clone(model, ct_device_cpu()); /* rank 0's weights, on every rank */
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    ct_optimizer *opt1 = ct_sgd(single, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 3; step++) CT_SCOPE {
        ct_manual_seed(100 + (uint64_t)step); /* the same global batch on every rank */
        ct_tensor *x = ct_randn(CT_SHAPE(global, 8)), *y = ct_randint(0, 4, CT_SHAPE(global));
        ct_zero_grad(opt), ct_zero_grad(opt1);
        ct_tensor *out = ct_ddp_forward(ddp, ct_narrow(x, 0, rank * local, local));
        CT_EXPECT(ct_backward(ct_cross_entropy(out, ct_narrow(y, 0, rank * local, local))) == CT_OK);
        CT_EXPECT(ct_backward(ct_cross_entropy(ct_forward(single, x), y)) == CT_OK);
        ct_step(opt), ct_step(opt1);
    }
    const double diff = ct_test_param_diff(model, single);
    CT_EXPECT_MSG(diff < 1e-5, "rank %d: DDP parameters differ from one process on the whole batch by %g", rank, diff);
    ct_ddp_stats s;
    CT_EXPECT(ct_ddp_get_stats(ddp, &s) == CT_OK);
    CT_EXPECT_INT_EQ(s.reductions, 3);
    CT_EXPECT_MSG(s.buckets >= 3, "%d buckets", s.buckets);
    /* buckets start while backward still computes the earlier layers' gradients */
    CT_EXPECT_MSG(s.launched_before_last >= 3, "%lld bucket reductions started before the last gradient",
                  (long long)s.launched_before_last);
    printf("  DDP: %d buckets, %lld of %lld all-reduces started during backward, max |diff| %.2g\n", s.buckets,
           (long long)s.launched_before_last, (long long)(3 * s.buckets), diff);

    /* no_sync: gradients stay local, nothing is reduced */
    CT_DDP_NO_SYNC(ddp) CT_SCOPE {
        ct_zero_grad(opt);
        CT_EXPECT(ct_backward(ct_sum_all(ct_ddp_forward(ddp, ct_full(CT_SHAPE(2, 8), rank + 1.0)))) == CT_OK);
    }
    CT_EXPECT(ct_ddp_get_stats(ddp, &s) == CT_OK);
    CT_EXPECT_INT_EQ(s.reductions, 3);

    /* a backward that leaves parameters without gradients: the next forward says so */
    CT_SCOPE {
        ct_zero_grad(opt);
        ct_module *first = ct_module_child(model, "0");
        CT_EXPECT(ct_backward(ct_sum_all(ct_forward(first, ct_ones(CT_SHAPE(1, 8))))) == CT_OK);
        CT_EXPECT(ct_ddp_forward(ddp, ct_ones(CT_SHAPE(1, 8))) == NULL);
        CT_EXPECT_ERROR(CT_ERR_STATE, "Expected to have finished reduction in the prior iteration");
    }
    ct_ddp_free(ddp);
    ct_optimizer_free(opt), ct_optimizer_free(opt1);
    ct_module_free(model), ct_module_free(single);
}

/* The same comparison with each rank training on its own OpenCL device
 * (rank r on opencl:r; PoCL gives each process two), the buckets staged
 * through host memory, against one process on the CPU. */
static void test_ddp_on_opencl(void) {
    const int ndev = ct_device_count(CT_DEVICE_OPENCL);
    if (ndev < 1) {
        ct_test_skip("DDP on OpenCL: no OpenCL device");
        return;
    }
    const ct_device dev = {CT_DEVICE_OPENCL, rank % ndev};
    const int64_t global = 8 * world, local = global / world;
    ct_manual_seed(21 + (uint64_t)rank);
    ct_module *model = ct_module_to(mlp(16), dev);
    ct_ddp *ddp = ct_ddp_new(model, (ct_ddp_opts){.bucket_cap_mb = 0.0002});
    CT_EXPECT_MSG(ddp != NULL, "%s", ct_last_error());
    ct_module *single = ct_module_clone(model, ct_device_cpu());
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    ct_optimizer *opt1 = ct_sgd(single, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    for (int step = 0; ddp && step < 3; step++) CT_SCOPE {
        ct_manual_seed(200 + (uint64_t)step);
        ct_tensor *x = ct_randn(CT_SHAPE(global, 8)), *y = ct_randint(0, 4, CT_SHAPE(global));
        ct_zero_grad(opt), ct_zero_grad(opt1);
        ct_tensor *xl = ct_to_device(ct_narrow(x, 0, rank * local, local), dev);
        ct_tensor *yl = ct_to_device(ct_narrow(y, 0, rank * local, local), dev);
        CT_EXPECT(ct_backward(ct_cross_entropy(ct_ddp_forward(ddp, xl), yl)) == CT_OK);
        CT_EXPECT(ct_backward(ct_cross_entropy(ct_forward(single, x), y)) == CT_OK);
        ct_step(opt), ct_step(opt1);
    }
    const double diff = ct_test_param_diff(model, single);
    CT_EXPECT_MSG(diff < 1e-5, "rank %d on opencl:%d: DDP parameters differ from one CPU process by %g", rank,
                  dev.index, diff);
    printf("  DDP on opencl:%d (rank %d): max |diff| from one CPU process %.2g\n", dev.index, rank, diff);
    ct_ddp_free(ddp);
    ct_optimizer_free(opt), ct_optimizer_free(opt1);
    ct_module_free(model), ct_module_free(single);
}

/* A module whose forward uses its first child only. */
static ct_tensor *first_only(ct_module *self, const ct_tensor *x) { return ct_forward(ct_module_child(self, "used"), x); }

static void test_ddp_find_unused_parameters(void) {
    ct_manual_seed(9);
    ct_module *m = ct_module_new("Partial", first_only, NULL, NULL);
    ct_module_add_child(m, "used", ct_nn_linear(4, 3, true));
    ct_module_add_child(m, "unused", ct_nn_linear(4, 3, true));
    ct_ddp *ddp = ct_ddp_new(m, (ct_ddp_opts){.find_unused_parameters = true, .bucket_cap_mb = 0.00001});
    CT_EXPECT_MSG(ddp != NULL, "%s", ct_last_error());
    for (int step = 0; ddp && step < 2; step++) CT_SCOPE {
        ct_tensor *x = ct_full(CT_SHAPE(2, 4), rank + 1.0);
        ct_tensor *out = ct_ddp_forward(ddp, x);
        CT_EXPECT_MSG(out != NULL, "step %d: %s", step, ct_last_error());
        CT_EXPECT(out && ct_backward(ct_sum_all(out)) == CT_OK);
        /* d/dW of sum(x W^T + b) for x = (rank + 1): every element of W's gradient is 2 (rank + 1),
         * averaged over ranks: (world + 1); the bias's is 2; the unused layer's is zero */
        ct_tensor *gw = ct_grad(ct_module_get(m, "used.weight")), *gb = ct_grad(ct_module_get(m, "used.bias"));
        ct_tensor *gu = ct_grad(ct_module_get(m, "unused.weight"));
        const double k = step + 1.0; /* gradients accumulate: no zero_grad between the steps */
        CT_EXPECT(gw && gb && gu);
        if (gw) CT_EXPECT_NEAR(ct_item(ct_max_all(gw)), k * (world + 1), 1e-6);
        if (gb) CT_EXPECT_NEAR(ct_item(ct_min_all(gb)), k * 2, 1e-6);
        if (gu) CT_EXPECT_NEAR(ct_item(ct_max_all(ct_abs(gu))), 0.0, 0.0);
    }
    ct_ddp_free(ddp);
    ct_module_free(m);
}

static void test_ddp_errors(void) {
    CT_EXPECT(ct_ddp_new(NULL, (ct_ddp_opts){0}) == NULL);
    ct_clear_error();
    if (world < 2) return;
    ct_module *m = ct_nn_linear(4, 3 + rank, true); /* the ranks' models differ */
    CT_EXPECT(ct_ddp_new(m, (ct_ddp_opts){0}) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "rank 0 float32 [3, 4] (src 0), rank 1 float32 [4, 4] (src 0)");
    ct_module_free(m);
}

/* test_dist_fail.sh's scenarios, under mpirun -np 2. "hang": rank 1 stops
 * answering for 20 s, and rank 0's all-reduce must fail with CT_ERR_TIMEOUT
 * after the group's 2 s timeout, print the error and exit non-zero (its
 * destroy then aborts the job). "exit": rank 1 dies before the all-reduce
 * that rank 0 waits in; mpirun must end rank 0. Both after three good
 * all-reduces, so the failure comes mid-run. */
static int run_failure(const char *mode) {
    if (ct_dist_init_process_group((ct_dist_opts){.timeout_s = 2.0}) != CT_OK) {
        fprintf(stderr, "init failed: %s\n", ct_last_error());
        return 2;
    }
    const int me = ct_dist_get_rank();
    ct_tensor *t = ct_ones(CT_SHAPE(4));
    for (int i = 0; i < 3; i++) /* a few good steps first: the failure comes mid-run */
        if (ct_dist_all_reduce(t, CT_DIST_SUM) != CT_OK) return 4;
    if (me == 1 && strcmp(mode, "exit") == 0) _exit(3);
    if (me == 1) sleep(20);
    ct_status st = ct_dist_all_reduce(t, CT_DIST_SUM);
    printf("rank %d: all_reduce returned %s: %s\n", me, ct_status_str(st), st ? ct_last_error() : "");
    fflush(stdout);
    ct_release(t);
    ct_dist_destroy_process_group();
    return st == CT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--fail") == 0) return run_failure(argv[2]);
    ct_test_init(argc, argv);
    CT_RUN(test_init);
    if (ct_dist_is_initialized()) {
        CT_RUN(test_all_reduce_ops);
        CT_RUN(test_all_reduce_layouts);
        CT_RUN(test_broadcast_gather_scatter);
        CT_RUN(test_async);
        CT_RUN(test_errors);
        CT_RUN(test_ddp_matches_single_process);
        CT_RUN(test_ddp_on_opencl);
        CT_RUN(test_ddp_find_unused_parameters);
        CT_RUN(test_ddp_errors);
        CT_EXPECT_INT_EQ(ct_dist_destroy_process_group(), CT_OK);
        CT_EXPECT_INT_EQ(ct_dist_init_process_group((ct_dist_opts){0}), CT_ERR_STATE);
        ct_clear_error();
    }
    return ct_test_finish();
}
