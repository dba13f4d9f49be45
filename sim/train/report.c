/* report.c — summary, JSON, timeline CSV and Chrome trace; see report.h. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <csv.h>

#include "sim/io/units.h"
#include "sim/strategy/collective.h"

/* A duration for people: 3 decimals in the largest unit below it. */
static void fmt_time(char *buf, size_t size, mp_time t)
{
    double a = fabs((double)t);
    if (t == 0) snprintf(buf, size, "0");
    else if (a >= 1e12) snprintf(buf, size, "%.3f s", (double)t / 1e12);
    else if (a >= 1e9) snprintf(buf, size, "%.3f ms", (double)t / 1e9);
    else if (a >= 1e6) snprintf(buf, size, "%.3f us", (double)t / 1e6);
    else snprintf(buf, size, "%.3f ns", (double)t / 1e3);
}

static void fmt_bytes(char *buf, size_t size, double b)
{
    if (b >= 1e12) snprintf(buf, size, "%.2f TB", b / 1e12);
    else if (b >= 1e9) snprintf(buf, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, size, "%.2f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, size, "%.2f KB", b / 1e3);
    else snprintf(buf, size, "%.0f B", b);
}

/* Expert parallelism's figures (experts.h), from the step accounting
 * (step_split.h, means over stages): compute (recompute included), exposed
 * all-to-all, other exposed comm, pipeline bubble; and the all-to-all's
 * whole time on the lanes, hidden or not. */
struct ep_split { double compute, a2a_exposed, other_exposed, bubble, a2a_total; };

static struct ep_split ep_split(const struct sim *s)
{
    const struct sim_result *r = &s->res;
    struct ep_split x = { 0 };
    if (!r->stage || r->stages == 0) return x;
    const mp_time *p = r->split.part;
    x.compute = mp_seconds(p[SPLIT_COMPUTE] + p[SPLIT_RECOMPUTE]);
    x.a2a_exposed = mp_seconds(p[SPLIT_EP]);
    x.other_exposed = mp_seconds(p[SPLIT_TP] + p[SPLIT_PP] + p[SPLIT_DP] + p[SPLIT_CP]);
    x.bubble = mp_seconds(p[SPLIT_BUBBLE]);
    for (int i = 0; i < s->g.n_ops; i++)
        if (s->g.ops[i].comm == COMM_EP)
            x.a2a_total += mp_seconds(s->e.end[i] - s->e.start[i]) / r->stages;
    return x;
}

static void report_experts_text(FILE *f, const struct sim *s)
{
    const struct ep_plan *p = &s->experts;
    const struct config *c = &s->cfg;
    const struct sim_result *r = &s->res;
    double step = mp_seconds(r->step_time);
    struct ep_split x = ep_split(s);
    double pct = step > 0 ? 100 / step : 0;
    fprintf(f, "per chip    %.6g tokens/s per chip\n", r->n_chips ? r->tokens_per_s / r->n_chips : 0);
    fprintf(f, "all-to-all  %.4g s per stage lane in all (%.1f%% of the step), %.4g s of it exposed; "
               "%s path, %.3g MB dispatched per rank per layer, %.2f nodes per token\n",
            x.a2a_total, x.a2a_total * pct, x.a2a_exposed,
            p->a2a == EP_A2A_HIERARCHICAL ? "hierarchical" : "direct", p->bytes_per_rank / 1e6,
            p->nodes_per_token);
    fprintf(f, "experts     ep %d over %d node%s × %d, %d experts (%d per rank%s), top-%d, routing %s",
            p->ep, p->nodes, p->nodes > 1 ? "s" : "", p->per_node, p->experts, p->experts / p->ep,
            c->experts.redundant ? " + redundant copies" : "", p->k,
            experts_routing_name(c->experts.routing));
    if (c->experts.routing == EP_ZIPF) fprintf(f, " (skew %g)", c->experts.skew);
    if (c->experts.routing == EP_DIRICHLET) fprintf(f, " (concentration %g)", c->experts.concentration);
    if (c->experts.capacity_factor > 0) fprintf(f, ", capacity factor %g", c->experts.capacity_factor);
    else fprintf(f, ", dropless");
    fputc('\n', f);
    double imb = 0, imb_max = 0, dropped = 0, assigned = 0;
    for (int i = 0; i < p->n_moe; i++) {
        imb += p->stats[i].imbalance_mean / p->n_moe;
        if (p->stats[i].imbalance_max > imb_max) imb_max = p->stats[i].imbalance_max;
        dropped += p->stats[i].dropped;
        assigned += p->stats[i].assigned;
    }
    fprintf(f, "imbalance   busiest rank ÷ mean rank %.3f on average, %.3f at worst; dropped %.0f of "
               "%.0f token-expert assignments (%.2f%%)\n", imb, imb_max, dropped, assigned,
            assigned > 0 ? 100 * dropped / assigned : 0);
    fprintf(f, "\n%-6s %-14s %-12s %-12s %-10s %-10s %-12s\n", "layer", "tok/expert min", "mean",
            "max", "imbalance", "worst", "dropped");
    for (int i = 0; i < p->n_moe; i++) {
        const struct ep_layer_stats *st = &p->stats[i];
        fprintf(f, "%-6d %-14.0f %-12.1f %-12.0f %-10.3f %-10.3f %-12.0f\n", st->layer, st->tok_min,
                st->tok_mean, st->tok_max, st->imbalance_mean, st->imbalance_max, st->dropped);
    }
}

static const char *recompute_name(int r)
{
    return r == RECOMPUTE_FULL ? "full" : r == RECOMPUTE_SELECTIVE ? "selective" : "none";
}

/* ---- where the time goes (issue 14: `mpsim run --breakdown`) ------------ */

static const char *const bd_names[N_BD] = { "forward", "input_grad", "weight_grad", "recompute" };

/* The chip's calibration and the stack the kernels were shaped for. */
static void report_kernels_line(FILE *f, const struct sim *s)
{
    const struct config *c = &s->cfg;
    const struct calib *k = &s->calib;
    static const char *const recipes[] = { "none", "megatron-2022", "megatron-core" };
    fprintf(f, "kernels     %s attention %s, %s GEMMs, recipe %s; ",
            c->training.attention == ATTENTION_FLASH ? "flash" : "unfused",
            c->training.dropout ? "with dropout" : "without dropout",
            c->model.compute_bits == 8 ? "fp8" : "bf16",
            c->training.recipe >= 0 && c->training.recipe < 3 ? recipes[c->training.recipe] : "?");
    if (k->generic)
        fprintf(f, "%s has no rows in hardware/kernels.csv: generic rows (*) with its catalogue "
                   "compute_eff %.2f and mem_eff %.2f\n", k->chip, s->sys.chip.compute_eff,
                s->sys.chip.mem_eff);
    else
        fprintf(f, "priced by the %s rows of hardware/kernels.csv%s\n", k->chip,
                k->flash_generic ? " (flash attention: the generic rows)" : "");
}

static void row_short(const struct sim *s, int row, char *buf, size_t size)
{
    if (row < 0 || row >= s->calib.n_rows) snprintf(buf, size, "-");
    else snprintf(buf, size, "line %ld", s->calib.rows[row].line);
}

void report_breakdown_text(FILE *f, const struct sim *s)
{
    if (!s->stage_bd) {
        fprintf(f, "\nbreakdown   n/a (a synthetic model runs no kernels)\n");
        return;
    }
    const struct calib *k = &s->calib;
    fprintf(f, "\nbreakdown   one microbatch per stage pass, by kernel class; in brackets the line of "
               "%s that priced the class's largest kernel\n", k->path);
    char launch[32];
    row_short(s, k->row[CAL_LAUNCH][0], launch, sizeof launch);
    for (int st = 0; st < s->prog.stages; st++)
        for (int b = 0; b < N_BD; b++) {
            const struct time_breakdown *t = &s->stage_bd[(size_t)st * N_BD + b];
            if (t->kernels == 0) continue;
            double total = 0;
            for (int c = 0; c < N_CT; c++) total += t->s[c];
            fprintf(f, "  stage %-3d %-11s %9.3f ms:", st, bd_names[b], total * 1e3);
            for (int c = 0; c < N_CT; c++) {
                char row[32];
                if (c == CT_LAUNCH) snprintf(row, sizeof row, "%s", launch);
                else row_short(s, t->row[c], row, sizeof row);
                fprintf(f, "  %s %.3f ms [%s]", calib_time_name(c), t->s[c] * 1e3, row);
            }
            fprintf(f, "  (%d kernels)\n", t->kernels);
        }
    const struct sim_result *r = &s->res;
    for (int d = 0; r->stage && d < r->stages; d++)
        fprintf(f, "  device %-3d exposed comm over the step: tp %.4g s, pp %.4g s, dp %.4g s, "
                   "ep %.4g s\n", d, mp_seconds(r->stage[d].exposed_comm[COMM_TP]),
                mp_seconds(r->stage[d].exposed_comm[COMM_PP]),
                mp_seconds(r->stage[d].exposed_comm[COMM_DP]),
                mp_seconds(r->stage[d].exposed_comm[COMM_EP]));
}

/* JSON key `breakdown`: the calibration file and chip, then per stage and
 * pass the seconds by class with the row labels, and per device the
 * exposed communication of the step by kind. */
static cJSON *breakdown_json(const struct sim *s)
{
    cJSON *o = cJSON_CreateObject();
    const struct calib *k = &s->calib;
    cJSON_AddStringToObject(o, "calibration", k->path);
    cJSON_AddStringToObject(o, "chip", k->chip);
    cJSON_AddBoolToObject(o, "generic", k->generic);
    cJSON *stages = cJSON_AddArrayToObject(o, "stages");
    for (int st = 0; s->stage_bd && st < s->prog.stages; st++) {
        cJSON *so = cJSON_CreateObject();
        cJSON_AddNumberToObject(so, "stage", st);
        for (int b = 0; b < N_BD; b++) {
            const struct time_breakdown *t = &s->stage_bd[(size_t)st * N_BD + b];
            cJSON *po = cJSON_AddObjectToObject(so, bd_names[b]);
            double total = 0;
            for (int c = 0; c < N_CT; c++) total += t->s[c];
            cJSON_AddNumberToObject(po, "total_s", total);
            cJSON *rows = cJSON_CreateObject();
            for (int c = 0; c < N_CT; c++) {
                char key[32], label[160];
                snprintf(key, sizeof key, "%s_s", calib_time_name(c));
                cJSON_AddNumberToObject(po, key, t->s[c]);
                calib_row_label(k, c == CT_LAUNCH ? k->row[CAL_LAUNCH][0] : t->row[c], label,
                                sizeof label);
                cJSON_AddStringToObject(rows, calib_time_name(c), label);
            }
            cJSON_AddNumberToObject(po, "kernels", t->kernels);
            cJSON_AddItemToObject(po, "rows", rows);
        }
        cJSON_AddItemToArray(stages, so);
    }
    cJSON *dev = cJSON_AddArrayToObject(o, "devices");
    const struct sim_result *r = &s->res;
    for (int d = 0; r->stage && d < r->stages; d++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "device", d);
        cJSON *x = cJSON_AddObjectToObject(e, "exposed_comm_s");
        for (int q = COMM_TP; q < N_COMM_KINDS; q++)
            cJSON_AddNumberToObject(x, tg_comm_name((enum comm_kind)q),
                                    mp_seconds(r->stage[d].exposed_comm[q]));
        cJSON_AddItemToArray(dev, e);
    }
    return o;
}

/* Context parallelism and given stages (branch context, issue 17): the CP
 * layout in Megatron-Core's chip order and each stage's decoder layers. */
static void report_context_text(FILE *f, const struct sim *s)
{
    const struct config *c = &s->cfg;
    if (s->has_context) {
        const struct cp_plan *p = &s->context;
        fprintf(f, "context     cp %d (%s", p->cp, c->parallel.cp_kind == CP_ULYSSES ? "ulysses"
                : c->parallel.cp_kind == CP_HYBRID ? "hybrid" : "ring");
        if (c->parallel.cp_kind == CP_HYBRID)
            fprintf(f, ": all-to-all over %d, ring of %d", p->ulysses, p->ring);
        fprintf(f, "), %d tokens per rank; chips tp-cp-dp-pp, %d in all; gradients over "
                   "dp × cp = %d\n", c->model.seq_len / p->cp, s->res.n_chips,
                c->parallel.dp * p->cp);
    }
    const struct config_int_list *sl = &c->parallel.stage_layers;
    if (sl->n && s->stage_decoders) {
        fprintf(f, "stages      decoder layers per pipeline stage:");
        for (int i = 0; i < sl->n; i++) fprintf(f, "%s%d", i ? "," : " ", sl->v[i]);
        if (s->prog.stages != sl->n) {
            fprintf(f, "; per chunk in stage order:");
            for (int i = 0; i < s->prog.stages; i++)
                fprintf(f, "%s%d", i ? "," : " ", s->stage_decoders[i]);
        }
        fputc('\n', f);
    }
}

void report_text(FILE *f, const struct sim *s)
{
    const struct config *c = &s->cfg;
    const struct sim_result *r = &s->res;
    char a[64], b[64];
    fprintf(f, "scenario    %s\n", c->name[0] ? c->name : "(defaults)");
    if (s->has_model && s->model.experts) /* issue 15: MoE models show their active count */
        fprintf(f, "model       %s: %d layers, hidden %d, %.2fB parameters (%.2fB active), seq %d\n",
                s->model.name, s->model.decoders, s->model.hidden, model_params(&s->model) / 1e9,
                model_active_params(&s->model) / 1e9, c->model.seq_len);
    else if (s->has_model)
        fprintf(f, "model       %s: %d layers, hidden %d, %.2fB parameters, seq %d\n",
                s->model.name, s->model.decoders, s->model.hidden, model_params(&s->model) / 1e9,
                c->model.seq_len);
    else
        fprintf(f, "model       synthetic: forward %g ms, backward %g + %g ms per stage, hop %g ms\n",
                (double)c->synthetic.forward / 1e9, (double)c->synthetic.backward_input / 1e9,
                (double)c->synthetic.backward_weight / 1e9, (double)c->synthetic.hop / 1e9);
    fprintf(f, "system      %s: %d × %s\n", s->sys.name, r->n_chips, s->sys.chip.name);
    if (s->has_system) {
        /* Which model priced the collectives (hardware/coll_curve.h). */
        char line[256];
        fprintf(f, "collectives %s\n", collective_summary(&s->sys, line, sizeof line));
    }
    if (s->has_calib) report_kernels_line(f, s);
    fprintf(f, "layout      tp %d × pp %d × dp %d, vpp %d, schedule %s, %d microbatches of %d, "
               "recompute %s, zero %d\n",
            c->parallel.tp, c->parallel.pp, c->parallel.dp, c->parallel.vpp, c->training.schedule,
            r->microbatches, c->training.micro_batch, recompute_name(c->training.recompute),
            c->training.zero);
    report_context_text(f, s);
    if (!r->feasible) {
        fprintf(f, "INFEASIBLE  %s\n", r->infeasible_reason);
        if (!r->stage) return;
    }
    fmt_time(a, sizeof a, r->step_time);
    fprintf(f, "\nstep time   %s", a);
    if (r->has_formula && r->formula_step > 0) {
        fmt_time(b, sizeof b, r->formula_step);
        fprintf(f, "    (closed form %s)", b);
    }
    fprintf(f, "\nbubble      %.4f (pipeline only: compute waiting on another stage)", r->bubble);
    fmt_time(a, sizeof a, r->max_span);
    fprintf(f, "\n            %.4f over the largest stage span (%s)\n", r->bubble_span, a);
    if (r->has_formula) fprintf(f, "closed form %s\n", r->formula_text);
    if (r->has_formula_real) fprintf(f, "            %s\n", r->formula_real_text);
    fprintf(f, "tokens/s    %.6g\n", r->tokens_per_s);
    if (s->has_model)
        fprintf(f, "MFU         %.2f%%   HFU %.2f%%   (%.4g model FLOPs per step)\n", 100 * r->mfu,
                100 * r->hfu, r->model_flops);
    else
        fprintf(f, "MFU         n/a (a synthetic model has no FLOP count)\n");
    const struct cost *co = &r->cost;
    if (co->basis != COST_UNKNOWN)
        fprintf(f, "cost        $%.4g per step, $%.4g per million tokens (%s, $%.4g per chip-hour)\n",
                co->usd_per_step, co->usd_per_mtok, cost_basis_name(co->basis),
                co->usd_per_chip_hour);
    else
        fprintf(f, "cost        n/a (hardware/chips.csv has no price for %s)\n", s->sys.chip.name);
    fprintf(f, "budget      %.4g tokens: %.4g chip-hours, %.4g days", co->budget_tokens,
            co->budget_chip_hours, co->budget_days);
    if (co->basis != COST_UNKNOWN) fprintf(f, ", $%.4g", co->budget_usd);
    fputc('\n', f);
    report_split_text(f, s);
    if (s->offload.kind != OFFLOAD_NONE)
        fprintf(f, "offload     %s: %.4g GB per node in host memory (of %.4g GB); copies not "
                   "hidden by compute %.4g s\n", s->cfg.training.offload == OFFLOAD_ALL ? "all" :
                   s->cfg.training.offload == OFFLOAD_WEIGHTS ? "optimizer+weights" : "optimizer",
                r->host_mem_bytes / 1e9, r->host_mem_capacity / 1e9, r->exposed_comm_s[COMM_HOST]);
    if (s->has_experts && r->stage) report_experts_text(f, s);
    fprintf(f, "events      %" PRIu64 " in %.3f s of simulator time", r->events, r->sim_wall_s);
    if (r->steady_skipped_periods > 0)
        fprintf(f, " (%" PRId64 " periods of steady state skipped, results as simulated in full)",
                r->steady_skipped_periods);
    fputc('\n', f);
    if (s->want_breakdown) report_breakdown_text(f, s);

    fprintf(f, "\n%-5s %-5s %-12s %-12s %-12s %-12s %-11s %-10s %-10s %-10s %-11s %s\n", "stage",
            "chip", "busy", "idle", "first start", "last end", "peak mem", "weights", "grads",
            "optimizer", "activations", "kv+comm");
    for (int d = 0; d < r->stages; d++) {
        const struct stage_report *st = &r->stage[d];
        char busy[32], idle[32], first[32], last[32], peak[32], w[32], g[32], o[32], act[32];
        char other[32];
        fmt_time(busy, sizeof busy, st->busy);
        fmt_time(idle, sizeof idle, r->step_time - st->busy);
        fmt_time(first, sizeof first, st->first_start);
        fmt_time(last, sizeof last, st->last_end);
        fmt_bytes(peak, sizeof peak, st->peak_mem);
        fmt_bytes(w, sizeof w, st->mem[MEM_WEIGHTS]);
        fmt_bytes(g, sizeof g, st->mem[MEM_GRADS]);
        fmt_bytes(o, sizeof o, st->mem[MEM_OPTIMIZER]);
        fmt_bytes(act, sizeof act, st->mem[MEM_ACTIVATIONS]);
        /* the columns add up to the peak: KV cache and communication buffers last */
        fmt_bytes(other, sizeof other, st->mem[MEM_KV] + st->mem[MEM_COMM]);
        fprintf(f, "%-5d %-5d %-12s %-12s %-12s %-12s %-11s %-10s %-10s %-10s %-11s %s\n", d,
                st->chip, busy, idle, first, last, peak, w, g, o, act, other);
    }
    report_split_stage_table(f, s);
}

/* The scenario's keys that differ from the defaults, as the INI would hold
 * them: what the run was asked (`mpsim compare` reads them back). */
static void keys_json(cJSON *root, const struct config *cfg)
{
    struct config def;
    config_defaults(&def);
    cJSON *o = cJSON_AddObjectToObject(root, "keys");
    for (const struct config_key *k = config_keys; k->name; k++) {
        char a[CONFIG_STR], b[CONFIG_STR];
        config_format_value(cfg, k, a, sizeof a);
        config_format_value(&def, k, b, sizeof b);
        if (strcmp(a, b)) cJSON_AddStringToObject(o, k->name, a);
    }
}

void report_json(FILE *f, const struct sim *s)
{
    const struct sim_result *r = &s->res;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scenario", s->cfg.name);
    cJSON_AddStringToObject(root, "schedule", s->cfg.training.schedule);
    cJSON_AddNumberToObject(root, "step_time_s", mp_seconds(r->step_time));
    cJSON_AddNumberToObject(root, "tokens_per_s", r->tokens_per_s);
    /* MFU and HFU are undefined without a FLOP count (synthetic models). */
    if (s->has_model) {
        cJSON_AddNumberToObject(root, "mfu", r->mfu);
        cJSON_AddNumberToObject(root, "hfu", r->hfu);
    } else {
        cJSON_AddNullToObject(root, "mfu");
        cJSON_AddNullToObject(root, "hfu");
    }
    cJSON_AddNumberToObject(root, "bubble", r->bubble);
    cJSON_AddNumberToObject(root, "bubble_span", r->bubble_span);
    cJSON_AddBoolToObject(root, "feasible", r->feasible);
    if (r->feasible)
        cJSON_AddNullToObject(root, "infeasible_reason");
    else
        cJSON_AddStringToObject(root, "infeasible_reason", r->infeasible_reason);
    cJSON_AddNumberToObject(root, "events", (double)r->events);
    /* Periods of steady state put back rather than simulated op by op
     * (sim/engine/skip.c); 0 when every op was simulated. */
    cJSON_AddNumberToObject(root, "steady_state_skipped_periods", (double)r->steady_skipped_periods);
    /* training.offload: what a node's host memory holds (0 without). */
    cJSON_AddNumberToObject(root, "host_mem_bytes", r->host_mem_bytes);
    /* Where the step went (step_split.h): mean over stages, summing to
     * step_time_s; per stage in stages[].step_split. */
    if (r->stage) report_split_json(root, "step_split", &r->split);
    /* Communication not hidden by compute, per kind: the step split's
     * exposed parts (the time the stages' compute waited for it). */
    cJSON *ex = cJSON_AddObjectToObject(root, "exposed_comm_s");
    static const int kinds[] = { COMM_TP, COMM_PP, COMM_DP, COMM_EP, COMM_CP, COMM_HOST };
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        cJSON_AddNumberToObject(ex, tg_comm_name(kinds[k]), r->exposed_comm_s[kinds[k]]);
    cJSON_AddNumberToObject(root, "sim_wall_s", r->sim_wall_s);
    /* Cost figures are null when the catalogue has no price for the chip. */
    const struct cost *co = &r->cost;
    bool priced = co->basis != COST_UNKNOWN;
    cJSON_AddStringToObject(root, "cost_basis", cost_basis_name(co->basis));
    if (priced) {
        cJSON_AddNumberToObject(root, "usd_per_chip_hour", co->usd_per_chip_hour);
        cJSON_AddNumberToObject(root, "usd_per_step", co->usd_per_step);
        cJSON_AddNumberToObject(root, "usd_per_mtok", co->usd_per_mtok);
    } else {
        cJSON_AddNullToObject(root, "usd_per_chip_hour");
        cJSON_AddNullToObject(root, "usd_per_step");
        cJSON_AddNullToObject(root, "usd_per_mtok");
    }
    cJSON_AddNumberToObject(root, "chip_hours_per_step", co->chip_hours_per_step);
    cJSON_AddNumberToObject(root, "budget_tokens", co->budget_tokens);
    cJSON_AddNumberToObject(root, "budget_chip_hours", co->budget_chip_hours);
    cJSON_AddNumberToObject(root, "budget_days", co->budget_days);
    if (priced) cJSON_AddNumberToObject(root, "budget_usd", co->budget_usd);
    else cJSON_AddNullToObject(root, "budget_usd");
    cJSON_AddNumberToObject(root, "chips", r->n_chips);
    if (s->has_system) {
        cJSON_AddStringToObject(root, "chip", s->sys.chip.name);
        char model[160];
        cJSON_AddStringToObject(root, "collective_model",
                                collective_model(&s->sys, model, sizeof model));
        cJSON_AddNumberToObject(root, "capacity_bytes", s->sys.chip.mem_bytes);
    }
    cJSON_AddNumberToObject(root, "microbatches", r->microbatches);
    /* issue 15: every parameter and those one token uses (embedding and head
     * included; `mpsim model` gives the other conventions); null for a
     * synthetic model. */
    if (s->has_model) {
        cJSON_AddNumberToObject(root, "params", model_params(&s->model));
        cJSON_AddNumberToObject(root, "active_params", model_active_params(&s->model));
    } else {
        cJSON_AddNullToObject(root, "params");
        cJSON_AddNullToObject(root, "active_params");
    }
    if (r->has_formula) {
        cJSON *fo = cJSON_AddObjectToObject(root, "closed_form");
        cJSON_AddStringToObject(fo, "text", r->formula_text);
        if (r->formula_step > 0)
            cJSON_AddNumberToObject(fo, "step_time_s", mp_seconds(r->formula_step));
        else
            cJSON_AddNullToObject(fo, "step_time_s");
        /* figure: which result key the form predicts (bubble, bubble_span,
         * or idle_s = the largest per-stage step − busy) */
        cJSON_AddStringToObject(fo, "figure", r->formula_figure);
        cJSON_AddNumberToObject(fo, "predicted", r->formula_bubble);
        cJSON_AddNumberToObject(fo, "simulated", r->formula_simulated);
        if (r->has_formula_real) {
            /* The same form on the stages' real times, in seconds per stage. */
            cJSON *ro = cJSON_AddObjectToObject(fo, "real_stages");
            cJSON_AddStringToObject(ro, "text", r->formula_real_text);
            cJSON_AddNumberToObject(ro, "bubble_s", r->formula_real_bubble_s);
            cJSON_AddNumberToObject(ro, "simulated_bubble_s", r->formula_real_simulated_s);
        }
    }
    if (s->has_experts && r->stage) {
        /* Expert parallelism: the step split (means over stages, seconds),
         * all-to-all time in all, and routing per MoE layer. */
        const struct ep_plan *p = &s->experts;
        struct ep_split x = ep_split(s);
        cJSON *eo = cJSON_AddObjectToObject(root, "experts");
        cJSON_AddNumberToObject(eo, "ep", p->ep);
        cJSON_AddStringToObject(eo, "routing", experts_routing_name(s->cfg.experts.routing));
        cJSON_AddStringToObject(eo, "all_to_all", p->a2a == EP_A2A_HIERARCHICAL ? "hierarchical" : "direct");
        cJSON_AddNumberToObject(eo, "tokens_per_s_per_chip", r->n_chips ? r->tokens_per_s / r->n_chips : 0);
        cJSON_AddNumberToObject(eo, "compute_s", x.compute);
        cJSON_AddNumberToObject(eo, "exposed_all_to_all_s", x.a2a_exposed);
        cJSON_AddNumberToObject(eo, "other_exposed_comm_s", x.other_exposed);
        cJSON_AddNumberToObject(eo, "bubble_s", x.bubble);
        cJSON_AddNumberToObject(eo, "all_to_all_s", x.a2a_total);
        double step = mp_seconds(r->step_time);
        cJSON_AddNumberToObject(eo, "all_to_all_share", step > 0 ? x.a2a_total / step : 0);
        cJSON_AddNumberToObject(eo, "nodes_per_token", p->nodes_per_token);
        double dropped = 0, assigned = 0;
        cJSON *layers = cJSON_AddArrayToObject(eo, "layers");
        for (int i = 0; i < p->n_moe; i++) {
            const struct ep_layer_stats *st = &p->stats[i];
            cJSON *lo = cJSON_CreateObject();
            cJSON_AddNumberToObject(lo, "layer", st->layer);
            cJSON_AddNumberToObject(lo, "tokens_per_expert_min", st->tok_min);
            cJSON_AddNumberToObject(lo, "tokens_per_expert_mean", st->tok_mean);
            cJSON_AddNumberToObject(lo, "tokens_per_expert_max", st->tok_max);
            cJSON_AddNumberToObject(lo, "imbalance", st->imbalance_mean);
            cJSON_AddNumberToObject(lo, "imbalance_max", st->imbalance_max);
            cJSON_AddNumberToObject(lo, "dropped", st->dropped);
            cJSON_AddItemToArray(layers, lo);
            dropped += st->dropped;
            assigned += st->assigned;
        }
        cJSON_AddNumberToObject(eo, "dropped", dropped);
        cJSON_AddNumberToObject(eo, "assigned", assigned);
    }
    keys_json(root, &s->cfg);
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int d = 0; r->stage && d < r->stages; d++) {
        const struct stage_report *st = &r->stage[d];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", d);
        cJSON_AddNumberToObject(o, "chip", st->chip);
        cJSON_AddNumberToObject(o, "busy_s", mp_seconds(st->busy));
        cJSON_AddNumberToObject(o, "first_start_s", mp_seconds(st->first_start));
        cJSON_AddNumberToObject(o, "last_end_s", mp_seconds(st->last_end));
        cJSON_AddNumberToObject(o, "peak_mem_bytes", st->peak_mem);
        cJSON *sx = cJSON_AddObjectToObject(o, "exposed_comm_s");
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
            cJSON_AddNumberToObject(sx, tg_comm_name(kinds[k]), mp_seconds(st->exposed_comm[kinds[k]]));
        report_split_json(o, "step_split", &st->split);
        cJSON *mem = cJSON_AddObjectToObject(o, "mem");
        static const int cats[] = { MEM_WEIGHTS, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_KV,
                                    MEM_COMM };
        for (size_t k = 0; k < sizeof cats / sizeof *cats; k++)
            cJSON_AddNumberToObject(mem, tg_mem_cat_name(cats[k]), st->mem[cats[k]]);
        cJSON_AddItemToArray(stages, o);
    }
    if (s->want_breakdown && s->has_model) cJSON_AddItemToObject(root, "breakdown", breakdown_json(s));
    char *text = cJSON_Print(root);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

/* ---- the timeline CSV (the viewer's input) ---- */

/* chunk_of[path*stages + s]: the stage's index among those its device holds. */
static int *chunk_table(const struct pipe_program *p)
{
    int *chunk = mp_xmalloc((size_t)p->paths * p->stages * sizeof *chunk);
    int *count = mp_xcalloc((size_t)p->devices, sizeof *count);
    for (int q = 0; q < p->paths; q++)
        for (int s = 0; s < p->stages; s++) {
            int d = p->device_of[q * p->stages + s];
            chunk[q * p->stages + s] = count[d]++;
        }
    free(count);
    return chunk;
}

static void csv_text(FILE *f, const char *text, const char *sep)
{
    csv_fwrite(f, text, strlen(text));
    fputs(sep, f);
}

/* What the viewer needs besides the ops: the run's figures and layout, and
 * per chip its capacity, the model stages it holds (in chunk order, so
 * "stages=0,7" on a ZB-V device) and, for a chip that is not a pipeline
 * device but has ops (a DP all-reduce lane, an EP rank), the device it
 * serves. Megatron's layout puts device d on chips d·tp·dp .. (d+1)·tp·dp − 1
 * (sim.c), so that is the chip's block. */
static void timeline_meta_rows(const struct sim *s, const int *stage_of_chip,
                               const struct report_tl_sink *k)
{
    const struct config *cfg = &s->cfg;
    const struct sim_result *r = &s->res;
    const struct pipe_program *p = &s->prog;
    const struct taskgraph *g = &s->g;
    char a[48], label[512];
    snprintf(label, sizeof label, "scenario=%s", cfg->name);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "schedule=%s", cfg->training.schedule);
    k->meta(k->ctx, -1, -1, label);
    units_format_seconds_exact(r->step_time, a, sizeof a);
    snprintf(label, sizeof label, "step_time_s=%s", a);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "bubble=%.6f", r->bubble);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "mfu=%.6f", r->mfu);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "chips=%d", r->n_chips);
    k->meta(k->ctx, -1, -1, label);
    report_split_meta(s, k->meta, k->ctx);
    snprintf(label, sizeof label, "model=%s", cfg->model.kind == MODEL_SYNTHETIC ? "synthetic"
                                              : s->has_model ? s->model.name : "?");
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "parallel=tp %d pp %d dp %d ep %d vpp %d", cfg->parallel.tp,
             cfg->parallel.pp, cfg->parallel.dp, cfg->parallel.ep, cfg->parallel.vpp);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "microbatches=%d", p->microbatches);
    k->meta(k->ctx, -1, -1, label);
    snprintf(label, sizeof label, "directions=%d", p->paths);
    k->meta(k->ctx, -1, -1, label);
    for (int d = 0; d < p->devices; d++) {
        int chip = s->chip_of_device[d];
        snprintf(label, sizeof label, "capacity_bytes=%.0f", s->sys.chip.mem_bytes);
        k->meta(k->ctx, chip, d, label);
        int len = snprintf(label, sizeof label, "stages=");
        const char *sep = "";
        for (int q = 0; q < p->paths; q++)
            for (int st = 0; st < p->stages && len < (int)sizeof label - 12; st++)
                if (p->device_of[q * p->stages + st] == d) {
                    len += snprintf(label + len, sizeof label - (size_t)len, "%s%d", sep, st);
                    sep = ",";
                }
        k->meta(k->ctx, chip, d, label);
    }
    bool *has_ops = mp_xcalloc((size_t)g->n_chips, sizeof *has_ops);
    for (int i = 0; i < g->n_ops; i++) has_ops[g->ops[i].chip] = true;
    int block = cfg->parallel.tp * cfg->parallel.dp;
    for (int c = 0; c < g->n_chips; c++) {
        if (!has_ops[c] || stage_of_chip[c] >= 0 || block < 1) continue;
        int owner = c / block * block;
        if (owner >= g->n_chips || stage_of_chip[owner] < 0) continue;
        snprintf(label, sizeof label, "serves=%d", owner);
        k->meta(k->ctx, c, stage_of_chip[owner], label);
    }
    free(has_ops);
}

/* fb_stage2[op] for every FB op: the stage of its backward half. The task
 * graph keeps only the forward's stage; the k-th FB entry of a device's
 * program is the k-th FB op on its chip's compute stream (FB stays one op,
 * pipeline.h), so walk both in order. -1 elsewhere. */
static int *fb_stage2(const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    const struct pipe_program *p = &s->prog;
    int *out = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *out);
    for (int i = 0; i < g->n_ops; i++) out[i] = -1;
    for (int d = 0; d < p->devices; d++) {
        int chip = s->chip_of_device[d], k = 0;
        int st = chip * N_STREAMS + STREAM_COMPUTE;
        for (int j = g->stream_off[st]; j < g->stream_off[st + 1]; j++) {
            int id = g->stream_ops[j];
            if (g->ops[id].tag != TAG_FB) continue;
            while (k < p->n_ops[d] && p->ops[d][k].kind != PIPE_FB) k++;
            if (k >= p->n_ops[d]) break;
            out[id] = p->ops[d][k++].stage2;
        }
    }
    return out;
}

void report_timeline_each(const struct sim *s, const struct report_tl_sink *k)
{
    const struct taskgraph *g = &s->g;
    const struct engine *e = &s->e;
    const struct pipe_program *p = &s->prog;
    int *chunk = chunk_table(p);
    int *stage2 = fb_stage2(s);
    int *stage_of_chip = mp_xmalloc((size_t)g->n_chips * sizeof *stage_of_chip);
    for (int c = 0; c < g->n_chips; c++) stage_of_chip[c] = -1;
    for (int d = 0; d < p->devices; d++) stage_of_chip[s->chip_of_device[d]] = d;
    timeline_meta_rows(s, stage_of_chip, k);

    char label[256];
    int block = s->cfg.parallel.tp * s->cfg.parallel.dp;
    for (int i = 0; i < g->n_ops; i++) {
        const struct op *o = &g->ops[i];
        struct report_tl_op r = {
            .chip = o->chip, .stream = o->stream, .kind = tg_tag_name(o->tag), .mb = o->mb,
            .chunk = -1, .layer_first = o->layer_first, .layer_last = o->layer_last,
            .start = e->start[i], .end = e->end[i], .bytes = o->bytes, .label = label, .id = i,
            .released_by = e->released_by ? e->released_by[i] : -1, .mb2 = o->mb2, .chunk2 = -1,
            .dir = -1, .dir2 = -1,
            .comm = o->stream == STREAM_COMM && o->comm != COMM_NONE ? tg_comm_name(o->comm) : "",
        };
        if (o->stage >= 0 && o->mb >= 0 && o->mb < p->microbatches) {
            int q = p->path_of_mb[o->mb];
            r.chunk = chunk[q * p->stages + o->stage];
            if (p->paths > 1) r.dir = q;
        }
        if (stage2[i] >= 0 && o->mb2 >= 0 && o->mb2 < p->microbatches) {
            int q = p->path_of_mb[o->mb2];
            r.chunk2 = chunk[q * p->stages + stage2[i]];
            if (p->paths > 1) r.dir2 = q;
        }
        /* A chip that is no pipeline device (a DP lane, an EP rank) is
         * written with the device it serves as its stage. */
        r.stage = stage_of_chip[o->chip];
        if (r.stage < 0 && block > 0 && o->chip / block * block < g->n_chips)
            r.stage = stage_of_chip[o->chip / block * block];
        if (o->mb2 >= 0)
            snprintf(label, sizeof label, "%s mb %d + mb %d", tg_tag_name(o->tag), o->mb, o->mb2);
        else if (o->mb >= 0)
            snprintf(label, sizeof label, "%s mb %d stage %d", tg_tag_name(o->tag), o->mb, o->stage);
        else
            snprintf(label, sizeof label, "%s", tg_tag_name(o->tag));
        k->op(k->ctx, &r);
    }
    for (int i = 0; i < e->n_mem_log; i++) {
        const struct mem_event *m = &e->mem_log[i];
        k->mem(k->ctx, m->chip, stage_of_chip[m->chip], m->time, m->delta, m->in_use,
               tg_mem_cat_name(m->cat));
    }
    free(chunk);
    free(stage2);
    free(stage_of_chip);
}

/* The CSV writer is one sink of report_timeline_each; mpsim-view's
 * in-process loader is another. */
static void csv_meta(void *ctx, int chip, int stage, const char *label)
{
    FILE *f = ctx;
    fprintf(f, "%d,%d,meta,meta,-1,-1,-1,-1,0,0,0,,", chip, stage);
    csv_text(f, label, ",,,,,,,\n");
}

static void csv_op(void *ctx, const struct report_tl_op *o)
{
    static const char *const dir_name[] = { "down", "up" };
    FILE *f = ctx;
    char a[48], b[48];
    units_format_seconds_exact(o->start, a, sizeof a);
    units_format_seconds_exact(o->end, b, sizeof b);
    fprintf(f, "%d,%d,%s,%s,%d,%d,%d,%d,%s,%s,%.0f,,", o->chip, o->stage,
            tg_stream_name(o->stream), o->kind, o->mb, o->chunk, o->layer_first, o->layer_last, a,
            b, o->bytes);
    csv_text(f, o->label, ",");
    fprintf(f, "%lld,%lld,%d,%d,%s,%s,%s\n", o->id, o->released_by, o->mb2, o->chunk2,
            o->dir >= 0 ? dir_name[o->dir & 1] : "", o->dir2 >= 0 ? dir_name[o->dir2 & 1] : "",
            o->comm);
}

static void csv_mem(void *ctx, int chip, int stage, mp_time t, double delta, double in_use,
                    const char *cat)
{
    FILE *f = ctx;
    char a[48];
    units_format_seconds_exact(t, a, sizeof a);
    fprintf(f, "%d,%d,memory,mem,-1,-1,-1,-1,%s,%s,%.0f,%.0f,%s,,,,,,,\n", chip, stage, a, a, delta,
            in_use, cat);
}

void report_timeline_csv(FILE *f, const struct sim *s)
{
    /* The first 13 columns are the original format; the 7 after them say
     * which op released each op and how FB and DualPipe ops split
     * (report.h). mpsim-view reads files with or without them. */
    fputs("chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,"
          "mem_bytes,label,op,released_by,microbatch2,chunk2,direction,direction2,comm\n", f);
    struct report_tl_sink k = { .ctx = f, .meta = csv_meta, .op = csv_op, .mem = csv_mem };
    report_timeline_each(s, &k);
}
