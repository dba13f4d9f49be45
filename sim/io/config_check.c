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
    double chips = (double)cfg->parallel.tp * cfg->parallel.pp * cfg->parallel.dp;
    if (chips > CHIPS_MAX)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.tp × parallel.pp × parallel.dp = %d × %d × %d = %.0f chips: "
                       "expected at most %.0f", prefix, cfg->parallel.tp, cfg->parallel.pp,
                       cfg->parallel.dp, chips, CHIPS_MAX);
    double passes = (double)cfg->parallel.pp * cfg->parallel.vpp *
                    (double)(cfg->training.global_batch / per_step);
    if (passes > STAGE_PASSES_MAX)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sparallel.pp × parallel.vpp × microbatches = %d × %d × %lld = %.0f "
                       "stage passes: expected at most %.0f (lower training.global_batch or "
                       "raise training.micro_batch)", prefix, cfg->parallel.pp, cfg->parallel.vpp,
                       cfg->training.global_batch / per_step, passes, STAGE_PASSES_MAX);
    /* EP draws its ranks from the tp × dp chips of a stage (Megatron's
     * expert parallelism inside data parallelism, experts not TP-split). */
    if (cfg->parallel.ep > 1 &&
        ((long long)cfg->parallel.tp * cfg->parallel.dp) % cfg->parallel.ep != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%skey parallel.ep = %d: expected a divisor of parallel.tp × parallel.dp "
                       "= %d × %d (EP ranks are drawn from a stage's TP and DP ranks)", prefix,
                       cfg->parallel.ep, cfg->parallel.tp, cfg->parallel.dp);
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

int config_microbatches(const struct config *cfg)
{
    long long per_step = (long long)cfg->training.micro_batch * cfg->parallel.dp;
    assert(per_step > 0);
    return (int)(cfg->training.global_batch / per_step);
}
