/* import_deepspeed.c — a DeepSpeed ds_config.json as scenario keys (alone,
 * or under Megatron-DeepSpeed's --deepspeed_config); see import.h.
 *
 * DeepSpeed's batch triple: train_batch_size = micro batch per GPU ×
 * gradient_accumulation_steps × data-parallel size; any two give the third
 * (DeepSpeed's own rule, deepspeed/runtime/config.py). Every other key the
 * file has is read by the table below or named in a warning. */
#include "import_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

static int type_fail(struct mp_error *err, const char *path, const char *key, const char *want,
                     const cJSON *v)
{
    const char *got = cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "a boolean"
                      : cJSON_IsNull(v) ? "null" : cJSON_IsArray(v) ? "an array"
                      : cJSON_IsObject(v) ? "an object" : "a number";
    return mp_fail(err, MP_ERR_INPUT, "%s: key %s: expected %s, got %s", path, key, want, got);
}

/* A whole number in [lo, hi]; with `auto_ok`, "auto" (the HF Trainer fills
 * it in) is *n = -1. */
static int whole(const char *path, const char *key, const cJSON *v, double lo, double hi,
                 bool auto_ok, int *n, struct mp_error *err)
{
    if (auto_ok && cJSON_IsString(v) && !strcmp(v->valuestring, "auto")) {
        *n = -1;
        return MP_OK;
    }
    char want[96];
    snprintf(want, sizeof want, "a whole number from %.0f to %.0f%s", lo, hi,
             auto_ok ? " (or \"auto\")" : "");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return type_fail(err, path, key, want, v);
    *n = (int)v->valuedouble;
    return MP_OK;
}

static int boolean(const char *path, const char *key, const cJSON *v, bool *b, struct mp_error *err)
{
    if (!cJSON_IsBool(v)) return type_fail(err, path, key, "true or false", v);
    *b = cJSON_IsTrue(v);
    return MP_OK;
}

/* Keys that change nothing about one step's time or memory. */
static const char *const ignored[] = {
    "gradient_clipping", "optimizer", "scheduler", "steps_per_print", "wall_clock_breakdown",
    "prescale_gradients", "gradient_predivide_factor", "zero_allow_untested_optimizer",
    "tensorboard", "wandb", "csv_monitor", "flops_profiler", "comms_logger", "seed",
    "dump_state", "checkpoint", "data_efficiency", "elasticity", NULL,
};

static bool is_ignored(const char *key)
{
    for (const char *const *k = ignored; *k; k++)
        if (!strcmp(*k, key)) return true;
    return false;
}

/* Offload: training.offload when the table has it (branch `scale` adds
 * it), with the first spelling it accepts; else not modelled yet. */
static int offload(struct imp *im, const char *path, const char *key, const char *device,
                   const char *const *values, struct mp_error *err)
{
    char from[256];
    snprintf(from, sizeof from, "%s: %s.device = \"%s\"", path, key, device);
    if (!strcmp(device, "none")) return MP_OK;
    if (!imp_has_key("training.offload")) {
        imp_warn(im, "%s: not modelled yet (mpsim has no key training.offload); left out", from);
        return MP_OK;
    }
    for (const char *const *v = values; *v; v++) {
        struct config scratch = im->cfg;
        struct mp_error e2;
        if (config_set_key(&scratch, "training.offload", *v, from, &e2) == MP_OK)
            return imp_set(im, "training.offload", *v, from, err);
    }
    imp_warn(im, "%s: training.offload takes none of this importer's spellings; set it by hand",
             from);
    return MP_OK;
}

static int read_zero(struct imp *im, const char *path, const cJSON *z, struct mp_error *err)
{
    if (!cJSON_IsObject(z)) return type_fail(err, path, "zero_optimization", "an object", z);
    const cJSON *k;
    char from[256], v[64];
    int rc = MP_OK;
    cJSON_ArrayForEach(k, z) {
        char key[160];
        snprintf(key, sizeof key, "zero_optimization.%s", k->string);
        if (!strcmp(k->string, "stage")) {
            int st;
            if ((rc = whole(path, key, k, 0, 3, false, &st, err))) return rc;
            snprintf(v, sizeof v, "%d", st);
            snprintf(from, sizeof from, "%s: %s = %d", path, key, st);
            if ((rc = imp_set(im, "training.zero", v, from, err))) return rc;
        } else if (!strcmp(k->string, "overlap_comm")) {
            bool b = false;
            if ((rc = boolean(path, key, k, &b, err))) return rc;
            snprintf(from, sizeof from, "%s: %s = %s", path, key, b ? "true" : "false");
            if ((rc = imp_set(im, "training.dp_overlap", b ? "true" : "false", from, err))) return rc;
        } else if (!strcmp(k->string, "reduce_bucket_size")) {
            if (!cJSON_IsNumber(k) || k->valuedouble < 1 || k->valuedouble > 1e14)
                return type_fail(err, path, key, "a number of elements ≥ 1", k);
            /* Elements of the gradient; mpsim counts 4-byte gradients. */
            snprintf(v, sizeof v, "%.0fB", k->valuedouble * 4);
            snprintf(from, sizeof from, "%s: %s = %.0f elements × 4 B", path, key, k->valuedouble);
            if ((rc = imp_set(im, "training.dp_bucket", v, from, err))) return rc;
        } else if (!strcmp(k->string, "offload_optimizer") || !strcmp(k->string, "offload_param")) {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(k, "device");
            char dk[200];
            snprintf(dk, sizeof dk, "%s.device", key);
            if (!cJSON_IsObject(k)) return type_fail(err, path, key, "an object", k);
            if (!cJSON_IsString(d)) return type_fail(err, path, dk, "\"cpu\", \"nvme\" or \"none\"", d);
            if (strcmp(d->valuestring, "cpu") && strcmp(d->valuestring, "nvme") &&
                strcmp(d->valuestring, "none"))
                return mp_fail(err, MP_ERR_INPUT, "%s: key %s: expected \"cpu\", \"nvme\" or "
                               "\"none\", got \"%s\"", path, dk, d->valuestring);
            static const char *const opt_v[] = { "optimizer", "cpu", NULL };
            static const char *const par_v[] = { "params", "parameters", "all", NULL };
            bool is_opt = !strcmp(k->string, "offload_optimizer");
            if ((rc = offload(im, path, key, d->valuestring, is_opt ? opt_v : par_v, err))) return rc;
        } else {
            imp_warn(im, "%s: %s ignored: not modelled (ZeRO's buffers and prefetch sizes)", path, key);
        }
    }
    return MP_OK;
}

int imp_read_deepspeed(struct imp *im, const char *path, bool alone, struct mp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0, got;
    char *buf = mp_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            if (cap >= (size_t)64 << 20) {
                free(buf);
                fclose(f);
                return mp_fail(err, MP_ERR_INPUT, "%s: larger than 64 MB; a ds_config.json is "
                               "a few KB", path);
            }
            cap *= 2;
            buf = mp_xrealloc(buf, cap);
        }
    }
    fclose(f);
    buf[n] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 0);
    if (!root) {
        int line = 1;
        for (const char *p = buf; end && p < end; p++) line += *p == '\n';
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s:%d: not valid JSON", path, line);
    }
    free(buf);
    int rc = MP_OK;
    if (!cJSON_IsObject(root)) {
        rc = type_fail(err, path, "(top level)", "an object", root);
        goto out;
    }
    int train = 0, micro = 0, gas = 0;
    bool bf16 = false, fp16 = false;
    char from[256], v[64];
    const cJSON *k;
    cJSON_ArrayForEach(k, root) {
        const char *key = k->string;
        if (!strcmp(key, "train_batch_size")) rc = whole(path, key, k, 1, 2147483647, true, &train, err);
        else if (!strcmp(key, "train_micro_batch_size_per_gpu")) rc = whole(path, key, k, 1, 2147483647, true, &micro, err);
        else if (!strcmp(key, "gradient_accumulation_steps")) rc = whole(path, key, k, 1, 2147483647, true, &gas, err);
        else if (!strcmp(key, "zero_optimization")) rc = read_zero(im, path, k, err);
        else if (!strcmp(key, "bf16") || !strcmp(key, "fp16")) {
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(k, "enabled");
            char ek[64];
            snprintf(ek, sizeof ek, "%s.enabled", key);
            bool b = false;
            if (!cJSON_IsObject(k)) rc = type_fail(err, path, key, "an object", k);
            else if (en && cJSON_IsString(en) && !strcmp(en->valuestring, "auto"))
                imp_warn(im, "%s: %s = \"auto\": filled in by the trainer; not known here", path, ek);
            else if (en && !(rc = boolean(path, ek, en, &b, err))) *(key[0] == 'b' ? &bf16 : &fp16) = b;
        } else if (!strcmp(key, "activation_checkpointing")) {
            imp_warn(im, "%s: activation_checkpointing ignored: the model code decides what is "
                         "recomputed; set training.recompute (--set)", path);
        } else if (is_ignored(key)) {
            imp_warn(im, "%s: %s ignored: it does not change the time of a step", path, key);
        } else {
            imp_warn(im, "%s: %s ignored: not a setting mpsim knows", path, key);
        }
        if (rc) goto out;
    }
    if (bf16 || fp16) {
        snprintf(from, sizeof from, "%s: %s.enabled = true", path, bf16 ? "bf16" : "fp16");
        if ((rc = imp_set(im, "model.weight_bits", "16", from, err)) ||
            (rc = imp_set(im, "model.activation_bits", "16", from, err)))
            goto out;
    } else if (alone) {
        snprintf(from, sizeof from, "%s: neither bf16 nor fp16 enabled: DeepSpeed's fp32", path);
        if ((rc = imp_set(im, "model.weight_bits", "32", from, err)) ||
            (rc = imp_set(im, "model.activation_bits", "32", from, err)))
            goto out;
    }
    /* The batch triple. */
    if (train < 0) train = 0;
    if (micro < 0) micro = 0;
    if (gas < 0) gas = 0;
    int dp = alone ? (im->opt->chips > 0 ? im->opt->chips : 0) : im->cfg.parallel.dp;
    if (alone && !dp && train && micro && gas) {
        if (train % ((long long)micro * gas)) {
            rc = mp_fail(err, MP_ERR_INPUT, "%s: key train_batch_size: %d is not "
                         "train_micro_batch_size_per_gpu %d × gradient_accumulation_steps %d × "
                         "a whole data-parallel size", path, train, micro, gas);
            goto out;
        }
        dp = train / (micro * gas);
        snprintf(from, sizeof from, "%s: train_batch_size ÷ (micro batch × accumulation steps)", path);
    } else if (alone && dp) {
        snprintf(from, sizeof from, "--chips %d (ZeRO data parallelism over every chip)", dp);
    } else if (alone) {
        dp = 1;
        snprintf(from, sizeof from, "neither --chips nor the whole batch triple: 1");
        imp_warn(im, "the data-parallel size is unknown: parallel.dp = 1 (give --chips N)");
    }
    if (alone) {
        snprintf(v, sizeof v, "%d", dp);
        if ((rc = imp_set(im, "parallel.dp", v, from, err))) goto out;
    }
    if (!micro && train && gas && train % ((long long)gas * dp) == 0) micro = train / (gas * dp);
    if (!train && micro) train = micro * (gas ? gas : 1) * dp;
    if (micro && train && gas && (long long)micro * gas * dp != train) {
        rc = mp_fail(err, MP_ERR_INPUT, "%s: key train_batch_size: %d ≠ "
                     "train_micro_batch_size_per_gpu %d × gradient_accumulation_steps %d × "
                     "data-parallel size %d (DeepSpeed refuses it too)", path, train, micro, gas, dp);
        goto out;
    }
    if (micro) {
        snprintf(v, sizeof v, "%d", micro);
        snprintf(from, sizeof from, "%s: train_micro_batch_size_per_gpu", path);
        if ((rc = imp_set(im, "training.micro_batch", v, from, err))) goto out;
    }
    if (train) {
        snprintf(v, sizeof v, "%d", train);
        snprintf(from, sizeof from, "%s: train_batch_size%s", path,
                 gas ? "" : " (micro batch × accumulation steps × dp)");
        if ((rc = imp_set(im, "training.global_batch", v, from, err))) goto out;
    }
out:
    cJSON_Delete(root);
    return rc;
}

int import_deepspeed(const char *path, const struct import_options *opt, FILE *out,
                     struct mp_error *err)
{
    struct imp im;
    imp_init(&im, "import deepspeed", opt);
    int rc = imp_read_deepspeed(&im, path, true, err);
    if (!rc) {
        bool has_model = false;
        for (const char *const *s = opt->sets; s && *s; s++) has_model |= !strncmp(*s, "model.config=", 13);
        if (!has_model)
            imp_warn(&im, "a ds_config.json does not name the model: model.config stays %s "
                          "(--set model.config=NAME)", im.cfg.model.config);
        char hdr[1400];
        snprintf(hdr, sizeof hdr, "; imported by `mpsim import deepspeed` from %s\n; each key "
                 "below says which setting it came from\n", path);
        rc = imp_finish(&im, hdr, out, err);
    }
    imp_release(&im);
    return rc;
}
