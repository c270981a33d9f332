/*
 * train_linear.c — the seed's basic training loop, in C; the PyTorch
 * original:
 *
 *   model = nn.Linear(10, 1).to(device)
 *   optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
 *   x = torch.randn(32, 10, device=device); y = torch.randn(32, 1, device=device)
 *   for epoch in range(100):
 *       loss = F.mse_loss(model(x), y)
 *       optimizer.zero_grad(); loss.backward(); optimizer.step()
 *       if epoch % 10 == 0: print(f"Epoch {epoch}, Loss: {loss.item():.4f}")
 *
 * Usage: train_linear [device]   (default: the best device)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>
#include <ctorch/functional.h>

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    ct_manual_seed(0);
    ct_module *model = ct_module_to(ct_nn_linear(10, 1, true), dev);
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.01});
    ct_tensor *x = ct_randn(CT_SHAPE(32, 10), .device = dev), *y = ct_randn(CT_SHAPE(32, 1), .device = dev);
    for (int epoch = 0; epoch < 100; epoch++) CT_SCOPE {
        ct_tensor *loss = ct_mse_loss(ct_forward(model, x), y);
        ct_zero_grad(opt);
        ct_backward(loss);
        ct_step(opt);
        if (epoch % 10 == 0) printf("Epoch %d, Loss: %.4f\n", epoch, ct_item(loss));
    }
    int rc = ct_last_status() == CT_OK ? 0 : 1;
    if (rc) fprintf(stderr, "error: %s\n", ct_last_error());
    ct_release(x);
    ct_release(y);
    ct_optimizer_free(opt);
    ct_module_free(model);
    return rc;
}
