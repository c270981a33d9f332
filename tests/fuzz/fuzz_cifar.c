/*
 * fuzz_cifar.c — libFuzzer target for the CIFAR-10 binary reader behind
 * ct_cifar10 and the image samples built from it: any byte string must
 * either be read or be refused with an error, never crash, leak or trip a
 * sanitizer; records that are read must come back as samples with the
 * stored label and a [3, 32, 32] float image, through the random crop, flip
 * and normalize transforms that CIFAR training uses.
 *
 * CIFAR files have no header, only 3073-byte records, so the first input
 * byte picks what the reader is asked for: an even byte, as many whole
 * records as the rest holds (a partial last record is dropped, so this is
 * the path real files take), an odd one byte / 2 % 4 records from the rest
 * as it is (mostly a size mismatch). The file reaches the reader through a
 * memory file (memfd), as a real file would.
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

#include "ctorch/ctorch.h"
#include "data/data_internal.h"

#define FUZZ_NAME "fuzz_cifar"
#include "fuzz_util.h"

#define RECORD 3073
#define PIXELS 3072

static ct_transform *training_transform(void) {
    const double mean[3] = {0.4914, 0.4822, 0.4465}, std[3] = {0.2470, 0.2435, 0.2616};
    return CT_COMPOSE(ct_transform_random_crop(32, 4), ct_transform_random_horizontal_flip(0.5),
                      ct_transform_normalize(mean, std, 3));
}

/* Every record read becomes a sample with its label and a [3,32,32] image. */
static void check_samples(const uint8_t *images, const uint8_t *labels, int64_t n, uint64_t key) {
    static const int64_t shape[3] = {3, 32, 32};
    ct_transform *tf = training_transform();
    if (!tf) fuzz_fail("the transforms cannot be built");
    for (int64_t i = 0; i < n; i++) {
        ct_sample s = {0};
        if (ctd_image_sample(images + i * PIXELS, shape, 3, labels[i], tf, key + (uint64_t)i, &s) != CT_OK)
            fuzz_fail("a record that was read gives no sample");
        if (s.n != 2 || ct_numel(s.t[0]) != PIXELS || ct_ndim(s.t[0]) != 3 || ct_item(s.t[1]) != labels[i])
            fuzz_fail("a sample does not match its record");
        ct_sample_clear(&s);
    }
    ct_transform_free(tf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *file = data + 1;
    size_t file_size = size - 1;
    int64_t records = data[0] % 2 == 0 ? (int64_t)(file_size / RECORD) : data[0] / 2 % 4;
    if (data[0] % 2 == 0) file_size = (size_t)records * RECORD;
    uint8_t *images = malloc((size_t)records * PIXELS + 1), *labels = malloc((size_t)records + 1);
    int fd = images && labels ? memory_file(file, file_size) : -1;
    if (fd < 0) {
        free(images);
        free(labels);
        return 0;
    }
    int64_t live = ct_live_tensors();
    ct_clear_error();
    ct_status st = ctd_cifar_read_fd("input.bin", fd, records, images, labels);
    if (st == CT_OK) {
        if (file_size != (size_t)records * RECORD) fuzz_fail("a file of the wrong size was read");
        check_samples(images, labels, records, file_size);
    } else if (ct_last_status() == CT_OK || ct_last_error()[0] == '\0') {
        fuzz_fail("a refused file left no error");
    }
    ct_clear_error();
    free(images);
    free(labels);
    if (ct_live_tensors() != live) fuzz_fail("tensors leaked");
    return 0;
}
