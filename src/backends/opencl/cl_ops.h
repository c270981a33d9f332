/*
 * cl_ops.h — the OpenCL backend's table for the shared GPU host layer
 * (internal). Every op's host code is src/backends/gpu/'s; this backend
 * only launches kernels by name (clSetKernelArg, clEnqueueNDRangeKernel),
 * answers device questions, and copies/fills with the runtime's own
 * commands (cl_ops.c).
 */
#ifndef CT_CL_OPS_H
#define CT_CL_OPS_H

#include "cl_internal.h"

/* The OpenCL backend's table for the shared GPU host code. */
extern const ct_gpu_device ct_cl_gpu;

/* Whether device dev computes in double (cl_khr_fp64); the kernels in double
 * exist only then. */
bool ct_clops_has_fp64(int dev);

#endif /* CT_CL_OPS_H */
