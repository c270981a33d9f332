/*
 * cu_gpu.c — the CUDA backend's table for the shared GPU host layer
 * (src/backends/gpu/gpu.h): kernels are launched by id with
 * cudaLaunchKernel on the thread's current stream of the device, from the
 * addresses nvcc compiled (ct_cu_kernel_table, in kernels.def order). The
 * arguments arrive as (size, address) pairs, and cudaLaunchKernel reads each
 * parameter's bytes from its address with the kernel's own parameter sizes,
 * so the host code OpenCL runs on PoCL is the host code CUDA runs.
 */
#include "backends/gpu/gpu.h"
#include "cu_internal.h"

#define CU_MAX_KERNEL_ARGS 32

/* kernels.def and the table compiled from it must agree; a mismatch is a
 * build bug, reported instead of launching the wrong kernel. */
static ct_status kernel_address(ct_kernel_id k, const void **out) {
    CT_CHECK_STATUS(ct_cu_kernel_count == CT_KID_COUNT_, CT_ERR_INTERNAL,
                    "cuda: the kernel table has %d entries but kernels.def lists %d", ct_cu_kernel_count,
                    (int)CT_KID_COUNT_);
    CT_CHECK_STATUS((unsigned)k < CT_KID_COUNT_, CT_ERR_INTERNAL, "cuda: unknown kernel id %d", (int)k);
    *out = ct_cu_kernel_table[k];
    return CT_OK;
}

static ct_status gpu_launch(int dev, ct_kernel_id k, const ct_gpu_arg *args, int nargs, size_t global,
                            size_t local) {
    if (global == 0) return CT_OK;
    const void *fn;
    CT_TRY(kernel_address(k, &fn));
    CT_CHECK_STATUS(nargs <= CU_MAX_KERNEL_ARGS, CT_ERR_INTERNAL, "cuda: %s takes %d arguments (at most %d)",
                    ct_gpu_kernel_name(k), nargs, CU_MAX_KERNEL_ARGS);
    cudaStream_t stream = ct_cu_stream(dev);
    if (!stream) return ct_last_status();
    void *values[CU_MAX_KERNEL_ARGS];
    for (int i = 0; i < nargs; i++) values[i] = (void *)args[i].value;
    dim3 grid = {1, 1, 1}, block = {CT_CU_THREADS, 1, 1};
    if (local) {
        block.x = (unsigned)local;
        grid.x = (unsigned)(global / local);
    } else {
        grid.x = ct_cu_blocks((int64_t)global);
    }
    return ct_cu_check(cudaLaunchKernel(fn, grid, block, values, 0, stream), ct_gpu_kernel_name(k));
}

static ct_status gpu_max_group_size(int dev, ct_kernel_id k, size_t *out) {
    const void *fn;
    CT_TRY(kernel_address(k, &fn));
    CT_TRY(ct_cu_set_device(dev));
    struct cudaFuncAttributes attr;
    CT_CU_TRY(cudaFuncGetAttributes(&attr, fn));
    *out = (size_t)attr.maxThreadsPerBlock;
    return CT_OK;
}

static bool gpu_has_fp64(int dev) {
    (void)dev;
    return true; /* every CUDA device computes in double */
}

static ct_status gpu_copy_bytes(int dev, void *dst, size_t dst_offset, void *src, size_t src_offset,
                                size_t nbytes) {
    cudaStream_t stream = ct_cu_stream(dev);
    if (!stream) return ct_last_status();
    CT_CU_TRY(cudaMemcpyAsync((char *)dst + dst_offset, (const char *)src + src_offset, nbytes,
                              cudaMemcpyDeviceToDevice, stream));
    return CT_OK;
}

/* The runtime has no 16/32/64-bit memset: only a pattern that is one
 * repeated byte (zero, above all) is written with cudaMemsetAsync. */
static ct_status gpu_fill_bytes(int dev, void *buf, size_t offset, const void *pattern, size_t pattern_size,
                                size_t nbytes, bool *done) {
    const unsigned char *p = pattern;
    *done = false;
    for (size_t i = 1; i < pattern_size; i++)
        if (p[i] != p[0]) return CT_OK;
    cudaStream_t stream = ct_cu_stream(dev);
    if (!stream) return ct_last_status();
    CT_CU_TRY(cudaMemsetAsync((char *)buf + offset, p[0], nbytes, stream));
    *done = true;
    return CT_OK;
}

static bool gpu_is_cpu(int dev) {
    (void)dev;
    return false;
}

const ct_gpu_device ct_cu_gpu = {
    .launch = gpu_launch,
    .max_group_size = gpu_max_group_size,
    .has_fp64 = gpu_has_fp64,
    .is_cpu = gpu_is_cpu,
    .copy_bytes = gpu_copy_bytes,
    .fill_bytes = gpu_fill_bytes,
};
