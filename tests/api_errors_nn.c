/*
 * api_errors_nn.c — rows of test_api_errors.c for nn.h and optim.h
 * (included into test_api_errors.c). A NULL module or optimizer is what a
 * failed constructor returns, so calls on it fail and keep that error.
 */

static ct_tensor *echo_forward(ct_module *self, const ct_tensor *x) {
    (void)self;
    return ct_clone(x);
}

static ct_tensor *silent_forward(ct_module *self, const ct_tensor *x) {
    (void)self, (void)x;
    return NULL;
}

/* One MSELoss per row's child process, for ct_loss's rows (held here, so
 * not a leak). */
static ct_module *g_mse_criterion;
static ct_module *mse_criterion(void) {
    if (!g_mse_criterion) g_mse_criterion = ct_nn_mse_loss();
    return g_mse_criterion;
}

/* A module with private state and no state clone function, for
 * ct_module_clone's row (held here, so not a leak; the state is static). */
static ct_module *g_stateful;
static ct_module *stateful_module(void) {
    static int state;
    if (!g_stateful) g_stateful = ct_module_new("Stateful", echo_forward, &state, NULL);
    return g_stateful;
}

static void rows_modules(void) {
    ct_tensor *params[4];
    const char *names[4];
    PROP_PTR(ct_forward, (NM, F.t));
    PROP_PTR(ct_forward, (F.m, NT));
    PROP_PTR(ct_forward_relu, (NM, F.t));
    PROP_PTR(ct_forward_relu, (F.m, NT));
    ERR_PTR(ct_forward_relu, (F.m, F.img), "linear");
    ERR_PTR(ct_forward, (F.m, F.img), "linear");
    ERR_PTR(ct_forward, (F.silent, F.t), "Silent: forward returned NULL without setting an error");
    ERR_PTR(ct_forward, (F.silent, (ct_set_error(CT_ERR_STATE, "stale"), F.t)), "Silent: forward returned NULL");
    QUIET_VOID(ct_module_free, (NM));
    PROP_PTR_SAYS(ct_module_to, (NM, ct_device_cpu()), "module.to: NULL module");
    ERR_PTR(ct_module_to, (F.m, BAD_DEV), "Device index");
    PROP_STATUS(ct_module_to_checked, (NM, ct_device_cpu()), "module.to: NULL module");
    PROP_STATUS(ct_module_to_checked, (NM, BAD_DEV), "module.to: NULL module"); /* the object first */
    ERR_STATUS(ct_module_to_checked, (F.m, BAD_DEV), "Device index");
    PROP_PTR_SAYS(ct_module_clone, (NM, ct_device_cpu()), "module_clone: NULL module");
    PROP_PTR_SAYS(ct_module_clone, (NM, BAD_DEV), "module_clone: NULL module"); /* the object first */
    ERR_PTR(ct_module_clone, (F.m, BAD_DEV), "Device index");
    ERR_PTR(ct_module_clone, (stateful_module(), ct_device_cpu()),
            "module_clone: Stateful has private state that ctorch cannot copy; give it a state clone function "
            "with ct_module_set_state_clone(module, fn)");
    QUIET_VAL(ct_module_clone, (F.seq, ct_device_cpu()), r_ && (ct_module_free(r_), true));
    PROP_STATUS(ct_module_set_state_clone, (NM, NULL), "module_set_state_clone: NULL module");
    PROP_VOID(ct_module_train, (NM, true));
    PROP_VAL(ct_module_is_training, (NM), !r_);
    PROP_VAL(ct_module_type, (NM), r_ == NULL);
    PROP_VAL(ct_module_parameters, (NM, params, names, 4), r_ == -1);
    ERR_VAL(ct_module_parameters, (F.m, params, names, -1), r_ == -1, "module_parameters: max must be non-negative");
    QUIET_VAL(ct_module_parameters, (F.m, NULL, NULL, 4), r_ == 2); /* counting only */
    PROP_VAL(ct_module_buffers, (NM, params, names, 4), r_ == -1);
    ERR_VAL(ct_module_buffers, (F.m, params, names, -1), r_ == -1, "module_buffers: max must be non-negative");
    PROP_VAL(ct_module_num_parameters, (NM), r_ == 0);
    PROP_PTR(ct_module_get, (NM, "weight"));
    ERR_PTR(ct_module_get, (F.m, NULL), "module_get: NULL name");
    QUIET_VAL(ct_module_get, (F.m, "nope"), r_ == NULL); /* absent: NULL, no error */
    PROP_PTR(ct_module_child, (NM, "0"));
    ERR_PTR(ct_module_child, (F.m, NULL), "module_child: NULL name");
    PROP_STATUS(ct_module_print, (NM), "module print: NULL module");
    QUIET_VAL(ct_module_new, (NULL, echo_forward, NULL, NULL), (ct_module_free(r_), true)); /* type "Module" */
    PROP_PTR(ct_module_state, (NM));
    /* registration takes the reference it is given, also when it fails */
    PROP_STATUS(ct_module_add_parameter, (NM, "w", NT), "register_parameter:");
    PROP_STATUS(ct_module_add_parameter, (NM, "w", ct_ones(CT_SHAPE(2))), "register_parameter: NULL module");
    PROP_STATUS(ct_module_add_parameter, (F.m, "w", NT), "register_parameter:");
    ERR_STATUS(ct_module_add_parameter, (F.m, NULL, ct_ones(CT_SHAPE(2))), "register_parameter: name can't be empty");
    ERR_STATUS(ct_module_add_parameter, (F.m, "a.b", ct_ones(CT_SHAPE(2))), "a.b");
    ERR_STATUS(ct_module_add_parameter, (F.m, "weight", ct_ones(CT_SHAPE(2))), "attribute 'weight' already exists");
    ERR_STATUS(ct_module_add_parameter, (F.m, "w", ct_ones(CT_SHAPE(2), .dtype = CT_INT64)),
               "must be floating point");
    PROP_STATUS(ct_module_add_buffer, (NM, "b", NT), "register_buffer:");
    PROP_STATUS(ct_module_add_buffer, (NM, "b", ct_ones(CT_SHAPE(2))), "register_buffer: NULL module");
    ERR_STATUS(ct_module_add_buffer, (F.m, NULL, ct_ones(CT_SHAPE(2))), "register_buffer: name can't be empty");
    PROP_STATUS(ct_module_add_child, (NM, "c", NM), "add_module:");
    PROP_STATUS(ct_module_add_child, (NM, "c", ct_nn_relu()), "add_module: NULL argument");
    PROP_STATUS(ct_module_add_child, (F.m, "c", NM), "add_module:");
    ERR_STATUS(ct_module_add_child, (F.m, NULL, ct_nn_relu()), "add_module: name can't be empty");
    PROP_PTR(ct_module_param, (NM, "weight"));
    ERR_PTR(ct_module_param, (F.m, NULL), "module_param: NULL name");
    QUIET_VAL(ct_module_param, (F.m, "nope"), r_ == NULL);
    PROP_PTR(ct_module_buffer, (NM, "b"));
    ERR_PTR(ct_module_buffer, (F.m, NULL), "module_buffer: NULL name");
    PROP_VAL(ct_module_num_children, (NM), r_ == 0);
    PROP_PTR(ct_module_child_at, (NM, 0));
    ERR_PTR(ct_module_child_at, (F.m, 5), "module_child_at: index 5 is out of range for Linear with 0 children");
    ERR_PTR(ct_module_child_at, (F.seq, -1), "module_child_at: index -1 is out of range");
    PROP_PTR(ct_linear, (F.t, NT, NT));
    ERR_PTR(ct_linear, (F.t, F.img, NT), "linear");
    ERR_PTR(ct_nn_linear, (-1, 2, true), "Linear");
    ERR_PTR(ct_nn_linear, (3, -2, true), "Linear");
    QUIET_VAL(ct_nn_flatten, (1, 9), (ct_module_free(r_), true)); /* dims are checked when it runs */
    ERR_PTR(ct_nn_sequential, (NULL, 2),
            "Sequential: expected n >= 0 modules in a non-NULL array, got n = 2 and a NULL array");
    ERR_PTR(ct_nn_sequential, (((ct_module *[]){NULL}), -1), "Sequential: expected n >= 0 modules");
    PROP_PTR(ct_nn_sequential, (((ct_module *[]){ct_nn_relu(), NM}), 2));
    PROP_STATUS(ct_sequential_append, (NM, ct_nn_relu()), "add_module:");
    PROP_STATUS(ct_sequential_append, (F.seq, NM), "add_module:");
    ERR_STATUS(ct_sequential_append, (F.m, ct_nn_relu()),
               "Sequential.append: the module is a Linear, not a Sequential");
    ERR_PTR(ct_nn_conv2d, (0, 2, 3, (ct_conv2d_opts){0}), "Conv2d");
    ERR_PTR(ct_nn_conv2d, (2, 2, -3, (ct_conv2d_opts){0}), "Conv2d");
    ERR_PTR(ct_nn_conv2d, (3, 2, 3, (ct_conv2d_opts){.groups = 2}), "Conv2d");
    ERR_PTR(ct_nn_batchnorm1d, (-1, (ct_batchnorm_opts){0}), "BatchNorm1d");
    ERR_PTR(ct_nn_batchnorm2d, (0, (ct_batchnorm_opts){0}), "BatchNorm2d");
    ERR_PTR(ct_nn_layernorm, (((ct_shape){.ndim = 9}), 1e-5), "LayerNorm: tensors have at most 8 dimensions");
    ERR_PTR(ct_nn_layernorm, (CT_SHAPE(-2), 1e-5), "LayerNorm: Trying to create tensor with negative dimension");
    ERR_PTR(ct_nn_layernorm, (((ct_shape){.ndim = 0}), 1e-5),
            "LayerNorm: normalized_shape must have at least one dimension");
    ERR_PTR(ct_nn_embedding, (-1, 2, -1), "Embedding: num_embeddings and embedding_dim must be non-negative");
    ERR_PTR(ct_nn_embedding, (4, 2, 7), "Embedding: Padding_idx must be within num_embeddings");
    ERR_PTR(ct_nn_dropout, (1.5), "dropout probability has to be between 0 and 1");
    ERR_PTR(ct_nn_maxpool2d, (0, 0, 0), "MaxPool2d: kernel_size should be greater than zero");
    ERR_PTR(ct_nn_maxpool2d, (2, 2, 5), "MaxPool2d: pad should be at least zero and at most half");
    ERR_PTR(ct_nn_maxpool2d, (2, -2, 0), "MaxPool2d: stride should be greater than zero");
    ERR_PTR(ct_nn_avgpool2d, (-1, 0, 0), "AvgPool2d: kernel_size should be greater than zero");
    QUIET_VAL(ct_nn_adaptive_avgpool2d, (-1, 1), (ct_module_free(r_), true)); /* negative: keep the size */
    /* criterions: options checked when made, as the functional losses check them */
    ERR_PTR(ct_nn_mse_loss_opts, (CT_LOSS_OPTS(.weight = F.t)), "MSELoss() got an unexpected keyword argument 'weight'");
    ERR_PTR(ct_nn_mse_loss_opts, (CT_LOSS_OPTS(.reduction = (ct_reduction)9)),
            "MSELoss: 9 is not a valid value for reduction");
    ERR_PTR(ct_nn_cross_entropy_loss_opts, (CT_LOSS_OPTS(.label_smoothing = 1.5)),
            "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0. Got: 1.5");
    ERR_PTR(ct_nn_cross_entropy_loss_opts, (CT_LOSS_OPTS(.pos_weight = F.one)),
            "CrossEntropyLoss() got an unexpected keyword argument 'pos_weight'");
    ERR_PTR(ct_nn_nll_loss_opts, (CT_LOSS_OPTS(.label_smoothing = 0.1)),
            "NLLLoss() got an unexpected keyword argument 'label_smoothing'");
    ERR_PTR(ct_nn_bce_with_logits_loss_opts, (CT_LOSS_OPTS(.ignore_index = 3)),
            "BCEWithLogitsLoss() got an unexpected keyword argument 'ignore_index'");
    QUIET_VAL(ct_nn_bce_with_logits_loss_opts, (CT_LOSS_OPTS(.weight = F.one, .pos_weight = F.one)),
              r_ && ct_module_buffer(r_, "pos_weight") && (ct_module_free(r_), true));
    PROP_PTR(ct_loss, (NM, F.t, F.t));
    PROP_PTR(ct_loss, (mse_criterion(), NT, F.t));
    PROP_PTR(ct_loss, (mse_criterion(), F.t, NT));
    ERR_PTR(ct_loss, (F.m, F.t, F.t), "loss: Linear is not a criterion");
    ERR_PTR(ct_loss, (mse_criterion(), F.t, F.img), "mse_loss");
    PROP_PTR_SAYS(ct_module_state_dict, (NM), "state_dict: NULL module");
    PROP_STATUS(ct_module_load_state_dict, (NM, F.dict, true), "load_state_dict: NULL argument");
    PROP_STATUS(ct_module_load_state_dict, (F.m, NULL, true), "load_state_dict: NULL argument");
    ERR_STATUS(ct_module_load_state_dict, (F.m, F.dict, true), "Error(s) in loading state_dict for Linear");
    PROP_STATUS(ct_module_save, (NM, api_path("x.safetensors")), "state_dict: NULL module");
    ERR_STATUS(ct_module_save, (F.m, NULL), "NULL");
    PROP_STATUS(ct_module_load, (NM, api_path("x.safetensors"), true), "load: NULL argument");
    PROP_STATUS(ct_module_load, (NM, NULL, true), "load: NULL argument"); /* the object first */
    ERR_STATUS(ct_module_load, (F.m, NULL, true), "load: NULL argument");
    ERR_STATUS(ct_module_load, (F.m, api_path("file/x.safetensors"), true), "file/x.safetensors");
    ERR_PTR(ct_model_mlp, (4, NULL, 2, 3), "mlp: expected n_hidden >= 0 hidden sizes in a non-NULL array");
    ERR_PTR(ct_model_mlp, (-4, NULL, 0, 3), "Linear");
    ERR_PTR(ct_model_mlp, (4, ((int64_t[]){8}), -1, 3), "mlp: expected n_hidden >= 0");
    ERR_PTR(ct_model_resnet18, (0), "Linear: in_features and out_features must be positive, got 512 and 0");
    /* fusion (tests/test_fuse.c has the cases that need a conv and a bn) */
    PROP_PTR_SAYS(ct_fuse_conv_bn_eval, (NM, F.m), "fuse_conv_bn_eval: NULL conv");
    PROP_PTR_SAYS(ct_fuse_conv_bn_eval, (F.m, NM), "fuse_conv_bn_eval: NULL bn");
    ERR_PTR(ct_fuse_conv_bn_eval, (F.m, F.seq), "fuse_conv_bn_eval: conv must be a Conv2d (ct_nn_conv2d), got Linear");
    PROP_STATUS(ct_module_fuse_conv_bn, (NM, "0", "1"), "fuse_conv_bn: NULL module");
    ERR_STATUS(ct_module_fuse_conv_bn, (F.seq, NULL, "0"), "fuse_conv_bn: NULL conv_name");
    ERR_STATUS(ct_module_fuse_conv_bn, (F.seq, "0", NULL), "fuse_conv_bn: NULL bn_name");
    ERR_STATUS(ct_module_fuse_conv_bn, (F.seq, "0", "1"),
               "fuse_conv_bn: bn_name \"1\" names no submodule of Sequential (it has no child \"1\")");
    ERR_STATUS(ct_module_fuse_conv_bn, (F.seq, "0", "0"), "fuse_conv_bn: 0 must be a Conv2d (ct_nn_conv2d), got ReLU");
    PROP_VAL_SAYS(ct_module_fuse_conv_bn_all, (NM), r_ == -1, "fuse_conv_bn_all: NULL module");
    QUIET_VAL(ct_module_fuse_conv_bn_all, (F.seq), r_ == 0); /* no pair: nothing to do */
    /* dynamic quantization (tests/test_quantize.c has the rest) */
    PROP_PTR_SAYS(ct_quantize_dynamic, (NM, false), "quantize_dynamic: NULL model");
    ERR_PTR(ct_quantize_dynamic, (F.m, true), "bare Linear, which cannot be replaced in place");
    PROP_PTR_SAYS(ct_nnqd_linear_from_float, (NM), "nnqd.Linear.from_float: NULL module");
    ERR_PTR(ct_nnqd_linear_from_float, (F.seq), "expected a Linear (ct_nn_linear), got Sequential");
    PROP_PTR_SAYS(ct_int_mm, (NT, F.t), "_int_mm: NULL self");
    PROP_PTR_SAYS(ct_int_mm, (F.t, NT), "_int_mm: NULL mat2");
    ERR_PTR(ct_int_mm, (F.t, F.t), "_int_mm: expected self and mat2 to be int8, got float32 and float32");
    PROP_PTR_SAYS(ct_quantized_linear_dynamic, (NT, F.t, F.one, NT), "quantized::linear_dynamic: NULL input");
    ERR_PTR(ct_quantized_linear_dynamic, (F.t, F.t, F.one, NT), "expected a 2-D int8 weight, got 2-D float32");
    PROP_STATUS(ct_quantize_weight_int8, (NT, &(ct_tensor *){NULL}, &(ct_tensor *){NULL}), "quantize_weight_int8: NULL weight");
    ERR_STATUS(ct_quantize_weight_int8, (F.t, NULL, &(ct_tensor *){NULL}), "quantize_weight_int8: NULL q");
    ERR_STATUS(ct_quantize_weight_int8, (F.one, &(ct_tensor *){NULL}, &(ct_tensor *){NULL}), "expected a 2-D weight");
    /* pruning (tests/test_prune.c has the cases that need a pruned module) */
    PROP_STATUS(ct_prune_l1_unstructured, (NM, "weight", 0.5), "prune.l1_unstructured: NULL module");
    ERR_STATUS(ct_prune_l1_unstructured, (F.m, NULL, 0.5), "prune.l1_unstructured: NULL name");
    ERR_STATUS(ct_prune_l1_unstructured, (F.m, "wieght", 0.5), "prune.l1_unstructured: Linear has no parameter named 'wieght'");
    ERR_STATUS(ct_prune_l1_unstructured, (F.m, "weight", 1.5), "amount=1.5 should either be a float in the range [0, 1]");
    PROP_STATUS(ct_prune_l1_unstructured_n, (NM, "weight", 1), "prune.l1_unstructured: NULL module");
    ERR_STATUS(ct_prune_l1_unstructured_n, (F.m, "weight", -1), "amount=-1 should either be a float");
    ERR_STATUS(ct_prune_l1_unstructured_n, (F.m, "weight", 7), "amount=7 should be smaller than the number of parameters to prune=6");
    PROP_STATUS(ct_prune_random_unstructured, (NM, "weight", 0.5), "prune.random_unstructured: NULL module");
    ERR_STATUS(ct_prune_random_unstructured, (F.m, "weight", NAN), "prune.random_unstructured: amount=nan");
    ERR_STATUS(ct_prune_random_unstructured, (F.m, "bais", 0.5), "Linear has no parameter named 'bais'");
    PROP_STATUS(ct_prune_random_unstructured_n, (NM, "weight", 1), "prune.random_unstructured: NULL module");
    ERR_STATUS(ct_prune_random_unstructured_n, (F.m, "bias", 3), "amount=3 should be smaller than the number of parameters to prune=2");
    PROP_STATUS(ct_prune_custom_from_mask, (NM, "weight", F.t), "prune.custom_from_mask: NULL module");
    PROP_STATUS(ct_prune_custom_from_mask, (F.m, "weight", NT), "prune.custom_from_mask: NULL mask");
    ERR_STATUS(ct_prune_custom_from_mask, (F.m, NULL, F.t), "prune.custom_from_mask: NULL name");
    ERR_STATUS(ct_prune_custom_from_mask, (F.m, "weight", F.one), "mask has shape [1] but weight of Linear has shape [2, 3]");
    ERR_STATUS(ct_prune_global_unstructured, (NULL, 1, CT_PRUNE_L1, 0.5), "prune.global_unstructured: expected n >= 0");
    ERR_STATUS(ct_prune_global_unstructured, (((ct_prune_target[]){{F.m, "weight"}}), -1, CT_PRUNE_L1, 0.5), "got n = -1");
    ERR_STATUS(ct_prune_global_unstructured, (((ct_prune_target[]){{NM, "weight"}}), 1, CT_PRUNE_L1, 0.5),
               "prune.global_unstructured: NULL module");
    ERR_STATUS(ct_prune_global_unstructured, (((ct_prune_target[]){{F.m, "weight"}}), 1, CT_PRUNE_L1, 2.0), "amount=2");
    ERR_STATUS(ct_prune_global_unstructured, (((ct_prune_target[]){{F.m, "weight"}}), 1, (ct_prune_method)9, 0.5),
               "unknown pruning method 9");
    ERR_STATUS(ct_prune_global_unstructured_n, (NULL, 1, CT_PRUNE_L1, 1), "prune.global_unstructured: expected n >= 0");
    ERR_STATUS(ct_prune_global_unstructured_n, (((ct_prune_target[]){{F.m, "weight"}, {F.m, "bias"}}), 2, CT_PRUNE_RANDOM, 9),
               "amount=9 should be smaller than the number of parameters to prune=8");
    PROP_STATUS(ct_prune_remove, (NM, "weight"), "prune.remove: NULL module");
    ERR_STATUS(ct_prune_remove, (F.m, NULL), "prune.remove: NULL name");
    ERR_STATUS(ct_prune_remove, (F.m, "weight"), "Parameter 'weight' of module Linear has to be pruned before pruning can be removed");
    PROP_VAL_SAYS(ct_prune_is_pruned, (NM), !r_, "prune.is_pruned: NULL module");
    QUIET_VAL(ct_prune_is_pruned, (F.seq), !r_);
}

static void rows_optim(void) {
    double norm;
    PROP_PTR_SAYS(ct_sgd, (NM, (ct_sgd_opts){.lr = 0.1}), "optimizer: NULL module");
    PROP_PTR_SAYS(ct_sgd, (NM, (ct_sgd_opts){.lr = -1}), "optimizer: NULL module"); /* the object first */
    ERR_PTR(ct_sgd, (F.m, (ct_sgd_opts){.lr = -1}), "Invalid learning rate");
    ERR_PTR(ct_sgd, (F.m, (ct_sgd_opts){.lr = 0.1, .momentum = -1}), "Invalid momentum value");
    PROP_PTR_SAYS(ct_adam, (NM, (ct_adam_opts){0}), "optimizer: NULL module");
    ERR_PTR(ct_adam, (F.m, (ct_adam_opts){.beta1 = 1.5}), "Invalid beta parameter at index 0");
    PROP_PTR_SAYS(ct_adamw, (NM, (ct_adam_opts){0}), "optimizer: NULL module");
    ERR_PTR(ct_adamw, (F.m, (ct_adam_opts){.eps = -1}), "Invalid epsilon value");
    ERR_PTR(ct_sgd_params, (NULL, 2, (ct_sgd_opts){.lr = 0.1}), "optimizer: NULL parameter list");
    ERR_PTR(ct_sgd_params, (&F.t, -1, (ct_sgd_opts){.lr = 0.1}), "optimizer");
    PROP_PTR_SAYS(ct_sgd_params, (((ct_tensor *[]){NT}), 1, (ct_sgd_opts){.lr = 0.1}), "optimizer: parameter 0 is NULL");
    ERR_PTR(ct_adam_params, (NULL, 1, (ct_adam_opts){0}), "optimizer: NULL parameter list");
    ERR_PTR(ct_adam_params, (&F.idx, 1, (ct_adam_opts){0}), "only floating-point parameters can be optimized");
    ERR_PTR(ct_adamw_params, (NULL, 1, (ct_adam_opts){0}), "optimizer: NULL parameter list");
    QUIET_VOID(ct_optimizer_free, (NULL));

    /* the gradient scaler (amp.h) */
    ERR_PTR(ct_grad_scaler_new_opts, ((ct_grad_scaler_opts){.growth_factor = 0.5}), "The growth factor must be > 1.0.");
    ERR_PTR(ct_grad_scaler_new_opts, ((ct_grad_scaler_opts){.backoff_factor = 2}), "The backoff factor must be < 1.0.");
    ERR_PTR(ct_grad_scaler_new_opts, ((ct_grad_scaler_opts){.init_scale = -1}), "init_scale must be positive");
    ERR_PTR(ct_grad_scaler_new_opts, ((ct_grad_scaler_opts){.growth_interval = -3}), "growth_interval must be positive");
    QUIET_VOID(ct_grad_scaler_free, (NULL));
    PROP_PTR_SAYS(ct_grad_scaler_scale, (NULL, NT), "grad_scaler: NULL scaler");
    PROP_STATUS(ct_grad_scaler_unscale, (NULL, NULL), "grad_scaler: NULL scaler");
    PROP_STATUS(ct_grad_scaler_step, (NULL, NULL), "grad_scaler: NULL scaler");
    PROP_STATUS(ct_grad_scaler_update, (NULL), "grad_scaler: NULL scaler");
    PROP_STATUS(ct_grad_scaler_update_to, (NULL, 2.0), "grad_scaler: NULL scaler");
    QUIET_VAL(ct_grad_scaler_get_scale, (NULL), r_ == 1.0);
    QUIET_VAL(ct_grad_scaler_growth_tracker, (NULL), r_ == 0);
    QUIET_VAL(ct_grad_scaler_skipped_steps, (NULL), r_ == 0);
    QUIET_VAL(ct_grad_scaler_is_enabled, (NULL), !r_);
    PROP_PTR_SAYS(ct_grad_scaler_state_dict, (NULL), "grad_scaler: NULL scaler");
    PROP_STATUS(ct_grad_scaler_load_state_dict, (NULL, NULL), "grad_scaler: NULL scaler");
    {
        ct_grad_scaler *gs = ct_grad_scaler_new();
        ERR_STATUS(ct_grad_scaler_load_state_dict, (gs, NULL), "grad_scaler.load_state_dict: NULL dict");
        ERR_STATUS(ct_grad_scaler_update_to, (gs, -1.0), "new_scale must be positive and finite");
        ct_grad_scaler_free(gs);
    }
    PROP_STATUS(ct_step, (NULL), "step: NULL optimizer");
    PROP_STATUS(ct_zero_grad, (NULL), "zero_grad: NULL optimizer");
    PROP_VAL(ct_optimizer_lr, (NULL), isnan(r_));
    PROP_STATUS(ct_optimizer_set_lr, (NULL, 0.1), "set_lr: NULL optimizer");
    ERR_STATUS(ct_optimizer_set_lr, (F.opt, -1), "Invalid learning rate");
    ERR_STATUS(ct_optimizer_set_lr, (F.opt, NAN), "Invalid learning rate");
    PROP_VAL(ct_optimizer_step_count, (NULL), r_ == 0);
    PROP_PTR_SAYS(ct_optimizer_state_dict, (NULL), "optimizer state_dict: NULL optimizer");
    PROP_STATUS(ct_optimizer_load_state_dict, (NULL, F.dict), "optimizer load_state_dict: NULL optimizer");
    PROP_STATUS(ct_optimizer_load_state_dict, (F.opt, NULL), "optimizer load_state_dict: NULL state dict");
    ERR_STATUS(ct_optimizer_load_state_dict, (F.opt, F.dict), "load_state_dict");
    PROP_STATUS(ct_clip_grad_norm, (NM, 1.0, 2.0, &norm), "clip_grad_norm_: NULL module");
    ERR_STATUS(ct_clip_grad_norm, (F.m, 1.0, 3.0, &norm), "clip_grad_norm");
    PROP_PTR_SAYS(ct_step_lr, (NULL, 1, 0.5), "lr_scheduler: NULL optimizer");
    PROP_PTR_SAYS(ct_step_lr, (NULL, 0, 0.5), "lr_scheduler: NULL optimizer"); /* the object first */
    ERR_PTR(ct_step_lr, (F.opt, 0, 0.5), "StepLR");
    PROP_PTR_SAYS(ct_multistep_lr, (NULL, ((int[]){1}), 1, 0.5), "lr_scheduler: NULL optimizer");
    ERR_PTR(ct_multistep_lr, (F.opt, NULL, 2, 0.5), "MultiStepLR: bad milestone list");
    ERR_PTR(ct_multistep_lr, (F.opt, ((int[]){3, 1}), 2, 0.5), "MultiStepLR");
    ERR_PTR(ct_multistep_lr, (F.opt, ((int[]){1}), -1, 0.5), "MultiStepLR");
    PROP_PTR_SAYS(ct_cosine_annealing_lr, (NULL, 10, 0), "lr_scheduler: NULL optimizer");
    ERR_PTR(ct_cosine_annealing_lr, (F.opt, 0, 0), "CosineAnnealingLR");
    ERR_PTR(ct_clip_grad_norm_params, (NULL, 1, 1.0, 2.0), "clip_grad_norm_: NULL parameter list");
    ERR_PTR(ct_clip_grad_norm_params, (&F.t, -1, 1.0, 2.0), "clip_grad_norm_: negative parameter count -1");
    PROP_PTR_SAYS(ct_onecycle_lr, (NULL, 0.1, 10), "lr_scheduler: NULL optimizer");
    ERR_PTR(ct_onecycle_lr, (F.opt, 0.1, 0), "OneCycleLR");
    ERR_PTR(ct_onecycle_lr, (F.opt, -0.1, 10), "OneCycleLR");
    PROP_PTR_SAYS(ct_linear_lr, (NULL, 0.1, 1, 10), "lr_scheduler: NULL optimizer");
    ERR_PTR(ct_linear_lr, (F.opt, 0, 1, 10), "LinearLR");
    ERR_PTR(ct_linear_lr, (F.opt, 0.1, 1, -1), "LinearLR");
    PROP_STATUS(ct_scheduler_step, (NULL), "scheduler.step: NULL scheduler");
    PROP_VAL(ct_scheduler_last_lr, (NULL), isnan(r_));
    QUIET_VOID(ct_scheduler_free, (NULL));
}

static void rows_nn(void) {
    rows_modules();
    rows_optim();
}
