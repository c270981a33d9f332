/*
 * linalg.c — torch.matmul, torch.mm and torch.bmm.
 *
 * Every case of torch.matmul is reduced to one batched product
 * out [B, M, N] = a [B, M, K] @ b [B, K, N] for the backend's `matmul`
 * entry: a 1-D left operand acts as a 1×K row, a 1-D right operand as a K×1
 * column (the extra dim is left out of the result), and the batch dims of both
 * operands are broadcast and collapsed into the single dim B. Operands are
 * passed as strided views whenever their broadcast batch dims collapse, so
 * transposed and broadcast inputs are never copied here; the backend decides
 * what its BLAS can read. As in PyTorch, matmul does not promote dtypes.
 */
#include <string.h>

#include "autograd/autograd.h"
#include "amp/autocast.h"

/* PyTorch prints C++ scalar type names in matmul's dtype message. */
static const char *cpp_type_name(ct_dtype dt) {
    switch (dt) {
    case CT_FLOAT32: return "float";
    case CT_FLOAT64: return "double";
    case CT_FLOAT16: return "c10::Half";
    case CT_BFLOAT16: return "c10::BFloat16";
    case CT_INT32: return "int";
    case CT_INT64: return "long int";
    case CT_UINT8: return "unsigned char";
    case CT_INT8: return "signed char";
    case CT_BOOL: return "bool";
    default: return "unknown";
    }
}

static bool check_operands(const char *op, const ct_tensor *a, const ct_tensor *b) {
    const ct_tensor *both[2] = {a, b};
    if (!ct_check_same_device(op, both, 2)) return false;
    CT_CHECK_RET(a->dtype == b->dtype, false, CT_ERR_DTYPE,
                 "%s: expected m1 and m2 to have the same dtype, but got: %s != %s", op,
                 cpp_type_name(a->dtype), cpp_type_name(b->dtype));
    CT_CHECK_RET(a->dtype != CT_BOOL, false, CT_ERR_DTYPE,
                 "%s: \"addmm\" not implemented for 'Bool'", op);
    return true;
}

/* "2x3x4" for messages. */
static const char *dims_str(const int64_t *shape, int ndim, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? "x%lld" : "%lld", (long long)shape[i]);
    return buf;
}

/* The inner dims differ: report it as PyTorch does for the equivalent call. */
static void inner_dim_error(const ct_tensor *a, const ct_tensor *b) {
    char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
    if (a->ndim == 1 && b->ndim == 1) {
        ct_error_set(CT_ERR_SHAPE,
                     "dot: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have "
                     "the same number of elements, but got %lld and %lld elements respectively",
                     (long long)a->shape[0], (long long)b->shape[0], (long long)a->shape[0],
                     (long long)b->shape[0]);
    } else if (a->ndim == 2 && b->ndim == 1) {
        ct_error_set(CT_ERR_SHAPE, "mv: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                     (long long)a->shape[0], (long long)a->shape[0], (long long)a->shape[1],
                     (long long)b->shape[0]);
    } else {
        /* A 1-D left operand is a 1×K row (torch's unsqueeze(0) before mm). */
        int64_t row[2] = {1, a->shape[0]};
        const int64_t *ashape = a->ndim == 1 ? row : a->shape;
        int andim = a->ndim == 1 ? 2 : a->ndim;
        bool plain_mm = andim == 2 && b->ndim == 2;
        ct_error_set(CT_ERR_SHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%s and %s)",
                     plain_mm ? "mm" : "matmul", dims_str(ashape, andim, sa, sizeof sa),
                     dims_str(b->shape, b->ndim, sb, sizeof sb));
    }
}

/* Merge dims (sizes, strides) into one dim if they are equally spaced, as a
 * view would. Size-1 dims are ignored; all-broadcast dims merge to stride 0. */
static bool collapse_dims(const int64_t *sizes, const int64_t *strides, int n, int64_t *size_out,
                          int64_t *stride_out) {
    int64_t size = 1, stride = 0;
    bool started = false;
    for (int i = n - 1; i >= 0; i--) {
        if (sizes[i] == 1) continue;
        if (started && strides[i] != stride * size) return false;
        if (!started) stride = strides[i], started = true;
        size *= sizes[i];
    }
    *size_out = size;
    *stride_out = stride;
    return true;
}

/* One operand seen as a stack of matrices over the broadcast batch shape:
 * strides of each batch dim (0 where broadcast) and of the two matrix dims. */
typedef struct matmul_operand {
    const ct_tensor *t;
    int64_t rows, cols;
    int64_t batch_strides[CT_MAX_DIMS];
    int64_t row_stride, col_stride;
} matmul_operand;

/* `vector_is_row`: a 1-D tensor is a 1×K row (left operand) or a K×1 column. */
static matmul_operand describe_operand(const ct_tensor *t, bool vector_is_row,
                                       const int64_t *batch, int nbatch) {
    matmul_operand op;
    memset(&op, 0, sizeof op);
    op.t = t;
    int n = t->ndim;
    if (n == 1 && vector_is_row) {
        op.rows = 1, op.cols = t->shape[0];
        op.row_stride = t->shape[0] * t->strides[0], op.col_stride = t->strides[0];
    } else if (n == 1) {
        op.rows = t->shape[0], op.cols = 1;
        op.row_stride = t->strides[0], op.col_stride = 1;
    } else {
        op.rows = t->shape[n - 2], op.cols = t->shape[n - 1];
        op.row_stride = t->strides[n - 2], op.col_stride = t->strides[n - 1];
    }
    int tbatch = n > 2 ? n - 2 : 0;
    for (int i = 0; i < nbatch; i++) {
        int it = tbatch - nbatch + i;
        op.batch_strides[i] = (it < 0 || t->shape[it] != batch[i]) ? 0 : t->strides[it];
    }
    return op;
}

/* The operand as a [B, rows, cols] kernel view. When its batch dims cannot
 * be collapsed into one strided dim, it is expanded and copied contiguous;
 * *holder then owns that copy. */
static bool operand_kview(const matmul_operand *op, const int64_t *batch, int nbatch, int64_t B,
                          ct_kview *kv, ct_tensor **holder) {
    int64_t bsize, bstride;
    const ct_tensor *src = op->t;
    int64_t row_stride = op->row_stride, col_stride = op->col_stride;
    *holder = NULL;
    if (!collapse_dims(batch, op->batch_strides, nbatch, &bsize, &bstride)) {
        int64_t shape[CT_MAX_DIMS + 2], strides[CT_MAX_DIMS + 2];
        memcpy(shape, batch, (size_t)nbatch * sizeof *shape);
        memcpy(strides, op->batch_strides, (size_t)nbatch * sizeof *strides);
        shape[nbatch] = op->rows, shape[nbatch + 1] = op->cols;
        strides[nbatch] = row_stride, strides[nbatch + 1] = col_stride;
        ct_tensor *expanded = cti_as_strided(src, shape, strides, nbatch + 2, src->offset);
        *holder = cti_contiguous(expanded);
        ct_decref(expanded);
        if (!*holder) return false;
        src = *holder;
        bstride = op->rows * op->cols, row_stride = op->cols, col_stride = 1;
    }
    *kv = ct_kview_of(src);
    kv->ndim = 3;
    kv->shape[0] = B, kv->shape[1] = op->rows, kv->shape[2] = op->cols;
    kv->strides[0] = B == 1 ? 0 : bstride;
    kv->strides[1] = row_stride, kv->strides[2] = col_stride;
    return true;
}

/* When b is the same matrix for every batch and a's batch and row dims
 * collapse into one, the whole product is a single [B*M, K] @ [K, N]: one
 * large GEMM instead of B small ones, with the same output layout. */
static bool fold_batch_into_rows(const matmul_operand *a, const matmul_operand *b,
                                 const int64_t *batch, int nbatch, ct_kview *akv, ct_kview *bkv) {
    for (int i = 0; i < nbatch; i++)
        if (b->batch_strides[i] != 0 && batch[i] != 1) return false;
    int64_t sizes[CT_MAX_DIMS + 1], strides[CT_MAX_DIMS + 1], rows, row_stride;
    memcpy(sizes, batch, (size_t)nbatch * sizeof *sizes);
    memcpy(strides, a->batch_strides, (size_t)nbatch * sizeof *strides);
    sizes[nbatch] = a->rows, strides[nbatch] = a->row_stride;
    if (!collapse_dims(sizes, strides, nbatch + 1, &rows, &row_stride)) return false;
    *akv = ct_kview_of(a->t);
    akv->ndim = 3;
    akv->shape[0] = 1, akv->shape[1] = rows, akv->shape[2] = a->cols;
    akv->strides[0] = 0, akv->strides[1] = row_stride, akv->strides[2] = a->col_stride;
    *bkv = ct_kview_of(b->t);
    bkv->ndim = 3;
    bkv->shape[0] = 1, bkv->shape[1] = b->rows, bkv->shape[2] = b->cols;
    bkv->strides[0] = 0, bkv->strides[1] = b->row_stride, bkv->strides[2] = b->col_stride;
    return true;
}

/* Run the product into `out` (already allocated, contiguous). */
static bool run_matmul(ct_tensor *out, const matmul_operand *a, const matmul_operand *b,
                       const int64_t *batch, int nbatch) {
    const int64_t B = ct_shape_numel(batch, nbatch), M = a->rows, N = b->cols;
    ct_kview okv = ct_kview_of(out);
    if (B * M * N == 0) return true;
    if (a->cols == 0) /* empty sum */
        return CTI_BACKEND_CALL(out, fill, "matmul", &okv, 0.0) == CT_OK;
    ct_kview akv, bkv;
    ct_tensor *a_copy = NULL, *b_copy = NULL;
    int64_t out_rows = B * M, out_batch = 1;
    if (B == 1 || !fold_batch_into_rows(a, b, batch, nbatch, &akv, &bkv)) {
        out_rows = M, out_batch = B;
        if (!operand_kview(a, batch, nbatch, B, &akv, &a_copy) ||
            !operand_kview(b, batch, nbatch, B, &bkv, &b_copy)) {
            ct_decref(a_copy);
            return false;
        }
    }
    okv.ndim = 3;
    okv.shape[0] = out_batch, okv.shape[1] = out_rows, okv.shape[2] = N;
    okv.strides[0] = out_rows * N, okv.strides[1] = N, okv.strides[2] = 1;
    ct_status st = CTI_BACKEND_CALL(out, matmul, "matmul", &okv, &akv, &bkv);
    ct_decref(a_copy);
    ct_decref(b_copy);
    return st == CT_OK;
}

ct_tensor *cti_matmul(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b) return NULL;
    CT_CHECK_NULL(a->ndim >= 1 && b->ndim >= 1, CT_ERR_SHAPE,
                  "matmul: both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                  a->ndim, b->ndim);
    if (!check_operands("matmul", a, b)) return NULL;
    int64_t ka = a->shape[a->ndim - 1], kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) {
        inner_dim_error(a, b);
        return NULL;
    }
    int64_t batch[CT_MAX_DIMS];
    int nbatch;
    if (!ct_broadcast_shapes("matmul", a->shape, a->ndim > 2 ? a->ndim - 2 : 0, b->shape,
                             b->ndim > 2 ? b->ndim - 2 : 0, batch, &nbatch))
        return NULL;
    matmul_operand oa = describe_operand(a, true, batch, nbatch);
    matmul_operand ob = describe_operand(b, false, batch, nbatch);
    /* Result: batch dims, then M unless a was 1-D, then N unless b was 1-D. */
    int64_t shape[CT_MAX_DIMS];
    int ndim = nbatch;
    memcpy(shape, batch, (size_t)nbatch * sizeof *shape);
    if (a->ndim > 1) shape[ndim++] = oa.rows;
    if (b->ndim > 1) shape[ndim++] = ob.cols;
    ct_tensor *out = cti_empty(shape, ndim, a->dtype, a->storage->device);
    if (!out) return NULL;
    if (!run_matmul(out, &oa, &ob, batch, nbatch)) {
        ct_decref(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b) {
    CTI_AUTOCAST2("matmul", a, b);
    return CTI_AUTOCAST_RESULT(cta_matmul(a, b));
}

ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b) return NULL;
    CT_CHECK_NULL(a->ndim == 2, CT_ERR_SHAPE, "mm: self must be a matrix, got %d-D tensor", a->ndim);
    CT_CHECK_NULL(b->ndim == 2, CT_ERR_SHAPE, "mm: mat2 must be a matrix, got %d-D tensor", b->ndim);
    if (!check_operands("mm", a, b)) return NULL;
    CTI_AUTOCAST2("mm", a, b);
    return CTI_AUTOCAST_RESULT(cta_matmul(a, b));
}

ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b) return NULL;
    CT_CHECK_NULL(a->ndim == 3, CT_ERR_SHAPE, "bmm: Expected 3-D tensor, got %d-D (batch1)", a->ndim);
    CT_CHECK_NULL(b->ndim == 3, CT_ERR_SHAPE, "bmm: Expected 3-D tensor, got %d-D (batch2)", b->ndim);
    if (!check_operands("bmm", a, b)) return NULL;
    CT_CHECK_NULL(a->shape[0] == b->shape[0], CT_ERR_SHAPE,
                  "bmm: batch1 and batch2 must have same number of batches, got %lld and %lld",
                  (long long)a->shape[0], (long long)b->shape[0]);
    CT_CHECK_NULL(a->shape[2] == b->shape[1], CT_ERR_SHAPE,
                  "bmm: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                  "but got: [%lld, %lld].",
                  (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0],
                  (long long)b->shape[1]);
    CTI_AUTOCAST2("bmm", a, b);
    return CTI_AUTOCAST_RESULT(cta_matmul(a, b));
}
