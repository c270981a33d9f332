/*
 * ctorch/profiler.h — torch.profiler in C: named ranges
 * (record_function), and a profiling run that records every kernel ctorch
 * dispatches to a backend (its name, device, first input's shape, thread
 * and host time), exported as a Chrome trace (chrome://tracing, Perfetto)
 * or summarised as key_averages().table() does.
 *
 *     with torch.profiler.profile() as prof:      ct_profiler_start((ct_profiler_opts){0});
 *         with record_function("forward"):        CT_RECORD_FUNCTION("forward") {
 *             model(x)                                ct_forward(model, x);
 *                                                 }
 *                                                 ct_profiler_stop();
 *     prof.export_chrome_trace("trace.json")      ct_profiler_export_chrome_trace("trace.json");
 *     print(prof.key_averages().table(            ct_profiler_print_table(stdout, "cpu_time_total", 10);
 *         sort_by="cpu_time_total", row_limit=10))
 *
 * Named ranges are also NVTX ranges (Nsight Systems) in a build with the
 * CUDA backend. A record's time is host time: on an asynchronous device
 * (OpenCL, CUDA) it covers enqueueing the kernel; those kernels also get
 * their device time from a pair of timing events, resolved when the run
 * stops (which therefore waits for the device). While
 * no profiler runs, a range or a kernel costs one atomic load.
 * Records are kept in memory until the next start or ct_profiler_reset.
 */
#ifndef CTORCH_PROFILER_H
#define CTORCH_PROFILER_H

#include <stdbool.h>
#include <stdio.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_profiler_opts {
    bool no_shapes; /* record_shapes=False: leave input shapes out of the records */
} ct_profiler_opts;

/* Starts recording (dropping the previous run's records); CT_ERR_STATE when
 * a run is already going. */
CT_API ct_status ct_profiler_start(ct_profiler_opts opts);
CT_API ct_status ct_profiler_stop(void);
CT_API bool ct_profiler_is_enabled(void);
/* Drops the recorded events. */
CT_API void ct_profiler_reset(void);
/* Events recorded so far (ranges and kernels). */
CT_API int64_t ct_profiler_num_events(void);

/* record_function: a named range on the calling thread; ranges nest. A pop
 * without a push is ignored. Names are copied. */
CT_API void ct_record_function_push(const char *name);
CT_API void ct_record_function_pop(void);
#define CT_RECORD_FUNCTION(name) CT_RECORD_FUNCTION_AT_((name), CT_CONCAT_(ct_record_once_, __LINE__))
#define CT_RECORD_FUNCTION_AT_(name, once) \
    for (int once = (ct_record_function_push(name), 1); once; once = 0, ct_record_function_pop())

/* Writes the recorded events as Chrome trace JSON ("traceEvents", complete
 * events with microsecond times); the file is replaced atomically. */
CT_API ct_status ct_profiler_export_chrome_trace(const char *path);
/* key_averages().table(): one row per name with its calls, total and
 * average host time and share of the run's kernel time, sorted by sort_by ("cpu_time_total" (default
 * for NULL), "cpu_time_avg", "count" or "name"); row_limit <= 0: all. */
CT_API ct_status ct_profiler_print_table(FILE *out, const char *sort_by, int row_limit);

#ifdef __cplusplus
}
#endif

#endif /* CTORCH_PROFILER_H */
