/*
 * quantize_mlp.c — dynamic int8 quantization of a trained MLP, the C form
 * of PyTorch's
 *     model = train(nn.Sequential(Flatten(), Linear(784, 1024), ReLU(), Linear(1024, 10)))
 *     qmodel = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
 * It trains on Fashion-MNIST for a few epochs, then reports test accuracy
 * and inference time of the float and the int8 model (docs/quantization.md
 * has the figures).
 *
 *   quantize_mlp [root] [epochs]     (root: /usr/share/datasets/fashion-mnist)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ctorch/ctorch.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Accuracy (%) over the test set and the seconds spent in forward. */
static double evaluate(ct_module *model, ct_dataset *test, double *seconds) {
    ct_dataloader *loader = ct_dataloader_new(test, (ct_dataloader_opts){.batch_size = 1000});
    ct_dataloader_iter *it = ct_dataloader_iter_new(loader);
    ct_sample batch;
    int64_t correct = 0, total = 0;
    *seconds = 0;
    while (ct_dataloader_next(it, &batch)) {
        CT_SCOPE CT_NO_GRAD {
            double t0 = now();
            ct_tensor *logits = ct_forward(model, batch.t[0]);
            *seconds += now() - t0;
            ct_tensor *hit = ct_eq(ct_argmax(logits, 1, false), batch.t[1]);
            correct += (int64_t)ct_item(ct_sum_all(hit));
            total += ct_size(batch.t[1], 0);
        }
        ct_sample_clear(&batch);
    }
    ct_dataloader_iter_free(it);
    ct_dataloader_free(loader);
    return total ? 100.0 * (double)correct / (double)total : 0.0;
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    int epochs = argc > 2 ? atoi(argv[2]) : 2;
    ct_transform *norm = ct_transform_normalize1(0.2860, 0.3530);
    ct_dataset *train = ct_fashion_mnist(root, true, norm);
    ct_dataset *test = train ? ct_fashion_mnist(root, false, ct_transform_normalize1(0.2860, 0.3530)) : NULL;
    if (!test) return fprintf(stderr, "%s\n", ct_last_error()), 1;
    ct_manual_seed(0);
    const int64_t hidden[] = {1024};
    ct_module *model = ct_model_mlp(784, hidden, 1, 10);
    ct_optimizer *opt = ct_sgd(model, (ct_sgd_opts){.lr = 0.05, .momentum = 0.9});
    ct_dataloader *loader = ct_dataloader_new(train, (ct_dataloader_opts){.batch_size = 128, .shuffle = true});
    for (int e = 0; e < epochs; e++) {
        ct_dataloader_iter *it = ct_dataloader_iter_new(loader);
        ct_sample batch;
        while (ct_dataloader_next(it, &batch)) {
            CT_SCOPE {
                ct_tensor *loss = ct_cross_entropy(ct_forward(model, batch.t[0]), batch.t[1]);
                ct_zero_grad(opt);
                ct_backward(loss);
                ct_step(opt);
            }
            ct_sample_clear(&batch);
        }
        ct_dataloader_iter_free(it);
        printf("epoch %d done\n", e + 1);
    }
    ct_module_eval(model);
    double tf, tq;
    double acc_f = evaluate(model, test, &tf);
    /* torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8) */
    ct_module *qmodel = ct_quantize_dynamic(model, false);
    if (!qmodel) return fprintf(stderr, "%s\n", ct_last_error()), 1;
    double acc_q = evaluate(qmodel, test, &tq);
    printf("test accuracy  float32 %.2f %%   int8 %.2f %%\n", acc_f, acc_q);
    printf("test-set forward time  float32 %.1f ms   int8 %.1f ms\n", 1e3 * tf, 1e3 * tq);
    int rc = ct_last_status() == CT_OK ? 0 : 1;
    if (rc) fprintf(stderr, "error: %s\n", ct_last_error());
    ct_module_free(qmodel);
    ct_module_free(model);
    ct_optimizer_free(opt);
    ct_dataloader_free(loader);
    ct_dataset_free(train);
    ct_dataset_free(test);
    return rc;
}
