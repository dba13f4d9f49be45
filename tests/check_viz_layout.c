/* check_viz_layout.c — the viewer without SDL: the timeline CSV reader, the
 * layout (times to pixel columns, zoom, hit testing), and the pixels of the
 * textbook GPipe and 1F1B pipelines painted by the same rasteriser that
 * writes `mpsim-view --screenshot`.
 *
 * The fixtures tests/data/viz/{gpipe,1f1b}_p4_m8.csv are p = 4 stages,
 * m = 8 microbatches, t_f = 1 ms, fused backward t_b = 2 ms. In GPipe stage
 * i runs F(k) over [i+k, i+k+1] ms and BW(k) over [11 + 2(3−i) + 2k, +2] ms
 * (the same order as mpsim's gpipe); the step is (m+p−1)(t_f+t_b) = 33 ms and
 * the bubble (p−1)/(m+p−1) = 3/11 for both schedules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/app.h"
#include "viz/draw.h"
#include "viz/layout.h"
#include "testutil.h"
#include "viz/timeline.h"

#define MS MP_PS_PER_MS
#define GB ((int64_t)1000000000)

static void load(struct timeline *tl, const char *rel)
{
    struct mp_error err = { 0 };
    timeline_init(tl);
    int rc = timeline_read_csv(tl, mp_test_path(rel), &err);
    ck_assert_msg(rc == MP_OK, "%s: %s", rel, err.msg);
}

/* The op of `kind` and microbatch `mb` on `chip` (chunk any), unpacked. */
static struct tl_op op_buf;
static const struct tl_op *find_op(const struct timeline *tl, int chip, int kind, int mb)
{
    int r = timeline_row_of(tl, chip);
    for (int s = 0; r >= 0 && s < TL_STREAMS; s++)
        for (size_t k = 0; k < tl->rows[r].lane[s].n; k++) {
            timeline_get_op(tl, r, s, k, &op_buf);
            if (op_buf.kind == kind && op_buf.microbatch == mb) return &op_buf;
        }
    return NULL;
}

/* Op k of a row's compute lane. */
static struct tl_op lane_op(const struct timeline *tl, int row, size_t k)
{
    struct tl_op o;
    timeline_get_op(tl, row, TL_COMPUTE, k, &o);
    return o;
}

/* ---- reading ---- */

START_TEST(test_parse_seconds)
{
    mp_time t;
    ck_assert_int_eq(timeline_parse_seconds("0.001", &t), 0);
    ck_assert_int_eq(t, MS);
    ck_assert_int_eq(timeline_parse_seconds("0.000000000001", &t), 0);
    ck_assert_int_eq(t, 1);
    ck_assert_int_eq(timeline_parse_seconds("12", &t), 0);
    ck_assert_int_eq(t, 12 * MP_PS_PER_S);
    ck_assert_int_eq(timeline_parse_seconds("0.0000000000015", &t), 0);
    ck_assert_int_eq(t, 2); /* the 13th digit rounds */
    ck_assert_int_eq(timeline_parse_seconds("1e-3", &t), 0);
    ck_assert_int_eq(t, MS);
    ck_assert_int_eq(timeline_parse_seconds("abc", &t), -1);
    ck_assert_int_eq(timeline_parse_seconds("-1", &t), -1);
    ck_assert_int_eq(timeline_parse_seconds("", &t), -1);
    ck_assert_int_eq(timeline_parse_seconds("1.5ms", &t), -1);
}
END_TEST

START_TEST(test_read_gpipe)
{
    struct timeline tl;
    load(&tl, "tests/data/viz/gpipe_p4_m8.csv");
    ck_assert_uint_eq(tl.n_ops, 64);
    ck_assert_int_eq(tl.n_rows, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(tl.rows[tl.order[i]].key, i);
        for (int k = 0; k < 8; k++) {
            const struct tl_op *f = find_op(&tl, i, TL_KIND_F, k);
            ck_assert_ptr_nonnull(f);
            ck_assert_int_eq(f->start, (i + k) * MS);
            ck_assert_int_eq(f->end, (i + k + 1) * MS);
            const struct tl_op *b = find_op(&tl, i, TL_KIND_BW, k);
            ck_assert_ptr_nonnull(b);
            ck_assert_int_eq(b->start, (11 + 2 * (3 - i) + 2 * k) * MS);
            ck_assert_int_eq(b->end, b->start + 2 * MS);
            ck_assert_int_eq(f->layer_first, 4 * i);
        }
        int r = timeline_row_of(&tl, i);
        ck_assert_double_eq_tol(timeline_utilization(&tl, r), 24.0 / 33.0, 1e-12);
        /* Weights 2 GB + all 8 stashed activations of 1 GB. */
        ck_assert_int_eq(tl.rows[r].peak_mem, 10 * GB);
        ck_assert_int_eq(tl.rows[r].capacity, 16 * GB);
    }
    ck_assert_int_eq(tl.t_begin, 0);
    ck_assert_int_eq(tl.t_end, 33 * MS);
    /* Every idle moment waits for another stage: bubble = idle = 3/11. */
    ck_assert_double_eq_tol(tl.idle, 3.0 / 11.0, 1e-12);
    ck_assert_double_eq_tol(tl.bubble, 3.0 / 11.0, 1e-12);
    ck_assert_double_eq_tol(tl.exposed_comm, 0, 1e-12);
    ck_assert_str_eq(timeline_meta(&tl, -1, "schedule"), "gpipe");
    ck_assert_ptr_null(timeline_meta(&tl, 0, "schedule"));
    timeline_release(&tl);
}
END_TEST

START_TEST(test_read_1f1b_matches_generator)
{
    struct timeline tl, gen;
    struct mp_error err = { 0 };
    load(&tl, "tests/data/viz/1f1b_p4_m8.csv");
    timeline_init(&gen);
    ck_assert_int_eq(timeline_textbook(&gen, "1f1b", 4, 8, MS, 2 * MS, &err), MP_OK);
    ck_assert_uint_eq(tl.n_ops, gen.n_ops);
    ck_assert_int_eq(tl.n_rows, gen.n_rows);
    for (int r = 0; r < tl.n_rows; r++) {
        const struct tl_lane *a = timeline_lane(&tl, r, TL_COMPUTE), *b = timeline_lane(&gen, r, TL_COMPUTE);
        ck_assert_uint_eq(a->n, b->n);
        for (size_t k = 0; k < a->n; k++) {
            struct tl_op x = lane_op(&tl, r, k), y = lane_op(&gen, r, k);
            ck_assert_int_eq(x.start, y.start);
            ck_assert_int_eq(x.end, y.end);
            ck_assert_int_eq(x.kind, y.kind);
            ck_assert_int_eq(x.has_released, y.has_released);
            ck_assert_int_eq(timeline_released(&tl, r, TL_COMPUTE, k), timeline_released(&gen, r, TL_COMPUTE, k));
        }
    }
    ck_assert_int_eq(tl.t_end, 33 * MS);
    ck_assert_double_eq_tol(tl.bubble, 3.0 / 11.0, 1e-12);
    /* 1F1B keeps at most p − i microbatches in flight on stage i. */
    for (int i = 0; i < 4; i++) ck_assert_int_eq(tl.rows[timeline_row_of(&tl, i)].peak_mem, (2 + 4 - i) * GB);
    /* Stage 3 alternates at once: F0 [3,4], BW0 [4,6], F1 [6,7]. */
    ck_assert_int_eq(find_op(&tl, 3, TL_KIND_BW, 0)->start, 4 * MS);
    ck_assert_int_eq(find_op(&tl, 3, TL_KIND_F, 1)->start, 6 * MS);
    timeline_release(&tl);
    timeline_release(&gen);
}
END_TEST

START_TEST(test_read_example)
{
    /* Unsorted rows, quoted labels with commas, comm lanes, an unknown kind. */
    struct timeline tl;
    load(&tl, "viz/examples/small.csv");
    ck_assert_uint_eq(tl.n_ops, 21);
    ck_assert(tl.has_comm && tl.has_mem);
    ck_assert(!tl.has_released && !tl.has_ids);   /* the original 13 columns only */
    ck_assert_int_eq(tl.rows[timeline_row_of(&tl, 1)].node, 1);
    const struct tl_op *s = find_op(&tl, 0, TL_KIND_SEND, 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->bytes, 268435456);
    ck_assert_int_eq(s->stream, TL_COMM);
    const struct tl_lane *sl = timeline_lane(&tl, timeline_row_of(&tl, 0), TL_COMM);
    ck_assert_str_eq(timeline_label_of(&tl, timeline_info(&tl, sl, 0)), "activations mb0, stage 0 -> 1");
    uint16_t rec = timeline_kind_id(&tl, "recompute");
    ck_assert_int_ge(rec, TL_KIND_CUSTOM);
    ck_assert_ptr_nonnull(find_op(&tl, 1, rec, 1));
    ck_assert_uint_eq(viz_kind_color(rec), VIZ_UNKNOWN_OP);
    /* Serving's pass kinds are known, with colours of their own. */
    ck_assert_int_eq(timeline_kind_id(&tl, "prefill"), TL_KIND_PREFILL);
    ck_assert_int_eq(timeline_kind_id(&tl, "decode"), TL_KIND_DECODE);
    ck_assert_int_eq(timeline_kind_id(&tl, "mixed"), TL_KIND_MIXED);
    ck_assert_uint_ne(viz_kind_color(TL_KIND_MIXED), VIZ_UNKNOWN_OP);
    ck_assert_uint_ne(viz_kind_color(TL_KIND_PREFILL), viz_kind_color(TL_KIND_DECODE));
    ck_assert_int_eq(tl.rows[timeline_row_of(&tl, 0)].peak_mem, 4LL << 30);
    ck_assert_str_eq(timeline_meta(&tl, -1, "mfu"), "0.41");
    timeline_release(&tl);
}
END_TEST

static const char H[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label\n";

static const struct bad {
    const char *body;      /* after the header; NULL: the whole file is `whole` */
    const char *whole;
    const char *want;      /* in the message */
} bads[] = {
    { NULL, "", "empty file" },
    { NULL, "chip,stage,stream,kind,mb,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label\n",
      ":1:24: the header row must start with exactly" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x\n0,0,compute,F,1,0,0,3,0.001,0.002\n",
      NULL, ":3:1: expected 13 columns, as in the header, got 10" },
    /* Character 23 of "0,0,compute,F,1,0,0,3,soon,..." is where "soon" starts. */
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x\n0,0,compute,F,1,0,0,3,soon,0.002,0,,x\n",
      NULL, ":3:23: column start_s: expected a time in seconds" },
    { "0,0,compute,F,0,0,0,3,0.002,0.001,0,,x\n", NULL, ":2:29: end_s 0.001 is before start_s 0.002" },
    { "-3,0,compute,F,0,0,0,3,0,0.001,0,,x\n", NULL, ":2:1: column chip: expected a chip index in 0..1048575" },
    /* A chip index of 10^8 is refused before anything is allocated for it. */
    { "100000000,0,compute,F,0,0,0,3,0,0.001,0,,x\n", NULL,
      ":2:1: column chip: expected a chip index in 0..1048575 (the viewer's limit" },
    { "0,0,gpu,F,0,0,0,3,0,0.001,0,,x\n", NULL, ":2:5: column stream: expected compute, comm, memory or meta" },
    { "0,0,compute,,0,0,0,3,0,0.001,0,,x\n", NULL, ":2:13: column kind" },
    { "0,0,compute,F,zero,0,0,3,0,0.001,0,,x\n", NULL, ":2:15: column microbatch" },
    { "0,0,compute,F,0,0,0,3,0,0.001,-5,,x\n", NULL, ":2:31: column bytes" },
    { "-1,-1,meta,meta,-1,,,,0,0,0,,no equals sign\n", NULL, ":2:30: column label: a meta row" },
    { "0,-1,memory,mem,-1,,,,0.001,0.001,5,,weights\n", NULL, ":2:37: column mem_bytes" },
    { "0,-1,memory,mem,-1,,,,0.001,0.002,5,5,weights\n", NULL, ":2:29: a memory row has start_s = end_s" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x\"y\n", NULL, ":2:1: malformed CSV" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,\"never closed\n", NULL, "malformed CSV at end of file" },
};

/* The columns added after the first 13. */
static const char H2[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,"
    "label,op,released_by,microbatch2,chunk2,direction,direction2,comm\n";

static const struct bad bads2[] = {
    /* Op 7 names op 9 as what released it; no row has id 9. Line 3, and
     * character 42 is where "9" starts in "0,0,compute,F,1,0,0,3,0.001,0.002,0,,x,7,9,...". */
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x,5,,-1,-1,,,\n0,0,compute,F,1,0,0,3,0.001,0.002,0,,x,7,9,-1,-1,,,\n",
      NULL, ":3:42: column released_by: op 9 does not exist" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x,5,,-1,-1,,,\n0,0,compute,F,1,0,0,3,0.001,0.002,0,,x,5,,-1,-1,,,\n",
      NULL, ":3: column op: id 5 is taken already (line 2)" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x,5,,-1,-1,sideways,,\n", NULL,
      ":2:45: column direction: expected down, up or empty" },
    { "0,0,comm,send,0,0,0,3,0,0.001,0,,x,5,,-1,-1,,,xp\n", NULL, ":2:47: column comm: expected tp" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x,-7,,-1,-1,,,\n", NULL, ":2:36: column op: expected an op id" },
    { "-1,-1,meta,meta,-1,,,,0,0,0,,rows=sideways,,,,,,,\n", NULL, ":2:30: meta rows: expected rows=chips" },
    { "0,0,compute,F,0,0,0,3,0,0.001,0,,x,5,,-1,-1,,,\n-1,-1,meta,meta,-1,,,,0,0,0,,rows=slots,,,,,,,\n",
      NULL, ":3:30: meta rows=slots must come before the first op row" },
};

START_TEST(test_malformed)
{
    const struct bad *b = &bads[_i];
    char text[1024];
    snprintf(text, sizeof text, "%s%s", b->body ? H : "", b->body ? b->body : b->whole);
    const char *path = mp_test_tmpfile(".csv", text);
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    int rc = timeline_read_csv(&tl, path, &err);
    ck_assert_int_eq(rc, MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, b->want) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, b->want);
    ck_assert_msg(strstr(err.msg, path) != NULL, "case %d: message names no file", _i);
    timeline_release(&tl);
}
END_TEST

/* The CSV readers' rules (sim/io/csv_reader.h) hold for the timeline too:
 * a UTF-8 BOM before the header is skipped (the file reads as without it),
 * and a NUL byte is refused at its line and column: "0,0,compute,F," is 14
 * characters, so a NUL in place of the microbatch is line 2, column 15. */
START_TEST(test_bom_and_nul)
{
    static const char row[] = "0,0,compute,F,0,0,0,3,0,0.001,0,,x\n";
    char text[512];
    int n = snprintf(text, sizeof text, "\xEF\xBB\xBF%s%s", H, row);
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    ck_assert_int_eq(timeline_read_csv_buffer(&tl, "bom.csv", text, (size_t)n, &err), MP_OK);
    ck_assert_int_eq((int)tl.n_ops, 1);
    timeline_release(&tl);
    n = snprintf(text, sizeof text, "%s%s", H, row);
    text[strlen(H) + 14] = '\0';
    timeline_init(&tl);
    ck_assert_int_eq(timeline_read_csv_buffer(&tl, "nul.csv", text, (size_t)n, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "nul.csv:2:15: a NUL byte") != NULL, "%s", err.msg);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_malformed_new_columns)
{
    const struct bad *b = &bads2[_i];
    char text[1024];
    snprintf(text, sizeof text, "%s%s", H2, b->body);
    const char *path = mp_test_tmpfile(".csv", text);
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    ck_assert_int_eq(timeline_read_csv(&tl, path, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, b->want) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, b->want);
    ck_assert_msg(strstr(err.msg, path) != NULL, "case %d: message names no file", _i);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_header_extra_columns)
{
    /* Extra columns in any order after the first 13; an unknown one is an error. */
    char text[1024];
    snprintf(text, sizeof text, "%s",
             "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,"
             "mem_bytes,label,released_by,op\n"
             "0,0,compute,F,0,0,0,3,0,0.001,0,,a,,1\n0,0,compute,F,1,0,0,3,0.001,0.002,0,,b,1,2\n");
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    ck_assert_msg(timeline_read_csv(&tl, mp_test_tmpfile(".csv", text), &err) == MP_OK, "%s", err.msg);
    ck_assert(tl.has_released && tl.has_ids);
    /* Op 2 (F mb 1) was released by op 1 (F mb 0): global op 0 of the lane. */
    ck_assert_uint_eq(timeline_released(&tl, 0, TL_COMPUTE, 1), 0);
    ck_assert_uint_eq(timeline_released(&tl, 0, TL_COMPUTE, 0), TL_NONE);
    timeline_release(&tl);
    snprintf(text, sizeof text, "%s", "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,"
             "start_s,end_s,bytes,mem_bytes,label,colour\n");
    timeline_init(&tl);
    ck_assert_int_eq(timeline_read_csv(&tl, mp_test_tmpfile(".csv", text), &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, ":1:100: unknown column \"colour\""));
    timeline_release(&tl);
}
END_TEST

START_TEST(test_old_format_opens)
{
    /* A file of the original 13 columns (written before op ids existed):
     * the same ops and figures, only without released_by. */
    struct timeline a, b;
    load(&a, "tests/data/viz/old_13col_gpipe_p4_m8.csv");
    load(&b, "tests/data/viz/gpipe_p4_m8.csv");
    ck_assert_uint_eq(a.n_ops, b.n_ops);
    ck_assert(!a.has_released && b.has_released);
    ck_assert_int_eq(a.t_end, b.t_end);
    ck_assert_double_eq_tol(a.idle, b.idle, 1e-12);
    timeline_release(&a);
    timeline_release(&b);
}
END_TEST

START_TEST(test_missing_file)
{
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    ck_assert_int_eq(timeline_read_csv(&tl, "/nonexistent/t.csv", &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
    timeline_release(&tl);
}
END_TEST

START_TEST(test_roundtrip)
{
    struct timeline a, b;
    struct mp_error err = { 0 };
    load(&a, "viz/examples/small.csv");
    const char *path = mp_test_tmpfile(".csv", "");
    ck_assert_int_eq(timeline_write_csv(&a, path, &err), MP_OK);
    timeline_init(&b);
    ck_assert_msg(timeline_read_csv(&b, path, &err) == MP_OK, "%s", err.msg);
    ck_assert_uint_eq(a.n_ops, b.n_ops);
    ck_assert_uint_eq(a.n_mem, b.n_mem);
    ck_assert_int_eq(a.n_rows, b.n_rows);
    for (int r = 0; r < a.n_rows; r++)
        for (int st = 0; st < TL_STREAMS; st++) {
            const struct tl_lane *la = timeline_lane(&a, r, st), *lb = timeline_lane(&b, r, st);
            ck_assert_uint_eq(la->n, lb->n);
            for (size_t k = 0; k < la->n; k++) {
                struct tl_op x, y;
                timeline_get_op(&a, r, st, k, &x);
                timeline_get_op(&b, r, st, k, &y);
                ck_assert_int_eq(x.start, y.start);
                ck_assert_int_eq(x.end, y.end);
                ck_assert_int_eq(x.bytes, y.bytes);
                ck_assert_str_eq(timeline_label_of(&a, timeline_info(&a, la, k)),
                                 timeline_label_of(&b, timeline_info(&b, lb, k)));
                ck_assert_str_eq(timeline_kind_name(&a, x.kind), timeline_kind_name(&b, y.kind));
            }
        }
    for (size_t i = 0; i < a.n_mem; i++) ck_assert_int_eq(a.mem[i].in_use, b.mem[i].in_use);
    ck_assert_str_eq(timeline_meta(&b, -1, "scenario"), "hand-made two-stage example");
    timeline_release(&a);
    timeline_release(&b);
}
END_TEST

START_TEST(test_busy_is_union)
{
    struct timeline tl;
    timeline_init(&tl);
    struct tl_op o = { .chip = 0, .stream = TL_COMPUTE, .kind = TL_KIND_F, .microbatch = -1 };
    o.start = 0; o.end = 2 * MS; timeline_add_op(&tl, &o, NULL);
    o.start = 1 * MS; o.end = 3 * MS; timeline_add_op(&tl, &o, NULL);
    o.start = 5 * MS; o.end = 6 * MS; timeline_add_op(&tl, &o, "late");
    timeline_finish(&tl);
    ck_assert_int_eq(tl.rows[0].lane[TL_COMPUTE].busy, 4 * MS);
    ck_assert_double_eq_tol(tl.idle, 1.0 - 4.0 / 6.0, 1e-12);
    ck_assert_ptr_nonnull(tl.rows[0].lane[TL_COMPUTE].maxend); /* they overlap */
    mp_time t;
    ck_assert(timeline_next_event(&tl, 0, +1, &t));
    ck_assert_int_eq(t, 1 * MS);
    ck_assert(timeline_next_event(&tl, 3 * MS, -1, &t));
    ck_assert_int_eq(t, 2 * MS);
    ck_assert(!timeline_next_event(&tl, 6 * MS, +1, &t));
    ck_assert(!timeline_next_event(&tl, 0, -1, &t));
    /* Busy before t counts the union [0, 3] ∪ [5, 6] cut at t. */
    ck_assert_int_eq(timeline_busy_until(&tl, 0, 0), 0);
    ck_assert_int_eq(timeline_busy_until(&tl, 0, MS / 2), MS / 2);
    ck_assert_int_eq(timeline_busy_until(&tl, 0, 2 * MS + MS / 2), 2 * MS + MS / 2);
    ck_assert_int_eq(timeline_busy_until(&tl, 0, 4 * MS), 3 * MS);
    ck_assert_int_eq(timeline_busy_until(&tl, 0, 5 * MS + MS / 2), 3 * MS + MS / 2);
    ck_assert_int_eq(timeline_busy_until(&tl, 0, 10 * MS), 4 * MS);
    timeline_release(&tl);
}
END_TEST

/* ---- layout ---- */

static struct viz_view view_at(int w, int h, double t0, double ps_per_px)
{
    return (struct viz_view){ .width = w, .height = h, .t0 = t0, .ps_per_px = ps_per_px,
                              .cursor = INFINITY };
}

START_TEST(test_box_columns_exact)
{
    struct timeline tl;
    timeline_init(&tl);
    struct tl_op o = { .chip = 0, .stream = TL_COMPUTE, .microbatch = 0 };
    o.kind = TL_KIND_F;  o.start = 1 * MS; o.end = 2 * MS; timeline_add_op(&tl, &o, NULL);
    o.kind = TL_KIND_BW; o.start = 2 * MS; o.end = 4 * MS; timeline_add_op(&tl, &o, NULL);
    o.kind = TL_KIND_W;  o.start = 5 * MS; o.end = 5 * MS + MS / 2; timeline_add_op(&tl, &o, NULL);
    timeline_finish(&tl);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_geom g;
    viz_geom_init(&g);
    /* 10 us per pixel: 1 ms is 100 px; the time area starts at x = 112. */
    struct viz_view v = view_at(1000, 400, 0, 1e7);
    viz_layout_geom(&g, &sc, &v);
    ck_assert_int_eq(g.plot_x0, VIZ_LABEL_W);
    int x0, x1;
    const struct tl_lane *l = timeline_lane(&tl, 0, TL_COMPUTE);
    ck_assert(viz_span_columns(&g, &v, l->start[0], l->end[0], &x0, &x1));
    ck_assert_int_eq(x0, 212); ck_assert_int_eq(x1, 312);
    ck_assert(viz_span_columns(&g, &v, l->start[1], l->end[1], &x0, &x1));
    ck_assert_int_eq(x0, 312); ck_assert_int_eq(x1, 512);
    ck_assert(viz_span_columns(&g, &v, l->start[2], l->end[2], &x0, &x1));
    ck_assert_int_eq(x0, 612); ck_assert_int_eq(x1, 662);
    /* Panning by half a millisecond moves every box 50 px left. */
    v.t0 = 0.5 * MS;
    ck_assert(viz_span_columns(&g, &v, l->start[0], l->end[0], &x0, &x1));
    ck_assert_int_eq(x0, 162); ck_assert_int_eq(x1, 262);

    /* The draw list has the forward box: body [212, 311) and a darker edge at 311. */
    v.t0 = 0;
    struct viz_draw_list dl;
    viz_draw_init(&dl);
    viz_layout_draw(&dl, &g, &sc, &v);
    int found = 0;
    for (size_t i = 0; i < dl.n; i++) {
        const struct viz_cmd *c = &dl.cmds[i];
        /* The row's boxes (not the colour key's swatches in the header). */
        if (c->type != VIZ_CMD_RECT || c->y < g.rows[0].compute_y) continue;
        if (c->color == viz_kind_color(TL_KIND_F)) {
            ck_assert_int_eq(c->x, 212);
            ck_assert_int_eq(c->w, 99);
            ck_assert_int_eq(c->y, g.rows[0].compute_y + 1);
            ck_assert_int_eq(c->h, g.rows[0].compute_h - 2);
            found++;
        }
        if (c->color == viz_kind_color(TL_KIND_BW)) {
            ck_assert_int_eq(c->x, 312);
            ck_assert_int_eq(c->w, 199);
            found++;
        }
    }
    ck_assert_int_eq(found, 2);
    viz_draw_release(&dl);
    viz_geom_release(&g);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_zoom_keeps_pointer_time)
{
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    timeline_textbook(&tl, "gpipe", 4, 8, MS, 2 * MS, &err);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_geom g;
    viz_geom_init(&g);
    struct viz_view v = view_at(1280, 720, -123456.0, 3.3e7);
    viz_layout_geom(&g, &sc, &v);
    const double xs[] = { 112, 300, 777.5, 1100 };
    const double fs[] = { 1.25, 0.8, 3, 1.0 / 3, 1000, 1e-3 };
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 6; j++) {
            double before = viz_t_of(&g, &v, xs[i]);
            double pp = v.ps_per_px;
            viz_view_zoom(&v, &g, xs[i], fs[j]);
            ck_assert_double_eq_tol(v.ps_per_px, pp / fs[j], pp * 1e-12);
            ck_assert_double_eq_tol(viz_t_of(&g, &v, xs[i]), before, 1e-3);
        }
    }
    /* The same through the mouse wheel, which zooms 1.25× per notch. */
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1280, 720);
    double before = viz_t_of(&app.geom, &app.view, 500);
    viz_app_wheel(&app, 500, 300, 2, false);
    ck_assert_double_eq_tol(viz_t_of(&app.geom, &app.view, 500), before, 1e-3);
    viz_app_wheel(&app, 500, 300, -5, false);
    ck_assert_double_eq_tol(viz_t_of(&app.geom, &app.view, 500), before, 1e-3);
    viz_app_release(&app);
    viz_geom_release(&g);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_axis)
{
    ck_assert_double_eq(viz_axis_step(1e7, 90), 1e9);     /* 10 us/px: 1 ms ticks */
    ck_assert_double_eq(viz_axis_step(3.3e7, 90), 5e9);   /* 2.97 ms wanted: 5 ms */
    ck_assert_double_eq(viz_axis_step(1.2e7, 90), 2e9);   /* 1.08 ms wanted: 2 ms */
    ck_assert_double_eq(viz_axis_step(1, 90), 100);
    char buf[32];
    viz_format_time(33e9, buf, sizeof buf);
    ck_assert_str_eq(buf, "33 ms");
    viz_format_time(1.25e6, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.25 us");
    viz_format_time(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0");
    /* The CLI's units: GB = 10^9 bytes. */
    viz_format_bytes(10.0 * GB, buf, sizeof buf);
    ck_assert_str_eq(buf, "10 GB");
    viz_format_bytes(3.73e9, buf, sizeof buf);
    ck_assert_str_eq(buf, "3.73 GB");
    viz_format_bytes(512e6, buf, sizeof buf);
    ck_assert_str_eq(buf, "512 MB");
    /* The memory scale's top: the next of 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 × 10^k. */
    ck_assert_double_eq(viz_nice_bytes(8e9), 8e9);
    ck_assert_double_eq(viz_nice_bytes(7.45e9), 8e9);
    ck_assert_double_eq(viz_nice_bytes(10.5e9), 12.5e9);
    ck_assert_double_eq(viz_nice_bytes(31.09e9), 40e9);
}
END_TEST

START_TEST(test_level_of_detail)
{
    /* 100 000 back-to-back 10 ns ops in 1 ms, shown 1 ms across ~1000 px:
     * 100 ops share each pixel, which must cost one column, not 100 boxes. */
    struct timeline tl;
    timeline_init(&tl);
    for (int i = 0; i < 100000; i++) {
        struct tl_op o = { .chip = 0, .stream = TL_COMPUTE, .microbatch = i,
                           .kind = i % 10 == 9 ? TL_KIND_W : TL_KIND_F,
                           .start = (mp_time)i * 10000, .end = (mp_time)(i + 1) * 10000 };
        timeline_add_op(&tl, &o, NULL);
    }
    timeline_finish(&tl);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_geom g;
    viz_geom_init(&g);
    struct viz_view v = view_at(1000 + VIZ_LABEL_W + VIZ_GUTTER_W, 300, 0, 1e6);
    viz_layout_geom(&g, &sc, &v);
    struct viz_draw_list dl;
    viz_draw_init(&dl);
    viz_layout_draw(&dl, &g, &sc, &v);
    ck_assert_uint_lt(dl.n, 1200);
    /* Fully busy columns in the majority kind's colour, opaque. */
    struct viz_canvas cv = { .w = v.width, .h = v.height, .pitch = v.width };
    cv.px = calloc((size_t)cv.w * (size_t)cv.h, 4);
    viz_raster(&dl, &cv, NULL);
    int y = g.rows[0].compute_y + g.rows[0].compute_h / 2;
    for (int x = g.plot_x0 + 1; x < g.plot_x0 + 999; x += 37)
        ck_assert_uint_eq(cv.px[y * cv.pitch + x], viz_kind_color(TL_KIND_F));
    /* It was drawn from the pyramid: 2^17 level-0 bins would exceed the cap
     * of 2^15, so 32768 bins of 1 ms / 32768 each, and levels down to 4
     * bins: 2^15 .. 2^2, 14 levels. */
    const struct tl_lod *lod = timeline_lane(&tl, 0, TL_COMPUTE)->lod;
    ck_assert_ptr_nonnull(lod);
    ck_assert_uint_eq(lod->n0, 32768);
    ck_assert_int_eq(lod->levels, 14);
    ck_assert_double_eq_tol(lod->b0, 1e9 / 32768.0, 1e-6);
    /* Every bin fully busy; the top level's 4 bins are 90% F, 10% W. */
    for (int l = 0; l < lod->levels; l++) ck_assert_uint_eq(lod->busy[lod->off[l]], (unsigned)TL_LOD_ONE);
    ck_assert_uint_eq(lod->kind[lod->off[13]], TL_KIND_F);
    free(cv.px);
    viz_draw_release(&dl);
    viz_geom_release(&g);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_level_of_detail_half_busy)
{
    /* 50 000 ops of 10 ns, one every 20 ns (half busy), 1 ms over 1000 px:
     * every pooled column is half busy, alpha 48 + 207 × 0.5 = 151.5 → 152
     * (151 for a rounding below the half). The pyramid splits a bin cut by a
     * column edge as if evenly busy: off by at most one 10 ns op in a 1 us
     * column, 1% or ±2.07 alpha. The exact walk at 40 ns per pixel (two
     * whole ops per column, not more than two per pixel) gives 151..152. */
    struct timeline tl;
    timeline_init(&tl);
    for (int i = 0; i < 50000; i++) {
        struct tl_op o = { .chip = 0, .stream = TL_COMPUTE, .microbatch = -1, .kind = TL_KIND_B,
                           .start = (mp_time)i * 20000, .end = (mp_time)i * 20000 + 10000 };
        timeline_add_op(&tl, &o, NULL);
    }
    timeline_finish(&tl);
    ck_assert_ptr_nonnull(timeline_lane(&tl, 0, TL_COMPUTE)->lod);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_geom g;
    viz_geom_init(&g);
    struct viz_draw_list dl;
    viz_draw_init(&dl);
    const double zooms[] = { 1e6, 4e4 };    /* 50 ops per px (pyramid); 2 (exact walk) */
    const unsigned lo[] = { 149, 151 }, hi[] = { 154, 152 };
    for (int z = 0; z < 2; z++) {
        struct viz_view v = view_at(1000 + VIZ_LABEL_W + VIZ_GUTTER_W, 300, 0, zooms[z]);
        viz_layout_geom(&g, &sc, &v);
        viz_draw_clear(&dl);
        viz_layout_draw(&dl, &g, &sc, &v);
        int cols = 0;
        for (size_t i = 0; i < dl.n; i++) {
            const struct viz_cmd *c = &dl.cmds[i];
            if (c->type != VIZ_CMD_RECT || (c->color & 0xFFFFFFu) != (viz_kind_color(TL_KIND_B) & 0xFFFFFFu) ||
                c->y < g.rows[0].compute_y)
                continue;
            unsigned a = c->color >> 24;
            ck_assert_msg(a >= lo[z] && a <= hi[z], "zoom %d: alpha %u at x %d", z, a, (int)c->x);
            cols += c->w;
        }
        ck_assert_int_ge(cols, 999);
    }
    viz_draw_release(&dl);
    viz_geom_release(&g);
    timeline_release(&tl);
}
END_TEST

/* ---- pixels ---- */

/* Paint a fixture the way `--screenshot` does (minus text) into *cv. */
static void paint(struct viz_app *app, struct viz_scene *sc, struct timeline *tl, const char *rel,
                  double cursor, struct viz_canvas *cv)
{
    load(tl, rel);
    *sc = (struct viz_scene){ .tl = { tl }, .n = 1 };
    viz_app_init(app, sc, NULL, 1200, 500);
    viz_app_set_cursor(app, cursor);
    const struct viz_draw_list *dl = viz_app_frame(app);
    *cv = (struct viz_canvas){ .w = 1200, .h = 500, .pitch = 1200 };
    cv->px = calloc(1200 * 500, 4);
    viz_raster(dl, cv, NULL);
}

static uint32_t pixel_at(const struct viz_app *app, const struct viz_canvas *cv, int chip, double t)
{
    const struct viz_row *r = NULL;
    for (int i = 0; i < app->geom.n_rows; i++)
        if (app->scene.tl[0]->rows[app->geom.rows[i].row].key == chip && app->geom.rows[i].panel == 0)
            r = &app->geom.rows[i];
    ck_assert_ptr_nonnull(r);
    int x = (int)floor(viz_x_of(&app->geom, &app->view, t));
    int y = r->compute_y + r->compute_h / 2;
    return cv->px[y * cv->pitch + x];
}

static bool is_bubble(uint32_t c) { return c == VIZ_BUBBLE || c == VIZ_BUBBLE_HATCH; }

START_TEST(test_pixels_gpipe)
{
    struct viz_app app;
    struct viz_scene sc;
    struct timeline tl;
    struct viz_canvas cv;
    paint(&app, &sc, &tl, "tests/data/viz/gpipe_p4_m8.csv", INFINITY, &cv);
    for (int i = 0; i < 4; i++) {
        /* Before its first forward (i ms), stage i idles inside the step. */
        for (double t = 0.1; t < i; t += 0.25)
            ck_assert_msg(is_bubble(pixel_at(&app, &cv, i, t * MS)), "stage %d at %g ms", i, t);
        /* Between its last forward's end (i+8) and first backward (17−2i). */
        for (double t = i + 8 + 0.1; t < 17 - 2 * i; t += 0.25)
            ck_assert_msg(is_bubble(pixel_at(&app, &cv, i, t * MS)), "stage %d at %g ms", i, t);
        /* And after its last backward (33 − 2i) to the end of the step. */
        for (double t = 33 - 2 * i + 0.1; t < 33; t += 0.25)
            ck_assert(is_bubble(pixel_at(&app, &cv, i, t * MS)));
        /* Every forward box is forward-coloured, every backward orange. */
        for (int k = 0; k < 8; k++) {
            ck_assert_uint_eq(pixel_at(&app, &cv, i, (i + k + 0.3) * MS), viz_kind_color(TL_KIND_F));
            ck_assert_uint_eq(pixel_at(&app, &cv, i, (11 + 2 * (3 - i) + 2 * k + 1) * MS),
                              viz_kind_color(TL_KIND_BW));
        }
    }
    /* Outside the step (the left margin) is lane, not bubble. */
    ck_assert_uint_eq(pixel_at(&app, &cv, 2, -0.3 * MS), VIZ_LANE);
    /* Four rows leave room: lanes grow (up to three times) to fill the
     * window; at 1200x500 the memory strip is 36 px (16 px × 2.25). The
     * peaks (2 GB weights + 8 stashed 1 GB activations = 10 GB) stay below
     * 4/5 of the 16 GB capacity, so the strip spans 0..10 GB (a round number
     * already). */
    const struct viz_row *r = &app.geom.rows[0];
    ck_assert_int_eq(r->mem_h, 36);
    ck_assert_double_eq(app.geom.mem_scale, 10.0 * GB);
    /* At 8.5 ms stage 0 holds all 10 GB: the whole strip. */
    int x = (int)floor(viz_x_of(&app.geom, &app.view, 8.5 * MS));
    ck_assert_uint_eq(cv.px[(r->mem_y + r->mem_h - 1) * cv.pitch + x], VIZ_MEM_FILL);
    ck_assert_uint_eq(cv.px[r->mem_y * cv.pitch + x], VIZ_MEM_FILL);
    /* At 3.5 ms (F0..F3 started) it holds 2 + 4 = 6 GB: 6/10 × 36 = 21.6 → 22 px
     * (the half-scale line at 18 px is drawn under the fill). */
    x = (int)floor(viz_x_of(&app.geom, &app.view, 3.5 * MS));
    ck_assert_uint_eq(cv.px[(r->mem_y + r->mem_h - 22) * cv.pitch + x], VIZ_MEM_FILL);
    ck_assert_uint_eq(cv.px[(r->mem_y + r->mem_h - 23) * cv.pitch + x], VIZ_MEM_LANE);
    /* Utilization up to a replay cursor (busy share of [0, t]): stage 0 is
     * busy from 0 to 8 ms, then idle until its first backward at 17 ms. */
    int r0 = timeline_row_of(&tl, 0), r3 = timeline_row_of(&tl, 3);
    ck_assert_double_eq_tol(timeline_utilization_until(&tl, r0, (mp_time)(5.5 * MS)), 1.0, 1e-12);
    ck_assert_double_eq_tol(timeline_utilization_until(&tl, r0, 12 * MS), 8.0 / 12.0, 1e-12);
    ck_assert_double_eq_tol(timeline_utilization_until(&tl, r0, 19 * MS), 10.0 / 19.0, 1e-12);
    ck_assert_double_eq_tol(timeline_utilization_until(&tl, r3, (mp_time)(5.5 * MS)), 2.5 / 5.5, 1e-12);
    ck_assert_double_eq_tol(timeline_utilization_until(&tl, r3, 40 * MS), 24.0 / 33.0, 1e-12);
    /* Memory at an instant, by category: at 3.5 ms 2 GB of weights and the
     * activations of F0..F3, 4 GB. */
    int64_t cats[TL_MEM_CATS];
    ck_assert_int_eq(timeline_mem_at(&tl, r0, (mp_time)(3.5 * MS), cats), 6 * GB);
    ck_assert_int_eq(cats[TL_MEM_WEIGHTS], 2 * GB);
    ck_assert_int_eq(cats[TL_MEM_ACTIVATIONS], 4 * GB);
    /* At 33 ms the last backward has given back the last activation. */
    ck_assert_int_eq(timeline_mem_at(&tl, r0, 30 * MS, cats), 4 * GB);
    ck_assert_int_eq(cats[TL_MEM_ACTIVATIONS], 2 * GB);
    ck_assert_int_eq(timeline_mem_at(&tl, r0, 33 * MS, cats), 2 * GB);
    ck_assert_int_eq(cats[TL_MEM_ACTIVATIONS], 0);
    free(cv.px);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_pixels_1f1b_differs)
{
    struct viz_app a1, a2;
    struct viz_scene s1, s2;
    struct timeline t1, t2;
    struct viz_canvas c1, c2;
    paint(&a1, &s1, &t1, "tests/data/viz/gpipe_p4_m8.csv", INFINITY, &c1);
    paint(&a2, &s2, &t2, "tests/data/viz/1f1b_p4_m8.csv", INFINITY, &c2);
    long differ = 0;
    for (int i = 0; i < 1200 * 500; i++) differ += c1.px[i] != c2.px[i];
    ck_assert_int_gt(differ, 5000);
    /* At 5.5 ms GPipe's stage 0 runs F5; 1F1B's stage 0 waits for BW0. */
    ck_assert_uint_eq(pixel_at(&a1, &c1, 0, 5.5 * MS), viz_kind_color(TL_KIND_F));
    ck_assert(is_bubble(pixel_at(&a2, &c2, 0, 5.5 * MS)));
    /* 1F1B's stage 3 runs BW0 over [4, 6] ms. */
    ck_assert_uint_eq(pixel_at(&a2, &c2, 3, 5 * MS), viz_kind_color(TL_KIND_BW));
    free(c1.px);
    free(c2.px);
    viz_app_release(&a1);
    viz_app_release(&a2);
    timeline_release(&t1);
    timeline_release(&t2);
}
END_TEST

START_TEST(test_replay_cursor)
{
    struct viz_app app;
    struct viz_scene sc;
    struct timeline tl;
    struct viz_canvas cv;
    paint(&app, &sc, &tl, "tests/data/viz/gpipe_p4_m8.csv", 5.5 * MS, &cv);
    /* F4 [4,5] is done, F5 [5,6] is half drawn, F6 has not happened yet. */
    ck_assert_uint_eq(pixel_at(&app, &cv, 0, 4.5 * MS), viz_kind_color(TL_KIND_F));
    ck_assert_uint_eq(pixel_at(&app, &cv, 0, 5.2 * MS), viz_kind_color(TL_KIND_F));
    ck_assert_uint_eq(pixel_at(&app, &cv, 0, 6.5 * MS), VIZ_LANE);
    ck_assert_uint_eq(pixel_at(&app, &cv, 3, 12 * MS), VIZ_LANE);
    /* The bubble grows with the cursor too: stage 3 before its first F. */
    ck_assert(is_bubble(pixel_at(&app, &cv, 3, 1 * MS)));
    free(cv.px);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

/* A stub font: 6 px wide solid blocks, 10 px high. */
static const uint8_t block[6 * 10] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255,
};
static const struct viz_glyph stub_glyph = { 6, 10, 7, block };
static const struct viz_glyph *stub(void *ctx, uint32_t cp) { (void)ctx; (void)cp; return &stub_glyph; }
static const struct viz_font stub_font = { .ctx = NULL, .height = 10, .glyph = stub };

START_TEST(test_microbatch_numbers)
{
    const struct viz_font font = stub_font;
    struct timeline tl;
    load(&tl, "tests/data/viz/gpipe_p4_m8.csv");
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, &font, 1200, 500);
    const struct viz_draw_list *dl = viz_app_frame(&app);
    int numbers = 0;
    for (size_t i = 0; i < dl->n; i++)
        if (dl->cmds[i].type == VIZ_CMD_TEXT && dl->cmds[i].color == VIZ_TEXT_ON_OP) numbers++;
    ck_assert_int_eq(numbers, 64);  /* a ~32 px box has room for one digit */
    viz_app_release(&app);
    /* At 360 px the label column takes 22% (79 px) and the gutter 18% (64
     * px): 217 px for 33 ms + 3% margin, 6.4 px a millisecond. A 1 ms F box
     * (6 px) has no room for a 7 px digit and 2 px each side; a 2 ms BW box
     * (12-13 px) has: 32 numbers, those of the backwards. */
    viz_app_init(&app, &sc, &font, 360, 300);
    ck_assert_int_eq(app.geom.plot_x1 - app.geom.plot_x0, 217);
    dl = viz_app_frame(&app);
    numbers = 0;
    for (size_t i = 0; i < dl->n; i++)
        if (dl->cmds[i].type == VIZ_CMD_TEXT && dl->cmds[i].color == VIZ_TEXT_ON_OP) numbers++;
    ck_assert_int_eq(numbers, 32);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_hit)
{
    struct timeline tl;
    load(&tl, "tests/data/viz/gpipe_p4_m8.csv");
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1200, 500);
    const struct viz_row *r = &app.geom.rows[1];
    int x = (int)floor(viz_x_of(&app.geom, &app.view, 4.5 * MS));
    struct viz_hit h = viz_layout_hit(&app.geom, &sc, &app.view, x, r->compute_y + 3);
    ck_assert(h.ok);
    ck_assert_int_eq(h.kind, VIZ_HIT_OP);
    struct tl_op o;
    timeline_get_op(&tl, h.row, h.stream, h.op, &o);
    ck_assert_int_eq(o.chip, 1);
    ck_assert_int_eq(o.kind, TL_KIND_F);
    ck_assert_int_eq(o.microbatch, 3);
    char lines[10][VIZ_TIP_W];
    int n = viz_hit_details(&sc, &h, lines, 10);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(lines[0], "F  microbatch 3");
    /* A synthetic model's layers are left out (model=synthetic). */
    ck_assert_str_eq(lines[1], "stage 1  chip 1  compute");
    ck_assert_str_eq(lines[2], "start 4 ms  duration 1 ms");
    /* F3 on stage 1 could start at 4 ms, when both F3 on stage 0 and F2 on
     * stage 1 end: a tie goes to the op before it on its own chip. */
    ck_assert_str_eq(lines[3], "started when F of microbatch 2 on stage 1 (chip 1) ended");
    /* Deep in stage 3's opening bubble the pointer finds the idle stretch
     * [0, 3) ms: it waits for F0 of stage 2, which ends at 3 ms. */
    r = &app.geom.rows[3];
    x = (int)floor(viz_x_of(&app.geom, &app.view, 1 * MS));
    h = viz_layout_hit(&app.geom, &sc, &app.view, x, r->compute_y + 3);
    ck_assert(h.ok && h.kind == VIZ_HIT_IDLE);
    n = viz_hit_details(&sc, &h, lines, 10);
    ck_assert_int_ge(n, 3);
    ck_assert_str_eq(lines[0], "idle 3 ms on stage 3 (0 .. 3 ms)");
    ck_assert_str_eq(lines[1], "waiting for F of microbatch 0 on stage 2 (chip 2)");
    ck_assert_str_eq(lines[2], "pipeline bubble");
    /* On the memory strip: the bytes at that instant, by category. */
    r = &app.geom.rows[0];
    x = (int)floor(viz_x_of(&app.geom, &app.view, 3.5 * MS));
    h = viz_layout_hit(&app.geom, &sc, &app.view, x, r->mem_y + 2);
    ck_assert(h.ok && h.kind == VIZ_HIT_MEM);
    n = viz_hit_details(&sc, &h, lines, 10);
    ck_assert_int_eq(n, 4);
    ck_assert_ptr_nonnull(strstr(lines[0], ": 6 GB of 16 GB"));
    ck_assert_ptr_nonnull(strstr(lines[1], "weights"));
    ck_assert_ptr_nonnull(strstr(lines[1], "2 GB"));
    ck_assert_ptr_nonnull(strstr(lines[2], "activations"));
    ck_assert_ptr_nonnull(strstr(lines[2], "4 GB"));
    /* Ops the replay has not reached cannot be hovered. */
    app.view.cursor = 2 * MS;
    x = (int)floor(viz_x_of(&app.geom, &app.view, 4.5 * MS));
    ck_assert(!viz_layout_hit(&app.geom, &sc, &app.view, x, app.geom.rows[1].compute_y + 3).ok);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_app_replay_keys)
{
    struct timeline tl;
    load(&tl, "tests/data/viz/gpipe_p4_m8.csv");
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1200, 500);
    ck_assert(isinf(app.view.cursor));
    viz_app_key(&app, VIZ_KEY_SPACE);              /* play from the start */
    ck_assert(app.playing);
    ck_assert_double_eq(app.view.cursor, 0);
    viz_app_tick(&app, 1.0);                        /* 33 ms / 8 s per second */
    ck_assert_double_eq_tol(app.view.cursor, 33e9 / 8, 1);
    viz_app_key(&app, VIZ_KEY_PLUS);
    viz_app_tick(&app, 1.0);
    ck_assert_double_eq_tol(app.view.cursor, 3 * 33e9 / 8, 1);
    viz_app_key(&app, VIZ_KEY_RIGHT);               /* pauses, next event: 13 ms */
    ck_assert(!app.playing);
    ck_assert_double_eq(app.view.cursor, 13.0 * MS);
    viz_app_key(&app, VIZ_KEY_LEFT);                /* no op starts or ends at 12 ms */
    ck_assert_double_eq(app.view.cursor, 11.0 * MS);
    viz_app_key(&app, VIZ_KEY_SPACE);
    viz_app_tick(&app, 100.0);                      /* runs off the end: show all */
    ck_assert(!app.playing);
    ck_assert(isinf(app.view.cursor));
    /* Scrubbing: press on the axis puts the cursor under the pointer. */
    int x = (int)floor(viz_x_of(&app.geom, &app.view, 20.0 * MS));
    viz_app_mouse_button(&app, x, 5, true);
    ck_assert_double_eq_tol(app.view.cursor, 20.0 * MS, app.view.ps_per_px);
    viz_app_mouse_move(&app, x + 100, 5);
    ck_assert_double_eq_tol(app.view.cursor, 20.0 * MS + 100 * app.view.ps_per_px, app.view.ps_per_px);
    viz_app_mouse_button(&app, x + 100, 5, false);
    /* Dragging the rows pans: the time under the pointer follows it. */
    double t = viz_t_of(&app.geom, &app.view, 400);
    viz_app_mouse_button(&app, 400, 200, true);
    viz_app_mouse_move(&app, 450, 200);
    viz_app_mouse_button(&app, 450, 200, false);
    ck_assert_double_eq_tol(viz_t_of(&app.geom, &app.view, 450), t, 1e-3);
    /* Resizing keeps the visible span. */
    double span = app.view.ps_per_px * (app.geom.plot_x1 - app.geom.plot_x0);
    viz_app_resize(&app, 1800, 700);
    ck_assert_double_eq_tol(app.view.ps_per_px * (app.geom.plot_x1 - app.geom.plot_x0), span, 1e-3);
    viz_app_key(&app, VIZ_KEY_HELP);
    ck_assert(app.help);
    viz_app_frame(&app);
    viz_app_key(&app, VIZ_KEY_ESCAPE);
    ck_assert(!app.help && !app.quit);
    viz_app_key(&app, VIZ_KEY_ESCAPE);
    ck_assert(app.quit);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_compare_panels)
{
    struct timeline a, b;
    load(&a, "tests/data/viz/gpipe_p4_m8.csv");
    load(&b, "tests/data/viz/1f1b_p4_m8.csv");
    struct viz_scene sc = { .tl = { &a, &b }, .n = 2 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1200, 700);
    ck_assert_int_eq(app.geom.n_rows, 8);
    ck_assert_int_eq(app.geom.rows[4].panel, 1);
    ck_assert_int_gt(app.geom.panel[1].header_y, app.geom.rows[3].y + app.geom.rows[3].h);
    ck_assert_int_gt(app.geom.rows[4].y, app.geom.panel[1].header_y);
    /* One time axis: both panels' stage-3 F0 starts at 3 ms, same column. */
    struct viz_canvas cv = { .w = 1200, .h = 700, .pitch = 1200 };
    cv.px = calloc(1200 * 700, 4);
    viz_raster(viz_app_frame(&app), &cv, NULL);
    int x = (int)floor(viz_x_of(&app.geom, &app.view, 3.3 * MS));
    for (int p = 0; p < 2; p++) {
        const struct viz_row *r = &app.geom.rows[4 * p + 3];
        ck_assert_uint_eq(cv.px[(r->compute_y + 5) * cv.pitch + x], viz_kind_color(TL_KIND_F));
    }
    free(cv.px);
    viz_app_release(&app);
    timeline_release(&a);
    timeline_release(&b);
}
END_TEST

START_TEST(test_many_rows_shrink)
{
    /* 64 chips do not fit 600 px at full height: lanes shrink, rows stay in order. */
    struct timeline tl;
    timeline_init(&tl);
    timeline_synthetic(&tl, 64, 6400);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1000, 600);
    ck_assert_int_eq(app.geom.n_rows, 64);
    ck_assert_int_lt(app.geom.rows[0].compute_h, VIZ_COMPUTE_H);
    for (int i = 1; i < 64; i++) ck_assert_int_gt(app.geom.rows[i].y, app.geom.rows[i - 1].y);
    viz_app_key(&app, VIZ_KEY_PAGEDOWN);
    ck_assert_double_ge(app.view.scroll_y, 0);
    ck_assert_double_le(app.view.scroll_y, app.geom.content_h);
    viz_app_frame(&app);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

Suite *viz_layout_suite(void)
{
    Suite *s = suite_create("viz_layout");
    TCase *tc = tcase_create("csv");
    tcase_add_test(tc, test_parse_seconds);
    tcase_add_test(tc, test_read_gpipe);
    tcase_add_test(tc, test_read_1f1b_matches_generator);
    tcase_add_test(tc, test_read_example);
    tcase_add_loop_test(tc, test_malformed, 0, (int)(sizeof bads / sizeof bads[0]));
    tcase_add_loop_test(tc, test_malformed_new_columns, 0, (int)(sizeof bads2 / sizeof bads2[0]));
    tcase_add_test(tc, test_bom_and_nul);
    tcase_add_test(tc, test_header_extra_columns);
    tcase_add_test(tc, test_old_format_opens);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_busy_is_union);
    suite_add_tcase(s, tc);
    tc = tcase_create("layout");
    tcase_add_test(tc, test_box_columns_exact);
    tcase_add_test(tc, test_zoom_keeps_pointer_time);
    tcase_add_test(tc, test_axis);
    tcase_add_test(tc, test_level_of_detail);
    tcase_add_test(tc, test_hit);
    tcase_add_test(tc, test_app_replay_keys);
    tcase_add_test(tc, test_compare_panels);
    tcase_add_test(tc, test_many_rows_shrink);
    suite_add_tcase(s, tc);
    tc = tcase_create("pixels");
    tcase_add_test(tc, test_pixels_gpipe);
    tcase_add_test(tc, test_level_of_detail_half_busy);
    tcase_add_test(tc, test_pixels_1f1b_differs);
    tcase_add_test(tc, test_replay_cursor);
    tcase_add_test(tc, test_microbatch_numbers);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(viz_layout_suite)
