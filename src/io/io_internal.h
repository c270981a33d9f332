/*
 * io_internal.h — what the file-format code shares about ct_tensor_dict
 * (internal): its layout, bulk appends for loaders that have already checked
 * their names, and quoting of untrusted strings for error messages.
 */
#ifndef CT_IO_INTERNAL_H
#define CT_IO_INTERNAL_H

#include <stddef.h>

#include "ctorch/io.h"

typedef struct cti_dict_entry {
    char *name;
    ct_tensor *tensor;   /* the dict's own (untracked) reference */
} cti_dict_entry;

typedef struct cti_dict_meta {
    char *key;
    char *value;
} cti_dict_meta;

struct ct_tensor_dict {
    cti_dict_entry *items;
    int count, cap;
    int *slots;          /* open-addressing index into items; -1 = empty */
    int slot_cap;        /* a power of two, > 2 * count; 0 before the first set */
    cti_dict_meta *meta;
    int meta_count, meta_cap;
};

/* Appends name -> t without looking for an existing entry (the caller knows
 * the name is new and valid) and takes over the caller's untracked reference
 * to t, also on failure (then t is released). */
ct_status cti_dict_append(ct_tensor_dict *d, const char *name, size_t name_len, ct_tensor *t);
/* Appends a metadata entry without looking for an existing key. */
ct_status cti_dict_append_metadata(ct_tensor_dict *d, const char *key, size_t key_len,
                                   const char *value, size_t value_len);
void cti_dict_clear_metadata(ct_tensor_dict *d);

/* Writes s (n bytes) into buf for a message: at most about 80 bytes of it
 * (cut at a character boundary, "..." added), control bytes as \xNN.
 * Returns buf. */
#define CTI_QUOTE_MAX 100
const char *cti_io_quote(char buf[CTI_QUOTE_MAX], const char *s, size_t n);

#endif /* CT_IO_INTERNAL_H */
