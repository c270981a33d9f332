/*
 * backends_flags.c — storage of the torch.backends switches
 * (include/ctorch/backends.h): process-wide atomics, as PyTorch keeps them
 * in at::Context, so that any thread may flip them and every backend reads
 * the current value at its next operation. Compiled into every build; the
 * library versions are asked of the CUDA backend by name (get_proc), so
 * this file needs no knowledge of which backends were built.
 */
#include <stdatomic.h>
#include <string.h>

#include "core/backend.h"
#include "core/error.h"
#include "ctorch/backends.h"

/* An int-valued query a backend may answer (ct_backend.get_proc); 0 when
 * the backend is not built in or does not know it. */
static int backend_int(ct_device_type type, const char *name) {
    const ct_backend *b = ct_backend_for(type);
    ct_backend_proc p = b && b->get_proc ? b->get_proc(name) : NULL;
    return p ? ((int (*)(void))p)() : 0;
}

/* float32 matmul precision, PyTorch's three levels; TF32 is allowed above
 * "highest". */
enum { PRECISION_HIGHEST = 0, PRECISION_HIGH = 1, PRECISION_MEDIUM = 2 };
static const char *const precision_names[] = {"highest", "high", "medium"};

static atomic_int g_matmul_precision = PRECISION_HIGHEST;
static atomic_bool g_cudnn_allow_tf32 = true;
static atomic_bool g_cudnn_benchmark = false;
static atomic_bool g_cudnn_deterministic = false;
static atomic_bool g_cudnn_enabled = true;
static atomic_bool g_deterministic_algorithms = false;
static atomic_bool g_mkldnn_enabled = true;

void ct_backends_cuda_matmul_set_allow_tf32(bool allow) {
    atomic_store(&g_matmul_precision, allow ? PRECISION_HIGH : PRECISION_HIGHEST);
}

bool ct_backends_cuda_matmul_get_allow_tf32(void) {
    return atomic_load(&g_matmul_precision) != PRECISION_HIGHEST;
}

ct_status ct_set_float32_matmul_precision(const char *precision) {
    for (int i = 0; precision && i < 3; i++) {
        if (strcmp(precision, precision_names[i]) == 0) {
            atomic_store(&g_matmul_precision, i);
            return CT_OK;
        }
    }
    return ct_error_set(CT_ERR_INVALID_ARG,
                        "set_float32_matmul_precision: Invalid precision: expected one of "
                        "\"highest\", \"high\", \"medium\", but got \"%s\"",
                        precision ? precision : "(null)");
}

const char *ct_get_float32_matmul_precision(void) {
    return precision_names[atomic_load(&g_matmul_precision)];
}

void ct_backends_cudnn_set_allow_tf32(bool allow) { atomic_store(&g_cudnn_allow_tf32, allow); }
bool ct_backends_cudnn_get_allow_tf32(void) { return atomic_load(&g_cudnn_allow_tf32); }

void ct_backends_cudnn_set_benchmark(bool benchmark) { atomic_store(&g_cudnn_benchmark, benchmark); }
bool ct_backends_cudnn_get_benchmark(void) { return atomic_load(&g_cudnn_benchmark); }

void ct_backends_cudnn_set_deterministic(bool deterministic) {
    atomic_store(&g_cudnn_deterministic, deterministic);
}
bool ct_backends_cudnn_get_deterministic(void) { return atomic_load(&g_cudnn_deterministic); }

void ct_backends_cudnn_set_enabled(bool enabled) { atomic_store(&g_cudnn_enabled, enabled); }
bool ct_backends_cudnn_get_enabled(void) { return atomic_load(&g_cudnn_enabled); }

void ct_use_deterministic_algorithms(bool enabled) {
    atomic_store(&g_deterministic_algorithms, enabled);
}
bool ct_are_deterministic_algorithms_enabled(void) {
    return atomic_load(&g_deterministic_algorithms);
}

int ct_backends_cudnn_version(void) { return backend_int(CT_DEVICE_CUDA, "cudnn_version"); }

bool ct_backends_cudnn_is_available(void) { return ct_backends_cudnn_version() > 0; }

void ct_backends_mkldnn_set_enabled(bool enabled) { atomic_store(&g_mkldnn_enabled, enabled); }
bool ct_backends_mkldnn_get_enabled(void) { return atomic_load(&g_mkldnn_enabled); }

int ct_backends_cublas_version(void) { return backend_int(CT_DEVICE_CUDA, "cublas_version"); }
