/*
 * cl_ops.h — the OpenCL backend's op entries (internal): reductions and
 * softmax, each with exactly the signature of its ct_backend member
 * (src/core/backend.h) so that the backend table can point at it, and the
 * OpenCL table of the shared GPU host layer (src/backends/gpu/), which
 * provides elementwise, where and indexing. The kernels they launch are the
 * .kh files of src/kernels/.
 *
 * The second half declares the launch helpers that cl_ops.c shares with
 * cl_reduce.c.
 */
#ifndef CT_CL_OPS_H
#define CT_CL_OPS_H

#include "cl_internal.h"

/* ---- shared by cl_ops.c and cl_reduce.c ---- */

/* One kernel argument: its size and the address of its value (a cl_mem,
 * a ct_cl_meta, a scalar): the shared GPU layer's. */
typedef ct_gpu_arg ct_clops_arg;
#define CT_CLOPS_ARG(x) CT_GPU_ARG(x)

/* The OpenCL backend's table for the shared GPU host code. */
extern const ct_gpu_device ct_cl_gpu;

/* Look up kernel `name` of device dev, set its arguments and enqueue it on
 * the current stream, all under the kernel lock. local == 0: a 1-D launch of
 * `global` work items (ct_cl_launch_1d); else exactly global/local. */
ct_status ct_clops_launch(int dev, const char *name, const ct_clops_arg *args, int nargs,
                          size_t global, size_t local);

/* Whether device dev computes in double (cl_khr_fp64); the kernels in double
 * exist only then. */
bool ct_clops_has_fp64(int dev);
/* CT_ERR_UNSUPPORTED naming op when dt is float64 on a device without fp64. */
ct_status ct_clops_check_fp64(int dev, ct_dtype dt, const char *op);

/* The kernel metadata of a view as it is (no dimension merging). */
ct_cl_meta ct_clops_meta(const ct_kview *v);

/* The largest power-of-two work-group size, at most `cap`, that kernel
 * `name` can run with on device dev. */
ct_status ct_clops_group_size(int dev, const char *name, size_t cap, size_t *out);

#endif /* CT_CL_OPS_H */
