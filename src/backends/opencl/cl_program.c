/*
 * cl_program.c — the embedded kernel program of the OpenCL backend: built
 * for a device on first use, its kernels created once by name and shared,
 * and the helpers every op uses to describe tensors and launch kernels.
 *
 * The program text is src/kernels/ (kdefs.h, philox.h, *.kh) turned into
 * string literals at build time (cmake/embed_kernels.cmake), so the library
 * needs no files at run time. Drivers keep their own caches of compiled
 * programs (PoCL under ~/.cache/pocl), so later runs build faster; on PoCL
 * the builds of processes sharing that cache take turns (see "builds on
 * PoCL" below).
 */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, nanosleep */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h> /* flock */
#include <time.h>
#include <unistd.h>

#include "cl_device.h"

/* cl_program_source.c, generated. */
extern const char *const ct_cl_program_lines[];
extern const size_t ct_cl_program_line_count;
extern const char ct_cl_program_hash[];

/* ---- error names ------------------------------------------------------------------ */

const char *ct_cl_error_name(cl_int err) {
    switch (err) {
#define CT_CL_NAME(e) case e: return #e;
    CT_CL_NAME(CL_SUCCESS)
    CT_CL_NAME(CL_DEVICE_NOT_FOUND)
    CT_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    CT_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    CT_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CT_CL_NAME(CL_OUT_OF_RESOURCES)
    CT_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    CT_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    CT_CL_NAME(CL_MEM_COPY_OVERLAP)
    CT_CL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    CT_CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    CT_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    CT_CL_NAME(CL_MAP_FAILURE)
    CT_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    CT_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    CT_CL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    CT_CL_NAME(CL_LINKER_NOT_AVAILABLE)
    CT_CL_NAME(CL_LINK_PROGRAM_FAILURE)
    CT_CL_NAME(CL_DEVICE_PARTITION_FAILED)
    CT_CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    CT_CL_NAME(CL_INVALID_VALUE)
    CT_CL_NAME(CL_INVALID_DEVICE_TYPE)
    CT_CL_NAME(CL_INVALID_PLATFORM)
    CT_CL_NAME(CL_INVALID_DEVICE)
    CT_CL_NAME(CL_INVALID_CONTEXT)
    CT_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    CT_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    CT_CL_NAME(CL_INVALID_HOST_PTR)
    CT_CL_NAME(CL_INVALID_MEM_OBJECT)
    CT_CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    CT_CL_NAME(CL_INVALID_IMAGE_SIZE)
    CT_CL_NAME(CL_INVALID_SAMPLER)
    CT_CL_NAME(CL_INVALID_BINARY)
    CT_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    CT_CL_NAME(CL_INVALID_PROGRAM)
    CT_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    CT_CL_NAME(CL_INVALID_KERNEL_NAME)
    CT_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
    CT_CL_NAME(CL_INVALID_KERNEL)
    CT_CL_NAME(CL_INVALID_ARG_INDEX)
    CT_CL_NAME(CL_INVALID_ARG_VALUE)
    CT_CL_NAME(CL_INVALID_ARG_SIZE)
    CT_CL_NAME(CL_INVALID_KERNEL_ARGS)
    CT_CL_NAME(CL_INVALID_WORK_DIMENSION)
    CT_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    CT_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    CT_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
    CT_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    CT_CL_NAME(CL_INVALID_EVENT)
    CT_CL_NAME(CL_INVALID_OPERATION)
    CT_CL_NAME(CL_INVALID_GL_OBJECT)
    CT_CL_NAME(CL_INVALID_BUFFER_SIZE)
    CT_CL_NAME(CL_INVALID_MIP_LEVEL)
    CT_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    CT_CL_NAME(CL_INVALID_PROPERTY)
    CT_CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    CT_CL_NAME(CL_INVALID_COMPILER_OPTIONS)
    CT_CL_NAME(CL_INVALID_LINKER_OPTIONS)
    CT_CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef CT_CL_NAME
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
}

/* ---- building the program ------------------------------------------------------------- */

/* The first lines of the build log, enough to see the first errors. */
static char *build_log_head(cl_program p, cl_device_id id) {
    size_t n = 0;
    if (clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0) return NULL;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) {
        free(log);
        return NULL;
    }
    log[n] = '\0';
    const int max_lines = 12;
    const size_t max_chars = 1500;
    int lines = 0;
    size_t i = 0;
    while (log[i] && i < max_chars && lines < max_lines)
        if (log[i++] == '\n') lines++;
    log[i] = '\0';
    return log;
}

static void build_options(const ct_cl_device *d, char *buf, size_t size) {
    snprintf(buf, size, "%s%s", d->has_cl12 ? "-cl-std=CL1.2" : "",
             /* float division and sqrt then round as the CPU's do */
             d->exact_fp32_divide ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
}

/* ---- builds on PoCL: one at a time per kernel cache ---------------------------------------
 *
 * Issue 15 item 4. PoCL 3.1 keeps a built program as <cache>/<hash>/program.bc.
 * Processes that compile the same program at the same time each write it
 * with pocl_write_file(..., dont_rewrite = 0): the later one unlinks the
 * file the first one wrote, then renames its own into place (strace: unlink,
 * then rename ~1 ms later). A build that found program.bc and reads it in
 * that window fails with CL_BUILD_PROGRAM_FAILURE and a log with no compiler
 * message ("Device ... failed to build the program"): 1 of 600 processes of
 * tools/pocl-stress.sh with a shared cache failed so. So a build on PoCL
 * holds an exclusive flock on <cache>/ctorch-build.lock (a descriptor of
 * its own, so two devices of one process take turns too): ctorch's builds
 * sharing a cache run one at a time, and the later ones load the first
 * one's program.bc instead of compiling it again. The wait is bounded (5
 * minutes, then the build goes ahead unlocked), and a build that still
 * fails without a compiler error (another program rewriting the cache, no
 * lock) is tried once more. */

static bool on_pocl(const ct_cl_device *d) {
    char name[128] = "";
    clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    return strstr(name, "Portable Computing Language") != NULL;
}

/* <PoCL's cache folder, found as PoCL does>/ctorch-build.lock; false when
 * PoCL caches nothing (POCL_KERNEL_CACHE=0) or there is no folder to name. */
static bool build_lock_path(char *buf, size_t size) {
    const char *off = getenv("POCL_KERNEL_CACHE");
    if (off && strcmp(off, "0") == 0) return false;
    const char *dir = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const char *lock = "ctorch-build.lock";
    int n;
    if (dir && dir[0]) n = snprintf(buf, size, "%s/%s", dir, lock);
    else if (xdg && xdg[0]) n = snprintf(buf, size, "%s/pocl/kcache/%s", xdg, lock);
    else if (home && home[0]) n = snprintf(buf, size, "%s/.cache/pocl/kcache/%s", home, lock);
    else return false;
    return n > 0 && (size_t)n < size;
}

/* The locked descriptor, or -1 to build without the lock. */
static int lock_builds(const ct_cl_device *d) {
    char path[4096];
    if (!on_pocl(d) || !build_lock_path(path, sizeof path)) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return -1; /* no cache folder yet, or not writable */
    const struct timespec pause = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 5 * 60 * 50; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        nanosleep(&pause, NULL);
    }
    close(fd);
    return -1;
}

static void unlock_builds(int fd) {
    if (fd >= 0) close(fd); /* releases the flock */
}

/* Build `count` source lines for d, under the PoCL build lock, once more
 * after a failure without a compiler error. On failure *message (malloc'd)
 * says why, with the head of the build log. */
static ct_status build_lines(ct_cl_device *d, int dev, cl_uint count, const char *const *lines,
                             const char *extra_options, const char *what, cl_program *out, char **message) {
    char options[1024];
    build_options(d, options, sizeof options);
    if (extra_options && *extra_options) {
        size_t used = strlen(options);
        snprintf(options + used, sizeof options - used, " %s", extra_options);
    }
    cl_int err = CL_SUCCESS;
    char *log = NULL;
    *out = NULL;
    *message = NULL;
    int lock = lock_builds(d);
    for (int attempt = 0; attempt < 2; attempt++) {
        free(log);
        log = NULL;
        cl_program p = clCreateProgramWithSource(d->context, count, (const char **)lines, NULL, &err);
        if (err != CL_SUCCESS) {
            unlock_builds(lock);
            return ct_error_set(CT_ERR_BACKEND, "opencl:%d: clCreateProgramWithSource failed: %s (%d)", dev,
                                ct_cl_error_name(err), (int)err);
        }
        err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
        if (err == CL_SUCCESS) {
            unlock_builds(lock);
            *out = p;
            return CT_OK;
        }
        log = build_log_head(p, d->id);
        clReleaseProgram(p);
        /* a compiler error stays one; only a failure without one is tried again */
        if (err != CL_BUILD_PROGRAM_FAILURE || (log && strstr(log, "error:"))) break;
    }
    unlock_builds(lock);
    size_t size = 512 + (log ? strlen(log) : 0);
    *message = malloc(size);
    if (*message)
        snprintf(*message, size, "opencl:%d (%s): building %s failed: %s (%d)%s%s", dev, d->name, what,
                 ct_cl_error_name(err), (int)err, log ? "; build log:\n" : "", log ? log : "");
    free(log);
    return err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES ? CT_ERR_OOM : CT_ERR_BACKEND;
}

static ct_status build_program(ct_cl_device *d, int dev) {
    return build_lines(d, dev, (cl_uint)ct_cl_program_line_count, ct_cl_program_lines, NULL, "the kernel program",
                       &d->program, &d->program_error);
}

ct_status ct_cl_build_user_program(int dev, const char *source, const char *options, cl_program *out) {
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    char *message = NULL;
    ct_status st = build_lines(d, dev, 1, &source, options, "a user kernel", out, &message);
    if (st != CT_OK && message) ct_error_set(st, "%s", message);
    free(message);
    return st;
}

/* Builds once per device; a failure is remembered and reported again. */
static ct_status ensure_program(ct_cl_device *d, int dev) {
    if (!d->program_tried) {
        d->program_status = build_program(d, dev);
        d->program_tried = true;
    }
    if (d->program_status != CT_OK)
        return ct_error_set(d->program_status, "%s",
                            d->program_error ? d->program_error : "opencl: building the kernel program failed");
    return CT_OK;
}

ct_status ct_cl_kernel(int dev, const char *name, cl_kernel *out) {
    ct_cl_device *d = ct_cl_ready(dev);
    if (!d) return ct_last_status();
    pthread_mutex_lock(&d->program_mutex);
    ct_status st = ensure_program(d, dev);
    ct_cl_kernel_entry *e = NULL;
    if (st == CT_OK) {
        for (e = d->kernels; e && strcmp(e->name, name) != 0;) e = e->next;
        if (!e) {
            cl_int err = CL_SUCCESS;
            cl_kernel k = clCreateKernel(d->program, name, &err);
            if (err != CL_SUCCESS) {
                st = ct_error_set(err == CL_INVALID_KERNEL_NAME ? CT_ERR_INTERNAL : CT_ERR_BACKEND,
                                  "opencl:%d: kernel %s: %s (%d)", dev, name, ct_cl_error_name(err), (int)err);
            } else if (!(e = malloc(sizeof *e + strlen(name) + 1))) {
                clReleaseKernel(k);
                st = ct_error_set(CT_ERR_OOM, "opencl: out of host memory caching kernel %s", name);
            } else {
                strcpy(e->name, name);
                e->kernel = k;
                e->next = d->kernels;
                d->kernels = e;
            }
        }
    }
    pthread_mutex_unlock(&d->program_mutex);
    if (st == CT_OK) *out = e->kernel;
    return st;
}

void ct_cl_kernel_lock(int dev) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (d) pthread_mutex_lock(&d->launch_mutex);
}

void ct_cl_kernel_unlock(int dev) {
    ct_cl_device *d = ct_cl_dev(dev);
    if (d) pthread_mutex_unlock(&d->launch_mutex);
}

/* ---- tensors and launches --------------------------------------------------------------- */

static ct_status enqueue(int dev, cl_kernel k, size_t global, size_t local) {
    cl_command_queue q = ct_cl_queue(dev);
    if (!q) return ct_last_status();
    cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, local ? &local : NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS) return CT_OK;
    char name[128] = "?";
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
    return ct_error_set(err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ? CT_ERR_OOM
                                                                                             : CT_ERR_BACKEND,
                        "opencl:%d: launching kernel %s (%zu work items in groups of %zu) failed: %s (%d)", dev,
                        name, global, local, ct_cl_error_name(err), (int)err);
}

ct_status ct_cl_launch_1d(int dev, cl_kernel k, size_t n) {
    if (n == 0) return CT_OK;
    ct_cl_device *d = ct_cl_dev(dev);
    if (!d) return ct_last_status();
    size_t limit = 0, local = 1;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, NULL) != CL_SUCCESS)
        limit = d->max_group;
    if (limit > 256) limit = 256;
    while (local * 2 <= limit) local *= 2;
    size_t global = (n + local - 1) / local * local;
    return enqueue(dev, k, global, local);
}

ct_status ct_cl_launch(int dev, cl_kernel k, size_t global, size_t local) {
    if (global == 0) return CT_OK;
    return enqueue(dev, k, global, local);
}
