/*
 * test_scope.c — the ownership rules of ctorch/tensor.h: reference counts,
 * scopes that release their temporaries, ct_keep, early ct_release, storage
 * lifetime of views, and per-thread scopes.
 *
 * Every check counts live tensors and storages, so a leak or a double free
 * shows up as a wrong count (and a double free under ASan/valgrind).
 */
#include <pthread.h>

#include "testutil.h"

#define LIVE_T() ct_live_tensors()
#define LIVE_S() ct_live_storages()

static void test_refcount_retain_release(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    ct_tensor *t = ct_zeros(CT_SHAPE(2, 3));
    CT_EXPECT(t != NULL);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    CT_EXPECT(ct_retain(t) == t);
    CT_EXPECT_INT_EQ(ct_refcount(t), 2);
    ct_release(t);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    ct_release(t);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);

    ct_release(NULL); /* a no-op */
    CT_EXPECT(ct_retain(NULL) == NULL);
    CT_EXPECT_INT_EQ(ct_refcount(NULL), 0);
    CT_EXPECT(ct_keep(NULL) == NULL);
}

static void test_scope_releases_everything(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
    ct_scope_begin();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 1);
    ct_tensor *a = ct_ones(CT_SHAPE(4));
    ct_tensor *b = ct_arange(0, 10, 1);
    ct_tensor *v = ct_narrow(b, 0, 2, 3);           /* a view: no new storage */
    ct_tensor *c = ct_clone(ct_full(CT_SHAPE(4), 2)); /* with an anonymous temporary */
    CT_EXPECT(a && b && v && c);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 5);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 4);
    CT_EXPECT_INT_EQ(ct_refcount(a), 1);
    ct_scope_end();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);
}

static void test_scope_many_tensors(void) {
    int64_t t0 = LIVE_T();
    ct_scope_begin();
    for (int i = 0; i < 5000; i++) {
        ct_tensor *t = ct_full(CT_SHAPE(1), i);
        if (i % 3 == 0) ct_release(t); /* holes in the scope's list */
    }
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 5000 - 1667);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* ct_keep hands the reference to the caller outside all scopes. */
static ct_tensor *make_kept_ones(int n) {
    ct_tensor *r;
    ct_scope_begin();
    ct_tensor *tmp = ct_ones(CT_SHAPE(n));
    r = ct_keep(ct_full_like(tmp, 3.0));
    ct_scope_end();
    return r;
}

static void test_keep_to_caller(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    ct_tensor *r = make_kept_ones(5);
    CT_EXPECT(r != NULL);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    CT_EXPECT_INT_EQ(ct_refcount(r), 1);
    int64_t idx[1] = {4};
    CT_EXPECT_NEAR(ct_get(r, idx), 3.0, 0);
    ct_release(r);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);

    /* outside all scopes ct_keep changes nothing */
    ct_tensor *t = ct_zeros(CT_SHAPE(1));
    CT_EXPECT(ct_keep(t) == t);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_release(t);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* In nested scopes ct_keep passes one level up, not further. */
static void test_keep_nested(void) {
    int64_t t0 = LIVE_T();
    ct_scope_begin();
    ct_tensor *outer_tmp = ct_zeros(CT_SHAPE(2));
    ct_tensor *kept;
    ct_scope_begin();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 2);
    ct_tensor *inner_tmp = ct_ones(CT_SHAPE(2));
    kept = ct_keep(ct_full(CT_SHAPE(2), 7));
    CT_EXPECT(inner_tmp && kept);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 3);
    ct_scope_end();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 1);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 2); /* inner_tmp gone, kept alive */
    CT_EXPECT_INT_EQ(ct_refcount(kept), 1);
    CT_EXPECT_NEAR(ct_item(ct_select(kept, 0, 1)), 7.0, 0);
    CT_EXPECT(outer_tmp != NULL);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0); /* the outer scope released the kept one */

    /* keeping at every level carries it all the way out */
    ct_scope_begin();
    ct_scope_begin();
    ct_scope_begin();
    ct_tensor *t = ct_keep(ct_ones(CT_SHAPE(3)));
    ct_scope_end();
    ct_keep(t);
    ct_scope_end();
    ct_keep(t);
    ct_scope_end();
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_release(t);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* Rule 2: releasing inside a scope gives the reference back now and the
 * scope does not release it again. */
static void test_release_inside_scope(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    ct_scope_begin();
    ct_tensor *a = ct_zeros(CT_SHAPE(100));
    ct_tensor *b = ct_ones(CT_SHAPE(100));
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 2);
    ct_release(a);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    CT_EXPECT_INT_EQ(ct_refcount(b), 1);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);

    /* a tensor of an outer scope released inside an inner one */
    ct_scope_begin();
    ct_tensor *o = ct_zeros(CT_SHAPE(3));
    ct_scope_begin();
    ct_tensor *i = ct_ones(CT_SHAPE(3));
    ct_release(o);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT(i != NULL);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* Rule 3: a retained reference is never owned by a scope. */
static void test_retain_inside_scope(void) {
    int64_t t0 = LIVE_T();
    ct_tensor *t;
    ct_scope_begin();
    t = ct_retain(ct_arange(0, 4, 1));
    CT_EXPECT_INT_EQ(ct_refcount(t), 2);
    ct_scope_end();
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    int64_t idx[1] = {3};
    CT_EXPECT_NEAR(ct_get(t, idx), 3.0, 0);
    ct_release(t);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);

    /* retain + release inside a scope: the scope's reference is the one
     * given back (rule 2), so the retained one survives the scope. */
    ct_scope_begin();
    t = ct_zeros(CT_SHAPE(2));
    ct_retain(t);
    ct_release(t);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    ct_release(t);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

static void test_ct_scope_macro(void) {
    int64_t t0 = LIVE_T();
    int depth_inside = -1;
    ct_tensor *kept = NULL;
    CT_SCOPE {
        depth_inside = ct_scope_depth();
        ct_tensor *a = ct_full(CT_SHAPE(1, 1), -2.0);
        ct_tensor *b = ct_t(a);
        kept = ct_keep(ct_clone(b));
        CT_EXPECT_INT_EQ(LIVE_T(), t0 + 3);
    }
    CT_EXPECT_INT_EQ(depth_inside, 1);
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT(kept && ct_item(kept) == -2.0);
    ct_release(kept);

    CT_SCOPE {
        CT_SCOPE { ct_zeros(CT_SHAPE(1)); }
        CT_EXPECT_INT_EQ(ct_scope_depth(), 1);
        CT_EXPECT_INT_EQ(LIVE_T(), t0);
    }
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* Views hold the storage: releasing the base leaves the view readable. */
/* CT_SCOPE left by break or return: closed at the end of the CT_SCOPE
 * around it, or when the same CT_SCOPE is entered again; nothing leaks and
 * the depth comes back. */
static int leave_by_return(ct_tensor **out) {
    CT_SCOPE {
        *out = ct_ones(CT_SHAPE(4));
        return ct_scope_depth(); /* leaves the scope open */
    }
    return -1;
}

static void test_scope_left_by_break_or_return(void) {
    const int64_t live = LIVE_T();
    const int depth = ct_scope_depth();
    CT_SCOPE { /* an inner scope left by break is closed when this one ends */
        ct_tensor *t = NULL;
        CT_SCOPE {
            t = ct_zeros(CT_SHAPE(3));
            if (t) break;
        }
        CT_EXPECT_INT_EQ(ct_scope_depth(), depth + 2); /* still open, t still usable */
        CT_EXPECT(t && ct_numel(t) == 3);
    }
    CT_EXPECT_INT_EQ(ct_scope_depth(), depth);
    CT_EXPECT_INT_EQ(LIVE_T(), live);
    for (int i = 0; i < 5; i++) /* the same CT_SCOPE left by break on every pass */
        CT_SCOPE {
            ct_ones(CT_SHAPE(2));
            break;
        }
    CT_EXPECT(ct_scope_depth() <= depth + 1); /* each new pass closed the abandoned one */
    CT_SCOPE {} /* a later CT_SCOPE at this level: the last abandoned one stays until its site returns */
    CT_SCOPE { /* a function returning from inside its CT_SCOPE, called inside ours */
        ct_tensor *kept = NULL;
        const int before = ct_scope_depth(), inside = leave_by_return(&kept);
        CT_EXPECT_INT_EQ(inside, before + 1);
        CT_EXPECT_INT_EQ(ct_scope_depth(), before + 1); /* left open by the return… */
        CT_EXPECT(kept != NULL);                        /* …until this CT_SCOPE ends */
    }
    if (ct_scope_depth() > depth) ct_scope_end(); /* the loop's last abandoned scope */
    CT_EXPECT_INT_EQ(ct_scope_depth(), depth);
    CT_EXPECT_INT_EQ(LIVE_T(), live);
}

static void test_views_keep_storage_alive(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    ct_tensor *base = ct_arange(0, 12, 1, .dtype = CT_FLOAT32);
    ct_tensor *m = ct_view(base, CT_SHAPE(3, 4));
    ct_tensor *col = ct_select(m, 1, 2);
    CT_EXPECT(base && m && col);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 3);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    ct_release(base);
    ct_release(m);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    for (int64_t r = 0; r < 3; r++) CT_EXPECT_NEAR(ct_get(col, &r), r * 4 + 2, 0);
    ct_release(col);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);

    /* a view kept out of a scope whose base was a scope temporary */
    ct_tensor *v;
    ct_scope_begin();
    ct_tensor *b2 = ct_ones(CT_SHAPE(4, 4));
    v = ct_keep(ct_t(b2));
    ct_scope_end();
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(LIVE_S(), s0 + 1);
    int64_t idx[2] = {3, 1};
    CT_EXPECT_NEAR(ct_get(v, idx), 1.0, 0);
    ct_release(v);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);

    /* contiguous() of a contiguous tensor is the same handle */
    ct_tensor *c = ct_zeros(CT_SHAPE(3));
    ct_tensor *c2 = ct_contiguous(c);
    CT_EXPECT(c2 == c);
    CT_EXPECT_INT_EQ(ct_refcount(c), 2);
    ct_release(c2);
    ct_release(c);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

static void test_scope_end_without_begin(void) {
    ct_clear_error();
    ct_scope_end();
    CT_EXPECT_ERROR(CT_ERR_STATE, "no scope is open");
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
}

/* Deep nesting (recursion through CT_SCOPE) must still release each
 * level's temporaries when that level ends. */
#define DEEP 100
static void test_deep_nesting(void) {
    int64_t t0 = LIVE_T();
    for (int d = 0; d < DEEP; d++) {
        ct_scope_begin();
        ct_zeros(CT_SHAPE(1));
    }
    CT_EXPECT_INT_EQ(ct_scope_depth(), DEEP);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + DEEP);
    int wrong = 0;
    for (int d = DEEP; d > 0; d--) {
        ct_tensor *kept = ct_keep(ct_ones(CT_SHAPE(1)));
        ct_scope_end();
        /* this level's zeros and ones are gone; the kept ones went up */
        int64_t want = t0 + (d - 1) + 1;
        if (LIVE_T() != want && wrong++ < 3)
            CT_EXPECT_MSG(false, "after ending scope level %d: %lld live tensors, expected %lld", d,
                          (long long)LIVE_T(), (long long)want);
        if (d > 1) ct_release(kept);
        else {
            CT_EXPECT_INT_EQ(ct_refcount(kept), 1);
            ct_release(kept);
        }
    }
    CT_EXPECT_INT_EQ(ct_scope_depth(), 0);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* ---- threads ------------------------------------------------------------------- */

typedef struct worker_result {
    int depth_at_start;
    int depth_in_scope;
    int64_t sum;
    ct_tensor *out; /* created outside any scope on the worker */
} worker_result;

static void *scoped_worker(void *arg) {
    worker_result *r = arg;
    r->depth_at_start = ct_scope_depth();
    ct_scope_begin();
    r->depth_in_scope = ct_scope_depth();
    ct_tensor *x = ct_arange(0, 100, 1);
    int64_t vals[100] = {0};
    ct_copy_to_host(ct_view(x, CT_SHAPE(10, 10)), vals, CT_INT64, 100);
    for (int i = 0; i < 100; i++) r->sum += vals[i];
    ct_scope_end();
    r->out = ct_full(CT_SHAPE(2), 5);
    return NULL;
}

static void test_scopes_are_per_thread(void) {
    int64_t t0 = LIVE_T();
    ct_scope_begin();
    ct_tensor *mine = ct_ones(CT_SHAPE(3));
    worker_result r = {-1, -1, 0, NULL};
    pthread_t th;
    CT_EXPECT_INT_EQ(pthread_create(&th, NULL, scoped_worker, &r), 0);
    pthread_join(th, NULL);
    CT_EXPECT_INT_EQ(r.depth_at_start, 0);
    CT_EXPECT_INT_EQ(r.depth_in_scope, 1);
    CT_EXPECT_INT_EQ(r.sum, 4950);
    CT_EXPECT_INT_EQ(ct_scope_depth(), 1);  /* the worker did not touch ours */
    CT_EXPECT_INT_EQ(ct_refcount(mine), 1);
    CT_EXPECT(r.out != NULL);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 2);
    ct_scope_end();
    /* the worker's tensor is owned by nobody's scope: still alive */
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    CT_EXPECT_INT_EQ(ct_refcount(r.out), 1);
    ct_release(r.out);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

typedef struct churn_arg {
    ct_tensor *shared;
    int failures;
} churn_arg;

/* Scoped allocation and cross-thread retain/release at the same time. */
static void *churn_worker(void *arg) {
    churn_arg *c = arg;
    for (int i = 0; i < 2000; i++) {
        ct_scope_begin();
        ct_tensor *a = ct_full(CT_SHAPE(4), i);
        ct_tensor *s = ct_clone(a);
        ct_tensor *v = ct_view(c->shared, CT_SHAPE(2, 2));
        int64_t idx[2] = {1, 1};
        if (ct_get(s, idx + 1) != i || ct_get(v, idx) != 1.0) c->failures++;
        ct_retain(c->shared);
        ct_scope_end();
        ct_release(c->shared);
    }
    return NULL;
}

static void test_threads_share_refcounts(void) {
    int64_t t0 = LIVE_T();
    ct_tensor *shared = ct_ones(CT_SHAPE(4));
    enum { N = 4 };
    pthread_t th[N];
    churn_arg args[N];
    for (int i = 0; i < N; i++) {
        args[i].shared = shared;
        args[i].failures = 0;
        CT_EXPECT_INT_EQ(pthread_create(&th[i], NULL, churn_worker, &args[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CT_EXPECT_INT_EQ(args[i].failures, 0);
    }
    CT_EXPECT_INT_EQ(ct_refcount(shared), 1);
    CT_EXPECT_INT_EQ(LIVE_T(), t0 + 1);
    ct_release(shared);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
}

/* A tensor retained on one thread may be released on another. */
static void *release_worker(void *arg) {
    ct_release((ct_tensor *)arg);
    return NULL;
}

static void test_release_on_other_thread(void) {
    int64_t t0 = LIVE_T(), s0 = LIVE_S();
    ct_tensor *t = ct_zeros(CT_SHAPE(10));
    ct_retain(t);
    pthread_t th;
    CT_EXPECT_INT_EQ(pthread_create(&th, NULL, release_worker, t), 0);
    pthread_join(th, NULL);
    CT_EXPECT_INT_EQ(ct_refcount(t), 1);
    CT_EXPECT_INT_EQ(pthread_create(&th, NULL, release_worker, t), 0);
    pthread_join(th, NULL);
    CT_EXPECT_INT_EQ(LIVE_T(), t0);
    CT_EXPECT_INT_EQ(LIVE_S(), s0);
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_refcount_retain_release);
    CT_RUN(test_scope_releases_everything);
    CT_RUN(test_scope_many_tensors);
    CT_RUN(test_keep_to_caller);
    CT_RUN(test_keep_nested);
    CT_RUN(test_release_inside_scope);
    CT_RUN(test_retain_inside_scope);
    CT_RUN(test_ct_scope_macro);
    CT_RUN(test_scope_left_by_break_or_return);
    CT_RUN(test_views_keep_storage_alive);
    CT_RUN(test_scope_end_without_begin);
    CT_RUN(test_deep_nesting);
    CT_RUN(test_scopes_are_per_thread);
    CT_RUN(test_threads_share_refcounts);
    CT_RUN(test_release_on_other_thread);
    return ct_test_finish();
}
