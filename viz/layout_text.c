/* layout_text.c — the viewer's words: row labels, fold labels, the count of
 * chips shown, panel headers (figures and colour key, wrapped), tooltips
 * (an op, what an idle stretch waited for, memory at an instant), the
 * status line. See layout.h. */
#include "layout.h"
#include "layout_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int imax(int a, int b) { return a > b ? a : b; }

bool viz_is_serving(const struct timeline *tl)
{
    const char *m = timeline_meta(tl, -1, "mode");
    return m && strcmp(m, "serving") == 0;
}

/* The run's layout from meta parallel=tp T pp P dp D ep E vpp V (report.c). */
struct par { int tp, pp, dp, ep, vpp; bool known; };

static struct par parallel_of(const struct timeline *tl)
{
    struct par p = { 1, 1, 1, 1, 1, false };
    const char *s = timeline_meta(tl, -1, "parallel");
    if (s && sscanf(s, "tp %d pp %d dp %d ep %d vpp %d", &p.tp, &p.pp, &p.dp, &p.ep, &p.vpp) == 5)
        p.known = true;
    return p;
}

static bool synthetic(const struct timeline *tl)
{
    const char *m = timeline_meta(tl, -1, "model");
    return m && strcmp(m, "synthetic") == 0;
}

/* 1024 -> "1,024". */
static void thousands(long long v, char *buf, size_t size)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", v < 0 ? -v : v);
    size_t n = strlen(raw), o = 0;
    if (v < 0 && o + 1 < size) buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < size; i++) {
        buf[o++] = raw[i];
        if ((n - 1 - i) % 3 == 0 && i + 1 < n) buf[o++] = ',';
    }
    buf[o] = '\0';
}

static void pct(double share, char *buf, size_t size)
{
    snprintf(buf, size, "%.1f%%", 100 * share);
}

void viz_row_label(const struct timeline *tl, int row, char *a, size_t na, char *b, size_t nb)
{
    const struct tl_row *r = &tl->rows[row];
    a[0] = b[0] = '\0';
    if (tl->rows_by_slot) {
        snprintf(a, na, "slot %d", r->key);
        return;
    }
    if (r->serves >= 0) {
        snprintf(a, na, "chip %d", r->key);
        const struct tl_row *o = &tl->rows[r->serves];
        if (o->stage >= 0) snprintf(b, nb, "serves stage %d", o->stage);
        else snprintf(b, nb, "serves chip %d", o->key);
        return;
    }
    if (r->stages && strchr(r->stages, ',')) {
        /* "0,7" -> "stages 0, 7": every stage the chip's chunks hold. */
        size_t o = (size_t)snprintf(a, na, "stages ");
        for (const char *p = r->stages; *p && o + 3 < na; p++) {
            a[o++] = *p;
            if (*p == ',') a[o++] = ' ';
        }
        a[o < na ? o : na - 1] = '\0';
    } else if (r->stage >= 0) {
        snprintf(a, na, "stage %d", r->stage);
    } else {
        snprintf(a, na, "chip %d", r->key);
        return;
    }
    if (r->node >= 0) snprintf(b, nb, "chip %d \xC2\xB7 node %d", r->key, r->node);
    else snprintf(b, nb, "chip %d", r->key);
}

/* What a peer row runs: "DP all-reduce", "expert compute, all_to_all". */
static void peer_work(const struct timeline *tl, int row, char *buf, size_t size)
{
    const struct tl_row *r = &tl->rows[row];
    bool kinds[64] = { false };
    uint8_t comm = TL_COMM_NONE;
    size_t o = 0;
    buf[0] = '\0';
    for (int s = 0; s < TL_STREAMS; s++) {
        const struct tl_lane *l = &r->lane[s];
        for (size_t k = 0; k < l->n; k++) {
            const struct tl_info *in = timeline_info(tl, l, k);
            if (in->comm) comm = in->comm;
            if (in->kind >= 64 || kinds[in->kind]) continue;
            kinds[in->kind] = true;
            const char *name = timeline_kind_name(tl, in->kind);
            if (s == TL_COMPUTE && strcmp(name, "other") == 0) name = "expert compute";
            if (comm == TL_COMM_DP && in->kind == TL_KIND_ALL_REDUCE) name = "DP all-reduce";
            if (o + strlen(name) + 3 < size)
                o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ", " : "", name);
        }
    }
}

bool viz_fold_label(const struct timeline *tl, int row, bool unfolded, char *buf, size_t size)
{
    const struct tl_row *r = &tl->rows[row];
    if (tl->rows_by_slot || r->serves >= 0) return false;
    struct par p = parallel_of(tl);
    int chips = p.known ? p.tp * p.dp : 1;
    int peers = 0, first = -1, last = -1, comm_only = 0;
    for (int i = 0; i < tl->n_rows; i++) {
        const struct tl_row *q = &tl->rows[tl->order[i]];
        if (q->serves != row) continue;
        if (!peers) first = q->key;
        last = q->key;
        peers++;
        comm_only += q->lane[TL_COMPUTE].n == 0;
    }
    if (chips <= 1 && peers == 0) return false;
    if (!buf) return true;
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "%s ", unfolded ? "\xE2\x96\xBE" : "\xE2\x96\xB8");
    if (chips > 1) {
        o += (size_t)snprintf(buf + o, size - o, "%d chips:", chips);
        if (p.tp > 1 && o < size) o += (size_t)snprintf(buf + o, size - o, " tp %d", p.tp);
        if (p.tp > 1 && p.dp > 1 && o < size) o += (size_t)snprintf(buf + o, size - o, " \xC3\x97");
        if (p.dp > 1 && o < size) o += (size_t)snprintf(buf + o, size - o, " dp %d", p.dp);
        if (p.ep > 1 && o < size) o += (size_t)snprintf(buf + o, size - o, " (ep %d)", p.ep);
        if (o < size) o += (size_t)snprintf(buf + o, size - o, ", identical (simulated once)");
    }
    if (peers && o < size) {
        char work[96] = "";
        for (int i = 0; i < tl->n_rows; i++)
            if (tl->rows[tl->order[i]].serves == row) {
                peer_work(tl, tl->order[i], work, sizeof work);
                break;
            }
        char chips_txt[48];
        if (first == last) snprintf(chips_txt, sizeof chips_txt, "chip %d", first);
        else snprintf(chips_txt, sizeof chips_txt, "chips %d-%d", first, last);
        if (comm_only == peers && !unfolded)
            o += (size_t)snprintf(buf + o, size - o, "%s%s lane in its row: %s", chips > 1 ? "; " : "",
                                  work, chips_txt);
        else
            o += (size_t)snprintf(buf + o, size - o, "%s%d %s with work of their own (%s: %s)%s",
                                  chips > 1 ? "; " : "", peers, peers == 1 ? "peer" : "peers",
                                  chips_txt, work, unfolded ? "" : ", click to show");
    }
    (void)o;
    return true;
}

bool viz_fold_short(const struct timeline *tl, int row, bool unfolded, char *buf, size_t size)
{
    if (!viz_fold_label(tl, row, unfolded, NULL, 0)) return false;
    struct par p = parallel_of(tl);
    int chips = p.known ? p.tp * p.dp : 1, peers = 0;
    for (int i = 0; i < tl->n_rows; i++) peers += tl->rows[i].serves == row;
    const char *mark = peers ? (unfolded ? "\xE2\x96\xBE " : "\xE2\x96\xB8 ") : "";
    if (chips > 1) snprintf(buf, size, "%s%d chips", mark, chips);
    else snprintf(buf, size, "%s%d peers", mark, peers);
    return true;
}

bool viz_count_line(const struct timeline *tl, char *buf, size_t size)
{
    const char *c = timeline_meta(tl, -1, "chips");
    long long total = c ? atoll(c) : 0;
    int stages = 0;
    for (int r = 0; r < tl->n_rows; r++) stages += tl->rows[r].serves < 0;
    /* Every chip with a row or a lane on screen counts as shown. */
    if (tl->rows_by_slot || total <= tl->n_rows) return false;
    struct par p = parallel_of(tl);
    char a[32], b[32];
    thousands(tl->n_rows, a, sizeof a);
    thousands(total, b, sizeof b);
    const char *why = p.tp > 1 && p.dp > 1 ? "TP and DP peers identical"
                    : p.tp > 1 ? "TP peers identical"
                    : p.dp > 1 ? "DP replicas identical" : "the others idle";
    if (stages == tl->n_rows) snprintf(buf, size, "showing %s of %s chips: %s", a, b, why);
    else snprintf(buf, size, "showing %s of %s chips (%d stages and their peers' lanes): %s", a, b,
                  stages, why);
    return true;
}

/* ---- headers ---- */

static struct viz_hitem *add_item(struct viz_hitem *items, int *n, int cap, enum viz_swatch sw,
                                  viz_color c1, viz_color c2, const char *fmt, const char *arg)
{
    if (*n >= cap) return NULL;
    struct viz_hitem *it = &items[(*n)++];
    memset(it, 0, sizeof *it);
    snprintf(it->text, sizeof it->text, fmt, arg);
    it->sw = sw;
    it->c1 = c1;
    it->c2 = c2;
    return it;
}

int viz_header_items(const struct viz_scene *sc, int p, double heat_max, struct viz_hitem *items,
                     int cap)
{
    const struct timeline *tl = sc->tl[p];
    int n = 0;
    char buf[200], a[48], b[48];
    struct viz_hitem *it = add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s",
                                    tl->name ? tl->name : "timeline");
    if (it) it->strong = true;
    const char *scen = timeline_meta(tl, -1, "scenario");
    const char *sched = timeline_meta(tl, -1, "schedule");
    if (scen) add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "scenario %s", scen);
    if (sched) add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "schedule %s", sched);
    /* Prefer the simulator's own numbers; fall back to what the ops say. */
    const char *step_s = timeline_meta(tl, -1, "step_time_s");
    double step_ps = step_s ? atof(step_s) * 1e12 : (double)(tl->t_end - tl->t_begin);
    viz_format_time(step_ps, a, sizeof a);
    snprintf(buf, sizeof buf, "%s %s", tl->rows_by_slot || viz_is_serving(tl) ? "run" : "step", a);
    add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", buf);
    /* "bubble" is the pipeline bubble only (DESIGN.md §3): with released_by
     * the viewer tells waits for another stage from waits for the stage's
     * own communication, which it shows apart. */
    const char *bub = timeline_meta(tl, -1, "bubble");
    const char *split_bubble = timeline_meta(tl, -1, "step_split.bubble_s");
    if (split_bubble && step_ps > 0) {
        /* The simulator's own step accounting (step_split.h), when the file
         * carries it: the CLI's figures exactly. */
        pct(atof(split_bubble) * 1e12 / step_ps, a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "bubble %s", a);
        static const char *const kinds[] = { "tp", "cp", "pp", "dp", "ep" };
        double total = 0, part[5];
        for (int k = 0; k < 5; k++) {
            char key[48];
            snprintf(key, sizeof key, "step_split.exposed_%s_s", kinds[k]);
            const char *v = timeline_meta(tl, -1, key);
            part[k] = v ? atof(v) * 1e12 / step_ps : 0;
            total += part[k];
        }
        if (total >= 0.0005) {
            pct(total, a, sizeof a);
            size_t o = (size_t)snprintf(buf, sizeof buf, "exposed comm %s (", a);
            const char *sep = "";
            for (int k = 0; k < 5; k++) {
                if (part[k] < 0.0005) continue;
                pct(part[k], b, sizeof b);
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %s", sep, kinds[k], b);
                sep = ", ";
            }
            snprintf(buf + o, sizeof buf - o, ")");
            add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", buf);
        }
    } else if (tl->has_released) {
        pct(tl->bubble, a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "bubble %s", a);
        if (tl->exposed_comm >= 0.0005) {
            pct(tl->exposed_comm, a, sizeof a);
            size_t o = (size_t)snprintf(buf, sizeof buf, "exposed comm %s (", a);
            const char *sep = "";
            for (int c = 0; c < TL_COMM_KINDS; c++) {
                if (tl->exposed[c] < 0.0005) continue;
                pct(tl->exposed[c], b, sizeof b);
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %s", sep,
                                      c ? timeline_comm_name((uint8_t)c) : "other", b);
                sep = ", ";
            }
            snprintf(buf + o, sizeof buf - o, ")");
            add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", buf);
        }
    } else if (bub) {
        pct(atof(bub), a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "bubble %s", a);
    } else if (tl->n_ops) {
        pct(tl->idle, a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "idle %s", a);
    }
    const char *mfu = timeline_meta(tl, -1, "mfu");
    const char *tps = timeline_meta(tl, -1, "tokens_per_s");
    /* A synthetic model has no FLOPs, so the simulator's MFU is 0: say n/a
     * rather than print a zero that reads like a finding. */
    if (mfu && atof(mfu) > 0) {
        pct(atof(mfu), a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "MFU %s", a);
    } else if (mfu) {
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", "MFU n/a");
    } else if (tps) {
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s tokens/s", tps);
    }
    if (viz_count_line(tl, buf, sizeof buf)) add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", buf);
    if (tl->rows_by_slot) {
        const char *st = timeline_meta(tl, -1, "stages");
        snprintf(buf, sizeof buf, "a row per slot; a box per pass from stage 0 to stage %d "
                 "(mpsim run --timeline-detail for every stage)", st ? atoi(st) - 1 : 0);
        add_item(items, &n, cap, VIZ_SW_NONE, 0, 0, "%s", buf);
    }

    /* The colour key: the kinds this timeline has (chunk shades and FB
     * halves as they are drawn), directions, idle time, memory. */
    int n_chunks = tl->max_chunk + 1;
    for (int k = 0; k < TL_LOD_SLOTS; k++) {
        if (!tl->kind_seen[k]) continue;
        viz_color c = viz_kind_color((unsigned)k);
        const char *name = k < TL_KIND_CUSTOM ? timeline_kind_name(tl, (uint16_t)k) : "other";
        bool pass = k == TL_KIND_F || k == TL_KIND_B || k == TL_KIND_W || k == TL_KIND_BW;
        if (k == TL_KIND_FB)
            add_item(items, &n, cap, VIZ_SW_FB, viz_kind_color(TL_KIND_F), viz_kind_color(TL_KIND_BW),
                     "%s", "FB: F over BW, overlapped");
        else if (pass && n_chunks > 1)
            add_item(items, &n, cap, VIZ_SW_CHUNKS, c, viz_chunk_color(c, n_chunks - 1, n_chunks),
                     "%s", name);
        else
            add_item(items, &n, cap, VIZ_SW_RECT, c, 0, "%s", name);
    }
    if (n_chunks > 1) {
        snprintf(buf, sizeof buf, "light chunk 0, dark chunk %d", n_chunks - 1);
        add_item(items, &n, cap, VIZ_SW_CHUNKS, 0xFFA0A0A0u, viz_chunk_color(0xFFA0A0A0u, 1, 2),
                 "%s", buf);
    }
    if (tl->has_dir) {
        add_item(items, &n, cap, VIZ_SW_DOWN, 0xFF707070u, 0, "%s", "down (enters at stage 0)");
        add_item(items, &n, cap, VIZ_SW_UP, 0xFF707070u, 0, "%s", "up (enters at the last stage)");
    }
    if (heat_max > 0) {
        pct(heat_max, a, sizeof a);
        add_item(items, &n, cap, VIZ_SW_HEAT, 0, 0, "busy share 0 .. %s (square-root scale)", a);
    } else if (tl->n_ops) {
        add_item(items, &n, cap, VIZ_SW_HATCH, VIZ_BUBBLE, VIZ_BUBBLE_HATCH, "%s",
                 tl->has_released ? "bubble: waits for another stage" : "idle");
        if (tl->has_released && tl->exposed_comm >= 0.0005)
            add_item(items, &n, cap, VIZ_SW_HATCH, VIZ_COMMWAIT, VIZ_COMMWAIT_HATCH, "%s",
                     "waits for its own communication");
    }
    if (tl->has_mem) add_item(items, &n, cap, VIZ_SW_RECT, VIZ_MEM_FILL, 0, "%s", "memory");
    return n;
}

int viz_swatch_w(const struct viz_metrics *m, enum viz_swatch sw)
{
    int u = imax(8, m->line_h / 2);
    switch (sw) {
    case VIZ_SW_NONE: return 0;
    case VIZ_SW_CHUNKS: case VIZ_SW_HEAT: return 2 * u;
    default: return u;
    }
}

int viz_header_flow(const struct viz_font *font, const struct viz_metrics *m, int width,
                    struct viz_hitem *items, int n)
{
    int x0 = m->pad, xmax = width - m->pad, gap = m->pad * 2, sgap = imax(3, m->pad / 2);
    int x = x0, line = 0;
    for (int i = 0; i < n; i++) {
        struct viz_hitem *it = &items[i];
        int sw = viz_swatch_w(m, it->sw);
        int pre = sw ? sw + sgap : 0;
        int tw = viz_text_width(font, it->text);
        /* Keys start a new line once the figures are done, when they would
         * not fit on the figures' line whole. */
        if (x > x0 && x + pre + tw > xmax) {
            line++;
            x = x0;
        }
        if (line >= VIZ_HEADER_MAX_LINES) {
            it->line = -1;
            continue;
        }
        int room = xmax - x - pre;
        if (tw > room) {
            char cut[200];
            tw = viz_text_fit(font, it->text, room, cut, sizeof cut);
            memcpy(it->text, cut, sizeof cut);
        }
        it->x = x;
        it->line = line;
        it->w = tw;
        x += pre + tw + gap;
    }
    return line + 1 > VIZ_HEADER_MAX_LINES ? VIZ_HEADER_MAX_LINES : line + 1;
}

int viz_header_lines(const struct viz_scene *sc, int p, int width, const struct viz_metrics *m)
{
    struct viz_hitem items[VIZ_HEADER_ITEMS];
    /* The heat map's key is as wide as the bubble's, so lines are alike. */
    int n = viz_header_items(sc, p, 0, items, VIZ_HEADER_ITEMS);
    return viz_header_flow(sc->font, m, width, items, n);
}

/* ---- tooltips ---- */

/* "F mb 4 on stage 1 (chip 1)" for global op g. */
static void op_name(const struct timeline *tl, uint32_t g, char *buf, size_t size)
{
    int row, stream;
    size_t k;
    if (g == TL_NONE || !timeline_locate(tl, g, &row, &stream, &k)) {
        snprintf(buf, size, "an unknown op");
        return;
    }
    struct tl_op o;
    timeline_get_op(tl, row, stream, k, &o);
    size_t n = (size_t)snprintf(buf, size, "%s", timeline_kind_name(tl, o.kind));
    if (o.kind == TL_KIND_FB && o.microbatch >= 0)
        n += (size_t)snprintf(buf + n, size - n, " of microbatches %d + %d", o.microbatch, o.microbatch2);
    else if (o.microbatch >= 0 && n < size)
        n += (size_t)snprintf(buf + n, size - n, " of microbatch %d", o.microbatch);
    const struct tl_row *r = &tl->rows[row];
    if (n < size) {
        if (r->serves < 0 && r->stage >= 0)
            snprintf(buf + n, size - n, " on stage %d (chip %d)", r->stage, o.chip);
        else
            snprintf(buf + n, size - n, " on chip %d", o.chip);
    }
}

static int op_details(const struct timeline *tl, int row, int stream, size_t k,
                      char lines[][VIZ_TIP_W], int cap)
{
    struct tl_op o;
    timeline_get_op(tl, row, stream, k, &o);
    const struct tl_lane *l = timeline_lane(tl, row, stream);
    const struct tl_info *in = timeline_info(tl, l, k);
    static const char *const dir_txt[] = { "", "  down", "  up" };
    int n = 0;
    char a[48], b[48];
    const char *kind = timeline_kind_name(tl, o.kind);
    if (n < cap) {
        if (o.kind == TL_KIND_FB)
            snprintf(lines[n++], VIZ_TIP_W, "FB: F of microbatch %d (chunk %d%s) over BW of "
                     "microbatch %d (chunk %d%s)", o.microbatch, o.chunk, dir_txt[o.dir % 3],
                     o.microbatch2, o.chunk2, dir_txt[o.dir2 % 3]);
        else {
            int len = snprintf(lines[n], VIZ_TIP_W, "%s", kind);
            if (o.microbatch >= 0)
                len += snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  %s %d",
                                tl->rows_by_slot || viz_is_serving(tl) ? "slot" : "microbatch",
                                o.microbatch);
            if ((tl->max_chunk > 0 || o.chunk > 0) && o.chunk >= 0 && len < VIZ_TIP_W)
                len += snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  chunk %d", o.chunk);
            if (o.dir && len < VIZ_TIP_W)
                len += snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "%s", dir_txt[o.dir % 3]);
            if (o.comm && len < VIZ_TIP_W)
                snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  (%s)", timeline_comm_name(o.comm));
            n++;
        }
    }
    if (n < cap) {
        const struct tl_row *r = &tl->rows[row];
        int len;
        if (r->serves >= 0 && tl->rows[r->serves].stage >= 0)
            len = snprintf(lines[n], VIZ_TIP_W, "chip %d, serving stage %d", o.chip,
                           tl->rows[r->serves].stage);
        else if (o.stage >= 0)
            len = snprintf(lines[n], VIZ_TIP_W, "stage %d  chip %d", o.stage, o.chip);
        else
            len = snprintf(lines[n], VIZ_TIP_W, "chip %d", o.chip);
        len += snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  %s",
                        stream == TL_COMM ? "comm" : "compute");
        /* Layers mean nothing on a synthetic model (one made-up layer a stage). */
        const char *lay = timeline_meta(tl, o.chip, "layers");
        if (!synthetic(tl) && o.layer_first >= 0 && len < VIZ_TIP_W) {
            if (o.layer_first == o.layer_last)
                snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  layer %d", o.layer_first);
            else
                snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  layers %d-%d", o.layer_first,
                         o.layer_last);
        } else if (lay && len < VIZ_TIP_W) {
            snprintf(lines[n] + len, (size_t)(VIZ_TIP_W - len), "  layers %s", lay);
        }
        n++;
    }
    if (n < cap) {
        viz_format_time((double)o.start, a, sizeof a);
        viz_format_time((double)(o.end - o.start), b, sizeof b);
        if (o.end > o.start) snprintf(lines[n++], VIZ_TIP_W, "start %s  duration %s", a, b);
        else snprintf(lines[n++], VIZ_TIP_W, "at %s (takes no time)", a);
    }
    if (n < cap && o.bytes > 0) {
        viz_format_bytes((double)o.bytes, a, sizeof a);
        snprintf(lines[n++], VIZ_TIP_W, "bytes %s (%lld)", a, (long long)o.bytes);
    }
    uint32_t rel = timeline_released(tl, row, stream, k);
    if (n < cap && rel != TL_NONE) {
        char who[96];
        op_name(tl, rel, who, sizeof who);
        snprintf(lines[n++], VIZ_TIP_W, "started when %s ended", who);
    }
    /* The label, unless it only repeats what the lines above say ("F mb 3
     * stage 1"). */
    const char *label = timeline_label_of(tl, in);
    size_t kl = strlen(kind);
    bool generic = !*label || strcmp(label, kind) == 0 ||
                   (strncmp(label, kind, kl) == 0 && strncmp(label + kl, " mb", 3) == 0);
    if (n < cap && !generic) snprintf(lines[n++], VIZ_TIP_W, "%.150s", label);
    return n;
}

static int idle_details(const struct timeline *tl, int row, double t, char lines[][VIZ_TIP_W],
                        int cap)
{
    struct tl_wait w = timeline_wait_at(tl, row, (mp_time)floor(t));
    if (!w.idle || cap < 1) return 0;
    int n = 0;
    char a[32], b[32], c[32], who[100];
    viz_format_time((double)(w.to - w.from), a, sizeof a);
    viz_format_time((double)w.from, b, sizeof b);
    viz_format_time((double)w.to, c, sizeof c);
    const struct tl_row *r = &tl->rows[row];
    char where[24];
    if (r->stage >= 0 && r->serves < 0) snprintf(where, sizeof where, "stage %d", r->stage);
    else snprintf(where, sizeof where, "chip %d", r->key);
    snprintf(lines[n++], VIZ_TIP_W, "idle %s on %s (%s .. %s)", a, where, b, c);
    switch (w.kind) {
    case TL_WAIT_STAGE:
    case TL_WAIT_PP:
        op_name(tl, w.origin, who, sizeof who);
        if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "waiting for %s", who);
        if (n < cap && w.kind == TL_WAIT_STAGE && w.split < w.to) {
            viz_format_time((double)(w.split - w.from), a, sizeof a);
            viz_format_time((double)(w.to - w.split), b, sizeof b);
            snprintf(lines[n++], VIZ_TIP_W, "bubble %s, then %s for the hand-off to arrive", a, b);
        } else if (n < cap && w.kind == TL_WAIT_PP) {
            snprintf(lines[n++], VIZ_TIP_W, "its hand-off in flight: exposed PP communication");
        } else if (n < cap) {
            snprintf(lines[n++], VIZ_TIP_W, "pipeline bubble");
        }
        break;
    case TL_WAIT_COMM:
        op_name(tl, w.cause, who, sizeof who);
        if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "waiting for its own %s", who);
        if (n < cap) {
            char kind[8] = "";
            const char *cn = timeline_comm_name(w.comm);
            for (size_t i = 0; cn[i] && i + 2 < sizeof kind; i++) {
                kind[i] = (char)(cn[i] - 'a' + 'A');
                kind[i + 1] = ' ';
                kind[i + 2] = '\0';
            }
            snprintf(lines[n++], VIZ_TIP_W, "exposed %scommunication, not bubble", kind);
        }
        break;
    case TL_WAIT_DONE:
        if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "done: the other stages are still working");
        if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "pipeline bubble (the drain)");
        break;
    default:
        if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "the timeline does not say what released "
                              "the next op (no released_by column)");
        break;
    }
    if (w.op != TL_NONE && n < cap && (w.kind == TL_WAIT_STAGE || w.kind == TL_WAIT_PP ||
                                       w.kind == TL_WAIT_COMM)) {
        op_name(tl, w.op, who, sizeof who);
        snprintf(lines[n++], VIZ_TIP_W, "then %s", who);
    }
    return n;
}

static int mem_details(const struct timeline *tl, int row, double t, char lines[][VIZ_TIP_W],
                       int cap)
{
    int64_t cats[TL_MEM_CATS];
    int64_t total = timeline_mem_at(tl, row, (mp_time)floor(t), cats);
    int n = 0;
    char a[32], b[32], c[32];
    viz_format_time(t, c, sizeof c);
    viz_format_bytes((double)total, a, sizeof a);
    const struct tl_row *r = &tl->rows[row];
    if (r->capacity > 0) {
        viz_format_bytes((double)r->capacity, b, sizeof b);
        snprintf(lines[n++], VIZ_TIP_W, "memory at %s: %s of %s", c, a, b);
    } else {
        snprintf(lines[n++], VIZ_TIP_W, "memory at %s: %s", c, a);
    }
    for (int k = 0; k < TL_MEM_CATS && n < cap; k++) {
        if (cats[k] == 0) continue;
        viz_format_bytes((double)cats[k], a, sizeof a);
        snprintf(lines[n++], VIZ_TIP_W, "  %-12s %s", timeline_mem_category_name((uint16_t)k), a);
    }
    viz_format_bytes((double)r->peak_mem, a, sizeof a);
    if (n < cap) snprintf(lines[n++], VIZ_TIP_W, "peak %s", a);
    return n;
}

int viz_hit_details(const struct viz_scene *sc, const struct viz_hit *h, char lines[][VIZ_TIP_W],
                    int cap)
{
    if (!h->ok) return 0;
    const struct timeline *tl = sc->tl[h->panel];
    switch (h->kind) {
    case VIZ_HIT_OP: return op_details(tl, h->row, h->stream, h->op, lines, cap);
    case VIZ_HIT_IDLE: return idle_details(tl, h->row, h->t, lines, cap);
    case VIZ_HIT_MEM: return mem_details(tl, h->row, h->t, lines, cap);
    case VIZ_HIT_FOLD: {
        if (cap < 2) return 0;
        char a[48], b[48];
        bool open = sc->unfold[h->panel] && sc->unfold[h->panel][h->row];
        viz_row_label(tl, h->row, a, sizeof a, b, sizeof b);
        snprintf(lines[0], VIZ_TIP_W, "%s, simulated on %s", a, *b ? b : "its chip");
        viz_fold_label(tl, h->row, open, lines[1], VIZ_TIP_W);
        int n = 2;
        bool peers = false;
        for (int i = 0; i < tl->n_rows; i++) peers |= tl->rows[i].serves == h->row;
        if (peers && n < cap)
            snprintf(lines[n++], VIZ_TIP_W, "click to %s its peers' rows", open ? "hide" : "show");
        return n;
    }
    default: return 0;
    }
}

/* ---- overlays ---- */

static void outline(struct viz_draw_list *dl, int x0, int y0, int x1, int y1, viz_color c)
{
    viz_draw_rect(dl, x0, y0, x1 - x0, 2, c);
    viz_draw_rect(dl, x0, y1 - 2, x1 - x0, 2, c);
    viz_draw_rect(dl, x0, y0, 2, y1 - y0, c);
    viz_draw_rect(dl, x1 - 2, y0, 2, y1 - y0, c);
}

void viz_layout_highlight(struct viz_draw_list *dl, const struct viz_geom *g,
                          const struct viz_scene *sc, const struct viz_view *v,
                          const struct viz_hit *h)
{
    if (!h->ok || (h->kind != VIZ_HIT_OP && h->kind != VIZ_HIT_IDLE)) return;
    const struct timeline *tl = sc->tl[h->panel];
    int y, hh;
    if (!viz_lane_y(g, h->panel, h->row, h->stream, &y, &hh)) return;
    viz_draw_clip(dl, g->plot_x0, g->rows_y0, g->plot_x1 - g->plot_x0, g->rows_y1 - g->rows_y0);
    if (h->kind == VIZ_HIT_OP) {
        const struct tl_lane *l = timeline_lane(tl, h->row, h->stream);
        int x0 = (int)floor(viz_x_of(g, v, (double)l->start[h->op]));
        int x1 = (int)floor(viz_x_of(g, v, (double)l->end[h->op]));
        outline(dl, x0 - 1, y - 1, imax(x1, x0 + 2) + 1, y + hh + 1, VIZ_CURSOR);
        viz_draw_noclip(dl);
        return;
    }
    struct tl_wait w = timeline_wait_at(tl, h->row, (mp_time)floor(h->t));
    int x0 = (int)floor(viz_x_of(g, v, (double)w.from)), x1 = (int)floor(viz_x_of(g, v, (double)w.to));
    outline(dl, x0, y, imax(x1, x0 + 4), y + hh, VIZ_CURSOR);
    /* The dependency: down (or up) from the op that released the wait to
     * where the next op starts. */
    int row, stream, oy, oh;
    size_t k;
    if (w.origin != TL_NONE && timeline_locate(tl, w.origin, &row, &stream, &k) &&
        viz_lane_y(g, h->panel, row, stream, &oy, &oh)) {
        const struct tl_lane *l = timeline_lane(tl, row, stream);
        int ox = (int)floor(viz_x_of(g, v, (double)l->end[k]));
        int ox0 = (int)floor(viz_x_of(g, v, (double)l->start[k]));
        outline(dl, ox0 - 1, oy - 1, imax(ox, ox0 + 2) + 1, oy + oh + 1, VIZ_CURSOR);
        int ya = oy + oh / 2, yb = y + hh / 2;
        viz_draw_rect(dl, ox - 1, ya < yb ? ya : yb, 2, abs(yb - ya), VIZ_CURSOR);
        if (x1 > ox) viz_draw_rect(dl, ox - 1, yb - 1, x1 - ox + 1, 2, VIZ_CURSOR);
    }
    viz_draw_noclip(dl);
}

void viz_layout_status(struct viz_draw_list *dl, const struct viz_geom *g,
                       const struct viz_view *v, const struct viz_font *font, const char *left,
                       const char *right)
{
    int h = g->m.status_h, y = v->height - h, pad = g->m.pad;
    viz_draw_noclip(dl);
    viz_draw_rect(dl, 0, y, v->width, h, VIZ_AXIS_BG);
    viz_draw_rect(dl, 0, y, v->width, 1, VIZ_SEPARATOR);
    int ty = y + (h - (font ? font->height : 0)) / 2;
    char buf[256];
    /* The right part goes first when there is room for both; the left one
     * is cut to what is left, so they never run into each other. */
    int rw = right ? viz_text_width(font, right) : 0;
    if (right && rw + 3 * pad > v->width / 2) rw = 0;
    if (rw) viz_draw_text(dl, v->width - rw - pad, ty, 0, VIZ_TEXT_DIM, right);
    if (left) {
        int room = v->width - 2 * pad - (rw ? rw + 2 * pad : 0);
        viz_text_fit(font, left, room, buf, sizeof buf);
        if (*buf) viz_draw_text(dl, pad, ty, room, VIZ_TEXT_DIM, buf);
    }
}

void viz_layout_tooltip(struct viz_draw_list *dl, const struct viz_view *v,
                        const struct viz_font *font, int x, int y, const char *const *lines, int n)
{
    int lh = font ? font->height : 12, w = 0;
    for (int i = 0; i < n; i++) w = imax(w, viz_text_width(font, lines[i]));
    if (w > v->width - 16) w = v->width - 16;
    int bw = w + 12, bh = n * lh + 8;
    int bx = x + 14, by = y + 16;
    if (bx + bw > v->width) bx = imax(0, x - 14 - bw);
    if (by + bh > v->height) by = imax(0, y - 8 - bh);
    viz_draw_noclip(dl);
    viz_draw_rect(dl, bx, by, bw, bh, VIZ_TOOLTIP_BORDER);
    viz_draw_rect(dl, bx + 1, by + 1, bw - 2, bh - 2, VIZ_TOOLTIP_BG);
    for (int i = 0; i < n; i++)
        viz_draw_text(dl, bx + 6, by + 4 + i * lh, w, i == 0 ? VIZ_TEXT : VIZ_TEXT_DIM, lines[i]);
}
