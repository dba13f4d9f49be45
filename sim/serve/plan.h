/* plan.h — place a model's layers on chips by memory, as Hugging Face's
 * device_map="auto" does, but with mpsim's memory model: `mpsim plan`.
 *
 * Layers stay in order and whole (a tensor-parallel degree t splits every
 * layer over t chips, which then count as one stage). Each stage is filled
 * greedily, front to back: a layer joins the current stage when the stage's
 * weights plus the reserve its layers need still fit one chip, else it opens
 * the next stage. The reserve is what serving keeps per request, sized for
 * `concurrency` requests at `context_len` tokens:
 *   - full attention (and MLA): KV cache, context_len × KV bytes per token;
 *   - sliding-window and chunked attention: KV for min(context_len, window)
 *     tokens;
 *   - linear attention and state-space layers (Mamba): their fixed recurrent
 *     state (and short-convolution inputs), independent of length;
 *   - embedding and LM head: none (they ride with the first and last layer).
 * concurrency = 0 picks the largest target every layer can meet on a chip of
 * its own (with the embedding or head beside it when it is first or last):
 * the article's "one dense layer per wafer, the rest for KV" rule.
 *
 * Activation workspace is not reserved (a decode step's activations are a few
 * MB, a rounding error beside 16 GB layers). */
#ifndef MPSIM_PLAN_H
#define MPSIM_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "hardware/chip.h"
#include "sim/common.h"
#include "sim/io/config.h"
#include "models/model.h"

struct plan_params {
    double chip_mem;   /* bytes per chip */
    int tp;            /* chips per stage: each layer split over them */
    int ep;            /* serving with expert parallelism: routed experts split over ep
                          chips (0 or 1: none); weights per chip count experts / ep */
    int weight_bits, kv_bits;
    int context_len;   /* tokens of one request the KV reserve is sized for */
    int concurrency;   /* requests to reserve for; 0 = auto */
};

struct plan_stage {
    int first, last;          /* model layers [first, last]: 0 embedding,
                                 1..L decoders, L+1 LM head (model.h) */
    int n_full, n_linear;     /* decoders by attention kind: KV-keeping (MLA and
                                 sliding windows count as full) or state-keeping
                                 (linear attention, SSM); MLP-only layers neither */
    double weights;           /* bytes per chip */
    double kv_per_token;      /* KV bytes per token of one request, per chip */
    /* Of the sliding-window / chunked layers: KV bytes per token, kept for at
     * most kv_window tokens of a request (a model has one window). */
    double kv_window_per_token;
    int kv_window;
    double state_per_request; /* recurrent-state bytes of one request, per chip */
    double reserve;           /* bytes kept for the concurrency target */
    double per_request;       /* bytes one request at context_len needs here */
    int max_requests;         /* requests at context_len its free memory holds
                                 (INT_MAX when it keeps nothing per request) */
};

struct plan {
    struct plan_params p;
    int concurrency;          /* the target used (auto resolved) */
    int stages;
    int chips;                /* stages × tp */
    struct plan_stage *stage; /* [stages] */
};

/* Bytes one request of `tokens` tokens keeps on stage `s` (inline: the
 * serving loops ask it for every stage at each admission and completion). */
static inline double plan_stage_request_bytes(const struct plan_stage *s, double tokens)
{
    double windowed = s->kv_window > 0 && s->kv_window < tokens ? s->kv_window : tokens;
    return tokens * s->kv_per_token + windowed * s->kv_window_per_token + s->state_per_request;
}

/* The smallest max_requests over stages holding full-attention layers (the
 * concurrency KV allows), INT_MAX when none does; `stage` gets its index. */
int plan_kv_bound(const struct plan *pl, int *stage);

/* A scenario's plan: loads the model and the system's chip, then places. */
struct plan_run {
    struct config cfg;
    struct model model;
    bool has_model;
    struct chip chip;
    char system[64];
    struct plan plan;
    bool has_plan;
};

/* Build the plan of a scenario (inference.* and parallel.tp keys); `cfg` is
 * copied. Always call plan_run_release afterwards. */
int plan_run(struct plan_run *r, const struct config *cfg, struct mp_error *err);
void plan_run_release(struct plan_run *r);

/* The layer map for people: chip count, one row per stage, the summary of
 * the wafer case (stages by content) and the KV-bound concurrency. */
void plan_report_text(FILE *f, const struct plan_run *r);

/* {"chips", "stages", "tp", "concurrency", "context_len", "chip_mem_bytes",
 *  "placement": [{"chip", "layers", "mem_bytes", ...}], "kv_bound": {...}}:
 * `layers` lists model layer indices (0 embedding, L+1 head). */
void plan_report_json(FILE *f, const struct plan_run *r);

#endif
