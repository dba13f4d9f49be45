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

/* Where each stage pass's time goes (`mpsim run --breakdown`): per stage
 * and pass (forward, input_grad, weight_grad, recompute) one microbatch's
 * time by kernel class (gemm, attention, memory, launch) with the line of
 * hardware/kernels.csv that priced each class's largest kernel, and per
 * device the exposed communication of the step by kind. report_text
 * prints it when the run asked (sim_options.breakdown); report_json then
 * adds the same as the key `breakdown`. */
void report_breakdown_text(FILE *f, const struct sim *s);

/* One JSON object (cJSON), keys of DESIGN.md §4; for an infeasible run,
 * feasible=false and infeasible_reason, with what metrics exist. */
void report_json(FILE *f, const struct sim *s);

/* The timeline CSV. Columns:
 *   chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,
 *   start_s,end_s,bytes,mem_bytes,label,
 *   op,released_by,microbatch2,chunk2,direction,direction2,comm
 * op rows (stream compute|comm), memory rows (stream memory, kind mem, bytes =
 * signed change, mem_bytes = chip total after it, label = category; needs the
 * run to have recorded memory) and meta rows (stream meta, label key=value).
 * `stage` is the pipeline device of the row (a DP lane or EP rank: the device
 * it serves). `op` is the op's id, `released_by` the id of the op whose end
 * let it start (engine.h; -1 unless the run recorded it); an FB op's second
 * microbatch and chunk are its backward half's; `direction` (down | up, or
 * empty) is the DualPipe path of the microbatch, `comm` the parallelism a
 * comm op serves (tp, pp, dp, ep). */
void report_timeline_csv(FILE *f, const struct sim *s);

/* The same rows, handed one by one to a sink instead of a file (mpsim-view
 * builds its timeline from them in memory). Meta rows come first, as
 * key=value text; ops in task-graph order (id = the op's index); then
 * memory changes in time order. Fields as in the CSV; dir 0 down, 1 up,
 * -1 none; comm "" for none. The label is valid during the call only. */
struct report_tl_op {
    int chip, stage, stream;
    const char *kind, *label, *comm;
    int mb, chunk, layer_first, layer_last, mb2, chunk2, dir, dir2;
    mp_time start, end;
    double bytes;
    long long id, released_by;
};
struct report_tl_sink {
    void *ctx;
    void (*meta)(void *ctx, int chip, int stage, const char *key_value);
    void (*op)(void *ctx, const struct report_tl_op *op);
    void (*mem)(void *ctx, int chip, int stage, mp_time t, double delta, double in_use,
                const char *category);
};
void report_timeline_each(const struct sim *s, const struct report_tl_sink *sink);

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
 * and the timeline's meta rows: "step_split.{part}_s=SECONDS" (exact
 * decimal seconds), first with chip and stage -1 (the mean), then one set
 * per stage with its chip and stage, handed to `meta` (report_timeline_each's
 * sink). */
struct cJSON;
void report_split_text(FILE *f, const struct sim *s);
void report_split_stage_table(FILE *f, const struct sim *s);
void report_split_json(struct cJSON *parent, const char *name, const struct step_split *x);
void report_split_meta(const struct sim *s, void (*meta)(void *ctx, int chip, int stage,
                                                        const char *key_value), void *ctx);

#endif
