/*
 * cu_dl.h — cuBLAS and cuDNN reached through dlopen (internal to the CUDA
 * backend).
 *
 * libctorch.so must load on machines without these libraries, so it does
 * not link them: the first GEMM or cuDNN call loads libcublas.so.13 /
 * libcudnn.so.9 (versioned name, unversioned name, then
 * /usr/local/cuda/lib64) once per process and fills a table of function
 * pointers whose types are taken from the libraries' own headers, so a
 * mismatch is a compile error. A library that cannot be loaded gives a
 * clear error naming it and dlerror() at every use (and no crash).
 *
 * Handles: one cuBLAS and one cuDNN handle per (device, thread), created on
 * first use and returned to a pool when the thread exits (handles are never
 * destroyed: at process exit the CUDA context may already be gone, as
 * PyTorch found). The caller binds the handle to its stream per call.
 */
#ifndef CT_CU_DL_H
#define CT_CU_DL_H

#include <pthread.h>

#include <cublas_api.h>
#include <cudnn.h>

#include "cu_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Devices a thread may hold handles for. */
#define CT_CU_MAX_DEVICES 64

#define CT_CU_FN(name) __typeof__(name) *name

typedef struct ct_cublas_api {
    CT_CU_FN(cublasCreate_v2);
    CT_CU_FN(cublasSetStream_v2);
    CT_CU_FN(cublasSetMathMode);
    CT_CU_FN(cublasSetWorkspace_v2);
    CT_CU_FN(cublasGetProperty);
    CT_CU_FN(cublasGetStatusName);
    CT_CU_FN(cublasGetStatusString);
    CT_CU_FN(cublasGemmEx_64);
    CT_CU_FN(cublasGemmStridedBatchedEx_64);
} ct_cublas_api;

typedef struct ct_cudnn_api {
    /* library, handles, errors */
    CT_CU_FN(cudnnGetVersion);
    CT_CU_FN(cudnnGetErrorString);
    CT_CU_FN(cudnnGetLastErrorString);
    CT_CU_FN(cudnnCreate);
    CT_CU_FN(cudnnSetStream);
    /* descriptors */
    CT_CU_FN(cudnnCreateTensorDescriptor);
    CT_CU_FN(cudnnDestroyTensorDescriptor);
    CT_CU_FN(cudnnSetTensor4dDescriptor);
    CT_CU_FN(cudnnCreateFilterDescriptor);
    CT_CU_FN(cudnnDestroyFilterDescriptor);
    CT_CU_FN(cudnnSetFilter4dDescriptor);
    CT_CU_FN(cudnnCreateConvolutionDescriptor);
    CT_CU_FN(cudnnDestroyConvolutionDescriptor);
    CT_CU_FN(cudnnSetConvolution2dDescriptor);
    CT_CU_FN(cudnnSetConvolutionGroupCount);
    CT_CU_FN(cudnnSetConvolutionMathType);
    CT_CU_FN(cudnnCreatePoolingDescriptor);
    CT_CU_FN(cudnnDestroyPoolingDescriptor);
    CT_CU_FN(cudnnSetPooling2dDescriptor);
    /* convolution: algorithm choice, workspace sizes, execution */
    CT_CU_FN(cudnnGetConvolutionForwardAlgorithmMaxCount);
    CT_CU_FN(cudnnGetConvolutionForwardAlgorithm_v7);
    CT_CU_FN(cudnnFindConvolutionForwardAlgorithmEx);
    CT_CU_FN(cudnnGetConvolutionForwardWorkspaceSize);
    CT_CU_FN(cudnnConvolutionForward);
    CT_CU_FN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount);
    CT_CU_FN(cudnnGetConvolutionBackwardDataAlgorithm_v7);
    CT_CU_FN(cudnnFindConvolutionBackwardDataAlgorithmEx);
    CT_CU_FN(cudnnGetConvolutionBackwardDataWorkspaceSize);
    CT_CU_FN(cudnnConvolutionBackwardData);
    CT_CU_FN(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount);
    CT_CU_FN(cudnnGetConvolutionBackwardFilterAlgorithm_v7);
    CT_CU_FN(cudnnFindConvolutionBackwardFilterAlgorithmEx);
    CT_CU_FN(cudnnGetConvolutionBackwardFilterWorkspaceSize);
    CT_CU_FN(cudnnConvolutionBackwardFilter);
    /* batch norm, pooling */
    CT_CU_FN(cudnnBatchNormalizationForwardTraining);
    CT_CU_FN(cudnnBatchNormalizationForwardInference);
    CT_CU_FN(cudnnBatchNormalizationBackward);
    CT_CU_FN(cudnnPoolingForward);
    /* the bias and relu of a fused convolution */
    CT_CU_FN(cudnnAddTensor);
    CT_CU_FN(cudnnCreateActivationDescriptor);
    CT_CU_FN(cudnnDestroyActivationDescriptor);
    CT_CU_FN(cudnnSetActivationDescriptor);
    CT_CU_FN(cudnnActivationForward);
} ct_cudnn_api;

#undef CT_CU_FN

/* ---- the loader (cu_dl.c), also used for NCCL (cu_nccl.c) ---- */
typedef struct ct_cu_sym_slot {
    const char *name;
    size_t offset; /* of the function pointer in its table */
} ct_cu_sym_slot;

/* One library: where to look and what was found. */
typedef struct ct_cu_dl_lib {
    const char *label;              /* "cuBLAS" */
    const char *const *candidates;  /* NULL-terminated */
    const ct_cu_sym_slot *syms;
    size_t nsyms;
    void *table;                    /* filled on success */
    int version;                    /* 0 until loaded */
    char error[1024];               /* why not, when version is 0 */
} ct_cu_dl_lib;

/* The library's version (> 0) once its table is filled, or 0 with why. */
typedef int (*ct_cu_version_fn)(ct_cu_dl_lib *lib, char *why, size_t size);
/* Tries each candidate; the first that loads, resolves every symbol and
 * passes check_version wins (lib->version > 0, *loaded_path set), else
 * lib->error says why. Call once (pthread_once). */
void ct_cu_dl_load(ct_cu_dl_lib *lib, ct_cu_version_fn check_version, const char **loaded_path);
/* lib's table, after load has run once (through once); NULL with
 * CT_ERR_UNSUPPORTED naming op and why the library could not be loaded. */
const void *ct_cu_dl_table(ct_cu_dl_lib *lib, pthread_once_t *once, void (*load)(void), const char *op);

/* The loaded tables, or NULL with an error set (CT_ERR_UNSUPPORTED naming
 * the library, the paths tried and dlerror(); op names the operation). */
const ct_cublas_api *ct_cu_cublas(const char *op);
const ct_cudnn_api *ct_cu_cudnn(const char *op);
/* The cuDNN table without setting an error: NULL when unavailable (callers
 * that fall back to ctorch's kernels use this). */
const ct_cudnn_api *ct_cu_cudnn_if_available(void);

/* Versions for ctorch/backends.h: 0 when the library cannot be loaded. */
int ct_cu_dl_cudnn_version(void);
int ct_cu_dl_cublas_version(void);

/* Status names and the ctorch error for a failed call: CT_ERR_OOM for
 * allocation failures, CT_ERR_BACKEND otherwise; the message reads
 * "<op>: <STATUS_NAME> when calling <call> (<description>)". */
const char *ct_cu_cublas_status_name(cublasStatus_t s);
ct_status ct_cu_cublas_error(cublasStatus_t s, const char *op, const char *call);
const char *ct_cu_cudnn_status_name(cudnnStatus_t s);
ct_status ct_cu_cudnn_error(cudnnStatus_t s, const char *op, const char *call);

/* The calling thread's handle for dev (the thread's CUDA device must
 * already be dev: ct_cu_stream(dev) sets it), bound to stream. */
ct_status ct_cu_cublas_handle(int dev, cudaStream_t stream, const char *op, cublasHandle_t *out);
ct_status ct_cu_cudnn_handle(int dev, cudaStream_t stream, const char *op, cudnnHandle_t *out);

#ifdef __cplusplus
}
#endif
#endif /* CT_CU_DL_H */
