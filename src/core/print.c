/*
 * print.c — ct_print / ct_fprint / ct_snprint: a tensor's text exactly as
 * PyTorch's repr writes it (torch/_tensor_str.py with the default print
 * options), so that output from C programs and from Python can be compared
 * line by line.
 *
 * The rules mirrored here:
 *  - one formatter per tensor decides int mode ("1."), fixed ("0.1235") or
 *    scientific ("1.0000e-05") notation and a common width, looking only at
 *    the nonzero finite values (of the summarised data when summarising);
 *  - beyond 1000 elements every dimension longer than 6 shows its first and
 *    last 3 entries around "...";
 *  - rows wrap at 80 columns, nested brackets indent one column per level and
 *    blocks of dimension k are separated by k-1 blank lines;
 *  - suffixes (device, size, dtype, requires_grad) follow, moving to a new
 *    line when they would pass column 80.
 * Values are read through ct_copy_to_host, so device tensors print the same
 * way; only the (small) summarised part of a big tensor is copied.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ctorch/autograd.h"

/* PyTorch's default print options. */
#define PRINT_PRECISION 4
#define PRINT_THRESHOLD 1000
#define PRINT_EDGEITEMS 3
#define PRINT_LINEWIDTH 80

/* Longest text of one element: "%.0f" of the largest double has 309 digits. */
#define VALUE_TEXT_MAX 400

/* ---- a growable string ---------------------------------------------------- */

typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; the text is incomplete */
} strbuf;

static void sb_putn(strbuf *sb, const char *s, size_t n) {
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + n + 1) cap *= 2;
        char *p = realloc(sb->data, cap);
        if (!p) {
            sb->failed = true;
            return;
        }
        sb->data = p;
        sb->cap = cap;
    }
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

static void sb_puts(strbuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

static void sb_repeat(strbuf *sb, char c, int64_t n) {
    for (int64_t i = 0; i < n; i++) sb_putn(sb, &c, 1);
}

/* ---- the values to print ---------------------------------------------------- */

/* A contiguous host copy of the tensor, or of its summary: dimensions that
 * are cut keep PRINT_EDGEITEMS entries from each end (2 * edgeitems in all). */
typedef struct print_data {
    ct_dtype dtype;
    bool floating;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    bool cut[CT_MAX_DIMS];
    int64_t numel;
    double *f;  /* floating dtypes */
    int64_t *i; /* integer and bool dtypes (int64 is exact past 2^53) */
} print_data;

/* Copy the summary of t (cut dimensions keep their first and last edge
 * items) into a new contiguous tensor on t's device, one narrowed block per
 * combination of head/tail choices. */
static ct_tensor *summarise_on_device(const ct_tensor *t, const print_data *pd) {
    ct_tensor *dst = cti_empty(pd->shape, pd->ndim, t->dtype, t->storage->device);
    if (!dst) return NULL;
    int cut_dims[CT_MAX_DIMS], ncut = 0;
    for (int d = 0; d < pd->ndim; d++)
        if (pd->cut[d]) cut_dims[ncut++] = d;
    for (unsigned mask = 0; mask < (1u << ncut); mask++) {
        ct_tensor *src_part = ct_retain((ct_tensor *)t);
        ct_tensor *dst_part = ct_retain(dst);
        for (int k = 0; k < ncut && src_part && dst_part; k++) {
            int d = cut_dims[k];
            bool tail = (mask >> k) & 1u;
            ct_tensor *s = cti_narrow(src_part, d, tail ? t->shape[d] - PRINT_EDGEITEMS : 0,
                                      PRINT_EDGEITEMS);
            ct_tensor *o = cti_narrow(dst_part, d, tail ? PRINT_EDGEITEMS : 0, PRINT_EDGEITEMS);
            ct_decref(src_part);
            ct_decref(dst_part);
            src_part = s;
            dst_part = o;
        }
        ct_status st = (src_part && dst_part) ? cti_copy(dst_part, src_part) : CT_ERR_INTERNAL;
        ct_decref(src_part);
        ct_decref(dst_part);
        if (st != CT_OK) {
            ct_decref(dst);
            return NULL;
        }
    }
    return dst;
}

static ct_status read_values(const ct_tensor *t, bool summarise, print_data *pd) {
    memset(pd, 0, sizeof *pd);
    pd->dtype = t->dtype;
    pd->floating = ct_dtype_is_floating(t->dtype);
    pd->ndim = t->ndim;
    pd->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        pd->cut[d] = summarise && t->shape[d] > 2 * PRINT_EDGEITEMS;
        pd->shape[d] = pd->cut[d] ? 2 * PRINT_EDGEITEMS : t->shape[d];
        pd->numel *= pd->shape[d];
    }
    if (pd->numel == 0) return CT_OK;

    ct_tensor *src = summarise ? summarise_on_device(t, pd) : ct_retain((ct_tensor *)t);
    if (!src) return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_INTERNAL;
    ct_status st;
    size_t count = (size_t)pd->numel;
    if (pd->floating) {
        pd->f = malloc(count * sizeof *pd->f);
        st = pd->f ? ct_copy_to_host(src, pd->f, CT_FLOAT64, pd->numel)
                   : ct_error_set(CT_ERR_OOM, "print: out of memory for %zu values", count);
    } else {
        pd->i = malloc(count * sizeof *pd->i);
        st = pd->i ? ct_copy_to_host(src, pd->i, CT_INT64, pd->numel)
                   : ct_error_set(CT_ERR_OOM, "print: out of memory for %zu values", count);
    }
    ct_decref(src);
    return st;
}

static void free_values(print_data *pd) {
    free(pd->f);
    free(pd->i);
    pd->f = NULL;
    pd->i = NULL;
}

/* ---- the formatter (torch._tensor_str._Formatter) ---------------------------- */

typedef struct formatter {
    bool floating;
    bool is_bool;
    bool int_mode;  /* every finite value is whole: print "1." */
    bool sci_mode;
    int max_width;
} formatter;

/* Python's "{}" of an integer or bool. */
static int format_integer(const formatter *fm, int64_t v, char *out) {
    if (fm->is_bool) return snprintf(out, VALUE_TEXT_MAX, "%s", v ? "True" : "False");
    return snprintf(out, VALUE_TEXT_MAX, "%" PRId64, v);
}

/* Python's "{:.<prec>f}" / "{:.<prec>e}" of a float; Python writes every NaN
 * as "nan" whatever its sign bit, where C may write "-nan". */
static int format_float(double v, int precision, bool sci, char *out) {
    if (isnan(v)) return snprintf(out, VALUE_TEXT_MAX, "nan");
    if (isinf(v)) return snprintf(out, VALUE_TEXT_MAX, "%s", v > 0 ? "inf" : "-inf");
    return snprintf(out, VALUE_TEXT_MAX, sci ? "%.*e" : "%.*f", precision, v);
}

static void formatter_init_integer(formatter *fm, const print_data *pd) {
    char text[VALUE_TEXT_MAX];
    for (int64_t k = 0; k < pd->numel; k++) {
        int len = format_integer(fm, pd->i[k], text);
        if (len > fm->max_width) fm->max_width = len;
    }
}

static void formatter_init_floating(formatter *fm, const print_data *pd) {
    double lo = INFINITY, hi = 0.0;
    int64_t count = 0;
    for (int64_t k = 0; k < pd->numel; k++) {
        double v = pd->f[k];
        if (!isfinite(v) || v == 0.0) continue;
        double a = fabs(v);
        if (a < lo) lo = a;
        if (a > hi) hi = a;
        if (v != ceil(v)) fm->int_mode = false;
        count++;
    }
    if (count == 0) return;

    if (fm->int_mode)
        fm->sci_mode = hi / lo > 1000.0 || hi > 1.0e8;
    else
        fm->sci_mode = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;
    /* In int mode a "." follows each value, hence the extra column. */
    int precision = (fm->int_mode && !fm->sci_mode) ? 0 : PRINT_PRECISION;
    int extra = (fm->int_mode && !fm->sci_mode) ? 1 : 0;
    char text[VALUE_TEXT_MAX];
    for (int64_t k = 0; k < pd->numel; k++) {
        double v = pd->f[k];
        if (!isfinite(v) || v == 0.0) continue;
        int len = format_float(v, precision, fm->sci_mode, text) + extra;
        if (len > fm->max_width) fm->max_width = len;
    }
}

static void formatter_init(formatter *fm, const print_data *pd) {
    memset(fm, 0, sizeof *fm);
    fm->floating = pd->floating;
    fm->is_bool = pd->dtype == CT_BOOL;
    fm->int_mode = true;
    fm->max_width = 1;
    if (fm->floating)
        formatter_init_floating(fm, pd);
    else
        formatter_init_integer(fm, pd);
}

/* One element, right-aligned to the formatter's width. */
static void put_value(strbuf *sb, const formatter *fm, const print_data *pd, int64_t k) {
    char text[VALUE_TEXT_MAX + 2];
    int len;
    if (!fm->floating) {
        len = format_integer(fm, pd->i[k], text);
    } else if (fm->sci_mode) {
        len = format_float(pd->f[k], PRINT_PRECISION, true, text);
    } else if (fm->int_mode) {
        len = format_float(pd->f[k], 0, false, text);
        if (isfinite(pd->f[k])) text[len++] = '.', text[len] = '\0';
    } else {
        len = format_float(pd->f[k], PRINT_PRECISION, false, text);
    }
    sb_repeat(sb, ' ', fm->max_width - len);
    sb_putn(sb, text, (size_t)len);
}

/* ---- layout (_vector_str, _tensor_str_with_formatter) ------------------------ */

static int64_t block_size(const print_data *pd, int dim) {
    int64_t n = 1;
    for (int d = dim + 1; d < pd->ndim; d++) n *= pd->shape[d];
    return n;
}

/* The entries shown along a dimension: all of them, or the edge items with a
 * marker (-1) for "..." between them. Returns the count. */
static int64_t shown_entries(const print_data *pd, int dim, int64_t *entries) {
    int64_t n = 0;
    for (int64_t k = 0; k < pd->shape[dim]; k++) {
        if (pd->cut[dim] && k == PRINT_EDGEITEMS) entries[n++] = -1;
        entries[n++] = k;
    }
    return n;
}

static void put_vector(strbuf *sb, const formatter *fm, const print_data *pd, int64_t start,
                       int indent, int64_t *entries) {
    int dim = pd->ndim - 1;
    int64_t count = shown_entries(pd, dim, entries);
    int64_t element_length = fm->max_width + 2;
    int64_t per_line = (PRINT_LINEWIDTH - indent) / element_length;
    if (per_line < 1) per_line = 1;
    sb_puts(sb, "[");
    for (int64_t k = 0; k < count; k++) {
        if (k > 0) {
            if (k % per_line == 0) {
                sb_puts(sb, ",\n");
                sb_repeat(sb, ' ', indent + 1);
            } else {
                sb_puts(sb, ", ");
            }
        }
        if (entries[k] < 0)
            sb_puts(sb, " ...");
        else
            put_value(sb, fm, pd, start + entries[k]);
    }
    sb_puts(sb, "]");
}

/* `entries` is scratch space for the shown indices of every dimension:
 * (2 * edgeitems + 1) entries per level at most, or the dimension's size. */
static void put_block(strbuf *sb, const formatter *fm, const print_data *pd, int dim,
                      int64_t start, int indent, int64_t *entries) {
    if (pd->ndim == 0) {
        put_value(sb, fm, pd, 0);
        return;
    }
    if (dim == pd->ndim - 1) {
        put_vector(sb, fm, pd, start, indent, entries);
        return;
    }
    int64_t *mine = entries;
    int64_t count = shown_entries(pd, dim, mine);
    int64_t *rest = entries + count;
    int64_t step = block_size(pd, dim);
    sb_puts(sb, "[");
    for (int64_t k = 0; k < count; k++) {
        if (k > 0) {
            sb_puts(sb, ",");
            sb_repeat(sb, '\n', pd->ndim - dim - 1);
            sb_repeat(sb, ' ', indent + 1);
        }
        if (mine[k] < 0)
            sb_puts(sb, "...");
        else
            put_block(sb, fm, pd, dim + 1, start + mine[k] * step, indent + 1, rest);
    }
    sb_puts(sb, "]");
}

/* ---- suffixes (_add_suffixes) ---------------------------------------------- */

static void add_suffix(strbuf *sb, int64_t *last_line_len, int indent, const char *suffix) {
    int64_t n = (int64_t)strlen(suffix);
    if (*last_line_len + n + 2 > PRINT_LINEWIDTH) {
        sb_puts(sb, ",\n");
        sb_repeat(sb, ' ', indent);
        *last_line_len = indent + n;
    } else {
        sb_puts(sb, ", ");
        *last_line_len += n + 2;
    }
    sb_puts(sb, suffix);
}

/* PyTorch counts the last line as len - rfind("\n") + 1, which is two more
 * than its length when there is no newline; the quirk decides where
 * suffixes wrap, so it is kept. */
static int64_t last_line_length(const strbuf *sb) {
    int64_t nl = -1;
    for (int64_t k = (int64_t)sb->len - 1; k >= 0; k--)
        if (sb->data[k] == '\n') {
            nl = k;
            break;
        }
    return (int64_t)sb->len - nl + 1;
}

static void put_suffixes(strbuf *sb, const ct_tensor *t, int indent) {
    char suffixes[4][96];
    int n = 0;
    ct_device dev = t->storage->device;
    if (dev.type != CT_DEVICE_CPU) {
        char name[64];
        snprintf(suffixes[n++], sizeof suffixes[0], "device='%s'",
                 ct_device_format(dev, name, sizeof name));
    }
    int64_t numel = ct_shape_numel(t->shape, t->ndim);
    bool show_dtype;
    if (numel == 0) {
        /* Nothing shows the kind of an empty tensor, so only the default
         * float dtype goes without saying; NumPy-like, (0,) needs no size. */
        if (t->ndim != 1) {
            char *s = suffixes[n++];
            int len = snprintf(s, sizeof suffixes[0], "size=(");
            for (int d = 0; d < t->ndim; d++)
                len += snprintf(s + len, sizeof suffixes[0] - (size_t)len, "%s%" PRId64,
                                d ? ", " : "", t->shape[d]);
            snprintf(s + len, sizeof suffixes[0] - (size_t)len, ")");
        }
        show_dtype = t->dtype != ct_get_default_dtype();
    } else {
        show_dtype = t->dtype != ct_get_default_dtype() && t->dtype != CT_INT64 &&
                     t->dtype != CT_BOOL;
    }
    if (show_dtype)
        snprintf(suffixes[n++], sizeof suffixes[0], "dtype=torch.%s", ct_dtype_name(t->dtype));
    if (t->grad_fn)
        snprintf(suffixes[n++], sizeof suffixes[0], "grad_fn=<%s>", ct_grad_fn_name(t));
    else if (t->requires_grad)
        snprintf(suffixes[n++], sizeof suffixes[0], "requires_grad=True");

    int64_t last = last_line_length(sb);
    for (int k = 0; k < n; k++) add_suffix(sb, &last, indent, suffixes[k]);
}

/* ---- the whole repr ---------------------------------------------------------- */

static ct_status tensor_repr(const ct_tensor *t, strbuf *sb) {
    static const char prefix[] = "tensor(";
    const int indent = (int)sizeof prefix - 1;
    int64_t numel = ct_shape_numel(t->shape, t->ndim);
    sb_puts(sb, prefix);
    if (numel == 0) {
        sb_puts(sb, "[]");
    } else {
        print_data pd;
        ct_status st = read_values(t, numel > PRINT_THRESHOLD, &pd);
        if (st != CT_OK) {
            free_values(&pd);
            return st;
        }
        formatter fm;
        formatter_init(&fm, &pd);
        int64_t scratch_len = 0;
        for (int d = 0; d < pd.ndim; d++) scratch_len += pd.shape[d] + 1;
        int64_t *entries = malloc((size_t)(scratch_len + 1) * sizeof *entries);
        if (!entries) {
            free_values(&pd);
            return ct_error_set(CT_ERR_OOM, "print: out of memory");
        }
        put_block(sb, &fm, &pd, 0, 0, indent, entries);
        free(entries);
        free_values(&pd);
    }
    put_suffixes(sb, t, indent);
    sb_puts(sb, ")");
    if (sb->failed) return ct_error_set(CT_ERR_OOM, "print: out of memory for the text");
    return CT_OK;
}

/* The repr in a malloc'd string (caller frees), or NULL with the error set. */
static char *tensor_repr_alloc(const ct_tensor *t, size_t *len) {
    strbuf sb = {0};
    if (tensor_repr(t, &sb) != CT_OK) {
        free(sb.data);
        return NULL;
    }
    *len = sb.len;
    return sb.data;
}

/* Like Python's print(t): the repr and a newline. */
ct_status ct_fprint(FILE *f, const ct_tensor *t) {
    /* a NULL tensor carries the error of the call that produced it */
    CT_CHECK_OBJ_STATUS(t, "print: the tensor is NULL");
    CT_CHECK_STATUS(f != NULL, CT_ERR_INVALID_ARG, "print: the FILE pointer is NULL");
    size_t len = 0;
    char *text = tensor_repr_alloc(t, &len);
    if (!text) return ct_last_status();
    bool ok = fwrite(text, 1, len, f) == len && fputc('\n', f) != EOF;
    free(text);
    CT_CHECK_STATUS(ok, CT_ERR_IO, "print: writing the tensor failed");
    return CT_OK;
}

ct_status ct_print(const ct_tensor *t) { return ct_fprint(stdout, t); }

int ct_snprint(char *buf, size_t size, const ct_tensor *t) {
    CT_CHECK_OBJ(t, -1, "print: the tensor is NULL");
    CT_CHECK_RET(buf != NULL || size == 0, -1, CT_ERR_INVALID_ARG,
                 "snprint: buf is NULL but size is %zu", size);
    size_t len = 0;
    char *text = tensor_repr_alloc(t, &len);
    if (!text) return -1;
    if (size > 0) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(buf, text, n);
        buf[n] = '\0';
    }
    free(text);
    return (int)len;
}
