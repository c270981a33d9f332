/*
 * cu_kernels.cu — the CUDA backend's one device translation unit: the
 * portable kernels of src/kernels/ (the same sources the OpenCL backend
 * embeds, in the same order), compiled by nvcc, and the table of their
 * addresses. No host launcher lives here: every family's launcher is the
 * shared C code of src/backends/gpu/, which reaches these kernels through
 * ct_cu_kernel_table (cu_gpu.c launches them with cudaLaunchKernel). One
 * translation unit, because the kernels are extern "C" symbols that may be
 * defined only once.
 */
#include "kernels/kdefs.h"
#include "kernels/philox.h"

#include "kernels/conv.kh"
#include "kernels/data.kh"
#include "kernels/elementwise.kh"
#include "kernels/index.kh"
#include "kernels/loss.kh"
#include "kernels/matmul_int.kh"
#include "kernels/nn.kh"
#include "kernels/reduce.kh"
#include "kernels/softmax.kh"

#include "cu_internal.h"

/* Every kernel's address, in the order of kernels/kernels.def: the shared
 * GPU host layer launches kernels by id (cu_gpu.c). */
extern "C" const void *const ct_cu_kernel_table[] = {
#define CT_KERNEL(name) (const void *)name,
#include "kernels/kernels.def"
#undef CT_KERNEL
};
extern "C" const int ct_cu_kernel_count = (int)(sizeof ct_cu_kernel_table / sizeof ct_cu_kernel_table[0]);
