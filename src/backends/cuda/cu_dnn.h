/*
 * cu_dnn.h — what the cuDNN files of the CUDA backend share (internal):
 * whether cuDNN takes a call, status handling with "decline", handles,
 * scaling constants, descriptors and workspaces, and the convolution entries
 * (cu_dnn_conv.c) that cu_dnn.c puts into the backend's conv table.
 *
 * Declining: an entry that cuDNN does not cover (switched off with
 * ct_backends_cudnn_set_enabled(false), libcudnn absent, a dtype, size or
 * option it lacks, or a NOT_SUPPORTED status before anything was enqueued)
 * returns CT_DNN_DECLINE without setting an error, and the caller uses
 * ctorch's own kernels instead (backend_conv.h, backend_nn.h).
 */
#ifndef CT_CU_DNN_H
#define CT_CU_DNN_H

#include "core/backend_conv.h"
#include "core/backend_nn.h"
#include "core/internal.h"
#include "cu_dl.h"

#define CT_DNN_DECLINE CT_ERR_UNSUPPORTED

/* The cuDNN table when cuDNN should take calls (enabled and loadable),
 * else NULL: decline. */
const ct_cudnn_api *ct_dnn_api(void);

/* cudnn.deterministic or use_deterministic_algorithms. */
bool ct_dnn_deterministic(void);

/* cuDNN's data type for a ctorch dtype (false: not a cuDNN float type). */
bool ct_dnn_data_type(ct_dtype dt, cudnnDataType_t *out);

/* A status: CT_OK on success, CT_DNN_DECLINE (no error set) for the
 * NOT_SUPPORTED family, else the error (naming op and call). */
ct_status ct_dnn_status(cudnnStatus_t s, const char *op, const char *call);

/* The thread's handle for dev on its current stream. */
ct_status ct_dnn_handle(int dev, const char *op, cudnnHandle_t *out);

/* alpha = 1 and beta = 0 in the scaling type cuDNN wants for dt (double
 * for float64 data, float otherwise). */
const void *ct_dnn_one(ct_dtype dt);
const void *ct_dnn_zero(ct_dtype dt);

/* Whether every value fits cuDNN's int parameters. */
bool ct_dnn_fits_int(const int64_t *values, int n);
/* Whether a tensor of these sizes fits cuDNN's int sizes and 32-bit
 * element indexing. */
bool ct_dnn_fits_tensor(const int64_t *sizes, int n);

/* *d = a new NCHW descriptor of [n, c, h, w] (sizes checked by the caller). */
ct_status ct_dnn_tensor4d(const ct_cudnn_api *api, const char *op, cudnnDataType_t type, int64_t n,
                          int64_t c, int64_t h, int64_t w, cudnnTensorDescriptor_t *d);

/* A workspace of nbytes from the caching allocator on dev's current
 * stream (*ptr NULL and no tensor for 0 bytes). Release the tensor with
 * ct_decref once the work using it is enqueued. */
ct_status ct_dnn_workspace(int dev, size_t nbytes, ct_tensor **holder, void **ptr);

/* The device address of a view's element 0. */
static inline void *ct_dnn_ptr(const ct_kview *v) {
    return v ? (char *)v->data + v->offset * (int64_t)ct_dtype_size(v->dtype) : NULL;
}

/* cu_dnn_conv.c: the whole-convolution entries of backend_conv.h. */
ct_status ct_dnn_conv2d_forward(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                const ct_conv2d_geom *g, int64_t groups);
/* conv2d + bias, then relu when asked (backend_conv.h's conv2d_forward_fused). */
ct_status ct_dnn_conv2d_forward_fused(const ct_kview *y, const ct_kview *x, const ct_kview *w,
                                      const ct_kview *bias, bool relu, const ct_conv2d_geom *g,
                                      int64_t groups);
ct_status ct_dnn_conv2d_backward_input(const ct_kview *dx, const ct_kview *dy, const ct_kview *w,
                                       const ct_conv2d_geom *g, int64_t groups);
ct_status ct_dnn_conv2d_backward_weight(const ct_kview *dw, const ct_kview *dy, const ct_kview *x,
                                        const ct_conv2d_geom *g, int64_t groups);
/* Forget the autotuner's choices (tests; ct_empty_cache does not). */
void ct_dnn_conv_cache_clear(void);
/* Choices cached so far (tests). */
int ct_dnn_conv_cache_size(void);

#endif /* CT_CU_DNN_H */
