/*
 * api_errors_data.c — rows of test_api_errors.c for data.h, io.h and
 * summary.h (included into test_api_errors.c).
 */

static int64_t len_two(void *state) {
    (void)state;
    return 2;
}
static ct_status get_fails(void *state, int64_t index, uint64_t key, ct_sample *out) {
    (void)state, (void)index, (void)key, (void)out;
    return CT_ERR_IO;
}
static ct_status fill_fails(void *state, uint64_t epoch, int64_t *idx) {
    (void)state, (void)epoch, (void)idx;
    return CT_ERR_IO;
}

static void rows_data(void) {
    ct_sample s = {0};
    int64_t idx[4];
    QUIET_VOID(ct_sample_clear, (NULL));
    ERR_PTR(ct_dataset_new, ("D", ((ct_dataset_fns){NULL, NULL, NULL}), NULL), "ct_dataset_new");
    QUIET_VOID(ct_dataset_free, (NULL));
    PROP_VAL(ct_dataset_len, (NULL), r_ == 0);
    PROP_VAL(ct_dataset_name, (NULL), r_ != NULL);
    PROP_STATUS(ct_dataset_get, (NULL, 0, 0, &s), "ct_dataset_get: NULL argument");
    ERR_STATUS(ct_dataset_get, (F.ds, 0, 0, NULL), "ct_dataset_get: NULL");
    ERR_STATUS(ct_dataset_get, (F.ds, 9, 0, &s), "index 9 is out of range");
    ERR_STATUS(ct_dataset_get, (F.ds, -1, 0, &s), "index -1 is out of range");
    ERR_STATUS(ct_dataset_get, (F.failing_ds, 1, 0, &s),
               "Failing: dataset get(1) failed with CT_ERR_IO without setting an error");
    ERR_PTR(ct_tensor_dataset, (NULL, 1), "NULL");
    ERR_PTR(ct_tensor_dataset, (&F.t, 0), "TensorDataset");
    ERR_PTR(ct_tensor_dataset, (((ct_tensor *[]){F.t, F.img}), 2), "Size mismatch between tensors");
    PROP_PTR(ct_tensor_dataset, (((ct_tensor *[]){F.t, NT}), 2));
    PROP_PTR(ct_subset, (NULL, idx, 0));
    ERR_PTR(ct_subset, (F.ds, NULL, 2), "Subset: expected n >= 0 indices, got 2 (NULL array)");
    ERR_PTR(ct_subset, (F.ds, ((int64_t[]){5}), 1), "Subset");
    ERR_PTR(ct_subset, (F.ds, idx, -1), "Subset");
    PROP_PTR(ct_transform_apply, (NULL, F.t, 0));
    PROP_PTR(ct_transform_apply, (F.tf, NT, 0));
    QUIET_VOID(ct_transform_free, (NULL));
    ERR_PTR(ct_transform_normalize, (NULL, NULL, 1),
            "Normalize: expected 1 or more mean and std values, got 1 (NULL array)");
    ERR_PTR(ct_transform_normalize, (((double[]){0.5}), ((double[]){0.0}), 1), "Normalize");
    ERR_PTR(ct_transform_normalize, (((double[]){0.5}), ((double[]){1.0}), 0), "Normalize");
    ERR_PTR(ct_transform_normalize1, (0.5, 0.0), "Normalize");
    ERR_PTR(ct_transform_random_crop, (0, 0), "RandomCrop");
    ERR_PTR(ct_transform_random_crop, (4, -1), "RandomCrop");
    ERR_PTR(ct_transform_random_horizontal_flip, (1.5), "RandomHorizontalFlip");
    ERR_PTR(ct_transform_random_horizontal_flip, (NAN), "RandomHorizontalFlip");
    ERR_PTR(ct_transform_lambda, ("f", NULL, NULL, NULL), "Lambda f: NULL transform function");
    ERR_PTR(ct_transform_compose, (NULL, 2), "Compose: expected a list of transforms, got 2 (NULL array)");
    ERR_PTR(ct_transform_compose, (((ct_transform *[]){NULL}), -1), "Compose");
    PROP_PTR(ct_transform_compose, (((ct_transform *[]){NULL}), 1));
    QUIET_VAL(ct_transform_to_tensor, (true), (ct_transform_free(r_), true));
    ERR_PTR(ct_idx_load, (NULL), "ct_idx_load: NULL path");
    ERR_PTR(ct_idx_load, ("/nonexistent/x-idx1-ubyte"), "ct_idx_load: cannot open /nonexistent/x-idx1-ubyte");
    ERR_PTR(ct_idx_load, (F.fifo), "is not a regular file (it is a FIFO (named pipe))");
    ERR_PTR(ct_idx_load, (api_path("fifo.gz")), "is not a regular file (it is a FIFO (named pipe))");
    ERR_PTR(ct_idx_load, (F.dir), "is not a regular file (it is a directory)");
    ERR_PTR(ct_mnist, (NULL, true, NULL), "MNIST: NULL root");
    ERR_PTR(ct_mnist, ("/nonexistent", true, NULL), "/nonexistent");
    ERR_PTR(ct_fashion_mnist, (NULL, false, NULL), "FashionMNIST: NULL root");
    ERR_PTR(ct_cifar10, (NULL, true, NULL), "CIFAR10: NULL root");
    ERR_PTR(ct_cifar10, ("/nonexistent", false, NULL), "/nonexistent");
    ERR_PTR(ct_cifar10, (api_path("cifar"), false, NULL),
            "test_batch.bin is not a regular file (it is a FIFO (named pipe))");
    ERR_PTR(ct_sequential_sampler, (-1), "SequentialSampler");
    ERR_PTR(ct_random_sampler, (-1, 0), "RandomSampler");
    ERR_PTR(ct_distributed_sampler, (4, 2, 2, false, 0, false),
            "Invalid rank 2, rank should be in the interval [0, 1]");
    ERR_PTR(ct_distributed_sampler, (4, 0, 0, false, 0, false), "DistributedSampler");
    ERR_PTR(ct_sampler_new, (((ct_sampler_fns){NULL, NULL, NULL}), NULL), "sampler");
    PROP_VAL(ct_sampler_len, (NULL), r_ == 0);
    QUIET_VOID(ct_sampler_set_epoch, (NULL, 1));
    PROP_STATUS(ct_sampler_indices, (NULL, idx), "ct_sampler_indices: NULL argument");
    ERR_STATUS(ct_sampler_indices, (F.sampler, NULL), "ct_sampler_indices: NULL argument");
    ERR_STATUS(ct_sampler_indices, (F.failing_sampler, idx), "fill");
    ERR_STATUS(ct_sampler_indices, (F.failing_sampler, (ct_set_error(CT_ERR_STATE, "stale"), idx)), "fill");
    QUIET_VOID(ct_sampler_free, (NULL));
    ct_sample samples[1] = {{0}};
    ERR_STATUS(ct_default_collate, (NULL, 1, &s, false, NULL), "collate: NULL");
    ERR_STATUS(ct_default_collate, (samples, 1, NULL, false, NULL), "collate: NULL");
    PROP_STATUS(ct_default_collate, (((ct_sample[]){{1, {NT}}}), 1, &s, false, NULL),
                "default_collate: field 0 of entry 0 is NULL");
    ERR_STATUS(ct_default_collate, (samples, 0, &s, false, NULL), "collate");
    ERR_STATUS(ct_default_collate, (samples, -1, &s, false, NULL), "collate");
    PROP_PTR(ct_dataloader_new, (NULL, (ct_dataloader_opts){0}));
    ERR_PTR(ct_dataloader_new, (F.ds, (ct_dataloader_opts){.num_workers = -1}),
            "num_workers option should be non-negative");
    ERR_PTR(ct_dataloader_new, (F.ds, (ct_dataloader_opts){.batch_size = -2}),
            "batch_size should be a positive integer value");
    QUIET_VOID(ct_dataloader_free, (NULL));
    PROP_VAL(ct_dataloader_len, (NULL), r_ == 0);
    QUIET_VOID(ct_dataloader_set_epoch, (NULL, 1));
    PROP_VAL(ct_dataloader_epoch, (NULL), r_ == 0);
    PROP_PTR(ct_dataloader_iter_new, (NULL));
    PROP_VAL(ct_dataloader_next, (NULL, &s), !r_);
    ERR_VAL(ct_dataloader_next, (F.it, NULL), !r_, "ct_dataloader_next: NULL batch");
    PROP_VAL(ct_dataloader_iter_status, (NULL), ((void)r_, true));
    PROP_VAL(ct_dataloader_iter_pos, (NULL), r_ == 0);
    QUIET_VOID(ct_dataloader_iter_free, (NULL));
    ERR_VAL(ct_dataloader_next, (F.failing_it, &s), !r_,
            "Failing: dataset get(0) failed with CT_ERR_IO without setting an error");
    ERR_VAL(ct_dataloader_next, (F.failing_it, (ct_set_error(CT_ERR_STATE, "stale"), &s)), !r_,
            "Failing: dataset get(0) failed with CT_ERR_IO without setting an error");
    ERR_STATUS(ct_dataset_get, (F.failing_ds, 1, 0, (ct_set_error(CT_ERR_STATE, "stale"), &s)),
               "Failing: dataset get(1) failed with CT_ERR_IO without setting an error");
}

static void rows_io_summary(void) {
    ct_tensor_dict *out = NULL;
    void *buf = NULL;
    size_t n = 0;
    QUIET_VOID(ct_tensor_dict_free, (NULL));
    PROP_STATUS(ct_tensor_dict_set, (NULL, "a", F.t), "tensor_dict_set: NULL dict");
    ERR_STATUS(ct_tensor_dict_set, (F.dict, NULL, F.t), "NULL name");
    PROP_STATUS(ct_tensor_dict_set, (F.dict, "a", NT), "tensor_dict_set:");
    PROP_PTR_SAYS(ct_tensor_dict_get, (NULL, "t"), "tensor_dict_get: NULL dict");
    ERR_PTR(ct_tensor_dict_get, (F.dict, NULL), "NULL name");
    ERR_PTR(ct_tensor_dict_get, (F.dict, "nope"), "nope");
    PROP_VAL(ct_tensor_dict_contains, (NULL, "t"), !r_);
    QUIET_VAL(ct_tensor_dict_contains, (F.dict, NULL), !r_);
    PROP_VAL(ct_tensor_dict_index, (NULL, "t"), r_ == -1);
    PROP_STATUS(ct_tensor_dict_remove, (NULL, "t"), "tensor_dict_remove: NULL dict");
    ERR_STATUS(ct_tensor_dict_remove, (F.dict, NULL), "NULL name");
    ERR_STATUS(ct_tensor_dict_remove, (F.dict, "nope"), "nope");
    PROP_VAL(ct_tensor_dict_size, (NULL), r_ == 0);
    PROP_PTR_SAYS(ct_tensor_dict_name, (NULL, 0), "tensor_dict_name: index 0 is out of range");
    ERR_PTR(ct_tensor_dict_name, (F.dict, 5), NULL);
    ERR_PTR(ct_tensor_dict_name, (F.dict, -1), NULL);
    PROP_PTR_SAYS(ct_tensor_dict_value, (NULL, 0), "tensor_dict_value: index 0 is out of range");
    ERR_PTR(ct_tensor_dict_value, (F.dict, 5), NULL);
    PROP_STATUS(ct_tensor_dict_set_metadata, (NULL, "k", "v"), "tensor_dict_set_metadata: NULL dict");
    ERR_STATUS(ct_tensor_dict_set_metadata, (F.dict, NULL, "v"), "NULL");
    ERR_STATUS(ct_tensor_dict_set_metadata, (F.dict, "k", "\xff"), "UTF-8");
    PROP_PTR(ct_tensor_dict_get_metadata, (NULL, "format"));
    QUIET_VAL(ct_tensor_dict_get_metadata, (F.dict, NULL), r_ == NULL);
    PROP_VAL(ct_tensor_dict_metadata_size, (NULL), r_ == 0);
    PROP_PTR_SAYS(ct_tensor_dict_metadata_key, (NULL, 0), "tensor_dict_metadata_key: index 0 is out of range");
    ERR_PTR(ct_tensor_dict_metadata_key, (F.dict, 7), NULL);
    ERR_STATUS(ct_safetensors_save, (NULL, F.dict), "NULL path");
    PROP_STATUS(ct_safetensors_save, (api_path("x.safetensors"), NULL), "safetensors_save: NULL dict");
    PROP_STATUS(ct_safetensors_save, (NULL, NULL), "safetensors_save: NULL dict"); /* the object first */
    ERR_STATUS(ct_safetensors_save, (api_path("file/x.safetensors"), F.dict), "file/x.safetensors");
    PROP_STATUS(ct_safetensors_save_buffer, (NULL, &buf, &n), "safetensors_save_buffer: NULL dict");
    PROP_STATUS(ct_safetensors_save_buffer, (NULL, NULL, &n), "safetensors_save_buffer: NULL dict");
    ERR_STATUS(ct_safetensors_save_buffer, (F.dict, NULL, &n), "NULL");
    ERR_STATUS(ct_safetensors_save_checksummed, (NULL, F.dict), "NULL path");
    PROP_STATUS(ct_safetensors_save_checksummed, (api_path("x.safetensors"), NULL), "safetensors_save: NULL dict");
    ERR_STATUS(ct_safetensors_load, (NULL, ct_device_cpu(), &out), "NULL path");
    ERR_STATUS(ct_safetensors_load, ("x.safetensors", ct_device_cpu(), NULL), "NULL");
    ERR_STATUS(ct_safetensors_load, (api_path("file/x.safetensors"), ct_device_cpu(), &out), "file/x.safetensors");
    ERR_STATUS(ct_safetensors_load, (F.dir, ct_device_cpu(), &out), F.dir);
    ERR_STATUS(ct_safetensors_load, (F.fifo, ct_device_cpu(), &out), F.fifo);
    ERR_STATUS(ct_safetensors_load_buffer, (NULL, 8, ct_device_cpu(), &out), "NULL");
    ERR_STATUS(ct_safetensors_load_buffer, ("12345678", 8, BAD_DEV, &out), NULL);
    ERR_STATUS(ct_safetensors_load_buffer, ("12345678", 8, ct_device_cpu(), NULL), "NULL");

    ERR_PTR(ct_summary_writer_new, (api_path("file/logs")), "file/logs");
    PROP_STATUS(ct_summary_add_scalar, (NULL, "loss", 1.0, 0), "add_scalar: NULL writer");
    ERR_STATUS(ct_summary_add_scalar, (F.w, NULL, 1.0, 0), "tag");
    ERR_STATUS(ct_summary_add_scalar, (F.w, "", 1.0, 0), "tag");
    PROP_STATUS(ct_summary_add_scalar_at, (NULL, "loss", 1.0, 0, 1e9), "add_scalar: NULL writer");
    ERR_STATUS(ct_summary_add_scalar_at, (F.w, "loss", 1.0, 0, NAN), "wall");
    PROP_VOID(ct_summary_set_flush_secs, (NULL, 1.0));
    QUIET_VOID(ct_summary_set_flush_secs, (F.w, -1.0));
    PROP_STATUS(ct_summary_flush, (NULL), "flush: NULL writer");
    PROP_VAL(ct_summary_writer_path, (NULL), r_ == NULL);
    QUIET_VAL(ct_summary_writer_close, (NULL), r_ == CT_OK);
}

static void rows_data_io(void) {
    rows_data();
    rows_io_summary();
}
