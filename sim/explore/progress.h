/* progress.h — one progress line on a terminal: a bar and a text, redrawn
 * in place and cut to the terminal's width so it never wraps (a wrapped
 * line cannot be redrawn with a carriage return). Sweeps and search share
 * it; off a terminal they print whole lines instead. */
#ifndef MPSIM_PROGRESS_H
#define MPSIM_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

/* Columns of the terminal `f` writes to: its window size, else $COLUMNS,
 * else 80. */
int progress_width(FILE *f);

/* Redraw "\r[#####.....] TEXT" on `f`, `done` of `total`, in at most
 * `width` − 1 columns (the bar shrinks to 10 cells, then TEXT is cut), the
 * rest of the line cleared; a newline after it when `final`. */
void progress_bar(FILE *f, int width, long long done, long long total, const char *text,
                  bool final);

#endif
