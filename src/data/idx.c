/*
 * idx.c — the IDX file format (LeCun's MNIST format, plain or gzip) and the
 * MNIST / Fashion-MNIST datasets built on it.
 *
 * Data files come from downloads that can be cut short, renamed or replaced
 * by an HTML error page, so every byte count is checked before it is
 * trusted: the magic number, the type code, the dimension count, the size
 * the header promises (overflow-checked) and the exact payload length, and
 * every failure names the file, the byte offset and what was expected. The
 * datasets read and check their files once, at construction, and keep one
 * uint8 tensor of all images; get() converts one image at a time.
 */
#define _POSIX_C_SOURCE 200809L /* fdopen, pread */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data_internal.h"

/* Anything but a directory counts, so that a FIFO or a device under a data
 * file's name reaches ctd_open_regular and is refused with its own message
 * rather than reported as missing. */
bool ctd_file_exists(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "of an unknown file type";
}

/* O_NONBLOCK makes open() return at once on a FIFO with no writer (a plain
 * open would wait forever); the type is then checked on the opened
 * descriptor, not on the name, so the file cannot be swapped in between. */
int ctd_open_regular(const char *who, const char *path, int64_t *size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        ct_error_set(CT_ERR_IO, "%s: cannot open %s: %s", who, path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        ct_error_set(CT_ERR_IO, "%s: cannot stat %s: %s", who, path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        ct_error_set(CT_ERR_IO, "%s: %s is not a regular file (it is %s); data files must be regular files",
                     who, path, file_kind(st.st_mode));
        close(fd);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags != -1) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (size) *size = (int64_t)st.st_size;
    return fd;
}

/* ---- reading plain and gzip files with exact byte accounting ------------------- */

typedef struct idx_reader {
    const char *who, *path;
    bool gz;
    FILE *f;
    gzFile g;
    int64_t pos;         /* uncompressed bytes consumed */
    int64_t file_size;   /* plain files; -1 for gzip (unknown until read) */
} idx_reader;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Takes over fd (a regular file) whatever happens. */
static ct_status reader_attach(idx_reader *r, const char *who, const char *path, int fd, bool gz) {
    memset(r, 0, sizeof *r);
    r->who = who, r->path = path, r->file_size = -1, r->gz = gz;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ct_error_set(CT_ERR_IO, "%s: %s is not a regular file", who, path);
    }
    if (!gz) {
        r->file_size = (int64_t)st.st_size;
        if (!(r->f = fdopen(fd, "rb"))) {
            close(fd);
            return ct_error_set(CT_ERR_IO, "%s: cannot open %s: %s", who, path, strerror(errno));
        }
        return CT_OK;
    }
    unsigned char m[2] = {0, 0};
    ssize_t got = pread(fd, m, 2, 0);
    if (got < 2 || m[0] != 0x1f || m[1] != 0x8b) {
        close(fd);
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s is not a gzip file (%s; a name ending in .gz must hold gzip data)", who, path,
                            got < 2 ? "it is shorter than the 2-byte gzip signature"
                                    : "it does not start with the gzip signature 0x1f 0x8b");
    }
    if (!(r->g = gzdopen(fd, "rb"))) {
        close(fd);
        return ct_error_set(CT_ERR_IO, "%s: cannot open %s: %s", who, path, strerror(errno));
    }
    gzbuffer(r->g, 1 << 18);
    return CT_OK;
}

static ct_status reader_open(idx_reader *r, const char *who, const char *path) {
    memset(r, 0, sizeof *r);
    int fd = ctd_open_regular(who, path, NULL);
    if (fd < 0) return ct_last_status();
    return reader_attach(r, who, path, fd, ends_with(path, ".gz"));
}

static void reader_close(idx_reader *r) {
    if (r->f) fclose(r->f);
    if (r->g) gzclose(r->g);
    r->f = NULL, r->g = NULL;
}

/* Read up to n bytes; *got says how many arrived. A short count without an
 * error is the end of the (uncompressed) data. Errors: I/O failures,
 * corrupt or truncated gzip streams, each with the offset reached. */
static ct_status reader_read(idx_reader *r, void *buf, int64_t n, int64_t *got) {
    *got = 0;
    while (*got < n) {
        int64_t want = n - *got;
        if (want > (1 << 30)) want = 1 << 30;
        char *dst = (char *)buf + *got;
        int64_t k;
        if (!r->gz) {
            k = (int64_t)fread(dst, 1, (size_t)want, r->f);
            if (k < want && ferror(r->f))
                return ct_error_set(CT_ERR_IO, "%s: error reading %s at offset %lld: %s", r->who, r->path,
                                    (long long)(r->pos + k), strerror(errno));
        } else {
            k = gzread(r->g, dst, (unsigned)want);
            int zerr = Z_OK;
            const char *zmsg = k < want ? gzerror(r->g, &zerr) : "";
            if (k < 0) k = 0;
            if (zerr == Z_ERRNO)
                return ct_error_set(CT_ERR_IO, "%s: error reading %s: %s", r->who, r->path, strerror(errno));
            if (zerr == Z_BUF_ERROR)
                return ct_error_set(CT_ERR_FORMAT,
                                    "%s: %s: truncated gzip file (%s) after %lld uncompressed bytes", r->who,
                                    r->path, zmsg, (long long)(r->pos + k));
            if (zerr != Z_OK)
                return ct_error_set(CT_ERR_FORMAT,
                                    "%s: %s: corrupt gzip data (%s) after %lld uncompressed bytes", r->who,
                                    r->path, zmsg, (long long)(r->pos + k));
        }
        *got += k;
        r->pos += k;
        if (k < want) break;
    }
    return CT_OK;
}

/* ---- the IDX header and payload -------------------------------------------------- */

typedef struct idx_info {
    uint32_t magic;
    int type;                      /* 0x08 … 0x0E */
    int ndim;
    int64_t dims[CT_MAX_DIMS];
    int64_t header_bytes;
    int64_t payload_bytes;
} idx_info;

static const char *idx_type_name(int type, ct_dtype *dt, int *elem) {
    switch (type) {
    case 0x08: *dt = CT_UINT8, *elem = 1; return "uint8";
    case 0x09: *dt = CT_INT32, *elem = 1; return "int8";
    case 0x0B: *dt = CT_INT32, *elem = 2; return "int16";
    case 0x0C: *dt = CT_INT32, *elem = 4; return "int32";
    case 0x0D: *dt = CT_FLOAT32, *elem = 4; return "float32";
    case 0x0E: *dt = CT_FLOAT64, *elem = 8; return "float64";
    }
    return NULL;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Errors for a header or payload that ends early: where it ended and what the
 * header promised. */
static ct_status short_read(idx_reader *r, const char *what, int64_t start, int64_t need, int64_t total) {
    if (r->gz)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: truncated file: the %s needs %lld bytes from offset %lld (%lld bytes in "
                            "all, uncompressed), but the data ends at offset %lld",
                            r->who, r->path, what, (long long)need, (long long)start, (long long)total,
                            (long long)r->pos);
    return ct_error_set(CT_ERR_FORMAT,
                        "%s: %s: truncated file: the %s needs %lld bytes from offset %lld, so the file should "
                        "be %lld bytes, but it has %lld",
                        r->who, r->path, what, (long long)need, (long long)start, (long long)total,
                        (long long)r->file_size);
}

static ct_status read_header(idx_reader *r, idx_info *info) {
    unsigned char b[4 * CT_MAX_DIMS];
    int64_t got;
    CT_TRY(reader_read(r, b, 4, &got));
    if (got < 4) return short_read(r, "header's magic number", 0, 4, 4);
    info->magic = be32(b);
    if (b[0] != 0 || b[1] != 0)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: bad magic number 0x%08X: an IDX file starts with two zero bytes%s", r->who,
                            r->path, (unsigned)info->magic,
                            (b[0] == 0x1f && b[1] == 0x8b)
                                ? " (this is gzip data: give the file a .gz name or decompress it)"
                                : "");
    info->type = b[2];
    info->ndim = b[3];
    ct_dtype dt;
    int elem;
    if (!idx_type_name(info->type, &dt, &elem))
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: unknown data type code 0x%02X in magic number 0x%08X (expected 0x08 uint8, "
                            "0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32 or 0x0E float64)",
                            r->who, r->path, (unsigned)info->type, (unsigned)info->magic);
    if (info->ndim < 1 || info->ndim > CT_MAX_DIMS)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: magic number 0x%08X gives %d dimensions; expected 1 to %d", r->who, r->path,
                            (unsigned)info->magic, info->ndim, CT_MAX_DIMS);
    info->header_bytes = 4 + 4 * (int64_t)info->ndim;
    CT_TRY(reader_read(r, b, 4 * info->ndim, &got));
    if (got < 4 * info->ndim)
        return short_read(r, "header's list of dimension sizes", 4, 4 * info->ndim, info->header_bytes);
    for (int i = 0; i < info->ndim; i++) info->dims[i] = be32(b + 4 * i);
    /* Zeros count as ones here, as for every tensor's shape: a header with a
     * zero dimension must not hide sizes whose product overflows. */
    char sb[CT_SHAPE_STR_MAX], why[256];
    int64_t numel;
    bool fits = ct_shape_check("shape", info->dims, info->ndim, &numel);
    snprintf(why, sizeof why, "%s", fits ? "over 2^62 bytes" : ct_last_error());
    if (!fits || (numel > 0 && numel > (INT64_C(1) << 62) / elem))
        return ct_error_set(CT_ERR_FORMAT, "%s: %s: the header's shape %s is too large (%s)", r->who, r->path,
                            ct_shape_str(info->dims, info->ndim, sb, sizeof sb), why);
    int64_t bytes = numel * elem;
    info->payload_bytes = bytes;
    return CT_OK;
}

static ct_status payload_error(idx_reader *r, const idx_info *info) {
    char sb[CT_SHAPE_STR_MAX], what[CT_SHAPE_STR_MAX + 48];
    ct_dtype dt;
    int elem;
    snprintf(what, sizeof what, "data of shape %s (%s)", ct_shape_str(info->dims, info->ndim, sb, sizeof sb),
             idx_type_name(info->type, &dt, &elem));
    return short_read(r, what, info->header_bytes, info->payload_bytes,
                      info->header_bytes + info->payload_bytes);
}

/* The payload into a malloc'd buffer of exactly payload_bytes. gzip sizes are
 * unknown until read, so that buffer grows with the data rather than
 * trusting a header that may promise terabytes. */
static ct_status read_payload(idx_reader *r, const idx_info *info, unsigned char **out) {
    int64_t need = info->payload_bytes;
    if (!r->gz && r->file_size - r->pos < need) return payload_error(r, info);   /* before allocating */
    int64_t cap = r->gz && need > (INT64_C(1) << 26) ? (INT64_C(1) << 26) : need;
    unsigned char *buf = malloc(cap > 0 ? (size_t)cap : 1);
    int64_t have = 0;
    while (buf) {
        int64_t got;
        ct_status st = reader_read(r, buf + have, cap - have, &got);
        have += got;
        if (st != CT_OK || have < cap) {
            free(buf);
            return st != CT_OK ? st : payload_error(r, info);
        }
        if (have == need) break;
        cap = cap > need / 2 ? need : 2 * cap;
        unsigned char *grown = realloc(buf, (size_t)cap);
        if (!grown) free(buf);
        buf = grown;
    }
    if (!buf)
        return ct_error_set(CT_ERR_OOM, "%s: %s: out of memory for %lld bytes of data", r->who, r->path,
                            (long long)need);
    *out = buf;
    return CT_OK;
}

/* After the payload the file must end; a gzip stream must also pass its
 * CRC check, which zlib performs on this last read. */
static ct_status check_end(idx_reader *r, const idx_info *info) {
    int64_t total = info->header_bytes + info->payload_bytes;
    if (!r->gz && r->file_size > total)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: %lld unexpected bytes after the data: the header promises %lld bytes in all "
                            "(%lld header + %lld data), but the file has %lld",
                            r->who, r->path, (long long)(r->file_size - total), (long long)total,
                            (long long)info->header_bytes, (long long)info->payload_bytes,
                            (long long)r->file_size);
    unsigned char extra;
    int64_t got;
    CT_TRY(reader_read(r, &extra, 1, &got));
    if (got > 0)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: unexpected bytes after the data at offset %lld: the header promises "
                            "exactly %lld bytes (%lld header + %lld data)",
                            r->who, r->path, (long long)total, (long long)total, (long long)info->header_bytes,
                            (long long)info->payload_bytes);
    return CT_OK;
}

/* Big-endian payload -> the tensor's dtype in host order. */
static void convert_payload(const unsigned char *src, const idx_info *info, ct_tensor *t) {
    int64_t n = ct_numel(t);
    switch (info->type) {
    case 0x08: memcpy(ct_data_ptr(t), src, (size_t)n); break;
    case 0x09: {
        int32_t *d = ct_data_ptr(t);
        for (int64_t i = 0; i < n; i++) d[i] = (int8_t)src[i];
        break;
    }
    case 0x0B: {
        int32_t *d = ct_data_ptr(t);
        for (int64_t i = 0; i < n; i++) d[i] = (int16_t)(uint16_t)(src[2 * i] << 8 | src[2 * i + 1]);
        break;
    }
    case 0x0C: case 0x0D: {
        uint32_t *d = ct_data_ptr(t);
        for (int64_t i = 0; i < n; i++) d[i] = be32(src + 4 * i);
        break;
    }
    case 0x0E: {
        uint64_t *d = ct_data_ptr(t);
        for (int64_t i = 0; i < n; i++) d[i] = (uint64_t)be32(src + 8 * i) << 32 | be32(src + 8 * i + 4);
        break;
    }
    }
}

/* The header, payload and end checks of an opened reader, then the tensor. */
static ct_tensor *idx_parse(idx_reader *r, idx_info *info_out) {
    idx_info info;
    unsigned char *payload = NULL;
    ct_tensor *t = NULL;
    if (read_header(r, &info) == CT_OK && read_payload(r, &info, &payload) == CT_OK &&
        check_end(r, &info) == CT_OK) {
        ct_dtype dt = CT_UINT8;
        int elem = 1;
        idx_type_name(info.type, &dt, &elem);
        t = ct_tensor_alloc(info.dims, info.ndim, dt, ct_device_cpu());
        if (t) convert_payload(payload, &info, t);
    }
    free(payload);
    reader_close(r);
    if (t && info_out) *info_out = info;
    return t;
}

/* ct_idx_load with the caller's name for messages; *info_out gets the header. */
static ct_tensor *idx_read(const char *who, const char *path, idx_info *info_out) {
    CT_CHECK_NULL(path, CT_ERR_INVALID_ARG, "%s: NULL path", who);
    idx_reader r;
    if (reader_open(&r, who, path) != CT_OK) return NULL;
    return idx_parse(&r, info_out);
}

ct_tensor *ctd_idx_read_fd(const char *who, const char *name, int fd, bool gz) {
    idx_reader r;
    if (reader_attach(&r, who, name, fd, gz) != CT_OK) return NULL;
    return idx_parse(&r, NULL);
}

ct_tensor *ct_idx_load(const char *path) { return ct_track(idx_read("ct_idx_load", path, NULL)); }

/* ---- MNIST and Fashion-MNIST -------------------------------------------------------- */

#define MNIST_SIDE 28
#define MNIST_CLASSES 10

typedef struct mnist_ds {
    ct_tensor *images;   /* uint8 [N, 28, 28] */
    ct_tensor *labels;   /* uint8 [N] */
    ct_transform *tf;    /* owned, may be NULL */
} mnist_ds;

static int64_t mnist_len(void *state) { return ((mnist_ds *)state)->labels->shape[0]; }

static ct_status mnist_get(void *state, int64_t index, uint64_t key, ct_sample *out) {
    mnist_ds *s = state;
    const uint8_t *pixels = (const uint8_t *)ct_data_ptr(s->images) + index * MNIST_SIDE * MNIST_SIDE;
    const uint8_t *labels = ct_data_ptr(s->labels);
    static const int64_t shape[3] = {1, MNIST_SIDE, MNIST_SIDE};
    return ctd_image_sample(pixels, shape, 3, labels[index], s->tf, key, out);
}

static void mnist_free(void *state) {
    mnist_ds *s = state;
    ct_decref(s->images);
    ct_decref(s->labels);
    ct_transform_free(s->tf);
    free(s);
}

/* root/name, or root/name.gz when only that exists. */
static ct_status mnist_find(const char *who, const char *root, const char *name, char *path, size_t size) {
    int n = snprintf(path, size, "%s/%s", root, name);
    if (n < 0 || (size_t)n + 3 >= size)
        return ct_error_set(CT_ERR_INVALID_ARG, "%s: the path %s/%s is too long", who, root, name);
    if (ctd_file_exists(path)) return CT_OK;
    strcat(path, ".gz");
    if (ctd_file_exists(path)) return CT_OK;
    return ct_error_set(CT_ERR_IO, "%s: cannot find %s/%s or %s/%s.gz (root should be the folder holding the "
                                   "IDX files)", who, root, name, root, name);
}

static ct_status mnist_check_images(const char *who, const char *path, const idx_info *in) {
    char sb[CT_SHAPE_STR_MAX];
    if (in->type != 0x08 || in->ndim != 3)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: expected uint8 images with 3 dimensions (magic number 2051 = 0x00000803), "
                            "got magic number %u = 0x%08X", who, path, (unsigned)in->magic, (unsigned)in->magic);
    if (in->dims[1] != MNIST_SIDE || in->dims[2] != MNIST_SIDE)
        return ct_error_set(CT_ERR_FORMAT, "%s: %s: images of shape %s, expected N x 28 x 28", who, path,
                            ct_shape_str(in->dims, in->ndim, sb, sizeof sb));
    return CT_OK;
}

static ct_status mnist_check_labels(const char *who, const char *path, const idx_info *in, const ct_tensor *t) {
    if (in->type != 0x08 || in->ndim != 1)
        return ct_error_set(CT_ERR_FORMAT,
                            "%s: %s: expected uint8 labels with 1 dimension (magic number 2049 = 0x00000801), "
                            "got magic number %u = 0x%08X", who, path, (unsigned)in->magic, (unsigned)in->magic);
    const uint8_t *lab = ct_data_ptr(t);
    for (int64_t i = 0; i < in->dims[0]; i++)
        if (lab[i] >= MNIST_CLASSES)
            return ct_error_set(CT_ERR_FORMAT,
                                "%s: %s: label %d of sample %lld (byte offset %lld) is out of range: expected 0 "
                                "to %d", who, path, lab[i], (long long)i, (long long)(in->header_bytes + i),
                                MNIST_CLASSES - 1);
    return CT_OK;
}

static ct_dataset *mnist_open(const char *who, const char *root, bool train, ct_transform *tf) {
    char ipath[4096], lpath[4096];
    idx_info ii, li;
    ct_tensor *images = NULL, *labels = NULL;
    mnist_ds *s = NULL;
    ct_dataset *ds = NULL;
    if (!root) {
        ct_error_set(CT_ERR_INVALID_ARG, "%s: NULL root", who);
        goto fail;
    }
    const char *split = train ? "train" : "t10k";
    char iname[64], lname[64];
    snprintf(iname, sizeof iname, "%s-images-idx3-ubyte", split);
    snprintf(lname, sizeof lname, "%s-labels-idx1-ubyte", split);
    if (mnist_find(who, root, iname, ipath, sizeof ipath) != CT_OK ||
        mnist_find(who, root, lname, lpath, sizeof lpath) != CT_OK)
        goto fail;
    if (!(labels = idx_read(who, lpath, &li)) || mnist_check_labels(who, lpath, &li, labels) != CT_OK) goto fail;
    if (!(images = idx_read(who, ipath, &ii)) || mnist_check_images(who, ipath, &ii) != CT_OK) goto fail;
    if (ii.dims[0] != li.dims[0]) {
        ct_error_set(CT_ERR_FORMAT, "%s: %s holds %lld images but %s holds %lld labels", who, ipath,
                     (long long)ii.dims[0], lpath, (long long)li.dims[0]);
        goto fail;
    }
    if (!(s = calloc(1, sizeof *s))) {
        ct_error_set(CT_ERR_OOM, "%s: out of memory", who);
        goto fail;
    }
    s->images = images, s->labels = labels, s->tf = tf;
    if ((ds = ct_dataset_new(who, (ct_dataset_fns){mnist_len, mnist_get, mnist_free}, s)) != NULL) return ds;
    free(s);
fail:   /* the dataset owns the transform, also when it cannot be built */
    ct_decref(images);
    ct_decref(labels);
    ct_transform_free(tf);
    return NULL;
}

ct_dataset *ct_mnist(const char *root, bool train, ct_transform *transform) {
    return mnist_open("MNIST", root, train, transform);
}

ct_dataset *ct_fashion_mnist(const char *root, bool train, ct_transform *transform) {
    return mnist_open("FashionMNIST", root, train, transform);
}
