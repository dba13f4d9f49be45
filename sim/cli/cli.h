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
int cli_plot(int argc, char **argv);       /* cli_plot.c: a sweep CSV as a chart */
int cli_plan(int argc, char **argv);       /* cli_plan.c: layers onto chips by memory */

/* cli_serve.c: `mpsim run` on a scenario with an [inference] section. */
struct config;
/* `timeline` and `trace` may be NULL (not asked for). */
int cli_serve(const struct config *cfg, int json, const char *timeline, const char *trace,
              bool force);

/* Print "mpsim: <message>" once and return the error's status. */
int cli_fail(const struct mp_error *err);

/* Print "mpsim: infeasible: <message>" (one line) and return MP_ERR_INFEASIBLE. */
int cli_infeasible(const struct mp_error *err);

/* Print a usage error (printf-style with one string argument) and return 2. */
int cli_usage_error(const char *fmt, const char *arg);

/* Load the scenario at `path` over the defaults, then apply each
 * `--set section.key=value` of a subcommand's arguments in order. The
 * subcommand's parser has already checked that every --set it took has a
 * value; a trailing "--set" here is another option's value (`--out --set`)
 * and is left alone. */
int cli_load_scenario(struct config *cfg, const char *path, int argc, char **argv,
                      struct mp_error *err);

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
