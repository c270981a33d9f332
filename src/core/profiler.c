/*
 * profiler.c — torch.profiler (ctorch/profiler.h): named ranges and a
 * record of every kernel dispatched to a backend, as Chrome trace JSON or
 * a key_averages-style table.
 *
 * Why at the dispatch macros: every op reaches its backend through
 * CTI_BACKEND_CALL, CTI_NN_CALL, CTI_LOSS_CALL or the convolution entries,
 * so timing there records every kernel with the name ctorch's messages use,
 * without touching the ops. While profiling is off a record costs one
 * atomic load (an acquire: a plain load on x86); while it is on, a thread keeps its open records on a
 * stack of its own and takes the lock only to append a finished one.
 * Named ranges are also NVTX ranges where the CUDA backend is built, so
 * Nsight Systems shows them on the GPU timeline.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctorch/profiler.h"
#include "ctorch/stream.h"
#include "error.h"
#include "internal.h"
#include "mem_history.h"
#include "runtime.h"
#include "tensor_impl.h"

#define NAME_CAP 64
#define DEPTH_CAP 64

typedef struct prof_event {
    char name[NAME_CAP];
    char device[16];
    char shape[48];
    int64_t start_ns, dur_ns;
    int tid;
    bool kernel; /* a dispatched kernel, else a user range */
    /* a kernel on an asynchronous device: timing events around it on its
     * stream, turned into device_ms when the run stops (-1: none) */
    ct_event *ev_start, *ev_end;
    double device_ms;
    /* bytes allocated while open (on the kernel's device; a range counts
     * every device), and those not inside a nested record: profile_memory */
    int64_t bytes, self_bytes;
    ct_device dev;
    bool has_dev;
    unsigned long long stream; /* the id of the stream a device kernel went to (0: none) */
} prof_event;

static atomic_bool g_on;
static bool g_shapes;
static int64_t g_origin_ns;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static prof_event *g_events;
static int64_t g_count, g_cap;
static atomic_int g_next_tid;

/* A backend's range markers (NVTX on CUDA), looked up at start. */
typedef void (*range_push_fn)(const char *name);
typedef void (*range_pop_fn)(void);
static range_push_fn g_range_push;
static range_pop_fn g_range_pop;

static _Thread_local prof_event tl_open[DEPTH_CAP];
static _Thread_local int tl_depth, tl_tid;
/* bytes allocated on this thread outside any kernel record since the last
 * kernel or range boundary: an op allocates its outputs just before it
 * dispatches, so they belong to the next kernel */
static _Thread_local int64_t tl_pending;
static _Thread_local int tl_pending_run; /* the run tl_pending belongs to */
static atomic_int g_run;

/* This thread's pending bytes, dropped when they are from an earlier run. */
static int64_t *pending(void) {
    const int run = atomic_load_explicit(&g_run, memory_order_relaxed);
    if (tl_pending_run != run) tl_pending = 0, tl_pending_run = run;
    return &tl_pending;
}

int64_t cti_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Shared with the memory history (mem_history.c), so that a thread has one
 * number in traces and snapshots. */
int cti_thread_id(void) {
    if (!tl_tid) tl_tid = atomic_fetch_add(&g_next_tid, 1) + 1;
    return tl_tid;
}

/* ---- recording -------------------------------------------------------------------------- */

/* A timing event recorded now on dev's current stream, or none (*ev NULL)
 * when that fails; the error is cleared, as it belongs to no op. */
static void timing_event(ct_event **ev, ct_device dev) {
    *ev = ct_event_create(.enable_timing = true);
    if (*ev && ct_event_record(*ev, ct_current_stream(dev)) == CT_OK) return;
    ct_event_destroy(*ev);
    *ev = NULL;
    ct_clear_error();
}

static void open_record(const char *name, const ct_tensor *t, bool kernel) {
    if (tl_depth >= DEPTH_CAP) { /* too deep to record: count it so the pops stay paired */
        tl_depth++;
        return;
    }
    prof_event *e = &tl_open[tl_depth++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name ? name : "(unnamed)");
    e->kernel = kernel, e->tid = cti_thread_id();
    e->device_ms = -1;
    int64_t *outputs = pending();
    if (kernel) { /* take the outputs allocated for it from the enclosing record's self */
        e->bytes = e->self_bytes = *outputs;
        if (tl_depth >= 2) tl_open[tl_depth - 2].self_bytes -= *outputs;
    }
    *outputs = 0;
    if (t) {
        e->dev = t->storage->device, e->has_dev = true;
        ct_device_format(t->storage->device, e->device, sizeof e->device);
        if (g_shapes) ct_shape_str(t->shape, t->ndim, e->shape, sizeof e->shape);
        if (kernel && t->storage->device.type != CT_DEVICE_CPU) {
            const ct_stream *s = ct_current_stream(t->storage->device);
            e->stream = s ? s->id : 0;
            timing_event(&e->ev_start, t->storage->device);
        }
    }
    e->start_ns = cti_now_ns();
}

/* ok: the kernel succeeded (a failed one gets no device time, and its
 * error must not be replaced by an event's). */
static void close_record(bool ok) {
    if (tl_depth <= 0) return;
    if (--tl_depth >= DEPTH_CAP) return;
    prof_event e = tl_open[tl_depth];
    if (!e.kernel) tl_pending = 0;
    e.dur_ns = cti_now_ns() - e.start_ns;
    if (e.ev_start && ok) {
        ct_device dev;
        if (ct_device_parse(e.device, &dev) == CT_OK) timing_event(&e.ev_end, dev);
    }
    if (e.ev_start && !e.ev_end) ct_event_destroy(e.ev_start), e.ev_start = NULL;
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) {
        ct_event_destroy(e.ev_start), ct_event_destroy(e.ev_end);
        return;
    }
    pthread_mutex_lock(&g_lock);
    if (g_count == g_cap) {
        int64_t cap = g_cap ? 2 * g_cap : 4096;
        prof_event *grown = realloc(g_events, (size_t)cap * sizeof *grown);
        if (grown) g_events = grown, g_cap = cap;
    }
    const bool kept = g_count < g_cap;
    if (kept) g_events[g_count++] = e; /* out of memory: the event is dropped */
    pthread_mutex_unlock(&g_lock);
    if (!kept) ct_event_destroy(e.ev_start), ct_event_destroy(e.ev_end);
}

/* acquire: a thread that sees the run started also sees its settings */
void cti_prof_begin(const char *op, const ct_tensor *t) {
    if (atomic_load_explicit(&g_on, memory_order_acquire)) open_record(op, t, true);
    if (cti_mem_history_on()) cti_mem_history_op(op);
}

void cti_prof_memory(ct_device dev, size_t nbytes) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return;
    const int depth = tl_depth < DEPTH_CAP ? tl_depth : DEPTH_CAP;
    for (int i = depth - 1; i >= 0; i--) {
        prof_event *e = &tl_open[i];
        if (e->has_dev && !ct_device_equal(e->dev, dev)) continue;
        e->bytes += (int64_t)nbytes;
        if (i == tl_depth - 1) e->self_bytes += (int64_t)nbytes;
    }
    if (tl_depth == 0 || (tl_depth <= DEPTH_CAP && !tl_open[tl_depth - 1].kernel)) *pending() += (int64_t)nbytes;
}

ct_status cti_prof_end(ct_status st) {
    /* pops only a kernel record: one opened by a range, or none at all (the
     * profiler was started while this call ran), is left alone */
    if (tl_depth > 0 && (tl_depth > DEPTH_CAP || tl_open[tl_depth - 1].kernel)) close_record(st == CT_OK);
    return st;
}

void ct_record_function_push(const char *name) {
    if (cti_mem_history_on()) cti_mem_history_range_push(name);
    if (!atomic_load_explicit(&g_on, memory_order_acquire)) return;
    open_record(name, NULL, false);
    if (g_range_push) g_range_push(name ? name : "(unnamed)");
}

void ct_record_function_pop(void) {
    if (cti_mem_range_depth > 0) cti_mem_history_range_pop();
    if (tl_depth > 0 && (tl_depth > DEPTH_CAP || !tl_open[tl_depth - 1].kernel)) {
        close_record(true);
        if (g_range_pop) g_range_pop();
    }
}

/* NVTX (or another backend's markers) for the ranges, when a backend has them. */
static void find_range_markers(void) {
    const ct_backend *b = ct_backend_for(CT_DEVICE_CUDA);
    ct_backend_proc push = b && b->get_proc ? b->get_proc("range_push") : NULL;
    ct_backend_proc pop = b && b->get_proc ? b->get_proc("range_pop") : NULL;
    g_range_push = push && pop ? (range_push_fn)push : NULL;
    g_range_pop = push && pop ? (range_pop_fn)pop : NULL;
}

/* ---- runs ------------------------------------------------------------------------------- */

/* Device times of the recorded kernels: waits for each end event. */
static void resolve_device_times(void) {
    for (int64_t i = 0; i < g_count; i++) {
        prof_event *e = &g_events[i];
        if (!e->ev_start) continue;
        float ms = 0;
        if (ct_event_synchronize(e->ev_end) == CT_OK && ct_event_elapsed_time(e->ev_start, e->ev_end, &ms) == CT_OK)
            e->device_ms = ms;
        else
            ct_clear_error(); /* no device time for this one; the error is nobody's */
        ct_event_destroy(e->ev_start), ct_event_destroy(e->ev_end);
        e->ev_start = e->ev_end = NULL;
    }
}

void ct_profiler_reset(void) {
    pthread_mutex_lock(&g_lock);
    for (int64_t i = 0; i < g_count; i++) ct_event_destroy(g_events[i].ev_start), ct_event_destroy(g_events[i].ev_end);
    free(g_events);
    g_events = NULL, g_count = g_cap = 0;
    pthread_mutex_unlock(&g_lock);
}

ct_status ct_profiler_start(ct_profiler_opts opts) {
    CT_CHECK_STATUS(!atomic_load(&g_on), CT_ERR_STATE, "profiler: a profiling run is already going");
    ct_profiler_reset();
    g_shapes = !opts.no_shapes;
    g_origin_ns = cti_now_ns();
    find_range_markers();
    tl_depth = 0;
    atomic_fetch_add(&g_run, 1);
    atomic_store(&g_on, true);
    return CT_OK;
}

ct_status ct_profiler_stop(void) {
    CT_CHECK_STATUS(atomic_load(&g_on), CT_ERR_STATE, "profiler: no profiling run to stop");
    atomic_store(&g_on, false);
    pthread_mutex_lock(&g_lock);
    resolve_device_times();
    pthread_mutex_unlock(&g_lock);
    return CT_OK;
}

bool ct_profiler_is_enabled(void) { return atomic_load(&g_on); }

int64_t ct_profiler_num_events(void) {
    pthread_mutex_lock(&g_lock);
    int64_t n = g_count;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* ---- Chrome trace -------------------------------------------------------------------------- */

static void write_event(FILE *f, const prof_event *e, bool first) {
    fprintf(f, "%s\n  {\"name\": ", first ? "" : ",");
    cti_json_string(f, e->name);
    fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {",
            e->kernel ? "kernel" : "user_annotation", e->tid, (double)(e->start_ns - g_origin_ns) / 1e3,
            (double)e->dur_ns / 1e3);
    fprintf(f, "\"bytes_allocated\": %lld, \"self_bytes_allocated\": %lld", (long long)e->bytes,
            (long long)e->self_bytes);
    if (e->device[0]) fprintf(f, ", \"device\": \"%s\"", e->device);
    if (e->shape[0]) fprintf(f, ", \"input_shape\": \"%s\"", e->shape);
    if (e->stream) fprintf(f, ", \"stream\": %llu", e->stream);
    if (e->device_ms >= 0) fprintf(f, ", \"device_time_us\": %.3f", e->device_ms * 1e3);
    fputs("}}", f);
}

ct_status ct_profiler_export_chrome_trace(const char *path) {
    CT_CHECK_STATUS(path != NULL, CT_ERR_INVALID_ARG, "export_chrome_trace: NULL path");
    char tmp[4096];
    CT_CHECK_STATUS(strlen(path) + 8 < sizeof tmp, CT_ERR_INVALID_ARG, "export_chrome_trace: path too long");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CT_CHECK_STATUS(f != NULL, CT_ERR_IO, "export_chrome_trace: cannot write %s", path);
    fputs("{\"traceEvents\": [", f);
    pthread_mutex_lock(&g_lock);
    for (int64_t i = 0; i < g_count; i++) write_event(f, &g_events[i], i == 0);
    pthread_mutex_unlock(&g_lock);
    fputs("\n], \"displayTimeUnit\": \"ms\"}\n", f);
    const bool ok = !ferror(f) && fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return ct_error_set(CT_ERR_IO, "export_chrome_trace: writing %s failed", path);
    }
    return CT_OK;
}

/* ---- key_averages().table() ------------------------------------------------------------------ */

typedef struct prof_row {
    char name[NAME_CAP];
    int64_t calls, total_ns, bytes, self_bytes;
    double device_ms; /* < 0: no device time */
    bool kernel;
} prof_row;

static _Thread_local const char *g_sort; /* the sort key of the table being printed */

static int row_order(const void *pa, const void *pb) {
    const prof_row *a = pa, *b = pb;
    if (!strcmp(g_sort, "name")) return strcmp(a->name, b->name);
    double x, y;
    if (!strcmp(g_sort, "count")) x = (double)a->calls, y = (double)b->calls;
    else if (!strcmp(g_sort, "cpu_time_avg")) x = (double)a->total_ns / a->calls, y = (double)b->total_ns / b->calls;
    else x = (double)a->total_ns, y = (double)b->total_ns;
    return x < y ? 1 : x > y ? -1 : strcmp(a->name, b->name);
}

static int64_t aggregate(prof_row *rows, int64_t *kernel_ns) {
    int64_t n = 0;
    *kernel_ns = 0;
    for (int64_t i = 0; i < g_count; i++) {
        const prof_event *e = &g_events[i];
        if (e->kernel) *kernel_ns += e->dur_ns;
        int64_t k = 0;
        while (k < n && (rows[k].kernel != e->kernel || strcmp(rows[k].name, e->name))) k++;
        if (k == n) memcpy(rows[n].name, e->name, NAME_CAP), rows[n].kernel = e->kernel, rows[n].device_ms = -1, n++;
        rows[k].calls++, rows[k].total_ns += e->dur_ns;
        rows[k].bytes += e->bytes, rows[k].self_bytes += e->self_bytes;
        if (e->device_ms >= 0) rows[k].device_ms = (rows[k].device_ms < 0 ? 0 : rows[k].device_ms) + e->device_ms;
    }
    return n;
}

/* PyTorch's _format_memory: "%.2f Gb" / "Mb" / "Kb", else "%d b". */
static void format_memory(int64_t n, char *buf, size_t size) {
    const double kb = 1024.0, v = (double)n;
    if (v >= kb * kb * kb || -v >= kb * kb * kb) snprintf(buf, size, "%.2f Gb", v / (kb * kb * kb));
    else if (v >= kb * kb || -v >= kb * kb) snprintf(buf, size, "%.2f Mb", v / (kb * kb));
    else if (v >= kb || -v >= kb) snprintf(buf, size, "%.2f Kb", v / kb);
    else snprintf(buf, size, "%lld b", (long long)n);
}

ct_status ct_profiler_print_table(FILE *out, const char *sort_by, int row_limit) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "key_averages().table: NULL stream");
    const char *sort = sort_by ? sort_by : "cpu_time_total";
    CT_CHECK_STATUS(!strcmp(sort, "cpu_time_total") || !strcmp(sort, "cpu_time_avg") || !strcmp(sort, "count") ||
                        !strcmp(sort, "name"),
                    CT_ERR_INVALID_ARG,
                    "key_averages().table: unknown sort_by '%s' (cpu_time_total, cpu_time_avg, count or name)", sort);
    pthread_mutex_lock(&g_lock);
    prof_row *rows = calloc((size_t)(g_count > 0 ? g_count : 1), sizeof *rows);
    int64_t kernel_ns = 0, n = rows ? aggregate(rows, &kernel_ns) : 0;
    pthread_mutex_unlock(&g_lock);
    CT_CHECK_STATUS(rows != NULL, CT_ERR_OOM, "key_averages().table: out of memory");
    g_sort = sort;
    qsort(rows, (size_t)n, sizeof *rows, row_order);
    fprintf(out, "%-40s %8s %14s %12s %9s %17s %12s %12s\n", "Name", "Calls", "CPU total(ms)", "CPU avg(us)",
            "% kernel", "Device total(ms)", "Mem", "Self Mem");
    for (int64_t i = 0; i < n && (row_limit <= 0 || i < row_limit); i++) {
        const prof_row *r = &rows[i];
        char share[16] = "-", dev[24] = "-";
        if (r->kernel && kernel_ns > 0) snprintf(share, sizeof share, "%.1f%%", 100.0 * (double)r->total_ns / (double)kernel_ns);
        if (r->device_ms >= 0) snprintf(dev, sizeof dev, "%.3f", r->device_ms);
        char mem[24], self[24];
        format_memory(r->bytes, mem, sizeof mem);
        format_memory(r->self_bytes, self, sizeof self);
        fprintf(out, "%-40.40s %8lld %14.3f %12.2f %9s %17s %12s %12s\n", r->name, (long long)r->calls,
                (double)r->total_ns / 1e6, (double)r->total_ns / 1e3 / (double)r->calls, share, dev, mem, self);
    }
    fprintf(out, "Kernel time total: %.3f ms (%lld kinds of events)\n", (double)kernel_ns / 1e6, (long long)n);
    free(rows);
    return CT_OK;
}
