/*
 * ctorch/prune.h — torch.nn.utils.prune: masking a module's parameter to
 * zero its less important entries (docs/pruning.md).
 *
 * Pruning parameter "weight" of a module, as PyTorch does:
 *  - the parameter is renamed "weight_orig" (the same tensor object, so an
 *    optimizer made earlier keeps training it; it moves to the end of the
 *    module's parameters) and a buffer "weight_mask" (0/1, the parameter's
 *    dtype and device) is registered; both are in the state_dict;
 *  - "weight" becomes a plain attribute, weight_orig * weight_mask,
 *    recomputed before every ct_forward of the module (PyTorch's forward
 *    pre-hook), so the layer's forward uses the masked weight and gradients
 *    reach weight_orig multiplied by the mask. ct_module_param(m, "weight")
 *    and ct_module_get return it; ct_module_parameters and the state_dict
 *    list weight_orig and weight_mask instead.
 * Pruning it again combines the masks as PyTorch's PruningContainer does
 * for unstructured pruning: the new amount applies to the entries the mask
 * still keeps, and pruned entries stay pruned.
 *
 * The amount is a fraction in [0, 1] of the entries still kept (the number
 * pruned is round(amount * kept), Python's round: halves go to even), or,
 * with the _n variants, an exact count (PyTorch's int amount). Masks are
 * computed on the host from the weight's values and copied to its device,
 * so every device gives the same mask; the forward multiply runs on the
 * device. All calls are all or nothing: on error the module is unchanged.
 */
#ifndef CTORCH_PRUNE_H
#define CTORCH_PRUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "nn.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* prune.l1_unstructured(m, name, amount): prunes the kept entries of
 * smallest |value|. Ties: the entry with the lower (row-major) index is
 * pruned first (PyTorch's topk leaves the order of ties unspecified). */
CT_API ct_status ct_prune_l1_unstructured(ct_module *m, const char *name, double amount);
CT_API ct_status ct_prune_l1_unstructured_n(ct_module *m, const char *name, int64_t count);
/* prune.random_unstructured(m, name, amount): draws one uniform number per
 * kept entry from the default generator (ct_manual_seed makes it
 * reproducible; the draw is on the CPU whatever the device) and prunes the
 * entries with the largest draws, as PyTorch's topk of rand_like. */
CT_API ct_status ct_prune_random_unstructured(ct_module *m, const char *name, double amount);
CT_API ct_status ct_prune_random_unstructured_n(ct_module *m, const char *name, int64_t count);

/* prune.custom_from_mask(m, name, mask): the new mask is the old one (all
 * ones the first time) times mask converted to the parameter's dtype, as
 * PyTorch's (a bool mask gives 0/1); mask must have the parameter's shape
 * and may be on any device. */
CT_API ct_status ct_prune_custom_from_mask(ct_module *m, const char *name, const ct_tensor *mask);

/* prune.global_unstructured(parameters, pruning_method, amount): the
 * parameters are pooled into one vector, the criterion picks the entries to
 * prune among all the kept ones, and each parameter is pruned by its share
 * (as custom_from_mask). A (module, name) pair may appear once. */
typedef enum ct_prune_method {
    CT_PRUNE_L1 = 0,     /* prune.L1Unstructured */
    CT_PRUNE_RANDOM = 1, /* prune.RandomUnstructured */
} ct_prune_method;
typedef struct ct_prune_target {
    ct_module *module;
    const char *name;
} ct_prune_target;
CT_API ct_status ct_prune_global_unstructured(const ct_prune_target *targets, int n, ct_prune_method method,
                                              double amount);
CT_API ct_status ct_prune_global_unstructured_n(const ct_prune_target *targets, int n, ct_prune_method method,
                                                int64_t count);

/* prune.remove(m, name): makes the pruning permanent. The tensor that was
 * weight_orig becomes the parameter "weight" again (the same object, at the
 * end of the parameters), holding weight_orig * weight_mask; the mask buffer
 * and the attribute go away. */
CT_API ct_status ct_prune_remove(ct_module *m, const char *name);
/* prune.is_pruned(m): whether m or any module under it has a pruned
 * parameter. NULL: false, with an error set. */
CT_API bool ct_prune_is_pruned(const ct_module *m);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_PRUNE_H */
