/* config_recipe.c — training recipes: a software stack's defaults, set at
 * once by `training.recipe` for every key the scenario leaves out
 * (docs/recipes.md says what each assumes and why). A recipe is data: key
 * and value pairs, applied through the same key table as the INI file. */
#include <string.h>

#include "config.h"

/* The setup of the 2021–22 Megatron-LM papers (Narayanan et al. 2021,
 * Korthikanti et al. 2022): attention unfused (QKᵀ and AV batched GEMMs,
 * Megatron's fused scale-mask-softmax, dropout 0.1), fp32 main gradients
 * reduced in fp32, local DDP reducing after the backward, no distributed
 * optimizer, the backward TP all-reduce overlapping the weight-gradient
 * GEMMs (Korthikanti §6: "the baseline backward overlaps all-reduce with
 * weight-gradient GEMMs"). */
static const char *const megatron_2022[] = {
    "training.attention", "unfused",
    "training.dropout", "true",
    "training.grad_reduce", "fp32",
    "training.optimizer_state", "fp32",
    "training.dp_overlap", "false",
    "training.zero", "0",
    "training.overlap_param_gather", "false",
    "parallel.tp_overlap", "true",
    "parallel.tp_comm_overlap", "false",
    NULL,
};

/* Today's Megatron-Core (calibration.md §8 and its arguments): FlashAttention
 * (TE's fused attention), no dropout (today's LLM recipes train without it),
 * bf16 gradient reduction (--grad-reduce-in-bf16), the distributed optimizer
 * (ZeRO-1) with --overlap-grad-reduce and --overlap-param-gather, TP
 * communication overlap, which needs sequence parallelism. */
static const char *const megatron_core[] = {
    "training.attention", "flash",
    "training.dropout", "false",
    "training.grad_reduce", "bf16",
    "training.optimizer_state", "fp32",
    "training.dp_overlap", "true",
    "training.zero", "1",
    "training.overlap_param_gather", "true",
    "parallel.tp_overlap", "true",
    "parallel.tp_comm_overlap", "true",
    "parallel.sp", "true",
    NULL,
};

static const char *const none[] = { NULL };

static const char *const *const settings[] = {
    [RECIPE_NONE] = none,
    [RECIPE_MEGATRON_2022] = megatron_2022,
    [RECIPE_MEGATRON_CORE] = megatron_core,
};

static const char *const summaries[] = {
    [RECIPE_NONE] = "every key at its own default",
    [RECIPE_MEGATRON_2022] = "Megatron-LM as in the 2021-22 papers: unfused attention with dropout, "
                             "fp32 gradient reduce after the backward, no distributed optimizer",
    [RECIPE_MEGATRON_CORE] = "Megatron-Core today: flash attention, bf16 gradient reduce, overlapped "
                             "distributed optimizer, sequence parallelism with TP comm overlap",
};

const char *const *config_recipe_settings(int r)
{
    return r >= 0 && (size_t)r < sizeof settings / sizeof settings[0] ? settings[r] : none;
}

const char *config_recipe_summary(int r)
{
    return r >= 0 && (size_t)r < sizeof summaries / sizeof summaries[0] ? summaries[r] : "";
}

void config_recipe_apply(struct config *cfg)
{
    /* Keys a recipe may set go back to their own defaults first, so that
     * switching recipes (a sweep over training.recipe) leaves nothing of
     * the previous one behind. */
    for (size_t r = 0; r < sizeof settings / sizeof settings[0]; r++)
        for (const char *const *s = settings[r]; s[0]; s += 2) {
            const struct config_key *k = config_find_key(s[0]);
            if (k && !config_key_given(cfg, s[0]))
                (void)config_set_key_quiet(cfg, s[0], k->fallback, NULL);
        }
    const char *const *s = config_recipe_settings(cfg->training.recipe);
    for (; s[0]; s += 2) {
        if (config_key_given(cfg, s[0])) continue;
        /* Sequence parallelism and TSP exclude each other; a recipe never
         * turns the one on over the other. */
        if (!strcmp(s[0], "parallel.sp") && cfg->parallel.tsp) continue;
        int rc = config_set_key_quiet(cfg, s[0], s[1], NULL);
        (void)rc; /* the table's own values: tests/check_config.c parses every one */
    }
    if (cfg->parallel.tsp && cfg->parallel.sp && !config_key_given(cfg, "parallel.sp") &&
        cfg->training.recipe != RECIPE_NONE)
        cfg->parallel.sp = false;
}
