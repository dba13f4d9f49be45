/* progress.c — a progress bar that fits its terminal; see progress.h. */
#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int progress_width(FILE *f)
{
    struct winsize ws;
    if (f && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    int n = c ? atoi(c) : 0;
    return n > 0 ? n : 80;
}

/* Bytes of `s` that fill at most `cols` columns (one per UTF-8 character). */
static size_t fit(const char *s, int cols)
{
    size_t i = 0;
    int used = 0;
    while (s[i]) {
        size_t len = 1;
        while ((s[i + len] & 0xC0) == 0x80) len++;
        if (used + 1 > cols) break;
        used++;
        i += len;
    }
    return i;
}

static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++) n += (*s & 0xC0) != 0x80;
    return n;
}

void progress_bar(FILE *f, int width, long long done, long long total, const char *text,
                  bool final)
{
    if (width < 20) width = 20;
    int room = width - 1;              /* the last column would wrap on some terminals */
    int tlen = columns(text);
    int cells = room - 3 - tlen;       /* "[" bar "] " */
    if (cells > 30) cells = 30;
    if (cells < 10) cells = 10;
    char bar[32];
    int fill = total > 0 ? (int)(cells * done / total) : cells;
    for (int i = 0; i < cells; i++) bar[i] = i < fill ? '#' : '.';
    bar[cells] = '\0';
    int left = room - cells - 3;
    fprintf(f, "\r[%s] %.*s\033[K%s", bar, (int)fit(text, left > 0 ? left : 0), text,
            final ? "\n" : "");
    fflush(f);
}
