/*
 * api_errors_core.c — rows of test_api_errors.c for status.h, dtype.h,
 * device.h, amp.h, random.h and tensor.h (included into test_api_errors.c).
 */

#include "ctorch/dlpack.h" /* not in the umbrella header */

static const char *const k_null_fmt = NULL; /* a NULL format the compiler cannot see */
static int64_t g_buf[16];
static const int64_t k_huge = INT64_C(1) << 62;

static void rows_status_dtype_device(void) {
    ERR_STATUS(ct_set_error, (CT_OK, "callback failed"), "ct_set_error: code 0 is not an error code");
    ERR_STATUS(ct_set_error, ((ct_status)99, "callback failed"), "callback failed");
    ERR_STATUS(ct_set_error, (CT_ERR_IO, k_null_fmt), "ct_set_error: NULL format");
    QUIET_VAL(ct_status_str, ((ct_status)99), strcmp(r_, "CT_ERR_UNKNOWN") == 0);
    QUIET_VOID(ct_set_error_handler, (NULL, NULL));

    QUIET_VAL(ct_dtype_size, ((ct_dtype)99), r_ == 0);
    QUIET_VAL(ct_dtype_name, ((ct_dtype)99), r_ != NULL);
    QUIET_VAL(ct_dtype_is_floating, ((ct_dtype)99), !r_);
    QUIET_VAL(ct_dtype_is_integral, ((ct_dtype)99, true), !r_);
    QUIET_VAL(ct_dtype_is_valid, ((ct_dtype)99), !r_);
    ERR_VAL(ct_promote_types, ((ct_dtype)99, CT_FLOAT32), r_ == CT_DTYPE_DEFAULT, "promote_types");
    ERR_STATUS(ct_set_default_dtype, (CT_INT64), "set_default_dtype");
    ERR_STATUS(ct_set_default_dtype, ((ct_dtype)99), "set_default_dtype");

    ERR_STATUS(ct_autocast_enter, ((ct_device_type)7, (ct_autocast_opts){0}), "autocast: unknown device type 7");
    ERR_STATUS(ct_autocast_exit, (CT_DEVICE_CPU), "autocast: exit for cpu, but the innermost open region is none");
    QUIET_VAL(ct_is_autocast_enabled, ((ct_device_type)7), !r_);
    QUIET_VAL(ct_get_autocast_dtype, ((ct_device_type)7), r_ == CT_DTYPE_DEFAULT);

    ct_device d;
    char buf[64];
    ERR_STATUS(ct_device_parse, (NULL, &d), "device");
    ERR_STATUS(ct_device_parse, ("cuda:0", NULL), "device");
    ERR_STATUS(ct_device_parse, ("cuda:-5", &d), "Invalid device string");
    QUIET_VAL(ct_device_format, (ct_device_cpu(), NULL, 10), r_ == NULL);
    QUIET_VAL(ct_device_format, (BAD_DEV, buf, sizeof buf), strcmp(r_, "cuda:-5") == 0);
    QUIET_VAL(ct_device_type_name, ((ct_device_type)7), strcmp(r_, "invalid") == 0);
    QUIET_VAL(ct_device_type_available, ((ct_device_type)7), !r_);
    QUIET_VAL(ct_device_count, ((ct_device_type)-1), r_ == 0);
    ERR_STATUS(ct_device_check, (BAD_DEV, &d), "cuda: Device index must be -1 or non-negative, got -5");
    ERR_STATUS(ct_device_check, (((ct_device){CT_DEVICE_CPU, -5}), &d), "CPU device index must be -1 or zero");
    ERR_STATUS(ct_device_check, (BAD_TYPE_DEV, &d), "invalid device type 7");
    ERR_STATUS(ct_device_name, (ct_device_cpu(), NULL, 10), "device_name");
    ERR_STATUS(ct_device_name, (BAD_DEV, buf, sizeof buf), "Device index");
    ERR_STATUS(ct_get_device_properties, (ct_device_cpu(), NULL), "get_device_properties");
    ERR_STATUS(ct_get_device_properties, (BAD_DEV, &(ct_device_properties){0}), "Device index");
    ERR_STATUS(ct_set_device, (BAD_DEV), "non-negative");
    ERR_STATUS(ct_set_device, (BAD_TYPE_DEV), "invalid device type");
    ERR_VAL(ct_current_device, ((ct_device_type)7), r_ == -1, "current_device: invalid device type 7");
    ERR_STATUS(ct_cuda_set_device, (-5), "non-negative");
    ERR_STATUS(ct_cuda_get_device_name, (-5, buf, sizeof buf), "Device index");
    ERR_STATUS(ct_cuda_get_device_name, (0, NULL, 0), NULL);
    ERR_STATUS(ct_device_name, (((ct_device){CT_DEVICE_OPENCL, -2}), buf, sizeof buf),
               "opencl: Device index must be -1 or non-negative, got -2");
    QUIET_VAL(ct_try_gpu, (-5), r_.type == CT_DEVICE_CPU);
    ERR_VAL(ct_try_all_gpus, (NULL, 4), r_ == 0, "try_all_gpus");
    ERR_VAL(ct_try_all_gpus, (&d, -1), r_ == 0, "try_all_gpus");
    ERR_STATUS(ct_device_synchronize, (BAD_DEV), "Device index");

    QUIET_VOID(ct_get_rng_state, (NULL, NULL));
    ERR_VOID(ct_philox4x32, (1, 2, 3, NULL), "philox4x32");
}

static void rows_tensor_basics(void) {
    ERR_VAL(ct_shape_make, (2, NULL), r_.ndim == -1, "shape_make: NULL dims");
    ERR_VAL(ct_shape_make, (9, g_buf), r_.ndim == -1, "shape_make: ndim must be in [0, 8], got 9");
    ERR_VAL(ct_shape_make, (-1, g_buf), r_.ndim == -1, "shape_make");
    QUIET_VAL(ct_retain, (NT), r_ == NULL);
    QUIET_VOID(ct_release, (NT));
    QUIET_VAL(ct_refcount, (NT), r_ == 0);
    ERR_VOID(ct_scope_end, (), "ct_scope_end: no scope is open");
    ERR_VOID(ct_scope_end_at, (NULL), "ct_scope_end: no scope is open");
    PROP_PTR(ct_keep, (NT));

    PROP_VAL(ct_ndim, (NT), r_ == 0);
    PROP_VAL(ct_size, (NT, 0), r_ == -1);
    ERR_VAL(ct_size, (F.t, 5), r_ == -1, "size: Dimension out of range");
    PROP_VAL(ct_stride, (NT, 0), r_ == -1);
    ERR_VAL(ct_stride, (F.t, -7), r_ == -1, "stride: Dimension out of range");
    PROP_VAL(ct_shape_of, (NT), r_.ndim == 0);
    PROP_VAL(ct_sizes, (NT), r_ == NULL);
    PROP_VAL(ct_strides, (NT), r_ == NULL);
    PROP_VAL(ct_storage_offset, (NT), r_ == 0);
    PROP_VAL(ct_numel, (NT), r_ == 0);
    PROP_VAL(ct_dtype_of, (NT), r_ == CT_DTYPE_DEFAULT);
    PROP_VAL(ct_device_of, (NT), r_.type == CT_DEVICE_CPU);
    PROP_VAL(ct_element_size, (NT), r_ == 0);
    PROP_VAL(ct_is_contiguous, (NT), !r_);
    PROP_VAL(ct_shares_storage, (F.t, NT), !r_);
    PROP_VAL(ct_data_ptr, (NT), r_ == NULL);
}

static void rows_creation(void) {
    ERR_PTR(ct_empty_opts, (CT_SHAPE(2, -1), CT_OPTS(0)),
            "empty: Trying to create tensor with negative dimension -1");
    ERR_PTR(ct_empty_opts, (((ct_shape){.ndim = 9}), CT_OPTS(0)), "empty: tensors have at most 8 dimensions");
    ERR_PTR(ct_empty_opts, (((ct_shape){.ndim = -1}), CT_OPTS(0)), "empty: tensors have at most 8 dimensions");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(0, k_huge, 4), CT_OPTS(0)), "empty: Stride calculation overflowed");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(k_huge, 4, 0), CT_OPTS(0)), "empty: Stride calculation overflowed");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(4, k_huge, k_huge), CT_OPTS(0)), "empty: Stride calculation overflowed");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(k_huge, 4), CT_OPTS(0)), "empty: numel: integer multiplication overflow");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(2), CT_OPTS(.device = BAD_DEV)), "Device index must be -1 or non-negative");
    ERR_PTR(ct_empty_opts, (CT_SHAPE(2), CT_OPTS(.dtype = (ct_dtype)99)), "invalid dtype 99");
    ERR_PTR(ct_zeros_opts, (CT_SHAPE(0, k_huge, 4), CT_OPTS(0)), "Stride calculation overflowed");
    ERR_PTR(ct_ones_opts, (CT_SHAPE(-3), CT_OPTS(0)), "negative dimension");
    ERR_PTR(ct_full_opts, (CT_SHAPE(2), 1.0, CT_OPTS(.device = BAD_TYPE_DEV)), "invalid device type");
    ERR_PTR(ct_rand_opts, (CT_SHAPE(2), CT_OPTS(.dtype = CT_INT64)), "rand: expected a floating point dtype");
    ERR_PTR(ct_rand_opts, (CT_SHAPE(k_huge, 0, 8), CT_OPTS(0)), "rand: Stride calculation overflowed");
    ERR_PTR(ct_randn_opts, (CT_SHAPE(2), CT_OPTS(.device = BAD_DEV)), "Device index");
    ERR_PTR(ct_randint_opts, (5, 1, CT_SHAPE(2), CT_OPTS(0)), "random_ expects 'from' to be less than 'to'");
    ERR_PTR(ct_randint_opts, (0, 5, CT_SHAPE(-1), CT_OPTS(0)), "randint: Trying to create tensor with negative");
    ERR_PTR(ct_randint_opts, (INT64_MIN, INT64_MAX, CT_SHAPE(2), CT_OPTS(0)), "randint: low and high must lie in");
    ERR_PTR(ct_arange_opts, (0, 1, 0, CT_OPTS(0)), "arange: step must be nonzero");
    ERR_PTR(ct_arange_opts, (0, 1e300, 1e-300, CT_OPTS(0)), "arange: invalid size, possible overflow?");
    ERR_PTR(ct_arange_opts, (0, 1, -1, CT_OPTS(0)), "arange: upper bound and larger bound inconsistent");
    ERR_PTR(ct_linspace_opts, (0, 1, -1, CT_OPTS(0)), "linspace: number of steps must be non-negative");
    ERR_PTR(ct_eye_opts, (-1, 0, CT_OPTS(0)), "eye: n must be greater or equal to 0");
    ERR_PTR(ct_eye_opts, (2, INT64_MAX, CT_OPTS(0)), "numel: integer multiplication overflow");
    QUIET_VAL(ct_eye_opts, (0, INT64_MAX, CT_OPTS(0)), ct_numel(r_) == 0 && (ct_release(r_), true));
    ERR_PTR(ct_from_data, (NULL, CT_FLOAT32, CT_SHAPE(2), CT_OPTS(0)), "from_data: NULL data");
    ERR_PTR(ct_tensor_from_args, ((ct_from_args){.src_dtype = CT_FLOAT32, .shape = CT_SHAPE(2)}), "from_data: NULL data");
    ERR_PTR(ct_tensor_from_args, ((ct_from_args){g_buf, (ct_dtype)99, CT_SHAPE(2), .reserved_ = 0}), "from_data: invalid source dtype");
    ERR_PTR(ct_from_data, (g_buf, (ct_dtype)99, CT_SHAPE(2), CT_OPTS(0)), "from_data: invalid source dtype");
    ERR_PTR(ct_from_data, (g_buf, CT_INT64, ((ct_shape){.ndim = 100}), CT_OPTS(0)),
            "from_data: tensors have at most");
    PROP_PTR(ct_empty_like, (NT));
    PROP_PTR(ct_zeros_like, (NT));
    PROP_PTR(ct_ones_like, (NT));
    PROP_PTR(ct_full_like, (NT, 1.0));
    PROP_PTR(ct_rand_like, (NT));
    PROP_PTR(ct_randn_like, (NT));
}

static void rows_views(void) {
    PROP_PTR(ct_view, (NT, CT_SHAPE(6)));
    ERR_PTR(ct_view, (F.t, CT_SHAPE(7)), "view: shape '[7]' is invalid for input of size 6");
    ERR_PTR(ct_view, (F.empty, CT_SHAPE(0, k_huge, 4)), "view: Stride calculation overflowed");
    ERR_PTR(ct_view, (F.t, CT_SHAPE(-1, -1)), "view: only one dimension can be inferred");
    ERR_PTR(ct_view, (F.t, ((ct_shape){.ndim = 9})), "view: at most 8 dimensions");
    PROP_PTR(ct_reshape, (NT, CT_SHAPE(6)));
    ERR_PTR(ct_reshape, (F.t, CT_SHAPE(4, -1)), "reshape: shape '[4, -1]' is invalid for input of size 6");
    ERR_PTR(ct_reshape, (F.empty, CT_SHAPE(k_huge, 4, 0)), "reshape: Stride calculation overflowed");
    ERR_PTR(ct_reshape, (F.empty, CT_SHAPE(k_huge, k_huge, -1)), "reshape: numel: integer multiplication overflow");
    PROP_PTR(ct_as_strided, (NT, CT_SHAPE(2), g_buf, 0));
    ERR_PTR(ct_as_strided, (F.t, CT_SHAPE(2, 3), NULL, 0), "as_strided: NULL strides");
    ERR_PTR(ct_as_strided, (F.t, CT_SHAPE(2, 2), ((int64_t[]){INT64_MAX, 1}), 0),
            "as_strided: sizes and strides reach past");
    ERR_PTR(ct_as_strided, (F.t, CT_SHAPE(0, k_huge, 4), ((int64_t[]){1, 1, 1}), 0),
            "as_strided: Stride calculation overflowed");
    ERR_PTR(ct_as_strided, (F.t, CT_SHAPE(2), ((int64_t[]){1}), -1), "as_strided: Tensor: invalid storage offset");
    ERR_PTR(ct_as_strided, (F.t, CT_SHAPE(7), ((int64_t[]){1}), 0), "out of bounds for storage of 6 elements");
    PROP_PTR(ct_permute, (NT, ((int[]){0, 1})));
    ERR_PTR(ct_permute, (F.t, NULL), "permute(): dims is NULL");
    ERR_PTR(ct_permute, (F.t, ((int[]){0, 0})), "permute(): duplicate dims are not allowed");
    ERR_PTR(ct_permute, (F.t, ((int[]){0, 5})), "permute: Dimension out of range");
    PROP_PTR(ct_transpose, (NT, 0, 1));
    ERR_PTR(ct_transpose, (F.t, 5, 0), "transpose: Dimension out of range");
    PROP_PTR(ct_t, (NT));
    ERR_PTR(ct_t, (F.img), "t() expects a tensor with <= 2 dimensions");
    PROP_PTR(ct_narrow, (NT, 0, 0, 1));
    ERR_PTR(ct_narrow, (F.t, 0, 5, 1), "narrow(): start (5) out of range");
    ERR_PTR(ct_narrow, (F.t, 0, 1, INT64_MAX), "narrow(): start (1) + length");
    PROP_PTR(ct_slice, (NT, 0, 0, 1, 1));
    ERR_PTR(ct_slice, (F.t, 0, 0, 1, 0), "slice step must be positive");
    ERR_PTR(ct_slice, (F.t, 9, 0, 1, 1), "slice: Dimension out of range");
    /* no overflow in the size arithmetic, whatever the bounds and step */
    QUIET_VAL(ct_slice, (F.t, 1, 0, 3, INT64_MAX), ct_size(r_, 1) == 1 && (ct_release(r_), true));
    QUIET_VAL(ct_slice, (F.t, 1, INT64_MIN, INT64_MAX, 1), ct_size(r_, 1) == 3 && (ct_release(r_), true));
    PROP_PTR(ct_select, (NT, 0, 0));
    ERR_PTR(ct_select, (F.t, 0, 9), "select(): index 9 out of range");
    ERR_PTR(ct_select, (F.t, 0, INT64_MIN), "select(): index");
    PROP_PTR(ct_expand, (NT, CT_SHAPE(2, 3)));
    ERR_PTR(ct_expand, (F.t, CT_SHAPE(3, 3)), "expand: The expanded size of the tensor (3) must match");
    ERR_PTR(ct_expand, (F.one, CT_SHAPE(k_huge, 4)), "expand: numel: integer multiplication overflow");
    ERR_PTR(ct_expand, (F.one, CT_SHAPE(0, k_huge, 4)), "expand: Stride calculation overflowed");
    ERR_PTR(ct_expand, (F.t, ((ct_shape){.ndim = 9})), "expand: the number of sizes provided");
    PROP_PTR(ct_expand_as, (F.t, NT));
    PROP_PTR(ct_squeeze, (NT));
    PROP_PTR(ct_squeeze_dim, (NT, 0));
    ERR_PTR(ct_squeeze_dim, (F.t, 5), "squeeze: Dimension out of range");
    PROP_PTR(ct_unsqueeze, (NT, 0));
    ERR_PTR(ct_unsqueeze, (F.t, 9), "unsqueeze: Dimension out of range");
    PROP_PTR(ct_flatten, (NT, 0, -1));
    ERR_PTR(ct_flatten, (F.t, 1, 0), "flatten() has invalid args");
    ERR_PTR(ct_flatten, (F.t, 0, 5), "flatten: Dimension out of range");
    PROP_PTR(ct_unflatten, (NT, 0, CT_SHAPE(2, 3)));
    ERR_PTR(ct_unflatten, (F.t, 1, CT_SHAPE(4, -1)), "unflatten: Provided sizes [4, -1]");
    ERR_PTR(ct_unflatten, (F.t, 1, CT_SHAPE(-1, -1)), "unflatten: invalid size -1");
    ERR_PTR(ct_unflatten, (F.t, 1, CT_SHAPE(k_huge, k_huge)), "unflatten: numel: integer multiplication overflow");
    ERR_PTR(ct_unflatten, (F.t, 1, CT_SHAPE(0, k_huge, k_huge)), "unflatten: Stride calculation overflowed");
    ERR_PTR(ct_unflatten, (F.t, 1, ((ct_shape){.ndim = -2})), "unflatten: sizes must be non-empty");
    PROP_PTR(ct_contiguous, (NT));
    PROP_PTR(ct_clone, (NT));
    PROP_PTR(ct_detach, (NT));
}

static void rows_copies(void) {
    double d6[6];
    PROP_PTR(ct_to, (NT, ct_device_cpu(), CT_FLOAT32));
    ERR_PTR(ct_to, (F.t, BAD_DEV, CT_FLOAT32), "Device index must be -1 or non-negative");
    ERR_PTR(ct_to, (F.t, ct_device_cpu(), (ct_dtype)99), "dtype");
    PROP_PTR(ct_to_device, (NT, ct_device_cpu()));
    ERR_PTR(ct_to_device, (F.t, BAD_DEV), "Device index");
    ERR_PTR(ct_to_device, (F.t, BAD_TYPE_DEV), "invalid device type");
    PROP_PTR(ct_to_dtype, (NT, CT_FLOAT64));
    ERR_PTR(ct_to_dtype, (F.t, (ct_dtype)99), "to: invalid dtype 99");
    PROP_PTR(ct_cpu, (NT));
    PROP_PTR(ct_to_device_nb, (NT, ct_device_cpu(), true));
    ERR_PTR(ct_to_device_nb, (F.t, BAD_DEV, true), "Device index");
    PROP_STATUS(ct_copy_, (F.t, NT), "copy_: a tensor argument is NULL");
    PROP_STATUS(ct_copy_, (NT, F.t), "copy_: a tensor argument is NULL");
    ERR_STATUS(ct_copy_, (F.expanded, F.t),
               "copy_: unsupported operation: more than one element of the written-to tensor");
    ERR_STATUS(ct_copy_, (F.row1, F.row0),
               "copy_: unsupported operation: some elements of the input tensor and the written-to tensor "
               "refer to a single memory location. Please clone() the tensor before performing the operation.");
    ERR_STATUS(ct_copy_, (F.t, F.img), "copy_: The size of tensor a");
    QUIET_VAL(ct_copy_, (F.row0, F.row0), r_ == CT_OK);
    PROP_STATUS(ct_fill_, (NT, 1.0), "fill_: a tensor argument is NULL");
    PROP_STATUS(ct_zero_, (NT), "zero_:");
    ERR_STATUS(ct_copy_to_host, (F.t, NULL, CT_FLOAT64, 6), "copy_to_host: NULL argument");
    PROP_STATUS(ct_copy_to_host, (NT, d6, CT_FLOAT64, 6), "copy_to_host: NULL argument");
    ERR_STATUS(ct_copy_to_host, (F.t, d6, (ct_dtype)99, 6), "copy_to_host: invalid dtype 99");
    ERR_STATUS(ct_copy_to_host, (F.t, d6, CT_FLOAT64, 5), "copy_to_host: the buffer holds 5 elements");
    ERR_STATUS(ct_copy_from_host, (F.t, NULL, CT_FLOAT64, 6), "copy_from_host: NULL argument");
    PROP_STATUS(ct_copy_from_host, (NT, d6, CT_FLOAT64, 6), "copy_from_host: NULL argument");
    ERR_STATUS(ct_copy_from_host, (F.t, d6, (ct_dtype)99, 6), "copy_from_host: invalid dtype 99");
    ERR_STATUS(ct_copy_from_host, (F.t, d6, CT_FLOAT64, -1), "copy_from_host: the buffer holds -1 elements");
    PROP_VAL(ct_item, (NT), isnan(r_));
    ERR_VAL(ct_item, (F.t), isnan(r_), "item: a Tensor with 6 elements cannot be converted to Scalar");
    ERR_STATUS(ct_item_checked, (F.one, NULL), "item: NULL argument");
    PROP_STATUS(ct_item_checked, (NT, d6), "item: NULL argument");
    PROP_VAL(ct_get, (NT, g_buf), isnan(r_));
    ERR_VAL(ct_get, (F.t, NULL), isnan(r_), "get: NULL index for a 2-D tensor");
    ERR_VAL(ct_get, (F.t, ((int64_t[]){5, 0})), isnan(r_), "get: index 5 is out of bounds for dimension 0");
    ERR_VAL(ct_get, (F.t, ((int64_t[]){0, INT64_MIN})), isnan(r_), "get: index");
    ERR_STATUS(ct_fprint, (NULL, F.t), "print: the FILE pointer is NULL");
    PROP_STATUS(ct_fprint, (stderr, NT), "print: the tensor is NULL");
    PROP_STATUS(ct_fprint, (NULL, NT), "print: the tensor is NULL"); /* the object first */
    PROP_STATUS(ct_print, (NT), "print: the tensor is NULL");
    ERR_VAL(ct_snprint, (NULL, 10, F.t), r_ == -1, "snprint: buf is NULL but size is 10");
    QUIET_VAL(ct_snprint, (NULL, 0, F.t), r_ > 0);
    PROP_VAL(ct_snprint, ((char[8]){0}, 8, NT), r_ == -1);

    static DLManagedTensorVersioned bad_version = {.version = {2, 0}, .dl_tensor.device = {kDLCPU, 0}};
    static DLManagedTensor bad_lanes = {.dl_tensor = {g_buf, {kDLCPU, 0}, 1, {kDLFloat, 32, 4}, g_buf, NULL, 0}};
    PROP_PTR_SAYS(ct_to_dlpack, (NT), "to_dlpack: NULL tensor");
    ERR_PTR(ct_to_dlpack, (ct_set_requires_grad(F.one, true) == CT_OK ? F.one : NULL),
            "to_dlpack: Can't export tensors that require gradient, use tensor.detach()");
    PROP_PTR_SAYS(ct_to_dlpack_unversioned, (NT), "to_dlpack_unversioned: NULL tensor");
    PROP_PTR_SAYS(ct_from_dlpack, (NULL), "from_dlpack: NULL managed tensor");
    ERR_PTR(ct_from_dlpack, (&bad_version), "from_dlpack: DLPack version 2.0 is not supported");
    PROP_PTR_SAYS(ct_from_dlpack_unversioned, (NULL), "from_dlpack_unversioned: NULL managed tensor");
    ERR_PTR(ct_from_dlpack_unversioned, (&bad_lanes), "from_dlpack_unversioned: vector dtypes are not supported");
}

static void rows_core(void) {
    rows_status_dtype_device();
    rows_tensor_basics();
    rows_creation();
    rows_views();
    rows_copies();
}
