/*
 * safetensors_read.c — ct_safetensors_load: reads a safetensors file (or a
 * buffer holding one) into a ct_tensor_dict.
 *
 * The file is untrusted input. Everything it declares is checked before it
 * is used, in this order, so that no size from the file reaches an
 * allocation or a read before it is known to fit:
 *   1. the 8-byte header length against a 100 MB cap and the file size;
 *   2. the header: valid UTF-8, starts with '{', strict JSON, only the keys
 *      the format defines, no duplicate names, integers in 0..2^53;
 *   3. the layout, as the reference validator does it: each shape's element
 *      count (overflow-checked) times the dtype size equals its byte range,
 *      and the ranges, sorted, tile the data buffer exactly (no overlap, no
 *      hole, nothing after the last tensor);
 *   4. dtypes ctorch supports and a shape ctorch can hold.
 * Only then are tensors allocated (their sizes add up to the data size,
 * which is at most the file size) and filled. A file that carries ctorch's
 * checksum (safetensors_checksum.c) is verified before step 2.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/crc32c.h"
#include "io/io_internal.h"
#include "io/json.h"
#include "io/safetensors_format.h"

/* JSON integers larger than this are refused (see docs/checkpoints.md). */
#define ST_MAX_INT (UINT64_C(1) << 53)

typedef struct st_entry {
    const char *name;      /* decoded, in the reader's string buffer */
    size_t name_len;
    const st_dtype_info *dtype;
    int ndim;
    uint64_t dims[CT_MAX_DIMS];
    uint64_t begin, end;   /* data_offsets */
    uint64_t nbytes;       /* what dtype and shape need */
    ct_tensor *tensor;     /* once loaded (untracked) */
} st_entry;

typedef struct st_meta {
    const char *key, *value;
    size_t key_len, value_len;
} st_meta;

typedef struct st_load {
    const char *what;      /* the path, or "<buffer>", for messages */
    int fd;                /* -1 when reading from memory */
    const unsigned char *mem;
    uint64_t file_size, header_len, data_len;
    char *header_copy;     /* the header read from fd (NULL for memory) */
    const char *header;
    char *strbuf;
    ctj_reader json;
    st_entry *entries;
    size_t count, cap;
    st_meta *meta;
    size_t meta_count, meta_cap;
    bool saw_metadata;
} st_load;

/* ---- errors ------------------------------------------------------------------------ */

static ct_status fail_v(const st_load *L, ct_status code, const st_entry *e, const char *fmt,
                        va_list ap) {
    char msg[640], q[CTI_QUOTE_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (e)
        return ct_error_set(code, "safetensors_load: %.300s: tensor '%s': %s", L->what,
                            cti_io_quote(q, e->name, e->name_len), msg);
    return ct_error_set(code, "safetensors_load: %.300s: %s", L->what, msg);
}

static ct_status fail(const st_load *L, ct_status code, const char *fmt, ...) CT_PRINTF(3, 4);
static ct_status fail(const st_load *L, ct_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ct_status s = fail_v(L, code, NULL, fmt, ap);
    va_end(ap);
    return s;
}

static ct_status fail_entry(const st_load *L, ct_status code, const st_entry *e, const char *fmt, ...)
    CT_PRINTF(4, 5);
static ct_status fail_entry(const st_load *L, ct_status code, const st_entry *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ct_status s = fail_v(L, code, e, fmt, ap);
    va_end(ap);
    return s;
}

static ct_status fail_json(st_load *L) {
    return fail(L, CT_ERR_FORMAT, "header: %s", L->json.error);
}

/* "[2, 3]" for messages. */
static const char *dims_str(const uint64_t *dims, int ndim, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

/* ---- the header ---------------------------------------------------------------------- */

static bool has_nul(const char *s, size_t n) { return strlen(s) != n; }

/* A JSON array of at most `max` integers in 0..2^53 into out[]; *n gets the
 * count. `field` names it in messages. */
static ct_status parse_uint_array(st_load *L, const st_entry *e, const char *field, uint64_t *out,
                                  int max, int *n) {
    ctj_reader *r = &L->json;
    if (ctj_peek(r) != '[')
        return fail_entry(L, CT_ERR_FORMAT, e, "'%s' must be an array of non-negative integers, found %s",
                          field, ctj_peek_kind(r));
    ctj_expect(r, '[');
    size_t count = 0;
    int more;
    while ((more = ctj_next(r, ']', &count)) == 1) {
        const char *kind = ctj_peek_kind(r);
        if (strcmp(kind, "a number") != 0)
            return fail_entry(L, CT_ERR_FORMAT, e, "'%s' must hold non-negative integers, found %s",
                              field, kind);
        ctj_num_kind nk;
        uint64_t v;
        const char *text;
        size_t text_len;
        if (!ctj_number(r, &nk, &v, &text, &text_len)) return fail_json(L);
        int shown = (int)(text_len < 40 ? text_len : 40); /* the header is not NUL-terminated */
        if (nk == CTJ_NEGATIVE || nk == CTJ_FRACTIONAL)
            return fail_entry(L, CT_ERR_FORMAT, e, "'%s' value %.*s is not a non-negative integer",
                              field, shown, text);
        if (nk == CTJ_UINT_OVERFLOW || v > ST_MAX_INT)
            return fail_entry(L, CT_ERR_FORMAT, e, "'%s' value %.*s is too large (the limit is 2^53)",
                              field, shown, text);
        if ((int)count > max) {
            if (max == CT_MAX_DIMS)
                return fail_entry(L, CT_ERR_UNSUPPORTED, e,
                                  "shape has more than %d dimensions, the most ctorch supports",
                                  CT_MAX_DIMS);
            return fail_entry(L, CT_ERR_FORMAT, e, "'%s' must hold exactly %d values, found more",
                              field, max);
        }
        out[count - 1] = v;
    }
    if (more < 0) return fail_json(L);
    *n = (int)count;
    return CT_OK;
}

static ct_status parse_dtype(st_load *L, st_entry *e) {
    ctj_reader *r = &L->json;
    if (ctj_peek(r) != '"')
        return fail_entry(L, CT_ERR_FORMAT, e, "'dtype' must be a string, found %s", ctj_peek_kind(r));
    const char *s;
    size_t n;
    if (!ctj_string(r, &s, &n)) return fail_json(L);
    e->dtype = st_dtype_by_name(s, n);
    char q[CTI_QUOTE_MAX];
    if (!e->dtype) return fail_entry(L, CT_ERR_FORMAT, e, "unknown dtype '%s'", cti_io_quote(q, s, n));
    return CT_OK;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} for the tensor `name`. */
static ct_status parse_entry(st_load *L, const char *name, size_t name_len) {
    ctj_reader *r = &L->json;
    st_entry e = {.name = name, .name_len = name_len};
    char q[CTI_QUOTE_MAX];
    if (has_nul(name, name_len))
        return fail(L, CT_ERR_FORMAT, "tensor name '%s' contains a NUL character",
                    cti_io_quote(q, name, name_len));
    if (ctj_peek(r) != '{')
        return fail_entry(L, CT_ERR_FORMAT, &e,
                          "expected an object with dtype, shape and data_offsets, found %s",
                          ctj_peek_kind(r));
    ctj_expect(r, '{');
    bool seen[3] = {false, false, false};
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    size_t count = 0;
    int more;
    while ((more = ctj_next(r, '}', &count)) == 1) {
        const char *key;
        size_t klen;
        if (!ctj_string(r, &key, &klen) || !ctj_expect(r, ':')) return fail_json(L);
        int f = 0;
        while (f < 3 && !(strlen(fields[f]) == klen && memcmp(fields[f], key, klen) == 0)) f++;
        if (f == 3)
            return fail_entry(L, CT_ERR_FORMAT, &e,
                              "unexpected key '%s' (an entry holds only dtype, shape and data_offsets)",
                              cti_io_quote(q, key, klen));
        if (seen[f]) return fail_entry(L, CT_ERR_FORMAT, &e, "duplicate key '%s'", fields[f]);
        seen[f] = true;
        int n = 0;
        if (f == 0) {
            CT_TRY(parse_dtype(L, &e));
        } else if (f == 1) {
            CT_TRY(parse_uint_array(L, &e, "shape", e.dims, CT_MAX_DIMS, &e.ndim));
        } else {
            uint64_t off[2] = {0, 0};
            CT_TRY(parse_uint_array(L, &e, "data_offsets", off, 2, &n));
            if (n != 2)
                return fail_entry(L, CT_ERR_FORMAT, &e,
                                  "'data_offsets' must hold exactly 2 values [begin, end], found %d", n);
            e.begin = off[0];
            e.end = off[1];
        }
    }
    if (more < 0) return fail_json(L);
    for (int f = 0; f < 3; f++)
        if (!seen[f]) return fail_entry(L, CT_ERR_FORMAT, &e, "missing '%s'", fields[f]);
    if (L->count == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 16;
        st_entry *p = realloc(L->entries, cap * sizeof *p);
        if (!p) return fail(L, CT_ERR_OOM, "out of memory reading the header");
        L->entries = p;
        L->cap = cap;
    }
    L->entries[L->count++] = e;
    return CT_OK;
}

/* "__metadata__": null or an object of strings. */
static ct_status parse_metadata(st_load *L) {
    ctj_reader *r = &L->json;
    if (L->saw_metadata) return fail(L, CT_ERR_FORMAT, "duplicate key '__metadata__' in the header");
    L->saw_metadata = true;
    if (ctj_peek(r) == 'n') return ctj_literal(r, "null") ? CT_OK : fail_json(L);
    if (ctj_peek(r) != '{')
        return fail(L, CT_ERR_FORMAT, "'__metadata__' must be an object of strings, found %s",
                    ctj_peek_kind(r));
    ctj_expect(r, '{');
    size_t count = 0;
    int more;
    char q[CTI_QUOTE_MAX];
    while ((more = ctj_next(r, '}', &count)) == 1) {
        st_meta m;
        if (!ctj_string(r, &m.key, &m.key_len) || !ctj_expect(r, ':')) return fail_json(L);
        if (ctj_peek(r) != '"')
            return fail(L, CT_ERR_FORMAT, "metadata value of '%s' must be a string, found %s",
                        cti_io_quote(q, m.key, m.key_len), ctj_peek_kind(r));
        if (!ctj_string(r, &m.value, &m.value_len)) return fail_json(L);
        if (has_nul(m.key, m.key_len) || has_nul(m.value, m.value_len))
            return fail(L, CT_ERR_FORMAT, "metadata entry '%s' contains a NUL character",
                        cti_io_quote(q, m.key, m.key_len));
        if (L->meta_count == L->meta_cap) {
            size_t cap = L->meta_cap ? 2 * L->meta_cap : 8;
            st_meta *p = realloc(L->meta, cap * sizeof *p);
            if (!p) return fail(L, CT_ERR_OOM, "out of memory reading the header");
            L->meta = p;
            L->meta_cap = cap;
        }
        L->meta[L->meta_count++] = m;
    }
    return more < 0 ? fail_json(L) : CT_OK;
}

static ct_status parse_header(st_load *L) {
    const unsigned char *h = (const unsigned char *)L->header;
    size_t n = (size_t)L->header_len;
    size_t bad = ctj_utf8_invalid_at(h, n);
    if (bad != n)
        return fail(L, CT_ERR_FORMAT, "header is not valid UTF-8 (byte 0x%02x at header offset %zu)",
                    (unsigned)h[bad], bad);
    if (n == 0 || h[0] != '{')
        return fail(L, CT_ERR_FORMAT, "header does not start with '{' (%s)",
                    n == 0 ? "it is empty" : "found another byte");
    L->strbuf = malloc(n + 1);
    if (!L->strbuf) return fail(L, CT_ERR_OOM, "out of memory reading a %zu-byte header", n);
    ctj_reader *r = &L->json;
    ctj_init(r, L->header, n, L->strbuf);
    ctj_expect(r, '{');
    size_t count = 0;
    int more;
    while ((more = ctj_next(r, '}', &count)) == 1) {
        const char *key;
        size_t klen;
        if (!ctj_string(r, &key, &klen) || !ctj_expect(r, ':')) return fail_json(L);
        if (klen == 12 && memcmp(key, "__metadata__", 12) == 0)
            CT_TRY(parse_metadata(L));
        else
            CT_TRY(parse_entry(L, key, klen));
    }
    if (more < 0 || !ctj_end(r)) return fail_json(L);
    return CT_OK;
}

/* ---- checks across entries -------------------------------------------------------------- */

static int by_name(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

static int by_offsets(const void *pa, const void *pb) {
    const st_entry *a = *(st_entry *const *)pa, *b = *(st_entry *const *)pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Sorts entries by name (the dict's order) and refuses repeated names and
 * metadata keys. Metadata keeps its file order; duplicates are found on a
 * sorted copy. */
static ct_status check_duplicates(st_load *L) {
    char q[CTI_QUOTE_MAX];
    if (L->count > 1) qsort(L->entries, L->count, sizeof *L->entries, by_name);
    for (size_t i = 1; i < L->count; i++)
        if (strcmp(L->entries[i - 1].name, L->entries[i].name) == 0)
            return fail(L, CT_ERR_FORMAT, "duplicate tensor name '%s' in the header",
                        cti_io_quote(q, L->entries[i].name, L->entries[i].name_len));
    if (L->meta_count < 2) return CT_OK;
    st_meta *sorted = malloc(L->meta_count * sizeof *sorted);
    if (!sorted) return fail(L, CT_ERR_OOM, "out of memory checking the metadata");
    memcpy(sorted, L->meta, L->meta_count * sizeof *sorted);
    qsort(sorted, L->meta_count, sizeof *sorted, by_key);
    ct_status s = CT_OK;
    for (size_t i = 1; i < L->meta_count && s == CT_OK; i++)
        if (strcmp(sorted[i - 1].key, sorted[i].key) == 0)
            s = fail(L, CT_ERR_FORMAT, "duplicate metadata key '%s'",
                     cti_io_quote(q, sorted[i].key, sorted[i].key_len));
    free(sorted);
    return s;
}

/* Bytes that dtype and shape need, overflow-checked. The product of the
 * non-zero dims must fit in int64 even for an empty tensor, so that
 * ctorch's strides cannot overflow either. */
static ct_status entry_nbytes(const st_load *L, st_entry *e) {
    uint64_t nonzero = 1, bits;
    bool empty = false;
    char shape[CT_SHAPE_STR_MAX];
    for (int d = 0; d < e->ndim; d++) {
        if (e->dims[d] == 0) {
            empty = true;
        } else if (__builtin_mul_overflow(nonzero, e->dims[d], &nonzero) || nonzero > INT64_MAX) {
            return fail_entry(L, CT_ERR_FORMAT, e, "shape %s has too many elements",
                              dims_str(e->dims, e->ndim, shape, sizeof shape));
        }
    }
    uint64_t numel = empty ? 0 : nonzero;
    if (__builtin_mul_overflow(numel, (uint64_t)e->dtype->bits, &bits))
        return fail_entry(L, CT_ERR_FORMAT, e, "shape %s has too many elements",
                          dims_str(e->dims, e->ndim, shape, sizeof shape));
    if (bits % 8 != 0)
        return fail_entry(L, CT_ERR_FORMAT, e, "%llu elements of %s do not fill whole bytes",
                          (unsigned long long)numel, e->dtype->name);
    e->nbytes = bits / 8;
    return CT_OK;
}

/* The reference validator: sorted by offsets, each range starts where the
 * previous one ended, holds exactly what dtype and shape need, and the last
 * one ends at the end of the file. */
static ct_status check_layout(st_load *L, st_entry **order) {
    for (size_t i = 0; i < L->count; i++) {
        CT_TRY(entry_nbytes(L, &L->entries[i]));
        order[i] = &L->entries[i];
    }
    if (L->count > 1) qsort(order, L->count, sizeof *order, by_offsets);
    uint64_t start = 0;
    const st_entry *prev = NULL;
    char q[CTI_QUOTE_MAX], shape[CT_SHAPE_STR_MAX];
    for (size_t i = 0; i < L->count; i++) {
        const st_entry *e = order[i];
        unsigned long long b = e->begin, en = e->end;
        if (e->end < e->begin)
            return fail_entry(L, CT_ERR_FORMAT, e, "data_offsets [%llu, %llu] end before they begin", b, en);
        if (e->end > L->data_len)
            return fail_entry(L, CT_ERR_FORMAT, e,
                              "data_offsets [%llu, %llu] go past the end of the data (%llu bytes)", b,
                              en, (unsigned long long)L->data_len);
        if (e->begin < start)
            return fail_entry(L, CT_ERR_FORMAT, e,
                              "data_offsets [%llu, %llu] overlap tensor '%s' at [%llu, %llu]", b, en,
                              cti_io_quote(q, prev->name, prev->name_len),
                              (unsigned long long)prev->begin, (unsigned long long)prev->end);
        if (e->begin > start)
            return fail_entry(L, CT_ERR_FORMAT, e,
                              "data_offsets [%llu, %llu] leave a hole after byte %llu (tensors must "
                              "cover the data without gaps)", b, en, (unsigned long long)start);
        if (e->end - e->begin != e->nbytes)
            return fail_entry(L, CT_ERR_FORMAT, e,
                              "data_offsets [%llu, %llu] hold %llu bytes but dtype %s and shape %s need %llu",
                              b, en, en - b, e->dtype->name, dims_str(e->dims, e->ndim, shape, sizeof shape),
                              (unsigned long long)e->nbytes);
        start = e->end;
        prev = e;
    }
    if (start != L->data_len)
        return fail(L, CT_ERR_FORMAT,
                    "the tensors cover %llu bytes but %llu follow the header (no trailing bytes are allowed)",
                    (unsigned long long)start, (unsigned long long)L->data_len);
    for (size_t i = 0; i < L->count; i++)
        if (order[i]->dtype->dtype == CT_DTYPE_DEFAULT)
            return fail_entry(L, CT_ERR_DTYPE, order[i],
                              "dtype %s is not supported by ctorch (it reads BOOL, U8, I8, I32, I64, F16, "
                              "BF16, F32 and F64)", order[i]->dtype->name);
    return CT_OK;
}

/* ---- data -------------------------------------------------------------------------------- */

/* n bytes at file offset off (already checked to lie inside the file). */
static ct_status read_at(const st_load *L, uint64_t off, void *dst, size_t n) {
    if (!L->mem) {
        unsigned char *p = dst;
        while (n > 0) {
            ssize_t k = pread(L->fd, p, n, (off_t)off);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0)
                return fail(L, CT_ERR_IO, "read error at byte %llu: %s", (unsigned long long)off,
                            strerror(errno));
            if (k == 0)
                return fail(L, CT_ERR_IO, "unexpected end of file at byte %llu (did the file change "
                            "while it was read?)", (unsigned long long)off);
            p += k, n -= (size_t)k, off += (uint64_t)k;
        }
        return CT_OK;
    }
    CT_ASSERT(off <= L->file_size && n <= L->file_size - off);
    memcpy(dst, L->mem + off, n);
    return CT_OK;
}

static ct_status load_entry(st_load *L, st_entry *e, ct_device device) {
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) shape[d] = (int64_t)e->dims[d];
    ct_tensor *t = ct_tensor_alloc(shape, e->ndim, e->dtype->dtype, ct_device_cpu());
    if (!t) return fail_entry(L, ct_last_status(), e, "%s", ct_last_error());
    if (e->nbytes > 0) {
        unsigned char *p = ct_data_ptr(t);
        ct_status s = read_at(L, 8 + L->header_len + e->begin, p, (size_t)e->nbytes);
        if (s != CT_OK) {
            ct_decref(t);
            return s;
        }
        if (e->dtype->dtype == CT_BOOL)
            for (uint64_t i = 0; i < e->nbytes; i++) p[i] = p[i] != 0;
        if (!st_host_is_little_endian())
            st_swap_elements(p, (size_t)e->nbytes, ct_dtype_size(e->dtype->dtype));
    }
    if (device.type != CT_DEVICE_CPU) {
        ct_tensor *moved = cti_to_device(t, device);
        ct_decref(t);
        if (!moved) return fail_entry(L, ct_last_status(), e, "%s", ct_last_error());
        t = moved;
    }
    e->tensor = t;
    return CT_OK;
}

static ct_status build_dict(st_load *L, ct_tensor_dict **out) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    if (!d) return ct_last_status();
    cti_dict_clear_metadata(d);
    ct_status s = CT_OK;
    for (size_t i = 0; i < L->meta_count && s == CT_OK; i++)
        s = cti_dict_append_metadata(d, L->meta[i].key, L->meta[i].key_len, L->meta[i].value,
                                     L->meta[i].value_len);
    for (size_t i = 0; i < L->count && s == CT_OK; i++) {
        s = cti_dict_append(d, L->entries[i].name, L->entries[i].name_len, L->entries[i].tensor);
        L->entries[i].tensor = NULL; /* the dict owns it now, or released it */
    }
    if (s != CT_OK) {
        ct_tensor_dict_free(d);
        return s;
    }
    *out = d;
    return CT_OK;
}

/* The whole-file CRC of safetensors_checksum.c, when the header has one:
 * checked before anything in the header is believed, so damage that breaks
 * the JSON is still reported as damage. */
static ct_status verify_checksum(const st_load *L) {
    size_t at;
    uint32_t stored;
    int found = cti_st_checksum_find(L->header, (size_t)L->header_len, &at, &stored);
    if (found < 0)
        return fail(L, CT_ERR_FORMAT, "checksum entry \"%s\" is damaged (its value is not 8 hex digits)",
                    CT_SAFETENSORS_CHECKSUM_KEY);
    if (found == 0) return CT_OK;
    const uint64_t digits = 8 + at, data_start = 8 + L->header_len;
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)(L->header_len >> (8 * i));
    uint32_t crc = cti_st_checksum_extend(0, len_bytes, 8, 0, digits);
    crc = cti_st_checksum_extend(crc, L->header, (size_t)L->header_len, 8, digits);
    if (L->mem) {
        crc = cti_crc32c_extend(crc, L->mem + data_start, (size_t)L->data_len);
    } else {
        enum { CHUNK = 1 << 20 };
        unsigned char *buf = malloc(CHUNK);
        if (!buf) return fail(L, CT_ERR_OOM, "out of memory verifying the checksum");
        ct_status s = CT_OK;
        for (uint64_t off = data_start; off < L->file_size && s == CT_OK;) {
            size_t n = L->file_size - off < CHUNK ? (size_t)(L->file_size - off) : CHUNK;
            s = read_at(L, off, buf, n);
            if (s == CT_OK) crc = cti_crc32c_extend(crc, buf, n);
            off += n;
        }
        free(buf);
        CT_TRY(s);
    }
    if (crc != stored)
        return fail(L, CT_ERR_FORMAT, "checksum mismatch: the file is damaged (its \"%s\" is %08x, its bytes "
                    "give %08x)", CT_SAFETENSORS_CHECKSUM_KEY, (unsigned)stored, (unsigned)crc);
    return CT_OK;
}

/* Steps 2-4 and the data, once the header bytes are in L->header. */
static ct_status load_tensors(st_load *L, ct_device device, ct_tensor_dict **out) {
    CT_TRY(verify_checksum(L));
    CT_TRY(parse_header(L));
    CT_TRY(check_duplicates(L));
    st_entry **order = malloc((L->count ? L->count : 1) * sizeof *order);
    if (!order) return fail(L, CT_ERR_OOM, "out of memory checking the header");
    ct_status s = check_layout(L, order);
    for (size_t i = 0; i < L->count && s == CT_OK; i++) s = load_entry(L, order[i], device);
    free(order);
    if (s == CT_OK) s = build_dict(L, out);
    for (size_t i = 0; i < L->count; i++) ct_decref(L->entries[i].tensor);
    return s;
}

/* Step 1: the header length against the cap and the file size. */
static ct_status check_header_length(st_load *L, const unsigned char len_bytes[8]) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len_bytes[i];
    if (n > CT_SAFETENSORS_MAX_HEADER)
        return fail(L, CT_ERR_FORMAT, "header length %llu exceeds the limit of %d bytes",
                    (unsigned long long)n, CT_SAFETENSORS_MAX_HEADER);
    if (n > L->file_size - 8)
        return fail(L, CT_ERR_FORMAT, "header length %llu runs past the end of the file (%llu bytes)",
                    (unsigned long long)n, (unsigned long long)L->file_size);
    L->header_len = n;
    L->data_len = L->file_size - 8 - n;
    return CT_OK;
}

static ct_status check_file_size(const st_load *L) {
    if (L->file_size < 8)
        return fail(L, CT_ERR_FORMAT,
                    "file is too small (%llu bytes) to hold the 8-byte header length of a safetensors file",
                    (unsigned long long)L->file_size);
    return CT_OK;
}

static void load_free(st_load *L) {
    free(L->header_copy);
    free(L->strbuf);
    free(L->entries);
    free(L->meta);
}

static ct_status start(ct_tensor_dict **out, ct_device device, ct_device *resolved) {
    CT_CHECK_STATUS(out, CT_ERR_INVALID_ARG, "safetensors_load: NULL output pointer");
    *out = NULL;
    return ct_device_check(device, resolved);
}

ct_status ct_safetensors_load_buffer(const void *data, size_t size, ct_device device,
                                     ct_tensor_dict **out) {
    ct_device dev;
    CT_TRY(start(out, device, &dev));
    CT_CHECK_STATUS(data || size == 0, CT_ERR_INVALID_ARG, "safetensors_load: NULL buffer");
    st_load L = {.what = "<buffer>", .fd = -1, .mem = data, .file_size = size};
    unsigned char empty[8] = {0};
    ct_status s = check_file_size(&L);
    if (s == CT_OK) s = check_header_length(&L, size >= 8 ? L.mem : empty);
    if (s == CT_OK) {
        L.header = (const char *)L.mem + 8;
        s = load_tensors(&L, dev, out);
    }
    load_free(&L);
    return s;
}

ct_status ct_safetensors_load(const char *path, ct_device device, ct_tensor_dict **out) {
    ct_device dev;
    CT_TRY(start(out, device, &dev));
    CT_CHECK_STATUS(path, CT_ERR_INVALID_ARG, "safetensors_load: NULL path");
    /* O_NONBLOCK: opening a FIFO must not hang (it is refused below) */
    st_load L = {.what = path, .fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (L.fd < 0)
        return ct_error_set(CT_ERR_IO, "safetensors_load: cannot open '%.300s': %s", path, strerror(errno));
    struct stat st;
    ct_status s = CT_OK;
    if (fstat(L.fd, &st) != 0)
        s = fail(&L, CT_ERR_IO, "cannot stat the file: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = fail(&L, CT_ERR_IO, "not a regular file");
    if (s == CT_OK) {
        L.file_size = (uint64_t)st.st_size;
        s = check_file_size(&L);
    }
    unsigned char len_bytes[8];
    if (s == CT_OK) s = read_at(&L, 0, len_bytes, 8);
    if (s == CT_OK) s = check_header_length(&L, len_bytes);
    if (s == CT_OK) {
        /* header_len is at most 100 MB and within the file */
        L.header_copy = malloc(L.header_len ? (size_t)L.header_len : 1);
        if (!L.header_copy) s = fail(&L, CT_ERR_OOM, "out of memory reading the header");
    }
    if (s == CT_OK) s = read_at(&L, 8, L.header_copy, (size_t)L.header_len);
    if (s == CT_OK) {
        L.header = L.header_copy;
        s = load_tensors(&L, dev, out);
    }
    close(L.fd);
    load_free(&L);
    return s;
}
