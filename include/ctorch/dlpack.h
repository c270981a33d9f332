/*
 * ctorch/dlpack.h — DLPack: pass tensors to and from NumPy, PyTorch, CuPy,
 * JAX and any other DLPack library without copying (torch.utils.dlpack).
 *
 * Not part of the umbrella header: include it where you exchange tensors,
 * so that programs which never use DLPack do not get its global names.
 *
 * THE ABI STRUCTS. DLPack is a C ABI: a producer hands out a struct that
 * describes its memory and a deleter to call when the consumer is done. The
 * declarations below follow the DLPack 1.1 specification's field lists,
 * with the standard names, so that they are layout-compatible with the
 * official dlpack/dlpack.h. They sit behind the official header's own
 * include guard, DLPACK_DLPACK_H_:
 *   - a dlpack.h included BEFORE this file wins: ctorch uses its
 *     declarations (it must be version 1.0 or newer, with
 *     DLManagedTensorVersioned; an older one is refused with #error);
 *   - a dlpack.h included AFTER this file is skipped by its guard, and the
 *     code that includes it sees ctorch's declarations (1.1 names). If you
 *     need a newer header's additions, include it first.
 * Either way there is exactly one definition of each struct.
 *
 * OWNERSHIP. Export (ct_to_dlpack) shares memory: the managed tensor holds
 * a reference to the tensor's storage, which lives until the consumer calls
 * its deleter (exactly once). Import (ct_from_dlpack) wraps the producer's
 * memory without copying; the producer's deleter runs when the last ctorch
 * tensor on that memory is released. On failure ct_from_dlpack takes no
 * ownership: the caller still owns the managed tensor and must call its
 * deleter (as a Python consumer leaves a capsule it could not use unrenamed).
 *
 * Errors follow ctorch/status.h (NULL and a message naming the problem).
 * docs/interop.md has the details and examples with NumPy and PyTorch.
 */
#ifndef CTORCH_DLPACK_H
#define CTORCH_DLPACK_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"

/* ---- the DLPack ABI (declared here unless an official dlpack.h came first) ---- */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef _WIN32
#ifdef DLPACK_EXPORTS
#define DLPACK_DLL __declspec(dllexport)
#else
#define DLPACK_DLL __declspec(dllimport)
#endif
#else
#define DLPACK_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version a versioned managed tensor was produced for. A consumer
 * accepts any minor version of the major versions it knows. */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Where the memory lives (the values are fixed by the specification; C++
 * gives the enum the int32_t the specification names, C an int). */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,     /* page-locked host memory (cudaMallocHost) */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13, /* cudaMallocManaged */
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;   /* the device's index among those of its type */
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
    kDLFloat8_e3m4 = 7U,
    kDLFloat8_e4m3 = 8U,
    kDLFloat8_e4m3b11fnuz = 9U,
    kDLFloat8_e4m3fn = 10U,
    kDLFloat8_e4m3fnuz = 11U,
    kDLFloat8_e5m2 = 12U,
    kDLFloat8_e5m2fnuz = 13U,
    kDLFloat8_e8m0fnu = 14U,
    kDLFloat6_e2m3fn = 15U,
    kDLFloat6_e3m2fn = 16U,
    kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

/* code is a DLDataTypeCode; bits per lane; lanes > 1 for vector types. */
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/* A strided array. data is a host or device address, or an opaque handle
 * (OpenCL: a cl_mem), and byte_offset is where element 0 starts from it.
 * shape and strides have ndim entries; strides count elements, not bytes
 * (NULL in the legacy form means compact row-major). */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

/* The legacy (pre-1.0) managed tensor: no version, no flags. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* flags of DLManagedTensorVersioned */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The managed tensor of DLPack 1.x. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif
#endif /* DLPACK_DLPACK_H_ */

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "ctorch/dlpack.h needs DLPack 1.0 or newer; an older dlpack.h was included before it"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ctorch <-> DLPack ----------------------------------------------------- */

/* torch.utils.dlpack.to_dlpack / tensor.__dlpack__(): a versioned managed
 * tensor over t's memory (no copy), version 1.x, flags 0. Strides are in
 * elements. On the CPU and CUDA, data points at element 0 and byte_offset
 * is 0 (as PyTorch exports); on OpenCL, data is the cl_mem buffer and
 * byte_offset the byte position of element 0 in it (a handle cannot be
 * advanced). A tensor on an asynchronous device is exported after its
 * device's current stream has been synchronised, so a consumer on any
 * stream or queue sees the finished values. A tensor that requires grad is
 * refused, as PyTorch does (export t's ct_detach). The consumer calls
 * m->deleter(m) once when done; the tensor itself may be released at any
 * time. */
CT_API DLManagedTensorVersioned *ct_to_dlpack(const ct_tensor *t);
/* The same in the legacy unversioned form (DLManagedTensor, "dltensor"
 * capsules), for consumers that predate DLPack 1.0. */
CT_API DLManagedTensor *ct_to_dlpack_unversioned(const ct_tensor *t);

/* torch.utils.dlpack.from_dlpack: a ctorch tensor over the managed
 * tensor's memory (no copy), with its shape, strides and dtype. Accepted
 * devices: kDLCPU and kDLCUDAHost (as CPU tensors), kDLCUDA (a CUDA tensor
 * on device_id; CUDA must be available). Accepted dtypes: those ctorch has
 * (float16/32/64, bfloat16, int8, int32, int64, uint8, bool), one lane.
 * Strides must be non-negative (sizes above one).
 * A producer whose device is asynchronous must have finished writing the
 * memory (Python's __dlpack__(stream=...) does this for you).
 * The read-only flag is accepted: ctorch has no read-only tensors, so the
 * tensor is writable and writing through it is the caller's mistake to
 * avoid (torch.from_numpy on a non-writable array behaves the same). On
 * success ctorch owns m and calls m->deleter(m) once the last tensor on the
 * memory is released; on failure the caller still owns m. A NULL m (what a
 * failed ct_to_dlpack returns) keeps the error already recorded. */
CT_API ct_tensor *ct_from_dlpack(DLManagedTensorVersioned *m);
CT_API ct_tensor *ct_from_dlpack_unversioned(DLManagedTensor *m);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_DLPACK_H */
