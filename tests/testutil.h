/*
 * testutil.h — a tiny test framework for ctorch's C tests.
 *
 * A test file defines functions `static void test_xxx(void)` and lists them
 * in main() with CT_RUN(test_xxx). CT_EXPECT* record a failure with file,
 * line and values and keep going; the binary exits non-zero if anything
 * failed and prints "N passed, N failed". Random data comes from a seeded
 * generator; the seed is printed (override with CT_TEST_SEED=n).
 * After each test the harness checks that no tensor or storage leaked.
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

/* ---- random data and float64 references ---- */
uint64_t ct_test_rand_u64(void);
double ct_test_uniform(double lo, double hi);
int64_t ct_test_randint(int64_t lo, int64_t hi); /* [lo, hi) */

/* Fill a host double array of n elements with uniform values in [lo, hi). */
void ct_test_fill_uniform(double *x, int64_t n, double lo, double hi);
/* A CPU tensor of `dt` from float64 host values (rounded to dt). */
ct_tensor *ct_test_tensor(const double *vals, ct_shape shape, ct_dtype dt);
/* A random tensor with values in [lo, hi) of `dt`; writes the exact stored
 * values (after rounding to dt) into *vals_out (malloc'd, caller frees) if
 * not NULL. */
ct_tensor *ct_test_random(ct_shape shape, ct_dtype dt, double lo, double hi, double **vals_out);
/* Read all elements (row-major) as doubles; caller frees. */
double *ct_test_values(const ct_tensor *t);

/* PyTorch's default tolerances for a dtype (assert_close). */
void ct_test_tolerances(ct_dtype dt, double *rtol, double *atol);
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
 * result has reversed-stride layout). */
ct_tensor *ct_test_noncontiguous(const double *vals, ct_shape shape, ct_dtype dt);

#endif /* CT_TESTUTIL_H */
