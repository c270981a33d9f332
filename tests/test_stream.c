/*
 * test_stream.c — streams and events through the public API (ctorch/stream.h)
 * on every available device: current/default streams, the stream guard,
 * set_stream, ordering of work on one stream, cross-stream waits, event
 * timing and its errors. On the CPU streams are synchronous; on OpenCL
 * (PoCL) they are real asynchronous queues.
 */
#include "testutil.h"

#include "ctorch/stream.h"

static int g_ndev;
static ct_device g_devs[8];

/* The CPU and every device; a missing OpenCL device where one is expected
 * fails (ct_test_opencl_devices). */
static void collect_devices(void) {
    g_devs[g_ndev++] = ct_device_cpu();
    for (int i = 0; i < ct_test_opencl_devices("streams on OpenCL") && g_ndev < 8; i++) g_devs[g_ndev++] = ct_device_opencl(i);
    for (int i = 0; i < ct_test_cuda_devices("streams on CUDA") && g_ndev < 8; i++) g_devs[g_ndev++] = ct_device_cuda(i);
}

static void test_default_and_current(void) {
    for (int k = 0; k < g_ndev; k++) {
        ct_device d = g_devs[k];
        ct_stream *def = ct_default_stream(d);
        CT_EXPECT(def != NULL);
        CT_EXPECT(ct_current_stream(d) == def);
        CT_EXPECT(ct_device_equal(ct_stream_device(def), d));
        ct_stream *s = ct_stream_create(d, 0);
        CT_EXPECT(s != NULL && s != def);
        CT_EXPECT_INT_EQ(ct_set_stream(s), CT_OK);
        CT_EXPECT(ct_current_stream(d) == s);
        CT_EXPECT_INT_EQ(ct_set_stream(def), CT_OK);
        CT_EXPECT(ct_current_stream(d) == def);
        ct_stream_destroy(s);
    }
}

static void test_guard_restores(void) {
    for (int k = 0; k < g_ndev; k++) {
        ct_device d = g_devs[k];
        ct_stream *outer = ct_stream_create(d, 0), *inner = ct_stream_create(d, 0);
        ct_set_stream(outer);
        CT_WITH_STREAM(inner) {
            CT_EXPECT(ct_current_stream(d) == inner);
            CT_WITH_STREAM(NULL) { CT_EXPECT(ct_current_stream(d) == inner); } /* no-op */
        }
        CT_EXPECT(ct_current_stream(d) == outer);
        ct_set_stream(ct_default_stream(d));
        ct_stream_destroy(inner);
        ct_stream_destroy(outer);
    }
}

static void test_priorities(void) {
    for (int k = 0; k < g_ndev; k++) {
        int least = 0, greatest = 0;
        ct_stream_priority_range(g_devs[k].type, &least, &greatest);
        CT_EXPECT(greatest <= least);
        ct_stream *hi = ct_stream_create(g_devs[k], greatest), *clamped = ct_stream_create(g_devs[k], least + 100);
        CT_EXPECT_INT_EQ(ct_stream_priority(hi), greatest);
        CT_EXPECT_INT_EQ(ct_stream_priority(clamped), least);
        ct_stream_destroy(hi);
        ct_stream_destroy(clamped);
    }
}

/* Many dependent ops on one stream: the last result proves they ran in order. */
static void test_one_stream_is_ordered(void) {
    for (int k = 0; k < g_ndev; k++) CT_SCOPE {
        ct_device d = g_devs[k];
        ct_stream *s = ct_stream_create(d, 0);
        double got = 0;
        CT_WITH_STREAM(s) {
            ct_tensor *x = ct_zeros(CT_SHAPE(1000), .device = d);
            for (int i = 0; i < 50; i++) x = ct_add_scalar(x, 1.0);
            ct_stream_synchronize(s);
            CT_EXPECT(ct_stream_query(s));
            got = ct_item(ct_sum_all(x));
        }
        CT_EXPECT_NEAR(got, 50.0 * 1000, 0);
        ct_stream_destroy(s);
    }
}

/* Work on stream b that waits for stream a sees a's results. */
static void test_wait_event_and_wait_stream(void) {
    for (int k = 0; k < g_ndev; k++) CT_SCOPE {
        ct_device d = g_devs[k];
        ct_stream *a = ct_stream_create(d, 0), *b = ct_stream_create(d, 0);
        ct_tensor *x = NULL, *y = NULL, *z = NULL;
        CT_WITH_STREAM(a) {
            x = ct_full(CT_SHAPE(256, 256), 2.0, .device = d);
            x = ct_matmul(x, x); /* every element 2*2*256 = 1024 */
        }
        ct_event *e = ct_event_create();
        CT_EXPECT_INT_EQ(ct_event_record(e, a), CT_OK);
        CT_WITH_STREAM(b) {
            CT_EXPECT_INT_EQ(ct_stream_wait_event(b, e), CT_OK);
            y = ct_add_scalar(x, 1.0);
        }
        ct_stream_synchronize(b);
        CT_EXPECT_NEAR(ct_item(ct_max_all(y)), 1025.0, 0);
        CT_EXPECT_NEAR(ct_item(ct_min_all(y)), 1025.0, 0);
        CT_WITH_STREAM(a) { z = ct_mul_scalar(y, 2.0); }
        CT_EXPECT_INT_EQ(ct_stream_wait_stream(b, a), CT_OK);
        ct_stream_synchronize(b);
        ct_stream_synchronize(a);
        CT_EXPECT_NEAR(ct_item(ct_mean_all(z)), 2050.0, 0);
        ct_event_destroy(e);
        ct_stream_destroy(a);
        ct_stream_destroy(b);
    }
}

static void test_event_timing(void) {
    for (int k = 0; k < g_ndev; k++) CT_SCOPE {
        ct_device d = g_devs[k];
        ct_stream *s = ct_current_stream(d);
        ct_event *start = ct_event_create(.enable_timing = true), *mid = ct_event_create(.enable_timing = true),
                 *end = ct_event_create(.enable_timing = true);
        ct_tensor *a = ct_rand(CT_SHAPE(256, 256), .device = d);
        ct_event_record(start, s);
        ct_tensor *c = ct_matmul(a, a);
        ct_event_record(mid, s);
        for (int i = 0; i < 4; i++) c = ct_matmul(c, a);
        ct_event_record(end, s);
        CT_EXPECT_INT_EQ(ct_event_synchronize(end), CT_OK);
        CT_EXPECT(ct_event_query(end));
        float t1 = -1, t2 = -1, back = 1;
        CT_EXPECT_INT_EQ(ct_event_elapsed_time(start, mid, &t1), CT_OK);
        CT_EXPECT_INT_EQ(ct_event_elapsed_time(start, end, &t2), CT_OK);
        CT_EXPECT_INT_EQ(ct_event_elapsed_time(end, start, &back), CT_OK);
        CT_EXPECT_MSG(t1 > 0 && t2 >= t1, "elapsed times %g then %g ms", t1, t2);
        CT_EXPECT_MSG(back <= 0, "end->start gives %g ms", back);
        ct_event_destroy(start);
        ct_event_destroy(mid);
        ct_event_destroy(end);
    }
}

static void test_event_errors(void) {
    ct_event *plain = ct_event_create(), *timed = ct_event_create(.enable_timing = true),
             *timed2 = ct_event_create(.enable_timing = true);
    float ms;
    CT_EXPECT(ct_event_query(plain));                        /* never recorded: complete */
    CT_EXPECT_INT_EQ(ct_event_synchronize(plain), CT_OK);    /* and a no-op */
    CT_EXPECT_INT_EQ(ct_event_wait(plain, NULL), CT_OK);
    ct_event_record(plain, NULL);
    ct_event_record(timed, NULL);
    CT_EXPECT(ct_event_elapsed_time(plain, timed, &ms) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Both events must be created with argument 'enable_timing=True'.");
    CT_EXPECT(ct_event_elapsed_time(timed, timed2, &ms) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_STATE, "Both events must be recorded before calculating elapsed time.");
    CT_EXPECT(ct_event_elapsed_time(NULL, timed2, &ms) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL");
    if (g_ndev > 1) { /* an event recorded on one device cannot be re-recorded on another */
        CT_EXPECT(ct_event_record(timed, ct_current_stream(g_devs[1])) != CT_OK);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "does not match recording stream's device");
    }
    ct_stream_destroy(ct_default_stream(ct_device_cpu()));
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "default stream");
    CT_EXPECT(ct_stream_create(ct_device_cuda(0), 0) == NULL || ct_cuda_is_available());
    ct_clear_error();
    CT_EXPECT(ct_set_stream(NULL) != CT_OK);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "NULL stream");
    ct_event_destroy(plain);
    ct_event_destroy(timed);
    ct_event_destroy(timed2);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(collect_devices); /* a test of its own, so a missing device is a recorded failure */
    printf("devices under test: %d (cpu + %d opencl + %d cuda)\n", g_ndev, ct_device_count(CT_DEVICE_OPENCL),
           ct_device_count(CT_DEVICE_CUDA));
    CT_RUN(test_default_and_current);
    CT_RUN(test_guard_restores);
    CT_RUN(test_priorities);
    CT_RUN(test_one_stream_is_ordered);
    CT_RUN(test_wait_event_and_wait_stream);
    CT_RUN(test_event_timing);
    CT_RUN(test_event_errors);
    return ct_test_finish();
}
