/*
 * ctorch/io.h — named tensor collections and the safetensors file format.
 *
 * A ct_tensor_dict is an ordered map from names to tensors with a small
 * string -> string metadata map, the C counterpart of the dict that
 * safetensors.torch.save_file takes and load_file returns (and the base of
 * state_dict). ct_safetensors_save/load write and read the safetensors format
 * of huggingface/safetensors, so files interoperate with PyTorch, transformers
 * and every other reader of that format. docs/checkpoints.md has the details.
 *
 * OWNERSHIP (the rules of ctorch/tensor.h apply)
 *  - A dict holds its own reference to each tensor: ct_tensor_dict_set
 *    retains the tensor you pass (you keep yours), and replacing, removing or
 *    freeing the dict gives the dict's references back. A dict stores the
 *    tensor handle itself, not a copy: in-place changes to the tensor are
 *    seen through the dict, as with a Python dict.
 *  - ct_tensor_dict_get and ct_tensor_dict_value return NEW REFERENCES
 *    (scope-tracked like any other ct_tensor * result): release them.
 *  - Strings returned by the dict (names, metadata keys and values) are
 *    borrowed: valid until that entry is replaced or removed or the dict is
 *    freed. Strings you pass in are copied.
 *  - A dict is not thread-safe: do not change it while another thread uses it.
 *
 * Errors follow ctorch/status.h. Loading never trusts the file: every size
 * and offset is checked before it is used (see docs/checkpoints.md), and a
 * malformed file gives CT_ERR_FORMAT naming the file, the tensor and the
 * offending value; an unreadable or unwritable file gives CT_ERR_IO.
 */
#ifndef CTORCH_IO_H
#define CTORCH_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "device.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_tensor_dict ct_tensor_dict;

/* ---- the dict -------------------------------------------------------------- */

/* A new empty dict whose metadata holds one entry, "format" = "pt", which is
 * what transformers writes and checks when it loads safetensors weights.
 * Remove it with ct_tensor_dict_set_metadata(d, "format", NULL) to write no
 * metadata. NULL (CT_ERR_OOM) when memory runs out. */
CT_API ct_tensor_dict *ct_tensor_dict_new(void);
/* Releases the dict's tensor references and frees it; NULL is a no-op. */
CT_API void ct_tensor_dict_free(ct_tensor_dict *d);

/* d[name] = t. A new name is appended at the end of the order; an existing
 * name keeps its position and its old tensor is released. Names are any
 * valid UTF-8 string except "__metadata__" (reserved by the format).
 * A NULL t returns the pending error of the call that failed to make it
 * (or CT_ERR_INVALID_ARG when there is none) and leaves d unchanged. */
CT_API ct_status ct_tensor_dict_set(ct_tensor_dict *d, const char *name, const ct_tensor *t);
/* d[name] as a new reference; NULL with CT_ERR_INDEX when there is no such
 * name (test first with ct_tensor_dict_contains to avoid the error). */
CT_API ct_tensor *ct_tensor_dict_get(const ct_tensor_dict *d, const char *name);
CT_API bool ct_tensor_dict_contains(const ct_tensor_dict *d, const char *name);
/* The position of name in the order (for ct_tensor_dict_value), or -1 when
 * absent (not an error). Constant time. */
CT_API int ct_tensor_dict_index(const ct_tensor_dict *d, const char *name);
/* Removes d[name] (the following entries move up); CT_ERR_INDEX if absent. */
CT_API ct_status ct_tensor_dict_remove(ct_tensor_dict *d, const char *name);

/* Entries in order, i in [0, size): their names (borrowed) and tensors (new
 * references). Out-of-range i gives NULL and CT_ERR_INDEX. */
CT_API int ct_tensor_dict_size(const ct_tensor_dict *d);
CT_API const char *ct_tensor_dict_name(const ct_tensor_dict *d, int i);
CT_API ct_tensor *ct_tensor_dict_value(const ct_tensor_dict *d, int i);

/* ---- metadata: the "__metadata__" string map of the file -------------------- */

/* Sets metadata[key] = value (both valid UTF-8, copied); a NULL value removes
 * the key (no error when it is absent). New keys are appended in order. */
CT_API ct_status ct_tensor_dict_set_metadata(ct_tensor_dict *d, const char *key, const char *value);
/* The value of key (borrowed), or NULL when absent (not an error). */
CT_API const char *ct_tensor_dict_get_metadata(const ct_tensor_dict *d, const char *key);
CT_API int ct_tensor_dict_metadata_size(const ct_tensor_dict *d);
/* The i-th key (borrowed); NULL and CT_ERR_INDEX when out of range. */
CT_API const char *ct_tensor_dict_metadata_key(const ct_tensor_dict *d, int i);

/* ---- safetensors ------------------------------------------------------------ */

/* The largest header a file may declare (the reference's MAX_HEADER_SIZE). */
#define CT_SAFETENSORS_MAX_HEADER 100000000

/* Writes d to path in the safetensors format, as safetensors.torch.save_file
 * does: tensors ordered by dtype (widest first) then name, the JSON header
 * padded with spaces to a multiple of 8 bytes, data little-endian and
 * row-major. Views are written as contiguous copies and device tensors are
 * copied to the host first; d is not changed. The metadata of d is written as
 * "__metadata__" (omitted when empty).
 * The save is ATOMIC: the file is written to a temporary file in the same
 * directory, flushed to disk (fsync), then renamed over path, and the
 * directory is synced. On any error path is left exactly as it was (absent or
 * with its previous contents) and the temporary file is removed. An existing
 * path keeps its permission bits. */
CT_API ct_status ct_safetensors_save(const char *path, const ct_tensor_dict *d);

/* The same bytes into a new malloc'd buffer, which the caller frees with
 * free(). */
CT_API ct_status ct_safetensors_save_buffer(const ct_tensor_dict *d, void **data, size_t *size);

/* The metadata key of ctorch's whole-file checksum. */
#define CT_SAFETENSORS_CHECKSUM_KEY "ctorch.crc32c"

/* ct_safetensors_save, plus an integrity check other readers ignore: the
 * metadata gains "ctorch.crc32c" = 8 lowercase hex digits, the CRC-32C of
 * the whole file computed with those digits read as "00000000" (an entry
 * of that name in d is replaced). The file stays a plain safetensors file
 * (safetensors.torch.load_file reads its tensors); ct_safetensors_load then
 * refuses it with CT_ERR_FORMAT ("checksum mismatch") when any byte of it,
 * header or data, has changed. Checkpoints should be written this way. */
CT_API ct_status ct_safetensors_save_checksummed(const char *path, const ct_tensor_dict *d);

/* Reads a safetensors file into a new dict (*out; free it with
 * ct_tensor_dict_free) whose tensors are contiguous, on `device`, in the
 * file's dtypes, and in name order (as safetensors.torch.load_file), with
 * the file's metadata (and no "format" entry unless the file has one).
 * Supported dtypes: F32, F64, F16, BF16, I32, I64, U8, BOOL; a file holding
 * any other dtype is refused with CT_ERR_DTYPE. BOOL bytes other than 0 read
 * as true. On error *out is NULL. */
/* A file whose header holds a "ctorch.crc32c" entry is verified first, and
 * refused with CT_ERR_FORMAT naming both CRCs when it does not match; the
 * entry then stays in the dict's metadata, so a caller can insist on it
 * (a file without one is loaded as every safetensors reader would). */
CT_API ct_status ct_safetensors_load(const char *path, ct_device device, ct_tensor_dict **out);

/* The same from the bytes of a whole file in memory (size bytes at data,
 * which is only read during the call). */
CT_API ct_status ct_safetensors_load_buffer(const void *data, size_t size, ct_device device,
                                            ct_tensor_dict **out);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_IO_H */
