/*
 * amp_train.c — PyTorch's automatic mixed precision recipe, in C:
 *
 *   model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
 *   opt = torch.optim.SGD(model.parameters(), lr=0.1)
 *   scaler = torch.amp.GradScaler()
 *   x = torch.randn(128, 64, device=device); y = torch.randint(0, 10, (128,), device=device)
 *   for step in range(50):
 *       opt.zero_grad()
 *       with torch.autocast(device_type=device.type):   # float16 on GPUs, bfloat16 on the CPU
 *           loss = F.cross_entropy(model(x), y)
 *       scaler.scale(loss).backward()
 *       scaler.step(opt)
 *       scaler.update()
 *
 * Usage: amp_train [device]   (default: the best device)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    ct_manual_seed(0);
    ct_module *model = ct_module_to(
        ct_nn_sequential((ct_module *[]){ct_nn_linear(64, 256, true), ct_nn_relu(), ct_nn_linear(256, 10, true)}, 3),
        dev);
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.1});
    ct_grad_scaler *scaler = ct_grad_scaler_new(.disabled = dev.type == CT_DEVICE_CPU); /* bfloat16 needs none */
    ct_tensor *x = ct_randn(CT_SHAPE(128, 64), .device = dev);
    ct_tensor *y = ct_randint(0, 10, CT_SHAPE(128), .device = dev);
    for (int step = 0; step < 50; step++) CT_SCOPE {
        ct_zero_grad(opt);
        ct_tensor *loss = NULL;
        CT_AUTOCAST(dev.type) { loss = ct_cross_entropy(ct_forward(model, x), y); }
        ct_backward(ct_grad_scaler_scale(scaler, loss));
        ct_grad_scaler_step(scaler, opt);
        ct_grad_scaler_update(scaler);
        if (step % 10 == 0) printf("step %d, loss %.4f, scale %g\n", step, ct_item(loss), ct_grad_scaler_get_scale(scaler));
    }
    int rc = ct_last_status() == CT_OK ? 0 : 1;
    if (rc) fprintf(stderr, "error: %s\n", ct_last_error());
    ct_release(x);
    ct_release(y);
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(opt);
    ct_module_free(model);
    return rc;
}
