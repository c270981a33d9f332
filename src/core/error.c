/*
 * error.c — the thread-local last error and the optional error handler.
 *
 * Like sqlite3_errmsg, but per thread: a failing call stores its code and
 * message here; the caller reads them with ct_last_status/ct_last_error.
 * Messages are formatted into a fixed per-thread buffer so that reporting an
 * error never allocates (it must work when memory has run out).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

#define CT_ERROR_MAX 2048 /* room for an out-of-memory message with its largest live tensors */

static _Thread_local ct_status tl_status = CT_OK;
static _Thread_local char tl_message[CT_ERROR_MAX];

static ct_error_handler g_handler = NULL;
static void *g_handler_user = NULL;

/* Formatted on the stack first: a message may quote the previous one
 * (ct_set_error(code, "...: %s", ct_last_error())), and vsnprintf must not
 * read the buffer it writes. */
static ct_status error_vset(ct_status code, const char *fmt, va_list ap) {
    char msg[CT_ERROR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(tl_message, msg, sizeof msg);
    tl_status = code;
    ct_error_handler h = g_handler;
    if (h) h(code, tl_message, g_handler_user);
    return code;
}

ct_status ct_error_set(ct_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    error_vset(code, fmt, ap);
    va_end(ap);
    return code;
}

/* The public door to the same machinery, for user callbacks. A code that is
 * not an error would make a failure look like success to the caller, so it
 * is recorded (and returned) as CT_ERR_INVALID_ARG, with the message. */
ct_status ct_set_error(ct_status code, const char *fmt, ...) {
    if (!fmt) return ct_error_set(code > CT_OK && code <= CT_ERR_TIMEOUT ? code : CT_ERR_INVALID_ARG,
                                  "ct_set_error: NULL format string (code %s)", ct_status_str(code));
    char msg[CT_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (code <= CT_OK || code > CT_ERR_TIMEOUT)
        return ct_error_set(CT_ERR_INVALID_ARG, "ct_set_error: code %d is not an error code (message: %s)",
                            (int)code, msg);
    return ct_error_set(code, "%s", msg);
}

ct_status ct_error_pending_or(ct_status code, const char *fmt, ...) {
    if (tl_status != CT_OK) return tl_status;
    va_list ap;
    va_start(ap, fmt);
    error_vset(code, fmt, ap);
    va_end(ap);
    return code;
}

ct_status ct_error_null_input(const char *op) {
    return ct_error_pending_or(CT_ERR_INVALID_ARG, "%s: a tensor argument is NULL", op);
}

ct_status ct_last_status(void) { return tl_status; }
const char *ct_last_error(void) { return tl_message; }

void ct_clear_error(void) {
    tl_status = CT_OK;
    tl_message[0] = '\0';
}

void ct_set_error_handler(ct_error_handler handler, void *user) {
    g_handler_user = user;
    g_handler = handler;
}

const char *ct_status_str(ct_status s) {
    switch (s) {
    case CT_OK: return "CT_OK";
    case CT_ERR_INVALID_ARG: return "CT_ERR_INVALID_ARG";
    case CT_ERR_SHAPE: return "CT_ERR_SHAPE";
    case CT_ERR_DTYPE: return "CT_ERR_DTYPE";
    case CT_ERR_DEVICE: return "CT_ERR_DEVICE";
    case CT_ERR_OOM: return "CT_ERR_OOM";
    case CT_ERR_UNSUPPORTED: return "CT_ERR_UNSUPPORTED";
    case CT_ERR_IO: return "CT_ERR_IO";
    case CT_ERR_FORMAT: return "CT_ERR_FORMAT";
    case CT_ERR_INDEX: return "CT_ERR_INDEX";
    case CT_ERR_BACKEND: return "CT_ERR_BACKEND";
    case CT_ERR_INTERNAL: return "CT_ERR_INTERNAL";
    case CT_ERR_STATE: return "CT_ERR_STATE";
    case CT_ERR_TIMEOUT: return "CT_ERR_TIMEOUT";
    }
    return "CT_ERR_UNKNOWN";
}
