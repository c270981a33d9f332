/*
 * mem_history.h — memory history (internal): what made each device block,
 * for snapshots and out-of-memory messages, as PyTorch's
 * torch.cuda.memory._record_memory_history.
 *
 * Why lazily named: ops allocate their outputs before they dispatch the
 * kernel that writes them, so when a block is allocated the op is not known
 * yet. A block allocated while history is on gets a record (the open
 * CT_RECORD_FUNCTION ranges, and the tensor's shape and dtype when
 * ct_tensor_alloc made it); the next kernel dispatched on the same thread
 * names every record of that thread still unnamed. The allocator owns the
 * records through its blocks and calls in here with its own lock held; this
 * module never calls back into an allocator (lock order: cache, history).
 *
 * While history is off an allocation, a dispatch and a range push each cost
 * one relaxed atomic load.
 */
#ifndef CT_CORE_MEM_HISTORY_H
#define CT_CORE_MEM_HISTORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctorch/memory.h"

extern atomic_bool cti_mem_history_flag;
static inline bool cti_mem_history_on(void) {
    return atomic_load_explicit(&cti_mem_history_flag, memory_order_relaxed);
}

typedef struct cti_mem_record cti_mem_record;

/* ct_tensor_alloc: the next allocation of this thread is for a tensor of
 * this shape and dtype (call only while history is on); _done forgets it. */
void cti_mem_history_tensor(const int64_t *shape, int ndim, ct_dtype dt);
void cti_mem_history_tensor_done(void);

/* A block was handed out (history on): its record, NULL when out of host
 * memory. Logs an "alloc" event. */
cti_mem_record *cti_mem_history_alloc(ct_device dev, uint64_t addr, size_t size, size_t requested,
                                      const void *stream);
/* The block of r (at addr, size bytes) was freed: logs "free_completed"
 * when history is on and log is set (false: allocator teardown). Frees r. */
void cti_mem_history_free(cti_mem_record *r, ct_device dev, uint64_t addr, size_t size, const void *stream,
                          bool log);
/* An allocation of alloc_size failed for good (history on). */
void cti_mem_history_oom(ct_device dev, size_t alloc_size, const void *stream);
/* Copy r's context out (NULL r: zeroed, false). */
bool cti_mem_history_context(const cti_mem_record *r, ct_alloc_context *out);

/* "64.00 MiB float32 [4096, 4096] from matmul in range 'train > forward'"
 * for a block of `size` bytes with record r (just the size when r is NULL). */
void cti_mem_history_describe(const cti_mem_record *r, size_t size, char *buf, size_t n);

/* The dispatch macros: the kernel `op` is about to run on this thread. */
void cti_mem_history_op(const char *op);
/* CT_RECORD_FUNCTION ranges seen by history (push only while it is on; a
 * pop with nothing pushed is ignored). */
void cti_mem_history_range_push(const char *name);
extern _Thread_local int cti_mem_range_depth;
void cti_mem_history_range_pop(void);

/* Writes the recorded events of dev as a JSON array into f (the snapshot's
 * device trace). */
void cti_mem_history_write_trace(FILE *f, ct_device dev);
/* Writes ctx as JSON members ("op", "range", "shape", "dtype", "thread",
 * "frames"; not its time),
 * each preceded by ", ". */
void cti_mem_history_write_context(FILE *f, const ct_alloc_context *ctx);
void cti_json_string(FILE *f, const char *s);

#endif /* CT_CORE_MEM_HISTORY_H */
