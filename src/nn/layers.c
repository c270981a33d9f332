/*
 * layers.c — the basic layers: Linear, the activation modules, Identity,
 * Flatten and Sequential, with PyTorch's default initialisation
 * (kaiming_uniform_(a=√5) for weights, U(±1/√fan_in) for biases) drawn from
 * the default generator.
 */
#include <math.h>
#include <stdlib.h>

#include "module_impl.h"
#include "amp/autocast.h"

ct_tensor *ct_linear(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias) {
    CTI_AUTOCAST3("linear", input, weight, bias);
    return CTI_AUTOCAST_RESULT(cta_linear(input, weight, bias));
}

/* U(-bound, bound) of the given shape. */
static ct_tensor *uniform(const int64_t *shape, int ndim, double bound) {
    ct_tensor *u = NULL;
    CT_SCOPE {
        ct_tensor *r = ct_rand(ct_shape_make(ndim, shape));
        u = ct_keep(ct_add_scalar(ct_mul_scalar(r, 2.0 * bound), -bound));
    }
    return u; /* outside every scope: ours; inside one: the caller's scope owns it */
}

static ct_tensor *linear_forward(ct_module *m, const ct_tensor *x) {
    return ct_linear(x, ct_module_param(m, "weight"), ct_module_param(m, "bias"));
}

ct_module *ct_nn_linear(int64_t in_features, int64_t out_features, bool bias) {
    CT_CHECK_NULL(in_features > 0 && out_features > 0, CT_ERR_INVALID_ARG,
                  "Linear: in_features and out_features must be positive, got %lld and %lld",
                  (long long)in_features, (long long)out_features);
    ct_module *m = ct_module_new("Linear", linear_forward, NULL, NULL);
    if (!m) return NULL;
    double bound = 1.0 / sqrt((double)in_features);
    int64_t wshape[2] = {out_features, in_features};
    bool ok = ct_module_add_parameter(m, "weight", uniform(wshape, 2, bound)) == CT_OK;
    if (ok && bias) ok = ct_module_add_parameter(m, "bias", uniform(&out_features, 1, bound)) == CT_OK;
    if (!ok) {
        ct_module_free(m);
        return NULL;
    }
    ct_module_set_extra_repr(m, "in_features=%lld, out_features=%lld, bias=%s", (long long)in_features,
                             (long long)out_features, bias ? "True" : "False");
    return m;
}

#define ACTIVATION(fn_name, type, op)                                                   \
    static ct_tensor *fn_name##_forward(ct_module *m, const ct_tensor *x) { return op(x); } \
    ct_module *ct_nn_##fn_name(void) { return ct_module_new(type, fn_name##_forward, NULL, NULL); }
ACTIVATION(relu, "ReLU", ct_relu)
ACTIVATION(gelu, "GELU", ct_gelu)
ACTIVATION(sigmoid, "Sigmoid", ct_sigmoid)
ACTIVATION(tanh, "Tanh", ct_tanh)

static ct_tensor *identity_forward(ct_module *m, const ct_tensor *x) { return ct_track(ct_retain((ct_tensor *)x)); }
ct_module *ct_nn_identity(void) { return ct_module_new("Identity", identity_forward, NULL, NULL); }

typedef struct flatten_state {
    int start, end;
} flatten_state;

static ct_tensor *flatten_forward(ct_module *m, const ct_tensor *x) {
    flatten_state *s = m->state;
    return ct_flatten(x, s->start, s->end);
}

ct_module *ct_nn_flatten(int start_dim, int end_dim) {
    flatten_state *s = malloc(sizeof *s);
    CT_CHECK_NULL(s != NULL, CT_ERR_OOM, "Flatten: out of memory");
    s->start = start_dim;
    s->end = end_dim;
    ct_module *m = cti_module_new_plain("Flatten", flatten_forward, s, sizeof *s);
    if (!m) return NULL;
    ct_module_set_extra_repr(m, "start_dim=%d, end_dim=%d", start_dim, end_dim);
    return m;
}

/* Each child's output feeds the next. We hold our own (untracked)
 * reference to the running value, so intermediates are released as soon as
 * the next layer has consumed them, whatever scopes the caller has open. */
static ct_tensor *sequential_forward(ct_module *m, const ct_tensor *x) {
    ct_tensor *h = ct_retain((ct_tensor *)x);
    for (int i = 0; i < m->nchildren && h; i++) {
        ct_scope_begin();
        ct_tensor *r = ct_forward(m->children[i].m, h);
        ct_tensor *next = r ? ct_retain(r) : NULL;
        ct_scope_end();
        ct_decref(h);
        h = next;
    }
    return ct_track(h);
}

ct_module *ct_nn_sequential(ct_module *const *modules, int n) {
    CT_CHECK_NULL(n >= 0 && (modules || n == 0), CT_ERR_INVALID_ARG,
                  "Sequential: expected n >= 0 modules in a non-NULL array, got n = %d%s", n,
                  modules ? "" : " and a NULL array");
    ct_module *m = ct_module_new("Sequential", sequential_forward, NULL, NULL);
    for (int i = 0; i < n; i++) {
        if (!m) {
            ct_module_free(modules[i]);
            continue;
        }
        if (ct_sequential_append(m, modules[i]) != CT_OK) {
            ct_module_free(m);
            m = NULL;
        }
    }
    return m;
}

ct_status ct_sequential_append(ct_module *seq, ct_module *child) {
    if (seq && seq->forward != sequential_forward) {
        ct_module_free(child);   /* a failed add still takes ownership, as ct_module_add_child does */
        return ct_error_set(CT_ERR_INVALID_ARG, "Sequential.append: the module is a %s, not a Sequential", seq->type);
    }
    char name[16];
    snprintf(name, sizeof name, "%d", seq ? seq->nchildren : 0);
    return ct_module_add_child(seq, name, child);
}
