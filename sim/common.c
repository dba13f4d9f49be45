/* common.c — error records, checked allocation, the wall clock and the data folder. */
#include "common.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifndef MPSIM_DATADIR
#define MPSIM_DATADIR "."
#endif

int mp_fail(struct mp_error *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void mp_error_prefix(struct mp_error *err, const char *fmt, ...)
{
    if (!err) return;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    /* Shift the old message right and copy the prefix in front, truncating. */
    size_t hl = strlen(head), tl = strlen(err->msg), cap = sizeof err->msg - 1;
    if (hl > cap) hl = cap;
    if (hl + tl > cap) tl = cap - hl;
    memmove(err->msg + hl, err->msg, tl);
    memcpy(err->msg, head, hl);
    err->msg[hl + tl] = '\0';
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "mpsim: out of memory (asked for %zu bytes)\n", n);
    exit(MP_ERR_INTERNAL);
}

void *mp_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *mp_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size);
    return p;
}

void *mp_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

void mp_heap_keep(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

char *mp_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = mp_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

size_t mp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

double mp_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *mp_data_dir(void)
{
    const char *home = getenv("MPSIM_HOME");
    return (home && *home) ? home : MPSIM_DATADIR;
}

size_t mp_utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        size_t len;
        unsigned min, cp;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xe0) == 0xc0) { len = 2; min = 0x80; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { len = 3; min = 0x800; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { len = 4; min = 0x10000; cp = c & 0x07; }
        else return i;
        if (i + len > n) return i;
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xc0) != 0x80) return i;
            cp = (cp << 6) | (u[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += len;
    }
    return n;
}

mp_time mp_time_from_ps(double ps)
{
    assert(!(ps < 0) && "a negative duration: a formula, not the input, is wrong");
    if (!(ps < (double)MP_TIME_HUGE)) return MP_TIME_HUGE; /* NaN and ∞ land here too */
    return (mp_time)llround(ps);
}

mp_time mp_time_from_s(double s)
{
    return mp_time_from_ps(s * 1e12);
}

mp_time mp_time_add(mp_time a, mp_time b)
{
    assert(a >= 0 && b >= 0);
    return a < MP_TIME_HUGE - b ? a + b : MP_TIME_HUGE;
}

mp_time mp_time_mul(mp_time a, long long k)
{
    assert(a >= 0 && k >= 0);
    mp_time r;
    if (__builtin_mul_overflow(a, k, &r) || r > MP_TIME_HUGE) return MP_TIME_HUGE;
    return r;
}

mp_time mp_time_scale(mp_time a, double share)
{
    assert(a >= 0 && !(share < 0));
    double v = share * (double)a;
    if (!(v < (double)MP_TIME_HUGE)) return MP_TIME_HUGE;
    return (mp_time)v;
}

void mp_quote(const char *s, size_t n, size_t max, char *out, size_t size)
{
    size_t o = 0, i = 0;
    if (size == 0) return;
    while (i < n && i < max) {
        unsigned char c = (unsigned char)s[i];
        char esc[8] = "";
        size_t take = 1;
        if (c == '\n') strcpy(esc, "\\n");
        else if (c == '\r') strcpy(esc, "\\r");
        else if (c == '\t') strcpy(esc, "\\t");
        else if (c < 0x20 || c == 0x7f) snprintf(esc, sizeof esc, "\\x%02x", c);
        else if (c >= 0x80) {
            size_t ok = mp_utf8_valid_prefix(s + i, n - i > 4 ? 4 : n - i);
            size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            if (len == 0 || ok < len) snprintf(esc, sizeof esc, "\\x%02x", c);
            else if (len == 3 && !memcmp(s + i, "\xef\xbb\xbf", 3)) strcpy(esc, "\\uFEFF"), take = 3;
            else take = len;
        }
        if (esc[0]) {
            size_t l = strlen(esc);
            if (o + l + 1 > size) break;
            memcpy(out + o, esc, l);
            o += l;
        } else {
            if (o + take + 1 > size) break;
            memcpy(out + o, s + i, take);
            o += take;
        }
        i += take;
    }
    if (i < n && o + 4 <= size) memcpy(out + o, "...", 3), o += 3;
    out[o] = '\0';
}
