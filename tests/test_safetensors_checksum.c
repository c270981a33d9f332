/*
 * test_safetensors_checksum.c — ctorch's optional whole-file checksum in
 * safetensors files (ct_safetensors_save_checksummed): the stored digits are
 * the CRC-32C of the file with the digits read as zeros (checked against a
 * bit-at-a-time CRC written here, not the library's table code); every
 * single-bit flip anywhere in such a file is refused, or — when the flip
 * hits the checksum entry's own key — leaves a dict without the entry, which
 * a caller that insists on it sees; a plain save of a loaded dict drops the
 * stale entry; and files without one load as before.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctorch/io.h"
#include "st_testutil.h"
#include "testutil.h"

/* CRC-32C, one bit at a time (the reflected Castagnoli polynomial). */
static uint32_t reference_crc32c(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++) crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static ct_tensor_dict *sample_dict(void) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    CT_SCOPE {
        ct_tensor_dict_set(d, "w", ct_arange(0, 12, 1, .dtype = CT_FLOAT32));
        ct_tensor_dict_set(d, "step", ct_scalar_tensor(7, .dtype = CT_INT64));
    }
    ct_tensor_dict_set_metadata(d, "trainer.epoch", "3");
    return d;
}

/* Offset of the 8 digits in the file bytes, or 0. */
static size_t digits_offset(const unsigned char *file, size_t n) {
    static const char key[] = "\"" CT_SAFETENSORS_CHECKSUM_KEY "\":\"";
    for (size_t i = 8; i + sizeof key - 1 + 8 <= n; i++)
        if (memcmp(file + i, key, sizeof key - 1) == 0) return i + sizeof key - 1;
    return 0;
}

static void test_digits_are_the_crc_of_the_file(void) {
    char *dir = st_scratch_dir(), *path = st_path(dir, "a.safetensors");
    ct_tensor_dict *d = sample_dict();
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(path, d), CT_OK);
    size_t n = 0;
    unsigned char *file = st_read_file(path, &n);
    size_t at = digits_offset(file, n);
    CT_EXPECT_MSG(at > 0, "no checksum entry in the written header");
    if (at) {
        char stored[9] = {0}, want[9];
        memcpy(stored, file + at, 8);
        memcpy(file + at, "00000000", 8);
        snprintf(want, sizeof want, "%08x", (unsigned)reference_crc32c(file, n));
        CT_EXPECT_STR_EQ(stored, want);
    }
    ct_tensor_dict *back = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load(path, ct_device_cpu(), &back), CT_OK);
    if (back) {
        CT_EXPECT(ct_tensor_dict_get_metadata(back, CT_SAFETENSORS_CHECKSUM_KEY) != NULL);
        CT_EXPECT_STR_EQ(ct_tensor_dict_get_metadata(back, "trainer.epoch"), "3");
        CT_SCOPE { CT_EXPECT_NEAR(ct_item(ct_sum_all(ct_tensor_dict_get(back, "w"))), 66.0, 0); }
    }
    ct_tensor_dict_free(back);
    ct_tensor_dict_free(d);
    free(file);
    free(path);
    st_remove_dir(dir);
}

/* Every bit of the file, flipped alone: refused, or (a flip in the entry's
 * key) loaded without the entry. Flips in the data, in metadata values and
 * in the digits themselves are reported as checksum errors. */
static void test_every_bit_flip_is_caught(void) {
    ct_tensor_dict *d = sample_dict();
    size_t n = 0;
    char *dir = st_scratch_dir(), *path = st_path(dir, "a.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(path, d), CT_OK);
    unsigned char *file = st_read_file(path, &n);
    size_t at = digits_offset(file, n);
    const char *value = strstr((const char *)file + 8, "\"3\"");
    size_t value_at = value ? (size_t)(value - (const char *)file) + 1 : 0;
    size_t data_start = n - 12 * 4 - 8;
    int refused = 0, keyless = 0, mismatches = 0, flips = 0;
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            unsigned char *copy = malloc(n);
            memcpy(copy, file, n);
            copy[i] ^= (unsigned char)(1u << bit);
            ct_tensor_dict *back = NULL;
            ct_status s = ct_safetensors_load_buffer(copy, n, ct_device_cpu(), &back);
            flips++;
            if (s != CT_OK) {
                refused++;
                if (strstr(ct_last_error(), "checksum")) mismatches++;
            } else if (!ct_tensor_dict_get_metadata(back, CT_SAFETENSORS_CHECKSUM_KEY)) {
                keyless++;
            } else {
                CT_EXPECT_MSG(false, "flipping bit %d of byte %zu was not noticed", bit, i);
            }
            bool must_mismatch = i >= data_start || i == value_at || (i >= at && i < at + 8);
            if (must_mismatch && (s == CT_OK || !strstr(ct_last_error(), "checksum")))
                CT_EXPECT_MSG(false, "byte %zu bit %d: expected a checksum mismatch, got: %s", i, bit,
                              s == CT_OK ? "success" : ct_last_error());
            ct_tensor_dict_free(back);
            free(copy);
        }
    }
    printf("  %d flips: %d refused (%d as checksum mismatches), %d loaded without the entry\n", flips, refused,
           mismatches, keyless);
    CT_EXPECT_INT_EQ(refused + keyless, flips);
    CT_EXPECT(mismatches > flips / 2);
    free(file);
    free(path);
    st_remove_dir(dir);
    ct_tensor_dict_free(d);
}

/* A plain save of a dict loaded from a checksummed file drops the stale
 * entry, so the new file loads; a checksummed save writes a fresh one. */
static void test_resaving_drops_or_renews_the_entry(void) {
    char *dir = st_scratch_dir(), *a = st_path(dir, "a.safetensors"), *b = st_path(dir, "b.safetensors");
    ct_tensor_dict *d = sample_dict(), *back = NULL, *again = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(a, d), CT_OK);
    CT_EXPECT_INT_EQ(ct_safetensors_load(a, ct_device_cpu(), &back), CT_OK);
    CT_SCOPE { ct_tensor_dict_set(back, "w", ct_zeros(CT_SHAPE(12))); }
    CT_EXPECT_INT_EQ(ct_safetensors_save(b, back), CT_OK);
    CT_EXPECT_INT_EQ(ct_safetensors_load(b, ct_device_cpu(), &again), CT_OK);
    CT_EXPECT(again && !ct_tensor_dict_get_metadata(again, CT_SAFETENSORS_CHECKSUM_KEY));
    ct_tensor_dict_free(again);
    again = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(b, back), CT_OK);
    CT_EXPECT_INT_EQ(ct_safetensors_load(b, ct_device_cpu(), &again), CT_OK);
    CT_EXPECT(again && ct_tensor_dict_get_metadata(again, CT_SAFETENSORS_CHECKSUM_KEY));
    ct_tensor_dict_free(again);
    ct_tensor_dict_free(back);
    ct_tensor_dict_free(d);
    free(a);
    free(b);
    st_remove_dir(dir);
}

/* An empty dict with no metadata at all still gets (only) the entry; a
 * truncated checksummed file is refused; the file path is named. */
static void test_edges(void) {
    char *dir = st_scratch_dir(), *path = st_path(dir, "e.safetensors");
    ct_tensor_dict *d = ct_tensor_dict_new(), *back = NULL;
    ct_tensor_dict_set_metadata(d, "format", NULL);
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(path, d), CT_OK);
    CT_EXPECT_INT_EQ(ct_safetensors_load(path, ct_device_cpu(), &back), CT_OK);
    CT_EXPECT(back && ct_tensor_dict_size(back) == 0 && ct_tensor_dict_metadata_size(back) == 1);
    ct_tensor_dict_free(back);
    ct_tensor_dict_free(d);
    d = sample_dict();
    CT_EXPECT_INT_EQ(ct_safetensors_save_checksummed(path, d), CT_OK);
    size_t n = 0;
    unsigned char *file = st_read_file(path, &n);
    CT_EXPECT(st_write_file(path, file, n - 1));
    back = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load(path, ct_device_cpu(), &back), CT_ERR_FORMAT);
    CT_EXPECT_ERROR(CT_ERR_FORMAT, "e.safetensors");
    CT_EXPECT(back == NULL);
    free(file);
    ct_tensor_dict_free(d);
    free(path);
    st_remove_dir(dir);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_digits_are_the_crc_of_the_file);
    CT_RUN(test_every_bit_flip_is_caught);
    CT_RUN(test_resaving_drops_or_renews_the_entry);
    CT_RUN(test_edges);
    return ct_test_finish();
}
