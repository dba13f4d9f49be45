/* csv_reader.c — the one CSV reader configuration; see csv_reader.h.
 *
 * The file is read one physical line at a time (so every callback knows its
 * line) with our own bounded reader rather than getline(), which would
 * allocate a line of any length before we could refuse it. Each line is
 * checked (NUL, length, the BOM on line 1, a comment) and fed to libcsv,
 * whose callbacks append cells to an arena; finished rows queue until
 * csv_reader_next hands them out. Whether a line starts between rows (so
 * may be a comment) is libcsv's own parser state: `pstate` 0 is its
 * ROW_NOT_BEGUN (libcsv.c, 3.0.3). */
#include "csv_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void prefix(const struct csv_reader *r, long line, char *buf, size_t size)
{
    if (line > 0) snprintf(buf, size, "%s:%ld: ", r->path, line);
    else snprintf(buf, size, "%s: ", r->path);
    if (r->opts.key) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "key %s: ", r->opts.key);
    }
}

int csv_reader_fail(const struct csv_reader *r, long line, struct mp_error *err,
                    const char *fmt, ...)
{
    char head[400], what[600];
    prefix(r, line, head, sizeof head);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mp_fail(err, MP_ERR_INPUT, "%.400s%.600s", head, what);
}

/* The first error inside a callback: kept until csv_reader_next returns. */
static void fail_cb(struct csv_reader *r, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_cb(struct csv_reader *r, long line, const char *fmt, ...)
{
    if (r->failed) return;
    r->failed = true;
    char head[400], what[600];
    prefix(r, line, head, sizeof head);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(r->msg, sizeof r->msg, "%.400s%.600s", head, what);
}

static void on_field(void *s, size_t len, void *data)
{
    struct csv_reader *r = data;
    if (r->failed) return;
    if (r->n_cells - r->row_start >= CSV_CELLS_MAX) {
        fail_cb(r, r->row_line, "a row of more than %d cells, the most a row may have",
                CSV_CELLS_MAX);
        return;
    }
    MP_GROW(r->arena, r->arena_cap, r->arena_len + len + 1);
    MP_GROW(r->cell_off, r->cap_cells, r->n_cells + 1);
    r->cell_off[r->n_cells++] = r->arena_len;
    if (len) memcpy(r->arena + r->arena_len, s, len);
    r->arena_len += len;
    r->arena[r->arena_len++] = '\0';
}

static void on_row(int term, void *data)
{
    (void)term;
    struct csv_reader *r = data;
    if (r->failed) return;
    int n = r->n_cells - r->row_start;
    /* A line of blanks is one empty cell: a blank line, not a row. */
    if (n == 1 && r->arena[r->cell_off[r->row_start]] == '\0') {
        r->n_cells = r->row_start;
        return;
    }
    MP_GROW(r->rows, r->cap_rows, r->n_rows + 1);
    r->rows[r->n_rows].first = r->row_start;
    r->rows[r->n_rows].n = n;
    r->rows[r->n_rows].line = r->row_line;
    r->rows[r->n_rows].ended = r->buf_len > 0 && r->buf[r->buf_len - 1] == '\n';
    r->rows[r->n_rows].end = r->offset;
    r->n_rows++;
    r->row_start = r->n_cells;
}

int csv_reader_open(struct csv_reader *r, const char *path, const struct csv_reader_opts *opts,
                    struct mp_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (opts) r->opts = *opts;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        csv_reader_fail(r, 0, err, "is a directory, expected a CSV file");
        return MP_ERR_INPUT;
    }
    r->f = fopen(path, "rb");
    if (!r->f) {
        int e = errno;
        csv_reader_fail(r, 0, err, "cannot open: %s", strerror(e));
        return MP_ERR_INPUT;
    }
    if (csv_init(&r->p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        fclose(r->f);
        r->f = NULL;
        return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot start the CSV parser", path);
    }
    r->p_open = true;
    return MP_OK;
}

void csv_reader_close(struct csv_reader *r)
{
    if (r->f) fclose(r->f);
    if (r->p_open) csv_free(&r->p);
    free(r->buf);
    free(r->arena);
    free(r->cell_off);
    free(r->rows);
    free(r->view);
    memset(r, 0, sizeof *r);
}

/* One physical line into r->buf (with its '\n' when it has one): 1, 0 at
 * the end of the file, -1 when it is past CSV_LINE_MAX (r->failed). */
static int read_line(struct csv_reader *r)
{
    r->buf_len = 0;
    int c;
    while ((c = getc_unlocked(r->f)) != EOF) {
        if (r->buf_len >= CSV_LINE_MAX) {
            fail_cb(r, r->line + 1, "a line of more than %d bytes, the longest a line may be "
                    "(is it a CSV file?)", CSV_LINE_MAX);
            return -1;
        }
        MP_GROW(r->buf, r->buf_cap, r->buf_len + 2);
        r->buf[r->buf_len++] = (char)c;
        if (c == '\n') break;
    }
    if (r->buf_len == 0) return 0;
    r->line++;
    r->offset += (off_t)r->buf_len;
    return 1;
}

/* Feed lines until a row is queued, the file ends, or an error. */
static void fill(struct csv_reader *r)
{
    /* Handed-out rows are done with: start the arena again. */
    if (r->next_row >= r->n_rows) {
        int keep = r->n_cells - r->row_start; /* cells of a row still open */
        if (keep > 0 && r->row_start > 0) {
            size_t base = r->cell_off[r->row_start];
            memmove(r->arena, r->arena + base, r->arena_len - base);
            r->arena_len -= base;
            for (int i = 0; i < keep; i++) r->cell_off[i] = r->cell_off[r->row_start + i] - base;
        } else if (keep == 0) {
            r->arena_len = 0;
        }
        r->n_cells = keep;
        r->row_start = 0;
        r->n_rows = r->next_row = 0;
    }
    while (!r->failed && !r->eof && r->next_row >= r->n_rows) {
        int got = read_line(r);
        if (got < 0) return;
        if (got == 0) {
            r->eof = true;
            if (ferror(r->f)) {
                fail_cb(r, r->line, "cannot read: %s", strerror(errno));
                return;
            }
            if (csv_fini(&r->p, on_field, on_row, r) != 0 && !r->failed)
                fail_cb(r, r->row_line, "not valid CSV: a quoted cell opened here never "
                        "closes: expected a closing '\"' (a quote inside a cell is written "
                        "\"\")");
            return;
        }
        char *s = r->buf;
        size_t n = r->buf_len;
        char *nul = memchr(s, '\0', n);
        if (nul) {
            fail_cb(r, r->line, "a NUL byte at column %zu: expected text (is the file binary, "
                    "UTF-16, or cut short by a crash?)", (size_t)(nul - s) + 1);
            return;
        }
        if (r->line == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) s += 3, n -= 3;
        bool between = r->p.pstate == 0; /* libcsv: ROW_NOT_BEGUN */
        if (between) {
            r->row_line = r->line;
            const char *t = s;
            while (t < s + n && (*t == ' ' || *t == '\t')) t++;
            if (r->opts.comments && t < s + n && *t == '#') continue;
        }
        if (csv_parse(&r->p, s, n, on_field, on_row, r) != n && !r->failed)
            fail_cb(r, r->line, "not valid CSV: %s (a quote may open a cell or close it; "
                    "inside a quoted cell it is written \"\")",
                    csv_error(&r->p) == CSV_EPARSE ? "a stray quote" : csv_strerror(csv_error(&r->p)));
    }
}

int csv_reader_next(struct csv_reader *r, struct csv_row *row, struct mp_error *err)
{
    if (!r->failed) fill(r);
    if (r->failed && r->next_row >= r->n_rows) {
        mp_fail(err, MP_ERR_INPUT, "%s", r->msg);
        return -1;
    }
    if (r->next_row >= r->n_rows) return 0;
    const struct csv_queued *q = &r->rows[r->next_row++];
    MP_GROW(r->view, r->cap_view, q->n + 1);
    for (int i = 0; i < q->n; i++) r->view[i] = r->arena + r->cell_off[q->first + i];
    row->cell = r->view;
    row->n = q->n;
    row->line = q->line;
    row->ended = q->ended;
    row->end = q->end;
    return 1;
}

bool csv_reader_at_end(struct csv_reader *r)
{
    if (!r->f) return true;
    int c = getc_unlocked(r->f);
    if (c == EOF) return true;
    ungetc(c, r->f);
    return false;
}

int csv_split_line(const char *text, size_t len, char ***cells, int *n)
{
    *cells = NULL;
    *n = -1;
    if (memchr(text, '\0', len)) return -1;
    struct csv_reader r;
    memset(&r, 0, sizeof r);
    if (csv_init(&r.p, CSV_STRICT | CSV_STRICT_FINI) != 0) return -1;
    int bad = csv_parse(&r.p, text, len, on_field, on_row, &r) != len;
    if (!bad && csv_fini(&r.p, on_field, on_row, &r) != 0) bad = 1;
    csv_free(&r.p);
    if (!bad && !r.failed && r.n_rows == 1) {
        *n = r.rows[0].n;
        *cells = mp_xmalloc((size_t)(*n ? *n : 1) * sizeof **cells);
        for (int i = 0; i < *n; i++) (*cells)[i] = mp_xstrdup(r.arena + r.cell_off[r.rows[0].first + i]);
    }
    free(r.arena);
    free(r.cell_off);
    free(r.rows);
    return *n >= 0 ? 0 : -1;
}

bool csv_cell_number(const char *cell, double *out)
{
    if (!*cell || strlen(cell) > 64 || strspn(cell, "0123456789.eE+-") != strlen(cell)) return false;
    char *end;
    errno = 0;
    double v = strtod(cell, &end);
    if (end == cell || *end || errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}
