/* config_check.c — the checks that span several keys, once a scenario is
 * complete (config_check in config.h): divisibility of the batch, products
 * of degrees within what the engine indexes, combinations that contradict
 * each other. Each message names the keys and the numbers. */
#include "config.h"

#include <assert.h>
#include <stdio.h>

#include "units.h"

/* Bounds on what one run may ask for. */
#define CHIPS_MAX ((double)CONFIG_CHIPS_MAX)
#define STAGE_PASSES_MAX ((double)CONFIG_STAGE_PASSES_MAX)

/* Context parallelism and uneven stages (branch context, issue 17): what
 * can be told before the model and the system are read. The model's checks
 * (heads over the Ulysses degree, stage_layers summing to its layers) are
 * in sim/strategy/context.c and sim/train/sim.c. */
static int check_context(const struct config *cfg, const char *prefix, struct mp_error *err)
{
    const struct config_int_list *sl = &cfg->parallel.stage_layers;
    if (sl->n != 0 && sl->n != cfg->parallel.pp)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey parallel.stage_layers has %d entries for parallel.pp = %d: expected "
                       "one per pipeline stage (or 'even')", prefix, sl->n, cfg->parallel.pp);
    int cp = cfg->parallel.cp, kind = cfg->parallel.cp_kind, u = cfg->parallel.cp_ulysses;
    if (u != 0 && kind != CP_HYBRID)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey parallel.cp_ulysses = %d: applies to parallel.cp_kind = hybrid only "
                       "(ring uses no all-to-all; ulysses uses all %d CP ranks)", prefix, u, cp);
    if (kind == CP_HYBRID && u != 0 && cp % u != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey parallel.cp_ulysses = %d: expected a divisor of parallel.cp = %d "
                       "(hybrid CP runs cp / cp_ulysses rings of all-to-all groups)", prefix, u, cp);
    if (cp <= 1) return MP_OK;
    if (cfg->parallel.tsp)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.tsp = true and parallel.cp = %d: expected one of them (TSP "
                       "already splits the sequence over the parallel.tp ranks)", prefix, cp);
    /* Ring attention balances the causal mask by cutting the sequence into
     * 2·cp chunks (rank i holds chunks i and 2cp − 1 − i); Ulysses only
     * needs cp equal shares. */
    long long s = cfg->model.seq_len;
    int parts = kind == CP_ULYSSES ? cp : 2 * cp;
    if (s % parts != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%smodel.seq_len = %lld is not a multiple of %s = %d: parallel.cp = %d "
                       "%s", prefix, s, kind == CP_ULYSSES ? "parallel.cp" : "2 × parallel.cp",
                       parts, cp, kind == CP_ULYSSES
                           ? "ranks each hold an equal share of the sequence"
                           : "ranks hold two of 2·cp equal chunks each (the causal load "
                             "balance of ring attention)");
    return MP_OK;
}

int config_check(const struct config *cfg, struct mp_error *err)
{
    int rc = config_check_keys(cfg, err);
    if (rc) return rc;
    char prefix[CONFIG_STR + 8] = "";
    if (cfg->path[0]) snprintf(prefix, sizeof prefix, "%s: ", cfg->path);
    if (!(cfg->training.dp_bucket >= 1e3))
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey training.dp_bucket = %g bytes: expected a size of at least 1KB",
                       prefix, cfg->training.dp_bucket);
    if (cfg->model.compute_bits != 16 && cfg->model.compute_bits != 8)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey model.compute_bits = %d: expected 16 (bf16 GEMMs) or 8 (FP8 GEMMs)",
                       prefix, cfg->model.compute_bits);
    if (cfg->parallel.tsp && cfg->parallel.sp)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.tsp = true and parallel.sp = true: expected one of them "
                       "(TSP already splits the sequence over the parallel.tp ranks)", prefix);
    long long per_step = (long long)cfg->training.micro_batch * cfg->parallel.dp;
    if (cfg->training.global_batch % per_step != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%straining.global_batch = %d is not a multiple of "
                       "training.micro_batch × parallel.dp = %d × %d = %lld",
                       prefix, cfg->training.global_batch, cfg->training.micro_batch,
                       cfg->parallel.dp, per_step);
    /* Products of degrees, in double since each may be 10^6: the chip count
     * must fit the int the system and the engine index chips with, and the
     * work (a few ops per stage pass: pp × vpp × microbatches of them) must
     * fit memory: 2^23 passes take about 4 GB and 10 s. */
    double chips = (double)cfg->parallel.tp * cfg->parallel.cp * cfg->parallel.pp *
                   cfg->parallel.dp;
    if (chips > CHIPS_MAX)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.tp × parallel.cp × parallel.pp × parallel.dp = %d × %d × %d × "
                       "%d = %.0f chips: expected at most %.0f", prefix, cfg->parallel.tp,
                       cfg->parallel.cp, cfg->parallel.pp, cfg->parallel.dp, chips, CHIPS_MAX);
    if ((rc = check_context(cfg, prefix, err))) return rc;
    double passes = (double)cfg->parallel.pp * cfg->parallel.vpp *
                    (double)(cfg->training.global_batch / per_step);
    if (passes > STAGE_PASSES_MAX)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.pp × parallel.vpp × microbatches = %d × %d × %lld = %.0f "
                       "stage passes: expected at most %.0f (lower training.global_batch or "
                       "raise training.micro_batch)", prefix, cfg->parallel.pp, cfg->parallel.vpp,
                       cfg->training.global_batch / per_step, passes, STAGE_PASSES_MAX);
    /* EP draws its ranks from the tp × cp × dp chips of a stage (Megatron's
     * expert parallelism inside data parallelism, experts not TP-split;
     * with CP the expert layers see the CP ranks' tokens as more data).
     * Serving has its own rule (ep a multiple of tp: data-parallel attention
     * ranks, sim/serve/serve_layout.c). */
    if (cfg->parallel.ep > 1 && !cfg->inference.present &&
        ((long long)cfg->parallel.tp * cfg->parallel.cp * cfg->parallel.dp) % cfg->parallel.ep != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey parallel.ep = %d: expected a divisor of parallel.tp × parallel.cp × "
                       "parallel.dp = %d × %d × %d (EP ranks are drawn from a stage's TP, CP and "
                       "DP ranks)", prefix, cfg->parallel.ep, cfg->parallel.tp, cfg->parallel.cp,
                       cfg->parallel.dp);
    if (cfg->experts.dispatch_bits != 0 && cfg->experts.dispatch_bits < 4)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey experts.dispatch_bits = %d: expected 0 (= model.activation_bits) "
                       "or 4 to 32", prefix, cfg->experts.dispatch_bits);
    if (cfg->model.kind == MODEL_SYNTHETIC &&
        cfg->synthetic.activation_w > cfg->synthetic.activation) {
        char w[64], a[64];
        units_format_size(cfg->synthetic.activation_w, w, sizeof w);
        units_format_size(cfg->synthetic.activation, a, sizeof a);
        return mp_fail(err, MP_ERR_INPUT,
                       "%ssynthetic.activation_w = %s exceeds synthetic.activation = %s "
                       "(it is the part of the activation only W needs)",
                       prefix, w, a);
    }
    return MP_OK;
}

long long config_chips(const struct config *cfg)
{
    return (long long)cfg->parallel.tp * cfg->parallel.cp * cfg->parallel.pp * cfg->parallel.dp;
}

int config_microbatches(const struct config *cfg)
{
    long long per_step = (long long)cfg->training.micro_batch * cfg->parallel.dp;
    assert(per_step > 0);
    return (int)(cfg->training.global_batch / per_step);
}
