/*
 * test_nn_custom.c — a user's own module, written as docs/training.md
 * shows: a forward that computes inside CT_SCOPE and passes its result out
 * with ct_keep. Called inside and outside the caller's scope, it leaks
 * nothing (the harness checks live tensors after each test), gives
 * relu(conv(x)) + x, and autograd runs through it.
 */
#include <stdlib.h>

#include "ctorch/ctorch.h"
#include "testutil.h"

static ct_tensor *block_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *out = NULL;
    CT_SCOPE {
        ct_tensor *h = ct_forward_relu(ct_module_child(m, "conv"), x);
        out = ct_keep(ct_add(h, x));
    }
    return out;
}

static ct_module *block(void) {
    ct_module *m = ct_module_new("Block", block_forward, NULL, NULL);
    if (m && ct_module_add_child(m, "conv", ct_nn_conv2d(4, 4, 3, (ct_conv2d_opts){.padding = 1})) != CT_OK) {
        ct_module_free(m);
        return NULL;
    }
    return m;
}

static void test_forward_in_a_scope(void) {
    ct_module *m = block();
    CT_EXPECT(m != NULL);
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(2, 4, 5, 5), .requires_grad = true);
        ct_tensor *y = ct_forward(m, x);
        ct_tensor *want = ct_add(ct_relu(ct_forward(ct_module_child(m, "conv"), x)), x);
        double *w = ct_test_values(want);
        CT_EXPECT_CLOSE(y, w, 200, 0, 0);
        free(w);
        CT_EXPECT_INT_EQ(ct_backward(ct_sum_all(y)), CT_OK);
        CT_EXPECT(ct_grad(x) != NULL);
    }
    ct_module_free(m);
}

static void test_forward_outside_scopes(void) {
    ct_module *m = block();
    ct_tensor *x = ct_randn(CT_SHAPE(1, 4, 3, 3));
    ct_tensor *y = ct_forward(m, x); /* ours to release */
    CT_EXPECT(y != NULL && ct_numel(y) == 36);
    ct_release(y);
    ct_release(x);
    ct_module_free(m);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_forward_in_a_scope);
    CT_RUN(test_forward_outside_scopes);
    return ct_test_finish();
}
