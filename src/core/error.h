/*
 * error.h — how library code raises errors (internal).
 *
 * ct_error_set() records a code and a printf-style message on the calling
 * thread and calls the user's handler. The CT_CHECK family keeps validation
 * code short: every check names the operation and the offending values.
 * CT_ASSERT is for invariants that only a ctorch bug can break.
 */
#ifndef CT_CORE_ERROR_H
#define CT_CORE_ERROR_H

#include <stdio.h>
#include <stdlib.h>

#include "ctorch/status.h"

#if defined(__GNUC__)
#  define CT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define CT_PRINTF(a, b)
#endif

/* Record an error; returns code so callers can `return ct_error_set(…)`. */
ct_status ct_error_set(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);

/* The error already recorded on this thread, if any (a NULL argument is
 * usually the result of a call that failed, and that failure is the one to
 * report); else records code with the message and returns code. */
ct_status ct_error_pending_or(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);

/* A NULL tensor (or object) argument. It is usually the result of a call
 * that failed, whose error must stay so that ct_relu(ct_add(a, b)) reports
 * add's failure (ctorch/status.h); with no error recorded on the thread it
 * is a plain NULL argument, and an error naming op is recorded. Returns the
 * status to report. */
ct_status ct_error_null_input(const char *op);

/* Set the error and return `ret` if cond is false. */
#define CT_CHECK_RET(cond, ret, code, ...)      \
    do {                                        \
        if (!(cond)) {                          \
            ct_error_set((code), __VA_ARGS__);  \
            return ret;                         \
        }                                       \
    } while (0)
#define CT_CHECK_NULL(cond, code, ...) CT_CHECK_RET(cond, NULL, code, __VA_ARGS__)
#define CT_CHECK_STATUS(cond, code, ...) CT_CHECK_RET(cond, (code), code, __VA_ARGS__)

/* A NULL object argument (a tensor, module, optimizer, scheduler, dataset,
 * sampler, dataloader or its iterator, transform, tensor dict, stream,
 * event, summary writer): what a ctorch call returns when it failed, so the
 * error already recorded is the one the user needs and must not be replaced
 * (ct_step(ct_sgd(NULL, …)) reports why the model was NULL). With no error
 * recorded it is a plain NULL argument: CT_ERR_INVALID_ARG with the message.
 * Plain pointers (paths, output pointers, the caller's buffers) use
 * CT_CHECK_* and always record their own error. CT_CHECK_OBJ returns ret;
 * CT_CHECK_OBJ_STATUS returns the code of the error that stands. */
#define CT_CHECK_OBJ(obj, ret, ...)                                \
    do {                                                           \
        if (!(obj)) {                                              \
            (void)ct_error_pending_or(CT_ERR_INVALID_ARG, __VA_ARGS__); \
            return ret;                                            \
        }                                                          \
    } while (0)
#define CT_CHECK_OBJ_STATUS(obj, ...)                                       \
    do {                                                                    \
        if (!(obj)) return ct_error_pending_or(CT_ERR_INVALID_ARG, __VA_ARGS__); \
    } while (0)

/* Propagate a failing ct_status. */
#define CT_TRY(expr)                       \
    do {                                   \
        ct_status ct_try_s_ = (expr);      \
        if (ct_try_s_ != CT_OK)            \
            return ct_try_s_;              \
    } while (0)

/* Internal invariants: a failure is a ctorch bug. */
#define CT_ASSERT(cond)                                                              \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "ctorch internal error: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

#endif /* CT_CORE_ERROR_H */
