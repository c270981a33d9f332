/*
 * json.c — the strict pull reader and the small writer of json.h.
 *
 * Every input byte is checked against RFC 8259; the first violation stops
 * the reader and records a message with its byte offset, so that a corrupt
 * header is reported precisely instead of being half-understood.
 */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ----------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is invalid
 * (Unicode 15, table 3-7: no overlong forms, no surrogates, <= U+10FFFF). */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

size_t ctj_utf8_invalid_at(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_sequence(s + i, n - i);
        if (k == 0) return i;
        i += k;
    }
    return n;
}

/* ---- reader ------------------------------------------------------------------------- */

void ctj_init(ctj_reader *r, const char *text, size_t len, char *strbuf) {
    memset(r, 0, sizeof *r);
    r->text = text;
    r->len = len;
    r->strbuf = strbuf;
}

#if defined(__GNUC__)
#  define CT_JSON_PRINTF __attribute__((format(printf, 2, 3)))
#else
#  define CT_JSON_PRINTF
#endif
static bool fail(ctj_reader *r, const char *fmt, ...) CT_JSON_PRINTF;

static bool fail(ctj_reader *r, const char *fmt, ...) {
    if (r->failed) return false;
    r->failed = true;
    int n = snprintf(r->error, sizeof r->error, "invalid JSON at byte %zu: ", r->pos);
    if (n < 0 || (size_t)n >= sizeof r->error) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error + n, sizeof r->error - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* A byte for a message: 'x' when printable ASCII, else 0xNN. */
static const char *show_byte(char c, char buf[8]) {
    unsigned char u = (unsigned char)c;
    if (u >= 0x20 && u < 0x7F && u != '\'')
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", u);
    return buf;
}

static void skip_ws(ctj_reader *r) {
    while (r->pos < r->len) {
        char c = r->text[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->pos++;
    }
}

char ctj_peek(ctj_reader *r) {
    skip_ws(r);
    return r->pos < r->len ? r->text[r->pos] : '\0';
}

const char *ctj_peek_kind(ctj_reader *r) {
    char c = ctj_peek(r);
    if (r->pos >= r->len) return "the end of the header";
    switch (c) {
    case '"': return "a string";
    case '{': return "an object";
    case '[': return "an array";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    default: return (c == '-' || (c >= '0' && c <= '9')) ? "a number" : "an invalid token";
    }
}

/* "expected X, found Y" for the byte at the current position. */
static bool fail_expected(ctj_reader *r, const char *what) {
    char b[8];
    if (r->pos >= r->len) return fail(r, "expected %s, found the end of the header", what);
    return fail(r, "expected %s, found %s", what, show_byte(r->text[r->pos], b));
}

bool ctj_expect(ctj_reader *r, char c) {
    if (r->failed) return false;
    if (ctj_peek(r) == c && r->pos < r->len) {
        r->pos++;
        return true;
    }
    char b[8];
    return fail_expected(r, show_byte(c, b));
}

int ctj_next(ctj_reader *r, char close, size_t *count) {
    if (r->failed) return -1;
    char c = ctj_peek(r), cb[8];
    bool at_end = r->pos >= r->len;
    if (!at_end && c == close) {
        r->pos++;
        return 0;
    }
    if (*count > 0) {
        if (at_end || c != ',') {
            char what[32];
            snprintf(what, sizeof what, "',' or %s", show_byte(close, cb));
            fail_expected(r, what);
            return -1;
        }
        r->pos++;
        c = ctj_peek(r);
        if (r->pos < r->len && c == close) {
            fail(r, "trailing comma before %s", show_byte(close, cb));
            return -1;
        }
    }
    if (r->pos >= r->len) {
        fail_expected(r, close == '}' ? "a key" : "a value");
        return -1;
    }
    (*count)++;
    return 1;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits after "\u" at the current position. */
static bool read_hex4(ctj_reader *r, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = r->pos < r->len ? hex_digit(r->text[r->pos]) : -1;
        if (d < 0) return fail_expected(r, "a hex digit in a \\u escape");
        v = v * 16 + (unsigned)d;
        r->pos++;
    }
    *out = v;
    return true;
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
    unsigned char *o = (unsigned char *)out + *n;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        *n += 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        *n += 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        *n += 3;
    } else {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        *n += 4;
    }
}

/* The escape after a backslash (already consumed); appends its bytes. */
static bool read_escape(ctj_reader *r, char *out, size_t *n) {
    if (r->pos >= r->len) return fail_expected(r, "an escape character");
    char c = r->text[r->pos++];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) {
        out[(*n)++] = to[hit - from];
        return true;
    }
    if (c != 'u') {
        r->pos--;
        return fail_expected(r, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
    }
    unsigned cp = 0;
    if (!read_hex4(r, &cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(r, "lone trailing surrogate \\u%04X", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned lo = 0;
        if (r->pos + 2 > r->len || r->text[r->pos] != '\\' || r->text[r->pos + 1] != 'u')
            return fail(r, "lone leading surrogate \\u%04X", cp);
        r->pos += 2;
        if (!read_hex4(r, &lo)) return false;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(r, "leading surrogate \\u%04X followed by \\u%04X", cp, lo);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    put_utf8(out, n, cp);
    return true;
}

bool ctj_string(ctj_reader *r, const char **s, size_t *n) {
    if (r->failed) return false;
    if (ctj_peek(r) != '"' || r->pos >= r->len) return fail_expected(r, "a string");
    r->pos++;
    /* Decoded text is never longer than its source (an escape of k bytes
     * yields at most k bytes), so strbuf (len + 1 bytes) always has room. */
    char *out = r->strbuf + r->strpos;
    size_t k = 0;
    for (;;) {
        if (r->pos >= r->len) return fail(r, "unterminated string");
        char c = r->text[r->pos];
        if (c == '"') break;
        if ((unsigned char)c < 0x20)
            return fail(r, "raw control character 0x%02x in a string", (unsigned)(unsigned char)c);
        r->pos++;
        if (c == '\\') {
            if (!read_escape(r, out, &k)) return false;
        } else {
            out[k++] = c;
        }
    }
    r->pos++;
    out[k] = '\0';
    r->strpos += k + 1;
    *s = out;
    *n = k;
    return true;
}

static bool is_digit(const ctj_reader *r) {
    return r->pos < r->len && r->text[r->pos] >= '0' && r->text[r->pos] <= '9';
}

bool ctj_number(ctj_reader *r, ctj_num_kind *kind, uint64_t *value, const char **text,
                size_t *text_len) {
    if (r->failed) return false;
    ctj_peek(r);
    size_t start = r->pos;
    bool negative = r->pos < r->len && r->text[r->pos] == '-';
    if (negative) r->pos++;
    if (!is_digit(r)) return fail_expected(r, "a number");
    uint64_t v = 0;
    bool overflow = false;
    if (r->text[r->pos] == '0') {
        r->pos++;
        if (is_digit(r)) return fail(r, "leading zero in a number");
    } else {
        while (is_digit(r)) {
            unsigned d = (unsigned)(r->text[r->pos++] - '0');
            if (v > (UINT64_MAX - d) / 10) overflow = true;
            v = v * 10 + d;
        }
    }
    bool fractional = false;
    if (r->pos < r->len && r->text[r->pos] == '.') {
        r->pos++;
        if (!is_digit(r)) return fail_expected(r, "a digit after the decimal point");
        while (is_digit(r)) r->pos++;
        fractional = true;
    }
    if (r->pos < r->len && (r->text[r->pos] == 'e' || r->text[r->pos] == 'E')) {
        r->pos++;
        if (r->pos < r->len && (r->text[r->pos] == '+' || r->text[r->pos] == '-')) r->pos++;
        if (!is_digit(r)) return fail_expected(r, "a digit in the exponent");
        while (is_digit(r)) r->pos++;
        fractional = true;
    }
    *kind = fractional ? CTJ_FRACTIONAL : negative ? CTJ_NEGATIVE : overflow ? CTJ_UINT_OVERFLOW : CTJ_UINT;
    *value = overflow ? UINT64_MAX : v;
    *text = r->text + start;
    *text_len = r->pos - start;
    return true;
}

bool ctj_literal(ctj_reader *r, const char *word) {
    if (r->failed) return false;
    ctj_peek(r);
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->text + r->pos, word, n) != 0) return fail_expected(r, word);
    r->pos += n;
    return true;
}

bool ctj_end(ctj_reader *r) {
    if (r->failed) return false;
    ctj_peek(r);
    if (r->pos == r->len) return true;
    char b[8];
    return fail(r, "unexpected %s after the end of the top-level object", show_byte(r->text[r->pos], b));
}

/* ---- writer ---------------------------------------------------------------------------- */

void ctj_put(ctj_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ctj_put_str(ctj_buf *b, const char *s) { ctj_put(b, s, strlen(s)); }

void ctj_put_uint(ctj_buf *b, uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    ctj_put(b, tmp, (size_t)n);
}

void ctj_put_quoted(ctj_buf *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    ctj_put(b, "\"", 1);
    const char *run = s; /* bytes copied as they are, in one piece */
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c != 0 && c >= 0x20 && c != '"' && c != '\\') continue;
        ctj_put(b, run, (size_t)(p - run));
        run = p + 1;
        if (c == 0) break;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            n = 6;
        }
        ctj_put(b, esc, n);
    }
    ctj_put(b, "\"", 1);
}

void ctj_buf_free(ctj_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
