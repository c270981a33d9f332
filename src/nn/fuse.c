/*
 * fuse.c — folding an eval-mode BatchNorm2d into the Conv2d before it, as
 * torch.nn.utils.fusion.fuse_conv_bn_eval and (for named pairs inside a
 * model) torch.ao.quantization.fuse_modules do. At inference batch norm is
 * a fixed per-channel affine map, so bn(conv(x)) is one convolution with
 *     w' = w * gamma / sqrt(var + eps)        (per output channel)
 *     b' = (b - mean) * gamma / sqrt(var + eps) + beta
 * which saves a pass over every activation of the network.
 *
 * The folding is computed in float64 on the host and rounded once to the
 * parameters' dtype, so a float32 model loses no more than one rounding per
 * parameter. Replacing children in a model is all-or-nothing: every fused
 * conv is built (and every check made) before the first child is swapped,
 * and swapping cannot fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_impl.h"

/* Long enough for any path the zoo makes ("layer4.1.downsample.0"); longer
 * paths are refused with a message rather than cut. */
#define PATH_MAX_LEN 256

/* A module's tensor under its dotted name, as messages show it: "bn.running_var". */
typedef struct fuse_arg {
    const char *who;  /* "conv", "bn" or a path in the model */
    const char *what; /* "weight", "running_mean", … */
    const ct_tensor *t;
} fuse_arg;

/* conv and bn as the messages of op name them (cname/bname): the checks
 * shared by the three entry points. */
static bool fusable(const char *op, ct_module *conv, const char *cname, ct_module *bn, const char *bname) {
    CT_CHECK_RET(cti_is_conv2d(conv), false, CT_ERR_INVALID_ARG, "%s: %s must be a Conv2d (ct_nn_conv2d), got %s",
                 op, cname, conv->type);
    double eps;
    CT_CHECK_RET(cti_batchnorm2d_eps(bn, &eps), false, CT_ERR_INVALID_ARG,
                 "%s: %s must be a BatchNorm2d (ct_nn_batchnorm2d), got %s", op, bname, bn->type);
    CT_CHECK_RET(!conv->training && !bn->training, false, CT_ERR_STATE,
                 "%s: Fusion only for eval! %s%s%s %s in training mode (call ct_module_eval first)", op,
                 conv->training ? cname : "", conv->training && bn->training ? " and " : "",
                 bn->training ? bname : "", conv->training && bn->training ? "are" : "is");
    /* The fused conv replaces conv and drops bn: children hung on either
     * would be lost (and, in a model, freed under a caller's feet). */
    CT_CHECK_RET(conv->nchildren == 0 && bn->nchildren == 0, false, CT_ERR_INVALID_ARG,
                 "%s: %s has child modules, which fusion would drop", op, conv->nchildren ? cname : bname);
    const ct_tensor *w = ct_module_param(conv, "weight");
    const ct_tensor *mean = ct_module_buffer(bn, "running_mean"), *var = ct_module_buffer(bn, "running_var");
    CT_CHECK_RET(w && ct_ndim(w) == 4, false, CT_ERR_INVALID_ARG, "%s: %s has no 4-D weight", op, cname);
    CT_CHECK_RET(mean && var, false, CT_ERR_INVALID_ARG,
                 "%s: %s has no running statistics (running_mean, running_var) to fold", op, bname);
    int64_t c = ct_size(w, 0);
    CT_CHECK_RET(ct_numel(mean) == c, false, CT_ERR_SHAPE,
                 "%s: %s has %lld output channels but %s has num_features=%lld", op, cname, (long long)c, bname,
                 (long long)ct_numel(mean));
    fuse_arg args[] = {{cname, "bias", ct_module_param(conv, "bias")}, {bname, "weight", ct_module_param(bn, "weight")},
                       {bname, "bias", ct_module_param(bn, "bias")},   {bname, "running_mean", mean},
                       {bname, "running_var", var}};
    ct_device dev = ct_device_of(w);
    ct_dtype dt = ct_dtype_of(w);
    char have[32], want[32];
    for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
        const ct_tensor *t = args[i].t;
        if (!t) continue; /* no conv bias, or a bn without affine parameters */
        CT_CHECK_RET(ct_numel(t) == c, false, CT_ERR_SHAPE, "%s: %s.%s has %lld elements, expected %lld (channels)",
                     op, args[i].who, args[i].what, (long long)ct_numel(t), (long long)c);
        CT_CHECK_RET(ct_device_equal(ct_device_of(t), dev), false, CT_ERR_DEVICE,
                     "%s: %s.%s is on %s but %s.weight is on %s (move both modules to one device first)", op,
                     args[i].who, args[i].what, ct_device_format(ct_device_of(t), have, sizeof have), cname,
                     ct_device_format(dev, want, sizeof want));
        CT_CHECK_RET(ct_dtype_of(t) == dt, false, CT_ERR_DTYPE,
                     "%s: %s.%s is %s but %s.weight is %s (fusion needs one dtype)", op, args[i].who, args[i].what,
                     ct_dtype_name(ct_dtype_of(t)), cname, ct_dtype_name(dt));
    }
    return true;
}

/* A host float64 copy of t (numel n), or NULL with the error set. */
static double *host_values(const ct_tensor *t, int64_t n) {
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    CT_CHECK_NULL(v != NULL, CT_ERR_OOM, "fuse_conv_bn: out of memory");
    if (ct_copy_to_host(t, v, CT_FLOAT64, n) != CT_OK) return free(v), NULL;
    return v;
}

/* A tensor of dtype dt on dev holding the float64 values, rounded once. */
static ct_tensor *device_tensor(const double *v, const int64_t *shape, int ndim, ct_dtype dt, ct_device dev) {
    ct_tensor *t = cti_empty(shape, ndim, dt, dev);
    if (t && ct_copy_from_host(t, v, CT_FLOAT64, ct_numel(t)) != CT_OK) ct_decref(t), t = NULL;
    return t;
}

/* The fused conv of a pair that passed fusable(). */
static ct_module *fold(ct_module *conv, ct_module *bn) {
    double eps = 0;
    cti_batchnorm2d_eps(bn, &eps);
    ct_tensor *w = ct_module_param(conv, "weight"), *b = ct_module_param(conv, "bias");
    ct_tensor *gamma = ct_module_param(bn, "weight"), *beta = ct_module_param(bn, "bias");
    int64_t c = ct_size(w, 0), n = ct_numel(w), per = c ? n / c : 0;
    /* host copies: w, b, gamma, beta, mean, var; absent ones keep their neutral value */
    double *wv = host_values(w, n), *vals[5] = {NULL};
    const ct_tensor *src[5] = {b, gamma, beta, ct_module_buffer(bn, "running_mean"),
                               ct_module_buffer(bn, "running_var")};
    const double neutral[5] = {0.0, 1.0, 0.0, 0.0, 1.0};
    bool ok = wv != NULL;
    for (int k = 0; k < 5 && ok; k++) {
        if (src[k]) ok = (vals[k] = host_values(src[k], c)) != NULL;
        else if ((ok = (vals[k] = malloc(sizeof(double) * (size_t)(c ? c : 1))) != NULL))
            for (int64_t j = 0; j < c; j++) vals[k][j] = neutral[k];
        else ct_error_set(CT_ERR_OOM, "fuse_conv_bn: out of memory");
    }
    ct_module *fused = NULL;
    if (ok) {
        double *bias = vals[0], *g = vals[1], *be = vals[2], *mu = vals[3], *var = vals[4];
        for (int64_t j = 0; j < c; j++) {
            double scale = g[j] / sqrt(var[j] + eps);
            for (int64_t i = 0; i < per; i++) wv[j * per + i] *= scale;
            bias[j] = (bias[j] - mu[j]) * scale + be[j];
        }
        ct_tensor *nw = device_tensor(wv, ct_sizes(w), 4, ct_dtype_of(w), ct_device_of(w));
        ct_tensor *nb = nw ? device_tensor(bias, &c, 1, ct_dtype_of(w), ct_device_of(w)) : NULL;
        fused = nb ? cti_conv2d_like(conv, nw, nb) : (ct_decref(nw), NULL);
    }
    free(wv);
    for (int k = 0; k < 5; k++) free(vals[k]);
    if (!fused) return NULL;
    /* PyTorch's fuse_conv_bn_weights returns Parameter(w', conv_w.requires_grad)
     * and Parameter(b', conv_b.requires_grad), where a missing conv bias is
     * zeros_like(running_mean), which requires no grad. */
    ct_set_requires_grad(ct_module_param(fused, "weight"), ct_requires_grad(w));
    ct_set_requires_grad(ct_module_param(fused, "bias"), b && ct_requires_grad(b));
    ct_module_train(fused, false);
    return fused;
}

ct_module *ct_fuse_conv_bn_eval(ct_module *conv, ct_module *bn) {
    if (!conv || !bn)
        return ct_error_pending_or(CT_ERR_INVALID_ARG, "fuse_conv_bn_eval: NULL %s", conv ? "bn" : "conv"), NULL;
    if (!fusable("fuse_conv_bn_eval", conv, "conv", bn, "bn")) return NULL;
    return fold(conv, bn);
}

/* ---- fusing inside a model ------------------------------------------------------------ */

/* One (conv, bn) pair of a model and what replaces it. */
typedef struct fuse_pair {
    ct_module *conv_parent, *bn_parent;
    const char *conv_leaf, *bn_leaf; /* child names, borrowed from the parents or the caller */
    ct_module *fused, *identity;
} fuse_pair;

static void pairs_free(fuse_pair *p, int n) {
    for (int i = 0; i < n; i++) ct_module_free(p[i].fused), ct_module_free(p[i].identity);
}

/* Build what replaces each pair; all or none (the model is not touched). */
static bool pairs_build(fuse_pair *p, int n) {
    for (int i = 0; i < n; i++) {
        p[i].fused = fold(ct_module_child(p[i].conv_parent, p[i].conv_leaf),
                          ct_module_child(p[i].bn_parent, p[i].bn_leaf));
        p[i].identity = p[i].fused ? ct_nn_identity() : NULL;
        if (!p[i].identity) {
            pairs_free(p, i + 1);
            return false;
        }
        ct_module_train(p[i].identity, false);
    }
    return true;
}

/* Swap every pair in. Each parent holds the named children (checked while
 * collecting) and no replaced module is the parent of another pair's
 * members (fusable refuses convs and bns with children), so no swap fails. */
static void pairs_apply(fuse_pair *p, int n) {
    for (int i = 0; i < n; i++) {
        cti_module_replace_child(p[i].conv_parent, p[i].conv_leaf, p[i].fused);
        cti_module_replace_child(p[i].bn_parent, p[i].bn_leaf, p[i].identity);
    }
}

/* The module at a dotted path under root, with its parent and last name;
 * the error names arg ("conv_name") and where the path stops resolving. */
static ct_module *resolve(ct_module *root, const char *path, const char *arg, ct_module **parent, const char **leaf) {
    CT_CHECK_NULL(path != NULL, CT_ERR_INVALID_ARG, "fuse_conv_bn: NULL %s", arg);
    size_t len = strlen(path);
    CT_CHECK_NULL(len > 0 && len < PATH_MAX_LEN, CT_ERR_INVALID_ARG,
                  "fuse_conv_bn: %s must be a dotted submodule path of 1 to %d characters, got \"%s\"", arg,
                  PATH_MAX_LEN - 1, path);
    ct_module *cur = root;
    const char *seg = path;
    for (;;) {
        const char *dot = strchr(seg, '.');
        size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
        char name[PATH_MAX_LEN];
        memcpy(name, seg, n);
        name[n] = '\0';
        ct_module *next = ct_module_child(cur, name);
        if (!next) {
            if (seg == path)
                ct_error_set(CT_ERR_INVALID_ARG,
                             "fuse_conv_bn: %s \"%s\" names no submodule of %s (it has no child \"%s\")", arg, path,
                             root->type, name);
            else
                ct_error_set(CT_ERR_INVALID_ARG,
                             "fuse_conv_bn: %s \"%s\" names no submodule of %s (%s \"%.*s\" has no child \"%s\")", arg,
                             path, root->type, cur->type, (int)(seg - path - 1), path, name);
            return NULL;
        }
        if (!dot) {
            *parent = cur, *leaf = seg;
            return next;
        }
        cur = next, seg = dot + 1;
    }
}

ct_status ct_module_fuse_conv_bn(ct_module *m, const char *conv_name, const char *bn_name) {
    if (!m) return ct_error_pending_or(CT_ERR_INVALID_ARG, "fuse_conv_bn: NULL module");
    fuse_pair p = {0};
    ct_module *conv = resolve(m, conv_name, "conv_name", &p.conv_parent, &p.conv_leaf);
    ct_module *bn = conv ? resolve(m, bn_name, "bn_name", &p.bn_parent, &p.bn_leaf) : NULL;
    if (!bn || !fusable("fuse_conv_bn", conv, conv_name, bn, bn_name) || !pairs_build(&p, 1)) return ct_last_status();
    pairs_apply(&p, 1);
    return CT_OK;
}

/* ---- every pair of a model -------------------------------------------------------------- */

typedef struct pair_list {
    fuse_pair *p;
    int n, cap;
    bool failed;
} pair_list;

static bool is_seq(const ct_module *m) { return !strcmp(m->type, "Sequential"); }

static void add_pair(pair_list *l, ct_module *parent, const char *conv_leaf, const char *bn_leaf) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        fuse_pair *g = realloc(l->p, sizeof *g * (size_t)cap);
        if (!g) {
            ct_error_set(CT_ERR_OOM, "fuse_conv_bn_all: out of memory");
            l->failed = true;
            return;
        }
        l->p = g, l->cap = cap;
    }
    l->p[l->n++] = (fuse_pair){parent, parent, conv_leaf, bn_leaf, NULL, NULL};
}

/* Pairs of m and below (prefix: m's dotted path plus "."), each checked by
 * fusable() under its full path, so that an error names the pair. */
static void collect(pair_list *l, ct_module *m, const char *prefix) {
    for (int i = 0; i < m->nchildren && !l->failed; i++) {
        named_child *ch = &m->children[i];
        if (!cti_is_conv2d(ch->m)) continue;
        const named_child *bn = NULL;
        double eps;
        if (is_seq(m)) {
            /* a Sequential feeds each child into the next */
            if (i + 1 < m->nchildren && cti_batchnorm2d_eps(m->children[i + 1].m, &eps)) bn = &m->children[i + 1];
        } else if (!strncmp(ch->name, "conv", 4)) {
            /* torchvision's convention: conv1 feeds bn1, conv2 feeds bn2 */
            char want[PATH_MAX_LEN];
            snprintf(want, sizeof want, "bn%s", ch->name + 4);
            for (int j = 0; j < m->nchildren && !bn; j++)
                if (!strcmp(m->children[j].name, want) && cti_batchnorm2d_eps(m->children[j].m, &eps))
                    bn = &m->children[j];
        }
        if (!bn) continue;
        char cpath[PATH_MAX_LEN], bpath[PATH_MAX_LEN];
        snprintf(cpath, sizeof cpath, "%s%s", prefix, ch->name);
        snprintf(bpath, sizeof bpath, "%s%s", prefix, bn->name);
        if (!fusable("fuse_conv_bn_all", ch->m, cpath, bn->m, bpath)) {
            l->failed = true;
            return;
        }
        add_pair(l, m, ch->name, bn->name);
    }
    for (int i = 0; i < m->nchildren && !l->failed; i++) {
        char sub[PATH_MAX_LEN];
        int w = snprintf(sub, sizeof sub, "%s%s.", prefix, m->children[i].name);
        if (w < 0 || w >= (int)sizeof sub) {
            ct_error_set(CT_ERR_INVALID_ARG, "fuse_conv_bn_all: the module tree is nested deeper than %d characters of "
                         "dotted path at \"%s\"", PATH_MAX_LEN - 1, prefix);
            l->failed = true;
            return;
        }
        collect(l, m->children[i].m, sub);
    }
}

int ct_module_fuse_conv_bn_all(ct_module *m) {
    if (!m) return ct_error_pending_or(CT_ERR_INVALID_ARG, "fuse_conv_bn_all: NULL module"), -1;
    pair_list l = {0};
    collect(&l, m, "");
    int n = -1;
    if (!l.failed && pairs_build(l.p, l.n)) {
        pairs_apply(l.p, l.n);
        n = l.n;
    }
    free(l.p);
    return n;
}
