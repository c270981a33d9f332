/*
 * test_dist_nccl.c — the process group's "nccl" backend: CUDA tensors
 * all-reduced, broadcast, gathered and scattered by NCCL on the device (no
 * host copy), synchronously and asynchronously, against exact values, with
 * a CPU tensor in the same group still going through MPI. Runs alone (a
 * world of one, one GPU) or under mpirun with one GPU per rank; skipped
 * (exit 77) without a CUDA device or without NCCL in the build.
 */
#include <stdlib.h>

#include "ctorch/distributed.h"
#include "testutil.h"

static int rank, world;
static ct_device gpu;

static void expect_values(const char *what, ct_tensor *t, double first, double step, int64_t n) {
    CT_EXPECT_MSG(t != NULL, "%s: %s", what, ct_last_error());
    if (!t) return;
    double *v = ct_test_values(t);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (v[i] != first + step * (double)i && bad++ < 3)
            ct_test_fail(__FILE__, __LINE__, "%s (rank %d): element %lld is %g, expected %g", what, rank,
                         (long long)i, v[i], first + step * (double)i);
    free(v);
}

static void test_collectives_on_gpu(void) {
    const double tri = (double)world * (world + 1) / 2; /* sum over ranks of (rank + 1) */
    const ct_dtype dts[] = {CT_FLOAT32, CT_BFLOAT16, CT_FLOAT16, CT_INT64};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) CT_SCOPE {
        /* element i = (rank + 1)(i + 1) */
        ct_tensor *t = ct_mul_scalar(ct_arange(1, 9, 1, .dtype = dts[k], .device = gpu), rank + 1);
        CT_EXPECT_MSG(ct_dist_all_reduce(t, CT_DIST_SUM) == CT_OK, "%s", ct_last_error());
        CT_EXPECT(ct_device_of(t).type == CT_DEVICE_CUDA);
        expect_values(ct_dtype_name(dts[k]), t, tri, tri, 8);
    }
    CT_SCOPE {
        ct_tensor *b = ct_full(CT_SHAPE(5), rank + 1.0, .device = gpu);
        CT_EXPECT(ct_dist_broadcast(b, world - 1) == CT_OK);
        expect_values("broadcast", b, world, 0, 5);
        ct_tensor *out = ct_zeros(CT_SHAPE(2 * world), .device = gpu);
        CT_EXPECT(ct_dist_all_gather(out, ct_full(CT_SHAPE(2), rank + 1.0, .device = gpu)) == CT_OK);
        if (world == 1) expect_values("all_gather", out, 1, 0, 2);
        ct_tensor *rs = ct_zeros(CT_SHAPE(2), .device = gpu);
        CT_EXPECT(ct_dist_reduce_scatter(rs, ct_full(CT_SHAPE(2 * world), rank + 1.0, .device = gpu), CT_DIST_AVG) ==
                  CT_OK);
        expect_values("reduce_scatter AVG", rs, tri / world, 0, 2);
        ct_tensor *big = ct_full(CT_SHAPE(1 << 20), rank + 1.0, .device = gpu);
        ct_work *w = ct_dist_all_reduce_async(big, CT_DIST_SUM);
        CT_EXPECT_MSG(w && ct_work_wait(w) == CT_OK, "%s", ct_last_error());
        ct_work_free(w);
        CT_EXPECT_NEAR(ct_item(ct_sum_all(big)), tri * (double)(1 << 20), 0.0);
        ct_tensor *host = ct_full(CT_SHAPE(3), rank + 1.0); /* a CPU tensor: still MPI */
        CT_EXPECT(ct_dist_all_reduce(host, CT_DIST_SUM) == CT_OK);
        expect_values("cpu tensor under nccl", host, tri, 0, 3);
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    if (!ct_dist_is_available() || ct_device_count(CT_DEVICE_CUDA) < 1) {
        printf("SKIP: NCCL needs MPI and a CUDA device\n");
        return 77;
    }
    if (ct_dist_init_process_group((ct_dist_opts){.backend = "nccl", .timeout_s = 120}) != CT_OK) {
        printf("SKIP: %s\n", ct_last_error());
        return 77;
    }
    rank = ct_dist_get_rank(), world = ct_dist_get_world_size();
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    gpu = (ct_device){CT_DEVICE_CUDA, (lr ? atoi(lr) : 0) % ct_device_count(CT_DEVICE_CUDA)};
    CT_RUN(test_collectives_on_gpu);
    ct_dist_destroy_process_group();
    return ct_test_finish();
}
