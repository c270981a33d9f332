/*
 * cifar.c — the CIFAR-10 dataset from its binary version (the
 * cifar-10-batches-bin folder, "suitable for C programs"): fixed 3073-byte
 * records of one label byte and a 3×32×32 CHW image, 10000 per file.
 *
 * The format has no header, so the only guards against a wrong or damaged
 * file are its exact size and the label range; both are checked for every
 * file at construction, with the file, the size or the record and its byte
 * offset in the message. All images are kept in one uint8 tensor.
 */
#define _POSIX_C_SOURCE 200809L /* fdopen */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)   /* 3072 */
#define CIFAR_RECORD (1 + CIFAR_PIXELS)               /* 3073 */
#define CIFAR_PER_FILE 10000
#define CIFAR_FILE_BYTES ((int64_t)CIFAR_RECORD * CIFAR_PER_FILE)   /* 30730000 */
#define CIFAR_CLASSES 10
#define CIFAR_CHUNK 512                               /* records per read */

typedef struct cifar_ds {
    ct_tensor *images;   /* uint8 [N, 3, 32, 32] */
    uint8_t *labels;     /* N */
    ct_transform *tf;    /* owned, may be NULL */
} cifar_ds;

static int64_t cifar_len(void *state) { return ((cifar_ds *)state)->images->shape[0]; }

static ct_status cifar_get(void *state, int64_t index, uint64_t key, ct_sample *out) {
    cifar_ds *s = state;
    const uint8_t *pixels = (const uint8_t *)ct_data_ptr(s->images) + index * CIFAR_PIXELS;
    static const int64_t shape[3] = {3, CIFAR_SIDE, CIFAR_SIDE};
    return ctd_image_sample(pixels, shape, 3, s->labels[index], s->tf, key, out);
}

static void cifar_free(void *state) {
    cifar_ds *s = state;
    ct_decref(s->images);
    free(s->labels);
    ct_transform_free(s->tf);
    free(s);
}

/* `records` records from fd (a regular file of exactly that many records;
 * taken over and closed) into images and labels; path names it in errors. */
ct_status ctd_cifar_read_fd(const char *path, int fd, int64_t records, uint8_t *images, uint8_t *labels) {
    if (records < 0 || records > INT64_MAX / CIFAR_RECORD) {
        close(fd);
        return ct_error_set(CT_ERR_INVALID_ARG, "CIFAR10: %s: cannot read %lld records", path, (long long)records);
    }
    struct stat st;
    int64_t want = records * CIFAR_RECORD;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (int64_t)st.st_size != want) {
        long long size = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
        close(fd);
        return ct_error_set(CT_ERR_FORMAT,
                            "CIFAR10: %s has %lld bytes, expected %lld (%lld records of %d bytes: the binary "
                            "version of CIFAR-10)", path, size, (long long)want, (long long)records, CIFAR_RECORD);
    }
    unsigned char *chunk = malloc((size_t)CIFAR_CHUNK * CIFAR_RECORD);
    FILE *f = chunk ? fdopen(fd, "rb") : NULL;
    if (!f) {
        free(chunk);
        close(fd);
        return ct_error_set(CT_ERR_OOM, "CIFAR10: out of memory reading %s", path);
    }
    ct_status st_ = CT_OK;
    for (int64_t r0 = 0; r0 < records && st_ == CT_OK; r0 += CIFAR_CHUNK) {
        int64_t n = records - r0 < CIFAR_CHUNK ? records - r0 : CIFAR_CHUNK;
        size_t got = fread(chunk, CIFAR_RECORD, (size_t)n, f);
        if ((int64_t)got < n) {
            st_ = ct_error_set(CT_ERR_IO, "CIFAR10: error reading %s at offset %lld: %s", path,
                               (long long)((r0 + (int64_t)got) * CIFAR_RECORD),
                               ferror(f) ? strerror(errno) : "unexpected end of file");
            break;
        }
        for (int64_t k = 0; k < n; k++) {
            const unsigned char *rec = chunk + k * CIFAR_RECORD;
            int64_t r = r0 + k;
            if (rec[0] >= CIFAR_CLASSES) {
                st_ = ct_error_set(CT_ERR_FORMAT,
                                   "CIFAR10: %s: label %d of record %lld (byte offset %lld) is out of range: "
                                   "expected 0 to %d", path, rec[0], (long long)r,
                                   (long long)(r * CIFAR_RECORD), CIFAR_CLASSES - 1);
                break;
            }
            labels[r] = rec[0];
            memcpy(images + r * CIFAR_PIXELS, rec + 1, CIFAR_PIXELS);
        }
    }
    fclose(f);
    free(chunk);
    return st_;
}

/* One batch file into its 10000 slots of images and labels. */
static ct_status cifar_read_file(const char *path, uint8_t *images, uint8_t *labels) {
    int fd = ctd_open_regular("CIFAR10", path, NULL);
    if (fd < 0) return ct_last_status();
    return ctd_cifar_read_fd(path, fd, CIFAR_PER_FILE, images, labels);
}

/* The batch files live in root, or in root/cifar-10-batches-bin when root is
 * the folder the archive was unpacked in. */
static ct_status cifar_dir(const char *root, const char *first, char *dir, size_t size) {
    char direct[4096], nested[4096];
    snprintf(direct, sizeof direct, "%s/%s", root, first);
    snprintf(nested, sizeof nested, "%s/cifar-10-batches-bin/%s", root, first);
    bool use_nested = !ctd_file_exists(direct) && ctd_file_exists(nested);
    int n = use_nested ? snprintf(dir, size, "%s/cifar-10-batches-bin", root) : snprintf(dir, size, "%s", root);
    if (n < 0 || (size_t)n + 32 >= size)
        return ct_error_set(CT_ERR_INVALID_ARG, "CIFAR10: the path %s is too long", root);
    return CT_OK;
}

ct_dataset *ct_cifar10(const char *root, bool train, ct_transform *transform) {
    static const char *const train_files[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                              "data_batch_4.bin", "data_batch_5.bin"};
    static const char *const test_files[] = {"test_batch.bin"};
    const char *const *files = train ? train_files : test_files;
    int nfiles = train ? 5 : 1;
    cifar_ds *s = NULL;
    char dir[4096], path[4096 + 64];   /* dir leaves room for a file name */
    if (!root) {
        ct_error_set(CT_ERR_INVALID_ARG, "CIFAR10: NULL root");
        goto fail;
    }
    if (cifar_dir(root, files[0], dir, sizeof dir) != CT_OK) goto fail;
    int64_t n = (int64_t)nfiles * CIFAR_PER_FILE;
    int64_t shape[4] = {n, 3, CIFAR_SIDE, CIFAR_SIDE};
    s = calloc(1, sizeof *s);
    if (!s || !(s->labels = malloc((size_t)n))) {
        ct_error_set(CT_ERR_OOM, "CIFAR10: out of memory");
        goto fail;
    }
    if (!(s->images = ct_tensor_alloc(shape, 4, CT_UINT8, ct_device_cpu()))) goto fail;
    uint8_t *images = ct_data_ptr(s->images);
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (cifar_read_file(path, images + (int64_t)i * CIFAR_PER_FILE * CIFAR_PIXELS,
                            s->labels + (int64_t)i * CIFAR_PER_FILE) != CT_OK)
            goto fail;
    }
    s->tf = transform;
    transform = NULL;
    ct_dataset *ds = ct_dataset_new("CIFAR10", (ct_dataset_fns){cifar_len, cifar_get, cifar_free}, s);
    if (ds) return ds;
fail:   /* the dataset owns the transform, also when it cannot be built */
    if (s) cifar_free(s);
    ct_transform_free(transform);
    return NULL;
}
