/*
 * fashion_mnist.c — the classic PyTorch Fashion-MNIST loop, in C:
 *
 *   tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])
 *   train = datasets.FashionMNIST(root, train=True, transform=tf)
 *   loader = DataLoader(train, batch_size=128, shuffle=True, num_workers=2, pin_memory=True)
 *   model = CNN().to(device); opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
 *   for epoch in range(1):
 *       for x, y in loader:
 *           x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
 *           loss = F.cross_entropy(model(x), y)
 *           opt.zero_grad(); loss.backward(); opt.step()
 *
 * (ToTensor is built into the dataset: samples are float [1,28,28] in [0,1].)
 * Usage: fashion_mnist [data-dir] [device] [max-steps]
 * tools/train/ is the complete program (evaluation, checkpoints, logs).
 */
#include <stdio.h>
#include <stdlib.h>

#include <ctorch/ctorch.h>

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    ct_device dev = ct_device_cpu();
    if (argc > 2 && ct_device_parse(argv[2], &dev) != CT_OK) return fprintf(stderr, "%s\n", ct_last_error()), 2;
    int max_steps = argc > 3 ? atoi(argv[3]) : 100;

    ct_dataset *train = ct_fashion_mnist(root, true, ct_transform_normalize1(0.2860, 0.3530));
    if (!train) return fprintf(stderr, "%s\n", ct_last_error()), 1;
    ct_dataloader *loader = ct_dataloader_new(train, (ct_dataloader_opts){
        .batch_size = 128, .shuffle = true, .num_workers = 2, .pin_memory = dev.type != CT_DEVICE_CPU});
    ct_manual_seed(0);
    ct_module *model = ct_module_to(ct_model_fmnist_cnn(), dev);
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.05, .momentum = 0.9});

    ct_dataloader_iter *it = ct_dataloader_iter_new(loader);
    ct_sample batch;
    for (int step = 0; step < max_steps && ct_dataloader_next(it, &batch); step++) {
        CT_SCOPE {
            ct_tensor *x = ct_to_device_nb(batch.t[0], dev, true), *y = ct_to_device_nb(batch.t[1], dev, true);
            ct_tensor *loss = ct_cross_entropy(ct_forward(model, x), y);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
            if (step % 20 == 0) printf("step %3d  loss %.4f\n", step, ct_item(loss));
        }
        ct_sample_clear(&batch);
    }
    int rc = ct_last_status() == CT_OK ? 0 : 1;
    if (rc) fprintf(stderr, "error: %s\n", ct_last_error());
    ct_dataloader_iter_free(it);
    ct_dataloader_free(loader);
    ct_optimizer_free(opt);
    ct_module_free(model);
    ct_dataset_free(train);
    return rc;
}
