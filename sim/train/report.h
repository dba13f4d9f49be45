/* report.h — a finished simulation in the forms people read and tools take:
 * a text summary, one JSON object with stable keys (DESIGN.md §4), a timeline
 * CSV (one row per op, memory change and run fact; the viewer's input) and a
 * Chrome/Perfetto trace (one process per chip, one thread per stream, memory
 * as counter tracks, arrows for stage-to-stage hand-offs).
 *
 * Every writer takes an open FILE (from outfile.h, so nothing is half-written)
 * and never prints the simulator's own wall time except in the summary and
 * JSON, so the timeline and trace are byte-identical across runs. */
#ifndef MPSIM_REPORT_H
#define MPSIM_REPORT_H

#include <stdio.h>

#include "sim.h"

/* The readable summary: what ran, step time, tokens/s, MFU, the pipeline
 * bubble (with the closed form beside it for textbook schedules), the step
 * accounting, and per-stage tables (busy and memory; the accounting). */
void report_text(FILE *f, const struct sim *s);

/* One JSON object (cJSON), keys of DESIGN.md §4; for an infeasible run,
 * feasible=false and infeasible_reason, with what metrics exist. */
void report_json(FILE *f, const struct sim *s);

/* The timeline CSV. Columns:
 *   chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,
 *   start_s,end_s,bytes,mem_bytes,label
 * op rows (stream compute|comm), memory rows (stream memory, kind mem, bytes =
 * signed change, mem_bytes = chip total after it, label = category; needs the
 * run to have recorded memory) and meta rows (stream meta, label key=value). */
void report_timeline_csv(FILE *f, const struct sim *s);

/* The Chrome trace event format (JSON), streamed: never built in memory
 * (report_trace.c). Times are microseconds in steps of 1/1024 µs taken from
 * the integer picoseconds once per op boundary, so every value is a binary
 * fraction a parser holds exactly: a slice never overlaps the next on its
 * thread after parsing. Zero-length ops are left out; each stage's bubble
 * (step_split.h) is a thread of its own; hand-off arrows start inside the
 * sending slice and end at the start of the receiving one; the run's
 * figures and step accounting are in "otherData". */
void report_chrome_trace(FILE *f, const struct sim *s);

/* The step accounting (step_split.h; report_split.c): the summary's block
 * (mean over stages, every part with its share), the per-stage table, one
 * JSON object `name` under `parent` ({part}_s seconds and "ps" integers),
 * and the timeline CSV's meta rows: "step_split.{part}_s=SECONDS" (exact
 * decimal seconds), first with chip and stage -1 (the mean), then one set
 * per stage with its chip and stage. */
struct cJSON;
void report_split_text(FILE *f, const struct sim *s);
void report_split_stage_table(FILE *f, const struct sim *s);
void report_split_json(struct cJSON *parent, const char *name, const struct step_split *x);
void report_split_meta(FILE *f, const struct sim *s);

#endif
