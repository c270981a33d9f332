/*
 * checkpoint.c — ctorch-train's checkpoints: crash-safe saves, recovery
 * after a crash, and strict loading for exact resume.
 *
 * A checkpoint is a folder <ckpt-dir>/epoch-<k>/ holding
 *   model.safetensors  the model's state_dict (loadable by ct_module_load and
 *                      by safetensors.torch.load_file),
 *   optim.safetensors  the optimizer's state_dict; its metadata also carries
 *                      the trainer's state: epochs done, global step, seed,
 *                      the default generator's (seed, offset), best accuracy,
 *                      batch size and training-set size, and the model and
 *                      data set it belongs to.
 * Both files carry ctorch's whole-file CRC (ct_safetensors_save_checksummed)
 * and <ckpt-dir>/latest names the newest folder.
 *
 * The guarantee (docs/trainer.md): a kill at any moment leaves a folder that
 * `--resume auto` resumes from exactly. A save builds .epoch-<k>.tmp/, whose
 * files are fsync'ed, then puts it in place: by rename when epoch-<k> does
 * not exist, else by an atomic exchange (renameat2 RENAME_EXCHANGE) or, on
 * file systems without it, two renames through .epoch-<k>.old/; then the
 * folder and latest are synced. checkpoint_recover, run before anything
 * reads the folder, finishes what a crash interrupted: a missing epoch-<k>
 * whose .epoch-<k>.old/ survives gets it back, and leftover temporaries go.
 * Loading checks everything before it changes the model (checksums, every
 * trainer value, finite weights) and `--resume auto` falls back to the
 * newest intact checkpoint when the latest is damaged.
 */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

#define PATH_CAP 2200

/* Processes sharing the training set: the mpirun world under --distributed. */
static int world_size(const train_config *c) { return c->distributed ? ct_dist_get_world_size() : 1; }

#define TRY(expr)                        \
    do {                                 \
        ct_status try_s_ = (expr);       \
        if (try_s_ != CT_OK) return try_s_; \
    } while (0)

static ct_status io_error(const char *what, const char *path) {
    /* ctorch's error state is the library's; the trainer prints its own. */
    fprintf(stderr, "ctorch-train: cannot %s %s: %s\n", what, path, strerror(errno));
    return CT_ERR_IO;
}

static ct_status make_dirs(const char *path) {
    char buf[2048];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return CT_ERR_INVALID_ARG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return io_error("create the folder", buf);
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return io_error("create the folder", buf);
    return CT_OK;
}

/* Removes a checkpoint folder and whatever files it holds (they are flat:
 * the two files and, after a crash, their writers' temporaries). */
static void remove_flat_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[PATH_CAP + 300];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* A rename or a new entry survives a power cut only once its folder is synced. */
static ct_status sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_error("open the folder", dir);
    int rc = fsync(fd);
    close(fd);
    return rc == 0 || errno == EINVAL ? CT_OK : io_error("sync the folder", dir);
}

static bool exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

ct_status checkpoint_recover(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? CT_OK : io_error("read the folder", dir);
    char path[PATH_CAP], final[PATH_CAP];
    bool changed = false;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        bool is_tmp = len > 11 && !strncmp(n, ".epoch-", 7) && !strcmp(n + len - 4, ".tmp");
        bool is_old = len > 11 && !strncmp(n, ".epoch-", 7) && !strcmp(n + len - 4, ".old");
        snprintf(path, sizeof path, "%s/%s", dir, n);
        if (is_old) {
            /* a crash between the two renames of a replace: put the old one back */
            snprintf(final, sizeof final, "%s/%.*s", dir, (int)(len - 5), n + 1);
            if (!exists(final) && rename(path, final) == 0) {
                fprintf(stderr, "ctorch-train: note: restored %s, whose replacement was interrupted\n", final);
            } else {
                remove_flat_dir(path);
            }
            changed = true;
        } else if (is_tmp) {
            remove_flat_dir(path); /* a save that never finished */
            changed = true;
        } else if (!strcmp(n, ".latest.tmp")) {
            unlink(path);
            changed = true;
        }
    }
    closedir(d);
    return changed ? sync_dir(dir) : CT_OK;
}

ct_status checkpoint_check_writable(const char *dir) {
    TRY(make_dirs(dir));
    char probe[PATH_CAP];
    snprintf(probe, sizeof probe, "%s/.write-test.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return io_error("write in the checkpoint folder", dir);
    close(fd);
    unlink(probe);
    return CT_OK;
}

static ct_status set_meta_u64(ct_tensor_dict *d, const char *key, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return ct_tensor_dict_set_metadata(d, key, buf);
}

static ct_status write_state(ct_tensor_dict *d, const train_state *st, const train_config *c) {
    char best[40];
    snprintf(best, sizeof best, "%.17g", st->best_accuracy);
    ct_status s = set_meta_u64(d, "trainer.epoch", (uint64_t)st->epoch);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.global_step", (uint64_t)st->global_step);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.seed", st->seed);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.rng_seed", st->rng_seed);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.rng_offset", st->rng_offset);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.batch_size", (uint64_t)c->batch_size);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.train_samples", (uint64_t)st->train_samples);
    if (s == CT_OK) s = set_meta_u64(d, "trainer.world_size", (uint64_t)world_size(c));
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.best_accuracy", best);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.model", c->model);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.dataset", c->dataset);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.ctorch_version", CTORCH_VERSION_STRING);
    if (s == CT_OK && st->amp_scale > 0) { /* --amp fp16: the GradScaler's state */
        char scale[40];
        snprintf(scale, sizeof scale, "%.17g", st->amp_scale);
        s = ct_tensor_dict_set_metadata(d, "trainer.amp_scale", scale);
        if (s == CT_OK) s = set_meta_u64(d, "trainer.amp_growth_tracker", (uint64_t)st->amp_growth_tracker);
    }
    return s;
}

static ct_status write_latest(const char *dir, const char *name) {
    char tmp[PATH_CAP], final[PATH_CAP];
    snprintf(tmp, sizeof tmp, "%s/.latest.tmp", dir);
    snprintf(final, sizeof final, "%s/latest", dir);
    FILE *f = fopen(tmp, "w");
    if (!f) return io_error("write", tmp);
    int bad = fprintf(f, "%s\n", name) < 0;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    crash_point("latest-written");
    if (bad || rename(tmp, final) != 0) {
        ct_status s = io_error("write", final);
        unlink(tmp);
        return s;
    }
    crash_point("latest-renamed");
    return sync_dir(dir);
}

/* Moves the complete folder tmp to final. When final exists, the two are
 * exchanged atomically and the old one removed; without RENAME_EXCHANGE the
 * old one steps aside to `old` first (checkpoint_recover undoes a crash in
 * between). */
static ct_status put_in_place(const char *dir, const char *tmp, const char *final, const char *old) {
    if (!exists(final)) {
        if (rename(tmp, final) != 0) return io_error("rename the checkpoint to", final);
        crash_point("renamed");
        return sync_dir(dir);
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
        crash_point("exchanged");
        TRY(sync_dir(dir));
        remove_flat_dir(tmp); /* now the previous checkpoint */
        return CT_OK;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return io_error("replace the checkpoint", final);
    remove_flat_dir(old);
    if (rename(final, old) != 0) return io_error("move aside the checkpoint", final);
    crash_point("moved-aside");
    if (rename(tmp, final) != 0) {
        ct_status s = io_error("rename the checkpoint to", final);
        rename(old, final);
        return s;
    }
    crash_point("renamed");
    TRY(sync_dir(dir));
    remove_flat_dir(old);
    return CT_OK;
}

ct_status checkpoint_save(const char *dir, ct_module *model, ct_optimizer *opt, const train_state *st,
                          const train_config *c, char *saved_path, size_t size) {
    char name[32], tmp[PATH_CAP], final[PATH_CAP], old[PATH_CAP], path[PATH_CAP + 32];
    snprintf(name, sizeof name, "epoch-%d", st->epoch);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    snprintf(old, sizeof old, "%s/.%s.old", dir, name);
    TRY(make_dirs(dir));
    crash_point("save-start");
    remove_flat_dir(tmp);
    if (mkdir(tmp, 0777) != 0) return io_error("create the folder", tmp);

    ct_tensor_dict *md = ct_module_state_dict(model);
    ct_tensor_dict *od = ct_optimizer_state_dict(opt);
    ct_status s = md && od ? CT_OK : ct_last_status();
    if (s == CT_OK) s = write_state(od, st, c);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    if (s == CT_OK) s = ct_safetensors_save_checksummed(path, md);
    if (s == CT_OK) crash_point("model-written");
    snprintf(path, sizeof path, "%s/optim.safetensors", tmp);
    if (s == CT_OK) s = ct_safetensors_save_checksummed(path, od);
    if (s == CT_OK) crash_point("optim-written");
    ct_tensor_dict_free(md);
    ct_tensor_dict_free(od);
    if (s != CT_OK) {
        fprintf(stderr, "ctorch-train: cannot write %s: %s\n", final, ct_last_error());
        remove_flat_dir(tmp);
        return s;
    }
    s = put_in_place(dir, tmp, final, old);
    if (s != CT_OK) {
        remove_flat_dir(tmp);
        return s;
    }
    s = write_latest(dir, name);
    if (s == CT_OK && saved_path) snprintf(saved_path, size, "%s", final);
    return s;
}

/* ---- finding a checkpoint ------------------------------------------------------------- */

/* k for a folder name "epoch-<k>" (canonical digits, k >= 1), else 0. */
static int epoch_of_name(const char *name) {
    if (strncmp(name, "epoch-", 6) != 0 || name[6] < '1' || name[6] > '9') return 0;
    long k = 0;
    for (const char *p = name + 6; *p; p++) {
        if (*p < '0' || *p > '9' || k > 100000000) return 0;
        k = k * 10 + (*p - '0');
    }
    return (int)k;
}

static int by_epoch_desc(const void *a, const void *b) {
    return epoch_of_name((const char *)b) - epoch_of_name((const char *)a);
}

ct_status checkpoint_candidates(const char *dir, char (*names)[64], int max, int *n) {
    *n = 0;
    char latest[PATH_CAP], first[64] = {0};
    snprintf(latest, sizeof latest, "%s/latest", dir);
    FILE *f = fopen(latest, "r");
    if (f) {
        if (fgets(first, sizeof first, f)) first[strcspn(first, "\r\n")] = '\0';
        fclose(f);
        if (!epoch_of_name(first)) {
            fprintf(stderr, "ctorch-train: warning: %s is malformed (expected the name of a checkpoint "
                    "folder); looking for the newest checkpoint instead\n", latest);
            first[0] = '\0';
        } else {
            snprintf(names[(*n)++], 64, "%s", first);
        }
    } else if (errno != ENOENT) {
        return io_error("read", latest);
    }
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? CT_OK : io_error("read the folder", dir);
    int start = *n;
    for (struct dirent *e; (e = readdir(d)) && *n < max;) {
        size_t len = strlen(e->d_name); /* epoch_of_name caps k, so names are short */
        if (epoch_of_name(e->d_name) && strcmp(e->d_name, first) != 0 && len < 64)
            memcpy(names[(*n)++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(names + start, (size_t)(*n - start), sizeof *names, by_epoch_desc);
    return CT_OK;
}

/* ---- loading -------------------------------------------------------------------------- */

/* Why a checkpoint cannot be used, and whether it is damaged (then an
 * older one may be tried) or merely belongs to another run (then not). */
typedef struct load_problem {
    char msg[600];
    bool damaged;
} load_problem;

static ct_status problem(load_problem *p, bool damaged, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ct_status problem(load_problem *p, bool damaged, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->damaged = damaged;
    return damaged ? CT_ERR_FORMAT : CT_ERR_INVALID_ARG;
}

static ct_status read_checked(const char *path, ct_tensor_dict **out, load_problem *p) {
    ct_status s = ct_safetensors_load(path, ct_device_cpu(), out);
    if (s == CT_ERR_OOM) return problem(p, false, "%s", ct_last_error());
    if (s != CT_OK) return problem(p, true, "%s", ct_last_error());
    if (!ct_tensor_dict_get_metadata(*out, CT_SAFETENSORS_CHECKSUM_KEY))
        return problem(p, true, "%s: has no \"%s\" checksum (not written by this ctorch-train)", path,
                       CT_SAFETENSORS_CHECKSUM_KEY);
    return CT_OK;
}

static ct_status meta_u64(const ct_tensor_dict *d, const char *key, const char *file, uint64_t max, uint64_t *out,
                          load_problem *p) {
    const char *v = ct_tensor_dict_get_metadata(d, key);
    char *end = NULL;
    errno = 0;
    unsigned long long x = v && v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    if (!v || !end || errno || *end || x > max)
        return problem(p, true, "%s: metadata \"%s\" is %s (expected a whole number up to %" PRIu64 ")", file, key,
                       v ? v : "missing", max);
    *out = x;
    return CT_OK;
}

/* The trainer's state from optim.safetensors' metadata, each value checked
 * against the folder's name, the run's configuration and each other. */
static ct_status read_state(const ct_tensor_dict *od, const char *file, const char *folder, const train_config *c,
                            int64_t train_samples, train_state *st, load_problem *p) {
    static const char *const same_keys[2] = {"trainer.model", "trainer.dataset"};
    const char *want[2] = {c->model, c->dataset};
    for (int i = 0; i < 2; i++) {
        const char *v = ct_tensor_dict_get_metadata(od, same_keys[i]);
        if (!v) return problem(p, true, "%s: metadata \"%s\" is missing", file, same_keys[i]);
        if (strcmp(v, want[i]) != 0)
            return problem(p, false, "%s was written for %s %s, but this run uses %s", file, same_keys[i] + 8, v,
                           want[i]);
    }
    uint64_t epoch, step, seed, rs, ro, bs, samples;
    TRY(meta_u64(od, "trainer.epoch", file, 1000000, &epoch, p));
    TRY(meta_u64(od, "trainer.global_step", file, UINT64_C(1) << 53, &step, p));
    TRY(meta_u64(od, "trainer.seed", file, UINT64_MAX, &seed, p));
    TRY(meta_u64(od, "trainer.rng_seed", file, UINT64_MAX, &rs, p));
    TRY(meta_u64(od, "trainer.rng_offset", file, UINT64_MAX, &ro, p));
    TRY(meta_u64(od, "trainer.batch_size", file, INT32_MAX, &bs, p));
    TRY(meta_u64(od, "trainer.train_samples", file, UINT64_C(1) << 53, &samples, p));
    uint64_t ws = 1; /* absent in checkpoints from before --distributed */
    if (ct_tensor_dict_get_metadata(od, "trainer.world_size")) TRY(meta_u64(od, "trainer.world_size", file, 1 << 20, &ws, p));
    if (ws != (uint64_t)world_size(c))
        return problem(p, false, "%s was written by %" PRIu64 " process(es) and this run has %d: the data each rank "
                       "sees depends on it, so resume with the same number of ranks (or use --weights to start a "
                       "new run from its model)", file, ws, world_size(c));
    int named = epoch_of_name(folder);
    if (epoch < 1 || (named && (uint64_t)named != epoch))
        return problem(p, true, "%s: trainer.epoch is %" PRIu64 " in folder %s", file, epoch, folder);
    if (bs != (uint64_t)c->batch_size || samples != (uint64_t)train_samples)
        return problem(p, false, "%s was written with --batch-size %" PRIu64 " and %" PRIu64 " training images; "
                       "this run has %" PRId64 " and %" PRId64 " (exact resume needs the same; use --weights to "
                       "start a new run from its model)", file, bs, samples, c->batch_size, train_samples);
    const uint64_t share = (samples + ws - 1) / ws; /* DistributedSampler pads every rank to this */
    uint64_t per_epoch = (share + bs - 1) / bs;
    if (step != epoch * per_epoch)
        return problem(p, true, "%s: trainer.global_step is %" PRIu64 ", but %" PRIu64 " epochs of %" PRIu64
                       " steps make %" PRIu64, file, step, epoch, per_epoch, epoch * per_epoch);
    const char *best = ct_tensor_dict_get_metadata(od, "trainer.best_accuracy");
    char *end = NULL;
    double b = best ? strtod(best, &end) : NAN;
    if (!best || *end || !(b >= 0 && b <= 1))
        return problem(p, true, "%s: trainer.best_accuracy is %s (expected a number from 0 to 1)", file,
                       best ? best : "missing");
    double amp_scale = 0;
    uint64_t tracker = 0;
    const char *scale = ct_tensor_dict_get_metadata(od, "trainer.amp_scale");
    if (scale) { /* written by an --amp fp16 run */
        amp_scale = strtod(scale, &end);
        if (*end || !(amp_scale > 0) || !isfinite(amp_scale))
            return problem(p, true, "%s: trainer.amp_scale is %s (expected a positive number)", file, scale);
        TRY(meta_u64(od, "trainer.amp_growth_tracker", file, INT32_MAX, &tracker, p));
    }
    *st = (train_state){.epoch = (int)epoch, .global_step = (int64_t)step, .seed = seed, .rng_seed = rs,
                        .rng_offset = ro, .best_accuracy = b, .train_samples = train_samples,
                        .amp_scale = amp_scale, .amp_growth_tracker = (int64_t)tracker};
    return CT_OK;
}

/* A NaN or infinity in the weights is damage, not a state to train on. */
static ct_status check_finite(const ct_tensor_dict *md, const char *file, load_problem *p) {
    for (int i = 0; i < ct_tensor_dict_size(md); i++) {
        bool ok = true;
        CT_SCOPE {
            ct_tensor *t = ct_tensor_dict_value(md, i);
            if (ct_dtype_is_floating(ct_dtype_of(t))) ok = ct_item(ct_sum_all(ct_logical_not(ct_isfinite(t)))) == 0;
        }
        if (!ok) return problem(p, true, "%s: %s holds NaN or infinite values", file, ct_tensor_dict_name(md, i));
    }
    return CT_OK;
}

static ct_status load_one(const char *path, const char *folder, ct_module *model, ct_optimizer *opt,
                          train_state *st, const train_config *c, int64_t train_samples, load_problem *p) {
    char mfile[PATH_CAP + 32], ofile[PATH_CAP + 32];
    snprintf(mfile, sizeof mfile, "%s/model.safetensors", path);
    snprintf(ofile, sizeof ofile, "%s/optim.safetensors", path);
    ct_tensor_dict *md = NULL, *od = NULL;
    train_state loaded;
    ct_status s = read_checked(ofile, &od, p);
    if (s == CT_OK) s = read_state(od, ofile, folder, c, train_samples, &loaded, p);
    if (s == CT_OK) s = read_checked(mfile, &md, p);
    if (s == CT_OK) s = check_finite(md, mfile, p);
    /* everything is checked: only now change the model and the optimizer */
    if (s == CT_OK && ct_module_load_state_dict(model, md, true) != CT_OK)
        s = problem(p, true, "%s: %s", mfile, ct_last_error());
    if (s == CT_OK && ct_optimizer_load_state_dict(opt, od) != CT_OK)
        s = problem(p, true, "%s: %s", ofile, ct_last_error());
    if (s == CT_OK) *st = loaded;
    ct_tensor_dict_free(md);
    ct_tensor_dict_free(od);
    return s;
}

ct_status checkpoint_resume(const char *resume, const char *dir, ct_module *model, ct_optimizer *opt,
                            train_state *st, const train_config *c, int64_t train_samples, char *path,
                            size_t size, bool *found) {
    *found = false;
    load_problem p = {{0}, false};
    if (strcmp(resume, "auto") != 0) {
        struct stat sb;
        if (stat(resume, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "ctorch-train: --resume %s: not a checkpoint folder (%s)\n", resume,
                    errno ? strerror(errno) : "not a directory");
            return CT_ERR_INVALID_ARG;
        }
        const char *slash = strrchr(resume, '/');
        snprintf(path, size, "%s", resume);
        ct_status s = load_one(resume, slash ? slash + 1 : resume, model, opt, st, c, train_samples, &p);
        if (s != CT_OK) fprintf(stderr, "ctorch-train: cannot resume from %s: %s\n", resume, p.msg);
        *found = s == CT_OK;
        return s;
    }
    enum { MAX_CANDIDATES = 4096 };
    char (*names)[64] = malloc(MAX_CANDIDATES * sizeof *names);
    if (!names) return CT_ERR_OOM;
    int n = 0;
    ct_status s = checkpoint_candidates(dir, names, MAX_CANDIDATES, &n);
    for (int i = 0; i < n && s == CT_OK && !*found; i++) {
        snprintf(path, size, "%s/%s", dir, names[i]);
        ct_status one = load_one(path, names[i], model, opt, st, c, train_samples, &p);
        if (one == CT_OK) {
            *found = true;
        } else if (p.damaged) {
            fprintf(stderr, "ctorch-train: warning: skipping the damaged checkpoint %s: %s\n", path, p.msg);
        } else {
            fprintf(stderr, "ctorch-train: cannot resume from %s: %s\n", path, p.msg);
            s = one;
        }
    }
    if (s == CT_OK && !*found && n > 0) {
        fprintf(stderr, "ctorch-train: no intact checkpoint in %s (%d damaged)\n", dir, n);
        s = CT_ERR_FORMAT;
    }
    free(names);
    return s;
}
