/* csv_reader.h — one CSV reader configuration for every CSV mpsim reads
 * (issue 16): the chip catalogue, the routing and request traces, sweep and
 * plot CSVs and a sweep's resume partial, all through libcsv in one way.
 *
 * - strict: a stray quote inside an unquoted cell, or text after a closing
 *   quote, is an error; a quoted cell may hold commas, quotes ("") and line
 *   breaks;
 * - a UTF-8 byte-order mark on line 1 is skipped, CRLF line ends are line
 *   ends, blank lines (and, when asked, lines starting with '#') are skipped;
 * - a NUL byte is an error naming its line and column (it would cut a cell
 *   short in C), and so is a line longer than CSV_LINE_MAX or a row of more
 *   than CSV_CELLS_MAX cells (limits, stated in the message);
 * - every message is one line, "FILE:LINE: [key K: ]what was wrong, what was
 *   expected", with cells quoted by mp_quote (no raw newlines, no invisible
 *   characters).
 * Rows are streamed: memory is one row's, whatever the file's size. */
#ifndef MPSIM_CSV_READER_H
#define MPSIM_CSV_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <csv.h>

#include "sim/common.h"

/* Limits (stated in the messages): a physical line of 1 MiB (a sweep row
 * with a long reason is a few KB), and 65,536 cells in a row (a routing
 * trace has one per expert; a sweep one per column). */
#define CSV_LINE_MAX (1 << 20)
#define CSV_CELLS_MAX 65536

struct csv_reader_opts {
    const char *key;   /* the scenario key that named the file ("experts.trace"): every
                          message says "key K: "; NULL: none */
    bool comments;     /* skip lines whose first character is '#' (outside a quoted cell) */
};

/* One row. Cells are NUL-terminated and stay valid until the next call. */
struct csv_row {
    char **cell;
    int n;
    long line;         /* the physical line the row starts on (1-based) */
    bool ended;        /* its last line ended with a line break (a torn last row has not) */
    off_t end;         /* bytes of the file up to the end of this row's last line */
};

/* A parsed row waiting in the reader: a run of cells in its arena. */
struct csv_queued {
    int first, n;
    long line;
    bool ended;
    off_t end;
};

struct csv_reader {
    const char *path;
    struct csv_reader_opts opts;
    FILE *f;
    struct csv_parser p;
    bool p_open, eof, failed;
    long line;              /* physical lines read */
    long row_line;          /* where the row being parsed started */
    off_t offset;           /* bytes read */
    char *buf;              /* the current physical line */
    size_t buf_len, buf_cap;
    /* Parsed cells: text in an arena, each row a run of cell offsets. */
    char *arena;
    size_t arena_len, arena_cap;
    size_t *cell_off;
    int n_cells, cap_cells;
    struct csv_queued *rows;
    int n_rows, cap_rows, next_row, row_start;
    char **view;            /* the row handed out */
    int cap_view;
    char msg[1024];         /* the first error met inside a libcsv callback */
};

/* Open `path`. MP_ERR_INPUT "PATH: [key K: ]cannot open: REASON" (a
 * directory says so). On failure the reader is closed already. */
int csv_reader_open(struct csv_reader *r, const char *path, const struct csv_reader_opts *opts,
                    struct mp_error *err);

/* The next row: 1 and *row filled, 0 at the end of the file, or -1 with
 * `err` naming the line (bad CSV, a NUL, a line or row past its limit, a
 * read error). */
int csv_reader_next(struct csv_reader *r, struct csv_row *row, struct mp_error *err);

/* Fill `err` with "PATH:LINE: [key K: ]" and the printf-style rest, for a
 * row's content (the caller's checks); returns MP_ERR_INPUT. */
int csv_reader_fail(const struct csv_reader *r, long line, struct mp_error *err,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Whether nothing follows what has been read: after an error, that the
 * line at fault was the file's last (a row torn by a crash, not damage in
 * the middle). */
bool csv_reader_at_end(struct csv_reader *r);

void csv_reader_close(struct csv_reader *r);

/* A cell that is a plain finite decimal number (digits, '.', 'e', signs;
 * at most 64 characters; no units, no blanks): true with it in *out. The
 * data tables' numeric columns (hardware/kernels.csv, collectives.csv). */
bool csv_cell_number(const char *cell, double *out);

/* Split one line of text (no line break needed) into cells with the same
 * rules; -1 when it is not one valid row. Cells are malloc'd, *cells an
 * array of *n of them: free each and the array. */
int csv_split_line(const char *text, size_t len, char ***cells, int *n);

#endif
