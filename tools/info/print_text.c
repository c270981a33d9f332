/*
 * print_text.c — the report as text, in the "Key: value" style of
 * torch.utils.collect_env so it reads familiarly in a bug report, followed by
 * a device table in the spirit of nvidia-smi --query-gpu. A missing library
 * is one ordinary line saying "not found" and why.
 */
#include <stdlib.h>
#include <string.h>

#include "info.h"

static void print_build(FILE *f, const info_build *b, const info_devices *d) {
    fprintf(f, "ctorch version: %s", b->version);
    if (strcmp(b->version, b->header_version) != 0)
        fprintf(f, " (MISMATCH: ctorch-info was compiled with headers %s)", b->header_version);
    fprintf(f, "\nBuild: %s\n", b->build_info);
    fprintf(f, "Build type: %s\n", b->build_type);
    fprintf(f, "Backends compiled: %s\n", b->backends);
    fprintf(f, "CUDA available: %s\n", d->cuda_available ? "yes" : "no");
    fprintf(f, "ctorch-info compiler: %s\n", b->compiler);
}

static void print_system(FILE *f, const info_system *s, const info_cpu *c) {
    char total[32], avail[32];
    fprintf(f, "\nOS: %s (%s)\n", s->os, s->machine);
    fprintf(f, "Kernel: %s\n", s->kernel);
    fprintf(f, "libc: %s\n", s->libc);
    fprintf(f, "CPU: %s\n", c->model);
    fprintf(f, "CPU cores: %d online, %d usable by this process\n", c->online_cpus, c->usable_cpus);
    fprintf(f, "CPU ISA: %s\n", c->isa[0] ? c->isa : "(none of the features ctorch checks)");
    if (c->omp_max_threads >= 0) fprintf(f, "OpenMP threads: %d\n", c->omp_max_threads);
    else fprintf(f, "OpenMP threads: unknown (ctorch-info built without OpenMP)\n");
    fprintf(f, "Memory: %s total, %s available\n", info_format_bytes(c->mem_total, total, sizeof total),
            info_format_bytes(c->mem_available, avail, sizeof avail));
}

/* "cuBLAS: 13.0.2 (/usr/…/libcublas.so.13; built for CUDA 13.0)" or
 * "cuBLAS: not found (libcublas.so.13: cannot open shared object file …)". */
static void print_lib(FILE *f, const info_lib *lib) {
    if (!lib->found) {
        fprintf(f, "  %s: not found (%s)\n", lib->label, lib->detail[0] ? lib->detail : "no library");
    } else {
        fprintf(f, "  %s: %s (%s", lib->label, lib->version[0] ? lib->version : "version unknown",
                lib->path[0] ? lib->path : "path unknown");
        if (lib->detail[0]) fprintf(f, "; %s", lib->detail);
        fputs(")\n", f);
    }
    if (lib->ctorch_asked)
        fprintf(f, "    ctorch loads: %s\n", lib->ctorch_version[0] ? lib->ctorch_version : "none (cannot load it)");
}

static void print_opencl(FILE *f, const info_opencl *cl) {
    if (!cl->lib.found || cl->num_platforms == 0) {
        if (cl->lib.found)
            fprintf(f, "  OpenCL: no platform (%s; %s)\n", cl->lib.path, cl->lib.detail);
        else
            print_lib(f, &cl->lib);
        return;
    }
    fprintf(f, "  OpenCL: %d platform%s (%s)\n", cl->num_platforms, cl->num_platforms == 1 ? "" : "s",
            cl->lib.path[0] ? cl->lib.path : "path unknown");
    for (int i = 0; i < cl->num_platforms; i++) {
        const info_cl_platform *p = &cl->platforms[i];
        fprintf(f, "    Platform %d: %s, %s (%s), %d device%s\n", i, p->name, p->version, p->vendor,
                p->num_devices, p->num_devices == 1 ? "" : "s");
        for (int j = 0; j < p->num_listed; j++) {
            const info_cl_device *d = &p->devices[j];
            char mem[32];
            fprintf(f, "      Device %d: %s (%s), %s, driver %s, %u compute units, %s\n", j, d->name, d->type,
                    d->version, d->driver, d->compute_units,
                    info_format_bytes((int64_t)d->global_mem, mem, sizeof mem));
        }
    }
}

/* OpenBLAS 0.3.21 does not recognise some recent CPUs (e.g. Sapphire Rapids
 * in a VM) and falls back to kernels without AVX (see tools/train). */
static bool openblas_generic_core(const info_libs *l, const info_cpu *c) {
    return strncmp(l->gemm_engine, "OpenBLAS", 8) == 0 && strcmp(l->openblas_core, "Prescott") == 0 &&
           strstr(c->isa, "avx2") && !getenv("OPENBLAS_CORETYPE");
}

static void print_libs(FILE *f, const info_libs *l, const info_cpu *c) {
    fputs("\nLibraries:\n", f);
    fprintf(f, "  CUDA used to build ctorch: %s\n", l->cuda_built[0] ? l->cuda_built : "not built");
    if (!l->driver.lib.found) {
        fprintf(f, "  CUDA driver: not found (no driver: %s)\n", l->driver.lib.detail);
    } else {
        print_lib(f, &l->driver.lib);
        if (l->driver.init_status == 0)
            fprintf(f, "  CUDA driver devices: %d\n", l->driver.device_count);
        else
            fprintf(f, "  CUDA driver devices: none (%s)\n", l->driver.init_error);
    }
    print_lib(f, &l->cublas);
    print_lib(f, &l->cudnn);
    print_lib(f, &l->nccl);
    print_opencl(f, &l->opencl);
    fprintf(f, "  BLAS: OpenBLAS (%s; core %s, %d threads)\n", l->openblas_config, l->openblas_core,
            l->openblas_threads);
    if (openblas_generic_core(l, c))
        fputs("    note: OpenBLAS uses its generic Prescott kernels on this CPU; "
              "OPENBLAS_CORETYPE=Haswell (or SkylakeX with AVX-512) is several times faster\n",
              f);
    print_lib(f, &l->onednn);
    fprintf(f, "  CPU engine: float32 GEMM on %s; convolutions on %s; CPU capability %s\n", l->gemm_engine,
            l->mkldnn_available ? "oneDNN (im2col for few channels)" : "im2col + GEMM", l->cpu_capability);
}

static void print_env(FILE *f) {
    fputs("\nEnvironment:\n", f);
    for (int i = 0; i < INFO_NUM_ENV; i++) {
        const char *v = getenv(info_env_names[i]);
        if (v) fprintf(f, "  %s=\"%s\"\n", info_env_names[i], v);
        else fprintf(f, "  %s: not set\n", info_env_names[i]);
    }
}

/* The cpu row shows the CPU model: ctorch names the device just "cpu". */
static const char *row_name(const info_device *row, const info_cpu *c) {
    if (!row->have_props) return "?";
    if (row->device.type == CT_DEVICE_CPU && strcmp(row->props.name, "cpu") == 0) return c->model;
    return row->props.name;
}

static void print_devices(FILE *f, const info_devices *d, const info_cpu *c) {
    fputs("\nDevices:\n", f);
    if (!d->cuda_available) fprintf(f, "  No CUDA GPU: %s\n", d->no_cuda_reason);
    int width = 4;
    for (int i = 0; i < d->count; i++) {
        int n = (int)strlen(row_name(&d->list[i], c));
        if (n > width) width = n;
    }
    if (width > 60) width = 60;
    fprintf(f, "  %-5s %-7s %-*s %-11s %12s %12s %8s %s\n", "INDEX", "BACKEND", width, "NAME", "CAPABILITY",
            "TOTAL MEM", "FREE MEM", "SMs/CUs", "HOST");
    for (int i = 0; i < d->count; i++) {
        const info_device *row = &d->list[i];
        char total[32], free_mem[32], units[16];
        info_format_bytes(row->have_props ? (int64_t)row->props.total_memory : -1, total, sizeof total);
        info_format_bytes(row->free_memory, free_mem, sizeof free_mem);
        if (row->have_props) snprintf(units, sizeof units, "%d", row->props.multi_processor_count);
        else info_copy(units, sizeof units, "-");
        fprintf(f, "  %-5d %-7s %-*.*s %-11s %12s %12s %8s %s\n", row->device.index,
                ct_device_type_name(row->device.type), width, width, row_name(row, c),
                row->capability[0] ? row->capability : "-", total, free_mem, units,
                row->have_props ? (row->props.is_host ? "yes" : "no") : "-");
        if (row->error[0]) fprintf(f, "        %s: %s\n", row->label, row->error);
    }
    /* nvidia-smi -L's lines, for the CUDA devices. */
    for (int i = 0; i < d->count; i++) {
        const info_device *row = &d->list[i];
        if (row->device.type != CT_DEVICE_CUDA) continue;
        fprintf(f, "  GPU %d: %s (compute capability %s", row->device.index, row_name(row, c), row->capability);
        if (row->pci_bus_id[0]) fprintf(f, ", PCI bus %s", row->pci_bus_id);
        fputs(")\n", f);
    }
}

void info_print_text(FILE *out, const info_report *r) {
    print_build(out, &r->build, &r->devices);
    print_system(out, &r->system, &r->cpu);
    print_libs(out, &r->libs, &r->cpu);
    print_env(out);
    print_devices(out, &r->devices, &r->cpu);
}
