/*
 * registry.c — which backends this build contains. This is the only file
 * that knows: the core asks ct_backend_for(type) and never names a backend.
 * A backend compiled in defines CTORCH_HAVE_<NAME> and its table symbol.
 */
#include "../core/backend.h"
#include "ctorch/version.h"

extern const ct_backend ct_cpu_backend;
#ifdef CTORCH_HAVE_CUDA
extern const ct_backend ct_cuda_backend;
#endif
#ifdef CTORCH_HAVE_OPENCL
extern const ct_backend ct_opencl_backend;
#endif

const ct_backend *ct_backend_for(ct_device_type type) {
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

const char *ct_build_info(void) {
    return "ctorch " CTORCH_VERSION_STRING " (" CTORCH_BUILD_TYPE ")"
           "; backends: cpu"
#ifdef CTORCH_HAVE_CUDA
           " cuda"
#endif
#ifdef CTORCH_HAVE_OPENCL
           " opencl"
#endif
           "; blas: openblas"
#ifdef CTORCH_HAVE_OPENMP
           "; openmp: yes"
#else
           "; openmp: no"
#endif
        ;
}
