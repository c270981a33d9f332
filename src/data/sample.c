/*
 * sample.c — the ct_sample tuple shared by datasets, collate and the
 * DataLoader. Kept apart so that every data file can depend on it alone.
 */
#include "ctorch/data.h"

void ct_sample_clear(ct_sample *s) {
    if (!s) return;
    for (int i = 0; i < s->n && i < CT_SAMPLE_MAX; i++) {
        ct_release(s->t[i]);
        s->t[i] = NULL;
    }
    s->n = 0;
}
