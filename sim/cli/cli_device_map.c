/* cli_device_map.c — `mpsim plan --device-map MODEL|SCENARIO.ini`: what
 * Hugging Face's from_pretrained(device_map="auto") would place where on a
 * machine (sim/serve/device_map.h); and `mpsim run` on a scenario with
 * device_map.policy set: generate() on that placement the way Accelerate
 * runs it, beside a pipeline on the same GPUs (sim/serve/accel.h); --timeline
 * and --trace show its first generate() call. */
#include <cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/io/outfile.h"
#include "sim/serve/accel.h"

static const char device_map_usage_text[] =
    "usage: mpsim plan --device-map MODEL|SCENARIO.ini [options]\n"
    "\n"
    "Places a Hugging Face model the way from_pretrained(device_map=...) does\n"
    "(Accelerate's infer_auto_device_map) and prints model.hf_device_map.\n"
    "MODEL is a preset (models/NAME.json) or a path to a config.json; a scenario\n"
    "gives model.config, hardware.system and the [device_map] keys instead.\n"
    "\n"
    "  --system NAME          the machine (default desktop-1x4090; mpsim list systems)\n"
    "  --max-memory SPEC      Accelerate's max_memory: 0=10GiB,1=10GiB,cpu=64GiB\n"
    "                         (GiB/MiB/KiB = powers of 2, GB/MB/KB = powers of 10,\n"
    "                         a bare number = bytes; default: each GPU's memory and\n"
    "                         cpu = the system's [host] memory)\n"
    "  --policy P             auto | balanced | balanced_low_0 | sequential (default auto)\n"
    "  --weight-bits N        size weights at N bits (4, 8, 16, 32), ignoring the\n"
    "                         model's quantization_config\n"
    "  --quantization Q       auto (the config's) | none | bnb_8bit | bnb_4bit | fp8\n"
    "  --set section.key=value  override a scenario key (repeatable)\n"
    "  --json                 {\"device_map\": [[module, device], ...] in model order, ...}\n"
    "\n"
    "A decoder layer is never split; the first GPU and the cpu keep room for the\n"
    "largest layer still to come; a tied lm_head goes with its embedding; what fits\n"
    "nowhere goes to disk. `mpsim run` on a scenario with [device_map] policy set\n"
    "times generate() on the placement (inference.prompt_len, output_len,\n"
    "micro_batch, requests) beside a pipeline on the same GPUs.\n";

static const char *const quant_names[] = { "auto", "none", "bnb_8bit", "bnb_4bit", "fp8", NULL };

static int parse_choice(const char *flag, const char *v, const char *const *names, int *out)
{
    size_t best = 4;
    int bi = -1;
    for (int i = 0; names[i]; i++) {
        if (!strcmp(v, names[i])) {
            *out = i;
            return MP_OK;
        }
        size_t d = mp_edit_distance(v, names[i]);
        if (d < best) best = d, bi = i;
    }
    char list[160] = "";
    for (int i = 0; names[i]; i++) {
        strcat(list, i ? (names[i + 1] ? ", " : " or ") : "");
        strcat(list, names[i]);
    }
    fprintf(stderr, "mpsim: %s: expected %s, got '%s'", flag, list, v);
    if (bi >= 0) fprintf(stderr, " (did you mean '%s'?)", names[bi]);
    fputc('\n', stderr);
    return MP_ERR_INPUT;
}

static bool is_scenario(const char *arg)
{
    size_t n = strlen(arg);
    return n > 4 && !strcmp(arg + n - 4, ".ini");
}

int cli_plan_device_map(int argc, char **argv)
{
    const char *target = NULL, *system = NULL, *max_memory = NULL, *policy = NULL;
    const char *bits = NULL, *quant = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(device_map_usage_text, stdout);
            return MP_OK;
        }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--device-map")     ? &target
                            : !strcmp(a, "--system")       ? &system
                            : !strcmp(a, "--max-memory")   ? &max_memory
                            : !strcmp(a, "--policy")       ? &policy
                            : !strcmp(a, "--weight-bits")  ? &bits
                            : !strcmp(a, "--quantization") ? &quant
                                                           : NULL;
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (slot || !strcmp(a, "--set")) {
            if (i + 1 >= argc) return cli_usage_error("%s needs a value", a);
            if (slot) *slot = argv[i + 1];
            i++;
        } else {
            return cli_usage_error(a[0] == '-' ? "plan --device-map: unknown option '%s'"
                                               : "plan --device-map: unexpected argument '%s'",
                                   a);
        }
    }
    if (!target)
        return cli_usage_error("%s", "plan --device-map: which model? usage: mpsim plan "
                                     "--device-map MODEL|SCENARIO.ini");
    struct config cfg;
    struct mp_error err = { 0 };
    if (is_scenario(target)) {
        if (cli_load_scenario(&cfg, target, argc, argv, &err)) return cli_fail(&err);
    } else {
        config_defaults(&cfg);
        int rc = config_set_key(&cfg, "model.config", target, "--device-map", &err);
        if (!rc) rc = config_set_key(&cfg, "hardware.system", "desktop-1x4090", "default", &err);
        for (int i = 0; i + 1 < argc && !rc; i++)
            if (!strcmp(argv[i], "--set")) rc = config_set(&cfg, argv[++i], "--set", &err);
        if (rc) return cli_fail(&err);
    }
    if (system && config_set_key(&cfg, "hardware.system", system, "--system", &err))
        return cli_fail(&err);
    if (max_memory && config_set_key(&cfg, "device_map.max_memory", max_memory, "--max-memory",
                                     &err))
        return cli_fail(&err);
    if (policy) {
        enum dm_policy p;
        if (dm_policy_parse(policy, "--policy", &p, &err)) return cli_fail(&err);
        cfg.device_map.policy = DEVMAP_AUTO + (int)p;
    }
    if (cfg.device_map.policy == DEVMAP_NONE) cfg.device_map.policy = DEVMAP_AUTO;
    if (quant) {
        int q;
        if (parse_choice("--quantization", quant, quant_names, &q)) return MP_ERR_INPUT;
        cfg.device_map.quantization = q;
    }
    if (bits) {
        if (strcmp(bits, "4") && strcmp(bits, "8") && strcmp(bits, "16") && strcmp(bits, "32"))
            return cli_usage_error("--weight-bits: expected 4, 8, 16 or 32 (a torch dtype's "
                                   "bits), got '%s'", bits);
        cfg.model.weight_bits = atoi(bits);
        cfg.device_map.quantization = DEVMAP_QUANT_NONE;
    }
    char what[CONFIG_STR + 32];
    snprintf(what, sizeof what, "--max-memory '%s'", max_memory ? max_memory : "");
    struct accel_setup a;
    int rc = accel_setup(&a, &cfg, max_memory ? what : NULL, &err);
    if (rc == MP_ERR_INFEASIBLE) {
        fprintf(stderr, "mpsim: infeasible: %s\n", err.msg);
        accel_setup_release(&a);
        return rc;
    }
    if (rc) {
        accel_setup_release(&a);
        return cli_fail(&err);
    }
    if (json) accel_map_json(stdout, &a);
    else accel_map_text(stdout, &a);
    accel_setup_release(&a);
    return MP_OK;
}

/* Write one report of a device_map run through a temporary file. */
static int write_output(const char *path,
                        void (*writer)(FILE *, const struct accel_setup *,
                                       const struct accel_report *),
                        const struct accel_setup *a, const struct accel_report *rep,
                        struct mp_error *err)
{
    struct outfile out;
    int rc = outfile_open(&out, path, err);
    if (rc) return rc;
    writer(out.f, a, rep);
    return outfile_commit(&out, err);
}

int cli_devmap_run(const struct config *cfg, int json, const char *timeline, const char *trace,
                   bool force)
{
    struct accel_setup a;
    struct mp_error err = { 0 };
    int rc = accel_setup(&a, cfg, NULL, &err);
    a.force = force;
    struct accel_report rep = { 0 };
    if (!rc) rc = accel_generate_recorded(&rep, &a, timeline || trace, &err);
    if (!rc && ((timeline && write_output(timeline, accel_timeline_csv, &a, &rep, &err)) ||
                (trace && write_output(trace, accel_chrome_trace, &a, &rep, &err))))
        rc = MP_ERR_INPUT;
    if (rc == MP_ERR_INFEASIBLE) {
        if (json)
            cli_infeasible_json("device_map", err.msg);
        else if (a.has_map && a.map.n_map)
            accel_map_text(stdout, &a); /* the placement it could not run */
        fprintf(stderr, "mpsim: infeasible: %s\n", err.msg);
        accel_report_release(&rep);
        accel_setup_release(&a);
        return rc;
    }
    if (rc) {
        accel_report_release(&rep);
        accel_setup_release(&a);
        return cli_fail(&err);
    }
    if (json) accel_report_json(stdout, &a, &rep);
    else accel_report_text(stdout, &a, &rep);
    accel_report_release(&rep);
    accel_setup_release(&a);
    return MP_OK;
}
