/*
 * dataset_tensor.c — TensorDataset and Subset (torch.utils.data): datasets
 * built from tensors already in memory and views of other datasets, the
 * usual way to train on data that a program computed itself or to split a
 * dataset into training and validation parts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ctorch/data.h"

/* ---- TensorDataset ---------------------------------------------------------------- */

typedef struct tensor_ds {
    int n;
    int64_t len;
    ct_tensor *t[CT_SAMPLE_MAX];   /* retained */
} tensor_ds;

static int64_t tensor_ds_len(void *state) { return ((tensor_ds *)state)->len; }

static ct_status tensor_ds_get(void *state, int64_t index, uint64_t key, ct_sample *out) {
    (void)key;
    tensor_ds *s = state;
    for (int k = 0; k < s->n; k++) {
        out->t[k] = cti_select(s->t[k], 0, index);
        if (!out->t[k]) return ct_last_status();   /* the caller clears the part filled */
        out->n = k + 1;
    }
    return CT_OK;
}

static void tensor_ds_free(void *state) {
    tensor_ds *s = state;
    for (int k = 0; k < s->n; k++) ct_decref(s->t[k]);
    free(s);
}

ct_dataset *ct_tensor_dataset(ct_tensor *const *tensors, int n) {
    CT_CHECK_NULL(tensors && n >= 1 && n <= CT_SAMPLE_MAX, CT_ERR_INVALID_ARG,
                  "TensorDataset: expected 1 to %d tensors, got %d%s", CT_SAMPLE_MAX, n,
                  tensors ? "" : " (NULL array)");
    for (int k = 0; k < n; k++) {
        if (!tensors[k]) return NULL;   /* NULL inputs propagate */
        CT_CHECK_NULL(tensors[k]->ndim >= 1, CT_ERR_SHAPE,
                      "TensorDataset: tensor %d has no dimensions (a 0-dim tensor has no samples)", k);
    }
    for (int k = 1; k < n; k++)
        CT_CHECK_NULL(tensors[k]->shape[0] == tensors[0]->shape[0], CT_ERR_SHAPE,
                      "TensorDataset: Size mismatch between tensors: tensor 0 has size %lld in dim 0 "
                      "but tensor %d has size %lld",
                      (long long)tensors[0]->shape[0], k, (long long)tensors[k]->shape[0]);
    tensor_ds *s = calloc(1, sizeof *s);
    CT_CHECK_NULL(s, CT_ERR_OOM, "TensorDataset: out of memory");
    s->n = n;
    s->len = tensors[0]->shape[0];
    for (int k = 0; k < n; k++) s->t[k] = ct_retain(tensors[k]);
    ct_dataset *ds = ct_dataset_new("TensorDataset",
                                    (ct_dataset_fns){tensor_ds_len, tensor_ds_get, tensor_ds_free}, s);
    if (!ds) tensor_ds_free(s);
    return ds;
}

/* ---- Subset ------------------------------------------------------------------------ */

typedef struct subset_ds {
    ct_dataset *base;   /* borrowed */
    int64_t n;
    int64_t *idx;
} subset_ds;

static int64_t subset_len(void *state) { return ((subset_ds *)state)->n; }

static ct_status subset_get(void *state, int64_t index, uint64_t key, ct_sample *out) {
    subset_ds *s = state;
    return ct_dataset_get(s->base, s->idx[index], key, out);
}

static void subset_free(void *state) {
    subset_ds *s = state;
    free(s->idx);
    free(s);
}

ct_dataset *ct_subset(ct_dataset *ds, const int64_t *indices, int64_t n) {
    if (!ds) return NULL;
    CT_CHECK_NULL(n >= 0 && (n == 0 || indices), CT_ERR_INVALID_ARG,
                  "Subset: expected n >= 0 indices, got %lld%s", (long long)n, indices ? "" : " (NULL array)");
    int64_t len = ct_dataset_len(ds);
    for (int64_t i = 0; i < n; i++)
        CT_CHECK_NULL(indices[i] >= 0 && indices[i] < len, CT_ERR_INDEX,
                      "Subset: index %lld (position %lld of the indices) is out of range for %s of length %lld",
                      (long long)indices[i], (long long)i, ct_dataset_name(ds), (long long)len);
    subset_ds *s = calloc(1, sizeof *s);
    if (s && n > 0 && (s->idx = malloc(sizeof(int64_t) * (size_t)n)) == NULL) {
        free(s);
        s = NULL;
    }
    CT_CHECK_NULL(s, CT_ERR_OOM, "Subset: out of memory for %lld indices", (long long)n);
    s->base = ds;
    s->n = n;
    if (n > 0) memcpy(s->idx, indices, sizeof(int64_t) * (size_t)n);
    char name[64];
    snprintf(name, sizeof name, "Subset of %s", ct_dataset_name(ds));
    ct_dataset *sub = ct_dataset_new(name, (ct_dataset_fns){subset_len, subset_get, subset_free}, s);
    if (!sub) subset_free(s);
    return sub;
}
