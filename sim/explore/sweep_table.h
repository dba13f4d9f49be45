/* sweep_table.h — a sweep CSV read back (libcsv) and the questions asked of
 * it: `--best` (the best rows and what each neighbour lost by) and `--pareto`.
 * It reads files only, never a running sweep, so a resumed sweep or
 * yesterday's CSV answer the same way; sweep.h (the runner) builds on it,
 * not the other way round. */
#ifndef MPSIM_SWEEP_TABLE_H
#define MPSIM_SWEEP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sim/common.h"

/* Free an array of `n` malloc'd strings (cells of a row, values of an axis). */
void sweep_values_free(char **values, int n);

/* Split one CSV line (without its newline) into cells with libcsv; free
 * them with sweep_values_free. -1 when it is not valid CSV. */
int sweep_csv_split(const char *line, size_t len, char ***cells, int *n);

/* A CSV held in memory, cells as text. */
struct sweep_table {
    char **col;   /* [n_cols] header names */
    int n_cols;
    char ***cell; /* [n_rows][n_cols] */
    int n_rows;
};

/* Read a CSV (libcsv) whose first row is its header; every row must have the
 * header's width. MP_ERR_INPUT names the file and row. */
int sweep_table_load(struct sweep_table *t, const char *path, struct mp_error *err);
void sweep_table_release(struct sweep_table *t);

/* Index of column `name`, or -1. */
int sweep_table_col(const struct sweep_table *t, const char *name);

/* As sweep_table_col, also matching a bare key name ("pp" for parallel.pp),
 * but a missing column fills `err` (MP_ERR_INPUT naming `flag`, with a
 * did-you-mean and the columns there are) before returning -1. */
int sweep_table_need(const struct sweep_table *t, const char *name, const char *flag,
                     struct mp_error *err);

/* A cell as a number; NaN when empty or not a number. */
double sweep_table_num(const struct sweep_table *t, int row, int col);

/* Whether row `row` has feasible = true. */
bool sweep_table_feasible(const struct sweep_table *t, int row);

/* +1 when more of `column` is better (tokens_per_s, mfu, requests_completed,
 * requests_per_s, goodput_frac, goodput_rps), −1 when less is (step time, latencies, bubble, memory,
 * cost, anything else). */
int sweep_metric_sense(const char *column);

/* `--best METRIC`: the `top` best feasible rows, then each neighbour of the
 * best (one varied key one step away in the grid) with what it lost by:
 * step time, bubble, peak memory, exposed communication when the CSV has
 * it, or why it is infeasible. `varied` is the number of leading columns
 * that are varied keys. */
int sweep_print_best(FILE *f, const struct sweep_table *t, int varied, const char *metric,
                     int top, struct mp_error *err);

/* `--pareto X,Y`: the feasible rows no other feasible row beats on both X
 * and Y (each in its sense), sorted by X. */
int sweep_print_pareto(FILE *f, const struct sweep_table *t, int varied, const char *spec,
                       struct mp_error *err);

#endif
