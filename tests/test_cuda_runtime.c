/*
 * test_cuda_runtime.c — the CUDA backend's runtime side.
 *
 * Without a GPU (or without a driver, or in a build without CUDA) it checks
 * what a user sees then: cuda_is_available() is false, no devices, clear
 * errors naming the device for every CUDA call and tensor, the CPU still
 * works, and the backend's error mapping and table; then it exits 77
 * (skipped), after reporting any failure.
 *
 * With a GPU: device properties, the caching allocator over cudaMalloc
 * (statistics, empty_cache, the PyTorch out-of-memory message and recovery),
 * streams with priorities, events with timing, cross-stream ordering with
 * wait_event, non_blocking copies through pinned memory, host round trips
 * and data movement bit for bit against the CPU, two devices from two
 * threads, and CUDA_VISIBLE_DEVICES (in a child process: the runtime reads
 * it once).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, nanosleep, readlink */
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#ifdef CTORCH_TEST_CUDA
#include "backends/cuda/cu_internal.h"
#include "cuda_testutil.h"
#endif

extern char **environ;

#define CHILD_ENV "CT_TEST_CUDA_CHILD" /* set in the child: report the device count and exit */

static ct_device cu(int i) { return ct_device_cuda(i); }

/* ---- without a GPU ----------------------------------------------------------------------- */

static void test_no_device(void) {
#ifdef CTORCH_TEST_CUDA
    const char *why = "cuda:0: no CUDA devices are available";
#else
    const char *why = "ctorch was not compiled with CUDA enabled";
#endif
    CT_EXPECT(!ct_cuda_is_available());
    CT_EXPECT_INT_EQ(ct_cuda_device_count(), 0);
    CT_EXPECT_INT_EQ(ct_device_count(CT_DEVICE_CUDA), 0);
    CT_EXPECT(!ct_device_type_available(CT_DEVICE_CUDA));
    CT_EXPECT_INT_EQ(ct_device_check(cu(0), NULL), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    ct_scope_begin();
    CT_EXPECT(ct_zeros(CT_SHAPE(3), .device = cu(0)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    ct_tensor *x = ct_ones(CT_SHAPE(2));
    CT_EXPECT(ct_to_device(x, cu(0)) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    ct_device_properties p;
    CT_EXPECT_INT_EQ(ct_get_device_properties(cu(0), &p), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    CT_EXPECT_INT_EQ(ct_cuda_set_device(0), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    CT_EXPECT(ct_stream_create(cu(0), 0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    CT_EXPECT_INT_EQ(ct_device_synchronize(cu(0)), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    size_t free_b = 1, total = 1;
    CT_EXPECT_INT_EQ(ct_mem_get_info(cu(0), &free_b, &total), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, why);
    /* d2l's helpers fall back to the CPU, which keeps working */
    CT_EXPECT(ct_try_gpu(0).type == CT_DEVICE_CPU);
    CT_EXPECT(ct_best_device().type != CT_DEVICE_CUDA);
    CT_EXPECT_NEAR(ct_item(ct_sum_all(ct_add_scalar(x, 1.0))), 4.0, 0);
    ct_scope_end();
}

#ifdef CTORCH_TEST_CUDA
static void test_build_and_table(void) {
    const char *info = ct_build_info();
    CT_EXPECT_MSG(strstr(info, "; backends: cpu cuda") != NULL && strstr(info, "; cuda: ") != NULL &&
                      strstr(info, "-real") != NULL,
                  "build info lacks cuda: %s", info);
    const ct_backend *b = ct_backend_for(CT_DEVICE_CUDA);
    CT_EXPECT(b != NULL);
    if (!b) return;
    CT_EXPECT_INT_EQ(b->api_version, CT_BACKEND_API_VERSION);
    CT_EXPECT(b->type == CT_DEVICE_CUDA && strcmp(b->name, "cuda") == 0 && b->uses_caching_allocator);
    const void *entries[] = {
        (const void *)b->ops, (const void *)b->device_count, (const void *)b->device_name, (const void *)b->device_properties,
        (const void *)b->synchronize, (const void *)b->alloc, (const void *)b->free, (const void *)b->write,
        (const void *)b->read, (const void *)b->ops->copy, (const void *)b->ops->fill, (const void *)b->ops->arange,
        (const void *)b->ops->random, (const void *)b->ops->unary, (const void *)b->ops->binary, (const void *)b->ops->where,
        (const void *)b->ops->reduce, (const void *)b->ops->matmul, (const void *)b->ops->softmax, (const void *)b->ops->index_select,
        (const void *)b->ops->gather, (const void *)b->mem_get_info, (const void *)b->stream_create,
        (const void *)b->stream_destroy, (const void *)b->stream_synchronize, (const void *)b->stream_query,
        (const void *)b->priority_range, (const void *)b->event_create, (const void *)b->event_destroy,
        (const void *)b->event_record, (const void *)b->event_query, (const void *)b->event_synchronize,
        (const void *)b->stream_wait_event, (const void *)b->event_elapsed_ms, (const void *)b->write_async,
        (const void *)b->read_async, (const void *)b->host_alloc, (const void *)b->host_free,
        (const void *)b->ops->conv, (const void *)b->ops->nn, (const void *)b->ops->loss};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        CT_EXPECT_MSG(entries[i] != NULL, "entry %zu of the CUDA table is NULL", i);
}

/* Every CUDA status becomes a ctorch error with the call and CUDA's words. */
static void test_error_mapping(void) {
    CT_EXPECT_INT_EQ(ct_cu_check(cudaSuccess, "nothing"), CT_OK);
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)"), CT_ERR_OOM);
    CT_EXPECT_ERROR(CT_ERR_OOM, "cudaErrorMemoryAllocation) in cudaMalloc(&p, n)");
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorNoDevice, "cudaSetDevice(0)"), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "cudaErrorNoDevice");
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorInsufficientDriver, "x"), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "CUDA driver version is insufficient");
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorNoKernelImageForDevice, "launching kernel k"), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "ctorch was built for CUDA architectures");
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorIllegalAddress, "cudaStreamSynchronize(s)"), CT_ERR_BACKEND);
    CT_EXPECT_ERROR(CT_ERR_BACKEND, "CUDA_LAUNCH_BLOCKING=1");
    CT_EXPECT_INT_EQ(ct_cu_check(cudaErrorInvalidValue, "cudaMemcpyAsync(d, s, n, k, st)"), CT_ERR_BACKEND);
    CT_EXPECT_ERROR(CT_ERR_BACKEND, "CUDA error: invalid argument (cudaErrorInvalidValue) in cudaMemcpyAsync");
    if (ct_cu_count() > 0) {
        CT_EXPECT_INT_EQ(ct_cu_launched("k"), CT_OK); /* nothing launched, nothing failed */
    } else { /* the runtime keeps reporting why it could not start */
        CT_EXPECT_INT_EQ(ct_cu_launched("k"), CT_ERR_DEVICE);
        CT_EXPECT_ERROR(CT_ERR_DEVICE, "in launching kernel k");
    }
}

/* The internal helpers without a device: errors, never a crash. */
static void test_helpers_without_device(void) {
    CT_EXPECT_INT_EQ(ct_cu_count(), 0);
    CT_EXPECT_INT_EQ(ct_cu_set_device(0), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "cuda:0: no CUDA devices are available");
    CT_EXPECT(ct_cu_stream(0) == NULL);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "no CUDA devices are available");
    const ct_backend *b = ct_backend_for(CT_DEVICE_CUDA);
    void *p = NULL;
    CT_EXPECT_INT_EQ(b->host_alloc(64, &p), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "pin_memory: no CUDA devices are available");
    int least = 1, greatest = 1;
    ct_stream_priority_range(CT_DEVICE_CUDA, &least, &greatest);
    CT_EXPECT(least == 0 && greatest == 0);
}
#endif

/* ---- CUDA_VISIBLE_DEVICES: the runtime reads it at start, so a child process --------------------- */

/* Runs this binary again with CUDA_VISIBLE_DEVICES=visible; the child exits
 * with the number of CUDA devices it sees (or 100 + error). */
static int devices_seen_with(const char *visible) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    size_t count = 0;
    while (environ[count]) count++;
    char **env = calloc(count + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0 && strncmp(environ[i], CHILD_ENV "=", 19) != 0)
            env[k++] = environ[i];
    char visible_var[128];
    snprintf(visible_var, sizeof visible_var, "CUDA_VISIBLE_DEVICES=%s", visible);
    env[k++] = visible_var;
    env[k++] = CHILD_ENV "=1";
    char *argv[] = {self, NULL};
    pid_t pid;
    int status = 0, rc = posix_spawn(&pid, self, NULL, NULL, argv, env);
    free(env);
    if (rc != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static int child_main(void) {
    int n = ct_device_count(CT_DEVICE_CUDA);
    if (n == 0 && (ct_cuda_is_available() || ct_device_check(cu(0), NULL) != CT_ERR_DEVICE)) return 101;
    return n;
}

static void test_visible_devices(void) {
    int all = ct_device_count(CT_DEVICE_CUDA);
    CT_EXPECT_INT_EQ(devices_seen_with(""), 0);
    CT_EXPECT_INT_EQ(devices_seen_with("-1"), 0);
    if (all > 0) CT_EXPECT_INT_EQ(devices_seen_with("0"), 1);
    if (all > 1) CT_EXPECT_INT_EQ(devices_seen_with("1,0"), 2);
}

#ifdef CTORCH_TEST_CUDA
/* ---- with a GPU ----------------------------------------------------------------------------------- */

static const ct_dtype k_all_dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16,
                                        CT_INT32,   CT_INT64,   CT_UINT8,   CT_BOOL};
#define N_DTYPES ((int)(sizeof k_all_dtypes / sizeof k_all_dtypes[0]))

static int g_ndev;
static int other_dev(void) { return g_ndev > 1 ? 1 : 0; }

/* t (any device) and ref (cpu) hold the same bytes. */
static void expect_same_bits(const char *what, const ct_tensor *t, const ct_tensor *ref) {
    CT_EXPECT_MSG(t && ref, "%s: NULL tensor (%s)", what, ct_last_error());
    if (!t || !ref) return;
    int64_t n = ct_numel(ref);
    size_t es = ct_element_size(ref), size = (size_t)n * es;
    CT_EXPECT_MSG(ct_dtype_of(t) == ct_dtype_of(ref) && ct_numel(t) == n, "%s: dtype/numel differ", what);
    unsigned char *bt = calloc(size + 1, 1), *br = calloc(size + 1, 1);
    CT_EXPECT_INT_EQ(ct_copy_to_host(t, bt, ct_dtype_of(t), n), CT_OK);
    CT_EXPECT_INT_EQ(ct_copy_to_host(ref, br, ct_dtype_of(ref), n), CT_OK);
    for (size_t i = 0; i < size; i += es)
        if (memcmp(bt + i, br + i, es) != 0) {
            CT_EXPECT_MSG(false, "%s (%s): element %zu differs from the cpu's", what,
                          ct_dtype_name(ct_dtype_of(ref)), i / es);
            break;
        }
    free(bt);
    free(br);
}

static int64_t stat(ct_device d, const char *key) {
    int64_t v = -1;
    CT_EXPECT_MSG(ct_memory_stat(d, key, &v) == CT_OK, "memory_stat(%s): %s", key, ct_last_error());
    return v;
}

static void test_properties(void) {
    CT_EXPECT(ct_cuda_is_available() && g_ndev >= 1);
    for (int i = 0; i < g_ndev; i++) {
        ct_device_properties p;
        CT_EXPECT_INT_EQ(ct_get_device_properties(cu(i), &p), CT_OK);
        CT_EXPECT(p.name[0] != '\0' && !p.is_host);
        CT_EXPECT_MSG(p.major >= 3 && p.major < 100 && p.minor >= 0 && p.minor < 10, "compute capability %d.%d",
                      p.major, p.minor);
        CT_EXPECT(p.multi_processor_count > 0);
        CT_EXPECT(p.total_memory >= ((size_t)256 << 20));
        char name[256] = "";
        CT_EXPECT_INT_EQ(ct_cuda_get_device_name(i, name, sizeof name), CT_OK);
        CT_EXPECT(strcmp(name, p.name) == 0);
        size_t free_b = 0, total = 0;
        CT_EXPECT_INT_EQ(ct_mem_get_info(cu(i), &free_b, &total), CT_OK);
        CT_EXPECT(total > 0 && free_b <= total && total <= p.total_memory + ((size_t)1 << 30));
        CT_EXPECT_INT_EQ(ct_device_synchronize(cu(i)), CT_OK);
    }
    CT_EXPECT(ct_try_gpu(0).type == CT_DEVICE_CUDA && ct_best_device().type == CT_DEVICE_CUDA);
    ct_device d;
    CT_EXPECT_INT_EQ(ct_device_parse("cuda:63", &d), CT_OK);
    CT_EXPECT_INT_EQ(ct_device_check(d, NULL), CT_ERR_DEVICE);
    CT_EXPECT_ERROR(CT_ERR_DEVICE, "cuda:63: invalid device ordinal 63");
}

/* Segments come from cudaMalloc and go back only through empty_cache. */
static void test_caching_allocator(void) {
    ct_device d = cu(0);
    ct_device_synchronize(d);
    ct_empty_cache(d);
    ct_reset_accumulated_memory_stats(d);
    ct_reset_peak_memory_stats(d);
    size_t free0 = 0, total = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(d, &free0, &total), CT_OK);
    ct_tensor *a = ct_arange(0, 1000, 1, .dtype = CT_FLOAT32, .device = d); /* 4000 B: one 2 MiB small-pool segment */
    CT_EXPECT_INT_EQ(stat(d, "allocated_bytes.all.current"), 4096);
    CT_EXPECT_INT_EQ(stat(d, "requested_bytes.all.current"), 4000);
    CT_EXPECT_INT_EQ(stat(d, "reserved_bytes.small_pool.current"), 2 << 20);
    CT_EXPECT_INT_EQ(stat(d, "num_device_alloc"), 1);
    CT_SCOPE { CT_EXPECT_NEAR(ct_item(ct_sum_all(a)), 999.0 * 1000 / 2, 0); } /* releases the sum */
    ct_tensor *big = ct_full(CT_SHAPE(64 << 20), 1.0, .dtype = CT_UINT8, .device = d); /* 64 MiB: large pool */
    CT_EXPECT_INT_EQ(stat(d, "reserved_bytes.large_pool.current"), 64 << 20);
    size_t free1 = 0;
    CT_EXPECT_INT_EQ(ct_mem_get_info(d, &free1, &total), CT_OK);
    CT_EXPECT_MSG(free1 + (64 << 20) <= free0 + (8 << 20), "cudaMemGetInfo did not see 64 MiB go (%zu -> %zu)",
                  free0, free1);
    ct_release(a);
    ct_release(big);
    CT_EXPECT_INT_EQ(ct_memory_allocated(d), 0);
    CT_EXPECT_INT_EQ(ct_memory_reserved(d), (2 << 20) + (64 << 20)); /* cached */
    CT_EXPECT_INT_EQ(ct_empty_cache(d), CT_OK);
    CT_EXPECT_INT_EQ(ct_memory_reserved(d), 0);
    CT_EXPECT_INT_EQ(stat(d, "num_device_free"), 2);
}

/* An absurd request goes through the allocator's retry to PyTorch's message,
 * and the device keeps working. */
static void test_out_of_memory(void) {
    ct_device d = cu(0);
    ct_reset_accumulated_memory_stats(d);
    ct_scope_begin();
    ct_tensor *keep = ct_ones(CT_SHAPE(1024), .device = d);
    ct_tensor *t = ct_empty(CT_SHAPE((int64_t)1 << 48), .device = d); /* 1 PiB */
    CT_EXPECT(t == NULL);
    CT_EXPECT_ERROR(CT_ERR_OOM, "CUDA out of memory. Tried to allocate 1048576.00 GiB. Device 0 has a total capacity of");
    CT_EXPECT_INT_EQ(stat(d, "num_ooms"), 1);
    CT_EXPECT_INT_EQ(stat(d, "num_alloc_retries"), 1);
    CT_EXPECT(ct_empty(CT_SHAPE((int64_t)1 << 59), .dtype = CT_FLOAT64, .device = d) == NULL); /* 4 EiB */
    CT_EXPECT_ERROR(CT_ERR_OOM, "CUDA out of memory. Tried to allocate more than 1EB memory.");
    ct_tensor *ok = ct_add_scalar(keep, 1.0);
    CT_EXPECT_NEAR(ct_item(ct_sum_all(ok)), 2048.0, 0);
    ct_scope_end();
}

static void test_streams_with_priorities(void) {
    int least = 1, greatest = 1;
    ct_stream_priority_range(CT_DEVICE_CUDA, &least, &greatest);
    int cuda_least = 1, cuda_greatest = 1;
    CT_EXPECT(cudaDeviceGetStreamPriorityRange(&cuda_least, &cuda_greatest) == cudaSuccess);
    CT_EXPECT(least == 0 && least == cuda_least && greatest == cuda_greatest && greatest < 0);
    ct_stream *hi = ct_stream_create(cu(0), -1000), *lo = ct_stream_create(cu(0), 7);
    CT_EXPECT(hi && lo);
    if (!hi || !lo) return;
    CT_EXPECT_INT_EQ(ct_stream_priority(hi), greatest); /* clamped, as CUDA does */
    CT_EXPECT_INT_EQ(ct_stream_priority(lo), least);
    int p = 1;
    CT_EXPECT(cudaStreamGetPriority((cudaStream_t)hi->handle, &p) == cudaSuccess && p == greatest);
    unsigned flags = 0;
    CT_EXPECT(cudaStreamGetFlags((cudaStream_t)hi->handle, &flags) == cudaSuccess && flags == cudaStreamNonBlocking);
    CT_SCOPE {
        ct_tensor *x = ct_arange(0, 4096, 1, .dtype = CT_FLOAT64, .device = cu(0));
        ct_stream_wait_stream(hi, ct_current_stream(cu(0)));
        ct_tensor *y = NULL;
        CT_WITH_STREAM(hi) {
            CT_EXPECT(ct_current_stream(cu(0)) == hi);
            y = ct_mul_scalar(x, 2.0);
        }
        CT_EXPECT(ct_current_stream(cu(0)) == ct_default_stream(cu(0)));
        CT_EXPECT_INT_EQ(ct_stream_synchronize(hi), CT_OK);
        CT_EXPECT(ct_stream_query(hi));
        ct_stream_wait_stream(ct_current_stream(cu(0)), hi);
        CT_EXPECT_NEAR(ct_item(ct_sum_all(y)), 4095.0 * 4096, 0);
    }
    ct_stream_destroy(hi);
    ct_stream_destroy(lo);
}

static void test_event_timing(void) {
    ct_device d = cu(0);
    ct_event *start = ct_event_create(.enable_timing = true), *end = ct_event_create(.enable_timing = true);
    ct_event *plain = ct_event_create();
    float ms = -1;
    CT_EXPECT(ct_event_query(start)); /* never recorded: complete */
    CT_EXPECT_INT_EQ(ct_event_elapsed_time(start, end, &ms), CT_ERR_STATE);
    CT_EXPECT_ERROR(CT_ERR_STATE, "Both events must be recorded");
    CT_SCOPE {
        ct_tensor *t = ct_empty(CT_SHAPE(1 << 26), .device = d); /* 256 MiB */
        CT_EXPECT_INT_EQ(ct_event_record(start, ct_current_stream(d)), CT_OK);
        for (int i = 0; i < 8; i++) CT_EXPECT_INT_EQ(ct_fill_(t, (double)i), CT_OK);
        CT_EXPECT_INT_EQ(ct_event_record(end, ct_current_stream(d)), CT_OK);
        CT_EXPECT_INT_EQ(ct_event_record(plain, ct_current_stream(d)), CT_OK);
        CT_EXPECT_INT_EQ(ct_event_synchronize(end), CT_OK);
        CT_EXPECT(ct_event_query(end) && ct_event_query(plain));
        CT_EXPECT_INT_EQ(ct_event_elapsed_time(start, end, &ms), CT_OK);
        CT_EXPECT_MSG(ms > 0 && ms < 60000, "elapsed %g ms for 2 GiB of writes", (double)ms);
        CT_EXPECT_INT_EQ(ct_event_elapsed_time(start, plain, &ms), CT_ERR_INVALID_ARG);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "enable_timing=True");
        CT_EXPECT_NEAR(ct_item(ct_max_all(t)), 7.0, 0);
    }
    ct_event_destroy(start);
    ct_event_destroy(end);
    ct_event_destroy(plain);
}

/* A stream that waits for an event runs nothing queued after the wait until
 * the event's stream reaches it (the producer is held meanwhile). */
static void test_cross_stream_wait_event(void) {
    ct_device d = cu(0);
    ct_stream *producer = ct_stream_create(d, 0), *consumer = ct_stream_create(d, -1);
    ct_event *done = ct_event_create();
    CT_SCOPE {
        ct_tensor *x = ct_zeros(CT_SHAPE(1 << 16), .device = d);
        ct_stream_wait_stream(producer, ct_current_stream(d));
        ct_stream_wait_stream(consumer, ct_current_stream(d));
        ct_device_synchronize(d);
        ct_cu_gate *gate = ct_cu_hold(producer);
        CT_WITH_STREAM(producer) { CT_EXPECT_INT_EQ(ct_fill_(x, 3.0), CT_OK); }
        CT_EXPECT_INT_EQ(ct_event_record(done, producer), CT_OK);
        CT_EXPECT(!ct_event_query(done));
        ct_tensor *y = NULL;
        CT_WITH_STREAM(consumer) {
            CT_EXPECT_INT_EQ(ct_stream_wait_event(consumer, done), CT_OK);
            y = ct_add_scalar(x, 1.0);        /* must see the fill */
        }
        CT_EXPECT(!ct_stream_query(consumer)); /* waits for the held producer */
        CT_EXPECT(!ct_stream_query(producer));
        ct_cu_gate_open(gate);
        CT_EXPECT_INT_EQ(ct_stream_synchronize(consumer), CT_OK);
        CT_EXPECT(ct_event_query(done) && ct_stream_query(producer));
        CT_WITH_STREAM(consumer) {
            CT_EXPECT_NEAR(ct_item(ct_min_all(y)), 4.0, 0);
            CT_EXPECT_NEAR(ct_item(ct_max_all(y)), 4.0, 0);
        }
        ct_stream_wait_stream(ct_current_stream(d), consumer); /* before the default stream frees y */
    }
    ct_event_destroy(done);
    ct_stream_destroy(producer);
    ct_stream_destroy(consumer);
}

/* non_blocking copies through pinned memory, both ways, every dtype. */
static void test_pinned_round_trips(void) {
    for (int k = 0; k < N_DTYPES; k++) {
        ct_scope_begin();
        ct_dtype dt = k_all_dtypes[k];
        ct_tensor *src = ct_test_random(CT_SHAPE(ct_test_randint(1, 100000)), dt, -100, 100, NULL);
        ct_tensor *pinned = ct_pin_memory(src);
        CT_EXPECT(pinned && ct_is_pinned(pinned) && !ct_is_pinned(src));
        ct_tensor *dev = ct_to_device_nb(pinned, cu(0), true);
        CT_EXPECT(dev && ct_device_equal(ct_device_of(dev), cu(0)));
        ct_tensor *back = ct_to_device_nb(dev, ct_device_cpu(), true); /* lands in pinned memory */
        CT_EXPECT(back && ct_is_pinned(back));
        CT_EXPECT_INT_EQ(ct_device_synchronize(cu(0)), CT_OK); /* before reading back on the host */
        expect_same_bits("pinned round trip", back, src);
        expect_same_bits("pageable round trip", ct_cpu(ct_to_device(src, cu(other_dev()))), src);
        ct_scope_end();
    }
    CT_EXPECT_INT_EQ(ct_host_empty_cache(), CT_OK);
}

/* Conversions between every pair of dtypes on the device and the CPU, on
 * values that exercise every rule (ties, NaN, infinities, saturation). */
static void test_conversions_match_cpu(void) {
    static const double special[] = {0.0,  -0.0,  0.5,     -0.5,  1.5,   2.5,    -2.5,       255.0, 256.0,
                                     300.7, -300.7, 65504.0, 65520.0, 6e-8, 1e-40, 2147483648.0, 3e9,  -3e9,
                                     1e19, -1e19, 1e300, NAN, INFINITY, -INFINITY, 1.0009765625, 9007199254740993.0};
    const int n = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N_DTYPES; i++) {
        ct_scope_begin();
        ct_tensor *src = ct_to_dtype(ct_from_data(special, CT_FLOAT64, CT_SHAPE(n), CT_OPTS(.dtype = CT_FLOAT64)),
                                     k_all_dtypes[i]);
        ct_tensor *dsrc = ct_to_device(src, cu(0));
        for (int j = 0; j < N_DTYPES; j++)
            expect_same_bits("to(dtype) on cuda", ct_to_dtype(dsrc, k_all_dtypes[j]), ct_to_dtype(src, k_all_dtypes[j]));
        /* a converting copy_ into a transposed, stepped view */
        ct_tensor *dst = ct_zeros(CT_SHAPE(n, 2), .dtype = k_all_dtypes[(i + 3) % N_DTYPES]);
        ct_tensor *ddst = ct_to_device(dst, cu(0));
        CT_EXPECT_INT_EQ(ct_copy_(ct_select(ct_t(dst), 0, 1), src), CT_OK);
        CT_EXPECT_INT_EQ(ct_copy_(ct_select(ct_t(ddst), 0, 1), dsrc), CT_OK);
        expect_same_bits("copy_ into a strided view", ddst, dst);
        ct_scope_end();
    }
}

static void test_fill_arange_random_match_cpu(void) {
    for (int k = 0; k < N_DTYPES; k++) {
        ct_scope_begin();
        ct_dtype dt = k_all_dtypes[k];
        ct_tensor *x = ct_zeros(CT_SHAPE(6, 7), .dtype = dt), *dx = ct_zeros(CT_SHAPE(6, 7), .dtype = dt, .device = cu(0));
        CT_EXPECT_INT_EQ(ct_fill_(ct_slice(ct_t(x), 1, 0, 6, 2), 300.7), CT_OK);
        CT_EXPECT_INT_EQ(ct_fill_(ct_slice(ct_t(dx), 1, 0, 6, 2), 300.7), CT_OK);
        expect_same_bits("fill_ of a strided view", dx, x);
        if (dt != CT_BOOL)
            expect_same_bits("arange", ct_arange(-7, 50, 0.3, .dtype = dt, .device = cu(other_dev())),
                             ct_arange(-7, 50, 0.3, .dtype = dt));
        if (ct_dtype_is_floating(dt)) {
            int64_t n = ct_test_randint(1, 20000) | 1;
            uint64_t seed = ct_test_rand_u64();
            ct_manual_seed(seed);
            ct_tensor *u = ct_rand(CT_SHAPE(n), .dtype = dt), *g = ct_randn(CT_SHAPE(n), .dtype = dt);
            ct_manual_seed(seed);
            ct_tensor *du = ct_rand(CT_SHAPE(n), .dtype = dt, .device = cu(0));
            ct_tensor *dg = ct_randn(CT_SHAPE(n), .dtype = dt, .device = cu(0));
            expect_same_bits("rand", du, u);
            expect_same_bits("randn", dg, g);
        } else if (dt != CT_BOOL) {
            int64_t lo = dt == CT_UINT8 ? 0 : -1000003, hi = dt == CT_UINT8 ? 200 : 77777777;
            ct_manual_seed(99 + (uint64_t)k);
            ct_tensor *r = ct_randint(lo, hi, CT_SHAPE(4097), .dtype = dt);
            ct_manual_seed(99 + (uint64_t)k);
            expect_same_bits("randint", ct_randint(lo, hi, CT_SHAPE(4097), .dtype = dt, .device = cu(0)), r);
        }
        ct_scope_end();
    }
}

/* Copies between two devices (or one device with itself), strided both sides. */
static void test_copies_between_devices(void) {
    for (int k = 0; k < N_DTYPES; k++) {
        ct_scope_begin();
        ct_dtype dt = k_all_dtypes[k];
        ct_tensor *src = ct_test_random(CT_SHAPE(37, 29), dt, -50, 50, NULL);
        ct_tensor *on0 = ct_to_device(src, cu(0)), *on1 = ct_to_device(on0, cu(other_dev()));
        CT_EXPECT(on1 && ct_device_equal(ct_device_of(on1), cu(other_dev())));
        expect_same_bits("cuda:0 -> other device", on1, src);
        ct_tensor *dst = ct_zeros(CT_SHAPE(29, 74), .dtype = dt, .device = cu(other_dev()));
        CT_EXPECT_INT_EQ(ct_copy_(ct_slice(dst, 1, 0, 74, 2), ct_t(on0)), CT_OK);
        expect_same_bits("copy_ across devices into a strided view", ct_slice(dst, 1, 0, 74, 2), ct_t(src));
        ct_scope_end();
    }
}

typedef struct worker {
    int dev;
    const ct_tensor *want; /* cpu */
    int mismatches;
} worker;

static void *convert_on_device(void *arg) {
    worker *w = arg;
    for (int it = 0; it < 20; it++) {
        ct_scope_begin();
        ct_tensor *x = ct_arange(-500, 500, 0.4, .dtype = CT_FLOAT64, .device = cu(w->dev));
        ct_tensor *y = ct_cpu(ct_to_dtype(ct_to_dtype(ct_t(ct_view(x, CT_SHAPE(2, -1))), CT_FLOAT16), CT_INT32));
        w->mismatches += !y || !ct_equal(y, w->want);
        ct_scope_end();
    }
    return NULL;
}

/* Two threads driving two devices (or one device twice) at once. */
static void test_two_threads(void) {
    ct_scope_begin();
    ct_tensor *x = ct_arange(-500, 500, 0.4, .dtype = CT_FLOAT64);
    ct_tensor *want = ct_to_dtype(ct_to_dtype(ct_t(ct_view(x, CT_SHAPE(2, -1))), CT_FLOAT16), CT_INT32);
    worker w[2] = {{0, want, 0}, {other_dev(), want, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CT_EXPECT_INT_EQ(pthread_create(&th[i], NULL, convert_on_device, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CT_EXPECT_INT_EQ(w[0].mismatches + w[1].mismatches, 0);
    ct_scope_end();
}
#endif /* CTORCH_TEST_CUDA */

int main(int argc, char **argv) {
    if (getenv(CHILD_ENV)) return child_main();
#ifdef CTORCH_TEST_CUDA
    ct_cu_load_kernels_eagerly(); /* test_cross_stream_wait_event holds a stream */
#endif
    ct_test_init(argc, argv);
    int ndev = ct_device_count(CT_DEVICE_CUDA);
#ifdef CTORCH_TEST_CUDA
    g_ndev = ndev;
    CT_RUN(test_build_and_table);
    CT_RUN(test_error_mapping);
#endif
    CT_RUN(test_visible_devices);
    if (ndev == 0) {
        CT_RUN(test_no_device);
#ifdef CTORCH_TEST_CUDA
        CT_RUN(test_helpers_without_device);
#endif
        int rc = ct_test_finish();
        if (rc == 0) printf("no CUDA device: GPU tests skipped\n");
        return rc ? rc : 77;
    }
#ifdef CTORCH_TEST_CUDA
    CT_RUN(test_properties);
    CT_RUN(test_caching_allocator);
    CT_RUN(test_out_of_memory);
    CT_RUN(test_streams_with_priorities);
    CT_RUN(test_event_timing);
    CT_RUN(test_cross_stream_wait_event);
    CT_RUN(test_pinned_round_trips);
    CT_RUN(test_conversions_match_cpu);
    CT_RUN(test_fill_arange_random_match_cpu);
    CT_RUN(test_copies_between_devices);
    CT_RUN(test_two_threads);
#endif
    return ct_test_finish();
}
