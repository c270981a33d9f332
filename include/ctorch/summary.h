/*
 * ctorch/summary.h — TensorBoard event files, as torch.utils.tensorboard's
 * SummaryWriter (scalars only).
 *
 *   ct_summary_writer *w = ct_summary_writer_new("runs/exp1");
 *   ct_summary_add_scalar(w, "Loss/train", loss, step);
 *   ct_summary_writer_close(w);          // flushes; `tensorboard --logdir runs`
 *
 * The file is written without a protobuf library: TFRecord framing with
 * masked CRC32C around hand-encoded Event protos (docs/tensorboard.md). One
 * writer owns one file, events.out.tfevents.<time>.<host>.<pid>.<n>, created in
 * log_dir (and its parents) by ct_summary_writer_new; its first record is the
 * "brain.Event:2" file version. Events are buffered and written by
 * ct_summary_flush, by ct_summary_writer_close, and whenever flush_secs have
 * passed since the last flush.
 */
#ifndef CTORCH_SUMMARY_H
#define CTORCH_SUMMARY_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_summary_writer ct_summary_writer;

/* SummaryWriter(log_dir): NULL with CT_ERR_IO naming the path when the
 * folder or the file cannot be created. A NULL log_dir is PyTorch's default,
 * runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname> under the working directory. */
CT_API ct_summary_writer *ct_summary_writer_new(const char *log_dir);
/* add_scalar(tag, value, global_step) with the current wall time. The tag is
 * non-empty UTF-8 (else CT_ERR_INVALID_ARG); the value is stored as float32
 * (simple_value), NaN and infinities included. CT_ERR_IO when a flush that
 * this call triggers fails (the events stay buffered; see ct_summary_flush). */
CT_API ct_status ct_summary_add_scalar(ct_summary_writer *w, const char *tag, double value, int64_t step);
/* The same with an explicit wall time (seconds since the epoch, finite). */
CT_API ct_status ct_summary_add_scalar_at(ct_summary_writer *w, const char *tag, double value,
                                          int64_t step, double wall_time);
/* Seconds between automatic flushes (default 120, as PyTorch). There is no
 * background thread: the time is checked when an event is added (and 1 MiB
 * of waiting events is written at once). 0 writes every event at once. */
CT_API void ct_summary_set_flush_secs(ct_summary_writer *w, double secs);
/* Writes the buffered events. If the write fails (disk full), the file is cut
 * back to its last complete record, the events stay buffered for the next
 * flush, and CT_ERR_IO names the path and the reason. */
CT_API ct_status ct_summary_flush(ct_summary_writer *w);
/* The event file's path (NULL for a NULL writer). */
CT_API const char *ct_summary_writer_path(const ct_summary_writer *w);
/* Flush and close; reports a failed final write. NULL is a no-op. */
CT_API ct_status ct_summary_writer_close(ct_summary_writer *w);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_SUMMARY_H */
