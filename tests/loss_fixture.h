/*
 * loss_fixture.h — reads the PyTorch fixtures of tests/fixtures/loss/
 * (written by tools/gen_fixtures_loss.py): a file of named float64 tensors,
 * in the format of tests/fixtures/conv/:
 *
 *   "CTFX", u32 version 1, u32 count, then per tensor: u32 name length,
 *   name, u32 ndim, i64 dims[ndim], f64 values (all little-endian)
 *
 * The fixtures live next to this file, which the test finds from its own
 * __FILE__ (CMake compiles sources by absolute path); CT_FIXTURES_DIR
 * overrides that. Also: lf_tensor() turns a fixture into a ctorch tensor.
 */
#ifndef CT_LOSS_FIXTURE_H
#define CT_LOSS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define LF_MAX_TENSORS 24

typedef struct lf_tensor {
    char name[32];
    int ndim;
    int64_t dims[8];
    int64_t numel;
    double *values;
} lf_tensor;

typedef struct lf_file {
    int count;
    lf_tensor t[LF_MAX_TENSORS];
} lf_file;

static void lf_free(lf_file *f) {
    for (int i = 0; i < f->count; i++) free(f->t[i].values);
    f->count = 0;
}

/* The host is little-endian (x86-64, aarch64), as the files are. */
static int lf_read(FILE *fp, void *dst, size_t n) { return fread(dst, 1, n, fp) == n; }

static int lf_read_tensor(FILE *fp, lf_tensor *t) {
    uint32_t len, ndim;
    if (!lf_read(fp, &len, 4) || len >= sizeof t->name || !lf_read(fp, t->name, len)) return 0;
    t->name[len] = '\0';
    if (!lf_read(fp, &ndim, 4) || ndim > 8) return 0;
    t->ndim = (int)ndim;
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (!lf_read(fp, &t->dims[d], 8) || t->dims[d] < 0) return 0;
        t->numel *= t->dims[d];
    }
    t->values = malloc(sizeof(double) * (size_t)(t->numel + 1));
    return t->values && lf_read(fp, t->values, sizeof(double) * (size_t)t->numel);
}

/* Load <dir of source_file>/fixtures/loss/<name>.bin; 0 on failure. */
static int lf_load(const char *source_file, const char *name, lf_file *f) {
    char path[1024];
    const char *env = getenv("CT_FIXTURES_DIR");
    if (env) {
        snprintf(path, sizeof path, "%s/loss/%s.bin", env, name);
    } else {
        const char *slash = strrchr(source_file, '/');
        int dir_len = slash ? (int)(slash - source_file) : 1;
        snprintf(path, sizeof path, "%.*s/fixtures/loss/%s.bin", dir_len,
                 slash ? source_file : ".", name);
    }
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    char magic[4];
    uint32_t version, count;
    int ok = lf_read(fp, magic, 4) && memcmp(magic, "CTFX", 4) == 0 && lf_read(fp, &version, 4) &&
             version == 1 && lf_read(fp, &count, 4) && count <= LF_MAX_TENSORS;
    for (uint32_t i = 0; ok && i < count; i++) {
        ok = lf_read_tensor(fp, &f->t[i]);
        f->count = (int)i + 1;
    }
    fclose(fp);
    if (!ok) lf_free(f);
    return ok;
}

static const lf_tensor *lf_get(const lf_file *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

/* A CPU tensor of dtype dt holding fixture `name` (NULL when absent). */
static ct_tensor *lf_tensor_of(const lf_file *f, const char *name, ct_dtype dt) {
    const lf_tensor *t = lf_get(f, name);
    if (!t) return NULL;
    return ct_test_tensor(t->values, ct_shape_make(t->ndim, t->dims), dt);
}

#endif /* CT_LOSS_FIXTURE_H */
