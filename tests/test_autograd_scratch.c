/*
 * test_autograd_scratch.c — the scratch list that owns a backward formula's
 * temporaries (src/autograd/rules_util.h): past its inline slots it grows
 * instead of dropping (and leaking) a temporary, every temporary is
 * released by scratch_free, and a NULL marks the formula failed.
 */
#include "autograd/rules_util.h"
#include "testutil.h"

static void test_many_temporaries(void) {
    const int64_t before = ct_live_storages();
    scratch s = {0};
    ct_tensor *last = NULL;
    for (int i = 0; i < 3 * CT_SCRATCH_INLINE + 5; i++) {
        ct_tensor *x = ct_test_tensor((double[]){1.0 * i}, CT_SHAPE(1), CT_FLOAT32);
        last = own(&s, cti_binary_scalar(CT_BIN_ADD, x, 1.0));
        ct_release(x);
    }
    CT_EXPECT(!s.failed);
    CT_EXPECT_INT_EQ(s.n + s.n_more, 3 * CT_SCRATCH_INLINE + 5);
    CT_EXPECT(last != NULL && ct_item(last) == 3.0 * CT_SCRATCH_INLINE + 5.0);
    scratch_free(&s);
    CT_EXPECT_INT_EQ(s.n + s.n_more, 0);
    CT_EXPECT_INT_EQ(ct_live_storages(), before); /* nothing kept, nothing leaked */
}

static void test_null_marks_failed(void) {
    scratch s = {0};
    CT_EXPECT(own(&s, NULL) == NULL);
    CT_EXPECT(s.failed);
    scratch_free(&s);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_many_temporaries);
    CT_RUN(test_null_marks_failed);
    return ct_test_finish();
}
