/*
 * safetensors_checksum.c — the optional whole-file checksum of ctorch's
 * safetensors files.
 *
 * The format has no integrity check, so a flipped bit in a weight or in the
 * metadata loads silently. ctorch can add one where every other reader
 * ignores it: a metadata entry "ctorch.crc32c" whose value is 8 lowercase
 * hex digits, the CRC-32C of the whole file computed with those 8 digits
 * read as "00000000". The writer emits the placeholder, accumulates the CRC
 * while it writes, then patches the digits in place; the reader finds the
 * entry in the raw header bytes, so that damage which breaks the JSON itself
 * is still reported as damage, and recomputes the CRC before it trusts
 * anything else in the file.
 */
#include <string.h>

#include "io/crc32c.h"
#include "io/safetensors_format.h"

static const char k_entry[] = "\"" CT_SAFETENSORS_CHECKSUM_KEY "\":\"";

static bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

int cti_st_checksum_find(const char *header, size_t len, size_t *digits_at, uint32_t *stored) {
    size_t n = sizeof k_entry - 1;
    for (size_t i = 0; i + n <= len; i++) {
        if (header[i] != '"' || memcmp(header + i, k_entry, n) != 0) continue;
        if (i + n + 9 > len) return -1;
        const char *d = header + i + n;
        uint32_t v = 0;
        bool ok = d[8] == '"';
        for (int k = 0; k < 8 && ok; k++) {
            ok = is_lower_hex(d[k]);
            v = v << 4 | (uint32_t)(d[k] <= '9' ? d[k] - '0' : d[k] - 'a' + 10);
        }
        if (!ok) return -1;
        *digits_at = i + n;
        *stored = v;
        return 1;
    }
    return 0;
}

uint32_t cti_st_checksum_extend(uint32_t crc, const void *bytes, size_t n, uint64_t at, uint64_t digits_at) {
    const unsigned char *p = bytes;
    static const char zeros[8] = "00000000";
    uint64_t end = at + n;
    if (end <= digits_at || at >= digits_at + 8) return cti_crc32c_extend(crc, p, n);
    /* the span overlaps the digits: hash the placeholder in their place */
    uint64_t a = digits_at > at ? digits_at : at, b = digits_at + 8 < end ? digits_at + 8 : end;
    crc = cti_crc32c_extend(crc, p, (size_t)(a - at));
    crc = cti_crc32c_extend(crc, zeros + (a - digits_at), (size_t)(b - a));
    return cti_crc32c_extend(crc, p + (b - at), (size_t)(end - b));
}

void cti_st_checksum_format(uint32_t crc, char out[8]) {
    static const char hex[] = "0123456789abcdef";
    for (int k = 0; k < 8; k++) out[k] = hex[(crc >> (28 - 4 * k)) & 15];
}
