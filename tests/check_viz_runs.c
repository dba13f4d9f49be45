/* check_viz_runs.c — the viewer on real runs, through the same rasteriser
 * that writes `mpsim-view --screenshot`: the released-by dependency the
 * engine records (and what a hovered bubble says about it), chunk shading,
 * FB boxes with both microbatches, one memory scale across compared runs,
 * folded groups of peers, the heat map of a serving run, and that no text
 * box overlaps another in small windows.
 *
 * The teaching scenarios are p = 4 stages, m = 8 microbatches, F = 1 ms,
 * B = W = 1 ms (a fused backward BW = 2 ms), 1 GB of activations a
 * microbatch and no weights (cases.md §3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/config.h"
#include "sim/train/sim.h"
#include "testutil.h"
#include "viz/app.h"
#include "viz/draw.h"
#include "viz/layout.h"
#include "viz/load.h"
#include "viz/timeline.h"

#define MS MP_PS_PER_MS
#define GB ((int64_t)1000000000)

/* A stub font: 6 px wide solid blocks, 7 px advance, 10 px lines. */
static uint8_t block[6 * 10];
static const struct viz_glyph stub_glyph = { 6, 10, 7, block };
static const struct viz_glyph *stub(void *ctx, uint32_t cp) { (void)ctx; (void)cp; return &stub_glyph; }
static const struct viz_font stub_font = { .ctx = NULL, .height = 10, .glyph = stub };

static void scenario(struct timeline *tl, const char *rel, const char *set)
{
    struct mp_error err = { 0 };
    char *sets[1] = { (char *)set };
    timeline_init(tl);
    int rc = viz_load_scenario(tl, mp_test_path(rel), sets, set ? 1 : 0, &err);
    ck_assert_msg(rc == MP_OK, "%s: %s", rel, err.msg);
}

static const struct viz_row *screen_row(const struct viz_app *app, int panel, int chip)
{
    for (int i = 0; i < app->geom.n_rows; i++) {
        const struct viz_row *r = &app->geom.rows[i];
        if (r->panel == panel && app->scene.tl[panel]->rows[r->row].key == chip) return r;
    }
    ck_abort_msg("no row for chip %d in panel %d", chip, panel);
    return NULL;
}

static uint32_t *paint(struct viz_app *app)
{
    const struct viz_draw_list *dl = viz_app_frame(app);
    uint32_t *px = calloc((size_t)app->view.width * (size_t)app->view.height, 4);
    struct viz_canvas cv = { px, app->view.width, app->view.height, app->view.width };
    viz_raster(dl, &cv, app->font);
    return px;
}

/* ---- released_by ---- */

START_TEST(test_released_by_1f1b)
{
    /* Hand count, 1F1B: stage 0 runs F0 F1 F2 (warm-up: p − 1 = 3), then
     * F3 over [3, 4] ms, then waits for BW0. BW0 goes down the stages in
     * reverse: stage 3 runs F0 [3, 4] and BW0 [4, 6], stage 2 BW0 [6, 8],
     * stage 1 BW0 [8, 10], so stage 0 idles [4, 10] — 6 ms — and BW0 starts
     * at 10 ms, released by the gradient hand-off from stage 1, itself
     * released by BW0 on stage 1. */
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, mp_test_path("scenarios/teach-1f1b.ini"), &err), MP_OK);
    struct sim s;
    struct sim_options opts = { .record_memory = true, .record_released = true };
    ck_assert_msg(sim_run(&s, &cfg, &opts, &err) == MP_OK, "%s", err.msg);
    const struct taskgraph *g = &s.g;
    int bw0 = -1;
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].chip == 0 && g->ops[i].tag == TAG_BW && g->ops[i].mb == 0) bw0 = i;
    ck_assert_int_ge(bw0, 0);
    ck_assert_int_eq(s.e.start[bw0], 10 * MS);
    int send = s.e.released_by[bw0];
    ck_assert_int_ge(send, 0);
    ck_assert_int_eq(g->ops[send].tag, TAG_SEND);
    ck_assert_int_eq(g->ops[send].chip, 1);
    int origin = s.e.released_by[send];
    ck_assert_int_ge(origin, 0);
    ck_assert_int_eq(g->ops[origin].tag, TAG_BW);
    ck_assert_int_eq(g->ops[origin].chip, 1);
    ck_assert_int_eq(g->ops[origin].mb, 0);
    ck_assert_int_eq(s.e.start[origin], 8 * MS);
    ck_assert_int_eq(s.e.end[origin], 10 * MS);
    /* A plain run keeps none. */
    struct sim plain;
    struct sim_options none = { 0 };
    ck_assert_int_eq(sim_run(&plain, &cfg, &none, &err), MP_OK);
    ck_assert_ptr_null(plain.e.released_by);
    sim_release(&plain);
    sim_release(&s);

    /* The viewer says the same about the idle stretch, read in process. */
    struct timeline tl;
    scenario(&tl, "scenarios/teach-1f1b.ini", NULL);
    ck_assert(tl.has_released);
    struct tl_wait w = timeline_wait_at(&tl, timeline_row_of(&tl, 0), 7 * MS);
    ck_assert(w.idle);
    ck_assert_int_eq(w.from, 4 * MS);
    ck_assert_int_eq(w.to, 10 * MS);
    ck_assert_int_eq(w.kind, TL_WAIT_STAGE);
    int row, stream;
    size_t k;
    ck_assert(timeline_locate(&tl, w.origin, &row, &stream, &k));
    struct tl_op o;
    timeline_get_op(&tl, row, stream, k, &o);
    ck_assert_int_eq(o.chip, 1);
    ck_assert_int_eq(o.kind, TL_KIND_BW);
    ck_assert_int_eq(o.microbatch, 0);
    /* And the tooltip of that bubble. */
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, &stub_font, 1400, 700);
    const struct viz_row *r = screen_row(&app, 0, 0);
    int x = (int)floor(viz_x_of(&app.geom, &app.view, 7 * MS));
    struct viz_hit h = viz_layout_hit(&app.geom, &app.scene, &app.view, x, r->compute_y + 2);
    ck_assert(h.ok && h.kind == VIZ_HIT_IDLE);
    char lines[10][VIZ_TIP_W];
    int n = viz_hit_details(&app.scene, &h, lines, 10);
    ck_assert_int_ge(n, 3);
    ck_assert_str_eq(lines[0], "idle 6 ms on stage 0 (4 ms .. 10 ms)");
    ck_assert_str_eq(lines[1], "waiting for BW of microbatch 0 on stage 1 (chip 1)");
    /* The hand-off takes no time here (hop = 0): all of it is bubble. */
    ck_assert_str_eq(lines[2], "pipeline bubble");
    /* 1F1B's bubble, all of it waits for other stages: (p−1)/(m+p−1) = 3/11. */
    ck_assert_double_eq_tol(tl.bubble, 3.0 / 11.0, 1e-12);
    ck_assert_double_eq_tol(tl.exposed_comm, 0, 1e-12);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

/* ---- chunks, FB, directions ---- */

START_TEST(test_chunk_colours)
{
    /* Interleaved, v = 2: chip 0 holds stages 0 and 4 (chunks 0 and 1) and
     * runs F0 F1 F2 F3 of chunk 0, then F0 F1 F2 F3 of chunk 1 (group of p = 4). */
    struct timeline tl;
    scenario(&tl, "scenarios/teach-interleaved.ini", NULL);
    ck_assert_int_eq(tl.max_chunk, 1);
    int r0 = timeline_row_of(&tl, 0);
    ck_assert_str_eq(tl.rows[r0].stages, "0,4");
    char a[64], b[64];
    viz_row_label(&tl, r0, a, sizeof a, b, sizeof b);
    ck_assert_str_eq(a, "stages 0, 4");
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1400, 700);
    uint32_t *px = paint(&app);
    const struct viz_row *r = screen_row(&app, 0, 0);
    int y = r->compute_y + r->compute_h / 2;
    const struct tl_lane *l = timeline_lane(&tl, r0, TL_COMPUTE);
    uint32_t seen[2] = { 0, 0 };
    for (size_t k = 0; k < l->n; k++) {
        const struct tl_info *in = timeline_info(&tl, l, k);
        if (in->kind != TL_KIND_F || in->microbatch != 0) continue;
        int x = (int)floor(viz_x_of(&app.geom, &app.view, (l->start[k] + l->end[k]) / 2.0));
        seen[in->chunk] = px[y * app.view.width + x];
    }
    ck_assert_uint_eq(seen[0], viz_kind_color(TL_KIND_F));
    ck_assert_uint_eq(seen[1], viz_chunk_color(viz_kind_color(TL_KIND_F), 1, 2));
    ck_assert_uint_ne(seen[0], seen[1]);
    free(px);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

START_TEST(test_fb_boxes_and_directions)
{
    /* DualPipe on 4 ranks: chip 0 holds stage 0 of the down direction and
     * stage 3 of the up one; its F&B ops overlap a forward of one
     * microbatch with the backward of another, and the box shows both. */
    struct timeline tl;
    scenario(&tl, "scenarios/teach-dualpipe.ini", NULL);
    ck_assert(tl.has_fb && tl.has_dir);
    int r0 = timeline_row_of(&tl, 0);
    ck_assert_str_eq(tl.rows[r0].stages, "0,3");
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, &stub_font, 1400, 700);
    const struct viz_draw_list *dl = viz_app_frame(&app);
    const struct tl_lane *l = timeline_lane(&tl, r0, TL_COMPUTE);
    int fb = 0;
    for (size_t k = 0; k < l->n; k++) {
        const struct tl_info *in = timeline_info(&tl, l, k);
        if (in->kind != TL_KIND_FB) continue;
        fb++;
        ck_assert_int_ne(in->microbatch, in->microbatch2);
        ck_assert(in->dir != TL_DIR_NONE && in->dir2 != TL_DIR_NONE);
        int x0, x1;
        ck_assert(viz_span_columns(&app.geom, &app.view, l->start[k], l->end[k], &x0, &x1));
        const struct viz_row *r = screen_row(&app, 0, 0);
        /* Both numbers are drawn inside the box: the forward's in its top
         * half, the backward's in its bottom half. */
        bool top = false, bottom = false;
        char want_top[16], want_bottom[16];
        snprintf(want_top, sizeof want_top, "%d", in->microbatch);
        snprintf(want_bottom, sizeof want_bottom, "%d", in->microbatch2);
        for (size_t i = 0; i < dl->n; i++) {
            const struct viz_cmd *c = &dl->cmds[i];
            if (c->type != VIZ_CMD_TEXT || c->color != VIZ_TEXT_ON_OP || c->x < x0 || c->x >= x1)
                continue;
            int mid = r->compute_y + r->compute_h / 2;
            const char *t = dl->text + c->text;
            if (c->y < mid && strcmp(t, want_top) == 0) top = true;
            if (c->y >= mid - 2 && strcmp(t, want_bottom) == 0) bottom = true;
        }
        ck_assert_msg(top && bottom, "FB %d+%d: top %d bottom %d", in->microbatch, in->microbatch2,
                      top, bottom);
    }
    ck_assert_int_gt(fb, 0);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

/* ---- one memory scale ---- */

/* Filled pixels of a memory strip's column at time t. */
static int strip_fill(const struct viz_app *app, const uint32_t *px, const struct viz_row *r, double t)
{
    int x = (int)floor(viz_x_of(&app->geom, &app->view, t)), n = 0;
    for (int y = r->mem_y; y < r->mem_y + r->mem_h; y++)
        n += px[y * app->view.width + x] == VIZ_MEM_FILL;
    return n;
}

START_TEST(test_memory_scale_compare)
{
    /* GPipe stashes all 8 microbatches on stage 0 (8 GB at 7.5 ms), 1F1B at
     * most p = 4 (4 GB at 3.5 ms): on one scale the 1F1B strip's peak is
     * half as tall (±1 px of rounding). */
    struct timeline gp, ob;
    scenario(&gp, "scenarios/teach-gpipe.ini", NULL);
    scenario(&ob, "scenarios/teach-1f1b.ini", NULL);
    ck_assert_int_eq(gp.rows[timeline_row_of(&gp, 0)].peak_mem, 8 * GB);
    ck_assert_int_eq(ob.rows[timeline_row_of(&ob, 0)].peak_mem, 4 * GB);
    struct viz_scene sc = { .tl = { &gp, &ob }, .n = 2 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1400, 900);
    ck_assert_double_eq(app.geom.mem_scale, 8e9);
    uint32_t *px = paint(&app);
    const struct viz_row *a = screen_row(&app, 0, 0), *b = screen_row(&app, 1, 0);
    ck_assert_int_eq(a->mem_h, b->mem_h);
    int ha = strip_fill(&app, px, a, 7.5 * MS), hb = strip_fill(&app, px, b, 3.5 * MS);
    ck_assert_int_eq(ha, a->mem_h);
    ck_assert_msg(abs(2 * hb - ha) <= 2, "GPipe %d px, 1F1B %d px", ha, hb);
    free(px);
    viz_app_release(&app);
    timeline_release(&gp);
    timeline_release(&ob);
}
END_TEST

/* ---- rows: folded groups of peers ---- */

/* Two stages of tp 8 × dp 8 (64 chips each, 128 in all); chip 1 holds the
 * DP all-reduce of stage 0 (serves=0). */
static const char folded_csv[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,"
    "label,op,released_by,microbatch2,chunk2,direction,direction2,comm\n"
    "-1,-1,meta,meta,-1,,,,0,0,0,,chips=128,,,,,,,\n"
    "-1,-1,meta,meta,-1,,,,0,0,0,,parallel=tp 8 pp 2 dp 8 ep 1 vpp 1,,,,,,,\n"
    "1,0,meta,meta,-1,,,,0,0,0,,serves=0,,,,,,,\n"
    "0,0,compute,F,0,0,0,1,0,0.001,0,,F,0,,-1,-1,,,\n"
    "0,0,comm,send,0,0,0,1,0.001,0.0011,100,,send,1,0,-1,-1,,,pp\n"
    "64,1,compute,F,0,0,2,3,0.0011,0.0021,0,,F,2,1,-1,-1,,,\n"
    "64,1,compute,BW,0,0,2,3,0.0021,0.0041,0,,BW,3,2,-1,-1,,,\n"
    "64,1,comm,send,0,0,2,3,0.0041,0.0042,100,,send,4,3,-1,-1,,,pp\n"
    "0,0,compute,BW,0,0,0,1,0.0042,0.0062,0,,BW,5,4,-1,-1,,,\n"
    "1,0,comm,all_reduce,-1,-1,-1,-1,0.0062,0.0072,100,,grads,6,5,-1,-1,,,dp\n"
    "0,0,compute,optimizer,-1,-1,-1,-1,0.0072,0.0073,0,,opt,7,6,-1,-1,,,\n";

START_TEST(test_folded_group)
{
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    ck_assert_msg(timeline_read_csv(&tl, mp_test_tmpfile(".csv", folded_csv), &err) == MP_OK, "%s",
                  err.msg);
    int r0 = timeline_row_of(&tl, 0), r1 = timeline_row_of(&tl, 1);
    ck_assert_int_eq(tl.rows[r1].serves, r0);
    ck_assert_int_eq(tl.n_pipe_rows, 2);
    char buf[VIZ_TIP_W];
    ck_assert(viz_fold_label(&tl, r0, false, buf, sizeof buf));
    ck_assert_msg(strstr(buf, "64 chips: tp 8 \xC3\x97 dp 8") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "DP all-reduce lane in its row: chip 1") != NULL, "%s", buf);
    ck_assert(viz_count_line(&tl, buf, sizeof buf));
    ck_assert_str_eq(buf, "showing 3 of 128 chips (2 stages and their peers' lanes): TP and DP peers identical");
    /* Three rows fit in 16, so the group starts open; fold it to see the
     * DP lane drawn inside stage 0's row. */
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, &stub_font, 1000, 500);
    ck_assert(app.unfold[0][r0]);      /* 3 rows fit in 16: open at start */
    viz_app_toggle_fold(&app, 0, r0);
    ck_assert(!app.unfold[0][r0]);
    ck_assert_int_eq(app.geom.n_rows, 2);            /* stage 0 and stage 1 */
    const struct viz_row *r = screen_row(&app, 0, 0);
    ck_assert_int_eq(r->n_peer, 1);                  /* the DP lane inside stage 0's row */
    ck_assert_int_eq(r->peer_row[0], r1);
    /* The folded group's label counts its chips (and the arrow says it opens). */
    const struct viz_draw_list *dl = viz_app_frame(&app);
    bool found = false;
    for (size_t i = 0; i < dl->n; i++)
        if (dl->cmds[i].type == VIZ_CMD_TEXT && strcmp(dl->text + dl->cmds[i].text, "\xE2\x96\xB8 64 chips") == 0)
            found = true;
    ck_assert(found);
    /* Hovering the label tells what runs there. */
    struct viz_hit h = viz_layout_hit(&app.geom, &app.scene, &app.view, 20, r->y + 3);
    ck_assert(h.ok && h.kind == VIZ_HIT_FOLD && h.row == r0);
    char lines[10][VIZ_TIP_W];
    ck_assert_int_eq(viz_hit_details(&app.scene, &h, lines, 10), 3);
    ck_assert_str_eq(lines[0], "stage 0, simulated on chip 0");
    ck_assert_msg(strstr(lines[1], "64 chips: tp 8 \xC3\x97 dp 8") != NULL, "%s", lines[1]);
    ck_assert_str_eq(lines[2], "click to show its peers' rows");
    /* A click on the label opens the group: chip 1 gets its own row. */
    viz_app_mouse_button(&app, 20, r->y + 3, true);
    viz_app_mouse_button(&app, 20, r->y + 3, false);
    ck_assert(app.unfold[0][r0]);
    ck_assert_int_eq(app.geom.n_rows, 3);
    /* The optimizer waited for its own DP all-reduce: exposed DP comm, not
     * bubble; stage 1's F waited for the hand-off: 0.1 ms of PP comm. */
    struct tl_wait w = timeline_wait_at(&tl, r0, (mp_time)(0.0068 * 1e12));
    ck_assert(w.idle && w.kind == TL_WAIT_COMM && w.comm == TL_COMM_DP);
    w = timeline_wait_at(&tl, timeline_row_of(&tl, 64), (mp_time)(0.0005 * 1e12));
    ck_assert(w.idle && w.kind == TL_WAIT_STAGE);
    ck_assert_int_eq(w.split, (mp_time)(0.001 * 1e12));
    ck_assert_int_eq(w.to, (mp_time)(0.0011 * 1e12));
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

/* ---- serving: the heat map ---- */

START_TEST(test_heat_map)
{
    /* 20 stages of a made-up serving run, 4000 passes of 1 us each per
     * stage, one every 10 us: 10% busy everywhere; seen whole, each column
     * is about as busy as the busiest, so it draws in the heat map's
     * darkest blue, and no kind colour appears in a compute lane. */
    struct timeline tl;
    timeline_init(&tl);
    timeline_set_meta(&tl, -1, "mode", "serving");
    struct tl_op info = { .microbatch = 0, .kind = TL_KIND_DECODE, .chip = -1, .stage = -1 };
    uint32_t in = timeline_add_info(&tl, &info, "decode");
    for (int c = 0; c < 20; c++)
        for (int i = 0; i < 4000; i++)
            timeline_add_op_info(&tl, c, TL_COMPUTE, (mp_time)i * 10000000 + c * 1000000,
                                 (mp_time)i * 10000000 + c * 1000000 + 1000000, in);
    timeline_finish(&tl);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, NULL, 1200, 600);
    uint32_t *px = paint(&app);
    const struct viz_row *r = screen_row(&app, 0, 5);
    int y = r->compute_y + r->compute_h / 2, heat = 0, kinds = 0;
    for (int x = app.geom.plot_x0 + 30; x < app.geom.plot_x1 - 30; x++) {
        uint32_t c = px[y * app.view.width + x];
        heat += c == viz_heat_color(1.0) || c == viz_heat_color(0.98) || (c & 0xFF) > 0x60;
        kinds += c == viz_kind_color(TL_KIND_DECODE);
    }
    ck_assert_int_gt(heat, (app.geom.plot_x1 - app.geom.plot_x0 - 60) / 2);
    ck_assert_int_eq(kinds, 0);
    free(px);
    /* u switches back to kinds. */
    viz_app_key(&app, VIZ_KEY_HEAT);
    px = paint(&app);
    kinds = 0;
    for (int x = app.geom.plot_x0 + 30; x < app.geom.plot_x1 - 30; x++)
        kinds += (px[y * app.view.width + x] & 0xFFFFFFu) != (viz_heat_color(1.0) & 0xFFFFFFu);
    ck_assert_int_gt(kinds, 0);
    free(px);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

/* ---- small windows: no text over text ---- */

static void assert_no_overlap(struct viz_app *app, const char *what)
{
    const struct viz_draw_list *dl = viz_app_frame(app);
    struct viz_box boxes[4096];
    size_t n = viz_draw_text_boxes(dl, app->font, boxes, 4096);
    ck_assert_uint_le(n, 4096);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const struct viz_box *a = &boxes[i], *b = &boxes[j];
            bool hit = a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h &&
                       b->y < a->y + a->h;
            ck_assert_msg(!hit, "%s %dx%d: \"%s\" at (%d,%d %dx%d) overlaps \"%s\" at (%d,%d %dx%d)",
                          what, app->view.width, app->view.height, dl->text + a->text, a->x, a->y,
                          a->w, a->h, dl->text + b->text, b->x, b->y, b->w, b->h);
        }
}

START_TEST(test_no_text_overlap)
{
    static const int sizes[][2] = { { 320, 200 }, { 640, 360 } };
    struct timeline dual, gp, ob, meg, empty;
    scenario(&dual, "scenarios/teach-dualpipe.ini", NULL);
    scenario(&gp, "scenarios/teach-gpipe.ini", NULL);
    scenario(&ob, "scenarios/teach-1f1b.ini", NULL);
    struct mp_error err = { 0 };
    timeline_init(&meg);
    ck_assert(timeline_read_csv(&meg, mp_test_tmpfile(".csv", folded_csv), &err) == MP_OK);
    timeline_init(&empty);
    const char *header = "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,"
                         "end_s,bytes,mem_bytes,label\n";
    ck_assert(timeline_read_csv_buffer(&empty, "empty.csv", header, strlen(header), &err) == MP_OK);
    /* A long name is cut with "…", not run into the colour key. */
    free(meg.name);
    meg.name = mp_xstrdup("a-scenario-whose-name-goes-on-and-on-past-the-width-of-any-small-window"
                          "-because-someone-named-it-after-the-whole-experiment.csv");
    struct viz_scene scenes[] = {
        { .tl = { &dual }, .n = 1 },
        { .tl = { &gp, &ob }, .n = 2 },
        { .tl = { &meg }, .n = 1 },
        { .tl = { &empty }, .n = 1 },
    };
    const char *names[] = { "dualpipe", "gpipe+1f1b", "folded", "empty" };
    for (size_t s = 0; s < sizeof scenes / sizeof *scenes; s++)
        for (size_t z = 0; z < 2; z++) {
            struct viz_app app;
            viz_app_init(&app, &scenes[s], &stub_font, sizes[z][0], sizes[z][1]);
            assert_no_overlap(&app, names[s]);
            /* With the replay cursor's time label on the axis. */
            viz_app_set_cursor(&app, 12.3 * MS);
            assert_no_overlap(&app, names[s]);
            /* Scrolled: the header sticks, rows slide under it. */
            viz_app_key(&app, VIZ_KEY_DOWN);
            assert_no_overlap(&app, names[s]);
            viz_app_release(&app);
        }
    /* The empty timeline says so. */
    struct viz_app app;
    viz_app_init(&app, &scenes[3], &stub_font, 640, 360);
    const struct viz_draw_list *dl = viz_app_frame(&app);
    bool said = false;
    for (size_t i = 0; i < dl->n; i++)
        if (dl->cmds[i].type == VIZ_CMD_TEXT && strcmp(dl->text + dl->cmds[i].text, "no ops in this timeline") == 0)
            said = true;
    ck_assert(said);
    viz_app_release(&app);
    timeline_release(&dual);
    timeline_release(&gp);
    timeline_release(&ob);
    timeline_release(&meg);
    timeline_release(&empty);
}
END_TEST

START_TEST(test_sticky_header_and_scale)
{
    /* 200 rows of at least 3 px + 1 px gap do not fit 400 px: they scroll;
     * the header stays at the top of the rows area. */
    struct timeline tl;
    timeline_init(&tl);
    timeline_synthetic(&tl, 200, 20000);
    struct viz_scene sc = { .tl = { &tl }, .n = 1 };
    struct viz_app app;
    viz_app_init(&app, &sc, &stub_font, 1200, 400);
    for (int i = 0; i < 5; i++) viz_app_key(&app, VIZ_KEY_PAGEDOWN);
    ck_assert_double_gt(app.view.scroll_y, 0);
    viz_app_frame(&app);
    ck_assert_int_eq(app.geom.panel[0].header_y, app.geom.rows_y0);
    /* Scale 2 doubles the sizes: the label column (224 px, under 22% of
     * 1200), the axis. */
    int label = app.geom.plot_x0, axis = app.geom.rows_y0;
    viz_app_set_scale(&app, 2.0);
    ck_assert_int_eq(app.geom.plot_x0, 2 * label);
    ck_assert_int_eq(app.geom.rows_y0, 2 * axis);
    viz_app_release(&app);
    timeline_release(&tl);
}
END_TEST

Suite *viz_runs_suite(void)
{
    memset(block, 255, sizeof block);
    Suite *s = suite_create("viz_runs");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_released_by_1f1b);
    tcase_add_test(tc, test_chunk_colours);
    tcase_add_test(tc, test_fb_boxes_and_directions);
    tcase_add_test(tc, test_memory_scale_compare);
    tcase_add_test(tc, test_folded_group);
    tcase_add_test(tc, test_heat_map);
    tcase_add_test(tc, test_no_text_overlap);
    tcase_add_test(tc, test_sticky_header_and_scale);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(viz_runs_suite)
