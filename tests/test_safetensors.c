/*
 * test_safetensors.c — ct_tensor_dict and safetensors save/load: the dict's
 * semantics, interop with PyTorch (a fixture written by
 * tools/gen_safetensors_fixture.py), byte-exact agreement with the reference
 * writer, round trips of every dtype and layout (0-dim, empty, views,
 * device tensors), and atomic saves that fail without touching the old file.
 * Corrupt files are tested in test_safetensors_corrupt.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "ctorch/io.h"
#include "st_testutil.h"
#include "testutil.h"

#include "fixtures/safetensors/pytorch_expected.h"

static const ct_dtype all_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                      CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
#define NUM_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

/* ---- the dict ------------------------------------------------------------------------ */

static void test_dict_basics(void) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 0);
    CT_EXPECT_INT_EQ(ct_tensor_dict_metadata_size(d), 1);
    CT_EXPECT_STR_EQ(ct_tensor_dict_get_metadata(d, "format"), "pt");

    ct_tensor *a = ct_ones(CT_SHAPE(2)), *b = ct_zeros(CT_SHAPE(3)), *c = ct_full(CT_SHAPE0, 7.0);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "z.weight", a), CT_OK);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "a.bias", b), CT_OK);
    CT_EXPECT_INT_EQ(ct_refcount(a), 2); /* the dict holds its own reference */
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 2);
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 0), "z.weight"); /* insertion order */
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 1), "a.bias");
    CT_EXPECT(ct_tensor_dict_contains(d, "a.bias"));
    CT_EXPECT(!ct_tensor_dict_contains(d, "a"));
    CT_EXPECT_INT_EQ(ct_tensor_dict_index(d, "a.bias"), 1);
    CT_EXPECT_INT_EQ(ct_tensor_dict_index(d, "a"), -1);

    /* replacing keeps the position and gives the old tensor back */
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "z.weight", c), CT_OK);
    CT_EXPECT_INT_EQ(ct_refcount(a), 1);
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 0), "z.weight");
    ct_tensor *got = ct_tensor_dict_get(d, "z.weight");
    CT_EXPECT(got == c);
    CT_EXPECT_NEAR(ct_item(got), 7.0, 0);
    ct_release(got);
    ct_tensor *v1 = ct_tensor_dict_value(d, 1);
    CT_EXPECT(v1 == b);
    ct_release(v1);

    /* the dict keeps tensors alive after the caller releases them */
    int64_t live = ct_live_tensors();
    ct_release(b);
    CT_EXPECT_INT_EQ(ct_live_tensors(), live);
    CT_EXPECT_INT_EQ(ct_tensor_dict_remove(d, "a.bias"), CT_OK);
    CT_EXPECT_INT_EQ(ct_live_tensors(), live - 1);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 1);

    /* errors */
    CT_EXPECT(ct_tensor_dict_get(d, "missing") == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "tensor_dict_get: no tensor named 'missing'");
    CT_EXPECT_INT_EQ(ct_tensor_dict_remove(d, "missing"), CT_ERR_INDEX);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "tensor_dict_remove: no tensor named 'missing'");
    CT_EXPECT(ct_tensor_dict_name(d, 1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index 1 is out of range for 1 entries");
    CT_EXPECT(ct_tensor_dict_value(d, -1) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "index -1 is out of range");
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "bad\xff", a), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "the name is not valid UTF-8 (byte 0xff at offset 3)");
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "__metadata__", a), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "'__metadata__' is reserved");
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "x", NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "tensor_dict_set: NULL tensor for 'x'");
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(NULL, "x", a), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "tensor_dict_set: NULL dict");
    /* a NULL from a failed op passes its error through unchanged */
    ct_tensor *failed = ct_reshape(a, CT_SHAPE(5));
    CT_EXPECT(failed == NULL);
    ct_status pending = ct_last_status();
    CT_EXPECT(pending != CT_OK);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, "y", failed), pending);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 1);
    ct_clear_error();

    /* metadata */
    CT_EXPECT_INT_EQ(ct_tensor_dict_set_metadata(d, "step", "10"), CT_OK);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set_metadata(d, "step", "11"), CT_OK);
    CT_EXPECT_STR_EQ(ct_tensor_dict_get_metadata(d, "step"), "11");
    CT_EXPECT_STR_EQ(ct_tensor_dict_metadata_key(d, 1), "step");
    CT_EXPECT_INT_EQ(ct_tensor_dict_set_metadata(d, "format", NULL), CT_OK);
    CT_EXPECT_INT_EQ(ct_tensor_dict_metadata_size(d), 1);
    CT_EXPECT(ct_tensor_dict_get_metadata(d, "format") == NULL);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set_metadata(d, "absent", NULL), CT_OK);
    CT_EXPECT_INT_EQ(ct_tensor_dict_set_metadata(d, "k", "\xc3\x28"), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "the value is not valid UTF-8 (byte 0xc3 at offset 0)");
    CT_EXPECT(ct_tensor_dict_metadata_key(d, 5) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INDEX, "out of range");

    ct_release(a);
    ct_release(c);
    ct_tensor_dict_free(d);
    ct_tensor_dict_free(NULL);
}

/* Thousands of entries: lookups through the index, removal re-indexes. */
static void test_dict_many(void) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    ct_tensor *t = ct_zeros(CT_SHAPE(1));
    char name[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "layer.%d.weight", i);
        CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, name, t), CT_OK);
    }
    CT_EXPECT_INT_EQ(ct_refcount(t), 3001);
    for (int i = 0; i < 3000; i += 2) {
        snprintf(name, sizeof name, "layer.%d.weight", i);
        CT_EXPECT_INT_EQ(ct_tensor_dict_remove(d, name), CT_OK);
    }
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), 1500);
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "layer.%d.weight", i);
        if (ct_tensor_dict_contains(d, name) != (i % 2 == 1) ||
            ct_tensor_dict_index(d, name) != (i % 2 == 1 ? i / 2 : -1))
            ct_test_fail(__FILE__, __LINE__, "contains/index(%s) is wrong after removals", name);
    }
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 0), "layer.1.weight");
    CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, 1499), "layer.2999.weight");
    ct_tensor_dict_free(d);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_release(t);
}

/* ---- interop with PyTorch ------------------------------------------------------------------ */

static char *fixture_path(void) {
    const char *env = getenv("CT_FIXTURES_DIR");
    char *p = malloc(4096);
    if (env) {
        snprintf(p, 4096, "%s/safetensors/pytorch.safetensors", env);
    } else {
        const char *slash = strrchr(__FILE__, '/');
        snprintf(p, 4096, "%.*s/fixtures/safetensors/pytorch.safetensors",
                 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
    }
    return p;
}

static void check_fixture_dict(const ct_tensor_dict *d, ct_device dev) {
    int n = (int)(sizeof st_fixture_tensors / sizeof st_fixture_tensors[0]);
    CT_EXPECT_INT_EQ(ct_tensor_dict_size(d), n);
    for (int i = 0; i < n && i < ct_tensor_dict_size(d); i++) {
        const st_fixture_tensor *want = &st_fixture_tensors[i];
        CT_EXPECT_STR_EQ(ct_tensor_dict_name(d, i), want->name);
        ct_tensor *t = ct_tensor_dict_get(d, want->name);
        if (!t) continue;
        CT_EXPECT_INT_EQ(ct_dtype_of(t), want->dtype);
        CT_EXPECT(ct_device_equal(ct_device_of(t), dev));
        CT_EXPECT(ct_is_contiguous(t));
        CT_EXPECT_SHAPE(t, ct_shape_make(want->ndim, want->shape));
        if (!CT_EXPECT_CLOSE(t, want->values, want->numel, 0, 0))
            ct_test_fail(__FILE__, __LINE__, "fixture tensor %s", want->name);
        ct_release(t);
    }
    int nm = (int)(sizeof st_fixture_metadata / sizeof st_fixture_metadata[0]);
    CT_EXPECT_INT_EQ(ct_tensor_dict_metadata_size(d), nm);
    for (int i = 0; i < nm; i++) {
        const char *v = ct_tensor_dict_get_metadata(d, st_fixture_metadata[i][0]);
        CT_EXPECT_MSG(v && strcmp(v, st_fixture_metadata[i][1]) == 0, "metadata %s",
                      st_fixture_metadata[i][0]);
    }
}

static void test_pytorch_fixture(void) {
    char *path = fixture_path();
    ct_tensor_dict *d = NULL;
    ct_status s = ct_safetensors_load(path, ct_device_cpu(), &d);
    CT_EXPECT_MSG(s == CT_OK, "loading %s: %s (run tools/gen_safetensors_fixture.py)", path,
                  ct_last_error());
    if (d) check_fixture_dict(d, ct_device_cpu());
    /* written back, the file is byte for byte what the PyTorch script wrote */
    size_t n = 0, m = 0;
    unsigned char *orig = st_read_file(path, &n);
    void *again = NULL;
    CT_EXPECT(d && ct_safetensors_save_buffer(d, &again, &m) == CT_OK);
    CT_EXPECT(orig && again && m == n && memcmp(again, orig, n) == 0);
    ct_tensor_dict *d2 = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load_buffer(again, m, ct_device_cpu(), &d2), CT_OK);
    if (d2) check_fixture_dict(d2, ct_device_cpu());
    ct_tensor_dict_free(d2);
    free(again);
    free(orig);
    ct_tensor_dict_free(d);
    free(path);
}

/* The examples of the reference writer's own tests (safetensors/src/tensor.rs). */
static void test_reference_bytes(void) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    ct_tensor_dict_set_metadata(d, "format", NULL);
    void *buf = NULL;
    size_t n = 0;
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &n), CT_OK);
    static const unsigned char empty[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
    CT_EXPECT(n == sizeof empty && memcmp(buf, empty, n) == 0);
    free(buf);

    ct_tensor_dict_set_metadata(d, "framework", "pt");
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &n), CT_OK);
    const char *meta = "{\"__metadata__\":{\"framework\":\"pt\"}}     ";
    CT_EXPECT(n == 48 && ((unsigned char *)buf)[0] == 40 && memcmp((char *)buf + 8, meta, 40) == 0);
    free(buf);
    ct_tensor_dict_set_metadata(d, "framework", NULL);

    float vals[6] = {0, 1, 2, 3, 4, 5};
    ct_tensor *t = ct_tensor_from(vals, CT_FLOAT32, CT_SHAPE(1, 2, 3));
    ct_tensor_dict_set(d, "attn.0", t);
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &n), CT_OK);
    const char *hdr = "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}";
    CT_EXPECT(n == 8 + 64 + 24 && ((unsigned char *)buf)[0] == 64 &&
              memcmp((char *)buf + 8, hdr, 64) == 0 && memcmp((char *)buf + 72, vals, 24) == 0);
    free(buf);
    ct_release(t);
    ct_tensor_dict_free(d);

    /* order: dtype rank descending (I64 F64 F32 I32 BF16 F16 U8 BOOL), then name */
    d = ct_tensor_dict_new();
    ct_tensor_dict_set_metadata(d, "format", NULL);
    static const char *const names[NUM_DTYPES] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8", "b"};
    for (int i = 0; i < NUM_DTYPES; i++) {
        ct_tensor *x = ct_zeros(CT_SHAPE(1), .dtype = all_dtypes[i]);
        ct_tensor_dict_set(d, names[i], x);
        if (i == 0) ct_tensor_dict_set(d, "a32", x);
        ct_release(x);
    }
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &n), CT_OK);
    const char *order[] = {"\"i64\"", "\"f64\"", "\"a32\"", "\"f32\"", "\"i32\"",
                           "\"bf16\"", "\"f16\"", "\"u8\"", "\"b\""};
    const char *text = (const char *)buf + 8, *prev = text;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *at = strstr(text, order[i]);
        CT_EXPECT_MSG(at && at >= prev, "%s out of order in %.300s", order[i], text);
        if (at) prev = at;
    }
    CT_EXPECT(strstr(text, "\"i64\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}"));
    CT_EXPECT(strstr(text, "\"b\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[33,34]}"));
    CT_EXPECT_INT_EQ(((unsigned char *)buf)[0] % 8, 0);
    free(buf);
    ct_tensor_dict_free(d);
}

/* ---- round trips ------------------------------------------------------------------------------ */

/* Saves d to a file and to a buffer (the same bytes), loads both back on dev,
 * and checks every tensor against the float64 values in want[i]. */
static void roundtrip_check(const char *dir, ct_tensor_dict *d, double **want, ct_device dev) {
    char *path = st_path(dir, "rt.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_save(path, d), CT_OK);
    void *buf = NULL;
    size_t n = 0, fn = 0;
    CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(d, &buf, &n), CT_OK);
    unsigned char *file = st_read_file(path, &fn);
    CT_EXPECT(file && fn == n && memcmp(file, buf, n) == 0);
    CT_EXPECT_INT_EQ(st_dir_entries(dir), 1); /* no temporary left behind */
    for (int from_file = 0; from_file < 2; from_file++) {
        ct_tensor_dict *back = NULL;
        ct_status s = from_file ? ct_safetensors_load(path, dev, &back)
                                : ct_safetensors_load_buffer(buf, n, dev, &back);
        CT_EXPECT_MSG(s == CT_OK, "load: %s", ct_last_error());
        if (!back) continue;
        CT_EXPECT_INT_EQ(ct_tensor_dict_size(back), ct_tensor_dict_size(d));
        for (int i = 0; i < ct_tensor_dict_size(d); i++) {
            const char *name = ct_tensor_dict_name(d, i);
            ct_tensor *orig = ct_tensor_dict_value(d, i), *got = ct_tensor_dict_get(back, name);
            CT_EXPECT_MSG(got, "tensor %s missing after the round trip", name);
            if (got) {
                CT_EXPECT_INT_EQ(ct_dtype_of(got), ct_dtype_of(orig));
                CT_EXPECT(ct_device_equal(ct_device_of(got), dev));
                CT_EXPECT_SHAPE(got, ct_shape_of(orig));
                if (!CT_EXPECT_CLOSE(got, want[i], ct_numel(orig), 0, 0))
                    ct_test_fail(__FILE__, __LINE__, "round trip of %s (%s)", name,
                                 ct_dtype_name(ct_dtype_of(orig)));
            }
            ct_release(orig);
            ct_release(got);
        }
        CT_EXPECT_STR_EQ(ct_tensor_dict_get_metadata(back, "format"), "pt");
        CT_EXPECT_STR_EQ(ct_tensor_dict_get_metadata(back, "step"), "1234");
        /* and it writes back to the same bytes */
        void *again = NULL;
        size_t m = 0;
        CT_EXPECT_INT_EQ(ct_safetensors_save_buffer(back, &again, &m), CT_OK);
        CT_EXPECT(again && m == n && memcmp(again, buf, n) == 0);
        free(again);
        ct_tensor_dict_free(back);
    }
    free(file);
    free(buf);
    free(path);
}

/* Every dtype in contiguous, 0-dim, empty, transposed, narrowed and expanded
 * layouts, on dev (moved there before saving). */
static void roundtrip_on(ct_device dev) {
    char *dir = st_scratch_dir();
    if (!dir) return;
    ct_tensor_dict *d = ct_tensor_dict_new();
    ct_tensor_dict_set_metadata(d, "step", "1234");
    double *want[NUM_DTYPES * 6 + 1];
    int count = 0;
    char name[64];
    for (int k = 0; k < NUM_DTYPES; k++) {
        ct_dtype dt = all_dtypes[k];
        double lo = dt == CT_UINT8 || dt == CT_BOOL ? 0 : -100, hi = dt == CT_UINT8 ? 256 : 100;
        ct_shape shape = CT_SHAPE(ct_test_randint(1, 5), ct_test_randint(1, 6), ct_test_randint(2, 4));
        double *vals = NULL;
        ct_tensor *variants[6];
        variants[0] = ct_test_random(shape, dt, lo, hi, &vals);
        variants[1] = ct_test_noncontiguous(vals, shape, dt);                 /* reversed strides */
        variants[2] = ct_narrow(variants[0], 2, 1, 1);                         /* narrowed */
        ct_tensor *column = ct_test_random(CT_SHAPE(3, 1), dt, lo, hi, NULL);
        variants[3] = ct_expand(column, CT_SHAPE(3, 4));                      /* stride 0 */
        ct_release(column);
        variants[4] = ct_test_random(CT_SHAPE0, dt, lo, hi, NULL);             /* 0-dim */
        variants[5] = ct_empty(CT_SHAPE(0, 3), .dtype = dt);                   /* empty */
        free(vals);
        for (int v = 0; v < 6; v++) {
            ct_tensor *on = ct_to_device(variants[v], dev);
            want[count++] = ct_test_values(on);
            snprintf(name, sizeof name, "%s.v%d", ct_dtype_name(dt), v);
            CT_EXPECT_INT_EQ(ct_tensor_dict_set(d, name, on), CT_OK);
            ct_release(on);
            ct_release(variants[v]);
        }
    }
    /* names that need escaping in JSON and non-ASCII ones */
    ct_tensor *odd = ct_arange(0, 3, 1, .dtype = CT_FLOAT32, .device = dev);
    const char *odd_name = "quote\" back\\slash\nnew\x01line \xc3\xa9\xe2\x82\xac \xf0\x9f\x98\x80";
    ct_tensor_dict_set(d, odd_name, odd);
    want[count++] = ct_test_values(odd);
    ct_release(odd);
    roundtrip_check(dir, d, want, dev);
    for (int i = 0; i < count; i++) free(want[i]);
    ct_tensor_dict_free(d);
    st_remove_dir(dir);
}

static void test_roundtrip_cpu(void) { roundtrip_on(ct_device_cpu()); }

static void test_roundtrip_devices(void) {
    for (ct_device_type type = CT_DEVICE_CUDA; type <= CT_DEVICE_OPENCL; type++) {
        int count = type == CT_DEVICE_OPENCL ? ct_test_opencl_devices("safetensors round trip on opencl:0")
                                             : ct_test_cuda_devices("safetensors round trip on cuda:0");
        if (count == 0) continue;
        ct_device dev = {type, 0};
        roundtrip_on(dev);
        /* a device file loads onto the CPU and the other way round */
        char *path = fixture_path();
        ct_tensor_dict *d = NULL;
        CT_EXPECT_INT_EQ(ct_safetensors_load(path, dev, &d), CT_OK);
        if (d) check_fixture_dict(d, dev);
        ct_tensor_dict_free(d);
        free(path);
    }
}

/* ---- atomic saves --------------------------------------------------------------------------------- */

static ct_tensor_dict *small_dict(double value) {
    ct_tensor_dict *d = ct_tensor_dict_new();
    ct_tensor *t = ct_full(CT_SHAPE(4, 4), value);
    ct_tensor_dict_set(d, "w", t);
    ct_release(t);
    return d;
}

/* path still holds exactly `old` (n bytes) and dir holds `entries` files. */
static void expect_untouched(const char *path, const unsigned char *old, size_t n, const char *dir,
                             int entries) {
    size_t m = 0;
    unsigned char *now = st_read_file(path, &m);
    CT_EXPECT_MSG(now && m == n && memcmp(now, old, n) == 0, "%s changed after a failed save", path);
    CT_EXPECT_INT_EQ(st_dir_entries(dir), entries);
    free(now);
}

static void test_atomic_save(void) {
    char *dir = st_scratch_dir();
    if (!dir) return;
    char *path = st_path(dir, "model.safetensors");
    ct_tensor_dict *d1 = small_dict(1.0), *d2 = small_dict(2.0);
    CT_EXPECT_INT_EQ(ct_safetensors_save(path, d1), CT_OK);
    size_t n = 0;
    unsigned char *old = st_read_file(path, &n);

    /* bad arguments: nothing is created */
    CT_EXPECT_INT_EQ(ct_safetensors_save(path, NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "safetensors_save: NULL dict");
    expect_untouched(path, old, n, dir, 1);
    CT_EXPECT_INT_EQ(ct_safetensors_save(NULL, d1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL path");

    /* a directory that does not exist, or a parent that is a file */
    char *missing = st_path(dir, "no/such/dir/x.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_save(missing, d2), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "cannot create a temporary file");
    char *under_file = st_path(dir, "model.safetensors/x.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_save(under_file, d2), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "Not a directory");
    CT_EXPECT_INT_EQ(ct_safetensors_save(dir, d2), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "is a directory");
    expect_untouched(path, old, n, dir, 1);

    /* the disk "fills up" half way through (a file size limit): the old file
     * survives and the temporary is removed */
    ct_tensor_dict *big = ct_tensor_dict_new();
    ct_tensor *t = ct_ones(CT_SHAPE(3, 1000, 1000));
    ct_tensor_dict_set(big, "big", t);
    ct_release(t);
    struct rlimit saved, lim;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    if (getrlimit(RLIMIT_FSIZE, &saved) == 0) {
        lim = saved;
        lim.rlim_cur = 1 << 20;
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            CT_EXPECT_INT_EQ(ct_safetensors_save(path, big), CT_ERR_IO);
            CT_EXPECT_ERROR(CT_ERR_IO, "File too large");
            setrlimit(RLIMIT_FSIZE, &saved);
            expect_untouched(path, old, n, dir, 1);
        }
    }
    signal(SIGXFSZ, old_handler);
    ct_tensor_dict_free(big);

    /* a read-only directory (skipped when running as root, who may write anyway) */
    char *ro = st_path(dir, "ro");
    mkdir(ro, 0755);
    char *ro_file = st_path(ro, "m.safetensors");
    CT_EXPECT_INT_EQ(ct_safetensors_save(ro_file, d1), CT_OK);
    chmod(ro, 0555);
    char *probe = st_path(ro, "probe");
    FILE *pf = fopen(probe, "w");
    if (pf) {
        fclose(pf);
        unlink(probe);
    } else {
        CT_EXPECT_INT_EQ(ct_safetensors_save(ro_file, d2), CT_ERR_IO);
        CT_EXPECT_ERROR(CT_ERR_IO, "Permission denied");
        expect_untouched(ro_file, old, n, ro, 1);
    }
    chmod(ro, 0755);
    unlink(ro_file);
    rmdir(ro);

    /* a successful save replaces the contents and keeps the file's mode */
    chmod(path, 0640);
    CT_EXPECT_INT_EQ(ct_safetensors_save(path, d2), CT_OK);
    struct stat st;
    CT_EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
    ct_tensor_dict *back = NULL;
    CT_EXPECT_INT_EQ(ct_safetensors_load(path, ct_device_cpu(), &back), CT_OK);
    ct_tensor *w = ct_tensor_dict_get(back, "w");
    double twos[16];
    for (int i = 0; i < 16; i++) twos[i] = 2.0;
    CT_EXPECT_CLOSE(w, twos, 16, 0, 0);
    ct_release(w);
    ct_tensor_dict_free(back);
    CT_EXPECT_INT_EQ(st_dir_entries(dir), 1);

    /* a relative path (temporary in the current directory) */
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) && chdir(dir) == 0) {
        CT_EXPECT_INT_EQ(ct_safetensors_save("rel.safetensors", d1), CT_OK);
        CT_EXPECT_INT_EQ(st_dir_entries("."), 2);
        unlink("rel.safetensors");
        CT_EXPECT(chdir(cwd) == 0);
    }

    free(old);
    free(probe);
    free(ro_file);
    free(ro);
    free(under_file);
    free(missing);
    free(path);
    ct_tensor_dict_free(d1);
    ct_tensor_dict_free(d2);
    st_remove_dir(dir);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_dict_basics);
    CT_RUN(test_dict_many);
    CT_RUN(test_pytorch_fixture);
    CT_RUN(test_reference_bytes);
    CT_RUN(test_roundtrip_cpu);
    CT_RUN(test_roundtrip_devices);
    CT_RUN(test_atomic_save);
    return ct_test_finish();
}
