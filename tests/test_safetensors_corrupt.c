/*
 * test_safetensors_corrupt.c — the safetensors reader against hostile input:
 * handcrafted corrupt files (bad lengths, truncations, bad UTF-8 and JSON,
 * unknown dtypes, bad shapes and offsets, overlaps, holes, duplicates), each
 * refused with the expected code and message, from memory and from a file
 * (whose message must name the path); odd but valid files that must load;
 * and random mutations of a valid file, which must never crash (run under
 * ASan/UBSan to make that check sharp). Also white-box tests of the JSON
 * reader and writer (src/io/json.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <sys/stat.h>

#include "ctorch/io.h"
#include "io/json.h"
#include "io/safetensors_format.h"
#include "st_testutil.h"
#include "testutil.h"

#define W_OK_ENTRY "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"
#define ENTRY(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"

typedef struct corrupt_case {
    const char *header;
    size_t data_len;
    ct_status code;
    const char *message;
} corrupt_case;

static const corrupt_case cases[] = {
    /* UTF-8 and the first byte */
    {"{\"w\xff\":{}}", 0, CT_ERR_FORMAT, "header is not valid UTF-8 (byte 0xff at header offset 3)"},
    {"{\"\xc0\xaf\":{}}", 0, CT_ERR_FORMAT, "not valid UTF-8 (byte 0xc0 at header offset 2)"},
    {"{\"\xed\xa0\x80\":{}}", 0, CT_ERR_FORMAT, "not valid UTF-8 (byte 0xed"},
    {"{\"\xf4\x90\x80\x80\":{}}", 0, CT_ERR_FORMAT, "not valid UTF-8 (byte 0xf4"},
    {"{}\xe2\x82", 0, CT_ERR_FORMAT, "not valid UTF-8 (byte 0xe2 at header offset 2)"},
    {" {}", 0, CT_ERR_FORMAT, "header does not start with '{'"},
    {"[]", 0, CT_ERR_FORMAT, "header does not start with '{'"},
    /* JSON syntax */
    {"{\"w\" {}}", 0, CT_ERR_FORMAT, "header: invalid JSON at byte 5: expected ':', found '{'"},
    {"{" W_OK_ENTRY ",}", 24, CT_ERR_FORMAT, "trailing comma before '}'"},
    {"{\"w", 0, CT_ERR_FORMAT, "unterminated string"},
    {"{}x", 0, CT_ERR_FORMAT, "unexpected 'x' after the end of the top-level object"},
    {"{}    \0   ", 0, CT_ERR_FORMAT, "unexpected 0x00 after the end"},
    {"{" W_OK_ENTRY, 24, CT_ERR_FORMAT, "expected ',' or '}', found the end of the header"},
    {"{\"\\ud800\":{}}", 0, CT_ERR_FORMAT, "lone leading surrogate \\uD800"},
    {"{\"\\udc00\":{}}", 0, CT_ERR_FORMAT, "lone trailing surrogate \\uDC00"},
    {"{\"a\tb\":{}}", 0, CT_ERR_FORMAT, "raw control character 0x09 in a string"},
    {"{\"a\\x41\":{}}", 0, CT_ERR_FORMAT, "expected a valid escape"},
    {"{'w':{}}", 0, CT_ERR_FORMAT, "expected a string, found 0x27"},
    {"{" ENTRY("w", "F32", "[02,3]", "0", "24") "}", 24, CT_ERR_FORMAT, "leading zero in a number"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}}", 24, CT_ERR_FORMAT,
     "unexpected '}' after the end"},
    /* dtypes */
    {"{" ENTRY("w", "F128", "[2,3]", "0", "24") "}", 24, CT_ERR_FORMAT, "tensor 'w': unknown dtype 'F128'"},
    {"{" ENTRY("w", "f32", "[2,3]", "0", "24") "}", 24, CT_ERR_FORMAT, "tensor 'w': unknown dtype 'f32'"},
    {"{" ENTRY("w", "I16", "[2,3]", "0", "12") "}", 12, CT_ERR_DTYPE,
     "tensor 'w': dtype I16 is not supported by ctorch"},
    {"{" ENTRY("w", "F4", "[4]", "0", "2") "}", 2, CT_ERR_DTYPE, "tensor 'w': dtype F4 is not supported"},
    {"{" ENTRY("w", "F4", "[3]", "0", "1") "}", 1, CT_ERR_FORMAT, "3 elements of F4 do not fill whole bytes"},
    {"{\"w\":{\"dtype\":32,\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, CT_ERR_FORMAT,
     "tensor 'w': 'dtype' must be a string, found a number"},
    /* shapes */
    {"{" ENTRY("w", "F32", "[-2,3]", "0", "24") "}", 24, CT_ERR_FORMAT,
     "tensor 'w': 'shape' value -2 is not a non-negative integer"},
    {"{" ENTRY("w", "F32", "[2.0,3]", "0", "24") "}", 24, CT_ERR_FORMAT, "'shape' value 2.0 is not"},
    {"{" ENTRY("w", "F32", "[2e0,3]", "0", "24") "}", 24, CT_ERR_FORMAT, "'shape' value 2e0 is not"},
    {"{" ENTRY("w", "F32", "[18446744073709551616]", "0", "0") "}", 0, CT_ERR_FORMAT,
     "'shape' value 18446744073709551616 is too large (the limit is 2^53)"},
    {"{" ENTRY("w", "F32", "[9007199254740993]", "0", "0") "}", 0, CT_ERR_FORMAT,
     "'shape' value 9007199254740993 is too large"},
    /* products that wrap to exactly 0 or overflow (LiteRT #9254, stable-diffusion.cpp #1875) */
    {"{" ENTRY("w", "F32", "[4294967296,4294967296]", "0", "0") "}", 0, CT_ERR_FORMAT,
     "tensor 'w': shape [4294967296, 4294967296] has too many elements"},
    {"{" ENTRY("w", "U8", "[2147483648,2147483648,2147483648]", "0", "0") "}", 0, CT_ERR_FORMAT,
     "has too many elements"},
    {"{" ENTRY("w", "F64", "[4503599627370496,256]", "0", "0") "}", 0, CT_ERR_FORMAT,
     "shape [4503599627370496, 256] has too many elements"},
    {"{" ENTRY("w", "F32", "[1,1,1,1,1,1,1,1,1]", "0", "4") "}", 4, CT_ERR_UNSUPPORTED,
     "shape has more than 8 dimensions"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":6,\"data_offsets\":[0,24]}}", 24, CT_ERR_FORMAT,
     "'shape' must be an array of non-negative integers, found a number"},
    {"{" ENTRY("w", "F32", "[\"2\",3]", "0", "24") "}", 24, CT_ERR_FORMAT,
     "'shape' must hold non-negative integers, found a string"},
    /* offsets */
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24,48]}}", 48, CT_ERR_FORMAT,
     "'data_offsets' must hold exactly 2 values, found more"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24]}}", 24, CT_ERR_FORMAT,
     "'data_offsets' must hold exactly 2 values [begin, end], found 1"},
    {"{" ENTRY("w", "F32", "[2,3]", "24", "0") "}", 24, CT_ERR_FORMAT,
     "tensor 'w': data_offsets [24, 0] end before they begin"},
    {"{" W_OK_ENTRY "}", 16, CT_ERR_FORMAT, "tensor 'w': data_offsets [0, 24] go past the end of the data (16 bytes)"},
    {"{" ENTRY("a", "F32", "[2,3]", "0", "24") "," ENTRY("b", "F32", "[2,3]", "16", "40") "}", 40,
     CT_ERR_FORMAT, "tensor 'b': data_offsets [16, 40] overlap tensor 'a' at [0, 24]"},
    {"{" ENTRY("a", "F32", "[2,3]", "0", "24") "," ENTRY("b", "F32", "[2,3]", "0", "24") "}", 24,
     CT_ERR_FORMAT, "tensor 'b': data_offsets [0, 24] overlap tensor 'a' at [0, 24]"},
    {"{" ENTRY("a", "F32", "[2,3]", "0", "24") "," ENTRY("b", "F32", "[2,3]", "32", "56") "}", 56,
     CT_ERR_FORMAT, "tensor 'b': data_offsets [32, 56] leave a hole after byte 24"},
    {"{" ENTRY("w", "F32", "[2,3]", "8", "32") "}", 32, CT_ERR_FORMAT, "leave a hole after byte 0"},
    {"{" ENTRY("w", "F32", "[2,3]", "0", "20") "}", 20, CT_ERR_FORMAT,
     "tensor 'w': data_offsets [0, 20] hold 20 bytes but dtype F32 and shape [2, 3] need 24"},
    {"{" W_OK_ENTRY "}", 30, CT_ERR_FORMAT,
     "the tensors cover 24 bytes but 30 follow the header (no trailing bytes are allowed)"},
    {"{" ENTRY("w", "F32", "[2,3]", "1152921504606846976", "1152921504606847000") "}", 24, CT_ERR_FORMAT,
     "'data_offsets' value 1152921504606846976 is too large"},
    {"{" ENTRY("w", "F32", "[2,3]", "-8", "16") "}", 24, CT_ERR_FORMAT,
     "'data_offsets' value -8 is not a non-negative integer"},
    /* duplicates and structure */
    {"{" W_OK_ENTRY "," ENTRY("w", "F32", "[0]", "24", "24") "}", 24, CT_ERR_FORMAT,
     "duplicate tensor name 'w' in the header"},
    {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24,
     CT_ERR_FORMAT, "tensor 'w': duplicate key 'dtype'"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, CT_ERR_FORMAT, "duplicate key '__metadata__'"},
    {"{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"3\"}}", 0, CT_ERR_FORMAT, "duplicate metadata key 'k'"},
    {"{\"__metadata__\":{\"k\":1}}", 0, CT_ERR_FORMAT, "metadata value of 'k' must be a string, found a number"},
    {"{\"__metadata__\":[]}", 0, CT_ERR_FORMAT, "'__metadata__' must be an object of strings, found an array"},
    {"{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, CT_ERR_FORMAT, "metadata entry 'k' contains a NUL character"},
    {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,24]}}", 24, CT_ERR_FORMAT, "tensor 'w': missing 'shape'"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],\"strides\":[3,1]}}", 24,
     CT_ERR_FORMAT, "tensor 'w': unexpected key 'strides'"},
    {"{\"w\":[]}", 0, CT_ERR_FORMAT, "tensor 'w': expected an object with dtype, shape and data_offsets, found an array"},
    {"{\"w\":true}", 0, CT_ERR_FORMAT, "found a boolean"},
    {"{\"a\\u0000b\":{}}", 0, CT_ERR_FORMAT, "tensor name 'a\\x00b' contains a NUL character"},
    {"{\"\\n\\u0001\\u007f\":[]}", 0, CT_ERR_FORMAT, "tensor '\\x0a\\x01\\x7f': expected an object"},
};

/* Loads bytes from memory and from a file; both must fail as expected. */
static void expect_refused(const char *dir, const unsigned char *bytes, size_t n, ct_status code,
                           const char *message, const char *label) {
    ct_tensor_dict *d = (ct_tensor_dict *)&d; /* must be reset to NULL */
    ct_status s = ct_safetensors_load_buffer(bytes, n, ct_device_cpu(), &d);
    if (s != code || !strstr(ct_last_error(), message) || d != NULL)
        ct_test_fail(__FILE__, __LINE__, "%s: expected %s \"%s\", got %s \"%s\"", label,
                     ct_status_str(code), message, ct_status_str(s), ct_last_error());
    ct_clear_error();
    char *path = st_path(dir, "corrupt.safetensors");
    CT_EXPECT(st_write_file(path, bytes, n));
    s = ct_safetensors_load(path, ct_device_cpu(), &d);
    if (s != code || !strstr(ct_last_error(), message) || !strstr(ct_last_error(), path) || d)
        ct_test_fail(__FILE__, __LINE__, "%s (file): expected %s \"%s\" naming %s, got %s \"%s\"",
                     label, ct_status_str(code), message, path, ct_status_str(s), ct_last_error());
    ct_clear_error();
    unlink(path);
    free(path);
}

static void test_corrupt_headers(void) {
    char *dir = st_scratch_dir();
    if (!dir) return;
    int n = (int)(sizeof cases / sizeof cases[0]);
    CT_EXPECT(n >= 30);
    for (int i = 0; i < n; i++) {
        /* one header holds a NUL byte: its length is the literal's */
        size_t hlen = strstr(cases[i].message, "0x00 after") ? 10 : strlen(cases[i].header);
        size_t len = 8 + hlen + cases[i].data_len;
        unsigned char *bytes = calloc(1, len);
        for (int k = 0; k < 8; k++) bytes[k] = (unsigned char)((uint64_t)hlen >> (8 * k));
        memcpy(bytes + 8, cases[i].header, hlen);
        char label[32];
        snprintf(label, sizeof label, "case %d", i);
        expect_refused(dir, bytes, len, cases[i].code, cases[i].message, label);
        free(bytes);
    }
    st_remove_dir(dir);
}

/* The length field, truncations and appended bytes. */
static void test_corrupt_framing(void) {
    char *dir = st_scratch_dir();
    if (!dir) return;
    size_t n;
    unsigned char *good = st_make_file("{" W_OK_ENTRY "}", NULL, 24, &n);
    ct_tensor_dict *d = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(good, n, ct_device_cpu(), &d), CT_OK);
    ct_tensor_dict_free(d);

    expect_refused(dir, good, 0, CT_ERR_FORMAT, "file is too small (0 bytes)", "empty");
    expect_refused(dir, good, 7, CT_ERR_FORMAT, "file is too small (7 bytes)", "7 bytes");
    unsigned char len_only[8] = {0};
    expect_refused(dir, len_only, 8, CT_ERR_FORMAT, "header does not start with '{' (it is empty)", "N=0");

    unsigned char big[16] = {0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100000001 */
    expect_refused(dir, big, 16, CT_ERR_FORMAT,
                   "header length 100000001 exceeds the limit of 100000000 bytes", "N too big");
    unsigned char huge[16] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'};
    expect_refused(dir, huge, 16, CT_ERR_FORMAT, "header length 18446744073709551615 exceeds", "N max");
    unsigned char past[18] = {64, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_refused(dir, past, 18, CT_ERR_FORMAT,
                   "header length 64 runs past the end of the file (18 bytes)", "N past EOF");

    expect_refused(dir, good, n - 1, CT_ERR_FORMAT,
                   "tensor 'w': data_offsets [0, 24] go past the end of the data (23 bytes)", "cut data");
    expect_refused(dir, good, 28, CT_ERR_FORMAT, "runs past the end of the file (28 bytes)", "cut header");
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, good, n);
    longer[n] = 0;
    expect_refused(dir, longer, n + 1, CT_ERR_FORMAT, "the tensors cover 24 bytes but 25 follow", "appended");
    free(longer);
    free(good);

    /* a file that is not a file, and one that does not exist */
    ct_tensor_dict *out = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load(dir, ct_device_cpu(), &out), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "not a regular file");
    char *fifo = st_path(dir, "fifo.safetensors");
    if (mkfifo(fifo, 0600) == 0) { /* must not block waiting for a writer */
        CT_EXPECT_INT_EQ(ct_safetensors_load(fifo, ct_device_cpu(), &out), CT_ERR_IO);
        CT_EXPECT_ERROR(CT_ERR_IO, "not a regular file");
    }
    free(fifo);
    char *missing = st_path(dir, "missing.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_load(missing, ct_device_cpu(), &out), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "cannot open");
    CT_EXPECT(out == NULL);
    free(missing);
    st_remove_dir(dir);

    /* arguments */
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(NULL, 10, ct_device_cpu(), &out), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL buffer");
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(len_only, 8, ct_device_cpu(), NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL output pointer");
    ct_device bad = {CT_DEVICE_CPU, 3};
    CT_EXPECT(ct_safetensors_load_buffer(len_only, 8, bad, &out) == CT_ERR_DEVICE);
    ct_clear_error();
}

/* Unusual files the format allows. */
static void test_accepted_oddities(void) {
    static const struct {
        const char *header;
        size_t data_len;
        int tensors;
    } ok[] = {
        {"{\"__metadata__\":null}", 0, 0},
        {"{}  \t\r\n  ", 0, 0},
        {"{" ENTRY("b", "F32", "[2]", "8", "16") "," ENTRY("a", "F32", "[2]", "0", "8") "}", 16, 2},
        {"{" ENTRY("e1", "F32", "[0]", "0", "0") "," ENTRY("e2", "I64", "[3,0]", "0", "0") ","
         ENTRY("x", "U8", "[2]", "0", "2") "," ENTRY("e3", "BOOL", "[0,9007199254740992]", "2", "2") "}",
         2, 4},
        {"{\"w\":{\"data_offsets\":[0,24],\"shape\":[2,3],\"dtype\":\"F32\"}}", 24, 1},
        {"{" W_OK_ENTRY "}                                                        ", 24, 1},
        {"{\"\\u00e9\\ud83d\\ude00\\/\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n;
        unsigned char *bytes = st_make_file(ok[i].header, NULL, ok[i].data_len, &n);
        ct_tensor_dict *d = NULL;
        ct_status s = ct_safetensors_load_buffer(bytes, n, ct_device_cpu(), &d);
        CT_EXPECT_MSG(s == CT_OK, "accepted case %zu: %s", i, ct_last_error());
        CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), ok[i].tensors);
        CT_EXPECT_INT_EQ(ct_tensor_dict_metadata_size(d), 0);
        if (i == 2) { /* data 0..15: a = bytes 0..7, b = bytes 8..15 */
            ct_tensor *b = ct_tensor_dict_get(d, "b");
            float want[2];
            unsigned char raw[8] = {8, 9, 10, 11, 12, 13, 14, 15};
            memcpy(want, raw, 8);
            double w[2] = {want[0], want[1]};
            CT_EXPECT_CLOSE(b, w, 2, 0, 0);
            CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 0), "a");
            ct_release(b);
        }
        if (i == 3) {
            ct_tensor *e3 = ct_tensor_dict_get(d, "e3");
            CT_EXPECT_SHAPE(e3, CT_SHAPE(0, 9007199254740992LL));
            ct_release(e3);
        }
        if (i == 6) CT_EXPECT(ct_tensor_dict_contains(d, "\xc3\xa9\xf0\x9f\x98\x80/"));
        ct_tensor_dict_free(d);
        free(bytes);
    }
    /* BOOL bytes other than 0 read as true */
    unsigned char data[4] = {0, 1, 2, 255};
    size_t n;
    unsigned char *bytes = st_make_file("{" ENTRY("m", "BOOL", "[4]", "0", "4") "}    ", data, 4, &n);
    ct_tensor_dict *d = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(bytes, n, ct_device_cpu(), &d), CT_OK);
    ct_tensor *m = ct_tensor_dict_get(d, "m");
    const unsigned char *p = ct_data_ptr(m);
    CT_EXPECT(p && p[0] == 0 && p[1] == 1 && p[2] == 1 && p[3] == 1);
    ct_release(m);
    ct_tensor_dict_free(d);
    free(bytes);
}

/* Random byte flips, insertions and truncations of valid files: every
 * outcome is fine except a crash, a leak or a sanitizer report. A mutant
 * that loads must save and load again to the same bytes. */
static void test_mutations(void) {
    ct_tensor_dict *src = ct_tensor_dict_new();
    ct_tensor_dict_set_metadata(src, "step", "7");
    const ct_dtype dts[4] = {CT_FLOAT32, CT_INT64, CT_BFLOAT16, CT_BOOL};
    for (int i = 0; i < 4; i++) {
        ct_tensor *t = ct_test_random(CT_SHAPE(2, i + 1), dts[i], 0, 3, NULL);
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        ct_tensor_dict_set(src, name, t);
        ct_release(t);
    }
    void *clean = NULL;
    size_t n = 0;
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(src, &clean, &n), CT_OK);
    ct_tensor_dict_free(src);
    static const char tokens[] = "{}[]\",:0123456789-.eE \\u";
    unsigned char *buf = malloc(n + 16);
    int loaded = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, clean, n);
        size_t len = n;
        int edits = 1 + (int)ct_test_randint(0, 3);
        for (int k = 0; k < edits && len > 0; k++) {
            size_t at = (size_t)ct_test_randint(0, (int64_t)len);
            switch (ct_test_randint(0, 4)) {
            case 0: buf[at] = (unsigned char)ct_test_randint(0, 256); break;
            case 1: buf[at] = (unsigned char)tokens[ct_test_randint(0, sizeof tokens - 1)]; break;
            case 2: len = at; break;
            default:
                if (at > 8) buf[at] ^= (unsigned char)(1u << ct_test_randint(0, 8));
            }
        }
        ct_tensor_dict *d = NULL;
        if (ct_safetensors_load_buffer(buf, len, ct_device_cpu(), &d) == CT_OK) {
            loaded++;
            void *again = NULL;
            size_t m = 0;
            ct_tensor_dict *d2 = NULL;
            CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &again, &m), CT_OK);
            CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(again, m, ct_device_cpu(), &d2), CT_OK);
            CT_EXPECT_INT_EQ(ct_tensor_dict_size(d2), ct_tensor_dict_size(d));
            ct_tensor_dict_free(d2);
            free(again);
        } else {
            CT_EXPECT(d == NULL && ct_last_status() != CT_OK && ct_last_error()[0]);
        }
        ct_clear_error();
        ct_tensor_dict_free(d);
    }
    CT_EXPECT(loaded > 0); /* flips inside tensor data keep the file valid */
    free(buf);
    free(clean);
}

/* ---- white-box: the JSON reader and writer, byte swaps ------------------------------------- */

static void test_json(void) {
    const char *text = "{\"a\\n\\u00e9\\ud83d\\ude00\":[0, 18446744073709551615, 18446744073709551616, -1, 1.5, 2e3]}";
    size_t len = strlen(text);
    char *strbuf = malloc(len + 1);
    ctj_reader r;
    ctj_init(&r, text, len, strbuf);
    CT_EXPECT(ctj_expect(&r, '{'));
    size_t count = 0;
    CT_EXPECT_INT_EQ(ctj_next(&r, '}', &count), 1);
    const char *key;
    size_t klen;
    CT_EXPECT(ctj_string(&r, &key, &klen));
    CT_EXPECT(klen == 8 && memcmp(key, "a\n\xc3\xa9\xf0\x9f\x98\x80", 8) == 0);
    CT_EXPECT(ctj_expect(&r, ':') && ctj_expect(&r, '['));
    static const ctj_num_kind kinds[] = {CTJ_UINT, CTJ_UINT, CTJ_UINT_OVERFLOW, CTJ_NEGATIVE,
                                         CTJ_FRACTIONAL, CTJ_FRACTIONAL};
    size_t i = 0;
    for (size_t c = 0; ctj_next(&r, ']', &c) == 1; i++) {
        ctj_num_kind k;
        uint64_t v;
        const char *t;
        size_t tl;
        CT_EXPECT(ctj_number(&r, &k, &v, &t, &tl));
        CT_EXPECT_INT_EQ(k, kinds[i]);
        if (i == 1) CT_EXPECT(v == UINT64_MAX);
    }
    CT_EXPECT_INT_EQ(i, 6);
    CT_EXPECT_INT_EQ(ctj_next(&r, '}', &count), 0);
    CT_EXPECT(ctj_end(&r) && !r.failed);
    free(strbuf);

    ctj_buf b = {0};
    ctj_put_quoted(&b, "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9");
    CT_EXPECT_STR_EQ(b.data, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\"");
    ctj_put_uint(&b, UINT64_MAX);
    CT_EXPECT(strstr(b.data, "18446744073709551615") != NULL);
    ctj_buf_free(&b);

    CT_EXPECT_INT_EQ(ctj_utf8_invalid_at((const unsigned char *)"ok\xe2\x82\xac", 5), 5);
    CT_EXPECT_INT_EQ(ctj_utf8_invalid_at((const unsigned char *)"ok\xe2\x82", 4), 2);
    CT_EXPECT_INT_EQ(ctj_utf8_invalid_at((const unsigned char *)"\xf0\x8f\xbf\xbf", 4), 0);

    unsigned char e[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    st_swap_elements(e, 8, 4);
    CT_EXPECT(e[0] == 4 && e[3] == 1 && e[4] == 8 && e[7] == 5);
    st_swap_elements(e, 8, 2);
    CT_EXPECT(e[0] == 3 && e[1] == 4);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_corrupt_headers);
    CT_RUN(test_corrupt_framing);
    CT_RUN(test_accepted_oddities);
    CT_RUN(test_mutations);
    CT_RUN(test_json);
    return ct_test_finish();
}
