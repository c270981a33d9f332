/*
 * safetensors_format.h — facts about the safetensors format shared by its
 * reader and writer (internal): the dtype names with their sizes and the
 * writer's ordering rank, and little-endian conversion.
 *
 * Names and ranks follow `enum Dtype` in huggingface/safetensors
 * (safetensors/src/tensor.rs), whose order is "increasing alignment"; the
 * reference writer sorts tensors by that rank, descending, then by name.
 */
#ifndef CT_IO_SAFETENSORS_FORMAT_H
#define CT_IO_SAFETENSORS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctorch/dtype.h"
#include "ctorch/io.h"

typedef struct st_dtype_info {
    const char *name;
    int bits;           /* per element; F4 and F6 pack below a byte */
    int rank;           /* position in the reference enum */
    ct_dtype dtype;     /* CT_DTYPE_DEFAULT: a format dtype ctorch lacks */
} st_dtype_info;

static const st_dtype_info st_dtypes[] = {
    {"BOOL", 8, 0, CT_BOOL},         {"F4", 4, 1, CT_DTYPE_DEFAULT},
    {"F6_E2M3", 6, 2, CT_DTYPE_DEFAULT}, {"F6_E3M2", 6, 3, CT_DTYPE_DEFAULT},
    {"U8", 8, 4, CT_UINT8},          {"I8", 8, 5, CT_INT8},
    {"F8_E5M2", 8, 6, CT_DTYPE_DEFAULT}, {"F8_E4M3", 8, 7, CT_DTYPE_DEFAULT},
    {"F8_E8M0", 8, 8, CT_DTYPE_DEFAULT}, {"F8_E4M3FNUZ", 8, 8, CT_DTYPE_DEFAULT},
    {"F8_E5M2FNUZ", 8, 8, CT_DTYPE_DEFAULT}, {"I16", 16, 9, CT_DTYPE_DEFAULT},
    {"U16", 16, 10, CT_DTYPE_DEFAULT}, {"F16", 16, 11, CT_FLOAT16},
    {"BF16", 16, 12, CT_BFLOAT16},   {"I32", 32, 13, CT_INT32},
    {"U32", 32, 14, CT_DTYPE_DEFAULT}, {"F32", 32, 15, CT_FLOAT32},
    {"C64", 64, 16, CT_DTYPE_DEFAULT}, {"F64", 64, 17, CT_FLOAT64},
    {"I64", 64, 18, CT_INT64},       {"U64", 64, 19, CT_DTYPE_DEFAULT},
};
#define ST_NUM_DTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

/* The entry for a name (n bytes), or NULL. */
static inline const st_dtype_info *st_dtype_by_name(const char *name, size_t n) {
    for (int i = 0; i < ST_NUM_DTYPES; i++)
        if (strlen(st_dtypes[i].name) == n && memcmp(st_dtypes[i].name, name, n) == 0)
            return &st_dtypes[i];
    return NULL;
}

/* The entry for a ctorch dtype (every ctorch dtype has one). */
static inline const st_dtype_info *st_dtype_of(ct_dtype dt) {
    for (int i = 0; i < ST_NUM_DTYPES; i++)
        if (st_dtypes[i].dtype == dt && dt != CT_DTYPE_DEFAULT) return &st_dtypes[i];
    return NULL;
}

/* The format is little-endian; so are x86-64 and aarch64, where the byte
 * swaps below compile to nothing. */
static inline bool st_host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Reverses the bytes of each elem_size-byte element of p[0..nbytes). */
static inline void st_swap_elements(unsigned char *p, size_t nbytes, size_t elem_size) {
    for (size_t i = 0; elem_size > 1 && i + elem_size <= nbytes; i += elem_size)
        for (size_t a = i, b = i + elem_size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* ---- the optional checksum entry (safetensors_checksum.c) ---- */

/* Finds the "ctorch.crc32c":"xxxxxxxx" entry in the raw header bytes: 1 with
 * the offset of its 8 digits in the header and their value, 0 when the
 * header has none, -1 when its value is not 8 lowercase hex digits. */
int cti_st_checksum_find(const char *header, size_t len, size_t *digits_at, uint32_t *stored);
/* Continues the file's CRC-32C over n bytes that sit at file offset `at`,
 * reading the 8 digits at file offset digits_at as "00000000". */
uint32_t cti_st_checksum_extend(uint32_t crc, const void *bytes, size_t n, uint64_t at, uint64_t digits_at);
/* The 8 lowercase hex digits of crc (no terminator). */
void cti_st_checksum_format(uint32_t crc, char out[8]);

#endif /* CT_IO_SAFETENSORS_FORMAT_H */
