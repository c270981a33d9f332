/*
 * api_errors_runtime.c — rows of test_api_errors.c for stream.h, memory.h,
 * autograd.h, backends.h and the functional ops of functional_*.h
 * (included into test_api_errors.c).
 */

static const int64_t k2[2] = {2, 2}, k0[2] = {0, 0}, kneg[2] = {-1, 1};
static const int64_t kbig[2] = {INT64_MAX, 1}; /* PyTorch narrows window parameters to int */

static void rows_streams(void) {
    float ms = 0;
    ERR_PTR(ct_stream_create, (BAD_DEV, 0), "Device index must be -1 or non-negative");
    QUIET_VOID(ct_stream_destroy, (NULL));
    ERR_PTR(ct_default_stream, (BAD_DEV), "Device index");
    ERR_PTR(ct_current_stream, (BAD_TYPE_DEV), "invalid device type");
    PROP_STATUS(ct_set_stream, (NULL), "set_stream: NULL stream");
    PROP_VAL_SAYS(ct_stream_device, (NULL), r_.type == CT_DEVICE_CPU, "stream_device: NULL stream");
    PROP_VAL_SAYS(ct_stream_priority, (NULL), r_ == 0, "stream_priority: NULL stream");
    QUIET_VOID(ct_stream_priority_range, (CT_DEVICE_CPU, NULL, NULL));
    QUIET_VOID(ct_stream_priority_range, ((ct_device_type)7, &(int){0}, &(int){0}));
    PROP_STATUS(ct_stream_synchronize, (NULL), "stream_synchronize: NULL stream");
    PROP_VAL_SAYS(ct_stream_query, (NULL), r_, "stream_query: NULL stream");
    PROP_STATUS(ct_stream_wait_event, (NULL, F.ev), "stream_wait_event: NULL stream");
    PROP_STATUS(ct_stream_wait_event, (F.stream, NULL), "event_wait: NULL event");
    PROP_STATUS(ct_stream_wait_stream, (F.stream, NULL), "wait_stream: NULL stream");
    PROP_STATUS(ct_stream_wait_stream, (NULL, F.stream), "wait_stream: NULL stream");
    /* torch.cuda.stream(None): a block that changes nothing */
    QUIET_VAL(ct_stream_guard_begin, (NULL), r_.active == 1 && r_.prev == NULL);
    QUIET_VOID(ct_stream_guard_end, (NULL));
    QUIET_VOID(ct_stream_guard_end, (&(ct_stream_guard){NULL, 0}));
    QUIET_VAL(ct_event_create_opts, ((ct_event_opts){0}), (ct_event_destroy(r_), true));
    QUIET_VOID(ct_event_destroy, (NULL));
    PROP_STATUS(ct_event_record, (NULL, F.stream), "event_record: NULL event");
    PROP_VAL_SAYS(ct_event_query, (NULL), r_, "event_query: NULL event");
    PROP_STATUS(ct_event_synchronize, (NULL), "event_synchronize: NULL event");
    PROP_STATUS(ct_event_wait, (NULL, F.stream), "event_wait: NULL event");
    PROP_STATUS(ct_event_elapsed_time, (NULL, F.ev, &ms), "elapsed_time: NULL argument");
    PROP_STATUS(ct_event_elapsed_time, (F.ev, NULL, NULL), "elapsed_time: NULL argument"); /* the object first */
    ERR_STATUS(ct_event_elapsed_time, (F.ev, F.ev, NULL), "elapsed_time: NULL argument");
    ERR_STATUS(ct_event_elapsed_time, (F.ev, F.ev, &ms),
               "Both events must be created with argument 'enable_timing=True'.");
    PROP_STATUS(ct_record_stream, (NT, F.stream), "record_stream: NULL argument");
    PROP_STATUS(ct_record_stream, (F.t, NULL), "record_stream: NULL argument");
}

static void count_stat(const char *key, int64_t value, void *user) { (void)key, (void)value, (void)user; }

static void rows_memory(void) {
    ct_memory_stats st;
    int64_t v;
    ct_segment_info *segs = NULL;
    int n = 0;
    char buf[64];
    size_t fr, tot;
    ERR_STATUS(ct_memory_stats_get, (ct_device_cpu(), NULL), "memory_stats: NULL argument");
    ERR_STATUS(ct_memory_stats_get, (BAD_DEV, &st), "Device index");
    ERR_STATUS(ct_memory_stat, (ct_device_cpu(), NULL, &v), "memory_stat: NULL argument");
    ERR_STATUS(ct_memory_stat, (ct_device_cpu(), "allocated_bytes.all.current", NULL), "memory_stat: NULL argument");
    ERR_STATUS(ct_memory_stat, (ct_device_cpu(), "no.such.key", &v), "no.such.key");
    ERR_STATUS(ct_memory_stat, (BAD_DEV, "num_ooms", &v), "Device index");
    ERR_STATUS(ct_memory_stats_foreach, (ct_device_cpu(), NULL, NULL), "memory_stats_foreach: NULL callback");
    ERR_STATUS(ct_memory_stats_foreach, (BAD_DEV, count_stat, NULL), "Device index");
    ERR_VAL(ct_memory_allocated, (BAD_DEV), r_ == 0, "Device index");
    ERR_VAL(ct_max_memory_allocated, (BAD_DEV), r_ == 0, "Device index");
    ERR_VAL(ct_memory_reserved, (BAD_DEV), r_ == 0, "Device index");
    ERR_VAL(ct_max_memory_reserved, (BAD_DEV), r_ == 0, "Device index");
    ERR_STATUS(ct_reset_peak_memory_stats, (BAD_DEV), "Device index");
    ERR_STATUS(ct_reset_accumulated_memory_stats, (BAD_DEV), "Device index");
    ERR_STATUS(ct_empty_cache, (BAD_DEV), "Device index");
    ERR_STATUS(ct_set_per_process_memory_fraction, (0.5, ct_device_cpu()),
               "set_per_process_memory_fraction: Expected a cuda or opencl device, but got: cpu");
    ERR_STATUS(ct_set_per_process_memory_fraction, (1.5, ct_device_cpu()), "Invalid fraction value: 1.5");
    ERR_STATUS(ct_set_per_process_memory_fraction, (NAN, ct_device_cpu()), "Invalid fraction value");
    ERR_STATUS(ct_set_per_process_memory_fraction, (0.5, BAD_DEV), "Device index");
    ERR_STATUS(ct_mem_get_info, (ct_device_cpu(), NULL, &tot), "mem_get_info: NULL argument");
    ERR_STATUS(ct_mem_get_info, (BAD_DEV, &fr, &tot), "Device index");
    ERR_VAL(ct_memory_summary, (BAD_DEV, false, buf, sizeof buf), r_ == -1, "Device index");
    ERR_VAL(ct_memory_summary, (ct_device_cpu(), false, NULL, 10), r_ == -1, "memory_summary: NULL argument");
    ERR_STATUS(ct_memory_snapshot, (ct_device_cpu(), NULL, &n), "memory_snapshot: NULL argument");
    ERR_STATUS(ct_memory_snapshot, (BAD_DEV, &segs, &n), "Device index");
    QUIET_VOID(ct_memory_snapshot_free, (NULL, 0));
    QUIET_VOID(ct_memory_snapshot_free, (NULL, 5));
    ERR_STATUS(ct_memory_record_history, (true, -1), "memory_record_history: max_entries must be >= 0");
    ERR_STATUS(ct_memory_dump_snapshot, (BAD_DEV, "/tmp/ct_snapshot.json"), "Device index");
    ERR_STATUS(ct_memory_dump_snapshot, (ct_device_cpu(), NULL), "memory_dump_snapshot: NULL path");
    ERR_STATUS(ct_memory_dump_snapshot, (ct_device_cpu(), "/tmp/ct_snapshot.json"),
               "Expected a cuda or opencl device, but got: cpu");
    PROP_PTR(ct_pin_memory, (NT));
    PROP_VAL(ct_is_pinned, (NT), !r_);
    ERR_STATUS(ct_host_memory_stats, (NULL), "host_memory_stats: NULL");
}

static ct_tensor *square_fn(ct_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    return ct_mul(in[0], in[0]);
}

static ct_status noop_hook(ct_tensor *leaf, void *user) { (void)leaf, (void)user; return CT_OK; }

static void rows_autograd_backends(void) {
    bool ok = false;
    PROP_STATUS(ct_register_post_accumulate_grad_hook, (NT, noop_hook, NULL),
                "register_post_accumulate_grad_hook: NULL tensor");
    ERR_STATUS(ct_register_post_accumulate_grad_hook, (F.t, NULL, NULL), "NULL hook");
    ERR_STATUS(ct_register_post_accumulate_grad_hook, (F.t, noop_hook, NULL), "doesn't require gradient");
    PROP_STATUS(ct_remove_post_accumulate_grad_hook, (NT, noop_hook, NULL),
                "remove_post_accumulate_grad_hook: NULL tensor");
    ERR_STATUS(ct_remove_post_accumulate_grad_hook, (F.t, noop_hook, NULL), "no such hook");
    PROP_STATUS(ct_set_requires_grad, (NT, true), "requires_grad_: NULL tensor");
    ERR_STATUS(ct_set_requires_grad, (F.idx, true), "only Tensors of floating point dtype can require gradients");
    PROP_VAL(ct_requires_grad, (NT), !r_);
    PROP_VAL(ct_is_leaf, (NT), !r_);
    PROP_VAL(ct_grad_fn_name, (NT), r_ == NULL);
    PROP_PTR(ct_grad, (NT));
    PROP_STATUS(ct_set_grad, (NT, F.t), "set_grad: NULL tensor");
    ERR_STATUS(ct_set_grad, (F.t, F.img), "grad");
    PROP_STATUS(ct_backward, (NT), "backward: NULL tensor");
    ERR_STATUS(ct_backward, (F.t), "element 0 of tensors does not require grad");
    PROP_STATUS(ct_backward_ex, (NT, NT, false), "backward: NULL tensor");
    ERR_STATUS(ct_backward_ex, (F.t, F.img, false), "does not require grad");
    ERR_STATUS(ct_gradcheck_opts_run, (NULL, &F.t, 1, NULL, (ct_gradcheck_opts){0}, &ok), "gradcheck: NULL");
    ERR_STATUS(ct_gradcheck_opts_run, (square_fn, NULL, 1, NULL, (ct_gradcheck_opts){0}, &ok), "gradcheck: NULL");
    ERR_STATUS(ct_gradcheck_opts_run, (square_fn, &F.t, -1, NULL, (ct_gradcheck_opts){0}, &ok), "gradcheck");
    ERR_STATUS(ct_gradcheck_opts_run, (square_fn, &F.t, 1, NULL, (ct_gradcheck_opts){0}, NULL), "gradcheck: NULL");
    ERR_STATUS(ct_set_float32_matmul_precision, (NULL), "set_float32_matmul_precision");
    ERR_STATUS(ct_set_float32_matmul_precision, ("fastest"), "set_float32_matmul_precision");
}

static void rows_functional(void) {
    ct_tensor *o = NULL, *ix = NULL;
    const ct_conv_opts none = CT_CONV_OPTS(), c_s1 = CT_CONV_OPTS(.stride = {1, 1});
    PROP_PTR(ct_conv2d_with_opts, (NT, F.img, NT, c_s1));
    /* options left out: PyTorch's defaults */
    QUIET_VAL(ct_conv2d_with_opts, (F.img, F.img, NT, none), r_ && (ct_release(r_), true));
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.stride = {0, 1})), "conv2d: non-positive stride");
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.padding = {-1, 1})), "conv2d: negative padding");
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.groups = -1)), "conv2d: non-positive groups");
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.stride = {INT64_MAX, 1})),
            "conv2d: stride value 9223372036854775807 cannot be converted");
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.padding = {INT64_MAX, 1})), "conv2d: padding value");
    ERR_PTR(ct_conv2d_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.dilation = {INT64_MAX, 1})), "conv2d: dilation value");
    ERR_PTR(ct_conv2d_with_opts, (F.t, F.img, NT, none), "conv2d");
    PROP_PTR(ct_conv2d_relu_with_opts, (NT, F.img, NT, none));
    PROP_PTR(ct_conv2d_relu_with_opts, (F.img, NT, NT, none));
    ERR_PTR(ct_conv2d_relu_with_opts, (F.img, F.img, NT, CT_CONV_OPTS(.stride = {0, 1})), "conv2d_relu");
    ERR_PTR(ct_conv2d_relu_with_opts, (F.t, F.img, NT, none), "conv2d_relu");
    const ct_pool_opts pool = CT_POOL_OPTS();
    PROP_PTR(ct_max_pool2d_opts, (NT, k2, pool));
    ERR_PTR(ct_max_pool2d_opts, (F.img, NULL, pool), "max_pool2d: kernel_size must be given");
    ERR_PTR(ct_max_pool2d_opts, (F.img, k0, pool), "max_pool2d");
    ERR_PTR(ct_max_pool2d_opts, (F.img, k2, CT_POOL_OPTS(.padding = {5, 5})), "max_pool2d");
    ERR_PTR(ct_max_pool2d_opts, (F.img, kbig, CT_POOL_OPTS(.ceil_mode = true)),
            "max_pool2d: kernel_size value 9223372036854775807");
    ERR_PTR(ct_max_pool2d_opts, (F.img, k2, CT_POOL_OPTS(.stride = {INT64_MAX, 1})), "max_pool2d: stride value");
    ERR_PTR(ct_max_pool2d_opts, (F.img, k2, CT_POOL_OPTS(.no_count_include_pad = true)),
            "max_pool2d() got an unexpected keyword argument 'count_include_pad'");
    ERR_PTR(ct_max_pool2d_opts, (F.img, k2, CT_POOL_OPTS(.divisor_override = 2)),
            "max_pool2d() got an unexpected keyword argument 'divisor_override'");
    PROP_STATUS(ct_max_pool2d_with_indices_opts, (NT, k2, &o, &ix, pool), "max_pool2d:");
    QUIET_VAL(ct_max_pool2d_with_indices_opts, (F.img, k2, NULL, &ix, pool), r_ == CT_OK && (ct_release(ix), true));
    ERR_STATUS(ct_max_pool2d_with_indices_opts, (F.img, NULL, &o, &ix, pool), "max_pool2d: kernel_size must be given");
    ERR_STATUS(ct_max_pool2d_with_indices_opts, (F.img, k2, &o, &ix, CT_POOL_OPTS(.divisor_override = 2)),
               "max_pool2d() got an unexpected keyword argument 'divisor_override'");
    PROP_PTR(ct_avg_pool2d_opts, (NT, k2, pool));
    ERR_PTR(ct_avg_pool2d_opts, (F.img, NULL, pool), "avg_pool2d: kernel_size must be given");
    ERR_PTR(ct_avg_pool2d_opts, (F.img, kneg, pool), "avg_pool2d");
    ERR_PTR(ct_avg_pool2d_opts, (F.img, kbig, CT_POOL_OPTS(.stride = {1, 1}, .ceil_mode = true)),
            "avg_pool2d: kernel_size value");
    ERR_PTR(ct_avg_pool2d_opts, (F.img, k2, CT_POOL_OPTS(.dilation = {2, 2})),
            "avg_pool2d() got an unexpected keyword argument 'dilation'");
    PROP_PTR(ct_adaptive_avg_pool2d, (NT, k2));
    ERR_PTR(ct_adaptive_avg_pool2d, (F.img, NULL), "adaptive_avg_pool2d: output_size must be given");
    QUIET_VAL(ct_adaptive_avg_pool2d, (F.img, kneg), r_ && (ct_release(r_), true)); /* negative: keep the size */
    const ct_norm_opts norm = CT_NORM_OPTS();
    PROP_PTR(ct_batch_norm_opts, (NT, NT, NT, NT, NT, CT_NORM_OPTS(.training = true)));
    ERR_PTR(ct_batch_norm_opts, (F.t, F.t, F.t, NT, NT, norm), "batch_norm");
    PROP_PTR(ct_layer_norm_opts, (NT, CT_SHAPE(3), NT, NT, norm));
    ERR_PTR(ct_layer_norm_opts, (F.t, CT_SHAPE(4), NT, NT, norm), "layer_norm");
    ERR_PTR(ct_layer_norm_opts, (F.t, ((ct_shape){.ndim = 9}), NT, NT, norm),
            "layer_norm: normalized_shape has 9 dimensions");
    ERR_PTR(ct_layer_norm_opts, (F.t, CT_SHAPE(3), NT, NT, CT_NORM_OPTS(.training = true)),
            "layer_norm() got an unexpected keyword argument 'training'");
    ERR_PTR(ct_layer_norm_opts, (F.t, CT_SHAPE(3), NT, NT, CT_NORM_OPTS(.momentum = 0.5)),
            "layer_norm() got an unexpected keyword argument 'momentum'");
    PROP_PTR(ct_dropout, (NT, 0.5, true));
    ERR_PTR(ct_dropout, (F.t, 1.5, true), "dropout probability has to be between 0 and 1");
    ERR_PTR(ct_dropout, (F.t, NAN, true), "dropout probability");
    PROP_PTR(ct_embedding, (F.idx, NT, -1));
    ERR_PTR(ct_embedding, (F.bad_idx, F.t, -1), "embedding");
    ERR_PTR(ct_embedding, (F.t, F.t, -1), "embedding");
    const ct_loss_opts mean = CT_LOSS_OPTS();
    PROP_PTR(ct_mse_loss_opts, (NT, F.t, mean));
    ERR_PTR(ct_mse_loss_opts, (F.t, F.img, mean), "mse_loss");
    ERR_PTR(ct_mse_loss_opts, (F.t, F.t, CT_LOSS_OPTS(.reduction = (ct_reduction)9)), "reduction");
    ERR_PTR(ct_mse_loss_opts, (F.t, F.t, CT_LOSS_OPTS(.weight = F.t)),
            "mse_loss() got an unexpected keyword argument 'weight'");
    PROP_PTR(ct_cross_entropy_opts, (F.t, NT, mean));
    ERR_PTR(ct_cross_entropy_opts, (F.t, F.bad_label, mean), "cross_entropy");
    ERR_PTR(ct_cross_entropy_opts, (F.t, F.idx, CT_LOSS_OPTS(.label_smoothing = 2.0)), "label_smoothing");
    ERR_PTR(ct_cross_entropy_opts, (F.t, F.idx, CT_LOSS_OPTS(.reduction = (ct_reduction)9)), "reduction");
    ERR_PTR(ct_cross_entropy_opts, (F.t, F.idx, CT_LOSS_OPTS(.pos_weight = F.one)),
            "cross_entropy() got an unexpected keyword argument 'pos_weight'");
    PROP_PTR(ct_nll_loss_opts, (NT, F.idx, mean));
    ERR_PTR(ct_nll_loss_opts, (F.t, F.bad_label, mean), "nll_loss");
    ERR_PTR(ct_nll_loss_opts, (F.t, F.idx, CT_LOSS_OPTS(.label_smoothing = 0.1)),
            "nll_loss() got an unexpected keyword argument 'label_smoothing'");
    PROP_PTR(ct_binary_cross_entropy_with_logits_opts, (F.t, NT, mean));
    ERR_PTR(ct_binary_cross_entropy_with_logits_opts, (F.t, F.img, mean), "binary_cross_entropy");
    ERR_PTR(ct_binary_cross_entropy_with_logits_opts, (F.t, F.t, CT_LOSS_OPTS(.ignore_index = 0, .has_ignore_index = true)),
            "binary_cross_entropy_with_logits() got an unexpected keyword argument 'ignore_index'");
}

/* No process group is initialized here (test_dist.c covers a live one):
 * every collective refuses with PyTorch's message. */
static void rows_distributed(void) {
    const char *no_group = "Default process group has not been initialized";
    ERR_STATUS(ct_dist_init_process_group, ((ct_dist_opts){.backend = "gloo"}), "backend 'gloo' is not available");
    ERR_STATUS(ct_dist_init_process_group, ((ct_dist_opts){.timeout_s = -1}), "timeout must be >= 0 seconds");
    ERR_STATUS(ct_dist_destroy_process_group, (), no_group);
    ERR_STATUS(ct_dist_all_reduce, (F.t, CT_DIST_SUM), no_group);
    ERR_STATUS(ct_dist_broadcast, (F.t, 0), no_group);
    ERR_STATUS(ct_dist_all_gather, (F.t, F.t), no_group);
    ERR_STATUS(ct_dist_reduce_scatter, (F.t, F.t, CT_DIST_SUM), no_group);
    ERR_STATUS(ct_dist_barrier, (), no_group);
    ERR_PTR(ct_dist_all_reduce_async, (F.t, CT_DIST_SUM), no_group);
    ERR_PTR(ct_dist_broadcast_async, (F.t, 0), no_group);
    ERR_PTR(ct_dist_all_gather_async, (F.t, F.t), no_group);
    ERR_PTR(ct_dist_reduce_scatter_async, (F.t, F.t, CT_DIST_SUM), no_group);
    QUIET_VAL(ct_work_is_completed, (NULL), !r_);
    ERR_STATUS(ct_work_wait, (NULL), "work.wait: NULL work");
    QUIET_VOID(ct_work_free, (NULL));
    PROP_PTR_SAYS(ct_ddp_new, (NM, (ct_ddp_opts){0}), "DistributedDataParallel: NULL module");
    ERR_PTR(ct_ddp_new, (F.m, (ct_ddp_opts){0}), no_group);
    ERR_PTR(ct_ddp_new, (F.m, (ct_ddp_opts){.bucket_cap_mb = -1}), "bucket_cap_mb must be >= 0");
    PROP_PTR_SAYS(ct_ddp_forward, (NULL, F.t), "DistributedDataParallel.forward: NULL wrapper");
    QUIET_VAL(ct_ddp_module, (NULL), r_ == NULL);
    QUIET_VOID(ct_ddp_set_require_sync, (NULL, false));
    PROP_STATUS(ct_ddp_get_stats, (NULL, &(ct_ddp_stats){0}), "DistributedDataParallel: NULL wrapper");
    QUIET_VOID(ct_ddp_free, (NULL));
    const ct_device two_cpus[2] = {ct_device_cpu(), ct_device_cpu()};
    PROP_PTR_SAYS(ct_data_parallel_new, (NM, two_cpus, 2, two_cpus[0]), "DataParallel: NULL module");
    ERR_PTR(ct_data_parallel_new, (F.m, NULL, 2, two_cpus[0]), "needs 1 to 16 devices, got 0");
    ERR_PTR(ct_data_parallel_new, (F.m, two_cpus, 17, two_cpus[0]), "needs 1 to 16 devices, got 17");
    PROP_PTR_SAYS(ct_data_parallel_forward, (NULL, F.t), "DataParallel.forward: NULL wrapper");
    QUIET_VOID(ct_data_parallel_free, (NULL));
}

/* The profiler is off here; test_profiler.c runs it. */
static void rows_profiler(void) {
    ERR_STATUS(ct_profiler_stop, (), "no profiling run to stop");
    ERR_STATUS(ct_profiler_export_chrome_trace, (NULL), "export_chrome_trace: NULL path");
    ERR_STATUS(ct_profiler_export_chrome_trace, ("/nonexistent-dir/t.json"), "cannot write /nonexistent-dir/t.json");
    ERR_STATUS(ct_profiler_print_table, (NULL, NULL, 0), "key_averages().table: NULL stream");
    ERR_STATUS(ct_profiler_print_table, (stdout, "flops", 0), "unknown sort_by 'flops'");
}

/* ctorch/extension.h and custom autograd functions; test_custom_kernel.c
 * runs them on devices. */
static void rows_extension(void) {
    ct_native_buffer nb;
    ct_native_device nd;
    ERR_PTR(ct_kernel_compile, (ct_device_cpu(), "K_KERNEL f() {}", "f", NULL), "the cpu device has no kernel compiler");
    ERR_PTR(ct_kernel_compile, (ct_device_cpu(), NULL, "f", NULL), "kernel_compile: NULL source");
    ERR_PTR(ct_kernel_compile, (ct_device_cpu(), "x", NULL, NULL), "kernel_compile: NULL kernel name");
    ERR_PTR(ct_kernel_compile, (BAD_DEV, "x", "f", NULL), "Device index");
    PROP_STATUS(ct_kernel_launch, (NULL, 1, 0, NULL, 0), "kernel_launch: NULL kernel");
    QUIET_VOID(ct_kernel_free, (NULL));
    QUIET_VAL(ct_kernel_device, (NULL), r_.type == CT_DEVICE_CPU);
    QUIET_VAL(ct_kernel_dialect_source, (), r_ != NULL && r_[0] != '\0');
    PROP_STATUS(ct_tensor_native_buffer, (NT, &nb), "tensor_native_buffer: NULL tensor");
    ERR_STATUS(ct_tensor_native_buffer, (F.t, NULL), "tensor_native_buffer: NULL output");
    QUIET_VAL(ct_stream_native_handle, (NULL), r_ == NULL);
    ERR_STATUS(ct_device_native_handles, (BAD_DEV, &nd), "Device index");
    ERR_STATUS(ct_device_native_handles, (ct_device_cpu(), NULL), "device_native_handles: NULL output");
    ERR_PTR(ct_function_apply, (NULL, &F.t, 1, NULL), "function_apply: NULL function");
    ERR_STATUS(ct_ctx_save_for_backward, (NULL, F.t), "ctx_save_for_backward: NULL context");
    ERR_PTR(ct_ctx_saved_tensor, (NULL, 0), "ctx_saved_tensor: NULL context");
    QUIET_VAL(ct_ctx_needs_input_grad, (NULL, 0), !r_);
    QUIET_VAL(ct_ctx_user, (NULL), r_ == NULL);
}

static void rows_runtime(void) {
    rows_extension();
    rows_profiler();
    rows_distributed();
    rows_streams();
    rows_memory();
    rows_autograd_backends();
    rows_functional();
}
