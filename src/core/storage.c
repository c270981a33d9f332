/*
 * storage.c — reference-counted blocks of device memory.
 *
 * Every allocation goes through the device's backend (and, from issue 3 on,
 * through its caching allocator), so the core never calls malloc for tensor
 * data. A storage is freed when its last tensor handle lets go of it.
 */
#include <stdlib.h>

#include "internal.h"

static atomic_llong g_live_storages;

int64_t ct_live_storages(void) { return (int64_t)atomic_load(&g_live_storages); }

ct_storage *ct_storage_new(ct_device dev, size_t nbytes) {
    const ct_backend *b = ct_backend_for(dev.type);
    CT_ASSERT(b != NULL && dev.index >= 0);
    ct_storage *s = malloc(sizeof *s);
    if (!s) {
        ct_error_set(CT_ERR_OOM, "out of memory allocating a storage header");
        return NULL;
    }
    s->device = dev;
    s->backend = b;
    s->nbytes = nbytes;
    s->data = NULL;
    if (b->alloc(dev.index, nbytes, &s->data) != CT_OK) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    atomic_fetch_add(&g_live_storages, 1);
    return s;
}

void ct_storage_retain(ct_storage *s) { atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed); }

void ct_storage_release(ct_storage *s) {
    if (!s) return;
    int old = atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel);
    CT_ASSERT(old > 0);
    if (old == 1) {
        s->backend->free(s->device.index, s->data);
        free(s);
        atomic_fetch_sub(&g_live_storages, 1);
    }
}
