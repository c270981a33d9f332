/*
 * st_testutil.h — helpers shared by the safetensors tests: a scratch
 * directory, whole-file reads and writes, and building a safetensors file
 * from a header string and data bytes (for handcrafted and corrupt files).
 */
#ifndef CT_ST_TESTUTIL_H
#define CT_ST_TESTUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* A fresh directory under $TMPDIR (or /tmp); the caller frees the string. */
static inline char *st_scratch_dir(void) {
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    snprintf(dir, 4096, "%s/ctorch-st-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) {
        ct_test_fail(__FILE__, __LINE__, "mkdtemp(%s) failed", dir);
        free(dir);
        return NULL;
    }
    return dir;
}

/* Number of entries in dir other than . and .. (files left behind). */
static inline int st_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* Removes the files in dir (one level) and dir itself, then frees it. */
static inline void st_remove_dir(char *dir) {
    if (!dir) return;
    DIR *d = opendir(dir);
    if (d) {
        char path[4352];
        for (struct dirent *e; (e = readdir(d));) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0) rmdir(path);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

static inline char *st_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static inline bool st_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* The whole file (malloc'd; *n its size), or NULL. */
static inline unsigned char *st_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t k; (k = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *n = len;
    return buf;
}

/* 8-byte little-endian length, the header, then `data_len` data bytes
 * (from data, or 0, 1, 2, ... when data is NULL). */
static inline unsigned char *st_make_file(const char *header, const void *data, size_t data_len, size_t *n) {
    size_t h = strlen(header);
    *n = 8 + h + data_len;
    unsigned char *buf = malloc(*n ? *n : 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + h + i] = data ? ((const unsigned char *)data)[i] : (unsigned char)i;
    return buf;
}

#endif /* CT_ST_TESTUTIL_H */
