/*
 * collect_devices.c — the device table (nvidia-smi -L / --query-gpu, for
 * every backend): each device ctorch can use, with what ctorch's public API
 * says about it (name, capability, memory, multiprocessors, host or not),
 * and, when there is no CUDA GPU, the plain reason why.
 */
#include <stdlib.h>
#include <string.h>

#include "info.h"

static void describe_device(info_device *row, ct_device dev, const info_cpu *cpu) {
    row->device = dev;
    row->free_memory = -1;
    ct_device_format(dev, row->label, sizeof row->label);
    if (ct_get_device_properties(dev, &row->props) == CT_OK) {
        row->have_props = true;
        if (dev.type == CT_DEVICE_CUDA)
            snprintf(row->capability, sizeof row->capability, "%d.%d", row->props.major, row->props.minor);
        else if (dev.type == CT_DEVICE_OPENCL)
            snprintf(row->capability, sizeof row->capability, "OpenCL %d.%d", row->props.major, row->props.minor);
    } else {
        info_copy(row->error, sizeof row->error, ct_last_error());
    }
    size_t free_bytes = 0, total_bytes = 0;
    if (ct_mem_get_info(dev, &free_bytes, &total_bytes) == CT_OK) row->free_memory = (int64_t)free_bytes;
    else if (dev.type == CT_DEVICE_CPU) row->free_memory = cpu->mem_available; /* the cpu backend has no query */
    else if (!row->error[0]) info_copy(row->error, sizeof row->error, ct_last_error());
    ct_clear_error();
    if (dev.type == CT_DEVICE_CUDA) info_cuda_pci_bus_id(dev.index, row->pci_bus_id, sizeof row->pci_bus_id);
}

/* Why ctorch has no CUDA device, from the most basic cause up. */
static void no_cuda_reason(info_devices *d, const info_build *b, const info_libs *l) {
    const info_cuda_driver *drv = &l->driver;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char *out = d->no_cuda_reason;
    size_t size = sizeof d->no_cuda_reason;
    if (!b->cuda_compiled) {
        info_copy(out, size, "not compiled (this ctorch was built without the CUDA backend; "
                             "rebuild with -DCTORCH_CUDA=ON)");
        if (drv->device_count > 0)
            info_appendf(out, size, "; the driver sees %d device(s)", drv->device_count);
        return;
    }
    if (!drv->lib.found) {
        snprintf(out, size, "no driver (libcuda.so.1 not found: %s)", drv->lib.detail);
        return;
    }
    if (drv->init_status != 0 || drv->device_count == 0) {
        snprintf(out, size, "no device (driver %s: %s)", drv->lib.version[0] ? drv->lib.version : "?",
                 drv->init_error[0] ? drv->init_error : "cuDeviceGetCount reports 0 devices");
    } else {
        /* The driver sees devices but the runtime in ctorch does not: almost
         * always a driver older than the toolkit ctorch was built with. */
        snprintf(out, size, "the driver sees %d device(s) but the CUDA runtime in ctorch sees none", drv->device_count);
        if (l->cuda_built[0])
            info_appendf(out, size, " (driver %s, ctorch built with CUDA %s: the driver may be too old)",
                         drv->lib.version, l->cuda_built);
    }
    if (visible) info_appendf(out, size, "; CUDA_VISIBLE_DEVICES=\"%s\"", visible);
}

void info_collect_devices(info_devices *d, const info_build *b, const info_cpu *c, const info_libs *l) {
    d->count = 0;
    describe_device(&d->list[d->count++], ct_device_cpu(), c);
    d->cuda_count = ct_device_count(CT_DEVICE_CUDA);
    d->cuda_available = d->cuda_count > 0;
    for (int i = 0; i < d->cuda_count && d->count < INFO_MAX_DEVICES; i++)
        describe_device(&d->list[d->count++], ct_device_cuda(i), c);
    int opencl = ct_device_count(CT_DEVICE_OPENCL);
    for (int i = 0; i < opencl && d->count < INFO_MAX_DEVICES; i++)
        describe_device(&d->list[d->count++], ct_device_opencl(i), c);
    ct_clear_error();
    if (!d->cuda_available) no_cuda_reason(d, b, l);
}
