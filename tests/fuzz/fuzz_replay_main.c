/*
 * fuzz_replay_main.c — the main() of a fuzz target built without libFuzzer
 * (a compiler other than clang): it runs the target once on each file named
 * on the command line, so a corpus or a crasher can be replayed under gcc
 * and its sanitizers. libFuzzer brings its own main().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    *n = 0;
    for (size_t k; buf && (k = fread(buf + *n, 1, cap - *n, f)) > 0;) {
        if ((*n += k) < cap) continue;
        unsigned char *grown = realloc(buf, cap *= 2);
        if (!grown) free(buf);
        buf = grown;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf = read_all(argv[i], &n);
        if (!buf) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
    }
    printf("replayed %d input(s)\n", argc - 1);
    return 0;
}
