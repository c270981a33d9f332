/*
 * test_device_runtime.c — PyTorch's device semantics on real asynchronous
 * devices (OpenCL: PoCL here; CUDA when a GPU is present): streams run
 * independently until ordered, record_stream delays reuse, allocator
 * statistics follow a scripted sequence exactly, out-of-memory under a
 * memory fraction reports and recovers, empty_cache returns memory, and
 * non_blocking copies from pinned memory are asynchronous and correct.
 *
 * To make "still running" deterministic, the tests hold a stream: on OpenCL
 * a barrier on a user event, on CUDA a host function waiting for a flag
 * (cuda_testutil.h), so nothing queued after it can run until the test
 * releases it. Every test runs on opencl:0 and on cuda:0, for each backend
 * that is built and has a device; skips (exit 77) when neither has one.
 */
#define _POSIX_C_SOURCE 200809L /* setenv (cuda_testutil.h) */
#include "testutil.h"

#include "core/runtime.h"
#include "core/tensor_impl.h"

#if defined(CTORCH_TEST_OPENCL) || defined(CTORCH_TEST_CUDA)
#ifdef CTORCH_TEST_OPENCL
#include "backends/opencl/cl_internal.h"
#endif
#ifdef CTORCH_TEST_CUDA
#include "cuda_testutil.h"
#endif

static ct_device g_dev;

typedef struct hold {
#ifdef CTORCH_TEST_OPENCL
    cl_event user;
#endif
#ifdef CTORCH_TEST_CUDA
    ct_cu_gate *gate;
#endif
    int unused_;
} hold;

/* Block stream s: work enqueued on it after this waits for hold_release. */
static hold hold_stream(ct_stream *s) {
    hold h = {0};
#ifdef CTORCH_TEST_CUDA
    if (s->device.type == CT_DEVICE_CUDA) {
        h.gate = ct_cu_hold(s);
        return h;
    }
#endif
#ifdef CTORCH_TEST_OPENCL
    cl_int err;
    h.user = clCreateUserEvent(ct_cl_context(s->device.index), &err);
    if (err == CL_SUCCESS) err = clEnqueueBarrierWithWaitList((cl_command_queue)s->handle, 1, &h.user, NULL);
    if (err == CL_SUCCESS) err = clFlush((cl_command_queue)s->handle);
    CT_EXPECT_MSG(err == CL_SUCCESS, "could not hold the stream (OpenCL error %d)", (int)err);
#endif
    return h;
}

static void hold_release(hold h) {
#ifdef CTORCH_TEST_CUDA
    if (h.gate) {
        ct_cu_gate_open(h.gate);
        return;
    }
#endif
#ifdef CTORCH_TEST_OPENCL
    if (h.user) {
        clSetUserEventStatus(h.user, CL_COMPLETE);
        clReleaseEvent(h.user);
    }
#endif
}

/* "CUDA" or "OpenCL", as the allocator's messages name the device. */
static const char *device_title(void) { return g_dev.type == CT_DEVICE_CUDA ? "CUDA" : "OpenCL"; }

static int64_t stat(const char *key) {
    int64_t v = -1;
    CT_EXPECT_MSG(ct_memory_stat(g_dev, key, &v) == CT_OK, "memory_stat(%s): %s", key, ct_last_error());
    return v;
}

/* Start from an empty cache with zeroed counters. */
static void fresh_allocator(void) {
    ct_device_synchronize(g_dev);
    ct_empty_cache(g_dev);
    ct_reset_accumulated_memory_stats(g_dev);
    ct_reset_peak_memory_stats(g_dev);
}

static void test_scripted_statistics(void) {
    fresh_allocator();
    CT_EXPECT_INT_EQ(stat("allocated_bytes.all.current"), 0);
    CT_EXPECT_INT_EQ(stat("reserved_bytes.all.current"), 0);
    ct_tensor *a = ct_empty(CT_SHAPE(1000), .device = g_dev);            /* 4000 B -> 4096, small pool */
    CT_EXPECT_INT_EQ(stat("allocated_bytes.all.current"), 4096);
    CT_EXPECT_INT_EQ(stat("requested_bytes.all.current"), 4000);
    CT_EXPECT_INT_EQ(stat("reserved_bytes.small_pool.current"), 2 << 20); /* one 2 MiB segment */
    ct_tensor *b = ct_empty(CT_SHAPE(3 << 20), .dtype = CT_UINT8, .device = g_dev); /* 3 MiB: large pool */
    CT_EXPECT_INT_EQ(stat("reserved_bytes.large_pool.current"), 20 << 20); /* 20 MiB segment below 10 MiB */
    CT_EXPECT_INT_EQ(stat("allocated_bytes.large_pool.current"), 3 << 20);
    CT_EXPECT_INT_EQ(stat("segment.all.current"), 2);
    CT_EXPECT_INT_EQ(stat("allocation.all.current"), 2);
    CT_EXPECT_INT_EQ(stat("inactive_split.all.current"), 2);              /* both segments were split */
    ct_release(a);
    ct_release(b);
    CT_EXPECT_INT_EQ(stat("allocated_bytes.all.current"), 0);
    CT_EXPECT_INT_EQ(stat("allocated_bytes.all.peak"), 4096 + (3 << 20));
    CT_EXPECT_INT_EQ(stat("reserved_bytes.all.current"), 22 << 20);       /* cached, not returned */
    CT_EXPECT_INT_EQ(ct_memory_allocated(g_dev), 0);
    CT_EXPECT_INT_EQ(ct_max_memory_reserved(g_dev), 22 << 20);
    CT_EXPECT_INT_EQ(ct_empty_cache(g_dev), CT_OK);
    CT_EXPECT_INT_EQ(ct_memory_reserved(g_dev), 0);                       /* empty_cache returns it */
    CT_EXPECT_INT_EQ(stat("num_device_alloc"), 2);
    CT_EXPECT_INT_EQ(stat("num_device_free"), 2);
    CT_EXPECT_INT_EQ(stat("num_sync_all_streams"), 1);
}

static void test_streams_run_independently(void) {
    ct_stream *a = ct_stream_create(g_dev, 0), *b = ct_stream_create(g_dev, 0);
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(4096), .device = g_dev);
        ct_stream_wait_stream(a, ct_current_stream(g_dev));
        ct_stream_wait_stream(b, ct_current_stream(g_dev));
        ct_device_synchronize(g_dev);
        hold h = hold_stream(a);
        ct_tensor *ya = NULL, *yb = NULL;
        CT_WITH_STREAM(a) { ya = ct_add_scalar(x, 1.0); }
        CT_WITH_STREAM(b) { yb = ct_add_scalar(x, 2.0); }
        CT_EXPECT_INT_EQ(ct_stream_synchronize(b), CT_OK);   /* b finishes while a is held */
        CT_EXPECT(ct_stream_query(b));
        CT_EXPECT(!ct_stream_query(a));
        ct_event *ea = ct_event_create();
        ct_event_record(ea, a);                               /* not reached while a is held */
        CT_EXPECT(!ct_event_query(ea));
        ct_tensor *zb = NULL;
        CT_WITH_STREAM(b) {
            ct_stream_wait_event(b, ea);                      /* from now on b waits for a */
            zb = ct_add(ya, yb);
        }
        CT_EXPECT(!ct_stream_query(b));
        hold_release(h);
        CT_EXPECT_INT_EQ(ct_stream_synchronize(b), CT_OK);
        CT_EXPECT(ct_event_query(ea));
        CT_WITH_STREAM(b) { CT_EXPECT_NEAR(ct_item(ct_min_all(zb)), 5.0, 0); CT_EXPECT_NEAR(ct_item(ct_max_all(zb)), 5.0, 0); }
        ct_event_destroy(ea);
    }
    ct_stream_destroy(a);
    ct_stream_destroy(b);
}

static void test_record_stream_delays_reuse(void) {
    fresh_allocator();
    ct_stream *side = ct_stream_create(g_dev, 0);
    ct_tensor *t = ct_ones(CT_SHAPE(1024), .device = g_dev);  /* on the current (default) stream */
    void *seg = t->storage->data;
    size_t off = t->storage->byte_offset;
    ct_stream_wait_stream(side, ct_current_stream(g_dev));
    hold h = hold_stream(side);
    ct_tensor *u = NULL;
    CT_WITH_STREAM(side) { u = ct_mul_scalar(t, 3.0); }       /* side still needs t */
    CT_EXPECT_INT_EQ(ct_record_stream(t, side), CT_OK);
    ct_release(t);                                            /* freed while side's work is pending */
    CT_EXPECT_INT_EQ(stat("allocation.all.current"), 1);      /* u only */
    CT_EXPECT_INT_EQ(stat("active.all.current"), 2);          /* t's block awaits side's event */
    ct_segment_info *segs = NULL;
    int nseg = 0, pending = 0;
    CT_EXPECT_INT_EQ(ct_memory_snapshot(g_dev, &segs, &nseg), CT_OK);
    for (int i = 0; i < nseg; i++)
        for (int j = 0; j < segs[i].num_blocks; j++) pending += segs[i].blocks[j].state == CT_BLOCK_ACTIVE_PENDING_FREE;
    ct_memory_snapshot_free(segs, nseg);
    CT_EXPECT_INT_EQ(pending, 1);
    ct_tensor *again = ct_empty(CT_SHAPE(1024), .device = g_dev);
    CT_EXPECT_MSG(!(again->storage->data == seg && again->storage->byte_offset == off),
                  "a block still used by another stream was handed out again");
    ct_release(again);
    hold_release(h);
    ct_stream_synchronize(side);
    ct_tensor *later = ct_empty(CT_SHAPE(1024), .device = g_dev); /* the event has completed now */
    CT_EXPECT_INT_EQ(stat("active.all.current"), 2);          /* u and later: t's block was recycled */
    CT_EXPECT_MSG(later->storage->data == seg && later->storage->byte_offset == off,
                  "after the other stream finished, the block was not reused");
    CT_WITH_STREAM(side) CT_SCOPE { CT_EXPECT_NEAR(ct_item(ct_sum_all(u)), 3.0 * 1024, 0); }
    ct_release(later);
    ct_release(u);
    ct_stream_destroy(side);
}

static void test_oom_under_fraction_recovers(void) {
    fresh_allocator();
    size_t free_b = 0, total = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(g_dev, &free_b, &total), CT_OK);
    double fraction = (double)(64 << 20) / (double)total;     /* allow 64 MiB */
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction(fraction, g_dev), CT_OK);
    ct_tensor *a = ct_empty(CT_SHAPE(32 << 20), .dtype = CT_UINT8, .device = g_dev);
    CT_EXPECT(a != NULL);
    ct_tensor *b = ct_empty(CT_SHAPE(48 << 20), .dtype = CT_UINT8, .device = g_dev);
    CT_EXPECT(b == NULL);
    char want[96];
    snprintf(want, sizeof want, "%s out of memory. Tried to allocate 48.00 MiB", device_title());
    CT_EXPECT_ERROR(CT_ERR_OOM, want);
    CT_EXPECT_INT_EQ(stat("num_ooms"), 1);
    CT_EXPECT_INT_EQ(stat("num_alloc_retries"), 1);
    ct_release(a);                                            /* free and continue */
    b = ct_empty(CT_SHAPE(48 << 20), .dtype = CT_UINT8, .device = g_dev);
    CT_EXPECT_MSG(b != NULL, "allocation after freeing failed: %s", ct_last_error());
    ct_release(b);
    CT_EXPECT_INT_EQ(ct_set_per_process_memory_fraction(1.0, g_dev), CT_OK);
    CT_EXPECT(ct_set_per_process_memory_fraction(1.5, g_dev) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Invalid fraction value: 1.5");
    ct_empty_cache(g_dev);
}

static void test_non_blocking_from_pinned(void) {
    ct_stream *s = ct_current_stream(g_dev);
    CT_SCOPE {
        ct_tensor *src = ct_randn(CT_SHAPE(1024, 256));
        ct_tensor *pinned = ct_pin_memory(src);
        CT_EXPECT(ct_is_pinned(pinned) && !ct_is_pinned(src));
        CT_EXPECT(ct_pin_memory(pinned) == pinned);           /* already pinned: itself */
        void *host_ptr = ct_data_ptr(pinned);
        hold h = hold_stream(s);
        ct_tensor *dev = ct_to_device_nb(pinned, g_dev, true);  /* returns while the copy waits */
        CT_EXPECT(dev != NULL && !ct_stream_query(s));
        ct_release(pinned);                                   /* the copy still reads it */
        ct_tensor *other = ct_pin_memory(src);                /* same size: must not reuse that block */
        CT_EXPECT_MSG(ct_data_ptr(other) != host_ptr, "pinned block reused while a copy was pending");
        ct_tensor *twice = ct_mul_scalar(dev, 2.0);
        ct_tensor *back = ct_to_device_nb(twice, ct_device_cpu(), true);
        CT_EXPECT(ct_is_pinned(back));
        hold_release(h);
        ct_device_synchronize(g_dev);
        bool same = false;
        CT_EXPECT_INT_EQ(ct_allclose(back, ct_mul_scalar(src, 2.0), 0, 0, false, &same), CT_OK);
        CT_EXPECT_MSG(same, "non_blocking round trip changed the values");
        ct_tensor *pageable = ct_to_device_nb(src, g_dev, true); /* pageable: a synchronous copy */
        CT_EXPECT(ct_equal(ct_cpu(pageable), src));
    }
    CT_EXPECT_INT_EQ(ct_host_empty_cache(), CT_OK);
}

static int run_on(ct_device dev) {
    char name[32];
    g_dev = dev;
    printf("-- on %s\n", ct_device_format(dev, name, sizeof name));
    CT_RUN(test_scripted_statistics);
    CT_RUN(test_streams_run_independently);
    CT_RUN(test_record_stream_delays_reuse);
    CT_RUN(test_oom_under_fraction_recovers);
    CT_RUN(test_non_blocking_from_pinned);
    return 1;
}

int main(int argc, char **argv) {
#ifdef CTORCH_TEST_CUDA
    ct_cu_load_kernels_eagerly(); /* the tests hold streams */
#endif
    ct_test_init(argc, argv);
    int ran = 0;
    bool expected = false;
#ifdef CTORCH_TEST_OPENCL
    expected = ct_test_opencl_expected();
    if (ct_device_count(CT_DEVICE_OPENCL) > 0) ran += run_on(ct_device_opencl(0));
#endif
#ifdef CTORCH_TEST_CUDA
    if (ct_device_count(CT_DEVICE_CUDA) > 0) ran += run_on(ct_device_cuda(0));
#endif
    ct_clear_error();
    if (!ran) return expected ? ct_test_opencl_absent_exit("the device runtime tests") : 77;
    return ct_test_finish();
}
#else
int main(void) {
    printf("built without the OpenCL and CUDA backends: skipped\n");
    return 77;
}
#endif
