/*
 * test_parsers.c — the data-file readers (IDX, MNIST, CIFAR-10) against
 * inputs that are not data files: FIFOs and other non-regular files must be
 * refused at once, naming the path (a FIFO with no writer used to block
 * forever), and headers whose sizes overflow when multiplied — including
 * zero-element shapes whose other sizes multiply past INT64_MAX — must be
 * refused with a message instead of overflowing (UBSan) or allocating.
 *
 * A watchdog (alarm) turns a blocked read into a failure with a message, so
 * a regression shows as a failed test, not a hung suite.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char g_dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static const char *path_in(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", g_dir, name);
    return buf;
}

static void make_fifo(const char *name) {
    char p[128];
    if (mkfifo(path_in(p, sizeof p, name), 0600) != 0) ct_test_fail(__FILE__, __LINE__, "mkfifo %s failed", p);
}

static void write_bytes(const char *name, const void *data, size_t n) {
    char p[128];
    FILE *f = fopen(path_in(p, sizeof p, name), "wb");
    if (!f || fwrite(data, 1, n, f) != n) ct_test_fail(__FILE__, __LINE__, "cannot write %s", p);
    if (f) fclose(f);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_parsers: a reader blocked for 10 s (a FIFO was opened and read)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

/* ---- non-regular files ----------------------------------------------------------- */

static void test_idx_refuses_fifos(void) {
    char p[128], want[192];
    make_fifo("labels-idx1-ubyte");
    make_fifo("labels-idx1-ubyte.gz");
    alarm(10);
    CT_EXPECT(ct_idx_load(path_in(p, sizeof p, "labels-idx1-ubyte")) == NULL);
    snprintf(want, sizeof want, "ct_idx_load: %s is not a regular file (it is a FIFO (named pipe))", p);
    CT_EXPECT_ERROR(CT_ERR_IO, want);
    CT_EXPECT(ct_idx_load(path_in(p, sizeof p, "labels-idx1-ubyte.gz")) == NULL);
    snprintf(want, sizeof want, "ct_idx_load: %s is not a regular file (it is a FIFO (named pipe))", p);
    CT_EXPECT_ERROR(CT_ERR_IO, want);
    CT_EXPECT(ct_idx_load(g_dir) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "is not a regular file (it is a directory)");
    CT_EXPECT(ct_idx_load("/dev/null") == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "/dev/null is not a regular file (it is a character device)");
    alarm(0);
}

static void test_mnist_refuses_fifos(void) {
    char sub[128];
    /* a FIFO in place of the labels: reported as what it is, not as missing */
    mkdir(path_in(sub, sizeof sub, "mnist"), 0700);
    make_fifo("mnist/t10k-labels-idx1-ubyte");
    make_fifo("mnist/t10k-images-idx3-ubyte");
    alarm(10);
    CT_EXPECT(ct_mnist(sub, false, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "t10k-labels-idx1-ubyte is not a regular file (it is a FIFO (named pipe))");
    alarm(0);
}

static void test_cifar_refuses_fifos(void) {
    char sub[128];
    mkdir(path_in(sub, sizeof sub, "cifar"), 0700);
    make_fifo("cifar/test_batch.bin");
    alarm(10);
    CT_EXPECT(ct_cifar10(sub, false, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "test_batch.bin is not a regular file (it is a FIFO (named pipe))");
    /* the nested layout (root/cifar-10-batches-bin) is found through a FIFO too */
    mkdir(path_in(sub, sizeof sub, "cifar-root"), 0700);
    mkdir(path_in(sub, sizeof sub, "cifar-root/cifar-10-batches-bin"), 0700);
    make_fifo("cifar-root/cifar-10-batches-bin/test_batch.bin");
    CT_EXPECT(ct_cifar10(path_in(sub, sizeof sub, "cifar-root"), false, NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_IO, "cifar-10-batches-bin/test_batch.bin is not a regular file (it is a FIFO");
    alarm(0);
}

/* ---- sizes that overflow ------------------------------------------------------------ */

/* An IDX header: magic 00 00 08 ndim, then the dims big-endian. */
static size_t idx_header(unsigned char *b, int ndim, const uint32_t *dims) {
    b[0] = 0, b[1] = 0, b[2] = 0x08, b[3] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++)
        for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (unsigned char)(dims[i] >> (24 - 8 * k));
    return 4 + 4 * (size_t)ndim;
}

static void expect_idx_refused(const char *name, int ndim, const uint32_t *dims, const char *why) {
    unsigned char b[4 + 4 * CT_MAX_DIMS];
    char p[128];
    write_bytes(name, b, idx_header(b, ndim, dims));
    CT_EXPECT_MSG(ct_idx_load(path_in(p, sizeof p, name)) == NULL, "%s loaded", name);
    CT_EXPECT_MSG(strstr(ct_last_error(), p) && strstr(ct_last_error(), "the header's shape"),
                  "the message names neither the file nor its header: %s", ct_last_error());
    CT_EXPECT_ERROR(CT_ERR_FORMAT, why);
}

static void test_idx_zero_element_overflow(void) {
    const uint32_t big = 0xFFFFFFFFu;
    /* the sizes after the zero multiply past INT64_MAX: the strides overflow */
    expect_idx_refused("zero_first", 3, (uint32_t[]){0, big, big}, "Stride calculation overflowed");
    expect_idx_refused("zero_last", 3, (uint32_t[]){big, big, 0}, "Stride calculation overflowed");
    expect_idx_refused("zero_middle", 4, (uint32_t[]){big, 0, big, big}, "Stride calculation overflowed");
    /* no zero: the element count overflows */
    expect_idx_refused("no_zero", 3, (uint32_t[]){big, big, big}, "multiply past INT64_MAX");
    /* a zero-element shape that fits loads as an empty tensor of that shape */
    unsigned char b[64];
    char p[128];
    write_bytes("empty", b, idx_header(b, 3, (uint32_t[]){0, 1u << 30, 1u << 30}));
    ct_tensor *t = ct_idx_load(path_in(p, sizeof p, "empty"));
    CT_EXPECT_MSG(t != NULL, "an empty IDX file did not load: %s", ct_last_error());
    CT_EXPECT_SHAPE(t, CT_SHAPE(0, INT64_C(1) << 30, INT64_C(1) << 30));
    CT_EXPECT_INT_EQ(ct_numel(t), 0);
    ct_release(t);
}

static void test_shapes_that_overflow(void) {
    const int64_t huge = INT64_C(1) << 62;
    ct_scope_begin();
    CT_EXPECT(ct_empty(CT_SHAPE(0, huge, 4)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "empty: Stride calculation overflowed: the sizes [0, 4611686018427387904, 4]");
    CT_EXPECT(ct_zeros(CT_SHAPE(huge, 4)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "numel: integer multiplication overflow");
    ct_tensor *e = ct_empty(CT_SHAPE(0, huge));   /* fits: strides [huge, 1] */
    CT_EXPECT_MSG(e != NULL, "%s", ct_last_error());
    CT_EXPECT(ct_view(e, CT_SHAPE(0, huge, 4)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "view: Stride calculation overflowed");
    CT_EXPECT(ct_reshape(e, CT_SHAPE(4, huge, 0)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "reshape: Stride calculation overflowed");
    CT_EXPECT(ct_expand(ct_unsqueeze(e, 0), CT_SHAPE(8, 0, huge)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "expand: Stride calculation overflowed");
    CT_EXPECT(ct_as_strided(e, CT_SHAPE(0, huge, 8), (int64_t[]){1, 1, 1}, 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_SHAPE, "as_strided: Stride calculation overflowed");
    ct_scope_end();
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    signal(SIGALRM, on_alarm);
    snprintf(g_dir, sizeof g_dir, "/tmp/ct_parsers_XXXXXX");
    if (!mkdtemp(g_dir)) ct_test_fail(__FILE__, __LINE__, "mkdtemp failed");
    CT_RUN(test_idx_refuses_fifos);
    CT_RUN(test_mnist_refuses_fifos);
    CT_RUN(test_cifar_refuses_fifos);
    CT_RUN(test_idx_zero_element_overflow);
    CT_RUN(test_shapes_that_overflow);
    nftw(g_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return ct_test_finish();
}
