/* cli_collective.c — `mpsim collective`: one collective on a system preset,
 * timed the way nccl-tests reports it (shared/reference/formats.md): size,
 * time, algbw = bytes / time, busbw = algbw × 2(n−1)/n for all-reduce,
 * × (n−1)/n for reduce-scatter, all-gather and all-to-all, × 1 otherwise.
 * Both fidelities are printed: the fast time (alpha-beta, or the measured
 * busbw curve, as the header line says) and the engine running the
 * expanded transfers (detailed), so they can be compared. */
#include <stdlib.h>
#include <string.h>

#include "hardware/chip.h"
#include "cli.h"
#include "sim/strategy/collective.h"
#include "hardware/system.h"
#include "sim/io/budget.h"
#include "sim/io/units.h"

/* Caps (issue 16): a scenario's sizes stop at 2^60 bytes (1 EiB, config.c);
 * a collective's chips at 2^20, far past any machine built, and the work
 * budget (sim/io/budget.h) decides what runs at that scale. */
#define BYTES_MAX 0x1p60
#define CHIPS_MAX 1048576

static const char collective_usage_text[] =
    "usage: mpsim collective --system S --op OP --bytes SIZE --chips N [--algo A] [--chunks C]\n"
    "                        [--sweep] [--fast] [--force]\n"
    "\n"
    "  --system S   system preset (mpsim list systems) or path to a system .ini\n"
    "  --op OP      all_reduce | reduce_scatter | all_gather | all_to_all | broadcast | send_recv\n"
    "  --bytes SIZE whole buffer, as nccl-tests counts it (8GiB, 64MB, 1024)\n"
    "  --chips N    chips 0..N-1 of the system (nodes are added as needed)\n"
    "  --algo A     auto | ring | tree | halving_doubling | direct | hierarchical (default auto)\n"
    "  --chunks C   ring algorithms: the buffer in C pieces in flight at once, each step\n"
    "               sending them in turn (NCCL's chunks; default 1). A chip forwards a piece\n"
    "               as soon as it has arrived, and a link is busy only while bytes leave, so\n"
    "               the latency is paid once per step, not once per piece (alpha-beta on\n"
    "               the links: a measured curve is NCCL's own pipelining, one buffer)\n"
    "  --sweep      every power of two from 8 B up to SIZE, like nccl-tests -b 8 -e SIZE\n"
    "  --fast       the fast time only (no detailed engine run)\n"
    "\n"
    "The fast time is the system's measured busbw curve (hardware/collectives.csv,\n"
    "[scaleup] busbw_curve: dgx-a100, dgx-h100, dgx-h200, mi300x-node, p6-b200) for a\n"
    "ring or auto all-reduce, all-gather or reduce-scatter inside one node,\n"
    "interpolated between measured sizes; else alpha-beta on the links. Across nodes,\n"
    "with several chips of the group in each, auto takes the faster of hierarchical\n"
    "and NCCL's ring on every NIC rail (a ring per NIC, each on SIZE over the group's\n"
    "chips per node: large buffers at that many NICs' bandwidth); --algo ring is the\n"
    "latter, and so is auto at every size on a system whose [scaleout] says\n"
    "auto_algorithm = ring (p6-b200: NCCL was measured to pick it). The first two\n"
    "lines of the output say which.\n"
    "  --force      run past the work budget\n"
    "\n"
    "Limits: SIZE at most 1024PiB (2^60 bytes); N at most 1048576. The work (routes\n"
    "priced, and the detailed run's events: a ring all-reduce is N x 2(N-1) of them)\n"
    "is estimated first; past the budget (4 GiB, or 1 h at about 1 us an event) the\n"
    "command stops and says so, unless --force (or --fast, which skips the events).\n";

/* Time one collective at detailed fidelity by running the engine. Only the
 * makespan is printed, so rings need no op per transfer: the compact form
 * keeps 4,096 chips in megabytes instead of gigabytes. */
static mp_time detailed_time(const struct system *sys, const struct coll_spec *c)
{
    struct coll_spec cc = *c;
    cc.compact = true;
    struct mp_error err = { 0 };
    mp_time t;
    collective_run_alone(sys, &cc, &t, NULL, &err);
    return t;
}

static void row(const struct system *sys, struct coll_spec *c, double bytes, bool fast_only)
{
    c->bytes = bytes;
    mp_time fast = collective_time(sys, c);
    mp_time det = fast_only ? -1 : detailed_time(sys, c);
    double ts = mp_seconds(fast), algbw = ts > 0 ? bytes / ts / 1e9 : 0;
    double busbw = algbw * collective_bus_factor(c->op, c->n);
    if (det >= 0)
        printf("%14.0f %12.2f %10.2f %10.2f %14.2f\n", bytes, ts * 1e6, algbw, busbw,
               mp_seconds(det) * 1e6);
    else
        printf("%14.0f %12.2f %10.2f %10.2f %14s\n", bytes, ts * 1e6, algbw, busbw, "-");
}

int cli_collective(int argc, char **argv)
{
    const char *system = NULL, *op_name = NULL, *bytes_text = NULL, *chips_text = NULL;
    const char *algo_name = "auto", *chunks_text = "1";
    int sweep = 0;
    bool fast_only = false, force = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(collective_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--sweep")) {
            sweep = 1;
        } else if (!strcmp(a, "--fast")) {
            fast_only = true;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "--system") || !strcmp(a, "--op") || !strcmp(a, "--bytes") ||
                   !strcmp(a, "--chips") || !strcmp(a, "--algo") || !strcmp(a, "--chunks")) {
            if (i + 1 >= argc) return cli_usage_error("collective: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--system")) system = v;
            else if (!strcmp(a, "--op")) op_name = v;
            else if (!strcmp(a, "--bytes")) bytes_text = v;
            else if (!strcmp(a, "--chips")) chips_text = v;
            else if (!strcmp(a, "--chunks")) chunks_text = v;
            else algo_name = v;
        } else {
            if (a[0] == '-')
                return cli_unknown_option("collective", a, (const char *const[]){ "--system",
                                          "--op", "--bytes", "--chips", "--algo", "--chunks",
                                          "--sweep", "--fast", "--force", "--help", NULL });
            return cli_usage_error("collective: unexpected argument '%s'", a);
        }
    }
    if (!system || !op_name || !bytes_text || !chips_text)
        return cli_usage_error("%s", "collective: needs --system, --op, --bytes and --chips; "
                                     "see mpsim collective --help");
    int op = collective_op_find(op_name), algo = collective_algo_find(algo_name);
    if (op < 0)
        return cli_usage_error("collective: --op '%s': expected all_reduce, reduce_scatter, "
                               "all_gather, all_to_all, broadcast or send_recv", op_name);
    if (algo < 0)
        return cli_usage_error("collective: --algo '%s': expected auto, ring, tree, "
                               "halving_doubling, direct or hierarchical", algo_name);
    double bytes;
    if (units_parse_size(bytes_text, &bytes) != 0 || !(bytes > 0) || bytes > BYTES_MAX)
        return cli_usage_error("collective: --bytes '%s': expected a size above zero such as "
                               "8GiB or 64MB, at most 1024PiB (2^60 bytes)", bytes_text);
    long long n;
    if (units_parse_int(chips_text, op == COLL_SEND_RECV ? 2 : 1, CHIPS_MAX, &n))
        return cli_usage_error("collective: --chips '%s': expected a whole number from 1 (2 for "
                               "send_recv) to 1048576", chips_text);

    char *end;
    long chunks = strtol(chunks_text, &end, 10);
    if (*end || !*chunks_text || chunks < 1 || chunks > 1 << 16)
        return cli_usage_error("collective: --chunks '%s': expected a whole number from 1 to 65536",
                               chunks_text);

    struct mp_error err = { 0 };
    struct chip_catalog cat;
    struct system sys;
    if (chip_catalog_load_default(&cat, &err)) return cli_fail(&err);
    if (system_load(&sys, system, 0, (int)n, &cat, &err)) {
        chip_catalog_release(&cat);
        return cli_fail(&err);
    }
    int *chips = mp_xmalloc((size_t)n * sizeof *chips);
    for (int i = 0; i < n; i++) chips[i] = i;
    struct coll_spec c = { .op = (enum coll_op)op, .algo = (enum coll_algo)algo, .chips = chips,
                           .n = (int)n, .mb = -1, .stage = -1, .chunks = (int)chunks };
    /* The work of every row, before any runs; and the time of the largest
     * size, which must fit in what mpsim counts (common.h). */
    struct work_estimate w = { .chips = (double)sys.n_chips,
                               .links = (double)system_link_count(&sys) };
    c.compact = true; /* as detailed_time runs it */
    for (double b = sweep ? 8 : bytes;; b *= 2) {
        double held;
        c.bytes = b < bytes ? b : bytes;
        w.events += collective_work(&sys, &c, fast_only ? FIDELITY_FAST : FIDELITY_DETAILED, &held);
        if (held > w.held) w.held = held; /* one row's graph at a time */
        if (b >= bytes) break;
    }
    c.compact = false;
    char what[160];
    snprintf(what, sizeof what, "collective: %s of %s on %lld chips", op_name, bytes_text, n);
    int rc = work_check(&w, what, fast_only ? NULL : "--fast for the alpha-beta time alone",
                        force, &err);
    c.bytes = bytes;
    if (!rc && mp_time_saturated(collective_time(&sys, &c))) {
        char fabric[512];
        system_describe(&sys, fabric, sizeof fabric);
        rc = mp_fail(&err, MP_ERR_INPUT, "collective: --bytes %s: the %s would take 2^62 ps "
                     "(53 days) or more on %s, past the longest duration mpsim counts: "
                     "expected fewer bytes or faster links", bytes_text, op_name, fabric);
    }
    if (rc) {
        free(chips);
        system_release(&sys);
        chip_catalog_release(&cat);
        return cli_fail(&err);
    }
    enum coll_algo used = collective_resolve(&sys, &c);
    printf("# %s on %s: %lld × %s, algorithm %s, busbw factor %.4f", collective_op_name(c.op),
           sys.name, n, sys.chip.name, collective_algo_name(used), collective_bus_factor(c.op, (int)n));
    if (algo == COLL_AUTO && collective_pick(&sys, c.op, chips, (int)n) == COLL_HIERARCHICAL)
        printf(sys.ring_across
                   ? " (auto: a ring on every NIC rail at every size, the system's "
                     "auto_algorithm = ring)"
                   : " (auto: the faster of hierarchical and a ring on every NIC rail, per size)");
    if (chunks > 1) printf(", %ld chunks in flight%s", chunks, used == COLL_RING ? "" : " (ring only: ignored)");
    printf("\n");
    char model[160];
    printf("# time: %s (run.fidelity = fast); detailed: the engine over the expanded "
           "transfers\n", collective_priced_by(&sys, &c, model, sizeof model));
    printf("%14s %12s %10s %10s %14s\n", "size (B)", "time (us)", "algbw GB/s", "busbw GB/s",
           "detailed (us)");
    if (sweep)
        for (double b = 8; b < bytes; b *= 2) row(&sys, &c, b, fast_only);
    row(&sys, &c, bytes, fast_only);
    free(chips);
    system_release(&sys);
    chip_catalog_release(&cat);
    return MP_OK;
}
