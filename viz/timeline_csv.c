/* timeline_csv.c — the timeline CSV, read with libcsv and written back.
 *
 * The file is fed to libcsv one line at a time so that, when a record ends,
 * we know the line it ends on and the text it came from, and every message
 * can name the line and the column (the character where the bad field
 * starts). A bad row stops the read with MP_ERR_INPUT; the viewer exits 2
 * before it opens a window.
 *
 * Columns: the original 13, which every file has in this order, then any of
 * the columns mpsim added later, in any order (a file written before them
 * still opens). */
#include "timeline.h"

#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char timeline_csv_header[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,"
    "label,op,released_by,microbatch2,chunk2,direction,direction2,comm";

enum col {
    C_CHIP, C_STAGE, C_STREAM, C_KIND, C_MB, C_CHUNK, C_LFIRST, C_LLAST,
    C_START, C_END, C_BYTES, C_MEM, C_LABEL, N_BASE,
    C_OP = N_BASE, C_RELEASED, C_MB2, C_CHUNK2, C_DIR, C_DIR2, C_COMM, N_COLS
};

static const char *const col_names[N_COLS] = {
    "chip", "stage", "stream", "kind", "microbatch", "chunk", "layer_first", "layer_last",
    "start_s", "end_s", "bytes", "mem_bytes", "label",
    "op", "released_by", "microbatch2", "chunk2", "direction", "direction2", "comm",
};

#define BASE_HEADER \
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label"

struct field { char *s; size_t len, cap; };

/* A released_by that must name an op of the file, checked at the end. */
struct ref { uint32_t id; long line, col; };
struct id_line { uint32_t id; long line; };

struct reader {
    struct timeline *tl;
    const char *name;
    struct mp_error *err;
    int status;
    long line;                 /* line being fed, 1-based */
    long rec_line;             /* line the current record started on */
    long records;
    int nfield;                /* fields seen in the current record */
    int ncols;                 /* columns of the header */
    int where[N_COLS];         /* file column of each known column, -1 absent */
    struct field f[N_COLS];    /* by enum col */
    int *file_col;             /* [ncols] enum col of each file column */
    char *raw; size_t n_raw, cap_raw; /* the current record's text */
    bool rec_done;
    bool started;              /* any byte fed yet (a UTF-8 BOM is skipped before the first) */
    long line_bytes;           /* bytes of the current line fed so far (for a NUL's column) */
    struct ref *refs; size_t n_refs, cap_refs;
    struct id_line *ids; size_t n_ids, cap_ids;
};

/* ---- numbers ---- */

int timeline_parse_seconds(const char *s, mp_time *out)
{
    /* Exact decimal: integer part and up to 12 fraction digits become
     * picoseconds without a trip through double; a 13th digit rounds. */
    const char *p = s;
    if (*p == '+') p++;
    if (!*p) return -1;
    if (strpbrk(p, "eE")) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (*end || errno || !(v >= 0) || v > 9.2e6) return -1;
        *out = (mp_time)(v * 1e12 + 0.5);
        return 0;
    }
    int64_t whole = 0, frac = 0;
    int digits = 0, fdigits = 0;
    bool round_up = false;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (whole > (INT64_MAX / MP_PS_PER_S) / 10) return -1;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (fdigits < 12) frac = frac * 10 + (*p - '0');
            else if (fdigits == 12) round_up = *p >= '5';
            fdigits++;
        }
    }
    if (*p || digits + fdigits == 0) return -1;
    for (int i = fdigits; i < 12; i++) frac *= 10;
    *out = whole * MP_PS_PER_S + frac + (round_up ? 1 : 0);
    return 0;
}

/* A whole number in [min, max]; an empty field gives `dflt` when allowed. */
static int parse_int(const char *s, bool allow_empty, int64_t dflt, int64_t min, int64_t max,
                     int64_t *out)
{
    if (!*s) {
        if (!allow_empty) return -1;
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* ---- positions and messages ---- */

/* Line and column (1-based, in characters) where file column `fc` of the
 * current record starts: commas outside quotes separate fields. */
static void position(const struct reader *r, int fc, long *line, long *col)
{
    long ln = r->rec_line, c = 1;
    int field = 0;
    bool quoted = false;
    for (size_t i = 0; i < r->n_raw && field < fc; i++) {
        char ch = r->raw[i];
        if (ch == '"') quoted = !quoted;
        /* A field past the record's end: the column just after its text. */
        if ((ch == '\n' || ch == '\r') && !quoted) break;
        if (ch == '\n') ln++, c = 0;
        if (ch == ',' && !quoted) field++;
        c++;
    }
    *line = ln;
    *col = c;
}

/* Fail at column `c` of the current record (-1: the record as a whole). */
static void fail_at(struct reader *r, int c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_at(struct reader *r, int c, const char *fmt, ...)
{
    if (r->status) return;
    char what[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    long line = r->rec_line, col = 1;
    if (c >= 0 && r->where[c] >= 0) position(r, r->where[c], &line, &col);
    r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld:%ld: %s", r->name, line, col, what);
}

static const char *fld(struct reader *r, enum col c) { return r->f[c].s ? r->f[c].s : ""; }

static bool get_int(struct reader *r, enum col c, bool allow_empty, int64_t dflt, int64_t min,
                    int64_t max, const char *expect, int64_t *out)
{
    if (parse_int(fld(r, c), allow_empty, dflt, min, max, out) == 0) return true;
    fail_at(r, c, "column %s: expected %s, got \"%s\"", col_names[c], expect, fld(r, c));
    return false;
}

static bool get_time(struct reader *r, enum col c, mp_time *out)
{
    if (timeline_parse_seconds(fld(r, c), out) == 0) return true;
    fail_at(r, c, "column %s: expected a time in seconds such as 0.001, got \"%s\"", col_names[c],
            fld(r, c));
    return false;
}

static bool get_chip(struct reader *r, int64_t min, int64_t *out)
{
    if (parse_int(fld(r, C_CHIP), false, 0, min, TL_MAX_CHIP, out) == 0) return true;
    fail_at(r, C_CHIP, "column chip: expected a chip index in %s..%d (the viewer's limit: a "
            "2^20-chip cluster), got \"%s\"", min < 0 ? "-1" : "0", TL_MAX_CHIP, fld(r, C_CHIP));
    return false;
}

/* "" (none), "down" or "up". */
static bool get_dir(struct reader *r, enum col c, uint8_t *out)
{
    const char *s = fld(r, c);
    if (!*s || strcmp(s, "-1") == 0) *out = TL_DIR_NONE;
    else if (strcmp(s, "down") == 0) *out = TL_DIR_DOWN;
    else if (strcmp(s, "up") == 0) *out = TL_DIR_UP;
    else {
        fail_at(r, c, "column %s: expected down, up or empty, got \"%s\"", col_names[c], s);
        return false;
    }
    return true;
}

static void check_header(struct reader *r, int n)
{
    for (int c = 0; c < N_BASE; c++) {
        const char *got = c < n ? r->f[c].s : "";
        if (!got || strcmp(got, col_names[c]) != 0) {
            r->where[0] = 0;
            long line, col;
            position(r, c, &line, &col);
            r->status = mp_fail(r->err, MP_ERR_INPUT,
                                "%s:%ld:%ld: the header row must start with exactly %s; "
                                "column %d is \"%s\"", r->name, line, col, BASE_HEADER, c + 1,
                                got ? got : "");
            return;
        }
    }
}

/* The header's extra columns: known names only, each once. */
static void map_extra(struct reader *r, int fc, const char *name)
{
    for (int c = N_BASE; c < N_COLS; c++) {
        if (strcmp(name, col_names[c]) != 0) continue;
        if (r->where[c] >= 0) {
            long line, col;
            position(r, fc, &line, &col);
            r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld:%ld: the header names column "
                                "%s twice", r->name, line, col, name);
            return;
        }
        r->where[c] = fc;
        r->file_col[fc] = c;
        return;
    }
    long line, col;
    position(r, fc, &line, &col);
    r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld:%ld: unknown column \"%s\" in the header; "
                        "after the first 13 the known ones are op, released_by, microbatch2, "
                        "chunk2, direction, direction2, comm", r->name, line, col, name);
}

/* ---- rows ---- */

static void read_op(struct reader *r, int stream)
{
    struct tl_op op = { 0 };
    int64_t v;
    if (!get_chip(r, 0, &v)) return;
    op.chip = (int32_t)v;
    if (!get_int(r, C_STAGE, true, -1, -1, INT32_MAX, "a stage index >= 0 (or -1)", &v)) return;
    op.stage = (int32_t)v;
    if (!get_int(r, C_MB, true, -1, -1, INT32_MAX, "a microbatch >= 0, or -1 for none", &v)) return;
    op.microbatch = (int32_t)v;
    if (!get_int(r, C_CHUNK, true, -1, -1, INT16_MAX, "a chunk in 0..32767 (or -1)", &v)) return;
    op.chunk = (int32_t)v;
    if (!get_int(r, C_LFIRST, true, -1, -1, INT32_MAX, "a layer index (or -1)", &v)) return;
    op.layer_first = (int32_t)v;
    if (!get_int(r, C_LLAST, true, -1, -1, INT32_MAX, "a layer index (or -1)", &v)) return;
    op.layer_last = (int32_t)v;
    if (!get_time(r, C_START, &op.start) || !get_time(r, C_END, &op.end)) return;
    if (op.end < op.start) {
        fail_at(r, C_END, "end_s %s is before start_s %s", fld(r, C_END), fld(r, C_START));
        return;
    }
    if (!get_int(r, C_BYTES, true, 0, 0, INT64_MAX, "a byte count >= 0", &v)) return;
    op.bytes = v;
    if (!*fld(r, C_KIND)) {
        fail_at(r, C_KIND, "column kind: expected an op kind such as F, B, W, BW, send, all_reduce");
        return;
    }
    if (!get_int(r, C_OP, true, -1, -1, TL_MAX_ID, "an op id in 0..4294967294 (or -1)", &v)) return;
    if (v >= 0) {
        op.has_id = true;
        op.id = (uint32_t)v;
        MP_GROW(r->ids, r->cap_ids, r->n_ids + 1);
        r->ids[r->n_ids++] = (struct id_line){ op.id, r->rec_line };
    }
    if (!get_int(r, C_RELEASED, true, -1, -1, TL_MAX_ID,
                 "the id of the op that released it (column op), or -1", &v))
        return;
    if (v >= 0) {
        op.has_released = true;
        op.released_by = (uint32_t)v;
        long line, col;
        position(r, r->where[C_RELEASED], &line, &col);
        MP_GROW(r->refs, r->cap_refs, r->n_refs + 1);
        r->refs[r->n_refs++] = (struct ref){ op.released_by, line, col };
    }
    if (!get_int(r, C_MB2, true, -1, -1, INT32_MAX, "a microbatch >= 0, or -1 for none", &v)) return;
    op.microbatch2 = (int32_t)v;
    if (!get_int(r, C_CHUNK2, true, -1, -1, INT16_MAX, "a chunk in 0..32767 (or -1)", &v)) return;
    op.chunk2 = (int32_t)v;
    if (!get_dir(r, C_DIR, &op.dir) || !get_dir(r, C_DIR2, &op.dir2)) return;
    const char *comm = fld(r, C_COMM);
    op.comm = timeline_comm_id(comm);
    if (op.comm == TL_COMM_NONE && *comm && strcmp(comm, "none") != 0) {
        fail_at(r, C_COMM, "column comm: expected tp, pp, dp, ep, cp or empty, got \"%s\"", comm);
        return;
    }
    if (r->tl->n_ops >= TL_MAX_ID) {
        fail_at(r, -1, "more than %lld ops: the viewer's limit", (long long)TL_MAX_ID);
        return;
    }
    op.stream = (uint8_t)stream;
    op.kind = timeline_kind_id(r->tl, fld(r, C_KIND));
    timeline_add_op(r->tl, &op, fld(r, C_LABEL));
}

static void read_mem(struct reader *r)
{
    struct tl_mem m = { 0 };
    int64_t v;
    if (!get_chip(r, 0, &v)) return;
    m.chip = (int32_t)v;
    if (!get_time(r, C_START, &m.t)) return;
    if (*fld(r, C_END)) {
        mp_time e;
        if (!get_time(r, C_END, &e)) return;
        if (e != m.t) {
            fail_at(r, C_END, "a memory row has start_s = end_s (the time of the change), "
                    "got end_s %s, start_s %s", fld(r, C_END), fld(r, C_START));
            return;
        }
    }
    if (!get_int(r, C_BYTES, true, 0, INT64_MIN, INT64_MAX, "a signed byte delta", &v)) return;
    m.delta = v;
    if (!get_int(r, C_MEM, false, 0, 0, INT64_MAX, "the bytes in use after the change (>= 0)", &v))
        return;
    m.in_use = v;
    m.category = timeline_mem_category(fld(r, C_LABEL));
    timeline_add_mem(r->tl, &m);
}

static void read_meta(struct reader *r)
{
    int64_t v;
    if (!get_chip(r, -1, &v)) return;
    char *label = r->f[C_LABEL].s;
    char *eq = label ? strchr(label, '=') : NULL;
    if (!eq || eq == label) {
        fail_at(r, C_LABEL, "column label: a meta row's label is key=value, got \"%s\"",
                fld(r, C_LABEL));
        return;
    }
    *eq = '\0';
    if (v < 0 && strcmp(label, "rows") == 0) {
        /* A passes-only serving timeline: a row per slot (serve.h). */
        if (strcmp(eq + 1, "slots") == 0) {
            if (r->tl->n_ops)
                fail_at(r, C_LABEL, "meta rows=slots must come before the first op row");
            else timeline_rows_by_slot(r->tl);
        } else if (strcmp(eq + 1, "chips") != 0) {
            fail_at(r, C_LABEL, "meta rows: expected rows=chips or rows=slots, got rows=%s", eq + 1);
        }
    }
    timeline_set_meta(r->tl, (int)v, label, eq + 1);
    /* A per-chip meta row's stage column is the chip's pipeline device. */
    int64_t st;
    if (v >= 0 && parse_int(fld(r, C_STAGE), true, -1, -1, INT32_MAX, &st) == 0 && st >= 0 &&
        !timeline_meta(r->tl, (int)v, "stage")) {
        char buf[24];
        snprintf(buf, sizeof buf, "%lld", (long long)st);
        timeline_set_meta(r->tl, (int)v, "stage", buf);
    }
    *eq = '=';
}

static void on_field(void *s, size_t len, void *data)
{
    struct reader *r = data;
    if (r->status) return;
    int fc = r->nfield++;
    int c = r->records == 0 ? (fc < N_COLS ? fc : -1) : (fc < r->ncols ? r->file_col[fc] : -1);
    if (r->records == 0 && fc >= N_BASE) {
        /* Header names past the first 13 are mapped as they come. */
        char name[64];
        size_t n = len < sizeof name - 1 ? len : sizeof name - 1;
        memcpy(name, s, n);
        name[n] = '\0';
        r->file_col = mp_xrealloc(r->file_col, (size_t)(fc + 1) * sizeof *r->file_col);
        r->file_col[fc] = -1;
        map_extra(r, fc, name);
        return;
    }
    if (c < 0) return;
    struct field *f = &r->f[c];
    MP_GROW(f->s, f->cap, len + 1);
    if (len) memcpy(f->s, s, len);
    f->s[len] = '\0';
    f->len = len;
}

static void on_record(int ch, void *data)
{
    (void)ch;
    struct reader *r = data;
    int n = r->nfield;
    r->nfield = 0;
    r->rec_done = true;
    if (r->status) return;
    r->records++;
    if (r->records == 1) {
        check_header(r, n);
        if (r->status) return;
        r->ncols = n;
        r->file_col = mp_xrealloc(r->file_col, (size_t)n * sizeof *r->file_col);
        for (int c = 0; c < N_BASE; c++) r->where[c] = c, r->file_col[c] = c;
        return;
    }
    if (n != r->ncols) {
        fail_at(r, -1, "expected %d columns, as in the header, got %d", r->ncols, n);
        return;
    }
    /* Columns the header lacks read as empty. */
    for (int c = N_BASE; c < N_COLS; c++)
        if (r->where[c] < 0 && r->f[c].s) r->f[c].s[0] = '\0';
    const char *stream = fld(r, C_STREAM);
    if (strcmp(stream, "compute") == 0) read_op(r, TL_COMPUTE);
    else if (strcmp(stream, "comm") == 0) read_op(r, TL_COMM);
    else if (strcmp(stream, "memory") == 0) read_mem(r);
    else if (strcmp(stream, "meta") == 0) read_meta(r);
    else fail_at(r, C_STREAM, "column stream: expected compute, comm, memory or meta, got \"%s\"",
                 stream);
}

static void feed(struct reader *r, struct csv_parser *p, const char *data, size_t len)
{
    /* The CSV readers' rules (sim/io/csv_reader.h): a UTF-8 byte-order mark
     * on line 1 is not part of the header, and a NUL byte is an error (it
     * would cut a cell short), named by line and column. */
    if (!r->started && len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        data += 3;
        len -= 3;
    }
    if (len) r->started = true;
    while (len && !r->status) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) + 1 : len;
        const char *nul = memchr(data, '\0', n);
        if (nul) {
            r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld:%ld: a NUL byte: expected text "
                                "(a timeline CSV as mpsim run --timeline writes it)", r->name,
                                r->line, r->line_bytes + (long)(nul - data) + 1);
            return;
        }
        r->line_bytes = nl ? 0 : r->line_bytes + (long)n;
        if (r->rec_done) {
            r->n_raw = 0;
            r->rec_line = r->line;
            r->rec_done = false;
        }
        MP_GROW(r->raw, r->cap_raw, r->n_raw + n);
        memcpy(r->raw + r->n_raw, data, n);
        r->n_raw += n;
        if (csv_parse(p, data, n, on_field, on_record, r) != n)
            fail_at(r, -1, "malformed CSV: %s (a stray or unclosed quote?)",
                    csv_strerror(csv_error(p)));
        if (nl) r->line++;
        data += n;
        len -= n;
    }
}

static int cmp_id_line(const void *a, const void *b)
{
    const struct id_line *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Every released_by names an op of the file, and no id is used twice. */
static void check_refs(struct reader *r)
{
    if (r->n_ids) qsort(r->ids, r->n_ids, sizeof *r->ids, cmp_id_line);
    for (size_t i = 1; i < r->n_ids && !r->status; i++)
        if (r->ids[i].id == r->ids[i - 1].id)
            r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld: column op: id %u is taken "
                                "already (line %ld); each op needs its own", r->name,
                                r->ids[i].line, (unsigned)r->ids[i].id, r->ids[i - 1].line);
    for (size_t i = 0; i < r->n_refs && !r->status; i++) {
        struct id_line key = { r->refs[i].id, 0 };
        size_t lo = 0, hi = r->n_ids;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (r->ids[mid].id < key.id) lo = mid + 1;
            else hi = mid;
        }
        if (lo < r->n_ids && r->ids[lo].id == key.id) continue;
        r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld:%ld: column released_by: op %u does "
                            "not exist (no row has it in column op)", r->name, r->refs[i].line,
                            r->refs[i].col, (unsigned)r->refs[i].id);
    }
}

static int finish_read(struct reader *r, struct csv_parser *p)
{
    if (!r->status && csv_fini(p, on_field, on_record, r) != 0)
        fail_at(r, -1, "malformed CSV at end of file: %s (an unclosed quote?)",
                csv_strerror(csv_error(p)));
    csv_free(p);
    if (!r->status && r->records == 0)
        r->status = mp_fail(r->err, MP_ERR_INPUT, "%s: empty file: expected the header row %s",
                            r->name, timeline_csv_header);
    if (!r->status) check_refs(r);
    for (int c = 0; c < N_COLS; c++) free(r->f[c].s);
    free(r->file_col);
    free(r->raw);
    free(r->refs);
    free(r->ids);
    if (r->status) return r->status;
    if (!r->tl->name) {
        const char *slash = strrchr(r->name, '/');
        r->tl->name = mp_xstrdup(slash ? slash + 1 : r->name);
    }
    timeline_finish(r->tl);
    return MP_OK;
}

static void start_read(struct reader *r, struct csv_parser *p, struct timeline *tl,
                       const char *name, struct mp_error *err)
{
    memset(r, 0, sizeof *r);
    r->tl = tl;
    r->name = name;
    r->err = err;
    r->line = r->rec_line = 1;
    r->rec_done = true;
    for (int c = 0; c < N_COLS; c++) r->where[c] = -1;
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        fprintf(stderr, "mpsim-view: out of memory\n");
        exit(MP_ERR_INTERNAL);
    }
}

int timeline_read_csv_buffer(struct timeline *tl, const char *name, const char *data, size_t len,
                             struct mp_error *err)
{
    struct reader r;
    struct csv_parser p;
    start_read(&r, &p, tl, name, err);
    feed(&r, &p, data, len);
    return finish_read(&r, &p);
}

int timeline_read_csv(struct timeline *tl, const char *path, struct mp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct reader r;
    struct csv_parser p;
    start_read(&r, &p, tl, path, err);
    static char buf[1 << 16];
    size_t n;
    while (!r.status && (n = fread(buf, 1, sizeof buf, f)) > 0) feed(&r, &p, buf, n);
    if (!r.status && ferror(f))
        r.status = mp_fail(err, MP_ERR_INPUT, "%s: read error: %s", path, strerror(errno));
    fclose(f);
    return finish_read(&r, &p);
}

/* ---- the writer ---- */

static void put_seconds(FILE *f, mp_time t)
{
    /* Exact: whole seconds, then 12 fraction digits with trailing zeros cut. */
    char frac[16];
    snprintf(frac, sizeof frac, "%012" PRId64, t % MP_PS_PER_S);
    int n = 12;
    while (n > 1 && frac[n - 1] == '0') n--;
    frac[n] = '\0';
    fprintf(f, "%" PRId64 ".%s", t / MP_PS_PER_S, frac);
}

static void put_text(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *dir_text(uint8_t d) { return d == TL_DIR_DOWN ? "down" : d == TL_DIR_UP ? "up" : ""; }

int timeline_write_csv(const struct timeline *tl, const char *path, struct mp_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot write: %s", tmp, strerror(errno));
    fprintf(f, "%s\n", timeline_csv_header);
    if (tl->rows_by_slot) fputs("-1,-1,meta,meta,-1,,,,0,0,0,,rows=slots,,,,,,,\n", f);
    for (size_t i = 0; i < tl->n_meta; i++) {
        const struct tl_meta *m = &tl->meta[i];
        if (tl->rows_by_slot && m->chip < 0 && strcmp(m->key, "rows") == 0) continue;
        char kv[2048];
        snprintf(kv, sizeof kv, "%s=%s", m->key, m->value);
        fprintf(f, "%d,-1,meta,meta,-1,,,,0,0,0,,", (int)m->chip);
        put_text(f, kv);
        fputs(",,,,,,,\n", f);
    }
    for (int ri = 0; ri < tl->n_rows; ri++)
        for (int s = 0; s < TL_STREAMS; s++) {
            const struct tl_lane *l = &tl->rows[ri].lane[s];
            for (size_t k = 0; k < l->n; k++) {
                struct tl_op o;
                timeline_get_op(tl, ri, s, k, &o);
                fprintf(f, "%d,%d,%s,", (int)o.chip, (int)o.stage,
                        s == TL_COMM ? "comm" : "compute");
                put_text(f, timeline_kind_name(tl, o.kind));
                fprintf(f, ",%d,%d,%d,%d,", (int)o.microbatch, (int)o.chunk, (int)o.layer_first,
                        (int)o.layer_last);
                put_seconds(f, o.start);
                fputc(',', f);
                put_seconds(f, o.end);
                fprintf(f, ",%" PRId64 ",,", o.bytes);
                put_text(f, timeline_label_of(tl, timeline_info(tl, l, k)));
                if (o.has_id) fprintf(f, ",%u", (unsigned)o.id);
                else fputs(",", f);
                if (o.has_released) fprintf(f, ",%u", (unsigned)o.released_by);
                else fputs(",", f);
                fprintf(f, ",%d,%d,%s,%s,%s\n", (int)o.microbatch2, (int)o.chunk2, dir_text(o.dir),
                        dir_text(o.dir2), timeline_comm_name(o.comm));
            }
        }
    for (size_t i = 0; i < tl->n_mem; i++) {
        const struct tl_mem *m = &tl->mem[i];
        fprintf(f, "%d,-1,memory,mem,-1,,,,", (int)m->chip);
        put_seconds(f, m->t);
        fputc(',', f);
        put_seconds(f, m->t);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%s,,,,,,,\n", m->delta, m->in_use,
                timeline_mem_category_name(m->category));
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed: %s", path, strerror(errno));
    }
    return MP_OK;
}
