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

#include "error.h"

#define CT_ERROR_MAX 1024

static _Thread_local ct_status tl_status = CT_OK;
static _Thread_local char tl_message[CT_ERROR_MAX];

static ct_error_handler g_handler = NULL;
static void *g_handler_user = NULL;

ct_status ct_error_set(ct_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_message, sizeof tl_message, fmt, ap);
    va_end(ap);
    tl_status = code;
    ct_error_handler h = g_handler;
    if (h) h(code, tl_message, g_handler_user);
    return code;
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
    }
    return "CT_ERR_UNKNOWN";
}
