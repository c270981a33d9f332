/*
 * fuzz_idx.c — libFuzzer target for the IDX reader behind ct_idx_load (the
 * MNIST format), plain and gzip: any byte string must either load or be
 * refused with an error, never crash, leak or trip a sanitizer, and a file
 * that loads must be exactly as long as its header says.
 *
 * The input reaches the reader through a memory file (memfd), so the real
 * file path runs: fstat, the regular-file check, stdio or zlib reads. Three
 * modes, chosen by the first bytes:
 *   0x1f 0x8b ...  the input is a gzip file (read as "input.idx.gz");
 *   'Z' rest       rest is gzip-compressed here first, so mutations of the
 *                  IDX bytes get past gzip's CRC and reach the parser;
 *   anything else  the input is a plain IDX file.
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DCTORCH_FUZZ=ON (tools/run-fuzz.sh).
 * Without clang, fuzz_replay_main.c gives a main() that replays files.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "ctorch/ctorch.h"
#include "data/data_internal.h"

#define FUZZ_NAME "fuzz_idx"
#include "fuzz_util.h"

/* gzip (not zlib) framing: windowBits 15 + 16. */
static unsigned char *gzip_compress(const uint8_t *data, size_t size, size_t *out_size) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, (uLong)size) + 32;
    unsigned char *out = malloc(cap);
    z.next_in = (Bytef *)data, z.avail_in = (uInt)size;
    z.next_out = out, z.avail_out = (uInt)cap;
    int rc = out ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
    *out_size = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static size_t idx_elem_size(uint8_t type) {
    switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    }
    return 0;
}

/* A loaded file: its uncompressed bytes are header + numel * element size. */
static void check_loaded(const ct_tensor *t, const uint8_t *idx, size_t idx_size) {
    if (idx_size < 4) fuzz_fail("a file shorter than its magic number loaded");
    size_t elem = idx_elem_size(idx[2]);
    if (elem == 0 || ct_ndim(t) != idx[3]) fuzz_fail("the tensor does not match the magic number");
    size_t want = 4 + 4 * (size_t)idx[3] + (size_t)ct_numel(t) * elem;
    if (want != idx_size) fuzz_fail("a file whose length differs from its header loaded");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bool wrap = size >= 1 && data[0] == 'Z';
    bool gz = wrap || (size >= 2 && data[0] == 0x1f && data[1] == 0x8b);
    unsigned char *packed = NULL;
    size_t packed_size = 0;
    if (wrap && !(packed = gzip_compress(data + 1, size - 1, &packed_size))) return 0;
    int fd = wrap ? memory_file(packed, packed_size) : memory_file(data, size);
    free(packed);
    if (fd < 0) return 0;   /* no memfd: nothing to test */

    int64_t live = ct_live_tensors();
    ct_clear_error();
    ct_tensor *t = ctd_idx_read_fd("fuzz_idx", gz ? "input.idx.gz" : "input.idx", fd, gz);
    if (t && wrap) check_loaded(t, data + 1, size - 1);
    else if (t && !gz) check_loaded(t, data, size);
    else if (!t && (ct_last_status() == CT_OK || ct_last_error()[0] == '\0'))
        fuzz_fail("a refused file left no error");
    ct_release(t);
    ct_clear_error();
    if (ct_live_tensors() != live) fuzz_fail("tensors leaked");
    return 0;
}
