/*
 * ctorch/data.h — datasets, transforms, samplers and the DataLoader, as
 * torch.utils.data and torchvision.transforms.
 *
 *   ct_dataset *train = ct_fashion_mnist("/usr/share/datasets/fashion-mnist", true,
 *                                        ct_transform_normalize1(0.2860, 0.3530));
 *   ct_dataloader *dl = ct_dataloader_new(train, (ct_dataloader_opts){
 *       .batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 1});
 *   ct_dataloader_iter *it = ct_dataloader_iter_new(dl);      // iter(loader)
 *   ct_sample batch;
 *   while (ct_dataloader_next(it, &batch)) {                    // for x, y in loader
 *       ct_tensor *x = batch.t[0], *y = batch.t[1];
 *       ...
 *       ct_sample_clear(&batch);
 *   }
 *   if (ct_dataloader_iter_status(it)) fprintf(stderr, "%s\n", ct_last_error());
 *   ct_dataloader_iter_free(it);
 *
 * SAMPLES. A sample is a small tuple of tensors (image, label, …). Whoever
 * fills a ct_sample owns its references; ct_sample_clear releases them.
 * Tensors in samples and batches are never owned by a scope, so they may be
 * produced on a worker thread and used on another.
 *
 * RANDOMNESS. Random transforms draw from a 64-bit key that the DataLoader
 * derives from (seed, epoch, sample index) with Philox. A sample's
 * augmentation therefore depends only on the seed, the epoch and the index,
 * never on num_workers or on thread timing: a run resumed at epoch k sees
 * exactly the samples an uninterrupted run would. (PyTorch seeds each worker
 * with base_seed + worker_id instead, so its augmentations change with
 * num_workers.)
 *
 * THREADS. With num_workers > 0, the dataset's get function is called
 * concurrently from worker threads and must be thread-safe (every dataset
 * here is: they are read-only after construction).
 *
 * Errors follow ctorch/status.h. A missing, truncated or malformed data file
 * is reported with the file name, the byte offset and what was expected.
 */
#ifndef CTORCH_DATA_H
#define CTORCH_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- samples ------------------------------------------------------------ */
#define CT_SAMPLE_MAX 4
typedef struct ct_sample {
    int n;                        /* number of tensors in t                  */
    ct_tensor *t[CT_SAMPLE_MAX];  /* owned references                        */
} ct_sample;
/* Release every tensor of s and set s->n to 0. NULL is a no-op. */
CT_API void ct_sample_clear(ct_sample *s);

/* ---- datasets (map-style: a length and get-item) --------------------------- */
typedef struct ct_dataset ct_dataset;

/* The functions behind a dataset. get fills *out with new references
 * (untracked: create them with ct_* calls outside any scope, or ct_keep them
 * out of one) and returns CT_OK, or returns
 * ct_set_error(code, "why ...") (ctorch/status.h). key is the sample's random key (0 when
 * the caller wants no randomness, e.g. evaluation). */
typedef struct ct_dataset_fns {
    int64_t (*len)(void *state);
    ct_status (*get)(void *state, int64_t index, uint64_t key, ct_sample *out);
    void (*free_state)(void *state);   /* may be NULL */
} ct_dataset_fns;

/* A dataset from user functions; the dataset owns state (free_state is called
 * by ct_dataset_free). name appears in error messages, e.g. "FashionMNIST". */
CT_API ct_dataset *ct_dataset_new(const char *name, ct_dataset_fns fns, void *state);
CT_API void ct_dataset_free(ct_dataset *ds);   /* NULL is a no-op */
CT_API int64_t ct_dataset_len(const ct_dataset *ds);
CT_API const char *ct_dataset_name(const ct_dataset *ds);
/* dataset[index]: negative indices are not accepted (CT_ERR_INDEX names the
 * index and the length). */
CT_API ct_status ct_dataset_get(ct_dataset *ds, int64_t index, uint64_t key, ct_sample *out);

/* TensorDataset(*tensors): sample i is (t[0][i], t[1][i], …), views sharing
 * the tensors' storage. All tensors must have the same size in dim 0
 * ("Size mismatch between tensors"). The dataset retains the tensors. */
CT_API ct_dataset *ct_tensor_dataset(ct_tensor *const *tensors, int n);
/* Subset(dataset, indices): borrows ds (it must outlive the subset). */
CT_API ct_dataset *ct_subset(ct_dataset *ds, const int64_t *indices, int64_t n);

/* ---- transforms ------------------------------------------------------------ */
/* A transform maps one tensor to a new tensor (new untracked reference;
 * like torchvision, RandomHorizontalFlip returns the input itself, with a new
 * reference, when it does not flip). Transforms run on CPU tensors.
 * Random transforms draw from key (see RANDOMNESS); each transform of a
 * Compose gets its own sub-key. The exact key -> draw mapping is documented
 * at the top of src/data/transform.c. */
typedef struct ct_transform ct_transform;
CT_API ct_tensor *ct_transform_apply(const ct_transform *tf, const ct_tensor *x, uint64_t key);
CT_API void ct_transform_free(ct_transform *tf);        /* NULL is a no-op */

/* ToTensor: uint8 HW or HWC (C ≤ 4) -> float32 CHW in [0, 1]; a uint8 CHW
 * image (as CIFAR-10 stores it) is given with chw = true. Other dtypes are
 * only rearranged to CHW, keeping their values (torchvision's ndarray rule). */
CT_API ct_transform *ct_transform_to_tensor(bool chw);
/* Normalize(mean, std) per channel of a float CHW tensor; n is 1 or C. */
CT_API ct_transform *ct_transform_normalize(const double *mean, const double *std, int n);
CT_API ct_transform *ct_transform_normalize1(double mean, double std);
/* RandomCrop(size, padding): zero-pads every side by padding, then crops a
 * size×size window at a random position. Works on any dtype, CHW or HW. */
CT_API ct_transform *ct_transform_random_crop(int64_t size, int64_t padding);
/* RandomHorizontalFlip(p): flips the last dim with probability p. */
CT_API ct_transform *ct_transform_random_horizontal_flip(double p);
/* Lambda(fn): a transform from a user function, which returns a new
 * (untracked) reference, or NULL after ct_set_error (ctorch/status.h). free_state (may be NULL)
 * is called on state by ct_transform_free. name is for error messages. */
typedef ct_tensor *(*ct_transform_fn)(const ct_tensor *x, uint64_t key, void *state);
CT_API ct_transform *ct_transform_lambda(const char *name, ct_transform_fn fn, void *state,
                                         void (*free_state)(void *));
/* Compose(transforms): takes ownership of the n transforms, also when it
 * fails; a NULL among them (a constructor that failed) makes it return NULL
 * with that constructor's error, so CT_COMPOSE(...) needs no checks. */
CT_API ct_transform *ct_transform_compose(ct_transform *const *tfs, int n);
#define CT_COMPOSE(...)                                                        \
    ct_transform_compose((ct_transform *const[]){__VA_ARGS__},               \
                         (int)(sizeof((ct_transform *const[]){__VA_ARGS__}) / \
                               sizeof(ct_transform *)))

/* ---- file formats and standard datasets ------------------------------------- */
/* Read an IDX file (MNIST format; plain, or gzip when the name ends in .gz)
 * into a CPU tensor of its shape: uint8 data stays uint8; int8, int16 and
 * int32 become int32; float32 and float64 stay as stored. The file must be
 * exactly the size its header promises. */
CT_API ct_tensor *ct_idx_load(const char *path);

/* MNIST / Fashion-MNIST from root, which holds train-images-idx3-ubyte,
 * train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
 * each plain or with .gz. Samples are (image, label): image is the result of
 * transform applied to ToTensor's float32 [1,28,28] (transform may be NULL;
 * the dataset takes ownership of it, also when construction fails), label an
 * int64 0-dim tensor. The files are read and checked once, here. */
CT_API ct_dataset *ct_mnist(const char *root, bool train, ct_transform *transform);
CT_API ct_dataset *ct_fashion_mnist(const char *root, bool train, ct_transform *transform);
/* CIFAR-10 binary version from root (the cifar-10-batches-bin folder:
 * data_batch_1..5.bin, test_batch.bin; or the folder that holds it). Image
 * float32 [3,32,32] in [0,1] before transform (owned as for ct_mnist);
 * label int64 0-dim. */
CT_API ct_dataset *ct_cifar10(const char *root, bool train, ct_transform *transform);

/* ---- samplers ----------------------------------------------------------------- */
/* A sampler yields the dataset indices of one epoch. */
typedef struct ct_sampler ct_sampler;
CT_API ct_sampler *ct_sequential_sampler(int64_t n);
/* RandomSampler: a permutation of 0..n-1 from Philox keyed by (seed, epoch). */
CT_API ct_sampler *ct_random_sampler(int64_t n, uint64_t seed);
/* DistributedSampler(num_replicas, rank, shuffle, seed, drop_last):
 * PyTorch's padding and strided split; call ct_sampler_set_epoch before each
 * epoch ("Invalid rank R, rank should be in the interval [0, W-1]"). */
CT_API ct_sampler *ct_distributed_sampler(int64_t n, int num_replicas, int rank, bool shuffle,
                                         uint64_t seed, bool drop_last);
/* A sampler from user functions: fill writes the epoch's indices into idx
 * (len entries, len from the len function) and returns CT_OK, or returns
 * ct_set_error(code, "why ..."). */
typedef struct ct_sampler_fns {
    int64_t (*len)(void *state);
    ct_status (*fill)(void *state, uint64_t epoch, int64_t *idx);
    void (*free_state)(void *state);
} ct_sampler_fns;
CT_API ct_sampler *ct_sampler_new(ct_sampler_fns fns, void *state);
CT_API int64_t ct_sampler_len(const ct_sampler *s);
CT_API void ct_sampler_set_epoch(ct_sampler *s, uint64_t epoch);
/* The indices of the current epoch: writes ct_sampler_len(s) entries. */
CT_API ct_status ct_sampler_indices(ct_sampler *s, int64_t *idx);
CT_API void ct_sampler_free(ct_sampler *s);

/* ---- DataLoader ---------------------------------------------------------------- */
/* collate_fn: turn n samples into one batch (new references in *batch);
 * on failure it returns ct_set_error(code, "why ..."). The default stacks each field on a new dim 0 (default_collate), into pinned
 * memory when the loader pins. */
typedef ct_status (*ct_collate_fn)(const ct_sample *samples, int n, ct_sample *batch, bool pin,
                                   void *user);
/* default_collate, for collate functions that post-process its batch: every
 * sample has the same number of fields, and field k has the same shape,
 * dtype and device in every sample ("stack expects each tensor to be equal
 * size, but got [1, 28, 28] at entry 0 and [1, 28, 27] at entry 3").
 * Field k of *batch is a new contiguous [n, *shape] tensor (user is unused). */
CT_API ct_status ct_default_collate(const ct_sample *samples, int n, ct_sample *batch, bool pin,
                                    void *user);
typedef void (*ct_worker_init_fn)(int worker_id, void *user);

typedef struct ct_dataloader_opts {
    int64_t batch_size;       /* 0 means 1                                       */
    bool shuffle;             /* RandomSampler keyed by seed; new order each epoch */
    bool drop_last;
    ct_sampler *sampler;      /* instead of shuffle; the loader takes ownership    */
    int num_workers;          /* worker threads; 0 loads in the caller's thread   */
    int prefetch_factor;      /* batches in flight per worker; 0 means 2          */
    bool pin_memory;          /* collate into page-locked memory (needs a device) */
    double timeout;           /* seconds to wait for a batch; 0 waits forever;
                                 needs num_workers > 0 (see TIMEOUTS below)      */
    bool persistent_workers;  /* keep the workers between epochs                  */
    uint64_t seed;            /* shuffling and augmentation keys                  */
    ct_collate_fn collate_fn; void *collate_user;
    ct_worker_init_fn worker_init_fn; void *worker_init_user;
} ct_dataloader_opts;

typedef struct ct_dataloader ct_dataloader;
typedef struct ct_dataloader_iter ct_dataloader_iter;

/* TIMEOUTS. With timeout > 0, ct_dataloader_next waits at most that long for
 * each batch, then fails with CT_ERR_STATE "DataLoader timed out after <t>
 * seconds" and the iteration ends. The worker that was late is not killed
 * (a thread cannot be, safely): the loader abandons that iterator's workers
 * and neither ct_dataloader_next, ct_dataloader_iter_free nor
 * ct_dataloader_free waits for them; a worker still in get exits when get
 * returns (a hung one never does, and does not hold up exit()). Until then
 * it still uses the dataset, so after a timeout the dataset (and the state
 * of get, collate_fn and worker_init_fn) must stay valid until
 * ct_dataloader_abandoned_workers() is 0, or until the program exits. A
 * persistent loader starts new workers for its next iterator. As in
 * PyTorch, timeout needs num_workers > 0 (the caller's thread cannot bound
 * its own get): ct_dataloader_new refuses a timeout with num_workers == 0,
 * where PyTorch's iter() fails its assert.
 * Without a timeout, stopping the workers (end of epoch, iterator or loader
 * freed) waits for them, so the dataset may be freed right after the loader. */

/* The loader borrows ds (it must outlive the loader; after a timeout, see
 * TIMEOUTS). PyTorch's argument checks and messages ("sampler option is
 * mutually exclusive with shuffle", "num_workers option should be
 * non-negative; …", …). o.sampler is freed when the loader cannot be made,
 * so a failed call leaks nothing. */
CT_API ct_dataloader *ct_dataloader_new(ct_dataset *ds, ct_dataloader_opts o);
/* Stops any workers: waits for them, except after a timeout (see TIMEOUTS). */
CT_API void ct_dataloader_free(ct_dataloader *dl);
/* len(loader): batches per epoch. */
CT_API int64_t ct_dataloader_len(const ct_dataloader *dl);
/* The epoch the next iterator will run (0 at first; each iterator that is
 * created advances it by one). Set it to resume at a given epoch. */
CT_API void ct_dataloader_set_epoch(ct_dataloader *dl, uint64_t epoch);
CT_API uint64_t ct_dataloader_epoch(const ct_dataloader *dl);
/* The random key the loader passes to ct_dataset_get for dataset index
 * `index` in `epoch` (see RANDOMNESS): lanes r0 | r1 << 32 of
 * ct_philox4x32(key = seed, counter = (epoch, index | 2^63)). Lets a program
 * reproduce one sample's augmentation outside the loader. */
CT_API uint64_t ct_dataloader_sample_key(uint64_t seed, uint64_t epoch, int64_t index);

/* iter(loader): starts an epoch. One iterator at a time per loader. */
CT_API ct_dataloader_iter *ct_dataloader_iter_new(ct_dataloader *dl);
/* next(it): true with a batch in *batch (the caller owns it: ct_sample_clear),
 * false at the end of the epoch or on an error. An error in a worker is
 * reported here, at that batch's turn, as "Caught <status> in DataLoader worker
 * <id> (sample <index>): <message>" ("(batch <b>)" when collate failed) with
 * the original status; the iterator is then finished. With num_workers == 0
 * the original error is reported unchanged, as PyTorch does. */
CT_API bool ct_dataloader_next(ct_dataloader_iter *it, ct_sample *batch);
/* CT_OK, or the error that ended the iteration (message in ct_last_error()
 * right after ct_dataloader_next returned false). */
CT_API ct_status ct_dataloader_iter_status(const ct_dataloader_iter *it);
/* Batches delivered so far in this epoch. */
CT_API int64_t ct_dataloader_iter_pos(const ct_dataloader_iter *it);
CT_API void ct_dataloader_iter_free(ct_dataloader_iter *it);   /* NULL is a no-op */
/* Worker threads left running by timeouts (all loaders of the process) that
 * have not exited yet, i.e. may still call a dataset's get (see TIMEOUTS). */
CT_API int ct_dataloader_abandoned_workers(void);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_DATA_H */
