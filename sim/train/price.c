/* price.c — a training step's compute, kernel by kernel; see price.h. */
#include "price.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Routed-expert times by token count: per (microbatch, layer, expert)
 * experts.c asks for the same counts again and again (thousands of
 * distinct ones over a step: tens of thousands of tokens per expert). */
#define EXPERT_MEMO 65536
struct price_memo {
    double tokens[EXPERT_MEMO];
    mp_time t[EXPERT_MEMO][3];
    bool set[EXPERT_MEMO];
};

/* Saturating at MP_TIME_HUGE: the one checked path (sim/common.h). */
static mp_time ps_of(double seconds)
{
    return mp_time_from_s(seconds);
}

struct kernel_params price_kernel_params(const struct sim *s)
{
    const struct config *cfg = &s->cfg;
    return (struct kernel_params){
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp || cfg->parallel.tsp,
        .weight_bits = cfg->model.weight_bits, .activation_bits = cfg->model.activation_bits,
        .kv_bits = cfg->model.kv_bits, .compute_bits = cfg->model.compute_bits,
        .grad_bits = cfg->training.grad_reduce == PRECISION_BF16 ? 16 : 32,
        .flash = cfg->training.attention == ATTENTION_FLASH, .dropout = cfg->training.dropout,
        .ep = cfg->parallel.ep, .cp = cfg->parallel.cp, .mtp = true, /* DeepSeek's MTP modules train with the model */
    };
}

/* ---- the kernel table, read once per process ---------------------------
 * calib_load_default parses and checks every row of hardware/kernels.csv
 * (about 10 M instructions, as much as the rest of a 1T step's set-up), and
 * a process running many steps (a bench's rounds, explain's levers, a sweep
 * or search through sim_run) reads the same file for the same chip each
 * time. The last table read is kept with the chip it was read for and the
 * file's identity (device, inode, size, modification time): a step for the
 * same chip and an unchanged file gets a copy of it, anything else reads
 * the file again. The copy is the table calib_load_default returns (the
 * same rows, the same figures), so no output can tell the two apart. */

static bool same_chip(const struct chip *a, const struct chip *b)
{
    return !strcmp(a->name, b->name) && !strcmp(a->label, b->label) &&
           !strcmp(a->source, b->source) && a->peak_bf16 == b->peak_bf16 &&
           a->peak_fp8 == b->peak_fp8 && a->mem_bytes == b->mem_bytes && a->mem_bw == b->mem_bw &&
           a->scaleup_bw == b->scaleup_bw && a->scaleout_bw == b->scaleout_bw &&
           a->compute_eff == b->compute_eff && a->mem_eff == b->mem_eff &&
           a->price_usd == b->price_usd && a->price_hour_usd == b->price_hour_usd;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static pthread_mutex_t calib_memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool have;
    struct chip chip;
    struct stat st;
    struct calib c;
} calib_memo;

static void calib_copy(struct calib *to, const struct calib *from)
{
    *to = *from;
    to->rows = mp_xmalloc((size_t)(from->n_rows ? from->n_rows : 1) * sizeof *to->rows);
    if (from->n_rows) memcpy(to->rows, from->rows, (size_t)from->n_rows * sizeof *to->rows);
    to->cap_rows = from->n_rows;
}

/* calib_load_default, from the kept table when it is the same chip and file. */
static int calib_load_memo(struct calib *c, const struct chip *chip, struct mp_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/kernels.csv", mp_data_dir()); /* calib_load_default's */
    struct stat st;
    bool known = stat(path, &st) == 0;
    pthread_mutex_lock(&calib_memo_lock);
    if (known && calib_memo.have && same_file(&st, &calib_memo.st) &&
        same_chip(chip, &calib_memo.chip)) {
        calib_copy(c, &calib_memo.c);
        pthread_mutex_unlock(&calib_memo_lock);
        return MP_OK;
    }
    pthread_mutex_unlock(&calib_memo_lock);
    int rc = calib_load_default(c, chip, err);
    struct stat after;
    /* Kept only when the file did not change while it was read. */
    if (rc || !known || stat(path, &after) != 0 || !same_file(&st, &after)) return rc;
    pthread_mutex_lock(&calib_memo_lock);
    if (calib_memo.have) calib_release(&calib_memo.c);
    calib_copy(&calib_memo.c, c);
    calib_memo.chip = *chip;
    calib_memo.st = st;
    calib_memo.have = true;
    pthread_mutex_unlock(&calib_memo_lock);
    return MP_OK;
}

int price_load(struct sim *s, const struct calib *shared, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    if (shared) {
        s->calib = *shared; /* borrowed (sim_options.inputs): sim_release leaves it */
    } else {
        int rc = calib_load_memo(&s->calib, &s->sys.chip, err);
        if (rc) return rc;
    }
    s->has_calib = true;
    const char *pre = cfg->path[0] ? cfg->path : "", *sep = cfg->path[0] ? ": " : "";
    if (cfg->model.compute_bits == 8 && !(s->sys.chip.peak_fp8 > 0))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s%skey model.compute_bits = 8: chip %s has no FP8 peak "
                       "(hardware/chips.csv fp8_tflops = 0); expected 16 on this chip",
                       pre, sep, s->sys.chip.name);
    if (cfg->model.compute_bits == 8 && !(s->calib.gemm_eff[1] > 0))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s%skey model.compute_bits = 8: %s has no gemm fp8 row for chip %s; "
                       "expected one (or 16)", pre, sep, s->calib.path, s->sys.chip.name);
    s->kp = price_kernel_params(s);
    return MP_OK;
}

static void tally(struct time_breakdown *b, const struct calib_cost *c)
{
    b->s[c->cls] += c->busy;
    b->s[CT_LAUNCH] += c->launch;
    b->kernels++;
    if (c->busy > b->top[c->cls] || b->row[c->cls] < 0) {
        b->top[c->cls] = c->busy;
        b->row[c->cls] = c->row;
    }
}

static void bd_clear(struct time_breakdown *b)
{
    memset(b, 0, sizeof *b);
    for (int c = 0; c < N_CT; c++) b->row[c] = -1;
}

/* One layer's kernels on the chip: per pass, block and part; the recompute
 * its backward re-runs first (decoders only: selective re-runs the kernels
 * marked `recompute`, full the whole forward). */
static void price_one(struct sim *s, int l, struct layer_price *lp, struct time_breakdown *bd)
{
    kernel_list_clear(&s->kl);
    kernels_train_layer(&s->model, l, &s->kp, &s->kl);
    for (int b = 0; b < N_BD; b++) bd_clear(&bd[b]);
    int recompute = s->model.layer[l].kind == LAYER_DECODER ? s->cfg.training.recompute
                                                            : RECOMPUTE_NONE;
    /* enum recompute_kind is none, selective, full: calib_price_layer's 0, 1, 2. */
    calib_price_layer(&s->calib, &s->kl, recompute, lp);
    for (int i = 0; i < s->kl.n; i++) {
        const struct kernel *k = &s->kl.k[i];
        struct calib_cost c;
        calib_kernel(&s->calib, k, &c);
        tally(&bd[k->pass == KPASS_F ? BD_F : k->pass == KPASS_B ? BD_B : BD_W], &c);
        if ((recompute == RECOMPUTE_SELECTIVE && k->recompute) ||
            (recompute == RECOMPUTE_FULL && k->pass == KPASS_F))
            tally(&bd[BD_RECOMPUTE], &c);
    }
}

static void bd_add(struct time_breakdown *to, const struct time_breakdown *from)
{
    for (int c = 0; c < N_CT; c++) {
        to->s[c] += from->s[c];
        if (from->row[c] != -1 && (to->row[c] == -1 || from->top[c] > to->top[c])) {
            to->top[c] = from->top[c];
            to->row[c] = from->row[c];
        }
    }
    to->kernels += from->kernels;
}

void price_layers(struct sim *s)
{
    int n = s->model.n_layers, S = s->prog.stages;
    s->price = mp_xcalloc((size_t)n, sizeof *s->price);
    s->layer_bd = mp_xcalloc((size_t)n * N_BD, sizeof *s->layer_bd);
    s->stage_bd = mp_xcalloc((size_t)S * N_BD, sizeof *s->stage_bd);
    /* Layers alike in everything but their index price alike: a model's
     * decoders are a few kinds repeated (struct layer comes from calloc'ed
     * memory, so its padding compares equal too). */
    for (int l = 0; l < n; l++) {
        int same = -1;
        struct layer a, b;
        memcpy(&a, &s->model.layer[l], sizeof a);   /* bytes, padding included */
        a.decoder_index = 0;
        for (int j = l - 1; j >= 0 && j >= l - 8 && same < 0; j--) {
            memcpy(&b, &s->model.layer[j], sizeof b);
            b.decoder_index = 0;
            if (!memcmp(&a, &b, sizeof a)) same = j;
        }
        if (same >= 0) {
            s->price[l] = s->price[same];
            memcpy(&s->layer_bd[(size_t)l * N_BD], &s->layer_bd[(size_t)same * N_BD],
                   N_BD * sizeof *s->layer_bd);
        } else {
            price_one(s, l, &s->price[l], &s->layer_bd[(size_t)l * N_BD]);
        }
    }
    for (int st = 0; st < S; st++) {
        struct time_breakdown *sb = &s->stage_bd[(size_t)st * N_BD];
        for (int b = 0; b < N_BD; b++) bd_clear(&sb[b]);
        const struct stage_cost *c = &s->stage_cost[st];
        for (int l = c->layer_first; l <= c->layer_last; l++)
            for (int b = 0; b < N_BD; b++) bd_add(&sb[b], &s->layer_bd[(size_t)l * N_BD + b]);
    }
}

mp_time price_expert(void *ctx, double tokens, int pass)
{
    struct sim *s = ctx;
    if (!(tokens > 0) || pass < 0 || pass > 2) return 0;
    if (!s->expert_memo) s->expert_memo = mp_xcalloc(1, sizeof *s->expert_memo);
    struct price_memo *m = s->expert_memo;
    size_t h;
    if (tokens == floor(tokens) && tokens < 1e15) {
        h = (size_t)(uint64_t)tokens % EXPERT_MEMO;   /* whole counts: direct */
    } else {
        uint64_t bits;
        memcpy(&bits, &tokens, sizeof bits);
        h = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 48) % EXPERT_MEMO;
    }
    if (!m->set[h] || m->tokens[h] != tokens) {
        double t[3] = { 0 };
        kernel_list_clear(&s->kl);
        kernels_expert(&s->model, tokens, &s->kp, &s->kl);
        for (int i = 0; i < s->kl.n; i++) {
            struct calib_cost c;
            calib_kernel(&s->calib, &s->kl.k[i], &c);
            t[s->kl.k[i].pass] += c.busy + c.launch;
        }
        m->set[h] = true;
        m->tokens[h] = tokens;
        for (int p = 0; p < 3; p++) m->t[h][p] = ps_of(t[p]);
    }
    return m->t[h][pass];
}

mp_time price_memory(void *ctx, double bytes, int kernels)
{
    const struct sim *s = ctx;
    if (!(bytes > 0)) return 0;
    double launch = s->calib.launch_s;
    return ps_of(calib_memory_seconds(&s->calib, bytes) - launch +
                 kernels * launch);
}

void price_release(struct sim *s)
{
    free(s->price);
    free(s->layer_bd);
    free(s->stage_bd);
    free(s->expert_memo);
    kernel_list_release(&s->kl);
    if (s->has_calib && !s->borrowed) calib_release(&s->calib);
}
