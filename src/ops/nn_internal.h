/*
 * nn_internal.h — helpers shared by the nn front-ends (src/ops/nn*.c):
 * reaching the backend's nn table, PyTorch's dtype names for messages, the
 * stat dtype, and small tensor utilities. Not part of the internal API that
 * other areas use (that is nn.h).
 */
#ifndef CT_OPS_NN_INTERNAL_H
#define CT_OPS_NN_INTERNAL_H

#include "core/backend_nn.h"
#include "nn.h"

/* Call entry `fn` of t's backend's nn table, or report that the backend
 * lacks it (CT_ERR_UNSUPPORTED naming the op and the backend). */
#define CTI_NN_CALL(t, fn, opname, ...)                                                     \
    (cti_backend(t)->ops->nn && cti_backend(t)->ops->nn->fn                                 \
         ? CTI_PROFILED(t, opname, cti_backend(t)->ops->nn->fn(__VA_ARGS__))               \
         : ct_error_set(CT_ERR_UNSUPPORTED, "%s: not implemented on %s", (opname),           \
                        cti_backend(t)->name))

/* PyTorch's '"op" not implemented for 'Int'' unless t is floating. */
bool cti_nn_check_floating(const char *op, const ct_tensor *t);

/* float64 for float64, float32 for the other floating dtypes. */
static inline ct_dtype cti_nn_stat_dtype(ct_dtype dt) {
    return dt == CT_FLOAT64 ? CT_FLOAT64 : CT_FLOAT32;
}

/* A contiguous copy of t in dtype dt (t itself, retained, when it already
 * is one); NULL passes through. */
ct_tensor *cti_nn_contiguous_as(const ct_tensor *t, ct_dtype dt);

/* The kernel view of t, or NULL (for optional arguments). */
static inline const ct_kview *cti_nn_kview(const ct_tensor *t, ct_kview *storage) {
    if (!t) return NULL;
    *storage = ct_kview_of(t);
    return storage;
}

/* Whether t's shape equals shape[0..ndim). */
bool cti_nn_shape_equal(const ct_tensor *t, const int64_t *shape, int ndim);

/* Release n references (NULL entries skipped). */
void cti_nn_release(ct_tensor **ts, int n);

/* The status for a NULL tensor argument: the error already set, or a new
 * one naming op when there is none. */
ct_status cti_nn_null_status(const char *op);

/* A new handle on t's data with t's shape and strides (an alias). */
ct_tensor *cti_nn_alias(const ct_tensor *t);

#endif /* CT_OPS_NN_INTERNAL_H */
