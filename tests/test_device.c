/*
 * test_device.c — device strings, the backend registry and the torch.cuda-
 * style queries.
 *
 * The tests ask ct_device_type_available() before assuming a backend is
 * absent, so they stay right when CUDA or OpenCL are compiled in: an absent
 * backend must report "not compiled with … enabled", a present one must
 * reject a bad ordinal and name the ordinals that exist.
 */
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "testutil.h"

static void expect_parse(const char *str, ct_device_type type, int index) {
    ct_device d = {CT_DEVICE_OPENCL, 12345};
    ct_status s = ct_device_parse(str, &d);
    CT_EXPECT_MSG(s == CT_OK, "ct_device_parse(\"%s\") failed: %s", str, ct_last_error());
    CT_EXPECT_MSG(d.type == type && d.index == index,
                  "ct_device_parse(\"%s\") = {%d, %d}, expected {%d, %d}", str, (int)d.type,
                  d.index, (int)type, index);
}

static void test_parse_valid(void) {
    ct_device d = {CT_DEVICE_OPENCL, 12345};
    CT_EXPECT_INT_EQ(ct_device_parse("cpu", &d), CT_OK);
    /* torch.device("cpu") has no index: either 0 or "current" is fine. */
    CT_EXPECT(d.type == CT_DEVICE_CPU && (d.index == 0 || d.index == -1));
    expect_parse("cpu:0", CT_DEVICE_CPU, 0);
    expect_parse("cuda", CT_DEVICE_CUDA, -1);
    expect_parse("cuda:0", CT_DEVICE_CUDA, 0);
    expect_parse("cuda:1", CT_DEVICE_CUDA, 1);
    expect_parse("cuda:12", CT_DEVICE_CUDA, 12);
    expect_parse("opencl", CT_DEVICE_OPENCL, -1);
    expect_parse("opencl:0", CT_DEVICE_OPENCL, 0);
    expect_parse("opencl:3", CT_DEVICE_OPENCL, 3);
}

/* Each bad string fails with a message that names it, in torch's wording. */
static void expect_parse_error(const char *str, const char *needle) {
    ct_device d = {CT_DEVICE_OPENCL, 7};
    ct_clear_error();
    ct_status s = ct_device_parse(str, &d);
    CT_EXPECT_MSG(s != CT_OK, "ct_device_parse(\"%s\") should fail", str);
    CT_EXPECT_MSG(s == ct_last_status(), "returned status %s but last status %s",
                  ct_status_str(s), ct_status_str(ct_last_status()));
    CT_EXPECT_MSG(s == CT_ERR_INVALID_ARG,
                  "ct_device_parse(\"%s\") returned %s", str, ct_status_str(s));
    CT_EXPECT_MSG(strstr(ct_last_error(), needle) != NULL,
                  "ct_device_parse(\"%s\"): message \"%s\" lacks \"%s\"", str, ct_last_error(),
                  needle);
    ct_clear_error();
}

static void test_parse_errors(void) {
    expect_parse_error("", "Device string must not be empty");
    expect_parse_error("cuda:01", "Invalid device string: 'cuda:01'");
    expect_parse_error("cuda:-1", "Invalid device string: 'cuda:-1'");
    expect_parse_error("cuda:", "Invalid device string: 'cuda:'");
    expect_parse_error("cuda:1x", "Invalid device string: 'cuda:1x'");
    expect_parse_error("cuda:+1", "Invalid device string: 'cuda:+1'");
    expect_parse_error("cuda: 1", "Invalid device string: 'cuda: 1'");
    expect_parse_error("cuda:1:2", "Invalid device string: 'cuda:1:2'");
    expect_parse_error("cuda:99999999999999999999", "Invalid device string");
    expect_parse_error("gpu",
                       "Expected one of cpu, cuda, opencl device type at start of device string: gpu");
    expect_parse_error("CUDA", "device type at start of device string: CUDA");
    expect_parse_error("cudax", "device type at start of device string: cudax");
    expect_parse_error(" cpu", "device string");
    expect_parse_error(":0", "device string");

    ct_device d;
    ct_clear_error();
    CT_EXPECT(ct_device_parse(NULL, &d) != CT_OK);
    CT_EXPECT(ct_last_status() != CT_OK);
    ct_clear_error();
    CT_EXPECT(ct_device_parse("cpu", NULL) != CT_OK);
    ct_clear_error();
}

static void test_format_round_trip(void) {
    static const char *strs[] = {"cpu", "cuda", "cuda:0", "cuda:1", "cuda:15", "opencl", "opencl:0",
                                 "opencl:3"};
    char buf[32];
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        ct_device d;
        CT_EXPECT_INT_EQ(ct_device_parse(strs[i], &d), CT_OK);
        CT_EXPECT(ct_device_format(d, buf, sizeof buf) == buf);
        CT_EXPECT_STR_EQ(buf, strs[i]);
        ct_device again;
        CT_EXPECT_INT_EQ(ct_device_parse(buf, &again), CT_OK);
        CT_EXPECT(ct_device_equal(d, again));
    }
    CT_EXPECT_STR_EQ(ct_device_format(ct_device_cpu(), buf, sizeof buf), "cpu");
    CT_EXPECT_STR_EQ(ct_device_format(ct_device_cuda(2), buf, sizeof buf), "cuda:2");
    CT_EXPECT_STR_EQ(ct_device_format(ct_device_cuda(-1), buf, sizeof buf), "cuda");
    CT_EXPECT_STR_EQ(ct_device_format(ct_device_opencl(0), buf, sizeof buf), "opencl:0");

    /* truncation follows snprintf: terminated, nothing written past size */
    char small[8];
    memset(small, 'Z', sizeof small);
    ct_device_format(ct_device_opencl(12), small, 4);
    CT_EXPECT_STR_EQ(small, "ope");
    CT_EXPECT(small[4] == 'Z');
}

static void test_type_names_and_equality(void) {
    CT_EXPECT_STR_EQ(ct_device_type_name(CT_DEVICE_CPU), "cpu");
    CT_EXPECT_STR_EQ(ct_device_type_name(CT_DEVICE_CUDA), "cuda");
    CT_EXPECT_STR_EQ(ct_device_type_name(CT_DEVICE_OPENCL), "opencl");
    CT_EXPECT(ct_device_equal(ct_device_cpu(), ct_device_cpu()));
    CT_EXPECT(ct_device_equal(ct_device_cuda(1), ct_device_cuda(1)));
    CT_EXPECT(!ct_device_equal(ct_device_cuda(0), ct_device_cuda(1)));
    CT_EXPECT(!ct_device_equal(ct_device_cuda(0), ct_device_opencl(0)));
    CT_EXPECT(!ct_device_equal(ct_device_cpu(), ct_device_cuda(0)));
}

static void test_cpu_always_available(void) {
    CT_EXPECT(ct_device_type_available(CT_DEVICE_CPU));
    CT_EXPECT_INT_EQ(ct_device_count(CT_DEVICE_CPU), 1);
    ct_device r = {CT_DEVICE_CUDA, 5};
    CT_EXPECT_INT_EQ(ct_device_check(ct_device_cpu(), &r), CT_OK);
    CT_EXPECT(r.type == CT_DEVICE_CPU && r.index == 0);
    ct_device cur = {CT_DEVICE_CPU, -1};
    r.index = 5;
    CT_EXPECT_INT_EQ(ct_device_check(cur, &r), CT_OK);
    CT_EXPECT(r.type == CT_DEVICE_CPU && r.index == 0);

    ct_device bad = {CT_DEVICE_CPU, 1};
    ct_clear_error();
    CT_EXPECT(ct_device_check(bad, &r) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "cpu");

    char name[128] = "";
    CT_EXPECT_INT_EQ(ct_device_name(ct_device_cpu(), name, sizeof name), CT_OK);
    CT_EXPECT(name[0] != '\0');
    CT_EXPECT_INT_EQ(ct_device_synchronize(ct_device_cpu()), CT_OK);

    ct_tensor *t = ct_zeros(CT_SHAPE(2), .device = cur);
    CT_EXPECT(t != NULL);
    if (t) {
        CT_EXPECT(ct_device_of(t).type == CT_DEVICE_CPU && ct_device_of(t).index == 0);
        CT_EXPECT(ct_data_ptr(t) != NULL);
    }
    ct_release(t);
}

static const char *backend_label(ct_device_type type) {
    return type == CT_DEVICE_CUDA ? "CUDA" : "OpenCL";
}

/* An absent backend: every use names the missing build option. */
static void check_absent_backend(ct_device_type type) {
    /* Compiled in without devices (a CUDA build on a machine without a GPU)
     * or not compiled at all: each has its own message. */
    char needle[64];
    if (ct_backend_for(type))
        snprintf(needle, sizeof needle, "no %s devices are available", backend_label(type));
    else
        snprintf(needle, sizeof needle, "not compiled with %s enabled", backend_label(type));
    ct_device dev = {type, 0};
    CT_EXPECT_INT_EQ(ct_device_count(type), 0);

    ct_device r;
    ct_clear_error();
    CT_EXPECT(ct_device_check(dev, &r) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);

    ct_tensor *t = ct_zeros(CT_SHAPE(2, 3), .device = dev);
    CT_EXPECT(t == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    ct_release(t);

    ct_tensor *c = ct_ones(CT_SHAPE(3));
    ct_tensor *moved = ct_to_device(c, dev);
    CT_EXPECT(moved == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    ct_release(moved);
    ct_release(c);

    CT_EXPECT(ct_set_device(dev) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    CT_EXPECT(ct_device_synchronize(dev) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    char name[64];
    CT_EXPECT(ct_device_name(dev, name, sizeof name) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
}

/* A present backend: a bad ordinal is rejected with the valid range. */
static void check_present_backend(ct_device_type type) {
    int n = ct_device_count(type);
    CT_EXPECT(n >= 1);
    ct_device bad = {type, 99}, r;
    char needle[32];
    snprintf(needle, sizeof needle, "%d", n > 1 ? n - 1 : 0);
    ct_clear_error();
    CT_EXPECT(ct_device_check(bad, &r) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "99");
    CT_EXPECT(ct_device_check(bad, &r) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    ct_tensor *t = ct_zeros(CT_SHAPE(2), .device = bad);
    CT_EXPECT(t == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "99");
    ct_release(t);
    CT_EXPECT(ct_set_device(bad) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "99");

    ct_device good = {type, 0};
    CT_EXPECT_INT_EQ(ct_device_check(good, &r), CT_OK);
    CT_EXPECT(r.type == type && r.index == 0);
    t = ct_zeros(CT_SHAPE(2), .device = good);
    CT_EXPECT(t != NULL && ct_device_of(t).type == type);
    ct_release(t);
}

static void test_accelerator_backends(void) {
    ct_device_type types[2] = {CT_DEVICE_CUDA, CT_DEVICE_OPENCL};
    for (int i = 0; i < 2; i++) {
        if (ct_device_type_available(types[i]))
            check_present_backend(types[i]);
        else
            check_absent_backend(types[i]);
    }
}

static void test_cuda_queries(void) {
    bool avail = ct_device_type_available(CT_DEVICE_CUDA);
    CT_EXPECT(ct_cuda_is_available() == avail);
    CT_EXPECT_INT_EQ(ct_cuda_device_count(), ct_device_count(CT_DEVICE_CUDA));
    char name[128];
    if (!avail) {
        /* with the backend built, the message says why (no driver, no GPU, CUDA_VISIBLE_DEVICES) */
        const char *needle = ct_backend_for(CT_DEVICE_CUDA) ? "no CUDA devices are available: "
                                                           : "not compiled with CUDA enabled";
        CT_EXPECT_INT_EQ(ct_cuda_device_count(), 0);
        CT_EXPECT(ct_cuda_set_device(0) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
        CT_EXPECT(ct_cuda_get_device_name(0, name, sizeof name) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, needle);
    } else {
        CT_EXPECT_INT_EQ(ct_cuda_get_device_name(0, name, sizeof name), CT_OK);
        CT_EXPECT(name[0] != '\0');
        CT_EXPECT(ct_cuda_set_device(ct_cuda_device_count()) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "");
        CT_EXPECT_INT_EQ(ct_cuda_current_device(), 0);
    }
}

static void test_try_gpu(void) {
    int n = ct_cuda_device_count();
    ct_device d = ct_try_gpu(0);
    if (n == 0) {
        CT_EXPECT(d.type == CT_DEVICE_CPU);
    } else {
        CT_EXPECT(d.type == CT_DEVICE_CUDA && d.index == 0);
    }
    d = ct_try_gpu(n); /* one past the last GPU: always cpu */
    CT_EXPECT(d.type == CT_DEVICE_CPU);
    d = ct_try_gpu(1000);
    CT_EXPECT(d.type == CT_DEVICE_CPU);

    ct_device all[8];
    for (int i = 0; i < 8; i++) all[i] = ct_device_opencl(77);
    int got = ct_try_all_gpus(all, 8);
    if (n == 0) {
        CT_EXPECT_INT_EQ(got, 1);
        CT_EXPECT(all[0].type == CT_DEVICE_CPU);
    } else {
        CT_EXPECT_INT_EQ(got, n < 8 ? n : 8);
        for (int i = 0; i < got; i++) CT_EXPECT(all[i].type == CT_DEVICE_CUDA && all[i].index == i);
    }
    CT_EXPECT(all[got].index == 77 || got == 8); /* nothing written past the count */
    CT_EXPECT_INT_EQ(ct_try_all_gpus(all, 0), 0);
}

static void test_set_device(void) {
    CT_EXPECT_INT_EQ(ct_current_device(CT_DEVICE_CPU), 0);
    CT_EXPECT_INT_EQ(ct_set_device(ct_device_cpu()), CT_OK);
    CT_EXPECT_INT_EQ(ct_current_device(CT_DEVICE_CPU), 0);
    ct_device bad = {CT_DEVICE_CPU, 3};
    ct_clear_error();
    CT_EXPECT(ct_set_device(bad) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "3");
    CT_EXPECT_INT_EQ(ct_current_device(CT_DEVICE_CPU), 0);
    ct_device cuda_bad = {CT_DEVICE_CUDA, 99};
    CT_EXPECT(ct_set_device(cuda_bad) != CT_OK);
    CT_EXPECT(ct_last_status() == CT_ERR_DEVICE);
    ct_clear_error();
    if (ct_cuda_is_available()) {
        CT_EXPECT_INT_EQ(ct_current_device(CT_DEVICE_CUDA), 0);
    } else { /* torch.cuda.current_device() raises without a device */
        CT_EXPECT_INT_EQ(ct_current_device(CT_DEVICE_CUDA), -1);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "current_device: no cuda devices are available");
        CT_EXPECT_INT_EQ(ct_cuda_current_device(), -1);
        ct_clear_error();
    }
}

static void test_best_device(void) {
    ct_device best = ct_best_device();
    if (ct_device_type_available(CT_DEVICE_CUDA))
        CT_EXPECT(best.type == CT_DEVICE_CUDA && best.index == 0);
    else if (ct_device_type_available(CT_DEVICE_OPENCL))
        CT_EXPECT(best.type == CT_DEVICE_OPENCL && best.index == 0);
    else
        CT_EXPECT(best.type == CT_DEVICE_CPU && best.index == 0);
    /* whatever it picks must be usable */
    ct_tensor *t = ct_ones(CT_SHAPE(3), .device = best);
    CT_EXPECT(t != NULL);
    ct_scope_begin();
    if (t) CT_EXPECT_NEAR(ct_item(ct_narrow(t, 0, 2, 1)), 1.0, 0);
    ct_scope_end();
    ct_release(t);
}

/* get_device_properties: the cpu and every OpenCL device report a name,
 * memory and cores; PoCL devices run on the host. */
static void test_device_properties(void) {
    ct_device_properties p;
    CT_EXPECT_INT_EQ(ct_get_device_properties(ct_device_cpu(), &p), CT_OK);
    CT_EXPECT_STR_EQ(p.name, "cpu");
    CT_EXPECT(p.is_host);
    CT_EXPECT(p.total_memory > ((size_t)64 << 20));
    CT_EXPECT(p.multi_processor_count >= 1);
    int n = ct_device_count(CT_DEVICE_OPENCL);
    for (int i = 0; i < n; i++) {
        char name[256];
        CT_EXPECT_INT_EQ(ct_get_device_properties(ct_device_opencl(i), &p), CT_OK);
        CT_EXPECT_INT_EQ(ct_device_name(ct_device_opencl(i), name, sizeof name), CT_OK);
        CT_EXPECT_STR_EQ(p.name, name);
        CT_EXPECT(p.total_memory > 0);
        CT_EXPECT(p.major >= 1);
        CT_EXPECT(p.multi_processor_count >= 1);
        if (strncmp(name, "pthread", 7) == 0 || strncmp(name, "cpu", 3) == 0) CT_EXPECT(p.is_host);
    }
    CT_EXPECT_INT_EQ(ct_get_device_properties(ct_device_opencl(n + 3), &p), CT_ERR_DEVICE);
    CT_EXPECT_INT_EQ(ct_get_device_properties(ct_device_cuda(0), &p),
                     ct_cuda_is_available() ? CT_OK : CT_ERR_DEVICE);
    CT_EXPECT_INT_EQ(ct_get_device_properties(ct_device_cpu(), NULL), CT_ERR_INVALID_ARG);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_parse_valid);
    CT_RUN(test_parse_errors);
    CT_RUN(test_format_round_trip);
    CT_RUN(test_type_names_and_equality);
    CT_RUN(test_cpu_always_available);
    CT_RUN(test_accelerator_backends);
    CT_RUN(test_cuda_queries);
    CT_RUN(test_try_gpu);
    CT_RUN(test_set_device);
    CT_RUN(test_best_device);
    CT_RUN(test_device_properties);
    return ct_test_finish();
}
