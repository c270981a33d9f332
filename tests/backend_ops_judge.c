/*
 * backend_ops_judge.c — running one case on the CPU and on a device, and
 * the verdict on the pair, for the cross-backend harness. Included by
 * tests/test_backend_ops.c (after the comparison and the runners); not a
 * test of its own.
 *
 * Nothing that is not compared may pass silently:
 *  - the device declines (CT_ERR_UNSUPPORTED) an op the CPU runs: FAIL,
 *    unless its backend's supports(op, dtype) query says it does not
 *    support it there (a float64 op on an OpenCL device without fp64);
 *  - both sides fail with the same status: a pass only where the case is a
 *    deliberate error (a dtype the op does not accept, or a variant built
 *    to be rejected, bo_case.deliberate_error); elsewhere the CPU reference
 *    failing on an input meant to work is a runner bug, and FAILS;
 *  - one side fails and the other does not, or with another status: FAIL.
 * Every verdict is counted per device (bo_counts), and printed at the end.
 */
#include "core/backend.h" /* ct_backend_supports */

/* ---- allowed declines ------------------------------------------------------------------------ */

/* A device may decline exactly what its backend says it does not support
 * (ct_backend_ops.supports: float64 on an OpenCL device without
 * cl_khr_fp64); anything else it declines is a failure. */
static bool bo_allowed_decline(const bo_case *c, ct_device dev, ct_dtype dt) {
    const ct_backend *b = ct_backend_for(dev.type);
    return b && !ct_backend_supports(b, dev.index, c->name, dt);
}

/* ---- one run --------------------------------------------------------------------------------- */

/* One run of a case: outputs (kept references) and the error, if any. */
typedef struct bo_result {
    ct_tensor *out[3]; /* results; out[2]: magnitudes of their terms (cpu runs, optional) */
    ct_status status;
    char error[200];
} bo_result;

static uint64_t g_seed = 20261122;
static bo_inject g_inject;            /* --inject: plant this error in device results */
static const char *g_inject_family;   /* for BO_INJECT_DECLINE */

/* The planted decline of --inject decline=FAMILY, instead of running. */
static bool injected_decline(const bo_case *c, ct_device dev, bo_result *res) {
    if (g_inject != BO_INJECT_DECLINE || dev.type == CT_DEVICE_CPU ||
        (strcmp(c->family, g_inject_family) != 0 && strcmp(c->name, g_inject_family) != 0))
        return false;
    res->status = CT_ERR_UNSUPPORTED;
    snprintf(res->error, sizeof res->error, "%s: declined on purpose (--inject)", c->name);
    return true;
}

static void run_case(const bo_case *c, int ci, int di, int v, ct_device dev, bo_result *res,
                     char *desc, size_t dn) {
    bo_rng r = {g_seed ^ ((uint64_t)ci << 40) ^ ((uint64_t)di << 32) ^ ((uint64_t)v << 16)};
    bo_next(&r);
    desc[0] = 0;
    res->out[0] = res->out[1] = res->out[2] = NULL;
    if (injected_decline(c, dev, res)) return;
    ct_clear_error();
    ct_scope_begin();
    c->run(c, g_dtypes[di], v, &r, dev, res->out, desc, dn);
    for (int k = 0; k < 3; k++)
        if (res->out[k]) ct_keep(res->out[k]);
    ct_scope_end();
    res->status = res->out[0] ? CT_OK : ct_last_status();
    snprintf(res->error, sizeof res->error, "%s", res->status ? ct_last_error() : "");
    if (!res->out[0] && res->status == CT_OK) { /* a runner bug must not pass */
        res->status = CT_ERR_INTERNAL;
        snprintf(res->error, sizeof res->error, "no result and no error");
    }
    ct_clear_error();
    if (res->out[0] && dev.type != CT_DEVICE_CPU && g_inject != BO_INJECT_NONE)
        bo_perturb(res->out[0], g_inject);
}

static void release_result(bo_result *res) {
    for (int k = 0; k < 3; k++) ct_release(res->out[k]);
}

/* ---- the verdict ----------------------------------------------------------------------------- */

/* Outcome of (case, dtype, device) over its variants, in increasing
 * priority: BO_NONE when every variant was a deliberate error both sides
 * rejected. */
enum { BO_NONE, BO_PASS, BO_DECLINED, BO_FAIL_DECLINED, BO_FAIL, BO_OUTCOMES_ };
static const char *const g_outcome_marks[BO_OUTCOMES_] = {"--", "ok", "declined", "UNSUPPORTED",
                                                          "FAIL"};

/* Results per device, counted per variant. */
typedef struct bo_counts {
    long compared;      /* both gave results, compared element by element */
    long passed;        /* compared and equal, or a deliberate error both rejected */
    long failed;
    long unsupported;   /* the device declined (allowed ones in `declined`) */
    long declined;
    long both_errored;  /* both failed alike (deliberate ones in `deliberate`) */
    long deliberate;
    double worst;       /* largest error/tolerance ratio among the compared */
} bo_counts;

static bool deliberate_error(const bo_case *c, ct_dtype dt, int v) {
    return !(c->dtypes & BO_DT(dt)) || (c->deliberate_error && c->deliberate_error(c, dt, v));
}

/* A device declined: allowed only where its backend says it does not
 * support the op in that dtype. */
static int judge_decline(const bo_case *c, ct_device dev, ct_dtype dt, const bo_result *got,
                         bo_counts *n, char *why, size_t wn) {
    n->unsupported++;
    if (bo_allowed_decline(c, dev, dt)) {
        n->declined++;
        snprintf(why, wn, "declined (allowed: the backend does not support %s in %s there): %s", c->name,
                 ct_dtype_name(dt), got->error);
        return BO_DECLINED;
    }
    snprintf(why, wn, "the device declines an op the cpu runs, and its backend says it supports it: %s",
             got->error);
    return BO_FAIL_DECLINED;
}

/* The cpu failed: a pass only for a deliberate error rejected alike. */
static int judge_cpu_error(const bo_case *c, ct_dtype dt, int v, const bo_result *cpu,
                           const bo_result *got, ct_device dev, bo_counts *n, char *why,
                           size_t wn) {
    bool deliberate = deliberate_error(c, dt, v);
    if (got->status == cpu->status) {
        n->both_errored++;
        n->deliberate += deliberate;
        if (deliberate) return BO_NONE;
        snprintf(why, wn, "the cpu reference fails on an input the case means to work (%s: %s), "
                 "so nothing is compared", ct_status_str(cpu->status), cpu->error);
        return BO_FAIL;
    }
    if (got->status == CT_ERR_UNSUPPORTED) return judge_decline(c, dev, dt, got, n, why, wn);
    snprintf(why, wn, "cpu fails with %s (%s) but the device gives %s%s%s",
             ct_status_str(cpu->status), cpu->error, ct_status_str(got->status),
             got->status ? ": " : "", got->error);
    return BO_FAIL;
}

/* Both ran: every output element by element (the second one, indices or
 * a mask, exactly). */
static int judge_outputs(const bo_case *c, const bo_result *cpu, const bo_result *got,
                         ct_device dev, bo_counts *n, char *why, size_t wn) {
    n->compared++;
    for (int k = 0; k < 2; k++) {
        if (!cpu->out[k]) continue;
        if (!got->out[k]) {
            snprintf(why, wn, "output %d missing", k);
            return BO_FAIL;
        }
        double worst;
        bo_tol tol = k == 1 ? BO_TOL_EXACT : c->tol;
        const ct_tensor *mag = k == 0 ? cpu->out[2] : NULL;
        bool ok = bo_compare(cpu->out[k], got->out[k], mag, dev, tol, c->flags, &worst, why, wn);
        if (worst > n->worst && ok) n->worst = worst;
        if (!ok) return BO_FAIL;
    }
    return BO_PASS;
}

/* The verdict on a device run against the cpu run of the same variant,
 * counted into n. */
static int judge(const bo_case *c, ct_dtype dt, int v, const bo_result *cpu, const bo_result *got,
                 ct_device dev, bo_counts *n, char *why, size_t wn) {
    int res;
    if (cpu->status != CT_OK) {
        res = judge_cpu_error(c, dt, v, cpu, got, dev, n, why, wn);
    } else if (got->status == CT_ERR_UNSUPPORTED) {
        res = judge_decline(c, dev, dt, got, n, why, wn);
    } else if (got->status != CT_OK) {
        snprintf(why, wn, "fails with %s: %s", ct_status_str(got->status), got->error);
        res = BO_FAIL;
    } else {
        res = judge_outputs(c, cpu, got, dev, n, why, wn);
    }
    n->passed += res == BO_PASS || res == BO_NONE;
    n->failed += res == BO_FAIL || res == BO_FAIL_DECLINED;
    return res;
}
