/*
 * test_tensorboard.c — ct_summary_writer and its TensorBoard encoding: CRC32C
 * vectors, the worked bytes of formats.md §3.4, full files read back by an
 * independent reader in this file (bitwise CRC32C, its own protobuf decoder),
 * file naming, log_dir creation, buffering and flushing, recovery from a
 * failed write, several threads on one writer, argument errors, and — when
 * python3 with the tensorboard package is available — tensorboard's own
 * readers (tools/check_tensorboard.py; without Python or the tensorboard
 * package that one check is a counted skip, never an "ok").
 */
#define _XOPEN_SOURCE 700
#define _FILE_OFFSET_BITS 64

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/crc32c.h"
#include "io/tensorboard_internal.h"
#include "testutil.h"

/* ---- an independent reader ------------------------------------------------------------ */

static uint32_t crc32c_bitwise(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static uint32_t masked_bitwise(const unsigned char *p, size_t n) {
    uint32_t c = crc32c_bitwise(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t get_le(const unsigned char *p, int nbytes) {
    uint64_t v = 0;
    for (int i = nbytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

typedef struct tb_event {
    double wall_time;
    int64_t step;
    char file_version[32];
    int nvalues;       /* Summary.value entries */
    char tag[512];     /* of the last value */
    float value;
} tb_event;

/* Reads a varint at *p (< end); 0 when malformed. */
static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

/* Length-delimited field: its bytes in [*start, *start + *len). */
static int get_bytes(const unsigned char **p, const unsigned char *end, const unsigned char **start,
                     size_t *len) {
    uint64_t n;
    if (!get_varint(p, end, &n) || n > (uint64_t)(end - *p)) return 0;
    *start = *p;
    *len = (size_t)n;
    *p += n;
    return 1;
}

static int decode_value(const unsigned char *p, const unsigned char *end, tb_event *e) {
    while (p < end) {
        unsigned char key = *p++;
        const unsigned char *s;
        size_t n;
        if (key == 0x0A) {
            if (!get_bytes(&p, end, &s, &n) || n >= sizeof e->tag) return 0;
            memcpy(e->tag, s, n);
            e->tag[n] = '\0';
        } else if (key == 0x15 && end - p >= 4) {
            uint32_t bits = (uint32_t)get_le(p, 4);
            memcpy(&e->value, &bits, 4);
            p += 4;
        } else {
            return 0;
        }
    }
    e->nvalues++;
    return 1;
}

/* Decodes the Event fields ctorch writes; anything else is a failure. */
static int decode_event(const unsigned char *p, size_t size, tb_event *e) {
    const unsigned char *end = p + size;
    memset(e, 0, sizeof *e);
    while (p < end) {
        unsigned char key = *p++;
        const unsigned char *s, *ss;
        size_t n, nn;
        uint64_t v;
        if (key == 0x09 && end - p >= 8) {
            uint64_t bits = get_le(p, 8);
            memcpy(&e->wall_time, &bits, 8);
            p += 8;
        } else if (key == 0x10) {
            if (!get_varint(&p, end, &v)) return 0;
            e->step = (int64_t)v;
        } else if (key == 0x1A) {
            if (!get_bytes(&p, end, &s, &n) || n >= sizeof e->file_version) return 0;
            memcpy(e->file_version, s, n);
        } else if (key == 0x2A) {
            if (!get_bytes(&p, end, &s, &n)) return 0;
            for (const unsigned char *q = s; q < s + n;) /* Summary: repeated Value */
                if (*q++ != 0x0A || !get_bytes(&q, s + n, &ss, &nn) || !decode_value(ss, ss + nn, e))
                    return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

#define MAX_EVENTS 4096

typedef struct tb_file {
    int count;
    tb_event events[MAX_EVENTS];
} tb_file;

/* Reads and checks every record of path (framing, both CRCs, the Event). */
static int read_event_file(const char *path, tb_file *out) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        CT_EXPECT_MSG(0, "cannot open %s: %s", path, strerror(errno));
        return 0;
    }
    static unsigned char data[1 << 20];
    size_t size = fread(data, 1, sizeof data, fp);
    fclose(fp);
    out->count = 0;
    size_t off = 0;
    while (off < size) {
        if (size - off < 12 || out->count == MAX_EVENTS) break;
        uint64_t len = get_le(data + off, 8);
        uint32_t len_crc = (uint32_t)get_le(data + off + 8, 4);
        CT_EXPECT_MSG(len_crc == masked_bitwise(data + off, 8), "%s: length CRC of record %d at byte %zu",
                      path, out->count, off);
        if (len > size - off - 16) break;
        const unsigned char *event = data + off + 12;
        uint32_t data_crc = (uint32_t)get_le(event + len, 4);
        CT_EXPECT_MSG(data_crc == masked_bitwise(event, (size_t)len), "%s: data CRC of record %d",
                      path, out->count);
        CT_EXPECT_MSG(decode_event(event, (size_t)len, &out->events[out->count]),
                      "%s: record %d is not an Event ctorch writes", path, out->count);
        out->count++;
        off += 16 + (size_t)len;
    }
    CT_EXPECT_MSG(off == size, "%s: %zu bytes, but the records end at byte %zu", path, size, off);
    return off == size;
}

/* ---- temporary folders ------------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static void remove_tree(const char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_tmpdir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/ct_tboard_XXXXXX");
    CT_EXPECT(mkdtemp(dir) != NULL);
}

/* The names of the event files in dir: their count, the first in name. */
static int find_event_files(const char *dir, char *name, size_t size) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)))
        if (strstr(ent->d_name, "tfevents") && n++ == 0) snprintf(name, size, "%s", ent->d_name);
    closedir(d);
    return n;
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static tb_file g_file;

/* ---- CRC32C ------------------------------------------------------------------------------ */

static void test_crc32c_vectors(void) {
    CT_EXPECT_INT_EQ(cti_crc32c("123456789", 9), 0xE3069283u);
    CT_EXPECT_INT_EQ(cti_crc32c_mask(0xE3069283u), 0xC78AB0E5u);
    CT_EXPECT_INT_EQ(cti_crc32c("", 0), 0);
    CT_EXPECT_INT_EQ(cti_crc32c_table_entry(0), 0);
    CT_EXPECT_INT_EQ(cti_crc32c_table_entry(1), 0xf26b8303u);
    CT_EXPECT_INT_EQ(cti_crc32c_table_entry(128), 0x82f63b78u);
    CT_EXPECT_INT_EQ(cti_crc32c_table_entry(255), 0xad7d5351u);
    /* iSCSI (RFC 3720) vector: 32 zero bytes */
    unsigned char zeros[32] = {0};
    CT_EXPECT_INT_EQ(cti_crc32c(zeros, 32), 0x8A9136AAu);
}

/* Slice-by-8 against the bitwise definition, at every alignment and length
 * around the 8-byte steps, and extend() over every split point. */
static void test_crc32c_matches_bitwise(void) {
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)ct_test_rand_u64();
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += (n < 40 ? 1 : 37))
            CT_EXPECT_MSG(cti_crc32c(buf + off, n) == crc32c_bitwise(buf + off, n),
                          "offset %zu length %zu", off, n);
    uint32_t whole = crc32c_bitwise(buf, 100);
    for (size_t cut = 0; cut <= 100; cut++)
        CT_EXPECT_MSG(cti_crc32c_extend(cti_crc32c(buf, cut), buf + cut, 100 - cut) == whole,
                      "split at %zu", cut);
}

/* ---- the encoder ------------------------------------------------------------------------- */

static void expect_bytes(const cti_tb_buf *b, size_t at, const unsigned char *want, size_t n,
                         const char *what) {
    CT_EXPECT_MSG(b->len >= at + n, "%s: %zu bytes, expected at least %zu", what, b->len, at + n);
    for (size_t i = 0; i < n && at + i < b->len; i++)
        if (b->data[at + i] != want[i]) {
            CT_EXPECT_MSG(0, "%s: byte %zu is %02x, expected %02x", what, i, b->data[at + i], want[i]);
            return;
        }
}

static const unsigned char worked_version[40] = {
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x7f, 0x4b, 0x22,
    0x09, 0x00, 0x00, 0x00, 0x40, 0xfc, 0x54, 0xd9, 0x41, 0x1a, 0x0d, 0x62, 0x72, 0x61,
    0x69, 0x6e, 0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32,
    0xec, 0xed, 0x8f, 0x9d};

static const unsigned char worked_scalar[42] = {
    0x1a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x9b, 0xd8, 0x2d,
    0x09, 0x00, 0x00, 0x20, 0x40, 0xfc, 0x54, 0xd9, 0x41, 0x10, 0x0a, 0x2a, 0x0d, 0x0a,
    0x0b, 0x0a, 0x04, 0x6c, 0x6f, 0x73, 0x73, 0x15, 0x00, 0x00, 0x80, 0x3e,
    0x0e, 0xdb, 0x2e, 0x9a};

static void test_worked_bytes(void) {
    cti_tb_buf b = {0};
    CT_EXPECT_INT_EQ(cti_tb_append_file_version(&b, 1700000000.0), CT_OK);
    CT_EXPECT_INT_EQ(b.len, 40);
    expect_bytes(&b, 0, worked_version, 40, "file_version record");
    CT_EXPECT_INT_EQ(cti_tb_append_scalar(&b, "loss", 4, 0.25f, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(b.len, 82);
    expect_bytes(&b, 40, worked_scalar, 42, "scalar record"); /* appended after the first */
    cti_tb_buf_free(&b);
    CT_EXPECT(b.data == NULL && b.len == 0);
}

static int decode_buffer(const cti_tb_buf *b, tb_event *e) {
    if (b->len < 16 || get_le(b->data, 8) != b->len - 16) return 0;
    return decode_event(b->data + 12, b->len - 16, e);
}

/* Step 0 left out, negative and huge steps, long and UTF-8 tags, special
 * floats: decoded back by the reader above. */
static void test_encoder_round_trip(void) {
    static const int64_t steps[] = {0, 1, 127, 128, 300, -1, INT64_MAX, INT64_MIN};
    static const float values[] = {0.0f, -0.0f, 1.0f / 3.0f, -2.5e-38f, 3.4e38f, INFINITY};
    char long_tag[300];
    memset(long_tag, 'x', sizeof long_tag - 1);
    long_tag[sizeof long_tag - 1] = '\0';
    const char *tags[] = {"a", "Loss/train", "Gr\xc3\xb6\xc3\x9f" "e/\xe2\x82\xac", long_tag};
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            cti_tb_buf b = {0};
            float v = values[(t + s) % (sizeof values / sizeof values[0])];
            CT_EXPECT_INT_EQ(cti_tb_append_scalar(&b, tags[t], strlen(tags[t]), v, steps[s], 12.5), CT_OK);
            tb_event e;
            CT_EXPECT_MSG(decode_buffer(&b, &e), "tag %zu step %lld", t, (long long)steps[s]);
            CT_EXPECT_STR_EQ(e.tag, tags[t]);
            CT_EXPECT_INT_EQ(e.step, steps[s]);
            CT_EXPECT_INT_EQ(e.nvalues, 1);
            CT_EXPECT(memcmp(&e.value, &v, sizeof v) == 0);
            CT_EXPECT(e.wall_time == 12.5);
            /* proto3: a step of 0 is not encoded; other steps are (key 0x10 after wall_time) */
            CT_EXPECT_INT_EQ(b.data[12 + 9] == 0x10, steps[s] != 0);
            if (steps[s] < 0) CT_EXPECT_INT_EQ(b.data[12 + 10 + 9], 0x01); /* 10-byte varint */
            cti_tb_buf_free(&b);
        }
    float nan_value = NAN;
    cti_tb_buf b = {0};
    CT_EXPECT_INT_EQ(cti_tb_append_scalar(&b, "n", 1, nan_value, 5, 1.0), CT_OK);
    tb_event e;
    CT_EXPECT(decode_buffer(&b, &e) && isnan(e.value));
    cti_tb_buf_free(&b);
}

static void test_utf8_validation(void) {
    static const struct { const char *s; size_t valid; } cases[] = {
        {"plain/ascii", 11},
        {"\xc3\xa9t\xc3\xa9", 5},
        {"\xf0\x9f\x98\x80!", 5},     /* U+1F600 */
        {"ab\xff", 2},                /* never valid */
        {"a\xc3", 1},                 /* cut short */
        {"\xc0\xaf", 0},              /* overlong '/' */
        {"\xe0\x80\xaf", 0},          /* overlong */
        {"x\xed\xa0\x80", 1},         /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", 0},      /* above U+10FFFF */
        {"ok\xe2\x82", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CT_EXPECT_MSG(cti_tb_utf8_valid_prefix(cases[i].s, strlen(cases[i].s)) == cases[i].valid,
                      "case %zu: valid prefix %zu, expected %zu", i,
                      cti_tb_utf8_valid_prefix(cases[i].s, strlen(cases[i].s)), cases[i].valid);
}

/* ---- the writer ---------------------------------------------------------------------------- */

static void test_file_round_trip(void) {
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    double before = (double)time(NULL);
    ct_summary_writer *w = ct_summary_writer_new(dir);
    CT_EXPECT(w != NULL);
    if (!w) return;
    static const char *tags[] = {"Loss/train", "Loss/val", "LR"};
    for (int step = 0; step < 20; step++)
        CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, tags[step % 3], 1.0 / (step + 1), step), CT_OK);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "Accuracy/val", 0.875, 99, 1700000000.25), CT_OK);
    char path[512];
    snprintf(path, sizeof path, "%s", ct_summary_writer_path(w));
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    double after = (double)time(NULL) + 1;

    CT_EXPECT(read_event_file(path, &g_file));
    CT_EXPECT_INT_EQ(g_file.count, 22);
    CT_EXPECT_STR_EQ(g_file.events[0].file_version, "brain.Event:2");
    CT_EXPECT_INT_EQ(g_file.events[0].nvalues, 0);
    for (int i = 0; i < g_file.count; i++) {
        const tb_event *e = &g_file.events[i];
        if (i < 21)
            CT_EXPECT_MSG(e->wall_time >= before && e->wall_time <= after, "event %d wall_time %.3f", i,
                          e->wall_time);
        if (i == 0 || i == 21) continue;
        int step = i - 1;
        CT_EXPECT_STR_EQ(e->tag, tags[step % 3]);
        CT_EXPECT_INT_EQ(e->step, step);
        CT_EXPECT(e->value == (float)(1.0 / (step + 1)));
        CT_EXPECT_INT_EQ(e->nvalues, 1);
        CT_EXPECT(e->file_version[0] == '\0');
    }
    const tb_event *last = &g_file.events[21];
    CT_EXPECT_STR_EQ(last->tag, "Accuracy/val");
    CT_EXPECT_INT_EQ(last->step, 99);
    CT_EXPECT(last->value == 0.875f && last->wall_time == 1700000000.25);
    remove_tree(dir);
}

static void test_file_name(void) {
    char dir[64], name[256], expected_tail[512], host[256];
    make_tmpdir(dir, sizeof dir);
    long long before = (long long)time(NULL);
    ct_summary_writer *w1 = ct_summary_writer_new(dir);
    ct_summary_writer *w2 = ct_summary_writer_new(dir);
    long long after = (long long)time(NULL);
    CT_EXPECT(w1 && w2);
    if (!w1 || !w2) goto done;
    CT_EXPECT_INT_EQ(find_event_files(dir, name, sizeof name), 2);
    const char *p1 = ct_summary_writer_path(w1), *p2 = ct_summary_writer_path(w2);
    CT_EXPECT(strncmp(p1, dir, strlen(dir)) == 0 && p1[strlen(dir)] == '/');
    CT_EXPECT(strcmp(p1, p2) != 0);
    const char *base = p1 + strlen(dir) + 1;
    /* events.out.tfevents.<10 digits>.<host>.<pid>.<n> */
    CT_EXPECT(strncmp(base, "events.out.tfevents.", 20) == 0);
    char digits[11] = {0};
    memcpy(digits, base + 20, 10);
    CT_EXPECT(strspn(digits, "0123456789") == 10 && base[30] == '.');
    long long secs = atoll(digits);
    CT_EXPECT(secs >= before && secs <= after);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    snprintf(expected_tail, sizeof expected_tail, ".%s.%ld.", host, (long)getpid());
    CT_EXPECT_MSG(strncmp(base + 30, expected_tail, strlen(expected_tail)) == 0, "%s vs %s", base,
                  expected_tail);
    /* the writer counter: the second writer's number is the first's plus one */
    long n1 = atol(strrchr(p1, '.') + 1), n2 = atol(strrchr(p2, '.') + 1);
    CT_EXPECT_INT_EQ(n2, n1 + 1);
    /* the first record is on disk at once */
    CT_EXPECT_INT_EQ(file_size(p1), 40);
done:
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w1), CT_OK);
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w2), CT_OK);
    remove_tree(dir);
}

static void test_creates_parent_dirs(void) {
    char dir[64], nested[256], name[256];
    make_tmpdir(dir, sizeof dir);
    snprintf(nested, sizeof nested, "%s/runs//exp1/a/", dir);
    ct_summary_writer *w = ct_summary_writer_new(nested);
    CT_EXPECT(w != NULL);
    snprintf(nested, sizeof nested, "%s/runs/exp1/a", dir);
    struct stat st;
    CT_EXPECT(stat(nested, &st) == 0 && S_ISDIR(st.st_mode));
    CT_EXPECT_INT_EQ(find_event_files(nested, name, sizeof name), 1);
    if (w) CT_EXPECT(strstr(ct_summary_writer_path(w), "a/events.out.tfevents.") != NULL);
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    /* an existing folder is reused */
    w = ct_summary_writer_new(nested);
    CT_EXPECT(w != NULL);
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    CT_EXPECT_INT_EQ(find_event_files(nested, name, sizeof name), 2);
    remove_tree(dir);
}

static void test_unwritable_log_dir(void) {
    char dir[64], file[128], below[256];
    make_tmpdir(dir, sizeof dir);
    snprintf(file, sizeof file, "%s/plainfile", dir);
    FILE *fp = fopen(file, "w");
    CT_EXPECT(fp != NULL);
    if (fp) fclose(fp);
    snprintf(below, sizeof below, "%s/sub/runs", file);
    CT_EXPECT(ct_summary_writer_new(below) == NULL);
    CT_EXPECT(strstr(ct_last_error(), below) != NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "Not a directory");
    /* log_dir is the regular file itself */
    CT_EXPECT(ct_summary_writer_new(file) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "plainfile");
    CT_EXPECT(ct_summary_writer_new("") == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "log_dir is empty");
    remove_tree(dir);
}

/* Events wait in memory until a flush, close, or flush_secs have passed. */
static void test_buffering_and_flush(void) {
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    ct_summary_writer *w = ct_summary_writer_new(dir);
    CT_EXPECT(w != NULL);
    if (!w) return;
    const char *path = ct_summary_writer_path(w);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(file_size(path), 40);           /* default flush_secs = 120 */
    CT_EXPECT_INT_EQ(ct_summary_flush(w), CT_OK);
    CT_EXPECT_INT_EQ(file_size(path), 82);
    CT_EXPECT_INT_EQ(ct_summary_flush(w), CT_OK);    /* nothing pending */
    CT_EXPECT_INT_EQ(file_size(path), 82);
    ct_summary_set_flush_secs(w, 0);                 /* every event goes out at once */
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(file_size(path), 124);
    ct_summary_set_flush_secs(w, NAN);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(file_size(path), 166);
    ct_summary_set_flush_secs(w, 1e9);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(file_size(path), 166);
    /* 1 MiB of waiting events is written without waiting for flush_secs */
    int added = 0;
    while (file_size(path) == 166 && added < 100000) {
        CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
        added++;
    }
    CT_EXPECT_INT_EQ(added, (1 << 20) / 42);         /* the first record past 1 MiB triggers it */
    char saved[512];
    snprintf(saved, sizeof saved, "%s", path);
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    CT_EXPECT_INT_EQ(file_size(saved), 40 + 42 * (4 + added));
    /* the file is the worked records: header, then identical scalar records */
    FILE *fp = fopen(saved, "rb");
    unsigned char rec[42];
    CT_EXPECT(fp && fseek(fp, 40, SEEK_SET) == 0 && fread(rec, 1, 42, fp) == 42);
    CT_EXPECT(memcmp(rec, worked_scalar, 42) == 0);
    if (fp) fclose(fp);
    remove_tree(dir);
}

/* A write that fails part-way (here: the file size limit) leaves the file at
 * its last complete record and keeps the events for the next flush. */
static void test_failed_write_recovers(void) {
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    ct_summary_writer *w = ct_summary_writer_new(dir);
    CT_EXPECT(w != NULL);
    if (!w) return;
    char path[512];
    snprintf(path, sizeof path, "%s", ct_summary_writer_path(w));
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.25, 10, 1700000000.5), CT_OK);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.5, 11, 1700000001.5), CT_OK);

    struct rlimit saved_limit, small;
    CT_EXPECT(getrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    small = saved_limit;
    small.rlim_cur = 40 + 42 + 10; /* the second record is cut short */
    int limited = setrlimit(RLIMIT_FSIZE, &small) == 0;
    ct_status s = ct_summary_flush(w);
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    signal(SIGXFSZ, saved_handler);
    CT_EXPECT(limited);

    CT_EXPECT_INT_EQ(s, CT_ERR_IO);
    CT_EXPECT(strstr(ct_last_error(), path) != NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, strerror(EFBIG));
    CT_EXPECT_INT_EQ(file_size(path), 40);           /* no partial record left */
    CT_EXPECT(read_event_file(path, &g_file) && g_file.count == 1);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 0.75, 12, 1700000002.5), CT_OK);
    CT_EXPECT_INT_EQ(ct_summary_flush(w), CT_OK);    /* the retry writes all three */
    CT_EXPECT(read_event_file(path, &g_file));
    CT_EXPECT_INT_EQ(g_file.count, 4);
    for (int i = 1; i < g_file.count && i < 4; i++) {
        CT_EXPECT_INT_EQ(g_file.events[i].step, 9 + i);
        CT_EXPECT(g_file.events[i].value == 0.25f * (float)i);
    }

    /* close reports a failed final write, and the file keeps its complete records */
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "loss", 1.0, 13, 1700000003.5), CT_OK);
    saved_handler = signal(SIGXFSZ, SIG_IGN);
    small.rlim_cur = (rlim_t)file_size(path) + 5;
    limited = setrlimit(RLIMIT_FSIZE, &small) == 0;
    s = ct_summary_writer_close(w);
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    signal(SIGXFSZ, saved_handler);
    CT_EXPECT(limited);
    CT_EXPECT_INT_EQ(s, CT_ERR_IO);
    CT_EXPECT(strstr(ct_last_error(), path) != NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "close: cannot write");
    CT_EXPECT(read_event_file(path, &g_file) && g_file.count == 4);
    remove_tree(dir);
}

/* SummaryWriter() with no log_dir: runs/<Mon><DD>_<HH>-<MM>-<SS>_<host>, as PyTorch. */
static void test_default_log_dir(void) {
    char dir[64], cwd[1024], expected[300], host[256], name[256];
    make_tmpdir(dir, sizeof dir);
    CT_EXPECT(getcwd(cwd, sizeof cwd) != NULL);
    CT_EXPECT(chdir(dir) == 0);
    ct_summary_writer *w = ct_summary_writer_new(NULL);
    CT_EXPECT(w != NULL);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(expected, sizeof expected, "_%s/events.out.tfevents.", host);
    if (w) {
        const char *path = ct_summary_writer_path(w);
        CT_EXPECT_MSG(strncmp(path, "runs/", 5) == 0 && strstr(path, expected), "path %s", path);
        /* runs/Nov22_02-45-07_host: a month name, then digits and separators */
        CT_EXPECT_MSG(strlen(path) > 20 && path[10] == '_' && path[13] == '-' && path[16] == '-' &&
                      path[19] == '_', "path %s", path);
    }
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    DIR *runs = opendir("runs");
    struct dirent *ent;
    int found = 0;
    while (runs && (ent = readdir(runs)))
        if (ent->d_name[0] != '.') {
            char sub[600];
            snprintf(sub, sizeof sub, "runs/%s", ent->d_name);
            found += find_event_files(sub, name, sizeof name);
        }
    if (runs) closedir(runs);
    CT_EXPECT_INT_EQ(found, 1);
    CT_EXPECT(chdir(cwd) == 0);
    remove_tree(dir);
}

typedef struct thread_job {
    ct_summary_writer *w;
    int id;
    int failures;
} thread_job;

#define THREADS 4
#define PER_THREAD 500

static void *log_from_thread(void *arg) {
    thread_job *job = arg;
    char tag[32];
    snprintf(tag, sizeof tag, "thread/%d", job->id);
    for (int i = 1; i <= PER_THREAD; i++) {
        if (job->id == 0 && i % 100 == 0) ct_summary_set_flush_secs(job->w, i % 200 ? 0 : 120);
        if (ct_summary_add_scalar(job->w, tag, job->id * 1000 + i, i) != CT_OK) job->failures++;
        if (i % 97 == 0 && ct_summary_flush(job->w) != CT_OK) job->failures++;
    }
    return NULL;
}

static void test_threads_share_a_writer(void) {
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    ct_summary_writer *w = ct_summary_writer_new(dir);
    CT_EXPECT(w != NULL);
    if (!w) return;
    pthread_t threads[THREADS];
    thread_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (thread_job){w, t, 0};
        CT_EXPECT(pthread_create(&threads[t], NULL, log_from_thread, &jobs[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CT_EXPECT_INT_EQ(jobs[t].failures, 0);
    }
    char path[512];
    snprintf(path, sizeof path, "%s", ct_summary_writer_path(w));
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    CT_EXPECT(read_event_file(path, &g_file));
    CT_EXPECT_INT_EQ(g_file.count, 1 + THREADS * PER_THREAD);
    int next_step[THREADS] = {1, 1, 1, 1};
    for (int i = 1; i < g_file.count; i++) {
        const tb_event *e = &g_file.events[i];
        int t = -1;
        CT_EXPECT(sscanf(e->tag, "thread/%d", &t) == 1 && t >= 0 && t < THREADS);
        if (t < 0 || t >= THREADS) continue;
        /* each thread's events are in its order */
        CT_EXPECT_INT_EQ(e->step, next_step[t]);
        CT_EXPECT(e->value == (float)(t * 1000 + next_step[t]));
        next_step[t]++;
    }
    remove_tree(dir);
}

static void test_argument_errors(void) {
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    ct_summary_writer *w = ct_summary_writer_new(dir);
    CT_EXPECT(w != NULL);
    CT_EXPECT_INT_EQ(ct_summary_add_scalar(NULL, "x", 1, 1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "add_scalar: NULL writer");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, NULL, 1, 1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "the tag is NULL");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, "", 1, 1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "the tag is empty");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, "bad\xff", 1, 1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "the tag is not valid UTF-8: byte 3 is 0xff (after 'bad')");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, "\t\xe2\x82", 1, 1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "byte 1 is 0xe2 (after '\\x09')");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "x", 1, 1, NAN), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "wall_time must be finite, got nan");
    CT_EXPECT_INT_EQ(ct_summary_add_scalar_at(w, "x", 1, 1, INFINITY), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "wall_time must be finite, got inf");
    CT_EXPECT_INT_EQ(ct_summary_flush(NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "flush: NULL writer");
    CT_EXPECT(ct_summary_writer_path(NULL) == NULL);
    ct_summary_set_flush_secs(NULL, 1); /* no-op */
    CT_EXPECT_INT_EQ(ct_summary_writer_close(NULL), CT_OK);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    /* the rejected calls wrote nothing */
    char path[512];
    snprintf(path, sizeof path, "%s", w ? ct_summary_writer_path(w) : "");
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);
    CT_EXPECT(read_event_file(path, &g_file) && g_file.count == 1);
    remove_tree(dir);
}

/* ---- tensorboard's own readers (tools/check_tensorboard.py) ---------------------------- */

/* The checkout's tools/check_tensorboard.py, from this file's path (CMake
 * compiles by absolute path); CT_SOURCE_DIR overrides. */
static void checker_path(char *out, size_t size) {
    const char *env = getenv("CT_SOURCE_DIR");
    if (env) {
        snprintf(out, size, "%s/tools/check_tensorboard.py", env);
        return;
    }
    const char *slash = strrchr(__FILE__, '/');
    int dir_len = slash ? (int)(slash - __FILE__) : 1;
    snprintf(out, size, "%.*s/../tools/check_tensorboard.py", dir_len, slash ? __FILE__ : ".");
}

static void test_tensorboard_reads_it(void) {
    char dir[64], run[128], expect[128], script[600], cmd[2048];
    make_tmpdir(dir, sizeof dir);
    snprintf(run, sizeof run, "%s/runs/exp1", dir);
    snprintf(expect, sizeof expect, "%s/expected.tsv", dir);
    ct_summary_writer *w = ct_summary_writer_new(run);
    CT_EXPECT(w != NULL);
    FILE *ex = fopen(expect, "w");
    CT_EXPECT(ex != NULL);
    if (!w || !ex) {
        if (ex) fclose(ex);
        ct_summary_writer_close(w);
        remove_tree(dir);
        return;
    }
    static const char *tags[] = {"Loss/train", "Loss/val", "Accuracy/val", "LR",
                                 "Throughput/samples_per_s", "\xc3\xa9tape/\xe2\x82\xac"};
    for (int step = 0; step < 30; step++)
        for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
            double v = (t == 3) ? 0.1 * pow(0.5, step / 10) : (double)(step + 1) / (t + 3) - 2.0 * t;
            if (t == 5 && step == 7) v = 1e30;
            CT_EXPECT_INT_EQ(ct_summary_add_scalar(w, tags[t], v, step), CT_OK);
            fprintf(ex, "%s\t%d\t%.17g\n", tags[t], step, v);
        }
    fclose(ex);
    CT_EXPECT_INT_EQ(ct_summary_writer_close(w), CT_OK);

    checker_path(script, sizeof script);
    const char *python = getenv("CT_PYTHON") ? getenv("CT_PYTHON") : "python3";
    /* the checker is part of the checkout: its absence is a broken tree */
    CT_EXPECT_MSG(access(script, R_OK) == 0, "cannot read %s", script);
    if (access(script, R_OK) != 0 || strchr(script, '\'') || strchr(python, '\'')) {
        if (access(script, R_OK) == 0) ct_test_skip("tensorboard check (a quote in %s or %s)", script, python);
        remove_tree(dir);
        return;
    }
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --expect-file '%s' 2>&1", python, script, run, expect);
    FILE *out = popen(cmd, "r");
    char text[8192] = "";
    size_t len = out ? fread(text, 1, sizeof text - 1, out) : 0;
    text[len] = '\0';
    int status = out ? pclose(out) : -1;
    int code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    if (code == 77 || code == 127)
        ct_test_skip("tensorboard check (%s: %s)", python,
                     code == 127 ? "python not found" : "the tensorboard package is not importable");
    else
        CT_EXPECT_MSG(code == 0, "%s exited with %d:\n%s", cmd, code, text);
    if (code == 0) printf("  tensorboard check: %s", strstr(text, "OK:") ? strstr(text, "OK:") : text);
    remove_tree(dir);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_crc32c_vectors);
    CT_RUN(test_crc32c_matches_bitwise);
    CT_RUN(test_worked_bytes);
    CT_RUN(test_encoder_round_trip);
    CT_RUN(test_utf8_validation);
    CT_RUN(test_file_round_trip);
    CT_RUN(test_file_name);
    CT_RUN(test_creates_parent_dirs);
    CT_RUN(test_unwritable_log_dir);
    CT_RUN(test_buffering_and_flush);
    CT_RUN(test_failed_write_recovers);
    CT_RUN(test_default_log_dir);
    CT_RUN(test_threads_share_a_writer);
    CT_RUN(test_argument_errors);
    CT_RUN(test_tensorboard_reads_it);
    return ct_test_finish();
}
