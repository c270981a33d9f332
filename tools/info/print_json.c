/*
 * print_json.c — the report as one JSON object, for scripts and CI. The keys
 * are stable (new keys may be added, existing ones keep their meaning and
 * type); a value that is unknown or absent is null rather than "", so a
 * script can test for it. Sizes are in bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "info.h"

/* A minimal streaming writer: tracks, per nesting level, whether a member
 * was already written (for the commas) and indents two spaces per level. */
typedef struct json_writer {
    FILE *f;
    int depth;
    bool has_member[16];
} json_writer;

/* Length of the valid UTF-8 sequence at p, 0 if it is not one (drivers and
 * /proc may hand us any bytes; JSON must be UTF-8). */
static int utf8_length(const unsigned char *p) {
    int n = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

static void write_escaped(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else if (*p < 0x80) {
            fputc(*p, f);
        } else {
            int n = utf8_length(p);
            if (n == 0) {
                fputc('?', f);
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n - 1;
            }
        }
    }
    fputc('"', f);
}

/* Start a member (key != NULL) or an array element (key == NULL). */
static void member(json_writer *w, const char *key) {
    if (w->has_member[w->depth]) fputc(',', w->f);
    w->has_member[w->depth] = true;
    fprintf(w->f, "\n%*s", 2 * w->depth, "");
    if (key) {
        write_escaped(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_scope(json_writer *w, const char *key, char bracket) {
    if (w->depth > 0) member(w, key);
    fputc(bracket, w->f);
    w->depth++;
    w->has_member[w->depth] = false;
}

static void close_scope(json_writer *w, char bracket) {
    bool had = w->has_member[w->depth];
    w->depth--;
    if (had) fprintf(w->f, "\n%*s", 2 * w->depth, "");
    fputc(bracket, w->f);
}

static void str(json_writer *w, const char *key, const char *value) {
    member(w, key);
    if (value && value[0]) write_escaped(w->f, value);
    else fputs("null", w->f);
}

static void num(json_writer *w, const char *key, int64_t value) {
    member(w, key);
    fprintf(w->f, "%lld", (long long)value);
}

/* A count where a negative value means "unknown". */
static void num_or_null(json_writer *w, const char *key, int64_t value) {
    if (value >= 0) num(w, key, value);
    else str(w, key, NULL);
}

static void boolean(json_writer *w, const char *key, bool value) {
    member(w, key);
    fputs(value ? "true" : "false", w->f);
}

/* "cpu opencl" → ["cpu", "opencl"] */
static void word_array(json_writer *w, const char *key, const char *words) {
    open_scope(w, key, '[');
    const char *p = words;
    while (*p) {
        size_t skip = strspn(p, " "), n;
        p += skip;
        n = strcspn(p, " ");
        if (n == 0) break;
        char word[128];
        snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), p);
        str(w, NULL, word);
        p += n;
    }
    close_scope(w, ']');
}

static void lib_members(json_writer *w, const info_lib *lib) {
    boolean(w, "found", lib->found);
    str(w, "version", lib->version);
    str(w, "path", lib->path);
    str(w, "detail", lib->detail);
    /* Every library object has the same keys; this one is null unless ctorch
     * itself loads the library (cuBLAS and cuDNN in CUDA builds). */
    str(w, "ctorch_version", lib->ctorch_version);
}

static void print_lib(json_writer *w, const info_lib *lib) {
    open_scope(w, lib->key, '{');
    lib_members(w, lib);
    close_scope(w, '}');
}

static void print_build(json_writer *w, const info_build *b) {
    open_scope(w, "ctorch", '{');
    str(w, "version", b->version);
    str(w, "header_version", b->header_version);
    str(w, "build_info", b->build_info);
    str(w, "build_type", b->build_type);
    word_array(w, "backends", b->backends);
    boolean(w, "cuda_compiled", b->cuda_compiled);
    boolean(w, "opencl_compiled", b->opencl_compiled);
    str(w, "info_compiler", b->compiler);
    close_scope(w, '}');
}

static void print_system(json_writer *w, const info_system *s, const info_cpu *c) {
    open_scope(w, "system", '{');
    str(w, "os", s->os);
    str(w, "kernel", s->kernel);
    str(w, "machine", s->machine);
    str(w, "libc", s->libc);
    close_scope(w, '}');
    open_scope(w, "cpu", '{');
    str(w, "model", c->model);
    num(w, "online_cpus", c->online_cpus);
    num(w, "usable_cpus", c->usable_cpus);
    word_array(w, "isa", c->isa);
    num_or_null(w, "omp_max_threads", c->omp_max_threads);
    num_or_null(w, "memory_total", c->mem_total);
    num_or_null(w, "memory_available", c->mem_available);
    close_scope(w, '}');
}

static void print_opencl(json_writer *w, const info_opencl *cl) {
    open_scope(w, "opencl", '{');
    lib_members(w, &cl->lib);
    open_scope(w, "platforms", '[');
    for (int i = 0; i < cl->num_platforms; i++) {
        const info_cl_platform *p = &cl->platforms[i];
        open_scope(w, NULL, '{');
        str(w, "name", p->name);
        str(w, "vendor", p->vendor);
        str(w, "version", p->version);
        num(w, "device_count", p->num_devices);
        open_scope(w, "devices", '[');
        for (int j = 0; j < p->num_listed; j++) {
            const info_cl_device *d = &p->devices[j];
            open_scope(w, NULL, '{');
            str(w, "name", d->name);
            str(w, "type", d->type);
            str(w, "version", d->version);
            str(w, "driver_version", d->driver);
            num(w, "global_memory", (int64_t)d->global_mem);
            num(w, "compute_units", d->compute_units);
            close_scope(w, '}');
        }
        close_scope(w, ']');
        close_scope(w, '}');
    }
    close_scope(w, ']');
    close_scope(w, '}');
}

static void print_libs(json_writer *w, const info_libs *l) {
    open_scope(w, "libraries", '{');
    str(w, "cuda_built", l->cuda_built);
    open_scope(w, "cuda_driver", '{');
    lib_members(w, &l->driver.lib);
    str(w, "init_error", l->driver.init_error);
    num(w, "device_count", l->driver.device_count);
    close_scope(w, '}');
    print_lib(w, &l->cublas);
    print_lib(w, &l->cudnn);
    print_lib(w, &l->nccl);
    print_opencl(w, &l->opencl);
    open_scope(w, "blas", '{');
    str(w, "name", "OpenBLAS");
    str(w, "config", l->openblas_config);
    str(w, "core", l->openblas_core);
    num(w, "threads", l->openblas_threads);
    close_scope(w, '}');
    open_scope(w, "cpu_engine", '{');
    str(w, "gemm", l->gemm_engine);
    str(w, "cpu_capability", l->cpu_capability);
    boolean(w, "mkldnn_available", l->mkldnn_available);
    close_scope(w, '}');
    print_lib(w, &l->onednn);
    close_scope(w, '}');
}

static void print_env(json_writer *w) {
    open_scope(w, "environment", '{');
    for (int i = 0; i < INFO_NUM_ENV; i++) {
        const char *v = getenv(info_env_names[i]);
        member(w, info_env_names[i]);
        if (v) write_escaped(w->f, v); /* set but empty stays "" */
        else fputs("null", w->f);
    }
    close_scope(w, '}');
}

static void print_devices(json_writer *w, const info_devices *d) {
    open_scope(w, "cuda", '{');
    boolean(w, "available", d->cuda_available);
    num(w, "device_count", d->cuda_count);
    str(w, "reason", d->no_cuda_reason);
    close_scope(w, '}');
    open_scope(w, "devices", '[');
    for (int i = 0; i < d->count; i++) {
        const info_device *row = &d->list[i];
        open_scope(w, NULL, '{');
        num(w, "index", row->device.index);
        str(w, "backend", ct_device_type_name(row->device.type));
        str(w, "device", row->label);
        str(w, "name", row->have_props ? row->props.name : NULL);
        str(w, "capability", row->capability);
        num_or_null(w, "total_memory", row->have_props ? (int64_t)row->props.total_memory : -1);
        num_or_null(w, "free_memory", row->free_memory);
        num_or_null(w, "multi_processor_count", row->have_props ? row->props.multi_processor_count : -1);
        boolean(w, "is_host", row->have_props && row->props.is_host);
        str(w, "pci_bus_id", row->pci_bus_id);
        str(w, "error", row->error);
        close_scope(w, '}');
    }
    close_scope(w, ']');
}

void info_print_json(FILE *out, const info_report *r) {
    json_writer w = {.f = out};
    open_scope(&w, NULL, '{');
    num(&w, "schema_version", 1);
    print_build(&w, &r->build);
    print_system(&w, &r->system, &r->cpu);
    print_libs(&w, &r->libs);
    print_env(&w);
    print_devices(&w, &r->devices);
    close_scope(&w, '}');
    fputc('\n', out);
}
