/*
 * nn_fixture.h — reads the PyTorch fixtures of tests/fixtures/nn/ (written
 * by tools/gen_fixtures_nn.py), in the format of tools/gen_fixtures_conv.py:
 *
 *   "CTFX", u32 version 1, u32 count, then per tensor: u32 name length,
 *   name, u32 ndim, i64 dims[ndim], f64 values (all little-endian)
 *
 * The fixtures live next to this file, which the test finds from its own
 * __FILE__ (CMake compiles sources by absolute path); CT_FIXTURES_DIR
 * overrides that.
 */
#ifndef CT_NN_FIXTURE_H
#define CT_NN_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ctorch.h"

#define NF_MAX_TENSORS 16

typedef struct nf_tensor {
    char name[32];
    ct_shape shape;
    int64_t numel;
    double *values;
} nf_tensor;

typedef struct nf_file {
    int count;
    nf_tensor t[NF_MAX_TENSORS];
} nf_file;

static void nf_free(nf_file *f) {
    for (int i = 0; i < f->count; i++) free(f->t[i].values);
    f->count = 0;
}

/* The host is little-endian (x86-64, aarch64), as the files are. */
static int nf_read(FILE *fp, void *dst, size_t n) { return fread(dst, 1, n, fp) == n; }

static int nf_read_tensor(FILE *fp, nf_tensor *t) {
    uint32_t len, ndim;
    if (!nf_read(fp, &len, 4) || len >= sizeof t->name || !nf_read(fp, t->name, len)) return 0;
    t->name[len] = '\0';
    if (!nf_read(fp, &ndim, 4) || ndim > CT_MAX_DIMS) return 0;
    t->shape.ndim = (int)ndim;
    t->numel = 1;
    for (int d = 0; d < t->shape.ndim; d++) {
        if (!nf_read(fp, &t->shape.dims[d], 8) || t->shape.dims[d] < 0) return 0;
        t->numel *= t->shape.dims[d];
    }
    t->values = malloc(sizeof(double) * (size_t)(t->numel + 1));
    return t->values && nf_read(fp, t->values, sizeof(double) * (size_t)t->numel);
}

/* Load <dir of source_file>/fixtures/nn/<name>.bin; 0 on failure. */
static int nf_load(const char *source_file, const char *name, nf_file *f) {
    char path[1024];
    const char *env = getenv("CT_FIXTURES_DIR");
    const char *slash = strrchr(source_file, '/');
    if (env)
        snprintf(path, sizeof path, "%s/nn/%s.bin", env, name);
    else
        snprintf(path, sizeof path, "%.*s/fixtures/nn/%s.bin", slash ? (int)(slash - source_file) : 1,
                 slash ? source_file : ".", name);
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    char magic[4];
    uint32_t version, count;
    int ok = nf_read(fp, magic, 4) && memcmp(magic, "CTFX", 4) == 0 && nf_read(fp, &version, 4) &&
             version == 1 && nf_read(fp, &count, 4) && count <= NF_MAX_TENSORS;
    for (uint32_t i = 0; ok && i < count; i++) {
        ok = nf_read_tensor(fp, &f->t[i]);
        f->count = (int)i + 1;
    }
    fclose(fp);
    if (!ok) nf_free(f);
    return ok;
}

/* The named tensor; NULL if absent. */
static const nf_tensor *nf_get(const nf_file *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

#endif /* CT_NN_FIXTURE_H */
