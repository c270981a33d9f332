/*
 * progress.c — the training progress display, after tqdm: on a terminal a
 * bar redrawn at most ten times a second,
 *   epoch 1/3  42%|██████▎        | 197/469 [00:12<00:17, 1043 img/s, loss=0.4312]
 * and, when stderr is a file or a pipe (cluster logs), one plain line every
 * ten seconds and at the end, so logs are never flooded with carriage returns.
 * UTF-8 block characters only when the locale says UTF-8, '#' otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train.h"

#define BAR_WIDTH 24
#define BAR_REFRESH_S 0.1
#define PLAIN_EVERY_S 10.0

struct progress {
    progress_mode mode;       /* BAR, PLAIN or NONE after resolving AUTO */
    bool utf8;
    char desc[64];
    int64_t total, batch_size, last_n;
    double start, last_draw;
    double last_loss;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool locale_is_utf8(void) {
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8");
    }
    return false;
}

void format_duration(double seconds, char *buf, size_t size) {
    if (!(seconds >= 0) || seconds > 1e8) {
        snprintf(buf, size, "?");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, size, "%02ld:%02ld", s / 60, s % 60);
}

progress *progress_new(progress_mode mode, const char *desc, int64_t total, int64_t batch_size) {
    progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (mode == PROGRESS_AUTO) mode = isatty(STDERR_FILENO) ? PROGRESS_BAR : PROGRESS_PLAIN;
    p->mode = mode;
    p->utf8 = locale_is_utf8();
    snprintf(p->desc, sizeof p->desc, "%s", desc);
    p->total = total;
    p->batch_size = batch_size;
    p->start = p->last_draw = now_s();
    return p;
}

/* The bar's filled part in eighths of a cell, as tqdm draws it. */
static void draw_bar(const progress *p, char *out, size_t size, double frac) {
    static const char *const EIGHTHS[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    int cells = (int)(frac * BAR_WIDTH * 8);
    size_t len = 0;
    for (int i = 0; i < BAR_WIDTH && len + 4 < size; i++) {
        int fill = cells - i * 8;
        const char *s = fill >= 8 ? (p->utf8 ? "█" : "#") : fill > 0 ? (p->utf8 ? EIGHTHS[fill] : "") : " ";
        if (!*s) s = " ";
        size_t n = strlen(s);
        memcpy(out + len, s, n);
        len += n;
    }
    out[len] = '\0';
}

static void draw(progress *p, int64_t n, bool final) {
    double elapsed = now_s() - p->start;
    double rate = elapsed > 0 ? (double)n * p->batch_size / elapsed : 0.0;
    double remaining = n > 0 ? elapsed / n * (p->total - n) : -1;
    char el[64], rem[64];
    format_duration(elapsed, el, sizeof el);
    format_duration(remaining, rem, sizeof rem);
    double frac = p->total > 0 ? (double)n / p->total : 1.0;
    if (p->mode == PROGRESS_BAR) {
        char bar[BAR_WIDTH * 4 + 1];
        draw_bar(p, bar, sizeof bar, frac);
        fprintf(stderr, "\r%s %3.0f%%|%s| %lld/%lld [%s<%s, %.0f img/s, loss=%.4f]%s", p->desc, frac * 100, bar,
                (long long)n, (long long)p->total, el, rem, rate, p->last_loss, final ? "\n" : "\033[K");
    } else {
        fprintf(stderr, "%s step %lld/%lld loss %.4f %.1f img/s elapsed %s eta %s\n", p->desc, (long long)n,
                (long long)p->total, p->last_loss, rate, el, rem);
    }
    fflush(stderr);
}

void progress_update(progress *p, int64_t n, double loss) {
    if (!p) return;
    p->last_n = n;
    p->last_loss = loss;
    if (p->mode == PROGRESS_NONE) return;
    double t = now_s();
    double every = p->mode == PROGRESS_BAR ? BAR_REFRESH_S : PLAIN_EVERY_S;
    if (t - p->last_draw < every && n < p->total) return;
    p->last_draw = t;
    draw(p, n, false);
}

void progress_finish(progress *p) {
    if (!p) return;
    if (p->mode == PROGRESS_BAR) draw(p, p->last_n, true);
    free(p);
}
