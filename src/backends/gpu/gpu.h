/*
 * gpu.h — the host layer every GPU backend shares (internal).
 *
 * The device kernels are written once (src/kernels/), and so is the host
 * code that launches them: argument preparation, kernel metadata, dimension
 * merging, work sizes and kernel choice live in src/backends/gpu/, compiled
 * once as C. A GPU backend supplies only a ct_gpu_device — launch a kernel
 * by id with an argument list on the current stream, the largest work-group
 * a kernel allows, whether a device computes in double — and points its
 * ct_backend entries at the shared functions (ct_gpu_unary, …). Those find
 * the device table again through the view they are given (ct_gpu_of), so
 * there are no per-backend trampolines, and every line of host logic CUDA
 * runs is a line CI runs on PoCL.
 *
 * Kernel arguments are (size, address of value) pairs, as clSetKernelArg and
 * cudaLaunchKernel both take them: a view's buffer is passed as its `data`
 * handle (a cl_mem or a device pointer, each one pointer wide) followed by
 * its ct_gpu_meta (element offset, shape, strides), exactly as the .kh
 * signatures expect.
 */
#ifndef CT_BACKENDS_GPU_H
#define CT_BACKENDS_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "kernels/kargs.h" /* the kernels' argument structs */
#include "core/error.h"

/* Kernel ids: CT_KID(ct_k_unary_f). */
#define CT_KID(name) CT_KID_##name
typedef enum ct_kernel_id {
#define CT_KERNEL(name) CT_KID(name),
#include "kernels/kernels.def"
#undef CT_KERNEL
    CT_KID_COUNT_
} ct_kernel_id;

/* The kernel's name ("ct_k_unary_f"), for OpenCL's lookup and messages. */
const char *ct_gpu_kernel_name(ct_kernel_id k);

/* One kernel argument: its size and the address of its value. */
typedef struct ct_gpu_arg {
    size_t size;
    const void *value;
} ct_gpu_arg;
#define CT_GPU_ARG(x) ((ct_gpu_arg){sizeof(x), &(x)})
/* A view's buffer handle (the first of the two arguments a view takes). */
#define CT_GPU_BUF(view) ((ct_gpu_arg){sizeof(void *), &(view)->data})

/* What a GPU backend provides to the shared host code. */
typedef struct ct_gpu_device {
    /* Enqueue kernel k of device dev on the current stream with the
     * arguments in order. local == 0: a 1-D launch of `global` work items in
     * the backend's usual group size (kernels check their index against
     * their element count); else exactly global / local groups of `local`. */
    ct_status (*launch)(int dev, ct_kernel_id k, const ct_gpu_arg *args, int nargs, size_t global,
                        size_t local);
    /* The largest work-group kernel k can run with on dev. */
    ct_status (*max_group_size)(int dev, ct_kernel_id k, size_t *out);
    /* Whether dev computes in double (the *_d kernels exist only then). */
    bool (*has_fp64)(int dev);
    /* Whether dev is a CPU (PoCL): rows then get one work item each, never a
     * work-group tree (see gpu_reduce.c). */
    bool (*is_cpu)(int dev);
    /* The runtime's own copy of nbytes between two buffers (byte offsets
     * from their handles), on the current stream: faster than a kernel for
     * contiguous same-dtype copies. */
    ct_status (*copy_bytes)(int dev, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t nbytes);
    /* The runtime's fill of nbytes with a repeated pattern of pattern_size
     * bytes (1, 2, 4 or 8), on the current stream. *done false (and CT_OK):
     * this runtime cannot fill with that pattern, use the kernel. */
    ct_status (*fill_bytes)(int dev, void *buf, size_t offset, const void *pattern, size_t pattern_size,
                            size_t nbytes, bool *done);
} ct_gpu_device;

/* The GPU table of the backend that owns view v. */
const ct_gpu_device *ct_gpu_of(const ct_kview *v);

/* ---- kernel metadata (the ct_kmeta of src/kernels/kdefs.h, host side) ---- */

#define CT_GPU_MAX_DIMS CT_K_MAX_DIMS
/* The kernels' ct_kmeta (src/kernels/kargs.h, one definition for both sides). */
typedef ct_kmeta ct_gpu_meta;

/* The metadata of a view as it is (no dimension merging). */
ct_gpu_meta ct_gpu_meta_of(const ct_kview *v);
/* The metadata of n views of one shape (views[0]'s), with size-1 dims
 * dropped and neighbouring dims merged where every view is contiguous across
 * them, so that kernels mostly index one dimension. Returns the element
 * count. */
int64_t ct_gpu_coalesced_metas(const ct_kview *const *views, int n, ct_gpu_meta *metas);

/* ---- small shared rules ---- */

/* The kernel family of a dtype: 'f' float (float32 and the 16-bit types,
 * computed in float), 'd' double, 'l' long (integers and bool). */
char ct_gpu_compute_kind(ct_dtype dt);
/* Float to int64 as the CPU backend converts (NaN 0, saturating). */
int64_t ct_gpu_to_long(double v);
/* CT_ERR_UNSUPPORTED naming op when dt is float64 on a device without fp64. */
ct_status ct_gpu_check_fp64(const ct_kview *v, ct_dtype dt, const char *op);
/* The largest power-of-two work-group size, at most cap, kernel k allows. */
ct_status ct_gpu_group_size(const ct_kview *v, ct_kernel_id k, size_t cap, size_t *out);
/* A k_acc kernel argument (the kernels' widest float: double where the
 * device has fp64, else float): *slot holds the value, in both widths, for
 * as long as the argument is used. */
typedef struct ct_gpu_acc {
    double d;
    float f;
} ct_gpu_acc;
static inline ct_gpu_arg ct_gpu_acc_arg(const ct_kview *v, ct_gpu_acc *slot, double value) {
    slot->d = value;
    slot->f = (float)value;
    return ct_gpu_of(v)->has_fp64(v->device) ? CT_GPU_ARG(slot->d) : CT_GPU_ARG(slot->f);
}

/* ---- the shared op entries (same signatures as their ct_backend members) ---- */

ct_status ct_gpu_unary(ct_unary_op op, const ct_kview *out, const ct_kview *in, double p0, double p1);
ct_status ct_gpu_binary(ct_binary_op op, const ct_kview *out, const ct_kview *a, const ct_kview *b,
                        double alpha);
ct_status ct_gpu_where(const ct_kview *out, const ct_kview *cond, const ct_kview *a, const ct_kview *b);
ct_status ct_gpu_index_select(const ct_kview *out, const ct_kview *in, const ct_kview *index, int64_t outer,
                              int64_t dim_in, int64_t inner);
ct_status ct_gpu_gather(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim);
ct_status ct_gpu_reduce(ct_reduce_op op, const ct_kview *out, const ct_kview *out_index, const ct_kview *in,
                        double param);
ct_status ct_gpu_softmax(const ct_kview *out, const ct_kview *in, int64_t outer, int64_t dim, int64_t inner,
                         bool log);
/* ---- matmul (gpu_linalg.c): the shared driver and the backend's GEMM ---- */

/* One operand of a GEMM: matrix b's element (r, c) at off + b*sb + r*sr +
 * c*sc elements of the buffer at base. */
typedef struct ct_gpu_mm_side {
    void *base;
    int64_t off, sb, sr, sc;
} ct_gpu_mm_side;
typedef struct ct_gpu_mm_dims {
    int64_t batch, m, n, k;
} ct_gpu_mm_dims;
/* How a BLAS reads a row-major rows x cols matrix with these strides: as
 * stored (element (r, c) at r*ld + c) or transposed (at c*ld + r), the
 * rule of the CPU backend; false when neither fits. */
bool ct_gpu_gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *transposed, int64_t *ld);
/* A backend's GEMM: row-major C[i] = A[i] @ B[i] for i < dm->batch, in dt,
 * with A and B readable by ct_gpu_gemm_layout and C contiguous at c_off
 * elements of c_base; batch stride of C is m*n. */
typedef ct_status (*ct_gpu_gemm_fn)(int dev, ct_dtype dt, const ct_gpu_mm_dims *dm, const ct_gpu_mm_side *a,
                                    const ct_gpu_mm_side *b, void *c_base, int64_t c_off);
/* backend.h's matmul on the backend's GEMM: floats through gemm (16-bit
 * dtypes natively when native_16bit, else widened to float32 and rounded
 * once), integers on the portable kernel. */
ct_status ct_gpu_matmul(const ct_kview *out, const ct_kview *a, const ct_kview *b, ct_gpu_gemm_fn gemm,
                        bool native_16bit);
ct_status ct_gpu_copy(const ct_kview *dst, const ct_kview *src);
ct_status ct_gpu_fill(const ct_kview *dst, double value);
ct_status ct_gpu_arange(const ct_kview *dst, double start, double step);
ct_status ct_gpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b);

/* The ops table a GPU backend copies and overrides (gpu_table.c), and the
 * shared nn-family tables it points to (gpu_conv.c, gpu_nn.c, gpu_loss.c;
 * CUDA copies the first two and puts cuDNN's entries over them). */
extern const ct_backend_ops ct_gpu_ops;
extern const struct ct_backend_conv ct_gpu_conv_ops;
extern const struct ct_backend_nn ct_gpu_nn_ops;
extern const struct ct_backend_loss ct_gpu_loss_ops;

#endif /* CT_BACKENDS_GPU_H */
