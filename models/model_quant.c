/* model_quant.c — how a checkpoint stores its weights: quantization_config
 * (fp8 block scales, MXFP4, GPTQ/AWQ integers, bitsandbytes) and torch_dtype,
 * as bits per parameter of each group; see model.h (struct model_quant).
 *
 * Bits per weight, scales included:
 *   fp8 with weight_block_size [a, b] (DeepSeek-V3, Kimi K2): 8 + 32/(a b),
 *     one fp32 scale per block (weight_scale_inv);
 *   mxfp4 (gpt-oss): 4 + 8/32 = 4.25, an E8M0 scale per 32 elements (OCP
 *     Microscaling spec v1.0);
 *   gptq / awq, `bits` b and group_size g: b + (16 + b)/g, an fp16 scale and a
 *     b-bit zero point per group;
 *   bitsandbytes 4-bit: 4 + 32/64 (an fp32 absmax per 64), 4 + 8/64 + 32/(64
 *     256) with double quantisation; 8-bit: 8.
 * Which groups carry those bits: the decoders' weight matrices (mixer, MLP,
 * experts), not the embedding, the LM head, the router or the norms — the
 * defaults of those methods — less any group quantization_config's
 * modules_to_not_convert names. Everything else is at torch_dtype. */
#include "model_impl.h"

#include <stdio.h>
#include <string.h>

/* modules_to_not_convert entries → the group they keep at full precision. */
static const struct { const char *part; enum param_group group; } module_groups[] = {
    {"self_attn", PG_MIXER}, {"attention", PG_MIXER}, {"mixer", PG_MIXER},
    {"router", PG_ROUTER}, {"experts", PG_EXPERTS},
    {"shared_expert", PG_MLP}, {"embed_tokens", PG_EMBEDDING}, {"lm_head", PG_HEAD},
};

static double dtype_bits(const char *dtype)
{
    static const struct { const char *name; double bits; } types[] = {
        {"float32", 32}, {"float16", 16}, {"bfloat16", 16}, {"float8_e4m3fn", 8},
        {"float8_e5m2", 8},
    };
    for (size_t i = 0; dtype && i < sizeof types / sizeof *types; i++)
        if (!strcmp(dtype, types[i].name)) return types[i].bits;
    return 16;
}

static double num(const struct json_doc *d, const cJSON *o, const char *key, double fallback)
{
    const cJSON *v = json_doc_peek(d, o, key);
    return v && cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

static bool truth(const struct json_doc *d, const cJSON *o, const char *key)
{
    const cJSON *v = json_doc_peek(d, o, key);
    return v && cJSON_IsTrue(v);
}

int quant_read(struct reader *r)
{
    struct model_quant *q = &r->m->quant;
    q->base_bits = dtype_bits(rd_field_str(r, F_DTYPE));
    q->bits = q->base_bits;
    const cJSON *qc = json_doc_get(&r->doc, r->root, "quantization_config");
    if (!qc || cJSON_IsNull(qc)) return MP_OK;
    const cJSON *save = r->obj;
    const char *prefix = r->prefix;
    r->obj = r->root;
    r->prefix = "";
    int rc = MP_OK;
    const cJSON *method = cJSON_IsObject(qc) ? json_doc_peek(&r->doc, qc, "quant_method") : NULL;
    if (!method || !cJSON_IsString(method)) {
        rc = rd_fail(r, "quantization_config", "expected an object with a quant_method string "
                     "(fp8, mxfp4, gptq, awq, bitsandbytes, ...)");
        goto out;
    }
    const char *name = method->valuestring;
    snprintf(q->name, sizeof q->name, "%s", name);
    q->quantized[PG_MIXER] = q->quantized[PG_MLP] = q->quantized[PG_EXPERTS] = true;
    if (!strcmp(name, "fp8") || !strcmp(name, "fbgemm_fp8")) {
        q->method = QUANT_FP8;
        q->bits = 8;
        const cJSON *bs = json_doc_peek(&r->doc, qc, "weight_block_size");
        if (bs && cJSON_GetArraySize(bs) == 2) {
            double a = cJSON_GetArrayItem(bs, 0)->valuedouble, b = cJSON_GetArrayItem(bs, 1)->valuedouble;
            if (a >= 1 && b >= 1) q->bits += 32 / (a * b);
        }
    } else if (!strcmp(name, "mxfp4")) {
        q->method = QUANT_MXFP4;
        q->bits = 4 + 8.0 / 32;
    } else if (!strcmp(name, "gptq") || !strcmp(name, "awq")) {
        double b = num(&r->doc, qc, "bits", 4), g = num(&r->doc, qc, "group_size", 128);
        if (!(b >= 2 && b <= 8)) {
            rc = rd_fail(r, "quantization_config", "bits: expected 2 to 8, got %g", b);
            goto out;
        }
        q->method = b <= 4 ? QUANT_INT4 : QUANT_INT8;
        q->bits = b + (g >= 1 ? (16 + b) / g : 0);
    } else if (!strcmp(name, "bitsandbytes")) {
        if (truth(&r->doc, qc, "load_in_4bit")) {
            q->method = QUANT_INT4;
            q->bits = truth(&r->doc, qc, "bnb_4bit_use_double_quant") ? 4 + 8.0 / 64 + 32.0 / (64 * 256)
                                                                     : 4 + 32.0 / 64;
        } else {
            q->method = QUANT_INT8;
            q->bits = 8;
        }
    } else {
        /* Known to transformers, not read here: counted at torch_dtype, and
         * `mpsim model` says so. */
        q->method = QUANT_OTHER;
        memset(q->quantized, 0, sizeof q->quantized);
        key_list_add(&r->m->unused, "quantization_config (quant_method %s: weights counted at "
                     "torch_dtype)", name);
        goto out;
    }
    const cJSON *skip = json_doc_peek(&r->doc, qc, "modules_to_not_convert"), *x;
    if (skip && cJSON_IsArray(skip))
        cJSON_ArrayForEach(x, skip) {
            if (!cJSON_IsString(x)) continue;
            for (size_t i = 0; i < sizeof module_groups / sizeof *module_groups; i++)
                if (strstr(x->valuestring, module_groups[i].part))
                    q->quantized[module_groups[i].group] = false;
        }
out:
    r->obj = save;
    r->prefix = prefix;
    return rc;
}

double model_shipped_weight_bytes(const struct model *m)
{
    double g[N_PARAM_GROUPS], bytes = 0;
    model_param_groups(m, g);
    for (int i = 0; i < N_PARAM_GROUPS; i++)
        bytes += g[i] * (m->quant.quantized[i] ? m->quant.bits : m->quant.base_bits) / 8;
    return bytes;
}
