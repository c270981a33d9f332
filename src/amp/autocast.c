/*
 * autocast.c — autocast regions (ctorch/amp.h) and the casts ops ask for
 * (autocast.h): per-thread state per device type, PyTorch's op lists per
 * device type, and the weight-cast cache.
 *
 * The lists are PyTorch's (aten/src/ATen/autocast_mode.cpp), restricted to
 * the ops ctorch has; OpenCL follows CUDA's lists, as PyTorch's other GPU
 * backends do. The cache is per thread, like the rest of the state: the
 * casts of one thread's region are that thread's to keep and drop.
 */
#include <stdlib.h>
#include <string.h>

#include "../autograd/autograd.h"
#include "autocast.h"
#include "core/internal.h"
#include "core/tensor_impl.h"

/* ---- the state ------------------------------------------------------------------------------ */

#define N_TYPES 3        /* cpu, cuda, opencl */
#define MAX_NESTING 64   /* regions open at once on a thread */

typedef struct region_state {
    bool enabled;
    ct_dtype dtype;
    bool cache;
} region_state;

typedef struct saved_region {
    ct_device_type type;
    region_state previous;
} saved_region;

_Thread_local int cti_autocast_depth;
static _Thread_local region_state t_state[N_TYPES];
static _Thread_local saved_region t_stack[MAX_NESTING];

static ct_dtype default_dtype(ct_device_type type) { return type == CT_DEVICE_CPU ? CT_BFLOAT16 : CT_FLOAT16; }

static bool valid_type(ct_device_type type) { return (unsigned)type < N_TYPES; }

/* ---- the weight-cast cache ------------------------------------------------------------------ */

typedef struct cached_cast {
    ct_tensor *source; /* a reference: keeps the key's address from being reused */
    ct_tensor *cast;
} cached_cast;

static _Thread_local cached_cast *t_cache;
static _Thread_local int t_cache_len, t_cache_cap;

static void cache_clear(void) {
    for (int i = 0; i < t_cache_len; i++) {
        ct_decref(t_cache[i].cast);
        ct_decref(t_cache[i].source);
    }
    free(t_cache);
    t_cache = NULL;
    t_cache_len = t_cache_cap = 0;
}

int cti_autocast_cache_size(void) { return t_cache_len; }

/* PyTorch caches casts of float32 leaves that require grad (parameters). */
static bool cacheable(const ct_tensor *t) {
    return t->dtype == CT_FLOAT32 && t->requires_grad && t->grad_fn == NULL;
}

static ct_tensor *cache_find(const ct_tensor *t, ct_dtype dt) {
    for (int i = 0; i < t_cache_len; i++)
        if (t_cache[i].source == t && t_cache[i].cast->dtype == dt) return ct_retain(t_cache[i].cast);
    return NULL;
}

/* Keeps a reference to cast (and to t); a full table just caches nothing. */
static void cache_add(const ct_tensor *t, ct_tensor *cast) {
    if (t_cache_len == t_cache_cap) {
        int cap = t_cache_cap ? 2 * t_cache_cap : 16;
        cached_cast *grown = realloc(t_cache, (size_t)cap * sizeof *grown);
        if (!grown) return;
        t_cache = grown;
        t_cache_cap = cap;
    }
    t_cache[t_cache_len].source = ct_retain((ct_tensor *)t);
    t_cache[t_cache_len].cast = ct_retain(cast);
    t_cache_len++;
}

/* ---- regions ------------------------------------------------------------------------------- */

ct_status ct_autocast_enter(ct_device_type type, ct_autocast_opts opts) {
    CT_CHECK_STATUS(valid_type(type), CT_ERR_INVALID_ARG, "autocast: unknown device type %d", (int)type);
    CT_CHECK_STATUS(cti_autocast_depth < MAX_NESTING, CT_ERR_INVALID_ARG,
                    "autocast: more than %d regions open at once", MAX_NESTING);
    const ct_dtype dt = opts.dtype == CT_DTYPE_DEFAULT ? default_dtype(type) : opts.dtype;
    const bool supported = dt == CT_FLOAT16 || dt == CT_BFLOAT16;
    t_stack[cti_autocast_depth].type = type;
    t_stack[cti_autocast_depth].previous = t_state[type];
    cti_autocast_depth++;
    region_state s = {!opts.disabled && supported, dt, !opts.no_cache};
    t_state[type] = s;
    if (!supported && !opts.disabled)
        return ct_error_set(CT_ERR_DTYPE,
                            "autocast: %s autocast supports float16 and bfloat16, got %s; the region "
                            "runs with autocast disabled",
                            ct_device_type_name(type), ct_dtype_name(dt));
    return CT_OK;
}

ct_status ct_autocast_exit(ct_device_type type) {
    CT_CHECK_STATUS(cti_autocast_depth > 0 && t_stack[cti_autocast_depth - 1].type == type, CT_ERR_INVALID_ARG,
                    "autocast: exit for %s, but the innermost open region is %s",
                    valid_type(type) ? ct_device_type_name(type) : "an unknown device type",
                    cti_autocast_depth > 0 ? ct_device_type_name(t_stack[cti_autocast_depth - 1].type)
                                           : "none");
    cti_autocast_depth--;
    t_state[type] = t_stack[cti_autocast_depth].previous;
    if (cti_autocast_depth == 0) cache_clear();
    return CT_OK;
}

bool ct_is_autocast_enabled(ct_device_type type) { return valid_type(type) && t_state[type].enabled; }

ct_dtype ct_get_autocast_dtype(ct_device_type type) {
    if (!valid_type(type)) return CT_DTYPE_DEFAULT;
    return cti_autocast_depth && t_state[type].dtype != CT_DTYPE_DEFAULT ? t_state[type].dtype
                                                                         : default_dtype(type);
}

/* ---- the lists ------------------------------------------------------------------------------ */

typedef enum policy { P_NONE, P_LOWER, P_FP32, P_PROMOTE, P_BANNED } policy;

typedef struct op_policy {
    const char *op;
    policy cpu, gpu; /* gpu: cuda, and opencl with it */
} op_policy;

static const op_policy k_lists[] = {
    /* the lower-precision list, on both */
    {"matmul", P_LOWER, P_LOWER},
    {"mm", P_LOWER, P_LOWER},
    {"bmm", P_LOWER, P_LOWER},
    {"linear", P_LOWER, P_LOWER},
    {"conv2d", P_LOWER, P_LOWER},
    /* losses: float32 on both (CUDA's cross_entropy is log_softmax and
     * nll_loss, both float32 there) */
    {"mse_loss", P_FP32, P_FP32},
    {"cross_entropy", P_FP32, P_FP32},
    {"nll_loss", P_FP32, P_FP32},
    {"binary_cross_entropy_with_logits", P_FP32, P_FP32},
    {"binary_cross_entropy", P_FP32, P_BANNED},
    {"prod", P_FP32, P_FP32},
    /* CUDA's float32 list (and fp32_set_opt_dtype: softmax, log_softmax, sum) */
    {"exp", P_NONE, P_FP32},
    {"expm1", P_NONE, P_FP32},
    {"log", P_NONE, P_FP32},
    {"log2", P_NONE, P_FP32},
    {"log1p", P_NONE, P_FP32},
    {"reciprocal", P_NONE, P_FP32},
    {"rsqrt", P_NONE, P_FP32},
    {"pow", P_NONE, P_FP32},
    {"softplus", P_NONE, P_FP32},
    {"layer_norm", P_NONE, P_FP32},
    {"softmax", P_NONE, P_FP32},
    {"log_softmax", P_NONE, P_FP32},
    {"sum", P_NONE, P_FP32},
    /* promote */
    {"cat", P_PROMOTE, P_NONE},
    {"stack", P_PROMOTE, P_NONE},
    {"atan2", P_NONE, P_PROMOTE},
};

static policy policy_of(const char *op, ct_device_type type) {
    for (size_t i = 0; i < sizeof k_lists / sizeof k_lists[0]; i++)
        if (strcmp(k_lists[i].op, op) == 0) return type == CT_DEVICE_CPU ? k_lists[i].cpu : k_lists[i].gpu;
    return P_NONE;
}

/* ---- casting -------------------------------------------------------------------------------- */

/* Floating, not float64, on the region's device type. */
static bool eligible(const ct_tensor *t, ct_device_type type) {
    return t && t->storage->device.type == type && ct_dtype_is_floating(t->dtype) && t->dtype != CT_FLOAT64;
}

/* t cast to dt (a new reference), through the cache for parameters going down. */
static ct_tensor *cast_to(const ct_tensor *t, ct_dtype dt, bool use_cache) {
    const bool cache = use_cache && dt != CT_FLOAT32 && cacheable(t);
    ct_tensor *c = cache ? cache_find(t, dt) : NULL;
    if (c) return c;
    c = cta_to_dtype(t, dt);
    if (c && cache) cache_add(t, c);
    return c;
}

void cti_autocast_release(int n, ct_tensor **holders) {
    for (int i = 0; i < n; i++) {
        ct_decref(holders[i]);
        holders[i] = NULL;
    }
}

bool cti_autocast(const char *op, int n, const ct_tensor **args, ct_tensor **holders) {
    for (int i = 0; i < n; i++) holders[i] = NULL;
    /* the region of the first tensor argument's device type decides */
    const ct_tensor *first = NULL;
    for (int i = 0; i < n && !first; i++) first = args[i];
    if (!first) return true;
    const ct_device_type type = first->storage->device.type;
    if (!valid_type(type) || !t_state[type].enabled) return true;
    const policy p = policy_of(op, type);
    if (p == P_NONE) return true;
    CT_CHECK_RET(p != P_BANNED, false, CT_ERR_INVALID_ARG,
                 "%s: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
                 "autocast. Many models use a sigmoid layer right before the binary cross entropy "
                 "layer. In this case, combine the two layers using "
                 "torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss. "
                 "binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast.",
                 op);
    ct_dtype target = p == P_LOWER ? t_state[type].dtype : CT_FLOAT32;
    if (p == P_PROMOTE) { /* the widest eligible input; all 16-bit and alike: stay */
        ct_dtype seen = CT_DTYPE_DEFAULT;
        bool mixed = false;
        for (int i = 0; i < n; i++)
            if (eligible(args[i], type)) {
                mixed |= seen != CT_DTYPE_DEFAULT && seen != args[i]->dtype;
                seen = seen == CT_DTYPE_DEFAULT ? args[i]->dtype : seen;
            }
        if (!mixed) return true;
    }
    for (int i = 0; i < n; i++) {
        if (!eligible(args[i], type) || args[i]->dtype == target) continue;
        holders[i] = cast_to(args[i], target, t_state[type].cache);
        if (!holders[i]) {
            cti_autocast_release(n, holders);
            return false;
        }
        args[i] = holders[i];
    }
    return true;
}

ct_tensor *cti_autocast_finish(ct_tensor *r, int n, ct_tensor **holders) {
    cti_autocast_release(n, holders);
    return ct_track(r);
}

/* ---- the elementwise front-ends ----------------------------------------------------------- */

ct_tensor *cti_ac_unary(ct_unary_op op, const ct_tensor *a, double p0, double p1) {
    if (cti_autocast_depth == 0) return cta_unary(op, a, p0, p1);
    const ct_tensor *in[1] = {a};
    ct_tensor *held[1] = {NULL};
    if (!cti_autocast(ct_unary_facts_of(op)->name, 1, in, held)) return NULL;
    ct_tensor *r = cta_unary(op, in[0], p0, p1);
    cti_autocast_release(1, held);
    return r;
}

ct_tensor *cti_ac_binary(ct_binary_op op, const ct_tensor *a, const ct_tensor *b, double alpha) {
    if (cti_autocast_depth == 0) return cta_binary(op, a, b, alpha);
    const ct_tensor *in[2] = {a, b};
    ct_tensor *held[2] = {NULL, NULL};
    if (!cti_autocast(ct_binary_facts_of(op)->name, 2, in, held)) return NULL;
    ct_tensor *r = cta_binary(op, in[0], in[1], alpha);
    cti_autocast_release(2, held);
    return r;
}

ct_tensor *cti_ac_binary_scalar(ct_binary_op op, const ct_tensor *a, double s) {
    if (cti_autocast_depth == 0) return cta_binary_scalar(op, a, s);
    const ct_tensor *in[1] = {a};
    ct_tensor *held[1] = {NULL};
    if (!cti_autocast(ct_binary_facts_of(op)->name, 1, in, held)) return NULL;
    ct_tensor *r = cta_binary_scalar(op, in[0], s);
    cti_autocast_release(1, held);
    return r;
}
