/* load.h — a scenario run in-process, straight into a timeline: no CSV in
 * between (the 59-wafer serving run's 9.2 million ops would be 850 MB of
 * text). Training goes through report.h's report_timeline_each, the rows the
 * CSV writer writes; serving reads the run's compact record (serve.h), each
 * pass's facts kept once for its copies on every stage. A [device_map] run
 * (generate() the Accelerate way: a few thousand rows) goes through its
 * timeline CSV writer in memory.
 *
 * Plain C: no SDL. */
#ifndef MPSIM_VIZ_LOAD_H
#define MPSIM_VIZ_LOAD_H

#include "sim/common.h"
#include "timeline.h"

/* Load SCENARIO.ini with its `--set` overrides, run it (training, serving
 * by its [inference] section, a device map by its [device_map] policy) and
 * fill `tl` (initialised, empty),
 * finished, named after the file. Input errors are MP_ERR_INPUT with the
 * simulator's message; an infeasible run is MP_ERR_INFEASIBLE. */
int viz_load_scenario(struct timeline *tl, const char *path, char *const *sets, int n_sets,
                      struct mp_error *err);

struct sim;
struct serve;
/* The same from a finished run (sim_run with record_memory and
 * record_released; serve_run_recorded with record). The serving loader
 * frees the record's per-stage arrays as it copies them, to keep one copy
 * of the ops in memory at a time. */
void viz_load_sim(struct timeline *tl, const struct sim *s);
void viz_load_serve(struct timeline *tl, struct serve *s);

#endif
