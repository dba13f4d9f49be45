/* cli.h — the `mpsim` subcommands, one file each (cli_run.c, cli_list.c,
 * ...), and the few helpers they share. Each subcommand takes the arguments
 * after its name and returns the process exit status (DESIGN.md §4): it
 * prints its one error message itself, through cli_fail. */
#ifndef MPSIM_CLI_H
#define MPSIM_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/common.h"
#include "sim/train/sim.h"

int cli_run(int argc, char **argv);        /* cli_run.c: one scenario, one step */
int cli_list(int argc, char **argv);       /* cli_list.c: models, chips, keys, ... */
int cli_collective(int argc, char **argv); /* cli_collective.c: one collective's time */
int cli_sweep(int argc, char **argv);      /* cli_sweep.c: a grid, one CSV row a point */
int cli_search(int argc, char **argv);     /* cli_search.c: the best layouts for N chips */
int cli_serve_plan(int argc, char **argv); /* cli_serve_plan.c: cheapest serving layout for an SLO */
int cli_plot(int argc, char **argv);       /* cli_plot.c: a sweep CSV as a chart */
int cli_plan(int argc, char **argv);       /* cli_plan.c: layers onto chips by memory */
int cli_explain(int argc, char **argv);    /* cli_explain.c: the step accounting and levers */
int cli_compare(int argc, char **argv);    /* cli_compare.c: two runs side by side */
int cli_import(int argc, char **argv);     /* cli_import.c: Megatron / DeepSpeed → scenario */
int cli_model(int argc, char **argv);      /* cli_model.c: what a config.json was read as */

/* cli_serve.c: `mpsim run` on a scenario with an [inference] section. */
struct config;
/* `timeline` and `trace` may be NULL (not asked for); `detail` writes every
 * stage's copy of each pass into the timeline (--timeline-detail); `force`
 * runs past the work budget (--force). */
int cli_serve(const struct config *cfg, int json, const char *timeline, const char *trace,
              bool detail, bool force);

/* cli_device_map.c (branch devmap): `mpsim plan --device-map ...`, and `mpsim
 * run` on a scenario with device_map.policy set. */
int cli_plan_device_map(int argc, char **argv);
int cli_devmap_run(const struct config *cfg, int json, const char *timeline, const char *trace,
                   bool force);

/* Print "mpsim: <message>" once and return the error's status. */
int cli_fail(const struct mp_error *err);

/* Print "mpsim: infeasible: <message>" (one line) and return MP_ERR_INFEASIBLE. */
int cli_infeasible(const struct mp_error *err);

/* With --json, an infeasible run is still an answer in the form asked for:
 * {"mode": mode, "feasible": false, "infeasible_reason": message} on stdout. */
void cli_infeasible_json(const char *mode, const char *reason);

/* Print a usage error (printf-style with one string argument, shown escaped)
 * and return 2, with one hint: `mpsim CMD --help` when the message starts
 * "CMD: ", none when it names a --help already, else `mpsim --help`. */
int cli_usage_error(const char *fmt, const char *arg);

/* Of NULL-terminated `names`, the one `word` is a typo of (edit distance
 * at most a third of its length, 1 to 2), or NULL. */
const char *cli_closest(const char *word, const char *const *names);

/* "CMD: unknown option 'ARG' (did you mean '--x'?)" with the subcommand's
 * --help hint, once; returns 2. `known`: the subcommand's options. */
int cli_unknown_option(const char *cmd, const char *arg, const char *const *known);

/* Load the scenario at `path` over the defaults, then apply each
 * `--set section.key=value` of a subcommand's arguments in order. The
 * subcommand's parser has already checked that every --set it took has a
 * value; a trailing "--set" here is another option's value (`--out --set`)
 * and is left alone. */
int cli_load_scenario(struct config *cfg, const char *path, int argc, char **argv,
                      struct mp_error *err);

/* Warnings (stderr; the run goes on) about a layout that is valid but
 * likely not what was meant: a TP group spanning nodes, pipeline stages
 * whose compute differs by more than 15% (the pipeline runs at the slowest
 * one's pace). */
void cli_warn_layout(const struct sim *s);

/* Print every scenario key with its default and one-line doc. */
void cli_print_keys(FILE *f);

/* Refuse outputs that name one file, or the input they were made from
 * (NULL entries are skipped): `paths` are the outputs, `flags` their
 * options ("--timeline"), `input` the file read (NULL: none). Prints the
 * message and returns MP_ERR_INPUT, or returns MP_OK. */
int cli_check_outputs(const char *const *paths, const char *const *flags, int n,
                      const char *input);

/* Write one report through a temporary file renamed into place. */
int cli_write_output(const char *path, void (*writer)(FILE *, const struct sim *),
                     const struct sim *s, struct mp_error *err);

#endif
