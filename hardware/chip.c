/* chip.c — the chip catalogue (hardware/chips.csv, read by sim/io/csv_reader) and the
 * roofline time of one op.
 *
 * The CSV is header-driven: columns are found by name, so their order is free
 * and a missing or misspelt column is caught at line 1 instead of silently
 * shifting every figure by one. Every column is in the unit people read on a
 * datasheet (TFLOP/s, GB, TB/s, GB/s, Gb/s); the scale to SI bytes and FLOP/s
 * happens here, once. The `source` column is required and may not be empty:
 * a figure nobody can trace back is worse than no figure. */
#include "chip.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/csv_reader.h"

enum col_kind { COL_NAME, COL_TEXT, COL_NUM };

/* One catalogue column: where it lands in struct chip, its scale from the
 * file's unit to SI, and what a valid value is. */
struct column {
    const char *name;
    enum col_kind kind;
    size_t offset;       /* into struct chip */
    size_t size;         /* text: buffer size */
    int exp10;           /* num: file unit -> SI is 10^exp10 ... */
    double div;          /* ... then divided by this (8 for bits) */
    bool positive;       /* num: must be > 0 (a chip without it cannot run) */
    bool share;          /* num: a share in (0, 1] */
    bool allow_inf;      /* num: "inf" accepted (instant teaching links) */
    const char *expect;  /* what to say is expected */
};

#define FIELD(field) .offset = offsetof(struct chip, field)
#define TEXT(n, field, what) \
    { .name = n, .kind = COL_TEXT, FIELD(field), \
      .size = sizeof(((struct chip *)0)->field), .expect = what }
#define NUM(n, field, e, d, pos, inf, what) \
    { .name = n, .kind = COL_NUM, FIELD(field), .exp10 = e, .div = d, .positive = pos, \
      .allow_inf = inf, .expect = what }
#define SHARE(n, field, what) \
    { .name = n, .kind = COL_NUM, FIELD(field), .div = 1, .positive = true, .share = true, \
      .expect = what }

static const struct column columns[] = {
    { .name = "name", .kind = COL_NAME, FIELD(name), .size = sizeof(((struct chip *)0)->name),
      .expect = "a chip name of lower-case letters, digits, '-', '_' or '.'" },
    TEXT("label", label, "a label for people, such as 'NVIDIA H100 SXM 80GB'"),
    NUM("bf16_tflops", peak_bf16, 12, 1, true, false, "dense 16-bit TFLOP/s > 0"),
    NUM("fp8_tflops", peak_fp8, 12, 1, false, false, "dense 8-bit TFLOP/s >= 0 (0: none)"),
    NUM("mem_gb", mem_bytes, 9, 1, true, false, "memory in GB (10^9 bytes) > 0"),
    NUM("mem_bw_tbs", mem_bw, 12, 1, true, true, "memory bandwidth in TB/s > 0 or inf"),
    NUM("scaleup_gbs", scaleup_bw, 9, 1, false, true,
        "GB/s per direction >= 0 (0: none) or inf"),
    NUM("scaleout_gbps", scaleout_bw, 9, 8, false, true,
        "NIC Gb/s per direction >= 0 (0: none) or inf"),
    SHARE("compute_eff", compute_eff, "a share of peak in (0, 1]"),
    SHARE("mem_eff", mem_eff, "a share of memory bandwidth in (0, 1]"),
    NUM("price_usd", price_usd, 0, 1, false, false, "US dollars per chip >= 0 (0: unknown)"),
    NUM("price_hour_usd", price_hour_usd, 0, 1, false, false,
        "US dollars per chip-hour >= 0 (0: unknown)"),
    TEXT("source", source, "where the figures come from"),
};
enum { N_COLUMNS = sizeof columns / sizeof columns[0] };

/* Loader state: the header's column map and the chips so far. */
struct csv_ctx {
    struct csv_reader *r;
    struct mp_error *err;
    bool failed;
    long row_line;       /* line of the row being read */
    char **fields;       /* cells of the current row */
    int n_fields;
    bool have_header;
    int col_of[N_COLUMNS]; /* file column index of each known column */
    int n_header;
    struct chip *chips;
    long *chip_line;     /* line of each chip row, for duplicate messages */
    int n_chips, cap_chips, cap_lines;
};

/* Record the first error only. */
static void fail_at(struct csv_ctx *x, const char *fmt, const char *a, const char *b,
                    const char *c)
{
    if (x->failed) return;
    x->failed = true;
    char what[768];
    snprintf(what, sizeof what, fmt, a, b, c);
    csv_reader_fail(x->r, x->row_line, x->err, "%s", what);
}

/* A cell as a message shows it: one line, visible, at most 60 bytes. */
static const char *shown(const char *text, char *buf, size_t size)
{
    mp_quote(text, strlen(text), 60, buf, size);
    return buf;
}

static void fail_col(struct csv_ctx *x, const struct column *c, const char *got)
{
    char q[256];
    fail_at(x, "column %s: expected %s, got '%s'", c->name, c->expect, shown(got, q, sizeof q));
}
static void read_header(struct csv_ctx *x)
{
    for (int k = 0; k < N_COLUMNS; k++) x->col_of[k] = -1;
    for (int i = 0; i < x->n_fields; i++) {
        int k = 0;
        while (k < N_COLUMNS && strcmp(columns[k].name, x->fields[i]) != 0) k++;
        if (k == N_COLUMNS) {
            char known[512] = "";
            for (int j = 0; j < N_COLUMNS; j++) {
                strcat(known, j ? ", " : "");
                strcat(known, columns[j].name);
            }
            char q[256];
            fail_at(x, "header: expected one of the columns %s, got '%s'%s", known,
                    shown(x->fields[i], q, sizeof q), "");
            return;
        }
        if (x->col_of[k] >= 0) {
            fail_at(x, "header: column %s: expected once, got it twice%s%s", columns[k].name,
                    "", "");
            return;
        }
        x->col_of[k] = i;
    }
    for (int k = 0; k < N_COLUMNS; k++)
        if (x->col_of[k] < 0) {
            fail_at(x, "column %s: expected in the header row, got no such column%s%s",
                    columns[k].name, "", "");
            return;
        }
    x->n_header = x->n_fields;
    x->have_header = true;
}

static bool valid_name(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
              *s == '.'))
            return false;
    return true;
}

/* A number in the column's unit, scaled to SI. strtod alone would take
 * "nan", "1e999", hex and trailing junk; none of them is a figure from a
 * datasheet. The power of ten is applied by strtod itself ("3.35" in TB/s is
 * read as "3.35e12"), which rounds once, so 3.35 TB/s is exactly the double
 * 3.35e12 rather than 3.35 × 1e12 rounded twice. */
static bool parse_number(const struct column *c, const char *text, double *out)
{
    if (c->allow_inf && strcmp(text, "inf") == 0) {
        *out = INFINITY;
        return true;
    }
    if (!*text || strspn(text, "0123456789.eE+-") != strlen(text) || strlen(text) > 64)
        return false;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) return false;
    if (c->exp10 && !strpbrk(text, "eE")) {
        char buf[96];
        snprintf(buf, sizeof buf, "%se%d", text, c->exp10);
        v = strtod(buf, &end);
    } else if (c->exp10) {
        v *= pow(10, c->exp10);
    }
    if (!isfinite(v)) return false;
    *out = v / c->div;  /* 8 is a power of two: exact */
    return true;
}

static void read_chip(struct csv_ctx *x)
{
    if (x->n_fields != x->n_header) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%d", x->n_header);
        snprintf(got, sizeof got, "%d", x->n_fields);
        fail_at(x, "expected %s columns as in the header row, got %s%s", want, got,
                x->n_fields < x->n_header ? " (a truncated row?)" : " (an unquoted comma?)");
        return;
    }
    struct chip ch;
    memset(&ch, 0, sizeof ch);
    for (int k = 0; k < N_COLUMNS; k++) {
        const struct column *c = &columns[k];
        const char *text = x->fields[x->col_of[k]];
        char *dst = (char *)&ch + c->offset;
        if (c->kind != COL_NUM) {
            /* Labels land in JSON and CSV outputs, which must stay UTF-8. */
            if (!*text || strlen(text) >= c->size || (c->kind == COL_NAME && !valid_name(text)) ||
                mp_utf8_valid_prefix(text, strlen(text)) < strlen(text)) {
                char expect[256];
                snprintf(expect, sizeof expect, "%s, 1 to %zu characters", c->expect,
                         c->size - 1);
                char q[256];
                fail_at(x, "column %s: expected %s, got '%s'", c->name, expect,
                        shown(text, q, sizeof q));
                return;
            }
            memcpy(dst, text, strlen(text) + 1);
            continue;
        }
        double v;
        if (!parse_number(c, text, &v) || v < 0 || (c->positive && v == 0) ||
            (c->share && v > 1)) {
            fail_col(x, c, text);
            return;
        }
        memcpy(dst, &v, sizeof v);
    }
    for (int i = 0; i < x->n_chips; i++)
        if (strcmp(x->chips[i].name, ch.name) == 0) {
            char first[32];
            snprintf(first, sizeof first, "%ld", x->chip_line[i]);
            char q[256];
            fail_at(x, "column name: expected a chip name not used before, got '%s' "
                       "(already at line %s)%s", shown(ch.name, q, sizeof q), first, "");
            return;
        }
    MP_GROW(x->chips, x->cap_chips, x->n_chips + 1);
    MP_GROW(x->chip_line, x->cap_lines, x->n_chips + 1);
    x->chip_line[x->n_chips] = x->row_line;
    x->chips[x->n_chips++] = ch;
}

int chip_catalog_load(struct chip_catalog *cat, const char *path, struct mp_error *err)
{
    cat->chips = NULL;
    cat->n = 0;
    struct csv_reader r;
    int rc = csv_reader_open(&r, path, NULL, err);
    if (rc) return rc;
    struct csv_ctx x;
    memset(&x, 0, sizeof x);
    x.r = &r;
    x.err = err;
    struct csv_row row;
    int got = 0;
    while (!x.failed && (got = csv_reader_next(&r, &row, err)) > 0) {
        x.fields = row.cell;
        x.n_fields = row.n;
        x.row_line = row.line;
        if (!x.have_header) read_header(&x);
        else read_chip(&x);
    }
    if (!x.failed && got < 0) x.failed = true; /* the reader's message is in err */
    long lines = r.line;
    csv_reader_close(&r);
    free(x.chip_line);
    if (!x.failed && !x.have_header)
        mp_fail(err, MP_ERR_INPUT, "%s: empty; expected a header row naming the columns", path);
    else if (!x.failed && x.n_chips == 0)
        mp_fail(err, MP_ERR_INPUT, "%s:%ld: expected at least one chip row after the header",
                path, lines);
    else if (!x.failed) {
        cat->chips = x.chips;
        cat->n = x.n_chips;
        return MP_OK;
    }
    free(x.chips);
    return MP_ERR_INPUT;
}

int chip_catalog_load_default(struct chip_catalog *cat, struct mp_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/chips.csv", mp_data_dir());
    return chip_catalog_load(cat, path, err);
}

void chip_catalog_release(struct chip_catalog *cat)
{
    free(cat->chips);
    cat->chips = NULL;
    cat->n = 0;
}

const struct chip *chip_catalog_find(const struct chip_catalog *cat, const char *name)
{
    for (int i = 0; i < cat->n; i++)
        if (strcmp(cat->chips[i].name, name) == 0) return &cat->chips[i];
    return NULL;
}

void chip_describe(const struct chip *c, char *buf, size_t size)
{
    snprintf(buf, size, "chip %s (chips.csv: bf16_tflops = %.6g, fp8_tflops = %.6g, "
             "mem_bw_tbs = %.6g, compute_eff = %.6g, mem_eff = %.6g)", c->name,
             c->peak_bf16 / 1e12, c->peak_fp8 / 1e12, c->mem_bw / 1e12, c->compute_eff,
             c->mem_eff);
}

mp_time chip_op_time(const struct chip *c, double flops, double bytes, int bits)
{
    assert(flops >= 0 && bytes >= 0 && bits > 0);
    /* 8-bit math runs at the fp8 peak only on chips that have one; elsewhere
     * it is upcast and runs at the 16-bit peak. Other widths use bf16. */
    double peak = (bits == 8 && c->peak_fp8 > 0) ? c->peak_fp8 : c->peak_bf16;
    /* Picoseconds are formed as (work × 1e12) / rate so that round figures
     * give exact integers (2e12 FLOP at 1e15 FLOP/s → 2e9 ps). */
    double compute_ps = flops * 1e12 / (peak * c->compute_eff);
    double memory_ps = bytes * 1e12 / (c->mem_bw * c->mem_eff);
    double ps = compute_ps > memory_ps ? compute_ps : memory_ps;
    /* A huge model or a crawling chip from the user's files can ask for more
     * than int64 picoseconds (or infinity); that is an input error, not a
     * programmer's one. Saturate (common.h), and let sim_run's horizon check
     * report it, instead of asserting or wrapping. */
    return mp_time_from_ps(ps);
}
