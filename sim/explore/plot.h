/* plot.h — a sweep CSV drawn as a chart with PLplot (its cairo drivers):
 * one line per value of a --by column, y against x, infeasible points marked
 * with a red ×, axes, ticks, labels and a legend all from PLplot.
 *
 * When the sweep varied more keys than x and --by, several rows share an
 * (x, line) pair; the line goes through the best feasible y among them (in
 * the metric's sense: higher tokens_per_s and mfu, lower everything else)
 * and the subtitle says so. An infeasible point with no y (the run never
 * reached the metrics) sits on the bottom axis.
 *
 * PLplot keeps global state: call from one thread at a time. */
#ifndef MPSIM_PLOT_H
#define MPSIM_PLOT_H

#include <stdbool.h>

#include "sweep_table.h"

struct plot_options {
    const char *x, *y;   /* column names (a bare key name matches its dotted column) */
    const char *by;      /* NULL: one line */
    const char *out;     /* FILE.png, FILE.svg or FILE.pdf: the extension picks the driver */
    const char *title;   /* NULL: "Y against X" */
    bool log_x, log_y;
    int width, height;   /* pixels (PNG) or points; 0: 1000 × 700 */
};

/* Draw `t` into opt->out through a temporary file renamed into place.
 * MP_ERR_INPUT for a missing or non-numeric column (naming the flag), an
 * unknown extension, or no point to draw; MP_ERR_INTERNAL when the file
 * cannot be written. */
int plot_sweep(const struct sweep_table *t, const struct plot_options *opt,
               struct mp_error *err);

#endif
