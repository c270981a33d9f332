/*
 * tensorboard.c — ct_summary_writer: torch.utils.tensorboard's SummaryWriter
 * for scalars, writing one TensorBoard event file per writer.
 *
 * Events are encoded into an in-memory buffer of complete records
 * (tensorboard_record.c) and written by ct_summary_flush, by close, and by the
 * first add_scalar after flush_secs have passed (or once 1 MiB is waiting).
 * A training run must not lose its log to a full disk, and TensorBoard stops
 * reading a file at the first broken record, so a flush writes the whole
 * buffer and, if the write fails part-way, cuts the file back to its last
 * complete record and keeps the events in memory to try again at the next
 * flush. Only when the file cannot be cut back is the writer given up.
 *
 * A mutex makes each call atomic, so several threads may share a writer.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "ctorch/summary.h"
#include "io/io_internal.h"
#include "io/tensorboard_internal.h"

#define DEFAULT_FLUSH_SECS 120.0
/* Buffered bytes that trigger a flush before flush_secs have passed. */
#define FLUSH_BYTES ((size_t)1 << 20)
/* Buffered bytes beyond which events are dropped while writes keep failing. */
#define MAX_PENDING_BYTES ((size_t)64 << 20)
#define PATH_SHOWN "%.400s"

struct ct_summary_writer {
    pthread_mutex_t lock;
    int fd;
    char *path;
    cti_tb_buf pending;   /* complete records not yet written */
    off_t file_size;      /* bytes of complete records in the file */
    double flush_secs;
    double last_flush;    /* monotonic seconds of the last flush attempt */
    bool last_flush_failed;
    bool broken;          /* the file may end in a partial record: write no more */
};

/* PyTorch numbers the writers of a process: the last part of the file name. */
static atomic_int writer_counter;

static double monotonic_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void host_name(char *out, size_t size) {
    if (gethostname(out, size) != 0 || out[0] == '\0') snprintf(out, size, "localhost");
    out[size - 1] = '\0';
    for (char *c = out; *c; c++)
        if (*c == '/') *c = '_'; /* the name is one path component */
}

/* ---- creating the folder and the file ---------------------------------------------- */

/* mkdir -p: creates path and its missing parents. */
static ct_status make_dirs(const char *path) {
    char *p = strdup(path);
    if (!p) return ct_error_set(CT_ERR_OOM, "SummaryWriter: out of memory");
    ct_status s = CT_OK;
    size_t n = strlen(p);
    for (size_t i = 1; i <= n && s == CT_OK; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        struct stat st;
        int err = mkdir(p, 0777) == 0 ? 0 : errno;
        if (err == EEXIST) err = stat(p, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        if (err)
            s = ct_error_set(CT_ERR_IO, "SummaryWriter: cannot create log_dir '" PATH_SHOWN
                             "': '" PATH_SHOWN "': %s", path, p, strerror(err));
        p[i] = saved;
    }
    free(p);
    return s;
}

/* PyTorch's default log_dir: runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname>. */
static char *default_log_dir(void) {
    char stamp[64] = "", host[256];
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm)) strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &tm);
    host_name(host, sizeof host);
    size_t size = strlen(stamp) + strlen(host) + 8;
    char *dir = malloc(size);
    if (dir) snprintf(dir, size, "runs/%s_%s", stamp, host);
    return dir;
}

/* <log_dir>/events.out.tfevents.<%010d time>.<host>.<pid>.<n>, malloc'd. */
static char *event_file_path(const char *log_dir) {
    char host[256];
    host_name(host, sizeof host);
    size_t dir_len = strlen(log_dir);
    while (dir_len > 1 && log_dir[dir_len - 1] == '/') dir_len--;
    const char *fmt = "%.*s/events.out.tfevents.%010lld.%s.%ld.%d";
    long long secs = (long long)time(NULL);
    long pid = (long)getpid();
    int n = atomic_fetch_add(&writer_counter, 1);
    int size = snprintf(NULL, 0, fmt, (int)dir_len, log_dir, secs, host, pid, n);
    char *path = size > 0 ? malloc((size_t)size + 1) : NULL;
    if (path) snprintf(path, (size_t)size + 1, fmt, (int)dir_len, log_dir, secs, host, pid, n);
    return path;
}

/* ---- writing ---------------------------------------------------------------------- */

/* 0, or the errno of the failed write. */
static int write_all(int fd, const unsigned char *data, size_t n) {
    while (n > 0) {
        ssize_t done = write(fd, data, n);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return done < 0 ? errno : EIO;
        data += done;
        n -= (size_t)done;
    }
    return 0;
}

/* Writes the pending records (lock held). On failure the file is cut back to
 * its complete records and the records stay pending. */
static ct_status flush_locked(ct_summary_writer *w, const char *op) {
    if (w->broken)
        return ct_error_set(CT_ERR_IO, "%s: '" PATH_SHOWN "': an earlier write failed and the file "
                            "could not be repaired; events are no longer written", op, w->path);
    w->last_flush = monotonic_secs();
    if (w->pending.len == 0) return CT_OK;
    int err = write_all(w->fd, w->pending.data, w->pending.len);
    if (err) {
        w->last_flush_failed = true;
        if (ftruncate(w->fd, w->file_size) != 0) {
            w->broken = true;
            return ct_error_set(CT_ERR_IO, "%s: cannot write '" PATH_SHOWN "': %s (and cannot "
                                "remove the partial record: %s)", op, w->path, strerror(err),
                                strerror(errno));
        }
        return ct_error_set(CT_ERR_IO, "%s: cannot write '" PATH_SHOWN "': %s (%zu bytes of events "
                            "kept to retry)", op, w->path, strerror(err), w->pending.len);
    }
    w->file_size += (off_t)w->pending.len;
    w->pending.len = 0;
    w->last_flush_failed = false;
    return CT_OK;
}

static bool flush_due(const ct_summary_writer *w) {
    if (monotonic_secs() - w->last_flush >= w->flush_secs) return true;
    /* a full buffer does not hammer a failing disk on every call */
    return !w->last_flush_failed && w->pending.len >= FLUSH_BYTES;
}

/* ---- the API ------------------------------------------------------------------------ */

static ct_summary_writer *open_writer(const char *log_dir) {
    if (make_dirs(log_dir) != CT_OK) return NULL;
    ct_summary_writer *w = calloc(1, sizeof *w);
    char *path = event_file_path(log_dir);
    if (!w || !path) {
        free(w);
        free(path);
        ct_error_set(CT_ERR_OOM, "SummaryWriter: out of memory");
        return NULL;
    }
    w->path = path;
    w->flush_secs = DEFAULT_FLUSH_SECS;
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        ct_error_set(CT_ERR_IO, "SummaryWriter: cannot create '" PATH_SHOWN "': %s", path,
                     strerror(errno));
        free(path);
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    return w;
}

/* Frees the writer without writing (the file stays as it is). */
static ct_status destroy_writer(ct_summary_writer *w, const char *op) {
    ct_status s = CT_OK;
    if (close(w->fd) != 0)
        s = ct_error_set(CT_ERR_IO, "%s: cannot close '" PATH_SHOWN "': %s", op, w->path,
                         strerror(errno));
    pthread_mutex_destroy(&w->lock);
    cti_tb_buf_free(&w->pending);
    free(w->path);
    free(w);
    return s;
}

ct_summary_writer *ct_summary_writer_new(const char *log_dir) {
    char *own_dir = NULL;
    if (!log_dir) {
        own_dir = default_log_dir();
        if (!own_dir) {
            ct_error_set(CT_ERR_OOM, "SummaryWriter: out of memory");
            return NULL;
        }
        log_dir = own_dir;
    }
    ct_summary_writer *w = NULL;
    if (log_dir[0] == '\0')
        ct_error_set(CT_ERR_INVALID_ARG, "SummaryWriter: log_dir is empty");
    else
        w = open_writer(log_dir);
    free(own_dir);
    if (!w) return NULL;
    /* The file version goes out at once, so the file is valid from the start. */
    if (cti_tb_append_file_version(&w->pending, wall_secs()) != CT_OK ||
        flush_locked(w, "SummaryWriter") != CT_OK) {
        unlink(w->path);
        destroy_writer(w, "SummaryWriter");
        return NULL;
    }
    return w;
}

const char *ct_summary_writer_path(const ct_summary_writer *w) {
    return w ? w->path : NULL;
}

void ct_summary_set_flush_secs(ct_summary_writer *w, double secs) {
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->flush_secs = secs > 0 ? secs : 0; /* NaN and negatives: write every event at once */
    pthread_mutex_unlock(&w->lock);
}

ct_status ct_summary_add_scalar_at(ct_summary_writer *w, const char *tag, double value,
                                   int64_t step, double wall_time) {
    CT_CHECK_OBJ_STATUS(w, "add_scalar: NULL writer");
    CT_CHECK_STATUS(tag && tag[0], CT_ERR_INVALID_ARG, "add_scalar: the tag is %s",
                    tag ? "empty" : "NULL");
    size_t tag_len = strlen(tag);
    size_t valid = cti_tb_utf8_valid_prefix(tag, tag_len);
    char quoted[CTI_QUOTE_MAX];
    CT_CHECK_STATUS(valid == tag_len, CT_ERR_INVALID_ARG,
                    "add_scalar: the tag is not valid UTF-8: byte %zu is 0x%02x (after '%s')", valid,
                    (unsigned)(unsigned char)tag[valid], cti_io_quote(quoted, tag, valid));
    CT_CHECK_STATUS(isfinite(wall_time), CT_ERR_INVALID_ARG,
                    "add_scalar: wall_time must be finite, got %g", wall_time);

    pthread_mutex_lock(&w->lock);
    ct_status s = CT_OK;
    if (w->pending.len >= MAX_PENDING_BYTES)
        s = ct_error_set(CT_ERR_IO, "add_scalar: '" PATH_SHOWN "': dropped '%.100s' at step %lld: "
                         "%zu bytes of events are waiting because writes fail", w->path, tag,
                         (long long)step, w->pending.len);
    else
        s = cti_tb_append_scalar(&w->pending, tag, tag_len, (float)value, step, wall_time);
    if (s == CT_OK && flush_due(w)) s = flush_locked(w, "add_scalar");
    pthread_mutex_unlock(&w->lock);
    return s;
}

ct_status ct_summary_add_scalar(ct_summary_writer *w, const char *tag, double value, int64_t step) {
    return ct_summary_add_scalar_at(w, tag, value, step, wall_secs());
}

ct_status ct_summary_flush(ct_summary_writer *w) {
    CT_CHECK_OBJ_STATUS(w, "flush: NULL writer");
    pthread_mutex_lock(&w->lock);
    ct_status s = flush_locked(w, "flush");
    pthread_mutex_unlock(&w->lock);
    return s;
}

ct_status ct_summary_writer_close(ct_summary_writer *w) {
    if (!w) return CT_OK;
    pthread_mutex_lock(&w->lock);
    ct_status s = flush_locked(w, "close");
    pthread_mutex_unlock(&w->lock);
    ct_status c = destroy_writer(w, "close");
    return s != CT_OK ? s : c;
}
