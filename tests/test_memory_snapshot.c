/*
 * test_memory_snapshot.c — memory history and snapshots (ctorch/memory.h:
 * ct_memory_record_history, ct_memory_dump_snapshot) and the out-of-memory
 * message that names the largest live tensors.
 *
 * On PoCL (opencl:0): a training-like step under ranges, then an
 * allocation past a per-process memory fraction fails; the message names
 * the largest live tensor's size, shape, dtype, op and range, this
 * process's memory in use and what to do. The snapshot file is valid JSON
 * (python3's json module) listing that block with its op and the OOM in
 * the history; with history off nothing new is recorded. Error rows run on
 * the CPU as well.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctorch/profiler.h"
#include "testutil.h"

#define MiB ((size_t)1 << 20)

static bool temp_path(char *path, size_t size) {
    snprintf(path, size, "/tmp/ct_memsnap_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return false;
    close(fd);
    return true;
}

/* python3 checks on the snapshot at path; skipped without python3. */
static void expect_json(const char *path, const char *checks) {
    if (system("command -v python3 > /dev/null 2>&1") != 0) {
        ct_test_skip("snapshot JSON check: no python3");
        return;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys\ns = json.load(open(sys.argv[1]))\n%s' %s", checks, path);
    CT_EXPECT_MSG(system(cmd) == 0, "the snapshot %s failed the JSON checks:\n%s", path, checks);
}

/* A block of the structured snapshot with a context of this shape. */
static bool find_context(ct_device dev, int64_t d0, int64_t d1, ct_alloc_context *out) {
    ct_segment_info *segs = NULL;
    int n = 0;
    bool found = false;
    if (ct_memory_snapshot(dev, &segs, &n) != CT_OK) return false;
    for (int i = 0; i < n && !found; i++)
        for (int j = 0; j < segs[i].num_blocks && !found; j++) {
            const ct_block_info *b = &segs[i].blocks[j];
            if (b->state == CT_BLOCK_ACTIVE_ALLOCATED && b->has_context && b->context.ndim == 2 &&
                b->context.shape[0] == d0 && b->context.shape[1] == d1)
                found = true, *out = b->context;
        }
    ct_memory_snapshot_free(segs, n);
    return found;
}

/* title: "OpenCL" or "CUDA", as the OOM message names the device. */
static void oom_names_largest_tensor_and_snapshot(ct_device dev, const char *title) {
    char devname[32], want[128];
    ct_device_format(dev, devname, sizeof devname);
    CT_EXPECT(ct_empty_cache(dev) == CT_OK);
    CT_EXPECT(ct_memory_record_history(true, 1000) == CT_OK);
    CT_SCOPE {
        ct_tensor *y = NULL;
        CT_RECORD_FUNCTION("train_step") {
            ct_tensor *a = ct_randn(CT_SHAPE(256, 64), .device = dev);
            ct_tensor *b = ct_randn(CT_SHAPE(64, 16384), .device = dev);
            CT_RECORD_FUNCTION("forward") { y = ct_matmul(a, b); } /* 16 MiB: the largest */
        }
        CT_EXPECT(y != NULL);
        ct_alloc_context ctx;
        CT_EXPECT_MSG(find_context(dev, 256, 16384, &ctx), "no block with the context of y");
        CT_EXPECT_MSG(!strcmp(ctx.op, "matmul"), "op '%s'", ctx.op);
        CT_EXPECT_MSG(!strcmp(ctx.range, "train_step > forward"), "range '%s'", ctx.range);
        CT_EXPECT_INT_EQ(ctx.dtype, CT_FLOAT32);
        CT_EXPECT_MSG(find_context(dev, 64, 16384, &ctx) && ctx.op[0] && !strcmp(ctx.range, "train_step"),
                      "b: op '%s' range '%s'", ctx.op, ctx.range);

        /* a 64 MiB request past a limit of what is reserved + 32 MiB */
        size_t free_b = 0, total_b = 0;
        CT_EXPECT(ct_mem_get_info(dev, &free_b, &total_b) == CT_OK);
        double frac = (double)((size_t)ct_memory_reserved(dev) + 32 * MiB) / (double)total_b;
        CT_EXPECT(ct_set_per_process_memory_fraction(frac, dev) == CT_OK);
        ct_clear_error();
        ct_tensor *big = ct_zeros(CT_SHAPE(4096, 4096), .device = dev);
        CT_EXPECT(big == NULL);
        CT_EXPECT_INT_EQ(ct_last_status(), CT_ERR_OOM);
        const char *msg = ct_last_error();
        snprintf(want, sizeof want, "%s out of memory. Tried to allocate 64.00 MiB", title);
        CT_EXPECT_MSG(strstr(msg, want), "%s", msg);
        CT_EXPECT_MSG(strstr(msg, "memory in use"), "%s", msg);
        CT_EXPECT_MSG(strstr(msg, "Largest live tensors: 16.00 MiB float32 [256, 16384] from matmul in range "
                                  "'train_step > forward'; "),
                      "%s", msg);
        CT_EXPECT_MSG(strstr(msg, "4.00 MiB float32 [64, 16384] from "), "%s", msg);
        CT_EXPECT_MSG(strstr(msg, "ct_empty_cache()") && strstr(msg, "release tensors you no longer need") &&
                          strstr(msg, "smaller batch") && strstr(msg, "ct_set_per_process_memory_fraction()"),
                      "%s", msg);
        CT_EXPECT_MSG(strlen(msg) < 2000, "message of %zu characters", strlen(msg));
        ct_clear_error();

        char path[64];
        CT_EXPECT(temp_path(path, sizeof path));
        CT_EXPECT(ct_memory_dump_snapshot(dev, path) == CT_OK);
        expect_json(path,
                    "blocks = [b for g in s[\"segments\"] for b in g[\"blocks\"]]\n"
                    "y = [b for b in blocks if b.get(\"shape\") == [256, 16384]]\n"
                    "assert len(y) == 1, y\n"
                    "y = y[0]\n"
                    "assert y[\"state\"] == \"active_allocated\" and y[\"op\"] == \"matmul\", y\n"
                    "assert y[\"dtype\"] == \"float32\" and y[\"size\"] == 16 << 20, y\n"
                    "assert [f[\"name\"] for f in y[\"frames\"]] == [\"matmul\", \"forward\", \"train_step\"], y\n"
                    "assert any(b[\"state\"] == \"inactive\" for b in blocks)\n"
                    "g = s[\"segments\"][0]\n"
                    "assert g[\"segment_type\"] in (\"small\", \"large\") and g[\"total_size\"] > 0\n"
                    "tr = s[\"device_traces\"][0]\n"
                    "assert any(e[\"action\"] == \"oom\" and e[\"size\"] == 64 << 20 for e in tr), tr[-3:]\n"
                    "assert any(e[\"action\"] == \"alloc\" and e.get(\"op\") == \"matmul\" for e in tr)\n"
                    "assert s[\"allocator_settings\"][\"record_history\"]");
        snprintf(want, sizeof want, "assert s[\"device\"] == \"%s\", s[\"device\"]", devname);
        expect_json(path, want);
        remove(path);
        CT_EXPECT(ct_set_per_process_memory_fraction(1.0, dev) == CT_OK);
    }
    /* the frees are in the history too */
    char path[64];
    CT_EXPECT(temp_path(path, sizeof path));
    CT_EXPECT(ct_memory_dump_snapshot(dev, path) == CT_OK);
    expect_json(path, "tr = s[\"device_traces\"][0]\n"
                      "assert any(e[\"action\"] == \"free_completed\" and e.get(\"shape\") == [256, 16384] for e in tr)\n"
                      "assert not any(b[\"state\"] == \"active_allocated\" and b.get(\"shape\") == [256, 16384]\n"
                      "               for g in s[\"segments\"] for b in g[\"blocks\"])");
    remove(path);
    CT_EXPECT(ct_memory_record_history(false, 0) == CT_OK);
    CT_EXPECT(ct_empty_cache(dev) == CT_OK);
}

static void test_oom_names_largest_tensor_and_snapshot(void) {
    if (ct_test_opencl_devices("memory history on OpenCL")) oom_names_largest_tensor_and_snapshot(ct_device_opencl(0), "OpenCL");
}

static void test_oom_and_snapshot_on_cuda(void) {
    if (ct_test_cuda_devices("memory history on CUDA")) oom_names_largest_tensor_and_snapshot(ct_device_cuda(0), "CUDA");
}

/* With history off a new block gets no context and no event; the OOM
 * message lists block sizes and says how to get more. */
static void test_history_off_records_nothing(void) {
    if (!ct_test_opencl_devices("memory history off on OpenCL")) return;
    ct_device dev;
    ct_device_parse("opencl:0", &dev);
    CT_EXPECT(ct_memory_record_history(true, 0) == CT_OK); /* a fresh, empty history */
    CT_EXPECT(ct_memory_record_history(false, 0) == CT_OK);
    CT_SCOPE {
        ct_tensor *t = ct_ones(CT_SHAPE(3, 77), .device = dev);
        CT_EXPECT(t != NULL);
        ct_alloc_context ctx;
        CT_EXPECT(!find_context(dev, 3, 77, &ctx));
        char path[64];
        CT_EXPECT(temp_path(path, sizeof path));
        CT_EXPECT(ct_memory_dump_snapshot(dev, path) == CT_OK);
        expect_json(path, "assert s[\"device_traces\"] == [[]], s[\"device_traces\"]\n"
                          "assert not s[\"allocator_settings\"][\"record_history\"]\n"
                          "assert all(b[\"frames\"] == [] and \"op\" not in b\n"
                          "           for g in s[\"segments\"] for b in g[\"blocks\"])");
        remove(path);
        CT_EXPECT(ct_set_per_process_memory_fraction(0.0, dev) == CT_OK);
        CT_EXPECT(ct_ones(CT_SHAPE(1 << 20), .device = dev) == NULL);
        CT_EXPECT_ERROR(CT_ERR_OOM, "Largest live blocks: ");
        CT_EXPECT(ct_set_per_process_memory_fraction(1.0, dev) == CT_OK);
    }
    CT_EXPECT(ct_empty_cache(dev) == CT_OK);
}

static void test_errors(void) {
    CT_EXPECT_INT_EQ(ct_memory_record_history(true, -1), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "max_entries must be >= 0 (0: the default 10000), got -1");
    CT_EXPECT_INT_EQ(ct_memory_dump_snapshot(ct_device_cpu(), "/tmp/ct_never.json"), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "Expected a cuda or opencl device, but got: cpu");
    CT_EXPECT_INT_EQ(ct_memory_dump_snapshot(ct_device_cpu(), NULL), CT_ERR_INVALID_ARG);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "memory_dump_snapshot: NULL path");
    ct_device bad = {CT_DEVICE_OPENCL, 99};
    CT_EXPECT(ct_memory_dump_snapshot(bad, "/tmp/ct_never.json") != CT_OK);
    /* names the ordinal, or says the build has no OpenCL at all */
    CT_EXPECT_MSG(strstr(ct_last_error(), "99") || strstr(ct_last_error(), "not compiled with OpenCL"), "%s",
                  ct_last_error());
    ct_clear_error();
    if (!ct_test_opencl_devices("snapshot errors on OpenCL")) return;
    ct_device dev;
    ct_device_parse("opencl:0", &dev);
    CT_EXPECT_INT_EQ(ct_memory_dump_snapshot(dev, "/nonexistent-dir/snap.json"), CT_ERR_IO);
    CT_EXPECT_ERROR(CT_ERR_IO, "memory_dump_snapshot: cannot write /nonexistent-dir/snap.json");
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_oom_names_largest_tensor_and_snapshot);
    CT_RUN(test_oom_and_snapshot_on_cuda);
    CT_RUN(test_history_off_records_nothing);
    CT_RUN(test_errors);
    return ct_test_finish();
}
