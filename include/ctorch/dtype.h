/*
 * ctorch/dtype.h — element types, type promotion and the 16-bit float formats.
 *
 * The dtypes mirror PyTorch's names and promotion rules (torch.result_type):
 * bool < integers < floating point; float16 with bfloat16 promotes to float32.
 * Value 0 (CT_DTYPE_DEFAULT) means "the default dtype" (float32, settable with
 * ct_set_default_dtype) so that zero-initialised option structs do the right
 * thing.
 */
#ifndef CTORCH_DTYPE_H
#define CTORCH_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_dtype {
    CT_DTYPE_DEFAULT = 0, /* resolves to ct_get_default_dtype()               */
    CT_FLOAT32 = 1,
    CT_FLOAT64 = 2,
    CT_FLOAT16 = 3,
    CT_BFLOAT16 = 4,
    CT_INT32 = 5,
    CT_INT64 = 6,
    CT_UINT8 = 7,
    CT_BOOL = 8,
    CT_INT8 = 9 /* torch.int8 (signed char); appended so stored values keep meaning */
} ct_dtype;

#define CT_NUM_DTYPES 10

CT_API size_t ct_dtype_size(ct_dtype dt);              /* bytes per element, 0 if invalid */
CT_API const char *ct_dtype_name(ct_dtype dt);         /* "float32", "int64", …            */
CT_API bool ct_dtype_is_floating(ct_dtype dt);         /* float16/bfloat16/float32/float64 */
CT_API bool ct_dtype_is_integral(ct_dtype dt, bool include_bool);
CT_API bool ct_dtype_is_valid(ct_dtype dt);            /* a concrete dtype (not DEFAULT)   */

/* torch.promote_types: the smallest dtype both convert to without losing kind.
 * One deviation: int8 with uint8 gives int32 (PyTorch: int16, which ctorch
 * lacks; int32 is the smallest type here that holds both ranges). */
CT_API ct_dtype ct_promote_types(ct_dtype a, ct_dtype b);

/* Default floating dtype used by creation functions (float32 at start). Only
 * float32 and float64 are accepted, as in torch.set_default_dtype. */
CT_API ct_status ct_set_default_dtype(ct_dtype dt);
CT_API ct_dtype ct_get_default_dtype(void);

/* IEEE binary16 and bfloat16 conversions. float -> 16-bit rounds to nearest
 * even, keeps infinities and NaN (quiet), and produces subnormals. */
CT_API uint16_t ct_float_to_half(float f);
CT_API float ct_half_to_float(uint16_t h);
CT_API uint16_t ct_float_to_bfloat16(float f);
CT_API float ct_bfloat16_to_float(uint16_t b);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_DTYPE_H */
