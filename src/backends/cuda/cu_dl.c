/*
 * cu_dl.c — loading cuBLAS and cuDNN (and, for cu_nccl.c, any library) with dlopen, their status names as
 * ctorch errors, and the per-(device, thread) library handles (cu_dl.h).
 *
 * Each library is loaded once per process (pthread_once) on first use: the
 * versioned soname, the unversioned one, then the toolkit's lib64 folder. A
 * candidate whose major version differs from the headers ctorch was built
 * with is closed and the next one tried, so an old libcudnn.so symlink
 * cannot be half-used. Failure is remembered as a message that every later
 * use reports, so the library stays loadable (and the CPU path usable) on
 * machines without the CUDA math libraries.
 *
 * RTLD_LOCAL keeps their symbols out of the global scope. RTLD_DEEPBIND is
 * not needed (and would break malloc interposers such as ASan): the crashes
 * of PoCL's kernel compiler that showed up once cuBLAS was loaded (issue 15
 * item 4) were no symbol clash. libcublas/libcublasLt export only cublas*
 * names and link no LLVM (LD_DEBUG=bindings: they bind to libc, libm and
 * libgcc_s only); their ~12,600 exit handlers just ran after LLVM's pass
 * registry was destroyed while PoCL was still compiling. The OpenCL backend
 * now waits for its queues before exit handlers run (cl_backend.c,
 * "process exit").
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_dl.h"

#define CT_CU_LIB_DIR "/usr/local/cuda/lib64/"
#define CT_CU_STR_(x) #x
#define CT_CU_STR(x) CT_CU_STR_(x)

/* ---- loading ------------------------------------------------------------------------ */

#define CUBLAS_SYM(fn) {#fn, offsetof(ct_cublas_api, fn)}
static const ct_cu_sym_slot cublas_syms[] = {
    CUBLAS_SYM(cublasCreate_v2),       CUBLAS_SYM(cublasSetStream_v2),
    CUBLAS_SYM(cublasSetMathMode),     CUBLAS_SYM(cublasSetWorkspace_v2),
    CUBLAS_SYM(cublasGetProperty),     CUBLAS_SYM(cublasGetStatusName),
    CUBLAS_SYM(cublasGetStatusString), CUBLAS_SYM(cublasGemmEx_64),
    CUBLAS_SYM(cublasGemmStridedBatchedEx_64),
};

#define CUDNN_SYM(fn) {#fn, offsetof(ct_cudnn_api, fn)}
static const ct_cu_sym_slot cudnn_syms[] = {
    CUDNN_SYM(cudnnGetVersion),
    CUDNN_SYM(cudnnGetErrorString),
    CUDNN_SYM(cudnnGetLastErrorString),
    CUDNN_SYM(cudnnCreate),
    CUDNN_SYM(cudnnSetStream),
    CUDNN_SYM(cudnnCreateTensorDescriptor),
    CUDNN_SYM(cudnnDestroyTensorDescriptor),
    CUDNN_SYM(cudnnSetTensor4dDescriptor),
    CUDNN_SYM(cudnnCreateFilterDescriptor),
    CUDNN_SYM(cudnnDestroyFilterDescriptor),
    CUDNN_SYM(cudnnSetFilter4dDescriptor),
    CUDNN_SYM(cudnnCreateConvolutionDescriptor),
    CUDNN_SYM(cudnnDestroyConvolutionDescriptor),
    CUDNN_SYM(cudnnSetConvolution2dDescriptor),
    CUDNN_SYM(cudnnSetConvolutionGroupCount),
    CUDNN_SYM(cudnnSetConvolutionMathType),
    CUDNN_SYM(cudnnCreatePoolingDescriptor),
    CUDNN_SYM(cudnnDestroyPoolingDescriptor),
    CUDNN_SYM(cudnnSetPooling2dDescriptor),
    CUDNN_SYM(cudnnGetConvolutionForwardAlgorithmMaxCount),
    CUDNN_SYM(cudnnGetConvolutionForwardAlgorithm_v7),
    CUDNN_SYM(cudnnFindConvolutionForwardAlgorithmEx),
    CUDNN_SYM(cudnnGetConvolutionForwardWorkspaceSize),
    CUDNN_SYM(cudnnConvolutionForward),
    CUDNN_SYM(cudnnGetConvolutionBackwardDataAlgorithmMaxCount),
    CUDNN_SYM(cudnnGetConvolutionBackwardDataAlgorithm_v7),
    CUDNN_SYM(cudnnFindConvolutionBackwardDataAlgorithmEx),
    CUDNN_SYM(cudnnGetConvolutionBackwardDataWorkspaceSize),
    CUDNN_SYM(cudnnConvolutionBackwardData),
    CUDNN_SYM(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount),
    CUDNN_SYM(cudnnGetConvolutionBackwardFilterAlgorithm_v7),
    CUDNN_SYM(cudnnFindConvolutionBackwardFilterAlgorithmEx),
    CUDNN_SYM(cudnnGetConvolutionBackwardFilterWorkspaceSize),
    CUDNN_SYM(cudnnConvolutionBackwardFilter),
    CUDNN_SYM(cudnnBatchNormalizationForwardTraining),
    CUDNN_SYM(cudnnBatchNormalizationForwardInference),
    CUDNN_SYM(cudnnBatchNormalizationBackward),
    CUDNN_SYM(cudnnPoolingForward),
    CUDNN_SYM(cudnnAddTensor),
    CUDNN_SYM(cudnnCreateActivationDescriptor),
    CUDNN_SYM(cudnnDestroyActivationDescriptor),
    CUDNN_SYM(cudnnSetActivationDescriptor),
    CUDNN_SYM(cudnnActivationForward),
};

/* cuDNN 9's libcudnn.so.9 is a front that dlopens these by soname on
 * demand; loading them first from the folder the front came from lets it
 * find them when that folder is not on the loader's path. */
static const char *const cudnn_sublibs[] = {
    "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9",
    "libcudnn_heuristic.so.9", "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_engines_precompiled.so.9", "libcudnn_adv.so.9",
};

/* Fill the table from handle; false (with lib->error) when a symbol is
 * missing. */
static bool resolve(ct_cu_dl_lib *lib, void *handle, const char *path) {
    for (size_t i = 0; i < lib->nsyms; i++) {
        void *p = dlsym(handle, lib->syms[i].name);
        if (!p) {
            snprintf(lib->error, sizeof lib->error, "%s (%s) lacks %s: %s", path, lib->label,
                     lib->syms[i].name, dlerror());
            return false;
        }
        memcpy((char *)lib->table + lib->syms[i].offset, &p, sizeof p);
    }
    return true;
}

void ct_cu_dl_load(ct_cu_dl_lib *lib, ct_cu_version_fn check_version, const char **loaded_path) {
    char first_error[400] = "", tried[400] = "";
    for (int i = 0; lib->candidates[i]; i++) {
        const char *path = lib->candidates[i];
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", path);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            if (!first_error[0]) snprintf(first_error, sizeof first_error, "%s", dlerror());
            continue;
        }
        char why[256] = "";
        int version = resolve(lib, h, path) ? check_version(lib, why, sizeof why) : 0;
        if (version > 0) {
            lib->version = version;
            *loaded_path = path;
            return;
        }
        if (why[0]) snprintf(lib->error, sizeof lib->error, "%.300s: %.255s", path, why);
        if (!first_error[0]) snprintf(first_error, sizeof first_error, "%.399s", lib->error);
        dlclose(h);
    }
    snprintf(lib->error, sizeof lib->error, "%s is not available: could not load %.100s (%.399s; tried %.399s)",
             lib->label, lib->candidates[0], first_error, tried);
}

static ct_cublas_api g_cublas_api;
static const char *const cublas_candidates[] = {
    "libcublas.so." CT_CU_STR(CUBLAS_VER_MAJOR), "libcublas.so",
    CT_CU_LIB_DIR "libcublas.so." CT_CU_STR(CUBLAS_VER_MAJOR), CT_CU_LIB_DIR "libcublas.so", NULL};
static ct_cu_dl_lib g_cublas = {"cuBLAS", cublas_candidates, cublas_syms,
                          sizeof cublas_syms / sizeof cublas_syms[0], &g_cublas_api, 0, ""};

static ct_cudnn_api g_cudnn_api;
static const char *const cudnn_candidates[] = {
    "libcudnn.so." CT_CU_STR(CUDNN_MAJOR), "libcudnn.so",
    CT_CU_LIB_DIR "libcudnn.so." CT_CU_STR(CUDNN_MAJOR), CT_CU_LIB_DIR "libcudnn.so", NULL};
static ct_cu_dl_lib g_cudnn = {"cuDNN", cudnn_candidates, cudnn_syms,
                         sizeof cudnn_syms / sizeof cudnn_syms[0], &g_cudnn_api, 0, ""};

static int cublas_version(ct_cu_dl_lib *lib, char *why, size_t size) {
    (void)lib;
    int v[3] = {0, 0, 0};
    const libraryPropertyType props[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
    for (int i = 0; i < 3; i++) {
        if (g_cublas_api.cublasGetProperty(props[i], &v[i]) != CUBLAS_STATUS_SUCCESS) {
            snprintf(why, size, "cublasGetProperty failed");
            return 0;
        }
    }
    if (v[0] != CUBLAS_VER_MAJOR) {
        snprintf(why, size, "cuBLAS %d.%d.%d found, but ctorch was built against cuBLAS %d", v[0],
                 v[1], v[2], CUBLAS_VER_MAJOR);
        return 0;
    }
    return v[0] * 10000 + v[1] * 100 + v[2];
}

static int cudnn_version(ct_cu_dl_lib *lib, char *why, size_t size) {
    (void)lib;
    size_t v = g_cudnn_api.cudnnGetVersion();
    if (v / 10000 != CUDNN_MAJOR) {
        snprintf(why, size,
                 "cuDNN version incompatibility: ctorch was compiled against %d.%d.%d but found "
                 "runtime version %zu",
                 CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL, v);
        return 0;
    }
    return (int)v;
}

/* The sublibraries next to a front loaded by path (nothing to do when the
 * loader found it by soname: it finds them the same way). */
static void preload_cudnn_sublibs(const char *front) {
    const char *slash = strrchr(front, '/');
    if (!slash) return;
    for (size_t i = 0; i < sizeof cudnn_sublibs / sizeof cudnn_sublibs[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - front), front, cudnn_sublibs[i]);
        if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) (void)dlerror(); /* optional: cuDNN reports it */
    }
}

static pthread_once_t g_cublas_once = PTHREAD_ONCE_INIT, g_cudnn_once = PTHREAD_ONCE_INIT;

static void load_cublas(void) {
    const char *path = NULL;
    ct_cu_dl_load(&g_cublas, cublas_version, &path);
}

static void load_cudnn(void) {
    const char *path = NULL;
    ct_cu_dl_load(&g_cudnn, cudnn_version, &path);
    if (path) preload_cudnn_sublibs(path);
}

const void *ct_cu_dl_table(ct_cu_dl_lib *lib, pthread_once_t *once, void (*load)(void), const char *op) {
    pthread_once(once, load);
    if (lib->version > 0) return lib->table;
    ct_error_set(CT_ERR_UNSUPPORTED, "%s: %s", op, lib->error);
    return NULL;
}

const ct_cublas_api *ct_cu_cublas(const char *op) { return ct_cu_dl_table(&g_cublas, &g_cublas_once, load_cublas, op); }

const ct_cudnn_api *ct_cu_cudnn_if_available(void) {
    pthread_once(&g_cudnn_once, load_cudnn);
    return g_cudnn.version > 0 ? &g_cudnn_api : NULL;
}

const ct_cudnn_api *ct_cu_cudnn(const char *op) {
    const ct_cudnn_api *api = ct_cu_cudnn_if_available();
    if (!api) ct_error_set(CT_ERR_UNSUPPORTED, "%s: %s", op, g_cudnn.error);
    return api;
}

int ct_cu_dl_cudnn_version(void) { return ct_cu_cudnn_if_available() ? g_cudnn.version : 0; }

int ct_cu_dl_cublas_version(void) {
    pthread_once(&g_cublas_once, load_cublas);
    return g_cublas.version;
}

/* ---- status names and errors ----------------------------------------------------------- */

const char *ct_cu_cublas_status_name(cublasStatus_t s) {
    if (g_cublas.version > 0) return g_cublas_api.cublasGetStatusName(s);
    return "CUBLAS_STATUS_UNKNOWN";
}

ct_status ct_cu_cublas_error(cublasStatus_t s, const char *op, const char *call) {
    if (s == CUBLAS_STATUS_SUCCESS) return CT_OK;
    const char *what = g_cublas.version > 0 ? g_cublas_api.cublasGetStatusString(s) : "";
    return ct_error_set(s == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERR_OOM : CT_ERR_BACKEND,
                        "%s: CUDA error: %s when calling %s (%s)", op, ct_cu_cublas_status_name(s),
                        call, what);
}

const char *ct_cu_cudnn_status_name(cudnnStatus_t s) {
    if (g_cudnn.version > 0) return g_cudnn_api.cudnnGetErrorString(s);
    return "CUDNN_STATUS_UNKNOWN";
}

ct_status ct_cu_cudnn_error(cudnnStatus_t s, const char *op, const char *call) {
    if (s == CUDNN_STATUS_SUCCESS) return CT_OK;
    char detail[512] = "";
    if (g_cudnn.version > 0) g_cudnn_api.cudnnGetLastErrorString(detail, sizeof detail);
    const bool oom = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                     s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    return ct_error_set(oom ? CT_ERR_OOM : CT_ERR_BACKEND, "%s: cuDNN error: %s when calling %s%s%s%s",
                        op, ct_cu_cudnn_status_name(s), call, detail[0] ? " (" : "", detail,
                        detail[0] ? ")" : "");
}

/* ---- handles ---------------------------------------------------------------------------- */

/* What one thread holds; returned to the pool when the thread exits. */
typedef struct thread_handles {
    cublasHandle_t blas[CT_CU_MAX_DEVICES];
    cudnnHandle_t dnn[CT_CU_MAX_DEVICES];
} thread_handles;

/* Free handles of exited threads, per device. */
typedef struct pooled {
    void *handle;
    struct pooled *next;
} pooled;

static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pooled *g_free_blas[CT_CU_MAX_DEVICES], *g_free_dnn[CT_CU_MAX_DEVICES];
static pthread_key_t g_thread_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;

static void pool_push(pooled **list, void *handle) {
    pooled *p = malloc(sizeof *p);
    if (!p) return; /* the handle leaks; nothing else is lost */
    p->handle = handle;
    p->next = *list;
    *list = p;
}

static void *pool_pop(pooled **list) {
    pooled *p = *list;
    if (!p) return NULL;
    *list = p->next;
    void *h = p->handle;
    free(p);
    return h;
}

static void release_thread(void *arg) {
    thread_handles *th = arg;
    pthread_mutex_lock(&g_pool_lock);
    for (int d = 0; d < CT_CU_MAX_DEVICES; d++) {
        if (th->blas[d]) pool_push(&g_free_blas[d], th->blas[d]);
        if (th->dnn[d]) pool_push(&g_free_dnn[d], th->dnn[d]);
    }
    pthread_mutex_unlock(&g_pool_lock);
    free(th);
}

static void make_key(void) { g_key_ok = pthread_key_create(&g_thread_key, release_thread) == 0; }

static thread_handles *this_thread(const char *op, int dev) {
    CT_CHECK_NULL(dev >= 0 && dev < CT_CU_MAX_DEVICES, CT_ERR_DEVICE,
                  "%s: CUDA device %d is beyond the %d devices ctorch keeps library handles for",
                  op, dev, CT_CU_MAX_DEVICES);
    pthread_once(&g_key_once, make_key);
    CT_CHECK_NULL(g_key_ok, CT_ERR_INTERNAL, "%s: could not create the thread key for CUDA handles",
                  op);
    thread_handles *th = pthread_getspecific(g_thread_key);
    if (th) return th;
    th = calloc(1, sizeof *th);
    CT_CHECK_NULL(th, CT_ERR_OOM, "%s: out of host memory", op);
    if (pthread_setspecific(g_thread_key, th) != 0) {
        free(th);
        ct_error_set(CT_ERR_INTERNAL, "%s: could not register the thread's CUDA handles", op);
        return NULL;
    }
    return th;
}

static void *take_pooled(pooled **lists, int dev) {
    pthread_mutex_lock(&g_pool_lock);
    void *h = pool_pop(&lists[dev]);
    pthread_mutex_unlock(&g_pool_lock);
    return h;
}

ct_status ct_cu_cublas_handle(int dev, cudaStream_t stream, const char *op, cublasHandle_t *out) {
    const ct_cublas_api *api = ct_cu_cublas(op);
    if (!api) return ct_last_status();
    thread_handles *th = this_thread(op, dev);
    if (!th) return ct_last_status();
    if (!th->blas[dev]) {
        cublasHandle_t h = take_pooled(g_free_blas, dev);
        if (!h) CT_TRY(ct_cu_cublas_error(api->cublasCreate_v2(&h), op, "cublasCreate(handle)"));
        th->blas[dev] = h;
    }
    CT_TRY(ct_cu_cublas_error(api->cublasSetStream_v2(th->blas[dev], stream), op,
                              "cublasSetStream(handle, stream)"));
    *out = th->blas[dev];
    return CT_OK;
}

ct_status ct_cu_cudnn_handle(int dev, cudaStream_t stream, const char *op, cudnnHandle_t *out) {
    const ct_cudnn_api *api = ct_cu_cudnn(op);
    if (!api) return ct_last_status();
    thread_handles *th = this_thread(op, dev);
    if (!th) return ct_last_status();
    if (!th->dnn[dev]) {
        cudnnHandle_t h = take_pooled(g_free_dnn, dev);
        if (!h) CT_TRY(ct_cu_cudnn_error(api->cudnnCreate(&h), op, "cudnnCreate(handle)"));
        th->dnn[dev] = h;
    }
    CT_TRY(ct_cu_cudnn_error(api->cudnnSetStream(th->dnn[dev], stream), op,
                             "cudnnSetStream(handle, stream)"));
    *out = th->dnn[dev];
    return CT_OK;
}
