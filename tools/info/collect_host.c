/*
 * collect_host.c — the first half of the report: which ctorch is loaded and
 * how it was built, the operating system, and the CPU (model, the ISA
 * features ctorch's CPU kernels and OpenBLAS care about, cores, threads,
 * memory). Everything comes from ctorch's public API, uname, glibc and
 * /proc, so it works on any Linux machine.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "info.h"

/* The value of "key: value" in ct_build_info's "; "-separated list. */
static void build_field(const char *info, const char *key, char *out, size_t size) {
    const char *p = strstr(info, key);
    if (!p) {
        info_copy(out, size, "unknown");
        return;
    }
    p += strlen(key);
    size_t n = strcspn(p, ";");
    if (n >= size) n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    info_trim(out);
}

/* Compiled in unless ctorch says otherwise: asking for device 0 of a type
 * whose backend is absent fails with "…was not compiled with … enabled"
 * (docs/devices.md), while a compiled backend without devices fails with
 * another message. */
static bool backend_compiled(ct_device dev) {
    ct_device resolved;
    bool compiled = ct_device_check(dev, &resolved) == CT_OK || !strstr(ct_last_error(), "not compiled");
    ct_clear_error();
    return compiled;
}

static void compiler_version(char *out, size_t size) {
#if defined(__clang__)
    info_copy(out, size, __VERSION__); /* already "Clang x.y.z …" */
#elif defined(__GNUC__)
    snprintf(out, size, "GCC %s", __VERSION__);
#elif defined(__VERSION__)
    info_copy(out, size, __VERSION__);
#else
    info_copy(out, size, "unknown");
#endif
}

void info_collect_build(info_build *b) {
    info_copy(b->version, sizeof b->version, ct_version_string());
    info_copy(b->header_version, sizeof b->header_version, CTORCH_VERSION_STRING);
    info_copy(b->build_info, sizeof b->build_info, ct_build_info());
    /* "ctorch 0.1.0 (Release); backends: …": the type is the first (…). */
    const char *open = strchr(b->build_info, '('), *close = open ? strchr(open, ')') : NULL;
    if (open && close && (size_t)(close - open - 1) < sizeof b->build_type) {
        memcpy(b->build_type, open + 1, (size_t)(close - open - 1));
        b->build_type[close - open - 1] = '\0';
    } else {
        info_copy(b->build_type, sizeof b->build_type, "unknown");
    }
    build_field(b->build_info, "backends:", b->backends, sizeof b->backends);
    b->cuda_compiled = backend_compiled(ct_device_cuda(0));
    b->opencl_compiled = backend_compiled(ct_device_opencl(0));
    compiler_version(b->compiler, sizeof b->compiler);
}

/* PRETTY_NAME="Debian GNU/Linux 12 (bookworm)" → the quoted part. */
static bool os_release_name(char *out, size_t size) {
    FILE *f = fopen("/etc/os-release", "r");
    if (!f) f = fopen("/usr/lib/os-release", "r");
    if (!f) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "PRETTY_NAME=", 12) != 0) continue;
        char *v = line + 12;
        info_trim(v);
        size_t n = strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
            v[n - 1] = '\0';
            v++;
        }
        info_copy(out, size, v);
        found = true;
    }
    fclose(f);
    return found;
}

void info_collect_system(info_system *s) {
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(s->kernel, sizeof s->kernel, "%s %s", u.sysname, u.release);
        info_copy(s->machine, sizeof s->machine, u.machine);
    } else {
        info_copy(s->kernel, sizeof s->kernel, "unknown");
        info_copy(s->machine, sizeof s->machine, "unknown");
    }
    if (!os_release_name(s->os, sizeof s->os)) info_copy(s->os, sizeof s->os, s->kernel);
#ifdef __GLIBC__
    snprintf(s->libc, sizeof s->libc, "glibc %s", gnu_get_libc_version());
#else
    info_copy(s->libc, sizeof s->libc, "unknown (not glibc)");
#endif
}

/* The ISA features worth reporting: those that decide which kernels run
 * (OpenBLAS's core, gcc's vectorised loops, bf16/fp16 paths). */
static const char *const wanted_isa[] = {
    /* x86 */ "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
    /* arm */ "asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm", "sme", NULL};

static void pick_isa(const char *flags, char *out, size_t size) {
    for (int i = 0; wanted_isa[i]; i++) {
        size_t n = strlen(wanted_isa[i]);
        for (const char *p = strstr(flags, wanted_isa[i]); p; p = strstr(p + 1, wanted_isa[i])) {
            bool starts = p == flags || p[-1] == ' ' || p[-1] == '\t';
            bool ends = p[n] == '\0' || p[n] == ' ' || p[n] == '\n' || p[n] == '\t';
            if (starts && ends) {
                info_appendf(out, size, "%s%s", out[0] ? " " : "", wanted_isa[i]);
                break;
            }
        }
    }
}

/* The model and the feature flags of the first CPU in /proc/cpuinfo (x86:
 * "model name", "flags"; arm64: "Model" where present, "Features"). */
static void read_cpuinfo(info_cpu *c) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    static char line[8192]; /* x86 flag lines are long */
    bool have_model = false, have_flags = false;
    while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = '\0';
        char *key = line, *value = colon + 1;
        info_trim(key);
        info_trim(value);
        if (!have_model && (strcmp(key, "model name") == 0 || strcmp(key, "Model") == 0 ||
                            strcmp(key, "cpu model") == 0)) {
            info_copy(c->model, sizeof c->model, value);
            have_model = true;
        } else if (!have_flags && (strcmp(key, "flags") == 0 || strcmp(key, "Features") == 0)) {
            pick_isa(value, c->isa, sizeof c->isa);
            have_flags = true;
        }
    }
    fclose(f);
}

static int64_t meminfo_bytes(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    int64_t value = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f)) {
        long long kib;
        if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%lld", &kib) == 1) {
            value = (int64_t)kib * 1024;
            break;
        }
    }
    fclose(f);
    return value;
}

void info_collect_cpu(info_cpu *c) {
    read_cpuinfo(c);
    if (!c->model[0]) info_copy(c->model, sizeof c->model, "unknown");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    c->online_cpus = online > 0 ? (int)online : 1;
    cpu_set_t set;
    c->usable_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : c->online_cpus;
#ifdef _OPENMP
    c->omp_max_threads = omp_get_max_threads();
#else
    c->omp_max_threads = -1;
#endif
    c->mem_total = meminfo_bytes("MemTotal");
    c->mem_available = meminfo_bytes("MemAvailable");
}
