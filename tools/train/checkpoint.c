/*
 * checkpoint.c — ctorch-train's checkpoints, for exact resume.
 *
 * A checkpoint is a folder <ckpt-dir>/epoch-<k>/ holding
 *   model.safetensors  the model's state_dict (loadable by ct_module_load and
 *                      by safetensors.torch.load_file),
 *   optim.safetensors  the optimizer's state_dict; its metadata also carries
 *                      the trainer's state: epochs done, global step, seed,
 *                      the default generator's (seed, offset), best accuracy,
 *                      and the model and data set it belongs to.
 * The folder is written under a temporary name and renamed into place, then
 * <ckpt-dir>/latest (one line: the folder's name) is replaced atomically, so
 * a crash at any moment leaves the previous checkpoint usable.
 * Resuming restores all of it; with the data order and augmentation keyed by
 * (seed, epoch), the resumed run then computes what the uninterrupted run
 * would have.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

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

static void remove_checkpoint_dir(const char *dir) {
    char path[2200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/optim.safetensors", dir);
    unlink(path);
    rmdir(dir);
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
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.best_accuracy", best);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.model", c->model);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.dataset", c->dataset);
    if (s == CT_OK) s = ct_tensor_dict_set_metadata(d, "trainer.ctorch_version", CTORCH_VERSION_STRING);
    return s;
}

static ct_status write_latest(const char *dir, const char *name) {
    char tmp[2100], final[2100];
    snprintf(tmp, sizeof tmp, "%s/.latest.tmp", dir);
    snprintf(final, sizeof final, "%s/latest", dir);
    FILE *f = fopen(tmp, "w");
    if (!f) return io_error("write", tmp);
    int bad = fprintf(f, "%s\n", name) < 0;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, final) != 0) {
        unlink(tmp);
        return io_error("write", final);
    }
    return CT_OK;
}

ct_status checkpoint_save(const char *dir, ct_module *model, ct_optimizer *opt, const train_state *st,
                          const train_config *c, char *saved_path, size_t size) {
    char name[32], tmp[2100], final[2100], old[2100], path[2200];
    snprintf(name, sizeof name, "epoch-%d", st->epoch);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    snprintf(old, sizeof old, "%s/.%s.old", dir, name);
    ct_status s = make_dirs(dir);
    if (s != CT_OK) return s;
    remove_checkpoint_dir(tmp);
    if (mkdir(tmp, 0777) != 0) return io_error("create the folder", tmp);

    ct_tensor_dict *md = ct_module_state_dict(model);
    ct_tensor_dict *od = ct_optimizer_state_dict(opt);
    s = md && od ? CT_OK : ct_last_status();
    if (s == CT_OK) s = write_state(od, st, c);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    if (s == CT_OK) s = ct_safetensors_save(path, md);
    snprintf(path, sizeof path, "%s/optim.safetensors", tmp);
    if (s == CT_OK) s = ct_safetensors_save(path, od);
    ct_tensor_dict_free(md);
    ct_tensor_dict_free(od);
    if (s != CT_OK) {
        remove_checkpoint_dir(tmp);
        return s;
    }
    /* Replace an existing folder of the same name only once the new one is complete. */
    remove_checkpoint_dir(old);
    bool had_old = rename(final, old) == 0;
    if (rename(tmp, final) != 0) {
        s = io_error("rename the checkpoint to", final);
        if (had_old) rename(old, final);
        remove_checkpoint_dir(tmp);
        return s;
    }
    if (had_old) remove_checkpoint_dir(old);
    s = write_latest(dir, name);
    if (s == CT_OK && saved_path) snprintf(saved_path, size, "%s", final);
    return s;
}

ct_status checkpoint_resolve(const char *resume, const char *dir, char *path, size_t size, bool *found) {
    *found = false;
    if (strcmp(resume, "auto") != 0) {
        struct stat sb;
        if (stat(resume, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "ctorch-train: --resume %s: not a checkpoint folder (%s)\n", resume,
                    errno ? strerror(errno) : "not a directory");
            return CT_ERR_IO;
        }
        snprintf(path, size, "%s", resume);
        *found = true;
        return CT_OK;
    }
    char latest[2100], name[256] = {0};
    snprintf(latest, sizeof latest, "%s/latest", dir);
    FILE *f = fopen(latest, "r");
    if (!f) return errno == ENOENT ? CT_OK : io_error("read", latest);
    bool ok = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\r\n")] = '\0';
    if (!ok || !name[0] || strchr(name, '/')) {
        fprintf(stderr, "ctorch-train: %s is malformed (expected the name of a checkpoint folder)\n", latest);
        return CT_ERR_FORMAT;
    }
    snprintf(path, size, "%s/%s", dir, name);
    *found = true;
    return CT_OK;
}

static ct_status meta_u64(const ct_tensor_dict *d, const char *key, const char *file, uint64_t *out) {
    const char *v = ct_tensor_dict_get_metadata(d, key);
    char *end;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || errno || end == v || *end) {
        fprintf(stderr, "ctorch-train: %s: metadata \"%s\" is %s (expected an unsigned integer)\n", file, key,
                v ? v : "missing");
        return CT_ERR_FORMAT;
    }
    *out = x;
    return CT_OK;
}

static ct_status check_same(const ct_tensor_dict *d, const char *key, const char *want, const char *file) {
    const char *v = ct_tensor_dict_get_metadata(d, key);
    if (v && strcmp(v, want) == 0) return CT_OK;
    fprintf(stderr, "ctorch-train: %s was written for %s %s, but this run uses %s\n", file, key + 8,
            v ? v : "(unknown)", want);
    return CT_ERR_INVALID_ARG;
}

ct_status checkpoint_load(const char *path, ct_module *model, ct_optimizer *opt, train_state *st,
                          const train_config *c) {
    char file[2200];
    snprintf(file, sizeof file, "%s/optim.safetensors", path);
    ct_tensor_dict *od = NULL;
    ct_status s = ct_safetensors_load(file, ct_device_cpu(), &od);
    if (s != CT_OK) return s;
    uint64_t epoch = 0, step = 0, seed = 0, rs = 0, ro = 0;
    s = check_same(od, "trainer.model", c->model, file);
    if (s == CT_OK) s = check_same(od, "trainer.dataset", c->dataset, file);
    if (s == CT_OK) s = meta_u64(od, "trainer.epoch", file, &epoch);
    if (s == CT_OK) s = meta_u64(od, "trainer.global_step", file, &step);
    if (s == CT_OK) s = meta_u64(od, "trainer.seed", file, &seed);
    if (s == CT_OK) s = meta_u64(od, "trainer.rng_seed", file, &rs);
    if (s == CT_OK) s = meta_u64(od, "trainer.rng_offset", file, &ro);
    if (s == CT_OK) {
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        s = ct_module_load(model, file, true);
    }
    if (s == CT_OK) s = ct_optimizer_load_state_dict(opt, od);
    if (s == CT_OK) {
        const char *best = ct_tensor_dict_get_metadata(od, "trainer.best_accuracy");
        st->epoch = (int)epoch;
        st->global_step = (int64_t)step;
        st->seed = seed;
        st->rng_seed = rs;
        st->rng_offset = ro;
        st->best_accuracy = best ? strtod(best, NULL) : 0.0;
    }
    ct_tensor_dict_free(od);
    return s;
}
