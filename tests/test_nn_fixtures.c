/*
 * test_nn_fixtures.c — PyTorch parity for the nn family: the forward values
 * and gradients that tools/gen_fixtures_nn.py recorded with PyTorch
 * (float64) for BatchNorm2d (training, with the running statistics it
 * leaves, and eval), max/avg/adaptive pooling, layer norm and embedding,
 * recomputed here in float64 (to 1e-10) and float32 (to ~1e-5 relative) on
 * the CPU and on the first OpenCL device when there is one.
 */
#include "nn_fixture.h"
#include "nn_testutil.h"

typedef struct fx_env {
    ct_device dev;
    ct_dtype dt;
    double rtol, atol;
} fx_env;

static fx_env g_envs[4];
static int g_nenvs;

/* Run first, as a test of its own, so that a missing OpenCL device that
 * should be there fails a test (and a genuine absence shows as a skip). */
static void test_device_envs(void) {
    g_envs[g_nenvs++] = (fx_env){ct_device_cpu(), CT_FLOAT64, 1e-10, 1e-12};
    g_envs[g_nenvs++] = (fx_env){ct_device_cpu(), CT_FLOAT32, 1e-5, 2e-6};
    if (ct_test_opencl_devices("every fixture on opencl:0") > 0) {
        g_envs[g_nenvs++] = (fx_env){ct_device_opencl(0), CT_FLOAT64, 1e-10, 1e-12};
        g_envs[g_nenvs++] = (fx_env){ct_device_opencl(0), CT_FLOAT32, 1e-5, 2e-6};
    }
}

/* Load a fixture or record a failure naming it. */
static bool load(const char *name, nf_file *f) {
    if (nf_load(__FILE__, name, f)) return true;
    ct_test_fail(__FILE__, __LINE__, "fixture %s missing or malformed (run tools/gen_fixtures_nn.py)",
                 name);
    return false;
}

/* A fixture tensor on env's device in dtype dt (tracked). */
static ct_tensor *fx_tensor(const nf_file *f, const char *name, ct_dtype dt, const fx_env *e) {
    const nf_tensor *t = nf_get(f, name);
    if (!t) {
        ct_test_fail(__FILE__, __LINE__, "fixture tensor %s missing", name);
        return NULL;
    }
    return ct_to_device(ct_tensor_from(t->values, CT_FLOAT64, t->shape, .dtype = dt), e->dev);
}

static double param(const nf_file *f, int i) { return nf_get(f, "params")->values[i]; }

/* got (tracked) against the fixture tensor `name`. */
#define FX_EXPECT(got, f, name, e)                                                          \
    do {                                                                                    \
        const nf_tensor *fx_want_ = nf_get((f), (name));                                    \
        CT_EXPECT_MSG(fx_want_ != NULL, "fixture tensor %s missing", (name));               \
        if (fx_want_) {                                                                     \
            CT_EXPECT_SHAPE((got), fx_want_->shape);                                        \
            CT_EXPECT_CLOSE((got), fx_want_->values, fx_want_->numel, (e)->rtol, (e)->atol); \
        }                                                                                   \
    } while (0)

static void check_batch_norm(const char *name) {
    nf_file f;
    if (!load(name, &f)) return;
    for (int k = 0; k < g_nenvs; k++) {
        const fx_env *e = &g_envs[k];
        CT_SCOPE {
            bool training = param(&f, 0) != 0;
            ct_tensor *x = fx_tensor(&f, "input", e->dt, e), *w = fx_tensor(&f, "weight", e->dt, e);
            ct_tensor *rm = fx_tensor(&f, "running_mean", e->dt, e);
            ct_tensor *rv = fx_tensor(&f, "running_var", e->dt, e);
            ct_tensor *sm = NULL, *si = NULL, *gi = NULL, *gw = NULL, *gb = NULL;
            ct_tensor *y = ct_track(cti_batch_norm_forward(x, rm, rv, w, fx_tensor(&f, "bias", e->dt, e),
                                                           training, param(&f, 1), param(&f, 2), &sm, &si));
            ct_track(sm), ct_track(si);
            FX_EXPECT(y, &f, "out", e);
            FX_EXPECT(rm, &f, "running_mean_after", e);
            FX_EXPECT(rv, &f, "running_var_after", e);
            CT_EXPECT_INT_EQ(cti_batch_norm_backward(fx_tensor(&f, "grad_out", e->dt, e), x, w, sm, si,
                                                     training, &gi, &gw, &gb), CT_OK);
            ct_track(gi), ct_track(gw), ct_track(gb);
            FX_EXPECT(gi, &f, "grad_input", e);
            FX_EXPECT(gw, &f, "grad_weight", e);
            FX_EXPECT(gb, &f, "grad_bias", e);
        }
    }
    nf_free(&f);
}

static void test_batch_norm_train(void) { check_batch_norm("batch_norm_train"); }
static void test_batch_norm_eval(void) { check_batch_norm("batch_norm_eval"); }

static void check_max_pool(const char *name) {
    nf_file f;
    if (!load(name, &f)) return;
    int64_t k[2] = {(int64_t)param(&f, 0), (int64_t)param(&f, 1)};
    int64_t s[2] = {(int64_t)param(&f, 2), (int64_t)param(&f, 3)};
    int64_t p[2] = {(int64_t)param(&f, 4), (int64_t)param(&f, 5)};
    int64_t d[2] = {(int64_t)param(&f, 6), (int64_t)param(&f, 7)};
    cti_pool2d_params pp = cti_pool2d_params_make(k, s, p, d, param(&f, 8) != 0, false, 0);
    for (int j = 0; j < g_nenvs; j++) {
        const fx_env *e = &g_envs[j];
        CT_SCOPE {
            ct_tensor *x = fx_tensor(&f, "input", e->dt, e), *idx = NULL;
            ct_tensor *y = ct_track(cti_max_pool2d_forward(x, &pp, &idx));
            ct_track(idx);
            FX_EXPECT(y, &f, "out", e);
            FX_EXPECT(idx, &f, "indices", e);
            ct_tensor *gi = ct_track(cti_max_pool2d_backward(fx_tensor(&f, "grad_out", e->dt, e), idx,
                                                             ct_shape_of(x), &pp));
            FX_EXPECT(gi, &f, "grad_input", e);
        }
    }
    nf_free(&f);
}

static void test_max_pool(void) {
    check_max_pool("max_pool");
    check_max_pool("max_pool_dilated");
}

static void check_avg_pool(const char *name) {
    nf_file f;
    if (!load(name, &f)) return;
    int64_t k[2] = {(int64_t)param(&f, 0), (int64_t)param(&f, 1)};
    int64_t s[2] = {(int64_t)param(&f, 2), (int64_t)param(&f, 3)};
    int64_t p[2] = {(int64_t)param(&f, 4), (int64_t)param(&f, 5)};
    cti_pool2d_params pp = cti_pool2d_params_make(k, s, p, NULL, param(&f, 6) != 0, param(&f, 7) != 0,
                                                  (int64_t)param(&f, 8));
    for (int j = 0; j < g_nenvs; j++) {
        const fx_env *e = &g_envs[j];
        CT_SCOPE {
            ct_tensor *x = fx_tensor(&f, "input", e->dt, e);
            FX_EXPECT(ct_avg_pool2d(x, k, .stride = {s[0], s[1]}, .padding = {p[0], p[1]}, .ceil_mode = pp.ceil_mode,
                                    .no_count_include_pad = !pp.count_include_pad,
                                    .divisor_override = pp.divisor_override),
                      &f, "out", e);
            ct_tensor *gi = ct_track(cti_avg_pool2d_backward(fx_tensor(&f, "grad_out", e->dt, e),
                                                             ct_shape_of(x), &pp));
            FX_EXPECT(gi, &f, "grad_input", e);
        }
    }
    nf_free(&f);
}

static void test_avg_pool(void) {
    check_avg_pool("avg_pool");
    check_avg_pool("avg_pool_pad");
    check_avg_pool("avg_pool_divisor");
}

static void check_adaptive(const char *name) {
    nf_file f;
    if (!load(name, &f)) return;
    int64_t size[2] = {(int64_t)param(&f, 0), (int64_t)param(&f, 1)};
    for (int j = 0; j < g_nenvs; j++) {
        const fx_env *e = &g_envs[j];
        CT_SCOPE {
            ct_tensor *x = fx_tensor(&f, "input", e->dt, e);
            FX_EXPECT(ct_adaptive_avg_pool2d(x, size), &f, "out", e);
            ct_tensor *gi = ct_track(
                cti_adaptive_avg_pool2d_backward(fx_tensor(&f, "grad_out", e->dt, e), ct_shape_of(x)));
            FX_EXPECT(gi, &f, "grad_input", e);
        }
    }
    nf_free(&f);
}

static void test_adaptive_pool(void) {
    check_adaptive("adaptive_pool");
    check_adaptive("adaptive_pool_up");
}

static void test_layer_norm(void) {
    nf_file f;
    if (!load("layer_norm", &f)) return;
    ct_shape ns = CT_SHAPE((int64_t)param(&f, 1), (int64_t)param(&f, 2));
    for (int j = 0; j < g_nenvs; j++) {
        const fx_env *e = &g_envs[j];
        CT_SCOPE {
            ct_tensor *x = fx_tensor(&f, "input", e->dt, e), *w = fx_tensor(&f, "weight", e->dt, e);
            ct_tensor *sm = NULL, *sr = NULL, *gi = NULL, *gw = NULL, *gb = NULL;
            ct_tensor *y = ct_track(
                cti_layer_norm_forward(x, ns, w, fx_tensor(&f, "bias", e->dt, e), param(&f, 0), &sm, &sr));
            ct_track(sm), ct_track(sr);
            FX_EXPECT(y, &f, "out", e);
            CT_EXPECT_INT_EQ(cti_layer_norm_backward(fx_tensor(&f, "grad_out", e->dt, e), x, ns, w, sm, sr,
                                                     &gi, &gw, &gb), CT_OK);
            ct_track(gi), ct_track(gw), ct_track(gb);
            FX_EXPECT(gi, &f, "grad_input", e);
            FX_EXPECT(gw, &f, "grad_weight", e);
            FX_EXPECT(gb, &f, "grad_bias", e);
        }
    }
    nf_free(&f);
}

static void test_embedding(void) {
    nf_file f;
    if (!load("embedding", &f)) return;
    int64_t padding = (int64_t)param(&f, 0);
    for (int j = 0; j < g_nenvs; j++) {
        const fx_env *e = &g_envs[j];
        CT_SCOPE {
            ct_tensor *idx = fx_tensor(&f, "indices", CT_INT64, e), *w = fx_tensor(&f, "weight", e->dt, e);
            FX_EXPECT(ct_embedding(idx, w, padding), &f, "out", e);
            ct_tensor *gw = ct_track(cti_embedding_backward(fx_tensor(&f, "grad_out", e->dt, e), idx,
                                                            ct_size(w, 0), padding));
            FX_EXPECT(gw, &f, "grad_weight", e);
        }
    }
    nf_free(&f);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_device_envs);
    CT_RUN(test_batch_norm_train);
    CT_RUN(test_batch_norm_eval);
    CT_RUN(test_max_pool);
    CT_RUN(test_avg_pool);
    CT_RUN(test_adaptive_pool);
    CT_RUN(test_layer_norm);
    CT_RUN(test_embedding);
    return ct_test_finish();
}
