/*
 * cu_user_kernel.c — users' own kernels on CUDA (ctorch/extension.h): the
 * backend half of get_proc("kernel_ops").
 *
 * The source (the kernel dialect in front, so K_KERNEL is extern "C"
 * __global__ and the kernel keeps its plain name) is compiled by NVRTC to a
 * CUBIN for the device's own architecture, loaded with the runtime's
 * context-independent library API (cudaLibraryLoadData, CUDA 12 on) and
 * launched with cudaLaunchKernel on the current stream. NVRTC is opened
 * with dlopen like cuBLAS (cu_dl.c): libctorch.so loads without it, and
 * ct_kernel_compile then says which library is missing.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "core/backend_kernel.h"
#include "cu_dl.h"
#include "cu_internal.h"

#define CT_NVRTC_FN(name) __typeof__(name) *name

typedef struct nvrtc_api {
    CT_NVRTC_FN(nvrtcVersion);
    CT_NVRTC_FN(nvrtcGetErrorString);
    CT_NVRTC_FN(nvrtcCreateProgram);
    CT_NVRTC_FN(nvrtcCompileProgram);
    CT_NVRTC_FN(nvrtcGetProgramLogSize);
    CT_NVRTC_FN(nvrtcGetProgramLog);
    CT_NVRTC_FN(nvrtcGetCUBINSize);
    CT_NVRTC_FN(nvrtcGetCUBIN);
    CT_NVRTC_FN(nvrtcDestroyProgram);
} nvrtc_api;

#define NVRTC_SYM(fn) {#fn, offsetof(nvrtc_api, fn)}
static const ct_cu_sym_slot nvrtc_syms[] = {
    NVRTC_SYM(nvrtcVersion),          NVRTC_SYM(nvrtcGetErrorString), NVRTC_SYM(nvrtcCreateProgram),
    NVRTC_SYM(nvrtcCompileProgram),   NVRTC_SYM(nvrtcGetProgramLogSize), NVRTC_SYM(nvrtcGetProgramLog),
    NVRTC_SYM(nvrtcGetCUBINSize),     NVRTC_SYM(nvrtcGetCUBIN),       NVRTC_SYM(nvrtcDestroyProgram),
};

static nvrtc_api g_api;
static const char *const nvrtc_candidates[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                               "/usr/local/cuda/lib64/libnvrtc.so", NULL};
static ct_cu_dl_lib g_nvrtc = {"NVRTC", nvrtc_candidates, nvrtc_syms, sizeof nvrtc_syms / sizeof nvrtc_syms[0],
                               &g_api, 0, ""};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int nvrtc_version(ct_cu_dl_lib *lib, char *why, size_t size) {
    (void)lib;
    int major = 0, minor = 0;
    if (g_api.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS || major < 12) {
        snprintf(why, size, "NVRTC %d.%d found; ctorch needs 12.0 or newer", major, minor);
        return 0;
    }
    return major * 1000 + minor * 10;
}

static void load_nvrtc(void) {
    const char *path = NULL;
    ct_cu_dl_load(&g_nvrtc, nvrtc_version, &path);
}

static const nvrtc_api *api(const char *op) { return ct_cu_dl_table(&g_nvrtc, &g_once, load_nvrtc, op); }

/* ---- compile ---------------------------------------------------------------------------- */

typedef struct cu_user_kernel {
    cudaLibrary_t library;
    cudaKernel_t kernel;
} cu_user_kernel;

/* The user's options split at white space into argv (at most 30 words,
 * kept in buf). */
static int split_options(const char *options, char *buf, size_t size, const char **argv, int max) {
    snprintf(buf, size, "%s", options);
    int n = 0;
    for (char *p = buf; *p && n < max;) {
        while (*p && isspace((unsigned char)*p)) *p++ = '\0';
        if (!*p) break;
        argv[n++] = p;
        while (*p && !isspace((unsigned char)*p)) p++;
    }
    return n;
}

/* NVRTC's log, at most ~1,500 characters of it. */
static char *program_log(const nvrtc_api *f, nvrtcProgram p) {
    size_t n = 0;
    if (f->nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *log = malloc(n);
    if (!log) return NULL;
    if (f->nvrtcGetProgramLog(p, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    if (n > 1500) log[1500] = '\0';
    return log;
}

/* Source to CUBIN for dev's architecture; *cubin malloc'd. */
static ct_status compile_cubin(const nvrtc_api *f, int dev, const char *source, const char *name, const char *options,
                               char **cubin) {
    int major = 0, minor = 0;
    CT_CU_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CT_CU_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    char arch[48], words[1024];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    const char *argv[32] = {arch};
    int argc = 1 + split_options(options, words, sizeof words, argv + 1, 30);
    nvrtcProgram p = NULL;
    nvrtcResult r = f->nvrtcCreateProgram(&p, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return ct_error_set(r == NVRTC_ERROR_OUT_OF_MEMORY ? CT_ERR_OOM : CT_ERR_BACKEND,
                            "kernel_compile: nvrtcCreateProgram: %s", f->nvrtcGetErrorString(r));
    r = f->nvrtcCompileProgram(p, argc, argv);
    if (r != NVRTC_SUCCESS) {
        char *log = program_log(f, p);
        ct_status st = ct_error_set(CT_ERR_BACKEND, "kernel_compile: cuda:%d (sm_%d%d): compiling %s failed: %s%s%s",
                                    dev, major, minor, name, f->nvrtcGetErrorString(r), log ? "; log:\n" : "",
                                    log ? log : "");
        free(log);
        f->nvrtcDestroyProgram(&p);
        return st;
    }
    size_t size = 0;
    r = f->nvrtcGetCUBINSize(p, &size);
    *cubin = r == NVRTC_SUCCESS && size ? malloc(size) : NULL;
    if (*cubin) r = f->nvrtcGetCUBIN(p, *cubin);
    f->nvrtcDestroyProgram(&p);
    if (!*cubin || r != NVRTC_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        return ct_error_set(CT_ERR_BACKEND, "kernel_compile: no CUBIN from NVRTC for %s (%s)", name,
                            r == NVRTC_SUCCESS ? "empty or out of memory" : f->nvrtcGetErrorString(r));
    }
    return CT_OK;
}

static ct_status cu_user_compile(int dev, const char *source, const char *name, const char *options, void **out) {
    const nvrtc_api *f = api("kernel_compile");
    if (!f) return ct_last_status();
    CT_TRY(ct_cu_set_device(dev));
    char *cubin = NULL;
    CT_TRY(compile_cubin(f, dev, source, name, options, &cubin));
    cu_user_kernel *u = calloc(1, sizeof *u);
    ct_status st = u ? CT_OK : ct_error_set(CT_ERR_OOM, "kernel_compile: out of host memory");
    if (st == CT_OK) st = ct_cu_check(cudaLibraryLoadData(&u->library, cubin, NULL, NULL, 0, NULL, NULL, 0),
                                      "cudaLibraryLoadData");
    free(cubin);
    if (st == CT_OK) {
        cudaError_t err = cudaLibraryGetKernel(&u->kernel, u->library, name);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            st = ct_error_set(CT_ERR_INVALID_ARG, "kernel_compile: cuda:%d: no kernel named \"%s\" in the source (%s)",
                              dev, name, cudaGetErrorName(err));
            cudaLibraryUnload(u->library);
        }
    }
    if (st != CT_OK) {
        free(u);
        return st;
    }
    *out = u;
    return CT_OK;
}

static void cu_user_release(int dev, void *kernel) {
    (void)dev;
    cu_user_kernel *u = kernel;
    if (!u) return;
    if (cudaLibraryUnload(u->library) != cudaSuccess) (void)cudaGetLastError(); /* at exit the context may be gone */
    free(u);
}

/* ---- launch ------------------------------------------------------------------------------ */

static ct_status cu_user_launch(int dev, void *kernel, const ct_kernel_launch_arg *args, int nargs, size_t global,
                                size_t local) {
    cudaStream_t stream = ct_cu_stream(dev);
    if (!stream) return ct_last_status();
    const cu_user_kernel *u = kernel;
    void *pointers[64];
    void *argv[64];
    for (int i = 0; i < nargs && i < 64; i++) {
        if (args[i].is_buffer) {
            pointers[i] = (char *)args[i].handle + args[i].byte_offset;
            argv[i] = &pointers[i];
        } else {
            argv[i] = (void *)args[i].value;
        }
    }
    size_t block = local ? local : CT_CU_THREADS;
    size_t blocks = (global + block - 1) / block;
    CT_CHECK_STATUS(blocks <= 2147483647u && block <= 1024, CT_ERR_INVALID_ARG,
                    "kernel_launch: cuda:%d: %zu blocks of %zu threads (at most 2^31 - 1 blocks of 1024)", dev, blocks,
                    block);
    dim3 grid = {(unsigned)blocks, 1, 1}, threads = {(unsigned)block, 1, 1};
    cudaError_t err = cudaLaunchKernel((const void *)u->kernel, grid, threads, argv, 0, stream);
    return err == cudaSuccess ? CT_OK : ct_cu_check(err, "cudaLaunchKernel (user kernel)");
}

static void *cu_address(void *handle, size_t byte_offset) { return (char *)handle + byte_offset; }

static ct_status cu_native_device(int dev, ct_native_device *out) {
    CT_TRY(ct_cu_set_device(dev));
    out->cuda_ordinal = dev;
    return CT_OK;
}

static const ct_backend_kernel g_cu_kernel_ops = {
    .compile = cu_user_compile,
    .release = cu_user_release,
    .launch = cu_user_launch,
    .num_args = NULL,
    .address = cu_address,
    .native_device = cu_native_device,
};

const struct ct_backend_kernel *ct_cu_kernel_ops(void) { return &g_cu_kernel_ops; }
