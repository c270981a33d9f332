/*
 * test_optim_state.c — optimizer state_dict round trips and strict loading:
 * a restored optimizer continues bitwise like the original; a misspelt key,
 * a non-canonical or out-of-range index, a wrong shape, a bad step, a
 * partial Adam state, state the optimizer cannot have and bad metadata are
 * each refused with a message naming the entry, and leave the optimizer
 * exactly as it was; loading replaces the whole state (a parameter without
 * entries ends with none).
 */
#include "testutil.h"

#include "ctorch/io.h"

typedef struct rig {
    ct_tensor *p[2];
    ct_optimizer *opt;
} rig;

static void rig_init(rig *r, int kind, bool amsgrad) {
    CT_SCOPE {
        r->p[0] = ct_retain(ct_arange(0, 6, 1, .dtype = CT_FLOAT32));
        r->p[1] = ct_retain(ct_full(CT_SHAPE(2, 3), 0.5, .dtype = CT_FLOAT32));
    }
    for (int i = 0; i < 2; i++) ct_set_requires_grad(r->p[i], true);
    if (kind == 0) r->opt = ct_sgd_params(r->p, 2, (ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
    else if (kind == 1) r->opt = ct_adam_params(r->p, 2, (ct_adam_opts){.lr = 0.01, .amsgrad = amsgrad});
    else r->opt = ct_sgd_params(r->p, 2, (ct_sgd_opts){.lr = 0.1});
}

static void rig_free(rig *r) {
    ct_optimizer_free(r->opt);
    for (int i = 0; i < 2; i++) ct_release(r->p[i]);
}

/* One step with gradients that depend on the step number; only_first leaves
 * the second parameter without a gradient (so without state). */
static void rig_step(rig *r, int n, bool only_first) {
    CT_SCOPE {
        ct_set_grad(r->p[0], ct_mul_scalar(ct_sin(ct_arange(0, 6, 1, .dtype = CT_FLOAT32)), 1.0 + n));
        if (!only_first) ct_set_grad(r->p[1], ct_full(CT_SHAPE(2, 3), 0.25 * (n + 1), .dtype = CT_FLOAT32));
        CT_EXPECT_INT_EQ(ct_step(r->opt), CT_OK);
        ct_zero_grad(r->opt);
    }
}

/* state_dict of b equals that of a, entry by entry and in its metadata. */
static bool same_state(const ct_optimizer *a, const ct_optimizer *b) {
    ct_tensor_dict *da = ct_optimizer_state_dict(a), *db = ct_optimizer_state_dict(b);
    bool same = ct_tensor_dict_size(da) == ct_tensor_dict_size(db);
    for (int i = 0; same && i < ct_tensor_dict_size(da); i++) CT_SCOPE {
        const char *name = ct_tensor_dict_name(da, i);
        same = ct_tensor_dict_contains(db, name) && ct_equal(ct_tensor_dict_value(da, i), ct_tensor_dict_get(db, name));
    }
    same = same && !strcmp(ct_tensor_dict_get_metadata(da, "steps"), ct_tensor_dict_get_metadata(db, "steps"));
    ct_tensor_dict_free(da);
    ct_tensor_dict_free(db);
    return same;
}

static void test_round_trip_continues_bitwise(void) {
    for (int kind = 0; kind < 2; kind++) {
        rig a, b;
        rig_init(&a, kind, kind == 1);
        rig_init(&b, kind, kind == 1);
        for (int n = 0; n < 3; n++) rig_step(&a, n, false);
        ct_tensor_dict *d = ct_optimizer_state_dict(a.opt);
        CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(b.opt, d), CT_OK);
        CT_NO_GRAD for (int i = 0; i < 2; i++) CT_EXPECT_INT_EQ(ct_copy_(b.p[i], a.p[i]), CT_OK);
        CT_EXPECT(same_state(a.opt, b.opt));
        rig_step(&a, 3, false);
        rig_step(&b, 3, false);
        for (int i = 0; i < 2; i++) CT_EXPECT_MSG(ct_equal(a.p[i], b.p[i]), "kind %d parameter %d diverged", kind, i);
        CT_EXPECT_INT_EQ(ct_optimizer_step_count(b.opt), 4);
        ct_tensor_dict_free(d);
        rig_free(&a);
        rig_free(&b);
    }
}

/* Loading a dict in which `edit` changed one thing must fail with code and
 * a message containing needle, and leave the target's state untouched. */
typedef void (*edit_fn)(ct_tensor_dict *d);

static void expect_refused(int kind, bool amsgrad, edit_fn edit, ct_status code, const char *needle) {
    rig src, dst, ref;
    rig_init(&src, kind, amsgrad);
    rig_init(&dst, kind, amsgrad);
    rig_init(&ref, kind, amsgrad);
    for (int n = 0; n < 2; n++) rig_step(&src, n, false);
    rig_step(&dst, 7, true); /* the target has some state of its own */
    rig_step(&ref, 7, true);
    ct_tensor_dict *d = ct_optimizer_state_dict(src.opt);
    edit(d);
    CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(dst.opt, d), code);
    CT_EXPECT_ERROR(code, needle);
    CT_EXPECT_MSG(same_state(dst.opt, ref.opt), "a refused load changed the optimizer (%s)", needle);
    ct_tensor_dict_free(d);
    rig_free(&src);
    rig_free(&dst);
    rig_free(&ref);
}

static void rename_entry(ct_tensor_dict *d, const char *from, const char *to) {
    CT_SCOPE {
        ct_tensor *t = ct_tensor_dict_get(d, from);
        CT_EXPECT(t != NULL);
        ct_tensor_dict_remove(d, from);
        ct_tensor_dict_set(d, to, t);
    }
}

static void misspell(ct_tensor_dict *d) { rename_entry(d, "state.1.momentum_buffer", "state.1.momentum_bufer"); }
static void leading_zero(ct_tensor_dict *d) { rename_entry(d, "state.1.momentum_buffer", "state.01.momentum_buffer"); }
static void out_of_range(ct_tensor_dict *d) { rename_entry(d, "state.1.momentum_buffer", "state.2.momentum_buffer"); }
static void wrong_shape(ct_tensor_dict *d) {
    CT_SCOPE { ct_tensor_dict_set(d, "state.1.momentum_buffer", ct_zeros(CT_SHAPE(6))); }
}
static void int_buffer(ct_tensor_dict *d) {
    CT_SCOPE { ct_tensor_dict_set(d, "state.0.momentum_buffer", ct_zeros(CT_SHAPE(6), .dtype = CT_INT64)); }
}
static void fractional_step(ct_tensor_dict *d) {
    CT_SCOPE { ct_tensor_dict_set(d, "state.0.step", ct_scalar_tensor(1.5, .dtype = CT_FLOAT32)); }
}
static void zero_step(ct_tensor_dict *d) {
    CT_SCOPE { ct_tensor_dict_set(d, "state.0.step", ct_scalar_tensor(0, .dtype = CT_FLOAT32)); }
}
static void drop_momentum(ct_tensor_dict *d) { ct_tensor_dict_remove(d, "state.0.momentum_buffer"); }
static void drop_exp_avg_sq(ct_tensor_dict *d) { ct_tensor_dict_remove(d, "state.1.exp_avg_sq"); }
static void add_max_exp_avg_sq(ct_tensor_dict *d) {
    CT_SCOPE { ct_tensor_dict_set(d, "state.0.max_exp_avg_sq", ct_zeros(CT_SHAPE(6))); }
}
static void no_lr(ct_tensor_dict *d) { ct_tensor_dict_set_metadata(d, "lr", NULL); }
static void bad_steps(ct_tensor_dict *d) { ct_tensor_dict_set_metadata(d, "steps", "7x"); }
static void nan_lr(ct_tensor_dict *d) { ct_tensor_dict_set_metadata(d, "lr", "nan"); }
static void other_kind(ct_tensor_dict *d) { ct_tensor_dict_set_metadata(d, "optimizer", "Adam"); }

static void test_bad_entries_are_refused_and_change_nothing(void) {
    expect_refused(0, false, misspell, CT_ERR_FORMAT, "unexpected entry \"state.1.momentum_bufer\"");
    expect_refused(0, false, leading_zero, CT_ERR_FORMAT, "unexpected entry \"state.01.momentum_buffer\"");
    expect_refused(0, false, out_of_range, CT_ERR_FORMAT, "i from 0 to 1");
    expect_refused(0, false, wrong_shape, CT_ERR_SHAPE, "state.1.momentum_buffer has shape [6], parameter 1 has shape [2, 3]");
    expect_refused(0, false, int_buffer, CT_ERR_DTYPE, "state.0.momentum_buffer has dtype int64");
    expect_refused(0, false, fractional_step, CT_ERR_FORMAT, "state.0.step must hold one whole number >= 1");
    expect_refused(0, false, zero_step, CT_ERR_FORMAT, "with value 0");
    expect_refused(0, false, drop_momentum, CT_ERR_FORMAT, "parameter 0 has part of its state but no state.0.momentum_buffer");
    expect_refused(1, false, drop_exp_avg_sq, CT_ERR_FORMAT, "no state.1.exp_avg_sq");
    expect_refused(1, false, add_max_exp_avg_sq, CT_ERR_FORMAT, "Adam has no state \"max_exp_avg_sq\"");
    expect_refused(0, false, no_lr, CT_ERR_FORMAT, "metadata \"lr\" is missing");
    expect_refused(0, false, nan_lr, CT_ERR_FORMAT, "metadata \"lr\" is \"nan\"");
    expect_refused(0, false, bad_steps, CT_ERR_FORMAT, "metadata \"steps\" is \"7x\"");
    expect_refused(0, false, other_kind, CT_ERR_FORMAT, "the state is for Adam, this optimizer is SGD");
}

/* SGD without momentum has only steps; a momentum buffer is not its state. */
static void test_state_the_optimizer_cannot_have(void) {
    rig with, without;
    rig_init(&with, 0, false);
    rig_init(&without, 2, false);
    rig_step(&with, 0, false);
    ct_tensor_dict *d = ct_optimizer_state_dict(with.opt);
    CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(without.opt, d), CT_ERR_FORMAT);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "SGD without momentum has no state \"momentum_buffer\"");
    ct_tensor_dict_free(d);
    rig_free(&with);
    rig_free(&without);
}

/* The loaded state replaces the old one: parameter 1 had state, the dict
 * has none for it, so afterwards it has none. */
static void test_load_replaces_the_whole_state(void) {
    rig a, b;
    rig_init(&a, 1, false);
    rig_init(&b, 1, false);
    rig_step(&a, 0, true);
    rig_step(&b, 0, false);
    ct_tensor_dict *d = ct_optimizer_state_dict(a.opt);
    CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(b.opt, d), CT_OK);
    ct_tensor_dict *after = ct_optimizer_state_dict(b.opt);
    CT_EXPECT(!ct_tensor_dict_contains(after, "state.1.exp_avg") && !ct_tensor_dict_contains(after, "state.1.step"));
    CT_EXPECT(ct_tensor_dict_contains(after, "state.0.exp_avg"));
    CT_EXPECT(same_state(a.opt, b.opt));
    ct_tensor_dict_free(after);
    ct_tensor_dict_free(d);
    CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(NULL, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL optimizer");
    CT_EXPECT_INT_EQ(ct_optimizer_load_state_dict(b.opt, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL state dict");
    rig_free(&a);
    rig_free(&b);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_round_trip_continues_bitwise);
    CT_RUN(test_bad_entries_are_refused_and_change_nothing);
    CT_RUN(test_state_the_optimizer_cannot_have);
    CT_RUN(test_load_replaces_the_whole_state);
    return ct_test_finish();
}
