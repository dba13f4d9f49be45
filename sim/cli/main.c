/* main.c — the `mpsim` command: pick the subcommand (cli_*.c) and return
 * its exit status (DESIGN.md §4). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sim/io/outfile.h"

#define MPSIM_VERSION "0.1.0"

static const char usage_text[] =
    "mpsim — simulate how a neural network runs split across many chips\n"
    "\n"
    "usage:\n"
    "  mpsim run SCENARIO.ini [--set section.key=value]... [--json]\n"
    "            [--timeline OUT.csv] [--trace OUT.json] [--validate]\n"
    "  mpsim plan SCENARIO.ini [--set section.key=value]... [--json]\n"
    "  mpsim plan --device-map MODEL|SCENARIO.ini [--system S] [--max-memory 0=10GiB,cpu=64GiB]\n"
    "            [--policy auto|...] [--json]   what Accelerate's device_map=\"auto\" does\n"
    "  mpsim sweep SCENARIO.ini --vary section.key=v1,v2,... [--vary ...] --out OUT.csv\n"
    "            [--jobs N] [--resume] [--best METRIC] [--pareto X,Y]\n"
    "            [--chips N]                           (--chips: hold the machine at N)\n"
    "  mpsim search SCENARIO.ini --chips N [--top N]   best layouts for N chips\n"
    "  mpsim serve-plan SCENARIO.ini --rate R --slo ttft=T,tpot=T   cheapest serving layout\n"
    "  mpsim explain SCENARIO.ini [--set ...] [--json] where the step goes, and levers\n"
    "  mpsim compare A.ini|A.json B.ini|B.json [--set ...] two runs side by side\n"
    "  mpsim import megatron 'ARGS...' | import deepspeed ds_config.json [--set ...]\n"
    "  mpsim plot SWEEP.csv --x KEY --y METRIC [--by KEY] --out FILE.png|svg|pdf\n"
    "  mpsim list models|chips|systems|schedules|keys\n"
    "  mpsim model PATH|PRESET [--json]   what a Hugging Face config.json is read as\n"
    "  mpsim collective --system S --op all_reduce --bytes 8GiB --chips N [--sweep]\n"
    "  mpsim --help | mpsim help CMD | mpsim CMD --help | mpsim --version\n"
    "\n"
    "A scenario is an INI file naming a model (a Hugging Face config.json or a\n"
    "preset), a system (chips and how they are wired) and a parallel layout.\n"
    "`mpsim run` simulates one training step op by op and prints the step time,\n"
    "tokens/s, MFU, the pipeline bubble, where every picosecond of the step went\n"
    "(compute, recompute, exposed TP/PP/DP/EP communication, bubble, optimizer)\n"
    "and per-stage tables; with an [inference] section it simulates serving requests\n"
    "(TTFT, TPOT, throughput, in flight, KV). `mpsim plan` places a model's\n"
    "layers on chips by memory. Try:\n"
    "\n"
    "  mpsim run scenarios/teach-bubbles.ini\n"
    "  mpsim run scenarios/teach-bubbles.ini --set training.schedule=1f1b\n"
    "\n"
    "exit status: 0 done; 2 bad input (the message names file, line, key and\n"
    "what was expected); 3 the configuration is infeasible (does not fit in\n"
    "memory, or the schedule's rules fail), with the reason.\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    { "run", cli_run },
    { "list", cli_list },
    { "collective", cli_collective },
    { "sweep", cli_sweep },
    { "search", cli_search },
    { "plot", cli_plot },
    { "plan", cli_plan },
    { "explain", cli_explain },
    { "compare", cli_compare },
    { "import", cli_import },
    { "serve-plan", cli_serve_plan },
    { "model", cli_model },
    { NULL, NULL },
};

static const struct command *find_command(const char *name)
{
    for (const struct command *c = commands; c->name; c++)
        if (!strcmp(name, c->name)) return c;
    return NULL;
}

/* An unknown command: the one it is a typo of, else the list. */
static int unknown_command(const char *cmd)
{
    const char *names[sizeof commands / sizeof *commands];
    size_t n = 0;
    for (const struct command *c = commands; c->name; c++) names[n++] = c->name;
    names[n] = NULL;
    const char *near = cli_closest(cmd, names);
    fprintf(stderr, "mpsim: unknown command '%s'", cmd);
    if (near) fprintf(stderr, " (did you mean '%s'?)", near);
    fputs("; the commands are", stderr);
    for (size_t i = 0; i < n; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    fputs("\n(see `mpsim --help`)\n", stderr);
    return MP_ERR_INPUT;
}

/* Reports go to stdout through stdio's buffer; a full disk or a closed pipe
 * shows only when it is flushed. Without this check such a run would exit 0
 * with its result lost (issue 8). */
static int finish(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "mpsim: standard output: write failed: %s\n", strerror(errno));
        return rc ? rc : MP_ERR_INTERNAL;
    }
    return rc;
}

int main(int argc, char **argv)
{
    /* SIGINT, SIGTERM (and SIGHUP, SIGPIPE) remove half-written outputs and
     * exit 128 + the signal (outfile.h); a sweep's partial file is kept. */
    outfile_init_signals();
    /* A search or sweep simulates layout after layout: keep their memory. */
    mp_heap_keep();
    if (argc < 2) {
        fputs(usage_text, stderr);
        return MP_ERR_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") && argc >= 3) {
        /* `mpsim help CMD` is `mpsim CMD --help`. */
        const struct command *c = find_command(argv[2]);
        if (!c) return unknown_command(argv[2]);
        char help[] = "--help";
        char *args[] = { help, NULL };
        return finish(c->run(1, args));
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return MP_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("mpsim %s\n", MPSIM_VERSION);
        return MP_OK;
    }
    const struct command *c = find_command(cmd);
    if (c) return finish(c->run(argc - 2, argv + 2));
    return unknown_command(cmd);
}
