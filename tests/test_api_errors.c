/*
 * test_api_errors.c — every public function, called with NULL and
 * out-of-range arguments, must fail cleanly: return its error value (NULL, a
 * CT_ERR_* code, -1, NaN, …) with a message that names the function or the
 * argument, never crash, hang or leak.
 *
 * The table is driven by the headers: the public functions are read from
 * the CT_API declarations in include/ctorch at run time, and the test fails
 * when one has neither a row (api_errors_*.c) nor an entry in the "not
 * applicable" list below with its reason. A new public function therefore
 * needs a row before the suite passes.
 *
 * Each row runs in a forked child with fresh fixtures, so a crash is one
 * failed row (with its signal), not the end of the run, and every failing
 * row is listed. Kinds of rows (api_errors.h):
 *   ERR_PTR / ERR_STATUS / ERR_VAL  the call fails; the message contains a
 *       given text (the function's or the argument's name);
 *   PROPAGATE  a NULL tensor (or object) from a failed earlier call: the
 *       result is the error value and the earlier error is kept, so that
 *       ct_relu(ct_add(a, b)) reports ct_add's failure (status.h);
 *   QUIET  documented no-ops and neutral answers for NULL (ct_release(NULL),
 *       ct_numel(NULL) == 0): only "no crash, the stated result".
 *
 * Usage: test_api_errors [-v] [name-substring]
 */
#define _GNU_SOURCE /* mkdtemp, strsignal */
#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_errors.h"

/* ---- functions with no argument that can be NULL or out of range ----------------- */

typedef struct na_entry {
    const char *name, *why;
} na_entry;

static const na_entry k_not_applicable[] = {
    {"ct_last_status", "no arguments"},
    {"ct_last_error", "no arguments"},
    {"ct_clear_error", "no arguments"},
    {"ct_live_tensors", "no arguments"},
    {"ct_live_storages", "no arguments"},
    {"ct_scope_begin", "no arguments"},
    {"ct_scope_begin_at", "any address names a block; NULL means an unnamed scope"},
    {"ct_scope_depth", "no arguments"},
    {"ct_get_default_dtype", "no arguments"},
    {"ct_float_to_half", "every float has a half value"},
    {"ct_half_to_float", "every 16-bit pattern is a half"},
    {"ct_float_to_bfloat16", "every float has a bfloat16 value"},
    {"ct_bfloat16_to_float", "every 16-bit pattern is a bfloat16"},
    {"ct_device_equal", "compares two values; any values are comparable"},
    {"ct_dist_is_available", "no arguments"},
    {"ct_profiler_start", "its only argument is a set of flags; a second start is tested in test_profiler.c"},
    {"ct_profiler_is_enabled", "no arguments"},
    {"ct_profiler_reset", "no arguments"},
    {"ct_profiler_num_events", "no arguments"},
    {"ct_record_function_push", "any name (NULL is recorded as \"(unnamed)\")"},
    {"ct_record_function_pop", "no arguments; an unpaired pop is ignored"},
    {"ct_dist_is_initialized", "no arguments"},
    {"ct_dist_get_rank", "no arguments"},
    {"ct_dist_get_world_size", "no arguments"},
    {"ct_cuda_is_available", "no arguments"},
    {"ct_cuda_device_count", "no arguments"},
    {"ct_cuda_current_device", "no arguments"},
    {"ct_best_device", "no arguments"},
    {"ct_manual_seed", "every seed is valid"},
    {"ct_initial_seed", "no arguments"},
    {"ct_set_rng_state", "every (seed, offset) is valid"},
    {"ct_is_grad_enabled", "no arguments"},
    {"ct_set_grad_enabled", "a bool"},
    {"ct_backends_cuda_matmul_set_allow_tf32", "a bool"},
    {"ct_backends_cuda_matmul_get_allow_tf32", "no arguments"},
    {"ct_get_float32_matmul_precision", "no arguments"},
    {"ct_backends_mkldnn_set_enabled", "a bool"},
    {"ct_backends_mkldnn_get_enabled", "no arguments"},
    {"ct_backends_mkldnn_is_available", "no arguments"},
    {"ct_backends_cpu_get_cpu_capability", "no arguments"},
    {"ct_backends_cpu_gemm_engine", "no arguments"},
    {"ct_backends_cudnn_set_allow_tf32", "a bool"},
    {"ct_backends_cudnn_get_allow_tf32", "no arguments"},
    {"ct_backends_cudnn_set_benchmark", "a bool"},
    {"ct_backends_cudnn_get_benchmark", "no arguments"},
    {"ct_backends_cudnn_set_deterministic", "a bool"},
    {"ct_backends_cudnn_get_deterministic", "no arguments"},
    {"ct_backends_cudnn_set_enabled", "a bool"},
    {"ct_backends_cudnn_get_enabled", "no arguments"},
    {"ct_use_deterministic_algorithms", "a bool"},
    {"ct_are_deterministic_algorithms_enabled", "no arguments"},
    {"ct_backends_cudnn_version", "no arguments"},
    {"ct_backends_cudnn_is_available", "no arguments"},
    {"ct_backends_cublas_version", "no arguments"},
    {"ct_host_empty_cache", "no arguments"},
    {"ct_nn_relu", "no arguments"},
    {"ct_nn_gelu", "no arguments"},
    {"ct_nn_sigmoid", "no arguments"},
    {"ct_nn_tanh", "no arguments"},
    {"ct_nn_identity", "no arguments"},
    {"ct_model_fmnist_cnn", "no arguments"},
    {"ct_tensor_dict_new", "no arguments"},
    {"ct_dataloader_sample_key", "every (seed, epoch, index) has a key"},
    {"ct_dataloader_abandoned_workers", "no arguments"},
    {"ct_quantized_engine", "no arguments"},
};

/* ---- the header side: every CT_API function ---------------------------------------- */

#define MAX_NAMES 1024

typedef struct name_list {
    char *names[MAX_NAMES];
    int n;
} name_list;

static void name_add(name_list *l, const char *name, size_t len) {
    for (int i = 0; i < l->n; i++)
        if (strlen(l->names[i]) == len && strncmp(l->names[i], name, len) == 0) return;
    if (l->n < MAX_NAMES) l->names[l->n++] = strndup(name, len);
}

static bool name_has(const name_list *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return true;
    return false;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The function name of each declaration, a line that starts with "CT_API":
 * the identifier right before the declaration's first '('. */
static void scan_header(const char *text, name_list *out) {
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "CT_API ", 7) != 0) continue;
        const char *paren = strchr(p, '('), *semi = strchr(p, ';');
        if (!paren || (semi && semi < paren)) continue;
        const char *end = paren;
        while (end > p && end[-1] == ' ') end--;
        const char *start = end;
        while (start > p && (start[-1] == '_' || isalnum((unsigned char)start[-1]))) start--;
        if (end > start) name_add(out, start, (size_t)(end - start));
    }
}

/* Every header of include/ctorch (found from this file's path), so that a
 * new header's functions are covered too. */
static bool public_functions(name_list *out) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (!slash) return false;
    snprintf(slash, sizeof dir - (size_t)(slash - dir), "/../include/ctorch");
    DIR *d = opendir(dir);
    if (!d) {
        printf("FAIL: cannot list %s, where the public headers should be\n", dir);
        return false;
    }
    int headers = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = read_text(path);
        if (text) scan_header(text, out), headers++;
        free(text);
    }
    closedir(d);
    return headers > 0;
}

/* ---- fixtures ------------------------------------------------------------------------- */

#include "api_errors_core.c"
#include "api_errors_ops.c"
#include "api_errors_runtime.c"
#include "api_errors_nn.c"
#include "api_errors_data.c"

void api_rows_all(void) {
    rows_core();
    rows_ops();
    rows_runtime();
    rows_nn();
    rows_data_io();
}

api_fixtures F;
static bool g_made;

static ct_dataset *failing_dataset(void) {
    return ct_dataset_new("Failing", (ct_dataset_fns){len_two, get_fails, NULL}, NULL);
}

static void make_tensors(void) {
    F.t = ct_ones(CT_SHAPE(2, 3));
    F.img = ct_ones(CT_SHAPE(1, 1, 4, 4));
    F.idx = ct_tensor_from((int64_t[]){0, 1}, CT_INT64, CT_SHAPE(2));
    F.bad_idx = ct_tensor_from((int64_t[]){7}, CT_INT64, CT_SHAPE(1));
    F.bad_label = ct_tensor_from((int64_t[]){0, 7}, CT_INT64, CT_SHAPE(2));
    F.u8img = ct_zeros(CT_SHAPE(4, 4), .dtype = CT_UINT8);
    F.mask = ct_ones(CT_SHAPE(2, 3), .dtype = CT_BOOL);
    F.empty = ct_empty(CT_SHAPE(0));
    F.one = ct_ones(CT_SHAPE(1));
    F.expanded = ct_expand(F.one, CT_SHAPE(3));
    F.huge = ct_expand(F.one, CT_SHAPE(INT64_C(1) << 62));
    F.line = ct_zeros(CT_SHAPE(4));
    F.row0 = ct_narrow(F.line, 0, 0, 3);
    F.row1 = ct_narrow(F.line, 0, 1, 3);
}

static void make_objects(void) {
    F.m = ct_nn_linear(3, 2, true);
    F.seq = CT_SEQUENTIAL(ct_nn_relu());
    F.silent = ct_module_new("Silent", silent_forward, NULL, NULL);
    F.opt = ct_sgd(F.m, (ct_sgd_opts){.lr = 0.1});
    F.sched = ct_step_lr(F.opt, 1, 0.5);
    F.ds = ct_tensor_dataset(&F.t, 1);
    F.dl = ct_dataloader_new(F.ds, (ct_dataloader_opts){.batch_size = 2});
    F.it = ct_dataloader_iter_new(F.dl);
    F.failing_ds = failing_dataset();
    F.failing_dl = ct_dataloader_new(F.failing_ds, (ct_dataloader_opts){.batch_size = 2});
    F.failing_it = ct_dataloader_iter_new(F.failing_dl);
    F.sampler = ct_sequential_sampler(2);
    F.failing_sampler = ct_sampler_new((ct_sampler_fns){len_two, fill_fails, NULL}, NULL);
    F.tf = ct_transform_normalize1(0.5, 0.5);
    F.dict = ct_tensor_dict_new();
    ct_tensor_dict_set(F.dict, "t", F.t);
    F.stream = ct_stream_create(ct_device_cpu(), 0);
    F.ev = ct_event_create();
    snprintf(F.dir, sizeof F.dir, "/tmp/ct_api_errors_XXXXXX");
    if (mkdtemp(F.dir)) {
        snprintf(F.fifo, sizeof F.fifo, "%s", api_path("fifo"));
        FILE *f = fopen(api_path("file"), "w");
        if (!f || mkfifo(F.fifo, 0600) != 0 || mkfifo(api_path("fifo.gz"), 0600) != 0 ||
            mkdir(api_path("cifar"), 0700) != 0 || mkfifo(api_path("cifar/test_batch.bin"), 0600) != 0)
            api_fail("cannot make the files of %s", F.dir);
        if (f) fclose(f);
        F.w = ct_summary_writer_new(api_path("logs"));
    }
}

const char *api_path(const char *name) {
    static char bufs[4][256];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", F.dir, name);
    return b;
}

void api_fixtures_make(void) {
    if (g_made) return;
    g_made = true;
    make_tensors();
    make_objects();
    const void *all[] = {F.t, F.img, F.idx, F.bad_idx, F.bad_label, F.u8img, F.mask, F.empty, F.one,
                         F.expanded, F.huge, F.line, F.row0, F.row1, F.m, F.seq, F.silent, F.opt, F.sched, F.ds, F.dl, F.it,
                         F.failing_ds, F.failing_dl, F.failing_it, F.sampler, F.failing_sampler, F.tf, F.dict,
                         F.stream, F.ev, F.w};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!all[i]) api_fail("fixture %zu could not be made: %s", i, ct_last_error());
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void api_fixtures_free(void) {
    if (!g_made) return;
    ct_summary_writer_close(F.w);
    if (F.dir[0]) nftw(F.dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    ct_event_destroy(F.ev);
    ct_stream_destroy(F.stream);
    ct_tensor_dict_free(F.dict);
    ct_transform_free(F.tf);
    ct_sampler_free(F.failing_sampler);
    ct_sampler_free(F.sampler);
    ct_dataloader_iter_free(F.failing_it);
    ct_dataloader_free(F.failing_dl);
    ct_dataset_free(F.failing_ds);
    ct_dataloader_iter_free(F.it);
    ct_dataloader_free(F.dl);
    ct_dataset_free(F.ds);
    ct_scheduler_free(F.sched);
    ct_optimizer_free(F.opt);
    ct_module_free(F.seq);
    ct_module_free(F.silent);
    ct_module_free(F.m);
    ct_tensor *ts[] = {F.t, F.img, F.idx, F.bad_idx, F.bad_label, F.u8img, F.mask, F.empty, F.one,
                       F.expanded, F.huge, F.line, F.row0, F.row1};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) ct_release(ts[i]);
    memset(&F, 0, sizeof F);
    g_made = false;
}

/* ---- selecting and running one row ------------------------------------------------- */

api_run g_run;

bool api_select(const char *fn, const char *args, int line) {
    int id = g_run.next++;
    if (g_run.mode == API_LIST) {
        if (g_run.nrows < API_MAX_ROWS) g_run.rows[g_run.nrows++] = (api_row_info){fn, args, line};
        return false;
    }
    return id == g_run.target;
}

/* Child side: the verdict of the selected row. */
void api_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    g_run.failed = true;
}

static const char k_sentinel[] = "api_errors: the earlier error";

void api_before(api_kind kind) {
    api_fixtures_make();
    if (kind == API_PROPAGATE) ct_set_error(CT_ERR_STATE, "%s", k_sentinel);
    else ct_clear_error();
}

/* The message must name what failed; for PROPAGATE rows the earlier error
 * must still be there. */
void api_check_message(api_kind kind, const char *want) {
    const char *msg = ct_last_error();
    if (kind == API_PROPAGATE) {
        if (ct_last_status() != CT_ERR_STATE || strcmp(msg, k_sentinel) != 0)
            api_fail("the earlier error was replaced: %s \"%s\"", ct_status_str(ct_last_status()), msg);
        return;
    }
    if (kind != API_ERR) return;
    if (ct_last_status() == CT_OK) api_fail("no error was recorded (ct_last_status() is CT_OK)");
    else if (want && !strstr(msg, want)) api_fail("the message does not contain \"%s\": \"%s\"", want, msg);
}

/* The child: fixtures, the one row, then everything released again. */
static void child_run(int target) {
    g_run.mode = API_RUN;
    g_run.target = target;
    g_run.next = 0;
    alarm(20);   /* a hang is a failure too */
    int64_t live = ct_live_tensors();
    api_rows_all();
    api_fixtures_free();
    if (ct_live_tensors() != live && !g_run.failed)
        api_fail("%lld tensors leaked", (long long)(ct_live_tensors() - live));
    exit(g_run.failed ? 1 : 0);
}

/* Rows whose function's owner must still fix a crash or a missing check:
 * the function, a piece of the row's arguments, and the fix. The row stays,
 * so the fix is proven the day it lands (the run then says to remove the
 * entry). */
typedef struct known_entry {
    const char *fn, *args, *why;
} known_entry;

static const known_entry k_known_failures[] = {
    {NULL, NULL, NULL},
};

static const char *known_failure(const api_row_info *r) {
    for (size_t i = 0; k_known_failures[i].fn; i++)
        if (strcmp(k_known_failures[i].fn, r->fn) == 0 && strstr(r->args, k_known_failures[i].args))
            return k_known_failures[i].why;
    return NULL;
}

static int run_row(int i, bool verbose) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) child_run(i);
    int status = 0;
    waitpid(pid, &status, 0);
    const api_row_info *r = &g_run.rows[i];
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const char *known = known_failure(r);
    if (ok && known) printf("note: %s (line %d) passes now; remove it from k_known_failures\n", r->fn, r->line);
    if (ok) {
        if (verbose) printf("[ ok ] %s (line %d)\n", r->fn, r->line);
        return 0;
    }
    char why[128];
    if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "crashed: %s", strsignal(WTERMSIG(status)));
    else
        snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(status));
    printf("[%s] %s (line %d): %s%s%s\n", known ? "XFAIL" : "FAIL", r->fn, r->line, why, known ? "; " : "",
           known ? known : "");
    return known ? 0 : 1;
}

static bool in_list(const char *name, const na_entry *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (list[i].name && strcmp(list[i].name, name) == 0) return true;
    return false;
}

/* Every public function has a row or a reason; every reason names one. */
static int check_coverage(void) {
    name_list pub = {0}, rows = {0};
    if (!public_functions(&pub)) return 1;
    for (int i = 0; i < g_run.nrows; i++) name_add(&rows, g_run.rows[i].fn, strlen(g_run.rows[i].fn));
    size_t nna = sizeof k_not_applicable / sizeof *k_not_applicable;
    int missing = 0;
    for (int i = 0; i < pub.n; i++)
        if (!name_has(&rows, pub.names[i]) && !in_list(pub.names[i], k_not_applicable, nna)) {
            printf("FAIL: %s has no row in tests/api_errors_*.c and is not in k_not_applicable\n", pub.names[i]);
            missing++;
        }
    for (size_t i = 0; i < nna; i++)
        if (!name_has(&pub, k_not_applicable[i].name)) {
            printf("FAIL: k_not_applicable names %s, which no header declares\n", k_not_applicable[i].name);
            missing++;
        }
    for (int i = 0; i < rows.n; i++)
        if (!name_has(&pub, rows.names[i])) {
            printf("FAIL: a row tests %s, which no header declares with CT_API\n", rows.names[i]);
            missing++;
        }
    printf("coverage: %d public functions, %d with rows, %zu not applicable, %d missing\n", pub.n, rows.n, nna,
           missing);
    for (int i = 0; i < pub.n; i++) free(pub.names[i]);
    for (int i = 0; i < rows.n; i++) free(rows.names[i]);
    return missing ? 1 : 0;
}

int main(int argc, char **argv) {
    bool verbose = false;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) verbose = true;
        else filter = argv[i];
    }
    g_run.mode = API_LIST;
    api_rows_all();
    int failures = filter ? 0 : check_coverage(), ran = 0;
    for (int i = 0; i < g_run.nrows; i++) {
        if (filter && !strstr(g_run.rows[i].fn, filter)) continue;
        failures += run_row(i, verbose);
        ran++;
    }
    printf("%d rows run, %d failed\n", ran, failures);
    return failures ? 1 : 0;
}
