/* cli_import.c — `mpsim import megatron|deepspeed`: the configuration a
 * team already has, as a scenario INI on stdout (sim/explore/import.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/explore/import.h"
#include "sim/io/units.h"

static const char import_usage_text[] =
    "usage: mpsim import megatron 'ARGS...' [options]   (or the flags as separate words)\n"
    "       mpsim import deepspeed ds_config.json [options]\n"
    "\n"
    "Writes a scenario INI on stdout from a Megatron-LM command line (pretrain_gpt.py's\n"
    "flags: model shape, tensor/pipeline/context/expert parallel sizes, virtual stages,\n"
    "micro and global batch, sequence length, sequence parallelism, recompute, the\n"
    "distributed optimizer, overlap flags, bf16/fp16/fp8; torchrun's --nnodes and\n"
    "--nproc_per_node give the world size; --deepspeed_config FILE is read too) or from\n"
    "a DeepSpeed JSON (ZeRO stage, batch sizes, gradient accumulation, overlap, bucket,\n"
    "offload). Every key has a comment naming the flag it came from; every flag that\n"
    "changes nothing mpsim models is a warning on stderr, and so is one mpsim does not\n"
    "model yet. Megatron's defaults are written out where mpsim's differ (no\n"
    "--overlap-grad-reduce: training.dp_overlap = false; no --bf16: fp32).\n"
    "\n"
    "  --system NAME        hardware.system (default dgx-h100, with a warning)\n"
    "  --chips N            the world size when the command line does not give it\n"
    "  --model-out F.json   where to write the model's config.json when no preset in\n"
    "                       models/ has the flags' shape\n"
    "  --set key=value      one more key, written last (repeatable)\n"
    "\n"
    "  mpsim import megatron \"$(cat run.sh)\" --system dgx-a100 > run.ini && mpsim explain run.ini\n"
    "\n"
    "exit status: 0 done; 2 bad input (a malformed flag value or JSON key, named).\n";

static const char *const options[] = { "--system", "--chips", "--model-out", "--set", "--help", NULL };

/* The options that are ours, not the imported command's: they follow the
 * importer's argument(s) and are recognised anywhere. */
static bool ours(const char *a)
{
    return !strcmp(a, "--system") || !strcmp(a, "--chips") || !strcmp(a, "--model-out") ||
           !strcmp(a, "--set");
}

int cli_import(int argc, char **argv)
{
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(import_usage_text, stdout);
        return MP_OK;
    }
    if (argc < 1) return cli_usage_error("%s", "import: from what? usage: mpsim import megatron 'ARGS...' | "
                                               "mpsim import deepspeed ds_config.json");
    const char *kind = argv[0];
    bool mega = !strcmp(kind, "megatron"), ds = !strcmp(kind, "deepspeed");
    if (!mega && !ds) {
        static const char *const kinds[] = { "megatron", "deepspeed", NULL };
        const char *near = cli_closest(kind, kinds);
        fprintf(stderr, "mpsim: import: unknown source '%s'%s%s%s; expected megatron or deepspeed\n"
                        "(see `mpsim import --help`)\n", kind, near ? " (did you mean '" : "",
                near ? near : "", near ? "'?)" : "");
        return MP_ERR_INPUT;
    }
    struct import_options opt = { .warn = stderr };
    const char **sets = mp_xcalloc((size_t)argc + 1, sizeof *sets);
    char **words = NULL;
    int nw = 0, capw = 0, ns = 0, rc = MP_OK;
    const char *ds_path = NULL;
    struct mp_error err = { 0 };
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") && (ds || nw == 0)) {
            fputs(import_usage_text, stdout);
            goto done;
        }
        if (ours(a)) {
            if (i + 1 >= argc) {
                rc = cli_usage_error("import: %s needs a value", a);
                break;
            }
            const char *v = argv[++i];
            long long n;
            if (!strcmp(a, "--system")) opt.system = v;
            else if (!strcmp(a, "--model-out")) opt.model_out = v;
            else if (!strcmp(a, "--set")) sets[ns++] = v;
            else if (units_parse_int(v, 1, 1000000, &n))
                rc = cli_usage_error("import: --chips: expected a whole number of chips from 1 "
                                     "to 1000000, got '%s'", v);
            else opt.chips = (int)n;
            continue;
        }
        if (ds) {
            if (a[0] == '-' && a[1]) rc = cli_unknown_option("import", a, options);
            else if (ds_path) rc = cli_usage_error("import deepspeed: one file at a time (extra "
                                                   "argument '%s')", a);
            else ds_path = a;
            continue;
        }
        /* Megatron: each argument may be a whole command line. */
        char **w;
        int n;
        if ((rc = import_split_words(a, &w, &n, &err))) {
            rc = cli_fail(&err);
            break;
        }
        for (int k = 0; k < n; k++) {
            MP_GROW(words, capw, nw + 1);
            words[nw++] = w[k];
        }
        free(w);
    }
    if (rc) goto done;
    opt.sets = sets;
    if (mega) {
        if (nw == 0) {
            rc = cli_usage_error("%s", "import megatron: no flags; usage: mpsim import megatron "
                                       "'--tensor-model-parallel-size 8 ...'");
            goto done;
        }
        rc = import_megatron(words, nw, &opt, stdout, &err);
    } else {
        if (!ds_path) {
            rc = cli_usage_error("%s", "import deepspeed: which file? usage: mpsim import "
                                       "deepspeed ds_config.json");
            goto done;
        }
        /* --model-out naming the ds_config it is read from would replace it. */
        const char *outs[] = { opt.model_out }, *flags[] = { "--model-out" };
        if (cli_check_outputs(outs, flags, 1, ds_path)) {
            rc = MP_ERR_INPUT;
            goto done;
        }
        rc = import_deepspeed(ds_path, &opt, stdout, &err);
    }
    if (rc) rc = cli_fail(&err);
done:
    import_words_free(words, nw);
    free(sets);
    return rc;
}
