/* synth.c — timelines made without the simulator: the textbook GPipe and
 * 1F1B pipelines whose every time a person can check by hand (the test
 * fixtures and `--demo`), and a big deterministic one for benchmarks. */
#include "timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GB ((int64_t)1000000000)  /* the CLI's GB */

struct pass { int bw; int mb; };   /* bw = 0: forward, 1: fused backward */

/* Each stage's pass order. GPipe runs every forward, then every backward in
 * microbatch order (as mpsim's gpipe schedule does); 1F1B (PipeDream-flush)
 * runs p−1−i warm-up forwards, then alternates. */
static void order(const char *schedule, int p, int m, int stage, struct pass *out)
{
    int n = 0;
    if (strcmp(schedule, "gpipe") == 0) {
        for (int k = 0; k < m; k++) out[n++] = (struct pass){ 0, k };
        for (int k = 0; k < m; k++) out[n++] = (struct pass){ 1, k };
        return;
    }
    int warm = p - 1 - stage < m ? p - 1 - stage : m;
    for (int k = 0; k < warm; k++) out[n++] = (struct pass){ 0, k };
    for (int k = 0; k < m - warm; k++) {
        out[n++] = (struct pass){ 0, warm + k };
        out[n++] = (struct pass){ 1, k };
    }
    for (int k = m - warm; k < m; k++) out[n++] = (struct pass){ 1, k };
}

int timeline_textbook(struct timeline *tl, const char *schedule, int p, int m, mp_time t_f,
                      mp_time t_b, struct mp_error *err)
{
    if (strcmp(schedule, "gpipe") != 0 && strcmp(schedule, "1f1b") != 0)
        return mp_fail(err, MP_ERR_INPUT, "unknown textbook schedule \"%s\": known are gpipe, 1f1b",
                       schedule);
    if (p < 1 || m < 1)
        return mp_fail(err, MP_ERR_INPUT, "a textbook pipeline needs p >= 1 and m >= 1");

    /* done[bw][stage][mb] = end time, or -1 while not yet run. */
    size_t cells = (size_t)p * (size_t)m;
    mp_time *done = mp_xmalloc(2 * cells * sizeof *done);
    uint32_t *done_id = mp_xmalloc(2 * cells * sizeof *done_id);
    for (size_t i = 0; i < 2 * cells; i++) done[i] = -1;
#define DONE(bw, s, k) done[(size_t)(bw) * cells + (size_t)(s) * (size_t)m + (size_t)(k)]
#define DONE_ID(bw, s, k) done_id[(size_t)(bw) * cells + (size_t)(s) * (size_t)m + (size_t)(k)]
    /* Op ids in the order ops are made; each op names the op whose end let
     * it start: the pass it waited for, else the one before it on its chip. */
    uint32_t next_id = 0;
    uint32_t *prev_id = mp_xmalloc((size_t)p * sizeof *prev_id);
    for (int s = 0; s < p; s++) prev_id[s] = TL_NONE;
    struct pass *ord = mp_xmalloc(cells * 2 * sizeof *ord);
    int *next = mp_xcalloc((size_t)p, sizeof *next);
    mp_time *free_at = mp_xcalloc((size_t)p, sizeof *free_at);
    const int64_t act = GB, weights = 2 * GB;

    for (int s = 0; s < p; s++) {
        struct tl_mem w = { .t = 0, .delta = weights, .in_use = weights, .chip = s,
                            .category = TL_MEM_WEIGHTS };
        timeline_add_mem(tl, &w);
    }
    for (int s = 0; s < p; s++) order(schedule, p, m, s, ord + (size_t)s * 2 * (size_t)m);
    int64_t *in_use = mp_xmalloc((size_t)p * sizeof *in_use);
    for (int s = 0; s < p; s++) in_use[s] = weights;

    /* Each stage runs its order as soon as the pass it waits for is done: a
     * forward waits for the previous stage's forward, a backward for the next
     * stage's backward. Sweep until no stage can move. */
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < p; s++) {
            while (next[s] < 2 * m) {
                struct pass ps = ord[(size_t)s * 2 * (size_t)m + (size_t)next[s]];
                mp_time ready = free_at[s];
                uint32_t by = prev_id[s];
                if (!ps.bw && s > 0) {
                    if (DONE(0, s - 1, ps.mb) < 0) break;
                    if (DONE(0, s - 1, ps.mb) > ready)
                        ready = DONE(0, s - 1, ps.mb), by = DONE_ID(0, s - 1, ps.mb);
                } else if (ps.bw && s < p - 1) {
                    if (DONE(1, s + 1, ps.mb) < 0) break;
                    if (DONE(1, s + 1, ps.mb) > ready)
                        ready = DONE(1, s + 1, ps.mb), by = DONE_ID(1, s + 1, ps.mb);
                }
                mp_time dur = ps.bw ? t_b : t_f;
                struct tl_op op = {
                    .start = ready, .end = ready + dur, .chip = s, .stage = s,
                    .microbatch = ps.mb, .chunk = 0, .layer_first = 4 * s,
                    .layer_last = 4 * s + 3, .stream = TL_COMPUTE,
                    .kind = ps.bw ? TL_KIND_BW : TL_KIND_F,
                    .has_id = true, .id = next_id++, .has_released = by != TL_NONE,
                    .released_by = by,
                };
                char label[64];
                snprintf(label, sizeof label, "%s mb%d stage %d", ps.bw ? "BW" : "F", ps.mb, s);
                timeline_add_op(tl, &op, label);
                /* A forward stashes its activations; the backward frees them. */
                in_use[s] += ps.bw ? -act : act;
                struct tl_mem mm = { .t = ps.bw ? op.end : op.start, .delta = ps.bw ? -act : act,
                                     .in_use = in_use[s], .chip = s,
                                     .category = TL_MEM_ACTIVATIONS };
                timeline_add_mem(tl, &mm);
                DONE(ps.bw, s, ps.mb) = op.end;
                DONE_ID(ps.bw, s, ps.mb) = op.id;
                prev_id[s] = op.id;
                free_at[s] = op.end;
                next[s]++;
                moved = true;
            }
        }
    }
#undef DONE
#undef DONE_ID
    free(done);
    free(done_id);
    free(prev_id);
    free(ord);
    free(next);
    free(free_at);
    free(in_use);

    char v[128];
    snprintf(v, sizeof v, "textbook-%s-p%d-m%d", schedule, p, m);
    timeline_set_meta(tl, -1, "scenario", v);
    timeline_set_meta(tl, -1, "schedule", schedule);
    snprintf(v, sizeof v, "%d", p);
    timeline_set_meta(tl, -1, "chips", v);
    for (int s = 0; s < p; s++) {
        snprintf(v, sizeof v, "%lld", (long long)(16 * GB));
        timeline_set_meta(tl, s, "capacity_bytes", v);
    }
    /* No transfer time: the step is (m + p − 1)(t_f + t_b) for both
     * schedules, the bubble (p − 1)/(m + p − 1) (cases.md §3). */
    snprintf(v, sizeof v, "%.12g", (double)(m + p - 1) * (double)(t_f + t_b) / 1e12);
    timeline_set_meta(tl, -1, "step_time_s", v);
    snprintf(v, sizeof v, "%.6f", (double)(p - 1) / (double)(m + p - 1));
    timeline_set_meta(tl, -1, "bubble", v);
    timeline_set_meta(tl, -1, "model", "synthetic");
    if (!tl->name) tl->name = mp_xstrdup(schedule);
    timeline_finish(tl);
    return MP_OK;
}

/* A small deterministic generator (numerical recipes LCG): the bench must
 * draw the same picture on every machine. */
static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

void timeline_synthetic(struct timeline *tl, int chips, size_t ops)
{
    static const uint16_t comm_kinds[] = {
        TL_KIND_SEND, TL_KIND_SEND, TL_KIND_ALL_REDUCE, TL_KIND_REDUCE_SCATTER,
        TL_KIND_ALL_GATHER, TL_KIND_ALL_TO_ALL,
    };
    static const uint16_t compute_kinds[] = { TL_KIND_F, TL_KIND_B, TL_KIND_W, TL_KIND_BW };
    size_t per_chip = ops / (size_t)(chips > 0 ? chips : 1);
    uint32_t seed = 12345;
    for (int c = 0; c < chips; c++) {
        mp_time tc = (mp_time)c * 2 * MP_PS_PER_US, tm = tc;
        int64_t in_use = 4 * GB;
        struct tl_mem w = { .t = 0, .delta = in_use, .in_use = in_use, .chip = c,
                            .category = TL_MEM_WEIGHTS };
        timeline_add_mem(tl, &w);
        for (size_t i = 0; i < per_chip; i++) {
            uint32_t r = lcg(&seed);
            struct tl_op op = { .chip = c, .stage = c, .microbatch = (int32_t)(i / 3 % 512),
                                .chunk = 0, .layer_first = c, .layer_last = c };
            if (r % 4 == 0) {
                op.stream = TL_COMM;
                op.kind = comm_kinds[(r >> 4) % 6];
                op.bytes = (int64_t)(r % 1000 + 1) << 16;
                tm = tm > tc ? tm : tc;
                op.start = tm + (mp_time)(r % 7) * 100 * MP_PS_PER_NS;
                op.end = op.start + (mp_time)(r % 13 + 1) * 400 * MP_PS_PER_NS;
                tm = op.end;
            } else {
                op.stream = TL_COMPUTE;
                op.kind = compute_kinds[(r >> 4) % 4];
                op.start = tc + (mp_time)(r % 5 == 0 ? (r >> 8) % 4000 : 0) * MP_PS_PER_NS;
                op.end = op.start + (mp_time)((r >> 12) % 3000 + 500) * MP_PS_PER_NS;
                tc = op.end;
            }
            timeline_add_op(tl, &op, NULL);
            if (i % 16 == 0) {
                int64_t d = (r & 1) ? GB / 4 : -(GB / 4);
                if (in_use + d < 4 * GB) d = -d;
                in_use += d;
                struct tl_mem m = { .t = tc, .delta = d, .in_use = in_use, .chip = c,
                                    .category = TL_MEM_ACTIVATIONS };
                timeline_add_mem(tl, &m);
            }
        }
        char v[64];
        snprintf(v, sizeof v, "%lld", (long long)(80 * GB));
        timeline_set_meta(tl, c, "capacity_bytes", v);
    }
    char v[64];
    snprintf(v, sizeof v, "synthetic-%zu-ops", ops);
    timeline_set_meta(tl, -1, "scenario", v);
    timeline_set_meta(tl, -1, "schedule", "synthetic");
    if (!tl->name) tl->name = mp_xstrdup("synthetic");
    timeline_finish(tl);
}
