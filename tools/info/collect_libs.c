/*
 * collect_libs.c — versions of the libraries ctorch uses or may load: the
 * CUDA toolkit it was built with, and, probed at run time with dlopen so that
 * none of them is required, the CUDA driver, cuBLAS, cuDNN, NCCL, the OpenCL
 * platforms and devices, and oneDNN; OpenBLAS, which ctorch always links, is
 * asked directly. Each probe records the file the loader picked, because the
 * library found on the system is not always the one a user expects
 * (pytorch#78489).
 */
#include <dlfcn.h>
#include <string.h>

#include <ctorch/backends.h>

#include "info.h"

#ifdef CTORCH_HAVE_CUDA
#include <cuda_runtime_api.h> /* CUDART_VERSION: the toolkit ctorch was built with */
#endif

/* From OpenBLAS, which ctorch links for the cpu device's BLAS. */
extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);
extern int openblas_get_num_threads(void);

/* The CUDA major version whose libraries ctorch's CUDA backend loads. */
static int cuda_major(const info_libs *l) { return l->cuda_built_number ? l->cuda_built_number / 1000 : 13; }

static void cuda_toolkit(info_libs *l, const info_build *b) {
#ifdef CTORCH_HAVE_CUDA
    (void)b;
    l->cuda_built_number = CUDART_VERSION;
    snprintf(l->cuda_built, sizeof l->cuda_built, "%d.%d", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
#else
    l->cuda_built_number = 0;
    /* A library with CUDA but a tool built without the toolkit's headers. */
    info_copy(l->cuda_built, sizeof l->cuda_built, b->cuda_compiled ? "unknown" : "");
#endif
}

/* The names ctorch's CUDA backend tries, in its order: the soname of the
 * toolkit's major version, the unversioned name, then the toolkit's folder. */
static void *open_cuda_library(const char *base, const char *version, char *detail, size_t size) {
    char versioned[64], plain[64], tk_versioned[128], tk_plain[128];
    snprintf(versioned, sizeof versioned, "%s.so.%s", base, version);
    snprintf(plain, sizeof plain, "%s.so", base);
    snprintf(tk_versioned, sizeof tk_versioned, "/usr/local/cuda/lib64/%s", versioned);
    snprintf(tk_plain, sizeof tk_plain, "/usr/local/cuda/lib64/%s", plain);
    const char *const names[] = {versioned, plain, tk_versioned, tk_plain, NULL};
    return info_dlopen_first(names, detail, size);
}

static void probe_cublas(info_lib *lib, int major) {
    typedef int (*get_property_fn)(int type, int *value); /* libraryPropertyType, cublasStatus_t */
    typedef size_t (*get_cudart_fn)(void);
    char version[16];
    snprintf(version, sizeof version, "%d", major);
    lib->key = "cublas";
    lib->label = "cuBLAS";
    void *h = open_cuda_library("libcublas", version, lib->detail, sizeof lib->detail);
    if (!h) return;
    lib->found = true;
    get_property_fn prop = (get_property_fn)dlsym(h, "cublasGetProperty");
    int v[3] = {0, 0, 0}; /* MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL */
    bool ok = prop != NULL;
    for (int i = 0; ok && i < 3; i++) ok = prop(i, &v[i]) == 0;
    if (ok) snprintf(lib->version, sizeof lib->version, "%d.%d.%d", v[0], v[1], v[2]);
    else info_copy(lib->detail, sizeof lib->detail, "cublasGetProperty unavailable");
    get_cudart_fn cudart = (get_cudart_fn)dlsym(h, "cublasGetCudartVersion");
    if (cudart) {
        size_t c = cudart();
        info_appendf(lib->detail, sizeof lib->detail, "%sbuilt for CUDA %zu.%zu", lib->detail[0] ? "; " : "", c / 1000,
                     (c % 1000) / 10);
    }
    info_record_path(lib, prop ? (void *)prop : (void *)cudart);
}

/* cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older
 * major*1000 + minor*100 + patch. */
static void probe_cudnn(info_lib *lib) {
    typedef size_t (*get_version_fn)(void);
    lib->key = "cudnn";
    lib->label = "cuDNN";
    void *h = open_cuda_library("libcudnn", "9", lib->detail, sizeof lib->detail);
    if (!h) return;
    lib->found = true;
    get_version_fn get = (get_version_fn)dlsym(h, "cudnnGetVersion");
    if (get) {
        size_t v = get(), scale = v >= 90000 ? 10000 : 1000;
        snprintf(lib->version, sizeof lib->version, "%zu.%zu.%zu", v / scale, (v % scale) / 100, v % 100);
    }
    get_version_fn cudart = (get_version_fn)dlsym(h, "cudnnGetCudartVersion");
    if (cudart) {
        size_t c = cudart();
        snprintf(lib->detail, sizeof lib->detail, "built for CUDA %zu.%zu", c / 1000, (c % 1000) / 10);
    }
    info_record_path(lib, (void *)get);
}

/* NCCL_VERSION_CODE: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after. */
static void probe_nccl(info_lib *lib) {
    typedef int (*get_version_fn)(int *version);
    static const char *const names[] = {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2", NULL};
    lib->key = "nccl";
    lib->label = "NCCL";
    void *h = info_dlopen_first(names, lib->detail, sizeof lib->detail);
    if (!h) return;
    lib->found = true;
    get_version_fn get = (get_version_fn)dlsym(h, "ncclGetVersion");
    int v = 0;
    if (get && get(&v) == 0 && v > 0) {
        int scale = v >= 10000 ? 10000 : 1000;
        snprintf(lib->version, sizeof lib->version, "%d.%d.%d", v / scale, (v % scale) / 100, v % 100);
    }
    info_record_path(lib, (void *)get);
}

/* dnnl_version() returns a pointer to {int major, minor, patch; const char
 * *hash; …} in oneDNN 2 and 3; only the leading fields are read. */
static void probe_onednn(info_lib *lib) {
    typedef struct {
        int major, minor, patch;
        const char *hash;
    } dnnl_version_head;
    typedef const dnnl_version_head *(*get_version_fn)(void);
    static const char *const names[] = {"libdnnl.so.3", "libdnnl.so.2", "libdnnl.so", NULL};
    lib->key = "onednn";
    lib->label = "oneDNN";
    void *h = info_dlopen_first(names, lib->detail, sizeof lib->detail);
    if (!h) return;
    lib->found = true;
    get_version_fn get = (get_version_fn)dlsym(h, "dnnl_version");
    const dnnl_version_head *v = get ? get() : NULL;
    if (v) {
        snprintf(lib->version, sizeof lib->version, "%d.%d.%d", v->major, v->minor, v->patch);
        if (v->hash && strcmp(v->hash, "N/A") != 0)
            snprintf(lib->detail, sizeof lib->detail, "git %.40s; ", v->hash);
        info_appendf(lib->detail, sizeof lib->detail, "%s",
                     ct_backends_mkldnn_is_available() ? "runs the CPU GEMM and convolutions" : "not used by ctorch on this CPU");
    }
    info_record_path(lib, (void *)get);
}

static void probe_openblas(info_libs *l) {
    info_copy(l->openblas_config, sizeof l->openblas_config, openblas_get_config());
    info_trim(l->openblas_config);
    info_copy(l->openblas_core, sizeof l->openblas_core, openblas_get_corename());
    l->openblas_threads = openblas_get_num_threads();
    info_copy(l->gemm_engine, sizeof l->gemm_engine, ct_backends_cpu_gemm_engine());
    info_copy(l->cpu_capability, sizeof l->cpu_capability, ct_backends_cpu_get_cpu_capability());
    l->mkldnn_available = ct_backends_mkldnn_is_available();
}

/* What ctorch's own loader (cu_dl.c) gets, which may differ from the file
 * found above when it rejects a version; asked only of CUDA builds, where
 * ctorch uses these libraries. Both encode major*10000 + minor*100 + patch
 * (cuDNN 9's own encoding). */
static void ctorch_loaded(info_lib *lib, int version) {
    lib->ctorch_asked = true;
    if (version > 0)
        snprintf(lib->ctorch_version, sizeof lib->ctorch_version, "%d.%d.%d", version / 10000, (version / 100) % 100,
                 version % 100);
}

void info_collect_libs(info_libs *l, const info_build *b) {
    cuda_toolkit(l, b);
    info_probe_cuda_driver(&l->driver);
    probe_cublas(&l->cublas, cuda_major(l));
    probe_cudnn(&l->cudnn);
    if (b->cuda_compiled) {
        ctorch_loaded(&l->cublas, ct_backends_cublas_version());
        ctorch_loaded(&l->cudnn, ct_backends_cudnn_version());
    }
    probe_nccl(&l->nccl);
    info_probe_opencl(&l->opencl);
    probe_openblas(l);
    probe_onednn(&l->onednn);
}
