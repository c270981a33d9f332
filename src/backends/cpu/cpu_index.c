/*
 * cpu_index.c — index_select and gather for the CPU backend.
 *
 * Both only move elements, so they work on raw element bytes and never look
 * at the dtype beyond its size: one copy loop per element width serves every
 * dtype. Indices arrive validated by the front-end (src/ops/index.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_linalg.h"

/* inner == 1 (selecting along the last dim) copies single elements, where a
 * typed assignment is much cheaper than a memcpy call per element. */
#define CT_SELECT_ELEMENTS(T)                                                         \
    static void select_elements_##T(T *restrict dst, const T *restrict src,          \
                                    const int64_t *idx, int64_t outer, int64_t n,     \
                                    int64_t dim_in) {                                 \
        _Pragma("omp parallel for if (outer * n >= CT_CPU_GRAIN)")                   \
        for (int64_t o = 0; o < outer; o++)                                           \
            for (int64_t j = 0; j < n; j++) dst[o * n + j] = src[o * dim_in + idx[j]]; \
    }
CT_SELECT_ELEMENTS(uint8_t)
CT_SELECT_ELEMENTS(uint16_t)
CT_SELECT_ELEMENTS(uint32_t)
CT_SELECT_ELEMENTS(uint64_t)
#undef CT_SELECT_ELEMENTS

ct_status ct_cpu_index_select(const ct_kview *out, const ct_kview *in, const ct_kview *index,
                              int64_t outer, int64_t dim_in, int64_t inner) {
    const size_t esize = ct_dtype_size(in->dtype);
    const int64_t *idx = (const int64_t *)ct_cpu_base(index);
    const int64_t n = ct_cpu_numel(index);
    const char *src = ct_cpu_base(in);
    char *dst = ct_cpu_base(out);
    if (inner == 1) {
        switch (esize) {
        case 1: select_elements_uint8_t((void *)dst, (const void *)src, idx, outer, n, dim_in); break;
        case 2: select_elements_uint16_t((void *)dst, (const void *)src, idx, outer, n, dim_in); break;
        case 4: select_elements_uint32_t((void *)dst, (const void *)src, idx, outer, n, dim_in); break;
        default: select_elements_uint64_t((void *)dst, (const void *)src, idx, outer, n, dim_in); break;
        }
        return CT_OK;
    }
    const int64_t rows = outer * n;
    /* One row is the contiguous inner block of one selected slice. */
    #pragma omp parallel for if (rows * inner >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t o = r / n, j = r % n;
        memcpy(dst + (size_t)(r * inner) * esize,
               src + (size_t)((o * dim_in + idx[j]) * inner) * esize, (size_t)inner * esize);
    }
    return CT_OK;
}

/* Element offset in `in` of the first element of output row `row` (all
 * coordinates but the last one), leaving out the gathered dim. */
static int64_t gather_row_offset(const ct_kview *out, const ct_kview *in, int dim, int64_t row) {
    int64_t off = 0;
    for (int d = out->ndim - 2; d >= 0; d--) {
        const int64_t coord = row % out->shape[d];
        row /= out->shape[d];
        if (d != dim) off += coord * in->strides[d];
    }
    return off;
}

ct_status ct_cpu_gather(const ct_kview *out, const ct_kview *in, const ct_kview *index, int dim) {
    const size_t esize = ct_dtype_size(in->dtype);
    const int last = out->ndim - 1;
    const int64_t cols = out->ndim > 0 ? out->shape[last] : 1;
    const int64_t numel = ct_cpu_numel(out);
    if (numel == 0) return CT_OK;
    const int64_t rows = numel / cols;
    const int64_t *idx = (const int64_t *)ct_cpu_base(index);
    const char *src = ct_cpu_base(in);
    char *dst = ct_cpu_base(out);
    const int64_t sdim = in->ndim > 0 ? in->strides[dim] : 0;
    const int64_t slast = in->ndim > 0 ? in->strides[last] : 0;
    #pragma omp parallel for if (numel >= CT_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t base = gather_row_offset(out, in, dim, r);
        const int64_t *irow = idx + r * cols;
        char *drow = dst + (size_t)(r * cols) * esize;
        /* Offset of element j of the row: the index picks the gathered dim;
         * when that is not the last dim, j also walks the last one. */
#define CT_GATHER_ROW(T)                                                                \
        for (int64_t j = 0; j < cols; j++) {                                            \
            const int64_t off = base + irow[j] * sdim + (dim != last ? j * slast : 0);  \
            ((T *)drow)[j] = ((const T *)src)[off];                                     \
        }
        switch (esize) {
        case 1: CT_GATHER_ROW(uint8_t) break;
        case 2: CT_GATHER_ROW(uint16_t) break;
        case 4: CT_GATHER_ROW(uint32_t) break;
        default: CT_GATHER_ROW(uint64_t) break;
        }
#undef CT_GATHER_ROW
    }
    return CT_OK;
}
