/*
 * nn.c — the nn family's shared helpers, dropout and embedding.
 *
 * Dropout draws its keep-mask from the default Philox generator through the
 * backend's dropout_mask entry (same bits on every device for one seed) and
 * scales with masked_scale, which its backward reuses.
 * Embedding's forward is the backend's index_select over weight's rows;
 * its backward is a deterministic index-add: the indices are read to the
 * host once, counting-sorted into per-row lists (offsets, positions), and
 * the backend sums each row's list in order — no atomics on any device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "nn_internal.h"

/* ---- shared helpers ------------------------------------------------------------------ */

bool cti_nn_check_floating(const char *op, const ct_tensor *t) {
    CT_CHECK_RET(ct_dtype_is_floating(t->dtype), false, CT_ERR_DTYPE,
                 "\"%s\" not implemented for '%s'", op, cti_scalar_type_name(t->dtype));
    return true;
}

ct_tensor *cti_nn_contiguous_as(const ct_tensor *t, ct_dtype dt) {
    if (!t) return NULL;
    ct_tensor *cast = cti_cast(t, dt);
    ct_tensor *out = cti_contiguous(cast);
    ct_decref(cast);
    return out;
}

bool cti_nn_shape_equal(const ct_tensor *t, const int64_t *shape, int ndim) {
    if (t->ndim != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != shape[i]) return false;
    return true;
}

void cti_nn_release(ct_tensor **ts, int n) {
    for (int i = 0; i < n; i++) {
        ct_decref(ts[i]);
        ts[i] = NULL;
    }
}

ct_status cti_nn_null_status(const char *op) {
    ct_status s = ct_last_status();
    return s != CT_OK ? s : ct_error_set(CT_ERR_INVALID_ARG, "%s: a required tensor is NULL", op);
}

ct_tensor *cti_nn_alias(const ct_tensor *t) {
    return t ? ct_tensor_view_of(t, t->shape, t->strides, t->ndim, t->offset) : NULL;
}

/* ---- dropout -------------------------------------------------------------------------- */

/* The keep test of backend_nn.h: a 24-bit uniform draw below the threshold,
 * i.e. u < 1 - p exactly for u on the 2^-24 grid. */
static uint32_t keep_threshold(double p) {
    double t = ceil((1.0 - p) * 16777216.0);
    return t <= 0 ? 0u : t >= 16777216.0 ? 16777216u : (uint32_t)t;
}

static double dropout_scale(double p) { return p >= 1.0 ? 0.0 : 1.0 / (1.0 - p); }

/* out = in * mask * scale through the backend (all contiguous). */
static ct_tensor *masked_scale(const char *op, const ct_tensor *in, const ct_tensor *mask,
                               double scale) {
    ct_tensor *x = cti_contiguous(in), *m = cti_contiguous(mask);
    ct_tensor *out = x && m ? cti_empty_like(x) : NULL;
    ct_status st = out ? CT_OK : ct_last_status();
    if (out && ct_shape_numel(out->shape, out->ndim) > 0) {
        ct_kview ko = ct_kview_of(out), kx = ct_kview_of(x), km = ct_kview_of(m);
        st = CTI_NN_CALL(out, masked_scale, op, &ko, &kx, &km, scale);
    }
    ct_decref(x);
    ct_decref(m);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* The keep-mask for p in (0, 1): Philox draws reserved from the default
 * generator; p == 1 keeps nothing and draws nothing (as PyTorch). */
static ct_tensor *dropout_mask(const ct_tensor *input, double p) {
    ct_tensor *mask = cti_empty(input->shape, input->ndim, CT_BOOL, input->storage->device);
    int64_t n = ct_shape_numel(input->shape, input->ndim);
    if (!mask || n == 0) return mask;
    ct_status st;
    if (p >= 1.0) {
        st = cti_fill(mask, 0.0);
    } else {
        uint64_t seed, offset;
        cti_rng_reserve((uint64_t)n, &seed, &offset);
        ct_kview km = ct_kview_of(mask);
        st = CTI_NN_CALL(mask, dropout_mask, "dropout", &km, seed, offset, keep_threshold(p));
    }
    if (st != CT_OK) {
        ct_decref(mask);
        return NULL;
    }
    return mask;
}

ct_tensor *cti_dropout_forward(const ct_tensor *input, double p, bool training,
                               ct_tensor **mask) {
    if (mask) *mask = NULL;
    if (!input) return NULL;
    CT_CHECK_NULL(p >= 0.0 && p <= 1.0, CT_ERR_INVALID_ARG,
                  "dropout probability has to be between 0 and 1, but got %g", p);
    if (!training || p == 0.0) return cti_nn_alias(input);
    CT_CHECK_NULL(ct_dtype_is_floating(input->dtype), CT_ERR_DTYPE,
                  "dropout: result type Float can't be cast to the desired output type %s",
                  cti_scalar_type_name(input->dtype));
    ct_tensor *m = dropout_mask(input, p);
    ct_tensor *out = m ? masked_scale("dropout", input, m, dropout_scale(p)) : NULL;
    if (out && mask) *mask = m;
    else ct_decref(m);
    return out;
}

ct_tensor *cti_dropout_backward(const ct_tensor *grad_output, const ct_tensor *mask, double p) {
    if (!grad_output) return NULL;
    if (!mask) return cti_nn_alias(grad_output);
    if (!cti_nn_check_floating("dropout_backward", grad_output)) return NULL;
    const ct_tensor *both[2] = {grad_output, mask};
    if (!ct_check_same_device("dropout_backward", both, 2)) return NULL;
    CT_CHECK_NULL(mask->dtype == CT_BOOL, CT_ERR_DTYPE,
                  "dropout_backward: expected a bool mask, but got %s", ct_dtype_name(mask->dtype));
    if (!cti_nn_shape_equal(mask, grad_output->shape, grad_output->ndim)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE, "dropout_backward: mask of shape %s does not match grad_output %s",
                     ct_shape_str(mask->shape, mask->ndim, a, sizeof a),
                     ct_shape_str(grad_output->shape, grad_output->ndim, b, sizeof b));
        return NULL;
    }
    return masked_scale("dropout_backward", grad_output, mask, dropout_scale(p));
}

ct_tensor *ct_dropout(const ct_tensor *input, double p, bool training) {
    return ct_track(cta_dropout(input, p, training));
}

/* ---- embedding ------------------------------------------------------------------------ */

bool cti_embedding_padding_idx(int64_t padding_idx, int64_t num_embeddings, int64_t *resolved) {
    if (padding_idx == CT_NO_PADDING_IDX) {
        *resolved = -1;
        return true;
    }
    CT_CHECK_RET(padding_idx < num_embeddings && padding_idx >= -num_embeddings, false,
                 CT_ERR_INVALID_ARG, "embedding: Padding_idx must be within num_embeddings");
    *resolved = padding_idx < 0 ? padding_idx + num_embeddings : padding_idx;
    return true;
}

/* The indices as contiguous int64 values on the host (malloc'd; the caller
 * frees), read back from a device when needed. */
static int64_t *host_indices(const ct_tensor *idx64, int64_t n) {
    int64_t *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    CT_CHECK_NULL(buf, CT_ERR_OOM, "embedding: out of memory reading %lld indices", (long long)n);
    if (n > 0 && ct_copy_to_host(idx64, buf, CT_INT64, n) != CT_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static bool check_indices_dtype(const char *op, const ct_tensor *indices) {
    CT_CHECK_RET(indices->dtype == CT_INT64 || indices->dtype == CT_INT32, false, CT_ERR_DTYPE,
                 "%s: Expected tensor for argument #1 'indices' to have one of the following "
                 "scalar types: Long, Int; but got %s instead (while checking arguments for "
                 "embedding)", op, cti_scalar_type_name(indices->dtype));
    return true;
}

/* Contiguous int64 copy of the indices with every value in [0, v); their
 * host values go to *vals_out (caller frees) when it is not NULL. */
static ct_tensor *checked_indices(const char *op, const ct_tensor *indices, int64_t v,
                                  int64_t **vals_out) {
    ct_tensor *idx = cti_nn_contiguous_as(indices, CT_INT64);
    if (!idx) return NULL;
    int64_t n = ct_shape_numel(idx->shape, idx->ndim);
    int64_t *vals = host_indices(idx, n);
    bool ok = vals != NULL;
    for (int64_t i = 0; ok && i < n; i++)
        if (vals[i] < 0 || vals[i] >= v) {
            ct_error_set(CT_ERR_INDEX, "%s: index out of range in self (index %lld, %lld rows)", op,
                         (long long)vals[i], (long long)v);
            ok = false;
        }
    if (ok && vals_out) *vals_out = vals;
    else free(vals);
    if (!ok) {
        ct_decref(idx);
        return NULL;
    }
    return idx;
}

ct_tensor *cti_embedding_forward(const ct_tensor *indices, const ct_tensor *weight) {
    if (!indices || !weight) return NULL;
    const ct_tensor *both[2] = {indices, weight};
    if (!ct_check_same_device("embedding", both, 2)) return NULL;
    if (!check_indices_dtype("embedding", indices)) return NULL;
    CT_CHECK_NULL(weight->ndim == 2, CT_ERR_SHAPE, "embedding: 'weight' must be 2-D, got %d-D",
                  weight->ndim);
    CT_CHECK_NULL(indices->ndim < CT_MAX_DIMS, CT_ERR_SHAPE,
                  "embedding: indices have %d dims; the result would exceed %d", indices->ndim,
                  CT_MAX_DIMS);
    const int64_t v = weight->shape[0], d = weight->shape[1];
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = d;
    ct_tensor *idx = checked_indices("embedding", indices, v, NULL);
    if (!idx) return NULL;
    ct_tensor *out = cti_empty(shape, indices->ndim + 1, weight->dtype, weight->storage->device);
    int64_t n = ct_shape_numel(indices->shape, indices->ndim);
    if (!out || n * d == 0) {
        ct_decref(idx);
        return out;
    }
    ct_tensor *w = cti_contiguous(weight);
    ct_status st = w ? CT_OK : ct_last_status();
    if (w) {
        /* index_select over dim 1 of [1, V, D] with the flattened indices */
        ct_kview ko = ct_kview_of(out), kw = ct_kview_of(w), ki = ct_kview_of(idx);
        ko.ndim = 3, ko.shape[0] = 1, ko.shape[1] = n, ko.shape[2] = d;
        ko.strides[0] = n * d, ko.strides[1] = d, ko.strides[2] = 1;
        kw.ndim = 3, kw.shape[0] = 1, kw.shape[1] = v, kw.shape[2] = d;
        kw.strides[0] = v * d, kw.strides[1] = d, kw.strides[2] = 1;
        ki.ndim = 1, ki.shape[0] = n, ki.strides[0] = 1;
        st = CTI_BACKEND_CALL(out, index_select, "embedding", &ko, &kw, &ki, 1, v, d);
    }
    ct_decref(w);
    ct_decref(idx);
    if (st != CT_OK) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

/* An int64 tensor on dev holding vals[0..n). */
static ct_tensor *int64_tensor(const int64_t *vals, int64_t n, ct_device dev) {
    ct_tensor *t = cti_empty(&n, 1, CT_INT64, dev);
    if (t && n > 0 && ct_copy_from_host(t, vals, CT_INT64, n) != CT_OK) {
        ct_decref(t);
        return NULL;
    }
    return t;
}

/* Counting sort of positions 0..n-1 by index: row r's positions, in
 * increasing order, are positions[offsets[r] .. offsets[r+1]). */
static bool row_lists(const int64_t *idx, int64_t n, int64_t v, ct_device dev,
                      ct_tensor **offsets_out, ct_tensor **positions_out) {
    int64_t *offsets = calloc((size_t)v + 1, sizeof *offsets);
    int64_t *positions = malloc((size_t)(n > 0 ? n : 1) * sizeof *positions);
    int64_t *fill = malloc((size_t)v * sizeof *fill);
    bool ok = offsets && positions && fill;
    if (!ok) ct_error_set(CT_ERR_OOM, "embedding_backward: out of memory sorting %lld indices",
                          (long long)n);
    if (ok) {
        for (int64_t i = 0; i < n; i++) offsets[idx[i] + 1]++;
        for (int64_t r = 0; r < v; r++) offsets[r + 1] += offsets[r];
        memcpy(fill, offsets, (size_t)v * sizeof *fill);
        for (int64_t i = 0; i < n; i++) positions[fill[idx[i]]++] = i;
        *offsets_out = int64_tensor(offsets, v + 1, dev);
        *positions_out = int64_tensor(positions, n, dev);
        ok = *offsets_out && *positions_out;
    }
    free(offsets);
    free(positions);
    free(fill);
    return ok;
}

static bool check_embedding_grad(const ct_tensor *grad_output, const ct_tensor *indices,
                                 int64_t num_weights, int64_t padding_idx) {
    const ct_tensor *both[2] = {grad_output, indices};
    if (!ct_check_same_device("embedding_backward", both, 2)) return false;
    if (!check_indices_dtype("embedding_backward", indices)) return false;
    if (!cti_nn_check_floating("embedding_backward", grad_output)) return false;
    CT_CHECK_RET(num_weights >= 0 && padding_idx >= -1 && padding_idx < num_weights, false,
                 CT_ERR_INVALID_ARG,
                 "embedding_backward: invalid num_weights %lld or padding_idx %lld",
                 (long long)num_weights, (long long)padding_idx);
    bool match = grad_output->ndim == indices->ndim + 1;
    for (int i = 0; match && i < indices->ndim; i++)
        match = grad_output->shape[i] == indices->shape[i];
    if (!match) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error_set(CT_ERR_SHAPE,
                     "embedding_backward: grad_output of shape %s does not match indices %s + [D]",
                     ct_shape_str(grad_output->shape, grad_output->ndim, a, sizeof a),
                     ct_shape_str(indices->shape, indices->ndim, b, sizeof b));
    }
    return match;
}

ct_tensor *cti_embedding_backward(const ct_tensor *grad_output, const ct_tensor *indices,
                                  int64_t num_weights, int64_t padding_idx) {
    if (!grad_output || !indices) return NULL;
    if (!check_embedding_grad(grad_output, indices, num_weights, padding_idx)) return NULL;
    const ct_device dev = grad_output->storage->device;
    const int64_t d = grad_output->shape[grad_output->ndim - 1];
    const int64_t n = ct_shape_numel(indices->shape, indices->ndim);
    int64_t shape[2] = {num_weights, d};
    if (num_weights * d == 0) return cti_empty(shape, 2, grad_output->dtype, dev);
    int64_t *vals = NULL;
    ct_tensor *idx = checked_indices("embedding_backward", indices, num_weights, &vals);
    ct_tensor *t[4] = {idx, NULL, NULL, NULL}; /* idx, offsets, positions, grad */
    ct_tensor *out = NULL;
    if (vals && row_lists(vals, n, num_weights, dev, &t[1], &t[2]) &&
        (t[3] = cti_contiguous(grad_output)) && (out = cti_empty(shape, 2, t[3]->dtype, dev))) {
        ct_kview ko = ct_kview_of(out), kg = ct_kview_of(t[3]), kof = ct_kview_of(t[1]),
                 kp = ct_kview_of(t[2]);
        if (CTI_NN_CALL(out, embedding_backward, "embedding_backward", &ko, &kg, &kof, &kp,
                        padding_idx) != CT_OK) {
            ct_decref(out);
            out = NULL;
        }
    }
    free(vals);
    cti_nn_release(t, 4);
    return out;
}

ct_tensor *ct_embedding(const ct_tensor *input, const ct_tensor *weight, int64_t padding_idx) {
    if (!input || !weight) return NULL;
    int64_t resolved;
    if (weight->ndim == 2 && !cti_embedding_padding_idx(padding_idx, weight->shape[0], &resolved))
        return NULL;
    return ct_track(cta_embedding(input, weight, weight->ndim == 2 ? resolved : -1));
}
