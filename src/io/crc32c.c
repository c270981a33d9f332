/*
 * crc32c.c — CRC32C (Castagnoli), slice-by-8, and the TFRecord mask.
 *
 * The tables are built once on first use (pthread_once, so writers on several
 * threads may race to the first CRC). Slice-by-8 reads eight bytes per step:
 * table k maps a byte to its CRC contribution k bytes further on, so eight
 * lookups replace eight dependent shift-and-lookup rounds. Bytes are combined
 * one by one (not by loading a word), so the code does not depend on the
 * host's byte order.
 */
#include "io/crc32c.h"

#include <pthread.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_tables[8][256];
static pthread_once_t crc_tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_tables[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++) {
            uint32_t prev = crc_tables[k - 1][i];
            crc_tables[k][i] = (prev >> 8) ^ crc_tables[0][prev & 0xff];
        }
}

static const uint32_t (*tables(void))[256] {
    pthread_once(&crc_tables_once, build_tables);
    return (const uint32_t (*)[256])crc_tables;
}

uint32_t cti_crc32c_extend(uint32_t crc, const void *data, size_t n) {
    const uint32_t (*t)[256] = tables();
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
            t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    }
    for (; n > 0; n--, p++) c = (c >> 8) ^ t[0][(c ^ *p) & 0xff];
    return ~c;
}

uint32_t cti_crc32c(const void *data, size_t n) {
    return cti_crc32c_extend(0, data, n);
}

uint32_t cti_crc32c_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

uint32_t cti_crc32c_table_entry(int i) {
    return (i >= 0 && i < 256) ? tables()[0][i] : 0;
}
