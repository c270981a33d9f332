/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors reader (and the
 * JSON reader under it): any byte string must either load or be refused
 * with an error, never crash, leak or trip a sanitizer. A file that loads
 * must also survive a round trip: saved again it loads again, and a second
 * save gives the same bytes as the first.
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DCTORCH_FUZZ=ON (see tools/run-fuzz.sh).
 * Without clang, fuzz_replay_main.c gives a main() that runs the target on
 * each file named on the command line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ctorch.h"
#include "ctorch/io.h"

/* A broken invariant: report it and stop, so libFuzzer saves the input. */
static void fuzz_fail(const char *what) {
    fprintf(stderr, "fuzz_safetensors: %s (last error: %s)\n", what, ct_last_error());
    abort();
}

static void check_roundtrip(const ct_tensor_dict *d) {
    void *first = NULL, *second = NULL;
    size_t n1 = 0, n2 = 0;
    ct_tensor_dict *again = NULL;
    if (ct_safetensors_save_buffer(d, &first, &n1) != CT_OK) fuzz_fail("a loaded file does not save");
    if (ct_safetensors_load_buffer(first, n1, ct_device_cpu(), &again) != CT_OK)
        fuzz_fail("a saved file does not load");
    if (ct_tensor_dict_size(again) != ct_tensor_dict_size(d)) fuzz_fail("the round trip lost tensors");
    if (ct_safetensors_save_buffer(again, &second, &n2) != CT_OK) fuzz_fail("the second save failed");
    if (n1 != n2 || memcmp(first, second, n1) != 0) fuzz_fail("two saves differ");
    ct_tensor_dict_free(again);
    free(first);
    free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t live = ct_live_tensors();
    ct_tensor_dict *d = NULL;
    ct_status s = ct_safetensors_load_buffer(data, size, ct_device_cpu(), &d);
    if (s == CT_OK) {
        check_roundtrip(d);
    } else if (d != NULL || ct_last_error()[0] == '\0') {
        fuzz_fail("a refused file left a dict or no message");
    }
    ct_tensor_dict_free(d);
    ct_clear_error();
    if (ct_live_tensors() != live) fuzz_fail("tensors leaked");
    return 0;
}
