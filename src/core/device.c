/*
 * device.c — device values (parse/format) and device queries answered
 * through the backend registry, mirroring torch.device and torch.cuda.
 *
 * The current device is per thread and per device type, as in PyTorch where
 * cudaSetDevice affects only the calling thread.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local int tl_current[CT_NUM_DEVICE_TYPES];

static const char *const k_type_names[CT_NUM_DEVICE_TYPES] = {"cpu", "cuda", "opencl"};
/* The names in errors such as "not compiled with CUDA enabled". */
static const char *const k_type_titles[CT_NUM_DEVICE_TYPES] = {"CPU", "CUDA", "OpenCL"};

const char *ct_device_type_name(ct_device_type type) {
    return (unsigned)type < CT_NUM_DEVICE_TYPES ? k_type_names[type] : "invalid";
}

bool ct_device_equal(ct_device a, ct_device b) { return a.type == b.type && a.index == b.index; }

ct_status ct_device_parse(const char *str, ct_device *out) {
    CT_CHECK_STATUS(str && out, CT_ERR_INVALID_ARG, "device: NULL argument");
    CT_CHECK_STATUS(str[0] != '\0', CT_ERR_INVALID_ARG, "Device string must not be empty");
    size_t n = 0;
    while (isalpha((unsigned char)str[n]) || str[n] == '_') n++;
    const char *rest = str + n;
    CT_CHECK_STATUS(n > 0 && (*rest == '\0' || *rest == ':'), CT_ERR_INVALID_ARG,
                    "Invalid device string: '%s'", str);
    int type = -1;
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++)
        if (strlen(k_type_names[t]) == n && strncmp(str, k_type_names[t], n) == 0) type = t;
    CT_CHECK_STATUS(type >= 0, CT_ERR_INVALID_ARG,
                    "Expected one of cpu, cuda, opencl device type at start of device string: %.*s",
                    (int)n, str);
    int index = -1;
    if (*rest == ':') {
        const char *d = rest + 1;
        size_t nd = strspn(d, "0123456789");
        /* digits only, no leading zero unless exactly "0", at most 9 digits */
        CT_CHECK_STATUS(nd > 0 && d[nd] == '\0' && !(nd > 1 && d[0] == '0') && nd <= 9,
                        CT_ERR_INVALID_ARG, "Invalid device string: '%s'", str);
        index = atoi(d);
    }
    CT_CHECK_STATUS(!(type == CT_DEVICE_CPU && index > 0), CT_ERR_INVALID_ARG,
                    "CPU device index must be -1 or zero, got %d", index);
    out->type = (ct_device_type)type;
    out->index = type == CT_DEVICE_CPU ? 0 : index;
    return CT_OK;
}

char *ct_device_format(ct_device dev, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    if ((dev.type == CT_DEVICE_CPU && dev.index == 0) || dev.index == -1)
        snprintf(buf, size, "%s", ct_device_type_name(dev.type));
    else
        snprintf(buf, size, "%s:%d", ct_device_type_name(dev.type), dev.index);
    return buf;
}

bool ct_device_type_available(ct_device_type type) { return ct_device_count(type) > 0; }

int ct_device_count(ct_device_type type) {
    if ((unsigned)type >= CT_NUM_DEVICE_TYPES) return 0;
    const ct_backend *b = ct_backend_for(type);
    return b ? b->device_count() : 0;
}

ct_status ct_device_check(ct_device dev, ct_device *resolved) {
    CT_CHECK_STATUS((unsigned)dev.type < CT_NUM_DEVICE_TYPES, CT_ERR_DEVICE,
                    "invalid device type %d", (int)dev.type);
    /* The value itself first, as c10::Device checks it when it is made:
     * -1 alone means "the current device". */
    CT_CHECK_STATUS(!(dev.type == CT_DEVICE_CPU && dev.index != 0 && dev.index != -1), CT_ERR_DEVICE,
                    "cpu: CPU device index must be -1 or zero, got %d", dev.index);
    CT_CHECK_STATUS(dev.index >= -1, CT_ERR_DEVICE, "%s: Device index must be -1 or non-negative, got %d",
                    k_type_names[dev.type], dev.index);
    const ct_backend *b = ct_backend_for(dev.type);
    CT_CHECK_STATUS(b != NULL, CT_ERR_DEVICE, "ctorch was not compiled with %s enabled",
                    k_type_titles[dev.type]);
    int index = dev.index == -1 ? tl_current[dev.type] : dev.index;
    if (dev.type == CT_DEVICE_CPU) index = 0;
    int count = b->device_count();
    if (index >= count) {
        char name[32];
        ct_device_format(dev, name, sizeof name);
        if (count == 0) {
            char why[224] = "";
            if (b->no_device_reason) {
                why[0] = ':', why[1] = ' ';
                b->no_device_reason(why + 2, sizeof why - 2);
            }
            return ct_error_set(CT_ERR_DEVICE, "%s: no %s devices are available%s", name, k_type_titles[dev.type],
                                why);
        }
        return ct_error_set(CT_ERR_DEVICE,
                            "%s: invalid device ordinal %d; %d %s device%s available (valid "
                            "ordinals: 0..%d)",
                            name, index, count, k_type_titles[dev.type], count == 1 ? " is" : "s are",
                            count - 1);
    }
    if (resolved) {
        resolved->type = dev.type;
        resolved->index = index;
    }
    return CT_OK;
}

ct_status ct_device_name(ct_device dev, char *buf, size_t size) {
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    CT_CHECK_STATUS(buf && size > 0, CT_ERR_INVALID_ARG, "device_name: empty buffer");
    return ct_backend_for(d.type)->device_name(d.index, buf, size);
}

ct_status ct_set_device(ct_device dev) {
    ct_device d;
    CT_CHECK_STATUS(dev.index >= 0 || dev.type == CT_DEVICE_CPU, CT_ERR_DEVICE,
                    "set_device: device id must be non-negative, got %d", dev.index);
    CT_TRY(ct_device_check(dev, &d));
    tl_current[d.type] = d.index;
    return CT_OK;
}

int ct_current_device(ct_device_type type) {
    if ((unsigned)type >= CT_NUM_DEVICE_TYPES) {
        ct_error_set(CT_ERR_DEVICE, "current_device: invalid device type %d", (int)type);
        return -1;
    }
    /* as torch.cuda.current_device(), which raises without a device */
    if (type != CT_DEVICE_CPU && ct_device_count(type) == 0) {
        ct_error_set(CT_ERR_DEVICE, "current_device: no %s devices are available", ct_device_type_name(type));
        return -1;
    }
    return tl_current[type];
}

ct_status ct_device_synchronize(ct_device dev) {
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    const ct_backend *b = ct_backend_for(d.type);
    return b->synchronize ? b->synchronize(d.index) : CT_OK;
}

/* ---- torch.cuda conveniences ---- */

ct_status ct_get_device_properties(ct_device dev, ct_device_properties *out) {
    CT_CHECK_STATUS(out != NULL, CT_ERR_INVALID_ARG, "get_device_properties: NULL output");
    memset(out, 0, sizeof *out);
    ct_device d;
    CT_TRY(ct_device_check(dev, &d));
    const ct_backend *b = ct_backend_for(d.type);
    CT_TRY(b->device_name(d.index, out->name, sizeof out->name));
    if (b->device_properties) return b->device_properties(d.index, out);
    return CT_OK;
}

bool ct_cuda_is_available(void) { return ct_device_count(CT_DEVICE_CUDA) > 0; }
int ct_cuda_device_count(void) { return ct_device_count(CT_DEVICE_CUDA); }
int ct_cuda_current_device(void) { return ct_current_device(CT_DEVICE_CUDA); }
ct_status ct_cuda_set_device(int index) { return ct_set_device(ct_device_cuda(index)); }
ct_status ct_cuda_get_device_name(int index, char *buf, size_t size) {
    return ct_device_name(ct_device_cuda(index), buf, size);
}

ct_device ct_try_gpu(int i) {
    return i >= 0 && i < ct_cuda_device_count() ? ct_device_cuda(i) : ct_device_cpu();
}

int ct_try_all_gpus(ct_device *out, int max) {
    CT_CHECK_RET(out && max >= 0, 0, CT_ERR_INVALID_ARG,
                 "try_all_gpus: out must hold max >= 0 devices (out %s, max %d)", out ? "given" : "NULL", max);
    int n = ct_cuda_device_count();
    if (n == 0) {
        if (max > 0) out[0] = ct_device_cpu();
        return max > 0 ? 1 : 0;
    }
    int w = n < max ? n : max;
    for (int i = 0; i < w; i++) out[i] = ct_device_cuda(i);
    return w;
}

ct_device ct_best_device(void) {
    if (ct_device_count(CT_DEVICE_CUDA) > 0) return ct_device_cuda(0);
    if (ct_device_count(CT_DEVICE_OPENCL) > 0) return ct_device_opencl(0);
    return ct_device_cpu();
}
