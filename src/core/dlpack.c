/*
 * dlpack.c — DLPack export and import (ctorch/dlpack.h), the zero-copy
 * exchange PyTorch offers as torch.utils.dlpack.
 *
 * Export hands out a managed tensor that keeps a reference to the tensor's
 * storage (not to the tensor: its autograd state and grad are none of the
 * consumer's business); the deleter drops it. Import wraps the producer's
 * memory in an external storage (ct_storage_new_external) whose last
 * release calls the producer's deleter, so ctorch never frees that memory
 * through an allocator.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/autograd.h"
#include "ctorch/dlpack.h"
#include "internal.h"
#include "runtime.h"

/* ---- dtypes -------------------------------------------------------------------- */

/* The DLPack type of a ctorch dtype; false for one DLPack cannot name. */
static bool dl_dtype_of(ct_dtype dt, DLDataType *out) {
    uint8_t code;
    switch (dt) {
    case CT_FLOAT16:
    case CT_FLOAT32:
    case CT_FLOAT64: code = kDLFloat; break;
    case CT_BFLOAT16: code = kDLBfloat; break;
    case CT_INT8:
    case CT_INT32:
    case CT_INT64: code = kDLInt; break;
    case CT_UINT8: code = kDLUInt; break;
    case CT_BOOL: code = kDLBool; break;
    default: return false;
    }
    *out = (DLDataType){code, (uint8_t)(ct_dtype_size(dt) * 8), 1};
    return true;
}

static const char *dl_code_name(uint8_t code) {
    static const char *const names[] = {"kDLInt",  "kDLUInt",    "kDLFloat", "kDLOpaqueHandle",
                                        "kDLBfloat", "kDLComplex", "kDLBool"};
    return code < sizeof names / sizeof names[0] ? names[code] : code <= kDLFloat4_e2m1fn ? "a float8/6/4 code" : "unknown";
}

/* The ctorch dtype of a DLPack dtype; CT_DTYPE_DEFAULT when there is none. */
static ct_dtype ct_dtype_of_dl(DLDataType d) {
    switch (d.code) {
    case kDLFloat: return d.bits == 16 ? CT_FLOAT16 : d.bits == 32 ? CT_FLOAT32 : d.bits == 64 ? CT_FLOAT64 : CT_DTYPE_DEFAULT;
    case kDLBfloat: return d.bits == 16 ? CT_BFLOAT16 : CT_DTYPE_DEFAULT;
    case kDLInt: return d.bits == 8 ? CT_INT8 : d.bits == 32 ? CT_INT32 : d.bits == 64 ? CT_INT64 : CT_DTYPE_DEFAULT;
    case kDLUInt: return d.bits == 8 ? CT_UINT8 : CT_DTYPE_DEFAULT;
    case kDLBool: return d.bits == 8 ? CT_BOOL : CT_DTYPE_DEFAULT;
    default: return CT_DTYPE_DEFAULT;
    }
}

static const char *dl_device_name(int32_t type) {
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    case kDLMAIA: return "kDLMAIA";
    default: return "unknown";
    }
}

/* ---- export ---------------------------------------------------------------------- */

/* One allocation per export: the managed tensor (either form), the arrays
 * its DLTensor points at, and the storage reference it holds. */
typedef struct export_block {
    union {
        DLManagedTensorVersioned v;
        DLManagedTensor u;
    } m;
    ct_storage *storage;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS];
} export_block;

static void export_free(export_block *b) {
    ct_storage_release(b->storage);
    free(b);
}
static void deleter_versioned(DLManagedTensorVersioned *self) {
    if (self) export_free(self->manager_ctx);
}
static void deleter_unversioned(DLManagedTensor *self) {
    if (self) export_free(self->manager_ctx);
}

/* A consumer may read on any stream or queue, so the producer's pending
 * work must be done: synchronise the device's current stream, where
 * ctorch enqueued whatever wrote t. */
static ct_status export_sync(const ct_storage *s) {
    return ct_stream_synchronize(cti_current_stream(s->device));
}

/* The checks and the DLTensor both export forms share; NULL on error. */
static export_block *export_prepare(const char *op, const ct_tensor *t, bool versioned) {
    CT_CHECK_OBJ(t, NULL, "%s: NULL tensor", op);
    CT_CHECK_NULL(!ct_requires_grad(t), CT_ERR_INVALID_ARG,
                  "%s: Can't export tensors that require gradient, use tensor.detach()", op);
    const ct_storage *s = t->storage;
    DLDevice dev;
    switch (s->device.type) {
    case CT_DEVICE_CPU: dev = (DLDevice){kDLCPU, 0}; break;
    case CT_DEVICE_CUDA: dev = (DLDevice){kDLCUDA, s->device.index}; break;
    case CT_DEVICE_OPENCL: dev = (DLDevice){kDLOpenCL, s->device.index}; break;
    default:
        ct_error_set(CT_ERR_DEVICE, "%s: device type %d has no DLPack device", op, (int)s->device.type);
        return NULL;
    }
    DLDataType dtype;
    CT_CHECK_NULL(dl_dtype_of(t->dtype, &dtype), CT_ERR_DTYPE, "%s: dtype %s has no DLPack type", op,
                  ct_dtype_name(t->dtype));
    if (export_sync(s) != CT_OK) return NULL;
    export_block *b = calloc(1, sizeof *b);
    CT_CHECK_NULL(b, CT_ERR_OOM, "%s: out of memory", op);
    DLTensor *dl = versioned ? &b->m.v.dl_tensor : &b->m.u.dl_tensor;
    size_t esize = ct_dtype_size(t->dtype);
    uint64_t start = (uint64_t)ct_buffer_offset(t) * esize;
    if (dev.device_type == kDLOpenCL) {
        /* a cl_mem is a handle, not an address: the spec puts the start in byte_offset */
        dl->data = s->data;
        dl->byte_offset = start;
    } else {
        dl->data = s->data ? (char *)s->data + start : NULL;
        dl->byte_offset = 0;
    }
    dl->device = dev;
    dl->ndim = t->ndim;
    dl->dtype = dtype;
    memcpy(b->shape, t->shape, sizeof b->shape);
    memcpy(b->strides, t->strides, sizeof b->strides);
    dl->shape = b->shape;
    dl->strides = b->strides;
    b->storage = t->storage;
    ct_storage_retain(b->storage);
    return b;
}

DLManagedTensorVersioned *ct_to_dlpack(const ct_tensor *t) {
    export_block *b = export_prepare("to_dlpack", t, true);
    if (!b) return NULL;
    b->m.v.version = (DLPackVersion){DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    b->m.v.manager_ctx = b;
    b->m.v.deleter = deleter_versioned;
    b->m.v.flags = 0;
    return &b->m.v;
}

DLManagedTensor *ct_to_dlpack_unversioned(const ct_tensor *t) {
    export_block *b = export_prepare("to_dlpack_unversioned", t, false);
    if (!b) return NULL;
    b->m.u.manager_ctx = b;
    b->m.u.deleter = deleter_unversioned;
    return &b->m.u;
}

/* ---- import ---------------------------------------------------------------------- */

static void release_versioned(void *ctx) {
    DLManagedTensorVersioned *m = ctx;
    if (m->deleter) m->deleter(m);
}
static void release_unversioned(void *ctx) {
    DLManagedTensor *m = ctx;
    if (m->deleter) m->deleter(m);
}
static void release_nothing(void *ctx) { (void)ctx; }

/* The ctorch device of a DLPack device, or false with an error. */
static bool import_device(const char *op, DLDevice d, ct_device *out) {
    switch ((int)d.device_type) {
    case kDLCPU:
    case kDLCUDAHost: /* page-locked host memory is host memory */
        *out = ct_device_cpu();
        return true;
    case kDLCUDA: {
        int n = ct_device_count(CT_DEVICE_CUDA);
        CT_CHECK_RET(n > 0, false, CT_ERR_DEVICE,
                     "%s: the tensor is on kDLCUDA device %d, but CUDA is not available", op, (int)d.device_id);
        CT_CHECK_RET(d.device_id >= 0 && d.device_id < n, false, CT_ERR_DEVICE,
                     "%s: kDLCUDA device %d does not exist (%d CUDA devices)", op, (int)d.device_id, n);
        *out = ct_device_cuda(d.device_id);
        return true;
    }
    default:
        ct_error_set(CT_ERR_DEVICE,
                     "%s: DLPack device type %s (%d) is not supported; ctorch imports kDLCPU, kDLCUDAHost "
                     "and kDLCUDA",
                     op, dl_device_name((int32_t)d.device_type), (int)d.device_type);
        return false;
    }
}

/* Strides (NULL: compact row-major) checked, and the number of bytes from
 * element 0 to the end of the last element; false with an error. */
static bool import_layout(const char *op, const DLTensor *dl, size_t esize, int64_t *strides, size_t *nbytes) {
    int ndim = dl->ndim;
    if (!dl->strides) {
        ct_contiguous_strides(dl->shape, ndim, strides);
    } else {
        int64_t compact[CT_MAX_DIMS];
        ct_contiguous_strides(dl->shape, ndim, compact);
        for (int i = 0; i < ndim; i++) {
            strides[i] = dl->strides[i];
            if (strides[i] >= 0) continue;
            /* a stride is meaningless on a dimension of size 0 or 1 */
            CT_CHECK_RET(dl->shape[i] <= 1, false, CT_ERR_INVALID_ARG,
                         "%s: negative stride %" PRId64 " in dimension %d is not supported", op, strides[i], i);
            strides[i] = compact[i];
        }
    }
    *nbytes = 0;
    if (ct_shape_numel(dl->shape, ndim) == 0) return true;
    int64_t last = 0, step;
    bool overflow = false;
    for (int i = 0; i < ndim; i++) {
        overflow |= __builtin_mul_overflow(strides[i], dl->shape[i] - 1, &step);
        overflow |= __builtin_add_overflow(last, step, &last);
    }
    int64_t bytes;
    overflow |= __builtin_add_overflow(last, 1, &last);
    overflow |= __builtin_mul_overflow(last, (int64_t)esize, &bytes);
    CT_CHECK_RET(!overflow, false, CT_ERR_SHAPE, "%s: the shape and strides reach past %" PRId64 " bytes", op,
                 INT64_MAX);
    *nbytes = (size_t)bytes;
    return true;
}

/* A tensor over dl's memory whose storage calls release(ctx) at its end.
 * On failure release is not called: the caller keeps the managed tensor. */
static ct_tensor *import_tensor(const char *op, const DLTensor *dl, void (*release)(void *), void *ctx) {
    char sbuf[CT_SHAPE_STR_MAX];
    CT_CHECK_NULL(dl->ndim >= 0 && dl->ndim <= CT_MAX_DIMS, CT_ERR_SHAPE,
                  "%s: ndim %d is outside [0, %d]", op, (int)dl->ndim, CT_MAX_DIMS);
    CT_CHECK_NULL(dl->ndim == 0 || dl->shape, CT_ERR_INVALID_ARG, "%s: NULL shape for a %d-D tensor", op,
                  (int)dl->ndim);
    CT_CHECK_NULL(dl->dtype.lanes == 1, CT_ERR_DTYPE,
                  "%s: vector dtypes are not supported (code %u (%s), bits %u, lanes %u); lanes must be 1", op,
                  dl->dtype.code, dl_code_name(dl->dtype.code), dl->dtype.bits, dl->dtype.lanes);
    ct_dtype dt = ct_dtype_of_dl(dl->dtype);
    CT_CHECK_NULL(dt != CT_DTYPE_DEFAULT, CT_ERR_DTYPE,
                  "%s: unsupported DLPack dtype (code %u (%s), bits %u, lanes %u)", op, dl->dtype.code,
                  dl_code_name(dl->dtype.code), dl->dtype.bits, dl->dtype.lanes);
    ct_device dev;
    if (!import_device(op, dl->device, &dev)) return NULL;
    int ndim = dl->ndim;
    int64_t numel, strides[CT_MAX_DIMS];
    size_t nbytes, esize = ct_dtype_size(dt);
    if (!ct_shape_check(op, dl->shape, ndim, &numel)) return NULL;
    if (!import_layout(op, dl, esize, strides, &nbytes)) return NULL;
    CT_CHECK_NULL(dl->data || numel == 0, CT_ERR_INVALID_ARG, "%s: NULL data for a tensor of shape %s", op,
                  ct_shape_str(dl->shape, ndim, sbuf, sizeof sbuf));
    char *base = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
    CT_CHECK_NULL((uintptr_t)base % esize == 0, CT_ERR_INVALID_ARG,
                  "%s: the data pointer %p with byte_offset %" PRIu64 " is not aligned to the %zu-byte elements "
                  "of %s",
                  op, dl->data, dl->byte_offset, esize, ct_dtype_name(dt));
    /* the producer's deleter is attached only once nothing can fail */
    ct_storage *s = ct_storage_new_external(dev, base, nbytes, release_nothing, NULL);
    ct_tensor *t = s ? ct_tensor_on_storage(s, dl->shape, ndim, dt) : NULL;
    if (!t) return NULL;
    if (ndim > 0) memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    s->external_free = release;
    s->external_ctx = ctx;
    return ct_track(t);
}

ct_tensor *ct_from_dlpack(DLManagedTensorVersioned *m) {
    /* an object argument: ct_from_dlpack(ct_to_dlpack(t)) keeps to_dlpack's error */
    CT_CHECK_OBJ(m, NULL, "from_dlpack: NULL managed tensor");
    CT_CHECK_NULL(m->version.major == 1, CT_ERR_UNSUPPORTED,
                  "from_dlpack: DLPack version %u.%u is not supported (ctorch reads 1.x)",
                  (unsigned)m->version.major, (unsigned)m->version.minor);
    return import_tensor("from_dlpack", &m->dl_tensor, release_versioned, m);
}

ct_tensor *ct_from_dlpack_unversioned(DLManagedTensor *m) {
    CT_CHECK_OBJ(m, NULL, "from_dlpack_unversioned: NULL managed tensor");
    return import_tensor("from_dlpack_unversioned", &m->dl_tensor, release_unversioned, m);
}
