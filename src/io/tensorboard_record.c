/*
 * tensorboard_record.c — encodes TensorBoard Event protos and frames them as
 * TFRecords, without a protobuf library (formats.md §3, docs/tensorboard.md).
 *
 * Only three Event shapes are needed, so each record's size is computed first
 * and the bytes are then written straight into the caller's buffer: a record
 * is either appended whole or (out of memory) not at all.
 *
 * Wire format reminders: key = field_number << 3 | wire_type; wire type 0 is
 * a varint, 1 eight little-endian bytes, 2 a varint length then bytes, 5 four
 * little-endian bytes. proto3 leaves fields at their default (step 0) out.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/crc32c.h"
#include "io/tensorboard_internal.h"

#define FILE_VERSION "brain.Event:2"

/* Event fields */
#define KEY_EVENT_WALL_TIME 0x09     /* 1, fixed64 (double) */
#define KEY_EVENT_STEP 0x10          /* 2, varint (int64) */
#define KEY_EVENT_FILE_VERSION 0x1A  /* 3, length-delimited (string) */
#define KEY_EVENT_SUMMARY 0x2A       /* 5, length-delimited (Summary) */
/* Summary and Summary.Value fields */
#define KEY_SUMMARY_VALUE 0x0A       /* Summary.value, 1, length-delimited */
#define KEY_VALUE_TAG 0x0A           /* Value.tag, 1, length-delimited */
#define KEY_VALUE_SIMPLE_VALUE 0x15  /* Value.simple_value, 2, fixed32 (float) */

void cti_tb_buf_free(cti_tb_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Room for `extra` more bytes; returns where they go, or NULL (error set). */
static unsigned char *buf_reserve(cti_tb_buf *b, size_t extra) {
    if (extra > SIZE_MAX - b->len) {
        ct_error_set(CT_ERR_OOM, "add_scalar: a record of %zu bytes does not fit in memory", extra);
        return NULL;
    }
    if (b->len + extra > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + extra) cap = cap > SIZE_MAX / 2 ? b->len + extra : cap * 2;
        unsigned char *grown = realloc(b->data, cap);
        if (!grown) {
            ct_error_set(CT_ERR_OOM, "add_scalar: out of memory buffering %zu bytes of events",
                         b->len + extra);
            return NULL;
        }
        b->data = grown;
        b->cap = cap;
    }
    return b->data + b->len;
}

/* ---- primitive encoders: each returns the position after what it wrote ---- */

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int nbytes) {
    for (int i = 0; i < nbytes; i++) *p++ = (unsigned char)(v >> (8 * i));
    return p;
}

static unsigned char *put_double(unsigned char *p, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return put_le(p, bits, 8);
}

static unsigned char *put_float(unsigned char *p, float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return put_le(p, bits, 4);
}

static unsigned char *put_bytes(unsigned char *p, const void *s, size_t n) {
    if (n) memcpy(p, s, n);
    return p + n;
}

/* ---- framing ------------------------------------------------------------------ */

/* Reserves a record for an Event of event_len bytes and writes its header;
 * returns where the Event goes (the caller fills exactly event_len bytes,
 * then calls end_record). */
static unsigned char *begin_record(cti_tb_buf *b, size_t event_len) {
    if (event_len > SIZE_MAX - CTI_TB_FRAME_OVERHEAD) {
        ct_error_set(CT_ERR_OOM, "add_scalar: an event of %zu bytes does not fit in memory", event_len);
        return NULL;
    }
    unsigned char *rec = buf_reserve(b, event_len + CTI_TB_FRAME_OVERHEAD);
    if (!rec) return NULL;
    unsigned char *p = put_le(rec, (uint64_t)event_len, 8);
    return put_le(p, cti_crc32c_mask(cti_crc32c(rec, 8)), 4);
}

static void end_record(cti_tb_buf *b, unsigned char *event, size_t event_len) {
    put_le(event + event_len, cti_crc32c_mask(cti_crc32c(event, event_len)), 4);
    b->len += event_len + CTI_TB_FRAME_OVERHEAD;
}

/* ---- the Events ------------------------------------------------------------------ */

ct_status cti_tb_append_file_version(cti_tb_buf *b, double wall_time) {
    const size_t version_len = sizeof FILE_VERSION - 1;
    const size_t event_len = 1 + 8 + 1 + varint_size(version_len) + version_len;
    unsigned char *event = begin_record(b, event_len);
    if (!event) return CT_ERR_OOM;
    unsigned char *p = event;
    *p++ = KEY_EVENT_WALL_TIME;
    p = put_double(p, wall_time);
    *p++ = KEY_EVENT_FILE_VERSION;
    p = put_varint(p, version_len);
    p = put_bytes(p, FILE_VERSION, version_len);
    CT_ASSERT((size_t)(p - event) == event_len);
    end_record(b, event, event_len);
    return CT_OK;
}

ct_status cti_tb_append_scalar(cti_tb_buf *b, const char *tag, size_t tag_len, float value,
                               int64_t step, double wall_time) {
    /* Sizes from the inside out: Value, Summary, Event. A tag long enough to
     * overflow these sums cannot have been allocated, so none is checked. */
    const size_t value_len = 1 + varint_size(tag_len) + tag_len + 1 + 4;
    const size_t summary_len = 1 + varint_size(value_len) + value_len;
    const size_t step_len = step != 0 ? 1 + varint_size((uint64_t)step) : 0;
    const size_t event_len = 1 + 8 + step_len + 1 + varint_size(summary_len) + summary_len;
    unsigned char *event = begin_record(b, event_len);
    if (!event) return CT_ERR_OOM;
    unsigned char *p = event;
    *p++ = KEY_EVENT_WALL_TIME;
    p = put_double(p, wall_time);
    if (step != 0) {
        *p++ = KEY_EVENT_STEP;
        p = put_varint(p, (uint64_t)step); /* int64: negatives take ten bytes */
    }
    *p++ = KEY_EVENT_SUMMARY;
    p = put_varint(p, summary_len);
    *p++ = KEY_SUMMARY_VALUE;
    p = put_varint(p, value_len);
    *p++ = KEY_VALUE_TAG;
    p = put_varint(p, tag_len);
    p = put_bytes(p, tag, tag_len);
    *p++ = KEY_VALUE_SIMPLE_VALUE;
    p = put_float(p, value);
    CT_ASSERT((size_t)(p - event) == event_len);
    end_record(b, event, event_len);
    return CT_OK;
}

/* ---- UTF-8 (proto3 string fields must be valid UTF-8, or readers reject
 * the whole Event) ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0; /* overlong */
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;        /* not a character */
    return len;
}

size_t cti_tb_utf8_valid_prefix(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_sequence(u + i, n - i);
        if (!len) break;
        i += len;
    }
    return i;
}
