/* serve_spec.c — speculative decoding (inference.speculative): a draft
 * proposes k tokens, the model verifies them in one forward of k + 1 tokens
 * per request, and the accepted ones plus one more come out at once
 * (Leviathan et al. 2023; vLLM's and SGLang's speculative decoding).
 *
 * The draft is a second model (speculative = draft, inference.draft_model:
 * it must share the model's vocabulary) or the model's own
 * multi-token-prediction module (speculative = mtp: DeepSeek-V3's
 * num_nextn_predict_layers, one decoder layer and the shared LM head reused
 * for each of the k proposals, as vLLM runs it; its weights are taken as
 * one decoder layer's). It runs beside stage 0 of a one-stage replica,
 * split by the replica's tp, its weights (and a draft model's KV) in that
 * chip's memory. A pass's draft time is k steps of one token per
 * speculating request, each priced by the draft's kernels (serve_batch_time)
 * (plus the draft's TP all-reduces); the verification is the model's own
 * pass with k + 1 tokens for each (serve_sched.c).
 *
 * Acceptance: each proposal in turn is accepted with probability
 * spec_acceptance = α until the first rejection (spec_draw = bernoulli,
 * draws from the run's generator), so a step gives 1 + accepted tokens,
 * (1 − α^(k+1)) / (1 − α) on average; spec_draw = expected gives exactly
 * that many per step on average, deterministically (the fraction carried
 * over from step to step). */
#include "serve_impl.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strategy/collective.h"

struct serve_spec {
    struct serve shell;        /* prices the draft's layers as one stage */
    struct model draft;        /* speculative = draft: the draft model */
    bool own_model;
    double weights;            /* per chip of stage 0 */
    int draft_decoders, hidden, tp;
    double E;                  /* expected tokens per step */
};

int serve_spec_setup(struct serve *s, struct mp_error *err)
{
    const struct config_inference *in = &s->cfg.inference;
    if (in->speculative == SPEC_NONE) return MP_OK;
    char at[CONFIG_STR + 96];
    struct serve_spec *sp = s->spec = mp_xcalloc(1, sizeof *s->spec);
    const struct model *m = &s->pr.model;
    const struct serve_pool *P = &s->pool[0];
    sp->tp = P->tp;
    double W = s->cfg.model.weight_bits / 8.0;
    int first, last;
    const struct model *dm;
    if (in->speculative == SPEC_DRAFT) {
        char path[1024];
        int rc = config_resolve(&s->cfg, in->draft_model, "models", ".json", path, sizeof path, err);
        if (rc) {
            char pre[CONFIG_STR + 100];
            snprintf(pre, sizeof pre, "%s: ",
                     config_key_where(&s->cfg, "inference.draft_model", at, sizeof at));
            mp_error_prefix(err, "%s", pre);
            return rc;
        }
        if ((rc = model_load(&sp->draft, path, err))) return rc;
        sp->own_model = true;
        if (sp->draft.vocab != m->vocab)
            return mp_fail(err, MP_ERR_INPUT, "%s = '%s': its vocabulary has %d tokens "
                           "(vocab_size in %s), the model's %d; a draft must share the "
                           "model's tokenizer",
                           config_key_where(&s->cfg, "inference.draft_model", at, sizeof at),
                           in->draft_model, sp->draft.vocab, path, m->vocab);
        if (P->tp > 1 && sp->draft.heads % P->tp != 0)
            return mp_fail(err, MP_ERR_INPUT, "%s = '%s': the draft runs with the replica's tp "
                           "= %d, which does not divide its %d heads",
                           config_key_where(&s->cfg, "inference.draft_model", at, sizeof at),
                           in->draft_model, P->tp, sp->draft.heads);
        dm = &sp->draft;
        first = 0;
        last = dm->n_layers - 1;
        sp->weights = model_params(dm) * W / P->tp;
        sp->draft_decoders = dm->decoders;
    } else {
        /* num_nextn_predict_layers, as the model reader took it from the
         * config.json (models/arch_table.c: the rows that carry MTP). */
        if (m->mtp_modules == 0)
            return mp_fail(err, MP_ERR_INPUT, "%s = mtp: model %s has no multi-token-prediction "
                           "module (num_nextn_predict_layers in its config.json); use "
                           "speculative = draft with a draft model",
                           config_key_where(&s->cfg, "inference.speculative", at, sizeof at),
                           m->name);
        dm = m;
        first = m->decoders; /* the last decoder stands for the MTP block */
        last = m->n_layers - 1;
        sp->weights = m->layer[first].params * W / P->tp;
        sp->draft_decoders = 1;
    }
    sp->hidden = dm->hidden;
    /* The shell: the draft's layers as one priced stage of the replica's tp. */
    struct serve *sh = &sp->shell;
    sh->cfg = s->cfg;
    sh->pr.model = *dm; /* borrowed: the layers stay with their owner */
    sh->pr.chip = s->pr.chip;
    sh->sys.chip = s->sys.chip; /* what serve_price_layers prices on */
    sh->stages = sh->n_priced = 1;
    sh->priced = mp_xcalloc(1, sizeof *sh->priced);
    sh->priced[0] = (struct serve_priced){ first, last, P->tp, 1 };
    int rc = serve_price_layers(sh, err);
    if (rc) return rc;
    serve_price_no_host(sh); /* the model's stage 0 pays the step's host work */
    if (in->speculative == SPEC_DRAFT && P->block_bytes[0] > 0) {
        /* The draft keeps KV for the same tokens, beside the model's. */
        struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = P->tp,
                                  .weight_bits = s->cfg.model.weight_bits,
                                  .kv_bits = s->cfg.model.kv_bits };
        double kv = 0;
        for (int l = 0; l < dm->n_layers; l++) {
            struct layer_cost lc;
            model_layer_cost(dm, l, &cp, &lc);
            kv += lc.kv_bytes_per_token;
        }
        for (int p = 0; p < s->n_pools; p++) s->pool[p].block_bytes[0] += in->block_size * kv;
    }
    double a = in->spec_acceptance;
    int k = in->spec_tokens;
    sp->E = a >= 1 ? k + 1 : (1 - pow(a, k + 1)) / (1 - a);
    return MP_OK;
}

void serve_spec_release(struct serve *s)
{
    struct serve_spec *sp = s->spec;
    if (!sp) return;
    serve_price_release(&sp->shell);
    free(sp->shell.layers);
    free(sp->shell.layer_off);
    free(sp->shell.priced);
    if (sp->own_model) model_release(&sp->draft);
    free(sp);
    s->spec = NULL;
}

double serve_spec_weights(const struct serve *s) { return s->spec ? s->spec->weights : 0; }

mp_time serve_spec_draft_time(struct serve *s, double items, double ctx)
{
    struct serve_spec *sp = s->spec;
    if (!sp || items <= 0) return 0;
    int k = s->cfg.inference.spec_tokens;
    mp_time t = 0;
    /* A member at the mean context, for the windowed sums (exact for a
     * draft of full attention, whose sums are linear in the context). */
    struct kernel_batch one = { 0 };
    for (int j = 0; j < k; j++) {
        /* Proposal j: one token per request, reading the context and the j
         * proposals before it, sampled. */
        double c = ctx + j * items;
        memset(&one, 0, sizeof one);
        serve_batch_add(&sp->shell, &one, 1, c / items, true, true);
        struct kernel_batch b = {
            .tokens = items, .emits = items, .items = items, .decode = items,
            .decode_ctx = c + items, .decode_ctx_win = one.decode_ctx_win * items,
        };
        t += serve_batch_time(&sp->shell, 0, &b);
    }
    if (sp->tp > 1) {
        int chips[sp->tp];
        for (int i = 0; i < sp->tp; i++) chips[i] = s->stage_chip[0] + i;
        struct coll_spec cs = { .op = COLL_ALL_REDUCE,
                                .algo = (enum coll_algo)s->cfg.run.collective, .chips = chips,
                                .n = sp->tp,
                                .bytes = items * sp->hidden * s->cfg.model.activation_bits / 8.0 };
        t = mp_time_add(t, mp_time_mul(collective_time(&s->sys, &cs), 2LL * k * sp->draft_decoders));
    }
    return t;
}

int serve_spec_tokens(struct serve *s, struct serve_request *r)
{
    const struct config_inference *in = &s->cfg.inference;
    int k = in->spec_tokens;
    if (in->spec_draw == SPEC_DRAW_EXPECTED) {
        r->spec_carry += s->spec->E;
        int n = (int)floor(r->spec_carry);
        r->spec_carry -= n;
        return n;
    }
    int acc = 0;
    while (acc < k && gsl_rng_uniform(s->rng) < in->spec_acceptance) acc++;
    return acc + 1;
}
