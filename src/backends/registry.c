/*
 * registry.c — which backends this build contains. This is the only file
 * that knows: the core asks ct_backend_for(type) and never names a backend.
 * A backend compiled in defines CTORCH_HAVE_<NAME> and its table symbol;
 * each one's prepare hook runs once, before the first table is handed out.
 */
#include <pthread.h>

#include "../core/backend.h"
#include "ctorch/version.h"

#ifdef CTORCH_HAVE_CUDA
#include <cuda_runtime_api.h> /* CUDART_VERSION */
#include <stdio.h>
#endif

extern const ct_backend ct_cpu_backend;
#ifdef CTORCH_HAVE_CUDA
extern const ct_backend ct_cuda_backend;
#endif
#ifdef CTORCH_HAVE_OPENCL
extern const ct_backend ct_opencl_backend;
#endif

static const ct_backend *const g_compiled_in[] = {
    &ct_cpu_backend,
#ifdef CTORCH_HAVE_CUDA
    &ct_cuda_backend,
#endif
#ifdef CTORCH_HAVE_OPENCL
    &ct_opencl_backend,
#endif
};

static pthread_once_t g_prepared = PTHREAD_ONCE_INIT;

static void prepare_backends(void) {
    for (size_t i = 0; i < sizeof g_compiled_in / sizeof g_compiled_in[0]; i++)
        if (g_compiled_in[i]->prepare) g_compiled_in[i]->prepare();
}

const ct_backend *ct_backend_for(ct_device_type type) {
    pthread_once(&g_prepared, prepare_backends);
    switch (type) {
    case CT_DEVICE_CPU: return &ct_cpu_backend;
#ifdef CTORCH_HAVE_CUDA
    case CT_DEVICE_CUDA: return &ct_cuda_backend;
#endif
#ifdef CTORCH_HAVE_OPENCL
    case CT_DEVICE_OPENCL: return &ct_opencl_backend;
#endif
    default: return NULL;
    }
}

bool ct_backend_supports(const ct_backend *b, int dev, const char *op, ct_dtype dtype) {
    return !b->ops->supports || b->ops->supports(dev, op, dtype);
}

/* "key: value" fields separated by "; " (tools/info parses them). */
#define CT_BUILD_INFO                                          \
    "ctorch " CTORCH_VERSION_STRING " (" CTORCH_BUILD_TYPE ")" \
    "; backends: cpu" CT_BUILD_CUDA CT_BUILD_OPENCL "; blas: openblas" CT_BUILD_OPENMP
#ifdef CTORCH_HAVE_CUDA
#define CT_BUILD_CUDA " cuda"
#else
#define CT_BUILD_CUDA ""
#endif
#ifdef CTORCH_HAVE_OPENCL
#define CT_BUILD_OPENCL " opencl"
#else
#define CT_BUILD_OPENCL ""
#endif
#ifdef CTORCH_HAVE_OPENMP
#define CT_BUILD_OPENMP "; openmp: yes"
#else
#define CT_BUILD_OPENMP "; openmp: no"
#endif

#ifdef CTORCH_HAVE_CUDA
/* Adds the CUDA runtime ctorch was compiled against, as torch.version.cuda,
 * and the architectures its kernels were built for. */
static char g_build_info[512];
static pthread_once_t g_build_info_once = PTHREAD_ONCE_INIT;

static void format_build_info(void) {
    snprintf(g_build_info, sizeof g_build_info, "%s; cuda: %d.%d (architectures %s)", CT_BUILD_INFO,
             CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, CTORCH_CUDA_ARCHS);
}

const char *ct_build_info(void) {
    pthread_once(&g_build_info_once, format_build_info);
    return g_build_info;
}
#else
const char *ct_build_info(void) { return CT_BUILD_INFO; }
#endif
