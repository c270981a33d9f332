/*
 * crc32c.h — CRC32C (Castagnoli) and the TFRecord "masked" CRC (internal).
 *
 * TensorBoard event files frame every record with masked CRC32Cs
 * (docs/tensorboard.md); zlib only has the other CRC-32, so we carry our own.
 */
#ifndef CT_IO_CRC32C_H
#define CT_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of n bytes: reflected polynomial 0x82F63B78, init and final XOR
 * 0xFFFFFFFF, so cti_crc32c("123456789", 9) == 0xE3069283. */
uint32_t cti_crc32c(const void *data, size_t n);
/* Continues a CRC over more bytes: cti_crc32c_extend(cti_crc32c(a), b) is
 * the CRC of a followed by b; cti_crc32c_extend(0, a) == cti_crc32c(a). */
uint32_t cti_crc32c_extend(uint32_t crc, const void *data, size_t n);
/* TFRecord's mask: rotate right by 15, add 0xa282ead8 (so a CRC stored
 * next to the data it covers does not look like data). */
uint32_t cti_crc32c_mask(uint32_t crc);
/* Entry i (0..255) of the byte-at-a-time table, for tests. */
uint32_t cti_crc32c_table_entry(int i);

#endif /* CT_IO_CRC32C_H */
