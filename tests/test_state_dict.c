/*
 * test_state_dict.c — module state_dict names (torchvision's ResNet-18
 * keys), save/load round trips through safetensors, load_state_dict's
 * strict rules and messages, and exact resume of optimizer state.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/ctorch_test_%d_%s.safetensors", (int)getpid(), name);
}

static void test_resnet18_keys(void) {
    ct_module *r = ct_model_resnet18(10);
    ct_tensor_dict *d = ct_module_state_dict(r);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 122);
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 0), "conv1.weight");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 1), "bn1.weight");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 3), "bn1.running_mean");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 5), "bn1.num_batches_tracked");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 6), "layer1.0.conv1.weight");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 121), "fc.bias");
    CT_EXPECT(ct_tensor_dict_contains(d, "layer2.0.downsample.0.weight"));
    CT_EXPECT(ct_tensor_dict_contains(d, "layer4.1.bn2.running_var"));
    CT_SCOPE {
        ct_tensor *w = ct_tensor_dict_get(d, "layer3.0.downsample.1.weight");
        CT_EXPECT_SHAPE(w, CT_SHAPE(256));
        CT_EXPECT(!ct_requires_grad(w)); /* detached */
    }
    ct_tensor_dict_free(d);
    ct_module_free(r);
}

/* Entries of a's and b's state_dicts (same names, same order) that hold
 * bitwise the same values, compared here rather than with ct_equal. */
static int equal_entries(ct_module *a, ct_module *b, int *total) {
    ct_tensor_dict *da = ct_module_state_dict(a), *db = ct_module_state_dict(b);
    int n = ct_tensor_dict_size(da), same = 0;
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(db), n);
    CT_SCOPE {
        for (int i = 0; i < n && i < ct_tensor_dict_size(db); i++) {
            CT_EXPECT_STR_EQ(ct_tensor_dict_name(da, i), ct_tensor_dict_name(db, i));
            ct_tensor *ta = ct_tensor_dict_value(da, i), *tb = ct_tensor_dict_value(db, i);
            int64_t k = ct_numel(ta);
            bool eq = k == ct_numel(tb);
            double *va = ct_test_values(ta), *vb = ct_test_values(tb);
            for (int64_t j = 0; eq && j < k; j++) eq = memcmp(&va[j], &vb[j], sizeof va[j]) == 0;
            same += eq;
            free(va);
            free(vb);
        }
    }
    ct_tensor_dict_free(da);
    ct_tensor_dict_free(db);
    *total = n;
    return same;
}

/* Two differently seeded models differ in every parameter; after loading
 * one's checkpoint into the other they agree everywhere (a load that did
 * nothing would fail the second check, a model that did not differ would
 * make it meaningless). */
static void test_save_load_round_trip(void) {
    char path[256];
    tmp_path(path, sizeof path, "cnn");
    ct_manual_seed(1);
    ct_module *a = ct_model_fmnist_cnn();
    ct_manual_seed(2);
    ct_module *b = ct_model_fmnist_cnn();
    int total = 0, same = equal_entries(a, b, &total);
    CT_EXPECT_MSG(total == 8 && same == 0, "before loading, %d of %d entries already agree", same, total);
    CT_EXPECT_INT_EQ(ct_module_save(a, path), CT_OK);
    CT_EXPECT_INT_EQ(ct_module_load(b, path, true), CT_OK);
    same = equal_entries(a, b, &total);
    CT_EXPECT_MSG(same == total, "after loading, only %d of %d entries agree", same, total);
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(2, 1, 28, 28));
        CT_EXPECT(ct_equal(ct_forward(a, x), ct_forward(b, x)));
    }
    remove(path);
    ct_module_free(a);
    ct_module_free(b);
}

static void test_load_errors(void) {
    ct_module *m = CT_SEQUENTIAL(ct_nn_linear(4, 3, true), ct_nn_relu(), ct_nn_linear(3, 2, true));
    ct_tensor_dict *d = ct_module_state_dict(m);
    CT_SCOPE {
        ct_tensor_dict_set(d, "extra.weight", ct_zeros(CT_SHAPE(1)));
        CT_EXPECT(ct_module_load_state_dict(m, d, true) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_FORMAT, "Unexpected key(s) in state_dict: \"extra.weight\"");
        CT_EXPECT_INT_EQ(ct_module_load_state_dict(m, d, false), CT_OK); /* not strict: ignored */
        ct_tensor_dict_remove(d, "2.bias");
        CT_EXPECT(ct_module_load_state_dict(m, d, true) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_FORMAT, "Missing key(s) in state_dict: \"2.bias\"");
        ct_tensor_dict_set(d, "0.weight", ct_zeros(CT_SHAPE(5, 4)));
        ct_tensor *before = ct_clone(ct_module_get(m, "2.weight"));
        CT_EXPECT(ct_module_load_state_dict(m, d, false) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_FORMAT, "size mismatch for 0.weight: copying a param with shape [5, 4] from checkpoint, "
                                       "the shape in current model is [3, 4]");
        CT_EXPECT(ct_equal(before, ct_module_get(m, "2.weight"))); /* nothing changed */
    }
    ct_tensor_dict_free(d);
    ct_module_free(m);
}

static void test_old_batchnorm_checkpoint(void) {
    ct_module *bn = ct_nn_batchnorm2d(3, (ct_batchnorm_opts){0});
    ct_tensor_dict *d = ct_module_state_dict(bn);
    ct_tensor_dict_remove(d, "num_batches_tracked");
    CT_SCOPE {
        ct_forward(bn, ct_randn(CT_SHAPE(2, 3, 4, 4))); /* training: counter becomes 1 */
        CT_EXPECT_NEAR(ct_item(ct_module_get(bn, "num_batches_tracked")), 1, 0);
        CT_EXPECT_INT_EQ(ct_module_load_state_dict(bn, d, true), CT_OK);
        CT_EXPECT_NEAR(ct_item(ct_module_get(bn, "num_batches_tracked")), 0, 0);
    }
    ct_tensor_dict_free(d);
    ct_module_free(bn);
}

/* Two identical runs; one saves and reloads model + optimizer after 3 steps:
 * the next steps must be bit-identical. */
static void test_optimizer_resume_is_exact(void) {
    char mpath[256], opath[256];
    tmp_path(mpath, sizeof mpath, "model");
    tmp_path(opath, sizeof opath, "optim");
    ct_manual_seed(5);
    ct_tensor *x = ct_randn(CT_SHAPE(8, 6)), *y = ct_randn(CT_SHAPE(8, 2));
    double losses[2][6];
    for (int run = 0; run < 2; run++) {
        ct_manual_seed(9);
        ct_module *m = CT_SEQUENTIAL(ct_nn_linear(6, 5, true), ct_nn_tanh(), ct_nn_linear(5, 2, true));
        ct_optimizer *opt = ct_adamw(m, (ct_adam_opts){.lr = 0.01, .amsgrad = true});
        for (int step = 0; step < 6; step++) {
            if (run == 1 && step == 3) { /* "restart" from the checkpoint */
                ct_tensor_dict *od = ct_optimizer_state_dict(opt);
                CT_EXPECT_INT_EQ(ct_safetensors_save(opath, od), CT_OK);
                CT_EXPECT_INT_EQ(ct_module_save(m, mpath), CT_OK);
                ct_tensor_dict_free(od);
                ct_optimizer_free(opt);
                ct_module_free(m);
                ct_module *saved = CT_SEQUENTIAL(ct_nn_linear(6, 5, true), ct_nn_tanh(), ct_nn_linear(5, 2, true));
                CT_EXPECT_INT_EQ(ct_module_load(saved, mpath, true), CT_OK);
                m = CT_SEQUENTIAL(ct_nn_linear(6, 5, true), ct_nn_tanh(), ct_nn_linear(5, 2, true));
                opt = ct_adamw(m, (ct_adam_opts){.lr = 0.01, .amsgrad = true});
                int total = 0;
                CT_EXPECT_MSG(equal_entries(m, saved, &total) == 0, "a fresh model already has the saved weights");
                CT_EXPECT_INT_EQ(ct_module_load(m, mpath, true), CT_OK);
                CT_EXPECT_INT_EQ(equal_entries(m, saved, &total), total);
                ct_module_free(saved);
                ct_tensor_dict *loaded = NULL;
                CT_EXPECT_INT_EQ(ct_safetensors_load(opath, ct_device_cpu(), &loaded), CT_OK);
                CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(opt, loaded), CT_OK);
                ct_tensor_dict_free(loaded);
            }
            CT_SCOPE {
                ct_tensor *diff = ct_sub(ct_forward(m, x), y);
                ct_tensor *loss = ct_mean_all(ct_mul(diff, diff));
                ct_zero_grad(opt);
                CT_EXPECT_INT_EQ(ct_backward(loss), CT_OK);
                CT_EXPECT_INT_EQ(ct_step(opt), CT_OK);
                losses[run][step] = ct_item(loss);
            }
        }
        ct_optimizer_free(opt);
        ct_module_free(m);
    }
    for (int s = 0; s < 6; s++) CT_EXPECT_MSG(losses[0][s] == losses[1][s], "step %d: %.17g vs %.17g", s, losses[0][s], losses[1][s]);
    remove(mpath);
    remove(opath);
    ct_release(x);
    ct_release(y);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_resnet18_keys);
    CT_RUN(test_save_load_round_trip);
    CT_RUN(test_load_errors);
    CT_RUN(test_old_batchnorm_checkpoint);
    CT_RUN(test_optimizer_resume_is_exact);
    return ct_test_finish();
}
