/*
 * cpu_gemm.c — the float32 GEMM engine of the CPU backend, chosen once per
 * process by what the CPU can do (docs/performance.md has the measurements).
 *
 * Two engines can sit behind ct_cpu_sgemm:
 * - oneDNN (when the build found it): its JIT GEMM picks AVX2, AVX-512 or
 *   AMX kernels from CPUID by itself, and it runs on OpenMP, the same
 *   thread pool as the rest of ctorch. It is used on x86-64 CPUs with AVX2
 *   and FMA, where its kernels are JIT-compiled for the machine.
 * - OpenBLAS: everywhere else (other architectures, old x86 CPUs, builds
 *   without oneDNN). Debian's OpenBLAS 0.3.21 picks its kernels by CPUID
 *   too, but does not know some newer CPUs (Sapphire Rapids reads as the
 *   2004 "Prescott" core, five times slower), and its own thread pool
 *   spins against OpenMP's on a small machine.
 * The choice needs no environment variable; it does not change between
 * calls, so a product gives the same bits every time in one process.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CTORCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef CTORCH_HAVE_OPENMP
#include <omp.h>
#endif

#include "cpu_gemm.h"
#include "ctorch/backends.h"

extern char *openblas_get_corename(void);

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static bool use_onednn;
static char engine_name[96];

#ifdef CTORCH_HAVE_DNNL /* oneDNN's engine is chosen by these; OpenBLAS needs neither */
static bool cpu_has_avx2_fma(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}
#endif

static const char *x86_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512";
    if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
    return "generic";
}

static void choose_engine(void) {
#ifdef CTORCH_HAVE_DNNL
    use_onednn = cpu_has_avx2_fma();
    if (use_onednn) {
        const dnnl_version_t *v = dnnl_version();
        snprintf(engine_name, sizeof engine_name, "oneDNN %d.%d.%d (%s)", v->major, v->minor,
                 v->patch, x86_level());
        return;
    }
#endif
    snprintf(engine_name, sizeof engine_name, "OpenBLAS (%s)", openblas_get_corename());
}

/* Inside one of ctorch's parallel regions oneDNN runs on the calling
 * thread alone, so its sums cannot depend on the thread count. */
#ifdef CTORCH_HAVE_DNNL
static bool omp_in_parallel_region(void) {
#ifdef CTORCH_HAVE_OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
}
#endif

static bool onednn_engine(void) {
    pthread_once(&engine_once, choose_engine);
    return use_onednn;
}

const char *ct_cpu_gemm_engine(void) {
    pthread_once(&engine_once, choose_engine);
    return engine_name;
}

const char *ct_backends_cpu_gemm_engine(void) { return ct_cpu_gemm_engine(); }

bool ct_backends_mkldnn_is_available(void) { return onednn_engine(); }

const char *ct_backends_cpu_get_cpu_capability(void) {
    const char *level = x86_level();
    return strcmp(level, "avx512") == 0 ? "AVX512" : strcmp(level, "avx2") == 0 ? "AVX2" : "DEFAULT";
}

bool ct_cpu_gemm_shares_openmp(void) { return onednn_engine(); }

#ifdef CTORCH_HAVE_DNNL
/* Long sums into a small output (the weight gradients of layers fed a large
 * batch): oneDNN would split k across its threads, and the partial sums it
 * adds would then depend on the thread count. Instead k is cut into slices
 * of a fixed length, whatever the threads; each slice is one
 * single-threaded product into its own buffer, and the slices are added in
 * order, so the bits depend only on the shapes. Larger outputs are split
 * by oneDNN over rows and columns only, whose sums do not depend on the
 * thread count (tests/test_cpu_engine.c checks both). */
#define CT_GEMM_SMALL_OUTPUT (256 * 256)
#define CT_GEMM_K_SLICE 2048

static bool long_sum(int64_t m, int64_t n, int64_t k) {
    return m * n <= CT_GEMM_SMALL_OUTPUT && k >= 2 * CT_GEMM_K_SLICE;
}

/* One slice's product on the calling thread alone: a nested OpenMP region
 * (oneDNN's) gets one thread once this thread's ICV says so, and the ICV
 * belongs to the enclosing region, so the caller's setting comes back. */
static void slice_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k0, int64_t kn,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float *out) {
    const float *as = ta ? a + k0 * lda : a + k0, *bs = tb ? b + k0 : b + k0 * ldb;
    (void)dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, kn, 1.0f, as, lda, bs, ldb, 0.0f, out, n);
}

static void sgemm_k_slices(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                           float *c, int64_t ldc) {
    const int64_t slices = (k + CT_GEMM_K_SLICE - 1) / CT_GEMM_K_SLICE, mn = m * n;
    float *part = malloc((size_t)(slices * mn) * sizeof(float));
    if (!part) { /* no room for the partial sums: correct, though its bits may vary with the threads */
        (void)dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    #pragma omp parallel
    {
#ifdef CTORCH_HAVE_OPENMP
        omp_set_num_threads(1);
#endif
        #pragma omp for schedule(dynamic)
        for (int64_t sl = 0; sl < slices; sl++) {
            int64_t k0 = sl * CT_GEMM_K_SLICE, kn = k - k0 < CT_GEMM_K_SLICE ? k - k0 : CT_GEMM_K_SLICE;
            slice_product(ta, tb, m, n, k0, kn, a, lda, b, ldb, part + sl * mn);
        }
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int64_t sl = 0; sl < slices; sl++) sum += part[sl * mn + i * n + j];
            c[i * ldc + j] = alpha * sum + (beta == 0.0f ? 0.0f : beta * c[i * ldc + j]);
        }
    free(part);
}
#endif

void ct_cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc) {
#ifdef CTORCH_HAVE_DNNL
    if (onednn_engine()) {
        if (long_sum(m, n, k) && !omp_in_parallel_region())
            sgemm_k_slices(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        else /* arguments were checked by the callers, so oneDNN cannot refuse them */
            (void)dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                             ldb, beta, c, ldc);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

void ct_cpu_sgemv(bool trans, int64_t rows, int64_t cols, const float *a, int64_t lda,
                  const float *x, int64_t incx, float *y) {
#ifdef CTORCH_HAVE_DNNL
    if (onednn_engine()) {
        /* x as a one-column matrix whose rows are incx apart; oneDNN's GEMM
         * takes its matrix-vector path for a single column. */
        const int64_t out = trans ? cols : rows, inner = trans ? rows : cols;
        ct_cpu_sgemm(trans, false, out, 1, inner, 1.0f, a, lda, x, incx, 0.0f, y, 1);
        return;
    }
#endif
    cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, (blasint)rows, (blasint)cols,
                1.0f, a, (blasint)lda, x, (blasint)incx, 0.0f, y, 1);
}
