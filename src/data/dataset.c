/*
 * dataset.c — the map-style dataset object: a name, a length and a get-item
 * function behind a small vtable, so that the DataLoader works the same on
 * files, tensors and user datasets.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ctorch/data.h"

struct ct_dataset {
    char name[64];
    ct_dataset_fns fns;
    void *state;
};

ct_dataset *ct_dataset_new(const char *name, ct_dataset_fns fns, void *state) {
    if (!fns.len || !fns.get) {
        ct_error_set(CT_ERR_INVALID_ARG, "ct_dataset_new: the len and get functions are required");
        return NULL;
    }
    ct_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        ct_error_set(CT_ERR_OOM, "ct_dataset_new: out of memory");
        return NULL;
    }
    snprintf(ds->name, sizeof ds->name, "%s", name && *name ? name : "Dataset");
    ds->fns = fns;
    ds->state = state;
    return ds;
}

void ct_dataset_free(ct_dataset *ds) {
    if (!ds) return;
    if (ds->fns.free_state) ds->fns.free_state(ds->state);
    free(ds);
}

int64_t ct_dataset_len(const ct_dataset *ds) { return ds ? ds->fns.len(ds->state) : 0; }

const char *ct_dataset_name(const ct_dataset *ds) { return ds ? ds->name : ""; }

ct_status ct_dataset_get(ct_dataset *ds, int64_t index, uint64_t key, ct_sample *out) {
    CT_CHECK_OBJ_STATUS(ds, "ct_dataset_get: NULL argument");
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "ct_dataset_get: NULL argument");
    out->n = 0;
    int64_t n = ds->fns.len(ds->state);
    if (index < 0 || index >= n)
        return ct_error_set(CT_ERR_INDEX, "%s: index %lld is out of range for a dataset of length %lld",
                            ds->name, (long long)index, (long long)n);
    /* A get that fails must explain itself (ct_set_error); the stale error of
     * an earlier call is cleared so that it cannot stand in for the reason. */
    ct_clear_error();
    ct_status st = ds->fns.get(ds->state, index, key, out);
    if (st != CT_OK) {
        if (ct_last_status() == CT_OK)
            ct_error_set(st, "%s: dataset get(%lld) failed with %s without setting an error", ds->name,
                         (long long)index, ct_status_str(st));
        ct_sample_clear(out);   /* a failing get may have filled part of the sample */
        return st;
    }
    if (out->n < 1 || out->n > CT_SAMPLE_MAX) {
        int got = out->n;
        out->n = got < 0 ? 0 : (got > CT_SAMPLE_MAX ? CT_SAMPLE_MAX : got);
        ct_sample_clear(out);
        return ct_error_set(CT_ERR_INVALID_ARG, "%s: get(%lld) returned a sample of %d tensors (expected 1 to %d)",
                            ds->name, (long long)index, got, CT_SAMPLE_MAX);
    }
    for (int i = 0; i < out->n; i++)
        if (!out->t[i]) {
            ct_sample_clear(out);
            return ct_error_set(CT_ERR_INTERNAL, "%s: get(%lld) returned a NULL tensor %d without an error",
                                ds->name, (long long)index, i);
        }
    return CT_OK;
}
