/*
 * ctorch/status.h — the error model.
 *
 * Every ctorch call that can fail reports failure in its return value:
 *   - functions returning a pointer (ct_tensor *, …) return NULL,
 *   - functions returning ct_status return a non-zero code,
 * and store a message on the calling thread that names the operation and the
 * values involved (read it with ct_last_error()).
 *
 * The first error is the one reported. A NULL object argument — a tensor,
 * module, optimizer, scheduler, dataset, sampler, dataloader or iterator,
 * transform, tensor dict, stream, event or summary writer, or one in an
 * array of them — is usually what a failed call returned, so a call that
 * receives one fails (or answers a neutral value) and keeps the error
 * already stored: ct_relu(ct_add(a, b)) reports add's failure, and
 * ct_step(ct_sgd(ct_nn_linear(-1, 2, true), o)) reports Linear's. With no
 * error pending it records its own ("step: NULL optimizer"), except that
 * tensor-returning ops record nothing. A NULL plain argument (a path, an
 * output pointer, a FILE *, the caller's buffer) always records its own
 * error. Calls documented to accept NULL (ct_release, ct_numel, the *_free
 * functions, …) stay quiet.
 *
 * The library never aborts or exits on bad input or runtime failure. An
 * optional handler (ct_set_error_handler) is called for every error as it is
 * raised, for programs that prefer to log or to stop at the first failure.
 */
#ifndef CTORCH_STATUS_H
#define CTORCH_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(CTORCH_BUILDING_SHARED)
#  define CT_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define CT_API __attribute__((visibility("default")))
#else
#  define CT_API
#endif

/* Result codes. Values are stable: new codes are only ever appended. */
typedef enum ct_status {
    CT_OK = 0,
    CT_ERR_INVALID_ARG = 1,  /* an argument is out of range or malformed      */
    CT_ERR_SHAPE = 2,        /* shapes do not match or cannot broadcast       */
    CT_ERR_DTYPE = 3,        /* a dtype is not supported for the operation    */
    CT_ERR_DEVICE = 4,       /* device mismatch, unknown or absent device     */
    CT_ERR_OOM = 5,          /* out of memory (host or device)                */
    CT_ERR_UNSUPPORTED = 6,  /* the backend or build lacks this feature       */
    CT_ERR_IO = 7,           /* a file could not be read or written           */
    CT_ERR_FORMAT = 8,       /* a file or string is malformed                 */
    CT_ERR_INDEX = 9,        /* an index is out of bounds                     */
    CT_ERR_BACKEND = 10,     /* a backend library reported a failure         */
    CT_ERR_INTERNAL = 11,    /* a bug in ctorch: please report it             */
    CT_ERR_STATE = 12,       /* the call is not valid in the current state    */
    CT_ERR_TIMEOUT = 13      /* a collective or a wait ran past its deadline  */
} ct_status;

/* The code of the last error raised on this thread (CT_OK if none since the
 * last ct_clear_error()). */
CT_API ct_status ct_last_status(void);

/* The message of the last error raised on this thread, "" if none. The
 * pointer stays valid until the next ctorch call on this thread. */
CT_API const char *ct_last_error(void);

/* Forget the last error of this thread. */
CT_API void ct_clear_error(void);

#if defined(__GNUC__)
#  define CT_API_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define CT_API_PRINTF(fmt, args)
#endif

/* Raise an error from user code, as the library does: code and a printf-style
 * message are stored on this thread (ct_last_status / ct_last_error) and the
 * error handler is called. Returns code, so a callback that fails can
 *
 *     return ct_set_error(CT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
 *
 * This is how callbacks (a dataset's get, a collate_fn, a transform
 * function, a sampler's fill, a module's forward, a gradcheck function)
 * report why they failed. The library clears the thread's error before it
 * calls any of them, and
 * reports one that fails without setting an error by naming it (e.g.
 * "MyData: dataset get(17) failed with CT_ERR_IO without setting an
 * error"), never with an earlier, unrelated message. The message may quote
 * ct_last_error(). A code that is not an error (CT_OK or unknown) is
 * recorded and returned as CT_ERR_INVALID_ARG. */
CT_API ct_status ct_set_error(ct_status code, const char *fmt, ...) CT_API_PRINTF(2, 3);

/* A short constant name for a code, e.g. "CT_ERR_SHAPE". */
CT_API const char *ct_status_str(ct_status s);

/* Called for every error as it is raised, on the raising thread. NULL removes
 * the handler. The handler must not call back into ctorch. */
typedef void (*ct_error_handler)(ct_status code, const char *message, void *user);
CT_API void ct_set_error_handler(ct_error_handler handler, void *user);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_STATUS_H */
