/*
 * test_dlpack.c — DLPack export and import (ctorch/dlpack.h).
 *
 * Round trips share memory (a write on one side is read on the other),
 * keep views' offsets and strides, work for every dtype, and call each
 * deleter exactly once, after the last user on either side is gone; the
 * harness's live tensor/storage counts catch leaks. Bad managed tensors are
 * refused with messages naming the value, and a refused one stays the
 * caller's. OpenCL export uses the cl_mem handle with byte_offset; CUDA
 * cases run where a GPU is present.
 */
#include <stdlib.h>

#include "ctorch/dlpack.h"
#include "core/tensor_impl.h"
#include "testutil.h"

/* ---- a producer of our own, with a counting deleter ---------------------------------- */

typedef struct producer {
    DLManagedTensorVersioned m;
    DLManagedTensor legacy;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int deleted; /* deleter calls */
} producer;

static void producer_delete(DLManagedTensorVersioned *self) { ((producer *)self->manager_ctx)->deleted++; }
static void producer_delete_legacy(DLManagedTensor *self) { ((producer *)self->manager_ctx)->deleted++; }

/* A versioned and a legacy managed tensor over data (CPU, compact unless
 * strides are given later). */
static void producer_init(producer *p, void *data, DLDataType dt, int ndim, const int64_t *shape) {
    memset(p, 0, sizeof *p);
    if (ndim > 0) memcpy(p->shape, shape, sizeof(int64_t) * (size_t)ndim);
    DLTensor dl = {data, {kDLCPU, 0}, ndim, dt, p->shape, NULL, 0};
    p->m.version = (DLPackVersion){1, 0};
    p->m.manager_ctx = p;
    p->m.deleter = producer_delete;
    p->m.dl_tensor = dl;
    p->legacy.dl_tensor = dl;
    p->legacy.manager_ctx = p;
    p->legacy.deleter = producer_delete_legacy;
}

static const DLDataType k_f32 = {kDLFloat, 32, 1};

/* ---- export ------------------------------------------------------------------------ */

static void test_export_cpu(void) {
    int64_t storages = ct_live_storages();
    ct_tensor *t = ct_arange(0, 6, 1, .dtype = CT_FLOAT32);
    ct_tensor *v = ct_view(t, CT_SHAPE(2, 3));
    DLManagedTensorVersioned *m = ct_to_dlpack(v);
    CT_EXPECT(m != NULL);
    if (!m) return;
    CT_EXPECT_INT_EQ(m->version.major, 1);
    CT_EXPECT_INT_EQ(m->flags, 0);
    DLTensor *dl = &m->dl_tensor;
    CT_EXPECT_INT_EQ(dl->device.device_type, kDLCPU);
    CT_EXPECT_INT_EQ(dl->device.device_id, 0);
    CT_EXPECT_INT_EQ(dl->ndim, 2);
    CT_EXPECT_INT_EQ(dl->shape[0], 2);
    CT_EXPECT_INT_EQ(dl->shape[1], 3);
    CT_EXPECT_INT_EQ(dl->strides[0], 3);
    CT_EXPECT_INT_EQ(dl->strides[1], 1);
    CT_EXPECT_INT_EQ(dl->dtype.code, kDLFloat);
    CT_EXPECT_INT_EQ(dl->dtype.bits, 32);
    CT_EXPECT_INT_EQ(dl->dtype.lanes, 1);
    CT_EXPECT_INT_EQ(dl->byte_offset, 0);
    CT_EXPECT(dl->data == ct_data_ptr(v));
    /* the consumer writes, ctorch reads */
    ((float *)dl->data)[4] = 42.0f;
    CT_EXPECT_NEAR(ct_get(v, (int64_t[]){1, 1}), 42.0, 0);
    /* the managed tensor keeps the memory after ctorch lets go */
    ct_release(v);
    ct_release(t);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages + 1);
    CT_EXPECT_NEAR(((float *)dl->data)[5], 5.0, 0);
    m->deleter(m);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);
}

static void test_export_view_offset_strides(void) {
    CT_SCOPE {
        ct_tensor *t = ct_view(ct_arange(0, 24, 1, .dtype = CT_FLOAT64), CT_SHAPE(2, 3, 4));
        ct_tensor *v = ct_transpose(ct_narrow(t, 2, 1, 2), 0, 2); /* [2, 3, 2], offset 1 */
        DLManagedTensor *m = ct_to_dlpack_unversioned(v);
        CT_EXPECT(m != NULL);
        if (!m) continue;
        DLTensor *dl = &m->dl_tensor;
        CT_EXPECT_INT_EQ(dl->ndim, 3);
        for (int i = 0; i < 3; i++) {
            CT_EXPECT_INT_EQ(dl->shape[i], ct_size(v, i));
            CT_EXPECT_INT_EQ(dl->strides[i], ct_stride(v, i));
        }
        CT_EXPECT(dl->data == (double *)ct_data_ptr(t) + 1);
        CT_EXPECT_INT_EQ(dl->byte_offset, 0);
        /* element [i][j][k] of v is t[k][j][1 + i] = 12k + 4j + 1 + i */
        const double *p = dl->data;
        CT_EXPECT_NEAR(p[1 * dl->strides[0] + 2 * dl->strides[1] + 1 * dl->strides[2]], 12 + 8 + 1 + 1, 0);
        m->deleter(m);
    }
}

static void test_export_requires_grad(void) {
    CT_SCOPE {
        ct_tensor *w = ct_ones(CT_SHAPE(3), .requires_grad = true);
        CT_EXPECT(ct_to_dlpack(w) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "to_dlpack: Can't export tensors that require gradient, use tensor.detach()");
        CT_EXPECT(ct_to_dlpack_unversioned(ct_mul_scalar(w, 2)) == NULL);
        CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "Can't export tensors that require gradient");
        DLManagedTensorVersioned *m = ct_to_dlpack(ct_detach(w));
        CT_EXPECT(m != NULL);
        if (m) m->deleter(m);
    }
}

/* ---- round trips ---------------------------------------------------------------------- */

static void test_round_trip_views(void) {
    int64_t storages = ct_live_storages();
    CT_SCOPE {
        ct_tensor *t = ct_view(ct_arange(0, 24, 1, .dtype = CT_FLOAT64), CT_SHAPE(2, 3, 4));
        ct_tensor *v = ct_permute(ct_narrow(t, 1, 1, 2), (int[]){2, 0, 1}); /* [4, 2, 2] */
        ct_tensor *u = ct_from_dlpack(ct_to_dlpack(v));
        CT_EXPECT(u != NULL);
        if (!u) continue;
        CT_EXPECT(!ct_shares_storage(u, v)); /* a storage of its own over the same memory */
        CT_EXPECT(ct_data_ptr(u) == ct_data_ptr(v));
        CT_EXPECT_INT_EQ(ct_dtype_of(u), CT_FLOAT64);
        CT_EXPECT_INT_EQ(ct_ndim(u), 3);
        for (int i = 0; i < 3; i++) {
            CT_EXPECT_INT_EQ(ct_size(u, i), ct_size(v, i));
            CT_EXPECT_INT_EQ(ct_stride(u, i), ct_stride(v, i));
        }
        CT_EXPECT_INT_EQ(ct_storage_offset(u), 0);
        double *a = ct_test_values(u), *b = ct_test_values(v);
        for (int i = 0; i < 16; i++) CT_EXPECT_NEAR(a[i], b[i], 0);
        free(a);
        free(b);
        /* writes through the import reach the original, and back */
        CT_EXPECT_INT_EQ(ct_fill_(u, -1.0), CT_OK);
        CT_EXPECT_NEAR(ct_get(t, (int64_t[]){1, 2, 3}), -1.0, 0);
        CT_EXPECT_NEAR(ct_get(t, (int64_t[]){1, 0, 3}), 15.0, 0); /* outside the view */
        CT_EXPECT_INT_EQ(ct_fill_(t, 3.0), CT_OK);
        CT_EXPECT_NEAR(ct_get(u, (int64_t[]){3, 1, 1}), 3.0, 0);
        /* ctorch's side goes first; the import keeps the memory alive */
        ct_release(v);
        ct_release(t);
        CT_EXPECT_NEAR(ct_get(u, (int64_t[]){0, 0, 0}), 3.0, 0);
        CT_EXPECT_INT_EQ(ct_live_storages(), storages + 2); /* the original and the import's */
    }
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);
}

static void test_round_trip_every_dtype(void) {
    static const double vals[6] = {0, 1, 1, 0, 1, 1};
    for (int d = 1; d < CT_NUM_DTYPES; d++) {
        ct_dtype dt = (ct_dtype)d;
        CT_SCOPE {
            ct_tensor *t = ct_test_tensor(vals, CT_SHAPE(2, 3), dt);
            DLManagedTensorVersioned *m = ct_to_dlpack(t);
            CT_EXPECT_MSG(m != NULL, "%s: %s", ct_dtype_name(dt), ct_last_error());
            if (!m) continue;
            CT_EXPECT_INT_EQ(m->dl_tensor.dtype.bits, ct_dtype_size(dt) * 8);
            CT_EXPECT_INT_EQ(m->dl_tensor.dtype.lanes, 1);
            int code = dt == CT_BFLOAT16                   ? kDLBfloat
                       : dt == CT_BOOL                     ? kDLBool
                       : dt == CT_UINT8                    ? kDLUInt
                       : ct_dtype_is_floating(dt)          ? kDLFloat
                                                           : kDLInt;
            CT_EXPECT_MSG(m->dl_tensor.dtype.code == code, "%s: code %d, expected %d", ct_dtype_name(dt),
                          m->dl_tensor.dtype.code, code);
            ct_tensor *u = ct_from_dlpack(m);
            CT_EXPECT(u != NULL);
            if (!u) {
                m->deleter(m);
                continue;
            }
            CT_EXPECT_MSG(ct_dtype_of(u) == dt, "%s came back as %s", ct_dtype_name(dt),
                          ct_dtype_name(ct_dtype_of(u)));
            CT_EXPECT(ct_data_ptr(u) == ct_data_ptr(t));
            ct_test_holds(u, vals, 6, dt);
            /* and the legacy form */
            ct_tensor *w = ct_from_dlpack_unversioned(ct_to_dlpack_unversioned(u));
            CT_EXPECT(w != NULL && ct_dtype_of(w) == dt && ct_data_ptr(w) == ct_data_ptr(t));
        }
    }
}

static void test_round_trip_scalar_and_empty(void) {
    CT_SCOPE {
        ct_tensor *s = ct_scalar_tensor(2.5, .dtype = CT_FLOAT32);
        ct_tensor *u = ct_from_dlpack(ct_to_dlpack(s));
        CT_EXPECT(u != NULL && ct_ndim(u) == 0 && ct_numel(u) == 1);
        CT_EXPECT_NEAR(ct_item(u), 2.5, 0);
        ct_tensor *e = ct_from_dlpack(ct_to_dlpack(ct_empty(CT_SHAPE(0, 3), .dtype = CT_INT64)));
        CT_EXPECT(e != NULL && ct_numel(e) == 0 && ct_size(e, 1) == 3);
    }
}

/* ---- import from a foreign producer ---------------------------------------------------- */

static void test_import_deleter_once(void) {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    producer p;
    producer_init(&p, buf, k_f32, 2, (int64_t[]){2, 3});
    int64_t storages = ct_live_storages();
    ct_tensor *u = ct_from_dlpack(&p.m);
    CT_EXPECT(u != NULL);
    if (!u) return;
    CT_EXPECT(ct_data_ptr(u) == buf);
    CT_EXPECT_INT_EQ(ct_stride(u, 0), 3); /* strides NULL: compact row-major */
    CT_EXPECT_INT_EQ(ct_stride(u, 1), 1);
    ct_tensor *row = ct_select(u, 0, 1);
    ct_release(u);
    CT_EXPECT_INT_EQ(p.deleted, 0); /* a view still uses the memory */
    CT_EXPECT_NEAR(ct_get(row, (int64_t[]){2}), 6.0, 0);
    CT_EXPECT_INT_EQ(ct_fill_(row, 0.5), CT_OK);
    CT_EXPECT_NEAR(buf[4], 0.5, 0);
    ct_release(row);
    CT_EXPECT_INT_EQ(p.deleted, 1);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);

    producer_init(&p, buf, k_f32, 1, (int64_t[]){6});
    ct_tensor *w = ct_from_dlpack_unversioned(&p.legacy);
    CT_EXPECT(w != NULL && ct_data_ptr(w) == buf);
    ct_release(w);
    CT_EXPECT_INT_EQ(p.deleted, 1);
}

static void test_import_strides_and_offset(void) {
    int64_t buf[20];
    for (int i = 0; i < 20; i++) buf[i] = 100 + i;
    producer p, q; /* outlive the scope, which releases their tensors */
    producer_init(&p, buf, (DLDataType){kDLInt, 64, 1}, 2, (int64_t[]){3, 2});
    p.m.dl_tensor.byte_offset = 2 * sizeof(int64_t);
    p.m.dl_tensor.strides = p.strides;
    p.strides[0] = 1, p.strides[1] = 3; /* column-major */
    CT_SCOPE {
        ct_tensor *u = ct_from_dlpack(&p.m);
        CT_EXPECT(u != NULL);
        if (!u) continue;
        CT_EXPECT(!ct_is_contiguous(u));
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 2; j++)
                CT_EXPECT_NEAR(ct_get(u, (int64_t[]){i, j}), (double)(100 + 2 + i + 3 * j), 0);
        /* a dimension of size one may carry any stride */
        producer_init(&q, buf, (DLDataType){kDLInt, 64, 1}, 2, (int64_t[]){1, 4});
        q.m.dl_tensor.strides = q.strides;
        q.strides[0] = -7, q.strides[1] = 2;
        ct_tensor *r = ct_from_dlpack(&q.m);
        CT_EXPECT(r != NULL);
        CT_EXPECT_NEAR(ct_get(r, (int64_t[]){0, 3}), 106.0, 0);
    }
    CT_EXPECT_INT_EQ(p.deleted, 1);
    CT_EXPECT_INT_EQ(q.deleted, 1);
}

static void test_import_cuda_host_is_cpu(void) {
    double buf[3] = {1.5, 2.5, 3.5};
    producer p;
    producer_init(&p, buf, (DLDataType){kDLFloat, 64, 1}, 1, (int64_t[]){3});
    p.m.dl_tensor.device = (DLDevice){kDLCUDAHost, 0};
    CT_SCOPE {
        ct_tensor *u = ct_from_dlpack(&p.m);
        CT_EXPECT(u != NULL && ct_device_of(u).type == CT_DEVICE_CPU);
        CT_EXPECT_NEAR(ct_get(u, (int64_t[]){2}), 3.5, 0);
    }
    CT_EXPECT_INT_EQ(p.deleted, 1);
}

/* A refused import: NULL, the error, and the producer still owns its memory. */
static void expect_refused(producer *p, ct_status code, const char *msg) {
    int64_t storages = ct_live_storages();
    CT_EXPECT(ct_from_dlpack(&p->m) == NULL);
    CT_EXPECT_ERROR(code, msg);
    CT_EXPECT(ct_from_dlpack_unversioned(&p->legacy) == NULL);
    ct_clear_error();
    CT_EXPECT_INT_EQ(p->deleted, 0);
    CT_EXPECT_INT_EQ(ct_live_storages(), storages);
}

static void test_import_errors(void) {
    static float buf[64];
    producer p;
#define RESET(nd, ...) producer_init(&p, buf, k_f32, (nd), (int64_t[]){__VA_ARGS__})
#define BOTH(field, value) (p.m.dl_tensor.field = (value), p.legacy.dl_tensor.field = (value))
    RESET(1, 4);
    BOTH(dtype, ((DLDataType){kDLFloat, 32, 4}));
    expect_refused(&p, CT_ERR_DTYPE, "vector dtypes are not supported (code 2 (kDLFloat), bits 32, lanes 4); lanes must be 1");
    RESET(1, 4);
    BOTH(dtype, ((DLDataType){kDLComplex, 64, 1}));
    expect_refused(&p, CT_ERR_DTYPE, "from_dlpack: unsupported DLPack dtype (code 5 (kDLComplex), bits 64, lanes 1)");
    RESET(1, 4);
    BOTH(dtype, ((DLDataType){kDLFloat, 8, 1}));
    expect_refused(&p, CT_ERR_DTYPE, "unsupported DLPack dtype (code 2 (kDLFloat), bits 8, lanes 1)");
    RESET(1, 4);
    BOTH(dtype, ((DLDataType){kDLFloat8_e4m3fn, 8, 1}));
    expect_refused(&p, CT_ERR_DTYPE, "unsupported DLPack dtype (code 10 (a float8/6/4 code), bits 8, lanes 1)");
    RESET(1, 4);
    BOTH(dtype, ((DLDataType){kDLInt, 16, 1}));
    expect_refused(&p, CT_ERR_DTYPE, "unsupported DLPack dtype (code 0 (kDLInt), bits 16, lanes 1)");
    RESET(1, 4);
    BOTH(device, ((DLDevice){kDLOpenCL, 0}));
    expect_refused(&p, CT_ERR_DEVICE,
                   "from_dlpack: DLPack device type kDLOpenCL (4) is not supported; ctorch imports kDLCPU, "
                   "kDLCUDAHost and kDLCUDA");
    RESET(1, 4);
    BOTH(device, ((DLDevice){(DLDeviceType)99, 0}));
    expect_refused(&p, CT_ERR_DEVICE, "DLPack device type unknown (99) is not supported");
    if (ct_device_count(CT_DEVICE_CUDA) == 0) {
        RESET(1, 4);
        BOTH(device, ((DLDevice){kDLCUDA, 0}));
        expect_refused(&p, CT_ERR_DEVICE, "from_dlpack: the tensor is on kDLCUDA device 0, but CUDA is not available");
    }
    RESET(2, 2, -3);
    expect_refused(&p, CT_ERR_SHAPE, "negative");
    RESET(3, INT64_C(1) << 40, INT64_C(1) << 40, 1 << 20);
    expect_refused(&p, CT_ERR_SHAPE, "overflow");
    RESET(1, 4);
    BOTH(ndim, 9);
    expect_refused(&p, CT_ERR_SHAPE, "from_dlpack: ndim 9 is outside [0, 8]");
    RESET(1, 4);
    BOTH(ndim, -1);
    expect_refused(&p, CT_ERR_SHAPE, "ndim -1 is outside [0, 8]");
    RESET(1, 4);
    BOTH(shape, NULL);
    expect_refused(&p, CT_ERR_INVALID_ARG, "NULL shape for a 1-D tensor");
    RESET(2, 2, 3);
    BOTH(strides, p.strides);
    p.strides[0] = 3, p.strides[1] = -1;
    expect_refused(&p, CT_ERR_INVALID_ARG, "from_dlpack: negative stride -1 in dimension 1 is not supported");
    RESET(2, 2, 3);
    BOTH(strides, p.strides);
    p.strides[0] = INT64_MAX / 2, p.strides[1] = 1;
    expect_refused(&p, CT_ERR_SHAPE, "the shape and strides reach past");
    RESET(1, 4);
    BOTH(data, NULL);
    expect_refused(&p, CT_ERR_INVALID_ARG, "NULL data for a tensor of shape [4]");
    RESET(1, 4);
    BOTH(byte_offset, 2);
    expect_refused(&p, CT_ERR_INVALID_ARG, "is not aligned to the 4-byte elements of float32");
    RESET(1, 4);
    p.m.version = (DLPackVersion){2, 3};
    CT_EXPECT(ct_from_dlpack(&p.m) == NULL);
    CT_EXPECT_ERROR(CT_ERR_UNSUPPORTED, "from_dlpack: DLPack version 2.3 is not supported (ctorch reads 1.x)");
    CT_EXPECT_INT_EQ(p.deleted, 0);
    CT_EXPECT(ct_from_dlpack(NULL) == NULL);
    CT_EXPECT_ERROR(CT_ERR_INVALID_ARG, "from_dlpack: NULL managed tensor");
#undef RESET
#undef BOTH
}

/* ---- devices ------------------------------------------------------------------------- */

static void test_opencl_export(void) {
    int n = ct_test_opencl_devices("DLPack export of OpenCL tensors");
    for (int d = 0; d < n; d++) {
        CT_SCOPE {
            ct_tensor *t = ct_arange(0, 10, 1, .dtype = CT_FLOAT32, .device = ct_device_opencl(d));
            ct_tensor *v = ct_narrow(t, 0, 3, 4);
            CT_EXPECT_INT_EQ(ct_fill_(v, 9.0), CT_OK); /* pending on the queue until export */
            DLManagedTensorVersioned *m = ct_to_dlpack(v);
            CT_EXPECT(m != NULL);
            if (!m) continue;
            DLTensor *dl = &m->dl_tensor;
            CT_EXPECT_INT_EQ(dl->device.device_type, kDLOpenCL);
            CT_EXPECT_INT_EQ(dl->device.device_id, d);
            CT_EXPECT(dl->data == v->storage->data); /* the cl_mem itself */
            CT_EXPECT_INT_EQ(dl->byte_offset, v->storage->byte_offset + 3 * sizeof(float));
            CT_EXPECT_INT_EQ(dl->shape[0], 4);
            CT_EXPECT_INT_EQ(dl->strides[0], 1);
            /* the export waited for the fill: the buffer holds it now */
            float host[4] = {0};
            CT_EXPECT_INT_EQ(v->storage->backend->read(d, dl->data, dl->byte_offset, host, sizeof host), CT_OK);
            for (int i = 0; i < 4; i++) CT_EXPECT_NEAR(host[i], 9.0, 0);
            /* ctorch imports no cl_mem; the refused managed tensor stays ours */
            CT_EXPECT(ct_from_dlpack(m) == NULL);
            CT_EXPECT_ERROR(CT_ERR_DEVICE, "DLPack device type kDLOpenCL (4) is not supported");
            m->deleter(m);
        }
    }
}

static void test_cuda_round_trip(void) {
    int n = ct_test_cuda_devices("DLPack round trip of CUDA tensors");
    for (int d = 0; d < n; d++) {
        CT_SCOPE {
            ct_tensor *t = ct_arange(0, 10, 1, .dtype = CT_FLOAT32, .device = ct_device_cuda(d));
            ct_tensor *v = ct_narrow(t, 0, 2, 5);
            DLManagedTensorVersioned *m = ct_to_dlpack(v);
            CT_EXPECT(m != NULL);
            if (!m) continue;
            DLTensor *dl = &m->dl_tensor;
            CT_EXPECT_INT_EQ(dl->device.device_type, kDLCUDA);
            CT_EXPECT_INT_EQ(dl->device.device_id, d);
            CT_EXPECT_INT_EQ(dl->byte_offset, 0);
            CT_EXPECT(dl->data == (char *)v->storage->data + v->storage->byte_offset + 2 * sizeof(float));
            ct_tensor *u = ct_from_dlpack(m);
            CT_EXPECT(u != NULL && ct_device_equal(ct_device_of(u), ct_device_cuda(d)));
            if (!u) {
                m->deleter(m);
                continue;
            }
            CT_EXPECT_NEAR(ct_get(u, (int64_t[]){4}), 6.0, 0);
            CT_EXPECT_INT_EQ(ct_fill_(u, -2.0), CT_OK);
            CT_EXPECT_NEAR(ct_get(t, (int64_t[]){2}), -2.0, 0);
            CT_EXPECT_NEAR(ct_get(t, (int64_t[]){7}), 7.0, 0);
            ct_release(v);
            ct_release(t);
            CT_EXPECT_NEAR(ct_get(u, (int64_t[]){0}), -2.0, 0);
        }
    }
}

int main(int argc, char **argv) {
    ct_test_init(argc, argv);
    CT_RUN(test_export_cpu);
    CT_RUN(test_export_view_offset_strides);
    CT_RUN(test_export_requires_grad);
    CT_RUN(test_round_trip_views);
    CT_RUN(test_round_trip_every_dtype);
    CT_RUN(test_round_trip_scalar_and_empty);
    CT_RUN(test_import_deleter_once);
    CT_RUN(test_import_strides_and_offset);
    CT_RUN(test_import_cuda_host_is_cpu);
    CT_RUN(test_import_errors);
    CT_RUN(test_opencl_export);
    CT_RUN(test_cuda_round_trip);
    return ct_test_finish();
}
