/* timeline_csv.c — the timeline CSV, read with libcsv and written back.
 *
 * The file is fed to libcsv one line at a time so that, when a record ends,
 * we know the line it ends on and every message can name it. A bad row stops
 * the read with MP_ERR_INPUT; the viewer exits 2 before it opens a window. */
#include "timeline.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char timeline_csv_header[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label";

enum col {
    C_CHIP, C_STAGE, C_STREAM, C_KIND, C_MB, C_CHUNK, C_LFIRST, C_LLAST,
    C_START, C_END, C_BYTES, C_MEM, C_LABEL, N_COLS
};

static const char *const col_names[N_COLS] = {
    "chip", "stage", "stream", "kind", "microbatch", "chunk", "layer_first", "layer_last",
    "start_s", "end_s", "bytes", "mem_bytes", "label",
};

struct field { char *s; size_t len, cap; };

struct reader {
    struct timeline *tl;
    const char *name;
    struct mp_error *err;
    int status;
    long line;                 /* line being fed, 1-based */
    long records;
    int nfield;                /* fields seen in the current record */
    struct field f[N_COLS];
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

/* ---- the reader ---- */

static void fail(struct reader *r, const char *fmt, const char *a, const char *b)
{
    if (r->status) return;
    char what[600];
    snprintf(what, sizeof what, fmt, a, b);
    r->status = mp_fail(r->err, MP_ERR_INPUT, "%s:%ld: %s", r->name, r->line, what);
}

static const char *fld(struct reader *r, enum col c) { return r->f[c].s ? r->f[c].s : ""; }

static bool get_int(struct reader *r, enum col c, bool allow_empty, int64_t dflt, int64_t min,
                    int64_t max, const char *expect, int64_t *out)
{
    if (parse_int(fld(r, c), allow_empty, dflt, min, max, out) == 0) return true;
    char what[200];
    snprintf(what, sizeof what, "column %s: expected %s", col_names[c], expect);
    fail(r, "%s, got \"%s\"", what, fld(r, c));
    return false;
}

static bool get_time(struct reader *r, enum col c, mp_time *out)
{
    if (timeline_parse_seconds(fld(r, c), out) == 0) return true;
    char what[200];
    snprintf(what, sizeof what, "column %s: expected a time in seconds such as 0.001",
             col_names[c]);
    fail(r, "%s, got \"%s\"", what, fld(r, c));
    return false;
}

static void check_header(struct reader *r)
{
    for (int c = 0; c < N_COLS; c++) {
        if (strcmp(fld(r, c), col_names[c]) != 0) {
            char what[300];
            snprintf(what, sizeof what, "the header row must be exactly %s; column %d is",
                     timeline_csv_header, c + 1);
            fail(r, "%s \"%s\"", what, fld(r, c));
            return;
        }
    }
}

static void read_op(struct reader *r, int stream)
{
    struct tl_op op = {0};
    int64_t v;
    if (!get_int(r, C_CHIP, false, 0, 0, INT32_MAX, "a chip index >= 0", &v)) return;
    op.chip = (int32_t)v;
    if (!get_int(r, C_STAGE, true, -1, -1, INT32_MAX, "a stage index >= 0 (or -1)", &v)) return;
    op.stage = (int32_t)v;
    if (!get_int(r, C_MB, true, -1, -1, INT32_MAX, "a microbatch >= 0, or -1 for none", &v)) return;
    op.microbatch = (int32_t)v;
    if (!get_int(r, C_CHUNK, true, -1, -1, INT32_MAX, "a chunk >= 0 (or -1)", &v)) return;
    op.chunk = (int32_t)v;
    if (!get_int(r, C_LFIRST, true, -1, -1, INT32_MAX, "a layer index (or -1)", &v)) return;
    op.layer_first = (int32_t)v;
    if (!get_int(r, C_LLAST, true, -1, -1, INT32_MAX, "a layer index (or -1)", &v)) return;
    op.layer_last = (int32_t)v;
    if (!get_time(r, C_START, &op.start) || !get_time(r, C_END, &op.end)) return;
    if (op.end < op.start) {
        fail(r, "end_s %s is before start_s %s", fld(r, C_END), fld(r, C_START));
        return;
    }
    if (!get_int(r, C_BYTES, true, 0, 0, INT64_MAX, "a byte count >= 0", &v)) return;
    op.bytes = v;
    if (!*fld(r, C_KIND)) {
        fail(r, "column kind: expected an op kind such as F, B, W, BW, send, all_reduce%s%s", "", "");
        return;
    }
    op.stream = (uint8_t)stream;
    op.kind = timeline_kind_id(r->tl, fld(r, C_KIND));
    timeline_add_op(r->tl, &op, fld(r, C_LABEL));
}

static void read_mem(struct reader *r)
{
    struct tl_mem m = {0};
    int64_t v;
    if (!get_int(r, C_CHIP, false, 0, 0, INT32_MAX, "a chip index >= 0", &v)) return;
    m.chip = (int32_t)v;
    if (!get_time(r, C_START, &m.t)) return;
    if (*fld(r, C_END)) {
        mp_time e;
        if (!get_time(r, C_END, &e)) return;
        if (e != m.t) {
            fail(r, "a memory row has start_s = end_s (the time of the change), got end_s %s, start_s %s",
                 fld(r, C_END), fld(r, C_START));
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
    if (!get_int(r, C_CHIP, false, 0, -1, INT32_MAX, "a chip index, or -1 for run-wide keys", &v))
        return;
    char *label = r->f[C_LABEL].s;
    char *eq = label ? strchr(label, '=') : NULL;
    if (!eq || eq == label) {
        fail(r, "column label: a meta row's label is key=value, got \"%s\"%s", fld(r, C_LABEL), "");
        return;
    }
    *eq = '\0';
    timeline_set_meta(r->tl, (int)v, label, eq + 1);
    *eq = '=';
}

static void on_field(void *s, size_t len, void *data)
{
    struct reader *r = data;
    if (r->status) return;
    if (r->nfield < N_COLS) {
        struct field *f = &r->f[r->nfield];
        MP_GROW(f->s, f->cap, len + 1);
        if (len) memcpy(f->s, s, len);
        f->s[len] = '\0';
        f->len = len;
    }
    r->nfield++;
}

static void on_record(int c, void *data)
{
    (void)c;
    struct reader *r = data;
    int n = r->nfield;
    r->nfield = 0;
    if (r->status) return;
    r->records++;
    if (n != N_COLS) {
        char got[64];
        snprintf(got, sizeof got, "%d", n);
        fail(r, "expected 13 columns (%s), got %s", timeline_csv_header, got);
        return;
    }
    if (r->records == 1) {
        check_header(r);
        return;
    }
    const char *stream = fld(r, C_STREAM);
    if (strcmp(stream, "compute") == 0) read_op(r, TL_COMPUTE);
    else if (strcmp(stream, "comm") == 0) read_op(r, TL_COMM);
    else if (strcmp(stream, "memory") == 0) read_mem(r);
    else if (strcmp(stream, "meta") == 0) read_meta(r);
    else fail(r, "column stream: expected compute, comm, memory or meta, got \"%s\"%s", stream, "");
}

static void feed(struct reader *r, struct csv_parser *p, const char *data, size_t len)
{
    while (len && !r->status) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) + 1 : len;
        if (csv_parse(p, data, n, on_field, on_record, r) != n)
            fail(r, "malformed CSV: %s%s", csv_strerror(csv_error(p)), " (a stray or unclosed quote?)");
        if (nl) r->line++;
        data += n;
        len -= n;
    }
}

static int finish_read(struct reader *r, struct csv_parser *p)
{
    if (!r->status && csv_fini(p, on_field, on_record, r) != 0)
        fail(r, "malformed CSV at end of file: %s%s", csv_strerror(csv_error(p)),
             " (an unclosed quote?)");
    csv_free(p);
    for (int c = 0; c < N_COLS; c++) free(r->f[c].s);
    if (!r->status && r->records == 0)
        r->status = mp_fail(r->err, MP_ERR_INPUT, "%s: empty file: expected the header row %s",
                            r->name, timeline_csv_header);
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
    r->line = 1;
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

int timeline_write_csv(const struct timeline *tl, const char *path, struct mp_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot write: %s", tmp, strerror(errno));
    fprintf(f, "%s\n", timeline_csv_header);
    for (size_t i = 0; i < tl->n_meta; i++) {
        const struct tl_meta *m = &tl->meta[i];
        char kv[2048];
        snprintf(kv, sizeof kv, "%s=%s", m->key, m->value);
        fprintf(f, "%d,-1,meta,meta,-1,,,,0,0,0,,", (int)m->chip);
        put_text(f, kv);
        fputc('\n', f);
    }
    for (size_t i = 0; i < tl->n_ops; i++) {
        const struct tl_op *o = &tl->ops[i];
        fprintf(f, "%d,%d,%s,", (int)o->chip, (int)o->stage,
                o->stream == TL_COMM ? "comm" : "compute");
        put_text(f, timeline_kind_name(tl, o->kind));
        fprintf(f, ",%d,%d,%d,%d,", (int)o->microbatch, (int)o->chunk, (int)o->layer_first,
                (int)o->layer_last);
        put_seconds(f, o->start);
        fputc(',', f);
        put_seconds(f, o->end);
        fprintf(f, ",%" PRId64 ",,", o->bytes);
        put_text(f, timeline_label(tl, o));
        fputc('\n', f);
    }
    for (size_t i = 0; i < tl->n_mem; i++) {
        const struct tl_mem *m = &tl->mem[i];
        fprintf(f, "%d,-1,memory,mem,-1,,,,", (int)m->chip);
        put_seconds(f, m->t);
        fputc(',', f);
        put_seconds(f, m->t);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%s\n", m->delta, m->in_use,
                timeline_mem_category_name(m->category));
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed: %s", path, strerror(errno));
    }
    return MP_OK;
}
