/* import_megatron.c — a Megatron-LM command line (pretrain_gpt.py's flags,
 * megatron/training/arguments.py; defaults in shared/reference/
 * calibration.md §8) as a scenario; see import.h. The flags are a table:
 * what each means to mpsim, or why it changes nothing mpsim models. */
#include "import_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/units.h"

enum act {
    A_TP, A_PP, A_CP, A_EP, A_ETP, A_VPP, A_LPVS, A_MB, A_GB, A_SEQ, A_SP, A_RC_GRAN, A_RC_METHOD,
    A_RC_NUM, A_RC_ACT, A_DIST_OPT, A_OVL_GRAD, A_OVL_PARAM, A_TP_OVL, A_BF16, A_FP16, A_FP8,
    A_GRAD_BF16, A_BUCKET, A_LAYERS, A_HIDDEN, A_FFN, A_HEADS, A_GQA, A_GROUPS, A_MAXPOS, A_VOCAB,
    A_SWIGLU, A_UNTIE, A_EXPERTS, A_TOPK, A_MOE_FFN, A_TOKENIZER, A_DS_CONFIG, A_NPROC, A_NNODES,
    A_SEED, A_KNOWN, A_IGNORE, N_ACTS
};

struct flag {
    const char *name;
    bool value;          /* takes a value */
    enum act act;
    const char *why;     /* A_IGNORE / A_KNOWN: why it changes nothing mpsim models */
};

#define NO_TIME "does not change the time of a step"
#define NO_TIME_PL "do not change the time of a step"
static const struct flag flags[] = {
    { "--tensor-model-parallel-size", true, A_TP, NULL },
    { "--pipeline-model-parallel-size", true, A_PP, NULL },
    { "--context-parallel-size", true, A_CP, NULL },
    { "--expert-model-parallel-size", true, A_EP, NULL },
    { "--expert-tensor-parallel-size", true, A_ETP, NULL },
    { "--virtual-pipeline-model-parallel-size", true, A_VPP, NULL },
    { "--num-virtual-stages-per-pipeline-rank", true, A_VPP, NULL },
    { "--num-layers-per-virtual-pipeline-stage", true, A_LPVS, NULL },
    { "--micro-batch-size", true, A_MB, NULL },
    { "--global-batch-size", true, A_GB, NULL },
    { "--seq-length", true, A_SEQ, NULL },
    { "--sequence-parallel", false, A_SP, NULL },
    { "--recompute-granularity", true, A_RC_GRAN, NULL },
    { "--recompute-method", true, A_RC_METHOD, NULL },
    { "--recompute-num-layers", true, A_RC_NUM, NULL },
    { "--recompute-activations", false, A_RC_ACT, NULL },
    { "--checkpoint-activations", false, A_RC_ACT, NULL },
    { "--use-distributed-optimizer", false, A_DIST_OPT, NULL },
    { "--overlap-grad-reduce", false, A_OVL_GRAD, NULL },
    { "--overlap-param-gather", false, A_OVL_PARAM, NULL },
    { "--tp-comm-overlap", false, A_TP_OVL, NULL },
    { "--bf16", false, A_BF16, NULL },
    { "--fp16", false, A_FP16, NULL },
    { "--fp8-format", true, A_FP8, NULL },
    { "--grad-reduce-in-bf16", false, A_GRAD_BF16, NULL },
    { "--ddp-bucket-size", true, A_BUCKET, NULL },
    { "--num-layers", true, A_LAYERS, NULL },
    { "--hidden-size", true, A_HIDDEN, NULL },
    { "--ffn-hidden-size", true, A_FFN, NULL },
    { "--num-attention-heads", true, A_HEADS, NULL },
    { "--group-query-attention", false, A_GQA, NULL },
    { "--num-query-groups", true, A_GROUPS, NULL },
    { "--max-position-embeddings", true, A_MAXPOS, NULL },
    { "--vocab-size", true, A_VOCAB, NULL },
    { "--swiglu", false, A_SWIGLU, NULL },
    { "--untie-embeddings-and-output-weights", false, A_UNTIE, NULL },
    { "--num-experts", true, A_EXPERTS, NULL },
    { "--moe-router-topk", true, A_TOPK, NULL },
    { "--moe-ffn-hidden-size", true, A_MOE_FFN, NULL },
    { "--tokenizer-type", true, A_TOKENIZER, NULL },
    { "--deepspeed_config", true, A_DS_CONFIG, NULL },
    { "--deepspeed-config", true, A_DS_CONFIG, NULL },
    /* torchrun's, before the script */
    { "--nproc_per_node", true, A_NPROC, NULL },
    { "--nproc-per-node", true, A_NPROC, NULL },
    { "--nnodes", true, A_NNODES, NULL },
    { "--seed", true, A_SEED, NULL },
    /* Read, and mpsim already does what they ask. */
    { "--use-flash-attn", false, A_KNOWN, "mpsim prices attention as a fused (flash) kernel" },
    { "--use-mcore-models", false, A_KNOWN, "the Megatron-Core model: what mpsim models" },
    { "--transformer-impl", true, A_KNOWN, "the kernels' implementation; mpsim prices layers, not libraries" },
    { "--accumulate-allreduce-grads-in-fp32", false, A_KNOWN, "mpsim reduces fp32 gradients (4 B per parameter)" },
    { "--normalization", true, A_KNOWN, "the norm's cost is in mpsim's memory-bound kernels either way" },
    { "--position-embedding-type", true, A_KNOWN, "positions cost nothing mpsim counts apart" },
    { "--use-rotary-position-embeddings", false, A_KNOWN, "positions cost nothing mpsim counts apart" },
    { "--disable-bias-linear", false, A_KNOWN, "biases are too small to change the step" },
    { "--no-masked-softmax-fusion", false, A_KNOWN, "fusion inside the attention kernel" },
    { "--deepspeed", false, A_KNOWN, "DeepSpeed's settings come from --deepspeed_config" },
    { "--distributed-backend", true, A_KNOWN, "NCCL is what mpsim's collectives model" },
    { "--make-vocab-size-divisible-by", true, A_KNOWN, "the padding is taken as Megatron's default, 128" },
    /* Change nothing about the time or memory of one step. */
    { "--train-iters", true, A_IGNORE, "the number of steps: mpsim simulates one" },
    { "--train-samples", true, A_IGNORE, "the number of steps: mpsim simulates one" },
    { "--lr", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--min-lr", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-decay-style", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-decay-iters", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-decay-samples", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-warmup-iters", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-warmup-samples", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--lr-warmup-fraction", true, A_IGNORE, "the learning rate " NO_TIME },
    { "--weight-decay", true, A_IGNORE, "optimizer hyper-parameters " NO_TIME_PL },
    { "--clip-grad", true, A_IGNORE, "clipping's norm is part of the optimizer step mpsim prices" },
    { "--adam-beta1", true, A_IGNORE, "optimizer hyper-parameters " NO_TIME_PL },
    { "--adam-beta2", true, A_IGNORE, "optimizer hyper-parameters " NO_TIME_PL },
    { "--adam-eps", true, A_IGNORE, "optimizer hyper-parameters " NO_TIME_PL },
    { "--init-method-std", true, A_IGNORE, "initialisation " NO_TIME },
    { "--attention-dropout", true, A_IGNORE, "dropout rates " NO_TIME_PL },
    { "--hidden-dropout", true, A_IGNORE, "dropout rates " NO_TIME_PL },
    { "--data-path", true, A_IGNORE, "data files " NO_TIME_PL },
    { "--vocab-file", true, A_IGNORE, "tokenizer files " NO_TIME_PL },
    { "--merge-file", true, A_IGNORE, "tokenizer files " NO_TIME_PL },
    { "--tokenizer-model", true, A_IGNORE, "tokenizer files " NO_TIME_PL },
    { "--split", true, A_IGNORE, "the data split " NO_TIME },
    { "--data-impl", true, A_IGNORE, "the data format " NO_TIME },
    { "--num-workers", true, A_IGNORE, "data loading is assumed hidden" },
    { "--save", true, A_IGNORE, "checkpoints are outside the step" },
    { "--load", true, A_IGNORE, "checkpoints are outside the step" },
    { "--save-interval", true, A_IGNORE, "checkpoints are outside the step" },
    { "--log-interval", true, A_IGNORE, "logging " NO_TIME },
    { "--eval-interval", true, A_IGNORE, "evaluation is outside the training step" },
    { "--eval-iters", true, A_IGNORE, "evaluation is outside the training step" },
    { "--tensorboard-dir", true, A_IGNORE, "logging " NO_TIME },
    { "--wandb-project", true, A_IGNORE, "logging " NO_TIME },
    { "--exit-duration-in-mins", true, A_IGNORE, "the job's length " NO_TIME },
    { "--rampup-batch-size", true, A_IGNORE, "batch ramp-up: mpsim takes the full batch" },
    { NULL, false, A_IGNORE, NULL },
};

static const struct flag *find_flag(const char *name)
{
    for (const struct flag *f = flags; f->name; f++)
        if (!strcmp(f->name, name)) return f;
    return NULL;
}

static const char *closest_flag(const char *name)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX;
    for (const struct flag *f = flags; f->name; f++) {
        size_t d = mp_edit_distance(name, f->name);
        if (d < bd) bd = d, best = f->name;
    }
    return bd <= 3 ? best : NULL;
}

/* What the flags said, before it becomes keys (some depend on others). */
struct mega {
    int tp, pp, cp, ep, vpp, lpvs, mb, gb, seq, nproc, nnodes, bucket, rc_num;
    bool sp, dist_opt, ovl_grad, ovl_param, tp_ovl, bf16, fp16, rc_act, grad_bf16;
    char rc_gran[32], rc_method[32], fp8[32], ds_config[1024];
    char from[N_ACTS][96]; /* the flag and value as written, by act */
};

static int bad_value(struct mp_error *err, const char *flag, const char *v, const char *want)
{
    return mp_fail(err, MP_ERR_INPUT, "import megatron: %s '%s': expected %s", flag, v, want);
}

static int parse_int(const char *flag, const char *v, long long lo, long long hi, int *out,
                     struct mp_error *err)
{
    long long n;
    if (units_parse_int(v, lo, hi, &n)) {
        char want[96];
        snprintf(want, sizeof want, "a whole number from %lld to %lld", lo, hi);
        return bad_value(err, flag, v, want);
    }
    *out = (int)n;
    return MP_OK;
}

static int read_flag(struct mega *m, struct imp *im, const struct flag *f, const char *v,
                     struct mp_error *err)
{
    struct imp_shape *sh = &im->shape;
    const char *n = f->name;
    int rc = MP_OK;
    if (v) snprintf(m->from[f->act], sizeof m->from[0], "%s %s", n, v);
    else snprintf(m->from[f->act], sizeof m->from[0], "%s", n);
    if (f->act >= A_LAYERS && f->act <= A_TOKENIZER) {
        /* The model's shape: named in model.config's comment. */
        size_t len = strlen(im->shape_from);
        snprintf(im->shape_from + len, sizeof im->shape_from - len, "%s%s", len ? ", " : "",
                 m->from[f->act]);
    }
    switch (f->act) {
    case A_TP: rc = parse_int(n, v, 1, 1 << 20, &m->tp, err); break;
    case A_PP: rc = parse_int(n, v, 1, 1 << 20, &m->pp, err); break;
    case A_CP: rc = parse_int(n, v, 1, 1 << 20, &m->cp, err); break;
    case A_EP: rc = parse_int(n, v, 1, 1 << 20, &m->ep, err); break;
    case A_ETP: {
        int etp;
        rc = parse_int(n, v, 1, 1 << 20, &etp, err);
        if (!rc && etp > 1) imp_warn(im, "%s %s: not modelled yet (experts' own TP degree); "
                                         "experts run with the EP group as mpsim lays it out", n, v);
        break;
    }
    case A_VPP: rc = parse_int(n, v, 1, 1 << 20, &m->vpp, err); break;
    case A_LPVS: rc = parse_int(n, v, 1, 1 << 20, &m->lpvs, err); break;
    case A_MB: rc = parse_int(n, v, 1, INT_MAX, &m->mb, err); break;
    case A_GB: rc = parse_int(n, v, 1, INT_MAX, &m->gb, err); break;
    case A_SEQ: rc = parse_int(n, v, 1, INT_MAX, &m->seq, err); break;
    case A_SP: m->sp = true; break;
    case A_RC_GRAN:
        if (strcmp(v, "full") && strcmp(v, "selective")) return bad_value(err, n, v, "full or selective");
        snprintf(m->rc_gran, sizeof m->rc_gran, "%s", v);
        break;
    case A_RC_METHOD:
        if (strcmp(v, "uniform") && strcmp(v, "block")) return bad_value(err, n, v, "uniform or block");
        snprintf(m->rc_method, sizeof m->rc_method, "%s", v);
        break;
    case A_RC_NUM: rc = parse_int(n, v, 1, INT_MAX, &m->rc_num, err); break;
    case A_RC_ACT: m->rc_act = true; break;
    case A_DIST_OPT: m->dist_opt = true; break;
    case A_OVL_GRAD: m->ovl_grad = true; break;
    case A_OVL_PARAM: m->ovl_param = true; break;
    case A_TP_OVL: m->tp_ovl = true; break;
    case A_BF16: m->bf16 = true; break;
    case A_FP16: m->fp16 = true; break;
    case A_FP8:
        if (strcmp(v, "e4m3") && strcmp(v, "hybrid")) return bad_value(err, n, v, "e4m3 or hybrid");
        snprintf(m->fp8, sizeof m->fp8, "%s", v);
        break;
    case A_GRAD_BF16: m->grad_bf16 = true; break;
    case A_BUCKET: rc = parse_int(n, v, 1, INT_MAX, &m->bucket, err); break;
    case A_LAYERS: rc = parse_int(n, v, 1, 100000, &sh->layers, err); break;
    case A_HIDDEN: rc = parse_int(n, v, 1, 1 << 26, &sh->hidden, err); break;
    case A_FFN: rc = parse_int(n, v, 1, 1 << 28, &sh->ffn, err); break;
    case A_HEADS: rc = parse_int(n, v, 1, 1 << 20, &sh->heads, err); break;
    case A_GQA: sh->gqa = true; break;
    case A_GROUPS: rc = parse_int(n, v, 1, 1 << 20, &sh->kv_groups, err); break;
    case A_MAXPOS: rc = parse_int(n, v, 1, INT_MAX, &sh->max_pos, err); break;
    case A_VOCAB: rc = parse_int(n, v, 1, 1 << 26, &sh->vocab, err); break;
    case A_SWIGLU: sh->swiglu = true; break;
    case A_UNTIE: sh->untied = true; break;
    case A_EXPERTS: rc = parse_int(n, v, 1, 1 << 20, &sh->experts, err); break;
    case A_TOPK: rc = parse_int(n, v, 1, 1 << 20, &sh->topk, err); break;
    case A_MOE_FFN: rc = parse_int(n, v, 1, 1 << 28, &sh->moe_ffn, err); break;
    case A_TOKENIZER: snprintf(sh->tokenizer, sizeof sh->tokenizer, "%s", v); break;
    case A_DS_CONFIG: snprintf(m->ds_config, sizeof m->ds_config, "%s", v); break;
    case A_NPROC: rc = parse_int(n, v, 1, 1 << 20, &m->nproc, err); break;
    case A_NNODES: rc = parse_int(n, v, 1, 1 << 20, &m->nnodes, err); break;
    case A_SEED: {
        int seed;
        rc = parse_int(n, v, 0, INT_MAX, &seed, err);
        if (!rc) imp_warn(im, "%s %s ignored: Megatron's seed initialises the weights; run.seed "
                              "draws mpsim's expert routing", n, v);
        break;
    }
    case A_KNOWN: break;
    case A_IGNORE: imp_warn(im, "%s%s%s ignored: %s", n, v ? " " : "", v ? v : "", f->why); break;
    case N_ACTS: break;
    }
    return rc;
}

static const char *from_or(const struct mega *m, enum act a, const char *otherwise)
{
    return m->from[a][0] ? m->from[a] : otherwise;
}

/* Keys from what the flags said, in the order they depend on each other. */
static int apply(struct mega *m, struct imp *im, struct mp_error *err)
{
    char v[64], from[400];
    int rc;
#define SET(key, val, frm) do { if ((rc = imp_set(im, key, val, frm, err))) return rc; } while (0)
    int tp = m->tp ? m->tp : 1, pp = m->pp ? m->pp : 1, cp = m->cp ? m->cp : 1;
    snprintf(v, sizeof v, "%d", tp);
    SET("parallel.tp", v, from_or(m, A_TP, "no --tensor-model-parallel-size: 1"));
    snprintf(v, sizeof v, "%d", pp);
    SET("parallel.pp", v, from_or(m, A_PP, "no --pipeline-model-parallel-size: 1"));
    if (cp > 1) {
        snprintf(v, sizeof v, "%d", cp);
        SET("parallel.cp", v, m->from[A_CP]);
    }
    if (m->ep > 1) {
        snprintf(v, sizeof v, "%d", m->ep);
        SET("parallel.ep", v, m->from[A_EP]);
    }
    if (m->seq) {
        snprintf(v, sizeof v, "%d", m->seq);
        SET("model.seq_len", v, m->from[A_SEQ]);
    }
    /* Precision: Megatron trains in fp32 unless told otherwise. */
    if (m->bf16 || m->fp16) {
        SET("model.weight_bits", "16", m->from[m->bf16 ? A_BF16 : A_FP16]);
        SET("model.activation_bits", "16", m->from[m->bf16 ? A_BF16 : A_FP16]);
    } else {
        SET("model.weight_bits", "32", "no --bf16 or --fp16: Megatron's fp32 parameters");
        SET("model.activation_bits", "32", "no --bf16 or --fp16: fp32 activations");
    }
    if (m->fp8[0]) SET("model.compute_bits", "8", m->from[A_FP8]);
    if (m->grad_bf16)
        imp_warn(im, "--grad-reduce-in-bf16: not modelled yet (mpsim reduces fp32 gradients, "
                     "4 B per parameter)");
    /* The model, now that tp (vocabulary padding) and seq_len are set. */
    if ((rc = imp_model(im, err))) return rc;
    /* Virtual stages. */
    int layers = im->shape.layers, vpp = m->vpp;
    if (m->lpvs) {
        if (!layers || layers % (pp * m->lpvs))
            return mp_fail(err, MP_ERR_INPUT, "import megatron: %s: %d layers over pp %d are not "
                           "whole virtual stages of %d layers", m->from[A_LPVS], layers, pp, m->lpvs);
        vpp = layers / (pp * m->lpvs);
    }
    if (vpp > 1) {
        snprintf(v, sizeof v, "%d", vpp);
        snprintf(from, sizeof from, "%s", m->lpvs ? m->from[A_LPVS] : m->from[A_VPP]);
        SET("parallel.vpp", v, from);
        SET("training.schedule", "interleaved", from);
    } else {
        SET("training.schedule", "1f1b", "Megatron's pipeline schedule without virtual stages");
    }
    /* Data parallelism from the world size. */
    int world = m->nproc && m->nnodes ? m->nproc * m->nnodes : m->nproc && !m->nnodes ? m->nproc : 0;
    if (!world) world = im->opt->chips;
    int dp = 1;
    if (world) {
        long long rep = (long long)tp * pp * cp;
        if (world % rep)
            return mp_fail(err, MP_ERR_INPUT, "import megatron: %d chips are not divisible by "
                           "tp %d × pp %d × cp %d", world, tp, pp, cp);
        dp = (int)(world / rep);
        if (m->nproc)
            snprintf(from, sizeof from, "world size %d (%s%s%s) ÷ (tp × pp%s)", world,
                     m->from[A_NNODES], m->from[A_NNODES][0] ? " × " : "", m->from[A_NPROC],
                     cp > 1 ? " × cp" : "");
        else
            snprintf(from, sizeof from, "--chips %d ÷ (tp × pp%s)", world, cp > 1 ? " × cp" : "");
    } else {
        snprintf(from, sizeof from, "the world size is unknown (no torchrun --nnodes/"
                 "--nproc_per_node, no --chips): 1");
        imp_warn(im, "the world size is unknown: parallel.dp = 1 (give --chips N)");
    }
    snprintf(v, sizeof v, "%d", dp);
    SET("parallel.dp", v, from);
    int mb = m->mb ? m->mb : 1;
    snprintf(v, sizeof v, "%d", mb);
    SET("training.micro_batch", v, from_or(m, A_MB, "no --micro-batch-size: 1"));
    snprintf(v, sizeof v, "%d", m->gb ? m->gb : mb * dp);
    SET("training.global_batch", v, from_or(m, A_GB, "no --global-batch-size: micro batch × dp"));
    if (m->sp) SET("parallel.sp", "true", m->from[A_SP]);
    if (m->tp_ovl) {
        /* Megatron-Core's userbuffer overlap: the backward's collectives and
         * the SP forward's all-gather / reduce-scatter under the GEMMs. */
        SET("parallel.tp_overlap", "true", m->from[A_TP_OVL]);
        if (m->sp) SET("parallel.tp_comm_overlap", "true", m->from[A_TP_OVL]);
    }
    /* Recompute. */
    if (m->rc_gran[0] || m->rc_act) {
        const char *g = m->rc_gran[0] ? m->rc_gran : "selective";
        snprintf(from, sizeof from, "%s", m->rc_gran[0] ? m->from[A_RC_GRAN] : m->from[A_RC_ACT]);
        if (m->rc_method[0]) {
            size_t len = strlen(from);
            snprintf(from + len, sizeof from - len, ", %s", m->from[A_RC_METHOD]);
        }
        SET("training.recompute", g, from);
        if (!strcmp(g, "full") && !strcmp(m->rc_method, "block") && m->rc_num &&
            (!layers || m->rc_num < layers / pp))
            imp_warn(im, "%s: not modelled yet (mpsim's full recompute covers every layer of a "
                         "stage, not the first %d)", m->from[A_RC_NUM], m->rc_num);
        else if (!strcmp(g, "full") && m->rc_num > 1)
            imp_warn(im, "%s: not modelled yet (mpsim checkpoints each layer's input, not groups "
                         "of %d layers)", m->from[A_RC_NUM], m->rc_num);
    } else {
        SET("training.recompute", "none", "no --recompute-granularity: none");
    }
    /* Data-parallel gradient sync and the optimizer. */
    SET("training.zero", m->dist_opt ? "1" : "0",
        m->dist_opt ? m->from[A_DIST_OPT] : "no --use-distributed-optimizer: optimizer state "
                                            "on every replica");
    SET("training.dp_overlap", m->ovl_grad ? "true" : "false",
        m->ovl_grad ? m->from[A_OVL_GRAD] : "no --overlap-grad-reduce: Megatron syncs the "
                                            "gradients after the backward");
    /* Megatron's bucket: --ddp-bucket-size parameters, default
     * max(40,000,000, 1,000,000 × dp) (calibration.md §8), of 4-byte
     * gradients as mpsim counts them. */
    double params = m->bucket ? m->bucket : (dp * 1e6 > 4e7 ? dp * 1e6 : 4e7);
    snprintf(v, sizeof v, "%.0fB", params * 4);
    snprintf(from, sizeof from, "%s: %.0f parameters × 4 B",
             m->bucket ? m->from[A_BUCKET] : "Megatron's default bucket, max(40M, 1M × dp)", params);
    SET("training.dp_bucket", v, from);
    if (m->ovl_param) SET("training.overlap_param_gather", "true", m->from[A_OVL_PARAM]);
#undef SET
    return MP_OK;
}

int import_megatron(char *const *words, int n, const struct import_options *opt, FILE *out,
                    struct mp_error *err)
{
    struct imp im;
    imp_init(&im, "import megatron", opt);
    struct mega m;
    memset(&m, 0, sizeof m);
    int rc = MP_OK;
    for (int i = 0; i < n && !rc; i++) {
        const char *w = words[i];
        if (strncmp(w, "--", 2) != 0) continue; /* the launcher, the script, python */
        char name[128];
        const char *eq = strchr(w, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - w : (long)strlen(w)), w);
        const struct flag *f = find_flag(name);
        const char *v = eq ? eq + 1 : NULL;
        if (!f) {
            /* A flag mpsim's table does not know: say so, and skip its value. */
            if (!v && i + 1 < n && strncmp(words[i + 1], "--", 2) != 0) v = words[++i];
            const char *near = closest_flag(name);
            imp_warn(&im, "%s%s%s ignored: not a flag mpsim knows%s%s%s", name, v ? " " : "",
                     v ? v : "", near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
            continue;
        }
        if (f->value && !v) {
            if (i + 1 >= n || !strncmp(words[i + 1], "--", 2)) {
                rc = mp_fail(err, MP_ERR_INPUT, "import megatron: %s needs a value", name);
                break;
            }
            v = words[++i];
        } else if (!f->value && v) {
            rc = mp_fail(err, MP_ERR_INPUT, "import megatron: %s takes no value (got '%s')", name, v);
            break;
        }
        rc = read_flag(&m, &im, f, v, err);
    }
    if (!rc) rc = apply(&m, &im, err);
    /* Megatron-DeepSpeed: the JSON adds ZeRO, offload and its batch sizes. */
    if (!rc && m.ds_config[0]) rc = imp_read_deepspeed(&im, m.ds_config, false, err);
    if (!rc) {
        /* The command, wrapped, as the file's first comment. */
        size_t cap = 256;
        for (int i = 0; i < n; i++) cap += strlen(words[i]) + 4;
        char *hdr = mp_xmalloc(cap * 2);
        size_t len = (size_t)snprintf(hdr, cap * 2, "; imported by `mpsim import megatron` "
                                      "from:\n;  ");
        size_t col = 3;
        for (int i = 0; i < n; i++) {
            size_t wl = strlen(words[i]);
            if (col + wl > 76 && col > 3) {
                len += (size_t)snprintf(hdr + len, cap * 2 - len, "\n;  ");
                col = 3;
            }
            len += (size_t)snprintf(hdr + len, cap * 2 - len, " %s", words[i]);
            col += wl + 1;
        }
        snprintf(hdr + len, cap * 2 - len, "\n; each key below says which flag it came from\n");
        rc = imp_finish(&im, hdr, out, err);
        free(hdr);
    }
    imp_release(&im);
    return rc;
}
