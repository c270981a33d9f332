/*
 * memory_snapshot.c — ct_memory_dump_snapshot (ctorch/memory.h): a device's
 * segments and blocks, with what made each block and the recorded event
 * history, as the JSON of PyTorch's torch.cuda.memory._dump_snapshot, so a
 * script (or a port of PyTorch's memory_viz) can find what holds memory.
 *
 * The file is written next to its target and renamed over it, so a reader
 * never sees half a snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mem_history.h"
#include "runtime.h"

static const char *state_name(ct_block_state s) {
    return s == CT_BLOCK_ACTIVE_ALLOCATED      ? "active_allocated"
           : s == CT_BLOCK_ACTIVE_PENDING_FREE ? "active_pending_free"
                                               : "inactive";
}

static void write_block(FILE *f, const ct_segment_info *seg, const ct_block_info *b, bool first) {
    fprintf(f, "%s\n      {\"address\": %llu, \"offset\": %llu, \"size\": %llu, \"requested_size\": %llu, "
               "\"state\": \"%s\"",
            first ? "" : ",", (unsigned long long)b->address, (unsigned long long)(b->address - seg->address),
            (unsigned long long)b->size, (unsigned long long)b->requested_size, state_name(b->state));
    if (b->has_context && b->state != CT_BLOCK_INACTIVE) {
        cti_mem_history_write_context(f, &b->context);
        fprintf(f, ", \"time_us\": %lld", (long long)b->context.time_us);
    } else {
        fputs(", \"frames\": []", f);
    }
    fputc('}', f);
}

static void write_segment(FILE *f, const ct_segment_info *seg, const char *device, bool first) {
    fprintf(f, "%s\n    {\"device\": \"%s\", \"address\": %llu, \"total_size\": %llu, \"allocated_size\": %llu, "
               "\"active_size\": %llu, \"requested_size\": %llu, \"stream\": %llu, \"segment_type\": \"%s\", "
               "\"blocks\": [",
            first ? "" : ",", device, (unsigned long long)seg->address, (unsigned long long)seg->total_size,
            (unsigned long long)seg->allocated_size, (unsigned long long)seg->active_size,
            (unsigned long long)seg->requested_size, (unsigned long long)(uintptr_t)seg->stream,
            seg->is_large ? "large" : "small");
    for (int i = 0; i < seg->num_blocks; i++) write_block(f, seg, &seg->blocks[i], i == 0);
    fputs("]}", f);
}

static void write_snapshot(FILE *f, ct_device dev, const ct_segment_info *segs, int n) {
    char device[32];
    ct_device_format(dev, device, sizeof device);
    fprintf(f, "{\"device\": \"%s\",\n  \"segments\": [", device);
    for (int i = 0; i < n; i++) write_segment(f, &segs[i], device, i == 0);
    fputs(n ? "\n  ],\n  \"device_traces\": [" : "],\n  \"device_traces\": [", f);
    cti_mem_history_write_trace(f, dev);
    fprintf(f, "],\n  \"allocator_settings\": {\"record_history\": %s}}\n", cti_mem_history_on() ? "true" : "false");
}

ct_status ct_memory_dump_snapshot(ct_device dev, const char *path) {
    CT_CHECK_STATUS(path != NULL, CT_ERR_INVALID_ARG, "memory_dump_snapshot: NULL path");
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    if (!ct_backend_for(d.type)->uses_caching_allocator) {
        char name[32];
        return ct_error_set(CT_ERR_DEVICE,
                            "memory_dump_snapshot: Expected a cuda or opencl device, but got: %s (only devices with "
                            "the caching allocator have segments and block history)",
                            ct_device_format(d, name, sizeof name));
    }
    char tmp[4096];
    CT_CHECK_STATUS(strlen(path) + 8 < sizeof tmp, CT_ERR_INVALID_ARG, "memory_dump_snapshot: path too long");
    ct_segment_info *segs = NULL;
    int n = 0;
    CT_TRY(ct_memory_snapshot(d, &segs, &n));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ct_memory_snapshot_free(segs, n);
        return ct_error_set(CT_ERR_IO, "memory_dump_snapshot: cannot write %s", path);
    }
    write_snapshot(f, d, segs, n);
    ct_memory_snapshot_free(segs, n);
    const bool ok = !ferror(f) && fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return ct_error_set(CT_ERR_IO, "memory_dump_snapshot: writing %s failed", path);
    }
    return CT_OK;
}
