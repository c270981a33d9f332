/*
 * info.h — the pieces of ctorch-info, the environment report users paste
 * into bug reports (like `python -m torch.utils.collect_env` followed by
 * `nvidia-smi -L`). The report is first collected into plain structs
 * (collect_*.c), then printed as text or JSON (print_*.c), so both formats
 * always say the same thing.
 *
 * Libraries ctorch may use but must not require (the CUDA driver, cuBLAS,
 * cuDNN, NCCL, OpenCL, oneDNN) are probed with dlopen and never linked: a
 * missing one is an ordinary "not found" line, never a failure.
 */
#ifndef CTORCH_INFO_H
#define CTORCH_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ctorch/ctorch.h>

/* ---- ctorch itself and the machine ---------------------------------------- */
typedef struct info_build {
    char version[32];          /* ct_version_string(): the library loaded      */
    char header_version[32];   /* CTORCH_VERSION_STRING: the headers compiled   */
    char build_info[512];      /* ct_build_info(), verbatim                     */
    char build_type[32];       /* "Release", "Debug", … or "unknown"            */
    char backends[128];        /* space-separated compiled backends             */
    char compiler[128];        /* the compiler that built ctorch-info           */
    bool cuda_compiled, opencl_compiled;
} info_build;

typedef struct info_system {
    char os[256];              /* PRETTY_NAME of /etc/os-release, or uname      */
    char kernel[256];          /* uname: sysname release                        */
    char machine[64];          /* uname: x86_64, aarch64                        */
    char libc[64];             /* "glibc 2.36" or "unknown"                     */
} info_system;

typedef struct info_cpu {
    char model[256];
    int online_cpus;           /* logical CPUs online                           */
    int usable_cpus;           /* in this process's affinity mask               */
    char isa[512];             /* space-separated features we care about        */
    int omp_max_threads;       /* -1 when the tool was built without OpenMP     */
    int64_t mem_total, mem_available; /* bytes, -1 when unknown                 */
} info_cpu;

/* ---- optional libraries ------------------------------------------------------ */
typedef struct info_lib {
    const char *key;           /* JSON key: "cuda_driver", "cublas", …          */
    const char *label;         /* text label: "CUDA driver", "cuBLAS", …        */
    bool found;
    char version[64];          /* "13.0.0"; "" when not found                   */
    char path[512];            /* the file the loader picked                    */
    char detail[512];          /* why not found, or extra facts                 */
    char ctorch_version[32];   /* the version ctorch itself loads (cuBLAS, cuDNN
                                  in CUDA builds); "" when ctorch does not use it */
    bool ctorch_asked;         /* ctorch_version was asked of ctorch            */
} info_lib;

typedef struct info_cl_device {
    char name[256], version[128], driver[128];
    const char *type;          /* "cpu", "gpu", "accelerator", "other"          */
    uint64_t global_mem;
    unsigned compute_units;
} info_cl_device;

#define INFO_MAX_CL_DEVICES 16
#define INFO_MAX_CL_PLATFORMS 8
typedef struct info_cl_platform {
    char name[256], vendor[256], version[256];
    int num_devices;           /* devices the platform has                      */
    int num_listed;            /* of them, listed below                         */
    info_cl_device devices[INFO_MAX_CL_DEVICES];
} info_cl_platform;

typedef struct info_opencl {
    info_lib lib;              /* the ICD loader                                */
    int num_platforms;
    info_cl_platform platforms[INFO_MAX_CL_PLATFORMS];
} info_opencl;

/* What the CUDA driver (libcuda.so.1) says, through its own API. */
typedef struct info_cuda_driver {
    info_lib lib;              /* found / version / path of libcuda.so.1        */
    int init_status;           /* cuInit's CUresult (0: success)                */
    char init_error[256];      /* "CUDA_ERROR_NO_DEVICE: no CUDA-capable …"     */
    int device_count;          /* cuDeviceGetCount; 0 when init failed          */
} info_cuda_driver;

typedef struct info_libs {
    char cuda_built[32];       /* CUDA toolkit ctorch was built with, or ""     */
    int cuda_built_number;     /* CUDART_VERSION (13000), 0 when unknown        */
    info_cuda_driver driver;
    info_lib cublas, cudnn, nccl, onednn;
    info_opencl opencl;
    char openblas_config[256], openblas_core[64];
    int openblas_threads;
    char gemm_engine[96], cpu_capability[16]; /* ct_backends_cpu_gemm_engine, _get_cpu_capability */
    bool mkldnn_available;
} info_libs;

/* ---- devices -------------------------------------------------------------------- */
typedef struct info_device {
    ct_device device;
    char label[32];            /* "cpu", "cuda:0", "opencl:1"                   */
    bool have_props;
    ct_device_properties props;
    char capability[32];       /* "8.0" (CUDA), "OpenCL 3.0", "" (cpu)          */
    int64_t free_memory;       /* bytes, -1 when unknown                        */
    char pci_bus_id[32];       /* CUDA only, from the driver; "" if unknown     */
    char error[256];           /* ctorch's message when a query failed          */
} info_device;

#define INFO_MAX_DEVICES 64
typedef struct info_devices {
    int count;
    info_device list[INFO_MAX_DEVICES];
    bool cuda_available;
    int cuda_count;
    char no_cuda_reason[1024]; /* "" when a CUDA GPU is usable                  */
} info_devices;

/* The environment variables that change what ctorch does or sees. */
#define INFO_NUM_ENV 9
extern const char *const info_env_names[INFO_NUM_ENV];

typedef struct info_report {
    info_build build;
    info_system system;
    info_cpu cpu;
    info_libs libs;
    info_devices devices;
} info_report;

/* collect_host.c */
void info_collect_build(info_build *b);
void info_collect_system(info_system *s);
void info_collect_cpu(info_cpu *c);
/* collect_libs.c (needs build->cuda_compiled for the CUDA toolkit line) */
void info_collect_libs(info_libs *l, const info_build *b);
/* collect_devices.c: the device table, after the other collectors (the CPU
 * row uses the memory figures, the no-GPU reason the driver probe). */
void info_collect_devices(info_devices *d, const info_build *b, const info_cpu *c, const info_libs *l);

/* cuda_driver.c: the driver probe, and a device's PCI bus id by ordinal
 * (the driver numbers devices as the runtime does, after
 * CUDA_VISIBLE_DEVICES). */
void info_probe_cuda_driver(info_cuda_driver *d);
bool info_cuda_pci_bus_id(int ordinal, char *buf, size_t size);
/* collect_opencl.c: the OpenCL platforms and devices the ICD loader sees. */
void info_probe_opencl(info_opencl *cl);

/* print_text.c, print_json.c */
void info_print_text(FILE *out, const info_report *r);
void info_print_json(FILE *out, const info_report *r);

/* util.c: bounded string helpers shared by the collectors. */
void info_copy(char *dst, size_t size, const char *src);
void info_appendf(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void info_trim(char *s);
/* Open the first of names[] that loads (RTLD_NOW | RTLD_LOCAL); the dlerror
 * of the first name goes to detail when none does. */
void *info_dlopen_first(const char *const *names, char *detail, size_t detail_size);
/* The file a loaded symbol came from, into lib->path. */
void info_record_path(info_lib *lib, void *symbol);
/* "1.50 GiB"-style size, into buf. */
const char *info_format_bytes(int64_t bytes, char *buf, size_t size);

#endif /* CTORCH_INFO_H */
