/*
 * data_internal.h — helpers shared by the dataset files of src/data (IDX,
 * MNIST, CIFAR-10) and the transforms: turning stored uint8 pixels into the
 * float32 images that ToTensor produces, and building (image, label)
 * samples, so that every image dataset converts and labels the same way.
 */
#ifndef CT_DATA_INTERNAL_H
#define CT_DATA_INTERNAL_H

#include <stdint.h>

#include "core/internal.h"
#include "ctorch/data.h"

/* ToTensor on raw pixels: a new contiguous float32 CPU tensor of the given
 * shape holding pixels[i] / 255 (torchvision divides, so the values are the
 * same to the bit). Untracked reference. */
ct_tensor *ctd_pixels_to_float(const uint8_t *pixels, const int64_t *shape, int ndim);

/* The (image, label) sample of an image dataset: image is pixels converted
 * by ctd_pixels_to_float and then passed through tf (may be NULL) with key;
 * label an int64 0-dim tensor. Fills *out or sets an error. */
ct_status ctd_image_sample(const uint8_t *pixels, const int64_t *shape, int ndim, int64_t label,
                           const ct_transform *tf, uint64_t key, ct_sample *out);

/* Whether something other than a directory exists at path (a FIFO counts,
 * so that opening it gives ctd_open_regular's message, not "not found"). */
bool ctd_file_exists(const char *path);

/* Open a data file for reading: a descriptor, or -1 with an error naming who
 * and path when it cannot be opened or is not a regular file (a FIFO, a
 * device, a directory; checked on the open descriptor, and without waiting
 * for a FIFO's writer). *size (may be NULL) gets the file's size. */
int ctd_open_regular(const char *who, const char *path, int64_t *size);

/* The readers behind ct_idx_load and ct_cifar10, on a descriptor they take
 * over (the fuzz targets feed them memory files). name/path label errors. */
ct_tensor *ctd_idx_read_fd(const char *who, const char *name, int fd, bool gz);
ct_status ctd_cifar_read_fd(const char *path, int fd, int64_t records, uint8_t *images, uint8_t *labels);

#endif /* CT_DATA_INTERNAL_H */
