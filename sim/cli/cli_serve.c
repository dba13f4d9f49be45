/* cli_serve.c — `mpsim run` on a scenario with an [inference] section:
 * simulate serving (sim/serve/serve.h) and print the summary or the JSON. */
#include "cli.h"
#include "sim/io/config.h"
#include "sim/io/outfile.h"
#include "sim/serve/serve.h"

/* Write one serving report through a temporary file renamed into place. */
static int write_output(const char *path, void (*writer)(FILE *, const struct serve *),
                        const struct serve *s, struct mp_error *err)
{
    struct outfile out;
    int rc = outfile_open(&out, path, err);
    if (rc) return rc;
    writer(out.f, s);
    return outfile_commit(&out, err);
}

int cli_serve(const struct config *cfg, int json, const char *timeline, const char *trace,
              bool detail, bool force)
{
    struct serve s;
    struct mp_error err = { 0 };
    /* Passes are recorded only when an output needs them: the default run
     * stays as fast as it was. */
    struct serve_options so = { .record = timeline || trace, .force = force };
    int rc = serve_run_opts(&s, cfg, &so, &err);
    if (rc == MP_ERR_INFEASIBLE) {
        if (json) cli_infeasible_json("serve", err.msg);
        cli_infeasible(&err);
        serve_release(&s);
        return rc;
    }
    if (rc) {
        serve_release(&s);
        return cli_fail(&err);
    }
    if ((timeline && write_output(timeline, detail ? serve_timeline_csv_detail : serve_timeline_csv,
                                  &s, &err)) ||
        (trace && write_output(trace, serve_chrome_trace, &s, &err))) {
        serve_release(&s);
        return cli_fail(&err);
    }
    if (json) serve_report_json(stdout, &s);
    else serve_report_text(stdout, &s);
    serve_release(&s);
    return MP_OK;
}
