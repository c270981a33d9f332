/*
 * tensorboard_internal.h — the TensorBoard record encoder behind
 * ct_summary_writer (internal), exposed so that tests can compare its bytes
 * with the worked examples of formats.md §3.4.
 *
 * A record is TFRecord framing around one serialized Event proto:
 *   u64 length | u32 masked_crc32c(length bytes) | Event | u32 masked_crc32c(Event)
 * (little-endian). The Event protos are hand-encoded (docs/tensorboard.md).
 */
#ifndef CT_IO_TENSORBOARD_INTERNAL_H
#define CT_IO_TENSORBOARD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ctorch/status.h"

/* Bytes of framing around an Event: 8 + 4 before it, 4 after it. */
#define CTI_TB_FRAME_OVERHEAD 16

/* A growable byte buffer of complete records. */
typedef struct cti_tb_buf {
    unsigned char *data;
    size_t len, cap;
} cti_tb_buf;

void cti_tb_buf_free(cti_tb_buf *b);

/* Appends the framed Event{wall_time, file_version: "brain.Event:2"}.
 * CT_ERR_OOM (message set) when the buffer cannot grow. */
ct_status cti_tb_append_file_version(cti_tb_buf *b, double wall_time);

/* Appends the framed Event{wall_time, step, summary{value{tag, simple_value}}}
 * as PyTorch's add_scalar writes it: step 0 is left out (proto3 default).
 * tag is tag_len bytes of UTF-8 (not checked here). */
ct_status cti_tb_append_scalar(cti_tb_buf *b, const char *tag, size_t tag_len, float value,
                               int64_t step, double wall_time);

/* The length of a valid UTF-8 prefix of s[0..n): n when all of s is valid. */
size_t cti_tb_utf8_valid_prefix(const char *s, size_t n);

#endif /* CT_IO_TENSORBOARD_INTERNAL_H */
