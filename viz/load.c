/* load.c — scenarios into timelines in-process; see load.h. */
#include "load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/config.h"
#include "sim/serve/accel.h"
#include "sim/serve/serve.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"

/* "key=value" into a meta row. */
static void add_meta(void *ctx, int chip, int stage, const char *kv)
{
    struct timeline *tl = ctx;
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return;
    char key[128];
    size_t n = (size_t)(eq - kv) < sizeof key - 1 ? (size_t)(eq - kv) : sizeof key - 1;
    memcpy(key, kv, n);
    key[n] = '\0';
    timeline_set_meta(tl, chip, key, eq + 1);
    if (chip >= 0 && stage >= 0 && !timeline_meta(tl, chip, "stage")) {
        char buf[24];
        snprintf(buf, sizeof buf, "%d", stage);
        timeline_set_meta(tl, chip, "stage", buf);
    }
}

static uint8_t dir_of(int d) { return d == 0 ? TL_DIR_DOWN : d == 1 ? TL_DIR_UP : TL_DIR_NONE; }

static void add_op(void *ctx, const struct report_tl_op *r)
{
    struct timeline *tl = ctx;
    struct tl_op o = {
        .start = r->start, .end = r->end, .bytes = (int64_t)r->bytes, .chip = r->chip,
        .stage = r->stage, .microbatch = r->mb, .microbatch2 = r->mb2, .chunk = r->chunk,
        .chunk2 = r->chunk2, .layer_first = r->layer_first, .layer_last = r->layer_last,
        .kind = timeline_kind_id(tl, r->kind), .stream = r->stream ? TL_COMM : TL_COMPUTE,
        .comm = timeline_comm_id(r->comm), .dir = dir_of(r->dir), .dir2 = dir_of(r->dir2),
        .has_id = r->id >= 0, .id = (uint32_t)r->id,
        .has_released = r->released_by >= 0, .released_by = (uint32_t)r->released_by,
    };
    timeline_add_op(tl, &o, r->label);
}

static void add_mem(void *ctx, int chip, int stage, mp_time t, double delta, double in_use,
                    const char *cat)
{
    (void)stage;
    struct tl_mem m = { .t = t, .delta = (int64_t)delta, .in_use = (int64_t)in_use, .chip = chip,
                        .category = timeline_mem_category(cat) };
    timeline_add_mem(ctx, &m);
}

void viz_load_sim(struct timeline *tl, const struct sim *s)
{
    struct report_tl_sink k = { .ctx = tl, .meta = add_meta, .op = add_op, .mem = add_mem };
    report_timeline_each(s, &k);
    timeline_finish(tl);
}

void viz_load_serve(struct timeline *tl, struct serve *s)
{
    const struct serve_result *r = &s->res;
    struct serve_record *rc = s->rec;
    serve_timeline_meta(s, true, add_meta, tl);
    char buf[256];
    for (int st = 0; st < r->stages; st++) {
        snprintf(buf, sizeof buf, "%d-%d", r->stage[st].layer_first, r->stage[st].layer_last);
        timeline_set_meta(tl, r->stage[st].chip, "layers", buf);
    }
    if (rc && rc->stage) {
        /* Per pass: what it is (shared by its copy on every stage), its
         * hand-offs down the chain and its return to stage 0. */
        uint32_t hop_label = timeline_intern(tl, "activations to the next stage (the link's time; "
                                                 "they arrive one hop latency later)");
        uint32_t back_label = timeline_intern(tl, "tokens back to stage 0 (the link's time; "
                                                  "they arrive one hop latency later)");
        uint32_t *info = mp_xmalloc((rc->n_pass ? rc->n_pass : 1) * 3 * sizeof *info);
        for (size_t i = 0; i < rc->n_pass; i++) {
            const struct serve_pass_rec *p = &rc->pass[i];
            struct tl_op o = { .chip = -1, .stage = -1, .microbatch = p->slot, .microbatch2 = -1,
                               .chunk = -1, .chunk2 = -1, .layer_first = -1, .layer_last = -1,
                               .kind = timeline_kind_id(tl, serve_pass_kind(p)) };
            serve_pass_label(buf, sizeof buf, p);
            info[3 * i] = timeline_add_info(tl, &o, buf);
            o.kind = TL_KIND_SEND;
            o.comm = TL_COMM_PP;
            o.bytes = (int64_t)serve_record_hop_bytes(s, 0, p);
            info[3 * i + 1] = timeline_add_info(tl, &o, NULL);
            tl->infos[info[3 * i + 1]].label = hop_label;
            o.bytes = (int64_t)serve_record_hop_bytes(s, r->stages - 1, p);
            info[3 * i + 2] = timeline_add_info(tl, &o, NULL);
            tl->infos[info[3 * i + 2]].label = back_label;
        }
        for (int st = 0; st < r->stages; st++) {
            struct serve_stage_rec *sr = &rc->stage[st];
            /* A replica's last stage returns the tokens (issue 19: replicas). */
            bool back = st + 1 == r->stages || r->stage[st + 1].replica != r->stage[st].replica;
            int chip = r->stage[st].chip, h = back ? 2 : 1;
            size_t n = sr->n > sr->n_hop ? sr->n : sr->n_hop;
            uint32_t *in = mp_xmalloc((n ? n : 1) * sizeof *in);
            for (size_t i = 0; i < sr->n; i++) in[i] = info[3 * (size_t)sr->pass[i]];
            timeline_add_ops(tl, chip, TL_COMPUTE, sr->n, sr->start, sr->end, in);
            /* A hand-off holds its links for the bytes' time; the hop's
             * latency after that overlaps the next hand-off (serve.c), so
             * the lane shows the link's busy time, as serve_trace.c writes. */
            for (size_t i = 0; i < sr->n_hop; i++) {
                in[i] = info[3 * (size_t)sr->hop_pass[i] + (size_t)h];
                mp_time end = sr->hop_end[i] - s->hop[st];
                sr->hop_end[i] = end > sr->hop_start[i] ? end : sr->hop_start[i];
            }
            timeline_add_ops(tl, chip, TL_COMM, sr->n_hop, sr->hop_start, sr->hop_end, in);
            free(in);
            /* One copy of the ops at a time: this stage's record goes now. */
            free(sr->start); free(sr->end); free(sr->pass);
            free(sr->hop_start); free(sr->hop_end); free(sr->hop_pass);
            memset(sr, 0, sizeof *sr);
        }
        free(info);
        for (int st = 0; st < r->stages; st++) {
            struct tl_mem m = { .t = 0, .delta = (int64_t)r->stage[st].weights,
                                .in_use = (int64_t)r->stage[st].weights, .chip = r->stage[st].chip,
                                .category = TL_MEM_WEIGHTS };
            timeline_add_mem(tl, &m);
        }
        for (size_t i = 0; i < rc->n_kv; i++) {
            const struct serve_kv_rec *k = &rc->kv[i];
            struct tl_mem m = { .t = k->t, .delta = (int64_t)k->delta,
                                .in_use = (int64_t)(r->stage[k->stage].weights + k->in_use),
                                .chip = r->stage[k->stage].chip, .category = TL_MEM_KV };
            timeline_add_mem(tl, &m);
        }
    }
    timeline_finish(tl);
}

int viz_load_scenario(struct timeline *tl, const char *path, char *const *sets, int n_sets,
                      struct mp_error *err)
{
    struct config cfg;
    config_defaults(&cfg);
    int rc = config_load(&cfg, path, err);
    for (int i = 0; !rc && i < n_sets; i++) rc = config_set(&cfg, sets[i], "--set", err);
    if (rc) return rc;
    const char *slash = strrchr(path, '/');
    if (cfg.device_map.policy != DEVMAP_NONE) {
        /* generate() as Accelerate runs a device map (accel.h): its first
         * call is a few thousand rows, so through its CSV writer in memory. */
        struct accel_setup a;
        struct accel_report rep = { 0 };
        rc = accel_setup(&a, &cfg, NULL, err);
        if (!rc) rc = accel_generate_recorded(&rep, &a, true, err);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = rc ? NULL : open_memstream(&buf, &len);
        if (f) {
            accel_timeline_csv(f, &a, &rep);
            fclose(f);
            rc = timeline_read_csv_buffer(tl, path, buf, len, err);
        } else if (!rc) {
            rc = mp_fail(err, MP_ERR_INTERNAL, "%s: out of memory", path);
        }
        free(buf);
        accel_report_release(&rep);
        accel_setup_release(&a);
        if (!rc) {
            free(tl->name);
            tl->name = mp_xstrdup(slash ? slash + 1 : path);
        }
        return rc;
    }
    if (cfg.inference.present) { /* a serving run: passes of continuous batching */
        struct serve sv;
        rc = serve_run_recorded(&sv, &cfg, true, err);
        if (!rc) {
            tl->name = mp_xstrdup(slash ? slash + 1 : path);
            viz_load_serve(tl, &sv);
        }
        serve_release(&sv);
        return rc;
    }
    struct sim s;
    struct sim_options opts = { .record_memory = true, .record_released = true };
    rc = sim_run(&s, &cfg, &opts, err);
    if (!rc) {
        tl->name = mp_xstrdup(slash ? slash + 1 : path);
        viz_load_sim(tl, &s);
    }
    sim_release(&s);
    return rc;
}
