/*
 * api_errors.h — the row macros and fixtures of test_api_errors.c, shared
 * by its row files (api_errors_*.c, included into it).
 *
 * A row names the function it tests, the arguments, and what failing
 * cleanly means for it:
 *   ERR_PTR(fn, (args), "text")        returns NULL, message contains text
 *   ERR_STATUS(fn, (args), "text")     returns a CT_ERR_* code (the one
 *                                       recorded), message contains text
 *   ERR_VAL(fn, (args), ok, "text")    any return type: `ok` holds for the
 *                                       result r_, message contains text
 *   ERR_VOID(fn, (args), "text")       a void function records an error
 *   PROP_PTR / PROP_VAL / PROP_VOID (fn, (args)[, ok])
 *                                       NULL from a failed call: the error
 *                                       value, and the earlier error is kept
 *   PROP_STATUS(fn, (args), "text")    the same; and with no earlier error,
 *                                       one that contains text (NULL: none
 *                                       is required)
 *   PROP_PTR_SAYS(fn, (args), "text") / PROP_VAL_SAYS(fn, (args), ok, "text")
 *                                       PROP_PTR / PROP_VAL, and with no
 *                                       earlier error one that contains text
 *                                       (a NULL module, optimizer, dict, …)
 *   QUIET_VAL(fn, (args), ok) / QUIET_VOID(fn, (args))
 *                                       documented no-ops and neutral values
 * The text may be NULL for ERR rows (any message). Every row runs alone in a
 * child process with fresh fixtures (F), created before the call.
 */
#ifndef CT_TEST_API_ERRORS_H
#define CT_TEST_API_ERRORS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ctorch/ctorch.h"

typedef enum api_kind { API_ERR, API_PROPAGATE, API_QUIET } api_kind;
typedef enum api_mode { API_LIST, API_RUN } api_mode;

#define API_MAX_ROWS 2048

typedef struct api_row_info {
    const char *fn, *args;
    int line;
} api_row_info;

typedef struct api_run {
    api_mode mode;
    int target, next;
    bool failed;
    api_row_info rows[API_MAX_ROWS];
    int nrows;
} api_run;
extern api_run g_run;

/* True in the child for the one selected row (and records rows in LIST mode). */
bool api_select(const char *fn, const char *args, int line);
/* Fixtures, then the error state the row kind starts from. */
void api_before(api_kind kind);
void api_check_message(api_kind kind, const char *want);
void api_fail(const char *fmt, ...);

/* Objects the rows pass as valid arguments; made fresh in each child. */
typedef struct api_fixtures {
    ct_tensor *t;         /* float32 [2, 3] of ones                 */
    ct_tensor *img;       /* float32 [1, 1, 4, 4]                   */
    ct_tensor *idx;       /* int64 [2] = {0, 1}                     */
    ct_tensor *bad_idx;   /* int64 [1] = {7}: out of range          */
    ct_tensor *bad_label; /* int64 [2] = {0, 7}: a class that is not */
    ct_tensor *u8img;     /* uint8 [4, 4]                           */
    ct_tensor *mask;      /* bool [2, 3]                            */
    ct_tensor *empty;     /* float32 [0]                            */
    ct_tensor *one;       /* float32 [1]                            */
    ct_tensor *huge;      /* `one` expanded to [2^62]               */
    ct_tensor *expanded;  /* `one` expanded to [3] (stride 0)       */
    ct_tensor *line;      /* float32 [4], and two overlapping views: */
    ct_tensor *row0, *row1; /* line[0:3] and line[1:4]              */
    ct_module *m;         /* Linear(3, 2)                           */
    ct_module *seq;       /* Sequential(ReLU)                       */
    ct_module *silent;    /* "Silent": forward fails, says nothing  */
    ct_optimizer *opt;    /* SGD(m, lr 0.1)                         */
    ct_scheduler *sched;  /* StepLR(opt, 1, 0.5)                    */
    ct_dataset *ds;       /* TensorDataset(t)                       */
    ct_dataloader *dl;    /* DataLoader(ds, batch 2), no workers    */
    ct_dataloader_iter *it;
    ct_dataset *failing_ds;        /* "Failing": get fails silently */
    ct_dataloader *failing_dl;     /* DataLoader(failing_ds)        */
    ct_dataloader_iter *failing_it;
    ct_sampler *sampler;           /* SequentialSampler(2)          */
    ct_sampler *failing_sampler;   /* fill fails silently           */
    ct_transform *tf;     /* Normalize(0.5, 0.5)                    */
    ct_tensor_dict *dict; /* {"t": t}                               */
    ct_stream *stream;    /* a new CPU stream                       */
    ct_event *ev;         /* a CPU event                            */
    ct_summary_writer *w; /* in dir/logs                            */
    char dir[64];         /* a temporary folder (removed at exit)   */
    char fifo[96];        /* a FIFO in dir                          */
} api_fixtures;
extern api_fixtures F;
void api_fixtures_make(void);
/* dir/name (a few calls' worth of static buffers). "file" is a regular
 * file, "fifo" and "fifo.gz" FIFOs, "cifar/test_batch.bin" a FIFO. */
const char *api_path(const char *name);
void api_fixtures_free(void);

/* Every row file contributes its rows here. */
void api_rows_all(void);

#define API_BEGIN(fn, args, kind) if (api_select(#fn, #args, __LINE__) && (api_before(kind), 1))

#define ERR_PTR(fn, args, want)                                                     \
    API_BEGIN(fn, args, API_ERR) {                                                        \
        const void *r_ = (const void *)(fn args);                                   \
        if (r_ != NULL) api_fail("%s%s returned a result, expected NULL", #fn, #args); \
        api_check_message(API_ERR, want);                                           \
    }
#define ERR_STATUS(fn, args, want)                                                  \
    API_BEGIN(fn, args, API_ERR) {                                                        \
        ct_status r_ = (fn args);                                                   \
        if (r_ == CT_OK) api_fail("%s%s returned CT_OK", #fn, #args);               \
        else if (r_ != ct_last_status())                                            \
            api_fail("%s%s returned %s but recorded %s", #fn, #args, ct_status_str(r_), \
                     ct_status_str(ct_last_status()));                              \
        api_check_message(API_ERR, want);                                           \
    }
#define ERR_VAL(fn, args, ok, want)                                                 \
    API_BEGIN(fn, args, API_ERR) {                                                        \
        __typeof__(fn args) r_ = (fn args);                                         \
        (void)r_;                                                                   \
        if (!(ok)) api_fail("%s%s: expected %s", #fn, #args, #ok);                  \
        api_check_message(API_ERR, want);                                           \
    }
#define ERR_VOID(fn, args, want)                                                    \
    API_BEGIN(fn, args, API_ERR) {                                                        \
        fn args;                                                                    \
        api_check_message(API_ERR, want);                                           \
    }
/* A NULL tensor or object from a failed call: the earlier error stays.
 * Tensor-returning ops record nothing more even for a plain NULL
 * (ctorch/status.h); status-returning functions then record an error that
 * contains want (checked after clearing the error and calling again). */
#define PROP_PTR(fn, args)                                                          \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        const void *r_ = (const void *)(fn args);                                   \
        if (r_ != NULL) api_fail("%s%s returned a result, expected NULL", #fn, #args); \
        api_check_message(API_PROPAGATE, NULL);                                     \
    }
#define PROP_STATUS(fn, args, want)                                                 \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        ct_status r_ = (fn args);                                                   \
        if (r_ == CT_OK) api_fail("%s%s returned CT_OK", #fn, #args);               \
        api_check_message(API_PROPAGATE, NULL);                                     \
        if (want) {                                                                 \
            ct_clear_error();                                                       \
            if ((r_ = (fn args)) == CT_OK) api_fail("%s%s returned CT_OK", #fn, #args); \
            api_check_message(API_ERR, want);                                       \
        }                                                                           \
    }
#define PROP_VAL(fn, args, ok)                                                      \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        __typeof__(fn args) r_ = (fn args);                                         \
        (void)r_;                                                                   \
        if (!(ok)) api_fail("%s%s: expected %s", #fn, #args, #ok);                  \
        api_check_message(API_PROPAGATE, NULL);                                     \
    }
/* PROP_PTR and PROP_VAL for calls that take a NULL object other than a
 * tensor (a module, optimizer, dict, stream, …): the earlier error is kept;
 * and with none, the call records one that contains want. */
#define PROP_PTR_SAYS(fn, args, want)                                               \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        const void *r_ = (const void *)(fn args);                                   \
        if (r_ != NULL) api_fail("%s%s returned a result, expected NULL", #fn, #args); \
        api_check_message(API_PROPAGATE, NULL);                                     \
        ct_clear_error();                                                           \
        if ((r_ = (const void *)(fn args)) != NULL)                                 \
            api_fail("%s%s returned a result, expected NULL", #fn, #args);          \
        api_check_message(API_ERR, want);                                           \
    }
#define PROP_VAL_SAYS(fn, args, ok, want)                                           \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        __typeof__(fn args) r_ = (fn args);                                         \
        if (!(ok)) api_fail("%s%s: expected %s", #fn, #args, #ok);                  \
        api_check_message(API_PROPAGATE, NULL);                                     \
        ct_clear_error();                                                           \
        r_ = (fn args);                                                             \
        if (!(ok)) api_fail("%s%s: expected %s", #fn, #args, #ok);                  \
        api_check_message(API_ERR, want);                                           \
    }
#define PROP_VOID(fn, args)                                                         \
    API_BEGIN(fn, args, API_PROPAGATE) {                                                  \
        fn args;                                                                    \
        api_check_message(API_PROPAGATE, NULL);                                     \
    }
#define QUIET_VAL(fn, args, ok)                                                     \
    API_BEGIN(fn, args, API_QUIET) {                                                      \
        __typeof__(fn args) r_ = (fn args);                                         \
        (void)r_;                                                                   \
        if (!(ok)) api_fail("%s%s: expected %s", #fn, #args, #ok);                  \
    }
#define QUIET_VOID(fn, args)                                                        \
    API_BEGIN(fn, args, API_QUIET) { fn args; }

/* Argument shorthands. */
#define NT ((ct_tensor *)NULL)
#define NM ((ct_module *)NULL)
#define BAD_DEV ((ct_device){CT_DEVICE_CUDA, -5})
#define BAD_TYPE_DEV ((ct_device){(ct_device_type)7, 0})

#endif /* CT_TEST_API_ERRORS_H */
