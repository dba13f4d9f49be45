/* cli_serve.c — `mpsim run` on a scenario with an [inference] section:
 * simulate serving (sim/serve.h) and print the summary or the JSON. */
#include <cJSON.h>

#include "cli.h"
#include "config.h"
#include "serve.h"

int cli_serve(const struct config *cfg, int json)
{
    struct serve s;
    struct mp_error err = { 0 };
    int rc = serve_run(&s, cfg, &err);
    if (rc == MP_ERR_INFEASIBLE) {
        if (json) { /* a valid question with a "no" answer, in the form asked for */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "mode", "serve");
            cJSON_AddBoolToObject(o, "feasible", 0);
            cJSON_AddStringToObject(o, "infeasible_reason", err.msg);
            char *text = cJSON_Print(o);
            printf("%s\n", text);
            cJSON_free(text);
            cJSON_Delete(o);
        }
        fprintf(stderr, "mpsim: infeasible: %s\n", err.msg);
        serve_release(&s);
        return rc;
    }
    if (rc) {
        serve_release(&s);
        return cli_fail(&err);
    }
    if (json) serve_report_json(stdout, &s);
    else serve_report_text(stdout, &s);
    serve_release(&s);
    return MP_OK;
}
