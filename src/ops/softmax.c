/*
 * softmax.c — the softmax and log_softmax front-end.
 *
 * Checks the dtype (floating only, as PyTorch's kernels) and the dim, makes
 * the input contiguous and hands the backend its [outer, dim, inner] view.
 * A 0-dim input is a slice of one element (softmax 1, log_softmax 0).
 */
#include "../autograd/autograd.h"
#include "amp/autocast.h"

ct_tensor *cti_softmax(const ct_tensor *a, int dim, bool log) {
    const char *name = log ? "log_softmax" : "softmax";
    if (!a) return NULL;
    CT_CHECK_NULL(ct_dtype_is_floating(a->dtype), CT_ERR_DTYPE,
                  "%s: \"%s\" not implemented for input of dtype %s; a floating point input is "
                  "needed", name, name, ct_dtype_name(a->dtype));
    int d;
    if (!ct_wrap_dim(name, dim, a->ndim, &d)) return NULL;

    int64_t outer = 1, size = 1, inner = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (i < d) outer *= a->shape[i];
        else if (i == d) size = a->shape[i];
        else inner *= a->shape[i];
    }
    ct_tensor *out = cti_empty(a->shape, a->ndim, a->dtype, a->storage->device);
    if (!out || outer * size * inner == 0) return out;
    ct_tensor *in = cti_contiguous(a);
    if (!in) {
        ct_decref(out);
        return NULL;
    }
    ct_kview kout = ct_kview_of(out), kin = ct_kview_of(in);
    ct_status s = CTI_BACKEND_CALL(in, softmax, name, &kout, &kin, outer, size, inner, log);
    ct_decref(in);
    if (s != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_softmax(const ct_tensor *a, int dim) {
    CTI_AUTOCAST1("softmax", a);
    return CTI_AUTOCAST_RESULT(cta_softmax(a, dim, false));
}

ct_tensor *ct_log_softmax(const ct_tensor *a, int dim) {
    CTI_AUTOCAST1("log_softmax", a);
    return CTI_AUTOCAST_RESULT(cta_softmax(a, dim, true));
}
