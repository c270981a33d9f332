/*
 * fuzz_util.h — what the file-reader fuzz targets share: a failure that
 * libFuzzer reports as a crash, and a memory file (memfd) so that the real
 * readers, which take a file descriptor or path, read the fuzzer's bytes.
 * Includers define FUZZ_NAME (e.g. "fuzz_idx") and _GNU_SOURCE (memfd_create).
 */
#ifndef CT_FUZZ_UTIL_H
#define CT_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctorch/ctorch.h"

/* An invariant the reader broke: abort, so libFuzzer keeps the input. */
static inline void fuzz_fail(const char *what) {
    fprintf(stderr, FUZZ_NAME ": %s (last error: %s)\n", what, ct_last_error());
    abort();
}

/* A memory file holding data, positioned at its start; -1 if none. */
static inline int memory_file(const void *data, size_t size) {
    int fd = memfd_create(FUZZ_NAME, MFD_CLOEXEC);
    if (fd < 0) return -1;
    const char *p = data;
    while (size > 0) {
        ssize_t k = write(fd, p, size);
        if (k <= 0) {
            close(fd);
            return -1;
        }
        p += k, size -= (size_t)k;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

#endif /* CT_FUZZ_UTIL_H */
