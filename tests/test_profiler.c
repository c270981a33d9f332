/*
 * test_profiler.c — torch.profiler in C (ctorch/profiler.h): nothing is
 * recorded while it is off; a run records user ranges and every
 * dispatched kernel with its device and input shape, nested inside the
 * ranges that enclose them; the Chrome trace is valid JSON with the
 * events inside their ranges (checked with Python's json module when
 * python3 is installed); the table aggregates calls and sorts; errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch/profiler.h"
#include "testutil.h"

static ct_module *mlp(void) { return CT_SEQUENTIAL(ct_nn_linear(8, 16, true), ct_nn_relu(), ct_nn_linear(16, 4, true)); }

static char *table_text(const char *sort, int limit) {
    static char buf[16384];
    FILE *f = tmpfile();
    if (!f) return strcpy(buf, "");
    ct_profiler_print_table(f, sort, limit);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_off_records_nothing(void) {
    ct_profiler_reset();
    CT_SCOPE { ct_add(ct_ones(CT_SHAPE(3)), ct_ones(CT_SHAPE(3))); }
    CT_RECORD_FUNCTION("ignored") {}
    CT_EXPECT(!ct_profiler_is_enabled());
    CT_EXPECT_INT_EQ(ct_profiler_num_events(), 0);
}

static void profile_training_step(ct_device dev) {
    ct_module *m = ct_module_to(mlp(), dev);
    CT_EXPECT(ct_profiler_start((ct_profiler_opts){0}) == CT_OK);
    CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(5, 8), .device = dev);
        ct_tensor *loss = NULL;
        CT_RECORD_FUNCTION("forward") {
            CT_RECORD_FUNCTION("inner") { loss = ct_sum_all(ct_forward(m, x)); }
        }
        CT_RECORD_FUNCTION("backward") { ct_backward(loss); }
    }
    CT_EXPECT(ct_profiler_stop() == CT_OK);
    ct_module_free(m);
}

static void test_run_records_ranges_and_kernels(void) {
    profile_training_step(ct_device_cpu());
    const int64_t n = ct_profiler_num_events();
    CT_EXPECT_MSG(n >= 10, "%lld events", (long long)n);
    const char *t = table_text("name", 0);
    CT_EXPECT_MSG(strstr(t, "forward ") && strstr(t, "backward ") && strstr(t, "inner "), "%s", t);
    CT_EXPECT_MSG(strstr(t, "matmul"), "no matmul kernel in the table:\n%s", t);
    /* one call of each range */
    const char *row = strstr(t, "\nforward ");
    CT_EXPECT_MSG(row && strtol(row + 41, NULL, 10) == 1, "forward row: %.60s", row ? row + 1 : "(none)");
    /* events after stop are not recorded */
    CT_SCOPE { ct_add(ct_ones(CT_SHAPE(3)), ct_ones(CT_SHAPE(3))); }
    CT_EXPECT_INT_EQ(ct_profiler_num_events(), n);
    /* sorted by count: the first row has the most calls */
    const char *by_count = table_text("count", 1);
    CT_EXPECT_MSG(strstr(by_count, "Kernel time total"), "%s", by_count);
}

/* The trace parses as JSON, every kernel of the forward pass lies inside
 * the "forward" range, and kernels name their device and input shape. */
static void test_chrome_trace(void) {
    profile_training_step(ct_device_cpu());
    char path[] = "/tmp/ct_trace_XXXXXX";
    int fd = mkstemp(path);
    CT_EXPECT(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CT_EXPECT(ct_profiler_export_chrome_trace(path) == CT_OK);
    FILE *f = fopen(path, "r");
    char head[64] = "";
    if (f) (void)!fread(head, 1, sizeof head - 1, f), fclose(f);
    CT_EXPECT_MSG(strncmp(head, "{\"traceEvents\": [", 17) == 0, "%s", head);
    if (system("command -v python3 > /dev/null 2>&1") != 0) {
        ct_test_skip("trace JSON check: no python3");
    } else {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys\n"
                 "ev = json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
                 "fw = [e for e in ev if e[\"name\"] == \"forward\"][0]\n"
                 "ks = [e for e in ev if e[\"cat\"] == \"kernel\" and fw[\"ts\"] <= e[\"ts\"] <= fw[\"ts\"] + fw[\"dur\"]]\n"
                 "assert ks, \"no kernel inside forward\"\n"
                 "assert all(e[\"ts\"] + e[\"dur\"] <= fw[\"ts\"] + fw[\"dur\"] + 1e-3 for e in ks)\n"
                 "assert all(e[\"args\"][\"device\"] == \"cpu\" and e[\"args\"][\"input_shape\"] for e in ks)\n"
                 "assert all(e[\"ph\"] == \"X\" and e[\"dur\"] >= 0 for e in ev)' %s",
                 path);
        CT_EXPECT_MSG(system(cmd) == 0, "the trace in %s failed the JSON checks", path);
    }
    remove(path);
}

/* Kernels on an asynchronous device: recorded with that device's name and
 * their device time (timing events on the stream). */
static void expect_device_kernels(const char *device_name) {
    ct_device dev;
    ct_device_parse(device_name, &dev);
    profile_training_step(dev);
    char path[] = "/tmp/ct_trace_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    close(fd);
    CT_EXPECT(ct_profiler_export_chrome_trace(path) == CT_OK);
    FILE *f = fopen(path, "r");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    char want[64];
    snprintf(want, sizeof want, "\"device\": \"%s\"", device_name);
    CT_EXPECT_MSG(strstr(text, want), "no %s kernel in the trace", device_name);
    CT_EXPECT_MSG(strstr(text, "\"device_time_us\": "), "no device time in the %s trace", device_name);
    CT_EXPECT_MSG(strstr(text, "\"stream\": "), "no stream in the %s trace", device_name);
    const char *t = table_text("cpu_time_total", 0);
    CT_EXPECT_MSG(strstr(t, "Device total(ms)"), "%s", t);
    remove(path);
}

static void test_device_kernels_opencl(void) {
    if (ct_test_opencl_devices("profiler on OpenCL")) expect_device_kernels("opencl:0");
}

static void test_device_kernels_cuda(void) {
    if (ct_test_cuda_devices("profiler on CUDA")) expect_device_kernels("cuda:0");
}

/* profile_memory: a record gets the bytes allocated while it was open; a
 * kernel also gets the outputs its op allocated just before dispatching
 * it (its "Self Mem"), which leaves the enclosing range's self. */
static void test_profile_memory(void) {
    CT_SCOPE {
        ct_tensor *a = ct_ones(CT_SHAPE(1000)); /* float32: the sum needs 4000 bytes */
        CT_EXPECT(ct_profiler_start((ct_profiler_opts){0}) == CT_OK);
        CT_RECORD_FUNCTION("allocates") { ct_add(a, a); }
        CT_RECORD_FUNCTION("allocates_nothing") { ct_add_(a, a); }
        CT_EXPECT(ct_profiler_stop() == CT_OK);
    }
    const char *t = table_text("name", 0);
    CT_EXPECT_MSG(strstr(t, "Self Mem") && strstr(t, "3.91 Kb"), "%s", t);
    char path[] = "/tmp/ct_trace_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    close(fd);
    CT_EXPECT(ct_profiler_export_chrome_trace(path) == CT_OK);
    if (system("command -v python3 > /dev/null 2>&1") != 0) {
        ct_test_skip("profile_memory JSON check: no python3");
    } else {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys\n"
                 "evs = json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
                 "ev = {e[\"name\"]: e[\"args\"] for e in evs if e[\"cat\"] != \"kernel\"}\n"
                 "ks = [e[\"args\"] for e in sorted(evs, key=lambda e: e[\"ts\"]) if e[\"cat\"] == \"kernel\"]\n"
                 "assert ev[\"allocates\"][\"bytes_allocated\"] == 4000, ev\n"
                 "assert ev[\"allocates\"][\"self_bytes_allocated\"] == 0, ev\n"
                 "assert ks[0][\"self_bytes_allocated\"] == 4000, ks\n"
                 "assert ev[\"allocates_nothing\"][\"bytes_allocated\"] == 0, ev\n"
                 "assert ks[1][\"bytes_allocated\"] == 0, ks' %s",
                 path);
        CT_EXPECT_MSG(system(cmd) == 0, "the trace in %s failed the profile_memory checks", path);
    }
    remove(path);
}

static void test_errors(void) {
    ct_profiler_reset();
    CT_EXPECT_INT_EQ(ct_profiler_stop(), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "no profiling run to stop");
    CT_EXPECT(ct_profiler_start((ct_profiler_opts){.no_shapes = true}) == CT_OK);
    CT_EXPECT_INT_EQ(ct_profiler_start((ct_profiler_opts){0}), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "already going");
    ct_record_function_pop(); /* unpaired: ignored */
    CT_EXPECT(ct_profiler_stop() == CT_OK);
    CT_EXPECT_INT_EQ(ct_profiler_print_table(stdout, "flops", 5), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "unknown sort_by 'flops'");
    CT_EXPECT_INT_EQ(ct_profiler_export_chrome_trace("/nonexistent-dir/trace.json"), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "cannot write /nonexistent-dir/trace.json");
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_off_records_nothing);
    CT_RUN(test_run_records_ranges_and_kernels);
    CT_RUN(test_chrome_trace);
    CT_RUN(test_device_kernels_opencl);
    CT_RUN(test_device_kernels_cuda);
    CT_RUN(test_profile_memory);
    CT_RUN(test_errors);
    ct_profiler_reset();
    return ct_test_finish();
}
