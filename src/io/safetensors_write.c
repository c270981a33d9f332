/*
 * safetensors_write.c — ct_safetensors_save: writes a ct_tensor_dict in the
 * safetensors format, atomically.
 *
 * The bytes are those of the reference writer (safetensors' `prepare()`):
 * tensors sorted by dtype rank (descending) then name, offsets assigned
 * consecutively, compact JSON padded with spaces to a multiple of 8.
 *
 * A checkpoint must never be lost to a crash, a full disk or a bad argument
 * in the middle of a save (torch.save writes in place and can leave a
 * truncated file; see docs/checkpoints.md). So the file is written to a
 * temporary file next to the target, fsync'ed, renamed over the target (an
 * atomic replace on POSIX file systems), and the directory is fsync'ed so
 * that the rename itself survives a power cut. Every failure removes the
 * temporary file and leaves the target as it was.
 * ct_safetensors_save_checksummed adds the whole-file CRC of
 * safetensors_checksum.c, accumulated as the bytes go out.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/io_internal.h"
#include "io/json.h"
#include "io/safetensors_format.h"

#define ST_WRITE_BUFFER (1 << 20)

typedef struct st_item {
    const char *name;
    const ct_tensor *tensor;
    const st_dtype_info *dtype;
    uint64_t nbytes;
} st_item;

/* ---- the header ----------------------------------------------------------------------- */

static int item_order(const void *pa, const void *pb) {
    const st_item *a = pa, *b = pb;
    if (a->dtype->rank != b->dtype->rank) return a->dtype->rank > b->dtype->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

static bool is_checksum_key(const char *key) { return strcmp(key, CT_SAFETENSORS_CHECKSUM_KEY) == 0; }

/* The metadata object: the dict's entries, then, when checksum_at is not
 * NULL, the checksum entry with its placeholder digits, whose header offset
 * goes to *checksum_at. A checksum entry in d (from a loaded file) is never
 * written: it would not match the new bytes. */
static void put_metadata(ctj_buf *hdr, const ct_tensor_dict *d, size_t *checksum_at) {
    ctj_put_str(hdr, "\"__metadata__\":{");
    bool first = true;
    for (int i = 0; i < d->meta_count; i++) {
        if (is_checksum_key(d->meta[i].key)) continue;
        if (!first) ctj_put_str(hdr, ",");
        first = false;
        ctj_put_quoted(hdr, d->meta[i].key);
        ctj_put_str(hdr, ":");
        ctj_put_quoted(hdr, d->meta[i].value);
    }
    if (checksum_at) {
        ctj_put_str(hdr, first ? "\"" CT_SAFETENSORS_CHECKSUM_KEY "\":\"" : ",\"" CT_SAFETENSORS_CHECKSUM_KEY "\":\"");
        *checksum_at = hdr->len;
        ctj_put_str(hdr, "00000000\"");
    }
    ctj_put_str(hdr, d->count ? "}," : "}");
}

/* Sorts the dict's tensors into file order and writes the padded header.
 * *items is malloc'd (count entries); *data_len is the data size. With
 * checksum_at, the header carries the checksum placeholder (put_metadata). */
static ct_status prepare(const char *op, const ct_tensor_dict *d, st_item **items, ctj_buf *hdr,
                         uint64_t *data_len, size_t *checksum_at) {
    CT_CHECK_OBJ_STATUS(d, "%s: NULL dict", op);
    st_item *it = malloc(sizeof *it * (size_t)(d->count ? d->count : 1));
    CT_CHECK_STATUS(it, CT_ERR_OOM, "%s: out of memory", op);
    for (int i = 0; i < d->count; i++) {
        const ct_tensor *t = d->items[i].tensor;
        it[i] = (st_item){d->items[i].name, t, st_dtype_of(t->dtype),
                          (uint64_t)ct_numel(t) * ct_dtype_size(t->dtype)};
        CT_ASSERT(it[i].dtype);
    }
    if (d->count > 1) qsort(it, (size_t)d->count, sizeof *it, item_order);

    ctj_put_str(hdr, "{");
    int kept = 0;
    for (int i = 0; i < d->meta_count; i++) kept += !is_checksum_key(d->meta[i].key);
    if (kept > 0 || checksum_at) put_metadata(hdr, d, checksum_at);
    uint64_t offset = 0;
    for (int i = 0; i < d->count; i++) {
        const ct_tensor *t = it[i].tensor;
        if (i) ctj_put_str(hdr, ",");
        ctj_put_quoted(hdr, it[i].name);
        ctj_put_str(hdr, ":{\"dtype\":\"");
        ctj_put_str(hdr, it[i].dtype->name);
        ctj_put_str(hdr, "\",\"shape\":[");
        for (int k = 0; k < t->ndim; k++) {
            if (k) ctj_put_str(hdr, ",");
            ctj_put_uint(hdr, (uint64_t)t->shape[k]);
        }
        ctj_put_str(hdr, "],\"data_offsets\":[");
        ctj_put_uint(hdr, offset);
        ctj_put_str(hdr, ",");
        offset += it[i].nbytes;
        ctj_put_uint(hdr, offset);
        ctj_put_str(hdr, "]}");
    }
    ctj_put_str(hdr, "}");
    while (!hdr->oom && hdr->len % 8 != 0) ctj_put_str(hdr, " ");
    if (hdr->oom) {
        free(it);
        return ct_error_set(CT_ERR_OOM, "%s: out of memory building the header", op);
    }
    *items = it;
    *data_len = offset;
    return CT_OK;
}

/* ---- output: a file descriptor (buffered) or a memory block ---------------------------- */

typedef struct st_out {
    const char *path;        /* the target, for messages */
    const char *tmp;         /* the file written */
    int fd;
    unsigned char *buf;      /* fd: the write buffer; memory: the result */
    size_t len, cap;
    uint64_t written;        /* bytes passed to out_write so far */
    uint32_t crc;            /* their CRC-32C, the checksum digits as zeros */
    uint64_t digits_at;      /* file offset of the checksum digits; 0: none */
} st_out;

static ct_status write_all(st_out *o, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(o->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0)
            return ct_error_set(CT_ERR_IO, "safetensors_save: %.300s: cannot write '%.300s': %s",
                                o->path, o->tmp, strerror(errno));
        p += k, n -= (size_t)k;
    }
    return CT_OK;
}

static ct_status out_flush(st_out *o) {
    if (o->fd < 0 || o->len == 0) return CT_OK;
    ct_status s = write_all(o, o->buf, o->len);
    o->len = 0;
    return s;
}

static ct_status out_write(st_out *o, const void *src, size_t n) {
    const unsigned char *p = src;
    if (o->digits_at) o->crc = cti_st_checksum_extend(o->crc, p, n, o->written, o->digits_at);
    o->written += n;
    if (o->fd < 0) { /* memory: sized exactly in advance */
        CT_ASSERT(n <= o->cap - o->len);
        memcpy(o->buf + o->len, p, n);
        o->len += n;
        return CT_OK;
    }
    if (n >= o->cap) {
        CT_TRY(out_flush(o));
        return write_all(o, p, n);
    }
    if (n > o->cap - o->len) CT_TRY(out_flush(o));
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return CT_OK;
}

/* Little-endian bytes of a host buffer of elements. */
static ct_status out_write_elements(st_out *o, const unsigned char *p, size_t n, size_t elem) {
    if (st_host_is_little_endian() || elem == 1) return out_write(o, p, n);
    unsigned char tmp[4096];
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof tmp ? n - done : sizeof tmp;
        memcpy(tmp, p + done, k);
        st_swap_elements(tmp, k, elem);
        CT_TRY(out_write(o, tmp, k));
        done += k;
    }
    return CT_OK;
}

/* A tensor's bytes in row-major order: views are made contiguous and device
 * tensors are copied to the host first (one tensor at a time). */
static ct_status write_tensor(st_out *o, const st_item *item) {
    if (item->nbytes == 0) return CT_OK;
    ct_tensor *host = cti_to_device(item->tensor, ct_device_cpu());
    ct_tensor *c = cti_contiguous(host);
    ct_decref(host);
    if (!c) return ct_last_status();
    ct_status s = out_write_elements(o, ct_data_ptr(c), (size_t)item->nbytes, ct_dtype_size(c->dtype));
    ct_decref(c);
    return s;
}

static ct_status write_file_contents(st_out *o, const ctj_buf *hdr, const st_item *items, int count) {
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)((uint64_t)hdr->len >> (8 * i));
    CT_TRY(out_write(o, len_bytes, 8));
    CT_TRY(out_write(o, hdr->data, hdr->len));
    for (int i = 0; i < count; i++) CT_TRY(write_tensor(o, &items[i]));
    CT_TRY(out_flush(o));
    if (!o->digits_at) return CT_OK;
    char digits[8];
    cti_st_checksum_format(o->crc, digits);
    if (o->fd < 0) {
        memcpy(o->buf + o->digits_at, digits, 8);
        return CT_OK;
    }
    if (pwrite(o->fd, digits, 8, (off_t)o->digits_at) != 8)
        return ct_error_set(CT_ERR_IO, "safetensors_save: %.300s: cannot write the checksum into '%.300s': %s",
                            o->path, o->tmp, strerror(errno));
    return CT_OK;
}

/* ---- save to memory ------------------------------------------------------------------------ */

ct_status ct_safetensors_save_buffer(const ct_tensor_dict *d, void **data, size_t *size) {
    CT_CHECK_OBJ_STATUS(d, "safetensors_save_buffer: NULL dict"); /* before the plain arguments */
    CT_CHECK_STATUS(data && size, CT_ERR_INVALID_ARG, "safetensors_save_buffer: NULL output pointer");
    *data = NULL;
    *size = 0;
    st_item *items = NULL;
    ctj_buf hdr = {0};
    uint64_t data_len = 0;
    CT_TRY(prepare("safetensors_save_buffer", d, &items, &hdr, &data_len, NULL));
    st_out o = {.path = "<buffer>", .tmp = "<buffer>", .fd = -1};
    ct_status s = CT_OK;
    if (data_len > SIZE_MAX - 8 - hdr.len) {
        s = ct_error_set(CT_ERR_OOM, "safetensors_save_buffer: %llu bytes do not fit in memory",
                         (unsigned long long)data_len);
    } else {
        o.cap = 8 + hdr.len + (size_t)data_len;
        o.buf = malloc(o.cap);
        if (!o.buf)
            s = ct_error_set(CT_ERR_OOM, "safetensors_save_buffer: out of memory for %zu bytes", o.cap);
    }
    if (s == CT_OK) s = write_file_contents(&o, &hdr, items, d->count);
    if (s == CT_OK) {
        *data = o.buf;
        *size = o.len;
    } else {
        free(o.buf);
    }
    free(items);
    ctj_buf_free(&hdr);
    return s;
}

/* ---- save to a file, atomically ---------------------------------------------------------------- */

/* Creates "<dir>/.<name>.<pid>-<n>.tmp" next to path: hidden, so that a glob
 * for checkpoints does not pick up one being written, and on the same file
 * system, so that rename() can replace path atomically. */
static int create_temp(const char *path, char *tmp, size_t tmp_size) {
    static atomic_uint counter;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dir_len = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? (slash == path ? "/" : path) : ".";
    if (slash == path) dir_len = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned n = atomic_fetch_add(&counter, 1);
        snprintf(tmp, tmp_size, "%.*s/.%.200s.%ld-%u.tmp", dir_len, dir, base, (long)getpid(), n);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Makes the rename durable. Best effort: some file systems cannot sync a
 * directory, and the new file is complete and in place either way. */
static void sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? malloc((size_t)(slash - path) + 2) : NULL;
    if (slash && !dir) return;
    if (dir) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir ? dir : ".", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static ct_status check_target(const char *path, struct stat *st, bool *exists) {
    CT_CHECK_STATUS(path && path[0], CT_ERR_INVALID_ARG, "safetensors_save: %s path",
                    path ? "empty" : "NULL");
    size_t n = strlen(path);
    CT_CHECK_STATUS(path[n - 1] != '/', CT_ERR_IO, "safetensors_save: '%.300s' names a directory", path);
    *exists = stat(path, st) == 0;
    CT_CHECK_STATUS(!*exists || !S_ISDIR(st->st_mode), CT_ERR_IO,
                    "safetensors_save: '%.300s' is a directory", path);
    return CT_OK;
}

static ct_status save_file(const char *path, const ct_tensor_dict *d, bool checksum) {
    /* a NULL dict (a failed call's) is reported before any path problem */
    CT_CHECK_OBJ_STATUS(d, "safetensors_save: NULL dict");
    struct stat st;
    bool exists = false;
    CT_TRY(check_target(path, &st, &exists));
    st_item *items = NULL;
    ctj_buf hdr = {0};
    uint64_t data_len = 0;
    size_t checksum_at = 0;
    CT_TRY(prepare("safetensors_save", d, &items, &hdr, &data_len, checksum ? &checksum_at : NULL));

    size_t tmp_size = strlen(path) + 256;
    char *tmp = malloc(tmp_size);
    st_out o = {.path = path, .tmp = tmp, .fd = -1, .cap = ST_WRITE_BUFFER,
                .digits_at = checksum ? 8 + checksum_at : 0};
    o.buf = malloc(o.cap);
    ct_status s = CT_OK;
    if (!tmp || !o.buf) {
        s = ct_error_set(CT_ERR_OOM, "safetensors_save: out of memory");
    } else {
        o.fd = create_temp(path, tmp, tmp_size);
        if (o.fd < 0)
            s = ct_error_set(CT_ERR_IO, "safetensors_save: %.300s: cannot create a temporary file "
                             "'%.300s' next to it: %s", path, tmp, strerror(errno));
    }
    bool created = s == CT_OK;
    if (s == CT_OK && exists) (void)fchmod(o.fd, st.st_mode & 07777); /* keep the target's mode */
    if (s == CT_OK) s = write_file_contents(&o, &hdr, items, d->count);
    if (s == CT_OK && fsync(o.fd) != 0)
        s = ct_error_set(CT_ERR_IO, "safetensors_save: %.300s: cannot sync '%.300s' to disk: %s", path,
                         tmp, strerror(errno));
    if (o.fd >= 0 && close(o.fd) != 0 && s == CT_OK)
        s = ct_error_set(CT_ERR_IO, "safetensors_save: %.300s: cannot close '%.300s': %s", path, tmp,
                         strerror(errno));
    if (s == CT_OK && rename(tmp, path) != 0)
        s = ct_error_set(CT_ERR_IO, "safetensors_save: cannot rename '%.300s' to '%.300s': %s", tmp,
                         path, strerror(errno));
    if (s == CT_OK)
        sync_parent_dir(path);
    else if (created)
        unlink(tmp);
    free(tmp);
    free(o.buf);
    free(items);
    ctj_buf_free(&hdr);
    return s;
}

ct_status ct_safetensors_save(const char *path, const ct_tensor_dict *d) { return save_file(path, d, false); }

ct_status ct_safetensors_save_checksummed(const char *path, const ct_tensor_dict *d) {
    return save_file(path, d, true);
}
