/*
 * util.c — small helpers of ctorch-info: bounded string building (every
 * field of the report is a fixed-size buffer, so nothing a library returns
 * can overflow it) and the dlopen probing shared by all library checks.
 */
#define _GNU_SOURCE /* dladdr */
#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>

#include "info.h"

void info_copy(char *dst, size_t size, const char *src) {
    if (size == 0) return;
    snprintf(dst, size, "%s", src ? src : "");
}

void info_appendf(char *dst, size_t size, const char *fmt, ...) {
    size_t used = strlen(dst);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, size - used, fmt, ap);
    va_end(ap);
}

/* Drivers pad some strings with spaces or newlines (OpenCL names, cpuinfo). */
void info_trim(char *s) {
    size_t start = 0, len = strlen(s);
    while (start < len && isspace((unsigned char)s[start])) start++;
    while (len > start && isspace((unsigned char)s[len - 1])) len--;
    memmove(s, s + start, len - start);
    s[len - start] = '\0';
}

void *info_dlopen_first(const char *const *names, char *detail, size_t detail_size) {
    char first_error[384] = "";
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        const char *err = dlerror();
        if (i == 0) info_copy(first_error, sizeof first_error, err ? err : names[i]);
    }
    info_copy(detail, detail_size, first_error);
    return NULL;
}

void info_record_path(info_lib *lib, void *symbol) {
    Dl_info dl;
    if (symbol && dladdr(symbol, &dl) && dl.dli_fname) info_copy(lib->path, sizeof lib->path, dl.dli_fname);
}

const char *info_format_bytes(int64_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 0) {
        info_copy(buf, size, "-");
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, size, "%lld B", (long long)bytes);
    else snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}
