/*
 * testutil.h — a tiny test framework for ctorch's C tests.
 *
 * A test file defines functions `static void test_xxx(void)` and lists them
 * in main() with CT_RUN(test_xxx). CT_EXPECT* record a failure with file,
 * line and values and keep going; the binary exits non-zero if anything
 * failed and prints "N passed, N failed, N skipped". Random data comes from
 * a seeded generator; the seed is printed (override with CT_TEST_SEED=n).
 * After each test the harness checks that no tensor or storage leaked.
 *
 * A section that cannot run (no device, no Python package) says so with
 * ct_test_skip: a line "skip: …" and a count in the summary, never a silent
 * "ok". Whether a missing OpenCL device is a skip or a failure is decided
 * in one place, ct_test_opencl_devices.
 */
#ifndef CT_TESTUTIL_H
#define CT_TESTUTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ctorch/ctorch.h"

extern int ct_test_failures;      /* failed expectations in the current test */
extern uint64_t ct_test_seed;

void ct_test_fail(const char *file, int line, const char *fmt, ...);
void ct_test_run(const char *name, void (*fn)(void));
int ct_test_finish(void);         /* prints the summary, returns exit code */
void ct_test_init(int argc, char **argv);
/* Record that part of the current test did not run: prints "skip: <why>"
 * and counts it in the summary. */
void ct_test_skip(const char *fmt, ...);

#define CT_RUN(fn) ct_test_run(#fn, fn)

#define CT_EXPECT(cond)                                                \
    do {                                                               \
        if (!(cond)) ct_test_fail(__FILE__, __LINE__, "expected %s", #cond); \
    } while (0)
#define CT_EXPECT_MSG(cond, ...)                                       \
    do {                                                               \
        if (!(cond)) ct_test_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)
#define CT_EXPECT_INT_EQ(a, b)                                                       \
    do {                                                                             \
        long long ct_a_ = (long long)(a), ct_b_ = (long long)(b);                    \
        if (ct_a_ != ct_b_)                                                          \
            ct_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, ct_a_, ct_b_); \
    } while (0)
#define CT_EXPECT_NEAR(a, b, tol)                                                    \
    do {                                                                             \
        double ct_a_ = (double)(a), ct_b_ = (double)(b);                             \
        if (!(fabs(ct_a_ - ct_b_) <= (tol)))                                         \
            ct_test_fail(__FILE__, __LINE__, "%s ≈ %s: %.9g vs %.9g (tol %g)", #a, #b, \
                         ct_a_, ct_b_, (double)(tol));                               \
    } while (0)
#define CT_EXPECT_STR_EQ(a, b)                                                       \
    do {                                                                             \
        const char *ct_a_ = (a), *ct_b_ = (b);                                       \
        if (strcmp(ct_a_, ct_b_) != 0)                                               \
            ct_test_fail(__FILE__, __LINE__, "%s == %s:\n  got:      \"%s\"\n  expected: \"%s\"", \
                         #a, #b, ct_a_, ct_b_);                                      \
    } while (0)
/* The last call failed with this status and its message contains `needle`. */
#define CT_EXPECT_ERROR(code, needle)                                                \
    do {                                                                             \
        if (ct_last_status() != (code) || !strstr(ct_last_error(), (needle)))        \
            ct_test_fail(__FILE__, __LINE__, "expected error %s containing \"%s\", got %s: \"%s\"", \
                         ct_status_str(code), (needle), ct_status_str(ct_last_status()),   \
                         ct_last_error());                                           \
        ct_clear_error();                                                            \
    } while (0)

/* ---- devices: a visible skip, or a failure when a device must exist ---- */
/* True when this machine must offer an OpenCL device: the build has the
 * OpenCL backend and an OpenCL runtime is installed (an ICD file where the
 * loader looks: $OCL_ICD_VENDORS, else /etc/OpenCL/vendors, or libraries
 * named in $OCL_ICD_FILENAMES). CI always has PoCL, so there, finding no
 * device is a bug in enumeration or the device filter, not an absence. */
bool ct_test_opencl_expected(void);
/* How many OpenCL devices a device section of the current test runs on.
 * With none it records a failure when one was expected, else a skip
 * "skip: <what> (no OpenCL device)"; either way it returns 0. */
int ct_test_opencl_devices(const char *what);
/* The same for CUDA, where a GPU is never guaranteed: none is a skip. */
int ct_test_cuda_devices(const char *what);
/* main()'s exit code for a binary that can do nothing without an OpenCL
 * device: 77 (ctest's skip) when none can exist, 1 with a FAIL line when
 * one was expected. */
int ct_test_opencl_absent_exit(const char *what);

/* ---- random data and float64 references ---- */
uint64_t ct_test_rand_u64(void);
double ct_test_uniform(double lo, double hi);
int64_t ct_test_randint(int64_t lo, int64_t hi); /* [lo, hi) */

/* OpenMP's thread count for the following parallel regions (a no-op in a
 * build without OpenMP, which runs on one thread). */
void ct_test_set_threads(int n);

/* Fill a host double array of n elements with uniform values in [lo, hi). */
void ct_test_fill_uniform(double *x, int64_t n, double lo, double hi);
/* A CPU tensor of `dt` from float64 host values (rounded to dt). */
ct_tensor *ct_test_tensor(const double *vals, ct_shape shape, ct_dtype dt);
/* v as dtype dt stores it, computed here rather than read back through
 * ctorch (floats round to nearest even, integers truncate toward zero). */
double ct_test_round_to(ct_dtype dt, double v);
/* A random tensor with values in [lo, hi) of `dt`; writes the exact stored
 * values (rounded to dt here, and checked to be what the tensor holds) into
 * *vals_out (malloc'd, caller frees) if not NULL. */
ct_tensor *ct_test_random(ct_shape shape, ct_dtype dt, double lo, double hi, double **vals_out);
/* Does t hold vals (n of them, row-major) as dtype dt stores them? A test
 * input that does not would make a reference describe another input: on
 * a mismatch this fails the current test, naming the first bad element. */
bool ct_test_holds(const ct_tensor *t, const double *vals, int64_t n, ct_dtype dt);
/* Read all elements (row-major) as doubles; caller frees. A failed read
 * fails the current test (the values are then NaN). */
double *ct_test_values(const ct_tensor *t);
/* The largest |a - b| over the parameters of two modules of the same
 * structure (any devices): how far two trainings drifted apart. */
double ct_test_param_diff(ct_module *a, ct_module *b);

/* PyTorch's default tolerances for a dtype (assert_close). */
void ct_test_tolerances(ct_dtype dt, double *rtol, double *atol);
/* What a result of dtype dt can be held to when the reference is the exact
 * (float64) result at the same stored inputs: rtol is 2 units of dt's
 * roundoff (the result's own rounding). atol covers the terms that make up
 * a value, of size up to `scale` (e.g. the sum of |terms| a broadcast
 * gradient adds up, or a gradient's largest element): 2 units of dt's
 * roundoff (PyTorch rounds such intermediates to dt too) or 16 of the
 * float32 arithmetic it computes in, whichever is larger, times scale; at
 * least dt's subnormal spacing. */
void ct_test_rounding_tolerances(ct_dtype dt, double scale, double *rtol, double *atol);
/* Compare t with expected (row-major, numel n) using rtol/atol; NaN must match
 * NaN, infinities must match sign. Records a failure naming `what`, the worst
 * index and values. Returns true if close. */
bool ct_test_close(const char *file, int line, const char *what, const ct_tensor *t,
                   const double *expected, int64_t n, double rtol, double atol);
#define CT_EXPECT_CLOSE(t, expected, n, rtol, atol) \
    ct_test_close(__FILE__, __LINE__, #t, (t), (expected), (n), (rtol), (atol))
/* Shape of t equals the given dims. */
bool ct_test_shape_is(const char *file, int line, const ct_tensor *t, ct_shape s);
#define CT_EXPECT_SHAPE(t, s) ct_test_shape_is(__FILE__, __LINE__, (t), (s))

/* A non-contiguous tensor with the same values as `vals` of shape `shape`
 * (made by transposing a contiguous buffer and transposing back, so the
 * result has reversed-stride layout). A failed copy fails the current test
 * and returns NULL. */
ct_tensor *ct_test_noncontiguous(const double *vals, ct_shape shape, ct_dtype dt);

#endif /* CT_TESTUTIL_H */
