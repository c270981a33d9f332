/*
 * json.h — a small strict JSON reader and writer for file headers (internal).
 *
 * File formats such as safetensors carry a JSON header that comes from an
 * untrusted file. Rather than building a tree (whose size an attacker
 * controls), the reader is a pull parser: the format code asks for the value
 * it expects next ("an object", "a string", "a non-negative integer") and
 * decides itself what to do with anything else. It follows RFC 8259 strictly:
 * no comments, no trailing commas, no leading zeros, no raw control
 * characters in strings, no lone UTF-16 surrogates in escapes. It never
 * recurses and allocates nothing: decoded strings go to a buffer the caller
 * provides (as large as the text, which always suffices).
 *
 * The writer appends to a growable buffer and escapes strings as serde_json
 * does, so headers we write are byte-identical to the reference writer's.
 */
#ifndef CT_IO_JSON_H
#define CT_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Offset of the first byte that is not part of valid UTF-8 (overlong forms,
 * surrogates and code points past U+10FFFF are invalid), or n if all is. */
size_t ctj_utf8_invalid_at(const unsigned char *s, size_t n);

typedef struct ctj_reader {
    const char *text;
    size_t len, pos;
    char *strbuf;       /* decoded strings, each NUL-terminated; >= len + 1 bytes */
    size_t strpos;
    bool failed;
    char error[128];    /* the first syntax error, naming its byte offset */
} ctj_reader;

void ctj_init(ctj_reader *r, const char *text, size_t len, char *strbuf);

/* Skips whitespace and returns the next byte without consuming it ('\0' at
 * the end of the text). */
char ctj_peek(ctj_reader *r);
/* What the next value is, for messages: "a string", "an object", "an array",
 * "a number", "a boolean", "null", "the end of the header" or "an invalid
 * token". */
const char *ctj_peek_kind(ctj_reader *r);

/* Consumes the byte c (after whitespace); false with a syntax error if the
 * next byte is something else. */
bool ctj_expect(ctj_reader *r, char c);

/* Walks the elements of an array or the members of an object whose opening
 * bracket was consumed. *count (0 before the first call) counts elements.
 * Returns 1 when an element follows (its separating comma consumed), 0 when
 * the closing bracket `close` was consumed, -1 on a syntax error. */
int ctj_next(ctj_reader *r, char close, size_t *count);

/* A string value: *s points to its decoded, NUL-terminated bytes (which may
 * contain NUL from a \u0000 escape: compare strlen(*s) with *n). */
bool ctj_string(ctj_reader *r, const char **s, size_t *n);

typedef enum ctj_num_kind {
    CTJ_UINT,           /* a non-negative integer that fits in uint64 (*value) */
    CTJ_UINT_OVERFLOW,  /* a non-negative integer above UINT64_MAX */
    CTJ_NEGATIVE,       /* an integer below zero */
    CTJ_FRACTIONAL      /* has a fraction or an exponent */
} ctj_num_kind;

/* A number value; text and text_len give its characters for messages. */
bool ctj_number(ctj_reader *r, ctj_num_kind *kind, uint64_t *value, const char **text,
                size_t *text_len);

/* One of the literals true, false, null. */
bool ctj_literal(ctj_reader *r, const char *word);

/* Only whitespace is left (JSON allows it after the value). */
bool ctj_end(ctj_reader *r);

/* ---- writer ------------------------------------------------------------------ */

typedef struct ctj_buf {
    char *data;
    size_t len, cap;
    bool oom;           /* an append failed; the contents are incomplete */
} ctj_buf;

void ctj_put(ctj_buf *b, const char *s, size_t n);
void ctj_put_str(ctj_buf *b, const char *s);   /* raw, no quotes */
void ctj_put_uint(ctj_buf *b, uint64_t v);
/* A quoted JSON string: ", \ and control characters escaped as serde_json
 * does (\b \f \n \r \t, \u00XX for the others), other bytes as they are. */
void ctj_put_quoted(ctj_buf *b, const char *s);
void ctj_buf_free(ctj_buf *b);

#endif /* CT_IO_JSON_H */
