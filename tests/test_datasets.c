/*
 * test_datasets.c — the datasets of src/data: TensorDataset and Subset, the
 * IDX reader (every element type, plain and gzip, and every malformed file
 * the reader must reject with the file name and byte offset), MNIST /
 * Fashion-MNIST and CIFAR-10 on small synthetic files written here, and the
 * real Fashion-MNIST files when the machine has them.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

/* ---- temporary files ----------------------------------------------------------- */

static char g_dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void tmp_begin(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/ct_datasets_XXXXXX");
    if (!mkdtemp(g_dir)) ct_test_fail(__FILE__, __LINE__, "mkdtemp failed");
}

static void tmp_end(void) { nftw(g_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static const char *tmp_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", g_dir, name);
    return buf;
}

static void write_raw(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) ct_test_fail(__FILE__, __LINE__, "cannot write %s", path);
    if (f) fclose(f);
}

static void write_gz(const char *path, const void *data, size_t n) {
    gzFile g = gzopen(path, "wb");
    if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n)) ct_test_fail(__FILE__, __LINE__, "gz %s", path);
    if (g) gzclose(g);
}

static void write_file(const char *path, const void *data, size_t n, bool gz) {
    if (gz) write_gz(path, data, n);
    else write_raw(path, data, n);
}

static unsigned char *read_raw(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    if (fread(b, 1, *n, f) != *n) ct_test_fail(__FILE__, __LINE__, "read %s", path);
    fclose(f);
    return b;
}

/* An IDX file image: magic 00 00 type ndim, big-endian dims, then payload. */
static unsigned char *idx_bytes(int type, int ndim, const uint32_t *dims, const void *payload, size_t plen,
                                size_t *len) {
    *len = 4 + 4 * (size_t)ndim + plen;
    unsigned char *b = malloc(*len);
    b[0] = 0, b[1] = 0, b[2] = (unsigned char)type, b[3] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++)
        for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (unsigned char)(dims[i] >> (24 - 8 * k));
    if (plen) memcpy(b + 4 + 4 * ndim, payload, plen);
    return b;
}

static void write_idx(const char *path, int type, int ndim, const uint32_t *dims, const void *payload,
                      size_t plen, bool gz) {
    size_t len;
    unsigned char *b = idx_bytes(type, ndim, dims, payload, plen, &len);
    write_file(path, b, len, gz);
    free(b);
}

static void put_be(unsigned char *dst, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) dst[k] = (unsigned char)(v >> (8 * (bytes - 1 - k)));
}

/* ---- TensorDataset and Subset ----------------------------------------------------- */

static void test_tensor_dataset(void) {
    ct_tensor *a = ct_arange(0, 15, 1, .dtype = CT_FLOAT32);
    ct_tensor *x = ct_view(a, CT_SHAPE(5, 3));
    ct_tensor *y = ct_arange(10, 15, 1, .dtype = CT_INT64);
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *const[]){x, y}, 2);
    ct_release(a);   /* the dataset keeps what it needs */
    ct_release(y);
    CT_EXPECT(ds != NULL);
    CT_EXPECT_INT_EQ(ct_dataset_len(ds), 5);
    CT_EXPECT_STR_EQ(ct_dataset_name(ds), "TensorDataset");
    for (int64_t i = 0; i < 5; i++) {
        ct_sample s;
        CT_EXPECT_INT_EQ(ct_dataset_get(ds, i, 99, &s), CT_OK);
        CT_EXPECT_INT_EQ(s.n, 2);
        CT_EXPECT_SHAPE(s.t[0], CT_SHAPE(3));
        CT_EXPECT_SHAPE(s.t[1], CT_SHAPE0);
        double e[3] = {3.0 * i, 3.0 * i + 1, 3.0 * i + 2};
        CT_EXPECT_CLOSE(s.t[0], e, 3, 0, 0);
        CT_EXPECT_INT_EQ(ct_item(s.t[1]), 10 + i);
        CT_EXPECT(ct_shares_storage(s.t[0], x));   /* a view, as in PyTorch */
        ct_sample_clear(&s);
        CT_EXPECT_INT_EQ(s.n, 0);
    }
    ct_release(x);
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, 5, 0, &s), CT_ERR_INDEX);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index 5 is out of range for a dataset of length 5");
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, -1, 0, &s), CT_ERR_INDEX);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index -1");
    ct_dataset_free(ds);
    ct_dataset_free(NULL);
}

static void test_tensor_dataset_errors(void) {
    ct_tensor *x = ct_zeros(CT_SHAPE(5, 2)), *y = ct_zeros(CT_SHAPE(4)), *z = ct_zeros(CT_SHAPE0);
    CT_EXPECT(ct_tensor_dataset((ct_tensor *const[]){x, y}, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "Size mismatch between tensors: tensor 0 has size 5 in dim 0 but tensor 1 has size 4");
    CT_EXPECT(ct_tensor_dataset((ct_tensor *const[]){x}, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "expected 1 to 4 tensors, got 0");
    CT_EXPECT(ct_tensor_dataset((ct_tensor *const[]){x, x, x, x, x}, 5) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "got 5");
    CT_EXPECT(ct_tensor_dataset(NULL, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL array");
    CT_EXPECT(ct_tensor_dataset((ct_tensor *const[]){x, z}, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "tensor 1 has no dimensions");
    /* a NULL tensor (a failed op) propagates without a new error */
    CT_EXPECT(ct_tensor_dataset((ct_tensor *const[]){x, NULL}, 2) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    /* four tensors are allowed */
    ct_dataset *ds = ct_tensor_dataset((ct_tensor *const[]){x, x, x, x}, 4);
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, 4, 0, &s), CT_OK);
    CT_EXPECT_INT_EQ(s.n, 4);
    ct_sample_clear(&s);
    ct_dataset_free(ds);
    ct_release(x);
    ct_release(y);
    ct_release(z);
}

static void test_subset(void) {
    ct_tensor *x = ct_arange(100, 110, 1, .dtype = CT_INT64);
    ct_dataset *base = ct_tensor_dataset(&x, 1);
    ct_release(x);
    const int64_t idx[4] = {9, 0, 4, 4};
    ct_dataset *sub = ct_subset(base, idx, 4);
    CT_EXPECT_INT_EQ(ct_dataset_len(sub), 4);
    CT_EXPECT_STR_EQ(ct_dataset_name(sub), "Subset of TensorDataset");
    for (int i = 0; i < 4; i++) {
        ct_sample s;
        CT_EXPECT_INT_EQ(ct_dataset_get(sub, i, 0, &s), CT_OK);
        CT_EXPECT_INT_EQ(ct_item(s.t[0]), 100 + idx[i]);
        ct_sample_clear(&s);
    }
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(sub, 4, 0, &s), CT_ERR_INDEX);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index 4 is out of range for a dataset of length 4");
    /* a subset of a subset, and an empty one */
    ct_dataset *sub2 = ct_subset(sub, (const int64_t[]){3, 0}, 2);
    CT_EXPECT_INT_EQ(ct_dataset_get(sub2, 1, 0, &s), CT_OK);
    CT_EXPECT_INT_EQ(ct_item(s.t[0]), 109);
    ct_sample_clear(&s);
    ct_dataset *empty = ct_subset(base, NULL, 0);
    CT_EXPECT(empty != NULL);
    CT_EXPECT_INT_EQ(ct_dataset_len(empty), 0);
    /* indices are checked against the dataset at construction */
    CT_EXPECT(ct_subset(base, (const int64_t[]){1, 10}, 2) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "Subset: index 10 (position 1 of the indices) is out of range for TensorDataset of length 10");
    CT_EXPECT(ct_subset(base, (const int64_t[]){-1}, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index -1");
    CT_EXPECT(ct_subset(base, NULL, 3) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL array");
    CT_EXPECT(ct_subset(base, idx, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "got -1");
    CT_EXPECT(ct_subset(NULL, idx, 1) == NULL);
    CT_EXPECT_INT_EQ(ct_last_status(), CT_OK);
    ct_dataset_free(empty);
    ct_dataset_free(sub2);
    ct_dataset_free(sub);
    ct_dataset_free(base);
}

/* ---- IDX round trips --------------------------------------------------------------- */

typedef struct idx_case {
    const char *name;
    int type, ndim;
    uint32_t dims[3];
    ct_dtype dtype;
    int elem;
    double values[8];
} idx_case;

static const idx_case IDX_CASES[] = {
    {"u8", 0x08, 2, {2, 3}, CT_UINT8, 1, {0, 1, 127, 128, 254, 255}},
    {"i8", 0x09, 1, {4}, CT_INT32, 1, {0, 127, -128, -1}},
    {"i16", 0x0B, 2, {2, 2}, CT_INT32, 2, {0, 32767, -32768, -2}},
    {"i32", 0x0C, 1, {3}, CT_INT32, 4, {2147483647.0, -2147483648.0, 123456789}},
    {"f32", 0x0D, 3, {1, 2, 2}, CT_FLOAT32, 4, {1.5, -0.25, 3.4028234663852886e38, 0x1p-140}},
    {"f64", 0x0E, 1, {3}, CT_FLOAT64, 8, {1.0 / 3.0, -1e300, 5e-324}},
};

/* The big-endian payload of a case. */
static size_t idx_payload(const idx_case *c, unsigned char *out) {
    size_t n = 1;
    for (int i = 0; i < c->ndim; i++) n *= c->dims[i];
    for (size_t i = 0; i < n; i++) {
        double v = c->values[i];
        uint64_t bits;
        if (c->type == 0x0D) {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            bits = u;
        } else if (c->type == 0x0E) {
            memcpy(&bits, &v, 8);
        } else {
            bits = (uint64_t)(int64_t)v;
        }
        put_be(out + i * (size_t)c->elem, bits, c->elem);
    }
    return n * (size_t)c->elem;
}

static void test_idx_round_trip(void) {
    tmp_begin();
    for (size_t k = 0; k < sizeof IDX_CASES / sizeof IDX_CASES[0]; k++) {
        const idx_case *c = &IDX_CASES[k];
        unsigned char payload[64];
        size_t plen = idx_payload(c, payload);
        for (int gz = 0; gz < 2; gz++) {
            char path[256], name[32];
            snprintf(name, sizeof name, "%s.idx%s", c->name, gz ? ".gz" : "");
            write_idx(tmp_path(path, sizeof path, name), c->type, c->ndim, c->dims, payload, plen, gz);
            ct_tensor *t = ct_idx_load(path);
            CT_EXPECT_MSG(t != NULL, "%s: %s", name, ct_last_error());
            if (!t) continue;
            CT_EXPECT_INT_EQ(ct_dtype_of(t), c->dtype);
            CT_EXPECT_INT_EQ(ct_ndim(t), c->ndim);
            for (int i = 0; i < c->ndim; i++) CT_EXPECT_INT_EQ(ct_size(t, i), c->dims[i]);
            CT_EXPECT_CLOSE(t, c->values, (int64_t)(plen / (size_t)c->elem), 0, 0);
            ct_release(t);
        }
    }
    /* a larger uint8 file (gzip buffers span several reads) and an empty one */
    enum { N = 300000 };
    unsigned char *big = malloc(N);
    for (int i = 0; i < N; i++) big[i] = (unsigned char)((i * 2654435761u) >> 13);
    char path[256];
    write_idx(tmp_path(path, sizeof path, "big.gz"), 0x08, 3, (const uint32_t[]){3000, 10, 10}, big, N, true);
    ct_tensor *t = ct_idx_load(path);
    CT_EXPECT_SHAPE(t, CT_SHAPE(3000, 10, 10));
    CT_EXPECT(t && memcmp(ct_data_ptr(t), big, N) == 0);
    ct_release(t);
    free(big);
    write_idx(tmp_path(path, sizeof path, "empty"), 0x08, 2, (const uint32_t[]){0, 5}, NULL, 0, false);
    t = ct_idx_load(path);
    CT_EXPECT_SHAPE(t, CT_SHAPE(0, 5));
    ct_release(t);
    /* like every public tensor function, ct_idx_load's result belongs to the open scope */
    int64_t live = ct_live_tensors();
    CT_SCOPE {
        CT_EXPECT(ct_idx_load(path) != NULL);
    }
    CT_EXPECT_INT_EQ(ct_live_tensors(), live);
    tmp_end();
}

/* ---- malformed IDX files ------------------------------------------------------------- */

/* Write bytes as `name` (gzip-compressed when gz) and expect ct_idx_load to
 * fail with code and a message holding the path and every needle. */
static void expect_idx_error(const char *name, const void *bytes, size_t n, bool gz, ct_status code,
                             const char *needle1, const char *needle2) {
    char path[256];
    write_file(tmp_path(path, sizeof path, name), bytes, n, gz);
    ct_tensor *t = ct_idx_load(path);
    CT_EXPECT_MSG(t == NULL, "%s: loaded", name);
    ct_release(t);
    const char *msg = ct_last_error();
    CT_EXPECT_MSG(ct_last_status() == code && strstr(msg, path) && strstr(msg, needle1) &&
                      (!needle2 || strstr(msg, needle2)),
                  "%s: expected %s with \"%s\" and \"%s\", got %s: \"%s\"", name, ct_status_str(code), needle1,
                  needle2 ? needle2 : "", ct_status_str(ct_last_status()), msg);
    ct_clear_error();
}

static void test_idx_malformed_headers(void) {
    tmp_begin();
    char path[256];
    CT_EXPECT(ct_idx_load(tmp_path(path, sizeof path, "missing-idx1-ubyte")) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "missing-idx1-ubyte: No such file");
    CT_EXPECT(ct_idx_load(NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL path");
    CT_EXPECT(ct_idx_load(g_dir) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "is not a regular file");
    for (int gz = 0; gz < 2; gz++) {
        const unsigned char bad_magic[12] = {0x01, 0x00, 0x08, 0x01, 0, 0, 0, 4, 1, 2, 3, 4};
        const unsigned char bad_type[12] = {0, 0, 0x0A, 0x01, 0, 0, 0, 4, 1, 2, 3, 4};
        const unsigned char zero_dims[8] = {0, 0, 0x08, 0x00, 1, 2, 3, 4};
        const unsigned char nine_dims[48] = {0, 0, 0x08, 0x09};
        const unsigned char short_magic[3] = {0, 0, 0x08};
        const unsigned char short_dims[10] = {0, 0, 0x08, 0x03, 0, 0, 0, 2, 0, 0};
        unsigned char huge[36] = {0, 0, 0x0E, 0x08};
        memset(huge + 4, 0xff, 32);
        const char *sfx = gz ? ".gz" : "";
        char name[64];
#define NAME(s) (snprintf(name, sizeof name, "%s%s", (s), sfx), name)
        expect_idx_error(NAME("bad_magic"), bad_magic, 12, gz, CT_ERR_FORMAT, "bad magic number 0x01000801",
                         "two zero bytes");
        expect_idx_error(NAME("bad_type"), bad_type, 12, gz, CT_ERR_FORMAT, "unknown data type code 0x0A",
                         "0x08 uint8");
        expect_idx_error(NAME("zero_dims"), zero_dims, 8, gz, CT_ERR_FORMAT, "gives 0 dimensions",
                         "expected 1 to 8");
        expect_idx_error(NAME("nine_dims"), nine_dims, 48, gz, CT_ERR_FORMAT, "gives 9 dimensions", NULL);
        expect_idx_error(NAME("short_magic"), short_magic, 3, gz, CT_ERR_FORMAT, "truncated file",
                         "magic number needs 4 bytes from offset 0");
        expect_idx_error(NAME("short_dims"), short_dims, 10, gz, CT_ERR_FORMAT, "truncated file",
                         "dimension sizes needs 12 bytes from offset 4");
        expect_idx_error(NAME("huge"), huge, 36, gz, CT_ERR_FORMAT, "too large",
                         "[4294967295, 4294967295, 4294967295");
#undef NAME
    }
    tmp_end();
}

static void test_idx_malformed_payloads(void) {
    tmp_begin();
    unsigned char payload[113];
    for (int i = 0; i < 113; i++) payload[i] = (unsigned char)i;
    size_t len;
    unsigned char *b = idx_bytes(0x08, 2, (const uint32_t[]){10, 10}, payload, 100, &len);
    /* plain: the offset where the data starts, its size, the file's expected and actual sizes */
    expect_idx_error("short", b, 72, false, CT_ERR_FORMAT,
                     "truncated file: the data of shape [10, 10] (uint8) needs 100 bytes from offset 12",
                     "the file should be 112 bytes, but it has 72");
    expect_idx_error("short.gz", b, 72, true, CT_ERR_FORMAT,
                     "truncated file: the data of shape [10, 10] (uint8) needs 100 bytes from offset 12",
                     "but the data ends at offset 72");
    free(b);
    b = idx_bytes(0x08, 2, (const uint32_t[]){10, 10}, payload, 103, &len);
    expect_idx_error("trailing", b, len, false, CT_ERR_FORMAT, "3 unexpected bytes after the data",
                     "promises 112 bytes in all");
    expect_idx_error("trailing.gz", b, len, true, CT_ERR_FORMAT, "unexpected bytes after the data at offset 112",
                     NULL);
    /* float64 data cut inside an element */
    unsigned char *d = idx_bytes(0x0E, 1, (const uint32_t[]){4}, payload, 32, &len);
    expect_idx_error("short_f64", d, len - 3, false, CT_ERR_FORMAT, "(float64) needs 32 bytes from offset 8",
                     "should be 40 bytes, but it has 37");
    free(d);
    /* a header promising 1 GB inside a tiny file fails as truncated, without a 1 GB buffer */
    d = idx_bytes(0x08, 2, (const uint32_t[]){1000000, 1000}, payload, 10, &len);
    expect_idx_error("promise", d, len, false, CT_ERR_FORMAT, "needs 1000000000 bytes from offset 12",
                     "should be 1000000012 bytes, but it has 22");
    expect_idx_error("promise.gz", d, len, true, CT_ERR_FORMAT, "needs 1000000000 bytes from offset 12",
                     "ends at offset 22");
    free(d);
    free(b);
    tmp_end();
}

static void test_idx_bad_gzip(void) {
    tmp_begin();
    enum { N = 6000 };
    unsigned char *payload = malloc(N);
    uint64_t st = 12345;
    for (int i = 0; i < N; i++) payload[i] = (unsigned char)((st = st * 6364136223846793005ull + 1) >> 56);
    char path[256];
    write_idx(tmp_path(path, sizeof path, "ok.gz"), 0x08, 1, (const uint32_t[]){N}, payload, N, true);
    size_t n;
    unsigned char *gzb = read_raw(path, &n);
    CT_EXPECT(n > 100);
    /* cut in the middle of the deflate stream */
    expect_idx_error("cut.gz", gzb, n / 2, false, CT_ERR_FORMAT, "truncated gzip file", "uncompressed bytes");
    /* a damaged CRC-32 in the trailer */
    unsigned char *bad = malloc(n);
    memcpy(bad, gzb, n);
    bad[n - 8] ^= 0xff;
    expect_idx_error("crc.gz", bad, n, false, CT_ERR_FORMAT, "corrupt gzip data", "incorrect data check");
    /* an invalid deflate block right after the 10-byte gzip header */
    memcpy(bad, gzb, n);
    bad[10] = 0xff;
    expect_idx_error("block.gz", bad, n, false, CT_ERR_FORMAT, "corrupt gzip data", "invalid block type");
    /* not gzip at all, and gzip data under a plain name */
    size_t len;
    unsigned char *plain = idx_bytes(0x08, 1, (const uint32_t[]){N}, payload, N, &len);
    expect_idx_error("plain.gz", plain, len, false, CT_ERR_FORMAT, "is not a gzip file", "0x1f 0x8b");
    expect_idx_error("tiny.gz", plain, 1, false, CT_ERR_FORMAT, "is not a gzip file", "shorter");
    expect_idx_error("zipped-idx1-ubyte", gzb, n, false, CT_ERR_FORMAT, "bad magic number 0x1F8B08",
                     "this is gzip data");
    free(plain);
    free(bad);
    free(gzb);
    free(payload);
    tmp_end();
}

/* ---- MNIST / Fashion-MNIST ----------------------------------------------------------------- */

static uint8_t mnist_pixel(int64_t img, int64_t k) { return (uint8_t)((img * 31 + k * 7) % 256); }

/* Synthetic MNIST files for one split: n images of h×w, m labels (label i is
 * (3 i) % 10 unless bad_at >= 0, where it is 10). */
static void write_mnist(const char *split, int n, int h, int w, int m, int bad_at, bool gz, int img_type) {
    char path[256], name[64];
    size_t np = (size_t)n * (size_t)h * (size_t)w, elem = img_type == 0x0C ? 4 : 1;
    unsigned char *px = calloc(np * elem + 1, 1);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < h * w; k++) px[((size_t)i * (size_t)(h * w) + (size_t)k) * elem] = mnist_pixel(i, k);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", split, gz ? ".gz" : "");
    write_idx(tmp_path(path, sizeof path, name), img_type, 3, (const uint32_t[]){(uint32_t)n, (uint32_t)h, (uint32_t)w},
              px, np * elem, gz);
    unsigned char lab[64];
    for (int i = 0; i < m; i++) lab[i] = (unsigned char)(i == bad_at ? 10 : (3 * i) % 10);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", split, gz ? ".gz" : "");
    write_idx(tmp_path(path, sizeof path, name), 0x08, 1, (const uint32_t[]){(uint32_t)m}, lab, (size_t)m, gz);
    free(px);
}

static void remove_mnist(const char *split) {
    char path[256], name[64];
    const char *kinds[2] = {"images-idx3", "labels-idx1"};
    for (int k = 0; k < 2; k++)
        for (int gz = 0; gz < 2; gz++) {
            snprintf(name, sizeof name, "%s-%s-ubyte%s", split, kinds[k], gz ? ".gz" : "");
            remove(tmp_path(path, sizeof path, name));
        }
}

static void check_mnist_sample(ct_dataset *ds, int64_t i, double scale, double shift) {
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, i, 0, &s), CT_OK);
    if (s.n != 2) return;
    double e[784];
    for (int k = 0; k < 784; k++) e[k] = (double)(((float)mnist_pixel(i, k) / 255.0f - (float)shift) / (float)scale);
    CT_EXPECT_SHAPE(s.t[0], CT_SHAPE(1, 28, 28));
    CT_EXPECT_INT_EQ(ct_dtype_of(s.t[0]), CT_FLOAT32);
    CT_EXPECT_CLOSE(s.t[0], e, 784, 0, 0);
    CT_EXPECT_SHAPE(s.t[1], CT_SHAPE0);
    CT_EXPECT_INT_EQ(ct_dtype_of(s.t[1]), CT_INT64);
    CT_EXPECT_INT_EQ(ct_item(s.t[1]), (3 * i) % 10);
    ct_sample_clear(&s);
}

static void test_mnist_synthetic(void) {
    tmp_begin();
    write_mnist("train", 5, 28, 28, 5, -1, false, 0x08);
    write_mnist("t10k", 3, 28, 28, 3, -1, true, 0x08);
    ct_dataset *ds = ct_mnist(g_dir, true, NULL);
    CT_EXPECT_MSG(ds != NULL, "%s", ct_last_error());
    CT_EXPECT_INT_EQ(ct_dataset_len(ds), 5);
    CT_EXPECT_STR_EQ(ct_dataset_name(ds), "MNIST");
    for (int64_t i = 0; i < 5; i++) check_mnist_sample(ds, i, 1, 0);
    ct_dataset_free(ds);
    /* the .gz test split, with a transform the dataset owns */
    ds = ct_fashion_mnist(g_dir, false, ct_transform_normalize1(0.5, 0.25));
    CT_EXPECT_MSG(ds != NULL, "%s", ct_last_error());
    CT_EXPECT_INT_EQ(ct_dataset_len(ds), 3);
    CT_EXPECT_STR_EQ(ct_dataset_name(ds), "FashionMNIST");
    for (int64_t i = 0; i < 3; i++) check_mnist_sample(ds, i, 0.25, 0.5);
    ct_dataset_free(ds);
    /* the sample's key reaches the transform */
    ct_transform *crop = ct_transform_random_crop(28, 4);
    ds = ct_mnist(g_dir, true, ct_transform_random_crop(28, 4));
    ct_transform *tt = ct_transform_to_tensor(false);
    for (uint64_t key = 1; key < 6; key++) {
        ct_sample s;
        CT_EXPECT_INT_EQ(ct_dataset_get(ds, 2, key, &s), CT_OK);
        uint8_t px[784];
        for (int k = 0; k < 784; k++) px[k] = mnist_pixel(2, k);
        ct_tensor *raw = ct_tensor_from(px, CT_UINT8, CT_SHAPE(28, 28));
        ct_tensor *img = ct_transform_apply(tt, raw, 0);
        ct_tensor *want = ct_transform_apply(crop, img, key);
        double *w = ct_test_values(want);
        CT_EXPECT_CLOSE(s.t[0], w, 784, 0, 0);
        free(w);
        ct_release(want);
        ct_release(img);
        ct_release(raw);
        ct_sample_clear(&s);
    }
    ct_transform_free(tt);
    ct_transform_free(crop);
    ct_dataset_free(ds);
    tmp_end();
}

static void expect_mnist_error(ct_status code, const char *needle1, const char *needle2) {
    /* the transform belongs to the dataset even when construction fails (ASan checks) */
    ct_dataset *ds = ct_mnist(g_dir, true, ct_transform_random_horizontal_flip(0.5));
    CT_EXPECT(ds == NULL);
    ct_dataset_free(ds);
    const char *msg = ct_last_error();
    CT_EXPECT_MSG(ct_last_status() == code && strstr(msg, needle1) && (!needle2 || strstr(msg, needle2)),
                  "expected %s with \"%s\" / \"%s\", got %s: \"%s\"", ct_status_str(code), needle1,
                  needle2 ? needle2 : "", ct_status_str(ct_last_status()), msg);
    ct_clear_error();
}

static void test_mnist_errors(void) {
    tmp_begin();
    expect_mnist_error(CT_ERR_IO, "MNIST: cannot find", "train-images-idx3-ubyte.gz");
    CT_EXPECT(ct_fashion_mnist(NULL, true, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "FashionMNIST: NULL root");
    write_mnist("train", 5, 28, 28, 4, -1, false, 0x08);
    expect_mnist_error(CT_ERR_FORMAT, "train-images-idx3-ubyte holds 5 images but", "holds 4 labels");
    remove_mnist("train");
    write_mnist("train", 5, 28, 28, 5, 2, true, 0x08);
    expect_mnist_error(CT_ERR_FORMAT, "train-labels-idx1-ubyte.gz: label 10 of sample 2 (byte offset 10)",
                       "expected 0 to 9");
    remove_mnist("train");
    write_mnist("train", 5, 27, 28, 5, -1, false, 0x08);
    expect_mnist_error(CT_ERR_FORMAT, "images of shape [5, 27, 28], expected N x 28 x 28", NULL);
    remove_mnist("train");
    write_mnist("train", 2, 28, 28, 2, -1, false, 0x0C);   /* int32 "images" */
    expect_mnist_error(CT_ERR_FORMAT, "magic number 2051", "got magic number 3075 = 0x00000C03");
    remove_mnist("train");
    /* labels with the images' magic */
    write_mnist("train", 2, 28, 28, 2, -1, false, 0x08);
    char ipath[256], lpath[256];
    tmp_path(ipath, sizeof ipath, "train-images-idx3-ubyte");
    tmp_path(lpath, sizeof lpath, "train-labels-idx1-ubyte");
    size_t n;
    unsigned char *img = read_raw(ipath, &n);
    write_raw(lpath, img, n);
    free(img);
    expect_mnist_error(CT_ERR_FORMAT, "expected uint8 labels with 1 dimension (magic number 2049", "0x00000803");
    /* a damaged images file reports the IDX error under the dataset's name */
    write_mnist("train", 2, 28, 28, 2, -1, false, 0x08);
    img = read_raw(ipath, &n);
    write_raw(ipath, img, n - 5);
    free(img);
    expect_mnist_error(CT_ERR_FORMAT, "MNIST: ", "truncated file");
    tmp_end();
}

/* ---- CIFAR-10 ------------------------------------------------------------------------------- */

#define CIFAR_REC 3073
#define CIFAR_BYTES 30730000L

static uint8_t cifar_pixel(int64_t rec, int64_t k) { return (uint8_t)((rec * 13 + k * 5 + 1) % 251); }

/* A batch file of `size` bytes, zero except records `recs` (label = labels[i],
 * pixels from cifar_pixel). The zeros are a sparse file: cheap to write. */
static void write_cifar(const char *dir, const char *name, long size, const int64_t *recs, const int *labels,
                        int n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || ftruncate(fileno(f), size) != 0) ct_test_fail(__FILE__, __LINE__, "cannot create %s", path);
    unsigned char rec[CIFAR_REC];
    for (int i = 0; i < n && f; i++) {
        rec[0] = (unsigned char)labels[i];
        for (int k = 0; k < 3072; k++) rec[1 + k] = cifar_pixel(recs[i], k);
        fseek(f, (long)recs[i] * CIFAR_REC, SEEK_SET);
        fwrite(rec, 1, CIFAR_REC, f);
    }
    if (f) fclose(f);
}

static void check_cifar_sample(ct_dataset *ds, int64_t i, int64_t rec, int label, bool zero) {
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, i, 0, &s), CT_OK);
    if (s.n != 2) return;
    static double e[3072];
    for (int k = 0; k < 3072; k++) e[k] = zero ? 0.0 : (double)((float)cifar_pixel(rec, k) / 255.0f);
    CT_EXPECT_SHAPE(s.t[0], CT_SHAPE(3, 32, 32));
    CT_EXPECT_CLOSE(s.t[0], e, 3072, 0, 0);
    CT_EXPECT_INT_EQ(ct_item(s.t[1]), label);
    CT_EXPECT_INT_EQ(ct_dtype_of(s.t[1]), CT_INT64);
    ct_sample_clear(&s);
}

static void test_cifar10_synthetic(void) {
    tmp_begin();
    write_cifar(g_dir, "test_batch.bin", CIFAR_BYTES, (const int64_t[]){0, 1, 9999}, (const int[]){3, 9, 5}, 3);
    ct_dataset *ds = ct_cifar10(g_dir, false, NULL);
    CT_EXPECT_MSG(ds != NULL, "%s", ct_last_error());
    CT_EXPECT_INT_EQ(ct_dataset_len(ds), 10000);
    CT_EXPECT_STR_EQ(ct_dataset_name(ds), "CIFAR10");
    check_cifar_sample(ds, 0, 0, 3, false);
    check_cifar_sample(ds, 1, 1, 9, false);
    check_cifar_sample(ds, 9999, 9999, 5, false);
    check_cifar_sample(ds, 5, 5, 0, true);
    ct_dataset_free(ds);

    /* the train split from five files, found in root/cifar-10-batches-bin */
    char sub[256];
    snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", g_dir);
    mkdir(sub, 0700);
    for (int b = 1; b <= 5; b++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_cifar(sub, name, CIFAR_BYTES, (const int64_t[]){b * 7}, (const int[]){b + 1}, 1);
    }
    ds = ct_cifar10(g_dir, true, ct_transform_normalize1(0.5, 0.5));
    CT_EXPECT_MSG(ds != NULL, "%s", ct_last_error());
    CT_EXPECT_INT_EQ(ct_dataset_len(ds), 50000);
    for (int b = 1; b <= 5; b++) {
        ct_sample s;
        int64_t i = (b - 1) * 10000 + b * 7;
        CT_EXPECT_INT_EQ(ct_dataset_get(ds, i, 0, &s), CT_OK);
        CT_EXPECT_INT_EQ(ct_item(s.t[1]), b + 1);
        /* pixel 100 after Normalize(0.5, 0.5) */
        double *v = ct_test_values(s.t[0]);
        CT_EXPECT(v[100] == (double)(((float)cifar_pixel(b * 7, 100) / 255.0f - 0.5f) / 0.5f));
        free(v);
        ct_sample_clear(&s);
    }
    ct_dataset_free(ds);
    tmp_end();
}

static void test_cifar10_errors(void) {
    tmp_begin();
    ct_dataset *ds = ct_cifar10(g_dir, false, ct_transform_random_horizontal_flip(0.5));
    CT_EXPECT(ds == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "test_batch.bin: No such file");
    write_cifar(g_dir, "test_batch.bin", CIFAR_BYTES - 1, NULL, NULL, 0);
    CT_EXPECT(ct_cifar10(g_dir, false, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "test_batch.bin has 30729999 bytes, expected 30730000");
    write_cifar(g_dir, "test_batch.bin", CIFAR_BYTES + 3073, NULL, NULL, 0);
    CT_EXPECT(ct_cifar10(g_dir, false, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "has 30733073 bytes, expected 30730000");
    write_cifar(g_dir, "test_batch.bin", CIFAR_BYTES, (const int64_t[]){4, 600}, (const int[]){10, 255}, 2);
    CT_EXPECT(ct_cifar10(g_dir, false, ct_transform_to_tensor(true)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "test_batch.bin: label 10 of record 4 (byte offset 12292) is out of range");
    /* train: a later file missing */
    for (int b = 1; b <= 3; b++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_cifar(g_dir, name, CIFAR_BYTES, NULL, NULL, 0);
    }
    CT_EXPECT(ct_cifar10(g_dir, true, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "data_batch_4.bin");
    CT_EXPECT(ct_cifar10(NULL, true, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL root");
    tmp_end();
}

/* ---- the real Fashion-MNIST, when present ------------------------------------------------------ */

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static void test_fashion_mnist_real(void) {
    if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("  (no %s: skipped)\n", FMNIST_DIR);
        return;
    }
    const struct { bool train; int64_t n; int first[3]; uint64_t sum0, total; } splits[2] = {
        {true, 60000, {9, 0, 0}, 76247, 3431114169ull},
        {false, 10000, {9, 2, 1}, 33456, 573469082ull},
    };
    for (int sp = 0; sp < 2; sp++) {
        ct_dataset *ds = ct_fashion_mnist(FMNIST_DIR, splits[sp].train, NULL);
        CT_EXPECT_MSG(ds != NULL, "%s", ct_last_error());
        if (!ds) return;
        int64_t n = splits[sp].n;
        CT_EXPECT_INT_EQ(ct_dataset_len(ds), n);
        const char *lab_file = splits[sp].train ? FMNIST_DIR "/train-labels-idx1-ubyte.gz"
                                                : FMNIST_DIR "/t10k-labels-idx1-ubyte.gz";
        const char *img_file = splits[sp].train ? FMNIST_DIR "/train-images-idx3-ubyte.gz"
                                                : FMNIST_DIR "/t10k-images-idx3-ubyte.gz";
        ct_tensor *labels = ct_idx_load(lab_file), *images = ct_idx_load(img_file);
        CT_EXPECT_SHAPE(labels, CT_SHAPE(n));
        CT_EXPECT_SHAPE(images, CT_SHAPE(n, 28, 28));
        /* balanced classes: 6000 (train) or 1000 (test) of each */
        int64_t hist[10] = {0};
        const uint8_t *lab = ct_data_ptr(labels);
        for (int64_t i = 0; i < n; i++) hist[lab[i] < 10 ? lab[i] : 0]++;
        for (int c = 0; c < 10; c++) CT_EXPECT_INT_EQ(hist[c], n / 10);
        /* pixels span 0..255; the mean is the well-known 0.2860 (train) */
        const uint8_t *px = ct_data_ptr(images);
        uint8_t lo = 255, hi = 0;
        uint64_t total = 0;
        for (int64_t i = 0; i < n * 784; i++) {
            lo = px[i] < lo ? px[i] : lo;
            hi = px[i] > hi ? px[i] : hi;
            total += px[i];
        }
        CT_EXPECT_INT_EQ(lo, 0);
        CT_EXPECT_INT_EQ(hi, 255);
        CT_EXPECT_INT_EQ(total, splits[sp].total);
        if (splits[sp].train) CT_EXPECT_NEAR((double)total / (double)(n * 784) / 255.0, 0.2860, 1e-4);
        /* samples agree with the files: first labels, image 0's pixel sum, a stride of others */
        for (int64_t i = 0; i < n; i += (i < 3 ? 1 : 997)) {
            ct_sample s;
            CT_EXPECT_INT_EQ(ct_dataset_get(ds, i, 0, &s), CT_OK);
            if (i < 3) CT_EXPECT_INT_EQ(ct_item(s.t[1]), splits[sp].first[i]);
            CT_EXPECT_INT_EQ(ct_item(s.t[1]), lab[i]);
            double *v = ct_test_values(s.t[0]);
            double sum = 0;
            for (int k = 0; k < 784; k++) {
                CT_EXPECT(v[k] == (double)((float)px[i * 784 + k] / 255.0f));
                sum += v[k];
            }
            if (i == 0) CT_EXPECT_NEAR(sum * 255.0, (double)splits[sp].sum0, 1e-2);
            free(v);
            ct_sample_clear(&s);
        }
        ct_release(labels);
        ct_release(images);
        ct_dataset_free(ds);
    }
}

/* ---- errors raised by user callbacks (ct_set_error) ------------------------------------ */

/* get fails for odd indices: index 3 explains itself, index 1 says nothing. */
static int64_t cb_len(void *state) { return (void)state, 4; }
static ct_status cb_get(void *state, int64_t index, uint64_t key, ct_sample *out) {
    (void)state, (void)key;
    if (index == 3) return ct_set_error(CT_ERR_IO, "cannot read record %lld: %s", (long long)index, "disk gone");
    if (index == 1) return CT_ERR_IO;
    out->n = 1;
    out->t[0] = ct_full(CT_SHAPE0, (double)index);
    return CT_OK;
}

static void test_callback_errors(void) {
    ct_dataset *ds = ct_dataset_new("Flaky", (ct_dataset_fns){cb_len, cb_get, NULL}, NULL);
    ct_sample s;
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, 3, 0, &s), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "cannot read record 3: disk gone");
    /* a stale, unrelated error must not stand in for the silent failure */
    ct_set_error(CT_ERR_SHAPE, "an old shape error");
    CT_EXPECT_INT_EQ(ct_dataset_get(ds, 1, 0, &s), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "Flaky: dataset get(1) failed with CT_ERR_IO without setting an error");
    /* the same through a DataLoader without workers, at the failing batch */
    ct_dataloader *dl = ct_dataloader_new(ds, (ct_dataloader_opts){.batch_size = 2});
    ct_dataloader_iter *it = ct_dataloader_iter_new(dl);
    ct_set_error(CT_ERR_SHAPE, "an old shape error");
    CT_EXPECT(!ct_dataloader_next(it, &s));
    CT_EXPECT_ERROR(CT_ERR_IO, "Flaky: dataset get(1) failed with CT_ERR_IO without setting an error");
    ct_dataloader_iter_free(it);
    ct_dataloader_free(dl);
    ct_dataset_free(ds);
    /* ct_set_error: returns its code, may quote the previous message */
    CT_EXPECT_INT_EQ(ct_set_error(CT_ERR_FORMAT, "bad byte %d", 7), CT_ERR_FORMAT);
    CT_EXPECT_INT_EQ(ct_set_error(CT_ERR_IO, "while loading: %s", ct_last_error()), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "while loading: bad byte 7");
    CT_EXPECT_INT_EQ(ct_set_error(CT_OK, "fine?"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "ct_set_error: code 0 is not an error code (message: fine?)");
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_tensor_dataset);
    CT_RUN(test_tensor_dataset_errors);
    CT_RUN(test_subset);
    CT_RUN(test_idx_round_trip);
    CT_RUN(test_idx_malformed_headers);
    CT_RUN(test_idx_malformed_payloads);
    CT_RUN(test_idx_bad_gzip);
    CT_RUN(test_mnist_synthetic);
    CT_RUN(test_mnist_errors);
    CT_RUN(test_cifar10_synthetic);
    CT_RUN(test_cifar10_errors);
    CT_RUN(test_fashion_mnist_real);
    CT_RUN(test_callback_errors);
    return ct_test_finish();
}
