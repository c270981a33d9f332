/*
 * ddp_train.c — PyTorch's DistributedDataParallel tutorial ("Getting
 * started with DDP", the basic use case), in C. Run it with
 * `mpirun -np 2 ddp_train` (add --allow-run-as-root as root):
 *
 *   dist.init_process_group("mpi")
 *   rank = dist.get_rank()
 *   torch.manual_seed(rank)              # different weights on each rank:
 *   model = ToyModel()                   # DDP broadcasts rank 0's
 *   ddp_model = DDP(model)
 *   loss_fn = nn.MSELoss()
 *   optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
 *   for step in range(10):
 *       optimizer.zero_grad()
 *       outputs = ddp_model(torch.randn(20, 10))
 *       labels = torch.randn(20, 5)
 *       loss_fn(outputs, labels).backward()   # gradients averaged across ranks
 *       optimizer.step()
 *   dist.destroy_process_group()
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

int main(void) {
    if (ct_dist_init_process_group((ct_dist_opts){0}) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    const int rank = ct_dist_get_rank();
    ct_manual_seed((uint64_t)rank);
    ct_module *model = CT_SEQUENTIAL(ct_nn_linear(10, 10, true), ct_nn_relu(), ct_nn_linear(10, 5, true));
    ct_ddp *ddp = ct_ddp_new(model, (ct_ddp_opts){0});
    ct_optimizer *opt = ddp ? ct_sgd(model, (ct_sgd_opts){.lr = 0.001}) : NULL;
    for (int step = 0; opt && step < 10; step++) CT_SCOPE {
        ct_zero_grad(opt);
        ct_tensor *outputs = ct_ddp_forward(ddp, ct_randn(CT_SHAPE(20, 10)));
        ct_tensor *loss = ct_mse_loss(outputs, ct_randn(CT_SHAPE(20, 5)));
        ct_backward(loss);
        ct_step(opt);
        if (rank == 0 && step % 3 == 0) printf("step %d, loss on rank 0: %.4f\n", step, ct_item(loss));
    }
    int rc = ct_last_status() == CT_OK ? 0 : 1;
    if (rc) fprintf(stderr, "rank %d: %s\n", rank, ct_last_error());
    ct_optimizer_free(opt);
    ct_ddp_free(ddp);
    ct_module_free(model);
    ct_dist_destroy_process_group();
    return rc;
}
