/*
 * tensor_dict.c — ct_tensor_dict: an ordered name -> tensor map with string
 * metadata, the in-memory form of a safetensors file and of a state_dict.
 *
 * Entries keep insertion order (what users iterate over) and are found
 * through a hash index, so that loading a checkpoint with many thousands of
 * tensors and looking each one up stays linear.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io/io_internal.h"
#include "io/json.h"

/* ---- messages ---------------------------------------------------------------------- */

const char *cti_io_quote(char buf[CTI_QUOTE_MAX], const char *s, size_t n) {
    const size_t keep = 80;
    size_t limit = n, o = 0;
    bool cut = false;
    if (n > keep) {
        limit = keep;
        /* do not split a UTF-8 sequence: back up to the start of one */
        while (limit > 0 && ((unsigned char)s[limit] & 0xC0) == 0x80) limit--;
        cut = true;
    }
    for (size_t i = 0; i < limit; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F) {
            static const char hex[] = "0123456789abcdef";
            buf[o++] = '\\', buf[o++] = 'x', buf[o++] = hex[c >> 4], buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
        if (o > CTI_QUOTE_MAX - 8) { /* room for one more escape and "..." */
            cut = cut || i + 1 < limit;
            break;
        }
    }
    if (cut) buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o] = '\0';
    return buf;
}

/* ---- the index ----------------------------------------------------------------------- */

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot holding name, or the empty slot where it would go. */
static int find_slot(const ct_tensor_dict *d, const char *name) {
    int mask = d->slot_cap - 1;
    int i = (int)(hash_name(name) & (uint64_t)mask);
    while (d->slots[i] >= 0 && strcmp(d->items[d->slots[i]].name, name) != 0) i = (i + 1) & mask;
    return i;
}

static int find_entry(const ct_tensor_dict *d, const char *name) {
    if (d->slot_cap == 0) return -1;
    return d->slots[find_slot(d, name)];
}

/* Rebuilds the index with room for `count` entries at most half full. */
static bool rebuild_index(ct_tensor_dict *d, int count) {
    int cap = 16;
    while (cap / 2 <= count) {
        if (cap > INT32_MAX / 4) return false;
        cap *= 2;
    }
    int *slots = malloc(sizeof(int) * (size_t)cap);
    if (!slots) return false;
    for (int i = 0; i < cap; i++) slots[i] = -1;
    free(d->slots);
    d->slots = slots;
    d->slot_cap = cap;
    for (int i = 0; i < d->count; i++) d->slots[find_slot(d, d->items[i].name)] = i;
    return true;
}

static bool grow(void **items, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    if (need > INT32_MAX / 2) return false;
    int c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    void *p = realloc(*items, elem * (size_t)c);
    if (!p) return false;
    *items = p;
    *cap = c;
    return true;
}

static char *copy_bytes(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ---- create / free ------------------------------------------------------------------- */

ct_tensor_dict *ct_tensor_dict_new(void) {
    ct_tensor_dict *d = calloc(1, sizeof *d);
    if (!d || cti_dict_append_metadata(d, "format", 6, "pt", 2) != CT_OK) {
        free(d);
        ct_error_set(CT_ERR_OOM, "tensor_dict_new: out of memory");
        return NULL;
    }
    return d;
}

void cti_dict_clear_metadata(ct_tensor_dict *d) {
    for (int i = 0; i < d->meta_count; i++) {
        free(d->meta[i].key);
        free(d->meta[i].value);
    }
    d->meta_count = 0;
}

void ct_tensor_dict_free(ct_tensor_dict *d) {
    if (!d) return;
    for (int i = 0; i < d->count; i++) {
        free(d->items[i].name);
        ct_decref(d->items[i].tensor);
    }
    cti_dict_clear_metadata(d);
    free(d->items);
    free(d->slots);
    free(d->meta);
    free(d);
}

/* ---- entries --------------------------------------------------------------------------- */

ct_status cti_dict_append(ct_tensor_dict *d, const char *name, size_t name_len, ct_tensor *t) {
    char *copy = copy_bytes(name, name_len);
    if (!copy || !grow((void **)&d->items, &d->cap, d->count + 1, sizeof *d->items) ||
        (2 * (d->count + 1) >= d->slot_cap && !rebuild_index(d, d->count + 1))) {
        free(copy);
        ct_decref(t);
        return ct_error_set(CT_ERR_OOM, "tensor_dict: out of memory adding an entry");
    }
    d->items[d->count] = (cti_dict_entry){copy, t};
    d->slots[find_slot(d, copy)] = d->count;
    d->count++;
    return CT_OK;
}

/* A name or key the format can store: valid UTF-8 (the header is JSON). */
static ct_status check_text(const char *op, const char *what, const char *s) {
    size_t n = strlen(s), bad = ctj_utf8_invalid_at((const unsigned char *)s, n);
    CT_CHECK_STATUS(bad == n, CT_ERR_INVALID_ARG,
                    "%s: %s is not valid UTF-8 (byte 0x%02x at offset %zu)", op, what,
                    (unsigned)(unsigned char)s[bad], bad);
    return CT_OK;
}

ct_status ct_tensor_dict_set(ct_tensor_dict *d, const char *name, const ct_tensor *t) {
    /* NULL objects (d, t) keep the error of the call that failed to make
     * them; a NULL name is the caller's own mistake */
    CT_CHECK_OBJ_STATUS(d, "tensor_dict_set: NULL dict");
    if (!t && ct_last_status() != CT_OK) return ct_last_status();
    CT_CHECK_STATUS(name != NULL, CT_ERR_INVALID_ARG, "tensor_dict_set: NULL name");
    char q[CTI_QUOTE_MAX];
    CT_CHECK_OBJ_STATUS(t, "tensor_dict_set: NULL tensor for '%s'", cti_io_quote(q, name, strlen(name)));
    CT_TRY(check_text("tensor_dict_set", "the name", name));
    CT_CHECK_STATUS(strcmp(name, "__metadata__") != 0, CT_ERR_INVALID_ARG,
                    "tensor_dict_set: the name '__metadata__' is reserved by the safetensors format");
    ct_tensor *ref = ct_retain((ct_tensor *)t);
    int i = find_entry(d, name);
    if (i >= 0) {
        ct_decref(d->items[i].tensor);
        d->items[i].tensor = ref;
        return CT_OK;
    }
    return cti_dict_append(d, name, strlen(name), ref);
}

static int lookup(const char *op, const ct_tensor_dict *d, const char *name) {
    CT_CHECK_OBJ(d, -1, "%s: NULL dict", op);
    CT_CHECK_RET(name != NULL, -1, CT_ERR_INVALID_ARG, "%s: NULL name", op);
    int i = find_entry(d, name);
    char q[CTI_QUOTE_MAX];
    if (i < 0)
        ct_error_set(CT_ERR_INDEX, "%s: no tensor named '%s'", op, cti_io_quote(q, name, strlen(name)));
    return i;
}

ct_tensor *ct_tensor_dict_get(const ct_tensor_dict *d, const char *name) {
    int i = lookup("tensor_dict_get", d, name);
    return i < 0 ? NULL : ct_track(ct_retain(d->items[i].tensor));
}

bool ct_tensor_dict_contains(const ct_tensor_dict *d, const char *name) {
    return d && name && find_entry(d, name) >= 0;
}

int ct_tensor_dict_index(const ct_tensor_dict *d, const char *name) {
    return d && name ? find_entry(d, name) : -1;
}

ct_status ct_tensor_dict_remove(ct_tensor_dict *d, const char *name) {
    int i = lookup("tensor_dict_remove", d, name);
    if (i < 0) return ct_last_status();
    free(d->items[i].name);
    ct_decref(d->items[i].tensor);
    memmove(d->items + i, d->items + i + 1, sizeof *d->items * (size_t)(d->count - i - 1));
    d->count--;
    /* Positions after i moved: re-index (a smaller index always fits). */
    for (int s = 0; s < d->slot_cap; s++) d->slots[s] = -1;
    for (int k = 0; k < d->count; k++) d->slots[find_slot(d, d->items[k].name)] = k;
    return CT_OK;
}

int ct_tensor_dict_size(const ct_tensor_dict *d) { return d ? d->count : 0; }

/* A NULL d has no entries, and keeps the error of the call that failed to
 * make it. */
static bool in_range(const char *op, const ct_tensor_dict *d, int i, int n) {
    if (i >= 0 && i < n) return true;
    (d ? ct_error_set : ct_error_pending_or)(CT_ERR_INDEX, "%s: index %d is out of range for %d entries", op, i, n);
    return false;
}

const char *ct_tensor_dict_name(const ct_tensor_dict *d, int i) {
    return in_range("tensor_dict_name", d, i, ct_tensor_dict_size(d)) ? d->items[i].name : NULL;
}

ct_tensor *ct_tensor_dict_value(const ct_tensor_dict *d, int i) {
    if (!in_range("tensor_dict_value", d, i, ct_tensor_dict_size(d))) return NULL;
    return ct_track(ct_retain(d->items[i].tensor));
}

/* ---- metadata ---------------------------------------------------------------------------- */

ct_status cti_dict_append_metadata(ct_tensor_dict *d, const char *key, size_t key_len,
                                   const char *value, size_t value_len) {
    char *k = copy_bytes(key, key_len), *v = copy_bytes(value, value_len);
    if (!k || !v || !grow((void **)&d->meta, &d->meta_cap, d->meta_count + 1, sizeof *d->meta)) {
        free(k);
        free(v);
        return ct_error_set(CT_ERR_OOM, "tensor_dict: out of memory adding metadata");
    }
    d->meta[d->meta_count++] = (cti_dict_meta){k, v};
    return CT_OK;
}

static int find_meta(const ct_tensor_dict *d, const char *key) {
    for (int i = 0; i < d->meta_count; i++)
        if (strcmp(d->meta[i].key, key) == 0) return i;
    return -1;
}

ct_status ct_tensor_dict_set_metadata(ct_tensor_dict *d, const char *key, const char *value) {
    CT_CHECK_OBJ_STATUS(d, "tensor_dict_set_metadata: NULL dict");
    CT_CHECK_STATUS(key != NULL, CT_ERR_INVALID_ARG, "tensor_dict_set_metadata: NULL key");
    int i = find_meta(d, key);
    if (!value) {
        if (i >= 0) {
            free(d->meta[i].key);
            free(d->meta[i].value);
            memmove(d->meta + i, d->meta + i + 1, sizeof *d->meta * (size_t)(d->meta_count - i - 1));
            d->meta_count--;
        }
        return CT_OK;
    }
    CT_TRY(check_text("tensor_dict_set_metadata", "the key", key));
    CT_TRY(check_text("tensor_dict_set_metadata", "the value", value));
    if (i < 0) return cti_dict_append_metadata(d, key, strlen(key), value, strlen(value));
    char *v = copy_bytes(value, strlen(value));
    CT_CHECK_STATUS(v, CT_ERR_OOM, "tensor_dict_set_metadata: out of memory");
    free(d->meta[i].value);
    d->meta[i].value = v;
    return CT_OK;
}

const char *ct_tensor_dict_get_metadata(const ct_tensor_dict *d, const char *key) {
    if (!d || !key) return NULL;
    int i = find_meta(d, key);
    return i < 0 ? NULL : d->meta[i].value;
}

int ct_tensor_dict_metadata_size(const ct_tensor_dict *d) { return d ? d->meta_count : 0; }

const char *ct_tensor_dict_metadata_key(const ct_tensor_dict *d, int i) {
    return in_range("tensor_dict_metadata_key", d, i, ct_tensor_dict_metadata_size(d)) ? d->meta[i].key
                                                                                     : NULL;
}
